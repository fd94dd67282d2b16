// toYaml as Helm prints it: sigs.k8s.io/yaml (JSON types, sorted keys)
// emitted by yaml.v2, whose scalar styles are reproduced here.
#include <algorithm>
#include <cmath>

#include <re2/re2.h>

#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

// yaml.v2's parseTimestamp: exactly four digits and '-', then Go's
// time.Parse with "2006-1-2", "2006-1-2T15:4:5.999999999Z07:00" (T or t) or
// "2006-1-2 15:4:5.999999999", including Go's range checks.
bool LooksLikeTimestamp(const std::string& s) {
  static const RE2 kDate(R"((\d{4})-(\d{1,2})-(\d{1,2})(.*))");
  static const RE2 kTime(
      R"(([Tt ])(\d{1,2}):(\d{1,2}):(\d{1,2})([.,]\d{1,9})?(Z|[+-]\d{2}:\d{2})?)");
  int year = 0, month = 0, day = 0;
  std::string rest;
  if (!RE2::FullMatch(s, kDate, &year, &month, &day, &rest)) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  if (rest.empty()) return true;
  std::string sep, frac, zone;
  int hour = 0, minute = 0, second = 0;
  if (!RE2::FullMatch(rest, kTime, &sep, &hour, &minute, &second, &frac, &zone)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  // The T forms need a zone; the space form has none.
  return sep == " " ? zone.empty() : !zone.empty();
}

// Would yaml.v2 resolve this plain scalar to something other than a string?
bool ResolvesToNonString(const std::string& s) {
  static const char* kWords[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true",
                                 "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off",
                                 "Off", "OFF", "null", "Null", "NULL", "~", ".inf", ".Inf", ".INF",
                                 "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".nan",
                                 ".NaN", ".NAN", "<<"};
  if (s.empty()) return true;
  for (const char* w : kWords)
    if (s == w) return true;
  if (LooksLikeTimestamp(s)) return true;
  // Ints (with base prefixes), floats and base-60 numbers of YAML 1.1.
  static const RE2 kNumber(
      R"([-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|[0-9][0-9_]*|(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?))");
  return RE2::FullMatch(s, kNumber);
}

bool IsPrintable(unsigned char c) { return c == '\n' || (c >= 0x20 && c <= 0x7E) || c >= 0x80; }

// libyaml's analysis: may the scalar be plain / single-quoted in block context?
void Analyze(const std::string& s, bool* plain, bool* single) {
  *plain = true;
  *single = true;
  if (s.empty()) {
    *plain = false;
    return;
  }
  if (s.rfind("---", 0) == 0 || s.rfind("...", 0) == 0) *plain = false;
  if (s.front() == ' ' || s.back() == ' ') *plain = false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (!IsPrintable(c)) {
      *plain = false;
      *single = false;
    }
    bool followed_by_blank = i + 1 >= s.size() || s[i + 1] == ' ';
    if (i == 0) {
      if (std::string_view("#,[]{}&*!|>'\"%@`").find(static_cast<char>(c)) != std::string_view::npos) *plain = false;
      if ((c == '?' || c == ':' || c == '-') && followed_by_blank) *plain = false;
    } else {
      if (c == ':' && followed_by_blank) *plain = false;
      if (c == '#' && s[i - 1] == ' ') *plain = false;
    }
  }
}

std::string DoubleQuoted(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\0': out += "\\0"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

// A scalar string in block context; may produce a literal block, whose lines
// are indented by `indent` + 2.
std::string StringScalar(const std::string& s, int indent) {
  if (s.find('\n') != std::string::npos) {
    bool plain, single;
    Analyze(s, &plain, &single);
    if (single) {  // no special characters: literal style
      std::string chomp = "-";
      if (!s.empty() && s.back() == '\n') chomp = (s.size() > 1 && s[s.size() - 2] == '\n') ? "+" : "";
      std::string out = "|";
      if (s[0] == ' ') out += "2";
      out += chomp;
      std::string pad(indent + 2, ' ');
      size_t p = 0;
      std::string body = chomp == "" ? s.substr(0, s.size() - 1) : chomp == "+" ? s.substr(0, s.size() - 1) : s;
      while (p <= body.size()) {
        size_t q = body.find('\n', p);
        if (q == std::string::npos) q = body.size();
        std::string line = body.substr(p, q - p);
        out += "\n" + (line.empty() ? "" : pad + line);
        p = q + 1;
      }
      return out;
    }
    return DoubleQuoted(s);
  }
  bool plain, single;
  Analyze(s, &plain, &single);
  if (ResolvesToNonString(s)) return DoubleQuoted(s);
  if (plain) return s;
  if (single) {
    std::string out = "'";
    for (char c : s) {
      if (c == '\'') out += "''";
      else out.push_back(c);
    }
    return out + "'";
  }
  return DoubleQuoted(s);
}

// `v` as one YAML scalar in *out (empty maps and lists too); false for the rest.
bool YamlScalar(const Value& v, int indent, std::string* out) {
  switch (v.kind()) {
    case Kind::kNil: *out = "null"; return true;
    case Kind::kBool: *out = v.as_bool() ? "true" : "false"; return true;
    case Kind::kInt:
    case Kind::kInt64: *out = std::to_string(v.as_int()); return true;
    case Kind::kFloat64: {
      double f = v.as_float();
      // Through JSON, an integral float below 1e21 comes back as an int.
      if (std::floor(f) == f && std::fabs(f) < 1e21) {
        *out = FormatFloat(f, 'f', 0);
      } else {
        *out = FormatFloat(f, 'g', -1);
      }
      return true;
    }
    case Kind::kString: *out = StringScalar(v.as_string(), indent); return true;
    case Kind::kMap:
      if (v.as_map().empty()) { *out = "{}"; return true; }
      return false;
    case Kind::kSlice:
      if (v.as_list().empty()) { *out = "[]"; return true; }
      return false;
    default: *out = StringScalar(FormatValue(v), indent); return true;
  }
}

void Emit(const Value& v, int indent, bool inline_first, std::string* out, int depth);

// sigs.k8s.io/yaml marshals through encoding/json: a Go value with its own
// JSON form (time.Time, *semver.Version, durations) is emitted as that JSON
// decoded again. Other values are returned as they are.
const Value& AsJsonData(const Value& v, Value* holder) {
  if (v.kind() != Kind::kObject) return v;
  std::string json;
  if (!v.as_object()->MarshalJson(&json)) return v;
  auto decoded = DecodeYaml(json);
  if (!decoded.ok()) return v;
  *holder = std::move(decoded).value();
  return *holder;
}

// yaml.v2's key order: letters after other characters, digit runs by value.
bool KeyLess(const std::string& a, const std::string& b) {
  auto letter = [](unsigned char c) { return std::isalpha(c) || c >= 0x80; };
  auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    unsigned char x = a[i], y = b[i];
    if (x == y) continue;
    bool al = letter(x), bl = letter(y);
    if (al && bl) return x < y;
    if (al || bl) return bl;
    int64_t an = 0, bn = 0;
    if (x == '0' || y == '0') {
      for (size_t j = i; j-- > 0 && digit(a[j]);) {
        if (a[j] != '0') {
          an = bn = 1;
          break;
        }
      }
    }
    size_t ai = i, bi = i;
    for (; ai < a.size() && digit(a[ai]); ++ai) an = an * 10 + (a[ai] - '0');
    for (; bi < b.size() && digit(b[bi]); ++bi) bn = bn * 10 + (b[bi] - '0');
    if (an != bn) return an < bn;
    if (ai != bi) return ai < bi;
    return x < y;
  }
  return a.size() < b.size();
}

void EmitMap(const Value& v, int indent, bool inline_first, std::string* out, int depth) {
  bool first = true;
  std::string pad(indent, ' ');
  std::vector<const std::pair<const std::string, Value>*> items;
  for (const auto& kv : v.as_map()) items.push_back(&kv);
  std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return KeyLess(x->first, y->first); });
  for (const auto* kv : items) {
    const std::string& k = kv->first;
    Value holder;
    const Value& e = AsJsonData(kv->second, &holder);
    if (!(first && inline_first)) *out += pad;
    first = false;
    *out += StringScalar(k, indent) + ":";
    std::string s;
    if (YamlScalar(e, indent, &s)) {
      *out += " " + s + "\n";
    } else if (e.kind() == Kind::kMap) {
      *out += "\n";
      EmitMap(e, indent + 2, false, out, depth + 1);
    } else {
      *out += "\n";
      Emit(e, indent, false, out, depth + 1);  // sequences are not indented in maps
    }
  }
}

void Emit(const Value& v, int indent, bool inline_first, std::string* out, int depth) {
  if (depth > 1000) return;
  if (v.kind() == Kind::kMap && !v.as_map().empty()) return EmitMap(v, indent, inline_first, out, depth);
  if (v.kind() == Kind::kSlice && !v.as_list().empty()) {
    std::string pad(indent, ' ');
    bool first = true;
    for (const Value& item : v.as_list()) {
      Value holder;
      const Value& e = AsJsonData(item, &holder);
      if (!(first && inline_first)) *out += pad;
      first = false;
      *out += "-";
      std::string s;
      if (YamlScalar(e, indent, &s)) {
        *out += " " + s + "\n";
      } else {
        *out += " ";
        Emit(e, indent + 2, true, out, depth + 1);
      }
    }
    return;
  }
  std::string s;
  YamlScalar(v, indent - 2 < 0 ? 0 : indent - 2, &s);
  *out += s + "\n";
}

}  // namespace

std::string ToYaml(const Value& value) {
  std::string out;
  Value holder;
  Emit(AsJsonData(value, &holder), 0, false, &out, 0);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace eco::helm
