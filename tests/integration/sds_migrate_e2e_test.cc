// `eco serve` against a kube-sim fleet, for two EMCO behaviours:
//   * service discovery (EMCO's sds): a server cluster without a configured
//     address gets it read from its LoadBalancer / NodePort Service after
//     the server is deployed, and the client side (headless Service +
//     Endpoints) follows on the client cluster, also across a crash of eco;
//   * migrate: a deployed DIG moves to another composite app version's DIG;
//     the new version's objects replace the old ones, the old-only ones go.
#include <gtest/gtest.h>

#include <fstream>

#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kLC = "/v2/projects/p/logical-clouds/lc0";
const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";

// server-1 hands out an IP to LoadBalancers, server-2 only a host name (so
// its NodePort on the nodes' addresses serves), client-1 hosts the client.
const char kFleet[] = R"(clusters:
  - name: server-1
    loadBalancerPool: ["203.0.113.10"]
  - name: server-2
    loadBalancerPool: ["lb.server-2.example.net"]
    nodes:
      - name: n1
        addresses: [{type: InternalIP, address: 10.2.0.5}, {type: ExternalIP, address: 198.51.100.5}]
      - name: n2
        addresses: [{type: InternalIP, address: 10.2.0.6}]
  - name: client-1
)";

const char kServerDeployment[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: catalog
spec:
  replicas: 1
  selector:
    matchLabels: {app: catalog}
  template:
    metadata:
      labels: {app: catalog}
    spec:
      containers:
        - name: catalog
          image: catalog:1
)";

const char kServerService[] = R"(apiVersion: v1
kind: Service
metadata:
  name: catalog
spec:
  type: LoadBalancer
  selector: {app: catalog}
  ports:
    - port: 3550
      targetPort: 3550
)";

class SdsMigrateE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string fleet = dir_.path() + "/fleet.yaml";
    std::ofstream(fleet) << kFleet;
    KubeSimOptions ko;
    ko.fleet_file = fleet;
    // LoadBalancer ingress comes after this: long enough to see the wait.
    ko.ready_delay_ms = 5000;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    eco_ = std::make_unique<EcoServer>(EcoOptions{});
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    for (const char* n : {"server-1", "server-2", "client-1"}) {
      Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), ReadFile(sim_->kubeconfig(n)),
                         "kubeconfig"));
    }
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc0", {{"level", "0"}})));
    for (const char* n : {"server-1", "server-2", "client-1"}) {
      Ok(c.PostJson(kLC + "/cluster-references", Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c.PostJson(kLC + "/instantiate", json::object()), 202);
    ASSERT_TRUE(WaitFor(kLC + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  bool WaitFor(const std::string& path, const std::string& field, const std::string& want,
               std::chrono::seconds limit = std::chrono::seconds(60)) {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(path).json();
          return last_.is_object() && last_.value(field, "") == want;
        },
        limit);
  }

  std::unique_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok()) << rc.status().ToString();
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // A composite app version with `apps` (name -> chart), its profile and a
  // DIG `dig` (release r1, logical cloud lc0) placing each app as `where`
  // says (app -> clusters).
  void CompositeApp(const std::string& version, const std::string& dig,
                    const std::vector<std::pair<std::string, std::string>>& apps,
                    const std::map<std::string, std::vector<std::string>>& where, const json& intents) {
    EcoClient c = eco_->client();
    const std::string ca = "/v2/projects/p/composite-apps/ca/" + version;
    const std::string d = ca + "/deployment-intent-groups/" + dig;
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", version}})));
    for (const auto& [app, chart] : apps) Ok(c.PostMultipart(ca + "/apps", Named(app).dump(), chart));
    Ok(c.PostJson(ca + "/composite-profiles", Named("cp")));
    Ok(c.PostJson(ca + "/deployment-intent-groups",
                  Doc(dig, {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"}})));
    Ok(c.PostJson(d + "/generic-placement-intents", Named("gpi")));
    for (const auto& [app, clusters] : where) {
      json all = json::array();
      for (const auto& cl : clusters) all.push_back({{"clusterProvider", "prov"}, {"cluster", cl}});
      Ok(c.PostJson(d + "/generic-placement-intents/gpi/app-intents",
                    Doc(app + "-pl", {{"app", app}, {"intent", {{"allOf", all}}}})));
    }
    Ok(c.PostJson(d + "/intents", Doc("i", {{"intent", intents}})));
  }

  TempDir dir_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  json last_;
};

TEST_F(SdsMigrateE2E, ClientSideFollowsTheServersDiscoveredAddressAcrossACrash) {
  CompositeApp("v1", "dig",
               {{"catalog", ChartTgzWithTemplates("catalog", "{}\n",
                                                  {{"deployment.yaml", kServerDeployment}, {"service.yaml", kServerService}})},
                {"frontend", ChartTgz("frontend")}},
               {{"catalog", {"server-1", "server-2"}}, {"frontend", {"client-1"}}},
               {{"genericPlacementIntent", "gpi"}, {"dtc", "tg1"}});
  EcoClient c = eco_->client();
  const std::string T = kDIG + "/traffic-group-intents";
  Ok(c.PostJson(T, Named("tg1")));
  Ok(c.PostJson(T + "/tg1/inbound-intents",
                Doc("catalog-server", {{"app", "catalog"}, {"appLabel", "app=catalog"}, {"serviceName", "catalog"},
                                       {"port", 3550}, {"protocol", "TCP"}})));
  Ok(c.PostJson(T + "/tg1/inbound-intents/catalog-server/clients",
                Doc("frontend", {{"app", "frontend"}, {"appLabel", "app=frontend"}, {"serviceName", "frontend"},
                                 {"namespaces", json::array()}, {"cidrs", json::array()}})));
  Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  // No server cluster has an address kv-pair: accepted all the same.
  Ok(c.PostJson(kDIG + "/instantiate", json::object()), 202);

  // The status says what the client side waits for, while the
  // LoadBalancers have no ingress yet.
  ASSERT_TRUE(WaitUntil(
      [&] {
        last_ = c.Get(kDIG + "/status?status=deployed").json();
        return last_.dump().find("waiting: Service default/catalog on server cluster prov+server-") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << last_.dump();
  EXPECT_EQ(last_.value("deployedStatus", ""), "Instantiating") << last_.dump();
  auto client = Client("client-1");
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(client->Get("apps/v1", "Deployment", "default", "r1-frontend").ok());
  EXPECT_EQ(client->Get("v1", "Endpoints", "default", "catalog").status().code(), Code::kNotFound);

  // eco dies while the client side waits; its successor finishes it.
  ASSERT_TRUE(eco_->Restart()) << eco_->error();
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();

  auto server2 = Client("server-2");
  auto svc2 = server2->Get("v1", "Service", "default", "catalog");
  ASSERT_TRUE(svc2.ok()) << svc2.status().ToString();
  const int node_port = (*svc2)["spec"]["ports"][0]["nodePort"];
  EXPECT_EQ((*svc2)["status"]["loadBalancer"]["ingress"][0]["hostname"], "lb.server-2.example.net");
  auto ep = client->Get("v1", "Endpoints", "default", "catalog");
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  json want = {{{"addresses", {{{"ip", "203.0.113.10"}}}}, {"ports", {{{"name", "tcp"}, {"port", 3550}, {"protocol", "TCP"}}}}},
               {{"addresses", {{{"ip", "198.51.100.5"}}, {{"ip", "10.2.0.6"}}}},
                {"ports", {{{"name", "tcp"}, {"port", node_port}, {"protocol", "TCP"}}}}}};
  EXPECT_EQ((*ep)["subsets"], want) << ep->dump();
  auto headless = client->Get("v1", "Service", "default", "catalog");
  ASSERT_TRUE(headless.ok()) << headless.status().ToString();
  EXPECT_EQ((*headless)["spec"]["clusterIP"], "None");
  // Nothing on the server clusters but the server.
  EXPECT_EQ(server2->Get("v1", "Endpoints", "default", "frontend").status().code(), Code::kNotFound);

  Ok(c.PostJson(kDIG + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Terminated")) << last_.dump();
  EXPECT_EQ(client->Get("v1", "Endpoints", "default", "catalog").status().code(), Code::kNotFound);
  EXPECT_EQ(client->Get("v1", "Service", "default", "catalog").status().code(), Code::kNotFound);
  EXPECT_EQ(server2->Get("v1", "Service", "default", "catalog").status().code(), Code::kNotFound);
}

TEST_F(SdsMigrateE2E, MigrateMovesObjectsToTheNewVersionAndRemovesTheOldOnes) {
  const std::map<std::string, std::vector<std::string>> on_client = {{"web", {"client-1"}}, {"old", {"client-1"}}};
  CompositeApp("v1", "dig", {{"web", ChartTgz("web")}, {"old", ChartTgz("old")}}, on_client,
               {{"genericPlacementIntent", "gpi"}});
  EcoClient c = eco_->client();
  Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  Ok(c.PostJson(kDIG + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(kDIG + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();
  auto k = Client("client-1");
  ASSERT_TRUE(k->Get("apps/v1", "Deployment", "default", "r1-old").ok());

  // Version v2: web with three replicas, `old` gone, `new` added.
  const char web3[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: r1-web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:stable
)";
  CompositeApp("v2", "dig2", {{"web", ChartTgzWithTemplates("web", "{}\n", {{"deployment.yaml", web3}})}, {"new", ChartTgz("new")}},
               {{"web", {"client-1"}}, {"new", {"client-1"}}}, {{"genericPlacementIntent", "gpi"}});
  const std::string DIG2 = "/v2/projects/p/composite-apps/ca/v2/deployment-intent-groups/dig2";
  const json body = {{"spec", {{"targetCompositeAppVersion", "v2"}, {"targetDeploymentIntentGroup", "dig2"}}}};
  // The target must be approved first.
  EXPECT_EQ(c.PostJson(kDIG + "/migrate", body).status, 409);
  Ok(c.PostJson(DIG2 + "/approve", json::object()), 202);
  Ok(c.PostJson(kDIG + "/migrate", body), 202);
  ASSERT_TRUE(WaitFor(DIG2 + "/status?status=deployed", "deployedStatus", "Instantiated")) << last_.dump();
  EXPECT_EQ(last_["states"]["actions"].back()["state"], "Instantiated") << last_.dump();
  // The old-only objects are deleted by the update-delete that follows.
  ASSERT_TRUE(WaitUntil([&] { return k->Get("apps/v1", "Deployment", "default", "r1-old").status().code() == Code::kNotFound; },
                        std::chrono::seconds(30)));
  auto web = k->Get("apps/v1", "Deployment", "default", "r1-web");
  ASSERT_TRUE(web.ok()) << web.status().ToString();
  EXPECT_EQ((*web)["spec"]["replicas"], 3);
  EXPECT_EQ((*web)["metadata"]["annotations"]["app.eco.io/owner"], "dig:p/ca/v2/dig2");
  auto added = k->Get("apps/v1", "Deployment", "default", "r1-new");
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  json src = c.Get(kDIG + "/status?status=deployed").json();
  EXPECT_EQ(src["states"]["actions"].back()["state"], "Updated") << src.dump();

  // The target owns everything now: its terminate leaves the cluster clean.
  Ok(c.PostJson(DIG2 + "/terminate", json::object()), 202);
  ASSERT_TRUE(WaitFor(DIG2 + "/status?status=deployed", "deployedStatus", "Terminated")) << last_.dump();
  for (const char* d : {"r1-web", "r1-new", "r1-old"}) {
    EXPECT_EQ(k->Get("apps/v1", "Deployment", "default", d).status().code(), Code::kNotFound) << d;
  }
}

}  // namespace
}  // namespace eco::testing
