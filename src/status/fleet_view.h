// eco's compact status of a DIG, one row per cluster (`output=clusters`,
// docs/status.md): both views merged into a few numbers per app, for
// consoles showing 10,000 clusters. Pure reads, like query.h.
//
// Cost, whatever the number of clusters: per app its plan and one range
// read per record prefix (deployed, ready, drift); one of the clusters'
// contacts and of the unreachable records; per provider placed, one of its
// clusters and one of their labels; the rollout's record and its clusters'
// ends. No read per cluster.
#pragma once

#include "status/query.h"

namespace eco::status {

// The order of the numbers of each row's `cells` (one per app).
// (fleet_overview.cc reads "failed" at index 5.)
inline constexpr const char* kCellFields[] = {"total",  "ready",   "notReady", "notPresent", "stale",
                                              "failed", "pending", "drifted",  "warnings"};

// GET {DIG}/status?output=clusters. Honours `instance`; other filters are
// ignored. NotFound when the DIG does not exist.
Result<json> DigClusters(store::Store& st, const DigRef& dig, const Query& q,
                         const QueryOptions& opts = {});

// What DigClusters would refuse (the DIG missing, an `instance` not its),
// without computing the answer: a stream checks it before it starts.
Status CheckDigClusters(store::Store& st, const DigRef& dig, const Query& q);

// Its change stream, as WatchDigStatus's (which see); an answer is not
// computed again sooner than three times its last computation took.
Status WatchDigClusters(store::Store& st, const DigRef& dig, const Query& q,
                        const std::function<bool(const json&)>& emit, const std::function<bool()>& open,
                        std::chrono::milliseconds coalesce = std::chrono::milliseconds(200),
                        Clock& clock = RealClock(), const QueryOptions& opts = {});

}  // namespace eco::status
