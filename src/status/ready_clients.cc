#include "status/ready_clients.h"

#include "catalog/agent_identity.h"
#include "k8s/client_pool.h"

namespace eco::status {

ClientFactory CatalogClients(store::Store& st, k8s::ClientOptions options) {
  return [&st, options](const std::string& provider,
                        const std::string& cluster) -> Result<std::shared_ptr<k8s::ClusterClient>> {
    return k8s::ClientOfCluster(st, provider, cluster, options);
  };
}

Result<std::shared_ptr<k8s::ClusterClient>> ClusterClients::Get(const std::string& provider,
                                                                const std::string& cluster) {
  const std::string key = provider + "+" + cluster;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = clients_.find(key); it != clients_.end()) return it->second;
  }
  auto c = make_(provider, cluster);  // not under the lock: it may connect
  if (!c.ok()) return c.status();
  std::lock_guard<std::mutex> l(mu_);
  clients_[key] = *c;
  return *c;
}

bool ClusterClients::IsAgentCluster(const std::string& provider, const std::string& cluster) {
  const std::string key = provider + "+" + cluster;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = agent_.find(key); it != agent_.end()) return it->second;
  }
  auto d = catalog::ClusterDelivery(st_, provider, cluster);
  if (!d.ok() && d.status().code() != Code::kNotFound) return false;
  const bool agent = d.ok() && *d == catalog::Delivery::kAgent;
  std::lock_guard<std::mutex> l(mu_);
  agent_[key] = agent;
  return agent;
}

}  // namespace eco::status
