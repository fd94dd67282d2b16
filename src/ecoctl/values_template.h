// Values substitution for emcoctl-style templated YAML (`ecoctl -v values.yaml`).
//
// emcoctl renders the input file with Go's text/template. Until eco's full
// template engine lands, this supports only field substitution:
//   {{ .Key }}  {{.Nested.Key}}  with the trim markers {{- and -}}
// Any other action is rejected with "template action not supported yet".
// Everything lives behind this one function so the engine can be swapped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::ecoctl {

// Renders `text` over `values` (a JSON object). A missing key, a non-scalar
// value or an unsupported action is an error naming the line; unlike Go's
// default ("<no value>"), missing keys never pass silently.
Result<std::string> RenderValuesTemplate(std::string_view text, const nlohmann::json& values);

}  // namespace eco::ecoctl
