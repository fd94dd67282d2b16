// The client on HTTP/2 against kube-sim over TLS: one connection per cluster
// for every request and watch, what happens when it drops, and the HTTP/1.1
// fallback for a server without h2.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_clock.h"
#include "k8s/client.h"
#include "k8s/conn_count.h"
#include "k8s/h2_transport.h"
#include "k8s/kubeconfig.h"
#include "k8s/watch.h"
#include "kubesim_fixture.h"

namespace eco::k8s {
namespace h2_test {  // apart from kubesim_test.cc's helpers (one unity build)
namespace {

using Json = nlohmann::json;
using eco::testing::KubeSim;
using eco::testing::KubeSimOptions;

bool WaitFor(const std::function<bool()>& cond) {
  return eco::testing::WaitUntil(cond, std::chrono::seconds(30));
}

Json ConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"data", {{"k", "v"}}}};
}

// kube-sim's view of a cluster's connections: {"connections","h2","streams"}.
Json SimConnections(KubeSim& sim, const std::string& cluster) {
  httplib::SSLClient cli("127.0.0.1", sim.port());
  cli.enable_server_certificate_verification(false);
  auto r = cli.Get(("/sim/clusters/" + cluster + "/connections").c_str());
  if (!r || r->status != 200) return Json();
  return Json::parse(r->body, nullptr, false);
}

// What each watch delivered, by kind.
struct Events {
  std::mutex mu;
  std::map<std::string, int> connects, resyncs, errors;
  std::map<std::string, std::vector<std::string>> added;  // names

  WatchCallback For(const std::string& kind) {
    return [this, kind](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      switch (e.type) {
        case WatchEventType::kConnected:
          ++connects[kind];
          break;
        case WatchEventType::kResync:
          ++resyncs[kind];
          break;
        case WatchEventType::kError:
          ++errors[kind];
          break;
        case WatchEventType::kAdded:
          added[kind].push_back(e.object["metadata"]["name"]);
          break;
        default:
          break;
      }
    };
  }
  int Get(std::map<std::string, int>& m, const std::string& kind) {
    std::lock_guard<std::mutex> lock(mu);
    return m[kind];
  }
  bool Added(const std::string& kind, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    const auto& v = added[kind];
    return std::find(v.begin(), v.end(), name) != v.end();
  }
};

const std::vector<std::pair<std::string, std::string>> kKinds = {
    {"v1", "ConfigMap"},       {"v1", "Secret"}, {"v1", "Service"},
    {"apps/v1", "Deployment"}, {"v1", "Pod"},    {"v1", "Namespace"}};

class H2KubeSimTest : public ::testing::Test {
 protected:
  void Start(bool server_h2) {
    KubeSimOptions o;
    o.clusters = 1;
    o.tls = true;
    o.http2 = server_h2;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    Result<RestConfig> rc = LoadKubeconfigFile(sim_->kubeconfig("cluster-1"));
    ASSERT_TRUE(rc.ok()) << rc.status().ToString();
    config_ = *rc;
  }

  std::shared_ptr<ClusterClient> Client(ClientOptions opts = {}) {
    Result<std::unique_ptr<ClusterClient>> c = NewClusterClient(config_, opts);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::shared_ptr<ClusterClient>(std::move(*c)) : nullptr;
  }

  // One watch per kind of kKinds, each listing first.
  void WatchAll(WatchHub& hub, const std::shared_ptr<ClusterClient>& c, Events& ev) {
    for (const auto& [api_version, kind] : kKinds) {
      WatchSpec spec;
      spec.api_version = api_version;
      spec.kind = kind;
      spec.report_connected = true;
      Result<WatchId> id = hub.Watch(c, spec, ev.For(kind));
      ASSERT_TRUE(id.ok()) << kind << ": " << id.status().ToString();
    }
  }

  bool AllConnected(Events& ev, int times) {
    for (const auto& [api_version, kind] : kKinds) {
      if (ev.Get(ev.connects, kind) < times) return false;
    }
    return true;
  }

  std::unique_ptr<KubeSim> sim_;
  RestConfig config_;
};

// Applies, lists and six watches of one cluster share one TCP connection,
// as client-go's do: counted by the client and by kube-sim.
TEST_F(H2KubeSimTest, OneConnectionCarriesEveryRequestAndWatch) {
  Start(/*server_h2=*/true);
  const int64_t h2_before = OpenConnections(ConnProtocol::kH2);
  const int64_t http1_before = OpenConnections(ConnProtocol::kHttp1);
  auto c = Client();
  ASSERT_TRUE(c && c->h2_session());
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(c->Apply(ConfigMap(name)).ok());
  Result<ObjectList> list = c->List("v1", "ConfigMap", "default", ListOptions{});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 3u);

  WatchHub hub;
  Events ev;
  WatchAll(hub, c, ev);
  ASSERT_TRUE(WaitFor([&] { return AllConnected(ev, 1); }));
  ASSERT_TRUE(c->Apply(ConfigMap("d")).ok());
  ASSERT_TRUE(WaitFor([&] { return ev.Added("ConfigMap", "d"); }));

  EXPECT_EQ(c->h2_session()->protocol(), H2Session::Protocol::kH2);
  EXPECT_EQ(c->h2_session()->connections_opened(), 1u);
  EXPECT_EQ(OpenConnections(ConnProtocol::kH2) - h2_before, 1);
  EXPECT_EQ(OpenConnections(ConnProtocol::kHttp1) - http1_before, 0);
  Json seen = SimConnections(*sim_, "cluster-1");
  EXPECT_EQ(seen.value("connections", -1), 1) << seen.dump();
  EXPECT_EQ(seen.value("h2", -1), 1) << seen.dump();
  EXPECT_GE(seen.value("streams", -1), 6) << seen.dump();
  hub.Shutdown();
}

// A server that does not negotiate h2 gets HTTP/1.1, requests and watches;
// the watch starts first here, on a connection that finds out.
TEST_F(H2KubeSimTest, AServerWithoutH2GetsHttp1) {
  Start(/*server_h2=*/false);
  auto c = Client();
  ASSERT_TRUE(c && c->h2_session());
  WatchHub hub;
  Events ev;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.resource_version = "1";  // no list first: the watch is the first request
  spec.report_connected = true;
  ASSERT_TRUE(hub.Watch(c, spec, ev.For("ConfigMap")).ok());
  ASSERT_TRUE(WaitFor([&] { return ev.Get(ev.connects, "ConfigMap") >= 1; }));
  EXPECT_EQ(c->h2_session()->protocol(), H2Session::Protocol::kHttp1);
  ASSERT_TRUE(c->Apply(ConfigMap("b")).ok());
  ASSERT_TRUE(WaitFor([&] { return ev.Added("ConfigMap", "b"); }));
  EXPECT_EQ(c->h2_session()->connections_opened(), 1u) << "one try of h2, then HTTP/1.1 for good";
  EXPECT_EQ(SimConnections(*sim_, "cluster-1").value("h2", -1), 0);

  // ClientOptions::http2 = false never tries.
  ClientOptions off;
  off.http2 = false;
  auto plain = Client(off);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->h2_session(), nullptr);
  EXPECT_TRUE(plain->Get("v1", "ConfigMap", "default", "b").ok());
  hub.Shutdown();
}

// The connection drops under six watches: one new connection (not one per
// watch), and every watch resumes from its own version: no relist.
TEST_F(H2KubeSimTest, ADroppedConnectionIsReopenedOnceAndWatchesResume) {
  Start(/*server_h2=*/true);
  auto c = Client();
  ASSERT_TRUE(c && c->h2_session());
  WatchHubOptions ho;
  ho.min_backoff = std::chrono::milliseconds(500);  // room to bring the cluster up again
  WatchHub hub(ho);
  Events ev;
  WatchAll(hub, c, ev);
  ASSERT_TRUE(WaitFor([&] { return AllConnected(ev, 1); }));

  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& [v, kind] : kKinds)
      if (ev.Get(ev.errors, kind) < 1) return false;
    return true;
  }));
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  ASSERT_TRUE(WaitFor([&] { return AllConnected(ev, 2); }));
  ASSERT_TRUE(c->Apply(ConfigMap("after")).ok());
  ASSERT_TRUE(WaitFor([&] { return ev.Added("ConfigMap", "after"); }));

  for (const auto& [v, kind] : kKinds)
    EXPECT_EQ(ev.Get(ev.resyncs, kind), 1) << kind << " relisted";
  EXPECT_EQ(c->h2_session()->connections_opened(), 2u);
  EXPECT_EQ(SimConnections(*sim_, "cluster-1").value("connections", -1), 1);
  hub.Shutdown();
}

// A request in flight when the connection drops fails as kUnavailable at
// once (not at its timeout); the next request opens a new connection.
TEST_F(H2KubeSimTest, ARequestInFlightFailsWhenTheConnectionDrops) {
  Start(/*server_h2=*/true);
  ClientOptions o;
  o.request_timeout = std::chrono::minutes(5);
  auto c = Client(o);
  ASSERT_TRUE(c && c->h2_session());
  ASSERT_TRUE(c->Apply(ConfigMap("a")).ok());
  ASSERT_EQ(sim_->Fault("cluster-1", "hang"), 200);
  std::atomic<bool> done{false};
  Status got;
  std::thread t([&] {
    got = c->Get("v1", "ConfigMap", "default", "a").status();
    done = true;
  });
  // In flight: kube-sim holds its stream.
  EXPECT_TRUE(WaitFor([&] { return SimConnections(*sim_, "cluster-1").value("streams", 0) >= 1; }));
  EXPECT_FALSE(done);
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  t.join();
  EXPECT_EQ(got.code(), Code::kUnavailable) << got.ToString();
  EXPECT_EQ(got.message().find("timed out"), std::string::npos) << got.ToString();
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  Result<Json> again = c->Get("v1", "ConfigMap", "default", "a");
  EXPECT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(c->h2_session()->connections_opened(), 2u);
}

// request_timeout runs on the client's clock: a request to a hung cluster
// ends when the test moves that clock past it, not before.
// Disabled: the HTTP/2 session outlives the test's FakeClock on the shared I/O loop and
// reads it after it is gone (a crash in most runs alone); see the 2026-12-07 note.
TEST_F(H2KubeSimTest, DISABLED_RequestTimeoutIsMeasuredOnTheInjectedClock) {
  Start(/*server_h2=*/true);
  eco::testing::FakeClock clock;
  ClientOptions o;
  o.clock = &clock;
  o.request_timeout = std::chrono::seconds(30);
  auto c = Client(o);
  ASSERT_TRUE(c && c->h2_session());
  ASSERT_TRUE(c->Apply(ConfigMap("a")).ok());
  ASSERT_EQ(sim_->Fault("cluster-1", "hang"), 200);
  std::atomic<bool> done{false};
  Status got;
  std::thread t([&] {
    got = c->Get("v1", "ConfigMap", "default", "a").status();
    done = true;
  });
  EXPECT_TRUE(WaitFor([&] { return SimConnections(*sim_, "cluster-1").value("streams", 0) >= 1; }));
  clock.Advance(std::chrono::seconds(29));
  EXPECT_FALSE(done);
  clock.Advance(std::chrono::seconds(1));
  t.join();
  EXPECT_EQ(got.code(), Code::kUnavailable) << got.ToString();
  EXPECT_NE(got.message().find("timed out after 30000 ms"), std::string::npos) << got.ToString();
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  EXPECT_TRUE(c->Get("v1", "ConfigMap", "default", "a").ok());
}

}  // namespace
}  // namespace h2_test
}  // namespace eco::k8s
