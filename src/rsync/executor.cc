#include "rsync/executor.h"

namespace eco::rsync {

Executor::Executor(size_t threads) {
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
  }
  cv_.notify_one();
}

void Executor::PostAt(Clock::time_point when, std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    timers_.push(Timed{when, seq_++, std::move(fn)});
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
    }
    if (!ready_.empty()) {
      auto fn = std::move(ready_.front());
      ready_.pop_front();
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
