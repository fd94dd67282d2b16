// A fixed pool of worker threads; rsync's tasks, event checks and context
// loops run here. Whatever must wait (a cluster that does not answer, a
// hook not ready yet, the next look at a queue) is a timer on the clock
// that posts it back, instead of a thread held.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace eco::rsync {

class Executor {
 public:
  explicit Executor(size_t threads, Clock& clock = RealClock());
  // No threads: what is posted runs only inside RunReady, on the caller's
  // thread (a deterministic simulation drives it with a fake clock).
  static std::unique_ptr<Executor> Manual(Clock& clock);
  struct ManualTag {};
  Executor(ManualTag, Clock& clock);  // use Manual()
  ~Executor();  // Shutdown()
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void Post(std::function<void()> fn);
  void PostAt(Clock::Time when, std::function<void()> fn);
  void PostAfter(Clock::Duration d, std::function<void()> fn) { PostAt(clock_.Now() + d, std::move(fn)); }
  // Joins the workers; queued and timed functions are dropped unrun.
  void Shutdown();
  // Manual mode: runs what is ready, and what that makes ready, until
  // nothing is; returns how many ran.
  size_t RunReady();
  bool manual() const { return manual_; }
  Clock& clock() { return clock_; }
  // Functions posted and not yet run to their end: timed, ready or running
  // (0: nothing posted here can still act; tests wait for it).
  size_t Outstanding();

 private:
  void Work();
  void Due(uint64_t seq);

  Clock& clock_;
  const bool manual_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ready_;  // guarded by mu_
  // Timed functions by sequence number, and their clock timers.
  std::map<uint64_t, std::pair<Clock::TimerId, std::function<void()>>> timed_;  // guarded by mu_
  uint64_t seq_ = 0;                                                           // guarded by mu_
  size_t running_ = 0;                                                         // guarded by mu_
  bool stop_ = false;                                                          // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace eco::rsync
