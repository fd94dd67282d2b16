// A cluster's own OpenAPI v3 schemas (/openapi/v3), and what an object
// carries that its kind's schema does not declare. Server-side apply refuses
// such fields ("field not declared in schema"), where a create or EMCO's
// client-side apply drops them with a warning; eco's `Warn` field validation
// (docs/rsync.md) drops exactly these before applying.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::k8s {

class ClusterClient;

// One group-version's document (its components.schemas), parsed once and
// shared by every cluster that serves the same content.
using OpenApiDoc = std::shared_ptr<const nlohmann::json>;

// The cluster's document for `api_version` ("v1", "apps/v1", a CRD's
// group/version): the /openapi/v3 index is read each call (so a CRD changed
// since is seen), the document itself only when its content hash is new to
// this process. NotFound when the cluster does not list the group-version
// (or serves no OpenAPI v3, before Kubernetes 1.24 or when disabled).
Result<OpenApiDoc> FetchOpenApiDoc(ClusterClient& client, std::string_view api_version);

// Removes from `obj` every field the schema of its kind (found by its
// x-kubernetes-group-version-kind) does not declare, and returns their
// paths as the API server writes them when it decodes
// ("spec.template.spec.containers[0].imagee"), in key order. Inside a
// removed field nothing more is reported. Fields under
// x-kubernetes-preserve-unknown-fields, maps (additionalProperties) and
// opaque named types (RawExtension, FieldsV1: an object schema without
// properties reached by reference) are all declared. NotFound when the
// document has no schema for the object's kind.
Result<std::vector<std::string>> DropUndeclaredFields(const nlohmann::json& doc, nlohmann::json& obj);

}  // namespace eco::k8s
