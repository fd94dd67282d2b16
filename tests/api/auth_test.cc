// Bearer tokens, per-project authorisation and TLS on the north API
// (api/auth.h, api/server.h), over real HTTP(S) on loopback.
#include "api/auth.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include <chrono>

#include <fstream>
#include <nlohmann/json.hpp>

#include "appcontext/agent_log.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "served_api.h"
#include "test_certs.h"

namespace eco::api {
namespace {

using nlohmann::json;

constexpr char kAdmin[] = "admin-token-0123456789";
constexpr char kAlice[] = "alice-token-0123456789";  // projects a1 and a2

constexpr char kTokens[] =
    "# eco tokens\n"
    "admin-token-0123456789  root   *\n"
    "\n"
    "alice-token-0123456789\talice  a1,a2\r\n";

TEST(TokenFile, ParsesUsersProjectsAndAdministrators) {
  auto a = Authenticator::FromTokens(kTokens);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->size(), 2u);
  auto root = (*a)->Authenticate(std::string("Bearer ") + kAdmin);
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->user, "root");
  EXPECT_TRUE(root->admin);
  auto alice = (*a)->Authenticate(std::string("bearer  ") + kAlice);  // scheme in any case
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  EXPECT_EQ(alice->user, "alice");
  EXPECT_FALSE(alice->admin);
  EXPECT_EQ(alice->projects, (std::set<std::string>{"a1", "a2"}));
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic YWxpY2U6eA==", "Bearer nope-0123456789abc",
                          "alice-token-0123456789"}) {
    auto r = (*a)->Authenticate(bad);
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << bad;
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(TokenFile, RejectsMalformedLinesNamingThem) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"", "no token"}, Case{"# only a comment\n", "no token"},
                        Case{"tok-0123456789abcdef alice\n", "line 1"},
                        Case{"x\ntok-0123456789abcdef alice a1 extra\n", "line 1"},
                        Case{"tok-0123456789abcdef a *\nshort b *\n", "line 2: token shorter"},
                        Case{"tok-0123456789abcdef a p1,,p2\n", "empty name"},
                        Case{"tok-0123456789abcdef a p1,*\n", "'*'"},
                        Case{"tok-0123456789abcdef a *\ntok-0123456789abcdef b p\n", "twice"}}) {
    auto a = Authenticator::FromTokens(c.text);
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_EQ(a.status().code(), Code::kInvalid);
    EXPECT_NE(a.status().message().find(c.says), std::string::npos) << a.status().message();
  }
  EXPECT_FALSE(Authenticator::FromTokenFile("/nonexistent/tokens").ok());
}

TEST(Authorize, ProjectUsersStayInTheirProjects) {
  Principal alice{"alice", false, {"a1"}};
  Principal root{"root", true, {}};
  struct Case {
    const char* method;
    const char* path;
    const char* accept;
    bool alice_may;
  };
  for (const Case& c : {
           Case{"GET", "/v2/projects", "", true},
           Case{"POST", "/v2/projects", "", false},
           Case{"GET", "/v2/projects/a1", "", true},
           Case{"PUT", "/v2/projects/a1", "", false},
           Case{"DELETE", "/v2/projects/a1", "", false},
           Case{"POST", "/v2/projects/a1/composite-apps", "", true},
           Case{"DELETE", "/v2/projects/a1/composite-apps/app/v1", "", true},
           Case{"GET", "/v2/projects/b/composite-apps", "", false},
           Case{"GET", "/v2/projects/a1/logical-clouds", "", true},
           Case{"POST", "/v2/projects/a1/logical-clouds", "", false},
           Case{"GET", "/v2/cluster-providers", "", true},
           Case{"GET", "/v2/cluster-providers/p/clusters/c", "application/json", true},
           Case{"GET", "/v2/cluster-providers/p/clusters/c", "multipart/form-data", false},
           Case{"GET", "/v2/cluster-providers/p/clusters/c", "application/octet-stream", false},
           Case{"GET", "/v2/cluster-providers/p/clusters/c/status", "", false},
           Case{"POST", "/v2/cluster-providers", "", false},
           Case{"POST", "/v2/cluster-providers/p/clusters/c/agent-bootstrap", "", false},
           Case{"POST", "/v2/cluster-providers/p/clusters/c/agent-revoke", "", false},
           Case{"POST", "/v2/controllers", "", false},
           Case{"GET", "/v2/controllers", "", false},
           Case{"PUT", "/log-level", "", false},
           Case{"GET", "/v2/openapi.json", "", true},
           Case{"POST", "/v2/openapi.json", "", false},
           Case{"GET", "/other", "", false},
       }) {
    Status s = Authorize(alice, c.method, c.path, c.accept);
    EXPECT_EQ(s.ok(), c.alice_may) << c.method << " " << c.path << ": " << s.message();
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Code::kPermissionDenied);
      EXPECT_NE(s.message().find("alice"), std::string::npos) << s.message();
    }
    EXPECT_TRUE(Authorize(root, c.method, c.path, c.accept).ok()) << c.path;
  }
}


// ---- JWTs --------------------------------------------------------------

std::string B64Url(std::string_view bytes) {
  static constexpr char kAlpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = acc << 8 | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlpha[acc >> bits & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlpha[acc << (6 - bits) & 63]);
  return out;
}

// A signing key made for the test, and its public half as a JWK.
struct TestKey {
  std::shared_ptr<EVP_PKEY> key;
  json jwk;
  std::string alg;
};

std::string BnBytes(EVP_PKEY* k, const char* name) {
  BIGNUM* bn = nullptr;
  EVP_PKEY_get_bn_param(k, name, &bn);
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

TestKey MakeRsa(const std::string& kid) {
  TestKey t{std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048}), EVP_PKEY_free),
            {}, "RS256"};
  t.jwk = {{"kty", "RSA"}, {"kid", kid}, {"alg", "RS256"},
           {"n", B64Url(BnBytes(t.key.get(), OSSL_PKEY_PARAM_RSA_N))},
           {"e", B64Url(BnBytes(t.key.get(), OSSL_PKEY_PARAM_RSA_E))}};
  return t;
}

TestKey MakeEc(const std::string& kid) {
  TestKey t{std::shared_ptr<EVP_PKEY>(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free),
            {}, "ES256"};
  unsigned char pub[65];
  size_t len = 0;
  EVP_PKEY_get_octet_string_param(t.key.get(), OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub, &len);
  t.jwk = {{"kty", "EC"}, {"kid", kid}, {"crv", "P-256"},
           {"x", B64Url(std::string_view(reinterpret_cast<char*>(pub) + 1, 32))},
           {"y", B64Url(std::string_view(reinterpret_cast<char*>(pub) + 33, 32))}};
  return t;
}

std::string Sign(const TestKey& k, const json& header, const json& claims) {
  const std::string input = B64Url(header.dump()) + "." + B64Url(claims.dump());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t len = 0;
  EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, k.key.get());
  EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                 reinterpret_cast<const unsigned char*>(input.data()), input.size());
  sig.resize(len);
  if (k.alg == "ES256") {  // DER to JWS's r||s
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    const BIGNUM *r = nullptr, *s = nullptr;
    ECDSA_SIG_get0(es, &r, &s);
    std::string rs(64, '\0');
    BN_bn2binpad(r, reinterpret_cast<unsigned char*>(rs.data()), 32);
    BN_bn2binpad(s, reinterpret_cast<unsigned char*>(rs.data()) + 32, 32);
    ECDSA_SIG_free(es);
    sig = rs;
  }
  return input + "." + B64Url(sig);
}

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Jwt : public ::testing::Test {
 protected:
  void SetUp() override {
    rsa_ = MakeRsa("r1");
    ec_ = MakeEc("e1");
    Authenticator::Config c;
    c.jwks_text = json{{"keys", {rsa_.jwk, ec_.jwk}}}.dump();
    c.issuer = "https://idp.example";
    c.audience = "eco";
    auto a = Authenticator::Create(c);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auth_ = *a;
  }
  json Claims() {
    return {{"iss", "https://idp.example"}, {"aud", json::array({"other", "eco"})}, {"sub", "bob"},
            {"exp", Now() + 300}, {"projects", {"shop"}}};
  }
  Result<Principal> Check(const std::string& token) { return auth_->Authenticate("Bearer " + token); }

  TestKey rsa_, ec_;
  std::shared_ptr<const Authenticator> auth_;
};

TEST_F(Jwt, Rs256AndEs256TokensGiveTheirSubjectAndProjects) {
  for (const TestKey* k : {&rsa_, &ec_}) {
    auto p = Check(Sign(*k, {{"alg", k->alg}, {"kid", k->jwk["kid"]}, {"typ", "JWT"}}, Claims()));
    ASSERT_TRUE(p.ok()) << k->alg << ": " << p.status().ToString();
    EXPECT_EQ(p->user, "bob");
    EXPECT_FALSE(p->admin);
    EXPECT_EQ(p->projects, (std::set<std::string>{"shop"}));
  }
  json admin = Claims();
  admin["projects"] = {"*"};
  admin["aud"] = "eco";
  auto p = Check(Sign(ec_, {{"alg", "ES256"}}, admin));  // no kid: every ES256 key is tried
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->admin);
}

TEST_F(Jwt, ForgedExpiredOrMisaddressedTokensAre401) {
  const json rs = {{"alg", "RS256"}, {"kid", "r1"}};
  struct Case {
    std::string token;
    std::string says;
  };
  json expired = Claims(), early = Claims(), issuer = Claims(), audience = Claims(), no_sub = Claims(),
       no_exp = Claims();
  expired["exp"] = Now() - 3600;
  early["nbf"] = Now() + 3600;
  issuer["iss"] = "https://evil.example";
  audience["aud"] = "someone-else";
  no_sub.erase("sub");
  no_exp.erase("exp");
  std::string good = Sign(rsa_, rs, Claims());
  std::string tampered = good;
  tampered[good.find('.') + 5] ^= 0x01;  // a claim changed after signing
  const TestKey stranger = MakeRsa("r1");  // same kid, another key
  for (const Case& c : std::vector<Case>{
           {Sign(rsa_, rs, expired), "expired"},
           {Sign(rsa_, rs, early), "not valid yet"},
           {Sign(rsa_, rs, issuer), "issuer"},
           {Sign(rsa_, rs, audience), "audience"},
           {Sign(rsa_, rs, no_sub), "sub"},
           {Sign(rsa_, rs, no_exp), "exp"},
           {tampered, ""},
           {Sign(stranger, rs, Claims()), "signature"},
           {Sign(rsa_, {{"alg", "RS256"}, {"kid", "unknown"}}, Claims()), "no key"},
           {B64Url(R"({"alg":"none"})") + "." + B64Url(Claims().dump()) + ".", "algorithm"},
           {B64Url(R"({"alg":"HS256"})") + "." + B64Url(Claims().dump()) + ".c2ln", "algorithm"},
           {"a.b", "not a JWT"},
           {"!!.??.**", "malformed"},
       }) {
    auto p = Check(c.token);
    ASSERT_FALSE(p.ok()) << c.says;
    EXPECT_EQ(p.status().code(), Code::kPermissionDenied);
    EXPECT_NE(p.status().message().find(c.says), std::string::npos) << p.status().message();
  }
}

TEST(JwtConfig, BadKeySetsAreRefusedAtStart) {
  Authenticator::Config c;
  c.issuer = "i";
  c.audience = "a";
  for (auto [jwks, says] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "not a JWKS"},
           {R"({"keys":[]})", "no key"},
           {R"({"keys":[{"kty":"oct","k":"c2VjcmV0"}]})", "not supported"},
           {R"({"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]})", "2048"},
           {R"({"keys":[{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}]})", "P-256"},
       }) {
    c.jwks_text = jwks;
    auto a = Authenticator::Create(c);
    ASSERT_FALSE(a.ok()) << jwks;
    EXPECT_NE(a.status().message().find(says), std::string::npos) << a.status().message();
  }
  c.jwks_text = json{{"keys", {MakeEc("k").jwk}}}.dump();
  c.issuer.clear();
  EXPECT_NE(Authenticator::Create(c).status().message().find("--auth-jwt-issuer"), std::string::npos);
}

class AuthServed : public testing::ServedApiTest {
 protected:
  void SetUp() override {
    auto a = Authenticator::FromTokens(kTokens);
    ASSERT_TRUE(a.ok());
    configure_ = [auth = *a](ServerOptions& o) { o.auth = std::make_shared<AuthSource>(auth); };
    ServedApiTest::SetUp();
  }
  httplib::Headers As(const char* token) {
    return {{"Authorization", std::string("Bearer ") + token}};
  }
};

TEST_F(AuthServed, AnswersWithoutATokenAre401AndOthersProjectsAre403) {
  auto none = client_->Get("/v2/projects");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"eco\"");
  EXPECT_NE(json::parse(none->body)["message"].get<std::string>().find("bearer token"), std::string::npos);
  auto wrong = client_->Get("/v2/projects", As("wrong-token-0123456789"));
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);

  // Health and metrics answer without one (probes and scrapers).
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
  // Changing the log level is for administrators.
  EXPECT_EQ(client_->Put("/log-level", As(kAlice), R"({"level":"info"})", "application/json")->status, 403);
  EXPECT_EQ(client_->Get("/log-level", As(kAdmin))->status, 200);

  // The administrator creates projects; alice works inside hers.
  for (const char* p : {"a1", "b1"}) {
    auto r = client_->Post("/v2/projects", As(kAdmin), json{{"metadata", {{"name", p}}}}.dump(),
                           "application/json");
    ASSERT_EQ(r->status, 201) << r->body;
  }
  auto create = client_->Post("/v2/projects", As(kAlice), json{{"metadata", {{"name", "a2"}}}}.dump(),
                              "application/json");
  EXPECT_EQ(create->status, 403);
  EXPECT_NE(json::parse(create->body)["message"].get<std::string>().find("administrator"), std::string::npos);
  auto app = client_->Post("/v2/projects/a1/composite-apps", As(kAlice),
                           json{{"metadata", {{"name", "app"}}}, {"spec", {{"compositeAppVersion", "v1"}}}}.dump(),
                           "application/json");
  EXPECT_EQ(app->status, 201) << app->body;
  auto other = client_->Get("/v2/projects/b1", As(kAlice));
  EXPECT_EQ(other->status, 403);
  EXPECT_NE(json::parse(other->body)["message"].get<std::string>().find("project b1"), std::string::npos);
  EXPECT_EQ(client_->Get("/v2/projects/b1", As(kAdmin))->status, 200);

  // The list shows alice her projects only; the administrator all.
  auto mine = json::parse(client_->Get("/v2/projects", As(kAlice))->body);
  ASSERT_EQ(mine.size(), 1u) << mine.dump();
  EXPECT_EQ(mine[0]["metadata"]["name"], "a1");
  EXPECT_EQ(json::parse(client_->Get("/v2/projects", As(kAdmin))->body).size(), 2u);

  // Refused requests changed nothing.
  EXPECT_EQ(client_->Get("/v2/projects/a2", As(kAdmin))->status, 404);
}

// The console's routes (docs/api.md "Console"): whoami, and the fleet as
// far as the caller's projects go.
TEST_F(AuthServed, WhoamiAndTheFleetFollowTheCaller) {
  auto none = client_->Get("/v2/whoami");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto alice = client_->Get("/v2/whoami", As(kAlice));
  ASSERT_EQ(alice->status, 200) << alice->body;
  EXPECT_EQ(json::parse(alice->body),
            (json{{"auth", true}, {"user", "alice"}, {"admin", false}, {"projects", {"a1", "a2"}}}));
  auto root = json::parse(client_->Get("/v2/whoami", As(kAdmin))->body);
  EXPECT_EQ(root["admin"], true);
  EXPECT_EQ(root["user"], "root");

  // Two DIGs, one in alice's project; a logical cloud in each project.
  auto put = [&](const std::string& k, const json& v) { ASSERT_TRUE(store_->Put(k, v.dump()).ok()); };
  for (const char* p : {"a1", "b1"}) {
    ASSERT_EQ(client_->Post("/v2/projects", As(kAdmin), json{{"metadata", {{"name", p}}}}.dump(), "application/json")->status, 201);
    catalog::Keys k = {p, "app", "v1", "dig"};
    put(catalog::ObjectKey("deploymentIntentGroup", k), json{{"metadata", {{"name", "dig"}}}, {"spec", json::object()}});
    put(catalog::StateKey("deploymentIntentGroup", k),
        json{{"statusctxid", ""}, {"actions", {{{"state", "Created"}, {"instance", ""}, {"time", "2026-01-01T00:00:00.000Z"}, {"revision", 0}}}}});
    put(catalog::ObjectKey("logicalCloud", {p, "lc"}), json{{"metadata", {{"name", "lc"}}}, {"spec", {{"level", "1"}}}});
  }
  put(catalog::ObjectKey("clusterProvider", {"prov"}), json{{"metadata", {{"name", "prov"}}}});
  put(catalog::ObjectKey("cluster", {"prov", "edge-1"}), json{{"metadata", {{"name", "edge-1"}}}, {"spec", {{"delivery", "agent"}}}});
  put(catalog::ObjectKey("cluster", {"prov", "core-1"}), json{{"metadata", {{"name", "core-1"}}}, {"spec", json::object()}});
  put(catalog::ObjectKey("clusterLabel", {"prov", "edge-1", "edge"}), json{{"clusterLabel", "edge"}});
  appcontext::Seen seen{catalog::NowRfc3339(), "r"};
  seen.agent_version = "eco-agent 1.2.3";
  put(appcontext::SeenKey("prov+edge-1"), appcontext::ToJson(seen));

  auto mine = client_->Get("/v2/fleet", As(kAlice));
  ASSERT_EQ(mine->status, 200) << mine->body;
  json f = json::parse(mine->body);
  ASSERT_EQ(f["digs"].size(), 1u) << f.dump();
  EXPECT_EQ(f["digs"][0]["project"], "a1");
  EXPECT_EQ(f["digs"][0]["state"], "Created");
  EXPECT_EQ(f["digs"][0]["clusters"]["total"], 0);
  ASSERT_EQ(f["logicalClouds"].size(), 1u);
  EXPECT_EQ(f["logicalClouds"][0]["project"], "a1");
  EXPECT_FALSE(f.contains("providers"));  // administrators only
  EXPECT_TRUE(f["problems"].is_array());

  json all = json::parse(client_->Get("/v2/fleet", As(kAdmin))->body);
  EXPECT_EQ(all["digs"].size(), 2u);
  EXPECT_EQ(all["logicalClouds"].size(), 2u);
  ASSERT_EQ(all["providers"].size(), 1u);
  EXPECT_EQ(all["providers"][0], (json{{"name", "prov"}, {"clusters", 2}, {"push", 1}, {"agent", 1},
                                       {"unreachable", 0}, {"stale", 0}}));

  // Every cluster and what is on it: administrators only.
  auto refused = client_->Get("/v2/fleet/clusters", As(kAlice));
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(json::parse(refused->body)["message"].get<std::string>().find("administrator"), std::string::npos);
  auto clusters = client_->Get("/v2/fleet/clusters", As(kAdmin));
  ASSERT_EQ(clusters->status, 200) << clusters->body;
  json cs = json::parse(clusters->body);
  ASSERT_EQ(cs.size(), 2u) << cs.dump();
  EXPECT_EQ(cs[0]["cluster"], "core-1");
  EXPECT_EQ(cs[0]["delivery"], "push");
  EXPECT_EQ(cs[0]["connectivity"], "NotWatched");
  EXPECT_FALSE(cs[0].contains("agentVersion"));
  EXPECT_EQ(cs[1]["cluster"], "edge-1");
  EXPECT_EQ(cs[1]["labels"], (json{"edge"}));
  EXPECT_EQ(cs[1]["connectivity"], "Reachable");
  EXPECT_EQ(cs[1]["agentVersion"], "eco-agent 1.2.3");
  EXPECT_EQ(cs[1]["deployments"], json::array());
}

// Without tokens everyone administers, and whoami says so.
class OpenServed : public testing::ServedApiTest {};

TEST_F(OpenServed, WhoamiWithoutAuthentication) {
  auto r = client_->Get("/v2/whoami");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body), (json{{"auth", false}, {"admin", true}}));
  EXPECT_EQ(client_->Get("/v2/fleet/clusters")->status, 200);
}

// A large answer is gzipped by eco itself (fast) for a client that also
// accepts brotli, as browsers do.
TEST_F(OpenServed, LargeAnswersAreGzippedQuickly) {
  httplib::Client raw("127.0.0.1", server_->port());
  raw.set_decompress(false);
  const httplib::Headers browser{{"Accept-Encoding", "gzip, deflate, br"}};
  auto plain = client_->Get("/v2/openapi.json");
  ASSERT_EQ(plain->status, 200);
  ASSERT_GE(plain->body.size(), 16u * 1024) << "the test needs an answer past the threshold";
  auto zipped = raw.Get("/v2/openapi.json", browser);
  ASSERT_EQ(zipped->status, 200);
  EXPECT_EQ(zipped->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(zipped->get_header_value("Content-Type"), "application/json");
  EXPECT_LT(zipped->body.size(), plain->body.size() / 3);
  auto unzipped = client_->Get("/v2/openapi.json", browser);  // this client decompresses
  EXPECT_EQ(json::parse(unzipped->body), json::parse(plain->body));
}

// A bootstrap token makes its holder the cluster: administrators only.
TEST_F(AuthServed, AgentBootstrapIsForAdministrators) {
  ASSERT_EQ(client_->Post("/v2/cluster-providers", As(kAdmin), json{{"metadata", {{"name", "p"}}}}.dump(),
                          "application/json")->status, 201);
  auto agent = json{{"metadata", {{"name", "edge"}}}, {"spec", {{"delivery", "agent"}}}};
  ASSERT_EQ(client_->Post("/v2/cluster-providers/p/clusters", As(kAdmin), agent.dump(), "application/json")->status,
            201);
  const std::string path = "/v2/cluster-providers/p/clusters/edge/agent-bootstrap";
  auto refused = client_->Post(path, As(kAlice), "{}", "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(json::parse(refused->body)["message"].get<std::string>().find("agent bootstrap tokens"),
            std::string::npos) << refused->body;
  EXPECT_EQ(client_->Post("/v2/cluster-providers/p/clusters/edge/agent-revoke", As(kAlice), "", "application/json")
                ->status, 403);
  auto granted = client_->Post(path, As(kAdmin), "{}", "application/json");
  ASSERT_TRUE(granted);
  EXPECT_EQ(granted->status, 201) << granted->body;
}

TEST_F(AuthServed, AccessLogNamesTheUser) {
  std::vector<std::string> lines;
  std::mutex mu;
  log::SetSinkForTest([&](const std::string& l) {
    std::lock_guard<std::mutex> g(mu);
    lines.push_back(l);
  });
  ASSERT_EQ(client_->Get("/v2/projects", As(kAlice))->status, 200);
  ASSERT_EQ(client_->Get("/v2/projects")->status, 401);
  // The access line is written once the answer is out: wait for both.
  std::vector<json> requests;
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        log::Flush();
        std::lock_guard<std::mutex> g(mu);
        requests.clear();
        for (const auto& l : lines) {
          json j = json::parse(l);
          if (j["message"] == "request") requests.push_back(j);
        }
        return requests.size() >= 2;
      },
      std::chrono::seconds(10)));
  log::SetSinkForTest(nullptr);
  ASSERT_EQ(requests.size(), 2u);
  // Each connection has its own thread: the lines may come in either order.
  if (requests[0]["status"] == 401) std::swap(requests[0], requests[1]);
  EXPECT_EQ(requests[0]["status"], 200);
  EXPECT_EQ(requests[0]["user"], "alice");
  EXPECT_EQ(requests[1]["status"], 401);
  EXPECT_FALSE(requests[1].contains("user"));
  for (const auto& l : lines) EXPECT_EQ(l.find(kAlice), std::string::npos) << l;  // no token logged
}

// HTTPS with certificates made for the test; with a client CA, only clients
// holding a certificate it signed get an answer.
class TlsServed : public testing::ServedApiTest {
 protected:
  // `extra` changes the options further once the files are written.
  void Configure(bool mutual, std::function<void(ServerOptions&)> extra = nullptr) {
    ca_ = k8s::testing::MakeCa("eco-test-ca");
    auto leaf = k8s::testing::MakeLeaf(ca_, "eco", {"localhost"}, {"127.0.0.1"});
    client_ca_ = k8s::testing::MakeCa("eco-clients");
    client_cert_ = k8s::testing::MakeLeaf(client_ca_, "operator", {}, {});
    Write("ca.pem", ca_.cert_pem);
    Write("cert.pem", leaf.cert_pem);
    Write("key.pem", leaf.key_pem);
    Write("clients.pem", client_ca_.cert_pem);
    Write("client.pem", client_cert_.cert_pem);
    Write("client-key.pem", client_cert_.key_pem);
    configure_ = [this, mutual, extra](ServerOptions& o) {
      o.tls_cert = Path("cert.pem");
      o.tls_key = Path("key.pem");
      if (mutual) o.tls_client_ca = Path("clients.pem");
      if (extra) extra(o);
    };
    ServedApiTest::SetUp();
  }
  void SetUp() override {}
  std::string Path(const std::string& name) { return dir_.path() + "/" + name; }
  void Write(const std::string& name, const std::string& text) { std::ofstream(Path(name)) << text; }
  std::unique_ptr<httplib::SSLClient> Https(bool with_cert) {
    auto c = with_cert ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port(), Path("client.pem"),
                                                               Path("client-key.pem"))
                       : std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    c->set_ca_cert_path(Path("ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    return c;
  }
  k8s::testing::CertKey ca_, client_ca_, client_cert_;
};

TEST_F(TlsServed, ServesHttpsAndRefusesPlainHttp) {
  Configure(false);
  auto r = Https(false)->Get("/v2/projects");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  auto plain = client_->Get("/v2/projects");  // plain HTTP to the HTTPS port
  EXPECT_TRUE(!plain || plain->status != 200);
}

TEST_F(TlsServed, MutualTlsNeedsAClientCertificateFromTheCa) {
  Configure(true);
  auto without = Https(false)->Get("/healthz");
  EXPECT_FALSE(without);
  auto with = Https(true)->Get("/healthz");
  ASSERT_TRUE(with) << httplib::to_string(with.error());
  EXPECT_EQ(with->status, 200);
}

// A reloaded client CA is the one that counts for new connections.
TEST_F(TlsServed, ReloadedClientCaReplacesTheOldOne) {
  // The identity passed the way eco's commands pass it (cmd/log.cc).
  std::shared_ptr<TlsIdentity> tls;
  Configure(true, [&](ServerOptions& o) {
    auto id = TlsIdentity::Load(o.tls_cert, o.tls_key, o.tls_client_ca);
    ASSERT_TRUE(id.ok()) << id.status().message();
    tls = *id;
    o.tls = tls;
  });
  ASSERT_TRUE(tls);
  ASSERT_TRUE(Https(true)->Get("/healthz"));

  auto other_ca = k8s::testing::MakeCa("eco-clients-2");
  Write("clients.pem", other_ca.cert_pem);
  ASSERT_TRUE(tls->Reload().ok());
  EXPECT_FALSE(Https(true)->Get("/healthz")) << "a client of the old CA is refused";
  auto other_client = k8s::testing::MakeLeaf(other_ca, "operator-2", {}, {});
  Write("client.pem", other_client.cert_pem);
  Write("client-key.pem", other_client.key_pem);
  auto with = Https(true)->Get("/healthz");
  ASSERT_TRUE(with) << httplib::to_string(with.error());
  EXPECT_EQ(with->status, 200);

  Write("clients.pem", "not a certificate");
  Status st = tls->Reload();
  EXPECT_EQ(st.code(), Code::kInvalid);
  EXPECT_NE(st.message().find("TLS client CA " + Path("clients.pem")), std::string::npos) << st.message();
  EXPECT_TRUE(Https(true)->Get("/healthz")) << "the current CA stays in force";
}

TEST(TlsOptions, UnusableFilesAreAClearErrorAtBind) {
  testing::TempDir dir;
  std::ofstream(dir.path() + "/junk.pem") << "not a certificate";
  auto s = store::OpenSqliteStore({.dir = dir.path() + "/db"});
  ASSERT_TRUE(s.ok());
  Api api(**s, Options{});
  for (auto [cert, key, ca, says] :
       {std::tuple<std::string, std::string, std::string, std::string>{dir.path() + "/junk.pem",
                                                                       dir.path() + "/junk.pem", "", "cannot use TLS"},
        {dir.path() + "/junk.pem", "", "", "both --tls-cert and --tls-key"},
        {"", "", dir.path() + "/junk.pem", "--tls-client-ca needs"}}) {
    ServerOptions o;
    o.bind = "127.0.0.1";
    o.port = 0;
    o.tls_cert = cert;
    o.tls_key = key;
    o.tls_client_ca = ca;
    HttpServer server(api, o);
    Status b = server.Bind();
    EXPECT_EQ(b.code(), Code::kInvalid);
    EXPECT_NE(b.message().find(says), std::string::npos) << b.message();
  }
}

}  // namespace
}  // namespace eco::api
