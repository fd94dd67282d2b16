// YAML <-> JSON conversion with YAML 1.2 core-schema scalar typing, so that
// `port: 9031` becomes a JSON number and `level: "0"` stays a string, the way
// emcoctl (Go yaml.v3 decoding into interface{}) sends them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::ecoctl {

// Parses every document of a (multi-document) YAML text. Empty documents
// come back as null. Errors carry the line number.
Result<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text);

// Parses a single-document YAML text (a values file); empty text → {}.
Result<nlohmann::json> ParseYamlValues(std::string_view text);

// Renders JSON as block-style YAML; strings that would read back as another
// type (e.g. "123", "true") are quoted.
std::string JsonToYaml(const nlohmann::json& value);

// Deep-merges `overlay` into `base`: maps merge key by key, anything else in
// the overlay replaces the base (Helm's values semantics).
void MergeValues(nlohmann::json& base, const nlohmann::json& overlay);

}  // namespace eco::ecoctl
