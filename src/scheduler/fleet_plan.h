// The fleet plan (issue 37): what an instantiate or update of a DIG would
// do, described from the AppContext the real operation's own pipeline built
// (in an overlay of the store for a plan, in the store for the operation
// that checks a plan id): where each app goes and why, in which waves, and
// per cluster the objects created, changed (a JSON diff of the manifests)
// and deleted against the deployed revision. A plan id, a SHA-256 over
// everything the plan says, lets the operation refuse when it would now do
// something else than what was reviewed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "common/status.h"

namespace eco::scheduler {

// What a build saw on its way, for the plan's reasons. Keys of the inner
// maps are "provider+cluster".
struct BuildTrace {
  // Why generic placement placed a cluster ("allOf: label east").
  std::map<std::string, std::map<std::string, std::string>> placed;
  // Clusters placed, then dropped: by a placement controller, or not the
  // one kept of their anyOf group.
  std::map<std::string, std::map<std::string, std::string>> dropped;
  // Action controllers that changed a cluster's objects ("gac (intent x)").
  std::map<std::string, std::map<std::string, std::vector<std::string>>> customized;
  // Controllers the plan could not run, each with why.
  std::vector<std::string> not_run;
};

struct PlanInput {
  std::string operation;  // "instantiate" or "update"
  int64_t revision = 0;   // the revision the operation would produce
  appcontext::Contexts* next = nullptr;  // holds the built context
  std::string next_id;
  appcontext::Contexts* current = nullptr;  // holds the deployed one
  std::string current_id;                   // "": nothing deployed
  const BuildTrace* trace = nullptr;
  nlohmann::json dig_spec;  // spec.rollout gives the waves
  std::function<Result<std::vector<catalog::ClusterInfo>>(const std::string& provider)> clusters_of;
  bool summary_only = false;  // leave out the per-cluster object lists
};

// The plan as the API answers it (docs/api.md, "Plan"); planId is the same
// whether summary_only or not.
Result<nlohmann::json> DescribePlan(const PlanInput& in);

// The fields of `from` and `to` that differ: [{"path", "from", "to"}], a
// side left out where the field is absent. Arrays of equal length compare
// element by element, others as a whole.
nlohmann::json DiffManifests(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace eco::scheduler
