// The HPA placement and action controllers over a real embedded store:
// intents written with catalog keys, the AppContext with Contexts, clusters
// described by a fake ClusterView (labels, capacity, pods already running).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "controllers/hpa/amount.h"
#include "controllers/hpa/hpa.h"
#include "controllers/hpa/intents.h"
#include "context_builders.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::hpa {
namespace {

using appcontext::ClusterRef;
using appcontext::Contexts;
using appcontext::ResourceSet;
using nlohmann::json;

const catalog::Keys kDig = {"p", "ca", "v1", "dig"};

catalog::Keys K(std::initializer_list<std::string> more) {
  catalog::Keys k = kDig;
  k.insert(k.end(), more);
  return k;
}

using eco::testing::Doc;

json Workload(const std::string& kind, const std::string& name, bool with_replicas = true) {
  json spec = {{"selector", {{"matchLabels", {{"app", name}}}}},
               {"template",
                {{"metadata", {{"labels", {{"app", name}}}}},
                 {"spec",
                  {{"containers",
                    json::array({{{"name", name},
                                  {"image", "nginx"},
                                  {"resources", {{"requests", {{"ephemeral-storage", "1Gi"}}}}}},
                                 {{"name", "sidecar"}, {"image", "envoy"}}})}}}}}};
  if (with_replicas) spec["replicas"] = 1;
  return {
      {"apiVersion", "apps/v1"}, {"kind", kind}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

NodeState LabelledNode(const std::string& name, std::map<std::string, std::string> labels,
               int64_t cpu_milli, int64_t mem_bytes, std::map<std::string, int64_t> extra = {}) {
  NodeState n;
  n.name = name;
  n.labels = std::move(labels);
  n.allocatable = {{"cpu", cpu_milli}, {"memory", mem_bytes}, {"pods", 110}};
  for (auto& [k, v] : extra) n.allocatable[k] = v;
  return n;
}

constexpr int64_t kGi = 1024LL * 1024 * 1024;
const std::string kAvx = "feature.node.kubernetes.io/cpu-cpuid.AVX512F";

// Clusters by "provider+name"; missing ones are unreachable.
class FakeView : public ClusterView {
 public:
  Result<ClusterState> Read(const std::string& provider, const std::string& cluster) override {
    int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    reads_++;
    Result<ClusterState> out = Unavailable("connection refused");
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = clusters_.find(provider + "+" + cluster);
      if (it != clusters_.end()) out = it->second;
    }
    --in_flight_;
    return out;
  }
  void Set(const std::string& name, std::vector<NodeState> nodes) {
    std::lock_guard<std::mutex> l(mu_);
    clusters_["prov+" + name] = ClusterState{std::move(nodes)};
  }
  std::atomic<int> reads_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};

 private:
  std::mutex mu_;
  std::map<std::string, ClusterState> clusters_;
};

class HpaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
  }

  void Put(const std::string& type, const catalog::Keys& k, const json& body) {
    ASSERT_TRUE(st_->Put(catalog::ObjectKey(type, k), body.dump()).ok());
  }
  void Intent(const std::string& name, const std::string& app) {
    Put("hpaIntent", K({name}), Doc(name, {{"app", app}}));
  }
  void Consumer(const std::string& intent, const std::string& name, const std::string& workload,
                int replicas, const std::string& kind = "Deployment",
                const std::string& container = "") {
    Put("hpaConsumer", K({intent, name}),
        Doc(name, {{"apiVersion", "apps/v1"},
                   {"kind", kind},
                   {"name", workload},
                   {"container", container.empty() ? workload : container},
                   {"replicas", replicas}}));
  }
  void Alloc(const std::string& intent, const std::string& consumer, const std::string& name,
             const std::string& resource, int64_t requests, int64_t limits = 0,
             const std::string& units = "") {
    Put("hpaResource", K({intent, consumer, name}),
        Doc(name, {{"allocatable", true},
                   {"mandatory", true},
                   {"weight", 1},
                   {"resource",
                    {{"name", resource},
                     {"requests", requests},
                     {"limits", limits},
                     {"units", units}}}}));
  }
  void Label(const std::string& intent, const std::string& consumer, const std::string& name,
             const std::string& key, const std::string& value) {
    Put("hpaResource", K({intent, consumer, name}),
        Doc(name, {{"allocatable", false},
                   {"mandatory", true},
                   {"weight", 1},
                   {"resource", {{"key", key}, {"value", value}}}}));
  }

  // A context whose apps each get `clusters` (all in one group per entry of
  // `groups`, or a mandatory group of their own when `groups` is empty).
  std::string Context(const std::map<std::string, std::vector<ClusterRef>>& apps,
                      std::vector<std::string> order = {}) {
    appcontext::Meta m = eco::testing::DigMeta("default");
    if (order.empty()) {
      for (auto& [a, c] : apps) order.push_back(a);
    }
    m.app_order = order;
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    for (auto& [app, refs] : apps) {
      ResourceSet rs;
      rs.resources.push_back({app + "+Deployment", Workload("Deployment", app)});
      rs.resources.push_back({app + "-ds+DaemonSet", Workload("DaemonSet", app + "-ds", false)});
      rs.resources.push_back({app + "-db+StatefulSet", Workload("StatefulSet", app + "-db")});
      EXPECT_TRUE(ctx_->PutApp(*id, app, rs, refs).ok());
    }
    return *id;
  }
  static std::vector<ClusterRef> Each(const std::vector<std::string>& names) {
    std::vector<ClusterRef> out;
    int g = 0;
    for (const auto& n : names) out.push_back({"prov", n, ++g, true, 0});
    return out;
  }
  static std::vector<ClusterRef> AnyOf(const std::vector<std::string>& names, int group) {
    std::vector<ClusterRef> out;
    for (const auto& n : names) out.push_back({"prov", n, group, false, 0});
    return out;
  }

  std::vector<std::string> Kept(const std::string& id, const std::string& app) {
    auto cs = ctx_->Clusters(id, app);
    EXPECT_TRUE(cs.ok()) << cs.status().ToString();
    std::vector<std::string> out;
    if (cs.ok()) {
      for (auto& c : *cs) out.push_back(c.name);
    }
    return out;
  }

  Status Place(const std::string& id, size_t threads = 4) {
    HpaPlacement p(*st_, view_, {.read_threads = threads});
    return p.FilterClusters(id);
  }
  Status Act(const std::string& id) {
    HpaAction a(*st_);
    return a.UpdateAppContext(id, "hpa1", "");
  }
  json Obj(const std::string& id, const std::string& app, const std::string& cluster,
           const std::string& name) {
    auto rs = ctx_->Resources(id, app, "prov+" + cluster);
    EXPECT_TRUE(rs.ok()) << rs.status().ToString();
    if (!rs.ok()) return json();
    const appcontext::Resource* r = rs->Find(name);
    EXPECT_NE(r, nullptr) << name;
    return r ? r->object : json();
  }
  size_t Variants(const std::string& id, const std::string& app) {
    auto r = st_->Range(appcontext::ContextPrefix(id) + "app/" + app + "/variant/");
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->kvs.size() : 0;
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
  FakeView view_;
};

using Names = std::vector<std::string>;

// ---- amounts and quantities ----

TEST(HpaAmountTest, RequirementUnits) {
  EXPECT_EQ(*RequirementAmount("cpu", 2, ""), 2000);
  EXPECT_EQ(*RequirementAmount("cpu", 500, "m"), 500);
  EXPECT_EQ(*RequirementAmount("memory", 1000, ""), 1000LL * 1000 * 1000);  // MB
  EXPECT_EQ(*RequirementAmount("memory", 2, "Gi"), 2 * kGi);
  EXPECT_EQ(*RequirementAmount("nvidia.com/gpu", 2, ""), 2);
  EXPECT_FALSE(RequirementAmount("memory", 1, "m").ok());  // a thousandth of a byte
  EXPECT_FALSE(RequirementAmount("cpu", 1, "furlongs").ok());
  EXPECT_FALSE(RequirementAmount("memory", INT64_MAX / 10, "Ti").ok());
  EXPECT_EQ(AmountQuantity("cpu", 2000), "2");
  EXPECT_EQ(AmountQuantity("cpu", 1500), "1500m");
  EXPECT_EQ(AmountQuantity("memory", 1000000000), "1000000000");
}

TEST(HpaAmountTest, KubernetesQuantities) {
  EXPECT_EQ(*ParseQuantity("250m", true), 250);
  EXPECT_EQ(*ParseQuantity("4", true), 4000);
  EXPECT_EQ(*ParseQuantity("0.1", true), 100);
  EXPECT_EQ(*ParseQuantity("1.5", true), 1500);
  EXPECT_EQ(*ParseQuantity("16Gi", false), 16 * kGi);
  EXPECT_EQ(*ParseQuantity("100M", false), 100000000);
  EXPECT_EQ(*ParseQuantity("1e3", false), 1000);
  EXPECT_EQ(*ParseQuantity("128974848", false), 128974848);
  EXPECT_EQ(*ParseQuantity("1k", false), 1000);
  EXPECT_EQ(*ParseQuantity("500m", false), 1);                    // rounded up
  EXPECT_EQ(*ParseQuantity("1E", false), 1000000000000000000LL);  // exa, not an exponent
  EXPECT_EQ(*ParseQuantity("2Ki", false), 2048);
  EXPECT_FALSE(ParseQuantity("", false).ok());
  EXPECT_FALSE(ParseQuantity("1e", false).ok());
  EXPECT_FALSE(ParseQuantity("12Q", false).ok());
  EXPECT_FALSE(ParseQuantity("abc", true).ok());
}

// ---- placement ----

TEST_F(HpaTest, NodeLabelsSelectClusters) {
  view_.Set("c1", {LabelledNode("n1", {{kAvx, "true"}}, 4000, 16 * kGi)});
  view_.Set("c2", {LabelledNode("n1", {{kAvx, "false"}}, 4000, 16 * kGi), LabelledNode("n2", {}, 4000, 16 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Label("hpa1", "c1", "avx", kAvx, "true");
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c1"}));
}

TEST_F(HpaTest, LabelRequirementsIntersectPerNode) {
  // c1 has both labels, but on different nodes: no single node qualifies.
  view_.Set("c1", {LabelledNode("n1", {{"a", "1"}}, 4000, kGi), LabelledNode("n2", {{"b", "1"}}, 4000, kGi)});
  view_.Set("c2", {LabelledNode("n1", {{"a", "1"}, {"b", "1"}}, 4000, kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Label("hpa1", "c1", "l1", "a", "1");
  Label("hpa1", "c1", "l2", "b", "1");
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, ReplicasDebitNodes) {
  // 2 replicas × 2 CPU: c1 has one 4-CPU node (fits both), c2 a 3-CPU node
  // (fits one), c3 two 2-CPU nodes (one each).
  view_.Set("c1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  view_.Set("c2", {LabelledNode("n1", {}, 3000, 8 * kGi)});
  view_.Set("c3", {LabelledNode("n1", {}, 2000, 8 * kGi), LabelledNode("n2", {}, 2000, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 2);
  Alloc("hpa1", "c1", "cpu", "cpu", 2, 2);
  auto id = Context({{"web", Each({"c1", "c2", "c3"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c1", "c3"}));
}

TEST_F(HpaTest, RunningPodsReduceFreeCapacity) {
  NodeState busy = LabelledNode("n1", {}, 4000, 8 * kGi);
  busy.requested = {{"cpu", 3500}, {"memory", 6 * kGi}};
  view_.Set("c1", {busy});
  view_.Set("c2", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 1);
  Alloc("hpa1", "c1", "mem", "memory", 1024);  // MB
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, AllRequestsOfAPodOnOneNode) {
  // c1: cpu on n1, memory on n2, neither has both; c2 has a node with both.
  view_.Set("c1", {LabelledNode("n1", {}, 8000, kGi), LabelledNode("n2", {}, 500, 16 * kGi)});
  view_.Set("c2", {LabelledNode("n1", {}, 8000, 16 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 2);
  Alloc("hpa1", "c1", "mem", "memory", 4, 0, "Gi");
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, CapacityOnlyCountsLabelledNodes) {
  // The big node lacks the GPU label; the labelled one is small.
  view_.Set("c1", {LabelledNode("big", {}, 16000, 64 * kGi),
                   LabelledNode("gpu", {{"gpu", "yes"}}, 1000, 4 * kGi, {{"nvidia.com/gpu", 1}})});
  view_.Set("c2", {LabelledNode("gpu", {{"gpu", "yes"}}, 8000, 32 * kGi, {{"nvidia.com/gpu", 2}})});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 2);
  Label("hpa1", "c1", "lbl", "gpu", "yes");
  Alloc("hpa1", "c1", "cpu", "cpu", 2);
  Alloc("hpa1", "c1", "gpu", "nvidia.com/gpu", 1);
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, NoClusterLeftIsInvalidWithReasons) {
  view_.Set("c1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  view_.Set("c2", {LabelledNode("n1", {{kAvx, "true"}}, 500, 8 * kGi)});
  // c3 is unreachable (not in the view)
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Label("hpa1", "c1", "avx", kAvx, "true");
  Alloc("hpa1", "c1", "cpu", "cpu", 2);
  auto id = Context({{"web", Each({"c1", "c2", "c3"})}});
  Status s = Place(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  const std::string& m = s.message();
  EXPECT_NE(m.find("app web"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+c1: no node with " + kAvx + "=true"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+c2: consumer c1 needs 2000m cpu free on one node"), std::string::npos)
      << m;
  EXPECT_NE(m.find("is 500m cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("prov+c3: cannot be read: connection refused"), std::string::npos) << m;
  // Nothing was removed: the failed placement leaves the context as it was.
  EXPECT_EQ(Kept(id, "web"), Names({"c1", "c2", "c3"}));
}

TEST_F(HpaTest, NodesThatDoNotCountAreNamed) {
  NodeState cordoned = LabelledNode("n1", {}, 8000, 8 * kGi);
  cordoned.unschedulable = true;
  NodeState down = LabelledNode("n2", {}, 8000, 8 * kGi);
  down.ready = false;
  NodeState tainted = LabelledNode("n3", {}, 8000, 8 * kGi);
  tainted.taints = {{"dedicated", "edge", "NoSchedule"}};
  view_.Set("c1", {cordoned, down, tainted, LabelledNode("n4", {}, 500, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 2);
  auto id = Context({{"web", Each({"c1"})}});
  Status s = Place(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_EQ(s.message(),
            "HPA placement: app web fits no cluster: prov+c1: consumer c1 needs 2000m cpu free on "
            "one node, the most any node has is 500m cpu (not counted: n1 cordoned, n2 not Ready, "
            "n3 has taint dedicated=edge:NoSchedule not tolerated)");
}

TEST_F(HpaTest, TolerationsComeFromEachClustersResources) {
  // Every cluster's only big node is tainted; c2's Deployment (another
  // controller's variant) tolerates the taint, the shared one does not.
  NodeState tainted = LabelledNode("n1", {}, 8000, 8 * kGi);
  tainted.taints = {{"dedicated", "edge", "NoSchedule"}};
  view_.Set("c1", {tainted, LabelledNode("n2", {}, 500, 8 * kGi)});
  view_.Set("c2", {tainted, LabelledNode("n2", {}, 500, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 2);
  auto id = Context({{"web", Each({"c1", "c2"})}});
  auto rs = ctx_->Resources(id, "web", "prov+c2");
  ASSERT_TRUE(rs.ok());
  appcontext::Resource* dep = rs->Find("web+Deployment");
  ASSERT_NE(dep, nullptr);
  dep->object["spec"]["template"]["spec"]["tolerations"] = json::array(
      {{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "edge"}, {"effect", "NoSchedule"}}});
  ASSERT_TRUE(ctx_->SetResources(id, "web", {"prov+c2"}, *rs).ok());
  ASSERT_EQ(Variants(id, "web"), 1u);
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, DaemonSetsCountCordonedNodes) {
  // As in Kubernetes, a DaemonSet's pods tolerate the cordon; a Deployment's do not.
  NodeState cordoned = LabelledNode("n1", {}, 4000, 8 * kGi);
  cordoned.unschedulable = true;
  view_.Set("c1", {cordoned});
  view_.Set("c2", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  Intent("hpa-ds", "agent");
  Consumer("hpa-ds", "ds", "agent-ds", 1, "DaemonSet", "agent-ds");
  Alloc("hpa-ds", "ds", "cpu", "cpu", 1);
  Intent("hpa-web", "web");
  Consumer("hpa-web", "c1", "web", 1);
  Alloc("hpa-web", "c1", "cpu", "cpu", 1);
  auto id = Context({{"agent", Each({"c1"})}, {"web", Each({"c1", "c2"})}}, {"agent", "web"});
  Status s = Place(id);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Kept(id, "agent"), Names({"c1"}));
  EXPECT_EQ(Kept(id, "web"), Names({"c2"}));
}

TEST_F(HpaTest, UnreachableClusterIsDroppedWhenOthersFit) {
  view_.Set("c1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 1);
  auto id = Context({{"web", Each({"c1", "down"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c1"}));
}

TEST_F(HpaTest, GroupsAndAnyOf) {
  view_.Set("m1", {LabelledNode("n1", {{"x", "1"}}, 4000, 8 * kGi)});
  view_.Set("a1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  view_.Set("a2", {LabelledNode("n1", {{"x", "1"}}, 4000, 8 * kGi)});
  view_.Set("a3", {LabelledNode("n1", {{"x", "1"}}, 4000, 8 * kGi)});
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Label("hpa1", "c1", "x", "x", "1");
  std::vector<ClusterRef> refs = {{"prov", "m1", 1, true, 0}};
  for (auto& r : AnyOf({"a1", "a2", "a3"}, 2)) refs.push_back(r);
  // `other` has no HPA intent: untouched even on a cluster that would not fit.
  auto id = Context({{"web", refs}, {"other", Each({"a1"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"m1", "a2", "a3"}));
  EXPECT_EQ(Kept(id, "other"), Names({"a1"}));
  auto cs = ctx_->Clusters(id, "web");
  ASSERT_TRUE(cs.ok());
  EXPECT_EQ((*cs)[1].group, 2);
  EXPECT_FALSE((*cs)[1].mandatory);
  // The scheduler then keeps the first survivor of the anyOf group.
  ASSERT_TRUE(ctx_->ResolveGroups(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"m1", "a2"}));
}

TEST_F(HpaTest, EarlierAppsUseCapacityOfLaterOnes) {
  view_.Set("c1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  view_.Set("c2", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  Intent("hpa-a", "a");
  Consumer("hpa-a", "ca", "a", 1);
  Alloc("hpa-a", "ca", "cpu", "cpu", 3);
  Intent("hpa-b", "b");
  Consumer("hpa-b", "cb", "b", 1);
  Alloc("hpa-b", "cb", "cpu", "cpu", 3);
  // a on c1 only; b may go to c1 or c2 but c1 has only 1 CPU left after a.
  auto id = Context({{"a", Each({"c1"})}, {"b", Each({"c1", "c2"})}}, {"a", "b"});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "a"), Names({"c1"}));
  EXPECT_EQ(Kept(id, "b"), Names({"c2"}));
  EXPECT_EQ(view_.reads_.load(), 2);  // each cluster read once
}

TEST_F(HpaTest, ReadsAreParallelAndBounded) {
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) {
    names.push_back("c" + std::to_string(100 + i));
    view_.Set(names.back(), {LabelledNode("n1", {}, i % 2 ? 4000 : 500, 8 * kGi)});
  }
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1);
  Alloc("hpa1", "c1", "cpu", "cpu", 1);
  auto id = Context({{"web", Each(names)}});
  ASSERT_TRUE(Place(id, 3).ok());
  EXPECT_EQ(view_.reads_.load(), 64);
  EXPECT_LE(view_.max_in_flight_.load(), 3);
  EXPECT_EQ(Kept(id, "web").size(), 32u);
}

TEST_F(HpaTest, NoIntentsNoReads) {
  view_.Set("c1", {LabelledNode("n1", {}, 4000, 8 * kGi)});
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Place(id).ok());
  EXPECT_EQ(Kept(id, "web"), Names({"c1", "c2"}));
  EXPECT_EQ(view_.reads_.load(), 0);
}

// ---- action ----

TEST_F(HpaTest, ActionEditsWorkload) {
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 3);
  Label("hpa1", "c1", "avx", kAvx, "true");
  Alloc("hpa1", "c1", "cpu", "cpu", 1, 2);
  Alloc("hpa1", "c1", "mem", "memory", 512, 1024);  // MB
  Alloc("hpa1", "c1", "gpu", "nvidia.com/gpu", 1);
  auto id = Context({{"web", Each({"c1", "c2"})}});
  ASSERT_TRUE(Act(id).ok());
  for (const char* cl : {"c1", "c2"}) {
    json d = Obj(id, "web", cl, "web+Deployment");
    EXPECT_EQ(d["spec"]["replicas"], 3);
    EXPECT_EQ(d["spec"]["template"]["spec"]["nodeSelector"][kAvx], "true");
    json c = d["spec"]["template"]["spec"]["containers"][0];
    ASSERT_EQ(c["name"], "web");
    EXPECT_EQ(c["resources"]["requests"]["cpu"], "1");
    EXPECT_EQ(c["resources"]["limits"]["cpu"], "2");
    EXPECT_EQ(c["resources"]["requests"]["memory"], "512000000");
    EXPECT_EQ(c["resources"]["limits"]["memory"], "1024000000");
    EXPECT_EQ(c["resources"]["requests"]["nvidia.com/gpu"], "1");
    EXPECT_FALSE(c["resources"]["limits"].contains("nvidia.com/gpu"));  // limits 0: none
    EXPECT_EQ(c["resources"]["requests"]["ephemeral-storage"], "1Gi");  // kept
    EXPECT_FALSE(d["spec"]["template"]["spec"]["containers"][1].contains("resources"));
  }
  // Other workloads of the app are untouched.
  EXPECT_EQ(Obj(id, "web", "c1", "web-db+StatefulSet")["spec"]["replicas"], 1);
}

TEST_F(HpaTest, ActionOnStatefulSetAndDaemonSet) {
  Intent("hpa1", "web");
  Consumer("hpa1", "db", "web-db", 4, "StatefulSet");
  Alloc("hpa1", "db", "cpu", "cpu", 250, 0, "m");
  Consumer("hpa1", "ds", "web-ds", 5, "DaemonSet");
  Label("hpa1", "ds", "zone", "topology.kubernetes.io/zone", "a");
  auto id = Context({{"web", Each({"c1"})}});
  ASSERT_TRUE(Act(id).ok());
  json sts = Obj(id, "web", "c1", "web-db+StatefulSet");
  EXPECT_EQ(sts["spec"]["replicas"], 4);
  EXPECT_EQ(sts["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "250m");
  json ds = Obj(id, "web", "c1", "web-ds+DaemonSet");
  EXPECT_FALSE(ds["spec"].contains("replicas"));
  EXPECT_EQ(ds["spec"]["template"]["spec"]["nodeSelector"]["topology.kubernetes.io/zone"], "a");
  EXPECT_EQ(Obj(id, "web", "c1", "web+Deployment")["spec"]["replicas"], 1);
}

TEST_F(HpaTest, ActionMissingContainerFails) {
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 1, "Deployment", "nosuch");
  Alloc("hpa1", "c1", "cpu", "cpu", 1);
  auto id = Context({{"web", Each({"c1"})}});
  Status s = Act(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("container 'nosuch' not found in web+Deployment"), std::string::npos)
      << s.message();
  EXPECT_EQ(Obj(id, "web", "c1", "web+Deployment")["spec"]["replicas"], 1);  // unchanged
}

TEST_F(HpaTest, ActionMissingWorkloadFails) {
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "api", 2);
  auto id = Context({{"web", Each({"c1"})}});
  Status s = Act(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("the app has no api+Deployment"), std::string::npos) << s.message();
}

TEST_F(HpaTest, ActionSharesOneEditAcrossClusters) {
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 2);
  Alloc("hpa1", "c1", "cpu", "cpu", 1);
  std::vector<std::string> names;
  for (int i = 0; i < 10000; ++i) names.push_back("c" + std::to_string(10000 + i));
  auto id = Context({{"web", Each(names)}});
  ASSERT_TRUE(Act(id).ok());
  EXPECT_EQ(Variants(id, "web"), 0u);  // one shared set, edited once
  auto cs = ctx_->Clusters(id, "web");
  ASSERT_TRUE(cs.ok());
  for (auto& c : *cs) ASSERT_EQ(c.variant, 0);
  EXPECT_EQ(Obj(id, "web", names.back(), "web+Deployment")["spec"]["replicas"], 2);
}

TEST_F(HpaTest, ActionKeepsOtherControllersVariants) {
  Intent("hpa1", "web");
  Consumer("hpa1", "c1", "web", 2);
  auto id = Context({{"web", Each({"c1", "c2", "c3", "c4"})}});
  // Another controller gave c3 and c4 an extra resource.
  auto rs = ctx_->Resources(id, "web", "prov+c3");
  ASSERT_TRUE(rs.ok());
  rs->resources.push_back(
      {"extra+ConfigMap",
       {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "extra"}}}}});
  ASSERT_TRUE(ctx_->SetResources(id, "web", {"prov+c3", "prov+c4"}, *rs).ok());
  ASSERT_EQ(Variants(id, "web"), 1u);

  ASSERT_TRUE(Act(id).ok());
  for (const char* c : {"c1", "c2", "c3", "c4"}) {
    EXPECT_EQ(Obj(id, "web", c, "web+Deployment")["spec"]["replicas"], 2) << c;
  }
  auto c3 = ctx_->Resources(id, "web", "prov+c3");
  ASSERT_TRUE(c3.ok());
  EXPECT_NE(c3->Find("extra+ConfigMap"), nullptr);
  auto c1 = ctx_->Resources(id, "web", "prov+c1");
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(c1->Find("extra+ConfigMap"), nullptr);
  auto cs = ctx_->Clusters(id, "web");
  ASSERT_TRUE(cs.ok());
  std::set<int> variants;
  for (auto& c : *cs) variants.insert(c.variant);
  EXPECT_EQ(variants.size(), 2u);  // still two sets: the edit made no per-cluster copies
  EXPECT_EQ((*cs)[2].variant, (*cs)[3].variant);
}

TEST(HpaFitTest, FailedFitLeavesStateUnchanged) {
  ClusterState st{{LabelledNode("n1", {}, 3000, kGi)}};
  hpa::Consumer c;
  c.name = "c1";
  c.replicas = 2;
  Requirement r;
  r.allocatable = true;
  r.resource = "cpu";
  r.requests = 2000;
  c.requirements.push_back(r);
  std::string why = FitConsumers(st, {c});
  EXPECT_NE(why.find("(replica 2 of 2)"), std::string::npos) << why;
  EXPECT_EQ(st.nodes[0].Free("cpu"), 3000);
  c.replicas = 1;
  EXPECT_EQ(FitConsumers(st, {c}), "");
  EXPECT_EQ(st.nodes[0].Free("cpu"), 1000);
}

}  // namespace
}  // namespace eco::hpa
