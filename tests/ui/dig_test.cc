// The DIG page in Debian's headless Chromium: a staged rollout steered
// from its panel, drift and its repair, a refused action (dig.mjs); and
// a fleet of 1,001 clusters, one taken down, found problems-first and
// with the filters (dig-fleet.mjs).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "console_fixture.h"

namespace eco::ui {
namespace {

// Waves core1, then edge1+edge2, then the rest (edge3, edge4), with an
// approval before each wave after the first.
TEST(DigPage, RolloutDriftAndRefusals) {
  ConsoleOptions o;
  o.prepare_example =
      "sed -i 's/^  logicalCloud: {{ .LogicalCloud }}$/&\\n  rollout:\\n    waves:\\n"
      "      - {name: core, clusters: [central+core1]}\\n"
      "      - {name: first-edges, clusters: [edges+edge1, edges+edge2]}\\n"
      "    approval: between-waves/' app.yaml && grep -q between-waves app.yaml";
  Console console(o);
  ASSERT_TRUE(console.Start());
  std::string out;
  EXPECT_EQ(console.Run("dig.mjs", {{"KUBECONFIGS", console.sim().kubeconfig_dir()}}, &out), 0) << out;
  for (const char* name : {"01-instantiate-plan", "02-waiting-approval", "03-paused", "04-resumed", "05-refused",
                           "06-by-wave", "07-rollout-complete", "08-drifted", "09-repaired"}) {
    EXPECT_TRUE(fs::exists(ShotsDir() / ("dig-" + std::string(name) + ".png"))) << name;
  }
}

// 1,000 edges (e-1 … e-1000) and core1: web on every edge, db on core1.
TEST(DigPage, ThousandClustersProblemsFirstAndFilters) {
  eco::testing::TempDir dir;
  const std::string fleet = dir.path() + "/fleet.yaml";
  const std::string values = dir.path() + "/values.yaml";
  {
    std::ofstream f(fleet);
    f << "clusters:\n  - name: core1\n";
    for (int i = 1; i <= 1000; ++i) f << "  - name: e-" << i << "\n";
    std::ofstream v(values);
    v << "Project: demo\nCompositeApp: twotier\nVersion: v1\nDig: twotier-dig\nRelease: r1\nLogicalCloud: fleet\n"
         "Providers:\n  - Name: central\n    Label: central\n    Clusters: [core1]\n"
         "  - Name: edges\n    Label: edge\n    Clusters:\n";
    for (int i = 1; i <= 1000; ++i) v << "      - e-" << i << "\n";
    v << "Frontend: {Provider: edges, Label: edge, Replicas: 1}\n"
         "Database: {Provider: central, Cluster: core1}\nGreeting: hello\n";
  }
  ConsoleOptions o;
  o.fleet_file = fleet;
  o.prepare_example = "cp '" + values + "' values.yaml";
  Console console(o);
  ASSERT_TRUE(console.Start());
  std::string out;
  EXPECT_EQ(console.Run("dig-fleet.mjs", {}, &out), 0) << out;
  for (const char* name : {"01-all-ready", "02-one-down-first", "03-overview-problem", "04-unreachable-filter",
                           "05-grouped", "06-narrow"}) {
    EXPECT_TRUE(fs::exists(ShotsDir() / ("dig-fleet-" + std::string(name) + ".png"))) << name;
  }
}

}  // namespace
}  // namespace eco::ui
