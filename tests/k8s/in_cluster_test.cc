// In-cluster configuration from a service-account directory in a temp dir
// and an environment given as a map; then a client built from it against a
// TLS server, across a token rotation done the way the kubelet does it.
#include "k8s/in_cluster.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "fake_api_server.h"
#include "k8s/client.h"
#include "test_certs.h"

namespace eco::k8s {
namespace {

namespace fs = std::filesystem;

class ServiceAccountDir {
 public:
  ServiceAccountDir() {
    path_ = fs::temp_directory_path() /
            ("eco-sa-" + std::to_string(getpid()) + "-" + std::to_string(next_++));
    fs::create_directories(path_);
  }
  ~ServiceAccountDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  void Write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary | std::ios::trunc) << content;
  }

  // The kubelet's atomic writer: files live in a timestamped directory,
  // ..data links to it and each name links through ..data; an update
  // writes a new directory and renames a new link over ..data.
  void WriteProjected(const std::string& token, const std::string& ca, const std::string& ns) {
    const std::string version = "..v" + std::to_string(version_++);
    fs::create_directories(path_ / version);
    std::ofstream(path_ / version / "token") << token;
    std::ofstream(path_ / version / "ca.crt") << ca;
    std::ofstream(path_ / version / "namespace") << ns;
    fs::create_symlink(version, path_ / "..data_tmp");
    fs::rename(path_ / "..data_tmp", path_ / "..data");
    for (const char* f : {"token", "ca.crt", "namespace"}) {
      if (!fs::is_symlink(path_ / f)) fs::create_symlink(fs::path("..data") / f, path_ / f);
    }
  }

 private:
  static inline int next_ = 0;
  fs::path path_;
  int version_ = 1;
};

class InClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
    dir_.Write("token", "sa-token-1\n");
    dir_.Write("ca.crt", ca_.cert_pem);
    dir_.Write("namespace", "eco-system");
  }

  InClusterOptions Options() {
    InClusterOptions o;
    o.dir = dir_.path();
    o.env = [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    };
    return o;
  }

  testing::CertKey ca_ = testing::MakeCa("cluster-ca");
  ServiceAccountDir dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(InClusterTest, BuildsTheSameConfigAKubeconfigWould) {
  EXPECT_TRUE(InCluster(Options()));
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->token_file, dir_.path() + "/token");
  EXPECT_EQ(cfg->token, "");  // by file only, so rotations are seen
  EXPECT_EQ(cfg->ca_pem, ca_.cert_pem);
  EXPECT_EQ(cfg->default_namespace, "eco-system");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  Result<std::string> token = ReadInClusterToken(Options());
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "sa-token-1");
}

TEST_F(InClusterTest, BracketsAnIpv6Host) {
  env_["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
  env_["KUBERNETES_SERVICE_PORT"] = "6443";
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://[fd00:10:96::1]:6443");
}

TEST_F(InClusterTest, PodNamespaceWinsAndDefaultIsTheFallback) {
  env_["POD_NAMESPACE"] = "from-env";
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->default_namespace, "from-env");
  env_.erase("POD_NAMESPACE");
  fs::remove(dir_.path() + "/namespace");
  cfg = InClusterConfig(Options());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->default_namespace, "default");
}

TEST_F(InClusterTest, OutsideAClusterIsNotFoundNamingTheVariable) {
  env_.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_FALSE(InCluster(Options()));
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kNotFound);
  EXPECT_NE(cfg.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos)
      << cfg.status().ToString();

  env_["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  env_["KUBERNETES_SERVICE_PORT"] = "";  // set but empty counts as unset
  cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kNotFound);
  EXPECT_NE(cfg.status().message().find("KUBERNETES_SERVICE_PORT"), std::string::npos)
      << cfg.status().ToString();
}

TEST_F(InClusterTest, AMissingOrEmptyTokenIsPermissionDenied) {
  fs::remove(dir_.path() + "/token");
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kPermissionDenied);
  EXPECT_NE(cfg.status().message().find(dir_.path() + "/token"), std::string::npos)
      << cfg.status().ToString();

  dir_.Write("token", " \n");
  cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kPermissionDenied);
  EXPECT_NE(cfg.status().message().find("empty"), std::string::npos) << cfg.status().ToString();
}

TEST_F(InClusterTest, ABadPortHostOrCaIsInvalid) {
  for (const char* port : {"https", "0", "65536", "-1", "443 "}) {
    env_["KUBERNETES_SERVICE_PORT"] = port;
    Result<RestConfig> cfg = InClusterConfig(Options());
    ASSERT_FALSE(cfg.ok()) << port;
    EXPECT_EQ(cfg.status().code(), Code::kInvalid) << port;
    EXPECT_NE(cfg.status().message().find("KUBERNETES_SERVICE_PORT"), std::string::npos)
        << cfg.status().ToString();
  }
  env_["KUBERNETES_SERVICE_PORT"] = "443";
  env_["KUBERNETES_SERVICE_HOST"] = "evil.example/path";
  EXPECT_EQ(InClusterConfig(Options()).status().code(), Code::kInvalid);
  env_["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";

  dir_.Write("ca.crt", "not a certificate");
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kInvalid);
  EXPECT_NE(cfg.status().message().find("ca.crt"), std::string::npos) << cfg.status().ToString();
  fs::remove(dir_.path() + "/ca.crt");
  cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), Code::kInvalid);
  EXPECT_NE(cfg.status().message().find("ca.crt"), std::string::npos) << cfg.status().ToString();
}

TEST_F(InClusterTest, MessagesNeverCarryTheToken) {
  env_["KUBERNETES_SERVICE_PORT"] = "bad";
  Result<RestConfig> cfg = InClusterConfig(Options());
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message().find("sa-token-1"), std::string::npos);
}

// A client built from the in-cluster config verifies the server against
// ca.crt and sends the token; after the kubelet swaps in a new token the
// same client sends the new one, and so does ReadInClusterToken.
TEST(InClusterClient, FollowsAProjectedTokenRotation) {
  testing::CertKey ca = testing::MakeCa("cluster-ca");
  testing::CertKey leaf =
      testing::MakeLeaf(ca, "apiserver", {"kubernetes.default.svc"}, {"127.0.0.1"});
  testing::FakeApiServer server(leaf.cert_pem, leaf.key_pem, "");
  const std::string url = server.url();  // https://127.0.0.1:PORT/clusters/edge-1
  const size_t port_at = url.rfind(':') + 1;
  const std::string port = url.substr(port_at, url.find('/', port_at) - port_at);

  ServiceAccountDir dir;
  dir.WriteProjected("rotating-token-1", ca.cert_pem, "eco-system");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", port}};
  InClusterOptions o;
  o.dir = dir.path();
  o.env = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Result<RestConfig> cfg = InClusterConfig(o);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  cfg->server += "/clusters/edge-1";  // where the fake serves its one cluster

  for (HttpTransport t : {HttpTransport::kDirect, HttpTransport::kCurl}) {
    ClientOptions co;
    co.transport = t;
    Result<std::unique_ptr<ClusterClient>> client = NewClusterClient(*cfg, co);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    auto d = (*client)->Discover();
    ASSERT_TRUE(d.ok()) << d.status().ToString();
  }
  std::vector<testing::SeenRequest> seen = server.seen();
  ASSERT_FALSE(seen.empty());
  for (const auto& r : seen) EXPECT_EQ(r.authorization, "Bearer rotating-token-1");

  Result<std::unique_ptr<ClusterClient>> client = NewClusterClient(*cfg);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->Discover().ok());
  dir.WriteProjected("rotating-token-2", ca.cert_pem, "eco-system");
  const size_t before = server.seen().size();
  ASSERT_TRUE((*client)->Discover().ok());
  seen = server.seen();
  ASSERT_GT(seen.size(), before);
  for (size_t i = before; i < seen.size(); ++i)
    EXPECT_EQ(seen[i].authorization, "Bearer rotating-token-2");
  Result<std::string> token = ReadInClusterToken(o);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "rotating-token-2");
}

}  // namespace
}  // namespace eco::k8s
