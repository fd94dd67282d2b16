// Text ecoctl prints: one line per document, the dry-run plan, a summary,
// and query bodies as JSON or YAML. Pure string formatting.
#pragma once

#include <string>
#include <vector>

#include "ecoctl/plan.h"
#include "ecoctl/runner.h"

namespace eco::ecoctl {

enum class BodyFormat { kJson, kYaml };

struct LineStyle {
  bool color = false;      // ANSI colours (only when writing to a terminal)
  size_t label_width = 0;  // column widths, so lines align
  size_t path_width = 0;
};

// Widths that fit every step's label and paths (request and replacement).
LineStyle StyleFor(const std::vector<PlanStep>& steps, bool color);

// "#3  POST    /v2/projects/p1/composite-apps  201 created"
// "#4  POST    /v2/projects/p1/composite-apps  409 conflict: Parent resource not found"
std::string FormatResult(const DocResult& r, const LineStyle& style);

// Dry run: what would be sent, including the PUT fallback.
std::string FormatPlanStep(const PlanStep& s, const LineStyle& style);

// "apply: 5 ok, 1 failed, 2 skipped" (+ "N not run" after an early stop).
std::string FormatSummary(const RunSummary& sum, Verb verb);

// Pretty JSON (2-space indent) or YAML of a response body; a body that is
// not JSON is returned as it is.
std::string FormatBody(std::string_view body, BodyFormat format);

}  // namespace eco::ecoctl
