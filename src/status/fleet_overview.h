// eco's fleet-wide views (docs/api.md "Fleet"): GET /v2/fleet, every
// deployment the caller may see with its counts and the fleet's problems,
// and GET /v2/fleet/clusters, every cluster with what is deployed there.
// Pure reads, like query.h.
#pragma once

#include <set>
#include <string>

#include "status/query.h"

namespace eco::status {

// Whose view: an administrator sees everything, others their projects.
struct FleetScope {
  bool admin = true;
  std::set<std::string> projects;
  bool Sees(const std::string& project) const { return admin || projects.count(project) > 0; }
};

// GET /v2/fleet. Cost: the state records (one range read per kind), the
// projects' logical clouds (one read per project), and per deployment what
// DigClusters reads (fleet_view.h) — the clusters' contacts and each
// provider's clusters read once for all of them. Providers: admins only.
Result<json> FleetOverview(store::Store& st, const FleetScope& scope, const QueryOptions& opts = {});

// GET /v2/fleet/clusters (administrators). Cost: per provider its clusters
// and labels; per deployment its plan's cluster lists (a read per app) and
// one range read of its ready records. No read per cluster.
Result<json> FleetClusters(store::Store& st, const QueryOptions& opts = {});

}  // namespace eco::status
