// Whether a node counts as capacity for a workload's pods: the rules of the
// Kubernetes scheduler's TaintToleration and NodeUnschedulable filters, plus
// readiness. Pure functions, no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controllers/hpa/cluster_view.h"

namespace eco::hpa {

// A pod toleration (spec.tolerations[]). An empty operator means Equal, an
// empty key any key, an empty effect any effect. tolerationSeconds is not
// kept: the scheduler ignores it.
struct Toleration {
  std::string key;
  std::string op;
  std::string value;
  std::string effect;
};

// The taint Kubernetes puts on cordoned nodes; tolerating it also
// tolerates spec.unschedulable (NodeUnschedulable).
inline constexpr const char* kUnschedulableTaint = "node.kubernetes.io/unschedulable";

// As the scheduler's ToleratesTaint: effects match when the toleration's is
// empty or equal, keys when the toleration's is empty or equal, then Exists
// matches any value and Equal (or "") needs the same value. Any other
// operator matches nothing.
bool Tolerates(const Toleration& t, const Taint& taint);
bool ToleratesAny(const std::vector<Toleration>& tolerations, const Taint& taint);

// The tolerations of the pods a workload object creates: spec.tolerations of
// a Pod, spec.template.spec.tolerations of anything else. A DaemonSet's also
// get those its controller adds to every pod it creates (not-ready and
// unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable
// NoSchedule; network-unavailable with hostNetwork). Malformed entries are
// skipped (the API server would refuse the object anyway).
std::vector<Toleration> PodTolerations(const nlohmann::json& workload);

// "" when pods with `tolerations` may use the node's capacity, else why not,
// for messages ("not Ready", "cordoned",
// "has taint dedicated=edge:NoSchedule not tolerated"). In that order: a node
// that is not Ready never counts, whatever the tolerations (a pod bound
// there does not start until its kubelet reports again); a cordoned one
// counts only for pods tolerating kUnschedulableTaint:NoSchedule; the first
// NoSchedule or NoExecute taint not tolerated excludes it; PreferNoSchedule
// taints never do.
std::string NodeExclusion(const NodeState& node, const std::vector<Toleration>& tolerations);

// "key=value:Effect", or "key:Effect" without a value (as kubectl shows).
std::string DescribeTaint(const Taint& t);

}  // namespace eco::hpa
