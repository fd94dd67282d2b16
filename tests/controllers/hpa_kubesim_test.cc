// HPA placement and action against a real kube-sim fleet whose clusters
// differ in node labels and capacity: placement keeps exactly the clusters
// that fit, and the Deployment the action controller edited really runs
// there, while on a rejected cluster it stays Unschedulable. Nodes cordoned,
// tainted or made NotReady through the cluster's API are not counted.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "api/api.h"
#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "context_builders.h"
#include "controllers/hpa/cluster_view.h"
#include "controllers/hpa/hpa.h"
#include "controllers/hpa/intents.h"
#include "controllers/hpa/schedulable.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "scheduler/scheduler.h"
#include "store/sqlite_store.h"
#include "test_archives.h"

namespace eco::hpa {
namespace {

using appcontext::ClusterRef;
using appcontext::Contexts;
using appcontext::ResourceSet;
using nlohmann::json;

const std::string kAvx = "feature.node.kubernetes.io/cpu-cpuid.AVX512F";
const std::vector<std::string> kClusters = {"hpa-busy",    "hpa-down",  "hpa-fit",
                                            "hpa-nolabel", "hpa-small", "hpa-two"};
// Registered too, but kept out of kClusters: its nodes are altered by one test.
const std::string kNodesCluster = "hpa-nodes";

using eco::testing::ReadFile;

using eco::testing::Doc;

json WebDeployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "web"}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"app", "web"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "web"}}}}},
              {"spec",
               {{"containers", json::array({{{"name", "web"}, {"image", "nginx:1.25"}}})}}}}}}}};
}

class HpaKubeSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::KubeSimOptions o;
    o.fleet_file = HPA_FLEET_FILE;
    o.ready_delay_ms = 20;
    sim_ = std::make_unique<testing::KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
    std::vector<std::string> all = kClusters;
    all.push_back(kNodesCluster);
    for (const auto& c : all) {
      std::string kc = ReadFile(sim_->kubeconfig(c));
      ASSERT_FALSE(kc.empty()) << c;
      Put("cluster", {"prov", c}, Doc(c, json::object()));
      ASSERT_TRUE(st_->Put(catalog::FileKey("cluster", {"prov", c}), kc).ok());
    }
    ASSERT_EQ(sim_->Fault("hpa-down", "down"), 200);

    // The HPA intent: 2 replicas × (1500m cpu + 256 MB) on AVX512F nodes.
    const catalog::Keys dig = {"p", "ca", "v1", "dig"};
    auto k = [&](std::initializer_list<std::string> more) {
      catalog::Keys out = dig;
      out.insert(out.end(), more);
      return out;
    };
    Put("hpaIntent", k({"hpa1"}), Doc("hpa1", {{"app", "web"}}));
    Put("hpaConsumer", k({"hpa1", "c1"}),
        Doc("c1", {{"apiVersion", "apps/v1"},
                   {"kind", "Deployment"},
                   {"name", "web"},
                   {"container", "web"},
                   {"replicas", 2}}));
    Put("hpaResource", k({"hpa1", "c1", "avx"}),
        Doc("avx", {{"allocatable", false}, {"resource", {{"key", kAvx}, {"value", "true"}}}}));
    Put("hpaResource", k({"hpa1", "c1", "cpu"}),
        Doc("cpu", {{"allocatable", true},
                    {"resource",
                     {{"name", "cpu"}, {"requests", 1500}, {"limits", 1500}, {"units", "m"}}}}));
    Put("hpaResource", k({"hpa1", "c1", "mem"}),
        Doc("mem", {{"allocatable", true}, {"resource", {{"name", "memory"}, {"requests", 256}}}}));
  }

  void Put(const std::string& type, const catalog::Keys& k, const json& body) {
    ASSERT_TRUE(st_->Put(catalog::ObjectKey(type, k), body.dump()).ok());
  }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok()) << rc.status().ToString();
    if (!rc.ok()) return nullptr;
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    return std::shared_ptr<k8s::ClusterClient>(std::move(*c));
  }

  std::string Context(const std::vector<std::string>& clusters, const json& web = WebDeployment()) {
    appcontext::Meta m = eco::testing::DigMeta("default");
    m.app_order = {"web"};
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ResourceSet rs;
    rs.resources.push_back({"web+Deployment", web});
    EXPECT_TRUE(ctx_->PutApp(*id, "web", rs, eco::testing::MandatoryClusters(clusters)).ok());
    return *id;
  }

  // A merge patch on a Node (sub: "" or "status") through the cluster's
  // Kubernetes API, as kubectl cordon / taint do; the HTTP status, -1 when
  // there is no answer.
  int PatchNode(const std::string& cluster, const std::string& node, const std::string& sub,
                const json& patch) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    if (!rc.ok()) return -1;
    // The server is http://127.0.0.1:PORT/clusters/NAME: keep its path.
    const std::string& server = rc->server;
    size_t path_at = server.find('/', server.find("//") + 2);
    std::string path = (path_at == std::string::npos ? "" : server.substr(path_at)) +
                       "/api/v1/nodes/" + node + (sub.empty() ? "" : "/" + sub);
    httplib::Client cli("127.0.0.1", sim_->port());
    auto r = cli.Patch(path, {{"Authorization", "Bearer " + rc->token}}, patch.dump(),
                       "application/merge-patch+json");
    return r ? r->status : -1;
  }

  std::vector<json> WebPods(k8s::ClusterClient& c) {
    k8s::ListOptions lo;
    lo.label_selector = "app=web";
    auto l = c.List("v1", "Pod", "default", lo);
    return l.ok() ? l->items : std::vector<json>{};
  }

  static bool Unschedulable(const json& pod) {
    const json& conds = pod.value("status", json::object()).value("conditions", json::array());
    for (const auto& c : conds) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
          c.value("reason", "") == "Unschedulable") {
        return true;
      }
    }
    return false;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::KubeSim> sim_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
};

TEST_F(HpaKubeSimTest, PlacementKeepsClustersThatFitAndTheWorkloadRuns) {
  // hpa-busy: a pod already holds 2 of its 4 CPUs, leaving room for one replica.
  auto busy = Client("hpa-busy");
  ASSERT_NE(busy, nullptr);
  json hog = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "hog"}, {"namespace", "default"}}},
              {"spec",
               {{"containers", json::array({{{"name", "hog"},
                                             {"image", "busybox"},
                                             {"resources", {{"requests", {{"cpu", "2"}}}}}}})}}}};
  ASSERT_TRUE(busy->Apply(hog).ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto p = busy->Get("v1", "Pod", "default", "hog");
        return p.ok() && !p->value("spec", json::object()).value("nodeName", "").empty();
      },
      std::chrono::seconds(30)));

  auto id = Context(kClusters);
  KubeClusterView view(*st_);
  HpaPlacement placement(*st_, view, {.read_threads = 3});
  Status s = placement.FilterClusters(id);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto kept = ctx_->Clusters(id, "web");
  ASSERT_TRUE(kept.ok());
  std::vector<std::string> names;
  for (auto& c : *kept) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"hpa-fit", "hpa-two"}));
  // Why the others went, noted for the fleet plan; nothing noted for a kept one.
  auto note = ctx_->ClusterNote(id, "placement", "web", "prov+hpa-nolabel");
  ASSERT_TRUE(note.ok() && note->has_value());
  EXPECT_EQ(**note, "no node with " + kAvx + "=true");
  auto none = ctx_->ClusterNote(id, "placement", "web", "prov+hpa-fit");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  HpaAction action(*st_);
  ASSERT_TRUE(action.UpdateAppContext(id, "hpa1", "").ok());
  auto rs = ctx_->Resources(id, "web", "prov+hpa-fit");
  ASSERT_TRUE(rs.ok());
  const appcontext::Resource* dep = rs->Find("web+Deployment");
  ASSERT_NE(dep, nullptr);
  const json edited = dep->object;
  EXPECT_EQ(edited["spec"]["replicas"], 2);
  EXPECT_EQ(edited["spec"]["template"]["spec"]["nodeSelector"][kAvx], "true");

  // The edited Deployment schedules and runs on every kept cluster.
  for (const auto& c : *kept) {
    auto rsc = ctx_->Resources(id, "web", c.key());
    ASSERT_TRUE(rsc.ok());
    auto client = Client(c.name);
    ASSERT_NE(client, nullptr);
    auto applied = client->Apply(rsc->Find("web+Deployment")->object);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    std::vector<json> pods;
    bool running = testing::WaitUntil(
        [&] {
          pods = WebPods(*client);
          int n = 0;
          for (const auto& p : pods)
            n += p.value("status", json::object()).value("phase", "") == "Running";
          return n == 2;
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(running) << c.name << ": " << json(pods).dump();
    std::set<std::string> nodes;
    for (const auto& p : pods) nodes.insert(p["spec"]["nodeName"].get<std::string>());
    EXPECT_EQ(nodes.size(), c.name == "hpa-two" ? 2u : 1u) << c.name;
  }

  // On the rejected clusters the same Deployment cannot schedule every pod.
  for (const std::string c : {"hpa-nolabel", "hpa-small", "hpa-busy"}) {
    auto client = Client(c);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->Apply(edited).ok()) << c;
    std::vector<json> pods;
    bool stuck = testing::WaitUntil(
        [&] {
          pods = WebPods(*client);
          for (const auto& p : pods) {
            if (p.value("status", json::object()).value("phase", "") == "Pending" &&
                Unschedulable(p))
              return true;
          }
          return false;
        },
        std::chrono::seconds(30));
    EXPECT_TRUE(stuck) << c << ": " << json(pods).dump();
  }
}

TEST_F(HpaKubeSimTest, NoFittingClusterNamesEveryReason) {
  auto id = Context({"hpa-down", "hpa-nolabel", "hpa-small"});
  HpaPlacement placement(*st_);  // its own live view
  Status s = placement.FilterClusters(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  const std::string& m = s.message();
  EXPECT_NE(m.find("app web fits no cluster"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+hpa-down: cannot be read"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+hpa-nolabel: no node with " + kAvx + "=true"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+hpa-small: consumer c1 needs 1500m cpu free on one node"),
            std::string::npos)
      << m;
}

TEST_F(HpaKubeSimTest, ReadsNodesAndRunningPods) {
  auto two = Client("hpa-two");
  ASSERT_NE(two, nullptr);
  auto st = ReadClusterState(*two);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_EQ(st->nodes.size(), 2u);
  EXPECT_EQ(st->nodes[0].name, "n1");
  EXPECT_EQ(st->nodes[0].labels.at(kAvx), "true");
  EXPECT_EQ(st->nodes[0].Free("cpu"), 2000);
  EXPECT_EQ(st->nodes[0].Free("memory"), 4LL * 1024 * 1024 * 1024);

  // What running pods hold: a limit counts where no request is given, an
  // init container's larger request wins over the sum of the containers,
  // and a finished Job's pod holds nothing.
  auto pod = [](const std::string& name, json containers, json init = json::array()) {
    json spec = {{"containers", std::move(containers)}};
    if (!init.empty()) spec["initContainers"] = std::move(init);
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", spec}};
  };
  auto ctr = [](const std::string& name, json resources) {
    return json{{"name", name}, {"image", "busybox"}, {"resources", std::move(resources)}};
  };
  ASSERT_TRUE(
      two->Apply(pod("lim",
                     json::array({ctr("a", {{"limits", {{"cpu", "500m"}, {"memory", "100Mi"}}}})})))
          .ok());
  ASSERT_TRUE(two->Apply(pod("init", json::array({ctr("a", {{"requests", {{"cpu", "250m"}}}})}),
                             json::array({ctr("setup", {{"requests", {{"cpu", "1"}}}})})))
                  .ok());
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "done"}, {"namespace", "default"}}},
              {"spec",
               {{"template",
                 {{"spec",
                   {{"restartPolicy", "Never"},
                    {"containers", json::array({ctr("j", {{"requests", {{"cpu", "1"}}}})})}}}}}}}};
  ASSERT_TRUE(two->Apply(job).ok());
  bool settled = testing::WaitUntil(
      [&] {
        auto l = two->List("v1", "Pod", "default", {});
        if (!l.ok() || l->items.size() != 3) return false;
        for (const auto& p : l->items) {
          std::string phase = p.value("status", json::object()).value("phase", "");
          if (phase != "Running" && phase != "Succeeded") return false;
        }
        return true;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(settled);
  st = ReadClusterState(*two);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  int64_t cpu = 0, mem = 0;
  for (const auto& n : st->nodes) {
    cpu += n.allocatable.at("cpu") - n.Free("cpu");
    mem += n.allocatable.at("memory") - n.Free("memory");
  }
  EXPECT_EQ(cpu, 1500);
  EXPECT_EQ(mem, 100LL * 1024 * 1024);
}

TEST_F(HpaKubeSimTest, NodesTheSchedulerSkipsAreNotCounted) {
  // Each node has room for one replica (1500m of 2 CPUs). n1 cordoned, n2
  // tainted, n3 NotReady (its Ready condition, through the status
  // subresource), n4 with a PreferNoSchedule taint, which never excludes.
  const std::string c = kNodesCluster;
  auto taint = [](const std::string& key, const std::string& value, const std::string& effect) {
    return json{
        {"spec",
         {{"taints", json::array({{{"key", key}, {"value", value}, {"effect", effect}}})}}}};
  };
  ASSERT_EQ(PatchNode(c, "n1", "", {{"spec", {{"unschedulable", true}}}}), 200);
  ASSERT_EQ(PatchNode(c, "n2", "", taint("dedicated", "edge", "NoSchedule")), 200);
  ASSERT_EQ(PatchNode(c, "n3", "status",
                      {{"status",
                        {{"conditions", json::array({{{"type", "Ready"},
                                                      {"status", "False"},
                                                      {"reason", "KubeletNotReady"}}})}}}}),
            200);
  ASSERT_EQ(PatchNode(c, "n4", "", taint("spot", "true", "PreferNoSchedule")), 200);

  // What the controller reads back from the cluster.
  auto client = Client(c);
  ASSERT_NE(client, nullptr);
  auto live = ReadClusterState(*client);
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  ASSERT_EQ(live->nodes.size(), 4u);
  std::vector<std::string> why;
  for (const auto& n : live->nodes) why.push_back(n.name + ": " + NodeExclusion(n, {}));
  EXPECT_EQ(why, (std::vector<std::string>{"n1: cordoned",
                                           "n2: has taint dedicated=edge:NoSchedule not tolerated",
                                           "n3: not Ready", "n4: "}));
  ASSERT_EQ(live->nodes[3].taints.size(), 1u);
  EXPECT_EQ(DescribeTaint(live->nodes[3].taints[0]), "spot=true:PreferNoSchedule");

  // Without a toleration only n4 counts: the second replica finds no room.
  auto id = Context({c});
  HpaPlacement placement(*st_);  // reads the cluster live
  Status s = placement.FilterClusters(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_EQ(s.message(),
            "HPA placement: app web fits no cluster: prov+hpa-nodes: consumer c1 needs 1500m cpu "
            "free on one node (replica 2 of 2), the most any node has among nodes with " +
                kAvx +
                "=true is 500m cpu (not counted: n1 cordoned, n2 has taint "
                "dedicated=edge:NoSchedule not tolerated, n3 not Ready)");

  // The Deployment tolerating the taint: n2 counts again and the cluster is kept.
  json tolerant = WebDeployment();
  tolerant["spec"]["template"]["spec"]["tolerations"] = json::array(
      {{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "edge"}, {"effect", "NoSchedule"}}});
  id = Context({c}, tolerant);
  s = placement.FilterClusters(id);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto kept = ctx_->Clusters(id, "web");
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].name, c);

  // And the replicas go exactly to n2 and n4: the same fit the controller
  // makes, from the stored intents and the context's resources.
  auto consumers = LoadConsumers(*st_, "p", "ca", "v1", "dig");
  ASSERT_TRUE(consumers.ok()) << consumers.status().ToString();
  auto rs = ctx_->Resources(id, "web", "prov+" + c);
  ASSERT_TRUE(rs.ok());
  std::vector<Consumer>& web = (*consumers)["web"];
  AttachTolerations(web, *rs);
  ClusterState fitted = *live;
  ASSERT_EQ(FitConsumers(fitted, web), "");
  std::vector<int64_t> debited;
  for (size_t i = 0; i < fitted.nodes.size(); ++i)
    debited.push_back(live->nodes[i].Free("cpu") - fitted.nodes[i].Free("cpu"));
  EXPECT_EQ(debited, (std::vector<int64_t>{0, 1500, 0, 1500}));

  // Read live at every placement: uncordoned, n1 counts for the plain Deployment.
  ASSERT_EQ(PatchNode(c, "n1", "", {{"spec", {{"unschedulable", nullptr}}}}), 200);
  id = Context({c});
  s = placement.FilterClusters(id);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// The whole path: intents through the REST API, clusters registered with
// kube-sim kubeconfigs, instantiate through the real scheduler with both HPA
// controllers built in.
class HpaInstantiateTest : public HpaKubeSimTest {
 protected:
  void SetUp() override {
    HpaKubeSimTest::SetUp();
    if (HasFatalFailure()) return;
    scheduler::Options o;
    o.builtins = {{"hpa-placement", "placement", 1, std::make_shared<HpaPlacement>(*st_)},
                  {"hpa-action", "action", 1, std::make_shared<HpaAction>(*st_)}};
    sched_ = std::make_unique<scheduler::Scheduler>(*st_, std::move(o));
    api::Options ao;
    ao.scheduler = sched_.get();
    api_ = std::make_unique<api::Api>(*st_, ao);
  }
  api::Response Call(const std::string& method, const std::string& path,
                     const json& body = json::object()) {
    api::Request r;
    r.method = method;
    r.path = path;
    r.body = body.dump();
    return api_->Handle(r);
  }
  void Ok(const api::Response& r, int code = 201) { ASSERT_EQ(r.status, code) << r.body; }
  void Upload(const std::string& path, const json& meta, const std::string& file) {
    api::Request r;
    r.method = "POST";
    r.path = path;
    r.multipart = true;
    r.parts.emplace("metadata", api::FormPart{meta.dump(), "", "application/json"});
    r.parts.emplace("file", api::FormPart{file, "f", "application/octet-stream"});
    Ok(api_->Handle(r));
  }

  std::unique_ptr<scheduler::Scheduler> sched_;
  std::unique_ptr<api::Api> api_;
};

TEST_F(HpaInstantiateTest, InstantiateKeepsFittingClustersAndEditsTheChart) {
  const std::vector<std::string> edges = {"hpa-fit", "hpa-nolabel", "hpa-small", "hpa-two"};
  Ok(Call("POST", "/v2/cluster-providers", Doc("prov2", json::object())));
  for (const auto& c : edges) {
    Upload("/v2/cluster-providers/prov2/clusters", Doc(c, json::object()),
           ReadFile(sim_->kubeconfig(c)));
    Ok(Call("POST", "/v2/cluster-providers/prov2/clusters/" + c + "/labels",
            json{{"clusterLabel", "edge"}}));
  }
  Ok(Call("POST", "/v2/projects", Doc("q", json::object())));
  const std::string LC = "/v2/projects/q/logical-clouds/lc0";
  Ok(Call("POST", "/v2/projects/q/logical-clouds", Doc("lc0", {{"level", "0"}})));
  for (const auto& c : edges) {
    Ok(Call("POST", LC + "/cluster-references",
            Doc("ref-" + c, {{"clusterProvider", "prov2"}, {"cluster", c}})));
  }
  Ok(Call("POST", LC + "/instantiate"), 202);
  const std::string CA = "/v2/projects/q/composite-apps/ca/v1";
  Ok(Call("POST", "/v2/projects/q/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
  Upload(CA + "/apps", Doc("web", json::object()), eco::testing::ChartTgz("web"));
  Ok(Call("POST", CA + "/composite-profiles", Doc("cp", json::object())));

  // Project q: the fixture's direct writes sit under project p. Two DIGs: one whose intent some
  // clusters meet, one that none meets.
  for (const std::string dig : {"dig", "dig-big"}) {
    const std::string D = CA + "/deployment-intent-groups/" + dig;
    Ok(Call("POST", CA + "/deployment-intent-groups",
            Doc(dig, {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"}})));
    Ok(Call("POST", D + "/generic-placement-intents", Doc("gpi", json::object())));
    Ok(Call("POST", D + "/generic-placement-intents/gpi/app-intents",
            Doc("web-pl",
                {{"app", "web"},
                 {"intent",
                  {{"allOf", {{{"clusterProvider", "prov2"}, {"clusterLabel", "edge"}}}}}}})));
    const std::string H = D + "/hpa-intents";
    Ok(Call("POST", H, Doc("hpa1", {{"app", "web"}})));
    // The chart's Deployment is "<release>-web" with container "web".
    Ok(Call("POST", H + "/hpa1/hpa-resource-consumers",
            Doc("c1", {{"apiVersion", "apps/v1"},
                       {"kind", "Deployment"},
                       {"name", "r1-web"},
                       {"container", "web"},
                       {"replicas", 2}})));
    const std::string R = H + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
    Ok(Call(
        "POST", R,
        Doc("avx", {{"allocatable", false}, {"resource", {{"key", kAvx}, {"value", "true"}}}})));
    int cpu_milli = dig == "dig" ? 1500 : 5000;
    Ok(Call(
        "POST", R,
        Doc("cpu", {{"allocatable", true},
                    {"resource", {{"name", "cpu"}, {"requests", cpu_milli}, {"units", "m"}}}})));
    Ok(Call("PUT", D + "/intents/all",
            Doc("all", {{"intent",
                         {{"genericPlacementIntent", "gpi"},
                          {"hpa-placement", "hpa1"},
                          {"hpa-action", "hpa1"}}}})),
       201);
    Ok(Call("POST", D + "/approve"), 202);
  }

  const std::string D = CA + "/deployment-intent-groups/dig";
  Ok(Call("POST", D + "/instantiate"), 202);
  json state = json::parse(Call("GET", D + "/status").body, nullptr, false);
  ASSERT_TRUE(state.is_object());
  std::string id = state["states"]["actions"].back().value("instance", "");
  ASSERT_FALSE(id.empty()) << state.dump();
  auto kept = ctx_->Clusters(id, "web");
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  std::vector<std::string> names;
  for (auto& c : *kept) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"hpa-fit", "hpa-two"}));
  auto rs = ctx_->Resources(id, "web", "prov2+hpa-two");
  ASSERT_TRUE(rs.ok());
  const appcontext::Resource* dep = rs->Find("r1-web+Deployment");
  ASSERT_NE(dep, nullptr);
  EXPECT_EQ(dep->object["spec"]["replicas"], 2);
  EXPECT_EQ(dep->object["spec"]["template"]["spec"]["nodeSelector"][kAvx], "true");
  EXPECT_EQ(
      dep->object["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
      "1500m");

  auto big = Call("POST", CA + "/deployment-intent-groups/dig-big/instantiate");
  EXPECT_EQ(big.status, 400);  // Invalid from the placement controller
  EXPECT_NE(big.body.find("app web fits no cluster"), std::string::npos) << big.body;
  EXPECT_NE(big.body.find("needs 5000m cpu"), std::string::npos) << big.body;
}

}  // namespace
}  // namespace eco::hpa
