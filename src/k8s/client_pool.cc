#include "k8s/client_pool.h"

#include "catalog/catalog.h"

namespace eco::k8s {

Result<std::shared_ptr<ClusterClient>> ClientOfCluster(store::Store& st, const std::string& provider,
                                                       const std::string& cluster, const ClientOptions& options,
                                                       const ClientFactory& factory) {
  ECO_ASSIGN_OR_RETURN(auto kc, catalog::Kubeconfig(st, provider, cluster));
  auto rc = ParseStoredKubeconfig(kc);
  if (!rc.ok()) return rc.status().Annotate("kubeconfig of cluster " + provider + "+" + cluster);
  if (factory) return factory(*rc, options);
  ECO_ASSIGN_OR_RETURN(auto client, NewClusterClient(*rc, options));
  return std::shared_ptr<ClusterClient>(std::move(client));
}

Result<std::shared_ptr<ClusterClient>> ClientPool::Get(const std::string& provider, const std::string& cluster) {
  const std::string key = provider + "+" + cluster;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = clients_.find(key); it != clients_.end()) return it->second;
  }
  ECO_ASSIGN_OR_RETURN(auto client, ClientOfCluster(st_, provider, cluster, options_, factory_));
  std::lock_guard<std::mutex> g(mu_);
  // Another thread may have made one meanwhile: keep the first.
  return clients_.emplace(key, std::move(client)).first->second;
}

void ClientPool::Clear() {
  std::lock_guard<std::mutex> g(mu_);
  clients_.clear();
}

}  // namespace eco::k8s
