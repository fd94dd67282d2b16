// The ready monitor's cluster clients: one per cluster, made once (by the
// options' factory), and which clusters are watched from here at all.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "k8s/client.h"
#include "store/store.h"

namespace eco::status {

// Makes the client for a cluster ("provider", "cluster").
using ClientFactory = std::function<Result<std::shared_ptr<k8s::ClusterClient>>(
    const std::string& provider, const std::string& cluster)>;

// The default factory: the cluster's kubeconfig from the catalog.
ClientFactory CatalogClients(store::Store& st, k8s::ClientOptions options = {});

class ClusterClients {
 public:
  // `st` must outlive it.
  ClusterClients(store::Store& st, ClientFactory make) : st_(st), make_(std::move(make)) {}
  // The cluster's client, made at the first call that succeeds.
  Result<std::shared_ptr<k8s::ClusterClient>> Get(const std::string& provider,
                                                  const std::string& cluster);
  // Whether its agent delivers to the cluster (the catalog's spec.delivery):
  // asked once, since it never changes (an unanswered read is asked again).
  bool IsAgentCluster(const std::string& provider, const std::string& cluster);

 private:
  store::Store& st_;
  const ClientFactory make_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<k8s::ClusterClient>> clients_;  // guarded by mu_
  std::map<std::string, bool> agent_;                                   // guarded by mu_
};

}  // namespace eco::status
