// EMCO's status queries (reference §2.1.11, §2.3, §4.6), answered from the
// store alone: the lifecycle state record, the AppContext plan, and the
// per app x cluster records rsync (DeployedRecord) and the ReadyMonitor
// (ReadyRecord) write under the status context. Pure reads: safe from any
// thread, any process.
//
// Cost: a few reads per app (its plan) plus one range read per record
// prefix and app, whatever the number of clusters; and one of the
// clusters' contacts, and of each provider's cluster objects past a few
// of its clusters (Liveness).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::status {

using nlohmann::json;

// The query parameters, parsed and checked.
struct Query {
  std::string instance;                // "" = the latest AppContext of the state record
  bool ready = false;                  // status=ready / type=cluster (else deployed / rsync)
  bool deprecated_names = true;        // no status= given: EMCO's deprecated field names
  std::string output = "all";          // summary | all | detail | clusters (fleet_view.h)
  std::vector<std::string> apps;       // filters
  std::vector<std::string> clusters;   // "provider+cluster"
  std::vector<std::string> resources;  // metadata.name
  bool list_apps = false;
  bool list_clusters = false;
  bool list_resources = false;
};

// Parses EMCO's parameters (a flag such as `apps` may carry an empty
// value). Invalid carries EMCO's message ("Invalid query type", "Invalid
// app query", ...). `status=` wins over the deprecated `type=` and selects
// the new field names; `type=` or no parameter at all selects the
// deprecated ones. `for_lc`: logical cloud status, as dcm reads it: no
// `type`, `app` or `apps` (ignored), `status` defaults to `ready`, the new
// names always.
Result<Query> ParseQuery(const std::multimap<std::string, std::string>& params,
                         bool for_lc = false);

struct DigRef {
  std::string project, composite_app, version, dig;
};

// How a query judges how current each cluster's report is (docs/status.md).
// Every cluster entry carries `lastSeen` when a contact is recorded
// (appcontext::SeenKey: an agent's hub, or the ready monitor for a push
// cluster). A cluster is stale when its report is older than
// `agent_grace`: an agent cluster whose agent has been silent that long
// (or that has records but no contact at all), a push cluster the ready
// monitor has not reached for that long. A stale cluster is marked
// `"stale": true` and `unreachable`, its ready values read `Stale` (the
// recorded one under `lastReported`), and no count or aggregate of the
// answer calls it Ready.
struct QueryOptions {
  std::chrono::milliseconds agent_grace = std::chrono::minutes(5);
  // Whose wall time a report's age is measured on; null: the machine's.
  const Clock* clock = nullptr;
};

// GET .../deployment-intent-groups/{dig}/status. NotFound when the DIG does
// not exist; Invalid for a bad instance or filter (the API answers 400).
Result<json> DigStatus(store::Store& st, const DigRef& dig, const Query& q,
                       const QueryOptions& opts = {});

// GET .../logical-clouds/{lc}/status, in dcm's shape: the cloud's clusters
// under a top-level `clusters` (none for a level-0 cloud, which deploys
// nothing), no `apps`. A cloud never acted on shows a Created action
// stamped with the options' clock's wall time.
Result<json> LogicalCloudStatus(store::Store& st, const std::string& project, const std::string& lc,
                                const Query& q, const QueryOptions& opts = {});

// GET /v2/cluster-providers/{p}/clusters/{c}/status. EMCO answers this for
// its cluster network intents, which eco does not have; eco answers what it
// deployed on the cluster instead: every DIG and logical cloud whose latest
// AppContext places something there (not yet fully terminated), in EMCO's
// shape for one cluster — aggregated counts and a single `cluster` object
// whose resources name the app and instantiation they belong to — plus
// `deployments`, one summary per instantiation. NotFound when the cluster
// does not exist; Invalid for `instance` (the cluster has no AppContext of
// its own). The list flags (`apps`, `clusters`, `resources`) do not apply
// and are ignored. The cluster's `lastSeen`, and `unreachable` and `stale`
// when so, are at the top too.
Result<json> ClusterStatus(store::Store& st, const std::string& provider, const std::string& cluster,
                           const Query& q, const QueryOptions& opts = {});

// The change stream (`?watch=true`): calls `emit` with the status now and
// again whenever it changes — store watches on the state record and on the
// status context's and the latest AppContext's keys; changes within
// `coalesce` are merged and an unchanged answer is not sent again. A
// cluster turning stale sends an answer too, within a second of its grace
// running out, and so does a contact from a stale agent cluster; other
// contacts do not (`lastSeen` is as of the latest answer). Returns when
// `emit` returns false or `open()` turns false (checked every second), or
// with the error that ended it. The second, `coalesce` and the queries'
// time are `clock`'s (opts.clock is not used).
Status WatchDigStatus(store::Store& st, const DigRef& dig, const Query& q,
                      const std::function<bool(const json&)>& emit,
                      const std::function<bool()>& open,
                      std::chrono::milliseconds coalesce = std::chrono::milliseconds(200),
                      Clock& clock = RealClock(), const QueryOptions& opts = {});
Status WatchLogicalCloudStatus(store::Store& st, const std::string& project, const std::string& lc,
                               const Query& q, const std::function<bool(const json&)>& emit,
                               const std::function<bool()>& open,
                               std::chrono::milliseconds coalesce = std::chrono::milliseconds(200),
                               Clock& clock = RealClock(), const QueryOptions& opts = {});

// The status context an AppContext records into (its own id when none).
Result<std::string> StatusContextOf(store::Store& st, const std::string& context_id);

}  // namespace eco::status
