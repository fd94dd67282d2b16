// ECO_ASSIGN_OR_RETURN and ECO_RETURN_IF_ERROR (common/status.h), and the
// tests' own ASSERT_OK family (status_matchers.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/status.h"
#include "status_matchers.h"

namespace eco {
namespace {

Result<int> Number(bool ok) {
  if (!ok) return Invalid("no number");
  return 7;
}

Result<std::unique_ptr<std::string>> Owned(bool ok) {
  if (!ok) return NotFound("nothing owned");
  return std::make_unique<std::string>("mine");
}

int steps = 0;  // how far a function got past the macro

Status Doubled(bool ok, int* out) {
  ECO_ASSIGN_OR_RETURN(int n, Number(ok));
  ++steps;
  *out = 2 * n;
  return Status::Ok();
}

Result<std::string> Described(bool ok) {
  ECO_ASSIGN_OR_RETURN(auto n, Number(ok));
  ++steps;
  return "n=" + std::to_string(n);
}

Result<size_t> OwnedSize(bool ok) {
  ECO_ASSIGN_OR_RETURN(std::unique_ptr<std::string> p, Owned(ok));
  ++steps;
  return p->size();
}

Status Assigned(bool ok, std::unique_ptr<std::string>* out) {
  // The left side may be an existing variable.
  ECO_ASSIGN_OR_RETURN(*out, Owned(ok));
  return Status::Ok();
}

Status Checked(bool ok) {
  ECO_RETURN_IF_ERROR(ok ? Status::Ok() : Conflict("lost"));
  ++steps;
  return Status::Ok();
}

TEST(AssignOrReturn, InAFunctionReturningStatus) {
  steps = 0;
  int out = 0;
  EXPECT_TRUE(Doubled(true, &out).ok());
  EXPECT_EQ(out, 14);
  EXPECT_EQ(steps, 1);
  Status s = Doubled(false, &out);
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_EQ(s.message(), "no number");
  EXPECT_EQ(steps, 1);  // returned before the rest
}

TEST(AssignOrReturn, InAFunctionReturningAnotherResult) {
  steps = 0;
  Result<std::string> r = Described(true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "n=7");
  Result<std::string> e = Described(false);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "no number");
  EXPECT_EQ(steps, 1);
}

TEST(AssignOrReturn, MovesMoveOnlyValues) {
  steps = 0;
  Result<size_t> n = OwnedSize(true);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4u);
  Result<size_t> e = OwnedSize(false);
  EXPECT_EQ(e.status().code(), Code::kNotFound);
  EXPECT_EQ(steps, 1);

  std::unique_ptr<std::string> held;
  EXPECT_TRUE(Assigned(true, &held).ok());
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(*held, "mine");
  EXPECT_EQ(Assigned(false, &held).code(), Code::kNotFound);
}

TEST(ReturnIfError, ReturnsTheError) {
  steps = 0;
  EXPECT_TRUE(Checked(true).ok());
  EXPECT_EQ(Checked(false).code(), Code::kConflict);
  EXPECT_EQ(steps, 1);
}

TEST(StatusMatchers, AcceptStatusAndResult) {
  ASSERT_OK(Status::Ok());
  EXPECT_OK(Number(true));
  ASSERT_OK_AND_ASSIGN(auto p, Owned(true));
  EXPECT_EQ(*p, "mine");
  int n = 0;
  ASSERT_OK_AND_ASSIGN(n, Number(true));
  EXPECT_EQ(n, 7);
}

}  // namespace
}  // namespace eco
