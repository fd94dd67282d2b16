#include "common/yaml_scalar.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace eco {
namespace {

bool OneOf(std::string_view s, std::initializer_list<std::string_view> list) {
  for (std::string_view x : list) {
    if (s == x) return true;
  }
  return false;
}

// strconv.ParseInt / ParseUint with base 0 (0x, 0o, 0b prefixes; leading 0 is octal).
bool ParseGoInteger(std::string_view s, bool is_unsigned, GoYamlScalar* out) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    if (is_unsigned) return false;
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    char p = static_cast<char>(s[1] | 0x20);
    if (p == 'x') {
      base = 16;
      s.remove_prefix(2);
    } else if (p == 'o') {
      base = 8;
      s.remove_prefix(2);
    } else if (p == 'b') {
      base = 2;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'z') ? c - 'a' + 10
            : (c >= 'A' && c <= 'Z') ? c - 'A' + 10
                                     : 99;
    if (d >= base) return false;
    uint64_t ub = static_cast<uint64_t>(base);
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / ub) return false;
    v = v * ub + static_cast<uint64_t>(d);
  }
  if (is_unsigned) {
    out->kind = GoYamlScalar::kUint;
    out->u = v;
    return true;
  }
  uint64_t limit = neg ? static_cast<uint64_t>(INT64_MAX) + 1 : static_cast<uint64_t>(INT64_MAX);
  if (v > limit) return false;
  out->kind = GoYamlScalar::kInt;
  out->i = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

// go-yaml v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool IsYamlStyleFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  } else {
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// strconv.ParseFloat for the decimal forms go-yaml lets through; overflow is
// an error there (the scalar stays a string), underflow is not.
bool ParseDecimalFloat(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double f = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (std::isinf(f)) return false;
  *out = f;
  return true;
}

}  // namespace

GoYamlScalar ResolveGoYamlPlain(std::string_view s) {
  GoYamlScalar r;
  if (!s.empty()) {
    // Most scalars: a letter no null/bool spelling starts with is a string.
    char c = s[0];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter && std::string_view("yYnNtTfFoO").find(c) == std::string_view::npos) return r;
  }
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) {
    r.kind = GoYamlScalar::kNull;
    return r;
  }
  if (OneOf(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    r.kind = GoYamlScalar::kBool;
    r.b = true;
    return r;
  }
  if (OneOf(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    r.kind = GoYamlScalar::kBool;
    return r;
  }
  if (OneOf(s, {".nan", ".NaN", ".NAN"})) {
    r.kind = GoYamlScalar::kFloat;
    r.f = std::nan("");
    return r;
  }
  if (OneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    r.kind = GoYamlScalar::kFloat;
    r.f = HUGE_VAL;
    return r;
  }
  if (OneOf(s, {"-.inf", "-.Inf", "-.INF"})) {
    r.kind = GoYamlScalar::kFloat;
    r.f = -HUGE_VAL;
    return r;
  }
  char c = s[0];
  if (c == '.') {
    // Only ParseFloat is tried, on the text as written.
    bool ok = s.size() > 1;
    for (size_t k = 1; k < s.size() && ok; ++k) {
      char ch = s[k];
      ok = (ch >= '0' && ch <= '9') || ch == 'e' || ch == 'E' || ch == '+' || ch == '-';
    }
    double f = 0;
    if (ok && IsYamlStyleFloat(s) && ParseDecimalFloat(std::string(s), &f)) {
      r.kind = GoYamlScalar::kFloat;
      r.f = f;
    }
    return r;
  }
  if (!((c >= '0' && c <= '9') || c == '+' || c == '-')) return r;
  // Timestamps (YYYY-...) resolve to time.Time, which go-yaml hands to an
  // interface{} as the original string, so they need no case here.
  std::string plain;
  plain.reserve(s.size());
  for (char ch : s) {
    if (ch != '_') plain += ch;
  }
  GoYamlScalar n;
  if (ParseGoInteger(plain, false, &n) || ParseGoInteger(plain, true, &n)) return n;
  double f = 0;
  if (IsYamlStyleFloat(plain) && ParseDecimalFloat(plain, &f)) {
    r.kind = GoYamlScalar::kFloat;
    r.f = f;
  }
  // "0b..." was handled by ParseGoInteger's base prefix; "-0b..." too.
  return r;
}

}  // namespace eco
