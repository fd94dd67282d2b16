// What the HPA placement controller needs to know about a cluster: its
// nodes, their labels, their allocatable capacity, what the pods already
// bound to them request, and whether the scheduler would put new pods there
// (Ready, cordoned, taints).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "k8s/client.h"
#include "store/store.h"

namespace eco::hpa {

// A node taint (spec.taints[]); effect is NoSchedule, PreferNoSchedule or
// NoExecute.
struct Taint {
  std::string key;
  std::string value;
  std::string effect;
};

// Amounts are in base units (amount.h): cpu in millicores, the rest in
// units (bytes, counts).
struct NodeState {
  std::string name;
  std::map<std::string, std::string> labels;
  // status.conditions[type=Ready].status == "True". Defaults to true so that
  // hand-built states describe healthy nodes; ReadClusterState always sets it.
  bool ready = true;
  bool unschedulable = false;  // spec.unschedulable: cordoned
  std::vector<Taint> taints;   // spec.taints, in the node's order
  std::map<std::string, int64_t> allocatable;
  // Sum of the requests of the pods bound to the node that still run
  // (phase neither Succeeded nor Failed).
  std::map<std::string, int64_t> requested;

  // allocatable - requested (0 for a resource the node does not offer).
  int64_t Free(const std::string& resource) const;
};

struct ClusterState {
  std::vector<NodeState> nodes;  // by name
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  // The cluster's current nodes. Unavailable (or another error) when the
  // cluster cannot be read; the message says why.
  virtual Result<ClusterState> Read(const std::string& provider, const std::string& cluster) = 0;
};

using ClusterId = std::pair<std::string, std::string>;  // provider, cluster

// Reads every cluster through `view` on at most `max_threads` threads;
// result i is clusters[i]'s.
std::vector<Result<ClusterState>> ReadClusters(ClusterView& view,
                                               const std::vector<ClusterId>& clusters,
                                               size_t max_threads);

// A Kubernetes quantity ("250m", "1.5", "16Gi", "1e3", "100M") as base units:
// millicores when `milli` (cpu), else units, rounded up. Invalid when
// malformed.
Result<int64_t> ParseQuantity(std::string_view text, bool milli);

// The cluster state from a client: lists Nodes and Pods (all namespaces).
// A node without a Ready condition is not ready (as a node that has not yet
// reported).
Result<ClusterState> ReadClusterState(k8s::ClusterClient& client);

// Reads live, at every call, with the cluster's kubeconfig from the store.
//
// Live rather than a watch-fed cache: placement runs once per instantiate or
// update, and free capacity must be read live anyway (it moves with every
// pod), so listing the nodes alongside the pods costs one extra request per
// cluster and is never stale; a cache would hold one watch per cluster
// open forever for data used at those rare moments.
class KubeClusterView : public ClusterView {
 public:
  explicit KubeClusterView(store::Store& st, k8s::ClientOptions options = DefaultOptions());
  Result<ClusterState> Read(const std::string& provider, const std::string& cluster) override;

  // Short timeouts: an unreachable cluster must not hold placement up.
  static k8s::ClientOptions DefaultOptions();

 private:
  store::Store& st_;
  const k8s::ClientOptions options_;
};

}  // namespace eco::hpa
