// The install manifest as a user applies it: `kubectl apply -f -` (client-
// side and server-side) of AgentManifest's output, with real kubectl against
// a kube-sim process. kubectl reads the YAML with go-yaml, so this also
// judges the quoting and the comments.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/manifest.h"
#include "common/base64.h"
#include "kubesim_fixture.h"
#include "status_matchers.h"

namespace eco::agent {
namespace {

struct CmdResult {
  int code = -1;
  std::string out;
};

class ManifestKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(ECO_KUBECTL))
      GTEST_SKIP() << ECO_KUBECTL << " is missing (scripts/deps.sh)";
    sim_ = std::make_unique<testing::KubeSim>(testing::KubeSimOptions{});
    ASSERT_TRUE(sim_->ok()) << sim_->error();
  }

  // kubectl ARGS < stdin_file, stderr folded into the output.
  CmdResult Kubectl(const std::string& args, const std::string& stdin_file = "/dev/null") {
    const std::string cmd = "KUBECONFIG='" + sim_->kubeconfig("cluster-1") + "' '" + ECO_KUBECTL +
                            "' --cache-dir '" + sim_->work_dir() +
                            "/cache' --request-timeout=30s " + args + " <'" + stdin_file + "' 2>&1";
    CmdResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
  }

  std::unique_ptr<testing::KubeSim> sim_;
};

TEST_F(ManifestKubectlTest, KubectlAppliesItAndTheSecretHoldsTheToken) {
  ManifestOptions o;
  o.hub = "https://hub.example.com:9443";
  o.token = "boot.Zk3qT9-xY_1a/b+c=";
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(o));
  const std::string file = sim_->work_dir() + "/agent.yaml";
  std::ofstream(file) << yaml;

  CmdResult applied = Kubectl("apply -f -", file);
  ASSERT_EQ(applied.code, 0) << applied.out;
  for (const char* created : {"namespace/eco-system", "serviceaccount/eco-agent",
                              "clusterrole.rbac.authorization.k8s.io/eco-agent.eco-system",
                              "clusterrolebinding.rbac.authorization.k8s.io/eco-agent.eco-system",
                              "role.rbac.authorization.k8s.io/eco-agent-state",
                              "rolebinding.rbac.authorization.k8s.io/eco-agent-state",
                              "secret/eco-agent-bootstrap", "deployment.apps/eco-agent"}) {
    EXPECT_NE(applied.out.find(std::string(created) + " created"), std::string::npos)
        << created << "\n"
        << applied.out;
  }
  // Applying again, or server-side, is accepted as well.
  CmdResult again = Kubectl("apply -f -", file);
  EXPECT_EQ(again.code, 0) << again.out;
  CmdResult ssa = Kubectl("apply --server-side --force-conflicts -f -", file);
  EXPECT_EQ(ssa.code, 0) << ssa.out;

  CmdResult token =
      Kubectl("-n eco-system get secret eco-agent-bootstrap -o jsonpath={.data.token}");
  ASSERT_EQ(token.code, 0) << token.out;
  ASSERT_OK_AND_ASSIGN(std::string decoded, Base64Decode(token.out));
  EXPECT_EQ(decoded, o.token);
  CmdResult strategy =
      Kubectl("-n eco-system get deployment eco-agent -o jsonpath={.spec.strategy.type}");
  EXPECT_EQ(strategy.out, "Recreate");
}

}  // namespace
}  // namespace eco::agent
