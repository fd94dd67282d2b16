#include "status/ready_starts.h"

namespace eco::status {

bool WatchStarts::Busy(const std::string& cluster) const {
  std::lock_guard<std::mutex> l(mu_);
  return busy_.count(cluster) > 0;
}

void WatchStarts::Queue(std::map<std::string, std::vector<Item>> by_cluster) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return;
  for (auto& [cluster, group] : by_cluster) {
    if (group.empty() || !busy_.insert(cluster).second) continue;
    queue_.push_back(std::move(group));
  }
  Dispatch();
}

void WatchStarts::Retire(const std::vector<SubscriptionId>& subs) {
  std::lock_guard<std::mutex> l(mu_);
  retiring_.insert(retiring_.end(), subs.begin(), subs.end());
  if (!stopped_) Dispatch();
}

std::vector<SubscriptionId> WatchStarts::Stop() {
  std::lock_guard<std::mutex> l(mu_);
  stopped_ = true;
  std::vector<SubscriptionId> out;
  out.swap(retiring_);
  return out;
}

void WatchStarts::Dispatch() {
  while (running_ < limit_ && !queue_.empty()) {
    ++running_;
    post_([this, group = std::move(queue_.front())] { RunCluster(group); });
    queue_.pop_front();
  }
  if (running_ == 0 && queue_.empty() && !retiring_.empty()) post_([this] { EndRetired(); });
}

void WatchStarts::RunCluster(const std::vector<Item>& group) {
  for (const auto& t : group) {
    if (!start_(t)) break;  // the cluster did not answer: the rest waits for the next scan
  }
  std::lock_guard<std::mutex> l(mu_);
  busy_.erase(group.front().provider + "+" + group.front().cluster);
  --running_;
  if (!stopped_) Dispatch();
}

void WatchStarts::EndRetired() {
  std::vector<SubscriptionId> subs;
  {
    std::lock_guard<std::mutex> l(mu_);
    subs.swap(retiring_);
  }
  // Outside the lock: a running callback may be waiting for the monitor.
  for (auto id : subs) shared_.Unsubscribe(id);
}

}  // namespace eco::status
