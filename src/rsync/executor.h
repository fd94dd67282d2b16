// A fixed pool of worker threads with a timer queue: rsync's tasks run here,
// and a task that must wait (a cluster that does not answer, a hook that is
// not ready yet) is re-posted for later instead of holding a thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace eco::rsync {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Executor(size_t threads);
  ~Executor();  // Shutdown()
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void Post(std::function<void()> fn);
  void PostAt(Clock::time_point when, std::function<void()> fn);
  // Joins the workers; queued and timed functions are dropped unrun.
  void Shutdown();

 private:
  struct Timed {
    Clock::time_point when;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timed& o) const { return when != o.when ? when > o.when : seq > o.seq; }
  };
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ready_;                                     // guarded by mu_
  std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>> timers_;  // guarded by mu_
  uint64_t seq_ = 0;                                                            // guarded by mu_
  bool stop_ = false;                                                           // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace eco::rsync
