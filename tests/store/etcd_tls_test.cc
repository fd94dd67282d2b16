// eco's connection to an etcd that serves TLS and requires client
// certificates (etcd's --client-cert-auth), configured in the store URL:
// etcd://host:port?cacert=FILE&cert=FILE&key=FILE.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "etcd_fixture.h"
#include "process.h"
#include "store/etcd_store.h"
#include "store/store.h"
#include "test_certs.h"

namespace eco::store {
namespace {

using eco::testing::EtcdMemberConfig;
using eco::testing::EtcdProcess;
using eco::testing::FreePort;
using eco::testing::TempDir;
using k8s::testing::MakeCa;
using k8s::testing::MakeLeaf;

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = MakeCa("etcd-ca");
    const auto server = MakeLeaf(ca_, "etcd", {"localhost"}, {"127.0.0.1"});
    client_ = MakeLeaf(ca_, "eco", {}, {});
    Write("ca.pem", ca_.cert_pem);
    Write("server.pem", server.cert_pem);
    Write("server-key.pem", server.key_pem);
    Write("client.pem", client_.cert_pem);
    Write("client-key.pem", client_.key_pem);
    // Plain text on the fixture's port (it checks readiness there), TLS
    // with client certificates on another.
    EtcdMemberConfig cfg;
    cfg.client_port = FreePort();
    tls_port_ = FreePort();
    cfg.extra_args = {"--listen-client-urls=http://127.0.0.1:" + std::to_string(cfg.client_port) +
                          ",https://127.0.0.1:" + std::to_string(tls_port_),
                      "--cert-file=" + Path("server.pem"), "--key-file=" + Path("server-key.pem"),
                      "--trusted-ca-file=" + Path("ca.pem"), "--client-cert-auth"};
    etcd_ = std::make_unique<EtcdProcess>(cfg);
    const std::string err = etcd_->Start();
    ASSERT_EQ(err, "");
  }

  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  void Write(const std::string& name, const std::string& text) { std::ofstream(Path(name)) << text; }
  std::string TlsEndpoint() const { return "127.0.0.1:" + std::to_string(tls_port_); }

  // A store on the TLS port with short timeouts, for the refusals.
  Result<std::unique_ptr<EtcdStore>> Direct(std::string ca, std::string cert, std::string key) {
    EtcdOptions o;
    o.endpoints = {TlsEndpoint()};
    o.dial_timeout = std::chrono::milliseconds(500);
    o.call_timeout = std::chrono::milliseconds(1500);
    o.key_prefix = "tls-test/";
    o.ca_pem = std::move(ca);
    o.cert_pem = std::move(cert);
    o.key_pem = std::move(key);
    return EtcdStore::Open(o);
  }

  TempDir dir_;
  k8s::testing::CertKey ca_, client_;
  int tls_port_ = 0;
  std::unique_ptr<EtcdProcess> etcd_;
};

TEST_F(EtcdTlsTest, ClientCertificateFromTheUrlIsAccepted) {
  const std::string url = "etcd://" + TlsEndpoint() + "/tls?cacert=" + Path("ca.pem") +
                          "&cert=" + Path("client.pem") + "&key=" + Path("client-key.pem");
  auto st = Open(url);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE((*st)->Put("/a", "over TLS").ok());
  auto kv = (*st)->Get("/a");
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  ASSERT_TRUE(kv->has_value());
  EXPECT_EQ((*kv)->value, "over TLS");
  // The prefix in the path still applies: the raw key is under "tls/".
  bool found = false;
  for (const auto& k : eco::testing::EtcdRawKeys(etcd_->endpoint(), "tls/")) found = found || k.ends_with("/a");
  EXPECT_TRUE(found);
}

TEST_F(EtcdTlsTest, WithoutTheRightCredentialsNothingGetsThrough) {
  const auto other = MakeCa("other-ca");
  const auto stranger = MakeLeaf(other, "eco", {}, {});
  struct Case {
    const char* what;
    std::string ca, cert, key;
  } cases[] = {
      {"no client certificate", ca_.cert_pem, "", ""},
      {"a client certificate etcd's CA did not sign", ca_.cert_pem, stranger.cert_pem, stranger.key_pem},
      {"etcd's certificate checked against another CA", other.cert_pem, client_.cert_pem, client_.key_pem},
      {"plain text to a TLS port", "", "", ""},
  };
  for (const auto& c : cases) {
    auto st = Direct(c.ca, c.cert, c.key);
    ASSERT_TRUE(st.ok()) << c.what << ": " << st.status().ToString();
    Status put = (*st)->Put("/x", "y").status();
    EXPECT_FALSE(put.ok()) << c.what;
    EXPECT_EQ(put.code(), Code::kUnavailable) << c.what << ": " << put.ToString();
  }
  // And the right ones work on the same path.
  auto good = Direct(ca_.cert_pem, client_.cert_pem, client_.key_pem);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE((*good)->Put("/x", "y").ok());
}

TEST_F(EtcdTlsTest, BadTlsOptionsAreRefusedAtOnce) {
  const std::string base = "etcd://" + TlsEndpoint();
  const struct {
    std::string query, want;
  } cases[] = {
      {"?cacert=" + Path("ca.pem") + "&cert=" + Path("client.pem"), "cert and key go together"},
      {"?cert=" + Path("client.pem") + "&key=" + Path("client-key.pem"), "need cacert"},
      {"?cacert=" + Path("nope.pem"), "cacert: cannot read " + Path("nope.pem")},
      {"?cacert=" + Path("notpem"), "is missing, unreadable or not PEM"},
      {"?cacert=", "cacert needs a file"},
      {"?ca=" + Path("ca.pem"), "unknown option 'ca' (want cacert, cert, key)"},
  };
  Write("notpem", "just text\n");
  for (const auto& c : cases) {
    auto st = Open(base + c.query);
    ASSERT_FALSE(st.ok()) << c.query;
    EXPECT_EQ(st.status().code(), Code::kInvalid) << c.query;
    EXPECT_NE(st.status().message().find(c.want), std::string::npos) << st.status().message();
  }
}

}  // namespace
}  // namespace eco::store
