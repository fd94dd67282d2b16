// The status routes through the real HTTP server on loopback: parameters
// reach the status module, errors keep EMCO's codes and messages, and
// ?watch=true streams one JSON object per line as the records change.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "api/api.h"
#include "api/server.h"
#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "fake_clock.h"
#include "process.h"

namespace eco::status {
namespace {

using nlohmann::json;

const char* kDig = "/v2/projects/proj/composite-apps/ca/v1/deployment-intent-groups/dig/status";

class StatusApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    Put(catalog::ObjectKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
        json{{"metadata", {{"name", "dig"}}}, {"spec", {{"compositeProfile", "prof"}}}});
    // One app on one cluster with one ConfigMap, instantiated.
    id_ = MakeContext("dig", "web", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cfg"}}}});
    ASSERT_FALSE(id_.empty());
    Put(appcontext::StatusKey(id_), json{{"status", "Instantiating"}});
    Put(catalog::StateKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
        json{{"statusctxid", id_},
             {"actions",
              {{{"state", "Instantiated"}, {"instance", id_}, {"time", "t"}, {"revision", 1}}}}});

    api_ = std::make_unique<api::Api>(*st_, api::Options{});
    api::ServerOptions so;
    so.bind = "127.0.0.1";
    so.port = 0;
    server_ = std::make_unique<api::HttpServer>(*api_, so);
    ASSERT_TRUE(server_->Bind().ok());
    serving_ = std::thread([this] { (void)server_->Serve(); });
    // Answering before a test may end: a Stop before the serving loop ran
    // would leave it running and TearDown's join waiting forever.
    httplib::Client probe("127.0.0.1", server_->port());
    bool up = false;
    for (int i = 0; i < 200 && !up; ++i) {
      auto r = probe.Get("/healthz");
      up = r && r->status == 200;
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(up) << "the API server did not answer /healthz";
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  void Put(const std::string& k, const json& v) { ASSERT_TRUE(st_->Put(k, v.dump()).ok()); }

  // An AppContext of `kind` whose one app puts `obj` on p+c1; "" on failure.
  std::string MakeContext(const std::string& kind, const std::string& app, const json& obj) {
    appcontext::Contexts c(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(600));
    EXPECT_TRUE(lease.ok());
    if (!lease.ok()) return "";
    appcontext::Meta m;
    m.kind = kind;
    m.app_order = {app};
    auto id = c.Create(m, *lease);
    EXPECT_TRUE(id.ok());
    if (!id.ok()) return "";
    appcontext::ResourceSet rs;
    rs.resources.push_back({appcontext::ResourceName(obj), obj});
    EXPECT_TRUE(c.PutApp(*id, app, rs, {{"p", "c1", 1, true, 0}}).ok());
    return *id;
  }

  httplib::Result Get(const std::string& path) {
    httplib::Client cli("127.0.0.1", server_->port());
    return cli.Get(path);
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::string id_;
  std::unique_ptr<api::Api> api_;
  std::unique_ptr<api::HttpServer> server_;
  std::thread serving_;
};

TEST_F(StatusApiTest, QueriesAndErrors) {
  auto r = Get(std::string(kDig) + "?status=deployed");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_EQ(j["deployedStatus"], "Instantiating");
  EXPECT_EQ(j["deployedCounts"], (json{{"Pending", 1}}));

  r = Get(kDig);  // no parameter: deprecated names
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  EXPECT_EQ(j["status"], "Instantiating");
  EXPECT_EQ(j["rsyncStatus"], (json{{"Pending", 1}}));

  r = Get(std::string(kDig) + "?cluster=p%2Bc1&resources");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["resourcesByApp"][0]["cluster"], "c1");

  r = Get(std::string(kDig) + "?output=nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["message"], "Invalid query output");

  r = Get(std::string(kDig) + "?app=other");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);

  r = Get("/v2/projects/proj/composite-apps/ca/v1/deployment-intent-groups/none/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  // eco's one row per cluster (status/fleet_view.h): DIGs only.
  r = Get(std::string(kDig) + "?output=clusters");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["clusters"][0]["cluster"], "c1");
  EXPECT_EQ(j["clusters"][0]["state"], "pending");
  EXPECT_EQ(j["clusterCounts"]["total"], 1);
  // Its stream refuses before it starts, as the single answer does.
  r = Get("/v2/projects/proj/composite-apps/ca/v1/deployment-intent-groups/none/status?output=clusters&watch=true");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(json::parse(r->body)["message"], "DeploymentIntentGroup not found");
  r = Get(std::string(kDig) + "?output=clusters&watch=true&instance=12345");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(json::parse(r->body)["message"].get<std::string>().find("Invalid query instance"), std::string::npos);
  r = Get("/v2/projects/proj/logical-clouds/lc/status?output=clusters");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["message"].get<std::string>().rfind("Invalid Input", 0), 0u);
  r = Get("/v2/cluster-providers/p/clusters/c1/status?output=clusters");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

// The caller of a status whose state record is broken gets a 500 naming
// the record, not a default history.
TEST_F(StatusApiTest, MalformedStateRecordIsAServerError) {
  const std::string key = catalog::StateKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"});
  ASSERT_TRUE(st_->Put(key, "not json").ok());
  auto r = Get(kDig);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(json::parse(r->body)["message"], "lifecycle state record " + key + " is malformed: not JSON");
}

TEST_F(StatusApiTest, ClusterStatusRoute) {
  Put(catalog::ObjectKey("cluster", {"p", "c1"}), json{{"metadata", {{"name", "c1"}}}});
  auto r = Get("/v2/cluster-providers/p/clusters/c1/status?status=deployed");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["deployedCounts"], (json{{"Pending", 1}}));
  EXPECT_EQ(j["deployments"][0]["deploymentIntentGroup"], "dig");
  EXPECT_EQ(j["cluster"]["resources"][0]["name"], "cfg");

  r = Get("/v2/cluster-providers/p/clusters/c1/status?output=nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = Get("/v2/cluster-providers/p/clusters/c1/status?watch=true");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = Get("/v2/cluster-providers/p/clusters/c9/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(StatusApiTest, WatchStreamsALinePerChange) {
  std::mutex mu;
  std::vector<json> lines;
  std::string partial;
  std::atomic<bool> stop{false};
  int status = 0;
  std::thread reader([&] {
    httplib::Client cli("127.0.0.1", server_->port());
    cli.set_read_timeout(30, 0);
    auto res = cli.Get(
        std::string(kDig) + "?status=deployed&output=summary&watch=true",
        [&](const httplib::Response& resp) {
          status = resp.status;
          return true;
        },
        [&](const char* data, size_t n) {
          std::lock_guard<std::mutex> l(mu);
          partial.append(data, n);
          for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
            lines.push_back(json::parse(partial.substr(0, nl), nullptr, false));
            partial.erase(0, nl + 1);
          }
          return !stop.load();  // false closes the connection
        });
    (void)res;
  });
  auto count = [&] {
    std::lock_guard<std::mutex> l(mu);
    return lines.size();
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return count() >= 1; }, std::chrono::seconds(20)));
  appcontext::DeployedRecord d;
  d.connectivity = "Available";
  d.resources["cfg+ConfigMap"] = {"Applied", id_, "", "t"};
  Put(appcontext::DeployedKey(id_, "web", "p+c1"), appcontext::ToJson(d));
  Put(appcontext::StatusKey(id_), json{{"status", "Instantiated"}});
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return !lines.empty() && lines.back()["deployedStatus"] == "Instantiated" &&
               lines.back()["deployedCounts"] == json{{"Applied", 1}};
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(status, 200);
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(lines.front()["deployedStatus"], "Instantiating");
    EXPECT_FALSE(lines.front().contains("apps"));
  }
  stop = true;
  // One more change makes the reader see data and hang up.
  Put(appcontext::StatusKey(id_), json{{"status", "Terminating"}});
  reader.join();
}

// A logical cloud's status is dcm's, over HTTP and in the stream: ready by
// default, the new names, the clusters at the top, `type` not read. (EMCO's
// _status.sh reads .deployedStatus from it.)
TEST_F(StatusApiTest, LogicalCloudStatusIsDcmsShapeAndStreamsSo) {
  const char* kLc = "/v2/projects/proj/logical-clouds/lc/status";
  Put(catalog::ObjectKey("logicalCloud", {"proj", "lc"}), json{{"metadata", {{"name", "lc"}}}, {"spec", {{"level", "1"}}}});
  const std::string id = MakeContext("logicalCloud", "logical-cloud",
                                     {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns1"}}}});
  ASSERT_FALSE(id.empty());
  Put(appcontext::StatusKey(id), json{{"status", "Instantiated"}});
  Put(catalog::StateKey("logicalCloud", {"proj", "lc"}),
      json{{"statusctxid", id},
           {"actions", {{{"state", "Instantiated"}, {"instance", id}, {"time", "t"}, {"revision", 1}}}}});

  for (const char* query : {"", "?type=bogus", "?type=rsync&apps"}) {
    auto r = Get(std::string(kLc) + query);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << query << ": " << r->body;
    json j = json::parse(r->body);
    EXPECT_EQ(j["deployedStatus"], "Instantiated") << query;
    EXPECT_EQ(j["readyStatus"], "NotReady");
    EXPECT_EQ(j["readyCounts"], (json{{"NotPresent", 1}, {"NotReady", 0}, {"Ready", 0}}));
    EXPECT_FALSE(j.contains("apps")) << j;
    EXPECT_FALSE(j.contains("status")) << j;
    ASSERT_EQ(j["clusters"].size(), 1u) << j;
    EXPECT_EQ(j["clusters"][0]["connectivity"], "Unknown");
    EXPECT_EQ(j["clusters"][0]["resources"][0]["readyStatus"], "NotPresent");
  }
  auto bad = Get(std::string(kLc) + "?status=rsync");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["message"], "Invalid query status");

  std::mutex mu;
  std::vector<json> lines;
  std::string partial;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    httplib::Client cli("127.0.0.1", server_->port());
    cli.set_read_timeout(30, 0);
    (void)cli.Get(std::string(kLc) + "?watch=true", [&](const char* data, size_t n) {
      std::lock_guard<std::mutex> l(mu);
      partial.append(data, n);
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        lines.push_back(json::parse(partial.substr(0, nl), nullptr, false));
        partial.erase(0, nl + 1);
      }
      return !stop.load();
    });
  });
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return !lines.empty();
      },
      std::chrono::seconds(20)));
  appcontext::ReadyRecord ready;
  ready.resources["ns1+Namespace"] = "Ready";
  Put(appcontext::ReadyKey(id, "logical-cloud", "p+c1"), appcontext::ToJson(ready));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return lines.back()["readyStatus"] == "Ready";
      },
      std::chrono::seconds(20)));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(lines.front()["readyStatus"], "NotReady");
    for (const auto& line : lines) {
      EXPECT_FALSE(line.contains("apps")) << line;
      EXPECT_EQ(line["clusters"].size(), 1u) << line;
    }
    EXPECT_EQ(lines.back()["clusters"][0]["resources"][0]["readyStatus"], "Ready");
  }
  stop = true;
  Put(appcontext::StatusKey(id), json{{"status", "Terminating"}});
  reader.join();
}

// The API's grace and clock (api::Options, set by `eco serve --agent-grace`)
// are what its status answers judge an agent cluster's silence by.
TEST_F(StatusApiTest, AgentGraceAndClockAreTheApisOptions) {
  Put(catalog::ObjectKey("cluster", {"p", "c1"}),
      json{{"metadata", {{"name", "c1"}}}, {"spec", {{"delivery", "agent"}}}});
  appcontext::ReadyRecord ready;
  ready.resources = {{"cfg+ConfigMap", "Ready"}};
  Put(appcontext::ReadyKey(id_, "web", "p+c1"), appcontext::ToJson(ready));
  eco::testing::FakeClock clock;
  const std::string seen = catalog::Rfc3339(clock.WallNow());
  Put(appcontext::SeenKey("p+c1"), appcontext::ToJson(appcontext::Seen{seen, "r"}));
  clock.Advance(std::chrono::minutes(2));
  auto ask = [&](api::Api& a, const std::string& path) {
    api::Request req;
    req.method = "GET";
    req.path = path;
    req.query = {{"status", "ready"}};
    auto r = a.Handle(req);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  };
  const std::string cluster = "/v2/cluster-providers/p/clusters/c1/status";
  api::Options defaults;
  defaults.clock = &clock;
  api::Api five(*st_, defaults);
  EXPECT_EQ(ask(five, kDig)["readyStatus"], "Ready");
  EXPECT_EQ(ask(five, kDig)["apps"][0]["clusters"][0]["lastSeen"], seen);
  EXPECT_EQ(ask(five, cluster)["readyStatus"], "Ready");
  api::Options short_grace = defaults;
  short_grace.agent_grace = std::chrono::minutes(1);
  api::Api one(*st_, short_grace);
  json out = ask(one, kDig);
  EXPECT_EQ(out["readyStatus"], "NotReady");
  EXPECT_EQ(out["apps"][0]["clusters"][0]["unreachable"]["since"], seen);
  EXPECT_EQ(ask(one, cluster)["stale"], true);
  // The clock is the API's: four more minutes and the default grace is past too.
  clock.Advance(std::chrono::minutes(4));
  EXPECT_EQ(ask(five, kDig)["readyStatus"], "NotReady");
}

}  // namespace
}  // namespace eco::status
