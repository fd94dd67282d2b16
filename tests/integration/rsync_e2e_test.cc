// rsync seen from outside: `eco serve` on its embedded store against a
// kube-sim fleet, driven through the REST API only. Clusters go down and
// come back (kube-sim faults) while DIGs are instantiated, stopped,
// terminated, updated and rolled back; the clusters' objects and the status
// queries must show what docs/rsync.md promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";
const std::string kContextLabel = "app.eco.io/context";

// The kinds the charts below deploy (Pods and ReplicaSets come from the
// simulated controllers).
const std::set<std::string> kChartKinds = {"Deployment", "Service", "ConfigMap"};

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

// Revision 2's Deployment: another marker and one field more, which a
// rollback must take away again.
const char* kDeploymentV2 = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicaCount }}
  minReadySeconds: 5
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

const char* kService = R"(apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector:
    app: web
  ports:
    - port: 80
      targetPort: 80
)";

const char* kKeep = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-keep
data:
  a: "1"
)";

const char* kOld = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-old
data:
  gone: soon
)";

const char* kNew = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-new
data:
  fresh: "yes"
)";

// Revision 1: Deployment, Service and two ConfigMaps (keep, old).
std::string ChartV1() {
  return ChartTgzWithTemplates("web", "replicaCount: 1\nmarker: v1\n",
                               {{"deployment.yaml", kDeployment},
                                {"service.yaml", kService},
                                {"configmap-keep.yaml", kKeep},
                                {"configmap-old.yaml", kOld}});
}

// Revision 2: the Deployment changed, Service and keep identical, old
// removed, new added.
std::string ChartV2() {
  return ChartTgzWithTemplates("web", "replicaCount: 1\nmarker: v2\n",
                               {{"deployment.yaml", kDeploymentV2},
                                {"service.yaml", kService},
                                {"configmap-keep.yaml", kKeep},
                                {"configmap-new.yaml", kNew}});
}

// One cluster's entry in a status answer.
struct ClusterView {
  std::string connectivity;
  int resources = 0;
  int good = 0;                      // Ready (ready view) or Applied (deployed view)
  std::set<std::string> good_names;  // "Kind/name" of those
  bool all_good() const { return resources > 0 && good == resources; }
};

// Per cluster name, from the new field names (`status=` queries).
std::map<std::string, ClusterView> Clusters(const json& status) {
  std::map<std::string, ClusterView> out;
  if (!status.is_object() || !status.contains("apps") || !status["apps"].is_array()) return out;
  for (const auto& app : status["apps"]) {
    for (const auto& c : app.value("clusters", json::array())) {
      ClusterView& v = out[c.value("cluster", "")];
      v.connectivity = c.value("connectivity", "");
      for (const auto& r : c.value("resources", json::array())) {
        ++v.resources;
        if (r.value("readyStatus", "") == "Ready" || r.value("deployedStatus", "") == "Applied") {
          ++v.good;
          v.good_names.insert(r.value("GVK", json::object()).value("Kind", "") + "/" +
                              r.value("name", ""));
        }
      }
    }
  }
  return out;
}

std::string LastState(const json& status) {
  if (!status.is_object() || !status.contains("states")) return "";
  const json& a = status["states"].value("actions", json::array());
  return a.empty() ? "" : a.back().value("state", "");
}

std::string LastInstance(const json& status) {
  if (!status.is_object() || !status.contains("states")) return "";
  const json& a = status["states"].value("actions", json::array());
  return a.empty() ? "" : a.back().value("instance", "");
}

int64_t LastRevision(const json& status) {
  if (!status.is_object() || !status.contains("states")) return -1;
  const json& a = status["states"].value("actions", json::array());
  return a.empty() ? -1 : a.back().value("revision", int64_t{-1});
}

class RsyncE2E : public ::testing::Test {
 protected:
  static void Ok(const HttpResponse& r, int code = 201) {
    ASSERT_EQ(r.status, code) << r.Describe();
  }

  // kube-sim with `clusters` clusters and eco with short retry delays.
  void Start(int clusters) {
    KubeSimOptions ko;
    ko.clusters = clusters;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    for (int i = 1; i <= clusters; ++i) names_.push_back("cluster-" + std::to_string(i));
    EcoOptions eo;
    eo.extra_args = {"--rsync-retry-base-ms", "200", "--rsync-retry-cap-ms", "1000"};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
  }

  // Every cluster registered and in a level-0 logical cloud; a composite app
  // whose one app `web` carries `chart`, placed on all clusters; the DIG
  // (release "r1") approved.
  void World(const std::string& chart) {
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
    for (const auto& n : names_) {
      Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(),
                         ReadFile(sim_->kubeconfig(n)), "kubeconfig"));
      Ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels",
                    json{{"clusterLabel", "edge"}}));
      Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                    Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), chart));
    Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
    Ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles",
                       Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz()));
    Ok(c.PostJson(
        kCA + "/deployment-intent-groups",
        Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})));
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

  json Status(const std::string& query) {
    return eco_->client().Get(kDIG + "/status?" + query).json();
  }

  // Polls the status query until `pred` holds; last_ keeps the last answer
  // for failure messages.
  bool WaitStatus(const std::string& query, const std::function<bool(const json&)>& pred) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(kDIG + "/status?" + query).json();
          return last_.is_object() && pred(last_);
        },
        std::chrono::seconds(90));
  }

  // Every object on `cluster` that carries this DIG's context label (read
  // through kube-sim's /sim API, which works while the cluster is down).
  std::vector<json> DigObjects(const std::string& cluster, bool chart_kinds_only = false) {
    std::vector<json> out;
    json all = json::parse(sim_->Objects(cluster), nullptr, false);
    EXPECT_TRUE(all.is_object()) << "no object list from kube-sim for " << cluster;
    if (!all.is_object()) return out;
    for (const auto& o : all.value("objects", json::array())) {
      const json labels = o.value("metadata", json::object()).value("labels", json::object());
      if (labels.value(kContextLabel, "") != status_ctx_) continue;
      if (chart_kinds_only && !kChartKinds.count(o.value("kind", ""))) continue;
      out.push_back(o);
    }
    return out;
  }

  // "Kind/name" -> the parts of each chart object that eco decides (labels,
  // annotations, spec, data), for comparing what a cluster holds.
  std::map<std::string, json> Snapshot(const std::string& cluster) {
    std::map<std::string, json> out;
    for (const auto& o : DigObjects(cluster, true)) {
      const json md = o.value("metadata", json::object());
      json v = {{"labels", md.value("labels", json::object())},
                {"annotations", md.value("annotations", json::object())},
                {"spec", o.value("spec", json())},
                {"data", o.value("data", json())}};
      out[o.value("kind", "") + "/" + md.value("name", "")] = std::move(v);
    }
    return out;
  }

  // "Kind/name" -> what moves when anyone writes the object: its
  // resourceVersion (not for Deployments, whose status the simulated
  // controller keeps writing) and metadata.generation.
  std::map<std::string, json> Versions(const std::string& cluster) {
    std::map<std::string, json> out;
    for (const auto& o : DigObjects(cluster, true)) {
      const json md = o.value("metadata", json::object());
      const std::string kind = o.value("kind", "");
      out[kind + "/" + md.value("name", "")] = {
          {"resourceVersion", kind == "Deployment" ? json() : md.value("resourceVersion", json())},
          {"generation", md.value("generation", json())}};
    }
    return out;
  }

  std::set<std::string> Names(const std::string& cluster) {
    std::set<std::string> out;
    for (const auto& [k, v] : Snapshot(cluster)) out.insert(k);
    return out;
  }

  std::unique_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok()) << rc.status().ToString();
    if (!rc.ok()) return nullptr;
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The instantiate's wait is visible: `up` applied everything, `down`
  // is being retried, and the event still runs.
  void WaitUntilUpAppliedDownRetrying(const std::vector<std::string>& up,
                                      const std::vector<std::string>& down) {
    ASSERT_TRUE(WaitStatus("status=deployed", [&](const json& s) {
      auto cs = Clusters(s);
      for (const auto& n : up) {
        if (!cs[n].all_good() || cs[n].connectivity != "Available") return false;
      }
      for (const auto& n : down) {
        if (cs[n].connectivity != "Retrying") return false;
      }
      return true;
    })) << last_.dump();
    EXPECT_EQ(last_.value("deployedStatus", ""), "Instantiating") << last_.dump();
  }

  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::vector<std::string> names_;
  std::string status_ctx_;
  json last_;
};

// 20 clusters, 3 of them down at instantiate: the 17 others become Ready
// while the 3 are retried, and all 20 converge once the 3 are back.
TEST_F(RsyncE2E, ClustersDownAtInstantiateDoNotHoldBackTheOthersAndCatchUp) {
  ASSERT_NO_FATAL_FAILURE(Start(20));
  ASSERT_NO_FATAL_FAILURE(World(ChartV1()));
  const std::set<std::string> down = {"cluster-4", "cluster-11", "cluster-17"};
  for (const auto& n : down) ASSERT_EQ(sim_->Fault(n, "down"), 200) << n;
  ASSERT_NO_FATAL_FAILURE(Instantiate());

  // The 17 are Ready, each resource of each; the 3 show Retrying.
  ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
    auto cs = Clusters(s);
    for (const auto& n : names_) {
      if (down.count(n)) {
        if (cs[n].connectivity != "Retrying") return false;
      } else if (!cs[n].all_good() || cs[n].connectivity != "Available") {
        return false;
      }
    }
    return true;
  })) << last_.dump();
  EXPECT_EQ(last_.value("deployedStatus", ""), "Instantiating") << last_.dump();
  EXPECT_EQ(last_.value("readyStatus", ""), "NotReady") << last_.dump();
  auto cs = Clusters(last_);
  EXPECT_EQ(cs.size(), 20u) << last_.dump();
  for (const auto& n : down) {
    EXPECT_EQ(cs[n].good, 0) << n;
    EXPECT_EQ(cs[n].resources, 4) << n;  // listed, NotPresent
    EXPECT_TRUE(DigObjects(n).empty()) << n;
  }
  for (const auto& n : names_) {
    if (!down.count(n)) {
      EXPECT_EQ(Names(n).size(), 4u) << n;
    }
  }

  for (const auto& n : down) ASSERT_EQ(sim_->Fault(n, "up"), 200) << n;
  ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
    if (s.value("deployedStatus", "") != "Instantiated" || s.value("readyStatus", "") != "Ready")
      return false;
    auto cs = Clusters(s);
    if (cs.size() != names_.size()) return false;
    for (const auto& [n, v] : cs) {
      if (!v.all_good() || v.connectivity != "Available") return false;
    }
    return true;
  })) << last_.dump();
  // Every chart resource Ready on every cluster (the ready view adds the
  // Deployments' Pods), and the counts agree with the entries.
  const std::set<std::string> want = {"ConfigMap/r1-keep", "ConfigMap/r1-old", "Deployment/r1-web",
                                      "Service/r1-web"};
  int listed = 0;
  for (const auto& [n, v] : Clusters(last_)) {
    EXPECT_TRUE(std::includes(v.good_names.begin(), v.good_names.end(), want.begin(), want.end()))
        << n;
    listed += v.resources;
  }
  EXPECT_EQ(last_["readyCounts"], json({{"Ready", listed}, {"NotReady", 0}, {"NotPresent", 0}}))
      << last_.dump();

  json dep = Status("status=deployed&output=summary");
  EXPECT_EQ(dep.value("deployedStatus", ""), "Instantiated") << dep.dump();
  // 4 resources x 20 clusters
  EXPECT_EQ(dep["deployedCounts"], json({{"Applied", 4 * 20}})) << dep.dump();
  for (const auto& n : names_) EXPECT_EQ(Names(n), want) << n;
}

// A stop ends the wait for a down cluster: the event fails, the DIG shows
// InstantiateStopped, and the cluster gets nothing once it is back.
TEST_F(RsyncE2E, StopEndsTheWaitAndNothingReachesTheClusterLater) {
  ASSERT_NO_FATAL_FAILURE(Start(2));
  ASSERT_NO_FATAL_FAILURE(World(ChartV1()));
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(WaitUntilUpAppliedDownRetrying({"cluster-1"}, {"cluster-2"}));

  EcoClient c = eco_->client();
  Ok(c.PostJson(kDIG + "/stop", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "InstantiateFailed";
  })) << last_.dump();
  EXPECT_EQ(LastState(last_), "InstantiateStopped") << last_.dump();
  EXPECT_NE(eco_->Log().find("instantiate failed: stopped"), std::string::npos) << eco_->LogTail();
  // A second stop has nothing left to stop.
  EXPECT_EQ(c.PostJson(kDIG + "/stop", json::object()).status, 409);

  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  // Retries came every second at most; none may come now. (A window, not a
  // deadline: the check fails if anything lands in it.)
  EXPECT_FALSE(WaitUntil([&] { return !DigObjects("cluster-2").empty(); }, std::chrono::seconds(4)))
      << "objects reached cluster-2 after the stop";
  json s = Status("status=deployed");
  EXPECT_EQ(s.value("deployedStatus", ""), "InstantiateFailed") << s.dump();
  auto cs = Clusters(s);
  EXPECT_EQ(cs["cluster-2"].connectivity, "Retrying") << s.dump();  // frozen, as EMCO leaves it
  EXPECT_EQ(cs["cluster-2"].good, 0) << s.dump();
  EXPECT_TRUE(cs["cluster-1"].all_good()) << s.dump();

  // Terminate clears the stop flag and cleans up what did land.
  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "Terminated";
  })) << last_.dump();
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return DigObjects(n).empty(); }, std::chrono::seconds(30))) << n;
  }
}

// A terminate queued while the instantiate waits for a down cluster cancels
// the instantiate; once the cluster is back every cluster is clean.
TEST_F(RsyncE2E, TerminateWhileWaitingCancelsTheInstantiateAndLeavesEveryClusterClean) {
  ASSERT_NO_FATAL_FAILURE(Start(3));
  ASSERT_NO_FATAL_FAILURE(World(ChartV1()));
  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  ASSERT_NO_FATAL_FAILURE(Instantiate());
  ASSERT_NO_FATAL_FAILURE(
      WaitUntilUpAppliedDownRetrying({"cluster-1", "cluster-2"}, {"cluster-3"}));
  for (const char* n : {"cluster-1", "cluster-2"}) ASSERT_EQ(Names(n).size(), 4u) << n;

  EcoClient c = eco_->client();
  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  // The reachable clusters are cleaned while the down one holds the terminate.
  for (const char* n : {"cluster-1", "cluster-2"}) {
    EXPECT_TRUE(WaitUntil([&] { return DigObjects(n).empty(); }, std::chrono::seconds(60))) << n;
  }
  ASSERT_TRUE(WaitUntil(
      [&] { return eco_->Log().find("cancelled by a queued terminate") != std::string::npos; },
      std::chrono::seconds(30)))
      << eco_->LogTail();
  json s = Status("status=deployed");
  EXPECT_EQ(s.value("deployedStatus", ""), "Terminating") << s.dump();
  EXPECT_EQ(LastState(s), "Terminated") << s.dump();

  ASSERT_EQ(sim_->Fault("cluster-3", "up"), 200);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "Terminated";
  })) << last_.dump();
  for (const auto& [n, v] : Clusters(last_)) {
    EXPECT_EQ(v.connectivity, "Available") << n;
    EXPECT_EQ(v.good, 0) << n << ": " << last_.dump();  // every resource Deleted
  }
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return DigObjects(n).empty(); }, std::chrono::seconds(30)))
        << n << " still holds " << DigObjects(n).size() << " objects of the DIG";
  }
}

class RsyncUpdateE2E : public RsyncE2E {
 protected:
  // Revision 1 instantiated and Ready on three clusters.
  void DeployRevision1() {
    ASSERT_NO_FATAL_FAILURE(Start(3));
    ASSERT_NO_FATAL_FAILURE(World(ChartV1()));
    ASSERT_NO_FATAL_FAILURE(Instantiate());
    ASSERT_TRUE(WaitStatus("status=ready", [](const json& s) {
      return s.value("deployedStatus", "") == "Instantiated" &&
             s.value("readyStatus", "") == "Ready";
    })) << last_.dump();
    rev1_ = LastInstance(last_);
    ASSERT_EQ(rev1_, status_ctx_);
  }

  // The app's chart replaced by revision 2's, then `update`; waits until the
  // new revision is Instantiated and Ready and the old one Updated (its
  // leftovers deleted).
  void UpdateToRevision2() {
    EcoClient c = eco_->client();
    auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), ChartV2());
    ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
    auto up = c.PostJson(kDIG + "/update", json::object());
    ASSERT_EQ(up.status, 202) << up.Describe();
    EXPECT_EQ(up.json(), json(2)) << up.Describe();
    ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
      return LastRevision(s) == 2 && LastInstance(s) != rev1_ &&
             s.value("deployedStatus", "") == "Instantiated" &&
             s.value("readyStatus", "") == "Ready";
    })) << last_.dump();
    rev2_ = LastInstance(last_);
    ASSERT_TRUE(WaitStatus("status=deployed&instance=" + rev1_, [](const json& s) {
      return s.value("deployedStatus", "") == "Updated";
    })) << last_.dump();
  }

  std::string rev1_, rev2_;
};

// Update: the added object appears, the changed one changes, the removed one
// goes, and the identical ones get no request at all.
TEST_F(RsyncUpdateE2E, UpdateAppliesOnlyTheDifference) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  // Another field manager edits the identical objects: a re-apply by eco
  // (forced server-side apply) would undo the edit and move resourceVersion.
  std::map<std::string, std::string> keep_rv, svc_rv;
  std::map<std::string, int64_t> svc_gen;
  for (const auto& n : names_) {
    auto k = Client(n);
    ASSERT_NE(k, nullptr);
    k8s::ApplyOptions ao;
    ao.field_manager = "intruder";
    auto t = k->Apply({{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", "r1-keep"}, {"namespace", "default"}}},
                       {"data", {{"a", "tampered"}}}},
                      ao);
    ASSERT_TRUE(t.ok()) << n << ": " << t.status().ToString();
    keep_rv[n] = (*t)["metadata"].value("resourceVersion", "");
    auto svc = k->Get("v1", "Service", "default", "r1-web");
    ASSERT_TRUE(svc.ok()) << n << ": " << svc.status().ToString();
    svc_rv[n] = (*svc)["metadata"].value("resourceVersion", "");
    svc_gen[n] = (*svc)["metadata"].value("generation", int64_t{0});
    ASSERT_FALSE(keep_rv[n].empty());
  }

  ASSERT_NO_FATAL_FAILURE(UpdateToRevision2());
  const std::set<std::string> want = {"ConfigMap/r1-keep", "ConfigMap/r1-new", "Deployment/r1-web",
                                      "Service/r1-web"};
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return Names(n) == want; }, std::chrono::seconds(30)))
        << n << " holds " << json(Names(n)).dump();
    auto k = Client(n);
    ASSERT_NE(k, nullptr);
    auto added = k->Get("v1", "ConfigMap", "default", "r1-new");
    ASSERT_TRUE(added.ok()) << n << ": " << added.status().ToString();
    EXPECT_EQ((*added)["data"], json({{"fresh", "yes"}})) << n;
    EXPECT_EQ(k->Get("v1", "ConfigMap", "default", "r1-old").status().code(), Code::kNotFound) << n;
    auto d = k->Get("apps/v1", "Deployment", "default", "r1-web");
    ASSERT_TRUE(d.ok()) << n << ": " << d.status().ToString();
    EXPECT_EQ((*d)["spec"].value("minReadySeconds", 0), 5) << n;
    EXPECT_EQ((*d)["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"], json("v2"))
        << n;
    auto keep = k->Get("v1", "ConfigMap", "default", "r1-keep");
    ASSERT_TRUE(keep.ok()) << n << ": " << keep.status().ToString();
    EXPECT_EQ((*keep)["data"]["a"], json("tampered")) << n << ": eco applied an unchanged object";
    EXPECT_EQ((*keep)["metadata"].value("resourceVersion", ""), keep_rv[n]) << n;
    auto svc = k->Get("v1", "Service", "default", "r1-web");
    ASSERT_TRUE(svc.ok()) << n << ": " << svc.status().ToString();
    EXPECT_EQ((*svc)["metadata"].value("resourceVersion", ""), svc_rv[n]) << n;
    EXPECT_EQ((*svc)["metadata"].value("generation", int64_t{0}), svc_gen[n]) << n;
  }

  // The new revision's status: everything Applied, on every cluster.
  json s = Status("status=deployed");
  EXPECT_EQ(s.value("deployedStatus", ""), "Instantiated") << s.dump();
  EXPECT_EQ(LastState(s), "Instantiated") << s.dump();
  EXPECT_EQ(s["deployedCounts"], json({{"Applied", 12}})) << s.dump();
  // Revision 1's own view keeps only what no newer revision acted on: the
  // identical objects, and the removed one, now Deleted.
  json old = Status("status=deployed&instance=" + rev1_);
  EXPECT_EQ(old.value("deployedStatus", ""), "Updated") << old.dump();
  EXPECT_EQ(old["deployedCounts"], json({{"Applied", 6}, {"Deleted", 3}})) << old.dump();
}

// An update waits for a cluster that is down without holding back the
// others; the replaced revision's leftovers go only once the update is done
// everywhere.
TEST_F(RsyncUpdateE2E, UpdateCatchesUpAClusterThatWasDown) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  const auto rev1_objects = Snapshot("cluster-3");
  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  EcoClient c = eco_->client();
  auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), ChartV2());
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
  Ok(c.PostJson(kDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [&](const json& s) {
    auto cs = Clusters(s);
    return LastRevision(s) == 2 && cs["cluster-1"].all_good() && cs["cluster-2"].all_good() &&
           cs["cluster-3"].connectivity == "Retrying";
  })) << last_.dump();
  EXPECT_EQ(last_.value("deployedStatus", ""), "Instantiating") << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"}) {
    auto names = Names(n);
    EXPECT_TRUE(names.count("ConfigMap/r1-new")) << n;
    EXPECT_TRUE(names.count("ConfigMap/r1-old")) << n << ": deleted before the update finished";
  }
  EXPECT_EQ(Snapshot("cluster-3"), rev1_objects);

  ASSERT_EQ(sim_->Fault("cluster-3", "up"), 200);
  ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
    return s.value("deployedStatus", "") == "Instantiated" && s.value("readyStatus", "") == "Ready";
  })) << last_.dump();
  ASSERT_TRUE(WaitStatus("status=deployed&instance=" + rev1_, [](const json& s) {
    return s.value("deployedStatus", "") == "Updated";
  })) << last_.dump();
  const std::set<std::string> want = {"ConfigMap/r1-keep", "ConfigMap/r1-new", "Deployment/r1-web",
                                      "Service/r1-web"};
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return Names(n) == want; }, std::chrono::seconds(30)))
        << n << " holds " << json(Names(n)).dump();
    auto objs = Snapshot(n);
    EXPECT_EQ(objs["Deployment/r1-web"]["spec"].value("minReadySeconds", 0), 5) << n;
  }
  for (const auto& [n, v] : Clusters(Status("status=deployed"))) {
    EXPECT_TRUE(v.all_good()) << n;
    EXPECT_EQ(v.connectivity, "Available") << n;
  }
}

// A terminate while an update waits for a down cluster: the update is
// cancelled, and every object of either revision goes. Regression: the
// objects only revision 1 had (r1-old) stayed on every cluster, since the
// cancelled update never got to delete them and the terminate deleted
// revision 2's objects only.
TEST_F(RsyncUpdateE2E, TerminateWhileAnUpdateWaitsLeavesEveryClusterClean) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  EcoClient c = eco_->client();
  auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), ChartV2());
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
  Ok(c.PostJson(kDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed", [&](const json& s) {
    auto cs = Clusters(s);
    return LastRevision(s) == 2 && cs["cluster-1"].all_good() && cs["cluster-2"].all_good() &&
           cs["cluster-3"].connectivity == "Retrying";
  })) << last_.dump();

  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return eco_->Log().find("update failed: cancelled by a queued terminate") !=
               std::string::npos;
      },
      std::chrono::seconds(30)))
      << eco_->LogTail();
  ASSERT_EQ(sim_->Fault("cluster-3", "up"), 200);
  ASSERT_TRUE(WaitStatus("status=deployed", [](const json& s) {
    return s.value("deployedStatus", "") == "Terminated";
  })) << last_.dump();
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return DigObjects(n).empty(); }, std::chrono::seconds(30)))
        << n << " still holds " << json(Names(n)).dump();
  }
  EXPECT_TRUE(WaitStatus("status=deployed&instance=" + rev1_, [](const json& s) {
    return s.value("deployedStatus", "") == "Updated";
  })) << last_.dump();
}

// The fleet plan predicts exactly what the update then does on each
// cluster: the objects that appear, the ones rewritten (their
// resourceVersion or generation moves) and the ones deleted; the rest get
// no write. Planned before, applied with update?plan=.
TEST_F(RsyncUpdateE2E, PlanPredictsWhatTheUpdateDoes) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  EcoClient c = eco_->client();
  auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), ChartV2());
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
  // cluster-3 leaves the placement: everything of the DIG goes from it.
  Ok(c.Delete("/v2/cluster-providers/prov/clusters/cluster-3/labels/edge"), 204);
  std::map<std::string, std::map<std::string, json>> before;
  for (const auto& n : names_) before[n] = Versions(n);

  auto planned = c.PostJson(kDIG + "/plan", json::object());
  ASSERT_EQ(planned.status, 200) << planned.Describe();
  const json plan = planned.json();
  ASSERT_EQ(plan.value("operation", ""), "update") << plan.dump();
  using Sets = std::map<std::string, std::set<std::string>>;
  Sets plan_create, plan_change, plan_delete;
  for (const auto& cl : plan["clusters"]) {
    const std::string n = cl["cluster"].get<std::string>().substr(std::string("prov+").size());
    for (const auto& [list, out] : {std::pair<const char*, Sets*>{"create", &plan_create},
                                    {"change", &plan_change}, {"delete", &plan_delete}}) {
      for (const auto& o : cl[list]) (*out)[n].insert(o["kind"].get<std::string>() + "/" + o["name"].get<std::string>());
    }
  }
  // What the plan says, for the record (and so a wrong plan reads plainly).
  EXPECT_EQ(plan_create, (Sets{{"cluster-1", {"ConfigMap/r1-new"}}, {"cluster-2", {"ConfigMap/r1-new"}}})) << plan.dump();
  EXPECT_EQ(plan_change, (Sets{{"cluster-1", {"Deployment/r1-web"}}, {"cluster-2", {"Deployment/r1-web"}}})) << plan.dump();
  EXPECT_EQ(plan_delete.at("cluster-3").size(), 4u) << plan.dump();

  Ok(c.PostRaw(kDIG + "/update?plan=" + plan["planId"].get<std::string>(), "{}"), 202);
  ASSERT_TRUE(WaitStatus("status=deployed&instance=" + rev1_, [](const json& st) {
    return st.value("deployedStatus", "") == "Updated";
  })) << last_.dump();
  Sets created, changed, deleted;
  for (const auto& n : names_) {
    const auto after = Versions(n);
    for (const auto& [k, v] : after) {
      auto b = before[n].find(k);
      if (b == before[n].end()) {
        created[n].insert(k);
      } else if (b->second != v) {
        changed[n].insert(k);
      }
    }
    for (const auto& [k, v] : before[n]) {
      if (!after.count(k)) deleted[n].insert(k);
    }
  }
  EXPECT_EQ(created, plan_create);
  EXPECT_EQ(changed, plan_change);
  EXPECT_EQ(deleted, plan_delete);
  // The diff's new values are what the cluster holds now.
  auto k = Client("cluster-1");
  ASSERT_NE(k, nullptr);
  auto d = k->Get("apps/v1", "Deployment", "default", "r1-web");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  int checked = 0;
  for (const auto& cl : plan["clusters"]) {
    if (cl["cluster"] != "prov+cluster-1") continue;
    for (const auto& f : cl["change"][0]["diff"]) {
      if (f["path"] == "spec.minReadySeconds") {
        EXPECT_EQ((*d)["spec"]["minReadySeconds"], f["to"]);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 1) << plan.dump();
}

// An update whose placement drops a cluster removes every object of the DIG
// from it, and leaves the clusters that kept identical objects alone.
TEST_F(RsyncUpdateE2E, UpdateThatDropsAClusterCleansIt) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  std::map<std::string, std::map<std::string, json>> kept, versions;
  for (const char* n : {"cluster-1", "cluster-2"}) {
    kept[n] = Snapshot(n);
    versions[n] = Versions(n);
    ASSERT_EQ(versions[n].size(), 4u) << n;
  }
  EcoClient c = eco_->client();
  Ok(c.PutJson(kDIG + "/generic-placement-intents/gpi/app-intents/web",
               Doc("web", {{"app", "web"},
                           {"intent",
                            {{"allOf",
                              {{{"clusterProvider", "prov"}, {"cluster", "cluster-1"}},
                               {{"clusterProvider", "prov"}, {"cluster", "cluster-2"}}}}}}})),
     200);
  Ok(c.PostJson(kDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitStatus("status=deployed&instance=" + rev1_, [](const json& s) {
    return s.value("deployedStatus", "") == "Updated";
  })) << last_.dump();
  EXPECT_TRUE(WaitUntil([&] { return DigObjects("cluster-3").empty(); }, std::chrono::seconds(30)))
      << "cluster-3 still holds " << DigObjects("cluster-3").size() << " objects of the DIG";
  json s = Status("status=deployed");
  EXPECT_EQ(s.value("deployedStatus", ""), "Instantiated") << s.dump();
  auto cs = Clusters(s);
  EXPECT_EQ(cs.size(), 2u) << s.dump();
  EXPECT_FALSE(cs.count("cluster-3")) << s.dump();
  // Nothing changed on the clusters that stay: no write reached them.
  for (const char* n : {"cluster-1", "cluster-2"}) {
    EXPECT_EQ(Snapshot(n), kept[n]) << n;
    EXPECT_EQ(Versions(n), versions[n]) << n;
  }
}

// Rollback to revision 1 brings every cluster back to revision 1's objects.
TEST_F(RsyncUpdateE2E, RollbackRestoresRevision1) {
  ASSERT_NO_FATAL_FAILURE(DeployRevision1());
  std::map<std::string, std::map<std::string, json>> before;
  for (const auto& n : names_) before[n] = Snapshot(n);
  ASSERT_NO_FATAL_FAILURE(UpdateToRevision2());
  for (const auto& n : names_) {
    ASSERT_TRUE(WaitUntil(
        [&] { return Names(n).count("ConfigMap/r1-new") && !Names(n).count("ConfigMap/r1-old"); },
        std::chrono::seconds(30)))
        << n;
    ASSERT_NE(Snapshot(n), before[n]) << n;  // revision 2 really is different
  }

  EcoClient c = eco_->client();
  Ok(c.PostJson(kDIG + "/rollback", json{{"spec", {{"revision", "1"}}}}), 202);
  ASSERT_TRUE(WaitStatus("status=ready", [&](const json& s) {
    return LastRevision(s) == 3 && LastInstance(s) == rev1_ &&
           s.value("deployedStatus", "") == "Instantiated" && s.value("readyStatus", "") == "Ready";
  })) << last_.dump();
  ASSERT_TRUE(WaitStatus("status=deployed&instance=" + rev2_, [](const json& s) {
    return s.value("deployedStatus", "") == "Updated";
  })) << last_.dump();
  for (const auto& n : names_) {
    EXPECT_TRUE(WaitUntil([&] { return Snapshot(n) == before[n]; }, std::chrono::seconds(30)))
        << n << ": now " << json(Snapshot(n)).dump() << "\nrevision 1: " << json(before[n]).dump();
  }
  json s = Status("status=deployed");
  EXPECT_EQ(s["deployedCounts"], json({{"Applied", 12}})) << s.dump();
}

}  // namespace
}  // namespace eco::testing
