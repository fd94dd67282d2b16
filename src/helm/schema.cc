// values.schema.json validation with the behaviour and messages of
// santhosh-tekuri/jsonschema v6, which Helm uses. Debian packages no C++
// JSON Schema validator, so this is a compact one: drafts 4 to 2020-12 as
// far as charts use them (no remote $ref, no unevaluated*, a few formats).
#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "helm/fmt.h"
#include "helm/values.h"

namespace eco::helm {
namespace {

using Json = nlohmann::json;

// One node of v6's ValidationError tree.
struct VError {
  enum Kind { kLeaf, kGroup, kRef } kind = kLeaf;
  std::vector<std::string> loc;  // instance location tokens
  std::string msg;
  std::vector<VError> causes;
};
using Errs = std::vector<VError>;

// kind.quote: Go's %q, with \" unescaped and ' escaped, in single quotes.
std::string SQuote(std::string_view s) {
  std::string q = Quote(s);
  std::string inner = q.substr(1, q.size() - 2);
  std::string out = "'";
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '\\' && i + 1 < inner.size() && inner[i + 1] == '"') {
      out += '"';
      ++i;
    } else if (inner[i] == '\\' && i + 1 < inner.size()) {
      out += inner[i];
      out += inner[++i];
    } else if (inner[i] == '\'') {
      out += "\\'";
    } else {
      out += inner[i];
    }
  }
  return out + "'";
}

std::string JoinQuoted(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + SQuote(s);
  return out;
}

std::string JsonPtr(const std::vector<std::string>& toks) {
  std::string out;
  for (const std::string& t : toks) {
    out += '/';
    for (char c : t) {
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out += c;
    }
  }
  return out;
}

std::string GoFloat(double d) { return FormatValue(Value::Float(d)); }

// --- JSON data model over Value and Json --------------------------------------

const char* TypeOf(const Value& v) {
  switch (v.kind()) {
    case Kind::kNil:
      return "null";
    case Kind::kBool:
      return "boolean";
    case Kind::kInt:
    case Kind::kInt64:
    case Kind::kFloat64:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kSlice:
      return "array";
    case Kind::kMap:
      return "object";
    default:
      break;
  }
  return nullptr;
}

double Num(const Value& v) { return v.kind() == Kind::kFloat64 ? v.as_float() : static_cast<double>(v.as_int()); }

bool IsInteger(const Value& v) {
  if (v.is_int()) return true;
  double d = v.as_float();
  return std::isfinite(d) && d == std::floor(d);
}

// The %v display of a primitive as v6's kind.display prints it.
std::string DisplayJson(const Json& j) {
  if (j.is_string()) return SQuote(j.get<std::string>());
  if (j.is_array() || j.is_object()) return "value";
  if (j.is_null()) return "<nil>";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  if (j.is_number_unsigned()) return std::to_string(j.get<uint64_t>());
  return GoFloat(j.get<double>());
}

bool Equals(const Value& v, const Json& j) {
  switch (v.kind()) {
    case Kind::kNil:
      return j.is_null();
    case Kind::kBool:
      return j.is_boolean() && j.get<bool>() == v.as_bool();
    case Kind::kInt:
    case Kind::kInt64:
    case Kind::kFloat64:
      return j.is_number() && j.get<double>() == Num(v);
    case Kind::kString:
      return j.is_string() && j.get<std::string>() == v.as_string();
    case Kind::kSlice: {
      if (!j.is_array() || j.size() != v.as_list().size()) return false;
      for (size_t i = 0; i < j.size(); ++i) {
        if (!Equals(v.as_list()[i], j[i])) return false;
      }
      return true;
    }
    case Kind::kMap: {
      if (!j.is_object() || j.size() != v.as_map().size()) return false;
      for (const auto& [k, x] : v.as_map()) {
        auto it = j.find(k);
        if (it == j.end() || !Equals(x, *it)) return false;
      }
      return true;
    }
    default:
      break;
  }
  return false;
}

bool ValuesEqual(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return Num(a) == Num(b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNil:
      return true;
    case Kind::kBool:
      return a.as_bool() == b.as_bool();
    case Kind::kString:
      return a.as_string() == b.as_string();
    case Kind::kSlice: {
      if (a.as_list().size() != b.as_list().size()) return false;
      for (size_t i = 0; i < a.as_list().size(); ++i) {
        if (!ValuesEqual(a.as_list()[i], b.as_list()[i])) return false;
      }
      return true;
    }
    case Kind::kMap: {
      if (a.as_map().size() != b.as_map().size()) return false;
      for (const auto& [k, x] : a.as_map()) {
        auto it = b.as_map().find(k);
        if (it == b.as_map().end() || !ValuesEqual(x, it->second)) return false;
      }
      return true;
    }
    default:
      break;
  }
  return false;
}

// Runes of valid UTF-8, as bytes other than continuation bytes (10xxxxxx).
size_t LeadByteCount(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xc0) != 0x80) ++n;
  }
  return n;
}

std::optional<double> JsonNum(const Json& s, const char* key) {
  auto it = s.find(key);
  if (it == s.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<int64_t> JsonInt(const Json& s, const char* key) {
  auto it = s.find(key);
  if (it == s.end() || !it->is_number()) return std::nullopt;
  return static_cast<int64_t>(it->get<double>());
}

// --- formats asserted for drafts before 2019-09 (v6's defaults) --------------

bool DigitsAt(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return false;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

std::optional<std::string> CheckFormat(const std::string& format, const std::string& s) {
  if (format == "ipv4") {
    int parts = 0;
    size_t i = 0;
    while (i <= s.size()) {
      size_t dot = s.find('.', i);
      std::string p = s.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
      if (p.empty() || p.size() > 3 || !DigitsAt(p, 0, p.size()) || std::stoi(p) > 255 || (p.size() > 1 && p[0] == '0')) {
        return "invalid ipv4 address";
      }
      ++parts;
      if (dot == std::string::npos) break;
      i = dot + 1;
    }
    if (parts != 4) return "expected four decimals";
    return std::nullopt;
  }
  if (format == "uuid") {
    static const RE2 re("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    if (!RE2::FullMatch(s, re)) return "invalid uuid";
    return std::nullopt;
  }
  if (format == "date") {
    if (s.size() != 10 || !DigitsAt(s, 0, 4) || s[4] != '-' || !DigitsAt(s, 5, 2) || s[7] != '-' || !DigitsAt(s, 8, 2)) {
      return "invalid date";
    }
    return std::nullopt;
  }
  if (format == "regex") {
    RE2 re(s, RE2::Quiet);
    if (!re.ok()) return re.error();
    return std::nullopt;
  }
  if (format == "email") {
    size_t at = s.rfind('@');
    if (at == std::string::npos || at == 0 || at + 1 == s.size()) return "missing @";
    return std::nullopt;
  }
  return std::nullopt;  // other formats are not asserted here
}

// --- the validator --------------------------------------------------------------

class Validator {
 public:
  Validator(const Json& root, int draft) : root_(root), draft_(draft) {}

  // Resolves a $ref within this document; nullptr when it cannot.
  const Json* Resolve(const std::string& ref) const {
    size_t hash = ref.find('#');
    if (hash == std::string::npos) return nullptr;
    if (hash != 0) {
      // A base other than this document's own $id is not loaded.
      auto id = root_.find("$id");
      if (id == root_.end() || !id->is_string() || id->get<std::string>().rfind(ref.substr(0, hash), 0) != 0) {
        return nullptr;
      }
    }
    std::string frag = ref.substr(hash + 1);
    std::string decoded;
    for (size_t i = 0; i < frag.size(); ++i) {
      if (frag[i] == '%' && i + 2 < frag.size()) {
        decoded += static_cast<char>(std::stoi(frag.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += frag[i];
      }
    }
    if (decoded.empty()) return &root_;
    if (decoded[0] != '/') return nullptr;
    const Json* cur = &root_;
    size_t i = 1;
    for (;;) {
      size_t slash = decoded.find('/', i);
      std::string tok = decoded.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
      std::string t;
      for (size_t k = 0; k < tok.size(); ++k) {
        if (tok[k] == '~' && k + 1 < tok.size()) {
          t += tok[k + 1] == '1' ? '/' : '~';
          ++k;
        } else {
          t += tok[k];
        }
      }
      if (cur->is_object()) {
        auto it = cur->find(t);
        if (it == cur->end()) return nullptr;
        cur = &*it;
      } else if (cur->is_array()) {
        size_t idx = 0;
        try {
          idx = std::stoul(t);
        } catch (...) {
          return nullptr;
        }
        if (idx >= cur->size()) return nullptr;
        cur = &(*cur)[idx];
      } else {
        return nullptr;
      }
      if (slash == std::string::npos) break;
      i = slash + 1;
    }
    return cur;
  }

  // Checks every $ref and pattern once, as v6 does when compiling.
  std::optional<std::string> Compile(const Json& s) {
    if (s.is_object()) {
      for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        if (k == "$ref" && it->is_string()) {
          if (!Resolve(it->get<std::string>())) return "invalid $ref " + it->get<std::string>();
        } else if (k == "pattern" && it->is_string()) {
          if (!Regex(it->get<std::string>())) return "invalid regex pattern " + it->get<std::string>();
        } else if (k == "patternProperties" && it->is_object()) {
          for (auto p = it->begin(); p != it->end(); ++p) {
            if (!Regex(p.key())) return "invalid regex pattern " + p.key();
          }
        }
        if (k == "enum" || k == "const" || k == "default" || k == "examples") continue;
        if (auto e = Compile(*it)) return e;
      }
    } else if (s.is_array()) {
      for (const Json& x : s) {
        if (auto e = Compile(x)) return e;
      }
    }
    return std::nullopt;
  }

  // Validates `v` at `loc`; nullopt when valid.
  std::optional<VError> Validate(const Json& s, const Value& v, const std::vector<std::string>& loc, int depth) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::nullopt;
      return Leaf(loc, "false schema");
    }
    if (!s.is_object()) return std::nullopt;
    if (depth > 512) return Leaf(loc, "reference cycle");
    const char* t = TypeOf(v);
    if (!t) return Leaf(loc, "invalid jsonType " + v.TypeName());

    if (auto it = s.find("type"); it != s.end()) {
      std::vector<std::string> types;
      if (it->is_string()) types.push_back(it->get<std::string>());
      if (it->is_array()) {
        for (const Json& x : *it) {
          if (x.is_string()) types.push_back(x.get<std::string>());
        }
      }
      if (!types.empty()) {
        bool matched = false;
        for (const std::string& ty : types) {
          if (ty == t || (ty == "integer" && std::string_view(t) == "number" && IsInteger(v))) matched = true;
        }
        if (!matched) {
          static const char* kOrder[] = {"null", "boolean", "number", "integer", "string", "array", "object"};
          std::string want;
          for (const char* o : kOrder) {
            if (std::find(types.begin(), types.end(), o) != types.end()) want += (want.empty() ? "" : " or ") + std::string(o);
          }
          return Leaf(loc, "got " + std::string(t) + ", want " + want);
        }
      }
    }
    if (auto it = s.find("const"); it != s.end()) {
      if (!Equals(v, *it)) {
        return Leaf(loc, it->is_array() || it->is_object() ? "'const' failed" : "value must be " + DisplayJson(*it));
      }
    }
    if (auto it = s.find("enum"); it != s.end() && it->is_array()) {
      bool matched = false;
      bool primitive = true;
      for (const Json& e : *it) {
        if (Equals(v, e)) matched = true;
        if (e.is_array() || e.is_object()) primitive = false;
      }
      if (!matched) {
        if (!primitive) return Leaf(loc, "'enum' failed");
        if (it->size() == 1) return Leaf(loc, "value must be " + DisplayJson((*it)[0]));
        std::string want;
        for (const Json& e : *it) want += (want.empty() ? "" : ", ") + DisplayJson(e);
        return Leaf(loc, "value must be one of " + want);
      }
    }
    if (auto it = s.find("format"); it != s.end() && it->is_string() && draft_ < 2019 && v.kind() == Kind::kString) {
      if (auto err = CheckFormat(it->get<std::string>(), v.as_string())) {
        return Leaf(loc, SQuote(v.as_string()) + " is not valid " + it->get<std::string>() + ": " + *err);
      }
    }

    Errs errs;
    if (auto it = s.find("$ref"); it != s.end() && it->is_string()) {
      std::optional<VError> ref;
      if (const Json* target = Resolve(it->get<std::string>())) {
        if (auto e = Validate(*target, v, loc, depth + 1)) {
          VError r;
          r.kind = VError::kRef;
          r.loc = loc;
          r.msg = "validation failed";
          if (e->kind == VError::kGroup) r.causes = std::move(e->causes);
          else r.causes.push_back(std::move(*e));
          ref = std::move(r);
        }
      }
      if (draft_ < 2019) return ref;
      if (ref) errs.push_back(std::move(*ref));
    }

    switch (v.kind()) {
      case Kind::kMap:
        ObjValidate(s, v, loc, depth, &errs);
        break;
      case Kind::kSlice:
        ArrValidate(s, v, loc, depth, &errs);
        break;
      case Kind::kString:
        StrValidate(s, v.as_string(), loc, &errs);
        break;
      case Kind::kInt:
      case Kind::kInt64:
      case Kind::kFloat64:
        NumValidate(s, Num(v), loc, &errs);
        break;
      default:
        break;
    }
    CondValidate(s, v, loc, depth, &errs);

    if (errs.empty()) return std::nullopt;
    if (errs.size() == 1) return std::move(errs[0]);
    VError g;
    g.kind = VError::kGroup;
    g.loc = loc;
    g.msg = "validation failed";
    g.causes = std::move(errs);
    return g;
  }

 private:
  static VError Leaf(const std::vector<std::string>& loc, std::string msg) {
    VError e;
    e.loc = loc;
    e.msg = std::move(msg);
    return e;
  }

  static VError WithCauses(const std::vector<std::string>& loc, std::string msg, Errs causes) {
    VError e = Leaf(loc, std::move(msg));
    e.causes = std::move(causes);
    return e;
  }

  const RE2* Regex(const std::string& pattern) {
    auto it = regexes_.find(pattern);
    if (it == regexes_.end()) {
      auto re = std::make_unique<RE2>(pattern, RE2::Quiet);
      if (!re->ok()) re.reset();
      it = regexes_.emplace(pattern, std::move(re)).first;
    }
    return it->second.get();
  }

  static std::vector<std::string> Child(const std::vector<std::string>& loc, std::string tok) {
    std::vector<std::string> out = loc;
    out.push_back(std::move(tok));
    return out;
  }

  std::vector<std::string> Missing(const Value& obj, const Json& req) {
    std::vector<std::string> missing;
    for (const Json& r : req) {
      if (r.is_string() && !obj.as_map().count(r.get<std::string>())) missing.push_back(r.get<std::string>());
    }
    return missing;
  }

  void ObjValidate(const Json& s, const Value& v, const std::vector<std::string>& loc, int depth, Errs* errs) {
    const ValueMap& obj = v.as_map();
    if (auto n = JsonInt(s, "minProperties"); n && static_cast<int64_t>(obj.size()) < *n) {
      errs->push_back(Leaf(loc, "minProperties: got " + std::to_string(obj.size()) + ", want " + std::to_string(*n)));
    }
    if (auto n = JsonInt(s, "maxProperties"); n && static_cast<int64_t>(obj.size()) > *n) {
      errs->push_back(Leaf(loc, "maxProperties: got " + std::to_string(obj.size()) + ", want " + std::to_string(*n)));
    }
    if (auto it = s.find("required"); it != s.end() && it->is_array()) {
      std::vector<std::string> missing = Missing(v, *it);
      if (missing.size() == 1) errs->push_back(Leaf(loc, "missing property " + SQuote(missing[0])));
      if (missing.size() > 1) errs->push_back(Leaf(loc, "missing properties " + JoinQuoted(missing)));
    }
    if (auto it = s.find("dependencies"); it != s.end() && it->is_object()) {
      for (auto d = it->begin(); d != it->end(); ++d) {
        if (!obj.count(d.key())) continue;
        if (d->is_array()) {
          std::vector<std::string> missing = Missing(v, *d);
          if (!missing.empty()) {
            errs->push_back(Leaf(loc, "properties " + JoinQuoted(missing) + " required, if " + SQuote(d.key()) + " exists"));
          }
        } else if (auto e = Validate(*d, v, loc, depth + 1)) {
          errs->push_back(std::move(*e));
        }
      }
    }
    const Json* props = nullptr;
    if (auto it = s.find("properties"); it != s.end() && it->is_object()) props = &*it;
    const Json* patterns = nullptr;
    if (auto it = s.find("patternProperties"); it != s.end() && it->is_object()) patterns = &*it;
    const Json* additional = nullptr;
    if (auto it = s.find("additionalProperties"); it != s.end()) additional = &*it;
    std::vector<std::string> not_allowed;
    for (const auto& [name, pv] : obj) {
      bool evaluated = false;
      if (props) {
        if (auto p = props->find(name); p != props->end()) {
          evaluated = true;
          if (auto e = Validate(*p, pv, Child(loc, name), depth + 1)) errs->push_back(std::move(*e));
        }
      }
      if (patterns) {
        for (auto p = patterns->begin(); p != patterns->end(); ++p) {
          const RE2* re = Regex(p.key());
          if (re && RE2::PartialMatch(name, *re)) {
            evaluated = true;
            if (auto e = Validate(*p, pv, Child(loc, name), depth + 1)) errs->push_back(std::move(*e));
          }
        }
      }
      if (!evaluated && additional) {
        if (additional->is_boolean()) {
          if (!additional->get<bool>()) not_allowed.push_back(name);
        } else if (auto e = Validate(*additional, pv, Child(loc, name), depth + 1)) {
          errs->push_back(std::move(*e));
        }
      }
    }
    if (!not_allowed.empty()) errs->push_back(Leaf(loc, "additional properties " + JoinQuoted(not_allowed) + " not allowed"));
    if (auto it = s.find("propertyNames"); it != s.end()) {
      for (const auto& [name, pv] : obj) {
        if (auto e = Validate(*it, Value::String(name), loc, depth + 1)) {
          Errs causes;
          if (e->kind == VError::kGroup) causes = std::move(e->causes);
          else causes.push_back(std::move(*e));
          errs->push_back(WithCauses(loc, "invalid propertyName " + SQuote(name), std::move(causes)));
        }
      }
    }
    if (auto it = s.find("dependentSchemas"); it != s.end() && it->is_object()) {
      for (auto d = it->begin(); d != it->end(); ++d) {
        if (obj.count(d.key())) {
          if (auto e = Validate(*d, v, loc, depth + 1)) errs->push_back(std::move(*e));
        }
      }
    }
    if (auto it = s.find("dependentRequired"); it != s.end() && it->is_object()) {
      for (auto d = it->begin(); d != it->end(); ++d) {
        if (!obj.count(d.key()) || !d->is_array()) continue;
        std::vector<std::string> missing = Missing(v, *d);
        if (!missing.empty()) {
          errs->push_back(Leaf(loc, "properties " + JoinQuoted(missing) + " required, if " + SQuote(d.key()) + " exists"));
        }
      }
    }
  }

  void ArrValidate(const Json& s, const Value& v, const std::vector<std::string>& loc, int depth, Errs* errs) {
    const ValueList& arr = v.as_list();
    if (auto n = JsonInt(s, "minItems"); n && static_cast<int64_t>(arr.size()) < *n) {
      errs->push_back(Leaf(loc, "minItems: got " + std::to_string(arr.size()) + ", want " + std::to_string(*n)));
    }
    if (auto n = JsonInt(s, "maxItems"); n && static_cast<int64_t>(arr.size()) > *n) {
      errs->push_back(Leaf(loc, "maxItems: got " + std::to_string(arr.size()) + ", want " + std::to_string(*n)));
    }
    if (auto it = s.find("uniqueItems"); it != s.end() && it->is_boolean() && it->get<bool>()) {
      bool done = false;
      for (size_t i = 0; i < arr.size() && !done; ++i) {
        for (size_t j = i + 1; j < arr.size() && !done; ++j) {
          if (ValuesEqual(arr[i], arr[j])) {
            errs->push_back(Leaf(loc, "items at " + std::to_string(i) + " and " + std::to_string(j) + " are equal"));
            done = true;
          }
        }
      }
    }
    size_t evaluated = 0;
    const Json* prefix = nullptr;
    if (auto it = s.find("prefixItems"); it != s.end() && it->is_array()) prefix = &*it;
    auto items = s.find("items");
    if (items != s.end() && items->is_array()) prefix = &*items;
    if (prefix) {
      evaluated = std::min(prefix->size(), arr.size());
      for (size_t i = 0; i < evaluated; ++i) {
        if (auto e = Validate((*prefix)[i], arr[i], Child(loc, std::to_string(i)), depth + 1)) errs->push_back(std::move(*e));
      }
    }
    const bool items_is_array = items != s.end() && items->is_array();
    const Json* rest = nullptr;
    if (items != s.end() && !items_is_array) {
      rest = &*items;
    } else if (items_is_array) {
      if (auto it = s.find("additionalItems"); it != s.end()) rest = &*it;
    }
    if (rest) {
      if (rest->is_boolean() && !rest->get<bool>() && evaluated != arr.size()) {
        if (items_is_array) {
          errs->push_back(Leaf(loc, "last " + std::to_string(arr.size() - evaluated) + " additionalItem(s) not allowed"));
        } else {
          for (size_t i = evaluated; i < arr.size(); ++i) errs->push_back(Leaf(Child(loc, std::to_string(i)), "false schema"));
        }
      } else if (!rest->is_boolean()) {
        for (size_t i = evaluated; i < arr.size(); ++i) {
          if (auto e = Validate(*rest, arr[i], Child(loc, std::to_string(i)), depth + 1)) errs->push_back(std::move(*e));
        }
      }
    }
    if (auto it = s.find("contains"); it != s.end()) {
      Errs failures;
      std::vector<size_t> matched;
      for (size_t i = 0; i < arr.size(); ++i) {
        if (auto e = Validate(*it, arr[i], Child(loc, std::to_string(i)), depth + 1)) failures.push_back(std::move(*e));
        else matched.push_back(i);
      }
      auto min = JsonInt(s, "minContains");
      if (min) {
        if (static_cast<int64_t>(matched.size()) < *min) {
          std::string msg = "min " + std::to_string(*min) + " items required to match contains schema, but ";
          if (matched.empty()) {
            msg += "none matched";
          } else {
            std::string at;
            for (size_t m : matched) at += (at.empty() ? "" : " ") + std::to_string(m);
            msg += "matched " + std::to_string(matched.size()) + " items at " + at;
          }
          errs->push_back(WithCauses(loc, msg, std::move(failures)));
        }
      } else if (matched.empty()) {
        errs->push_back(WithCauses(loc, "no items match contains schema", std::move(failures)));
      }
      if (auto max = JsonInt(s, "maxContains"); max && static_cast<int64_t>(matched.size()) > *max) {
        std::string at;
        for (size_t m : matched) at += (at.empty() ? "" : " ") + std::to_string(m);
        errs->push_back(Leaf(loc, "max " + std::to_string(*max) + " items required to match contains schema, but matched " +
                                      std::to_string(matched.size()) + " items at " + at));
      }
    }
  }

  void StrValidate(const Json& s, const std::string& str, const std::vector<std::string>& loc, Errs* errs) {
    auto min = JsonInt(s, "minLength");
    auto max = JsonInt(s, "maxLength");
    if (min || max) {
      int64_t n = static_cast<int64_t>(LeadByteCount(str));
      if (min && n < *min) errs->push_back(Leaf(loc, "minLength: got " + std::to_string(n) + ", want " + std::to_string(*min)));
      if (max && n > *max) errs->push_back(Leaf(loc, "maxLength: got " + std::to_string(n) + ", want " + std::to_string(*max)));
    }
    if (auto it = s.find("pattern"); it != s.end() && it->is_string()) {
      const RE2* re = Regex(it->get<std::string>());
      if (re && !RE2::PartialMatch(str, *re)) {
        errs->push_back(Leaf(loc, SQuote(str) + " does not match pattern " + SQuote(it->get<std::string>())));
      }
    }
  }

  void NumValidate(const Json& s, double n, const std::vector<std::string>& loc, Errs* errs) {
    auto minimum = JsonNum(s, "minimum");
    auto maximum = JsonNum(s, "maximum");
    // Draft 4 spells exclusive bounds as booleans next to minimum/maximum.
    auto excl_min = JsonNum(s, "exclusiveMinimum");
    auto excl_max = JsonNum(s, "exclusiveMaximum");
    if (auto it = s.find("exclusiveMinimum"); it != s.end() && it->is_boolean() && it->get<bool>() && minimum) {
      excl_min = minimum;
      minimum.reset();
    }
    if (auto it = s.find("exclusiveMaximum"); it != s.end() && it->is_boolean() && it->get<bool>() && maximum) {
      excl_max = maximum;
      maximum.reset();
    }
    if (minimum && n < *minimum) errs->push_back(Leaf(loc, "minimum: got " + GoFloat(n) + ", want " + GoFloat(*minimum)));
    if (maximum && n > *maximum) errs->push_back(Leaf(loc, "maximum: got " + GoFloat(n) + ", want " + GoFloat(*maximum)));
    if (excl_min && n <= *excl_min) {
      errs->push_back(Leaf(loc, "exclusiveMinimum: got " + GoFloat(n) + ", want " + GoFloat(*excl_min)));
    }
    if (excl_max && n >= *excl_max) {
      errs->push_back(Leaf(loc, "exclusiveMaximum: got " + GoFloat(n) + ", want " + GoFloat(*excl_max)));
    }
    if (auto m = JsonNum(s, "multipleOf"); m && *m != 0) {
      // v6 divides exact rationals; the quotient's distance to an integer
      // stands in for that here.
      double q = n / *m;
      if (!std::isfinite(q) || std::fabs(q - std::round(q)) > 1e-9 * std::max(1.0, std::fabs(q))) {
        errs->push_back(Leaf(loc, "multipleOf: got " + GoFloat(n) + ", want " + GoFloat(*m)));
      }
    }
  }

  void CondValidate(const Json& s, const Value& v, const std::vector<std::string>& loc, int depth, Errs* errs) {
    if (auto it = s.find("not"); it != s.end()) {
      if (!Validate(*it, v, loc, depth + 1)) errs->push_back(Leaf(loc, "'not' failed"));
    }
    if (auto it = s.find("allOf"); it != s.end() && it->is_array() && !it->empty()) {
      Errs failures;
      for (const Json& sub : *it) {
        if (auto e = Validate(sub, v, loc, depth + 1)) failures.push_back(std::move(*e));
      }
      if (!failures.empty()) errs->push_back(WithCauses(loc, "'allOf' failed", std::move(failures)));
    }
    if (auto it = s.find("anyOf"); it != s.end() && it->is_array() && !it->empty()) {
      Errs failures;
      bool matched = false;
      for (const Json& sub : *it) {
        auto e = Validate(sub, v, loc, depth + 1);
        if (!e) {
          matched = true;
          break;
        }
        failures.push_back(std::move(*e));
      }
      if (!matched) errs->push_back(WithCauses(loc, "'anyOf' failed", std::move(failures)));
    }
    if (auto it = s.find("oneOf"); it != s.end() && it->is_array() && !it->empty()) {
      Errs failures;
      int matched = -1;
      for (size_t i = 0; i < it->size(); ++i) {
        auto e = Validate((*it)[i], v, loc, depth + 1);
        if (e) {
          if (matched == -1) failures.push_back(std::move(*e));
        } else if (matched == -1) {
          matched = static_cast<int>(i);
        } else {
          errs->push_back(Leaf(loc, "'oneOf' failed, subschemas " + std::to_string(matched) + ", " + std::to_string(i) +
                                        " matched"));
          break;
        }
      }
      if (matched == -1) errs->push_back(WithCauses(loc, "'oneOf' failed, none matched", std::move(failures)));
    }
    if (auto it = s.find("if"); it != s.end()) {
      bool ok = !Validate(*it, v, loc, depth + 1);
      const char* branch = ok ? "then" : "else";
      if (auto b = s.find(branch); b != s.end()) {
        if (auto e = Validate(*b, v, loc, depth + 1)) errs->push_back(std::move(*e));
      }
    }
  }

  const Json& root_;
  int draft_;
  std::map<std::string, std::unique_ptr<RE2>> regexes_;
};

int DraftOf(const Json& schema) {
  auto it = schema.find("$schema");
  if (it == schema.end() || !it->is_string()) return 2020;
  const std::string& s = it->get<std::string>();
  if (s.find("draft-04") != std::string::npos) return 4;
  if (s.find("draft-06") != std::string::npos) return 6;
  if (s.find("draft-07") != std::string::npos) return 7;
  if (s.find("2019-09") != std::string::npos) return 2019;
  return 2020;
}

// v6's ValidationError.display, below the root line Helm strips.
void Display(const VError& e, int indent, std::string* out) {
  bool skip = e.kind == VError::kRef && e.causes.size() == 1;
  if (!skip) {
    *out += '\n';
    for (int i = 0; i < indent - 1; ++i) *out += "  ";
    *out += "- at " + SQuote(JsonPtr(e.loc)) + ": " + e.msg;
    ++indent;
  }
  for (const VError& c : e.causes) Display(c, indent, out);
}

// Parsed schemas by text, so repeated renders of a chart parse its (often
// large) schema once. Parsed documents are never changed after insertion.
std::shared_ptr<const Json> ParseSchema(const std::string& text) {
  static std::mutex mu;
  static std::vector<std::pair<std::string, std::shared_ptr<const Json>>> cache;  // guarded by mu
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [t, j] : cache) {
      if (t == text) return j;
    }
  }
  auto j = std::make_shared<const Json>(Json::parse(text, nullptr, false));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 32) cache.erase(cache.begin());
  cache.emplace_back(text, j);
  return j;
}

// One chart's schema against the values it sees: "" when they conform.
Result<std::string> ValidateSingle(const std::string& schema_text, const Value& values) {
  std::shared_ptr<const Json> parsed = ParseSchema(schema_text);
  const Json& schema = *parsed;
  if (schema.is_discarded()) return Invalid("unable to validate schema: invalid JSON in values.schema.json");
  Validator vd(schema, DraftOf(schema));
  if (auto err = vd.Compile(schema)) return Invalid("jsonschema compilation failed: " + *err);
  auto e = vd.Validate(schema, values, {}, 0);
  if (!e) return std::string();
  Errs top;
  if (e->kind == VError::kGroup) top = std::move(e->causes);
  else top.push_back(std::move(*e));
  std::string out;
  for (const VError& c : top) Display(c, 1, &out);
  return out.substr(1) + "\n";  // without the leading newline of the first cause
}

Status ValidateTree(const Chart& chart, const Value& values, std::string* sb) {
  if (chart.values_schema_json) {
    Result<std::string> r = ValidateSingle(*chart.values_schema_json, values);
    if (!r.ok()) {
      *sb += chart.name() + ":\n" + r.status().message() + "\n";
    } else if (!r->empty()) {
      *sb += chart.name() + ":\n" + *r;
    }
  }
  for (const Chart& sub : chart.subcharts) {
    Value sv = Value::Map({});
    if (values.kind() == Kind::kMap) {
      auto it = values.as_map().find(sub.name());
      if (it != values.as_map().end()) sv = it->second;
    }
    ECO_RETURN_IF_ERROR(ValidateTree(sub, sv, sb));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateValuesSchema(const Chart& chart, const Value& coalesced_values) {
  std::string sb;
  ECO_RETURN_IF_ERROR(ValidateTree(chart, coalesced_values, &sb));
  if (sb.empty()) return Status::Ok();
  return Invalid("values don't meet the specifications of the schema(s) in the following chart(s):\n" + sb);
}

}  // namespace eco::helm
