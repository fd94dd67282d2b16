// Scenarios of the deterministic simulation (label `sim`). Each prints its
// seed; ECO_SIM_SEED=<seed> replays one exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

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

}  // namespace
}  // namespace eco::sim
