// Inside the status queries: how current each cluster's report is, judged
// once per query from the recorded contacts (appcontext::SeenKey), the
// ready monitor's unreachable records and the clusters' delivery modes.
// query.h's QueryOptions says what the answer shows.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "appcontext/agent_log.h"
#include "appcontext/records.h"
#include "common/clock.h"
#include "common/status.h"
#include "status/query.h"
#include "store/store.h"

namespace eco::status {

// RFC 3339 ("2026-01-01T00:00:00.000Z", any fraction, Z or ±hh:mm); nullopt
// when `s` is not one.
std::optional<Clock::WallTime> ParseRfc3339(std::string_view s);
// As Go prints durations: "5m0s", "1h0m0s", "1.5s", "250ms".
std::string FormatDuration(Clock::Duration d);

class Liveness {
 public:
  struct Verdict {
    const std::string* last_seen = nullptr;  // RFC 3339, when a contact is recorded
    // Shown as the cluster's `unreachable` (an empty `since` is left out).
    const appcontext::UnreachableRecord* unreachable = nullptr;
    bool stale = false;  // no value of the cluster may read Ready
    const appcontext::Seen* seen = nullptr;  // the contact recorded (its agent's version)
  };

  // `only`: the cluster keys the query is limited to ("provider+cluster";
  // empty: every cluster). Point reads stand in for range reads when few.
  Liveness(store::Store& st, const QueryOptions& opts, std::vector<std::string> only = {});
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // Cluster `name` of `provider`; `has_records`: rsync or the ready
  // monitor (or its agent) recorded something for it in this deployment.
  // Pointers stay valid while this object lives.
  Result<Verdict> Judge(const std::string& provider, const std::string& name, bool has_records);

  // What the caller read already: which of `provider`'s clusters (all of
  // them, by name) are delivered by their agent.
  void KnowDelivery(const std::string& provider, const std::map<std::string, bool>& agent_by_name);

  // For the change stream, about the clusters judged so far: agent
  // clusters shown silent (a contact from one changes the answer), and how
  // long until the first one not stale yet turns stale.
  const std::set<std::string>& silent() const { return silent_; }
  std::optional<Clock::Duration> next_stale() const { return next_stale_; }

 private:
  Status Load();
  Result<bool> IsAgent(const std::string& provider, const std::string& name,
                       const std::string& key);
  void Boundary(Clock::Duration left);

  store::Store& st_;
  const std::chrono::milliseconds grace_;
  const Clock::WallTime now_;
  const std::vector<std::string> only_;
  bool loaded_ = false;
  std::map<std::string, appcontext::Seen> seen_;  // by cluster key, parseable times only
  std::map<std::string, appcontext::UnreachableRecord> unreachable_;    // the ready monitor's
  std::map<std::string, appcontext::UnreachableRecord> silent_agents_;  // made up here
  std::map<std::string, bool> agent_;          // cluster key -> delivered by its agent
  std::set<std::string> listed_;               // providers whose clusters are all in agent_
  std::map<std::string, size_t> point_reads_;  // by provider
  std::set<std::string> silent_;
  std::optional<Clock::Duration> next_stale_;
};

}  // namespace eco::status
