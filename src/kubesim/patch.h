// Patch semantics of the Kubernetes API server, on nlohmann::json objects:
// JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
// (kubectl's client-side apply), and server-side apply with field ownership.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::kubesim {

using Json = nlohmann::json;

// RFC 7386. Never fails; null in the patch deletes.
Json MergePatch(const Json& target, const Json& patch);

// RFC 6902 (add, remove, replace, move, copy, test). A failed op or test is
// kInvalid with a message naming the op and path; the target is untouched.
Result<Json> JsonPatch(const Json& target, const Json& patch_ops);

// Kubernetes strategic merge patch for the built-in kinds: lists with a merge
// key (containers/name, ports/containerPort, env/name, volumes/name, ...)
// merge by key; $patch (replace, delete, merge), $retainKeys,
// $setElementOrder/<list> and $deleteFromPrimitiveList/<list> directives are
// honoured. Lists without a known merge key are replaced, as for merge patch.
Result<Json> StrategicMergePatch(const Json& target, const Json& patch);

// Server-side apply.
struct ApplyResult {
  Json object;           // the merged object, with metadata.managedFields updated
  bool changed = false;  // false when the apply was a no-op: object is then live, unchanged
};
// `live` is the current object (null when it does not exist yet);
// `applied` the manager's full intent. A field set by another manager to a
// different value is a conflict: kConflict with Kubernetes' message
// ("Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas";
// several are grouped per manager) unless `force`, which takes ownership.
// Fields the manager owned before and no longer applies are removed when no
// other manager owns them. `now` is the RFC 3339 time written into the
// manager's managedFields entry when the object or its field set changes.
// A keyed list element without its key, or a duplicate key, is kInvalid.
// Field sets follow structured-merge-diff without a schema: maps are
// granular except label selectors (selector, podSelector, namespaceSelector,
// labelSelector), which are atomic; lists follow ListTypeOf. apiVersion, kind
// and metadata name/namespace/uid/resourceVersion/generation/
// creationTimestamp/managedFields are never owned. status is not treated
// specially: the caller drops it from `applied` if the kind has a status
// subresource.
// On a conflict, `conflicts` (when set) receives each conflicting field with
// its owner, as the API server lists them in the Status's causes.
struct ApplyConflict {
  std::string manager;  // as the message prints it: "\"eco\"", "\"kubectl\" using apps/v1"
  std::string field;    // ".spec.replicas"
};
Result<ApplyResult> ServerSideApply(const Json& live, const Json& applied,
                                    const std::string& manager, bool force, const std::string& now,
                                    std::vector<ApplyConflict>* conflicts = nullptr);

// Records `manager` (operation "Update") as owner of every field of `object`
// that changed relative to `before` (null = create), as the API server does
// for create/update/patch: the fields are taken from other managers, fields
// the update removed leave the manager's set. The managedFields `object`
// carries are used when present (a client may reset them), else `before`'s.
// Mutates object's metadata.managedFields; no change leaves them as they were.
void TrackUpdate(const Json& before, Json& object, const std::string& manager,
                 const std::string& now);

// How a list field merges, decided by its field name alone (kube-sim has no
// per-kind schema): shared by strategic merge patch and server-side apply.
struct ListType {
  enum Kind { kAtomic, kKeyed, kSet } kind = kAtomic;
  const char* key = nullptr;  // merge key field for kKeyed
};
// `field` is the list's field name; `a` and `b` the lists involved (either may
// be null): "ports" is keyed by containerPort when an element has one, else port.
ListType ListTypeOf(std::string_view field, const Json& a, const Json& b);

}  // namespace eco::kubesim
