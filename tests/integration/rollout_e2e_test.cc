// Staged rollouts (DIG spec.rollout, docs/rollouts.md) the whole way:
// `eco serve` against a kube-sim fleet whose nodes differ in size, so that
// an update asking more CPU than a small cluster's nodes have leaves its
// Pods Pending while the previous revision's Pods stay Ready there.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include "context_builders.h"
#include "eco_fixture.h"
#include "kubectl.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kRollCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kRollDIG = kRollCA + "/deployment-intent-groups/dig";


// A Deployment asking `cpu` per replica (values.cpu), two replicas.
std::string WebChart(const std::string& cpu) {
  return ChartTgzWithTemplates(
      "web", "cpu: \"" + cpu + "\"\n",
      {{"deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n"
        "  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
        "      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.25\n"
        "        resources:\n          requests:\n            cpu: \"{{ .Values.cpu }}\"\n"}});
}

class RolloutE2E : public ::testing::Test {
 protected:
  // `small`: clusters whose one node has 2 CPUs (the others have 32).
  void Start(int clusters, const std::set<int>& small, bool agents = false) {
    std::string fleet = "clusters:\n";
    for (int i = 1; i <= clusters; ++i) {
      fleet += "  - name: e-" + std::to_string(i) + "\n    nodes:\n      - name: n1\n        allocatable: {cpu: \"" +
               std::string(small.count(i) ? "2" : "32") + "\", memory: 64Gi, pods: \"110\"}\n";
    }
    const std::string path = dir_.path() + "/fleet.yaml";
    std::ofstream(path) << fleet;
    KubeSimOptions ko;
    ko.fleet_file = path;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    EcoOptions eo;
    if (agents) {
      agent_port_ = FreePort();
      eo.extra_args = {"--agent-port", std::to_string(agent_port_)};
    }
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    if (agents) {
      ASSERT_TRUE(WaitForPort(agent_port_, std::chrono::seconds(10))) << eco_->LogTail();
    }
    n_ = clusters;
  }

  // `eco agent` for cluster i; the token only the first time (it keeps its
  // identity in the cluster).
  std::unique_ptr<Process> StartAgent(int i, const std::string& token) {
    const std::string n = "e-" + std::to_string(i);
    std::vector<std::string> argv = {BinaryPath("eco"), "agent", "--hub", "http://127.0.0.1:" + std::to_string(agent_port_),
                                     "--kubeconfig", sim_->kubeconfig(n), "--workers", "2"};
    if (!token.empty()) {
      argv.push_back("--token");
      argv.push_back(token);
    }
    return std::make_unique<Process>(argv, dir_.path() + "/agent-" + n + ".log");
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  // Clusters e-1..e-N; `label(i)` is cluster i's wave label.
  // `agent`: clusters delivered to by an agent (started here).
  void Register(const std::function<std::string(int)>& label, const std::set<int>& agent = {}) {
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    for (int i = 1; i <= n_; ++i) {
      const std::string n = "e-" + std::to_string(i);
      if (agent.count(i)) {
        Ok(c.PostJson("/v2/cluster-providers/prov/clusters", json{{"metadata", {{"name", n}}}, {"spec", {{"delivery", "agent"}}}}));
        auto b = c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/agent-bootstrap", json::object());
        Ok(b);
        agents_[i] = StartAgent(i, b.json().value("token", ""));
      } else {
        Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), ReadFile(sim_->kubeconfig(n)),
                           "kubeconfig"));
      }
      Ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels", json{{"clusterLabel", "edge"}}));
      if (std::string l = label(i); !l.empty())
        Ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels", json{{"clusterLabel", l}}));
    }
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
    for (int i = 1; i <= n_; ++i) {
      const std::string n = "e-" + std::to_string(i);
      Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                    Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kRollCA + "/apps", Named("web").dump(), WebChart("500m")));
    Ok(c.PostJson(kRollCA + "/composite-profiles", Named("cp")));
  }

  static json DigSpec(const json& rollout) {
    json spec = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};
    if (!rollout.is_null()) spec["rollout"] = rollout;
    return spec;
  }

  void CreateDig(const json& rollout) {
    EcoClient c = eco_->client();
    Ok(c.PostJson(kRollDIG.substr(0, kRollDIG.rfind('/')), Doc("dig", DigSpec(rollout))));
    Ok(c.PostJson(kRollDIG + "/generic-placement-intents", Named("gpi")));
    Ok(c.PostJson(kRollDIG + "/generic-placement-intents/gpi/app-intents",
                  Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
    Ok(c.PostJson(kRollDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
    Ok(c.PostJson(kRollDIG + "/approve", json::object()), 202);
  }

  // Waits until the DIG status' rollout satisfies `pred`.
  bool WaitRollout(const std::function<bool(const json&)>& pred, std::chrono::seconds limit = std::chrono::seconds(90)) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(kRollDIG + "/status?status=deployed").json();
          return last_.is_object() && last_.contains("rollout") && pred(last_["rollout"]);
        },
        limit);
  }
  static bool StateIs(const json& r, const std::string& s) { return r.value("state", "") == s; }

  // The cpu each cluster's Deployment asks now, read with kubectl ("" when absent).
  std::string CpuOn(int i) {
    return Kubectl(sim_->kubeconfig("e-" + std::to_string(i)),
                   "get deployment r1-web -n default -o jsonpath={.spec.template.spec.containers[0].resources.requests.cpu}");
  }

  // PATCH requests (server-side applies) cluster i has answered.
  int Patches(int i) {
    json r = json::parse(sim_->Requests("e-" + std::to_string(i)), nullptr, false);
    if (!r.is_object() || !r.contains("byMethod")) return -1;
    return r["byMethod"].value("PATCH", 0);
  }

  TempDir dir_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::map<int, std::unique_ptr<Process>> agents_;
  int agent_port_ = 0;
  int n_ = 0;
  json last_;
};

// 30 clusters in three waves; the second wave's clusters are too small for
// the update. The first wave takes it; the second never becomes Ready for
// the new revision (its old Pods stay Ready: the stale-health trap), times
// out, and the rollout rolls back: the clusters it changed get the previous
// revision again, wave b before wave a; the third wave is never touched.
TEST_F(RolloutE2E, UpdateRollsBackFromTheWaveThatNeverBecomesReadyAndLeavesTheNextUntouched) {
  std::set<int> small;
  for (int i = 11; i <= 20; ++i) small.insert(i);
  ASSERT_NO_FATAL_FAILURE(Start(30, small));
  ASSERT_NO_FATAL_FAILURE(Register([](int i) { return i <= 10 ? "wave-a" : i <= 20 ? "wave-b" : ""; }));
  const json rollout = {{"waves", {{{"name", "a"}, {"clusterLabel", "wave-a"}}, {{"name", "b"}, {"clusterLabel", "wave-b"}}}},
                        {"maxConcurrency", "50%"},
                        {"readyTimeoutSeconds", 20},
                        {"onFailure", "rollback"}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  EcoClient c = eco_->client();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump();
  ASSERT_EQ(last_["rollout"]["waves"].size(), 3u) << last_.dump();
  for (const auto& w : last_["rollout"]["waves"]) EXPECT_EQ(w["done"], w["clusters"]) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][2]["name"], "rest");
  EXPECT_EQ(last_["rollout"]["waves"][2]["clusters"], 10);
  for (int i = 1; i <= 30; ++i) ASSERT_EQ(CpuOn(i), "500m") << i;

  // The update asks 2 CPUs per Pod: wave a's 32-CPU nodes take both Pods,
  // wave b's 2-CPU node cannot (its old Pods hold 1 CPU).
  Ok(c.PutMultipart(kRollCA + "/apps/web", Named("web").dump(), WebChart("2")), 200);
  Ok(c.PostJson(kRollDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return r.value("revision", 0) == 2 && StateIs(r, "RolledBack"); }))
      << last_.dump();
  const json& ro = last_["rollout"];
  EXPECT_EQ(ro["wave"]["name"], "b") << ro.dump();
  EXPECT_EQ(ro["waves"][0]["done"], 10) << ro.dump();
  // At most half of wave b changes at once: the first five failed, the rest never started.
  EXPECT_EQ(ro["waves"][1]["failed"], 5) << ro.dump();
  EXPECT_EQ(ro["waves"][1]["pending"], 5) << ro.dump();
  EXPECT_EQ(ro["waves"][1]["done"], 0) << ro.dump();
  EXPECT_FALSE(ro["waves"][2].contains("startedAt")) << ro.dump();
  const std::string reason = ro.value("reason", "");
  EXPECT_NE(reason.find("more than maxFailures (0)"), std::string::npos) << ro.dump();
  EXPECT_NE(reason.find("not done within readyTimeoutSeconds"), std::string::npos) << ro.dump();
  // The rollback ran as a rollout of its own: wave b's five, then wave a's ten.
  ASSERT_TRUE(ro.contains("rollback")) << ro.dump();
  EXPECT_EQ(ro["rollback"]["revision"], 1) << ro.dump();
  ASSERT_EQ(ro["rollback"]["waves"].size(), 2u) << ro.dump();
  EXPECT_EQ(ro["rollback"]["waves"][0]["name"], "undo-b") << ro.dump();
  EXPECT_EQ(ro["rollback"]["waves"][0]["done"], 5) << ro.dump();
  EXPECT_EQ(ro["rollback"]["waves"][1]["name"], "undo-a") << ro.dump();
  EXPECT_EQ(ro["rollback"]["waves"][1]["done"], 10) << ro.dump();
  for (int i = 1; i <= 30; ++i) EXPECT_EQ(CpuOn(i), "500m") << i;
  // Nothing left to steer.
  auto again = c.PostJson(kRollDIG + "/rollout/resume", json::object());
  EXPECT_EQ(again.status, 409) << again.Describe();
}

// Under onFailure pause, failures past maxFailures stop the rollout where
// it is; abort ends it, and nothing more is released.
TEST_F(RolloutE2E, FailuresPauseTheRolloutAndAbortEndsIt) {
  ASSERT_NO_FATAL_FAILURE(Start(3, {2, 3}));
  ASSERT_NO_FATAL_FAILURE(Register([](int) { return ""; }));
  const json rollout = {{"waves", {{{"name", "one"}, {"clusters", {"prov+e-1"}}}, {{"name", "two"}, {"clusters", {"prov+e-2"}}}}},
                        {"readyTimeoutSeconds", 20}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  EcoClient c = eco_->client();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump();
  Ok(c.PutMultipart(kRollCA + "/apps/web", Named("web").dump(), WebChart("2")), 200);
  Ok(c.PostJson(kRollDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return r.value("revision", 0) == 2 && StateIs(r, "Paused"); }))
      << last_.dump();
  EXPECT_EQ(last_["rollout"]["wave"]["name"], "two") << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][1]["failed"], 1) << last_.dump();
  EXPECT_EQ(CpuOn(1), "2");
  EXPECT_EQ(CpuOn(2), "2");     // applied, never Ready
  EXPECT_EQ(CpuOn(3), "500m");  // wave rest: never touched
  Ok(c.PostJson(kRollDIG + "/rollout/abort", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Failed"); })) << last_.dump();
  EXPECT_EQ(last_["rollout"].value("reason", ""), "aborted by the operator");
  EXPECT_EQ(CpuOn(3), "500m");
  auto again = c.PostJson(kRollDIG + "/rollout/resume", json::object());
  EXPECT_EQ(again.status, 409) << again.Describe();
}

// Approval between waves, pause and resume, and bad input.
TEST_F(RolloutE2E, WavesWaitForApprovalAndThePauseOfTheOperator) {
  ASSERT_NO_FATAL_FAILURE(Start(4, {}));
  ASSERT_NO_FATAL_FAILURE(Register([](int i) { return i <= 2 ? "first" : ""; }));
  EcoClient c = eco_->client();
  // Refused with the field named, and nothing created.
  auto bad = c.PostJson(kRollDIG.substr(0, kRollDIG.rfind('/')),
                        Doc("dig", DigSpec({{"waves", {{{"name", "a"}, {"percent", 0}}}}})));
  EXPECT_EQ(bad.status, 400) << bad.Describe();
  EXPECT_NE(bad.body.find("spec.rollout.waves[0].percent"), std::string::npos) << bad.body;
  EXPECT_EQ(c.Get(kRollDIG).status, 404);

  const json rollout = {{"waves", {{{"name", "first"}, {"clusterLabel", "first"}}}}, {"approval", "between-waves"}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  auto early = c.PostJson(kRollDIG + "/rollout/approve", json::object());
  EXPECT_EQ(early.status, 409) << early.Describe();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "WaitingApproval"); })) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][0]["done"], 2) << last_.dump();
  EXPECT_EQ(CpuOn(1), "500m");
  EXPECT_EQ(CpuOn(3), "") << "wave rest started before its approval";
  EXPECT_EQ(CpuOn(4), "");

  // Paused while waiting: an approval then is refused until it resumes.
  Ok(c.PostJson(kRollDIG + "/rollout/pause", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Paused"); })) << last_.dump();
  auto refused = c.PostJson(kRollDIG + "/rollout/approve", json::object());
  EXPECT_EQ(refused.status, 409) << refused.Describe();
  Ok(c.PostJson(kRollDIG + "/rollout/resume", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "WaitingApproval"); })) << last_.dump();
  Ok(c.PostJson(kRollDIG + "/rollout/approve", json::object()), 202);
  // One approval per wave: a second is refused, whether rsync took the
  // first up already or not.
  auto twice = c.PostJson(kRollDIG + "/rollout/approve", json::object());
  EXPECT_EQ(twice.status, 409) << twice.Describe();
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump();
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(CpuOn(i), "500m") << i;
  auto ds = c.Get(kRollDIG + "/status?status=deployed").json();
  EXPECT_EQ(ds.value("deployedStatus", ""), "Instantiated") << ds.dump();

  // Instantiated, the DIG may still change its rollout (read when an
  // operation starts), and nothing else (EMCO's rule).
  json spec = DigSpec({{"waves", {{{"name", "all"}, {"percent", 100}}}}});
  Ok(c.PutJson(kRollDIG, Doc("dig", spec)), 200);
  EXPECT_EQ(c.Get(kRollDIG).json()["spec"]["rollout"]["waves"][0]["name"], "all");
  spec["version"] = "r2";
  auto frozen = c.PutJson(kRollDIG, Doc("dig", spec));
  EXPECT_EQ(frozen.status, 409) << frozen.Describe();
  auto empty = c.PutJson(kRollDIG, Doc("dig", DigSpec({{"waves", json::array()}})));
  EXPECT_EQ(empty.status, 400) << empty.Describe();
}

// eco killed (-9) in the middle of a wave: the restarted eco resumes that
// wave without applying again to the clusters it had finished.
TEST_F(RolloutE2E, KilledInTheMiddleOfAWaveResumesWithoutReapplyingFinishedClusters) {
  ASSERT_NO_FATAL_FAILURE(Start(4, {}));
  ASSERT_NO_FATAL_FAILURE(Register([](int) { return ""; }));
  const json rollout = {{"waves", {{{"name", "one"}, {"clusters", {"prov+e-1"}}}}},
                        {"maxConcurrency", 1},
                        {"soakSeconds", 2}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  EcoClient c = eco_->client();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  // Wave rest (e-2, e-3, e-4, one at a time) has finished a cluster and not all.
  ASSERT_TRUE(WaitRollout([](const json& r) {
    const json& w = r["waves"];
    return w.size() == 2 && w[1].value("done", 0) >= 1 && w[1].value("pending", 0) >= 1;
  })) << last_.dump();
  eco_->Kill9();
  const int finished = 1 + last_["rollout"]["waves"][1].value("done", 0);  // e-1, then in natural order
  std::map<int, int> before;
  for (int i = 1; i <= finished; ++i) before[i] = Patches(i);
  ASSERT_TRUE(eco_->Restart()) << eco_->error();
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump();
  for (const auto& w : last_["rollout"]["waves"]) EXPECT_EQ(w["done"], w["clusters"]) << last_.dump();
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(CpuOn(i), "500m") << i;
  for (const auto& [i, n] : before) {
    EXPECT_GT(n, 0) << i;
    EXPECT_EQ(Patches(i), n) << "e-" << i << " finished before the kill and was applied again";
  }
}

// The fleet changes while a rollout waits between waves: a cluster
// relabelled into a wave that has not started joins it; a cluster that is
// unreachable when its wave starts is skipped under offline "skip" and
// left pending, and gets the change once it is back.
TEST_F(RolloutE2E, RelabelledClustersJoinTheirNewWaveAndUnreachableOnesAreSkipped) {
  ASSERT_NO_FATAL_FAILURE(Start(5, {}));
  ASSERT_NO_FATAL_FAILURE(Register([](int i) { return i <= 2 ? "first" : i == 3 ? "second" : ""; }));
  const json rollout = {{"waves", {{{"name", "first"}, {"clusterLabel", "first"}}, {{"name", "second"}, {"clusterLabel", "second"}}}},
                        {"approval", "between-waves"},
                        {"offline", "skip"}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  EcoClient c = eco_->client();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "WaitingApproval"); })) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][1]["clusters"], 1) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][2]["clusters"], 2) << last_.dump();

  Ok(c.PostJson("/v2/cluster-providers/prov/clusters/e-4/labels", json{{"clusterLabel", "second"}}));
  ASSERT_EQ(sim_->Fault("e-5", "down"), 200);
  Ok(c.PostJson(kRollDIG + "/rollout/approve", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) {
    return StateIs(r, "WaitingApproval") && r["wave"].value("name", "") == "second";
  })) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][1]["clusters"], 2) << last_.dump();
  EXPECT_EQ(last_["rollout"]["waves"][1]["done"], 2) << last_.dump();
  EXPECT_EQ(CpuOn(4), "500m") << "e-4 did not join wave second";

  Ok(c.PostJson(kRollDIG + "/rollout/approve", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump();
  const json& rest = last_["rollout"]["waves"][2];
  EXPECT_EQ(rest["clusters"], 1) << last_.dump();
  EXPECT_EQ(rest["skipped"], 1) << last_.dump();
  // Back, it gets the change: its task kept retrying.
  ASSERT_EQ(sim_->Fault("e-5", "up"), 200);
  EXPECT_TRUE(WaitUntil([&] { return CpuOn(5) == "500m"; }, std::chrono::seconds(90)));
  EXPECT_TRUE(WaitUntil(
      [&] { return c.Get(kRollDIG + "/status?status=deployed").json().value("deployedStatus", "") == "Instantiated"; },
      std::chrono::seconds(60)));
}

// An agent cluster in a rollout: its gate is judged on the agent's own
// reports; its agent killed (-9) in the middle of its wave and started
// again; the update that its small node cannot run rolls back through it.
TEST_F(RolloutE2E, AgentClustersAreGatedOnTheirReportsAndRollBackToo) {
  ASSERT_NO_FATAL_FAILURE(Start(3, {2}, /*agents=*/true));
  ASSERT_NO_FATAL_FAILURE(Register([](int i) { return i == 1 ? "one" : i == 2 ? "two" : ""; }, {2}));
  const json rollout = {{"waves", {{{"name", "one"}, {"clusterLabel", "one"}}, {{"name", "two"}, {"clusterLabel", "two"}}}},
                        {"readyTimeoutSeconds", 20},
                        {"onFailure", "rollback"}};
  ASSERT_NO_FATAL_FAILURE(CreateDig(rollout));
  EcoClient c = eco_->client();
  Ok(c.PostJson(kRollDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitRollout([](const json& r) { return StateIs(r, "Complete"); })) << last_.dump() << agents_[2]->ReadLog();
  for (int i = 1; i <= 3; ++i) ASSERT_EQ(CpuOn(i), "500m") << i;

  Ok(c.PutMultipart(kRollCA + "/apps/web", Named("web").dump(), WebChart("2")), 200);
  Ok(c.PostJson(kRollDIG + "/update", json::object()), 202);
  // The agent's wave started: its agent dies and comes back.
  ASSERT_TRUE(WaitRollout([](const json& r) {
    return r.value("revision", 0) == 2 && r.contains("wave") && r["wave"].value("name", "") == "two";
  })) << last_.dump();
  const int killed = agents_[2]->Kill(SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL) << killed;
  agents_[2] = StartAgent(2, "");
  ASSERT_TRUE(WaitRollout([](const json& r) { return r.value("revision", 0) == 2 && StateIs(r, "RolledBack"); },
                          std::chrono::seconds(120)))
      << last_.dump() << agents_[2]->ReadLog();
  EXPECT_EQ(last_["rollout"]["waves"][1]["failed"], 1) << last_.dump();
  EXPECT_EQ(last_["rollout"]["rollback"]["waves"][0]["name"], "undo-two") << last_.dump();
  EXPECT_EQ(last_["rollout"]["rollback"]["waves"][0]["done"], 1) << last_.dump();
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(CpuOn(i), "500m") << i;
}

}  // namespace
}  // namespace eco::testing
