// The seam between a cluster task and a cluster: everything a task does to
// a cluster goes through a ClusterTarget. Today's path is server-side apply
// through k8s::ClusterClient (PushDelivery); another path (an agent in the
// cluster) implements the same interface without touching the event logic.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/status.h"
#include "k8s/client.h"
#include "k8s/openapi_schema.h"
#include "rsync/rsync.h"

namespace eco::rsync {

struct ApplyRequest {
  const std::string* serialized = nullptr;  // the object already as JSON text (saves a dump)
  std::string field_manager;                // "" = eco's own
  // Set: receives the applied object's metadata.resourceVersion (read from
  // the answer without parsing it; unset, the answer is not looked at).
  std::string* resource_version = nullptr;
  // Set: receives its metadata.generation (0: the kind has none), what a
  // rollout's gate compares the cluster's observed generation with.
  int64_t* generation = nullptr;
};

class ClusterTarget {
 public:
  virtual ~ClusterTarget() = default;
  // Whether the cluster serves a kind, and its scope (NotFound: it does not).
  virtual Result<k8s::ResourceInfo> Resolve(const std::string& api_version, const std::string& kind) = 0;
  virtual Result<nlohmann::json> Get(const std::string& api_version, const std::string& kind,
                                     const std::string& ns, const std::string& name) = 0;
  virtual Result<std::vector<nlohmann::json>> List(const std::string& api_version, const std::string& kind,
                                                   const std::string& ns) = 0;
  // The metadata of the objects of a kind in a namespace ("": a
  // cluster-scoped kind), at most `limit` of them; `truncated` says more exist.
  virtual Result<std::vector<nlohmann::json>> ListMetadata(const std::string& api_version, const std::string& kind,
                                                           const std::string& ns, size_t limit, bool* truncated) = 0;
  virtual Status Apply(const nlohmann::json& object, const ApplyRequest& req) = 0;
  // The cluster's OpenAPI v3 schemas of a group-version (k8s/openapi_schema.h).
  virtual Result<k8s::OpenApiDoc> Schemas(const std::string& api_version) = 0;
  // Deletes in the background (dependents follow); NotFound when it is gone.
  virtual Status Delete(const std::string& api_version, const std::string& kind, const std::string& ns,
                        const std::string& name) = 0;
};

class Delivery {
 public:
  virtual ~Delivery() = default;
  // The way to one cluster (kept by the implementation as it sees fit).
  virtual Result<std::shared_ptr<ClusterTarget>> Target(const appcontext::ClusterRef& cluster) = 0;
};

// Server-side apply with eco's field manager through a Kubernetes client
// per cluster; `clients` makes (or finds) them.
std::unique_ptr<Delivery> PushDelivery(ClientSource clients);

}  // namespace eco::rsync
