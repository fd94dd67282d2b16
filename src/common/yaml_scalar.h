// go-yaml v2's resolution of plain YAML scalars (gopkg.in/yaml.v2
// resolve.go, YAML 1.1): what Helm's values and sigs.k8s.io/yaml (so the
// Kubernetes API server) make of an untagged, unquoted scalar.
#pragma once

#include <cstdint>
#include <string_view>

namespace eco {

// A plain scalar as go-yaml v2 hands it to Go (before any JSON round trip).
struct GoYamlScalar {
  enum Kind { kNull, kBool, kInt, kUint, kFloat, kString } kind = kString;
  bool b = false;
  int64_t i = 0;   // kInt: fits int64
  uint64_t u = 0;  // kUint: over INT64_MAX, fits uint64
  double f = 0;    // kFloat, including NaN and the infinities
};

// Resolves an untagged plain scalar: null (~, null, Null, NULL, empty), the
// YAML 1.1 bools (y/yes/true/on, n/no/false/off in three casings), integers
// as strconv.ParseInt/ParseUint with base 0 after dropping '_' (0x, 0o, 0b,
// leading-0 octal, sign), floats (decimal forms and .inf/.nan), else a
// string. Timestamps stay strings, as go-yaml gives them to an interface{}.
GoYamlScalar ResolveGoYamlPlain(std::string_view plain);

}  // namespace eco
