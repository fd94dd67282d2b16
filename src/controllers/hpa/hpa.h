// The built-in HPA (hardware-platform-aware) controllers (EMCO's hpa-plc
// and hpa-ac). Intents: DIG/hpa-intents/{intent}/hpa-resource-consumers/
// {consumer}/resource-requirements/{requirement} (api/resources_hpa.cc).
// Behaviour and units: docs/controllers.md, "HPA controller".
#pragma once

#include <memory>
#include <string>

#include "controllers/controller.h"
#include "controllers/hpa/cluster_view.h"
#include "store/store.h"

namespace eco::hpa {

struct PlacementOptions {
  size_t read_threads = 16;  // clusters read at once
};

// Placement: keeps, in every placement group of every app with HPA intents,
// only the clusters where all the app's consumers fit (node labels and free
// capacity, read through `view`, of the nodes the workload's pods may use:
// Ready, and not cordoned or tainted against the workload's tolerations).
// Invalid, naming the app and each cluster's reason, when an app is left
// with no cluster at all.
class HpaPlacement : public controllers::Controller {
 public:
  // Reads clusters live with their kubeconfigs from `st` (KubeClusterView).
  explicit HpaPlacement(store::Store& st, PlacementOptions options = {});
  // Reads clusters through `view`, which must outlive this controller.
  HpaPlacement(store::Store& st, ClusterView& view, PlacementOptions options = {});
  Status FilterClusters(const std::string& context_id) override;

 private:
  store::Store& st_;
  std::unique_ptr<ClusterView> owned_view_;  // set by the one-argument constructor
  ClusterView& view_;
  const PlacementOptions options_;
};

// Action: edits the workloads the consumers name on every cluster of their
// app — replicas, nodeSelector, container requests/limits — once per
// distinct resource set (clusters sharing a variant share the edit).
class HpaAction : public controllers::Controller {
 public:
  explicit HpaAction(store::Store& st);
  Status UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                          const std::string& update_from) override;

 private:
  store::Store& st_;
};

}  // namespace eco::hpa
