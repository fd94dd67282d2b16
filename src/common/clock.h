// Time and randomness reach components from outside: a Clock and a Random
// passed in, so that a test can run days of outage in seconds on a fake clock
// (tests/fixtures/fake_clock.h) and replay a seed exactly. Only this module
// reads the machine's clocks and entropy; scripts/check_clock.sh enforces it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>

namespace eco {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  // Monotonic time: deadlines, backoff, expiry. Same epoch as steady_clock
  // for the real clock; a fake starts wherever it is told.
  using Time = std::chrono::time_point<std::chrono::steady_clock, Duration>;
  // Wall time: time stamps users read (RFC 3339 in records, logs).
  using WallTime = std::chrono::time_point<std::chrono::system_clock, Duration>;
  using TimerId = uint64_t;

  virtual ~Clock() = default;
  virtual Time Now() const = 0;
  virtual WallTime WallNow() const = 0;

  // Runs `fn` once at or after `when`. It must be quick (it runs on the
  // clock's one timer thread, or inside FakeClock::Advance): post real work
  // elsewhere. Returns an id for Cancel; never 0.
  virtual TimerId At(Time when, std::function<void()> fn) = 0;
  TimerId After(Duration d, std::function<void()> fn) { return At(Now() + d, std::move(fn)); }
  // True if the timer had not run and now never will. If it is running on
  // another thread, waits for it to end first (so its captures may be freed
  // after Cancel returns); from inside its own callback it returns false.
  virtual bool Cancel(TimerId id) = 0;

  // Blocks on `cv` until `pred()` holds or `deadline` passes on this clock;
  // returns pred(). `lk` holds cv's mutex, as for condition_variable.
  // Notifiers of cv wake it as usual.
  template <class Pred>
  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, Time deadline, Pred pred) {
    while (!pred()) {
      if (Now() >= deadline) return pred();
      WaitOnce(cv, lk, deadline);
    }
    return true;
  }
  template <class Pred>
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, Duration d, Pred pred) {
    return WaitUntil(cv, lk, Now() + d, std::move(pred));
  }
  // Sleeps the calling thread (nothing can wake it early).
  void SleepFor(Duration d);

 protected:
  // One wait on cv that ends by a notify, spuriously, or once `deadline`
  // has passed on this clock. The default arms a timer that notifies cv.
  virtual void WaitOnce(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, Time deadline);
};

// The machine's clocks; timers on one thread started at the first At.
Clock& RealClock();

// A seedable source of randomness, safe to share between threads. Jitter
// and ids come from here, never from std::random_device directly.
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  // Seeded from the machine's entropy (production).
  static Random FromEntropy();
  uint64_t Next();
  // Uniform in [0, 1).
  double Uniform();
  // Uniform in [lo, hi].
  uint64_t Between(uint64_t lo, uint64_t hi);

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

// Shared by components that were not given one (seeded from entropy once).
Random& ProcessRandom();

// Converts between the clock's time and the standard types (for APIs such
// as gRPC deadlines that take steady_clock/system_clock time points).
inline std::chrono::steady_clock::time_point ToSteady(Clock::Time t) {
  return std::chrono::time_point_cast<std::chrono::steady_clock::duration>(
      std::chrono::steady_clock::time_point(t.time_since_epoch()));
}
inline std::chrono::system_clock::time_point ToSystem(Clock::WallTime t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()));
}

}  // namespace eco
