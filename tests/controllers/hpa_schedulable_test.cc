// Which nodes count as capacity for a workload's pods: tolerations against
// taints (the scheduler's TaintToleration rules), cordoned nodes
// (NodeUnschedulable), NotReady nodes, the tolerations read from workloads,
// and how FitConsumers skips and names the nodes that do not count.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "controllers/hpa/intents.h"
#include "controllers/hpa/schedulable.h"

namespace eco::hpa {
namespace {

using nlohmann::json;

const Taint kEdge{"dedicated", "edge", "NoSchedule"};

// ---- toleration vs taint ----

TEST(HpaTolerationTest, EqualNeedsKeyValueAndEffect) {
  EXPECT_TRUE(Tolerates({"dedicated", "Equal", "edge", "NoSchedule"}, kEdge));
  EXPECT_TRUE(Tolerates({"dedicated", "", "edge", "NoSchedule"}, kEdge));  // "" is Equal
  EXPECT_FALSE(Tolerates({"dedicated", "Equal", "core", "NoSchedule"}, kEdge));
  EXPECT_FALSE(Tolerates({"dedicated", "Equal", "", "NoSchedule"}, kEdge));
  EXPECT_FALSE(Tolerates({"other", "Equal", "edge", "NoSchedule"}, kEdge));
  EXPECT_FALSE(Tolerates({"dedicated", "Equal", "edge", "NoExecute"}, kEdge));
  EXPECT_FALSE(Tolerates({"dedicated", "Equal", "edge", "PreferNoSchedule"}, kEdge));
}

TEST(HpaTolerationTest, ExistsIgnoresTheValue) {
  EXPECT_TRUE(Tolerates({"dedicated", "Exists", "", "NoSchedule"}, kEdge));
  EXPECT_TRUE(Tolerates({"dedicated", "Exists", "", ""}, kEdge));
  EXPECT_FALSE(Tolerates({"other", "Exists", "", ""}, kEdge));
  EXPECT_FALSE(Tolerates({"dedicated", "Exists", "", "NoExecute"}, kEdge));
}

TEST(HpaTolerationTest, EmptyKeyWithExistsToleratesEverything) {
  const Toleration all{"", "Exists", "", ""};
  for (const Taint& t : {kEdge, Taint{"a", "", "NoExecute"}, Taint{"b", "1", "PreferNoSchedule"}})
    EXPECT_TRUE(Tolerates(all, t)) << DescribeTaint(t);
  // With an effect it tolerates every taint of that effect only.
  const Toleration all_no_execute{"", "Exists", "", "NoExecute"};
  EXPECT_TRUE(Tolerates(all_no_execute, {"a", "x", "NoExecute"}));
  EXPECT_FALSE(Tolerates(all_no_execute, kEdge));
}

TEST(HpaTolerationTest, EmptyEffectMatchesEveryEffect) {
  const Toleration any_effect{"dedicated", "Equal", "edge", ""};
  for (const char* effect : {"NoSchedule", "NoExecute", "PreferNoSchedule"})
    EXPECT_TRUE(Tolerates(any_effect, {"dedicated", "edge", effect})) << effect;
}

TEST(HpaTolerationTest, UnknownOperatorsMatchNothing) {
  // Lt/Gt exist behind a feature gate that is off by default.
  EXPECT_FALSE(Tolerates({"dedicated", "Gt", "1", ""}, {"dedicated", "2", "NoSchedule"}));
  EXPECT_FALSE(Tolerates({"dedicated", "exists", "", ""}, kEdge));  // operators are case-sensitive
}

TEST(HpaTolerationTest, EmptyKeyWithEqualComparesTheValueOnly) {
  // The API server refuses this toleration; the rule kept is the scheduler's
  // own (an empty key matches any key), so that nothing is stricter than it.
  EXPECT_TRUE(Tolerates({"", "Equal", "edge", ""}, kEdge));
  EXPECT_FALSE(Tolerates({"", "Equal", "core", ""}, kEdge));
}

TEST(HpaTolerationTest, DescribeTaintAsKubectl) {
  EXPECT_EQ(DescribeTaint(kEdge), "dedicated=edge:NoSchedule");
  EXPECT_EQ(DescribeTaint({"gpu", "", "NoExecute"}), "gpu:NoExecute");
}

// ---- tolerations of a workload ----

json WithPodSpec(const std::string& kind, json pod_spec) {
  if (kind == "Pod") return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"spec", pod_spec}};
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"spec", {{"replicas", 1}, {"template", {{"spec", pod_spec}}}}}};
}

const json kTolerations = json::array({
    {{"key", "dedicated"}, {"operator", "Equal"}, {"value", "edge"}, {"effect", "NoSchedule"}},
    {{"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 30}},
});

TEST(HpaWorkloadTolerationsTest, FromThePodTemplate) {
  for (const char* kind : {"Deployment", "StatefulSet"}) {
    auto ts = PodTolerations(WithPodSpec(kind, {{"tolerations", kTolerations}}));
    ASSERT_EQ(ts.size(), 2u) << kind;
    EXPECT_EQ(ts[0].key, "dedicated");
    EXPECT_EQ(ts[0].op, "Equal");
    EXPECT_EQ(ts[0].value, "edge");
    EXPECT_EQ(ts[0].effect, "NoSchedule");
    EXPECT_EQ(ts[1].key, "");
    EXPECT_EQ(ts[1].op, "Exists");
    EXPECT_EQ(ts[1].effect, "NoExecute");
  }
}

TEST(HpaWorkloadTolerationsTest, FromABarePodsSpec) {
  auto ts = PodTolerations(WithPodSpec("Pod", {{"tolerations", kTolerations}}));
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].key, "dedicated");
  // A Pod's template is not looked at, nor a Deployment's top-level spec.
  json odd = WithPodSpec("Deployment", json::object());
  odd["spec"]["tolerations"] = kTolerations;
  EXPECT_TRUE(PodTolerations(odd).empty());
}

TEST(HpaWorkloadTolerationsTest, MissingOrMalformedGiveNone) {
  EXPECT_TRUE(PodTolerations(json::object()).empty());
  EXPECT_TRUE(PodTolerations(json::array()).empty());
  EXPECT_TRUE(PodTolerations(WithPodSpec("Deployment", json::object())).empty());
  EXPECT_TRUE(PodTolerations(WithPodSpec("Deployment", {{"tolerations", "x"}})).empty());
  auto ts = PodTolerations(WithPodSpec(
      "Deployment", {{"tolerations", json::array({7, "x", json::object({{"key", "k"}})})}}));
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_EQ(ts[0].key, "k");
}

TEST(HpaWorkloadTolerationsTest, DaemonSetsGetTheControllersTolerations) {
  auto ts = PodTolerations(WithPodSpec("DaemonSet", json::object()));
  EXPECT_TRUE(ToleratesAny(ts, {kUnschedulableTaint, "", "NoSchedule"}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/not-ready", "", "NoExecute"}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/unreachable", "", "NoExecute"}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/memory-pressure", "", "NoSchedule"}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/disk-pressure", "", "NoSchedule"}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/pid-pressure", "", "NoSchedule"}));
  EXPECT_FALSE(ToleratesAny(ts, {"node.kubernetes.io/network-unavailable", "", "NoSchedule"}));
  EXPECT_FALSE(ToleratesAny(ts, kEdge));
  // network-unavailable only with hostNetwork; the template's own are kept.
  ts = PodTolerations(
      WithPodSpec("DaemonSet", {{"hostNetwork", true}, {"tolerations", kTolerations}}));
  EXPECT_TRUE(ToleratesAny(ts, {"node.kubernetes.io/network-unavailable", "", "NoSchedule"}));
  EXPECT_TRUE(ToleratesAny(ts, kEdge));
  // Other kinds get nothing added.
  EXPECT_FALSE(ToleratesAny(PodTolerations(WithPodSpec("Deployment", json::object())),
                            {kUnschedulableTaint, "", "NoSchedule"}));
}

// ---- which nodes count ----

NodeState Node(const std::string& name, int64_t cpu_milli = 2000) {
  NodeState n;
  n.name = name;
  n.allocatable = {{"cpu", cpu_milli}, {"memory", 8LL << 30}, {"pods", 110}};
  return n;
}

TEST(HpaNodeExclusionTest, HealthyNodeCounts) { EXPECT_EQ(NodeExclusion(Node("n1"), {}), ""); }

TEST(HpaNodeExclusionTest, NotReadyNeverCounts) {
  NodeState n = Node("n1");
  n.ready = false;
  EXPECT_EQ(NodeExclusion(n, {}), "not Ready");
  // Not even for pods that tolerate every taint, or a DaemonSet's.
  EXPECT_EQ(NodeExclusion(n, {{"", "Exists", "", ""}}), "not Ready");
  EXPECT_EQ(NodeExclusion(n, PodTolerations(WithPodSpec("DaemonSet", json::object()))),
            "not Ready");
}

TEST(HpaNodeExclusionTest, CordonedCountsOnlyForPodsToleratingUnschedulable) {
  NodeState n = Node("n1");
  n.unschedulable = true;
  EXPECT_EQ(NodeExclusion(n, {}), "cordoned");
  EXPECT_EQ(NodeExclusion(n, {{"dedicated", "Exists", "", ""}}), "cordoned");
  // The toleration must cover the NoSchedule effect.
  EXPECT_EQ(NodeExclusion(n, {{kUnschedulableTaint, "Exists", "", "NoExecute"}}), "cordoned");
  EXPECT_EQ(NodeExclusion(n, {{kUnschedulableTaint, "Exists", "", "NoSchedule"}}), "");
  EXPECT_EQ(NodeExclusion(n, {{"", "Exists", "", ""}}), "");
  EXPECT_EQ(NodeExclusion(n, PodTolerations(WithPodSpec("DaemonSet", json::object()))), "");
}

TEST(HpaNodeExclusionTest, NoScheduleAndNoExecuteTaintsNeedAToleration) {
  NodeState n = Node("n3");
  n.taints = {kEdge};
  EXPECT_EQ(NodeExclusion(n, {}), "has taint dedicated=edge:NoSchedule not tolerated");
  EXPECT_EQ(NodeExclusion(n, {{"dedicated", "Equal", "edge", "NoSchedule"}}), "");
  n.taints = {{"maintenance", "", "NoExecute"}};
  EXPECT_EQ(NodeExclusion(n, {}), "has taint maintenance:NoExecute not tolerated");
  EXPECT_EQ(NodeExclusion(n, {{"maintenance", "Exists", "", ""}}), "");
}

TEST(HpaNodeExclusionTest, PreferNoScheduleNeverExcludes) {
  NodeState n = Node("n1");
  n.taints = {{"spot", "true", "PreferNoSchedule"}, {"odd", "", "SomeFutureEffect"}};
  EXPECT_EQ(NodeExclusion(n, {}), "");
}

TEST(HpaNodeExclusionTest, NamesTheFirstTaintNotTolerated) {
  NodeState n = Node("n1");
  n.taints = {kEdge, {"gpu", "a100", "NoSchedule"}, {"zone", "x", "NoExecute"}};
  EXPECT_EQ(NodeExclusion(n, {{"dedicated", "Exists", "", ""}}),
            "has taint gpu=a100:NoSchedule not tolerated");
  EXPECT_EQ(NodeExclusion(n, {{"dedicated", "Exists", "", ""}, {"gpu", "Exists", "", ""}}),
            "has taint zone=x:NoExecute not tolerated");
}

TEST(HpaNodeExclusionTest, NotReadyBeforeCordonedBeforeTaints) {
  // A real cordoned node also carries the unschedulable taint; the cause is named.
  NodeState n = Node("n1");
  n.unschedulable = true;
  n.taints = {{kUnschedulableTaint, "", "NoSchedule"}, kEdge};
  EXPECT_EQ(NodeExclusion(n, {}), "cordoned");
  n.ready = false;
  EXPECT_EQ(NodeExclusion(n, {}), "not Ready");
}

// ---- fitting consumers onto the nodes that count ----

Requirement Cpu(int64_t milli) {
  Requirement r;
  r.name = "cpu";
  r.allocatable = true;
  r.resource = "cpu";
  r.requests = milli;
  return r;
}

Requirement Label(const std::string& key, const std::string& value) {
  Requirement r;
  r.name = key;
  r.key = key;
  r.value = value;
  return r;
}

Consumer Web(int64_t replicas, std::vector<Requirement> reqs, std::vector<Toleration> tols = {}) {
  Consumer c;
  c.name = "c1";
  c.workload = "web";
  c.kind = "Deployment";
  c.replicas = replicas;
  c.requirements = std::move(reqs);
  c.tolerations = std::move(tols);
  return c;
}

// n1 cordoned, n2 tainted dedicated=edge:NoSchedule, n3 NotReady, n4
// healthy with a PreferNoSchedule taint; room for one 1500m pod each.
ClusterState FourNodes() {
  ClusterState st{{Node("n1"), Node("n2"), Node("n3"), Node("n4")}};
  st.nodes[0].unschedulable = true;
  st.nodes[1].taints = {kEdge};
  st.nodes[2].ready = false;
  st.nodes[3].taints = {{"spot", "true", "PreferNoSchedule"}};
  return st;
}

std::vector<int64_t> CpuUsed(const ClusterState& st) {
  std::vector<int64_t> out;
  for (const auto& n : st.nodes) out.push_back(n.allocatable.at("cpu") - n.Free("cpu"));
  return out;
}

TEST(HpaFitExclusionTest, OnlyCountedNodesTakeReplicas) {
  ClusterState st = FourNodes();
  EXPECT_EQ(FitConsumers(st, {Web(1, {Cpu(1500)})}), "");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{0, 0, 0, 1500}));

  st = FourNodes();
  std::string why = FitConsumers(st, {Web(2, {Cpu(1500)})});
  EXPECT_EQ(why,
            "consumer c1 needs 1500m cpu free on one node (replica 2 of 2), the most any node "
            "has is 500m cpu (not counted: n1 cordoned, n2 has taint dedicated=edge:NoSchedule "
            "not tolerated, n3 not Ready)");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{0, 0, 0, 0}));  // unchanged on failure
}

TEST(HpaFitExclusionTest, AMatchingTolerationMakesTheTaintedNodeCount) {
  ClusterState st = FourNodes();
  EXPECT_EQ(FitConsumers(st, {Web(2, {Cpu(1500)}, {{"dedicated", "Equal", "edge", "NoSchedule"}})}),
            "");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{0, 1500, 0, 1500}));
  // Tolerating every taint also lifts the cordon, but never NotReady.
  st = FourNodes();
  EXPECT_EQ(FitConsumers(st, {Web(3, {Cpu(1500)}, {{"", "Exists", "", ""}})}), "");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{1500, 1500, 0, 1500}));
  st = FourNodes();
  EXPECT_NE(FitConsumers(st, {Web(4, {Cpu(1500)}, {{"", "Exists", "", ""}})}), "");
}

TEST(HpaFitExclusionTest, ExclusionIsPerConsumer) {
  // Only the second consumer tolerates n2's taint: each gets one node.
  ClusterState st = FourNodes();
  Consumer plain = Web(1, {Cpu(1500)});
  Consumer tolerant = Web(1, {Cpu(1500)}, {{"dedicated", "Exists", "", ""}});
  tolerant.name = "c2";
  EXPECT_EQ(FitConsumers(st, {plain, tolerant}), "");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{0, 1500, 0, 1500}));
  // When the tolerant one comes first with two replicas it takes n2 and n4,
  // and the plain one finds no room on n4, the only node it may use.
  st = FourNodes();
  Consumer greedy = tolerant;
  greedy.replicas = 2;
  std::string why = FitConsumers(st, {greedy, plain});
  EXPECT_EQ(
      why.rfind("consumer c1 needs 1500m cpu free on one node, the most any node has is 500m cpu",
                0),
      0u)
      << why;
}

TEST(HpaFitExclusionTest, LabelMessagesNameOnlyExcludedNodesWithTheLabels) {
  ClusterState st = FourNodes();
  st.nodes[0].labels = {{"gpu", "yes"}};                 // cordoned
  st.nodes[1].labels = {{"gpu", "yes"}, {"zone", "a"}};  // tainted
  // n3 (NotReady) has no gpu label: not worth naming.
  EXPECT_EQ(FitConsumers(st, {Web(1, {Label("gpu", "yes")})}),
            "no node with gpu=yes (not counted: n1 cordoned, n2 has taint "
            "dedicated=edge:NoSchedule not tolerated)");
  EXPECT_EQ(FitConsumers(st, {Web(1, {Label("gpu", "yes"), Label("zone", "a")})}),
            "no node with gpu=yes (not counted: n1 cordoned, n2 has taint "
            "dedicated=edge:NoSchedule not tolerated)");
  // With a label only n4 has, nothing excluded qualifies: the message is as before.
  st.nodes[3].labels = {{"gpu", "no"}};
  EXPECT_EQ(FitConsumers(st, {Web(1, {Label("gpu", "no"), Cpu(3000)})}),
            "consumer c1 needs 3000m cpu free on one node, the most any node has among nodes "
            "with gpu=no is 2000m cpu");
  // A label-only consumer needs one counted node with the label.
  EXPECT_EQ(FitConsumers(st, {Web(1, {Label("gpu", "yes")}, {{"dedicated", "Exists", "", ""}})}),
            "");
}

TEST(HpaFitExclusionTest, NoCountedNodeAtAll) {
  ClusterState st = FourNodes();
  st.nodes.pop_back();
  EXPECT_EQ(FitConsumers(st, {Web(1, {Cpu(100)})}),
            "consumer c1 has no node to run on (not counted: n1 cordoned, n2 has taint "
            "dedicated=edge:NoSchedule not tolerated, n3 not Ready)");
  // A cluster without nodes keeps its old message.
  ClusterState empty;
  EXPECT_EQ(FitConsumers(empty, {Web(1, {Cpu(100)})}),
            "consumer c1 needs 100m cpu free on one node, the most any node has is 0m cpu");
}

TEST(HpaFitExclusionTest, LongListsAreCut) {
  ClusterState st;
  for (int i = 1; i <= 8; ++i) {
    st.nodes.push_back(Node("n" + std::to_string(i)));
    st.nodes.back().unschedulable = true;
  }
  EXPECT_EQ(FitConsumers(st, {Web(1, {Cpu(100)})}),
            "consumer c1 has no node to run on (not counted: n1 cordoned, n2 cordoned, n3 "
            "cordoned, n4 cordoned, n5 cordoned, and 3 more)");
}

TEST(HpaFitExclusionTest, DaemonSetConsumersUseCordonedNodes) {
  ClusterState st = FourNodes();
  Consumer ds = Web(2, {Cpu(1500)}, PodTolerations(WithPodSpec("DaemonSet", json::object())));
  ds.kind = "DaemonSet";
  EXPECT_EQ(FitConsumers(st, {ds}), "");
  EXPECT_EQ(CpuUsed(st), (std::vector<int64_t>{1500, 0, 0, 1500}));
}

// ---- tolerations attached from the rendered resources ----

TEST(HpaAttachTolerationsTest, ByWorkloadNameAndKind) {
  appcontext::ResourceSet rs;
  rs.resources.push_back(
      {"web+Deployment", WithPodSpec("Deployment", {{"tolerations", kTolerations}})});
  json ds = WithPodSpec("DaemonSet", json::object());
  rs.resources.push_back({"web+DaemonSet", ds});
  std::vector<Consumer> cs = {Web(1, {}), Web(1, {}), Web(1, {}), Web(1, {})};
  cs[1].kind = "DaemonSet";
  cs[2].kind = "";  // defaults to Deployment
  cs[3].workload = "api";
  cs[3].tolerations = {{"stale", "Exists", "", ""}};
  AttachTolerations(cs, rs);
  ASSERT_EQ(cs[0].tolerations.size(), 2u);
  EXPECT_EQ(cs[0].tolerations[0].key, "dedicated");
  EXPECT_TRUE(ToleratesAny(cs[1].tolerations, {kUnschedulableTaint, "", "NoSchedule"}));
  EXPECT_FALSE(ToleratesAny(cs[1].tolerations, kEdge));
  EXPECT_EQ(cs[2].tolerations.size(), 2u);
  EXPECT_TRUE(cs[3].tolerations.empty());  // no api+Deployment: none, not the stale ones
}

}  // namespace
}  // namespace eco::hpa
