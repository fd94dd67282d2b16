// Clients of registered clusters, made from the kubeconfig the catalog
// holds. The one place where a stored kubeconfig becomes a client: rsync,
// the ready monitor and the HPA controller's cluster view all come here.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "store/store.h"

namespace eco::k8s {

// Builds a client from a parsed kubeconfig (default: NewClusterClient).
// Tests wrap the real client to count or fail requests.
using ClientFactory =
    std::function<Result<std::shared_ptr<ClusterClient>>(const RestConfig&, const ClientOptions&)>;

// The client of cluster `provider`+`cluster` from its stored kubeconfig.
Result<std::shared_ptr<ClusterClient>> ClientOfCluster(store::Store& st, const std::string& provider,
                                                       const std::string& cluster, const ClientOptions& options,
                                                       const ClientFactory& factory = nullptr);

// Keeps one client (one connection pool) per cluster once made.
class ClientPool {
 public:
  ClientPool(store::Store& st, ClientOptions options, ClientFactory factory = nullptr)
      : st_(st), options_(std::move(options)), factory_(std::move(factory)) {}
  Result<std::shared_ptr<ClusterClient>> Get(const std::string& provider, const std::string& cluster);
  // Forgets every client (they close when their last user lets go).
  void Clear();

 private:
  store::Store& st_;
  const ClientOptions options_;
  const ClientFactory factory_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ClusterClient>> clients_;  // guarded by mu_
};

}  // namespace eco::k8s
