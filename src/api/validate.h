// Input validation for API bodies, following EMCO's JSON schemas: the name
// rule, field lengths and types. Each check returns Invalid with a message
// naming the offending field.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::api {

using nlohmann::json;

// EMCO's name rule: ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$, at most 128 chars.
bool ValidName(std::string_view s);

struct FieldRule {
  bool required = false;
  size_t max_len = 0;      // 0 = unlimited
  bool name_rule = false;  // must satisfy ValidName
};

// A required name, by EMCO's rule.
inline constexpr FieldRule kName{true, 128, true};

// `obj[field]`, when present (or required), must be a string meeting `rule`.
// `where` names the field in messages, e.g. "spec.app".
Status CheckString(const json& obj, const char* field, std::string_view where, FieldRule rule);
// An integer within [min, max].
Status CheckInt(const json& obj, const char* field, std::string_view where, bool required,
                int64_t min, int64_t max);
// An object whose values are all strings of at most max_len.
Status CheckStringMap(const json& obj, const char* field, std::string_view where, bool required,
                      size_t max_len);
// An array of strings.
Status CheckStringArray(const json& obj, const char* field, std::string_view where);
// A boolean.
Status CheckBool(const json& obj, const char* field, std::string_view where);

// Validates body.metadata (name rule, lengths) and fills the four standard
// keys with "" when absent, as EMCO echoes them.
Status NormalizeMetadata(json& body);

// `body.spec` as an object (created empty when absent and !required).
Status RequireSpec(json& body, bool required);

// A duration as Go's time.ParseDuration reads it ("30m", "1h30m", "1.5h",
// "300ms"; units ns, us, µs, ms, s, m, h); kInvalid otherwise.
Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view s);

}  // namespace eco::api
