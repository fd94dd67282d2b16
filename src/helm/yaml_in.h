// YAML text → Value as Helm reads it: sigs.k8s.io/yaml, i.e. go-yaml v2
// (YAML 1.1 scalar resolution) converted to JSON and decoded again, so every
// number is a float64, map keys are strings and null is a nil interface.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/yaml_scalar.h"
#include "helm/value.h"

namespace eco::helm {

// What a Go program decodes the JSON into; it decides the error for a
// document of another kind (the Go type name appears in the message).
enum class YamlTarget {
  kAny,     // interface{}: any document
  kMap,     // map[string]interface{} (an empty/null document is an empty map)
  kList,    // []interface{}
};

// Decodes the first document of `text`. Errors carry sigs.k8s.io/yaml's
// wording ("error converting YAML to JSON: yaml: line 1: ..." or "error
// unmarshaling JSON: while decoding JSON: json: cannot unmarshal ...");
// `go_type` names the target type in the latter.
Result<Value> DecodeYaml(std::string_view text, YamlTarget target = YamlTarget::kAny,
                         std::string_view go_type = "");

// DecodeYaml(text) with the same result and errors, except that a mapping
// document keeps only the top-level keys in `keep`: for readers of a few
// fields of large documents (a rendered manifest's head).
Result<Value> DecodeYamlTopKeys(std::string_view text, const std::vector<std::string_view>& keep);

// go-yaml v2's resolution of an untagged plain scalar, after the JSON round
// trip: nil interface, bool, float64 or (when nothing else fits) string.
Value ResolveYamlScalar(std::string_view plain);

}  // namespace eco::helm
