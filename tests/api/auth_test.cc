// Bearer tokens, per-project authorisation and TLS on the north API
// (api/auth.h, api/server.h), over real HTTP(S) on loopback.
#include "api/auth.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>

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
           Case{"POST", "/v2/controllers", "", false},
           Case{"GET", "/v2/controllers", "", false},
           Case{"PUT", "/log-level", "", false},
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

class AuthServed : public testing::ServedApiTest {
 protected:
  void SetUp() override {
    auto a = Authenticator::FromTokens(kTokens);
    ASSERT_TRUE(a.ok());
    configure_ = [auth = *a](ServerOptions& o) { o.auth = auth; };
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
  EXPECT_EQ(requests[0]["user"], "alice");
  EXPECT_EQ(requests[1]["status"], 401);
  EXPECT_FALSE(requests[1].contains("user"));
  for (const auto& l : lines) EXPECT_EQ(l.find(kAlice), std::string::npos) << l;  // no token logged
}

// HTTPS with certificates made for the test; with a client CA, only clients
// holding a certificate it signed get an answer.
class TlsServed : public testing::ServedApiTest {
 protected:
  void Configure(bool mutual) {
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
    configure_ = [this, mutual](ServerOptions& o) {
      o.tls_cert = Path("cert.pem");
      o.tls_key = Path("key.pem");
      if (mutual) o.tls_client_ca = Path("clients.pem");
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
