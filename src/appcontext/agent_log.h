// What the hub keeps for agent clusters (docs/agent.md): each cluster's
// desired state as a log of numbered publications, one per rsync event
// that concerns the cluster, each carrying the AppContexts the event needs
// as that cluster sees them (projections); what the agent persisted; how
// each app ended there. The agent replays a publication into its own
// store and runs the event there with rsync's own event code.
//
// Layout (under /eco/agent/; the identity keys beside these are
// catalog/agent_identity.h's):
//   rev/<cluster key>                          newest revision published (decimal)
//   log/<cluster key>/<revision, 20 digits>    {"parts": n, "bytes": b}: head of a publication
//   part/<cluster key>/<revision>/<i>          its zlib-compressed JSON, in parts
//   pub/<context>/<event>/<cluster key>        the revision the event was published at
//   acked/<cluster key>                        the revision the agent has persisted
//   out/<context>/<event>/<cluster key>/<app>  Outcome: how the app ended there
//   seen/<cluster key>                         Seen: the agent's last contact
//   rseq/<cluster key>                         newest report seq stored
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/event_record.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::appcontext {

// One app of a context as one cluster sees it: its resources there, or no
// cluster when the app does not go to it (an update may remove it there).
struct ProjectedApp {
  std::string name;
  ResourceSet resources;
  std::optional<ClusterRef> cluster;
};

struct ProjectedContext {
  Meta meta;
  std::vector<ProjectedApp> apps;
  bool stopped = false;
  std::string superseded;  // the context an update replacing this one is on
};

struct Publication {
  uint64_t revision = 0;
  std::string context;  // the AppContext the event is of
  int64_t event = 0;    // its seq under events/
  EventRecord record;   // type, other, clusters (status pending)
  bool other_complete = false;
  // The contexts the event reads: its own and, for an update, the replaced one.
  std::vector<ProjectedContext> contexts;
  // The deployment's lifecycle record (catalog/lifecycle.h) as the event
  // was published, under its catalog key: what the agent's ready monitor
  // decides what to watch by. Empty when there is none.
  std::string state_key, state_value;
  // Set: this publication only cancels the event (context, event), which
  // was published before it, because the hub ended it ("failed": another
  // cluster failed; "stopped": the deployment was stopped). No contexts.
  std::string cancel, cancel_message;
};

nlohmann::json ToJson(const Publication& p);
Result<Publication> PublicationFromJson(const nlohmann::json& j);
// zlib-compressed JSON, as stored and sent.
std::string EncodePublication(const Publication& p);
Result<Publication> DecodePublication(std::string_view bytes);

// The projection of context `id` for cluster `cluster_key`.
Result<ProjectedContext> Project(store::Store& st, const std::string& id, const std::string& cluster_key);
// The same from what was read already: `meta`, and per app of its
// app_order the plan and the cluster's place in it (null: not there).
// rsync projects an event for each of its clusters from the plans the
// event read once; reading every app's cluster list per cluster made
// publishing to N clusters cost N².
struct PlannedApp {
  const AppPlan* plan = nullptr;
  const ClusterRef* cluster = nullptr;
};
Result<ProjectedContext> Project(store::Store& st, const std::string& id, const Meta& meta,
                                 const std::vector<PlannedApp>& apps);
// Ops writing a projection as a sealed context (the agent's store).
std::vector<store::Op> ImportOps(const ProjectedContext& pc);
// Ops removing a context's definition and queue but not the records kept
// under it (the agent, once nothing can need the context again).
std::vector<store::Op> DropDefinitionOps(const std::string& id);

// Appends `pub` to the cluster's log unless its event is published there
// already; returns the revision either way. `fence` is a key that must
// exist for the write to happen (the publisher's context lock): Conflict
// when it does not.
Result<uint64_t> Publish(store::Store& st, const std::string& cluster_key, Publication pub, const std::string& fence);

struct LoggedPublication {
  uint64_t revision = 0;
  std::string bytes;  // EncodePublication's output
};
// Publications after `after`, in order, at most `max_bytes` of them (at
// least one when there is one).
Result<std::vector<LoggedPublication>> ReadLog(store::Store& st, const std::string& cluster_key, uint64_t after,
                                               size_t max_bytes);
Result<uint64_t> LastRevision(store::Store& st, const std::string& cluster_key);
// The agent persisted everything up to `revision`: drops it from the log.
Status Acknowledge(store::Store& st, const std::string& cluster_key, uint64_t revision);
Result<uint64_t> Acknowledged(store::Store& st, const std::string& cluster_key);
std::string LogPrefix(const std::string& cluster_key);
std::string LogPrefix();  // every cluster's

struct Outcome {
  bool ok = false;
  std::string message;
  bool own_failure = false;
};
std::string OutcomeKey(const std::string& context, int64_t event, const std::string& cluster_key,
                       const std::string& app);
std::string OutcomePrefix();  // every outcome (rsync watches it)
nlohmann::json ToJson(const Outcome& o);
Result<Outcome> ParseOutcome(std::string_view value);

// The agent's last contact with the hub.
struct Seen {
  std::string time;     // RFC 3339
  std::string replica;  // the hub replica it talked to
  uint64_t drift_repaired = 0;  // objects its agent re-applied since it started
  std::string agent_version = {};  // as its Hello said; "" in records written before it was kept
};
std::string SeenKey(const std::string& cluster_key);
std::string SeenPrefix();
nlohmann::json ToJson(const Seen& s);
Result<Seen> ParseSeen(std::string_view value);
// Writes many clusters' records (cluster key -> ToJson(Seen) text), a few
// hundred per transaction. What could not be written is left in `records`
// (the rest is taken out), for the caller to try again.
void WriteSeen(store::Store& st, std::map<std::string, std::string>& records);

std::string ReportSeqKey(const std::string& cluster_key);

// Everything kept for the cluster (its deletion, a revocation leaves the log).
std::vector<store::Op> ForgetClusterOps(const std::string& cluster_key);
// What is kept per context (which revision published its events, the
// agents' outcomes): dropped with the context.
std::vector<store::Op> ForgetContextOps(const std::string& context);

}  // namespace eco::appcontext
