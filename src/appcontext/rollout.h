// A DIG's rollout strategy (spec.rollout, eco's extension; issue 37): in
// which waves the clusters of an instantiate, update or rollback change,
// how many at once, and what a failure does. This is its parsing, its
// checks, the split of a fleet into waves, and the records of a rollout's
// progress. The scheduler puts the strategy into the event it queues; rsync
// runs it (rsync/rollout_run.h) and records its progress; the API steers it
// through the control record.
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

// ---- progress, written by rsync under the context the event deploys ----
//
//   /eco/ac/<ctx>/rollout                  RolloutProgress: state, waves, their members
//   /eco/ac/<ctx>/rollout-clusters/<key>   RolloutClusterEnd: once a cluster is done,
//                                          failed, skipped or left
//   /eco/ac/<ctx>/rollout-control          RolloutControl: the operator's (API) requests
//
// A cluster's end is its own small key so that 10,000 clusters cost 10,000
// small writes, not 10,000 rewrites of one large record.
std::string RolloutKey(const std::string& ctx);
std::string RolloutClusterPrefix(const std::string& ctx);
std::string RolloutClusterKey(const std::string& ctx, const std::string& cluster_key);
std::string RolloutControlKey(const std::string& ctx);

struct RolloutWaveProgress {
  std::string name;
  std::vector<std::string> clusters;  // fixed when the wave starts (until then: as planned)
  std::string started_at, completed_at;  // RFC 3339, empty until then
};

struct RolloutProgress {
  int64_t event = 0;  // the seq of the event it belongs to
  int64_t revision = 0;
  // Progressing, Paused, WaitingApproval, RollingBack, RolledBack,
  // Complete or Failed.
  std::string state = "Progressing";
  size_t wave = 0;  // the wave in progress (or waiting to start)
  std::vector<RolloutWaveProgress> waves;
  std::string reason;         // why it is paused, failed or rolled back
  int64_t acknowledged = 0;   // failures a resume accepted: they no longer stop it
  int64_t resumes_seen = 0;   // the control's resumes this progress reflects
  std::string started_at;
};
nlohmann::json ToJson(const RolloutProgress& p);
Result<RolloutProgress> RolloutProgressFromJson(const nlohmann::json& j);

struct RolloutClusterEnd {
  std::string state;  // "done", "failed", "skipped" (unreachable, left pending), "left" (removed)
  std::string time;   // RFC 3339
  std::string reason;
};
nlohmann::json ToJson(const RolloutClusterEnd& e);
RolloutClusterEnd RolloutClusterEndFromJson(const nlohmann::json& j);

// What the operator asked of the rollout of event `event`.
struct RolloutControl {
  int64_t event = 0;
  bool paused = false;
  int64_t resumes = 0;   // each resume counts: it accepts the failures so far
  int64_t approved = 0;  // waves (by index) below this may start under between-waves approval
  bool abort = false;
};
nlohmann::json ToJson(const RolloutControl& c);
RolloutControl RolloutControlFromJson(const nlohmann::json& j);

}  // namespace eco::appcontext
