// Drift of push clusters (DIG spec.driftPolicy, docs/rollouts.md#drift)
// the whole way: `eco serve` deploys to a kube-sim cluster, real kubectl
// changes and deletes what it deployed, and the deployed status says so
// (report) or the objects come back (enforce).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "context_builders.h"
#include "eco_fixture.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kDriftCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDriftDIG = kDriftCA + "/deployment-intent-groups/dig";

std::string DriftKubectl(const std::string& kubeconfig, const std::string& args) {
  std::string cmd = std::string(ECO_KUBECTL) + " --kubeconfig " + kubeconfig + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
  return out;
}

// A Deployment of two replicas and a ConfigMap.
std::string DriftChart() {
  return ChartTgzWithTemplates(
      "web", "",
      {{"deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\n"
        "  labels: {tier: front}\nspec:\n"
        "  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
        "      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.25\n"},
       {"configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\ndata:\n  app.conf: \"listen 8080\"\n"}});
}

class DriftE2E : public ::testing::Test {
 protected:
  void Deploy(const std::string& policy) {
    KubeSimOptions ko;
    ko.clusters = 1;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    eco_ = std::make_unique<EcoServer>(EcoOptions{});
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    kc_ = sim_->kubeconfig("cluster-1");
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named("cluster-1").dump(), ReadFile(kc_),
                       "kubeconfig"));
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
    Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                  Doc("r1", {{"clusterProvider", "prov"}, {"cluster", "cluster-1"}})));
    Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kDriftCA + "/apps", Named("web").dump(), DriftChart()));
    Ok(c.PostJson(kDriftCA + "/composite-profiles", Named("cp")));
    json spec = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};
    // Anything but report or enforce is refused, naming the field.
    spec["driftPolicy"] = "fix";
    auto bad = c.PostJson(kDriftCA + "/deployment-intent-groups", Doc("dig", spec));
    ASSERT_EQ(bad.status, 400) << bad.Describe();
    EXPECT_NE(bad.body.find("spec.driftPolicy"), std::string::npos) << bad.body;
    if (policy.empty()) {
      spec.erase("driftPolicy");
    } else {
      spec["driftPolicy"] = policy;
    }
    Ok(c.PostJson(kDriftCA + "/deployment-intent-groups", Doc("dig", spec)));
    Ok(c.PostJson(kDriftDIG + "/generic-placement-intents", Named("gpi")));
    Ok(c.PostJson(kDriftDIG + "/generic-placement-intents/gpi/app-intents",
                  Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "cluster-1"}}}}}}})));
    Ok(c.PostJson(kDriftDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
    Ok(c.PostJson(kDriftDIG + "/approve", json::object()), 202);
    Ok(c.PostJson(kDriftDIG + "/instantiate", json::object()), 202);
    ASSERT_TRUE(WaitStatus([](const json& s) {
      return s.value("deployedStatus", "") == "Instantiated" && s.contains("deployedCounts") &&
             s["deployedCounts"].value("Applied", 0) == 2;
    })) << last_.dump() << eco_->LogTail();
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  bool WaitStatus(const std::function<bool(const json&)>& pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(kDriftDIG + "/status?status=deployed").json();
          return last_.is_object() && pred(last_);
        },
        limit);
  }

  // The resource entry `name` of the last status read (null when absent).
  json Resource(const std::string& name) const {
    if (!last_.contains("apps")) return json();
    for (const auto& a : last_["apps"]) {
      for (const auto& cl : a["clusters"]) {
        for (const auto& r : cl["resources"]) {
          if (r.value("name", "") == name) return r;
        }
      }
    }
    return json();
  }

  std::string Live(const std::string& args) { return DriftKubectl(kc_, args); }

  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::string kc_;
  json last_;
};

// report (the default): a label added by hand is not drift; a managed
// field changed and an object deleted are reported with paths, values and
// the manager, and left as they are.
TEST_F(DriftE2E, ReportNamesTheChangedFieldAndTheDeletedObjectAndRepairsNothing) {
  ASSERT_NO_FATAL_FAILURE(Deploy(""));
  // First an unmanaged change, then a managed one on the same object: the
  // watch delivers them in order, so when the second shows the first was
  // judged already.
  std::string out = Live("label deployment r1-web -n default added-by=hand");
  ASSERT_NE(out.find("labeled"), std::string::npos) << out;
  ASSERT_NE(Live("patch deployment r1-web -n default -p '{\"spec\":{\"replicas\":5}}'").find("patched"),
            std::string::npos);
  ASSERT_TRUE(WaitStatus([&](const json&) { return Resource("r1-web").value("deployedStatus", "") == "Drifted"; }))
      << last_.dump() << eco_->LogTail();
  json web = Resource("r1-web");
  ASSERT_TRUE(web["drift"].is_object()) << web.dump();
  EXPECT_EQ(web["drift"]["deleted"], false);
  EXPECT_FALSE(web["drift"].value("since", "").empty());
  ASSERT_EQ(web["drift"]["fields"].size(), 1u) << web.dump();  // not the hand-made label
  json f = web["drift"]["fields"][0];
  EXPECT_EQ(f["path"], "spec.replicas");
  EXPECT_EQ(f["desired"], 2);
  EXPECT_EQ(f["live"], 5);
  EXPECT_EQ(f.value("manager", ""), "kubectl-patch") << f.dump();

  ASSERT_NE(Live("delete configmap web-settings -n default").find("deleted"), std::string::npos);
  ASSERT_TRUE(WaitStatus([&](const json& s) {
    return Resource("web-settings").value("deployedStatus", "") == "Drifted" &&
           s["deployedCounts"].value("Drifted", 0) == 2;
  })) << last_.dump();
  EXPECT_EQ(Resource("web-settings")["drift"]["deleted"], true);
  EXPECT_FALSE(last_["deployedCounts"].contains("Applied")) << last_.dump();
  // Nothing was applied again.
  EXPECT_FALSE(Resource("r1-web")["drift"].contains("repairs"));
  EXPECT_EQ(Live("get deployment r1-web -n default -o jsonpath={.spec.replicas}"), "5");
  EXPECT_NE(Live("get configmap web-settings -n default").find("NotFound"), std::string::npos);
  const std::string log = eco_->Log();
  EXPECT_NE(log.find("drift detected"), std::string::npos);
  EXPECT_EQ(log.find("drift repaired"), std::string::npos);

  // Put back by hand: no longer drifted.
  ASSERT_NE(Live("patch deployment r1-web -n default -p '{\"spec\":{\"replicas\":2}}'").find("patched"),
            std::string::npos);
  ASSERT_TRUE(WaitStatus([&](const json&) { return Resource("r1-web").value("deployedStatus", "") == "Applied"; }))
      << last_.dump();
}

// enforce: the changed field and the deleted object are applied again
// within seconds, and the repairs are counted in the status.
TEST_F(DriftE2E, EnforceAppliesTheChangedAndTheDeletedObjectAgain) {
  ASSERT_NO_FATAL_FAILURE(Deploy("enforce"));
  ASSERT_NE(Live("patch deployment r1-web -n default -p '{\"spec\":{\"replicas\":5}}'").find("patched"),
            std::string::npos);
  ASSERT_TRUE(WaitStatus([&](const json&) {
    json r = Resource("r1-web");
    return r.value("deployedStatus", "") == "Applied" && r.contains("drift") && r["drift"].value("repairs", 0) == 1;
  })) << last_.dump() << eco_->LogTail();
  EXPECT_EQ(Live("get deployment r1-web -n default -o jsonpath={.spec.replicas}"), "2");
  EXPECT_FALSE(Resource("r1-web")["drift"].value("lastRepair", "").empty());

  ASSERT_NE(Live("delete configmap web-settings -n default").find("deleted"), std::string::npos);
  ASSERT_TRUE(WaitStatus([&](const json&) {
    json r = Resource("web-settings");
    return r.value("deployedStatus", "") == "Applied" && r.contains("drift") && r["drift"].value("repairs", 0) == 1;
  })) << last_.dump() << eco_->LogTail();
  EXPECT_EQ(Live("get configmap web-settings -n default -o 'jsonpath={.data.app\\.conf}'"), "listen 8080");
  EXPECT_NE(eco_->Log().find("drift repaired"), std::string::npos);
  EXPECT_EQ(last_["deployedCounts"].value("Drifted", 0), 0) << last_.dump();

  // A field slim watch events do not show (the pod template): found by
  // the generation moving on, read, and set back.
  std::string out = Live("set image deployment/r1-web -n default web=nginx:evil");
  ASSERT_NE(out.find("image updated"), std::string::npos) << out;
  ASSERT_TRUE(WaitStatus([&](const json&) {
    json r = Resource("r1-web");
    return r.value("deployedStatus", "") == "Applied" && r.contains("drift") && r["drift"].value("repairs", 0) == 2;
  })) << last_.dump() << eco_->LogTail();
  EXPECT_EQ(Live("get deployment r1-web -n default -o 'jsonpath={.spec.template.spec.containers[0].image}'"),
            "nginx:1.25");
}

}  // namespace
}  // namespace eco::testing
