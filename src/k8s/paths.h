// Pure helpers that turn API coordinates into URL paths and parse discovery
// documents. Used by the client and the watch hub; no I/O here.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/client.h"

namespace eco::k8s {

struct GroupVersion {
  std::string group;  // "" for core
  std::string version;
};

// "apps/v1" → {apps, v1}; "v1" → {"", v1}. Empty or malformed is kInvalid.
Result<GroupVersion> ParseApiVersion(std::string_view api_version);

// "/api/v1" for the core group, "/apis/G/V" otherwise.
std::string GroupVersionPath(const GroupVersion& gv);

// Path of a collection (name empty) or one object, without the server URL:
// /api/v1/namespaces/NS/pods/NAME, /apis/apps/v1/deployments (all namespaces),
// /api/v1/nodes/NAME (cluster-scoped: ns ignored).
std::string ResourcePath(const ResourceInfo& r, std::string_view ns, std::string_view name);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string PercentEncode(std::string_view s);

// Appends "&k=v" (or "?k=v" for the first) with the value encoded.
void AddQuery(std::string& url, std::string_view key, std::string_view value);

// The top-level resources of an APIResourceList (subresources such as
// "pods/status" are skipped). Malformed documents are kInvalid.
Result<std::vector<ResourceInfo>> ParseResourceList(const nlohmann::json& doc,
                                                    const GroupVersion& gv);

// The REST mapping of a kind that every supported Kubernetes release (1.21
// and later) serves with the same resource name and scope — ConfigMap,
// Deployment, Role, ... — or nullopt. Resolving these needs no discovery
// request: at ten thousand clusters that is tens of thousands of requests
// fewer. Kinds that came or changed later (autoscaling/v2, CRDs' kinds)
// are not in it and go through discovery.
std::optional<ResourceInfo> BuiltinKind(const GroupVersion& gv, std::string_view kind);

// Parses a JSON document from a Kubernetes server, leaving out of the
// objects whose fields sit at nesting depth `object_depth` (2 for the object
// of a watch event line, 3 for the items of a list) what readiness rules
// never read: ConfigMap and Secret data, metadata.managedFields and
// annotations, pod templates. Watching thousands of clusters, those are
// most of the bytes. Malformed input gives a discarded value.
nlohmann::json ParseSlim(std::string_view text, int object_depth);

// metadata.resourceVersion of the object `text` holds, without building it
// ("" when it has none or the text is not JSON).
std::string ResourceVersionIn(std::string_view text);
// metadata.resourceVersion and metadata.generation (0 when absent: kinds
// without a spec/status split have none) in one pass over `text`.
struct ObjectVersion {
  std::string resource_version;
  int64_t generation = 0;
};
ObjectVersion ObjectVersionIn(std::string_view text);

// Every served group-version in an APIGroupList (/apis), preferred first
// within each group.
Result<std::vector<GroupVersion>> ParseGroupList(const nlohmann::json& doc);

}  // namespace eco::k8s
