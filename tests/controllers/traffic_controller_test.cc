// The traffic (dtc) controller against a real embedded store: intents and
// clusters are written with catalog keys, the AppContext with Contexts, and
// the test reads back what each app/cluster will deploy.
#include "controllers/traffic/traffic.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "controllers/traffic/traffic_resources.h"
#include "context_builders.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::controllers {
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

json Deployment(const std::string& name) {
  return {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", {{"name", name}}}};
}

// Records the calls made to a sub-controller.
struct SubCall {
  std::string name, context, intent, update_from;
};

class FakeSub : public Controller {
 public:
  FakeSub(std::string name, std::vector<SubCall>* calls, bool fail)
      : name_(std::move(name)), calls_(calls), fail_(fail) {}
  Status UpdateAppContext(const std::string& ctx, const std::string& intent,
                          const std::string& from) override {
    calls_->push_back({name_, ctx, intent, from});
    return fail_ ? Unavailable("sub-controller " + name_ + " is down") : Status::Ok();
  }

 private:
  std::string name_;
  std::vector<SubCall>* calls_;
  bool fail_;
};

class TrafficTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
    Put("trafficGroupIntent", K({"tg1"}), Doc("tg1", json::object()));
  }

  void Put(const std::string& type, const catalog::Keys& k, const json& body) {
    ASSERT_TRUE(st_->Put(catalog::ObjectKey(type, k), body.dump()).ok());
  }

  void Cluster(const std::string& name, std::vector<std::string> labels = {},
               json kv = json::array()) {
    Put("cluster", {"prov", name}, Doc(name, json::object()));
    for (const auto& l : labels) Put("clusterLabel", {"prov", name, l}, {{"clusterLabel", l}});
    if (!kv.empty()) Put("clusterKv", {"prov", name, "kv1"}, Doc("kv1", {{"kv", kv}}));
  }

  // Istio gateway kv-pairs of a server cluster.
  static json IstioKv(const std::string& addr) {
    return json::array({{{"istioIngressGatewayAddress", addr}},
                        {{"istioIngressGatewayPort", "32001"}},
                        {{"istioIngressGatewayInternalPort", "15443"}},
                        {{"istioIngressGatewayHttpsPort", "32443"}}});
  }

  void Server(const std::string& name, json spec_extra = json::object()) {
    json spec = {{"app", "srv"}, {"appLabel", "app=catalog"}, {"serviceName", "catalog"},
                 {"port", 3550}, {"protocol", "TCP"}, {"externalSupport", false}};
    spec.update(spec_extra);
    Put("inboundServerIntent", K({"tg1", name}), Doc(name, spec));
  }

  void Client(const std::string& server, const std::string& name, const std::string& app,
              json cidrs = json::array()) {
    Put("inboundClientsIntent", K({"tg1", server, name}),
        Doc(name, {{"app", app}, {"appLabel", "app=" + app}, {"serviceName", app},
                   {"namespaces", json::array()}, {"cidrs", cidrs}}));
  }

  // A context with the apps `srv` and `cli` on the given clusters.
  std::string Context(const std::vector<std::string>& srv, const std::vector<std::string>& cli) {
    appcontext::Meta m = eco::testing::DigMeta("ns1");
    m.app_order = {"srv", "cli"};
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ResourceSet s;
    s.resources.push_back({"catalog+Deployment", Deployment("catalog")});
    EXPECT_TRUE(ctx_->PutApp(*id, "srv", s, eco::testing::MandatoryClusters(srv)).ok());
    ResourceSet c;
    c.resources.push_back({"frontend+Deployment", Deployment("frontend")});
    EXPECT_TRUE(ctx_->PutApp(*id, "cli", c, eco::testing::MandatoryClusters(cli)).ok());
    return *id;
  }

  ResourceSet Res(const std::string& id, const std::string& app, const std::string& cluster) {
    auto rs = ctx_->Resources(id, app, "prov+" + cluster);
    EXPECT_TRUE(rs.ok()) << rs.status().ToString();
    return rs.ok() ? *rs : ResourceSet{};
  }

  std::vector<std::string> Names(const std::string& id, const std::string& app,
                                 const std::string& cluster) {
    std::vector<std::string> out;
    for (const auto& r : Res(id, app, cluster).resources) out.push_back(r.name);
    return out;
  }

  json Obj(const std::string& id, const std::string& app, const std::string& cluster,
           const std::string& name) {
    ResourceSet rs = Res(id, app, cluster);
    const appcontext::Resource* r = rs.Find(name);
    EXPECT_NE(r, nullptr) << name << " missing on " << app << "/" << cluster;
    return r ? r->object : json();
  }

  size_t Variants(const std::string& id, const std::string& app) {
    auto r = st_->Range(appcontext::ContextPrefix(id) + "app/" + app + "/variant/");
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->kvs.size() : 0;
  }

  Status Run(const std::string& id, SubControllerFactory f = {}) {
    TrafficController tc(*st_, std::move(f));
    return tc.UpdateAppContext(id, "tg1", "");
  }

  using Names_ = std::vector<std::string>;

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
};

TEST_F(TrafficTest, NetworkPolicyOnlyOnLabelledServerClusters) {
  Cluster("s1", {"networkpolicy-supported"});
  Cluster("s2");
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli", json::array({"10.1.0.0/16"}));
  std::string id = Context({"s1", "s2"}, {"s1", "s2"});  // clients beside the server: no discovery
  ASSERT_TRUE(Run(id).ok());

  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment", "tg1-catalog-server+NetworkPolicy"}));
  EXPECT_EQ(Names(id, "srv", "s2"), (Names_{"catalog+Deployment"}));
  EXPECT_EQ(Names(id, "cli", "s1"), (Names_{"frontend+Deployment"}));

  json np = Obj(id, "srv", "s1", "tg1-catalog-server+NetworkPolicy");
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["metadata"]["namespace"], "ns1");
  EXPECT_EQ(np["spec"]["podSelector"]["matchLabels"], (json{{"app", "catalog"}}));
  EXPECT_EQ(np["spec"]["policyTypes"], json::array({"Ingress"}));
  json ingress = np["spec"]["ingress"][0];
  EXPECT_EQ(ingress["ports"], json::parse(R"([{"protocol":"TCP","port":3550}])"));
  EXPECT_EQ(ingress["from"], json::parse(R"([{"podSelector":{"matchLabels":{"app":"cli"}}},
                                             {"ipBlock":{"cidr":"10.1.0.0/16"}}])"));
  // EMCO adds ipBlock 0.0.0.0/0 when externalSupport is false; eco does not.
  EXPECT_EQ(np.dump().find("0.0.0.0/0"), std::string::npos);
}

TEST_F(TrafficTest, NoClientsNoNetworkPolicy) {
  Cluster("s1", {"networkpolicy-supported"});
  Server("catalog-server");
  std::string id = Context({"s1"}, {"s1"});
  ASSERT_TRUE(Run(id).ok());
  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment"}));
}

TEST_F(TrafficTest, ServiceDiscoveryOnlyOnRemoteClientClusters) {
  Cluster("s1", {}, json::array({{{"serviceDiscoveryAddress", "10.0.0.1"}},
                                 {{"istioIngressGatewayAddress", "10.9.9.9"}}}));
  Cluster("s2", {}, json::array({{{"istioIngressGatewayAddress", "10.0.0.2"}}}));
  Cluster("s3");
  Put("clusterReference", {"p", "lc", "ref3"},
      Doc("ref3", {{"clusterProvider", "prov"}, {"cluster", "s3"}, {"loadBalancerIP", "10.0.0.3"}}));
  for (auto c : {"c1", "c2"}) Cluster(c);
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1", "s2", "s3"}, {"s1", "c1", "c2"});
  ASSERT_TRUE(Run(id).ok());

  EXPECT_EQ(Names(id, "cli", "s1"), (Names_{"frontend+Deployment"}));
  for (auto c : {"c1", "c2"}) {
    EXPECT_EQ(Names(id, "cli", c),
              (Names_{"frontend+Deployment", "catalog+Service", "catalog+Endpoints"}));
  }
  for (auto c : {"s1", "s2", "s3"}) EXPECT_EQ(Names(id, "srv", c), (Names_{"catalog+Deployment"}));

  json svc = Obj(id, "cli", "c1", "catalog+Service");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 3550);
  EXPECT_EQ(svc["metadata"]["namespace"], "ns1");
  json ep = Obj(id, "cli", "c2", "catalog+Endpoints");
  EXPECT_EQ(ep["subsets"][0]["addresses"],
            json::parse(R"([{"ip":"10.0.0.1"},{"ip":"10.0.0.2"},{"ip":"10.0.0.3"}])"));
  EXPECT_EQ(ep["subsets"][0]["ports"][0]["port"], 3550);
  EXPECT_EQ(ep["subsets"][0]["ports"][0]["name"], svc["spec"]["ports"][0]["name"]);
  // Labelled with the deployment's context, as chart objects are: the ready
  // monitor finds them on the clusters by that label.
  EXPECT_EQ(svc["metadata"]["labels"]["app.eco.io/context"], id);
  EXPECT_EQ(ep["metadata"]["labels"]["app.eco.io/context"], id);
  EXPECT_EQ(ep["metadata"]["labels"]["app.eco.io/app"], "cli");
}

TEST_F(TrafficTest, ServerClusterWithoutAddressIsAnErrorAndChangesNothing) {
  Cluster("s1", {"networkpolicy-supported"});
  Cluster("c1");
  Put("clusterReference", {"p", "lc", "ref1"},
      Doc("ref1", {{"clusterProvider", "prov"}, {"cluster", "s1"}, {"loadBalancerIP", "0.0.0.0"}}));
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1"}, {"c1"});
  Status s = Run(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("prov+s1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NodePort or LoadBalancer"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the app has no such Service"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("serviceDiscoveryAddress"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("istioIngressGatewayAddress"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("loadBalancerIP"), std::string::npos) << s.message();
  // Nothing was written, not even the NetworkPolicy computed before the error.
  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment"}));
}

// EMCO's sds: a server cluster without a configured address gets its
// address read from the cluster by rsync; the Endpoints says where.
TEST_F(TrafficTest, ServerWithoutAddressIsDiscoveredFromItsReachableService) {
  Cluster("s1", {"networkpolicy-supported"});
  Cluster("s2", {}, json::array({{{"serviceDiscoveryAddress", "10.0.0.2"}}}));
  Cluster("c1");
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1", "s2"}, {"c1"});
  ResourceSet srv = Res(id, "srv", "s1");
  srv.resources.push_back({"catalog+Service",
                           {{"apiVersion", "v1"},
                            {"kind", "Service"},
                            {"metadata", {{"name", "catalog"}, {"namespace", "shop"}}},
                            {"spec", {{"type", "LoadBalancer"}, {"ports", {{{"port", 3550}}}}}}}});
  ASSERT_TRUE(ctx_->SetResources(id, "srv", {}, srv).ok());
  ASSERT_TRUE(Run(id).ok());

  // What needs no address is there at once.
  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment", "catalog+Service", "tg1-catalog-server+NetworkPolicy"}));
  EXPECT_EQ(Names(id, "cli", "c1"), (Names_{"frontend+Deployment", "catalog+Service", "catalog+Endpoints"}));
  json ep = Obj(id, "cli", "c1", "catalog+Endpoints");
  // The configured address, and what rsync is to find on s1.
  EXPECT_EQ(ep["subsets"][0]["addresses"], json::parse(R"([{"ip":"10.0.0.2"}])"));
  json want = json::parse(ep["metadata"]["annotations"][appcontext::kDiscoverAnnotation].get<std::string>());
  EXPECT_EQ(want, json::parse(R"([{"cluster":"prov+s1","namespace":"shop","service":"catalog","port":3550,
                                   "portName":"tcp","protocol":"TCP"}])"));
}

TEST_F(TrafficTest, ServerWithoutAddressWhoseServiceIsClusterIpIsAnError) {
  Cluster("s1");
  Cluster("c1");
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1"}, {"c1"});
  ResourceSet srv = Res(id, "srv", "s1");
  srv.resources.push_back({"catalog+Service",
                           {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "catalog"}}},
                            {"spec", {{"ports", {{{"port", 3550}}}}}}}});
  ASSERT_TRUE(ctx_->SetResources(id, "srv", {}, srv).ok());
  Status s = Run(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("it is ClusterIP"), std::string::npos) << s.message();
  EXPECT_EQ(Names(id, "cli", "c1"), (Names_{"frontend+Deployment"}));
}

TEST_F(TrafficTest, IstioWithoutExternalSupport) {
  Cluster("s1", {}, IstioKv("192.168.1.10"));
  Cluster("c1");
  Server("catalog-server", {{"serviceMesh", "istio"}, {"management", {{"sidecarProxy", "yes"}}}});
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1"}, {"c1"});
  ASSERT_TRUE(Run(id).ok());

  EXPECT_EQ(Names(id, "srv", "s1"),
            (Names_{"catalog+Deployment", "catalog-gateway+Gateway", "catalog-se-server+ServiceEntry",
                    "catalog-se-server-dr-dr+DestinationRule"}));
  EXPECT_EQ(Names(id, "cli", "c1"),
            (Names_{"frontend+Deployment", "catalog+Service", "catalog+Endpoints",
                    "catalog-se-client0+ServiceEntry", "catalog-se-client1+ServiceEntry",
                    "catalog-dr-client0-dr+DestinationRule",
                    "catalog-dr-client-svcname-dr+DestinationRule"}));

  json gw = Obj(id, "srv", "s1", "catalog-gateway+Gateway");
  EXPECT_EQ(gw["metadata"]["namespace"], "istio-system");
  EXPECT_EQ(gw["spec"]["servers"][0]["port"]["number"], 15443);
  EXPECT_EQ(gw["spec"]["servers"][0]["tls"]["mode"], "AUTO_PASSTHROUGH");
  EXPECT_EQ(gw["spec"]["servers"][0]["hosts"], json::array({"catalog.ns1.prov.s1"}));
  json se = Obj(id, "srv", "s1", "catalog-se-server+ServiceEntry");
  EXPECT_EQ(se["spec"]["endpoints"][0]["address"], "catalog.ns1");
  EXPECT_EQ(se["spec"]["location"], "MESH_INTERNAL");

  json c0 = Obj(id, "cli", "c1", "catalog-se-client0+ServiceEntry");
  EXPECT_EQ(c0["metadata"]["namespace"], "ns1");
  EXPECT_EQ(c0["spec"]["hosts"], json::array({"catalog.ns1.prov.s1"}));
  EXPECT_EQ(c0["spec"]["endpoints"][0], json::parse(R"({"address":"192.168.1.10","ports":{"tcp":32001}})"));
  std::string addr = c0["spec"]["addresses"][0];
  EXPECT_EQ(addr.rfind("2", 0), 0u);
  int first = std::stoi(addr.substr(0, addr.find('.')));
  EXPECT_GE(first, 240);
  EXPECT_LE(first, 255);
  json c1 = Obj(id, "cli", "c1", "catalog-se-client1+ServiceEntry");
  EXPECT_EQ(c1["spec"]["hosts"], json::array({"catalog"}));
  EXPECT_NE(c1["spec"]["addresses"], c0["spec"]["addresses"]);
  json dr = Obj(id, "cli", "c1", "catalog-dr-client0-dr+DestinationRule");
  EXPECT_EQ(dr["spec"]["host"], "catalog.ns1.prov.s1");
  EXPECT_EQ(dr["spec"]["trafficPolicy"]["tls"]["mode"], "ISTIO_MUTUAL");
}

TEST_F(TrafficTest, IstioWithExternalSupportAndAccessPoints) {
  Cluster("s1", {}, IstioKv("192.168.1.10"));
  Server("catalog-server",
         {{"serviceMesh", "istio"}, {"externalSupport", true}, {"externalName", "catalog.example.com"},
          {"management", {{"sidecarProxy", "yes"}, {"tlsType", "MUTUAL"}}},
          {"external", {{"externalCerts", {{"serviceCertificate", "Q0VSVA=="},
                                           {"servicePrivateKey", "S0VZ"},
                                           {"caCertificate", "Q0E="}}}}}});
  Client("catalog-server", "frontend", "cli");
  Put("inboundClientsAccessIntent", K({"tg1", "catalog-server", "frontend", "fe-read"}),
      Doc("fe-read", {{"action", "ALLOW"}, {"url", {"/status/*"}}, {"access", {"GET"}}}));
  std::string id = Context({"s1"}, {"s1"});  // no remote clients: no gateway for them
  ASSERT_TRUE(Run(id).ok());

  EXPECT_EQ(Names(id, "srv", "s1"),
            (Names_{"catalog+Deployment", "catalog-ext-mutual-gateway+Gateway",
                    "catalog-vs-catalog-ext-mutual-gateway+VirtualService", "catalog-credential+Secret",
                    "catalog-auth-0-0+AuthorizationPolicy"}));
  json gw = Obj(id, "srv", "s1", "catalog-ext-mutual-gateway+Gateway");
  EXPECT_EQ(gw["spec"]["servers"][0]["port"]["number"], 32443);
  EXPECT_EQ(gw["spec"]["servers"][0]["tls"],
            json::parse(R"({"mode":"MUTUAL","credentialName":"catalog-credential"})"));
  EXPECT_EQ(gw["spec"]["servers"][0]["hosts"], json::array({"catalog.example.com"}));
  json vs = Obj(id, "srv", "s1", "catalog-vs-catalog-ext-mutual-gateway+VirtualService");
  EXPECT_EQ(vs["spec"]["gateways"], json::array({"catalog-ext-mutual-gateway"}));
  EXPECT_EQ(vs["spec"]["http"][0]["route"][0]["destination"],
            json::parse(R"({"host":"catalog","port":{"number":3550}})"));
  json secret = Obj(id, "srv", "s1", "catalog-credential+Secret");
  EXPECT_EQ(secret["metadata"]["namespace"], "istio-system");
  EXPECT_EQ(secret["data"], json::parse(R"({"tls.crt":"Q0VSVA==","tls.key":"S0VZ","ca.crt":"Q0E="})"));
  json ap = Obj(id, "srv", "s1", "catalog-auth-0-0+AuthorizationPolicy");
  EXPECT_EQ(ap["spec"]["action"], "ALLOW");
  EXPECT_EQ(ap["spec"]["selector"]["matchLabels"], (json{{"app", "catalog"}}));
  json op = ap["spec"]["rules"][0]["to"][0]["operation"];
  EXPECT_EQ(op["methods"], json::array({"GET"}));
  EXPECT_EQ(op["paths"], json::array({"/status/*"}));
  EXPECT_EQ(op["hosts"], json::array({"catalog.ns1", "catalog.ns1.svc.cluster.local", "catalog",
                                      "catalog.example.com"}));
}

TEST_F(TrafficTest, IstioExternalHttpNeedsNoSecret) {
  json kv = IstioKv("192.168.1.10");
  kv.push_back({{"istioIngressGatewayHttpPort", "32080"}});
  Cluster("s1", {}, kv);
  Server("catalog-server", {{"serviceMesh", "istio"}, {"externalSupport", true},
                            {"externalName", "catalog.example.com"},
                            {"management", {{"sidecarProxy", "yes"}, {"tlsType", "NONE"}}}});
  std::string id = Context({"s1"}, {"s1"});
  ASSERT_TRUE(Run(id).ok());
  EXPECT_EQ(Names(id, "srv", "s1"),
            (Names_{"catalog+Deployment", "catalog-ext-http-gateway+Gateway",
                    "catalog-vs-catalog-ext-http-gateway+VirtualService"}));
  EXPECT_EQ(Obj(id, "srv", "s1", "catalog-ext-http-gateway+Gateway")["spec"]["servers"][0]["port"],
            json::parse(R"({"number":32080,"name":"http","protocol":"HTTP"})"));
}

TEST_F(TrafficTest, IstioMissingKvPairIsAnError) {
  Cluster("s1", {}, json::array({{{"istioIngressGatewayAddress", "192.168.1.10"}},
                                 {{"istioIngressGatewayPort", "32001"}}}));
  Cluster("c1");
  Server("catalog-server", {{"serviceMesh", "istio"}});
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1"}, {"c1"});
  Status s = Run(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("istioIngressGatewayInternalPort"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("prov+s1"), std::string::npos) << s.message();
  EXPECT_EQ(Names(id, "cli", "c1"), (Names_{"frontend+Deployment"}));
}

TEST_F(TrafficTest, IstioMutualWithoutCaIsAnError) {
  Cluster("s1", {}, IstioKv("192.168.1.10"));
  Server("catalog-server",
         {{"serviceMesh", "istio"}, {"externalSupport", true}, {"externalName", "catalog.example.com"},
          {"management", {{"sidecarProxy", "yes"}, {"tlsType", "MUTUAL"}}},
          {"external", {{"serviceCertificate", "Q0VSVA=="}, {"servicePrivateKey", "S0VZ"}}}});
  std::string id = Context({"s1"}, {"s1"});
  Status s = Run(id);
  ASSERT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("caCertificate"), std::string::npos) << s.message();
}

TEST_F(TrafficTest, MissingTrafficGroupOrAppIsAnError) {
  std::string id = Context({"s1"}, {"c1"});
  TrafficController tc(*st_);
  Status s = tc.UpdateAppContext(id, "nope", "");
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("Traffic group intent not found"), std::string::npos);

  Server("catalog-server");
  Client("catalog-server", "ghost", "ghost-app");
  s = Run(id);
  EXPECT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("ghost-app"), std::string::npos) << s.message();
}

TEST_F(TrafficTest, RerunDoesNotDuplicate) {
  Cluster("s1", {"networkpolicy-supported"});
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({"s1"}, {"s1"});
  ASSERT_TRUE(Run(id).ok());
  ASSERT_TRUE(Run(id).ok());
  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment", "tg1-catalog-server+NetworkPolicy"}));
}

TEST_F(TrafficTest, SubControllersByDescendingPriorityErrorsIgnored) {
  auto reg = [&](const std::string& name, int prio) {
    Put("dtcController", {name},
        Doc(name, {{"host", name + ".local"}, {"port", 9040}, {"type", "action"}, {"priority", prio}}));
  };
  reg("low", 1);
  reg("high", 50);
  reg("mid", 10);
  reg("absent", 20);
  std::vector<SubCall> calls;
  std::vector<std::string> made;
  SubControllerFactory factory = [&](const std::string& name, const std::string& host, int port)
      -> std::unique_ptr<Controller> {
    made.push_back(name + "@" + host + ":" + std::to_string(port));
    if (name == "absent") return nullptr;
    return std::make_unique<FakeSub>(name, &calls, /*fail=*/name == "high");
  };
  std::string id = Context({"s1"}, {"s1"});
  ASSERT_TRUE(Run(id, factory).ok());
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].name, "high");
  EXPECT_EQ(calls[1].name, "mid");
  EXPECT_EQ(calls[2].name, "low");
  for (const auto& c : calls) {
    EXPECT_EQ(c.context, id);
    EXPECT_EQ(c.intent, "tg1");
    EXPECT_EQ(c.update_from, "");
  }
  EXPECT_EQ(made, (Names_{"high@high.local:9040", "absent@absent.local:9040", "mid@mid.local:9040",
                          "low@low.local:9040"}));
}

TEST_F(TrafficTest, SubControllersRunAfterBuiltInEdits) {
  Cluster("s1", {"networkpolicy-supported"});
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  Put("dtcController", {"its"},
      Doc("its", {{"host", "its"}, {"port", 9040}, {"type", "action"}, {"priority", 1}}));
  std::string id = Context({"s1"}, {"s1"});
  std::vector<std::string> seen;
  class Peek : public Controller {
   public:
    Peek(Contexts* c, std::vector<std::string>* seen) : c_(c), seen_(seen) {}
    Status UpdateAppContext(const std::string& ctx, const std::string&, const std::string&) override {
      auto rs = c_->Resources(ctx, "srv", "prov+s1");
      if (rs.ok()) {
        for (const auto& r : rs->resources) seen_->push_back(r.name);
      }
      return Status::Ok();
    }

   private:
    Contexts* c_;
    std::vector<std::string>* seen_;
  };
  ASSERT_TRUE(Run(id, [&](const std::string&, const std::string&, int) -> std::unique_ptr<Controller> {
                return std::make_unique<Peek>(ctx_.get(), &seen);
              }).ok());
  EXPECT_EQ(seen, (Names_{"catalog+Deployment", "tg1-catalog-server+NetworkPolicy"}));
}

TEST_F(TrafficTest, ManyClustersShareOneVariantPerDistinctEdit) {
  const int kServers = 400, kClients = 600;
  std::vector<std::string> srv, cli;
  json sd = json::array({{{"serviceDiscoveryAddress", "10.0.0.1"}}});
  for (int i = 0; i < kServers; ++i) {
    std::string n = "s" + std::to_string(i);
    // Every other server cluster supports NetworkPolicies.
    if (i % 2 == 0) {
      Cluster(n, {"networkpolicy-supported"}, sd);
    } else {
      Cluster(n, {}, sd);
    }
    srv.push_back(n);
  }
  for (int i = 0; i < kClients; ++i) {
    Cluster("c" + std::to_string(i));
    cli.push_back("c" + std::to_string(i));
  }
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context(srv, cli);
  // Another controller already gave the first 10 server clusters a variant.
  std::vector<std::string> edited;
  ResourceSet other = Res(id, "srv", "s0");
  other.resources.push_back({"extra+ConfigMap", {{"kind", "ConfigMap"}, {"metadata", {{"name", "extra"}}}}});
  for (int i = 0; i < 10; ++i) edited.push_back("prov+s" + std::to_string(i));
  ASSERT_TRUE(ctx_->SetResources(id, "srv", edited, other).ok());
  ASSERT_EQ(Variants(id, "srv"), 1u);

  auto before = st_->CurrentRevision();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(Run(id).ok());
  auto after = st_->CurrentRevision();
  ASSERT_TRUE(after.ok());
  // srv: (variant 0, +NP) and (variant 1, +NP); cli: every cluster the same.
  EXPECT_EQ(*after - *before, 3);
  EXPECT_EQ(Variants(id, "srv"), 3u);  // the old variant 1 still serves the odd s1..s9
  EXPECT_EQ(Variants(id, "cli"), 0u);  // all clients got the same: the shared set changed

  EXPECT_EQ(Names(id, "srv", "s0"),
            (Names_{"catalog+Deployment", "extra+ConfigMap", "tg1-catalog-server+NetworkPolicy"}));
  EXPECT_EQ(Names(id, "srv", "s1"), (Names_{"catalog+Deployment", "extra+ConfigMap"}));
  EXPECT_EQ(Names(id, "srv", "s10"), (Names_{"catalog+Deployment", "tg1-catalog-server+NetworkPolicy"}));
  EXPECT_EQ(Names(id, "srv", "s11"), (Names_{"catalog+Deployment"}));
  EXPECT_EQ(Names(id, "cli", "c599"),
            (Names_{"frontend+Deployment", "catalog+Service", "catalog+Endpoints"}));
}

TEST_F(TrafficTest, OpenAnyOfGroupCountsOnlyItsSurvivor) {
  Cluster("s1", {}, json::array({{{"serviceDiscoveryAddress", "10.0.0.1"}}}));
  Cluster("s2");  // no address, but dropped when the anyOf group is resolved
  Cluster("c1");
  Server("catalog-server");
  Client("catalog-server", "frontend", "cli");
  std::string id = Context({}, {"c1"});
  auto shared = ctx_->Resources(id, "srv", "");
  ASSERT_TRUE(shared.ok());
  ASSERT_TRUE(ctx_->PutApp(id, "srv", *shared, {{"prov", "s2", 1, false, 0},
                                                {"prov", "s1", 1, false, 0}}).ok());
  ASSERT_TRUE(Run(id).ok());
  EXPECT_EQ(Obj(id, "cli", "c1", "catalog+Endpoints")["subsets"][0]["addresses"],
            json::parse(R"([{"ip":"10.0.0.1"}])"));
}

TEST(TrafficResourcesTest, ServiceEntryAddressIsClassEAndStable) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string a = traffic::ServiceEntryAddress("seed" + std::to_string(i));
    EXPECT_EQ(a, traffic::ServiceEntryAddress("seed" + std::to_string(i)));
    int first = std::stoi(a.substr(0, a.find('.')));
    EXPECT_GE(first, 240) << a;
    EXPECT_NE(a, "255.255.255.255");
    seen.insert(a);
  }
  EXPECT_GT(seen.size(), 990u);
}

}  // namespace
}  // namespace eco::controllers
