// `ecoctl plan -f FILE`: the fleet plan of each deployment intent group the
// file describes (POST DIG/plan, docs/rollouts.md#plans), printed as a
// readable diff. Not to be confused with plan.h, the requests ecoctl sends
// for documents.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ecoctl/document.h"

namespace eco::ecoctl {

// The DIGs the documents name, once each, in document order, as
// "/v2/projects/.../deployment-intent-groups/NAME": a DIG document (anchor
// .../deployment-intent-groups with metadata.name) or a lifecycle document
// of a DIG (.../deployment-intent-groups/NAME/instantiate, approve, update).
std::vector<std::string> FleetPlanDigs(const std::vector<Document>& docs);

// The plan as a diff: its operation and id, the apps' placement, then per
// wave each cluster with something to do and its objects (+ create,
// ~ change with the fields, - delete), then the totals. With `colour`,
// + is green, ~ yellow and - red.
std::string FormatFleetPlan(const nlohmann::json& plan, const std::string& dig, bool colour);

}  // namespace eco::ecoctl
