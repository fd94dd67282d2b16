#include "ecoctl/output.h"

#include <gtest/gtest.h>

namespace eco::ecoctl {
namespace {

DocResult MakeResult(std::string label, std::string method, std::string path, int status,
                 std::string word, Outcome outcome, std::string message = "") {
  DocResult r;
  r.label = std::move(label);
  r.method = std::move(method);
  r.path = std::move(path);
  r.status = status;
  r.word = std::move(word);
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

TEST(FormatResult, AlignedColumns) {
  LineStyle st{false, 3, 16};
  EXPECT_EQ(FormatResult(MakeResult("#1", "POST", "/v2/projects", 201, "created", Outcome::kOk), st),
            "#1   POST    /v2/projects      201 created");
  EXPECT_EQ(
      FormatResult(MakeResult("#12", "DELETE", "/v2/projects/p1", 404, "not found", Outcome::kNotFound),
                   st),
      "#12  DELETE  /v2/projects/p1   404 not found");
}

TEST(FormatResult, FailureCarriesServerMessage) {
  LineStyle st{false, 2, 0};
  EXPECT_EQ(FormatResult(MakeResult("#2", "POST", "/v2/x", 409, "conflict", Outcome::kFailed,
                                "Parent resource not found"),
                         st),
            "#2  POST    /v2/x  409 conflict: Parent resource not found");
  EXPECT_EQ(FormatResult(MakeResult("#1", "POST", "/v2/x", 0, "error", Outcome::kFailed,
                                "cannot connect to http://127.0.0.1:9"),
                         st),
            "#1  POST    /v2/x  error: cannot connect to http://127.0.0.1:9");
  EXPECT_EQ(FormatResult(MakeResult("#3", "-", "/v2/a/approve", 0, "skipped", Outcome::kSkipped,
                                "action document"),
                         st),
            "#3  -       /v2/a/approve  skipped (action document)");
}

TEST(FormatResult, ColourOnlyWhenAsked) {
  DocResult ok = MakeResult("#1", "POST", "/v2/p", 201, "created", Outcome::kOk);
  DocResult bad =
      MakeResult("#1", "POST", "/v2/p", 500, "internal server error", Outcome::kFailed, "x");
  EXPECT_EQ(FormatResult(ok, LineStyle{false, 0, 0}).find('\033'), std::string::npos);
  EXPECT_NE(FormatResult(ok, LineStyle{true, 0, 0}).find("\033[32m201 created\033[0m"),
            std::string::npos);
  EXPECT_NE(FormatResult(bad, LineStyle{true, 0, 0}).find("\033[31m500 internal server error"),
            std::string::npos);
}

TEST(StyleFor, FitsLongestLabelAndPath) {
  PlanStep a;
  a.label = "#1";
  a.request.path = "/v2/projects";
  a.replace = HttpRequest{};
  a.replace->path = "/v2/projects/longer-name";
  PlanStep b;
  b.label = "#10";
  b.request.path = "/v2/x";
  LineStyle st = StyleFor({a, b}, true);
  EXPECT_EQ(st.label_width, 3u);
  EXPECT_EQ(st.path_width, std::string("/v2/projects/longer-name").size());
  EXPECT_TRUE(st.color);
}

TEST(StyleFor, VeryLongPathsDoNotWidenEveryLine) {
  PlanStep a;
  a.label = "#1";
  a.request.path = "/v2/" + std::string(200, 'x');
  EXPECT_EQ(StyleFor({a}, false).path_width, 72u);
}

TEST(FormatPlanStep, ShowsBodyPartsAndFallback) {
  PlanStep s;
  s.label = "#1";
  s.request.method = "POST";
  s.request.path = "/v2/cluster-providers/cp/clusters";
  s.request.parts = {{"metadata", R"({"metadata":{"name":"c1"}})", "", "", ""},
                     {"file", "", "/d/kubeconfig", "kubeconfig", "application/octet-stream"}};
  s.replace = HttpRequest{};
  s.replace->path = "/v2/cluster-providers/cp/clusters/c1";
  EXPECT_EQ(FormatPlanStep(s, LineStyle{false, 2, 0}),
            "#1  POST    /v2/cluster-providers/cp/clusters  multipart: "
            "metadata={\"metadata\":{\"name\":\"c1\"}} file=@/d/kubeconfig\n"
            "    if it exists: PUT /v2/cluster-providers/cp/clusters/c1");
}

TEST(FormatSummary, Counts) {
  RunSummary s;
  s.ok = 4;
  s.failed = 1;
  s.skipped = 2;
  EXPECT_EQ(FormatSummary(s, Verb::kDelete), "delete: 4 ok, 1 failed, 2 skipped");
  s.skipped = 0;
  s.not_run = 3;
  EXPECT_EQ(FormatSummary(s, Verb::kApply), "apply: 4 ok, 1 failed, 3 not run (stopped)");
}

TEST(FormatBody, JsonYamlAndRaw) {
  EXPECT_EQ(FormatBody(R"({"metadata":{"name":"p"}})", BodyFormat::kJson),
            "{\n  \"metadata\": {\n    \"name\": \"p\"\n  }\n}\n");
  EXPECT_EQ(FormatBody(R"({"metadata":{"name":"p"},"spec":{"level":"0"}})", BodyFormat::kYaml),
            "metadata:\n  name: p\nspec:\n  level: \"0\"\n");
  EXPECT_EQ(FormatBody("not json", BodyFormat::kJson), "not json\n");
}

}  // namespace
}  // namespace eco::ecoctl
