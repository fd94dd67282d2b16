// Pull delivery through real processes on loopback: `eco serve` with its
// agent server, kube-sim, and `eco agent` in front of one cluster while
// another is pushed to. One composite app is deployed to both, compared
// object for object, and terminated; the bootstrap token buys one
// identity only, the identity survives a kill -9 of the agent, and a
// revoked cluster is refused.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "live_objects.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";
const std::string kLC = "/v2/projects/p/logical-clouds/admin";

class AgentE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeSimOptions ko;
    ko.clusters = 3;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    agent_port_ = FreePort();
    EcoOptions eo;
    eo.extra_args = {"--agent-port", std::to_string(agent_port_)};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    ASSERT_TRUE(WaitForPort(agent_port_, std::chrono::seconds(10))) << eco_->LogTail();
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    return ClientOfKubeconfig(sim_->kubeconfig(cluster));
  }

  // Registers `name` as an agent cluster and returns a bootstrap answer.
  json AgentCluster(const std::string& name) {
    EcoClient c = eco_->client();
    auto r = c.PostJson("/v2/cluster-providers/prov/clusters",
                        json{{"metadata", {{"name", name}}}, {"spec", {{"delivery", "agent"}}}});
    EXPECT_EQ(r.status, 201) << r.Describe();
    EXPECT_EQ(c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/labels", json{{"clusterLabel", "edge"}}).status,
              201);
    auto b = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/agent-bootstrap", json::object());
    EXPECT_EQ(b.status, 201) << b.Describe();
    return b.json();
  }

  std::unique_ptr<Process> StartAgent(const std::string& cluster, const std::string& hub, const std::string& token,
                                      const std::string& log) {
    std::vector<std::string> argv = {BinaryPath("eco"), "agent",       "--hub",  hub, "--kubeconfig",
                                     sim_->kubeconfig(cluster), "--workers", "4"};
    if (!token.empty()) {
      argv.push_back("--token");
      argv.push_back(token);
    }
    return std::make_unique<Process>(argv, dir_.path() + "/" + log);
  }

  bool WaitFor(const std::string& path, const std::string& field, const std::string& want) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(path).json();
          return last_.is_object() && last_.value(field, "") == want;
        },
        std::chrono::seconds(90));
  }

  TempDir dir_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  int agent_port_ = 0;
  json last_;
};

TEST_F(AgentE2E, MixedFleetDeploysTheSameObjectsBothWaysAndTerminates) {
  EcoClient c = eco_->client();
  Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
  const json boot = AgentCluster("cluster-1");
  ASSERT_TRUE(boot.contains("token") && boot.contains("hub") && boot.contains("expires")) << boot.dump();
  EXPECT_EQ(boot["hub"], "http://127.0.0.1:" + std::to_string(agent_port_));
  Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named("cluster-2").dump(),
                     ReadFile(sim_->kubeconfig("cluster-2")), "kubeconfig"));
  Ok(c.PostJson("/v2/cluster-providers/prov/clusters/cluster-2/labels", json{{"clusterLabel", "edge"}}));
  auto agent = StartAgent("cluster-1", boot["hub"], boot["token"], "agent-1.log");

  Ok(c.PostJson("/v2/projects", Named("p")));
  Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("admin", {{"level", "0"}})));
  for (const char* n : {"cluster-1", "cluster-2"})
    Ok(c.PostJson(kLC + "/cluster-references", Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
  Ok(c.PostJson(kLC + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kLC + "/status?status=deployed", "deployedStatus", "Instantiated"))
      << last_.dump() << "\n" << agent->ReadLog();

  Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
  // The chart's Deployment carries a field Deployments do not declare (a
  // typo, as users' charts do): both ways it deploys without it and says so.
  const std::string deployment =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n"
      "  replicas: {{ .Values.replicaCount }}\n  revisionHistoryLimt: 3\n  selector:\n    matchLabels:\n"
      "      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n"
      "      containers:\n        - name: web\n          image: nginx:stable\n";
  Ok(c.PostMultipart(kCA + "/apps", Named("web").dump(),
                     ChartTgzWithTemplates("web", "replicaCount: 1\n", {{"deployment.yaml", deployment}})));
  Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
  Ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles", Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz()));
  Ok(c.PostJson(kCA + "/deployment-intent-groups",
                Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "admin"}})));
  Ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
  Ok(c.PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
  Ok(c.PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
  Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  Ok(c.PostJson(kDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Instantiated"))
      << last_.dump() << "\n" << agent->ReadLog();
  ASSERT_EQ(last_["apps"][0]["clusters"].size(), 2u) << last_.dump();
  for (const auto& cl : last_["apps"][0]["clusters"]) {
    EXPECT_EQ(cl["resources"][0]["warnings"],
              json::array({"spec.revisionHistoryLimt: field not declared in schema, not applied"}))
        << cl.dump();
  }
  // Ready on both: the agent watches its cluster and reports as the ready
  // monitor does for the pushed one (per cluster: the Deployment, 2 Pods).
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=ready", "readyStatus", "Ready")) << last_.dump() << "\n" << agent->ReadLog();
  EXPECT_EQ(last_["readyCounts"].value("Ready", 0), 6) << last_.dump();
  // Both were heard from before they reported: the agent cluster by the
  // agent server, the pushed one by the ready monitor.
  for (const auto& cl : last_["apps"][0]["clusters"]) {
    EXPECT_TRUE(cl.contains("lastSeen")) << cl.dump();
    EXPECT_FALSE(cl.contains("stale")) << cl.dump();
  }
  auto k1 = Client("cluster-1"), k2 = Client("cluster-2");
  auto d1 = k1->Get("apps/v1", "Deployment", "default", "r1-web");
  auto d2 = k2->Get("apps/v1", "Deployment", "default", "r1-web");
  ASSERT_TRUE(d1.ok()) << d1.status().ToString() << "\n" << agent->ReadLog();
  ASSERT_TRUE(d2.ok()) << d2.status().ToString();
  EXPECT_EQ(Comparable(*d1), Comparable(*d2));
  EXPECT_EQ((*d1)["spec"]["replicas"], 2);  // the profile's value
  // Applied by the agent, with eco's field manager as push applies.
  bool by_eco = false;
  for (const auto& mf : (*d1)["metadata"]["managedFields"]) by_eco = by_eco || mf.value("manager", "") == "eco";
  EXPECT_TRUE(by_eco) << d1->dump();

  // Through the agent: enrolled with the token, one stream.
  const std::string log = agent->ReadLog();
  EXPECT_NE(log.find("connected to the hub as prov+cluster-1"), std::string::npos) << log;

  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Terminated"))
      << last_.dump() << "\n" << agent->ReadLog();
  EXPECT_EQ(k1->Get("apps/v1", "Deployment", "default", "r1-web").status().code(), Code::kNotFound);
  EXPECT_EQ(k2->Get("apps/v1", "Deployment", "default", "r1-web").status().code(), Code::kNotFound);
}

TEST_F(AgentE2E, TokenOnceIdentityKeptRevocationRefused) {
  EcoClient c = eco_->client();
  Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
  const json boot = AgentCluster("cluster-1");
  auto a = StartAgent("cluster-1", boot["hub"], boot["token"], "a.log");
  ASSERT_TRUE(WaitUntil([&] { return a->ReadLog().find("connected to the hub") != std::string::npos; },
                        std::chrono::seconds(30)))
      << a->ReadLog();
  // A thief with the same token on another cluster: refused (exit 3).
  AgentCluster("cluster-3");
  auto thief = StartAgent("cluster-3", boot["hub"], boot["token"], "thief.log");
  int ws = 0;
  ASSERT_TRUE(thief->Wait(std::chrono::seconds(30), &ws)) << thief->ReadLog();
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 3) << thief->ReadLog();

  // kill -9, then the original command line again: the kept identity is used.
  a->Kill(SIGKILL);
  auto again = StartAgent("cluster-1", boot["hub"], boot["token"], "again.log");
  ASSERT_TRUE(WaitUntil([&] { return again->ReadLog().find("connected to the hub") != std::string::npos; },
                        std::chrono::seconds(30)))
      << again->ReadLog();
  EXPECT_EQ(again->ReadLog().find("enrolled"), std::string::npos);

  // Revoked: the stream is closed at once and the agent gives up (exit 3).
  Ok(c.PostJson("/v2/cluster-providers/prov/clusters/cluster-1/agent-revoke", json::object()), 204);
  ASSERT_TRUE(again->Wait(std::chrono::seconds(30), &ws)) << again->ReadLog();
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 3) << again->ReadLog();
  // And stays refused when it comes back.
  auto late = StartAgent("cluster-1", boot["hub"], "", "late.log");
  ASSERT_TRUE(late->Wait(std::chrono::seconds(30), &ws)) << late->ReadLog();
  EXPECT_TRUE(WIFEXITED(ws) && WEXITSTATUS(ws) == 3) << late->ReadLog();
}

}  // namespace
}  // namespace eco::testing
