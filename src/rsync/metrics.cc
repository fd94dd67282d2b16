#include "rsync/metrics.h"

#include <algorithm>
#include <iterator>

#include "common/log.h"

namespace eco::rsync {
namespace {

std::array<prometheus::Gauge*, 4> EventResources(prometheus::Registry& reg) {
  auto& fam = prometheus::BuildGauge()
                  .Name("eco_rsync_event_resources")
                  .Help("Resources of the events this rsync is running, by the deployed status "
                        "each reached (Pending, Applied, Deleted, Failed); an event's leave "
                        "when it ends.")
                  .Register(reg);
  std::array<prometheus::Gauge*, 4> g{};
  for (size_t i = 0; i < g.size(); ++i) g[i] = &fam.Add({{"status", kDeployedStates[i]}});
  return g;
}

RsyncMetrics Make() {
  auto& reg = metrics::Registry();
  auto& res = prometheus::BuildCounter()
                  .Name("eco_rsync_resources_total")
                  .Help("Resources rsync applied or deleted on clusters, by operation and result.")
                  .Register(reg);
  auto& lat = prometheus::BuildHistogram()
                  .Name("eco_rsync_request_duration_seconds")
                  .Help("Time of one apply or delete of one resource on a cluster, answer included.")
                  .Register(reg);
  auto& clusters = prometheus::BuildGauge()
                       .Name("eco_rsync_clusters")
                       .Help("Clusters rsync has worked on, by connectivity (Available or Retrying).")
                       .Register(reg);
  return RsyncMetrics{
      res.Add({{"op", "apply"}, {"result", "ok"}}),
      res.Add({{"op", "delete"}, {"result", "ok"}}),
      res.Add({{"op", "apply"}, {"result", "failed"}}),
      res.Add({{"op", "delete"}, {"result", "failed"}}),
      prometheus::BuildCounter()
          .Name("eco_rsync_retries_total")
          .Help("Times rsync put off an app on a cluster that did not answer (backoff and retry).")
          .Register(reg)
          .Add({}),
      prometheus::BuildCounter()
          .Name("eco_rsync_fields_dropped_total")
          .Help("Fields rsync left out of applies because the cluster's schema does not declare them "
                "(DIG spec.fieldValidation Warn).")
          .Register(reg)
          .Add({}),
      prometheus::BuildCounter()
          .Name("eco_rsync_contexts_held_elsewhere_total")
          .Help("Times a look for work found an active AppContext locked by another rsync replica.")
          .Register(reg)
          .Add({}),
      lat.Add({{"op", "apply"}}, metrics::LatencyBuckets()),
      lat.Add({{"op", "delete"}}, metrics::LatencyBuckets()),
      clusters.Add({{"connectivity", "Available"}}),
      clusters.Add({{"connectivity", "Retrying"}}),
      EventResources(reg),
      prometheus::BuildCounter()
          .Name("eco_rollout_clusters_total")
          .Help("Clusters that ended their part of a staged rollout, by wave name and outcome "
                "(done, failed, skipped, left).")
          .Register(reg),
      prometheus::BuildCounter()
          .Name("eco_rollout_waves_total")
          .Help("Waves of staged rollouts that started and completed, by wave name.")
          .Register(reg),
  };
}

}  // namespace

uint8_t DeployedStateIndex(const std::string& status) {
  const auto* end = std::end(kDeployedStates);
  return static_cast<uint8_t>(
      std::find_if(std::begin(kDeployedStates), end, [&](const char* s) { return status == s; }) -
      std::begin(kDeployedStates));
}

RsyncMetrics& RsyncMetrics::Get() {
  static RsyncMetrics m = Make();
  return m;
}

Connectivity::~Connectivity() {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& [key, up] : up_) (up ? RsyncMetrics::Get().available : RsyncMetrics::Get().retrying).Decrement();
}

void Connectivity::Note(const std::string& cluster, bool up, const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  auto [it, fresh] = up_.try_emplace(cluster, up);
  if (!fresh && it->second == up) return;
  RsyncMetrics& m = RsyncMetrics::Get();
  if (!fresh) (it->second ? m.available : m.retrying).Decrement();
  it->second = up;
  (up ? m.available : m.retrying).Increment();
  if (!up) {
    log::Write(log::Level::kWarn, "rsync", "cluster not answering; retrying",
               {log::Field("cluster", cluster), log::Field("error", why)});
  } else if (!fresh) {
    log::Write(log::Level::kInfo, "rsync", "cluster answers again", {log::Field("cluster", cluster)});
  }
}

void Connectivity::Latency(const std::string& cluster, Clock::Time start) {
  if (!per_cluster_) return;
  static auto& fam = prometheus::BuildGauge()
                         .Name("eco_rsync_cluster_request_seconds")
                         .Help("Moving average of the time of one apply or delete on each cluster "
                               "(--metrics-per-cluster).")
                         .Register(metrics::Registry());
  const double took = std::chrono::duration<double>(clock_.Now() - start).count();
  std::lock_guard<std::mutex> g(mu_);
  auto [it, fresh] = latency_.try_emplace(cluster, nullptr);
  if (fresh) {
    it->second = &fam.Add({{"cluster", cluster}});
    it->second->Set(took);
  } else {
    // The last ~20 requests weigh most.
    it->second->Set(it->second->Value() * 0.95 + took * 0.05);
  }
}

}  // namespace eco::rsync
