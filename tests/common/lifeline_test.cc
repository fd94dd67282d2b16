// Work posted for an owner that may be gone when it comes due.
#include "common/lifeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace eco {
namespace {

TEST(Lifeline, CallsRunWhileOpenAndNotAfterClose) {
  Lifeline line;
  int n = 0;
  auto call = line.Wrap([&] { ++n; });
  call();
  call();
  EXPECT_EQ(n, 2);
  line.Close();
  call();
  EXPECT_EQ(n, 2);
  line.Close();  // again: nothing to wait for
  // A wrapper made after Close does nothing either.
  line.Wrap([&] { ++n; })();
  EXPECT_EQ(n, 2);
}

TEST(Lifeline, CloseWaitsForTheCallRunning) {
  Lifeline line;
  std::atomic<bool> entered{false}, release{false}, finished{false};
  std::thread t(line.Wrap([&] {
    entered = true;
    while (!release) std::this_thread::yield();
    finished = true;
  }));
  while (!entered) std::this_thread::yield();
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    line.Close();
    closed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load());  // the call is still running
  release = true;
  closer.join();
  EXPECT_TRUE(finished.load());  // Close returned only after it ended
  t.join();
}

}  // namespace
}  // namespace eco
