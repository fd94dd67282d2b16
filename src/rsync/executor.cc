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

Executor::Executor(size_t threads, Clock& clock) : clock_(clock) {
  QueueGauges::Get();  // the series exist from the first scrape on
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

std::unique_ptr<Executor> Executor::Manual(Clock& clock) {
  return std::make_unique<Executor>(ManualTag{}, clock);
}

Executor::Executor(ManualTag, Clock& clock) : clock_(clock), manual_(true) { QueueGauges::Get(); }

Executor::~Executor() { Shutdown(); }

size_t Executor::RunReady() {
  size_t ran = 0;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_ && !ready_.empty()) {
    auto fn = std::move(ready_.front());
    ready_.pop_front();
    QueueGauges::Get().ready.Decrement();
    ++running_;
    lk.unlock();
    fn();
    fn = nullptr;
    ++ran;
    lk.lock();
    --running_;
  }
  return ran;
}

size_t Executor::Outstanding() {
  std::lock_guard<std::mutex> g(mu_);
  return timed_.size() + ready_.size() + running_;
}

void Executor::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    ready_.push_back(std::move(fn));
    QueueGauges::Get().ready.Increment();
  }
  cv_.notify_one();
}

void Executor::PostAt(Clock::Time when, std::function<void()> fn) {
  std::lock_guard<std::mutex> g(mu_);
  if (stop_) return;
  const uint64_t seq = ++seq_;
  // The timer only moves the function to the ready queue (timers must be quick).
  const Clock::TimerId id = clock_.At(when, [this, seq] { Due(seq); });
  timed_.emplace(seq, std::make_pair(id, std::move(fn)));
  QueueGauges::Get().timed.Increment();
}

void Executor::Due(uint64_t seq) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = timed_.find(seq);
    if (it == timed_.end()) return;
    ready_.push_back(std::move(it->second.second));
    timed_.erase(it);
    QueueGauges::Get().timed.Decrement();
    QueueGauges::Get().ready.Increment();
  }
  cv_.notify_one();
}

void Executor::Shutdown() {
  std::vector<Clock::TimerId> timers;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_ && threads_.empty() && timed_.empty() && ready_.empty()) return;
    stop_ = true;
    for (const auto& [seq, t] : timed_) timers.push_back(t.first);
  }
  cv_.notify_all();
  // Outside mu_: a timer running now waits for mu_ in Due.
  for (Clock::TimerId id : timers) clock_.Cancel(id);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  std::lock_guard<std::mutex> g(mu_);
  QueueGauges::Get().ready.Decrement(static_cast<double>(ready_.size()));
  QueueGauges::Get().timed.Decrement(static_cast<double>(timed_.size()));
  ready_.clear();
  timed_.clear();
}

void Executor::Work() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (ready_.empty()) {
      cv_.wait(lk);
      continue;
    }
    auto fn = std::move(ready_.front());
    ready_.pop_front();
    QueueGauges::Get().ready.Decrement();
    if (!ready_.empty()) cv_.notify_one();
    ++running_;
    lk.unlock();
    fn();
    fn = nullptr;  // destroy captures outside the lock
    lk.lock();
    --running_;
  }
}

}  // namespace eco::rsync
