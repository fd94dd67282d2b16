// The dashboard: its files as eco serves them, and the page itself in
// Debian's headless Chromium (dashboard.mjs, driven by playwright-core)
// while eco deploys the two-tier example on a simulated fleet.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "eco_fixture.h"
#include "kubesim_fixture.h"
#include "process.h"

namespace eco::ui {
namespace {

namespace fs = std::filesystem;
using eco::testing::BinaryPath;
using eco::testing::EcoOptions;
using eco::testing::EcoServer;
using eco::testing::TempDir;

std::string Source(const std::string& rel) {
  return eco::testing::ReadFile((fs::path(ECO_SOURCE_DIR) / rel).string());
}

// Runs a shell command; its output goes to `log`. Returns the exit code.
int Shell(const std::string& cmd, const std::string& log) {
  int rc = std::system((cmd + " >>'" + log + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(DashboardFiles, ServedWithoutATokenAsTheyAreInTheSource) {
  TempDir dir;
  const std::string tokens = dir.path() + "/tokens";
  std::ofstream(tokens) << "0123456789abcdef0123 ops *\n";
  EcoOptions o;
  o.extra_args = {"--auth-tokens", tokens};
  EcoServer eco(o);
  ASSERT_TRUE(eco.ready()) << eco.error() << eco.LogTail();
  auto c = eco.client();

  // The API still wants a token; the page's files do not.
  EXPECT_EQ(c.Get("/v2/projects").status, 401);
  for (const auto& [path, file, type] :
       {std::tuple{"/ui/", "src/ui/index.html", "text/html; charset=utf-8"},
        std::tuple{"/ui/index.html", "src/ui/index.html", "text/html; charset=utf-8"},
        std::tuple{"/ui/app.js", "src/ui/app.js", "text/javascript; charset=utf-8"},
        std::tuple{"/ui/style.css", "src/ui/style.css", "text/css; charset=utf-8"}}) {
    auto r = c.Get(path);
    ASSERT_EQ(r.status, 200) << path << " " << r.Describe();
    EXPECT_EQ(r.content_type(), type) << path;
    EXPECT_TRUE(r.body == Source(file)) << path << " differs from " << file << " (" << r.body.size()
                                        << " bytes served): the build embeds the source tree's file";
    EXPECT_NE(r.header("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
    EXPECT_EQ(r.header("X-Content-Type-Options"), "nosniff");
    const std::string etag = r.header("ETag");
    ASSERT_FALSE(etag.empty());
    auto again = c.Get(path, {{"If-None-Match", etag}});
    EXPECT_EQ(again.status, 304) << path;
    EXPECT_TRUE(again.body.empty());
  }
  EXPECT_NE(c.Get("/ui/app.js").header("ETag"), c.Get("/ui/style.css").header("ETag"));
  for (const char* to_ui : {"/", "/ui"}) {
    auto r = c.Get(to_ui);
    EXPECT_EQ(r.status, 302) << to_ui;
    EXPECT_EQ(r.header("Location"), "/ui/") << to_ui;
  }
  auto missing = c.Get("/ui/secret.txt");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json().value("message", ""), "Not found: the dashboard has no file /ui/secret.txt");
  EXPECT_EQ(c.PostJson("/ui/", nlohmann::json::object()).status, 405);
}

// --ui=false: no dashboard, the API as before.
TEST(DashboardFiles, OffWhenAskedTo) {
  EcoOptions o;
  o.extra_args = {"--ui=false"};
  EcoServer eco(o);
  ASSERT_TRUE(eco.ready()) << eco.error() << eco.LogTail();
  auto c = eco.client();
  for (const char* path : {"/ui/", "/ui/app.js", "/ui", "/"}) EXPECT_EQ(c.Get(path).status, 404) << path;
  EXPECT_EQ(c.Get("/v2/projects").status, 200);
}

// The whole page in Chromium: dashboard.mjs says what it checks.
TEST(Dashboard, GridTurnsReadyLiveAndRedWhenAClusterGoesDown) {
  const fs::path ui = fs::path(ECO_SOURCE_DIR) / "tests/ui";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  ASSERT_TRUE(fs::exists(chromium)) << chromium << " is missing: scripts/deps.sh installs Debian's chromium";
  ASSERT_TRUE(fs::exists(ui / "node_modules/playwright-core"))
      << "playwright-core is missing: scripts/deps.sh runs npm ci in tests/ui";

  EcoServer eco(EcoOptions{});
  ASSERT_TRUE(eco.ready()) << eco.error() << eco.LogTail();
  const fs::path src = fs::path(ECO_SOURCE_DIR) / "examples/two-tier";
  eco::testing::KubeSimOptions ko;
  ko.fleet_file = (src / "fleet.yaml").string();
  eco::testing::KubeSim sim(ko);
  ASSERT_TRUE(sim.ok()) << sim.error();

  // The example's clusters and app, as a user onboards them; the test
  // script instantiates it with the page open.
  TempDir dir;
  const fs::path ex = fs::path(dir.path()) / "two-tier";
  const std::string log = dir.path() + "/setup.log";
  fs::copy(src, ex, fs::copy_options::recursive);
  // The web chart gets a field Deployments do not declare (a typo, as
  // users' charts carry): it deploys without it and the page says so.
  ASSERT_EQ(Shell("cd '" + ex.string() + "' && sed -i 's/^  replicas: .*/&\\n  revisionHistoryLimt: 3/' "
                  "charts/web/templates/deployment.yaml && grep -q revisionHistoryLimt charts/web/templates/deployment.yaml",
                  log),
            0)
      << eco::testing::ReadFile(log);
  ASSERT_EQ(Shell("cd '" + ex.string() + "' && ./make-archives.sh", log), 0) << eco::testing::ReadFile(log);
  fs::remove_all(ex / "kubeconfigs");
  fs::copy(sim.kubeconfig_dir(), ex / "kubeconfigs", fs::copy_options::recursive);
  for (const char* f : {"prerequisites.yaml", "app.yaml"}) {
    ASSERT_EQ(Shell("cd '" + ex.string() + "' && '" + BinaryPath("ecoctl") + "' --endpoint " + eco.base_url() +
                        " apply -f " + f + " -v values.yaml",
                    log),
              0)
        << eco::testing::ReadFile(log);
  }

  const fs::path shots = fs::path(BinaryPath("eco")).parent_path().parent_path() / "ui-screenshots";
  fs::remove_all(shots);
  const std::string out = dir.path() + "/browser.log";
  int rc = Shell("cd '" + ui.string() + "' && ECO_URL=" + eco.base_url() + " SIM_URL=" + sim.base_url() +
                     " SHOTS_DIR='" + shots.string() + "' CHROMIUM='" + chromium + "' node dashboard.mjs",
                 out);
  EXPECT_EQ(rc, 0) << eco::testing::ReadFile(out) << "\n--- eco log (tail) ---\n" << eco.LogTail();
  // Each step left its screenshot.
  for (const char* name : {"01-deployments", "03-dig-ready", "04-drill-down", "06-cluster-down",
                           "07-clusters-one-down", "09-api-error"}) {
    EXPECT_TRUE(fs::exists(shots / (std::string(name) + ".png"))) << name;
  }
}

}  // namespace
}  // namespace eco::ui
