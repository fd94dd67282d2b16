#include "common/timer_table.h"

namespace eco {

TimerTable::TimerId TimerTable::Add(Time when, std::function<void()> fn) {
  const TimerId id = ++next_id_;
  timers_.emplace(std::make_pair(when, id), std::move(fn));
  index_.emplace(id, when);
  return id;
}

bool TimerTable::Cancel(TimerId id, std::unique_lock<std::mutex>& lk) {
  if (auto it = index_.find(id); it != index_.end()) {
    timers_.erase(std::make_pair(it->second, id));
    index_.erase(it);
    return true;
  }
  // A timer cancelling itself from its own callback must not wait.
  if (running_ == id && runner_ != std::this_thread::get_id()) {
    done_.wait(lk, [&] { return running_ != id; });
  }
  return false;
}

bool TimerTable::RunNext(std::unique_lock<std::mutex>& lk, Time upto, Time* now) {
  if (timers_.empty() || timers_.begin()->first.first > upto) return false;
  auto it = timers_.begin();
  if (now != nullptr && it->first.first > *now) *now = it->first.first;
  auto fn = std::move(it->second);
  running_ = it->first.second;
  runner_ = std::this_thread::get_id();
  index_.erase(running_);
  timers_.erase(it);
  lk.unlock();
  fn();
  fn = nullptr;
  lk.lock();
  running_ = 0;
  done_.notify_all();
  return true;
}

}  // namespace eco
