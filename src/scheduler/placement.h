// Generic placement: an app placement intent ({allOf, anyOf} of cluster
// names and labels) resolved against the clusters of a logical cloud into
// placement groups, as EMCO numbers them (reference §5.4): every allOf
// cluster is a mandatory group of its own; each nested anyOf of an allOf,
// and the top-level anyOf, is one optional group from which exactly one
// cluster is kept after the placement controllers ran.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "common/status.h"

namespace eco::scheduler {

// The clusters of a provider with their labels (cached by the caller).
using ClustersOf = std::function<Result<std::vector<catalog::ClusterInfo>>(const std::string& provider)>;

// Resolves `intent` ({"allOf": [...], "anyOf": [...]}) for `app`. Only
// clusters in `allowed` ("provider+name", the logical cloud's) are placed:
// a label picks the allowed clusters carrying it, a cluster named outside
// the logical cloud (or not registered) is an Invalid error. A cluster met
// twice keeps its first place, except that a mandatory place wins over an
// optional one. Invalid when nothing at all is placed. `why` (if given)
// receives, per placed cluster, the term that placed it ("allOf: label
// east", "anyOf group 2: cluster p+c") for the fleet plan.
Result<std::vector<appcontext::ClusterRef>> ResolvePlacement(const std::string& app,
                                                             const nlohmann::json& intent,
                                                             const std::set<std::string>& allowed,
                                                             const ClustersOf& clusters_of,
                                                             std::map<std::string, std::string>* why = nullptr);

}  // namespace eco::scheduler
