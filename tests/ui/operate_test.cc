// Operating the fleet from the console, in Debian's headless Chromium:
// lifecycle operations confirmed with their fleet plan, a refusal with the
// API's message, agent cluster registration (operate.mjs); and an eco that
// wants tokens, seen by a project user and by an administrator
// (operate-auth.mjs).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "console_fixture.h"

namespace eco::ui {
namespace {

TEST(Operate, LifecycleWithPlansRefusalAndAgentRegistration) {
  Console console;
  ASSERT_TRUE(console.Start());
  // Web profiles that change the image, for the updates.
  const std::string ex = console.dir() + "/two-tier";
  ASSERT_EQ(Shell("cd '" + ex + "' && for v in 1.26 1.27 1.28; do d=profile-$v; cp -r profiles/web $d && "
                  "sed -i \"s/^image: .*/image: nginx:$v/\" $d/override_values.yaml && grep -q $v $d/override_values.yaml && "
                  "tar czf web-profile-$v.tgz -C $d . || exit 1; done",
                  console.dir() + "/profiles.log"),
            0)
      << eco::testing::ReadFile(console.dir() + "/profiles.log");
  std::string out;
  EXPECT_EQ(console.Run("operate.mjs", {{"EXAMPLE_DIR", ex}}, &out), 0) << out;
  for (const char* name : {"01-lc-instantiate-dialog", "02-instantiate-plan", "04-overview-problem", "05-update-plan",
                           "06-update-refused", "07-migrate-refused", "08-rollback-dialog", "09-terminate-dialog",
                           "10-agent-registered", "11-clusters-agent-filter"}) {
    EXPECT_TRUE(fs::exists(ShotsDir() / ("operate-" + std::string(name) + ".png"))) << name;
  }
}

TEST(Operate, TokenProtectedEcoAsksForATokenAndHidesWhatTheUserMayNotDo) {
  const std::string admin = "0123456789abcdef0123";
  const std::string user = "fedcba9876543210fedc";
  eco::testing::TempDir dir;
  const std::string tokens = dir.path() + "/tokens";
  std::ofstream(tokens) << admin << " ops *\n" << user << " alice demo\n";
  ConsoleOptions o;
  o.eco.extra_args = {"--auth-tokens", tokens};
  Console console(o);
  console.set_onboarding_token(admin);
  ASSERT_TRUE(console.Start());
  std::string out;
  EXPECT_EQ(console.Run("operate-auth.mjs", {{"ADMIN_TOKEN", admin}, {"USER_TOKEN", user}}, &out), 0) << out;
  for (const char* name : {"01-sign-in", "02-overview-project-user", "03-clusters-project-user", "04-overview-narrow"}) {
    EXPECT_TRUE(fs::exists(ShotsDir() / ("operate-auth-" + std::string(name) + ".png"))) << name;
  }
}

}  // namespace
}  // namespace eco::ui
