// The JSON log (common/log.h) and the HTTP server's access log and
// /log-level route, over a real embedded store and real HTTP.
#include "common/log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <httplib.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "eco_fixture.h"
#include "served_api.h"

namespace eco {
namespace {

using nlohmann::json;

// Captures log lines for the test's duration.
class Captured {
 public:
  Captured() {
    log::SetSinkForTest([this](const std::string& line) {
      std::lock_guard<std::mutex> g(mu_);
      lines_.push_back(line);
    });
  }
  ~Captured() {
    log::SetSinkForTest(nullptr);
    log::SetLevel(log::Level::kInfo);
  }
  std::vector<json> Lines() {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<json> out;
    for (const auto& l : lines_) {
      json j = json::parse(l, nullptr, false);
      EXPECT_TRUE(j.is_object()) << l;
      out.push_back(j);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(Log, ParseLevel) {
  EXPECT_EQ(log::ParseLevel("debug"), log::Level::kDebug);
  EXPECT_EQ(log::ParseLevel("info"), log::Level::kInfo);
  EXPECT_EQ(log::ParseLevel("warn"), log::Level::kWarn);
  EXPECT_EQ(log::ParseLevel("warning"), log::Level::kWarn);
  EXPECT_EQ(log::ParseLevel("error"), log::Level::kError);
  EXPECT_FALSE(log::ParseLevel("INFO"));
  EXPECT_FALSE(log::ParseLevel(""));
}

TEST(Log, LineHasTheStandardKeysAndFields) {
  std::string line = log::Format(log::Level::kWarn, "rsync", "cluster \"a\" down\n",
                                 {{"cluster", "p+a"}, {"attempt", 3}, {"level", "not this one"}});
  json j = json::parse(line);
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line
  EXPECT_EQ(j["level"], "warn");                  // fields cannot replace the standard keys
  EXPECT_EQ(j["component"], "rsync");
  EXPECT_EQ(j["message"], "cluster \"a\" down\n");
  EXPECT_EQ(j["cluster"], "p+a");
  EXPECT_EQ(j["attempt"], 3);
  static const std::regex kRfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(j["time"].get<std::string>(), kRfc3339)) << j["time"];
  // Invalid UTF-8 (echoed from a request) does not break the line; valid
  // multi-byte characters stay.
  json bad = json::parse(log::Format(log::Level::kInfo, "api", std::string("n\xc3\xa9 \xff\xe2\x82 \xed\xa0\x80"), nullptr));
  EXPECT_EQ(bad["message"], "n\xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Log, FieldsWithoutJsonValues) {
  Captured cap;
  log::Write(log::Level::kInfo, "api", "request",
             {{"method", "GET"}, {"status", 404}, {"duration_ms", 1.5}, {"path", "/a\"b"}, {"message", "no"}});
  auto lines = cap.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["message"], "request");
  EXPECT_EQ(lines[0]["method"], "GET");
  EXPECT_EQ(lines[0]["status"], 404);
  EXPECT_DOUBLE_EQ(lines[0]["duration_ms"].get<double>(), 1.5);
  EXPECT_EQ(lines[0]["path"], "/a\"b");
}

// Numbers as JSON numbers: integers exact at both ends, doubles to the
// microsecond of a millisecond duration, and null where JSON has no number.
TEST(Log, NumbersStayJson) {
  Captured cap;
  log::Write(log::Level::kInfo, "api", "n",
             {{"big", -9223372036854775807LL - 1}, {"ms", 12.34567}, {"tiny", 0.0004},
              {"nan", std::nan("")}, {"inf", HUGE_VAL}, {"huge", 1e300}});
  auto lines = cap.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["big"].get<int64_t>(), -9223372036854775807LL - 1);
  EXPECT_DOUBLE_EQ(lines[0]["ms"].get<double>(), 12.346);
  EXPECT_DOUBLE_EQ(lines[0]["tiny"].get<double>(), 0.0);
  EXPECT_TRUE(lines[0]["nan"].is_null());
  EXPECT_TRUE(lines[0]["inf"].is_null());
  EXPECT_TRUE(lines[0]["huge"].is_null());
}

TEST(Log, LevelFiltersLines) {
  Captured cap;
  log::SetLevel(log::Level::kWarn);
  log::Write(log::Level::kInfo, "t", "hidden");
  log::Write(log::Level::kError, "t", "shown");
  log::SetLevel(log::Level::kDebug);
  log::Write(log::Level::kDebug, "t", "shown too");
  auto lines = cap.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["message"], "shown");
  EXPECT_EQ(lines[1]["message"], "shown too");
  EXPECT_EQ(lines[1]["level"], "debug");
}

class AccessLogTest : public testing::ServedApiTest {
 protected:
  AccessLogTest() { max_body_bytes_ = 1024; }
  // Access lines of `path`, waiting for the logger (it runs after the answer is sent).
  std::vector<json> AccessLines(Captured& cap, const std::string& path, size_t want) {
    std::vector<json> out;
    testing::WaitUntil(
        [&] {
          out.clear();
          for (auto& j : cap.Lines()) {
            if (j["component"] == "api" && j["message"] == "request" && j["path"] == path) out.push_back(j);
          }
          return out.size() >= want;
        },
        std::chrono::seconds(10));
    return out;
  }

};

TEST_F(AccessLogTest, OneLinePerRequestWithRouteTemplateStatusAndDuration) {
  Captured cap;
  auto r = client_->Post("/v2/projects", R"({"metadata":{"name":"p1"}})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201);
  r = client_->Get("/v2/projects/p1");
  ASSERT_TRUE(r);
  r = client_->Get("/v2/projects/missing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  r = client_->Get("/nowhere");
  ASSERT_TRUE(r);
  r = client_->Get("/healthz");
  ASSERT_TRUE(r);
  r = client_->Get("/v2/projects/%FF%FEx");  // not UTF-8: a clear 400, a readable line
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_TRUE(json::parse(r->body, nullptr, false).is_object()) << r->body;

  auto got = AccessLines(cap, "/v2/projects/p1", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["method"], "GET");
  EXPECT_EQ(got[0]["route"], "/v2/projects/{project}");
  EXPECT_EQ(got[0]["status"], 200);
  EXPECT_EQ(got[0]["level"], "info");
  ASSERT_TRUE(got[0].contains("duration_ms"));
  EXPECT_GE(got[0]["duration_ms"].get<double>(), 0.0);
  got = AccessLines(cap, "/v2/projects", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["method"], "POST");
  EXPECT_EQ(got[0]["status"], 201);
  got = AccessLines(cap, "/v2/projects/missing", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["status"], 404);
  EXPECT_EQ(got[0]["route"], "/v2/projects/{project}");
  got = AccessLines(cap, "/nowhere", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["route"], "-");
  got = AccessLines(cap, "/healthz", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["route"], "/healthz");
  got = AccessLines(cap, "/v2/projects/\xEF\xBF\xBD\xEF\xBF\xBDx", 1);  // replaced, byte by byte
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["status"], 400);
  // The request body (which may hold a kubeconfig) is never logged.
  for (const auto& j : cap.Lines()) EXPECT_EQ(j.dump().find("metadata"), std::string::npos) << j;
}

TEST_F(AccessLogTest, BodyTooLargeIsLoggedToo) {
  Captured cap;
  auto r = client_->Post("/v2/projects", std::string(4096, 'x'), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto got = AccessLines(cap, "/v2/projects", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["status"], 413);
}

// `curl -X POST URL` sends neither Content-Length nor a body: the API
// answers it (EMCO users call lifecycle operations that way), logged as any.
TEST_F(AccessLogTest, PostWithoutLengthOrBodyIsServed) {
  Captured cap;
  const auto no_body = [&](const std::string& method, const std::string& path) {
    return testing::RawHttp(server_->port(), method + " " + path +
                                                 " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n"
                                                 "Connection: close\r\n\r\n");
  };
  auto r = no_body("POST", "/v2/projects");
  EXPECT_EQ(r.status, 400) << r.Describe();
  EXPECT_NE(r.body.find("Empty body"), std::string::npos) << r.Describe();
  // Routed to the API (this one runs no scheduler), not refused by the HTTP layer.
  r = no_body("POST", "/v2/projects/p/logical-clouds/lc/instantiate");
  EXPECT_EQ(r.status, 503) << r.Describe();
  EXPECT_NE(r.body.find("does not run the scheduler"), std::string::npos) << r.Describe();
  r = no_body("PUT", "/v2/projects/p");
  EXPECT_EQ(r.status, 400) << r.Describe();
  auto got = AccessLines(cap, "/v2/projects/p/logical-clouds/lc/instantiate", 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["route"], "/v2/projects/{project}/logical-clouds/{logicalCloud}/instantiate");
  EXPECT_EQ(got[0]["status"], 503);
}

TEST_F(AccessLogTest, LevelChangesWhileRunning) {
  Captured cap;
  auto r = client_->Get("/log-level");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["level"], "info");
  r = client_->Put("/log-level", R"({"level":"verbose"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = client_->Put("/log-level", R"({"level":"warn"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(log::GetLevel(), log::Level::kWarn);
  // At warn, requests are no longer access-logged.
  r = client_->Get("/v2/projects");
  ASSERT_TRUE(r);
  r = client_->Put("/log-level", R"({"level":"info"})", "application/json");
  ASSERT_TRUE(r);
  r = client_->Get("/v2/projects/after");
  ASSERT_TRUE(r);
  ASSERT_EQ(AccessLines(cap, "/v2/projects/after", 1).size(), 1u);
  size_t listed = 0, changes = 0;
  for (const auto& j : cap.Lines()) {
    if (j["message"] == "request" && j["path"] == "/v2/projects") ++listed;
    if (j["message"] == "log level set") ++changes;
  }
  EXPECT_EQ(listed, 0u);
  EXPECT_EQ(changes, 2u);  // both changes are logged (at warn, so they show at any level but error)
}

}  // namespace
}  // namespace eco
