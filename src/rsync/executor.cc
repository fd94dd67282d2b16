#include "rsync/executor.h"

#include "common/metrics.h"

namespace eco::rsync {
namespace {

// Shared by every executor of the process: moved by deltas, not set.
struct QueueGauges {
  prometheus::Gauge& ready;
  prometheus::Gauge& timed;
  static QueueGauges& Get() {
    static QueueGauges g{
        prometheus::BuildGauge()
            .Name("eco_rsync_queue_depth")
            .Help("rsync tasks (an app on a cluster) ready to run and waiting for a worker.")
            .Register(metrics::Registry())
            .Add({}),
        prometheus::BuildGauge()
            .Name("eco_rsync_waiting_tasks")
            .Help("rsync tasks waiting for their time: retries of unreachable clusters, hooks and "
                  "dependencies.")
            .Register(metrics::Registry())
            .Add({})};
    return g;
  }
};

}  // namespace

Executor::Executor(size_t threads) {
  QueueGauges::Get();  // the series exist from the first scrape on
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

Executor::~Executor() { Shutdown(); }

void Executor::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    ready_.push_back(std::move(fn));
    QueueGauges::Get().ready.Increment();
  }
  cv_.notify_one();
}

void Executor::PostAt(Clock::time_point when, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    timers_.push(Timed{when, seq_++, std::move(fn)});
    QueueGauges::Get().timed.Increment();
  }
  // Every idle worker re-computes its deadline; one of them takes the timer.
  cv_.notify_all();
}

void Executor::Shutdown() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  std::lock_guard<std::mutex> g(mu_);
  QueueGauges::Get().ready.Decrement(static_cast<double>(ready_.size()));
  QueueGauges::Get().timed.Decrement(static_cast<double>(timers_.size()));
  ready_.clear();
  while (!timers_.empty()) timers_.pop();
}

void Executor::Work() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    auto now = Clock::now();
    while (!timers_.empty() && timers_.top().when <= now) {
      // priority_queue::top is const; the function is moved out before pop.
      ready_.push_back(std::move(const_cast<Timed&>(timers_.top()).fn));
      timers_.pop();
      QueueGauges::Get().timed.Decrement();
      QueueGauges::Get().ready.Increment();
    }
    if (!ready_.empty()) {
      auto fn = std::move(ready_.front());
      ready_.pop_front();
      QueueGauges::Get().ready.Decrement();
      if (!ready_.empty()) cv_.notify_one();
      lk.unlock();
      fn();
      fn = nullptr;  // destroy captures outside the lock
      lk.lock();
      continue;
    }
    if (timers_.empty()) {
      cv_.wait(lk);
    } else {
      // A copy: the heap may reallocate while we wait.
      const Clock::time_point when = timers_.top().when;
      cv_.wait_until(lk, when);
    }
  }
}

}  // namespace eco::rsync
