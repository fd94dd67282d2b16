// What rsync and the status module record about a deployed AppContext, one
// key per app and cluster, under the *status context* (the instantiation's
// first AppContext: updates and rollbacks keep recording there, as EMCO's
// statusappctxid does):
//
//   /eco/ac/<status ctx>/deployed/<app>/<provider+cluster>   DeployedRecord (rsync)
//   /eco/ac/<status ctx>/ready/<app>/<provider+cluster>      ReadyRecord (status module)
//
// One key per app x cluster (not per resource) keeps 10,000 clusters at
// tens of thousands of small keys and lets one write record a whole step.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace eco::appcontext {

// rsync's view of one resource: EMCO's deployed states.
struct ResourceDeployed {
  std::string status;  // "Pending", "Applied", "Failed", "Deleted"
  std::string ref;     // the AppContext whose manifest was acted on
  std::string error;   // the cluster's answer when Failed
  std::string time;    // RFC 3339
  // A Namespace that was on the cluster before eco applied it (not created
  // by this deployment): shared, never deleted by it.
  bool shared = false;
  // What the apply left out under the DIG's Warn field validation:
  // "spec.replicas: field not declared in schema, not applied".
  std::vector<std::string> warnings = {};
  // metadata.generation the cluster gave the applied object (0: none). A
  // rollout's gate passes only once the cluster reports it Ready at this
  // generation or later: the previous revision's Ready does not count.
  int64_t generation = 0;
};

struct DeployedRecord {
  // EMCO's cluster connectivity: "Unknown", "Available", "Retrying".
  std::string connectivity = "Unknown";
  std::string message;  // why Retrying (the last error talking to the cluster)
  std::map<std::string, ResourceDeployed> resources;  // "<name>+<Kind>" -> state
};

// The cluster's view, from watching the labelled objects.
struct ReadyRecord {
  // "<name>+<Kind>" -> "Ready", "NotReady" or "NotPresent".
  std::map<std::string, std::string> resources;
  // Objects only the cluster has, made by the app's workloads (their Pods),
  // listed as EMCO lists them: "<name>+Pod" -> "Ready" or "NotReady".
  std::map<std::string, std::string> cluster_only;
  // "<name>+<Kind>" -> the metadata.generation of the object judged, when
  // it has one: which apply its readiness is about.
  std::map<std::string, int64_t> generations;
  // "<name>+<Kind>" -> the status.observedGeneration its controller reported
  // (Deployments, StatefulSets, DaemonSets, ReplicaSets...), when it has
  // one: the spec generation the controller has acted on. Ready refers to
  // the revision eco applied only once this (and `generations`) reached
  // the generation rsync recorded at apply (ResourceDeployed::generation).
  std::map<std::string, int64_t> observed_generations;
  // Every tracked resource and cluster-only object Ready, at least one tracked.
  bool ready = false;
  std::string time;
};

std::string DeployedKey(const std::string& status_ctx, const std::string& app, const std::string& cluster_key);
std::string DeployedPrefix(const std::string& status_ctx);  // every app and cluster
std::string ReadyKey(const std::string& status_ctx, const std::string& app, const std::string& cluster_key);
std::string ReadyPrefix(const std::string& status_ctx);

nlohmann::json ToJson(const DeployedRecord& r);
Result<DeployedRecord> DeployedFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const ReadyRecord& r);
Result<ReadyRecord> ReadyFromJson(const nlohmann::json& j);
// From the stored bytes (a range read's values): Internal when not a record.
Result<DeployedRecord> ParseDeployed(std::string_view value);
Result<ReadyRecord> ParseReady(std::string_view value);

// Drift: objects eco applied that were deleted, or whose fields as eco's
// manifest sets them were changed, by someone else (docs/rollouts.md#drift).
// Written by whoever watches the cluster (the ready monitor for push
// clusters, the agent for its own), only when it changes:
//
//   /eco/ac/<status ctx>/drift/<app>/<provider+cluster>   DriftRecord
struct DriftField {
  std::string path;        // "spec.replicas", "metadata.labels.tier", "spec.ports[0].port"
  nlohmann::json desired;  // as eco's manifest sets it
  nlohmann::json live;     // as the cluster has it (null: absent)
  std::string manager;     // who last set it (metadata.managedFields), "" when unknown
};
struct ResourceDrift {
  bool drifted = false;  // now; false: repaired (or changed back), history kept
  bool deleted = false;
  std::vector<DriftField> fields;
  std::string since;  // RFC 3339: when it was first seen drifted this time
  int64_t repairs = 0;  // times eco applied it again (enforce)
  std::string last_repair;  // RFC 3339
};
struct DriftRecord {
  std::map<std::string, ResourceDrift> resources;  // "<name>+<Kind>" -> drift
};
std::string DriftKey(const std::string& status_ctx, const std::string& app, const std::string& cluster_key);
std::string DriftPrefix(const std::string& status_ctx);
nlohmann::json ToJson(const ResourceDrift& d);
nlohmann::json ToJson(const DriftRecord& r);
Result<DriftRecord> DriftFromJson(const nlohmann::json& j);
Result<DriftRecord> ParseDrift(std::string_view value);
Result<std::optional<DriftRecord>> ReadDrift(store::Store& st, const std::string& status_ctx, const std::string& app,
                                             const std::string& cluster_key);

// A cluster the ready monitor cannot reach: its watches keep failing to
// connect. The key exists only while that lasts, so the set is small and
// one range read finds it:
//
//   /eco/unreachable/<provider+cluster>   UnreachableRecord (status module)
struct UnreachableRecord {
  std::string since;  // RFC 3339: when the monitor first failed to reach it
  std::string error;  // the last connection error
};
inline constexpr std::string_view kUnreachablePrefix = "/eco/unreachable/";
std::string UnreachableKey(const std::string& cluster_key);
nlohmann::json ToJson(const UnreachableRecord& r);
UnreachableRecord UnreachableFromJson(const nlohmann::json& j);
// Every unreachable cluster, by "provider+cluster".
Result<std::map<std::string, UnreachableRecord>> ReadUnreachable(store::Store& st);
// One cluster's record, nullopt while it is reachable.
Result<std::optional<UnreachableRecord>> ReadUnreachable(store::Store& st, const std::string& cluster_key);

// Reads one record (nullopt when none yet).
Result<std::optional<DeployedRecord>> ReadDeployed(store::Store& st, const std::string& status_ctx,
                                                   const std::string& app, const std::string& cluster_key);
Result<std::optional<ReadyRecord>> ReadReady(store::Store& st, const std::string& status_ctx,
                                             const std::string& app, const std::string& cluster_key);

}  // namespace eco::appcontext
