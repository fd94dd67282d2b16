#include "api/validate.h"

#include <cstdint>
#include <string>

namespace eco::api {
namespace {

bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string Where(std::string_view where) { return std::string(where); }

}  // namespace

// Hand-written instead of a regex: it runs on every request path variable.
bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

Status CheckString(const json& obj, const char* field, std::string_view where, FieldRule rule) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (rule.required) return Invalid("Invalid Input: " + Where(where) + " is required");
    return Status::Ok();
  }
  if (!it->is_string()) return Invalid("Invalid Input: " + Where(where) + " must be a string");
  const auto& s = it->get_ref<const std::string&>();
  if (rule.required && s.empty()) return Invalid("Invalid Input: " + Where(where) + " is required");
  if (rule.max_len && s.size() > rule.max_len) {
    return Invalid("Invalid Input: " + Where(where) + " is longer than " +
                   std::to_string(rule.max_len) + " characters");
  }
  if (rule.name_rule && !(s.empty() && !rule.required) && !ValidName(s)) {
    return Invalid("Invalid Input: " + Where(where) + " '" + s +
                   "' must be at most 128 characters of letters, digits, '-', '_' or '.', "
                   "starting and ending with a letter or digit");
  }
  return Status::Ok();
}

Status CheckInt(const json& obj, const char* field, std::string_view where, bool required,
                int64_t min, int64_t max) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (required) return Invalid("Invalid Input: " + Where(where) + " is required");
    return Status::Ok();
  }
  bool integral = it->is_number_integer() ||
                  (it->is_number_float() && it->get<double>() == static_cast<int64_t>(it->get<double>()));
  if (!integral) return Invalid("Invalid Input: " + Where(where) + " must be an integer");
  int64_t v = it->is_number_float() ? static_cast<int64_t>(it->get<double>()) : it->get<int64_t>();
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) v = INT64_MAX;
  if (v < min || v > max) {
    return Invalid("Invalid Input: " + Where(where) + " must be between " + std::to_string(min) +
                   " and " + std::to_string(max));
  }
  return Status::Ok();
}

Status CheckStringMap(const json& obj, const char* field, std::string_view where, bool required,
                      size_t max_len) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (required) return Invalid("Invalid Input: " + Where(where) + " is required");
    return Status::Ok();
  }
  if (!it->is_object()) return Invalid("Invalid Input: " + Where(where) + " must be an object");
  for (auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return Invalid("Invalid Input: " + Where(where) + "." + k + " must be a string");
    }
    if (max_len && v.get_ref<const std::string&>().size() > max_len) {
      return Invalid("Invalid Input: " + Where(where) + "." + k + " is longer than " +
                     std::to_string(max_len) + " characters");
    }
  }
  return Status::Ok();
}

Status CheckStringArray(const json& obj, const char* field, std::string_view where) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Invalid("Invalid Input: " + Where(where) + " must be an array");
  for (const auto& v : *it) {
    if (!v.is_string()) return Invalid("Invalid Input: " + Where(where) + " must hold strings");
  }
  return Status::Ok();
}

Status CheckBool(const json& obj, const char* field, std::string_view where) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null() || it->is_boolean()) return Status::Ok();
  return Invalid("Invalid Input: " + Where(where) + " must be true or false");
}

Status NormalizeMetadata(json& body) {
  auto it = body.find("metadata");
  if (it == body.end() || it->is_null()) return Invalid("Invalid Input: metadata.name is required");
  if (!it->is_object()) return Invalid("Invalid Input: metadata must be an object");
  json& md = *it;
  ECO_RETURN_IF_ERROR(CheckString(md, "name", "metadata.name", {true, 128, true}));
  ECO_RETURN_IF_ERROR(CheckString(md, "description", "metadata.description", {false, 1024, false}));
  ECO_RETURN_IF_ERROR(CheckString(md, "userData1", "metadata.userData1", {false, 512, false}));
  ECO_RETURN_IF_ERROR(CheckString(md, "userData2", "metadata.userData2", {false, 512, false}));
  // EMCO echoes exactly these four keys and drops anything else.
  json out = json::object();
  for (const char* k : {"name", "description", "userData1", "userData2"}) {
    auto f = md.find(k);
    out[k] = (f == md.end() || f->is_null()) ? json("") : *f;
  }
  md = std::move(out);
  return Status::Ok();
}

Status RequireSpec(json& body, bool required) {
  auto it = body.find("spec");
  if (it == body.end() || it->is_null()) {
    if (required) return Invalid("Invalid Input: spec is required");
    body["spec"] = json::object();
    return Status::Ok();
  }
  if (!it->is_object()) return Invalid("Invalid Input: spec must be an object");
  return Status::Ok();
}

Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view s) {
  const std::string bad = "invalid duration \"" + std::string(s) + "\" (Go's form: 30m, 1h30m, 1.5h, 90s)";
  std::string_view in = s;
  bool negative = false;
  if (!in.empty() && (in.front() == '-' || in.front() == '+')) {
    negative = in.front() == '-';
    in.remove_prefix(1);
  }
  if (in == "0") return std::chrono::nanoseconds(0);
  if (in.empty()) return Invalid(bad);
  constexpr int64_t kMax = INT64_MAX;
  struct Unit {
    std::string_view name;
    int64_t ns;
  };
  // Longest names first: "ms" before "m".
  static constexpr Unit kUnits[] = {{"ns", 1},
                                    {"us", 1000},
                                    {"\u00b5s", 1000},
                                    {"\u03bcs", 1000},
                                    {"ms", 1000000},
                                    {"s", 1000000000},
                                    {"m", 60 * int64_t{1000000000}},
                                    {"h", 3600 * int64_t{1000000000}}};
  int64_t total = 0;
  while (!in.empty()) {
    int64_t whole = 0;
    size_t digits = 0;
    while (!in.empty() && in.front() >= '0' && in.front() <= '9') {
      const int64_t d = in.front() - '0';
      if (whole > (kMax - d) / 10) return Invalid(bad + ": too long");
      whole = whole * 10 + d;
      in.remove_prefix(1);
      ++digits;
    }
    double fraction = 0, scale = 1;
    if (!in.empty() && in.front() == '.') {
      in.remove_prefix(1);
      while (!in.empty() && in.front() >= '0' && in.front() <= '9') {
        scale /= 10;
        fraction += (in.front() - '0') * scale;
        in.remove_prefix(1);
        ++digits;
      }
    }
    if (digits == 0) return Invalid(bad);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (in.substr(0, u.name.size()) == u.name && (!unit || u.name.size() > unit->name.size())) unit = &u;
    }
    if (!unit) return Invalid(bad + ": a number needs a unit (ns, us, ms, s, m, h)");
    in.remove_prefix(unit->name.size());
    if (whole > kMax / unit->ns) return Invalid(bad + ": too long");
    const int64_t part = whole * unit->ns + static_cast<int64_t>(fraction * static_cast<double>(unit->ns));
    if (part < 0 || total > kMax - part) return Invalid(bad + ": too long");
    total += part;
  }
  return std::chrono::nanoseconds(negative ? -total : total);
}

}  // namespace eco::api
