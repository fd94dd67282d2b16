// What the console's browser tests share: eco serve and a kube-sim fleet,
// the two-tier example onboarded with ecoctl as a user does it, and a
// playwright-core script (tests/ui/*.mjs) run in Debian's Chromium with
// ECO_URL, SIM_URL, SHOTS_DIR and CHROMIUM in its environment.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "eco_fixture.h"
#include "kubesim_fixture.h"
#include "process.h"

namespace eco::ui {

namespace fs = std::filesystem;

inline std::string Source(const std::string& rel) {
  return eco::testing::ReadFile((fs::path(ECO_SOURCE_DIR) / rel).string());
}

// Runs a shell command; its output goes to `log`. Returns the exit code.
inline int Shell(const std::string& cmd, const std::string& log) {
  int rc = std::system((cmd + " >>'" + log + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::string Chromium() {
  const char* env = std::getenv("CHROMIUM");
  return env ? env : "/usr/bin/chromium";
}

// Where every browser test leaves its screenshots: build/ui-screenshots/.
inline fs::path ShotsDir() {
  return fs::path(eco::testing::BinaryPath("eco")).parent_path().parent_path() / "ui-screenshots";
}

struct ConsoleOptions {
  eco::testing::EcoOptions eco;
  std::string fleet_file;  // kube-sim's fleet; default examples/two-tier/fleet.yaml
  bool onboard_two_tier = true;
  // Applied to the copied example before its archives are made (a sed line, ...).
  std::string prepare_example;
};

class Console {
 public:
  explicit Console(ConsoleOptions o = {}) : opts_(std::move(o)) {}

  // Starts everything; a failed step is reported through gtest and answers false.
  bool Start() {
    const fs::path src = fs::path(ECO_SOURCE_DIR) / "examples/two-tier";
    if (!fs::exists(Chromium())) return Fail(Chromium() + " is missing: scripts/deps.sh installs Debian's chromium");
    if (!fs::exists(fs::path(ECO_SOURCE_DIR) / "tests/ui/node_modules/playwright-core"))
      return Fail("playwright-core is missing: scripts/deps.sh runs npm ci in tests/ui");
    eco_ = std::make_unique<eco::testing::EcoServer>(opts_.eco);
    if (!eco_->ready()) return Fail(eco_->error() + eco_->LogTail());
    eco::testing::KubeSimOptions ko;
    ko.fleet_file = opts_.fleet_file.empty() ? (src / "fleet.yaml").string() : opts_.fleet_file;
    sim_ = std::make_unique<eco::testing::KubeSim>(ko);
    if (!sim_->ok()) return Fail(sim_->error());
    if (!opts_.onboard_two_tier) return true;
    const fs::path ex = fs::path(dir_.path()) / "two-tier";
    const std::string log = dir_.path() + "/setup.log";
    fs::copy(src, ex, fs::copy_options::recursive);
    if (!opts_.prepare_example.empty() && Shell("cd '" + ex.string() + "' && " + opts_.prepare_example, log) != 0)
      return Fail(eco::testing::ReadFile(log));
    if (Shell("cd '" + ex.string() + "' && ./make-archives.sh", log) != 0) return Fail(eco::testing::ReadFile(log));
    fs::remove_all(ex / "kubeconfigs");
    fs::copy(sim_->kubeconfig_dir(), ex / "kubeconfigs", fs::copy_options::recursive);
    for (const char* f : {"prerequisites.yaml", "app.yaml"}) {
      if (Shell("cd '" + ex.string() + "' && '" + eco::testing::BinaryPath("ecoctl") + "' --endpoint " +
                    eco_->base_url() + " " + token_flag_ + " apply -f " + f + " -v values.yaml",
                log) != 0)
        return Fail(eco::testing::ReadFile(log));
    }
    return true;
  }

  // ecoctl's --token for onboarding when eco wants one.
  void set_onboarding_token(const std::string& t) { token_flag_ = "--token " + t; }

  // Runs tests/ui/SCRIPT with node; extra environment variables in `env`.
  // Answers its exit code; `output` gets what it printed.
  int Run(const std::string& script, const std::map<std::string, std::string>& env, std::string* output) {
    const std::string out = dir_.path() + "/" + script + ".log";
    std::string vars = "ECO_URL=" + eco_->base_url() + " SIM_URL=" + sim_->base_url() + " SHOTS_DIR='" +
                       ShotsDir().string() + "' CHROMIUM='" + Chromium() + "'";
    for (const auto& [k, v] : env) vars += " " + k + "='" + v + "'";
    int rc = Shell("cd '" + (fs::path(ECO_SOURCE_DIR) / "tests/ui").string() + "' && " + vars + " node " + script, out);
    *output = eco::testing::ReadFile(out) + "\n--- eco log (tail) ---\n" + eco_->LogTail();
    return rc;
  }

  eco::testing::EcoServer& eco() { return *eco_; }
  eco::testing::KubeSim& sim() { return *sim_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  bool Fail(const std::string& why) {
    ADD_FAILURE() << why;
    return false;
  }
  ConsoleOptions opts_;
  eco::testing::TempDir dir_;
  std::unique_ptr<eco::testing::EcoServer> eco_;
  std::unique_ptr<eco::testing::KubeSim> sim_;
  std::string token_flag_;
};

}  // namespace eco::ui
