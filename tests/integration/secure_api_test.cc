// `eco serve` with --tls-cert, --tls-key and --auth-tokens as an operator
// runs it: HTTPS only, bearer tokens with per-project authorisation, and the
// real `ecoctl` talking to it with --cacert and --token.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <csignal>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "etcd_fixture.h"
#include "process.h"
#include "test_certs.h"

namespace eco::testing {
namespace {

using nlohmann::json;

constexpr char kAdmin[] = "admin-0123456789abcdef";
constexpr char kAlice[] = "alice-0123456789abcdef";

class SecureApi : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = k8s::testing::MakeCa("eco-ca");
    auto leaf = k8s::testing::MakeLeaf(ca, "eco", {"localhost"}, {"127.0.0.1"});
    Write("ca.pem", ca.cert_pem);
    Write("tls.crt", leaf.cert_pem);
    Write("tls.key", leaf.key_pem);
    Write("tokens", std::string(kAdmin) + " ops *\n" + kAlice + " alice shop\n");
  }
  std::string Path(const std::string& n) const { return dir_.path() + "/" + n; }
  void Write(const std::string& n, const std::string& text) { std::ofstream(Path(n)) << text; }

  // eco serve with the given security flags; port_ is where it listens.
  std::unique_ptr<Process> Eco(std::vector<std::string> flags) {
    port_ = FreePort();
    std::vector<std::string> argv = {BinaryPath("eco"), "serve", "--bind", "127.0.0.1", "--port",
                                     std::to_string(port_), "--data-dir", Path("data")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<Process>(argv, Path("eco.log"));
  }
  std::unique_ptr<httplib::SSLClient> Https() {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    c->set_ca_cert_path(Path("ca.pem").c_str());
    c->enable_server_certificate_verification(true);
    return c;
  }
  struct Run {
    int code = -1;
    std::string output;
  };
  Run Ctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryPath("ecoctl"), "--endpoint",
                                     "https://127.0.0.1:" + std::to_string(port_), "--cacert",
                                     Path("ca.pem")};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, Path("ecoctl.log"));
    int status = 0;
    Run r;
    if (p.Wait(std::chrono::seconds(60), &status) && WIFEXITED(status)) r.code = WEXITSTATUS(status);
    r.output = p.ReadLog();
    return r;
  }

  TempDir dir_;
  int port_ = -1;
};

TEST_F(SecureApi, HttpsWithTokensFromTheCommandLine) {
  auto eco = Eco({"--tls-cert", Path("tls.crt"), "--tls-key", Path("tls.key"), "--auth-tokens",
                  Path("tokens")});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  auto https = Https();
  ASSERT_TRUE(WaitUntil([&] {
    auto r = https->Get("/healthz");
    return r && r->status == 200;
  }, std::chrono::seconds(20))) << eco->ReadLog();

  // Plain HTTP gets no answer from the HTTPS port.
  httplib::Client plain("127.0.0.1", port_);
  auto p = plain.Get("/healthz");
  EXPECT_TRUE(!p || p->status != 200);

  httplib::Headers admin = {{"Authorization", std::string("Bearer ") + kAdmin}};
  for (const char* name : {"shop", "other"}) {
    auto r = https->Post("/v2/projects", admin, json{{"metadata", {{"name", name}}}}.dump(),
                         "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
  }

  Run mine = Ctl({"--token", kAlice, "get", "projects/shop"});
  EXPECT_EQ(mine.code, 0) << mine.output;
  EXPECT_NE(mine.output.find("shop"), std::string::npos) << mine.output;
  Run theirs = Ctl({"--token", kAlice, "get", "projects/other"});
  EXPECT_EQ(theirs.code, 1) << theirs.output;
  EXPECT_NE(theirs.output.find("403"), std::string::npos) << theirs.output;
  EXPECT_NE(theirs.output.find("may not use project other"), std::string::npos) << theirs.output;
  Run anonymous = Ctl({"get", "projects/shop"});
  EXPECT_EQ(anonymous.code, 1) << anonymous.output;
  EXPECT_NE(anonymous.output.find("401"), std::string::npos) << anonymous.output;

  // The log names users, never tokens (stopped first: info lines are buffered).
  eco->Kill(SIGTERM);
  const std::string log = eco->ReadLog();
  EXPECT_NE(log.find("\"user\":\"alice\""), std::string::npos);
  EXPECT_EQ(log.find(kAlice), std::string::npos);
  EXPECT_EQ(log.find(kAdmin), std::string::npos);
}

// SIGHUP re-reads the token file while eco serves: a new token works and a
// removed one is refused; a broken file leaves the tokens in force; SIGHUP
// never stops eco (without tokens it has nothing to reload).
TEST_F(SecureApi, HangupReloadsTheTokenFile) {
  auto eco = Eco({"--auth-tokens", Path("tokens")});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  httplib::Client c("127.0.0.1", port_);
  auto status_with = [&](const std::string& token) {
    auto r = c.Get("/v2/projects", {{"Authorization", "Bearer " + token}});
    return r ? r->status : 0;
  };
  ASSERT_TRUE(WaitUntil([&] { return status_with(kAdmin) == 200; }, std::chrono::seconds(20)));
  const std::string fresh = "fresh-0123456789abcdef";
  EXPECT_EQ(status_with(fresh), 401);

  Write("tokens", fresh + " ops *\n");
  ASSERT_EQ(::kill(eco->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitUntil([&] { return status_with(fresh) == 200; }, std::chrono::seconds(10)));
  EXPECT_EQ(status_with(kAdmin), 401);

  Write("tokens", "not a token line\n");
  ASSERT_EQ(::kill(eco->pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(eco->running());
  EXPECT_EQ(status_with(fresh), 200) << "a broken file keeps the tokens in force";
  eco->Kill(SIGTERM);
  const std::string log = eco->ReadLog();
  EXPECT_NE(log.find("SIGHUP: tokens reloaded: 1 static tokens"), std::string::npos) << log;
  EXPECT_NE(log.find("SIGHUP: tokens not reloaded, the previous ones stay in force: " + Path("tokens") +
                     ": token file line 1"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find(fresh), std::string::npos) << "tokens are never logged";

  auto open = Eco({});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << open->ReadLog();
  ASSERT_EQ(::kill(open->pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(open->running());
  open->Kill(SIGTERM);
  EXPECT_NE(open->ReadLog().find("SIGHUP: nothing to reload"), std::string::npos) << open->ReadLog();
}

// SIGHUP re-reads the certificate and key: new connections get the new
// certificate without a restart; files that do not make a certificate and
// its key leave the current one in force.
TEST_F(SecureApi, HangupReloadsTheCertificate) {
  auto eco = Eco({"--tls-cert", Path("tls.crt"), "--tls-key", Path("tls.key")});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  // A new client each time: a new handshake.
  auto status_trusting = [&](const std::string& ca) {
    httplib::SSLClient c("127.0.0.1", port_);
    c.set_ca_cert_path(Path(ca).c_str());
    c.enable_server_certificate_verification(true);
    auto r = c.Get("/healthz");
    return r ? r->status : 0;
  };
  ASSERT_TRUE(WaitUntil([&] { return status_trusting("ca.pem") == 200; }, std::chrono::seconds(20)));

  auto ca2 = k8s::testing::MakeCa("eco-ca-2");
  auto leaf2 = k8s::testing::MakeLeaf(ca2, "eco", {"localhost"}, {"127.0.0.1"});
  Write("ca2.pem", ca2.cert_pem);
  EXPECT_EQ(status_trusting("ca2.pem"), 0) << "not yet the new certificate";
  std::string first_key;
  {
    std::ifstream in(Path("tls.key"));
    first_key.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  Write("tls.crt", leaf2.cert_pem);
  Write("tls.key", leaf2.key_pem);
  ASSERT_EQ(::kill(eco->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitUntil([&] { return status_trusting("ca2.pem") == 200; }, std::chrono::seconds(10)));
  EXPECT_EQ(status_trusting("ca.pem"), 0) << "the old certificate is no longer served";

  Write("tls.key", first_key);  // a key that does not match the certificate
  ASSERT_EQ(::kill(eco->pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(eco->running());
  EXPECT_EQ(status_trusting("ca2.pem"), 200) << "a broken pair keeps the certificate in force";
  eco->Kill(SIGTERM);
  const std::string log = eco->ReadLog();
  EXPECT_NE(log.find("SIGHUP: TLS certificate reloaded: CN=eco, valid until "), std::string::npos) << log;
  EXPECT_NE(log.find("SIGHUP: TLS certificate not reloaded, the previous one stays in force: TLS key " +
                     Path("tls.key") + " does not match the certificate in " + Path("tls.crt")),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("PRIVATE KEY"), std::string::npos) << "keys are never logged";
}

TEST_F(SecureApi, UnusableTokenFileOrCertificateStopsEcoAtStart) {
  Write("bad-tokens", std::string(kAdmin) + " ops *\nshort alice shop\n");
  auto bad_tokens = Eco({"--auth-tokens", Path("bad-tokens")});
  int status = 0;
  ASSERT_TRUE(bad_tokens->Wait(std::chrono::seconds(20), &status)) << bad_tokens->ReadLog();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(bad_tokens->ReadLog().find("line 2"), std::string::npos) << bad_tokens->ReadLog();

  auto bad_cert = Eco({"--tls-cert", Path("tokens"), "--tls-key", Path("tls.key")});
  ASSERT_TRUE(bad_cert->Wait(std::chrono::seconds(20), &status)) << bad_cert->ReadLog();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
  EXPECT_NE(bad_cert->ReadLog().find("cannot use TLS certificate"), std::string::npos)
      << bad_cert->ReadLog();
}

// Every file under `dir` (recursively) that holds `needle`.
std::vector<std::string> FilesHolding(const std::string& dir, const std::string& needle) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && ReadFile(e.path()).find(needle) != std::string::npos) {
      out.push_back(e.path());
    }
  }
  return out;
}

constexpr char kSecret[] = "t0ken-that-must-not-be-stored-in-clear";

std::string KubeconfigText() {
  return std::string("apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user: {token: ") + kSecret +
         "}\n";
}

// Uploads provider p and cluster c with KubeconfigText(); plain HTTP.
void Upload(int port) {
  httplib::Client c("127.0.0.1", port);
  auto p = c.Post("/v2/cluster-providers", R"({"metadata":{"name":"p"}})", "application/json");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->status, 201) << p->body;
  httplib::MultipartFormDataItems items = {
      {"metadata", R"({"metadata":{"name":"c"}})", "", "application/json"},
      {"file", KubeconfigText(), "kubeconfig", "application/octet-stream"}};
  auto r = c.Post("/v2/cluster-providers/p/clusters", items);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
}

std::string Download(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/v2/cluster-providers/p/clusters/c", {{"Accept", "application/octet-stream"}});
  return r && r->status == 200 ? r->body : "HTTP error " + (r ? std::to_string(r->status) : "none");
}

// The embedded store named by URL (--store sqlite://DIR) gets its key
// beside its data too, not plaintext credentials.
TEST_F(SecureApi, EmbeddedStoreNamedByUrlAlsoGeneratesItsKey) {
  const std::string dir = Path("by-url");
  auto eco = Eco({"--store", "sqlite://" + dir + "?sync=full"});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  ASSERT_NO_FATAL_FAILURE(Upload(port_));
  eco->Kill(SIGTERM);
  EXPECT_NE(eco->ReadLog().find("encrypted in the store with the key in " + dir + "/encryption.key"),
            std::string::npos) << eco->ReadLog();
  EXPECT_EQ(FilesHolding(dir, kSecret), std::vector<std::string>{});
}

TEST_F(SecureApi, EmbeddedStoreKeepsKubeconfigsEncryptedUnderAGeneratedKeyAndReseals) {
  const std::string key_file = Path("data") + "/encryption.key";
  {
    auto eco = Eco({});
    ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
    ASSERT_NO_FATAL_FAILURE(Upload(port_));
    EXPECT_EQ(Download(port_), KubeconfigText());
    eco->Kill(SIGTERM);
    EXPECT_NE(eco->ReadLog().find("encrypted in the store with the key in " + key_file),
              std::string::npos) << eco->ReadLog();
  }
  struct stat st {};
  ASSERT_EQ(::stat(key_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A dump of the data directory holds no plaintext credential.
  EXPECT_EQ(FilesHolding(Path("data"), kSecret), std::vector<std::string>{});

  // Rotation: a new key first, the old one after it; reseal; then the old
  // key can go.
  const std::string old_key = ReadFile(key_file);
  const std::string new_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  Write("both.key", new_key + "\n" + old_key);
  Write("new.key", new_key + "\n");
  ::chmod(Path("both.key").c_str(), 0600);
  ::chmod(Path("new.key").c_str(), 0600);
  Process reseal({BinaryPath("eco"), "secrets", "reseal", "--data-dir", Path("data"),
                  "--encryption-key-file", Path("both.key")},
                 Path("reseal.log"));
  int status = 0;
  ASSERT_TRUE(reseal.Wait(std::chrono::seconds(30), &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << reseal.ReadLog();
  EXPECT_NE(reseal.ReadLog().find("resealed 1 kubeconfigs"), std::string::npos) << reseal.ReadLog();
  {
    auto eco = Eco({"--encryption-key-file", Path("new.key")});
    ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
    EXPECT_EQ(Download(port_), KubeconfigText()) << eco->ReadLog();
  }
  EXPECT_EQ(FilesHolding(Path("data"), kSecret), std::vector<std::string>{});
}

TEST_F(SecureApi, EtcdHoldsNoPlaintextKubeconfig) {
  EtcdProcess etcd;
  ASSERT_EQ(etcd.Start(), "");
  Write("k.key", std::string(64, '7') + "\n");
  ::chmod(Path("k.key").c_str(), 0600);
  auto eco = Eco({"--store", "etcd://" + etcd.endpoint(), "--encryption-key-file", Path("k.key")});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  ASSERT_NO_FATAL_FAILURE(Upload(port_));
  EXPECT_EQ(Download(port_), KubeconfigText());
  eco->Kill(SIGTERM);
  etcd.Stop();
  // etcd's database and write-ahead log: no plaintext credential.
  EXPECT_EQ(FilesHolding(etcd.data_dir(), kSecret), std::vector<std::string>{});
}

// Only the embedded store makes its own key: on etcd a missing key would
// leave every kubeconfig readable in the store, so eco refuses to start
// unless --allow-plaintext-kubeconfigs accepts that.
TEST_F(SecureApi, EtcdWithoutAKeyIsRefusedUnlessPlaintextIsAllowed) {
  EtcdProcess etcd;
  ASSERT_EQ(etcd.Start(), "");
  for (std::vector<std::string> role : {std::vector<std::string>{"serve"}, {"api"}, {"rsync"}}) {
    std::vector<std::string> argv = {BinaryPath("eco")};
    argv.insert(argv.end(), role.begin(), role.end());
    argv.insert(argv.end(), {"--store", "etcd://" + etcd.endpoint(), "--bind", "127.0.0.1", "--port",
                             std::to_string(FreePort())});
    Process refused(argv, Path(role[0] + "-refused.log"));
    int status = 0;
    ASSERT_TRUE(refused.Wait(std::chrono::seconds(20), &status)) << role[0] << " did not exit";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << role[0];
    EXPECT_NE(refused.ReadLog().find("--allow-plaintext-kubeconfigs"), std::string::npos)
        << refused.ReadLog();
  }

  auto eco = Eco({"--store", "etcd://" + etcd.endpoint(), "--allow-plaintext-kubeconfigs"});
  ASSERT_TRUE(WaitForPort(port_, std::chrono::seconds(20))) << eco->ReadLog();
  ASSERT_NO_FATAL_FAILURE(Upload(port_));
  EXPECT_EQ(Download(port_), KubeconfigText());
  EXPECT_NE(eco->ReadLog().find("stored in plain text"), std::string::npos) << eco->ReadLog();
  eco->Kill(SIGTERM);
  etcd.Stop();
  // What the flag accepts, said plainly: the credential is in etcd's files.
  EXPECT_FALSE(FilesHolding(etcd.data_dir(), kSecret).empty());
}

}  // namespace
}  // namespace eco::testing
