#include "k8s/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_certs.h"

namespace eco::k8s {
namespace {

using testing::Base64;
using testing::CertKey;

struct Pki {
  CertKey ca = testing::MakeCa("test-ca");
  CertKey client = testing::MakeLeaf(ca, "eco", {}, {});
  CertKey other = testing::MakeLeaf(ca, "other", {}, {});
};

const Pki& TestPki() {
  static const Pki pki;
  return pki;
}

// A kubeconfig with two contexts; `cluster` and `user` are spliced into the
// entries named "c1" and "u1".
std::string Kubeconfig(const std::string& cluster, const std::string& user,
                       const std::string& current = "ctx1") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "clusters:\n"
         "- name: c1\n  cluster:\n" +
         cluster +
         "- name: c2\n  cluster:\n    server: https://other.example:6443\n"
         "users:\n"
         "- name: u1\n  user:\n" +
         user +
         "- name: u2\n  user:\n    token: second-token\n"
         "contexts:\n"
         "- name: ctx1\n  context: {cluster: c1, user: u1, namespace: team-a}\n"
         "- name: ctx2\n  context: {cluster: c2, user: u2}\n"
         "- name: broken\n  context: {cluster: nowhere, user: u1}\n";
}

TEST(Kubeconfig, EveryFieldFromData) {
  const Pki& pki = TestPki();
  std::string text = Kubeconfig(
      "    server: https://127.0.0.1:7000/clusters/edge-1/\n"
      "    certificate-authority-data: " +
          Base64(pki.ca.cert_pem) +
          "\n"
          "    tls-server-name: api.edge-1\n",
      "    client-certificate-data: " + Base64(pki.client.cert_pem) +
          "\n"
          "    client-key-data: " +
          Base64(pki.client.key_pem) +
          "\n"
          "    token: secret-token\n");
  Result<RestConfig> cfg = ParseKubeconfig(text);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  // The path prefix stays, the trailing slash goes.
  EXPECT_EQ(cfg->server, "https://127.0.0.1:7000/clusters/edge-1");
  EXPECT_EQ(cfg->default_namespace, "team-a");
  EXPECT_EQ(cfg->ca_pem, pki.ca.cert_pem);
  EXPECT_EQ(cfg->client_cert_pem, pki.client.cert_pem);
  EXPECT_EQ(cfg->client_key_pem, pki.client.key_pem);
  EXPECT_EQ(cfg->token, "secret-token");
  EXPECT_EQ(cfg->tls_server_name, "api.edge-1");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_EQ(cfg->context_name, "ctx1");
  EXPECT_EQ(cfg->cluster_name, "c1");
  EXPECT_EQ(cfg->user_name, "u1");
}

TEST(Kubeconfig, ExplicitContextWinsAndNamespaceDefaults) {
  std::string text = Kubeconfig("    server: http://a:1\n", "    token: t\n");
  Result<RestConfig> cfg = ParseKubeconfig(text, "ctx2");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://other.example:6443");
  EXPECT_EQ(cfg->token, "second-token");
  EXPECT_EQ(cfg->default_namespace, "default");
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "k8s-kubeconfig-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Kubeconfig, FilesResolveAgainstTheKubeconfigDirectory) {
  const Pki& pki = TestPki();
  TempDir dir;
  dir.Write("ca.crt", pki.ca.cert_pem);
  dir.Write("client.crt", pki.client.cert_pem);
  std::string key_path = dir.Write("client.key", pki.client.key_pem);  // absolute
  dir.Write("token", "file-token\n");
  std::string kc = dir.Write(
      "config", Kubeconfig("    server: https://h:1\n    certificate-authority: ca.crt\n",
                           "    client-certificate: client.crt\n    client-key: " + key_path +
                               "\n    tokenFile: token\n"));
  Result<RestConfig> cfg = LoadKubeconfigFile(kc);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->ca_pem, pki.ca.cert_pem);
  EXPECT_EQ(cfg->client_cert_pem, pki.client.cert_pem);
  EXPECT_EQ(cfg->client_key_pem, pki.client.key_pem);
  EXPECT_EQ(cfg->token_file, dir.path() + "/token");
}

// What eco stores comes from uploaders: it must never make eco read its
// own files (and send them to a server the uploader chose).
TEST(Kubeconfig, StoredKubeconfigsMustCarryCredentialsInline) {
  const Pki& pki = TestPki();
  TempDir dir;
  const std::string secret = dir.Write("secret", "host-secret\n");
  const std::string ca = dir.Write("ca.crt", pki.ca.cert_pem);
  struct Case {
    std::string cluster, user, says;
  };
  for (const Case& c : {Case{"    server: https://h:1\n", "    tokenFile: " + secret + "\n", "tokenFile"},
                        Case{"    server: https://h:1\n    certificate-authority: " + ca + "\n", "    token: t\n",
                             "certificate-authority"},
                        Case{"    server: https://h:1\n", "    client-certificate: " + ca + "\n    client-key: " +
                                 secret + "\n", "client-certificate"}}) {
    const std::string text = Kubeconfig(c.cluster, c.user);
    ASSERT_TRUE(ParseKubeconfig(text).ok() || c.says != "tokenFile");  // a local kubeconfig may
    Result<RestConfig> stored = ParseStoredKubeconfig(text);
    ASSERT_FALSE(stored.ok()) << c.says;
    EXPECT_EQ(stored.status().code(), Code::kInvalid);
    EXPECT_NE(stored.status().message().find(c.says), std::string::npos) << stored.status().message();
    EXPECT_EQ(stored.status().message().find("host-secret"), std::string::npos);
    Status upload = CheckUploadedKubeconfig(text);
    EXPECT_EQ(upload.code(), Code::kInvalid) << c.says;
    EXPECT_NE(upload.message().find(c.says), std::string::npos) << upload.message();
  }
  const std::string inline_text = Kubeconfig(
      "    server: https://h:1\n    certificate-authority-data: " + Base64(pki.ca.cert_pem) + "\n",
      "    token: t\n");
  EXPECT_TRUE(ParseStoredKubeconfig(inline_text).ok());
  EXPECT_TRUE(CheckUploadedKubeconfig(inline_text).ok());
  EXPECT_TRUE(CheckUploadedKubeconfig("not: [a kubeconfig").ok());  // reported when used, as EMCO
  EXPECT_TRUE(CheckUploadedKubeconfig("just text").ok());

  // Inline credentials that cannot work are refused at upload, naming where.
  struct Broken {
    std::string cluster, user, says;
  };
  const std::string damaged = Base64("-----BEGIN CERTIFICATE-----\nMIIBdamaged\n-----END CERTIFICATE-----\n");
  for (const Broken& b : {Broken{"    server: https://h:1\n    certificate-authority-data: not*base64!\n", "    token: t\n",
                                 "cluster \"c1\": certificate-authority-data"},
                          Broken{"    server: https://h:1\n    certificate-authority-data: " + damaged + "\n",
                                 "    token: t\n", "cluster \"c1\": certificate-authority-data"},
                          Broken{"    server: https://h:1\n", "    client-certificate-data: " + damaged + "\n",
                                 "user \"u1\": client-certificate-data"},
                          Broken{"    server: https://h:1\n",
                                 "    client-certificate-data: " + Base64(pki.client.cert_pem) +
                                     "\n    client-key-data: " + Base64("not a key") + "\n",
                                 "user \"u1\": client-key-data"}}) {
    Status upload = CheckUploadedKubeconfig(Kubeconfig(b.cluster, b.user));
    EXPECT_EQ(upload.code(), Code::kInvalid) << b.says;
    EXPECT_NE(upload.message().find(b.says), std::string::npos) << upload.message();
  }
  EXPECT_TRUE(CheckUploadedKubeconfig(
                  Kubeconfig("    server: https://h:1\n",
                             "    client-certificate-data: " + Base64(pki.client.cert_pem) +
                                 "\n    client-key-data: " + Base64(pki.client.key_pem) + "\n"))
                  .ok());
}

TEST(Kubeconfig, DataWinsOverFile) {
  const Pki& pki = TestPki();
  std::string text = Kubeconfig(
      "    server: https://h:1\n    certificate-authority: /nonexistent\n"
      "    certificate-authority-data: " +
          Base64(pki.ca.cert_pem) + "\n",
      "    token: t\n");
  Result<RestConfig> cfg = ParseKubeconfig(text);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->ca_pem, pki.ca.cert_pem);
}

TEST(Kubeconfig, InsecureSkipTlsVerify) {
  Result<RestConfig> cfg = ParseKubeconfig(Kubeconfig(
      "    server: https://h:1\n    insecure-skip-tls-verify: true\n", "    token: t\n"));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
}

struct BadCase {
  std::string name;
  std::string text;
  std::string context;
  std::string message_part;  // the error must say what is wrong
};

TEST(Kubeconfig, ErrorsAreInvalidAndSayWhat) {
  const Pki& pki = TestPki();
  const std::string ok_user = "    token: super-secret-token\n";
  const std::string server = "    server: https://h:1\n";
  std::vector<BadCase> cases = {
      {"missing context", Kubeconfig(server, ok_user), "nope", "context named \"nope\""},
      {"missing current-context", Kubeconfig(server, ok_user, "\"\""), "", "current-context"},
      {"missing cluster", Kubeconfig(server, ok_user), "broken", "cluster named \"nowhere\""},
      {"bad base64", Kubeconfig(server + "    certificate-authority-data: '%%%'\n", ok_user), "",
       "certificate-authority-data: bad base64"},
      {"base64 of garbage is no PEM",
       Kubeconfig(server + "    certificate-authority-data: " + Base64("not a cert") + "\n",
                  ok_user),
       "", "certificate-authority holds no PEM certificate"},
      {"truncated client certificate",
       Kubeconfig(server,
                  "    client-certificate-data: " +
                      Base64(pki.client.cert_pem.substr(0, pki.client.cert_pem.size() / 2)) +
                      "\n    client-key-data: " + Base64(pki.client.key_pem) + "\n"),
       "", "client-certificate holds no PEM certificate"},
      {"broken key",
       Kubeconfig(server,
                  "    client-certificate-data: " + Base64(pki.client.cert_pem) +
                      "\n    client-key-data: " +
                      Base64("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") +
                      "\n"),
       "", "client-key holds no PEM private key"},
      {"key of another certificate",
       Kubeconfig(server, "    client-certificate-data: " + Base64(pki.client.cert_pem) +
                              "\n    client-key-data: " + Base64(pki.other.key_pem) + "\n"),
       "", "does not match"},
      {"certificate without key",
       Kubeconfig(server, "    client-certificate-data: " + Base64(pki.client.cert_pem) + "\n"), "",
       "needs a client key"},
      {"missing CA file",
       Kubeconfig(server + "    certificate-authority: /no/such/ca.crt\n", ok_user), "",
       "/no/such/ca.crt"},
      {"missing token file", Kubeconfig(server, "    tokenFile: /no/such/token\n"), "",
       "/no/such/token"},
      {"CA with insecure",
       Kubeconfig(server + "    insecure-skip-tls-verify: true\n    certificate-authority-data: " +
                      Base64(pki.ca.cert_pem) + "\n",
                  ok_user),
       "", "insecure-skip-tls-verify"},
      {"server not a URL", Kubeconfig("    server: h:1\n", ok_user), "", "http(s) URL"},
      {"exec plugin", Kubeconfig(server, "    exec: {command: aws}\n"), "", "not supported"},
      {"not YAML", "clusters: [", "", "kubeconfig"},
      {"not a map", "- a\n- b\n", "", "not a YAML map"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    Result<RestConfig> cfg = ParseKubeconfig(c.text, c.context);
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.status().code(), Code::kInvalid) << cfg.status().ToString();
    EXPECT_NE(cfg.status().message().find(c.message_part), std::string::npos)
        << cfg.status().ToString();
    // Secrets stay out of messages.
    EXPECT_EQ(cfg.status().message().find("super-secret-token"), std::string::npos);
  }
}

TEST(Kubeconfig, MissingFileIsNotFound) {
  Result<RestConfig> cfg = LoadKubeconfigFile("/no/such/kubeconfig");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kNotFound);
}

TEST(Base64, Table) {
  struct Case {
    std::string in;
    bool ok;
    std::string out;
  };
  std::vector<Case> cases = {
      {"", true, ""},
      {"Zg==", true, "f"},
      {"Zm8=", true, "fo"},
      {"Zm9v", true, "foo"},
      {"Zm9v\nYmFy", true, "foobar"},
      {"Zm9vYg", false, ""},    // missing padding
      {"Zm9vY===", false, ""},  // too much padding
      {"Zm=v", false, ""},      // data after padding
      {"Zm9v!A==", false, ""},  // not in the alphabet
      {"Zh==", false, ""},      // stray bits in the last symbol
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    Result<std::string> r = DecodeBase64(c.in);
    EXPECT_EQ(r.ok(), c.ok);
    if (r.ok()) {
      EXPECT_EQ(*r, c.out);
    }
  }
}

}  // namespace
}  // namespace eco::k8s
