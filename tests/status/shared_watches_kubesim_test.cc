// Two DIGs on the same 50 kube-sim clusters (in this process, behind its
// real HTTP server on loopback): the ready monitor holds ONE watch per
// cluster x kind for both, counted by the monitor and by kube-sim's open
// streams; both DIGs' records reach Ready; a third, whose objects were
// there before it was watched, joins the running watches; terminating one
// keeps the others' watches, terminating the last cancels them.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "k8s/client.h"
#include "kubesim/server.h"
#include "kubesim/sim.h"
#include "process.h"
#include "rsync/executor.h"
#include "status/ready_monitor.h"

namespace eco::status {
namespace {

using nlohmann::json;

constexpr int kClusters = 50;

json Labelled(json obj, const std::string& ctx) {
  obj["metadata"]["namespace"] = "default";
  obj["metadata"]["labels"] = {{"app.eco.io/context", ctx}, {"app.eco.io/app", "web"}};
  if (obj.contains("spec") && obj["spec"].contains("template")) {
    obj["spec"]["template"]["metadata"]["labels"]["app.eco.io/context"] = ctx;
    obj["spec"]["template"]["metadata"]["labels"]["app.eco.io/app"] = "web";
  }
  return obj;
}

// Each DIG: a ConfigMap and a Deployment named after it (so that the two
// share no object), on every cluster.
std::vector<json> Objects(const std::string& dig) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", dig + "-cfg"}}},
             {"data", {{"k", "v"}}}};
  json pod = {{"containers", json::array({{{"name", "c"}, {"image", "nginx:1.25"}}})}};
  json dep = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", dig + "-web"}}},
              {"spec",
               {{"replicas", 1},
                {"selector", {{"matchLabels", {{"run", dig}}}}},
                {"template", {{"metadata", {{"labels", {{"run", dig}}}}}, {"spec", pod}}}}}};
  return {cm, dep};
}

class SharedWatchesKubeSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubesim::SimOptions so;
    so.crd_establish_delay = std::chrono::milliseconds(0);
    so.namespace_terminate = std::chrono::milliseconds(0);
    sim_ = kubesim::Simulator::Create(kubesim::DefaultFleet(kClusters, "cluster-"), so);
    ASSERT_TRUE(sim_);
    kubesim::ServerOptions o;
    kubesim::Simulator* sim = sim_.get();
    o.cluster_exists = [sim](const std::string& name) { return sim->HasCluster(name); };
    auto server = kubesim::Server::Start(
        std::move(o), [sim](const kubesim::HttpRequest& r) { return sim->Handle(r); });
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (sim_) sim_->Shutdown();
  }

  Result<std::shared_ptr<k8s::ClusterClient>> Client(const std::string& cluster) {
    k8s::RestConfig rc;
    rc.server = "http://127.0.0.1:" + std::to_string(server_->port()) + "/clusters/" + cluster;
    rc.token = sim_->Token(cluster);
    rc.cluster_name = cluster;
    ECO_ASSIGN_OR_RETURN(std::unique_ptr<k8s::ClusterClient> c, k8s::NewClusterClient(rc));
    return std::shared_ptr<k8s::ClusterClient>(std::move(c));
  }

  // An instantiated DIG whose one app runs Objects(dig) on every cluster;
  // returns its context. Not `watched`: its state record is not written yet.
  std::string Instantiate(const std::string& dig, bool watched = true) {
    appcontext::Contexts c(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(600));
    EXPECT_TRUE(lease.ok());
    appcontext::Meta m;
    m.kind = "dig";
    m.project = "proj";
    m.app_order = {"web"};
    auto id = c.Create(m, *lease);
    EXPECT_TRUE(id.ok());
    appcontext::ResourceSet web;
    for (const json& o : Objects(dig)) web.resources.push_back({appcontext::ResourceName(o), o});
    std::vector<appcontext::ClusterRef> clusters;
    for (int i = 1; i <= kClusters; ++i)
      clusters.push_back({"p", "cluster-" + std::to_string(i), 1, true, 0});
    EXPECT_TRUE(c.PutApp(*id, "web", web, clusters).ok());
    EXPECT_TRUE(st_->Put(appcontext::StatusKey(*id), json{{"status", "Instantiated"}}.dump()).ok());
    if (watched) SetState(dig, *id, {{"Approved", ""}, {"Instantiated", *id}});
    return *id;
  }

  void Terminate(const std::string& dig, const std::string& ctx) {
    ASSERT_TRUE(st_->Put(appcontext::StatusKey(ctx), json{{"status", "Terminated"}}.dump()).ok());
    SetState(dig, ctx, {{"Approved", ""}, {"Instantiated", ctx}, {"Terminated", ctx}});
  }

  void SetState(const std::string& dig, const std::string& sctx,
                const std::vector<std::pair<std::string, std::string>>& actions) {
    json a = json::array();
    for (const auto& [s, i] : actions)
      a.push_back({{"state", s}, {"instance", i}, {"time", "t"}, {"revision", 1}});
    ASSERT_TRUE(st_->Put(catalog::StateKey("deploymentIntentGroup", {"proj", "ca", "v1", dig}),
                         json{{"statusctxid", sctx}, {"actions", a}}.dump())
                    .ok());
  }

  // Every cluster's record of `ctx` reads Ready.
  bool AllReady(const std::string& ctx) {
    for (int i = 1; i <= kClusters; ++i) {
      auto r = appcontext::ReadReady(*st_, ctx, "web", "p+cluster-" + std::to_string(i));
      if (!r.ok() || !r->has_value() || !(*r)->ready) return false;
    }
    return true;
  }

  uint64_t OpenStreams() const { return server_->stats().open_streams; }

  testing::TempDir dir_;
  std::unique_ptr<kubesim::Simulator> sim_;
  std::unique_ptr<kubesim::Server> server_;
  std::unique_ptr<store::Store> st_;
};

TEST_F(SharedWatchesKubeSimTest, TwoDigsOnFiftyClustersHoldOneWatchPerClusterAndKind) {
  const std::string a = Instantiate("dig-a"), b = Instantiate("dig-b");
  for (int i = 1; i <= kClusters; ++i) {
    auto c = Client("cluster-" + std::to_string(i));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (const auto& [dig, ctx] : {std::pair{"dig-a", a}, std::pair{"dig-b", b}}) {
      for (const json& o : Objects(dig)) {
        auto r = (*c)->Apply(Labelled(o, ctx));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
      }
    }
  }
  ReadyMonitorOptions o;
  o.scan_interval = std::chrono::milliseconds(100);
  o.clients = [this](const std::string&, const std::string& cluster) { return Client(cluster); };
  rsync::Executor pool(4);  // its rounds and watch starts
  o.post = [&pool](Clock::Duration after, std::function<void()> round) { pool.PostAfter(after, std::move(round)); };
  ReadyMonitor mon(*st_, std::move(o));
  ASSERT_TRUE(mon.Start().ok());

  // ConfigMap, Deployment and the Deployments' Pods: three kinds per cluster.
  const size_t kWatches = 3 * kClusters;
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return AllReady(a) && AllReady(b); },
                                      std::chrono::seconds(60)));
  EXPECT_EQ(mon.watched_contexts(), 2u);
  EXPECT_EQ(mon.active_watches(), kWatches);
  // kube-sim serves exactly as many watch streams (not one per DIG).
  ASSERT_TRUE(
      eco::testing::WaitUntil([&] { return OpenStreams() == kWatches; }, std::chrono::seconds(10)))
      << OpenStreams() << " streams";

  // dig-c's objects are on the clusters before it is watched: it joins the
  // running watches and reads them from what they hold, opening none.
  const std::string cc = Instantiate("dig-c", /*watched=*/false);
  for (int i = 1; i <= kClusters; ++i) {
    auto c = Client("cluster-" + std::to_string(i));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (const json& o : Objects("dig-c")) ASSERT_TRUE((*c)->Apply(Labelled(o, cc)).ok());
  }
  SetState("dig-c", cc, {{"Approved", ""}, {"Instantiated", cc}});
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return AllReady(cc); }, std::chrono::seconds(60)));
  EXPECT_EQ(mon.watched_contexts(), 3u);
  EXPECT_EQ(mon.active_watches(), kWatches);
  EXPECT_EQ(OpenStreams(), kWatches);
  Terminate("dig-c", cc);

  // dig-a terminated: its context goes, dig-b's watches stay and still report.
  Terminate("dig-a", a);
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return mon.watched_contexts() == 1; },
                                      std::chrono::seconds(30)));
  EXPECT_EQ(mon.active_watches(), kWatches);
  auto c7 = Client("cluster-7");
  ASSERT_TRUE(c7.ok());
  ASSERT_TRUE(
      (*c7)->Delete("v1", "ConfigMap", "default", "dig-b-cfg", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        auto r = appcontext::ReadReady(*st_, b, "web", "p+cluster-7");
        return r.ok() && r->has_value() && (*r)->resources["dig-b-cfg+ConfigMap"] == "NotPresent";
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(mon.active_watches(), kWatches);
  EXPECT_EQ(OpenStreams(), kWatches);

  // The last one terminated: every watch is cancelled.
  Terminate("dig-b", b);
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] { return mon.watched_contexts() == 0 && mon.active_watches() == 0; },
      std::chrono::seconds(30)));
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return OpenStreams() == 0; }, std::chrono::seconds(10)))
      << OpenStreams() << " streams";
  mon.Stop();
}

}  // namespace
}  // namespace eco::status
