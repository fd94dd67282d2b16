// The dashboard: its files as eco serves them, and the page itself in
// Debian's headless Chromium (dashboard.mjs, driven by playwright-core)
// while eco deploys the two-tier example on a simulated fleet.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "console_fixture.h"

namespace eco::ui {
namespace {

using eco::testing::EcoOptions;
using eco::testing::EcoServer;
using eco::testing::TempDir;

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
  // A browser's request (it also accepts brotli) gets the file gzipped by
  // eco, typed as before; this client unzips it to the source's bytes.
  auto zipped = c.Get("/ui/dig.js", {{"Accept-Encoding", "gzip, deflate, br"}});
  EXPECT_EQ(zipped.header("Content-Encoding"), "gzip");
  EXPECT_EQ(zipped.content_type(), "text/javascript; charset=utf-8");
  EXPECT_TRUE(zipped.body == Source("src/ui/dig.js"));
  // Every module is served, and the page asks for all of them at once.
  const std::string index = Source("src/ui/index.html");
  for (const auto& f : fs::directory_iterator(fs::path(ECO_SOURCE_DIR) / "src/ui")) {
    const std::string name = f.path().filename().string();
    if (f.path().extension() != ".js" || name == "app.js") continue;
    EXPECT_EQ(c.Get("/ui/" + name).status, 200) << name;
    EXPECT_NE(index.find("<link rel=\"modulepreload\" href=\"" + name + "\">"), std::string::npos)
        << name << " is not preloaded by index.html";
  }
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
  // The web chart gets a field Deployments do not declare (a typo, as
  // users' charts carry): it deploys without it and the page says so.
  ConsoleOptions o;
  o.prepare_example =
      "sed -i 's/^  replicas: .*/&\\n  revisionHistoryLimt: 3/' charts/web/templates/deployment.yaml && "
      "grep -q revisionHistoryLimt charts/web/templates/deployment.yaml";
  Console console(o);
  ASSERT_TRUE(console.Start());
  std::string out;
  EXPECT_EQ(console.Run("dashboard.mjs", {}, &out), 0) << out;
  // Each step left its screenshot.
  for (const char* name : {"01-deployments", "03-dig-ready", "04-drill-down", "06-cluster-down",
                           "07-clusters-one-down", "09-api-error"}) {
    EXPECT_TRUE(fs::exists(ShotsDir() / ("dashboard-" + std::string(name) + ".png"))) << name;
  }
}

}  // namespace
}  // namespace eco::ui
