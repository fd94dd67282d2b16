// Agent clusters through the served API: registration without a kubeconfig
// (spec.delivery "agent"), bootstrap tokens and the hub URL they name,
// revocation, and a cluster delete that revokes.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "api/server.h"
#include "api/validate.h"
#include "catalog/agent_identity.h"
#include "fake_clock.h"
#include "served_api.h"
#include "status_matchers.h"

namespace eco::api {
namespace {

using nlohmann::json;

constexpr char kClusters[] = "/v2/cluster-providers/prov/clusters";

class AgentClusters : public testing::ServedApiTest {
 protected:
  void SetUp() override {
    api_options_.clock = &clock_;
    api_options_.random = &random_;
    ServedApiTest::SetUp();
    ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  }

  struct Answer {
    int status = 0;
    json body;
    std::string raw;
  };
  static Answer Of(const httplib::Result& r) {
    if (!r) return {-1, nullptr, httplib::to_string(r.error())};
    return {r->status, json::parse(r->body, nullptr, false), r->body};
  }
  Answer Post(const std::string& path, const json& body, const httplib::Headers& headers = {}) {
    return Of(client_->Post(path, headers, body.dump(), "application/json"));
  }
  Answer PostRaw(const std::string& path, const std::string& body) {
    return Of(client_->Post(path, body, "application/json"));
  }
  Answer Put(const std::string& path, const json& body) {
    return Of(client_->Put(path, body.dump(), "application/json"));
  }
  Answer Get(const std::string& path, const std::string& accept = "") {
    httplib::Headers h;
    if (!accept.empty()) h.emplace("Accept", accept);
    return Of(client_->Get(path, h));
  }
  // A multipart upload: the metadata part, and a file part when given.
  Answer Upload(const std::string& method, const std::string& path, const json& meta,
                std::optional<std::string> file) {
    httplib::MultipartFormDataItems items = {{"metadata", meta.dump(), "", "application/json"}};
    if (file) items.push_back({"file", *file, "kubeconfig", "application/octet-stream"});
    return Of(method == "PUT" ? client_->Put(path, items) : client_->Post(path, items));
  }
  static json Meta(const std::string& name) { return {{"metadata", {{"name", name}}}}; }
  static json Agent(const std::string& name) {
    return {{"metadata", {{"name", name}}}, {"spec", {{"delivery", "agent"}}}};
  }
  static std::string Message(const Answer& a) {
    return a.body.is_object() ? a.body.value("message", "") : a.raw;
  }
  static std::string Bootstrap(const std::string& cluster) {
    return std::string(kClusters) + "/" + cluster + "/agent-bootstrap";
  }
  static std::string Revoke(const std::string& cluster) {
    return std::string(kClusters) + "/" + cluster + "/agent-revoke";
  }

  // A push cluster with a kubeconfig, as eco always registered them.
  void AddPushCluster(const std::string& name) {
    auto r = Upload("POST", kClusters, Meta(name), std::string(kKubeconfig));
    ASSERT_EQ(r.status, 201) << r.raw;
  }

  static constexpr char kKubeconfig[] =
      "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "
      "'https://127.0.0.1:6443'}\n"
      "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: "
      "u}\n"
      "current-context: c\n";

  eco::testing::FakeClock clock_;
  Random random_{7};
};

TEST_F(AgentClusters, JsonRegistrationIs201AndGetShowsTheDelivery) {
  auto r = Post(kClusters, Agent("edge1"));
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["spec"]["delivery"], "agent");
  EXPECT_EQ(r.body["metadata"]["name"], "edge1");
  auto got = Get(std::string(kClusters) + "/edge1");
  ASSERT_EQ(got.status, 200) << got.raw;
  EXPECT_EQ(got.body["spec"]["delivery"], "agent");
  auto list = Get(kClusters);
  ASSERT_EQ(list.body.size(), 1u) << list.raw;
  EXPECT_EQ(list.body[0]["spec"]["delivery"], "agent");
}

TEST_F(AgentClusters, MultipartWithoutAFileRegistersAnAgentCluster) {
  auto r = Upload("POST", kClusters, Agent("edge1"), std::nullopt);
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(Get(std::string(kClusters) + "/edge1").body["spec"]["delivery"], "agent");
}

TEST_F(AgentClusters, APushClusterStillNeedsItsKubeconfig) {
  for (const json& push :
       {Meta("dc1"), json{{"metadata", {{"name", "dc1"}}}, {"spec", {{"delivery", "push"}}}}}) {
    auto mp = Upload("POST", kClusters, push, std::nullopt);
    EXPECT_EQ(mp.status, 422) << mp.raw;
    EXPECT_NE(Message(mp).find("a multipart 'file' part is required"), std::string::npos) << mp.raw;
    auto plain = Post(kClusters, push);
    EXPECT_EQ(plain.status, 422) << plain.raw;
  }
  AddPushCluster("dc1");
  auto got = Get(std::string(kClusters) + "/dc1");
  EXPECT_FALSE(got.body["spec"].contains("delivery")) << got.raw;  // stored as EMCO stores it
  auto kc = Get(std::string(kClusters) + "/dc1", "application/octet-stream");
  EXPECT_EQ(kc.status, 200);
  EXPECT_EQ(kc.raw, kKubeconfig);
}

TEST_F(AgentClusters, AnAgentClusterWithAKubeconfigIs400) {
  auto r = Upload("POST", kClusters, Agent("edge1"), std::string(kKubeconfig));
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(Message(r).rfind("an agent cluster has no kubeconfig: ", 0), 0u) << r.raw;
  EXPECT_EQ(Get(std::string(kClusters) + "/edge1").status, 404);
}

TEST_F(AgentClusters, AnotherDeliveryValueIs400) {
  for (const json& bad : {json("pull"), json("Agent"), json(""), json(3), json::array()}) {
    json body = Meta("edge1");
    body["spec"] = {{"delivery", bad}};
    auto r = Post(kClusters, body);
    EXPECT_EQ(r.status, 400) << bad.dump() << ": " << r.raw;
    EXPECT_NE(Message(r).find("spec.delivery must be \"push\""), std::string::npos) << r.raw;
  }
  json gitops = Agent("edge1");
  gitops["spec"]["gitOps"] = {{"gitOpsType", "fluxcd"}};
  auto r = Post(kClusters, gitops);
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_NE(Message(r).find("exclude each other"), std::string::npos) << r.raw;
  EXPECT_EQ(Get(kClusters).raw, "[]");
}

TEST_F(AgentClusters, AnAgentClusterHasNoKubeconfigToDownload) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto raw = Get(std::string(kClusters) + "/edge1", "application/octet-stream");
  EXPECT_EQ(raw.status, 404) << raw.raw;
  EXPECT_NE(Message(raw).find("an agent cluster has no kubeconfig"), std::string::npos) << raw.raw;
  // The multipart form has the metadata part only.
  auto mp = Get(std::string(kClusters) + "/edge1", "multipart/form-data");
  EXPECT_EQ(mp.status, 200);
  EXPECT_NE(mp.raw.find("name=\"metadata\""), std::string::npos) << mp.raw;
  EXPECT_EQ(mp.raw.find("name=\"file\""), std::string::npos) << mp.raw;
}

TEST_F(AgentClusters, ReplacingKeepsTheDelivery) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  AddPushCluster("dc1");
  json described = Agent("edge1");
  described["metadata"]["description"] = "still an agent cluster";
  auto same = Put(std::string(kClusters) + "/edge1", described);
  EXPECT_EQ(same.status, 200) << same.raw;
  EXPECT_EQ(same.body["metadata"]["description"], "still an agent cluster");

  auto to_agent = Put(std::string(kClusters) + "/dc1", Agent("dc1"));
  EXPECT_EQ(to_agent.status, 409) << to_agent.raw;
  EXPECT_NE(Message(to_agent).find("from \"push\" to \"agent\""), std::string::npos)
      << to_agent.raw;
  auto to_push =
      Upload("PUT", std::string(kClusters) + "/edge1", Meta("edge1"), std::string(kKubeconfig));
  EXPECT_EQ(to_push.status, 409) << to_push.raw;
  EXPECT_NE(Message(to_push).find("from \"agent\" to \"push\""), std::string::npos) << to_push.raw;
  // Neither changed.
  EXPECT_EQ(Get(std::string(kClusters) + "/edge1").body["spec"]["delivery"], "agent");
  EXPECT_EQ(Get(std::string(kClusters) + "/dc1", "application/octet-stream").raw, kKubeconfig);
}

TEST_F(AgentClusters, BootstrapAnswersTokenHubAndExpiry) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto r = Post(Bootstrap("edge1"), json::object());
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["token"].get<std::string>().size(), 64u);
  // The client's Host header names 127.0.0.1; the default agent port.
  EXPECT_EQ(r.body["hub"], "http://127.0.0.1:9070");
  // 24 hours after the fake clock's 2026-01-01T00:00:00Z.
  EXPECT_EQ(r.body["expires"], "2026-01-02T00:00:00.000Z");
  EXPECT_EQ(r.body.size(), 3u) << r.raw;

  // The token is what the agent server enrolls with, once.
  const std::string token = r.body["token"];
  ASSERT_OK_AND_ASSIGN(auto id, catalog::Enroll(*store_, clock_, token));
  EXPECT_EQ(id.key(), "prov+edge1");
  EXPECT_OK(catalog::Authenticate(*store_, id.credential));
  EXPECT_EQ(catalog::Enroll(*store_, clock_, token).status().code(),
            Code::kPermissionDenied);
}

TEST_F(AgentClusters, BootstrapHubFollowsTheHostHeader) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto named = Post(Bootstrap("edge1"), json::object(), {{"Host", "eco.example.com:9015"}});
  ASSERT_EQ(named.status, 201) << named.raw;
  EXPECT_EQ(named.body["hub"], "http://eco.example.com:9070");
  auto v6 = Post(Bootstrap("edge1"), json::object(), {{"Host", "[fd00::1]:9015"}});
  EXPECT_EQ(v6.body["hub"], "http://[fd00::1]:9070");
}

TEST_F(AgentClusters, BootstrapTtlFromBodyOrQuery) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto body = Post(Bootstrap("edge1"), {{"ttl", "30m"}});
  ASSERT_EQ(body.status, 201) << body.raw;
  EXPECT_EQ(body.body["expires"], "2026-01-01T00:30:00.000Z");
  auto query = Of(client_->Post(Bootstrap("edge1") + "?ttl=1h30m", "", "application/json"));
  ASSERT_EQ(query.status, 201) << query.raw;
  EXPECT_EQ(query.body["expires"], "2026-01-01T01:30:00.000Z");
  auto longest = Post(Bootstrap("edge1"), {{"ttl", "720h"}});
  ASSERT_EQ(longest.status, 201) << longest.raw;
  EXPECT_EQ(longest.body["expires"], "2026-01-31T00:00:00.000Z");
  // No body at all (curl -X POST): the default.
  auto bare = Of(client_->Post(Bootstrap("edge1")));
  ASSERT_EQ(bare.status, 201) << bare.raw;
  EXPECT_EQ(bare.body["expires"], "2026-01-02T00:00:00.000Z");

  for (const char* bad : {"59s", "721h", "0", "-1h", "1d", "soon", ""}) {
    auto r = Post(Bootstrap("edge1"), {{"ttl", bad}});
    EXPECT_EQ(r.status, 400) << bad << ": " << r.raw;
    EXPECT_NE(Message(r).find("ttl"), std::string::npos) << r.raw;
  }
  EXPECT_EQ(Post(Bootstrap("edge1"), {{"ttl", 3600}}).status, 400);
  auto both =
      Of(client_->Post(Bootstrap("edge1") + "?ttl=1h", R"({"ttl":"1h"})", "application/json"));
  EXPECT_EQ(both.status, 400) << both.raw;
  EXPECT_EQ(PostRaw(Bootstrap("edge1"), "{not json").status, 422);
}

TEST_F(AgentClusters, BootstrapOfAPushOrUnknownClusterIsRefused) {
  AddPushCluster("dc1");
  auto push = Post(Bootstrap("dc1"), json::object());
  EXPECT_EQ(push.status, 409) << push.raw;
  EXPECT_NE(Message(push).find("delivers by push"), std::string::npos) << push.raw;
  auto unknown = Post(Bootstrap("nope"), json::object());
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Message(unknown), "Cluster not found");
  auto provider = Post("/v2/cluster-providers/nope/clusters/edge1/agent-bootstrap", json::object());
  EXPECT_EQ(provider.status, 404);
  EXPECT_EQ(Message(provider), "Cluster provider not found");
  EXPECT_EQ(Get(Bootstrap("dc1")).status, 405);
}

TEST_F(AgentClusters, RevokeRefusesTheCredentialAndIsIdempotent) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto boot = Post(Bootstrap("edge1"), json::object());
  ASSERT_OK_AND_ASSIGN(
      auto id, catalog::Enroll(*store_, clock_, boot.body["token"].get<std::string>()));
  auto unused = Post(Bootstrap("edge1"), json::object());
  ASSERT_EQ(unused.status, 201);

  auto r = Of(client_->Post(Revoke("edge1")));
  EXPECT_EQ(r.status, 204) << r.raw;
  EXPECT_EQ(catalog::Authenticate(*store_, id.credential).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(catalog::Enroll(*store_, clock_, unused.body["token"].get<std::string>())
                .status()
                .code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Of(client_->Post(Revoke("edge1"))).status, 204);
  // The cluster stays registered and can be bootstrapped again.
  EXPECT_EQ(Get(std::string(kClusters) + "/edge1").status, 200);
  EXPECT_EQ(Post(Bootstrap("edge1"), json::object()).status, 201);

  AddPushCluster("dc1");
  auto push = Of(client_->Post(Revoke("dc1")));
  EXPECT_EQ(push.status, 409) << push.raw;
  EXPECT_NE(Message(push).find("no agent credential"), std::string::npos) << push.raw;
  EXPECT_EQ(Of(client_->Post(Revoke("nope"))).status, 404);
}

TEST_F(AgentClusters, DeletingTheClusterRevokes) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  ASSERT_EQ(Post(kClusters, Agent("edge2")).status, 201);
  auto boot = Post(Bootstrap("edge1"), json::object());
  ASSERT_OK_AND_ASSIGN(
      auto id, catalog::Enroll(*store_, clock_, boot.body["token"].get<std::string>()));
  ASSERT_EQ(Post(Bootstrap("edge1"), json::object()).status, 201);  // left unused
  auto other = Post(Bootstrap("edge2"), json::object());
  ASSERT_OK_AND_ASSIGN(
      auto id2, catalog::Enroll(*store_, clock_, other.body["token"].get<std::string>()));

  auto del = Of(client_->Delete(std::string(kClusters) + "/edge1"));
  ASSERT_EQ(del.status, 204) << del.raw;
  auto refused = catalog::Authenticate(*store_, id.credential);
  EXPECT_EQ(refused.status().code(), Code::kPermissionDenied);
  // Nothing of edge1 is left under /eco/agent/; edge2's identity is.
  auto left = store_->Range("/eco/agent/");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->kvs.size(), 1u);
  EXPECT_EQ(left->kvs[0].key, catalog::AgentIdentityKey("prov+edge2"));
  EXPECT_OK(catalog::Authenticate(*store_, id2.credential));

  // Registered again under the same name, it starts with no identity.
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  EXPECT_EQ(catalog::Authenticate(*store_, id.credential).status().code(), Code::kPermissionDenied);
}

class AgentClustersWithUrl : public AgentClusters {
 protected:
  void SetUp() override {
    configure_ = [](ServerOptions& o) { o.agent_url = "https://agents.example.com:443"; };
    AgentClusters::SetUp();
  }
};

TEST_F(AgentClustersWithUrl, TheConfiguredAgentUrlIsTheHub) {
  ASSERT_EQ(Post(kClusters, Agent("edge1")).status, 201);
  auto r = Post(Bootstrap("edge1"), json::object(), {{"Host", "eco.example.com:9015"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["hub"], "https://agents.example.com:443");
}

TEST(AgentHubUrl, DerivedFromTheHostThePortAndTls) {
  ServerOptions o;
  EXPECT_EQ(AgentHubUrl(o, "eco.example.com:9015"), "http://eco.example.com:9070");
  EXPECT_EQ(AgentHubUrl(o, "eco.example.com"), "http://eco.example.com:9070");
  EXPECT_EQ(AgentHubUrl(o, "[::1]:9015"), "http://[::1]:9070");
  // Missing, or not a host name: the agent is told localhost (set --agent-url).
  EXPECT_EQ(AgentHubUrl(o, ""), "http://localhost:9070");
  EXPECT_EQ(AgentHubUrl(o, "evil.com/x?y"), "http://localhost:9070");
  o.agent_port = 7443;
  o.tls_cert = "cert.pem";
  o.tls_key = "key.pem";
  EXPECT_EQ(AgentHubUrl(o, "eco.example.com:9015"), "https://eco.example.com:7443");
  o.agent_url = "https://hub.example.com";
  EXPECT_EQ(AgentHubUrl(o, "eco.example.com:9015"), "https://hub.example.com");
}

TEST(GoDuration, ParsesGosForms) {
  using namespace std::chrono;
  EXPECT_EQ(*ParseGoDuration("30m"), minutes(30));
  EXPECT_EQ(*ParseGoDuration("1h30m"), minutes(90));
  EXPECT_EQ(*ParseGoDuration("1.5h"), minutes(90));
  EXPECT_EQ(*ParseGoDuration("300ms"), milliseconds(300));
  EXPECT_EQ(*ParseGoDuration("2h45m10.5s"), hours(2) + minutes(45) + milliseconds(10500));
  EXPECT_EQ(*ParseGoDuration("1us"), microseconds(1));
  EXPECT_EQ(*ParseGoDuration("1\u00b5s"), microseconds(1));
  EXPECT_EQ(*ParseGoDuration("-1h"), -hours(1));
  EXPECT_EQ(*ParseGoDuration("0"), nanoseconds(0));
  EXPECT_EQ(*ParseGoDuration(".5s"), milliseconds(500));
  for (const char* bad :
       {"", "1", "h", "1d", "1.h.", "1h 30m", "1H", "-", ".s", "99999999999999999999h"}) {
    auto d = ParseGoDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), Code::kInvalid) << bad;
  }
}

}  // namespace
}  // namespace eco::api
