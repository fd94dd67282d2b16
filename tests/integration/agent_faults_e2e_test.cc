// Pull delivery through real processes on loopback, beyond the happy path:
// who talks to an agent cluster's API server (kube-sim counts its requests
// per User-Agent); five agents in one `eco agent --fleet` process through
// deploy, update and terminate beside a pushed cluster; the agent killed
// with kill -9 in the middle of a deployment, an update and a terminate,
// and between a publication and its acknowledgement; scripts/agent_fleet.sh
// against a running hub. Each ends with exactly the desired objects on
// every cluster and a status that says so.
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "common/version.h"
#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";
const std::string kLC = "/v2/projects/p/logical-clouds/admin";
const std::string kContextLabel = "app.eco.io/context";
const std::set<std::string> kChartKinds = {"Deployment", "ConfigMap"};

const char* kDeployment = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: "nginx:stable"
          env:
            - name: MARKER
              value: "{{ .Values.marker }}"
)";

std::string ConfigMap(const std::string& suffix, const std::string& data) {
  return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + suffix +
         "\ndata:\n" + data;
}

// Revision 1 (v2 false): the Deployment, ConfigMaps settings and old, and
// `parts` more ConfigMaps. Revision 2 (v2 true): another marker in the
// Deployment and settings, old gone, new added.
std::string Chart(bool v2, int parts = 0) {
  const std::string marker = v2 ? "v2" : "v1";
  std::vector<TarEntry> t = {
      {"deployment.yaml", kDeployment},
      {"configmap-settings.yaml", ConfigMap("settings", "  marker: \"{{ .Values.marker }}\"\n")}};
  if (v2) {
    t.push_back({"configmap-new.yaml", ConfigMap("new", "  fresh: \"yes\"\n")});
  } else {
    t.push_back({"configmap-old.yaml", ConfigMap("old", "  gone: soon\n")});
  }
  for (int i = 0; i < parts; ++i) {
    t.push_back({"part-" + std::to_string(i) + ".yaml",
                 ConfigMap("part-" + std::to_string(i), "  i: \"" + std::to_string(i) + "\"\n")});
  }
  return ChartTgzWithTemplates("web", "replicaCount: 1\nmarker: " + marker + "\n", t);
}

// The "Kind/name"s Chart(v2, parts) puts on a cluster.
std::set<std::string> Want(bool v2, int parts = 0) {
  std::set<std::string> w = {"Deployment/r1-web", "ConfigMap/r1-settings",
                             v2 ? "ConfigMap/r1-new" : "ConfigMap/r1-old"};
  for (int i = 0; i < parts; ++i) w.insert("ConfigMap/r1-part-" + std::to_string(i));
  return w;
}

template <typename M>
std::set<std::string> Keys(const M& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

// One cluster's resources in a status answer: how many, how many good
// (Applied in the deployed view, Ready in the ready view).
struct ClusterView {
  int resources = 0, good = 0;
  bool all_good() const { return resources > 0 && good == resources; }
};

std::map<std::string, ClusterView> Clusters(const json& status) {
  std::map<std::string, ClusterView> out;
  if (!status.is_object() || !status.value("apps", json()).is_array()) return out;
  for (const auto& app : status["apps"]) {
    for (const auto& c : app.value("clusters", json::array())) {
      ClusterView& v = out[c.value("cluster", "")];
      for (const auto& r : c.value("resources", json::array())) {
        ++v.resources;
        if (r.value("deployedStatus", "") == "Applied" || r.value("readyStatus", "") == "Ready")
          ++v.good;
      }
    }
  }
  return out;
}

int64_t LastRevision(const json& status) {
  if (!status.is_object() || !status.contains("states")) return -1;
  const json& a = status["states"].value("actions", json::array());
  return a.empty() ? -1 : a.back().value("revision", int64_t{-1});
}

class AgentFaultsE2E : public ::testing::Test {
 protected:
  static void Ok(const HttpResponse& r, int code = 201) {
    ASSERT_EQ(r.status, code) << r.Describe();
  }

  // kube-sim with cluster-1..N and eco serving agents, with short retries.
  // With no clusters, no kube-sim (scripts/agent_fleet.sh starts its own).
  void Start(int clusters) {
    if (clusters > 0) {
      KubeSimOptions ko;
      ko.clusters = clusters;
      sim_ = std::make_unique<KubeSim>(ko);
      ASSERT_TRUE(sim_->ok()) << sim_->error();
    }
    agent_port_ = FreePort();
    EcoOptions eo;
    eo.extra_args = {"--agent-port", std::to_string(agent_port_), "--rsync-retry-base-ms",
                     "200",          "--rsync-retry-cap-ms",      "1000"};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    ASSERT_TRUE(WaitForPort(agent_port_, std::chrono::seconds(10))) << eco_->LogTail();
    Ok(eco_->client().PostJson("/v2/cluster-providers", Named("prov")));
  }

  // Registers `name` as an agent cluster labelled edge; the bootstrap answer.
  json AgentCluster(const std::string& name) {
    EcoClient c = eco_->client();
    auto r = c.PostJson("/v2/cluster-providers/prov/clusters",
                        json{{"metadata", {{"name", name}}}, {"spec", {{"delivery", "agent"}}}});
    EXPECT_EQ(r.status, 201) << r.Describe();
    auto l = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/labels",
                        json{{"clusterLabel", "edge"}});
    EXPECT_EQ(l.status, 201) << l.Describe();
    auto b = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/agent-bootstrap",
                        json::object());
    EXPECT_EQ(b.status, 201) << b.Describe();
    json j = b.json();
    EXPECT_TRUE(j.is_object() && j.value("token", json()).is_string() &&
                j.value("hub", json()).is_string())
        << b.Describe();
    return j.is_object() ? j : json::object();
  }

  void PushCluster(const std::string& name) {
    EcoClient c = eco_->client();
    Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(name).dump(),
                       ReadFile(sim_->kubeconfig(name)), "kubeconfig"));
    Ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/labels",
                  json{{"clusterLabel", "edge"}}));
  }

  // `eco agent` for one cluster, as an operator would start it.
  std::vector<std::string> AgentArgv(const std::string& cluster, const json& boot, int workers) {
    return {BinaryPath("eco"), "agent",
            "--hub",           boot.value("hub", ""),
            "--kubeconfig",    sim_->kubeconfig(cluster),
            "--token",         boot.value("token", ""),
            "--workers",       std::to_string(workers)};
  }

  std::unique_ptr<Process> Run(const std::vector<std::string>& argv, const std::string& log) {
    return std::make_unique<Process>(argv, dir_.path() + "/" + log);
  }

  static bool WaitLog(Process& p, const std::string& text, size_t from = 0) {
    return WaitUntil(
        [&] {
          const std::string l = p.ReadLog();
          return l.size() > from && l.find(text, from) != std::string::npos;
        },
        std::chrono::seconds(60));
  }

  // Project, logical cloud over `clusters`, and composite app `ca` whose one
  // app `web` carries `chart`, placed on every edge cluster; DIG approved.
  void World(const std::vector<std::string>& clusters, const std::string& chart) {
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("admin", {{"level", "0"}})));
    for (const auto& n : clusters)
      Ok(c.PostJson(kLC + "/cluster-references",
                    Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    Ok(c.PostJson(kLC + "/instantiate", json::object()), 202);
    ASSERT_TRUE(WaitUntil(
        [&] {
          return c.Get(kLC + "/status?status=deployed").json().value("deployedStatus", "") ==
                 "Instantiated";
        },
        std::chrono::seconds(90)));
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), chart));
    Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
    Ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles",
                       Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz()));
    Ok(c.PostJson(
        kCA + "/deployment-intent-groups",
        Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "admin"}})));
    Ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
    Ok(c.PostJson(
        kDIG + "/generic-placement-intents/gpi/app-intents",
        Doc("web",
            {{"app", "web"},
             {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
    Ok(c.PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
    Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  }

  void Instantiate() {
    EcoClient c = eco_->client();
    Ok(c.PostJson(kDIG + "/instantiate", json::object()), 202);
    json s = c.Get(kDIG + "/status?status=deployed").json();
    status_ctx_ = s.is_object() ? s["states"].value("statusctxid", "") : "";
    ASSERT_FALSE(status_ctx_.empty()) << s.dump();
  }

  // The chart's app replaced by revision 2's, then `update`.
  void Update(int parts = 0) {
    EcoClient c = eco_->client();
    auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), Chart(true, parts));
    ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
    Ok(c.PostJson(kDIG + "/update", json::object()), 202);
  }

  bool WaitStatus(const std::string& query, const std::function<bool(const json&)>& pred) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(kDIG + "/status?" + query).json();
          return last_.is_object() && pred(last_);
        },
        std::chrono::seconds(120));
  }

  // Instantiated at `revision` with every resource Applied on each of
  // `clusters`, then Ready with every resource Ready.
  void ExpectTrueStatus(const std::vector<std::string>& clusters, int64_t revision) {
    ASSERT_TRUE(WaitStatus("status=deployed", [&](const json& s) {
      auto cs = Clusters(s);
      bool all = s.value("deployedStatus", "") == "Instantiated" && LastRevision(s) == revision;
      for (const auto& n : clusters) all = all && cs[n].all_good();
      return all;
    })) << last_.dump();
    EXPECT_EQ(Clusters(last_).size(), clusters.size()) << last_.dump();
    ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
      auto cs = Clusters(s);
      bool all = s.value("readyStatus", "") == "Ready";
      for (const auto& n : clusters) all = all && cs[n].all_good();
      return all;
    })) << last_.dump();
  }

  // "Kind/name" -> what eco decides of each chart object of the DIG on
  // `cluster`, read through kube-sim's /sim API (no request to the cluster).
  std::map<std::string, json> Snapshot(const std::string& cluster) {
    return SnapshotOf(cluster, sim_->Objects(cluster));
  }

  // The same from the body of a GET /sim/clusters/NAME/objects.
  std::map<std::string, json> SnapshotOf(const std::string& cluster, const std::string& objects) {
    std::map<std::string, json> out;
    json all = json::parse(objects, nullptr, false);
    EXPECT_TRUE(all.is_object()) << "no object list from kube-sim for " << cluster;
    if (!all.is_object()) return out;
    for (const auto& o : all.value("objects", json::array())) {
      const json md = o.value("metadata", json::object());
      if (md.value("labels", json::object()).value(kContextLabel, "") != status_ctx_) continue;
      if (!kChartKinds.count(o.value("kind", ""))) continue;
      out[o.value("kind", "") + "/" + md.value("name", "")] = {
          {"labels", md.value("labels", json::object())},
          {"annotations", md.value("annotations", json::object())},
          {"spec", o.value("spec", json())},
          {"data", o.value("data", json())}};
    }
    return out;
  }

  // Revision `v2`'s objects, exactly, on every cluster, each as on `like`
  // (a pushed cluster): the marker and the profile's replica count.
  void ExpectObjects(const std::vector<std::string>& clusters, const std::string& like, bool v2,
                     int parts = 0) {
    const std::set<std::string> want = Want(v2, parts);
    for (const auto& n : clusters) {
      EXPECT_TRUE(WaitUntil([&] { return Keys(Snapshot(n)) == want; }, std::chrono::seconds(60)))
          << n << " holds " << json(Keys(Snapshot(n))).dump();
    }
    const auto ref = Snapshot(like);
    ASSERT_EQ(Keys(ref), want);
    const json& d = ref.at("Deployment/r1-web")["spec"];
    EXPECT_EQ(d["replicas"], 2);
    EXPECT_EQ(d["template"]["spec"]["containers"][0]["env"][0]["value"], v2 ? "v2" : "v1");
    EXPECT_EQ(ref.at("ConfigMap/r1-settings")["data"]["marker"], v2 ? "v2" : "v1");
    for (const auto& n : clusters) EXPECT_EQ(Snapshot(n), ref) << n << " differs from " << like;
  }

  // The user agents that reached `cluster`, with their request counts.
  std::map<std::string, int> UserAgents(const std::string& cluster) {
    json r = json::parse(sim_->Requests(cluster), nullptr, false);
    EXPECT_TRUE(r.is_object()) << "no request counts from kube-sim for " << cluster;
    std::map<std::string, int> out;
    if (!r.is_object() || !r.contains("byUserAgent") || !r["byUserAgent"].is_object()) return out;
    const json& by = r["byUserAgent"];
    for (auto it = by.begin(); it != by.end(); ++it) out[it.key()] = it.value().get<int>();
    return out;
  }

  const std::string agent_ua_ = std::string("eco-agent/") + eco::kVersion;
  const std::string eco_ua_ = k8s::ClientOptions{}.user_agent;
  TempDir dir_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  int agent_port_ = 0;
  std::string status_ctx_;
  json last_;
};

// Issue 25: eco opens no connection to an agent cluster's API server. Over
// a whole deploy, Ready and terminate of a mixed fleet, cluster-1 hears
// only its agent and cluster-2 only eco.
TEST_F(AgentFaultsE2E, EcoSendsNoRequestToAnAgentClustersApiServer) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  const json boot = AgentCluster("cluster-1");
  ASSERT_NO_FATAL_FAILURE(PushCluster("cluster-2"));
  auto agent = Run(AgentArgv("cluster-1", boot, 4), "agent-1.log");
  ASSERT_NO_FATAL_FAILURE(World({"cluster-1", "cluster-2"}, Chart(false)));
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 1)) << agent->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects({"cluster-1", "cluster-2"}, "cluster-2", false));
  Ok(eco_->client().PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "Terminated";
  })) << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"})
    EXPECT_TRUE(WaitUntil([&] { return Snapshot(n).empty(); }, std::chrono::seconds(60))) << n;

  const auto pulled = UserAgents("cluster-1");
  EXPECT_EQ(Keys(pulled), std::set<std::string>{agent_ua_}) << json(pulled).dump();
  EXPECT_GT(pulled.count(agent_ua_) ? pulled.at(agent_ua_) : 0, 0);
  const auto pushed = UserAgents("cluster-2");
  EXPECT_EQ(Keys(pushed), std::set<std::string>{eco_ua_}) << json(pushed).dump();
  EXPECT_NE(eco_ua_, agent_ua_);
}

// Fleet mode: five agent clusters served by one `eco agent --fleet DIR`
// process (NAME.yaml + NAME.token each), one pushed cluster beside them;
// one composite app deployed, updated and terminated on all six. A sixth
// fleet entry whose cluster does not answer is left out, not fatal.
TEST_F(AgentFaultsE2E, FleetOfFiveAgentsDeploysUpdatesAndTerminatesBesideAPushedCluster) {
  ASSERT_NO_FATAL_FAILURE(Start(6));
  const std::vector<std::string> agents = {"cluster-1", "cluster-2", "cluster-3", "cluster-4",
                                           "cluster-5"};
  const std::vector<std::string> all = {"cluster-1", "cluster-2", "cluster-3",
                                        "cluster-4", "cluster-5", "cluster-6"};
  const std::string fleet = dir_.path() + "/fleet";
  std::filesystem::create_directories(fleet);
  std::string hub;
  for (const auto& n : agents) {
    const json boot = AgentCluster(n);
    hub = boot.value("hub", "");
    std::filesystem::copy_file(sim_->kubeconfig(n), fleet + "/" + n + ".yaml");
    std::ofstream(fleet + "/" + n + ".token") << boot.value("token", "") << "\n";
  }
  // A sixth entry whose cluster does not answer: left out, the rest run.
  std::ofstream(fleet + "/broken.yaml")
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:"
      << FreePort() << "\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n"
      << "    cluster: c\n    user: u\ncurrent-context: x\n";
  std::ofstream(fleet + "/broken.token") << "not-a-token\n";
  ASSERT_NO_FATAL_FAILURE(PushCluster("cluster-6"));
  auto proc = Run({BinaryPath("eco"), "agent", "--fleet", fleet, "--hub", hub, "--workers", "4"},
                  "fleet.log");
  for (const auto& n : agents)
    ASSERT_TRUE(WaitLog(*proc, "connected to the hub as prov+" + n)) << proc->ReadLog();
  EXPECT_TRUE(WaitLog(*proc, "broken: not started")) << proc->ReadLog();
  EXPECT_TRUE(WaitLog(*proc, "1 of 6 agents of the fleet could not start")) << proc->ReadLog();

  ASSERT_NO_FATAL_FAILURE(World(all, Chart(false)));
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus(all, 1)) << proc->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects(all, "cluster-6", false));

  ASSERT_NO_FATAL_FAILURE(Update());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus(all, 2)) << proc->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects(all, "cluster-6", true));

  Ok(eco_->client().PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(
      WaitStatus("status=deployed",
                 [](const json& s) { return s.value("deployedStatus", "") == "Terminated"; }))
      << last_.dump() << "\n"
      << proc->ReadLog();
  for (const auto& n : all)
    EXPECT_TRUE(WaitUntil([&] { return Snapshot(n).empty(); }, std::chrono::seconds(60)))
        << n << " still holds " << json(Keys(Snapshot(n))).dump();
  for (const auto& n : agents)
    EXPECT_EQ(Keys(UserAgents(n)), std::set<std::string>{agent_ua_}) << n;
  EXPECT_EQ(proc->ReadLog().find("enrolment failed"), std::string::npos) << proc->ReadLog();
}

// kill -9 of the agent while its cluster (slowed by kube-sim's latency
// fault, one apply at a time) is half way through the deployment; the
// same command line again finishes it: exactly the desired objects, every
// resource Applied and Ready.
TEST_F(AgentFaultsE2E, AgentKilledMidDeploymentFinishesWithExactlyTheDesiredObjects) {
  constexpr int kParts = 10;
  ASSERT_NO_FATAL_FAILURE(Start(2));
  const json boot = AgentCluster("cluster-1");
  ASSERT_NO_FATAL_FAILURE(PushCluster("cluster-2"));
  const auto argv = AgentArgv("cluster-1", boot, 1);
  auto agent = Run(argv, "agent-1.log");
  ASSERT_TRUE(WaitLog(*agent, "connected to the hub")) << agent->ReadLog();
  ASSERT_NO_FATAL_FAILURE(World({"cluster-1", "cluster-2"}, Chart(false, kParts)));
  // 13 objects at 500 ms each: seconds of applies left after the first.
  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=500"), 200);
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_TRUE(WaitUntil([&] { return !Snapshot("cluster-1").empty(); }, std::chrono::seconds(90)))
      << agent->ReadLog();
  agent->Kill(SIGKILL);
  const size_t at_kill = Snapshot("cluster-1").size();
  EXPECT_LT(at_kill, Want(false, kParts).size())
      << "the agent was killed too late to test a resumption";
  EXPECT_NE(eco_->client().Get(kDIG + "/status?status=deployed").json().value("deployedStatus", ""),
            "Instantiated");

  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=50"), 200);
  auto again = Run(argv, "agent-1-again.log");
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 1)) << again->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects({"cluster-1", "cluster-2"}, "cluster-2", false, kParts));
  json s = eco_->client().Get(kDIG + "/status?status=deployed").json();
  EXPECT_EQ(s["deployedCounts"],
            json({{"Applied", 2 * static_cast<int>(Want(false, kParts).size())}}))
      << s.dump();
  // The kept identity, not the used-up token.
  EXPECT_NE(again->ReadLog().find("connected to the hub as prov+cluster-1"), std::string::npos)
      << again->ReadLog();
}

// The same in the middle of an update (new and changed objects applied,
// the removed one deleted last) and of a terminate.
TEST_F(AgentFaultsE2E, AgentKilledMidUpdateAndMidTerminateEndsRight) {
  constexpr int kParts = 10;
  ASSERT_NO_FATAL_FAILURE(Start(2));
  const json boot = AgentCluster("cluster-1");
  ASSERT_NO_FATAL_FAILURE(PushCluster("cluster-2"));
  const auto argv = AgentArgv("cluster-1", boot, 1);
  auto agent = Run(argv, "agent-1.log");
  ASSERT_NO_FATAL_FAILURE(World({"cluster-1", "cluster-2"}, Chart(false, kParts)));
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 1)) << agent->ReadLog();

  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=1500"), 200);
  ASSERT_NO_FATAL_FAILURE(Update(kParts));
  // Killed once the first object of revision 2 is there (ConfigMap r1-new
  // is applied before the changed Deployment, and r1-old deleted last).
  auto changed = [&] {
    auto snap = Snapshot("cluster-1");
    int n = snap.count("ConfigMap/r1-new") ? 1 : 0;
    auto d = snap.find("Deployment/r1-web");
    if (d != snap.end() &&
        d->second["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "v2")
      ++n;
    auto cm = snap.find("ConfigMap/r1-settings");
    if (cm != snap.end() && cm->second["data"]["marker"] == "v2") ++n;
    return std::pair<int, bool>{n, snap.count("ConfigMap/r1-old") == 1};
  };
  ASSERT_TRUE(WaitUntil([&] { return changed().first > 0; }, std::chrono::seconds(90)))
      << agent->ReadLog();
  agent->Kill(SIGKILL);
  const auto [done, old_there] = changed();
  EXPECT_TRUE(done < 3 && old_there) << "the agent was killed too late to test a resumption";
  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=50"), 200);
  auto again = Run(argv, "agent-1-again.log");
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 2)) << again->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects({"cluster-1", "cluster-2"}, "cluster-2", true, kParts));

  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=500"), 200);
  const size_t all = Want(true, kParts).size();
  Ok(eco_->client().PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(
      WaitUntil([&] { return Snapshot("cluster-1").size() < all; }, std::chrono::seconds(90)))
      << again->ReadLog();
  again->Kill(SIGKILL);
  EXPECT_GT(Snapshot("cluster-1").size(), 0u)
      << "the agent was killed too late to test a resumption";
  ASSERT_EQ(sim_->Fault("cluster-1", "latency", "ms=50"), 200);
  auto third = Run(argv, "agent-1-third.log");
  ASSERT_TRUE(
      WaitStatus("status=deployed",
                 [](const json& s) { return s.value("deployedStatus", "") == "Terminated"; }))
      << last_.dump() << "\n"
      << third->ReadLog();
  for (const char* n : {"cluster-1", "cluster-2"})
    EXPECT_TRUE(WaitUntil([&] { return Snapshot(n).empty(); }, std::chrono::seconds(60)))
        << n << " still holds " << json(Keys(Snapshot(n))).dump();
}

// kill -9 of the agent after it took an update in but before it could
// persist and acknowledge it (its cluster is down, so the state Secret
// cannot be written): restarted, it is sent the update again and ends at
// revision 2's objects exactly.
TEST_F(AgentFaultsE2E, AgentKilledBeforeAcknowledgingAnUpdateIsSentItAgain) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  const json boot = AgentCluster("cluster-1");
  ASSERT_NO_FATAL_FAILURE(PushCluster("cluster-2"));
  const auto argv = AgentArgv("cluster-1", boot, 4);
  auto agent = Run(argv, "agent-1.log");
  ASSERT_NO_FATAL_FAILURE(World({"cluster-1", "cluster-2"}, Chart(false)));
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 1)) << agent->ReadLog();

  const size_t mark = agent->ReadLog().size();
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  ASSERT_NO_FATAL_FAILURE(Update());
  // The update's event runs in the agent (its applies fail): the
  // publication was taken in, and nothing could be persisted to ack it.
  ASSERT_TRUE(WaitLog(*agent, "cluster not answering; retrying", mark)) << agent->ReadLog();
  agent->Kill(SIGKILL);
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  EXPECT_EQ(Keys(Snapshot("cluster-1")), Want(false));

  auto again = Run(argv, "agent-1-again.log");
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus({"cluster-1", "cluster-2"}, 2)) << again->ReadLog();
  ASSERT_NO_FATAL_FAILURE(ExpectObjects({"cluster-1", "cluster-2"}, "cluster-2", true));
  // The update's clean-up (revision 1's object deleted) is reported after
  // revision 2's objects are: wait for it.
  const json want = {{"Applied", 2 * static_cast<int>(Want(true).size())}};
  EXPECT_TRUE(WaitStatus("status=deployed", [&](const json& s) { return s.value("deployedCounts", json()) == want; }))
      << last_.dump() << "\n"
      << again->ReadLog();
}

// scripts/agent_fleet.sh against a running hub: two kube-sim processes of
// three clusters, two `eco agent --fleet` processes; `start` returns when
// every agent is connected. A composite app deployed to all six is
// Instantiated and Ready with its objects on each, and terminated.
TEST_F(AgentFaultsE2E, AgentFleetScriptStartsAFleetThatDeploysAndTerminates) {
  ASSERT_NO_FATAL_FAILURE(Start(0));
  const std::string script = std::string(ECO_SOURCE_DIR) + "/scripts/agent_fleet.sh";
  const std::string work = dir_.path() + "/fleet-work";
  const std::string bin = std::filesystem::path(BinaryPath("eco")).parent_path().string();
  auto script_run = [&](const std::string& verb, const std::string& log) {
    return Run(
        {"/usr/bin/env", "HUB_API=" + eco_->base_url(), "WORK=" + work, "BIN=" + bin, "SIMS=2",
         "PER_SIM=3", "AGENTS=2", "PROVIDER=prov", "LABEL=edge", "WAIT=90", "bash", script, verb},
        log);
  };
  // Whatever happens below, the fleet's processes go with the test.
  struct Stop {
    std::function<void()> fn;
    ~Stop() { fn(); }
  } stop{[&] { script_run("stop", "fleet-stop.log")->Wait(std::chrono::seconds(60)); }};
  auto start = script_run("start", "fleet-start.log");
  int ws = 0;
  ASSERT_TRUE(start->Wait(std::chrono::seconds(180), &ws)) << start->ReadLog();
  ASSERT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 0) << start->ReadLog();

  // Each kube-sim's /sim API, on the port its ready line names.
  std::map<std::string, int> port_of;
  std::vector<std::string> names;
  for (int s = 1; s <= 2; ++s) {
    std::smatch m;
    const std::string log = ReadFile(work + "/sim-" + std::to_string(s) + ".log");
    ASSERT_TRUE(
        std::regex_search(log, m, std::regex(R"(serving \d+ clusters on http://[^:]+:(\d+))")))
        << log;
    for (int c = 1; c <= 3; ++c) {
      const std::string n = "s" + std::to_string(s) + "-c" + std::to_string(c);
      names.push_back(n);
      port_of[n] = std::stoi(m[1]);
    }
  }
  auto objects = [&](const std::string& n) {
    httplib::Client cli("127.0.0.1", port_of.at(n));
    auto r = cli.Get(("/sim/clusters/" + n + "/objects").c_str());
    return SnapshotOf(n, r && r->status == 200 ? r->body : "");
  };

  ASSERT_NO_FATAL_FAILURE(World(names, Chart(false)));
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(ExpectTrueStatus(names, 1))
      << ReadFile(work + "/agents-1.log") << ReadFile(work + "/agents-2.log");
  const auto ref = objects(names.front());
  EXPECT_EQ(Keys(ref), Want(false));
  for (const auto& n : names) EXPECT_EQ(objects(n), ref) << n;

  Ok(eco_->client().PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "Terminated";
  })) << last_.dump();
  for (const auto& n : names)
    EXPECT_TRUE(WaitUntil([&] { return objects(n).empty(); }, std::chrono::seconds(60))) << n;
}

}  // namespace
}  // namespace eco::testing
