// The embedded store's leases and the store lock on a fake clock: a TTL or a
// lock timeout of hours passes in milliseconds, when the test says so and
// not before.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "fake_clock.h"
#include "process.h"
#include "store/lock.h"
#include "store/sqlite_store.h"

namespace eco::store {
namespace {

using namespace std::chrono_literals;
using ::eco::testing::FakeClock;
using ::eco::testing::TempDir;
using ::eco::testing::WaitUntil;

class SqliteOnFakeClock : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteOptions o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.random = &random_;
    auto s = OpenSqliteStore(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
  }

  bool Exists(const std::string& key) {
    auto kv = st_->Get(key);
    return kv.ok() && kv->has_value();
  }

  FakeClock clock_;
  Random random_{7};
  TempDir dir_;
  std::unique_ptr<Store> st_;  // after the clock: stopped before it goes
};

TEST_F(SqliteOnFakeClock, ALeaseExpiresWhenVirtualTimePassesItsTtlAndNotBefore) {
  auto lease = st_->GrantLease(30s);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_TRUE(st_->Put("/k", "v", *lease).ok());

  clock_.Advance(29s);
  std::this_thread::sleep_for(50ms);  // real time changes nothing
  EXPECT_TRUE(Exists("/k"));
  EXPECT_TRUE(st_->KeepAliveOnce(*lease).ok());  // deadline now 29 s + 30 s

  clock_.Advance(29s);
  EXPECT_TRUE(Exists("/k"));
  clock_.Advance(2s);
  // Past its deadline the lease is dead at once, reaped or not yet.
  EXPECT_EQ(st_->KeepAliveOnce(*lease).code(), Code::kNotFound);
  // The reaper wakes on the clock; keep it ticking until it has run.
  EXPECT_TRUE(WaitUntil(
      [&] {
        clock_.Advance(100ms);
        return !Exists("/k");
      },
      10s));
}

TEST_F(SqliteOnFakeClock, LeaseIdsReplayFromTheSeed) {
  Random replay(7);
  auto lease = st_->GrantLease(10s);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(*lease, static_cast<LeaseId>(replay.Next() & 0x7fffffffffffffffULL));
}

TEST_F(SqliteOnFakeClock, AKeeperHoldsItsLeaseThroughAHundredTtlsOfVirtualTime) {
  auto keeper = st_->KeepAlive(3s);  // refreshed every virtual second
  ASSERT_TRUE(keeper.ok()) << keeper.status().ToString();
  ASSERT_TRUE(st_->Put("/held", "v", (*keeper)->id()).ok());
  // Both the keeper and the reaper wait on the clock: one timer each.
  auto settled = [&] { return WaitUntil([&] { return clock_.PendingTimers() == 2; }, 10s); };
  ASSERT_TRUE(settled());
  for (int i = 0; i < 300; ++i) {
    clock_.Advance(1s);
    ASSERT_TRUE(settled()) << "step " << i;
  }
  EXPECT_TRUE((*keeper)->alive());
  EXPECT_TRUE(Exists("/held"));
  EXPECT_TRUE(st_->KeepAliveOnce((*keeper)->id()).ok());
}

TEST_F(SqliteOnFakeClock, ALockWaitTimesOutAfterAnHourOfVirtualTime) {
  auto holder = st_->GrantLease(3h);
  auto waiter = st_->GrantLease(3h);
  ASSERT_TRUE(holder.ok() && waiter.ok());
  auto held = TryLock(*st_, "/locks/l", *holder, clock_);
  ASSERT_TRUE(held.ok()) << held.status().ToString();

  const Clock::Time start = clock_.Now();
  std::atomic<bool> done{false};
  auto waited = std::async(std::launch::async, [&] {
    auto r = Lock(*st_, "/locks/l", *waiter, 1h, clock_);
    done = true;
    return r.status();
  });
  clock_.Advance(30min);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(done.load());  // half the timeout: still waiting
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (!done) clock_.Advance(1min);
        return done.load();
      },
      20s));
  Status st = waited.get();
  EXPECT_EQ(st.code(), Code::kUnavailable) << st.ToString();
  EXPECT_GE(clock_.Now() - start, Clock::Duration(1h));
  // The holder keeps the lock, and the waiter's queue entry is gone.
  auto again = TryLock(*st_, "/locks/l", *waiter, clock_);
  EXPECT_EQ(again.status().code(), Code::kConflict);
}

TEST_F(SqliteOnFakeClock, ALockWaiterTakesOverWhenTheHolderLeaseExpiresInVirtualTime) {
  auto holder = st_->GrantLease(10s);
  auto waiter = st_->GrantLease(3h);
  ASSERT_TRUE(holder.ok() && waiter.ok());
  auto held = TryLock(*st_, "/locks/m", *holder, clock_);
  ASSERT_TRUE(held.ok());
  const Clock::Time start = clock_.Now();
  std::atomic<bool> done{false};
  auto taken = std::async(std::launch::async, [&] {
    auto r = Lock(*st_, "/locks/m", *waiter, 1h, clock_);
    done = true;
    return r;
  });
  // The holder's lease lapses after 10 virtual seconds; its key goes with it.
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (!done) clock_.Advance(1s);
        return done.load();
      },
      20s));
  auto r = taken.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(clock_.Now() - start, Clock::Duration(10s));
  EXPECT_LT(clock_.Now() - start, Clock::Duration(1h));  // taken over, not timed out
  EXPECT_EQ((*held)->Unlock().code(), Code::kNotFound);  // lost with its lease
  EXPECT_TRUE((*r)->Unlock().ok());
}

}  // namespace
}  // namespace eco::store
