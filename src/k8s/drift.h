// Drift: how a live object differs from the manifest eco applied, in the
// fields that manifest sets. What the server or another controller adds
// (defaults, status, a label of its own, a field eco does not set) is not
// drift; only a field eco's manifest sets, holding another value or gone.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace eco::k8s {

struct FieldDrift {
  // "spec.replicas", "spec.ports[0].port"; a map key with a '.' or '/' in
  // brackets: "metadata.labels[app.eco.io/app]".
  std::string path;
  nlohmann::json desired;
  nlohmann::json live;  // null when the live object lacks the field
  std::string manager;  // from metadata.managedFields, "" when unknown
};

// The fields of `desired` (a manifest as applied: metadata.name,
// namespace, labels and annotations are compared, the rest of metadata
// and status never) whose value `live` does not have. Numbers compare by
// value (2 == 2.0). A list compares element by element when the lengths
// agree, else as a whole. Paths in `skip` (and everything under them) are
// not compared: fields an apply left out (field validation Warn).
// Each field's manager is the managedFields entry that owns it.
std::vector<FieldDrift> DriftedFields(const nlohmann::json& live, const nlohmann::json& desired,
                                      const std::vector<std::string>& skip = {});

// What of a manifest is compared: metadata's name, namespace, labels and
// annotations, everything else but status.
nlohmann::json ComparedPart(nlohmann::json desired);
// Whether `live` carries every field of `want` (a ComparedPart) with its
// value: DriftedFields(live, want) is empty, without building it.
bool Covers(const nlohmann::json& live, const nlohmann::json& want);

// The manager whose managedFields entry owns `path` of `live` (the most
// recent one when several do), "" when none does or the object has none.
std::string FieldManager(const nlohmann::json& live, const std::string& path);

}  // namespace eco::k8s
