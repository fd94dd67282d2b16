// The lifecycle state record (catalog/lifecycle.h): its JSON form, what
// old or foreign records may lack or add, every malformed shape, and the
// store reads with their log-once policy.
#include "catalog/lifecycle.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "common/log.h"
#include "process.h"

namespace eco::catalog {
namespace {

const char kKey[] = "/eco/s/deploymentIntentGroup/p/ca/v1/dig";

json Action(const std::string& state, const std::string& instance, int64_t revision) {
  return {{"state", state}, {"instance", instance}, {"time", "2024-01-02T03:04:05.678Z"}, {"revision", revision}};
}

TEST(LifecycleState, RoundTripKeepsTheStoredBytes) {
  const json j = {{"statusctxid", "100"},
                  {"actions", {Action("Created", "", 0), Action("Approved", "", 0), Action("Instantiated", "100", 1),
                               Action("Updated", "100", 1), Action("Instantiated", "200", 2)}}};
  auto s = LifecycleStateFromJson(j, kKey);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->status_context, "100");
  ASSERT_EQ(s->actions.size(), 5u);
  EXPECT_EQ(s->actions[2].state, "Instantiated");
  EXPECT_EQ(s->actions[2].instance, "100");
  EXPECT_EQ(s->actions[2].time, "2024-01-02T03:04:05.678Z");
  EXPECT_EQ(s->actions[2].revision, 1);
  EXPECT_EQ(ToJson(*s).dump(), j.dump());
  auto parsed = ParseLifecycleState(j.dump(), kKey);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(ToJson(*parsed).dump(), j.dump());
}

TEST(LifecycleState, CreatedRecordIsWhatTheApiAlwaysWrote) {
  // The literal the API built before the record was typed.
  const json before = {{"statusctxid", ""},
                       {"actions", json::array({{{"state", "Created"},
                                                 {"instance", ""},
                                                 {"time", "2024-01-02T03:04:05.678Z"},
                                                 {"revision", 0}}})}};
  EXPECT_EQ(ToJson(CreatedLifecycleState("2024-01-02T03:04:05.678Z")).dump(), before.dump());
  // And what status answered for a logical cloud with no record.
  EXPECT_EQ(ToJson(LifecycleState{}).dump(), json({{"statusctxid", ""}, {"actions", json::array()}}).dump());
}

TEST(LifecycleState, Helpers) {
  LifecycleState s;
  EXPECT_EQ(s.Last(), nullptr);
  EXPECT_EQ(s.CurrentState(), "");
  EXPECT_EQ(s.LastInstance(), "");
  EXPECT_EQ(s.LastRevision(), 0);
  EXPECT_EQ(s.MaxRevision(), 0);
  s.Append("Created", "", 0, "t0");
  s.Append("Approved", "", 0, "t1");
  s.Append("Instantiated", "a", 1, "t2");
  s.Append("Updated", "a", 1, "t3");
  s.Append("Instantiated", "b", 2, "t4");
  s.Append("Updated", "b", 2, "t5");
  s.Append("Instantiated", "a", 3, "t6");  // a rollback to revision 1's context
  EXPECT_EQ(s.CurrentState(), "Instantiated");
  EXPECT_EQ(s.LastInstance(), "a");
  EXPECT_EQ(s.LastRevision(), 3);
  EXPECT_EQ(s.MaxRevision(), 3);
  EXPECT_EQ(s.Last()->time, "t6");
  EXPECT_TRUE(s.HasInstance("b"));
  EXPECT_FALSE(s.HasInstance("c"));
  EXPECT_EQ(s.Instances(), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(s.InstanceOfRevision(2), "b");
  EXPECT_EQ(s.InstanceOfRevision(0), std::nullopt);  // Created and Approved name no context
  EXPECT_EQ(s.InstanceOfRevision(9), std::nullopt);
}

TEST(LifecycleState, AbsentFieldsReadAsZeroAndUnknownOnesAreKept) {
  // A record with nothing but states (no statusctxid, instance, time, revision).
  auto bare = ParseLifecycleState(R"({"actions":[{"state":"Created"}]})", kKey);
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->status_context, "");
  EXPECT_EQ(bare->CurrentState(), "Created");
  EXPECT_EQ(bare->LastInstance(), "");
  EXPECT_EQ(bare->LastRevision(), 0);
  EXPECT_EQ(bare->actions[0].time, "");
  // Written back in full.
  EXPECT_EQ(ToJson(*bare), json::parse(R"({"statusctxid":"","actions":[{"state":"Created","instance":"","time":"","revision":0}]})"));

  auto empty = ParseLifecycleState(R"({"actions":[]})", kKey);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->actions.empty());

  // Fields a newer version may add survive a rewrite by this one.
  const json foreign = {{"statusctxid", "1"},
                        {"owner", {{"team", "x"}}},
                        {"actions", {{{"state", "Instantiated"}, {"instance", "1"}, {"time", "t"},
                                      {"revision", 1}, {"reason", "manual"}}}}};
  auto f = LifecycleStateFromJson(foreign, kKey);
  ASSERT_TRUE(f.ok());
  f->Append("Terminated", "1", 1, "t2");
  json out = ToJson(*f);
  EXPECT_EQ(out["owner"], foreign["owner"]);
  EXPECT_EQ(out["actions"][0], foreign["actions"][0]);
  EXPECT_FALSE(out["actions"][1].contains("reason"));
}

TEST(LifecycleState, EveryMalformedShapeIsAnErrorNamingTheKey) {
  struct Case {
    std::string value;
    std::string what;
  } cases[] = {
      {"", "not JSON"},
      {"{\"actions\":", "not JSON"},
      {"[]", "not a JSON object"},
      {"\"Created\"", "not a JSON object"},
      {"null", "not a JSON object"},
      {"{}", "actions is missing"},
      {R"({"statusctxid":""})", "actions is missing"},
      {R"({"actions":{}})", "actions is not an array"},
      {R"({"actions":null})", "actions is not an array"},
      {R"({"statusctxid":7,"actions":[]})", "statusctxid is not a string"},
      {R"({"actions":["Created"]})", "actions[0] is not an object"},
      {R"({"actions":[{"state":"Created"},{"instance":"1"}]})", "actions[1].state is missing"},
      {R"({"actions":[{"state":1}]})", "actions[0].state is not a string"},
      {R"({"actions":[{"state":null}]})", "actions[0].state is not a string"},
      {R"({"actions":[{"state":"Instantiated","instance":5}]})", "actions[0].instance is not a string"},
      {R"({"actions":[{"state":"Created","time":0}]})", "actions[0].time is not a string"},
      {R"({"actions":[{"state":"Created","revision":"1"}]})", "actions[0].revision is not an integer"},
      {R"({"actions":[{"state":"Created","revision":1.5}]})", "actions[0].revision is not an integer"},
      {R"({"actions":[{"state":"Created","revision":18446744073709551615}]})",
       "actions[0].revision is not an integer"},
  };
  for (const auto& c : cases) {
    auto s = ParseLifecycleState(c.value, kKey);
    ASSERT_FALSE(s.ok()) << c.value;
    EXPECT_EQ(s.status().code(), Code::kInternal) << c.value;
    EXPECT_EQ(s.status().message(), std::string("lifecycle state record ") + kKey + " is malformed: " + c.what)
        << c.value;
  }
}

class LifecycleStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    log::SetSinkForTest([this](const std::string& line) {
      std::lock_guard<std::mutex> l(mu_);
      lines_.push_back(json::parse(line));
    });
  }
  void TearDown() override { log::SetSinkForTest(nullptr); }

  std::vector<json> Lines() {
    std::lock_guard<std::mutex> l(mu_);
    return lines_;
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::mutex mu_;
  std::vector<json> lines_;  // guarded by mu_
};

TEST_F(LifecycleStoreTest, AbsentIsNotMalformed) {
  auto r = ReadLifecycleState(*st_, "logicalCloud", {"p", "none"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());
  auto e = ReadLifecycleStateOrEmpty(*st_, "logicalCloud", {"p", "none"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->key, StateKey("logicalCloud", {"p", "none"}));
  EXPECT_EQ(e->mod_revision, 0);
  EXPECT_TRUE(e->state.actions.empty());
  EXPECT_TRUE(Lines().empty());
}

TEST_F(LifecycleStoreTest, ReadWriteWithCompareAndSwap) {
  auto e = ReadLifecycleStateOrEmpty(*st_, "logicalCloud", {"p", "lc"});
  ASSERT_TRUE(e.ok());
  e->state.status_context = "42";
  e->state.Append("Instantiated", "42", 1, "t");
  store::Txn txn;
  txn.compares.push_back(e->Unchanged());  // still missing
  txn.success.push_back(e->Put());
  auto c = st_->Commit(txn);
  ASSERT_TRUE(c.ok() && c->succeeded);

  auto r = ReadLifecycleState(*st_, "logicalCloud", {"p", "lc"});
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_GT((*r)->mod_revision, 0);
  EXPECT_EQ((*r)->state.status_context, "42");
  EXPECT_EQ((*r)->state.CurrentState(), "Instantiated");
  // The same compare fails now that the key exists.
  c = st_->Commit(txn);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->succeeded);
}

TEST_F(LifecycleStoreTest, MalformedIsAnErrorLoggedOncePerRevision) {
  const std::string key = StateKey("deploymentIntentGroup", {"p", "ca", "v1", "dig"});
  ASSERT_TRUE(st_->Put(key, R"({"statusctxid":"1","actions":"Instantiated"})").ok());
  for (int i = 0; i < 3; ++i) {  // a poll reading it again and again
    auto r = ReadLifecycleState(*st_, "deploymentIntentGroup", {"p", "ca", "v1", "dig"});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInternal);
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().message();
    EXPECT_FALSE(ReadLifecycleStateOrEmpty(*st_, "deploymentIntentGroup", {"p", "ca", "v1", "dig"}).ok());
  }
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["level"], "error");
  EXPECT_EQ(lines[0]["component"], "catalog");
  EXPECT_EQ(lines[0]["key"], key);
  EXPECT_EQ(lines[0]["message"], "lifecycle state record " + key + " is malformed: actions is not an array");

  // Rewritten, still bad: a new revision is reported again.
  ASSERT_TRUE(st_->Put(key, "{}").ok());
  EXPECT_FALSE(ReadLifecycleState(*st_, "deploymentIntentGroup", {"p", "ca", "v1", "dig"}).ok());
  EXPECT_FALSE(ReadLifecycleState(*st_, "deploymentIntentGroup", {"p", "ca", "v1", "dig"}).ok());
  EXPECT_EQ(Lines().size(), 2u);
}

}  // namespace
}  // namespace eco::catalog
