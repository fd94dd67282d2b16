// The armed timers of a Clock implementation, in time order. The machine
// clock and the tests' fake clock share it; the owner's mutex guards it and
// is passed in where a call must drop it to run a timer or wait for one.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/clock.h"

namespace eco {

class TimerTable {
 public:
  using Time = Clock::Time;
  using TimerId = Clock::TimerId;

  TimerId Add(Time when, std::function<void()> fn);
  bool Empty() const { return timers_.empty(); }
  size_t Size() const { return timers_.size(); }
  // The earliest armed timer's instant; the table must not be empty.
  Time Earliest() const { return timers_.begin()->first.first; }

  // Disarms `id`. A timer already running on another thread is waited for
  // (lk is dropped meanwhile), so that its callback has ended on return;
  // false when it was not armed.
  bool Cancel(TimerId id, std::unique_lock<std::mutex>& lk);

  // Runs the earliest timer if it is due at `upto`, with lk dropped while
  // it runs; *now, when given, is first moved up to the timer's instant.
  // False when nothing is due.
  bool RunNext(std::unique_lock<std::mutex>& lk, Time upto, Time* now = nullptr);

 private:
  std::map<std::pair<Time, TimerId>, std::function<void()>> timers_;
  std::unordered_map<TimerId, Time> index_;
  std::condition_variable done_;
  TimerId next_id_ = 0;
  TimerId running_ = 0;
  std::thread::id runner_;
};

}  // namespace eco
