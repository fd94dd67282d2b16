#include "common/clock.h"

#include <memory>
#include <thread>

#include "common/timer_table.h"

namespace eco {

void Clock::SleepFor(Duration d) {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lk(mu);
  WaitFor(cv, lk, d, [] { return false; });
}

void Clock::WaitOnce(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, Time deadline) {
  std::mutex* mu = lk.mutex();
  const TimerId id = At(deadline, [mu, &cv] {
    // Taking the waiter's mutex orders this notify after its wait began.
    { std::lock_guard<std::mutex> g(*mu); }
    cv.notify_all();
  });
  cv.wait(lk);
  // The timer may be waiting for the mutex we hold: let it go first.
  lk.unlock();
  Cancel(id);
  lk.lock();
}

namespace {

// steady_clock/system_clock are read here and nowhere else in the
// components; timers share one thread.
class MachineClock final : public Clock {
 public:
  ~MachineClock() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Time Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }

  TimerId At(Time when, std::function<void()> fn) override {
    std::lock_guard<std::mutex> g(mu_);
    const TimerId id = timers_.Add(when, std::move(fn));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
    cv_.notify_all();
    return id;
  }

  bool Cancel(TimerId id) override {
    std::unique_lock<std::mutex> lk(mu_);
    return timers_.Cancel(id, lk);
  }

 protected:
  void WaitOnce(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, Time deadline) override {
    cv.wait_until(lk, ToSteady(deadline));
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      if (timers_.Empty()) {
        cv_.wait(lk);
      } else if (!timers_.RunNext(lk, Now())) {
        const Time when = timers_.Earliest();
        cv_.wait_until(lk, ToSteady(when));
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  TimerTable timers_;   // guarded by mu_
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace

Clock& RealClock() {
  static MachineClock clock;
  return clock;
}

Random Random::FromEntropy() {
  std::random_device rd;
  return Random((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

uint64_t Random::Next() {
  std::lock_guard<std::mutex> g(mu_);
  return rng_();
}

double Random::Uniform() {
  std::lock_guard<std::mutex> g(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

uint64_t Random::Between(uint64_t lo, uint64_t hi) {
  std::lock_guard<std::mutex> g(mu_);
  return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
}

Random& ProcessRandom() {
  static Random r = Random::FromEntropy();
  return r;
}

}  // namespace eco
