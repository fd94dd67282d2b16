// The ready monitor's watch starts (docs/status.md, "How the ready monitor
// is built"): the subscriptions the plans need and do not hold yet, started
// per cluster, each cluster a task on the executor, a bounded number at
// once: starting one resolves the kind on the cluster, which waits for the
// connect timeout when the cluster is down, and must not hold up the rounds.
// The subscriptions of plans gone are ended once no start is queued or
// running, so that a watch the next revision of a context reads too keeps
// its stream (its new subscriber came first).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "status/shared_watches.h"

namespace eco::status {

class WatchStarts {
 public:
  struct Item {
    std::string sctx;
    uint64_t serial;
    std::string key;  // in Plan::watches
    std::string provider, cluster, api_version, kind;
  };
  // Subscribes one; false when the cluster did not answer (its other
  // items wait for the next Queue).
  using StartFn = std::function<bool(const Item&)>;
  // Runs a task on the executor (unless the monitor stopped).
  using PostFn = std::function<void(std::function<void()>)>;

  // `shared` must outlive it.
  WatchStarts(size_t limit, StartFn start, PostFn post, SharedWatches& shared)
      : limit_(limit == 0 ? 1 : limit),
        start_(std::move(start)),
        post_(std::move(post)),
        shared_(shared) {}

  // Whether the cluster ("provider+cluster") has starts queued or running.
  bool Busy(const std::string& cluster) const;
  // Queues each cluster's items (by "provider+cluster"; not Busy ones).
  void Queue(std::map<std::string, std::vector<Item>> by_cluster);
  // Ends these subscriptions once no start is queued or running.
  void Retire(const std::vector<SubscriptionId>& subs);
  // Stops starting; the subscriptions still to end are the caller's now.
  std::vector<SubscriptionId> Stop();

 private:
  void Dispatch();  // mu_ held
  void RunCluster(const std::vector<Item>& group);
  void EndRetired();

  const size_t limit_;
  StartFn start_;
  PostFn post_;
  SharedWatches& shared_;
  mutable std::mutex mu_;
  bool stopped_ = false;                  // guarded by mu_
  std::set<std::string> busy_;            // guarded by mu_
  std::deque<std::vector<Item>> queue_;   // guarded by mu_
  size_t running_ = 0;                    // guarded by mu_
  std::vector<SubscriptionId> retiring_;  // guarded by mu_
};

}  // namespace eco::status
