// The YAML that installs `eco agent` in a member cluster (`eco agent
// manifest`, docs/agent.md "Install on a real cluster"): Namespace,
// ServiceAccount, ClusterRole + ClusterRoleBinding, Role + RoleBinding for
// the agent's own Secrets, the Secret holding the bootstrap token, and a
// Deployment of one replica (strategy Recreate) running
// `eco agent --hub URL --token-file /etc/eco-agent/token`.
#pragma once

#include <string>

#include "common/status.h"

namespace eco::agent {

// Where the Deployment mounts the bootstrap Secret's `token` key.
inline constexpr char kTokenFilePath[] = "/etc/eco-agent/token";

struct ManifestOptions {
  // The address the agent dials: an http:// or https:// URL, or host:port
  // (the "hub" of the bootstrap answer). Required.
  std::string hub;
  // The bootstrap token: non-empty, no line break or other control
  // character. Required. It appears only in the Secret (base64).
  std::string token;
  std::string ns = "eco-system";  // DNS-1123 label
  std::string image = "eco:latest";
  std::string image_pull_policy = "IfNotPresent";  // Always, IfNotPresent or Never
  // Names the ServiceAccount, Deployment and RBAC objects: a DNS-1123 label.
  // The cluster-scoped ones are "<name>.<ns>", so agents installed in two
  // namespaces do not collide.
  std::string name = "eco-agent";
};

// kInvalid naming the first bad option (never quoting the token).
Status ValidateManifestOptions(const ManifestOptions& options);

// Multi-document YAML (documents separated by "---"), one comment per
// object and per RBAC rule saying why it is there. kInvalid as
// ValidateManifestOptions.
Result<std::string> AgentManifest(const ManifestOptions& options);

}  // namespace eco::agent
