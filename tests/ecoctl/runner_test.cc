#include "ecoctl/runner.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace eco::ecoctl {
namespace {

using nlohmann::json;
using testutil::FakeEmco;
using testutil::WriteFile;

Document RunnerDoc(int index, std::string anchor, json body, std::string file = "") {
  Document d;
  d.index = index;
  d.anchor = std::move(anchor);
  d.action = ActionVerb(d.anchor);
  d.body = std::move(body);
  d.file = std::move(file);
  return d;
}

std::vector<PlanStep> MustPlan(const std::vector<Document>& docs, Verb v) {
  auto s = Plan(docs, v);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : std::vector<PlanStep>{};
}

RunSummary RunVerb(const std::vector<Document>& docs, Verb v, FakeEmco& server,
                   bool strict = false) {
  RunOptions o;
  o.verb = v;
  o.strict = strict;
  return RunPlan(MustPlan(docs, v), server, o);
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chart_ = WriteFile(dir_.path(), "web.tgz", "chart-bytes");
    docs_ = {
        RunnerDoc(1, "projects", {{"metadata", {{"name", "p1"}}}}),
        RunnerDoc(2, "projects/p1/composite-apps",
            {{"metadata", {{"name", "ca"}}}, {"spec", {{"compositeAppVersion", "v1"}}}}),
        RunnerDoc(3, "projects/p1/composite-apps/ca/v1/apps", {{"metadata", {{"name", "web"}}}}, chart_),
        RunnerDoc(4, "cluster-providers/cp/clusters/c1/labels", {{"clusterLabel", "edge"}}),
    };
  }
  eco::testing::TempDir dir_;
  std::string chart_;
  std::vector<Document> docs_;
  FakeEmco server_;
};

TEST_F(RunnerTest, ApplyCreatesInOrder) {
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_TRUE(sum.success());
  EXPECT_EQ(sum.ok, 4);
  EXPECT_EQ(server_.Calls(), (std::vector<std::string>{
                                 "POST /v2/projects",
                                 "POST /v2/projects/p1/composite-apps",
                                 "POST /v2/projects/p1/composite-apps/ca/v1/apps",
                                 "POST /v2/cluster-providers/cp/clusters/c1/labels",
                             }));
  for (const auto& r : sum.results) EXPECT_EQ(r.word, "created") << r.label;
  EXPECT_EQ(sum.results[0].status, 201);
  // The chart bytes were read and sent.
  EXPECT_EQ(server_.store["/v2/projects/p1/composite-apps/ca/v1/apps/web"].file, "chart-bytes");
}

TEST_F(RunnerTest, ReapplyOfIdenticalDocumentsIsUnchanged) {
  ASSERT_TRUE(RunVerb(docs_, Verb::kApply, server_).success());
  server_.sent.clear();
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_TRUE(sum.success());
  for (const auto& r : sum.results) {
    EXPECT_EQ(r.word, "unchanged") << r.label;
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.outcome, Outcome::kOk);
  }
  for (const auto& call : server_.Calls()) EXPECT_FALSE(call.starts_with("PUT")) << call;
  // The app's bytes were compared through Accept: application/octet-stream.
  bool byte_check = false;
  for (const auto& r : server_.sent) byte_check |= r.accept == "application/octet-stream";
  EXPECT_TRUE(byte_check);
}

TEST_F(RunnerTest, ReapplyOfChangedDocumentsPuts) {
  ASSERT_TRUE(RunVerb(docs_, Verb::kApply, server_).success());
  docs_[0].body["metadata"]["description"] = "now described";
  WriteFile(dir_.path(), "web.tgz", "new-chart-bytes");
  server_.sent.clear();
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_TRUE(sum.success());
  EXPECT_EQ(sum.results[0].word, "updated");
  EXPECT_EQ(sum.results[0].method, "PUT");
  EXPECT_EQ(sum.results[0].path, "/v2/projects/p1");
  EXPECT_EQ(sum.results[1].word, "unchanged");
  EXPECT_EQ(sum.results[2].word, "updated");
  EXPECT_EQ(server_.store["/v2/projects/p1/composite-apps/ca/v1/apps/web"].file, "new-chart-bytes");
  EXPECT_EQ(server_.store["/v2/projects/p1"].body["metadata"]["description"], "now described");
}

TEST_F(RunnerTest, ExistingResourceWithoutPutFails) {
  ASSERT_TRUE(RunVerb(docs_, Verb::kApply, server_).success());
  docs_[0].body["metadata"]["description"] = "changed";
  server_.no_put = true;
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_FALSE(sum.success());
  EXPECT_EQ(sum.failed, 1);
  EXPECT_EQ(sum.results[0].status, 405);
  EXPECT_EQ(sum.results[0].message, "method not allowed");
}

TEST_F(RunnerTest, OtherConflictsAreFailuresWithServerMessage) {
  server_.canned["POST /v2/projects/p1/composite-apps"] =
      FakeEmco::Error(409, "Cannot perform requested operation. Parent resource not found");
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_FALSE(sum.success());
  EXPECT_EQ(sum.failed, 1);
  EXPECT_EQ(sum.ok, 3);  // emcoctl carries on by default
  const DocResult& r = sum.results[1];
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.word, "conflict");
  EXPECT_EQ(r.message, "Cannot perform requested operation. Parent resource not found");
  // No PUT was tried for a conflict that is not "already exists".
  for (const auto& c : server_.Calls()) EXPECT_FALSE(c.starts_with("PUT")) << c;
}

TEST_F(RunnerTest, StopOnFailure) {
  server_.canned["POST /v2/projects"] = HttpResponse{500, "boom\n", "text/plain"};
  RunOptions o;
  o.verb = Verb::kApply;
  o.stop_on_failure = true;
  RunSummary sum = RunPlan(MustPlan(docs_, Verb::kApply), server_, o);
  EXPECT_TRUE(sum.aborted);
  EXPECT_EQ(sum.failed, 1);
  EXPECT_EQ(sum.not_run, 3);
  EXPECT_EQ(sum.results[0].message, "boom");  // plain-text bodies are used as they are
}

TEST_F(RunnerTest, ConnectionRefusedStopsAtOnce) {
  server_.refuse = true;
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_FALSE(sum.success());
  EXPECT_TRUE(sum.aborted);
  ASSERT_EQ(sum.results.size(), 1u);
  EXPECT_TRUE(sum.results[0].transport_error);
  EXPECT_EQ(sum.results[0].status, 0);
  EXPECT_NE(sum.results[0].message.find("connection refused"), std::string::npos);
  EXPECT_EQ(server_.sent.size(), 1u);
}

TEST_F(RunnerTest, DeleteInReverseAndNotFoundIsFine) {
  ASSERT_TRUE(RunVerb(docs_, Verb::kApply, server_).success());
  server_.store.erase("/v2/cluster-providers/cp/clusters/c1/labels/edge");
  server_.sent.clear();
  RunSummary sum = RunVerb(docs_, Verb::kDelete, server_);
  EXPECT_TRUE(sum.success());
  EXPECT_EQ(server_.Calls(), (std::vector<std::string>{
                                 "DELETE /v2/cluster-providers/cp/clusters/c1/labels/edge",
                                 "DELETE /v2/projects/p1/composite-apps/ca/v1/apps/web",
                                 "DELETE /v2/projects/p1/composite-apps/ca/v1",
                                 "DELETE /v2/projects/p1",
                             }));
  EXPECT_EQ(sum.results[0].word, "not found");
  EXPECT_EQ(sum.results[0].outcome, Outcome::kNotFound);
  EXPECT_EQ(sum.results[1].word, "deleted");
  EXPECT_TRUE(server_.store.empty());
}

TEST_F(RunnerTest, DeleteStrictTreats404AsFailure) {
  RunSummary sum = RunVerb({docs_[0]}, Verb::kDelete, server_, /*strict=*/true);
  EXPECT_FALSE(sum.success());
  EXPECT_EQ(sum.results[0].outcome, Outcome::kFailed);
  EXPECT_EQ(sum.results[0].message, "resource not found");
}

TEST_F(RunnerTest, GetReturnsBodies) {
  ASSERT_TRUE(RunVerb(docs_, Verb::kApply, server_).success());
  RunSummary sum = RunVerb(docs_, Verb::kGet, server_);
  EXPECT_TRUE(sum.success());
  EXPECT_EQ(json::parse(sum.results[0].body), docs_[0].body);
  EXPECT_EQ(sum.results[2].word, "ok");
}

TEST_F(RunnerTest, ActionsAreSkippedByDeleteAndWaitAfterAccepted) {
  std::vector<Document> docs = {
      docs_[0], RunnerDoc(2, "projects/p1/composite-apps/ca/v1/deployment-intent-groups/d/approve",
                    json::object())};
  int slept = 0;
  RunOptions o;
  o.verb = Verb::kApply;
  o.wait_after_accepted = 3;
  o.sleep_seconds = [&](int s) { slept += s; };
  RunSummary sum = RunPlan(MustPlan(docs, Verb::kApply), server_, o);
  EXPECT_TRUE(sum.success());
  EXPECT_EQ(sum.results[1].status, 202);
  EXPECT_EQ(sum.results[1].word, "accepted");
  EXPECT_EQ(slept, 3);

  RunSummary del = RunVerb(docs, Verb::kDelete, server_);
  EXPECT_TRUE(del.success());
  EXPECT_EQ(del.skipped, 1);
  EXPECT_EQ(del.results[0].outcome, Outcome::kSkipped);
}

TEST_F(RunnerTest, UnreadableFileFailsThatDocumentOnly) {
  docs_[2].file = dir_.path() + "/gone.tgz";
  RunSummary sum = RunVerb(docs_, Verb::kApply, server_);
  EXPECT_EQ(sum.failed, 1);
  EXPECT_EQ(sum.ok, 3);
  EXPECT_NE(sum.results[2].message.find("gone.tgz"), std::string::npos);
}

TEST(ErrorMessage, JsonMessageElseRawTrimmed) {
  EXPECT_EQ(ErrorMessage(R"({"code":409,"message":"Project already exists"})"),
            "Project already exists");
  EXPECT_EQ(ErrorMessage("  plain text error\n"), "plain text error");
  EXPECT_EQ(ErrorMessage(R"({"error":"x"})"), R"({"error":"x"})");
  EXPECT_EQ(ErrorMessage(""), "");
}

TEST(JsonContains, EmptyFieldsMatchMissingOnes) {
  json have = json::parse(R"({"metadata":{"name":"p","description":"","userData1":""},"x":1})");
  EXPECT_TRUE(JsonContains(have, json::parse(R"({"metadata":{"name":"p"}})")));
  EXPECT_TRUE(
      JsonContains(have, json::parse(R"({"metadata":{"name":"p","userData2":""},"spec":{}})")));
  EXPECT_FALSE(JsonContains(have, json::parse(R"({"metadata":{"name":"q"}})")));
  EXPECT_FALSE(JsonContains(have, json::parse(R"({"x":"1"})")));
  EXPECT_TRUE(JsonContains(json::parse("[1,2]"), json::parse("[1,2]")));
  EXPECT_FALSE(JsonContains(json::parse("[1,2]"), json::parse("[2,1]")));
}

TEST(StatusWord, ByMethodAndCode) {
  EXPECT_EQ(StatusWord("POST", 201), "created");
  EXPECT_EQ(StatusWord("PUT", 201), "updated");
  EXPECT_EQ(StatusWord("DELETE", 204), "deleted");
  EXPECT_EQ(StatusWord("POST", 202), "accepted");
  EXPECT_EQ(StatusWord("GET", 200), "ok");
  EXPECT_EQ(StatusWord("POST", 422), "unprocessable entity");
  EXPECT_EQ(StatusWord("POST", 418), "error");
}

}  // namespace
}  // namespace eco::ecoctl
