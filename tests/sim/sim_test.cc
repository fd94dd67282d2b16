// Scenarios of the deterministic simulation (label `sim`). Each prints its
// seed; ECO_SIM_SEED=<seed> replays one exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "appcontext/rollout.h"
#include "harness.h"

namespace eco::sim {
namespace {

using namespace std::chrono_literals;

constexpr size_t kObjects = 5;  // App(3, ...): Namespace, 3 ConfigMaps, Deployment

// What a run did, for the log (a replay prints the same).
void Summary(Sim& s, const char* what) {
  std::printf("[sim] %s: seed %llu, %zu cluster calls, trace %016llx\n", what,
              static_cast<unsigned long long>(s.seed()), s.fleet().TraceLines(),
              static_cast<unsigned long long>(s.fleet().TraceHash()));
}

std::string Failing(Sim& s) {
  std::string out = "seed " + std::to_string(s.seed()) + " (replay: ECO_SIM_SEED=" + std::to_string(s.seed()) +
                    "); last calls:\n";
  for (const auto& l : s.fleet().TraceTail(10)) out += "  " + l + "\n";
  return out;
}

// 1,000 clusters, a tenth of them offline for three virtual days, then back.
TEST(Sim, ATenthOfAThousandClustersOfflineForThreeDays) {
  Sim s(SeedOr(1));
  ASSERT_NE(&s.store(), nullptr);
  const auto clusters = s.AddClusters(1000);
  Random pick(s.seed());
  const Clock::Time back = s.clock().Now() + 72h;
  std::set<std::string> offline;
  while (offline.size() < 100) offline.insert(clusters[pick.Between(0, clusters.size() - 1)]);
  for (const auto& c : offline) {
    Faults f;
    f.outages = {{s.clock().Now(), back}};
    s.fleet().SetFaults(c, f);
  }
  s.options().poll = 30s;
  s.options().lock_retry = 30s;
  s.options().retry_cap = 30min;
  ASSERT_GE(s.StartRsync(), 0);
  const auto rs = App(3, "1");
  const std::string id = s.Instantiate("dig", clusters, rs);
  // The 900 that answer are done long before the others come back.
  s.RunFor(1h);
  const std::string online = *std::find_if(clusters.begin(), clusters.end(), [&](const std::string& c) { return !offline.count(c); });
  EXPECT_EQ(s.fleet().State(online).objects.size(), kObjects) << Failing(s);
  EXPECT_TRUE(s.fleet().State(*offline.begin()).objects.empty());
  s.RunUntil([&] { return s.clock().Now() >= back; }, 72h);
  ASSERT_TRUE(s.RunUntil([&] { return s.StatusOf(id) == "Instantiated"; }, 2h)) << s.StatusOf(id) << "\n" << Failing(s);
  s.RunFor(2min);
  EXPECT_EQ(s.ClustersHold("dig", rs), "") << Failing(s);
  EXPECT_EQ(s.StatusSays("dig", "Applied", kObjects), "") << Failing(s);
  EXPECT_EQ(s.NothingInFlight(), "") << Failing(s);
  Summary(s, "offline for three days");
}

// rsync killed at seeded instants, a new process started on the same store
// each time; the deployment completes with exactly the desired objects.
TEST(Sim, RsyncKilledAndRestartedAtSeededInstants) {
  Sim s(SeedOr(2));
  const auto clusters = s.AddClusters(60);
  for (size_t i = 0; i < clusters.size(); i += 7) {
    Faults f;
    f.latency = 200ms;
    f.error_rate = 0.05;
    s.fleet().SetFaults(clusters[i], f);
  }
  int rs_id = s.StartRsync();
  ASSERT_GE(rs_id, 0);
  const auto v1 = App(3, "1"), v2 = App(3, "2");
  const std::string first = s.Instantiate("dig", clusters, v1);
  Random when(s.seed());
  for (int k = 0; k < 3; ++k) {
    s.RunFor(std::chrono::milliseconds(when.Between(200, 4000)));
    s.Kill(rs_id);
    if (k == 1) s.Update("dig", v2);  // queued while no rsync runs
    rs_id = s.StartRsync();
    ASSERT_GE(rs_id, 0);
  }
  const std::string now = s.Current("dig");
  ASSERT_NE(now, first);
  ASSERT_TRUE(s.RunUntil([&] { return s.StatusOf(now) == "Instantiated" && s.NothingInFlight().empty(); }, 2h))
      << s.StatusOf(first) << " / " << s.StatusOf(now) << ": " << s.NothingInFlight() << "\n" << Failing(s);
  EXPECT_EQ(s.ClustersHold("dig", v2), "") << Failing(s);
  EXPECT_EQ(s.StatusSays("dig", "Applied", kObjects), "") << Failing(s);
  Summary(s, "killed and restarted");
}

// An update and then a terminate queued while a fifth of the clusters is
// down: once they are back every cluster is empty, and nothing was applied
// after the context was terminated.
TEST(Sim, UpdateAndTerminateRacingAnOutage) {
  Sim s(SeedOr(3));
  const auto clusters = s.AddClusters(50);
  ASSERT_GE(s.StartRsync(), 0);
  const std::string first = s.Instantiate("dig", clusters, App(3, "1"));
  ASSERT_TRUE(s.RunUntil([&] { return s.StatusOf(first) == "Instantiated"; }, 1h)) << Failing(s);
  const Clock::Time back = s.clock().Now() + 6h;
  for (size_t i = 0; i < clusters.size(); i += 5) {
    Faults f;
    f.outages = {{s.clock().Now(), back}};
    s.fleet().SetFaults(clusters[i], f);
  }
  const std::string second = s.Update("dig", App(2, "2"));
  s.RunFor(10min);
  s.Terminate("dig");
  Clock::Time terminated{};
  ASSERT_TRUE(s.RunUntil(
      [&] {
        if (s.StatusOf(second) != "Terminated") return false;
        terminated = s.clock().Now();
        return true;
      },
      12h))
      << s.StatusOf(second) << "\n" << Failing(s);
  s.RunFor(1h);
  EXPECT_EQ(s.ClustersHoldNothing("dig"), "") << Failing(s);
  EXPECT_EQ(s.NothingInFlight(), "") << Failing(s);
  for (const auto& c : clusters) {
    for (const auto& a : s.fleet().AppliesOf(c)) {
      EXPECT_LE(a.at, terminated) << a.kind << " " << a.name << " applied on " << c << " after the terminate ended";
    }
  }
  Summary(s, "update and terminate racing an outage");
}

// Two rsync processes share the store; one dies while clusters are slow.
// The other takes its contexts over once its lease ends, and every DIG
// converges.
TEST(Sim, TwoInstancesShareTheStoreAndOneDies) {
  Sim s(SeedOr(4));
  const auto clusters = s.AddClusters(40);
  for (const auto& c : clusters) {
    Faults f;
    f.latency = 100ms;
    f.throttle_rate = 0.02;
    s.fleet().SetFaults(c, f);
  }
  const int a = s.StartRsync(), b = s.StartRsync();
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  const auto rs = App(3, "1");
  std::vector<std::string> ids;
  for (int d = 0; d < 8; ++d) {
    std::vector<std::string> mine(clusters.begin() + d * 5, clusters.begin() + d * 5 + 5);
    ids.push_back(s.Instantiate("dig" + std::to_string(d), mine, rs));
  }
  s.RunFor(std::chrono::milliseconds(Random(s.seed()).Between(500, 3000)));
  s.Kill(a);
  ASSERT_TRUE(s.RunUntil(
      [&] {
        for (const auto& id : ids) {
          if (s.StatusOf(id) != "Instantiated") return false;
        }
        return s.NothingInFlight().empty();
      },
      2h))
      << s.NothingInFlight() << "\n" << Failing(s);
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(s.ClustersHold("dig" + std::to_string(d), rs), "") << Failing(s);
    EXPECT_EQ(s.StatusSays("dig" + std::to_string(d), "Applied", kObjects), "") << Failing(s);
  }
  Summary(s, "two instances, one dies");
}

// The same seed gives the same trace: every call every cluster answered,
// in order, at the same virtual instant.
uint64_t TraceOf(uint64_t seed) {
  Sim s(seed);
  const auto clusters = s.AddClusters(20);
  for (size_t i = 0; i < clusters.size(); i += 3) {
    Faults f;
    f.latency = 50ms;
    f.error_rate = 0.1;
    f.outages = {{s.clock().Now() + 1s, s.clock().Now() + 30min}};
    s.fleet().SetFaults(clusters[i], f);
  }
  int r = s.StartRsync();
  s.Instantiate("dig", clusters, App(3, "1"));
  s.RunFor(std::chrono::milliseconds(Random(seed).Between(500, 2000)));
  s.Kill(r);
  s.StartRsync();
  s.Update("dig", App(2, "2"));
  s.RunUntil([&] { return s.StatusOf(s.Current("dig")) == "Instantiated"; }, 2h);
  s.RunFor(1min);
  EXPECT_EQ(s.ClustersHold("dig", App(2, "2")), "") << Failing(s);
  Summary(s, "replay");
  return s.fleet().TraceHash() ^ s.fleet().TraceLines();
}

TEST(Sim, TheSameSeedGivesTheSameTrace) {
  const uint64_t seed = SeedOr(5);
  const uint64_t first = TraceOf(seed);
  EXPECT_EQ(TraceOf(seed), first) << "seed " << seed << " did not replay exactly";
}

// A staged update (spec.rollout) on 30 clusters in three waves. The ready reports of the second wave go stale: they still
// say Ready at the previous revision's generation, as a monitor that has
// not seen the apply. The gate must not pass them: they time out, the
// rollout rolls back, and the third wave is never touched. rsync is killed
// mid-way through the first wave; a new instance resumes without applying
// again to the clusters that were done.
TEST(Sim, StagedUpdateRollsBackOnStaleHealthAndSurvivesAKill) {
  using nlohmann::json;
  Sim s(SeedOr(5));
  const auto clusters = s.AddClusters(30);
  s.options().poll = 5s;
  s.options().lock_retry = 5s;
  std::vector<std::string> w1(clusters.begin(), clusters.begin() + 10), w2(clusters.begin() + 10, clusters.begin() + 20);
  auto keys = [](const std::vector<std::string>& cs) {
    json out = json::array();
    for (const auto& c : cs) out.push_back("sim+" + c);
    return out;
  };
  const json rollout = {{"waves", {{{"name", "one"}, {"clusters", keys(w1)}}, {{"name", "two"}, {"clusters", keys(w2)}}}},
                        {"maxConcurrency", 3}, {"soakSeconds", 30}, {"readyTimeoutSeconds", 300},
                        {"maxFailures", 0}, {"offline", "wait"}, {"onFailure", "rollback"}, {"approval", "none"}};
  const int a = s.StartRsync();
  ASSERT_GE(a, 0);
  // The update adds an object: the rollback deletes it, and its gate must not wait for it.
  const auto v1 = App(3, "1"), v2 = App(4, "2");
  const std::string first = s.Instantiate("dig", clusters, v1, rollout);
  auto all = [](const std::string&) { return true; };
  ASSERT_TRUE(s.RunUntil([&] { s.ReportReady("dig", all); return s.StatusOf(first) == "Instantiated"; }, 6h))
      << s.StatusOf(first) << "\n" << Failing(s);
  auto progress = [&](const std::string& ctx) {
    auto kv = s.store().Get(appcontext::RolloutKey(ctx));
    if (!kv.ok() || !kv->has_value()) return appcontext::RolloutProgress{};
    auto p = appcontext::RolloutProgressFromJson(json::parse((*kv)->value));
    return p.ok() ? *p : appcontext::RolloutProgress{};
  };
  EXPECT_EQ(progress(first).state, "Complete");

  const Clock::Time updated = s.clock().Now();
  const std::string second = s.Update("dig", v2, rollout);
  // The second wave's reports stop: what they last said (Ready, at the
  // previous revision's generations) stays.
  const std::set<std::string> stale(w2.begin(), w2.end());
  auto reported = [&](const std::string& c) { return !stale.count(c); };
  bool killed = false;
  Clock::Time killed_at{};
  std::vector<std::string> done_before;  // clusters that had ended when it was killed
  ASSERT_TRUE(s.RunUntil(
      [&] {
        s.ReportReady("dig", all, reported);
        if (!killed) {
          auto p = progress(second);
          auto ends = s.store().Range(appcontext::RolloutClusterPrefix(second));
          if (p.event > 0 && p.wave == 0 && ends.ok() && !ends->kvs.empty()) {
            s.Kill(a);  // the only instance: it was running the rollout
            (void)s.StartRsync();
            killed = true;
            killed_at = s.clock().Now();
            for (const auto& kv : ends->kvs) done_before.push_back(kv.key.substr(kv.key.rfind("+") + 1));
          }
        }
        return progress(second).state == "RollingBack";
      },
      24h))
      << progress(second).state << "\n" << Failing(s);
  ASSERT_TRUE(killed);
  ASSERT_FALSE(done_before.empty());
  // Until the rollback, the survivor applied nothing again where the rollout had finished.
  const Clock::Time rolling_back = s.clock().Now();
  for (const auto& c : done_before) {
    for (const auto& ap : s.fleet().AppliesOf(c)) {
      EXPECT_FALSE(ap.at > killed_at && ap.at < rolling_back) << c << " applied again: " << ap.name;
    }
  }
  ASSERT_TRUE(s.RunUntil([&] { s.ReportReady("dig", all); return s.ClustersHold("dig", v1).empty(); }, 24h))
      << s.ClustersHold("dig", v1) << "\n" << Failing(s);
  const auto p = progress(second);
  // The rollback ran as a rollout of the first revision and passed its gates.
  EXPECT_TRUE(s.RunUntil(
      [&] {
        s.ReportReady("dig", all);
        auto undo = progress(first);
        return undo.event == p.rollback_event && undo.state == "Complete";
      },
      6h))
      << progress(first).state << " " << progress(first).reason;
  EXPECT_EQ(p.wave, 1u);
  EXPECT_NE(p.reason.find("not done within readyTimeoutSeconds"), std::string::npos) << p.reason;
  EXPECT_EQ(p.rollback_context, first);
  // The third wave never received the second revision.
  for (size_t i = 20; i < clusters.size(); ++i) {
    for (const auto& ap : s.fleet().AppliesOf(clusters[i])) EXPECT_LT(ap.at, updated) << clusters[i] << " " << ap.name;
  }
  Summary(s, "staged update");
}

// A cluster of the second wave unreachable for two virtual hours, far
// past readyTimeoutSeconds: under offline "wait" the rollout waits for it
// (the time it was away does not count) and completes; under "fail" it
// fails at once and the rollout pauses.
class OfflinePolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(OfflinePolicy, UnreachableClusterInAWave) {
  using nlohmann::json;
  Sim s(SeedOr(9));
  const auto clusters = s.AddClusters(6);
  s.options().poll = 5s;
  s.options().retry_cap = 5min;
  const Clock::Time back = s.clock().Now() + 2h;
  Faults f;
  f.outages = {{s.clock().Now(), back}};
  s.fleet().SetFaults(clusters[4], f);
  const json rollout = {{"waves", {{{"name", "one"}, {"clusters", {"sim+" + clusters[0], "sim+" + clusters[1]}}}}},
                        {"maxFailures", 0}, {"soakSeconds", 0}, {"readyTimeoutSeconds", 600},
                        {"offline", GetParam()}, {"onFailure", "pause"}, {"approval", "none"}};
  ASSERT_GE(s.StartRsync(), 0);
  const std::string id = s.Instantiate("dig", clusters, App(1, "1"), rollout);
  auto all = [](const std::string&) { return true; };
  auto state = [&] {
    auto kv = s.store().Get(appcontext::RolloutKey(id));
    if (!kv.ok() || !kv->has_value()) return std::string();
    auto p = appcontext::RolloutProgressFromJson(json::parse((*kv)->value));
    return p.ok() ? p->state : std::string();
  };
  if (GetParam() == "fail") {
    ASSERT_TRUE(s.RunUntil([&] { s.ReportReady("dig", all); return state() == "Paused"; }, 1h)) << state() << Failing(s);
    EXPECT_LT(s.clock().Now(), back);
    auto end = s.store().Get(appcontext::RolloutClusterKey(id, "sim+" + clusters[4]));
    ASSERT_TRUE(end.ok() && end->has_value());
    EXPECT_NE((*end)->value.find("unreachable"), std::string::npos) << (*end)->value;
    return;
  }
  ASSERT_TRUE(s.RunUntil([&] { s.ReportReady("dig", all); return state() == "Complete"; }, 6h)) << state() << Failing(s);
  EXPECT_GE(s.clock().Now(), back);
  EXPECT_EQ(s.ClustersHold("dig", App(1, "1")), "") << Failing(s);
  Summary(s, ("offline " + GetParam()).c_str());
}

INSTANTIATE_TEST_SUITE_P(Sim, OfflinePolicy, ::testing::Values("wait", "fail"));

}  // namespace
}  // namespace eco::sim
