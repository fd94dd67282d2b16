// Prometheus metrics of an eco process: one registry per process
// (prometheus-cpp's core library), rendered in the text exposition format on
// GET /metrics by every role's HTTP server, with the usual process_* series.
//
// Cardinality: labels take values from bounded sets only (route templates,
// methods, status codes, store operations, outcomes); nothing is labelled
// by resource, and by cluster only where docs/observability.md says so.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

#include "common/clock.h"

namespace eco::metrics {

// The process's registry (created on first use, never destroyed).
prometheus::Registry& Registry();

// Everything registered plus the process_* series, in the text format
// (version 0.0.4).
std::string Render();
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// Latency buckets in seconds, 0.5 ms to 60 s.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets();

// Seconds since `start`, for Observe().
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
// The same on a component's clock.
inline double SecondsSince(const Clock& clock, Clock::Time start) {
  return std::chrono::duration<double>(clock.Now() - start).count();
}

}  // namespace eco::metrics
