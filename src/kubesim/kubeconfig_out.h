// The kubeconfig kube-sim writes for each simulated cluster.
#pragma once

#include <string>

#include "common/status.h"

namespace eco::kubesim {

struct KubeconfigSpec {
  std::string cluster;      // cluster, user and context are all named after it
  std::string server_base;  // "https://127.0.0.1:8443"; the cluster's path is appended
  std::string token;        // bearer token
  std::string ca_pem;       // with TLS: the CA, written as certificate-authority-data
};

// A kubeconfig with one cluster (server SERVER_BASE/clusters/NAME), one user
// (token), one context, and current-context NAME.
std::string KubeconfigYaml(const KubeconfigSpec& spec);

// Writes DIR/NAME.yaml, mode 0600, replacing any old file atomically (a
// temporary file renamed over it). Creates DIR when missing.
Status WriteKubeconfig(const std::string& dir, const KubeconfigSpec& spec);

}  // namespace eco::kubesim
