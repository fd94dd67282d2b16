// WatchHub over real loopback streams from a scripted server.
#include "k8s/watch.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "fake_api_server.h"
#include "test_certs.h"

namespace eco::k8s {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::SeenRequest;

constexpr auto kWait = std::chrono::seconds(20);  // a hang guard, not a timing assertion

json Obj(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "prod"}, {"resourceVersion", rv}}}};
}

std::string Line(const std::string& type, const json& obj) {
  return json{{"type", type}, {"object", obj}}.dump() + "\n";
}

// Collects what a watch delivers.
class Recorder {
 public:
  WatchCallback callback() {
    return [this](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      std::string s(WatchEventTypeName(e.type));
      if (e.type == WatchEventType::kResync) s += "[" + std::to_string(e.items.size()) + "]";
      if (!e.resource_version.empty()) s += "@" + e.resource_version;
      events_.push_back(s);
      cv_.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return events_.size() >= n; });
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
};

// Lets a streaming response stay open until the test ends.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True once open; waits a little otherwise (the provider is polled).
  bool WaitBriefly() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Streams `first`, then holds the stream until `gate` opens (or the client
// leaves), then ends it.
void Stream(httplib::Response& res, std::string first, Gate* gate) {
  res.set_chunked_content_provider(
      "application/json", [first, gate, sent = false](size_t, httplib::DataSink& sink) mutable {
        if (!sent) {
          sent = true;
          if (!first.empty()) sink.write(first.data(), first.size());
          return true;
        }
        if (gate == nullptr || gate->WaitBriefly() || !sink.is_writable()) {
          sink.done();
        }
        return true;
      });
}

WatchHubOptions FastRetry() {
  WatchHubOptions o;
  o.min_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(10);
  return o;
}

std::shared_ptr<ClusterClient> ClientFor(const FakeApiServer& server) {
  RestConfig cfg;
  cfg.server = server.url();
  cfg.token = "tok";
  Result<std::unique_ptr<ClusterClient>> c = NewClusterClient(cfg);
  EXPECT_TRUE(c.ok());
  return std::shared_ptr<ClusterClient>(std::move(c).value());
}

TEST(WatchHub, ListsResumesReconnectsAndRelistsAfterExpiry) {
  FakeApiServer server;
  Gate gate;
  std::atomic<int> lists{0};
  std::atomic<int> watches{0};
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/apis/apps/v1/namespaces/prod/deployments") return false;
    if (r.Param("watch") != "1") {
      json items = ++lists == 1 ? json::array({Obj("a", "10")})
                                : json::array({Obj("a", "10"), Obj("b", "11")});
      std::string rv = lists == 1 ? "10" : "20";
      res.set_content(
          json{
              {"kind", "DeploymentList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}}
              .dump(),
          "application/json");
      return true;
    }
    switch (++watches) {
      case 1:  // the server fails: reported, retried
        res.status = 500;
        res.set_content(R"({"kind":"Status","code":500,"message":"etcd is down"})",
                        "application/json");
        break;
      case 2:  // events, then a normal end (server timeout)
        Stream(res, Line("ADDED", Obj("b", "11")) + Line("BOOKMARK", Obj("", "12")), nullptr);
        break;
      case 3:  // the version is too old: relist
        Stream(res,
               Line("ERROR", {{"kind", "Status"},
                              {"code", 410},
                              {"reason", "Expired"},
                              {"message", "too old resource version"}}),
               nullptr);
        break;
      default:
        Stream(res, Line("MODIFIED", Obj("a", "21")), &gate);
        break;
    }
    return true;
  });

  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "apps/v1";
  spec.kind = "Deployment";
  spec.ns = "prod";
  spec.label_selector = "app=web";
  spec.server_timeout = std::chrono::seconds(120);
  Result<WatchId> id = hub.Watch(ClientFor(server), spec, rec.callback());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(rec.WaitFor(6)) << ::testing::PrintToString(rec.events());
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"RESYNC[1]@10", "ERROR", "ADDED@11",
                                                    "BOOKMARK@12", "RESYNC[2]@20", "MODIFIED@21"}));

  std::vector<std::string> resumed_from;
  for (const SeenRequest& r : server.seen()) {
    if (r.Param("watch") != "1") continue;
    resumed_from.push_back(r.Param("resourceVersion"));
    EXPECT_EQ(r.Param("allowWatchBookmarks"), "true");
    EXPECT_EQ(r.Param("timeoutSeconds"), "120");
    EXPECT_EQ(r.Param("labelSelector"), "app=web");
    EXPECT_EQ(r.authorization, "Bearer tok");
  }
  EXPECT_EQ(resumed_from, (std::vector<std::string>{"10", "10", "12", "20"}));
  EXPECT_EQ(hub.active_watches(), 1u);

  hub.Cancel(*id);
  EXPECT_EQ(hub.active_watches(), 0u);
  gate.Open();
  size_t after_cancel = rec.events().size();
  hub.Shutdown();
  EXPECT_EQ(rec.events().size(), after_cancel);
}

TEST(WatchHub, StartsFromAGivenVersionWithoutListing) {
  FakeApiServer server;
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/configmaps") return false;
    if (r.Param("watch") != "1") {
      ADD_FAILURE() << "listed although a version was given";
      return false;
    }
    Stream(res, Line("DELETED", {{"metadata", {{"name", "x"}, {"resourceVersion", "8"}}}}), &gate);
    return true;
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.resource_version = "7";
  ASSERT_TRUE(hub.Watch(ClientFor(server), spec, rec.callback()).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"DELETED@8"});
  gate.Open();
}

TEST(WatchHub, UnknownKindIsRefusedAtOnce) {
  FakeApiServer server;
  WatchHub hub(FastRetry());
  WatchSpec spec;
  spec.api_version = "example.com/v1";
  spec.kind = "Widget";
  Result<WatchId> id = hub.Watch(ClientFor(server), spec, [](const WatchEvent&) {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kNotFound);
}

TEST(WatchHub, ShutdownWithOpenStreamsOnManyClusters) {
  FakeApiServer server;
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/pods" || r.Param("watch") != "1") return false;
    Stream(res, Line("ADDED", {{"metadata", {{"name", "p"}, {"resourceVersion", "3"}}}}), &gate);
    return true;
  });
  auto hub = std::make_unique<WatchHub>(FastRetry());
  std::vector<std::unique_ptr<Recorder>> recs;
  for (int i = 0; i < 5; ++i) {
    recs.push_back(std::make_unique<Recorder>());
    WatchSpec spec;
    spec.api_version = "v1";
    spec.kind = "Pod";
    spec.resource_version = "1";
    // A client per "cluster", all multiplexed by one hub thread.
    ASSERT_TRUE(hub->Watch(ClientFor(server), spec, recs.back()->callback()).ok());
  }
  for (auto& r : recs) ASSERT_TRUE(r->WaitFor(1));
  EXPECT_EQ(hub->active_watches(), 5u);
  hub->Shutdown();
  EXPECT_EQ(hub->active_watches(), 0u);
  hub.reset();
  gate.Open();
  for (auto& r : recs) EXPECT_EQ(r->events(), std::vector<std::string>{"ADDED@3"});
}

TEST(WatchHub, WatchesOverMutualTls) {
  testing::CertKey ca = testing::MakeCa("cluster-ca");
  testing::CertKey server_cert = testing::MakeLeaf(ca, "apiserver", {}, {"127.0.0.1"});
  testing::CertKey client_cert = testing::MakeLeaf(ca, "eco", {}, {});
  FakeApiServer server(server_cert.cert_pem, server_cert.key_pem, ca.cert_pem);
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/namespaces/default/pods" || r.Param("watch") != "1") return false;
    Stream(res, Line("ADDED", {{"metadata", {{"name", "p"}, {"resourceVersion", "5"}}}}), &gate);
    return true;
  });
  RestConfig cfg;
  cfg.server = server.url();
  cfg.ca_pem = ca.cert_pem;
  cfg.client_cert_pem = client_cert.cert_pem;
  cfg.client_key_pem = client_cert.key_pem;
  std::shared_ptr<ClusterClient> client = std::move(NewClusterClient(cfg)).value();
  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "Pod";
  spec.ns = "default";
  spec.resource_version = "4";
  ASSERT_TRUE(hub.Watch(client, spec, rec.callback()).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"ADDED@5"});
  hub.Shutdown();
  gate.Open();
}

}  // namespace
}  // namespace eco::k8s
