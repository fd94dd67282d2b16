// The table of configuration resources the north API serves. Each entry
// says where the resource lives in the URL tree, how its key is formed, how
// its body is validated and what it refers to; one generic engine (api.cc)
// implements create/get/list/replace/delete for all of them.
#pragma once

#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "controllers/gac/customize.h"

namespace eco::api {

using nlohmann::json;

// Key values of one resource instance: ancestors' first, then its own.
using KeyValues = std::vector<std::string>;

enum class FileKind {
  kNone,        // JSON body only
  kArchive,     // multipart with a .tgz (chart or profile)
  kKubeconfig,  // multipart with a kubeconfig
  kManifest,    // multipart with an optional Kubernetes manifest (gac resources)
  kFiles,       // multipart with zero or more "files" parts (gac customizations)
};

struct ResourceDef;

// A reference from one resource to another: deleting the target is refused
// while the reference exists.
struct Ref {
  const ResourceDef* target;
  KeyValues keys;
};

struct ResourceDef {
  std::string type;     // stable id used in store keys, e.g. "compositeApp"
  std::string display;  // for messages, e.g. "CompositeApp"
  // EMCO's wording of a duplicate when it is not "<display> already exists"
  // (scripts match it); `display` itself gives EMCO's "<display> not found".
  std::string exists_message;
  const ResourceDef* parent = nullptr;
  // URL segments of the collection below /v2, parent variables as "{name}".
  std::vector<std::string> collection;
  // Names of this resource's own key variables (usually one).
  std::vector<std::string> own_keys;
  // Label-shaped body ({"clusterLabel": ...}) instead of {metadata, spec}.
  bool label_body = false;
  FileKind file = FileKind::kNone;
  std::string file_download_name;  // filename of the file part in multipart GETs
  // Has a lifecycle state record (DIG).
  bool has_state = false;
  // Validates and normalizes the body (metadata already normalized).
  std::function<Status(json& body)> validate;
  // References held by an instance with this body.
  std::function<void(const json& body, const KeyValues& keys, std::vector<Ref>& out)> refs;
  // Extra uniqueness constraint: an index id that must be unused by other
  // instances ("" = none), and the message when it is taken.
  std::function<std::string(const json& body, const KeyValues& keys)> unique;
  std::string unique_message;
  // Whether a file part is optional (clusters managed through GitOps).
  std::function<bool(const json& body)> file_optional;
  // Why this body must come without a file part (an agent cluster has no
  // kubeconfig); "" = a file is allowed.
  std::function<std::string(const json& body)> file_refused;
  // Extra check of a replacement against the body it replaces (a cluster
  // keeps its delivery).
  std::function<Status(const json& old_body, const json& body)> replace_check;
  // Extra check of an uploaded file (kManifest) or of the uploaded files
  // (kFiles) against the body.
  std::function<Status(const json& body, const std::string& file)> file_check;
  std::function<Status(const json& body, const std::vector<gac::File>& files)> files_check;
  // Extra check of a new instance against its parent's body.
  std::function<Status(const json& body, const json& parent_body)> parent_check;
  // GET on the collection with ?<name_query>=NAME answers the item NAME
  // (EMCO's "GET H?intent=NAME" forms); "" = no such query.
  std::string name_query;
  // ...answered as a one-item list, as EMCO does for some of them.
  bool name_query_list = false;
  // DELETE on the collection deletes every item (and their children).
  bool delete_all = false;

  std::string AlreadyExists() const {
    return exists_message.empty() ? display + " already exists" : exists_message;
  }

  // Filled by the registry.
  std::vector<const ResourceDef*> children;
  size_t depth() const;  // number of key values incl. ancestors
};

// Adds one definition to the table (parents before children) and returns it.
using AddFn = std::function<ResourceDef*(ResourceDef)>;
// Intent resources of the built-in controllers, each in its own file:
// resources_hpa.cc (DIG/hpa-intents/...), resources_gac.cc and resources_traffic.cc
// (DIG/traffic-group-intents/..., /v2/dtc-controllers). `dig` is the
// deployment intent group definition; `dig_collection` its item path
// (".../deployment-intent-groups/{deploymentIntentGroup}").
// `base` with `more` appended: an item path under another.
inline std::vector<std::string> Under(std::vector<std::string> base, std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}
void AddHpaResources(const AddFn& add, const ResourceDef* dig,
                     const std::vector<std::string>& dig_item);
void AddTrafficResources(const AddFn& add, const ResourceDef* dig,
                         const std::vector<std::string>& dig_item);
// resources_gac.cc (DIG/generic-k8s-intents/...); `cluster` is the cluster
// definition (customizations naming a cluster refer to it).
void AddGacResources(const AddFn& add, const ResourceDef* dig, const std::vector<std::string>& dig_item,
                     const ResourceDef* cluster);

// All resource definitions, parents before children.
const std::vector<const ResourceDef*>& AllResources();
const ResourceDef* FindResource(const std::string& type);

}  // namespace eco::api
