// The traffic intents through the north API (Api::Handle over an embedded
// store): field rules, EMCO's messages, references, and an intent written by
// the API read back by the controller.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api_test_fixture.h"
#include "appcontext/appcontext.h"
#include "controllers/traffic/traffic.h"
#include "context_builders.h"
#include "test_archives.h"

namespace eco::controllers {
namespace {

using api::Request;
using api::Response;
using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDigPath = kCA + "/deployment-intent-groups/dig";
const std::string kTG = kDigPath + "/traffic-group-intents";

class TrafficApiTest : public api::ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    Ok(Post("/v2/projects", Meta("p")));
    Ok(Post("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    for (auto app : {"catalog", "frontend"}) {
      Ok(Multipart("POST", kCA + "/apps", Meta(app), eco::testing::ChartTgz(app)));
    }
    Ok(Post(kCA + "/composite-profiles", Meta("cp")));
    Ok(Post("/v2/projects/p/logical-clouds", Doc("lc", {{"namespace", "ns1"}, {"level", "1"}})));
    Ok(Post(kCA + "/deployment-intent-groups",
            Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})));
  }

  static void Ok(const Response& r) { ASSERT_LT(r.status, 300) << r.status << " " << r.body; }

  static json Doc(const std::string& name, json spec) {
    return {{"metadata", {{"name", name}}}, {"spec", std::move(spec)}};
  }
  static std::string Message(const Response& r) {
    json b = json::parse(r.body, nullptr, false);
    return b.is_object() ? b.value("message", "") : r.body;
  }
  static json ServerSpec() {
    return {{"app", "catalog"}, {"appLabel", "app=catalog"}, {"serviceName", "catalog"},
            {"port", 3550}, {"protocol", "TCP"}, {"serviceMesh", "istio"},
            {"management", {{"sidecarProxy", "yes"}, {"tlsType", "MUTUAL"}}}};
  }
  static json ClientSpec() {
    return {{"app", "frontend"}, {"appLabel", "app=frontend"}, {"serviceName", "frontend"},
            {"namespaces", json::array()}, {"cidrs", json::array()}};
  }

  // The EMCO Appendix E sequence.
  void CreateAll() {
    Ok(Post(kTG, Meta("tg1")));
    Ok(Post(kTG + "/tg1/inbound-intents", Doc("catalog-server", ServerSpec())));
    Ok(Post(kTG + "/tg1/inbound-intents/catalog-server/clients", Doc("frontend", ClientSpec())));
    Ok(Post(kTG + "/tg1/inbound-intents/catalog-server/clients/frontend/access-points",
            Doc("fe-read", {{"action", "ALLOW"}, {"url", {"/status/*"}}, {"access", {"GET"}}})));
  }
};

TEST_F(TrafficApiTest, GroupIntentCrudAndEmcoMessages) {
  Response r = Post(kTG, Meta("tg1"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["metadata"]["name"], "tg1");
  r = Post(kTG, Meta("tg1"));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Message(r), "TrafficGroupIntent already exists");  // EMCO's wording
  r = Get(kTG + "/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Traffic group intent not found");
  EXPECT_EQ(json::parse(Get(kTG).body).size(), 1u);
  EXPECT_EQ(Put(kTG + "/tg1", Meta("other")).status, 400);  // mismatched name
  EXPECT_EQ(Put(kTG + "/tg1", {{"metadata", {{"name", "tg1"}, {"description", "d"}}}}).status, 200);
  EXPECT_EQ(Post(kTG, json::object()).status, 400);  // missing name
  r = Post(kCA + "/deployment-intent-groups/nodig/traffic-group-intents", Meta("tg1"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "DeploymentIntentGroup not found");
  EXPECT_EQ(Del(kTG + "/tg1").status, 204);
  EXPECT_EQ(Del(kTG + "/tg1").status, 404);
}

TEST_F(TrafficApiTest, ServerIntentRules) {
  Response r = Post(kTG + "/tg1/inbound-intents", Doc("s", ServerSpec()));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Traffic group intent not found");
  Ok(Post(kTG, Meta("tg1")));
  const std::string S = kTG + "/tg1/inbound-intents";

  auto bad = [&](const char* what, json spec) {
    Response b = Post(S, Doc("s", spec));
    EXPECT_EQ(b.status, 400) << what << ": " << b.body;
    EXPECT_EQ(Message(b).rfind("Invalid Input", 0), 0u) << what << ": " << Message(b);
  };
  json s = ServerSpec();
  for (json port : {json(0), json(65536), json("3550"), json(1.5)}) {
    json x = s;
    x["port"] = port;
    bad("port", x);
  }
  for (const char* f : {"app", "appLabel", "serviceName", "port", "protocol"}) {
    json x = s;
    x.erase(f);
    bad(f, x);
  }
  for (const char* label : {"catalog", "=x", "k=", "a=b=c"}) {
    json x = s;
    x["appLabel"] = label;
    bad("appLabel", x);
  }
  json x = s;
  x["protocol"] = "HTTPS2";  // more than 5 characters
  bad("protocol", x);
  x = s;
  x["management"]["sidecarProxy"] = "maybe";
  bad("sidecarProxy", x);
  x = s;
  x["management"] = {{"tlsType", "MUTUAL"}};
  bad("management without sidecarProxy", x);
  x = s;
  x["management"]["tlsType"] = "STRICT";
  bad("tlsType", x);
  x = s;
  x["externalSupport"] = "yes";
  bad("externalSupport", x);
  x = s;
  x["externalName"] = std::string(129, 'e');
  bad("externalName", x);

  r = Post(S, Doc("s", s));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["spec"]["externalSupport"], false);  // defaulted
  r = Post(S, Doc("s", s));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Message(r), "ServerInboundIntent already exists");  // EMCO's wording
  r = Get(S + "/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Inbound server intent not found");
  // The traffic group cannot go while it has intents.
  EXPECT_EQ(Del(kTG + "/tg1").status, 409);
}

TEST_F(TrafficApiTest, ClientAndAccessIntentRules) {
  Ok(Post(kTG, Meta("tg1")));
  const std::string C = kTG + "/tg1/inbound-intents/s/clients";
  Response r = Post(C, Doc("frontend", ClientSpec()));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Inbound server intent not found");
  Ok(Post(kTG + "/tg1/inbound-intents", Doc("s", ServerSpec())));

  for (json cidr : {json("10.0.0.0"), json("10.0.0.0/33"), json("nonsense/8"), json(5)}) {
    json x = ClientSpec();
    x["cidrs"] = json::array({cidr});
    EXPECT_EQ(Post(C, Doc("frontend", x)).status, 400) << cidr;
  }
  json x = ClientSpec();
  x["namespaces"] = "ns1";
  EXPECT_EQ(Post(C, Doc("frontend", x)).status, 400);
  x = ClientSpec();
  x.erase("namespaces");
  x.erase("cidrs");
  x["cidrs"] = {"10.1.0.0/16", "fd00::/8"};
  r = Post(C, Doc("frontend", x));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["spec"]["namespaces"], json::array());
  r = Post(C, Doc("frontend", x));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Message(r), "InboundClientsIntent already exists");  // EMCO's wording

  const std::string A = C + "/frontend/access-points";
  r = Post(C + "/nope/access-points", Doc("a", {{"action", "ALLOW"}}));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Inbound clients intent not found");
  json good = {{"action", "ALLOW"}, {"url", {"/status/*", "/"}}, {"access", {"GET", "POST"}}};
  for (auto [field, value] : std::vector<std::pair<const char*, json>>{
           {"action", "DENY"}, {"url", json::array({"status"})}, {"url", json::array({"/a*/b"})},
           {"access", json::array({"PATCH"})}}) {
    json a = good;
    a[field] = value;
    EXPECT_EQ(Post(A, Doc("a", a)).status, 400) << field << "=" << value;
  }
  Ok(Post(A, Doc("a", good)));
  EXPECT_EQ(Get(A + "/a").status, 200);
}

TEST_F(TrafficApiTest, IntentsHoldTheirAppAgainstDeletion) {
  CreateAll();
  Response r = Del(kCA + "/apps/frontend");
  EXPECT_EQ(r.status, 409) << r.body;
  r = Del(kCA + "/apps/catalog");
  EXPECT_EQ(r.status, 409) << r.body;
  Ok(Del(kTG + "/tg1/inbound-intents/catalog-server/clients/frontend/access-points/fe-read"));
  Ok(Del(kTG + "/tg1/inbound-intents/catalog-server/clients/frontend"));
  EXPECT_EQ(Del(kCA + "/apps/frontend").status, 204);
}

TEST_F(TrafficApiTest, DtcControllerRegistry) {
  json spec = {{"host", "its"}, {"port", 9040}, {"type", "action"}, {"priority", 1}};
  Response r = Post("/v2/dtc-controllers", Doc("istio", spec));
  ASSERT_EQ(r.status, 201) << r.body;
  r = Post("/v2/dtc-controllers", Doc("istio", spec));
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Message(r), "Controller already exists");
  r = Get("/v2/dtc-controllers/nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Message(r), "Controller not found");
  for (auto [field, value] : std::vector<std::pair<const char*, json>>{
           {"port", 0}, {"port", 65536}, {"priority", 0}, {"priority", 101},
           {"type", "placement"}, {"host", ""}}) {
    json x = spec;
    x[field] = value;
    EXPECT_EQ(Post("/v2/dtc-controllers", Doc("x", x)).status, 400) << field << "=" << value;
  }
  json no_type = spec;
  no_type.erase("type");
  r = Post("/v2/dtc-controllers", Doc("nps", no_type));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["spec"]["type"], "action");
  EXPECT_EQ(json::parse(Get("/v2/dtc-controllers").body).size(), 2u);
  EXPECT_EQ(Del("/v2/dtc-controllers/istio").status, 204);
}

// What the API stores is what the controller reads.
TEST_F(TrafficApiTest, ControllerReadsIntentsWrittenByTheApi) {
  CreateAll();
  auto kv = json::array({{{"istioIngressGatewayAddress", "192.168.1.10"}},
                         {{"istioIngressGatewayPort", "32001"}},
                         {{"istioIngressGatewayInternalPort", "15443"}}});
  Ok(Post("/v2/cluster-providers", Meta("prov")));
  for (auto c : {"edge1", "edge2"}) {
    Ok(Multipart("POST", "/v2/cluster-providers/prov/clusters", Meta(c), "apiVersion: v1\n"));
  }
  Ok(Post("/v2/cluster-providers/prov/clusters/edge1/labels", {{"clusterLabel", "networkpolicy-supported"}}));
  Ok(Post("/v2/cluster-providers/prov/clusters/edge1/kv-pairs", Doc("istio-gw", {{"kv", kv}})));

  appcontext::Contexts ctx(*store_);
  appcontext::Meta m = eco::testing::DigMeta("ns1");
  auto id = ctx.Create(m, 0);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ctx.PutApp(*id, "catalog", {}, {{"prov", "edge1", 1, true, 0}}).ok());
  ASSERT_TRUE(ctx.PutApp(*id, "frontend", {}, {{"prov", "edge2", 1, true, 0}}).ok());

  TrafficController tc(*store_);
  Status s = tc.UpdateAppContext(*id, "tg1", "");
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto srv = ctx.Resources(*id, "catalog", "prov+edge1");
  ASSERT_TRUE(srv.ok());
  EXPECT_NE(srv->Find("tg1-catalog-server+NetworkPolicy"), nullptr);
  EXPECT_NE(srv->Find("catalog-gateway+Gateway"), nullptr);
  EXPECT_NE(srv->Find("catalog-auth-0-0+AuthorizationPolicy"), nullptr);
  auto cli = ctx.Resources(*id, "frontend", "prov+edge2");
  ASSERT_TRUE(cli.ok());
  EXPECT_NE(cli->Find("catalog+Endpoints"), nullptr);
  EXPECT_NE(cli->Find("catalog-se-client0+ServiceEntry"), nullptr);
}

}  // namespace
}  // namespace eco::controllers
