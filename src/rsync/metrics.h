// rsync's series (docs/observability.md) and the per-cluster connectivity
// they count. None is labelled by cluster unless asked (--metrics-per-cluster):
// at ten thousand clusters that would be ten thousand series per name.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/metrics.h"

namespace eco::rsync {

// The deployed states of a resource, as records and the status API name
// them; the index is a resource's place in eco_rsync_event_resources.
inline constexpr const char* kDeployedStates[] = {"Pending", "Applied", "Deleted", "Failed"};
// Index of `status` in kDeployedStates; 4 when it is none of them.
uint8_t DeployedStateIndex(const std::string& status);

struct RsyncMetrics {
  prometheus::Counter& applied;
  prometheus::Counter& deleted;
  prometheus::Counter& apply_failed;
  prometheus::Counter& delete_failed;
  prometheus::Counter& retries;
  // Fields left out of applies under Warn field validation.
  prometheus::Counter& fields_dropped;
  // Active contexts a look found locked by another replica (a standby's
  // looks, every lock_retry).
  prometheus::Counter& held_elsewhere;
  prometheus::Histogram& apply_latency;
  prometheus::Histogram& delete_latency;
  prometheus::Gauge& available;
  prometheus::Gauge& retrying;
  // eco_rsync_event_resources{status}: Pending, Applied, Deleted, Failed.
  std::array<prometheus::Gauge*, 4> event_resources;
  // Staged rollouts: clusters that ended their part {wave, outcome}, waves
  // {wave, event: started|completed}.
  prometheus::Family<prometheus::Counter>& rollout_clusters;
  prometheus::Family<prometheus::Counter>& rollout_waves;

  static RsyncMetrics& Get();
};

// Each cluster's last connectivity (for the process-wide gauges), one log
// line per change (not per retry) for operators reading logs, and with
// --metrics-per-cluster each cluster's moving average request time.
class Connectivity {
 public:
  Connectivity(const Clock& clock, bool per_cluster) : clock_(clock), per_cluster_(per_cluster) {}
  ~Connectivity();  // this instance's clusters leave the gauges
  Connectivity(const Connectivity&) = delete;
  Connectivity& operator=(const Connectivity&) = delete;

  void Note(const std::string& cluster, bool up, const std::string& why = "");
  // One apply or delete on `cluster` that began at `start` was answered.
  void Latency(const std::string& cluster, Clock::Time start);

 private:
  const Clock& clock_;
  const bool per_cluster_;
  std::mutex mu_;
  std::unordered_map<std::string, bool> up_;                     // guarded by mu_
  std::unordered_map<std::string, prometheus::Gauge*> latency_;  // guarded by mu_
};

}  // namespace eco::rsync
