// Values substitution for emcoctl-style templated YAML (`ecoctl -v values.yaml`).
//
// emcoctl renders its input files with Go's text/template over the values;
// ecoctl does the same with eco's own template engine (src/helm), Sprig
// functions included, so `range`, `if`, pipelines and functions work as in
// Go. One difference on purpose: a missing key is an error naming it
// (Go's default prints "<no value>", which would send that text to eco).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::ecoctl {

// Renders `text` over `values` (a JSON object); errors name the line.
Result<std::string> RenderValuesTemplate(std::string_view text, const nlohmann::json& values);

}  // namespace eco::ecoctl
