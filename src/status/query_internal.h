// Inside the status queries: what query.cc shares with the fleet views
// (fleet_view.cc, fleet_overview.cc). Not an interface of eco_status.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "catalog/lifecycle.h"
#include "status/liveness.h"
#include "status/query.h"

namespace eco::status::detail {

// The lifecycle state record; an empty one when none is stored. A
// malformed one is the query's error (catalog/lifecycle.h).
Result<catalog::LifecycleState> ReadState(store::Store& st, const std::string& type,
                                          const catalog::Keys& keys);

// Every state record under `prefix`, by the rest of its key; a malformed
// one fails the read (an answer missing a deployment would look complete).
Result<std::map<std::string, catalog::LifecycleState>> ReadStates(store::Store& st,
                                                                  const std::string& prefix);

// Records under `prefix` by the rest of their key: one range read, in
// bounded pages (10,000 clusters never make one huge response).
template <typename Rec, typename Parse>
Result<std::map<std::string, Rec>> ReadRecords(store::Store& st, const std::string& prefix,
                                               Parse parse) {
  std::map<std::string, Rec> out;
  std::string after;
  for (;;) {
    store::RangeOptions o;
    o.after = after;
    o.limit = 5000;
    auto r = st.Range(prefix, o);
    if (!r.ok()) return r.status();
    for (const auto& kv : r->kvs) {
      auto rec = parse(kv.value);
      // Keys come in order: each goes at the end, with no search.
      if (rec.ok()) out.emplace_hint(out.end(), kv.key.substr(prefix.size()), std::move(*rec));
    }
    if (!r->more || r->kvs.empty()) break;
    after = r->kvs.back().key;
  }
  return out;
}

// The aggregate readyStatus: Ready only when nothing counts otherwise.
std::string Aggregate(const std::map<std::string, int64_t>& counts);

// A cluster entry's lastSeen, unreachable and stale.
void MarkLiveness(nlohmann::json& entry, const Liveness::Verdict& v);

// What the change stream needs to know of an answer beyond the answer.
struct Facts {
  std::set<std::string> silent;               // agent clusters shown silent
  std::optional<Clock::Duration> next_stale;  // until a cluster shown turns stale
};
void Report(const Liveness& live, Facts* facts);

// The staged rollout of AppContext `id` (null when it had none), as the
// status answers carry it. `event`: only that event's (0: whichever).
Result<nlohmann::json> Rollout(store::Store& st, const std::string& id, int64_t event = 0);

// Follows a state record and the AppContexts it names (WatchDigStatus).
// An answer is computed again at most every `coalesce`, and never sooner
// than three times the last computation took (on `clock`): a big answer
// (10,000 clusters) is not recomputed at every write.
Status WatchStatus(store::Store& st, const std::string& state_key,
                   const std::function<Result<nlohmann::json>(Facts*)>& compute,
                   const std::function<bool(const nlohmann::json&)>& emit,
                   const std::function<bool()>& open, std::chrono::milliseconds coalesce, Clock& clock);

// The clusters of the providers asked about, read once per provider (its
// cluster objects, their labels): 10,000 clusters, no read per cluster.
// Also tells `live` (when given) which are delivered by their agent.
class Directory {
 public:
  struct Entry {
    std::vector<std::string> labels;
    bool agent = false;
  };
  explicit Directory(store::Store& st, Liveness* live = nullptr) : st_(st), live_(live) {}
  // Every cluster of `provider`, by name.
  Result<const std::map<std::string, Entry>*> Provider(const std::string& provider);
  // One cluster; null when the catalog has no such cluster (any more).
  Result<const Entry*> Find(const std::string& provider, const std::string& name);

 private:
  store::Store& st_;
  Liveness* live_;
  std::map<std::string, std::map<std::string, Entry>> providers_;
};

// DigClusters (fleet_view.h) with the liveness and the directory of a
// bigger answer (/v2/fleet): read once for every deployment.
Result<nlohmann::json> DigClustersWith(store::Store& st, const DigRef& d, const Query& q, Liveness& live,
                                       Directory& dir);

// The answers are measured on the stream's clock.
QueryOptions OnClock(QueryOptions opts, const Clock& clock);

}  // namespace eco::status::detail
