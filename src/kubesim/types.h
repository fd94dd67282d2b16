// The resource types a simulated cluster serves: the built-in table and
// CRD-defined types, and the discovery documents built from them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eco::kubesim {

using Json = nlohmann::json;

class KindSchema;  // kubesim/schema.h

struct ResourceType {
  std::string group;     // "" for core
  std::string version;   // "v1"
  std::string kind;      // "Deployment"
  std::string plural;    // "deployments"
  std::string singular;  // "deployment"
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  bool has_status = true;  // serves the status subresource
  bool crd = false;        // defined by a CustomResourceDefinition
  // A custom resource's fields, from its CRD version's openAPIV3Schema
  // (null without one: nothing is checked).
  std::shared_ptr<const KindSchema> schema;

  std::string GroupVersion() const { return group.empty() ? version : group + "/" + version; }
  // "deployments.apps", "pods": how API errors name the resource.
  std::string QualifiedPlural() const { return group.empty() ? plural : plural + "." + group; }
  // Key of the object collection (all versions of a group share it).
  std::string StorageKey() const { return group + "/" + plural; }
};

// Every built-in type, in discovery order.
const std::vector<ResourceType>& BuiltinTypes();

// Discovery documents for a set of types (built-ins followed by CRD types).
std::string ApiVersionsJson();                                             // GET /api
Json ApiGroupListJson(const std::vector<const ResourceType*>& types);      // GET /apis
Json ApiResourceListJson(const std::vector<const ResourceType*>& types,    // GET /api/v1, /apis/G/V
                         const std::string& group, const std::string& version);

// Types defined by a CRD object (one per served version); empty when the
// CRD is malformed.
std::vector<ResourceType> TypesFromCrd(const Json& crd);

}  // namespace eco::kubesim
