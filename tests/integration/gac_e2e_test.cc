// Per-cluster customization the whole way: `eco serve` against a kube-sim
// fleet of three clusters, a chart deployed to all three with a generic K8s
// intent that scales the Deployment only on the clusters labelled `core`,
// adds a ConfigMap from an uploaded file everywhere and a Secret on one
// named cluster. kubectl, run against each cluster, must show exactly that;
// update and rollback carry the customizations; terminate removes it all; a
// patch that does not apply fails the instantiation and deploys nothing.
#include <gtest/gtest.h>

#include "context_builders.h"
#include "eco_fixture.h"
#include "kubectl.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";
const std::string kG = kDIG + "/generic-k8s-intents/custom";
const std::vector<std::string> kClusters = {"cluster-1", "cluster-2", "cluster-3"};


json KubectlJson(const std::string& kubeconfig, const std::string& args) {
  std::string out = Kubectl(kubeconfig, args + " -o json");
  return out.empty() ? json() : json::parse(out, nullptr, false);
}

class GacE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeSimOptions ko;
    ko.clusters = 3;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    eco_ = std::make_unique<EcoServer>(EcoOptions{});
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    c_ = std::make_unique<EcoClient>(eco_->client());
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  // Multipart through HTTP, as emcoctl sends it (metadata + "files"/"file").
  HttpResponse Multi(const std::string& path, const json& meta,
                     const std::vector<std::pair<std::string, std::string>>& files, const std::string& field) {
    std::vector<FormPart> parts = {{"metadata", meta.dump(), "", "application/json"}};
    for (const auto& [name, content] : files) parts.push_back({field, content, name, "application/octet-stream"});
    return c_->PostParts(path, parts);
  }

  bool WaitFor(const std::string& field, const std::string& want) {
    return WaitUntil(
        [&] {
          last_ = c_->Get(kDIG + "/status?status=" + (field == "readyStatus" ? "ready" : "deployed")).json();
          return last_.is_object() && last_.value(field, "") == want;
        },
        std::chrono::seconds(60));
  }

  void Fleet() {
    Ok(c_->PostJson("/v2/cluster-providers", Named("prov")));
    for (const auto& n : kClusters) {
      Ok(c_->PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), ReadFile(sim_->kubeconfig(n)),
                           "kubeconfig"));
      Ok(c_->PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels", json{{"clusterLabel", "edge"}}));
    }
    for (const char* n : {"cluster-1", "cluster-2"}) {
      Ok(c_->PostJson(std::string("/v2/cluster-providers/prov/clusters/") + n + "/labels", json{{"clusterLabel", "core"}}));
    }
    Ok(c_->PostJson("/v2/projects", Named("p")));
    Ok(c_->PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
    for (const auto& n : kClusters) {
      Ok(c_->PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                      Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c_->PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
    Ok(c_->PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c_->PostMultipart(kCA + "/apps", Named("web").dump(), ChartTgz("web")));
    Ok(c_->PostJson(kCA + "/composite-profiles", Named("cp")));
    Ok(c_->PostJson(kCA + "/deployment-intent-groups",
                    Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})));
    Ok(c_->PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
    Ok(c_->PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                    Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
    Ok(c_->PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}, {"gac", "custom"}}}})));
    Ok(c_->PostJson(kDIG + "/generic-k8s-intents", Named("custom")));
  }

  static json Scope(const std::string& scope, const std::string& what) {
    return {{"scope", scope}, {"clusterProvider", "prov"}, {scope == "name" ? "cluster" : "clusterLabel", what},
            {"mode", "allow"}};
  }

  void Customizations(int core_replicas) {
    Ok(Multi(kG + "/resources",
             Doc("scale", {{"app", "web"}, {"newObject", "false"},
                           {"resourceGVK", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "r1-web"}}}}),
             {}, "file"));
    Ok(Multi(kG + "/resources/scale/customizations",
             Doc("core", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("label", "core")}, {"patchType", "json"},
                          {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", core_replicas}}})}}),
             {}, "files"));
    Ok(Multi(kG + "/resources",
             Doc("settings", {{"app", "web"}, {"newObject", "true"},
                              {"resourceGVK", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "web-settings"}}}}),
             {}, "file"));
    Ok(Multi(kG + "/resources/settings/customizations",
             Doc("from-file", {{"clusterSpecific", "false"}, {"clusterInfo", Scope("label", "")},
                               {"configMapOptions", {{"dataKeyOptions", json::array({{{"fileName", "web.conf"}, {"keyName", "app.conf"}}})}}}}),
             {{"web.conf", "listen 8080\n"}}, "files"));
    Ok(Multi(kG + "/resources",
             Doc("creds", {{"app", "web"}, {"newObject", "true"},
                           {"resourceGVK", {{"apiVersion", "v1"}, {"kind", "Secret"}, {"name", "web-creds"}}}}),
             {}, "file"));
    Ok(Multi(kG + "/resources/creds/customizations",
             Doc("only-3", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("name", "cluster-3")}}),
             {{"token", "s3cret"}}, "files"));
  }

  // What kubectl shows on every cluster against what the intents ask.
  void ExpectClusters(int core_replicas) {
    for (const auto& n : kClusters) {
      const std::string kc = sim_->kubeconfig(n);
      json d = KubectlJson(kc, "get deployment r1-web -n default");
      ASSERT_TRUE(d.is_object()) << n;
      EXPECT_EQ(d["spec"]["replicas"], n == "cluster-3" ? 1 : core_replicas) << n;
      json cm = KubectlJson(kc, "get configmap web-settings -n default");
      ASSERT_TRUE(cm.is_object()) << n;
      EXPECT_EQ(cm["data"], json({{"app.conf", "listen 8080\n"}})) << n;
      std::string secret = Kubectl(kc, "get secret web-creds -n default -o jsonpath={.data.token}");
      EXPECT_EQ(secret, n == "cluster-3" ? "czNjcmV0" : "") << n;
    }
  }

  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::unique_ptr<EcoClient> c_;
  json last_;
};

TEST_F(GacE2E, ScaledOnLabelledClustersConfigMapEverywhereSecretOnOneAndKubectlShowsIt) {
  Fleet();
  Customizations(3);
  Ok(c_->PostJson(kDIG + "/approve", json::object()), 202);
  Ok(c_->PostJson(kDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor("deployedStatus", "Instantiated")) << last_.dump();
  ASSERT_TRUE(WaitFor("readyStatus", "Ready")) << last_.dump();
  ExpectClusters(3);

  // Update carries a changed customization; rollback brings revision 1 back.
  Ok(c_->PutJson(kG + "/resources/scale/customizations/core",
                 Doc("core", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("label", "core")}, {"patchType", "json"},
                              {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 4}}})}})),
     200);
  Ok(c_->PostJson(kDIG + "/update", json::object()), 202);
  ASSERT_TRUE(WaitUntil([&] { return KubectlJson(sim_->kubeconfig("cluster-1"), "get deployment r1-web -n default")
                                         .value("spec", json::object()).value("replicas", 0) == 4; },
                        std::chrono::seconds(60)));
  ASSERT_TRUE(WaitFor("deployedStatus", "Instantiated")) << last_.dump();
  ExpectClusters(4);
  Ok(c_->PostJson(kDIG + "/rollback", json{{"spec", {{"revision", "1"}}}}), 202);
  ASSERT_TRUE(WaitUntil([&] { return KubectlJson(sim_->kubeconfig("cluster-1"), "get deployment r1-web -n default")
                                         .value("spec", json::object()).value("replicas", 0) == 3; },
                        std::chrono::seconds(60)));
  ExpectClusters(3);

  Ok(c_->PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor("deployedStatus", "Terminated")) << last_.dump();
  for (const auto& n : kClusters) {
    EXPECT_EQ(Kubectl(sim_->kubeconfig(n), "get configmap web-settings -n default -o name"), "") << n;
    EXPECT_EQ(Kubectl(sim_->kubeconfig(n), "get secret web-creds -n default -o name"), "") << n;
    EXPECT_EQ(Kubectl(sim_->kubeconfig(n), "get deployment r1-web -n default -o name"), "") << n;
  }
}

TEST_F(GacE2E, APatchThatDoesNotApplyFailsTheInstantiationAndDeploysNothing) {
  Fleet();
  Customizations(3);
  Ok(Multi(kG + "/resources/scale/customizations",
           Doc("broken", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("name", "cluster-2")}, {"patchType", "json"},
                          {"patchJson", json::array({{{"op", "remove"}, {"path", "/spec/paused"}}})}}),
           {}, "files"));
  Ok(c_->PostJson(kDIG + "/approve", json::object()), 202);
  HttpResponse r = c_->PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 400) << r.Describe();
  for (std::string part : {"custom", "scale", "broken", "Deployment r1-web", "prov/cluster-2", "/spec/paused"}) {
    EXPECT_NE(r.body.find(part), std::string::npos) << part << " in " << r.body;
  }
  // Still approved, nothing on any cluster.
  json status = c_->Get(kDIG + "/status").json();
  json actions = status.is_object() ? status.value("states", json::object()).value("actions", json::array()) : json();
  ASSERT_TRUE(actions.is_array() && !actions.empty()) << status.dump();
  EXPECT_EQ(actions.back().value("state", ""), "Approved") << status.dump();
  for (const auto& n : kClusters) {
    EXPECT_EQ(Kubectl(sim_->kubeconfig(n), "get deployment r1-web -n default -o name"), "") << n;
    EXPECT_EQ(Kubectl(sim_->kubeconfig(n), "get configmap web-settings -n default -o name"), "") << n;
  }
}

}  // namespace
}  // namespace eco::testing
