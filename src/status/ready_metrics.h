// The ready monitor's metrics (docs/observability.md), summed over every
// monitor of the process and moved by deltas.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include <array>

namespace eco::status {

// eco_ready_resources{status}: the resources of the watched AppContexts by
// ready status.
struct ReadyGauges {
  std::array<prometheus::Gauge*, 3> by_status{};  // Ready, NotReady, NotPresent
  static ReadyGauges& Get();
};

// Drift of push clusters: resources drifted now, drifts found and repairs made.
struct DriftMetrics {
  prometheus::Gauge* resources = nullptr;
  prometheus::Counter* detected = nullptr;
  prometheus::Counter* repaired = nullptr;
  static DriftMetrics& Get();
};

}  // namespace eco::status
