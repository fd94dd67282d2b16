// `ecoctl status`: a deployment intent group's status as operators read it,
// a table of clusters × apps with ready counts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace eco::ecoctl {

// What one answer of GET .../status?status=ready says overall.
struct ReadySummary {
  std::string deployed;  // deployedStatus: "Instantiated", "Instantiating", ...
  std::string ready;     // readyStatus: "Ready" or "NotReady"
  int resources = 0;     // resources of the latest revision (hooks aside)
  int ready_resources = 0;
  int clusters = 0;
  int ready_clusters = 0;  // clusters whose every resource is Ready
  bool done() const { return deployed == "Instantiated" && ready == "Ready"; }
};

ReadySummary Summarize(const nlohmann::json& status);

// The table: one row per cluster ("provider+cluster"), its connectivity
// (Unreachable or Stale where the answer marks the cluster so), when it was
// last seen (a column present once any cluster has a lastSeen), and per app
// "ready/total" ("-" where the app is not placed). With `colour`, a cell is
// green when all its resources are Ready, red when one is missing or the
// cluster is not Available, yellow otherwise.
std::string FormatStatusTable(const nlohmann::json& status, bool colour);

// A DIG's staged rollout (the status answer's `rollout`): its state, the
// wave in progress, why it stopped, and a row per wave with its counts.
// "" when the answer has none.
std::string FormatRollout(const nlohmann::json& status, bool colour);

// What someone changed by hand (the deployed status' Drifted resources,
// docs/rollouts.md#drift), one line per object: "edges+edge1  web
// Deployment r1-web: spec.replicas 2 -> 5 (kubectl-patch)", or "... deleted".
// "" when nothing drifted.
std::string FormatDrift(const nlohmann::json& deployed_status, bool colour);

// One progress line: "Instantiated, 10 of 14 resources ready on 4 of 6 clusters".
std::string FormatProgress(const ReadySummary& s);

// "PROJECT/COMPOSITEAPP/VERSION/DIG" → the DIG's status path (no query).
Result<std::string> DigStatusPath(const std::string& spec);

}  // namespace eco::ecoctl
