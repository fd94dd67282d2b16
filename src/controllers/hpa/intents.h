// HPA intents as the controllers use them, read from the catalog, and the
// two pure steps of the controllers: fitting consumers onto a cluster's
// nodes (placement) and editing an app's resources (action).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/status.h"
#include "controllers/hpa/cluster_view.h"
#include "controllers/hpa/schedulable.h"
#include "store/store.h"

namespace eco::hpa {

struct Requirement {
  std::string name;  // metadata.name
  bool allocatable = false;
  // Allocatable: resource name and amounts in base units (amount.h).
  std::string resource;
  int64_t requests = 0;
  int64_t limits = 0;  // 0: no limit written
  // Non-allocatable: node label.
  std::string key;
  std::string value;
};

struct Consumer {
  std::string intent;    // HPA intent name
  std::string name;      // consumer metadata.name
  std::string workload;  // spec.name: metadata.name of the workload
  std::string kind;      // Deployment (default), StatefulSet, DaemonSet
  std::string container;
  int64_t replicas = 1;
  std::vector<Requirement> requirements;  // by name
  // Of the workload's pods, from the rendered resources of the cluster being
  // fitted (AttachTolerations); not part of the intent.
  std::vector<Toleration> tolerations;
};

// Every HPA intent of the DIG, by app; consumers in intent then consumer
// key order.
using AppConsumers = std::map<std::string, std::vector<Consumer>>;
Result<AppConsumers> LoadConsumers(store::Store& st, const std::string& project,
                                   const std::string& composite_app, const std::string& version,
                                   const std::string& dig);

// Sets each consumer's tolerations from its workload (`<name>+<kind>`) in
// `rs` (PodTolerations); none when the app has no such workload (the action
// controller reports that).
void AttachTolerations(std::vector<Consumer>& consumers, const appcontext::ResourceSet& rs);

// Tries to place every consumer's replicas on the cluster's nodes, counting
// only the nodes its pods may use (NodeExclusion with its tolerations). On
// success the pods' requests are debited from `state` (so later apps see
// less) and "" is returned; otherwise `state` is unchanged and the reason is
// returned, e.g. "no node with feature.node.kubernetes.io/cpu-cpuid.AVX512F=true",
// followed by the nodes that would have qualified but do not count,
// e.g. " (not counted: n2 cordoned, n3 not Ready)".
std::string FitConsumers(ClusterState& state, const std::vector<Consumer>& consumers);

// Applies the consumers' edits to `rs` (workload replicas, nodeSelector,
// container requests/limits). Invalid when a workload or container is
// missing.
Status EditResources(appcontext::ResourceSet& rs, const std::vector<Consumer>& consumers);

}  // namespace eco::hpa
