// eco's Kubernetes client against a real kube-sim process: every operation,
// each fault, discovery refresh after a CRD, watch resumption and relists.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "k8s/paths.h"
#include "k8s/readiness.h"
#include "k8s/watch.h"
#include "kubesim_fixture.h"

namespace eco::k8s {
namespace {

using Json = nlohmann::json;
using eco::testing::KubeSim;
using eco::testing::KubeSimOptions;

bool WaitFor(const std::function<bool()>& cond, std::chrono::seconds limit = std::chrono::seconds(30)) {
  return eco::testing::WaitUntil(cond, limit);
}

Json ConfigMap(const std::string& name, const std::string& ns = "default", const std::string& value = "v") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "demo"}}}}},
          {"data", {{"k", value}}}};
}

Json Deployment(const std::string& name, int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"containers", Json::array({{{"name", "web"}, {"image", "nginx:1.25"}}})}}}}}}}};
}

class KubeSimClientTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    KubeSimOptions o;
    o.clusters = 2;
    o.tls = GetParam();
    o.ready_delay_ms = 50;
    sim_ = std::make_unique<KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    Result<RestConfig> rc = LoadKubeconfigFile(sim_->kubeconfig("cluster-1"));
    ASSERT_TRUE(rc.ok()) << rc.status().ToString();
    config_ = *rc;
    client_ = Client(config_);
    ASSERT_TRUE(client_);
  }

  std::shared_ptr<ClusterClient> Client(const RestConfig& rc, ClientOptions opts = {}) {
    Result<std::unique_ptr<ClusterClient>> c = NewClusterClient(rc, opts);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    return std::shared_ptr<ClusterClient>(std::move(c.value()));
  }

  std::unique_ptr<KubeSim> sim_;
  RestConfig config_;
  std::shared_ptr<ClusterClient> client_;
};

TEST_P(KubeSimClientTest, ApplyGetListDelete) {
  Result<Json> applied = client_->Apply(ConfigMap("a"));
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ((*applied)["data"]["k"], "v");
  bool eco_manages = false;
  for (const auto& m : (*applied)["metadata"]["managedFields"]) eco_manages = eco_manages || m["manager"] == "eco";
  EXPECT_TRUE(eco_manages);
  // Re-applying a changed intent updates the live object.
  ASSERT_TRUE(client_->Apply(ConfigMap("a", "default", "w")).ok());
  ApplyOptions quiet;
  quiet.want_object = false;
  Result<Json> b = client_->Apply(ConfigMap("b"), quiet);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->empty()) << "want_object=false returns no object";
  Result<Json> got = client_->Get("v1", "ConfigMap", "default", "a");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)["data"]["k"], "w");

  ListOptions lo;
  lo.label_selector = "app=demo";
  lo.page_size = 1;  // forces paging
  Result<ObjectList> list = client_->List("v1", "ConfigMap", "default", lo);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_FALSE(list->resource_version.empty());
  for (const auto& it : list->items) EXPECT_EQ(it["kind"], "ConfigMap");
  // Metadata only (PartialObjectMetadataList), one page of it.
  lo.metadata_only = true;
  lo.max_pages = 1;
  list = client_->List("v1", "ConfigMap", "default", lo);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_TRUE(list->truncated);
  EXPECT_EQ(list->items[0]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(list->items[0]["apiVersion"], "meta.k8s.io/v1");
  EXPECT_FALSE(list->items[0].contains("data"));
  EXPECT_EQ(list->items[0]["metadata"]["labels"]["app"], "demo");
  EXPECT_TRUE(list->items[0]["metadata"].contains("managedFields"));
  lo.page_size = 10;
  list = client_->List("v1", "ConfigMap", "default", lo);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 2u);
  EXPECT_FALSE(list->truncated);

  Result<ResourceInfo> ri = client_->ResolveKind("apps/v1", "Deployment");
  ASSERT_TRUE(ri.ok()) << ri.status().ToString();
  EXPECT_EQ(ri->resource, "deployments");
  EXPECT_TRUE(ri->namespaced);
  Result<ResourceInfo> ns = client_->ResolveKind("v1", "Namespace");
  ASSERT_TRUE(ns.ok());
  EXPECT_FALSE(ns->namespaced);

  ASSERT_TRUE(client_->Delete("v1", "ConfigMap", "default", "a", Propagation::kBackground).ok());
  Result<Json> gone = client_->Get("v1", "ConfigMap", "default", "a");
  EXPECT_EQ(gone.status().code(), Code::kNotFound) << gone.status().ToString();
  Status again = client_->Delete("v1", "ConfigMap", "default", "a", Propagation::kBackground);
  EXPECT_EQ(again.code(), Code::kNotFound);
}

TEST_P(KubeSimClientTest, ClusterScopedObjectsAndNamespaces) {
  Json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}};
  ASSERT_TRUE(client_->Apply(ns).ok());
  // An object in a namespace that does not exist is refused.
  Result<Json> orphan = client_->Apply(ConfigMap("x", "nowhere"));
  EXPECT_EQ(orphan.status().code(), Code::kNotFound) << orphan.status().ToString();
  EXPECT_NE(orphan.status().message().find("namespaces \"nowhere\" not found"), std::string::npos)
      << orphan.status().message();
  ASSERT_TRUE(client_->Apply(ConfigMap("x", "shop")).ok());
  Result<Json> bad = client_->Apply(ConfigMap("Not_Valid", "shop"));
  EXPECT_EQ(bad.status().code(), Code::kInvalid) << bad.status().ToString();
  EXPECT_FALSE(bad.status().retryable());
}

TEST_P(KubeSimClientTest, DeploymentBecomesReady) {
  ASSERT_TRUE(client_->Apply(Deployment("web", 3)).ok());
  Result<Json> first = client_->Get("apps/v1", "Deployment", "default", "web");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(WaitFor([&] {
    Result<Json> d = client_->Get("apps/v1", "Deployment", "default", "web");
    return d.ok() && CheckReady(*d).ready;
  })) << CheckReady(*client_->Get("apps/v1", "Deployment", "default", "web")).reason;
  // Scaling up beyond the nodes' capacity leaves it not ready, with a reason.
  Json big = Deployment("big", 2);
  big["spec"]["template"]["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "64"}}}};
  ASSERT_TRUE(client_->Apply(big).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Result<Json> b = client_->Get("apps/v1", "Deployment", "default", "big");
  ASSERT_TRUE(b.ok());
  Readiness r = CheckReady(*b);
  EXPECT_FALSE(r.ready);
  EXPECT_FALSE(r.reason.empty());
}

TEST_P(KubeSimClientTest, DiscoveryRefreshesForACrdAppliedMomentsAgo) {
  Result<ResourceInfo> before = client_->ResolveKind("example.com/v1", "Widget");
  EXPECT_EQ(before.status().code(), Code::kNotFound);
  Json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "widgets.example.com"}}},
              {"spec",
               {{"group", "example.com"},
                {"scope", "Namespaced"},
                {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
                {"versions", Json::array({{{"name", "v1"}, {"served", true}, {"storage", true}}})}}}};
  ASSERT_TRUE(client_->Apply(crd).ok());
  // As an API server, kube-sim serves the kind once the CRD is Established.
  ASSERT_TRUE(WaitFor([&] {
    Result<Json> c = client_->Get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com");
    return c.ok() && CheckReady(*c).ready;
  }));
  // The miss above is not remembered: discovery is asked again.
  Json w = {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w1"}, {"namespace", "default"}}},
            {"spec", {{"size", 2}}}};
  Result<Json> applied = client_->Apply(w);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
}

// The built-in table that spares discovery requests agrees with what the
// server's discovery documents say.
TEST_P(KubeSimClientTest, BuiltinKindsMatchDiscovery) {
  Result<std::vector<ResourceInfo>> all = client_->Discover();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  int compared = 0;
  for (const ResourceInfo& served : *all) {
    std::optional<ResourceInfo> b = BuiltinKind({served.group, served.version}, served.kind);
    if (!b) continue;
    ++compared;
    EXPECT_EQ(b->resource, served.resource) << served.api_version() << " " << served.kind;
    EXPECT_EQ(b->namespaced, served.namespaced) << served.api_version() << " " << served.kind;
  }
  EXPECT_GE(compared, 25);
}

TEST_P(KubeSimClientTest, ApplyConflictsWithoutForce) {
  ApplyOptions a;
  a.field_manager = "first";
  a.force = false;
  ASSERT_TRUE(client_->Apply(ConfigMap("c", "default", "one"), a).ok());
  ApplyOptions b;
  b.field_manager = "second";
  b.force = false;
  Result<Json> conflict = client_->Apply(ConfigMap("c", "default", "two"), b);
  EXPECT_EQ(conflict.status().code(), Code::kConflict) << conflict.status().ToString();
  EXPECT_NE(conflict.status().message().find("conflict"), std::string::npos) << conflict.status().message();
  EXPECT_FALSE(conflict.status().retryable());
  b.force = true;
  Result<Json> forced = client_->Apply(ConfigMap("c", "default", "two"), b);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)["data"]["k"], "two");
}

TEST_P(KubeSimClientTest, WrongTokenIsPermissionDenied) {
  RestConfig bad = config_;
  bad.token = "not-the-token";
  auto c = Client(bad);
  ASSERT_TRUE(c);
  Result<Json> r = c->Get("v1", "Namespace", "", "default");
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << r.status().ToString();
  EXPECT_FALSE(r.status().retryable());
}

TEST_P(KubeSimClientTest, FaultsAreRetryableAndClear) {
  ClientOptions quick;
  quick.request_timeout = std::chrono::milliseconds(1500);
  auto c = Client(config_, quick);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Get("v1", "Namespace", "", "default").ok());

  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  Result<Json> down = c->Get("v1", "Namespace", "", "default");
  EXPECT_EQ(down.status().code(), Code::kUnavailable) << down.status().ToString();
  EXPECT_TRUE(down.status().retryable());
  // Another cluster of the same process is not affected.
  Result<RestConfig> rc2 = LoadKubeconfigFile(sim_->kubeconfig("cluster-2"));
  ASSERT_TRUE(rc2.ok());
  auto c2 = Client(*rc2, quick);
  EXPECT_TRUE(c2->Get("v1", "Namespace", "", "default").ok());

  ASSERT_EQ(sim_->Fault("cluster-1", "hang"), 200);
  auto t0 = std::chrono::steady_clock::now();
  Result<Json> hung = c->Get("v1", "Namespace", "", "default");
  EXPECT_EQ(hung.status().code(), Code::kUnavailable) << hung.status().ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));

  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  ASSERT_TRUE(c->Get("v1", "Namespace", "", "default").ok());

  ASSERT_EQ(sim_->Fault("cluster-1", "errors", "rate=1"), 200);
  Result<Json> failing = c->Apply(ConfigMap("e"));
  EXPECT_EQ(failing.status().code(), Code::kUnavailable) << failing.status().ToString();
  EXPECT_NE(failing.status().message().find("500"), std::string::npos) << failing.status().message();

  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=300"), 200);
  t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(c->Get("v1", "Namespace", "", "default").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  // The cluster kept its objects through the faults.
  ASSERT_TRUE(c->Apply(ConfigMap("kept")).ok());
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  EXPECT_TRUE(c->Get("v1", "ConfigMap", "default", "kept").ok());
}

// Collects what a watch delivers into the set of names it believes exist.
struct Mirror {
  std::mutex mu;
  std::set<std::string> names;
  int resyncs = 0, errors = 0, bookmarks = 0, connects = 0;
  void On(const WatchEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    switch (e.type) {
      case WatchEventType::kResync:
        ++resyncs;
        names.clear();
        for (const auto& it : e.items) names.insert(it["metadata"]["name"].get<std::string>());
        break;
      case WatchEventType::kAdded:
      case WatchEventType::kModified: names.insert(e.object["metadata"]["name"].get<std::string>()); break;
      case WatchEventType::kDeleted: names.erase(e.object["metadata"]["name"].get<std::string>()); break;
      case WatchEventType::kBookmark: ++bookmarks; break;
      case WatchEventType::kError: ++errors; break;
      case WatchEventType::kConnected: ++connects; break;
    }
  }
  std::set<std::string> Names() {
    std::lock_guard<std::mutex> lock(mu);
    return names;
  }
};

std::set<std::string> LiveNames(ClusterClient& c) {
  std::set<std::string> out;
  Result<ObjectList> l = c.List("v1", "ConfigMap", "default", ListOptions{});
  if (l.ok()) {
    for (const auto& it : l->items) out.insert(it["metadata"]["name"].get<std::string>());
  }
  return out;
}

TEST_P(KubeSimClientTest, WatchSurvivesResetsAndMissesNothing) {
  WatchHubOptions ho;
  ho.min_backoff = std::chrono::milliseconds(20);
  ho.max_backoff = std::chrono::milliseconds(200);
  WatchHub hub(ho);
  Mirror m;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.ns = "default";
  Result<WatchId> id = hub.Watch(client_, spec, [&](const WatchEvent& e) { m.On(e); });
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return m.resyncs >= 1; }));

  // Writes interleaved with resets of the cluster's connections.
  ClientOptions quick;
  quick.request_timeout = std::chrono::milliseconds(2000);
  auto writer = Client(config_, quick);
  int written = 0;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 5; ++i) {
      if (writer->Apply(ConfigMap("w" + std::to_string(round) + "-" + std::to_string(i))).ok()) ++written;
    }
    ASSERT_TRUE(writer->Delete("v1", "ConfigMap", "default", "w" + std::to_string(round) + "-0",
                               Propagation::kBackground).ok());
    ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  }
  EXPECT_EQ(written, 20);
  std::set<std::string> live = LiveNames(*writer);
  EXPECT_EQ(live.size(), 16u);
  EXPECT_TRUE(WaitFor([&] { return m.Names() == live; }));
  EXPECT_GE(m.errors, 1) << "the resets were seen by the watch";
  hub.Cancel(*id);
}

TEST_P(KubeSimClientTest, ExpiredResourceVersionRelists) {
  // Push the cluster's history past its window, then watch from the start.
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(client_->Apply(ConfigMap("churn", "default", std::to_string(i))).ok());
  WatchHub hub;
  Mirror m;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.ns = "default";
  spec.resource_version = "1";
  Result<WatchId> id = hub.Watch(client_, spec, [&](const WatchEvent& e) { m.On(e); });
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(WaitFor([&] { return m.resyncs >= 1; }));
  EXPECT_EQ(m.Names(), std::set<std::string>{"churn"});
}

TEST_P(KubeSimClientTest, BookmarksAndServerTimeoutsResume) {
  WatchHub hub;
  Mirror m;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.ns = "default";
  spec.server_timeout = std::chrono::seconds(1);
  Result<WatchId> id = hub.Watch(client_, spec, [&](const WatchEvent& e) { m.On(e); });
  ASSERT_TRUE(id.ok());
  // The server ends the watch after 1 s with a bookmark; the hub resumes.
  EXPECT_TRUE(WaitFor([&] { return m.bookmarks >= 2; }));
  ASSERT_TRUE(client_->Apply(ConfigMap("after")).ok());
  EXPECT_TRUE(WaitFor([&] { return m.Names().count("after") == 1; }));
}

// report_connected: every established stream says so (a reconnect after a
// reset too, even when nothing changed); without it, never.
TEST_P(KubeSimClientTest, WatchReportsConnectsWhenAsked) {
  WatchHubOptions ho;
  ho.min_backoff = std::chrono::milliseconds(20);
  ho.max_backoff = std::chrono::milliseconds(100);
  WatchHub hub(ho);
  Mirror told, silent;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.ns = "default";
  WatchSpec asked = spec;
  asked.report_connected = true;
  ASSERT_TRUE(hub.Watch(client_, asked, [&](const WatchEvent& e) { told.On(e); }).ok());
  ASSERT_TRUE(hub.Watch(client_, spec, [&](const WatchEvent& e) { silent.On(e); }).ok());
  ASSERT_TRUE(WaitFor([&] { return told.connects >= 1 && silent.resyncs >= 1; }));
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  ASSERT_TRUE(WaitFor([&] { return told.errors >= 2; }));
  const int before = [&] {
    std::lock_guard<std::mutex> l(told.mu);
    return told.connects;
  }();
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  EXPECT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> l(told.mu);
    return told.connects > before;
  }));
  std::lock_guard<std::mutex> l(silent.mu);
  EXPECT_EQ(silent.connects, 0);
}

INSTANTIATE_TEST_SUITE_P(Transport, KubeSimClientTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("Tls") : std::string("Http"); });

}  // namespace
}  // namespace eco::k8s
