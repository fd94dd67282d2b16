// rsync's pure logic: EMCO's event/state table, the update diff, the retry
// backoff, and the worker pool's timer queue.
#include "rsync/logic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>

#include "rsync/executor.h"

namespace eco::rsync {
namespace {

using appcontext::Resource;
using nlohmann::json;

TEST(DecideTest, AcceptedStatesRunWithTheRunningState) {
  for (const char* s : {"Created", "Instantiated", "InstantiateFailed", "Instantiating"}) {
    Decision d = Decide("instantiate", s, false, false);
    EXPECT_TRUE(d.run) << s;
    EXPECT_EQ(d.status, "Instantiating") << s;
  }
  EXPECT_EQ(Decide("terminate", "Instantiated", false, false).status, "Terminating");
  EXPECT_EQ(Decide("terminate", "UpdatedFailed", false, false).status, "Terminating");
  EXPECT_EQ(Decide("update", "Created", false, false).status, "Instantiating");
  EXPECT_EQ(Decide("update", "Updated", false, false).status, "Instantiating");  // rollback target
  EXPECT_EQ(Decide("update-delete", "Instantiated", false, false).status, "Updating");
}

TEST(DecideTest, InvalidEventIsSkippedWithItsFailureState) {
  Decision d = Decide("instantiate", "Terminated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_TRUE(d.change_status);
  EXPECT_EQ(d.status, "InstantiateFailed");
  EXPECT_NE(d.message.find("Terminated"), std::string::npos);
  d = Decide("update-delete", "Created", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_EQ(d.status, "UpdatedFailed");
  d = Decide("terminate", "Created", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_EQ(d.status, "TerminateFailed");
}

TEST(DecideTest, TerminateWhenTerminatedChangesNothing) {
  Decision d = Decide("terminate", "Terminated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_FALSE(d.change_status);
}

TEST(DecideTest, StopFlagRefusesEveryEvent) {
  for (const char* e : {"instantiate", "terminate", "update", "update-delete"}) {
    Decision d = Decide(e, "Instantiated", true, false);
    EXPECT_FALSE(d.run) << e;
    EXPECT_TRUE(d.change_status) << e;
    EXPECT_EQ(d.status, StatesFor(e)->failure) << e;
  }
}

TEST(DecideTest, QueuedTerminateRefusesOtherEventsOnly) {
  EXPECT_FALSE(Decide("instantiate", "Created", false, true).run);
  EXPECT_FALSE(Decide("update", "Created", false, true).run);
  EXPECT_TRUE(Decide("terminate", "Instantiated", false, true).run);
}

TEST(DecideTest, ResumedEventRunsAgain) {
  // A restart finds the status the event itself wrote.
  EXPECT_TRUE(Decide("update", "Instantiating", false, false).run);
  EXPECT_TRUE(Decide("update-delete", "Updating", false, false).run);
  EXPECT_TRUE(Decide("terminate", "Terminating", false, false).run);
}

TEST(DecideTest, UnknownEventIsSkippedWithoutStatusChange) {
  Decision d = Decide("read", "Instantiated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_FALSE(d.change_status);
  EXPECT_EQ(StatesFor("read"), nullptr);
}

Resource R(const std::string& name, int v) {
  return {name, json{{"kind", "ConfigMap"}, {"data", {{"v", v}}}}};
}

std::vector<std::string> Names(const std::vector<Resource>& v) {
  std::vector<std::string> out;
  for (const auto& r : v) out.push_back(r.name);
  return out;
}

TEST(DiffTest, ChangedKeepsNewOrderAndSkipsIdentical) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("d", 1), R("a", 1), R("b", 2)};
  EXPECT_EQ(Names(Changed(now, &before)), (std::vector<std::string>{"d", "b"}));
  EXPECT_EQ(Names(Changed(now, nullptr)), (std::vector<std::string>{"d", "a", "b"}));
  EXPECT_TRUE(Changed(before, &before).empty());
}

TEST(DiffTest, IdenticalButNeverAppliedIsApplied) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("a", 1), R("b", 2), R("c", 1)};
  std::set<std::string> on_cluster = {"a"};  // c never reached the cluster
  EXPECT_EQ(Names(Changed(now, &before, &on_cluster)), (std::vector<std::string>{"b", "c"}));
  on_cluster = {"a", "b", "c"};
  EXPECT_EQ(Names(Changed(now, &before, &on_cluster)), (std::vector<std::string>{"b"}));
}

TEST(DiffTest, RemovedKeepsOldOrder) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("b", 5)};
  EXPECT_EQ(Names(Removed(before, &now)), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Names(Removed(before, nullptr)), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(BackoffTest, DoublesUpToTheCapWithJitterInTheUpperHalf) {
  using std::chrono::milliseconds;
  EXPECT_EQ(Backoff(1, milliseconds(1000), milliseconds(60000), 0.999999).count(), 999);
  EXPECT_EQ(Backoff(1, milliseconds(1000), milliseconds(60000), 0.0).count(), 500);
  EXPECT_EQ(Backoff(3, milliseconds(1000), milliseconds(60000), 0.0).count(), 2000);
  EXPECT_EQ(Backoff(30, milliseconds(1000), milliseconds(60000), 0.0).count(), 30000);
  EXPECT_LE(Backoff(1000, milliseconds(1000), milliseconds(60000), 1.0).count(), 60000);
}

TEST(ExecutorTest, TimedTasksRunInDeadlineOrderOnFewThreads) {
  Executor ex(2);
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> done;
  auto now = Executor::Clock::now();
  auto rec = [&](int i) {
    std::lock_guard<std::mutex> g(mu);
    order.push_back(i);
    if (order.size() == 3) done.set_value();
  };
  ex.PostAt(now + std::chrono::milliseconds(60), [&] { rec(3); });
  ex.PostAt(now + std::chrono::milliseconds(30), [&] { rec(2); });
  ex.Post([&] { rec(1); });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ExecutorTest, ShutdownDropsWhatHasNotRun) {
  std::atomic<int> ran{0};
  {
    Executor ex(1);
    ex.PostAt(Executor::Clock::now() + std::chrono::hours(1), [&] { ++ran; });
    ex.Shutdown();
    ex.Post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace eco::rsync
