// kube-sim's simulated clusters: the Kubernetes API semantics (objects,
// discovery, watch, patch, errors) and the simulated controllers, served
// under /clusters/NAME/... by one process.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kubesim/http.h"

namespace eco::kubesim {

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;       // added to the usual kubernetes.io/* labels
  std::map<std::string, std::string> allocatable;  // quantities as strings: cpu "8", memory "32Gi"
  // status.addresses as the kubelet reports them ({type, address}: InternalIP,
  // ExternalIP, Hostname); empty: InternalIP 10.0.0.<index+2> and Hostname.
  std::vector<std::pair<std::string, std::string>> addresses;
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeSpec> nodes;  // empty: three default nodes of 4 CPU / 16 GiB
  std::string token;            // bearer token; empty: generated
  // What the cloud's load balancer controller hands to LoadBalancer
  // Services (status.loadBalancer.ingress), one each, in order: IPs or host
  // names. Empty: IPs 172.18.200.1 upward. Once all are taken, a new
  // Service's ingress stays pending, as with an exhausted address pool.
  std::vector<std::string> load_balancer_pool;
};

// Parses a --fleet file (YAML: clusters: [{name, loadBalancerPool, nodes: [{name, labels,
// allocatable, addresses}]}]).
Result<std::vector<ClusterSpec>> ParseFleet(const std::string& yaml_text);
// N clusters named PREFIX1..PREFIXN with default nodes.
std::vector<ClusterSpec> DefaultFleet(int n, const std::string& name_prefix);

struct SimOptions {
  std::chrono::milliseconds ready_delay{0};  // before workloads report ready
  // kubectl (client-go) sends no credentials over plain HTTP, as the API
  // server's old insecure port needed none: without TLS a request with no
  // Authorization header is accepted; a wrong token is refused either way.
  bool require_auth = true;
  // How long a new CustomResourceDefinition takes to become Established.
  // Until then it is NamesAccepted but its kinds are not served (404 page
  // not found) nor in discovery. 0: served at once.
  std::chrono::milliseconds crd_establish_delay{300};
  // How long a deleted Namespace stays Terminating (creating in it: 403)
  // once its objects are gone. 0: gone as soon as they are.
  std::chrono::milliseconds namespace_terminate{2000};
  // Seeds what kube-sim draws (tokens, uids, generated names, pod name
  // suffixes, watch timeouts), one sequence per cluster: the same seed and
  // the same requests to a cluster give the same names. 0: a random seed.
  uint64_t seed = 0;
};

class Simulator {
 public:
  static std::unique_ptr<Simulator> Create(std::vector<ClusterSpec> clusters, SimOptions options);
  virtual ~Simulator() = default;

  // Serves /clusters/NAME/... (Kubernetes API) and GET /sim/clusters/NAME/objects,
  // GET /sim/clusters (names). Everything else: 404 Status.
  virtual HttpReply Handle(const HttpRequest& request) = 0;

  virtual bool HasCluster(const std::string& name) const = 0;
  virtual std::vector<std::string> ClusterNames() const = 0;
  // The bearer token a cluster accepts (written into its kubeconfig).
  virtual std::string Token(const std::string& name) const = 0;
  // Ends controller threads and open watches; Handle must not be called after.
  virtual void Shutdown() = 0;
};

}  // namespace eco::kubesim
