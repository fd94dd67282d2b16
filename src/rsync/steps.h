// The ordered plan of one app on one cluster for one event (pure: no I/O).
// EMCO's order: objects not known to be this deployment's are checked
// first, then CRDs (and a wait until Established), pre-install hooks,
// resources, post-install hooks; terminate in reverse with cleanup of
// hooks and CRDs last.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"

namespace eco::rsync {

// A string field of a JSON object ("" when absent or not a string).
std::string Str(const nlohmann::json& j, const char* k);
std::string MetaName(const nlohmann::json& o);

// One app's resources for a group of clusters (a plan variant), with each
// object serialized once for the whole event rather than once per cluster.
struct PreparedSet {
  appcontext::ResourceSet rs;
  struct Bodies {
    std::string as_is;         // the object as it is
    std::string in_namespace;  // with metadata.namespace set to the event's
                               // namespace ("" when it names one already)
  };
  std::unordered_map<const appcontext::Resource*, Bodies> bodies;
};

// `o` with the deployment's owner annotation (appcontext::kOwnerAnnotation).
nlohmann::json Owned(const nlohmann::json& o, const std::string& owner);

// `serialize`: false for the replaced revision's sets, which are only
// compared with, never applied. The bodies carry `owner`'s annotation.
std::shared_ptr<const PreparedSet> Prepare(appcontext::ResourceSet rs, const std::string& ns, bool serialize,
                                           const std::string& owner);

struct Step {
  // kGone: wait until a deleted Namespace is gone (it terminates a while).
  // kCheck: before anything is applied, whether an object already on the
  // cluster is this deployment's to apply.
  enum class Kind { kApply, kDelete, kWait, kGone, kCheck };
  Kind kind = Kind::kApply;
  const appcontext::Resource* res = nullptr;  // in the task's prepared sets
  const PreparedSet::Bodies* bodies = nullptr;
  bool recorded = false;  // a main resource or CRD: its DeployedRecord entry follows it
  bool lenient = false;   // cleanup: errors other than an unreachable cluster are ignored
  bool bounded = false;   // kWait for a CRD, kGone: fails after Options::settle_timeout
  size_t list = 0;        // index of the first step of its list (where a retry restarts)
};

// A step by its place in the prepared set (0 CRDs, 1 main resources, 2
// hooks; index): later builds of the same task (after each wait, when the
// prepared set was let go) make these same steps. Decisions read from the
// record, which the task itself changes (what to check, what an update
// skips), must not move a task's position.
struct PlannedStep {
  Step::Kind kind;
  uint8_t where;
  size_t pos;
  bool recorded, lenient, bounded;
  size_t list;
};

struct PlanInput {
  std::string_view type;           // the event: instantiate, resync, terminate, update, update-delete
  const PreparedSet* set;          // this revision's objects for the cluster
  const PreparedSet* other;        // the replaced revision's (update, update-delete); may be null
  const appcontext::DeployedRecord* rec;  // what is recorded for the app on the cluster
  std::string other_ctx;           // the replaced AppContext
  bool other_complete = false;     // it finished deploying everywhere
};
// The first plan of a task; `planned` gets its positions.
std::vector<Step> PlanSteps(const PlanInput& in, std::vector<PlannedStep>* planned);
// The same plan again from its positions, pointing into `set`.
std::vector<Step> StepsOf(const PreparedSet& set, const std::vector<PlannedStep>& planned);

// The name of the CRD in `rs` that defines kind `kind` of `api_version`; ""
// when none does.
std::string DefiningCrd(const appcontext::ResourceSet& rs, const std::string& api_version, const std::string& kind);
// 32 bits of FNV-1a as hex: a short, stable name part.
std::string ShortHash(const std::string& s);

}  // namespace eco::rsync
