// The whole way: `eco serve` on its embedded store against a kube-sim fleet.
// A standard (level-1) logical cloud is instantiated onto the clusters, a DIG
// deploys into its namespace until the clusters report every resource Ready,
// and both are terminated again, leaving the clusters clean.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;


const std::string kLC = "/v2/projects/p/logical-clouds/tenant-cloud";
const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";

class DeployE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeSimOptions ko;
    ko.clusters = 2;
    ko.tls = true;  // kubeconfigs with a CA and a token: the log must show neither
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    eco_ = std::make_unique<EcoServer>(EcoOptions{});
    ASSERT_TRUE(eco_->ready()) << eco_->error();
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  // Waits until `path` (a status query) shows `field` == `want`.
  bool WaitFor(const std::string& path, const std::string& field, const std::string& want) {
    EcoClient c = eco_->client();
    bool ok = WaitUntil(
        [&] {
          last_ = c.Get(path).json();
          return last_.is_object() && last_.value(field, "") == want;
        },
        std::chrono::seconds(60));
    return ok;
  }

  std::unique_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok()) << rc.status().ToString();
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  json last_;
};

TEST_F(DeployE2E, StandardLogicalCloudAndDigReachReadyAndLeaveCleanly) {
  EcoClient c = eco_->client();
  Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
  for (const char* n : {"cluster-1", "cluster-2"}) {
    Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), ReadFile(sim_->kubeconfig(n)),
                       "kubeconfig"));
    Ok(c.PostJson(std::string("/v2/cluster-providers/prov/clusters/") + n + "/labels", json{{"clusterLabel", "edge"}}));
  }
  Ok(c.PostJson("/v2/projects", Named("p")));
  Ok(c.PostJson("/v2/projects/p/logical-clouds",
                Doc("tenant-cloud", {{"level", "1"}, {"namespace", "tenant"}, {"user", {{"userName", "alice"}, {"type", "certificate"}}}})));
  for (const char* n : {"cluster-1", "cluster-2"}) {
    Ok(c.PostJson(kLC + "/cluster-references", Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
  }
  Ok(c.PostJson(kLC + "/user-permissions",
                Doc("tenant-admin", {{"namespace", "tenant"}, {"apiGroups", {"", "apps"}}, {"resources", {"*"}}, {"verbs", {"*"}}})));
  Ok(c.PostJson(kLC + "/cluster-quotas", Doc("quota", {{"pods", "50"}})));
  Ok(c.PostJson(kLC + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kLC + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"}) {
    auto k = Client(n);
    ASSERT_NE(k, nullptr);
    EXPECT_TRUE(k->Get("v1", "Namespace", "", "tenant").ok()) << n;
    EXPECT_TRUE(k->Get("v1", "ResourceQuota", "tenant", "quota").ok()) << n;
    EXPECT_TRUE(k->Get("rbac.authorization.k8s.io/v1", "RoleBinding", "tenant", "tenant-admin").ok()) << n;
    EXPECT_TRUE(k->Get("v1", "ServiceAccount", "tenant", "alice").ok()) << n;
  }
  // The cloud's objects carry eco's labels, so the ready monitor sees them.
  ASSERT_TRUE(WaitFor(kLC + "/status?status=ready", "readyStatus", "Ready")) << last_.dump();

  Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
  Ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), ChartTgz("web")));
  Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
  Ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles", Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz()));
  Ok(c.PostJson(kCA + "/deployment-intent-groups",
                Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "tenant-cloud"}})));
  Ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
  Ok(c.PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
  Ok(c.PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
  Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  Ok(c.PostJson(kDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=ready", "readyStatus", "Ready")) << last_.dump();
  // Per cluster: the Deployment and its two Pods (listed as cluster-only objects).
  EXPECT_EQ(last_["readyCounts"].value("Ready", 0), 6) << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"}) {
    auto k = Client(n);
    auto d = k->Get("apps/v1", "Deployment", "tenant", "r1-web");
    ASSERT_TRUE(d.ok()) << n << ": " << d.status().ToString();
    EXPECT_EQ((*d)["spec"]["replicas"], 2);  // the profile's value
  }

  // The logical cloud cannot go while the DIG is deployed in it.
  EXPECT_EQ(c.PostJson(kLC + "/terminate", json::object()).status, 409);
  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Terminated")) << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"}) {
    auto k = Client(n);
    EXPECT_EQ(k->Get("apps/v1", "Deployment", "tenant", "r1-web").status().code(), Code::kNotFound) << n;
  }
  Ok(c.PostJson(kLC + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kLC + "/status?status=deployed", "deployedStatus", "Terminated")) << last_.dump();
  for (const char* n : {"cluster-1", "cluster-2"}) {
    auto k = Client(n);
    EXPECT_EQ(k->Get("v1", "ResourceQuota", "tenant", "quota").status().code(), Code::kNotFound) << n;
    // Terminated means gone: the namespace terminates a while, and is waited for.
    EXPECT_EQ(k->Get("v1", "Namespace", "", "tenant").status().code(), Code::kNotFound) << n;
  }

  // Every line eco wrote is a JSON object fluentd can read, with the
  // standard keys, an access-log line per request, and no credential.
  std::vector<std::string> secrets;
  for (const char* n : {"cluster-1", "cluster-2"}) {
    std::istringstream kc(ReadFile(sim_->kubeconfig(n)));
    for (std::string line; std::getline(kc, line);) {
      for (const char* key : {"token:", "-data:"}) {
        auto at = line.find(key);
        if (at == std::string::npos) continue;
        std::string v = line.substr(at + std::strlen(key));
        v.erase(0, v.find_first_not_of(" \"'"));
        if (v.size() > 32) v.resize(32);
        if (v.size() >= 16) secrets.push_back(v);
      }
    }
  }
  ASSERT_GE(secrets.size(), 4u) << "the kubeconfigs should carry a CA and a token each";
  // Up to the last newline: eco may be writing a line as the file is read.
  std::string text = eco_->Log();
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::istringstream log(text);
  size_t lines = 0, access = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.empty()) continue;
    ++lines;
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << "not a JSON object: " << line;
    for (const char* key : {"time", "level", "component", "message"}) {
      EXPECT_TRUE(j.contains(key) && j[key].is_string()) << key << " missing: " << line;
    }
    if (j.value("message", "") == "request") {
      ++access;
      for (const char* key : {"method", "route", "path", "status", "duration_ms"})
        EXPECT_TRUE(j.contains(key)) << key << " missing: " << line;
    }
    for (const auto& secret : secrets) EXPECT_EQ(line.find(secret), std::string::npos) << "a credential in: " << line;
    EXPECT_EQ(line.find("PRIVATE KEY"), std::string::npos) << line;
  }
  EXPECT_GT(lines, 0u);
  EXPECT_GE(access, 15u);  // the requests above, status polls included
}

// gRPC's own messages are eco's log lines too: a second eco given a taken
// agent port stops, and says why in JSON (gRPC's plain text once broke
// the log).
TEST(EcoLog, GrpcMessagesAreJsonLines) {
  EcoOptions o;
  o.extra_args = {"--agent-port", std::to_string(FreePort())};
  o.ready_timeout = std::chrono::seconds(5);
  EcoServer first(o);
  ASSERT_TRUE(first.ready()) << first.error();
  EcoServer second(o);
  ASSERT_FALSE(second.ready());
  std::string text = second.Log();
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  std::istringstream log(text);
  bool grpc_said = false, eco_said = false;
  for (std::string line; std::getline(log, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    grpc_said = grpc_said || j.value("component", "") == "grpc";
    eco_said = eco_said || j.value("message", "").find("cannot listen on") != std::string::npos;
  }
  EXPECT_TRUE(grpc_said) << text;
  EXPECT_TRUE(eco_said) << text;
}

}  // namespace
}  // namespace eco::testing
