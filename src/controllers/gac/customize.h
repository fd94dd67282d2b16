// What EMCO's generic action controller (gac) does to one object, without
// the store: which clusters a customization is for, the object a new
// resource starts from, and applying a customization (RFC 6902 JSON patch,
// RFC 7386 merge patch, ConfigMap/Secret data from uploaded files).
//
// The stored forms are the API's: a generic resource's body and manifest
// file, a customization's body and its files (a JSON array of
// {"name", "content" (base64)}, see api/resources_gac.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace eco::gac {

using nlohmann::json;

struct ClusterScope {
  bool specific = false;  // clusterSpecific "true"; false = every cluster
  bool by_label = false;  // scope "label" (else "name")
  bool deny = false;      // mode "deny": every cluster but the matching ones
  std::string provider;
  std::string cluster;
  std::string label;
};

struct File {
  std::string name;
  std::string content;
};

struct Customization {
  std::string name;
  ClusterScope scope;
  std::string patch_type;  // "json", "merge" or ""
  json patch_json = json::array();
  // dataKeyOptions of configMapOptions / secretOptions: file -> data key,
  // and the files that are merge patches of the object instead of data.
  std::vector<json> configmap_keys;
  std::vector<json> secret_keys;
  std::vector<File> files;
};

struct GenericResource {
  std::string name;
  std::string app;
  bool new_object = false;
  std::string api_version;
  std::string kind;         // as given (EMCO matches kinds case-insensitively)
  std::string object_name;  // resourceGVK.name
  std::string manifest;     // the uploaded file ("" = none)
};

Result<GenericResource> ResourceFromStored(const json& body, const std::string& manifest);
Result<Customization> CustomizationFromStored(const json& body, const std::string& files_json);

// The stored form of uploaded files, and back.
std::string FilesToStored(const std::vector<File>& files);
Result<std::vector<File>> FilesFromStored(const std::string& stored);

// Whether `c` applies to the cluster provider/name with `labels`.
bool Selects(const ClusterScope& c, const std::string& provider, const std::string& name,
             const std::set<std::string>& labels);

// The object a new resource adds: its manifest, or for a ConfigMap/Secret
// without one, an empty object named by resourceGVK.
Result<json> NewObject(const GenericResource& r);

// Whether an object (as deployed: apiVersion, kind, metadata.name) is the
// one `r` names. Kinds compare case-insensitively, as EMCO's do.
bool Names(const GenericResource& r, const json& object);

// Applies `c` to `object`: data keys from files (ConfigMap/Secret), merge
// patches from files marked so and, for patchType "merge", from every file
// of a non-ConfigMap/Secret object, then the JSON patch. The object is left
// unchanged on error; the message says which operation failed and why.
Status Apply(const Customization& c, json& object);

// The keys a ConfigMap/Secret data map may use (Kubernetes' rule).
bool ValidDataKey(const std::string& key);

}  // namespace eco::gac
