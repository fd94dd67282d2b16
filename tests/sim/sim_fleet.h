// In-memory clusters for the deterministic simulation: a k8s::ClusterClient
// per cluster whose answers follow a seeded schedule on the fake clock —
// latency per call, outage windows (virtual hours or days), errors and
// throttling — and a trace of every call in the order it happened.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "fake_clock.h"
#include "k8s/client.h"

namespace eco::sim {

struct Faults {
  Clock::Duration latency{std::chrono::milliseconds(5)};  // every call takes this long
  // [from, to): the cluster does not answer at all.
  std::vector<std::pair<Clock::Time, Clock::Time>> outages;
  double error_rate = 0;     // a call answers 500
  double throttle_rate = 0;  // a call answers 429 with Retry-After
};

// One cluster's objects, by (apiVersion, kind, namespace, name).
struct ClusterState {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, nlohmann::json> objects;
};

class Fleet {
 public:
  Fleet(testing::FakeClock& clock, uint64_t seed) : clock_(clock), seed_(seed) {}

  // A cluster called `name`, reached at ServerOf(name).
  void Add(const std::string& name, Faults f);
  void SetFaults(const std::string& name, Faults f);
  static std::string ServerOf(const std::string& name) { return "http://127.0.0.1:9/sim/" + name; }
  // rsync's client factory: the cluster its kubeconfig names.
  Result<std::shared_ptr<k8s::ClusterClient>> Client(const k8s::RestConfig& rc, const k8s::ClientOptions& o);

  // What the cluster holds now (a copy).
  ClusterState State(const std::string& name);
  // Deletes an object as someone else would (drift), outside the trace.
  void Remove(const std::string& cluster, const ClusterState::Key& k);

  // One line per call: virtual ms, cluster, operation, object, answer.
  void Trace(const std::string& line);
  uint64_t TraceHash();
  size_t TraceLines();
  std::vector<std::string> TraceTail(size_t n);
  // Applies, by cluster, with the virtual time of each (for "nothing after").
  struct Applied {
    Clock::Time at;
    std::string kind, name;
  };
  std::vector<Applied> AppliesOf(const std::string& cluster);

  testing::FakeClock& clock() { return clock_; }

 private:
  friend class SimClient;
  struct Cluster {
    std::string name;
    Faults faults;
    std::unique_ptr<Random> random;
    ClusterState state;
    std::vector<Applied> applies;
  };
  testing::FakeClock& clock_;
  const uint64_t seed_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Cluster>> clusters_;  // guarded by mu_
  uint64_t hash_ = 1469598103934665603ull;                    // guarded by mu_
  std::vector<std::string> trace_;                            // guarded by mu_ (the last few)
  size_t lines_ = 0;                                          // guarded by mu_
};

}  // namespace eco::sim
