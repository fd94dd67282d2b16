// A DIG's rollout strategy (spec.rollout, eco's extension; issue 37): in
// which waves the clusters of an instantiate, update or rollback change,
// how many at once, and what a failure does. This is its parsing, its
// checks and the split of a fleet into waves: pure, no I/O. Not yet read
// by the API or rsync: every DIG still changes all its clusters at once.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace eco::appcontext {

// "N" or "N%" of the clusters it applies to.
struct RolloutLimit {
  int64_t value = 0;
  bool percent = false;
  // The limit over `n` clusters: a percentage rounds up, and a positive
  // one is at least 1 (10% of 5 clusters is 1, not 0).
  int64_t Of(int64_t n) const;
};

struct RolloutWave {
  std::string name;
  // Exactly one selects the wave's clusters.
  std::string cluster_label;          // clusters carrying this label
  std::vector<std::string> clusters;  // "provider+cluster"
  int percent = 0;                    // 1-100: this share of the fleet
};

struct RolloutStrategy {
  std::vector<RolloutWave> waves;
  std::optional<RolloutLimit> max_concurrency;  // none: the whole wave at once
  RolloutLimit max_failures;                    // default 0: the first failure stops
  int64_t soak_seconds = 0;
  int64_t ready_timeout_seconds = 600;
  std::string offline = "wait";      // wait | skip | fail
  std::string on_failure = "pause";  // pause | rollback
  std::string approval = "none";     // none | between-waves
};

// spec.rollout of a DIG: nullopt when absent or null (all clusters at
// once, as EMCO). Invalid names the field and what it accepts
// ("Invalid Input: spec.rollout.waves[1]: a wave needs exactly one of
// clusterLabel, clusters and percent").
Result<std::optional<RolloutStrategy>> ParseRollout(const nlohmann::json& spec);

nlohmann::json ToJson(const RolloutStrategy& s);

// A cluster as the split sees it.
struct RolloutCluster {
  std::string key;                  // "provider+cluster"
  std::vector<std::string> labels;  // its cluster labels
};

struct PlannedWave {
  std::string name;
  std::vector<std::string> clusters;  // keys, in natural order
};

// The clusters in waves, in the strategy's order, from their names and
// labels as given (when the operation starts). A cluster goes to the first
// wave that selects it; a percentage wave takes that share of the whole
// fleet (rounded up, at least one) from the clusters no earlier wave took,
// in natural order (e-2 before e-10); clusters no wave selects form a last
// wave named "rest". Waves left empty are kept, so that their names and
// places stay what the strategy says.
std::vector<PlannedWave> SplitIntoWaves(const RolloutStrategy& s, std::vector<RolloutCluster> clusters);

// Natural order of names: digit runs compare as numbers ("e-2" < "e-10").
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace eco::appcontext
