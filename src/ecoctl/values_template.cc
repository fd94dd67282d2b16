#include "ecoctl/values_template.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

// Go's template lexer trims on these four only.
bool IsTrimSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits ".A.B.C" into {"A","B","C"}; false if `expr` is anything else.
bool ParseFieldChain(std::string_view expr, std::vector<std::string>* fields) {
  if (expr.empty() || expr[0] != '.') return false;
  size_t i = 0;
  while (i < expr.size()) {
    if (expr[i] != '.') return false;
    ++i;
    if (i >= expr.size() || !IsIdentStart(expr[i])) return false;
    size_t start = i;
    while (i < expr.size() && IsIdentChar(expr[i])) ++i;
    fields->emplace_back(expr.substr(start, i - start));
  }
  return true;
}

std::string Where(int line) { return " (line " + std::to_string(line) + ")"; }

Result<std::string> Lookup(const json& values, const std::vector<std::string>& fields,
                           std::string_view expr, int line) {
  const json* cur = &values;
  std::string path;
  for (const auto& f : fields) {
    if (!cur->is_object()) {
      return Invalid("values: " + (path.empty() ? std::string(".") : path) +
                     " is not a map, cannot evaluate " + std::string(expr) + Where(line));
    }
    path += "." + f;
    auto it = cur->find(f);
    if (it == cur->end()) return Invalid("values: no value for " + path + Where(line));
    cur = &*it;
  }
  switch (cur->type()) {
    case json::value_t::string:
      return cur->get<std::string>();
    case json::value_t::boolean:
      return std::string(cur->get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return cur->dump();
    case json::value_t::null:
      return Invalid("values: " + std::string(expr) + " is null" + Where(line));
    default:
      return Invalid("values: " + std::string(expr) + " is a " + cur->type_name() +
                     ", not a scalar; only scalars can be substituted" + Where(line));
  }
}

}  // namespace

Result<std::string> RenderValuesTemplate(std::string_view text, const json& values) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  int line = 1;  // line of text[pos]
  auto advance_line = [&](size_t from, size_t to) {
    line += static_cast<int>(std::count(text.begin() + from, text.begin() + to, '\n'));
  };

  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    std::string_view chunk = text.substr(pos, open - pos);
    advance_line(pos, open);
    const int action_line = line;

    size_t inner = open + 2;
    // "{{- " trims; "{{-3}}" would be a number, so the space is required.
    bool trim_left = inner + 1 < text.size() && text[inner] == '-' && IsTrimSpace(text[inner + 1]);
    if (trim_left) ++inner;

    size_t close = text.find("}}", inner);
    if (close == std::string_view::npos) {
      return Invalid("template: unclosed action" + Where(action_line));
    }
    size_t inner_end = close;
    bool trim_right = close >= inner + 2 && text[close - 1] == '-' && IsTrimSpace(text[close - 2]);
    if (trim_right) --inner_end;

    if (trim_left) {
      while (!chunk.empty() && IsTrimSpace(chunk.back())) chunk.remove_suffix(1);
    }
    out.append(chunk);

    std::string_view expr = text.substr(inner, inner_end - inner);
    while (!expr.empty() && IsTrimSpace(expr.front())) expr.remove_prefix(1);
    while (!expr.empty() && IsTrimSpace(expr.back())) expr.remove_suffix(1);

    std::vector<std::string> fields;
    if (!ParseFieldChain(expr, &fields)) {
      return Invalid(
          "template action not supported yet: " + std::string(text.substr(open, close + 2 - open)) +
          Where(action_line) + "; only {{ .Key }} substitution is implemented");
    }
    auto value = Lookup(values, fields, expr, action_line);
    if (!value.ok()) return value.status();
    out.append(*value);

    advance_line(open, close + 2);
    pos = close + 2;
    if (trim_right) {
      size_t end = pos;
      while (end < text.size() && IsTrimSpace(text[end])) ++end;
      advance_line(pos, end);
      pos = end;
    }
  }
  return out;
}

}  // namespace eco::ecoctl
