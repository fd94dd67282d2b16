// In-cluster configuration: how a process running in a pod reaches its own
// cluster's API server with the pod's service account, as client-go's
// rest.InClusterConfig does. Library eco_k8s_config, like kubeconfig.h,
// and it yields the same RestConfig, so a client is built from either the
// same way (NewClusterClient).
//
// Token rotation: projected service-account tokens are replaced in the pod
// about hourly (and expire soon after). The RestConfig names the token by
// file (token_file), and eco's client and WatchHub re-read that file
// whenever it changes, before the next request: a client built once keeps
// working across rotations with nothing to call. ReadInClusterToken is for
// code that needs the token itself (to hand it to something that is not
// eco's client): call it at each use rather than keeping its result.
#pragma once

#include <string>

#include "common/status.h"
#include "k8s/kubeconfig.h"

namespace eco::k8s {

// Where the kubelet mounts the service account: token, ca.crt, namespace.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterOptions {
  std::string dir = kServiceAccountDir;
  EnvLookup env;  // empty: the process environment (getenv)
};

// Whether this process looks like it runs in a pod: KUBERNETES_SERVICE_HOST
// and KUBERNETES_SERVICE_PORT are both set.
bool InCluster(const InClusterOptions& options = {});

// The in-cluster RestConfig:
//   server             https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
//                      (an IPv6 host in brackets)
//   token_file         DIR/token (checked readable and non-empty now)
//   ca_pem             DIR/ca.crt (checked with OpenSSL now)
//   default_namespace  $POD_NAMESPACE, else DIR/namespace, else "default"
// Errors: kNotFound when not in a cluster (either variable unset or empty),
// kPermissionDenied when the token is unreadable or empty, kInvalid for a
// bad port or host, or a CA file that is missing or holds no certificate.
// Messages name the file or variable; the token never appears in them.
Result<RestConfig> InClusterConfig(const InClusterOptions& options = {});

// The service account's token as the file holds it now (trailing
// whitespace dropped). kPermissionDenied when unreadable or empty.
Result<std::string> ReadInClusterToken(const InClusterOptions& options = {});

}  // namespace eco::k8s
