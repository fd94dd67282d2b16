// Renders template conformance cases (the format of
// shared/conformance/template/cases.json): the engine behind
// `eco helm eval-cases` and the conformance test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "helm/template.h"
#include "helm/value.h"

namespace eco::helm {

struct CaseOutcome {
  std::string id;
  std::string category;
  bool is_error = false;
  std::string phase;  // "parse" or "exec" when is_error
  std::string text;   // the output, or the error message
};

// A case with its data already converted, ready to render repeatedly
// (benchmarks time RenderCase alone).
struct PreparedCase {
  std::string id;
  std::string category;
  bool helm = false;
  std::string name;
  std::vector<std::string> defines;
  std::string text;
  Value data;
  ExecOptions opts;
};
Result<std::vector<PreparedCase>> PrepareCases(std::string_view cases_json);
// Parses the case's templates into a fresh set and executes it.
CaseOutcome RenderCase(const PreparedCase& c);

// Renders every case of a cases.json document.
Result<std::vector<CaseOutcome>> RunCases(std::string_view cases_json);
// The same as a JSON array [{"id","output"} | {"id","error"}].
Result<std::string> EvalCases(std::string_view cases_json);

}  // namespace eco::helm
