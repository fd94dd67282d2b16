#include "ecoctl/cli.h"

#include <gtest/gtest.h>

#include <sstream>

#include "test_util.h"

namespace eco::ecoctl {
namespace {

using testutil::FakeEmco;
using testutil::WriteFile;

constexpr const char* kResources = R"(version: emco/v2
resourceContext:
  anchor: projects
metadata:
  name: {{ .Project }}
---
version: emco/v2
resourceContext:
  anchor: projects/{{ .Project }}/composite-apps
metadata:
  name: ca
spec:
  compositeAppVersion: v1
---
version: emco/v2
resourceContext:
  anchor: projects/{{ .Project }}/composite-apps/ca/v1/deployment-intent-groups/d/approve
)";

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    yaml_ = WriteFile(dir_.path(), "r.yaml", kResources);
    values_ = WriteFile(dir_.path(), "values.yaml", "Project: p1\n");
  }

  int Cli(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.insert(args.begin(), "ecoctl");
    CliIo io;
    io.out = &out_;
    io.err = &err_;
    io.out_is_tty = tty_;
    io.cwd = dir_.path();
    io.getenv = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env_.find(k);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
    io.read_stdin = [this] { return stdin_; };
    io.make_client = [this](const ClientConfig& c) -> std::unique_ptr<HttpClient> {
      last_config_ = c;
      return std::make_unique<Forward>(server_);
    };
    io.sleep_seconds = [](int) {};
    return RunCli(args, io);
  }

  // Hands every request to the test's long-lived fake.
  struct Forward : HttpClient {
    explicit Forward(FakeEmco& s) : server(s) {}
    Result<HttpResponse> Send(const HttpRequest& r) override { return server.Send(r); }
    FakeEmco& server;
  };

  eco::testing::TempDir dir_;
  std::string yaml_, values_, stdin_;
  std::map<std::string, std::string> env_;
  bool tty_ = false;
  FakeEmco server_;
  ClientConfig last_config_;
  std::ostringstream out_, err_;
};

TEST_F(CliTest, ApplyThenReapplyThenDelete) {
  EXPECT_EQ(Cli({"apply", "-f", yaml_, "-v", values_}), 0) << err_.str();
  EXPECT_NE(out_.str().find("#1  POST    /v2/projects"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("201 created"), std::string::npos);
  EXPECT_NE(out_.str().find("202 accepted"), std::string::npos);
  EXPECT_NE(out_.str().find("apply: 3 ok, 0 failed"), std::string::npos) << out_.str();
  EXPECT_EQ(out_.str().find('\033'), std::string::npos);  // not a TTY: no colour

  EXPECT_EQ(Cli({"apply", "-f", yaml_, "-v", values_}), 0) << err_.str();
  EXPECT_NE(out_.str().find("200 unchanged"), std::string::npos) << out_.str();

  EXPECT_EQ(Cli({"delete", "-f", yaml_, "-v", values_}), 0) << err_.str();
  const std::string o = out_.str();
  EXPECT_LT(o.find("#3"), o.find("#2"));
  EXPECT_LT(o.find("#2"), o.find("#1"));
  EXPECT_NE(o.find("skipped (action document)"), std::string::npos) << o;
  EXPECT_NE(o.find("delete: 2 ok, 0 failed, 1 skipped"), std::string::npos) << o;

  // Everything is gone: a second delete reports "not found" but succeeds...
  EXPECT_EQ(Cli({"delete", "-f", yaml_, "-v", values_}), 0);
  EXPECT_NE(out_.str().find("404 not found"), std::string::npos);
  // ...unless --strict.
  EXPECT_EQ(Cli({"delete", "--strict", "-f", yaml_, "-v", values_}), 1);
}

TEST_F(CliTest, FailureExitsOneWithServerMessage) {
  server_.canned["POST /v2/projects/p1/composite-apps"] =
      FakeEmco::Error(409, "Cannot perform requested operation. Parent resource not found");
  EXPECT_EQ(Cli({"apply", "-f", yaml_, "-v", values_}), 1);
  EXPECT_NE(out_.str().find(
                "409 conflict: Cannot perform requested operation. Parent resource not found"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("apply: 2 ok, 1 failed"), std::string::npos) << out_.str();
}

TEST_F(CliTest, UsageAndParseErrorsExitTwo) {
  EXPECT_EQ(Cli({}), 2);
  EXPECT_EQ(Cli({"frobnicate"}), 2);
  EXPECT_EQ(Cli({"apply"}), 2);
  EXPECT_NE(err_.str().find("give either -f FILE or an anchor"), std::string::npos);
  EXPECT_EQ(Cli({"get", "-f", yaml_, "-o", "xml"}), 2);
  EXPECT_EQ(Cli({"apply", "-f", dir_.path() + "/missing.yaml"}), 2);
  EXPECT_EQ(Cli({"apply", "--endpoint", "ftp://x", "-f", yaml_, "-v", values_}), 2);
  EXPECT_EQ(Cli({"apply", "--timeout", "0", "-f", yaml_, "-v", values_}), 2);

  std::string bad = WriteFile(dir_.path(), "bad.yaml",
                              "version: emco/v2\nresourceContext: {anchor: projects}\n"
                              "metadata: {name: a}\n---\nversion: v1\n");
  EXPECT_EQ(Cli({"apply", "-f", bad}), 2);
  EXPECT_NE(err_.str().find("document 2 of " + bad + ": unsupported version \"v1\""),
            std::string::npos)
      << err_.str();
  EXPECT_TRUE(server_.sent.empty());  // nothing is sent when any document is bad

  // A template that fails (a key the values do not have) is bad input, named.
  std::string tmpl = WriteFile(dir_.path(), "t.yaml", "a: {{ if .X }}y{{ end }}\n");
  EXPECT_EQ(Cli({"apply", "-f", tmpl, "-v", values_}), 2);
  EXPECT_NE(err_.str().find("map has no entry for key \"X\""), std::string::npos) << err_.str();
}

TEST_F(CliTest, HelpExitsZero) {
  EXPECT_EQ(Cli({"--help"}), 0);
  EXPECT_NE(out_.str().find("apply"), std::string::npos);
}

TEST_F(CliTest, EndpointFromFlagEnvOrDefault) {
  EXPECT_EQ(Cli({"get", "projects/p1"}), 1);  // 404 from the empty fake
  EXPECT_EQ(last_config_.endpoint.ToString(), kDefaultEndpoint);
  env_["ECO_ENDPOINT"] = "http://10.0.0.1:1234";
  Cli({"get", "projects/p1"});
  EXPECT_EQ(last_config_.endpoint.ToString(), "http://10.0.0.1:1234");
  Cli({"--endpoint", "https://eco.example:8443/", "--timeout", "2.5", "get", "projects/p1"});
  EXPECT_EQ(last_config_.endpoint.ToString(), "https://eco.example:8443");
  EXPECT_DOUBLE_EQ(last_config_.timeout_seconds, 2.5);
  // Global flags also work after the subcommand.
  Cli({"get", "projects/p1", "--endpoint", "http://h:1"});
  EXPECT_EQ(last_config_.endpoint.ToString(), "http://h:1");
}

TEST_F(CliTest, DryRunSendsNothing) {
  EXPECT_EQ(Cli({"--dry-run", "apply", "-f", yaml_, "-v", values_}), 0);
  EXPECT_TRUE(server_.sent.empty());
  EXPECT_NE(out_.str().find("dry run: nothing is sent to http://127.0.0.1:9015"),
            std::string::npos);
  EXPECT_NE(out_.str().find("if it exists: PUT /v2/projects/p1/composite-apps/ca/v1"),
            std::string::npos)
      << out_.str();
}

TEST_F(CliTest, GetOutputFormats) {
  ASSERT_EQ(Cli({"apply", "-f", yaml_, "-v", values_}), 0);
  EXPECT_EQ(Cli({"get", "-f", yaml_, "-v", values_, "-o", "json"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "{\n  \"metadata\": {\n    \"name\": \"p1\"\n  }\n}\n"
            "{\n  \"metadata\": {\n    \"name\": \"ca\"\n  },\n"
            "  \"spec\": {\n    \"compositeAppVersion\": \"v1\"\n  }\n}\n");
  EXPECT_EQ(Cli({"get", "-f", yaml_, "-v", values_, "-o", "yaml"}), 0);
  EXPECT_EQ(out_.str(),
            "metadata:\n  name: p1\n---\nmetadata:\n  name: ca\nspec:\n"
            "  compositeAppVersion: v1\n");
  // Default: the result line, then the JSON.
  EXPECT_EQ(Cli({"get", "-f", yaml_, "-v", values_}), 0);
  EXPECT_NE(out_.str().find("/v2/projects/p1 "), std::string::npos);
  EXPECT_NE(out_.str().find("200 ok\n{\n  \"metadata\""), std::string::npos) << out_.str();

  // Failures go to stderr so stdout stays parseable.
  server_.store.clear();
  EXPECT_EQ(Cli({"get", "-f", yaml_, "-v", values_, "-o", "json"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str().find("404 not found: resource not found"), std::string::npos) << err_.str();
}

TEST_F(CliTest, ColourOnTtyUnlessDisabled) {
  tty_ = true;
  Cli({"apply", "-f", yaml_, "-v", values_});
  EXPECT_NE(out_.str().find("\033[32m"), std::string::npos);
  Cli({"--no-color", "apply", "-f", yaml_, "-v", values_});
  EXPECT_EQ(out_.str().find('\033'), std::string::npos);
  env_["NO_COLOR"] = "1";
  Cli({"apply", "-f", yaml_, "-v", values_});
  EXPECT_EQ(out_.str().find('\033'), std::string::npos);
}

TEST_F(CliTest, StdinAndConnectionRefused) {
  stdin_ = "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: s}\n";
  EXPECT_EQ(Cli({"apply", "-f", "-"}), 0) << err_.str();
  EXPECT_TRUE(server_.store.count("/v2/projects/s"));

  server_.refuse = true;
  EXPECT_EQ(Cli({"apply", "-f", yaml_, "-v", values_}), 1);
  EXPECT_NE(out_.str().find("connection refused"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("2 not run (stopped)"), std::string::npos) << out_.str();
}

TEST_F(CliTest, MultipleFilesLabelBySource) {
  std::string second = WriteFile(dir_.path(), "second.yaml",
                                 "version: emco/v2\nresourceContext: {anchor: projects}\n"
                                 "metadata: {name: other}\n");
  EXPECT_EQ(Cli({"apply", "-f", yaml_, "-f", second, "-v", values_}), 0) << err_.str();
  EXPECT_NE(out_.str().find("second.yaml#1"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("r.yaml#3"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace eco::ecoctl
