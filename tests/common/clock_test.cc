#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fake_clock.h"

namespace eco {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

TEST(FakeClock, AdvanceRunsDueTimersInTimeOrderAndMovesNowToEach) {
  FakeClock c;
  const auto t0 = c.Now();
  std::vector<std::pair<int, Clock::Duration>> ran;
  c.After(3s, [&] { ran.push_back({3, c.Now() - t0}); });
  c.After(1s, [&] {
    ran.push_back({1, c.Now() - t0});
    c.After(1s, [&] { ran.push_back({2, c.Now() - t0}); });  // armed by a timer, due within the step
  });
  c.After(10s, [&] { ran.push_back({10, c.Now() - t0}); });
  c.Advance(5s);
  ASSERT_EQ(ran.size(), 3u);
  EXPECT_EQ(ran[0], std::make_pair(1, Clock::Duration(1s)));
  EXPECT_EQ(ran[1], std::make_pair(2, Clock::Duration(2s)));
  EXPECT_EQ(ran[2], std::make_pair(3, Clock::Duration(3s)));
  EXPECT_EQ(c.Now() - t0, Clock::Duration(5s));
  EXPECT_EQ(c.PendingTimers(), 1u);
  c.Advance(72h);
  EXPECT_EQ(ran.size(), 4u);
}

TEST(FakeClock, ACancelledTimerNeverRuns) {
  FakeClock c;
  bool ran = false;
  const auto id = c.After(1s, [&] { ran = true; });
  EXPECT_TRUE(c.Cancel(id));
  EXPECT_FALSE(c.Cancel(id));
  c.Advance(2s);
  EXPECT_FALSE(ran);
}

TEST(FakeClock, WallTimeMovesWithSteadyTime) {
  FakeClock c;
  const auto w0 = c.WallNow();
  c.Advance(36h);
  EXPECT_EQ(c.WallNow() - w0, Clock::Duration(36h));
}

TEST(FakeClock, AWaitingThreadWakesWhenItsDeadlinePassesAndNotBefore) {
  FakeClock c;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> woke{false};
  std::atomic<bool> armed{false};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lk(mu);
    armed = true;
    EXPECT_FALSE(c.WaitFor(cv, lk, 48h, [] { return false; }));
    woke = true;
  });
  while (c.PendingTimers() == 0) std::this_thread::yield();  // the waiter's deadline is armed
  c.Advance(47h);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(woke);
  c.Advance(1h);
  waiter.join();
  EXPECT_TRUE(woke);
}

TEST(FakeClock, ANotifyEndsAWaitWithoutTimeMoving) {
  FakeClock c;
  std::mutex mu;
  std::condition_variable cv;
  bool flag = false;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lk(mu);
    EXPECT_TRUE(c.WaitFor(cv, lk, 1h, [&] { return flag; }));
  });
  {
    std::lock_guard<std::mutex> g(mu);
    flag = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_EQ(c.PendingTimers(), 0u);  // the wait's timer was cancelled
}

TEST(RealClock, TimersRunInOrderAndCancelHolds) {
  Clock& c = RealClock();
  std::mutex mu;
  std::vector<int> ran;
  std::condition_variable cv;
  c.After(30ms, [&] {
    std::lock_guard<std::mutex> g(mu);
    ran.push_back(2);
    cv.notify_all();
  });
  c.After(5ms, [&] {
    std::lock_guard<std::mutex> g(mu);
    ran.push_back(1);
  });
  const auto never = c.After(10ms, [&] {
    std::lock_guard<std::mutex> g(mu);
    ran.push_back(99);
  });
  EXPECT_TRUE(c.Cancel(never));
  std::unique_lock<std::mutex> lk(mu);
  ASSERT_TRUE(cv.wait_for(lk, 10s, [&] { return ran.size() == 2; }));
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

TEST(RealClock, WaitForTimesOut) {
  Clock& c = RealClock();
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lk(mu);
  const auto t0 = c.Now();
  EXPECT_FALSE(c.WaitFor(cv, lk, 20ms, [] { return false; }));
  EXPECT_GE(c.Now() - t0, Clock::Duration(20ms));
}

TEST(Random, TheSameSeedGivesTheSameSequence) {
  Random a(42), b(42), d(43);
  std::vector<uint64_t> va, vb, vd;
  for (int i = 0; i < 8; ++i) {
    va.push_back(a.Next());
    vb.push_back(b.Next());
    vd.push_back(d.Next());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vd);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.Uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    const uint64_t x = a.Between(3, 5);
    EXPECT_GE(x, 3u);
    EXPECT_LE(x, 5u);
  }
}

}  // namespace
}  // namespace eco
