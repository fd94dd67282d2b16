#include "ecoctl/output.h"

#include <algorithm>

#include "ecoctl/ansi.h"
#include "ecoctl/yaml_json.h"

namespace eco::ecoctl {
namespace {

constexpr size_t kMethodWidth = 6;  // "DELETE"
// Longer paths overflow their column rather than push every line wide.
constexpr size_t kMaxPathWidth = 72;

std::string Paint(std::string_view text, std::string_view colour, bool on) {
  if (!on) return std::string(text);
  return std::string(colour) + std::string(text) + std::string(kReset);
}

std::string Columns(std::string_view label, std::string_view method, std::string_view path,
                    const LineStyle& style) {
  return Pad(label, style.label_width) + "  " + Pad(method, kMethodWidth) + "  " +
         Pad(path, style.path_width) + "  ";
}

}  // namespace

LineStyle StyleFor(const std::vector<PlanStep>& steps, bool color) {
  LineStyle st;
  st.color = color;
  for (const auto& s : steps) {
    st.label_width = std::max(st.label_width, s.label.size());
    st.path_width = std::max(st.path_width, s.request.path.size());
    if (s.replace) st.path_width = std::max(st.path_width, s.replace->path.size());
  }
  st.path_width = std::min(st.path_width, kMaxPathWidth);
  return st;
}

std::string FormatResult(const DocResult& r, const LineStyle& style) {
  std::string verdict;
  if (r.status != 0) verdict = std::to_string(r.status) + " ";
  verdict += r.word;
  std::string_view colour = kGreen;
  switch (r.outcome) {
    case Outcome::kOk:
      colour = r.word == "unchanged" ? kYellow : kGreen;
      break;
    case Outcome::kNotFound:
    case Outcome::kSkipped:
      colour = kYellow;
      break;
    case Outcome::kFailed:
      colour = kRed;
      break;
  }
  std::string line =
      Columns(r.label, r.method, r.path, style) + Paint(verdict, colour, style.color);
  if (!r.message.empty()) {
    line += r.outcome == Outcome::kSkipped ? " (" + r.message + ")" : ": " + r.message;
  }
  return line;
}

std::string FormatPlanStep(const PlanStep& s, const LineStyle& style) {
  if (s.skip) {
    return Columns(s.label, "-", s.request.path, style) + "skip (" + s.skip_reason + ")";
  }
  const HttpRequest& q = s.request;
  std::string line = Columns(s.label, q.method, q.path, style);
  if (q.multipart()) {
    line += "multipart:";
    for (const auto& p : q.parts) {
      line += " " + p.name + "=" + (p.file_path.empty() ? p.content : "@" + p.file_path);
    }
  } else if (!q.body.empty()) {
    line += q.body;
  } else if (q.method == "POST" || q.method == "PUT") {
    line += "(no body)";
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (s.replace)
    line += "\n" + Pad("", style.label_width) + "  if it exists: PUT " + s.replace->path;
  return line;
}

std::string FormatSummary(const RunSummary& sum, Verb verb) {
  std::string s = std::string(VerbName(verb)) + ": " + std::to_string(sum.ok) + " ok, " +
                  std::to_string(sum.failed) + " failed";
  if (sum.skipped > 0) s += ", " + std::to_string(sum.skipped) + " skipped";
  if (sum.not_run > 0) s += ", " + std::to_string(sum.not_run) + " not run (stopped)";
  return s;
}

std::string FormatBody(std::string_view body, BodyFormat format) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string raw(body);
    if (!raw.empty() && raw.back() != '\n') raw += '\n';
    return raw;
  }
  if (format == BodyFormat::kYaml) return JsonToYaml(j);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace eco::ecoctl
