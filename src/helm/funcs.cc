#include "helm/funcs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "helm/fmt.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
// Shared with the other function files through funcs_internal.h.
namespace funcs_internal {

using A = ArgType;

// Sprig's strval.
std::string StrVal(const Value& v) {
  if (v.kind() == Kind::kString || v.kind() == Kind::kBytes) return v.as_string();
  return Sprintf("%v", {v});
}

// Sprig's empty().
bool Empty(const Value& v) {
  switch (v.kind()) {
    case Kind::kNil: return true;
    case Kind::kObject:
    case Kind::kFunc: return false;
    default: return !v.Truth();
  }
}

// Go's int64(f): out-of-range values give the minimum int64 on amd64.
int64_t FloatToInt64(double f) {
  if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(f);
}

// cast.ToInt64 as Sprig uses it (errors give 0).
int64_t ToInt64(const Value& v) {
  switch (v.kind()) {
    case Kind::kBool: return v.as_bool() ? 1 : 0;
    case Kind::kInt:
    case Kind::kInt64: return v.as_int();
    case Kind::kFloat64: return FloatToInt64(v.as_float());
    case Kind::kObject: {
      // cast knows time.Month and time.Weekday, not other named integers.
      int64_t i = 0;
      std::string t = v.TypeName();
      if (t == "time.Month" || t == "time.Weekday") v.as_object()->IntValue(&i);
      return i;
    }
    case Kind::kString: {
      std::string s = v.as_string();
      // cast trims a ".0…" decimal part before parsing.
      size_t dot = s.find('.');
      if (dot != std::string::npos && s.find_first_not_of('0', dot + 1) == std::string::npos)
        s = s.substr(0, dot);
      char* end = nullptr;
      long long r = std::strtoll(s.c_str(), &end, 0);
      return (end && *end == '\0' && !s.empty()) ? r : 0;
    }
    default: return 0;
  }
}

Value StringList(std::vector<std::string> parts) {
  ValueList l;
  for (auto& p : parts) l.push_back(Value::String(std::move(p)));
  return Value::Slice(std::move(l), "[]string");
}

// Sprig's strslice.
std::vector<std::string> StrSlice(const Value& v) {
  std::vector<std::string> out;
  if (v.kind() == Kind::kSlice) {
    for (const Value& e : v.as_list())
      if (!e.is_nil()) out.push_back(StrVal(e));
    return out;
  }
  if (v.is_nil()) return out;
  out.push_back(StrVal(v));
  return out;
}

// A split into more parts than a list may hold: refused before memory runs
// out (a 64 MiB string of separators is 64 million parts).
Status TooManyParts(std::string_view fn, const CallContext& ctx) {
  return TooLarge(std::string(fn) + ": more than " + std::to_string(ctx.max_elements()) +
                  " elements exceed the limit");
}

std::string Replace(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  // Stops growing past 64 MiB (the render output limit): the executor then
  // rejects the oversized result instead of memory running out first.
  constexpr size_t kCap = 64u << 20;
  std::string out;
  size_t p = 0;
  for (;;) {
    size_t q = s.find(from, p);
    if (q == std::string::npos) break;
    out.append(s, p, q - p);
    out += to;
    p = q + from.size();
    if (out.size() > kCap) return out;
  }
  out.append(s, p, std::string::npos);
  return out;
}

// reflect.DeepEqual over Values (int and int64 are different Go types).
bool DeepEqual(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNil: return true;
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kInt64: return a.as_int() == b.as_int();
    case Kind::kFloat64: return a.as_float() == b.as_float();
    case Kind::kString:
    case Kind::kBytes: return a.as_string() == b.as_string();
    case Kind::kSlice: {
      if (a.TypeName() != b.TypeName() || a.as_list().size() != b.as_list().size()) return false;
      for (size_t i = 0; i < a.as_list().size(); ++i)
        if (!DeepEqual(a.as_list()[i], b.as_list()[i])) return false;
      return true;
    }
    case Kind::kMap: {
      if (a.TypeName() != b.TypeName() || a.as_map().size() != b.as_map().size()) return false;
      for (auto ia = a.as_map().begin(), ib = b.as_map().begin(); ia != a.as_map().end(); ++ia, ++ib)
        if (ia->first != ib->first || !DeepEqual(ia->second, ib->second)) return false;
      return true;
    }
    case Kind::kObject: return a.as_object() == b.as_object();
    case Kind::kFunc: return false;
  }
  return false;
}

// Also copies each render's values (render.cc), hence the reserve and the
// end hint (keys come in order): same result, fewer steps.
Value DeepCopy(const Value& v) {
  if (v.kind() == Kind::kSlice) {
    ValueList l;
    l.reserve(v.as_list().size());
    for (const Value& e : v.as_list()) l.push_back(DeepCopy(e));
    return Value::Slice(std::move(l), v.TypeName());
  }
  if (v.kind() == Kind::kMap) {
    ValueMap m;
    for (const auto& [k, e] : v.as_map()) m.emplace_hint(m.end(), k, DeepCopy(e));
    return Value::Map(std::move(m), v.TypeName());
  }
  return v;
}

double ToFloat64(const Value& v) {
  switch (v.kind()) {
    case Kind::kBool: return v.as_bool() ? 1 : 0;
    case Kind::kInt:
    case Kind::kInt64: return static_cast<double>(v.as_int());
    case Kind::kFloat64: return v.as_float();
    case Kind::kString: {
      char* end = nullptr;
      const std::string& s = v.as_string();
      double d = std::strtod(s.c_str(), &end);
      return (!s.empty() && end && *end == '\0') ? d : 0;
    }
    default: return 0;
  }
}

Result<ValueList> MustList(const Value& v, const std::string& what) {
  if (v.kind() == Kind::kSlice) return v.as_list();
  return Invalid("Cannot find " + what + " on type " + v.TypeName());
}

// encoding/json's float format.
std::string JsonFloat(double f) {
  double a = f < 0 ? -f : f;
  if (a != 0 && (a < 1e-6 || a >= 1e21)) {
    std::string s = FormatFloat(f, 'e', -1);
    // Go trims "e-07" to "e-7".
    size_t e = s.find('e');
    if (e != std::string::npos && e + 2 < s.size() && s[e + 2] == '0') s.erase(e + 2, 1);
    return s;
  }
  return FormatFloat(f, 'f', -1);
}

void JsonString(std::string* out, const std::string& s, bool html) {
  static const char* kHex = "0123456789abcdef";
  *out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      out->push_back(static_cast<char>(c));
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c < 0x20 || (html && (c == '<' || c == '>' || c == '&'))) {
      *out += "\\u00";
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xF]);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  *out += '"';
}

bool ToJson(std::string* out, const Value& v, bool html, const std::string& indent, int depth) {
  if (depth > 1000) return false;
  auto nl = [&](int d) {
    if (indent.empty()) return;
    *out += '\n';
    for (int i = 0; i < d; ++i) *out += indent;
  };
  switch (v.kind()) {
    case Kind::kNil: *out += "null"; return true;
    case Kind::kBool: *out += v.as_bool() ? "true" : "false"; return true;
    case Kind::kInt:
    case Kind::kInt64: *out += std::to_string(v.as_int()); return true;
    case Kind::kFloat64:
      if (std::isnan(v.as_float()) || std::isinf(v.as_float())) return false;
      *out += JsonFloat(v.as_float());
      return true;
    case Kind::kString: JsonString(out, v.as_string(), html); return true;
    case Kind::kBytes: JsonString(out, Base64Encode(v.as_string()), html); return true;
    case Kind::kSlice: {
      *out += '[';
      bool first = true;
      for (const Value& e : v.as_list()) {
        if (!first) *out += ',';
        first = false;
        nl(depth + 1);
        if (!ToJson(out, e, html, indent, depth + 1)) return false;
      }
      if (!v.as_list().empty()) nl(depth);
      *out += ']';
      return true;
    }
    case Kind::kMap: {
      *out += '{';
      bool first = true;
      for (const auto& [k, e] : v.as_map()) {
        if (!first) *out += ',';
        first = false;
        nl(depth + 1);
        JsonString(out, k, html);
        *out += indent.empty() ? ":" : ": ";
        if (!ToJson(out, e, html, indent, depth + 1)) return false;
      }
      if (!v.as_map().empty()) nl(depth);
      *out += '}';
      return true;
    }
    case Kind::kObject: return v.as_object()->MarshalJson(out);
    default: return false;
  }
}

Value FromNlohmann(const nlohmann::json& j) {
  using nlohmann::json;
  switch (j.type()) {
    case json::value_t::boolean: return Value::Bool(j.get<bool>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return Value::Float(j.get<double>());
    case json::value_t::string: return Value::String(j.get<std::string>());
    case json::value_t::array: {
      ValueList l;
      for (const auto& e : j) l.push_back(FromNlohmann(e));
      return Value::Slice(std::move(l));
    }
    case json::value_t::object: {
      ValueMap m;
      for (auto it = j.begin(); it != j.end(); ++it) m.emplace(it.key(), FromNlohmann(it.value()));
      return Value::Map(std::move(m));
    }
    default: return Value();
  }
}

// Sprig's integer ranges. Go would allocate whatever is asked; eco refuses
// more than kMaxIntList elements (a clear error, not a shorter list).
constexpr uint64_t kMaxIntList = 1u << 20;

Result<Value> IntList(const char* fn, int64_t start, int64_t stop, int64_t step) {
  ValueList l;
  if (step == 0 || (step > 0 ? start >= stop : start <= stop)) return Value::Slice(std::move(l), "[]int");
  // The element count, in unsigned arithmetic so that no bound overflows.
  const uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                 : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  const uint64_t count = (span - 1) / stride + 1;
  if (count > kMaxIntList) {
    return TooLarge(std::string(fn) + ": " + std::to_string(count) + " elements exceed eco's limit of " +
                    std::to_string(kMaxIntList));
  }
  l.reserve(count);
  int64_t i = start;
  for (uint64_t k = 0; k < count; ++k, i = static_cast<int64_t>(static_cast<uint64_t>(i) + static_cast<uint64_t>(step))) {
    l.push_back(Value::Int(i));
  }
  return Value::Slice(std::move(l), "[]int");
}

// indent's spaces: none for a negative count (as eco always did), an error
// beyond kMaxIntList rather than a shorter indent.
Result<std::string> Padding(const char* fn, int64_t n) {
  if (n > static_cast<int64_t>(kMaxIntList)) {
    return TooLarge(std::string(fn) + ": " + std::to_string(n) + " spaces exceed eco's limit of " +
                    std::to_string(kMaxIntList));
  }
  return std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
}

Status UserError(const std::string& msg) {
  return Invalid(std::string(kHelmUserErrorStart) + msg + std::string(kHelmUserErrorEnd));
}

void Add(FuncMap* m, const std::string& name, std::vector<ArgType> params, bool variadic,
         std::function<Result<Value>(CallContext&, const ValueList&)> fn) {
  (*m)[name] = Function{std::move(params), variadic, std::move(fn)};
}

// A string -> string function.
void AddStr(FuncMap* m, const char* name, std::function<std::string(const std::string&)> fn) {
  Add(m, name, {A::kString}, false, [fn](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(fn(a[0].as_string()));
  });
}

}  // namespace funcs_internal

std::shared_ptr<const FuncMap> HelmFuncs() {
  // Here rather than at file scope, where a unity build would carry it into
  // the sources compiled after this one.
  using namespace funcs_internal;
  static const std::shared_ptr<const FuncMap> kFuncs = [] {
    auto m = std::make_shared<FuncMap>();
    FuncMap* f = m.get();
    // --- defaults
    Add(f, "default", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      if (a.size() < 2 || Empty(a[1])) return a[0];
      return a[1];
    });
    Add(f, "empty", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(Empty(a[0]));
    });
    Add(f, "coalesce", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      for (const Value& v : a)
        if (!Empty(v)) return v;
      return Value();
    });
    Add(f, "ternary", {A::kAny, A::kAny, A::kBool}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return a[2].as_bool() ? a[0] : a[1];
    });
    // --- strings
    // Both skip nil arguments and join the rest with spaces.
    auto join_quoted = [](const ValueList& a, std::string (*wrap)(const std::string&)) {
      std::string out;
      bool first = true;
      for (const Value& v : a) {
        if (v.is_nil()) continue;
        if (!first) out += ' ';
        first = false;
        out += wrap(StrVal(v));
      }
      return Value::String(out);
    };
    Add(f, "quote", {A::kAny}, true, [join_quoted](CallContext&, const ValueList& a) -> Result<Value> {
      return join_quoted(a, [](const std::string& s) { return Quote(s); });
    });
    Add(f, "squote", {A::kAny}, true, [join_quoted](CallContext&, const ValueList& a) -> Result<Value> {
      return join_quoted(a, [](const std::string& s) { return "'" + s + "'"; });
    });
    AddStr(f, "upper", [](const std::string& s) {
      std::string r = s;
      for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return r;
    });
    AddStr(f, "lower", [](const std::string& s) {
      std::string r = s;
      for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return r;
    });
    AddStr(f, "trim", [](const std::string& s) {
      size_t b = s.find_first_not_of(" \t\n\r\v\f");
      if (b == std::string::npos) return std::string();
      size_t e = s.find_last_not_of(" \t\n\r\v\f");
      return s.substr(b, e - b + 1);
    });
    AddStr(f, "b64enc", [](const std::string& s) { return Base64Encode(s); });
    Add(f, "trimSuffix", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      const std::string& suf = a[0].as_string();
      std::string s = a[1].as_string();
      if (s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) s.resize(s.size() - suf.size());
      return Value::String(s);
    });
    Add(f, "trimPrefix", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      const std::string& pre = a[0].as_string();
      std::string s = a[1].as_string();
      if (s.rfind(pre, 0) == 0) s = s.substr(pre.size());
      return Value::String(s);
    });
    Add(f, "contains", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(a[1].as_string().find(a[0].as_string()) != std::string::npos);
    });
    Add(f, "hasPrefix", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(a[1].as_string().rfind(a[0].as_string(), 0) == 0);
    });
    Add(f, "hasSuffix", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      const std::string& s = a[1].as_string();
      const std::string& suf = a[0].as_string();
      return Value::Bool(s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0);
    });
    Add(f, "replace", {A::kString, A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(Replace(a[2].as_string(), a[0].as_string(), a[1].as_string()));
    });
    Add(f, "indent", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      ECO_ASSIGN_OR_RETURN(auto pad, Padding("indent", a[0].as_int()));
      return Value::String(pad + Replace(a[1].as_string(), "\n", "\n" + pad));
    });
    Add(f, "nindent", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      ECO_ASSIGN_OR_RETURN(auto pad, Padding("nindent", a[0].as_int()));
      return Value::String("\n" + pad + Replace(a[1].as_string(), "\n", "\n" + pad));
    });
    Add(f, "repeat", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t n = a[0].as_int();
      const std::string& s = a[1].as_string();
      if (n < 0) return Invalid("strings: negative Repeat count");
      if (!s.empty() && static_cast<uint64_t>(n) > (64u << 20) / s.size()) return TooLarge("repeat: result too large");
      std::string out;
      for (int64_t i = 0; i < n; ++i) out += s;
      return Value::String(out);
    });
    Add(f, "toString", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(StrVal(a[0]));
    });
    Add(f, "join", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      std::string out;
      auto parts = StrSlice(a[1]);
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i) out += a[0].as_string();
        out += parts[i];
      }
      return Value::String(out);
    });
    Add(f, "splitList", {A::kString, A::kString}, false, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
      const std::string& sep = a[0].as_string();
      const std::string& s = a[1].as_string();
      std::vector<std::string> parts;
      if (sep.empty()) {
        if (s.size() > ctx.max_elements()) return TooManyParts("splitList", ctx);
        for (char c : s) parts.emplace_back(1, c);  // ASCII approximation of Go's per-rune split
      } else {
        size_t p = 0;
        for (;;) {
          size_t q = s.find(sep, p);
          if (q == std::string::npos) break;
          if (parts.size() >= ctx.max_elements()) return TooManyParts("splitList", ctx);
          parts.push_back(s.substr(p, q - p));
          p = q + sep.size();
        }
        parts.push_back(s.substr(p));
        if (parts.size() > ctx.max_elements()) return TooManyParts("splitList", ctx);
      }
      return StringList(std::move(parts));
    });
    // --- lists and dicts
    Add(f, "list", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Slice(a);
    });
    Add(f, "dict", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueMap m;
      for (size_t i = 0; i < a.size(); i += 2) {
        std::string k = StrVal(a[i]);
        m.insert_or_assign(k, i + 1 < a.size() ? a[i + 1] : Value::String(""));
      }
      return Value::Map(std::move(m));
    });
    Add(f, "hasKey", {A::kMap, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(a[0].as_map().count(a[1].as_string()) > 0);
    });
    Add(f, "get", {A::kMap, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      auto it = a[0].as_map().find(a[1].as_string());
      return it == a[0].as_map().end() ? Value::String("") : it->second;
    });
    Add(f, "set", {A::kMap, A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      if (ValueMap* m = a[0].mutable_map()) m->insert_or_assign(a[1].as_string(), a[2]);
      return a[0];
    });
    Add(f, "unset", {A::kMap, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      if (ValueMap* m = a[0].mutable_map()) m->erase(a[1].as_string());
      return a[0];
    });
    // --- math (Sprig converts with cast.ToInt64)
    Add(f, "add", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t s = 0;
      for (const Value& v : a) s = WrapAdd(s, ToInt64(v));
      return Value::Int64(s);
    });
    Add(f, "add1", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Int64(WrapAdd(ToInt64(a[0]), 1));
    });
    Add(f, "sub", {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Int64(WrapSub(ToInt64(a[0]), ToInt64(a[1])));
    });
    Add(f, "mul", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t p = ToInt64(a[0]);
      for (size_t i = 1; i < a.size(); ++i) p = WrapMul(p, ToInt64(a[i]));
      return Value::Int64(p);
    });
    Add(f, "div", {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t d = ToInt64(a[1]);
      if (d == 0) return Invalid("runtime error: integer divide by zero");
      if (d == -1) return Value::Int64(WrapSub(0, ToInt64(a[0])));  // Go: MinInt64 / -1 wraps
      return Value::Int64(ToInt64(a[0]) / d);
    });
    Add(f, "mod", {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t d = ToInt64(a[1]);
      if (d == 0) return Invalid("runtime error: integer divide by zero");
      if (d == -1) return Value::Int64(0);
      return Value::Int64(ToInt64(a[0]) % d);
    });
    // --- reflection
    Add(f, "typeOf", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(a[0].TypeName());
    });
    Add(f, "kindOf", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(a[0].KindName());
    });
    // --- Helm
    Add(f, "include", {A::kString, A::kAny}, false, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
      const std::string& name = a[0].as_string();
      int* count = nullptr;
      if (ctx.include_counts) {
        count = &(*ctx.include_counts)[name];
        if (*count > 1000)
          return Invalid("rendering template has a nested reference name: " + name + ": unable to execute template");
        ++*count;
      }
      auto r = ctx.execute(name, a[1]);
      if (count) --*count;
      if (!r.ok()) return r.status();
      return Value::String(std::move(r).value());
    });
    Add(f, "required", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      if (a[1].is_nil() || (a[1].kind() == Kind::kString && a[1].as_string().empty()))
        return UserError(a[0].as_string());
      return a[1];
    });
    Add(f, "fail", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return UserError(a[0].as_string());
    });
    Add(f, "lookup", {A::kString, A::kString, A::kString, A::kString}, false,
        [](CallContext&, const ValueList&) -> Result<Value> { return Value::Map({}); });
    Add(f, "getHostByName", {A::kString}, false,
        [](CallContext&, const ValueList&) -> Result<Value> { return Value::String(""); });
    // --- more strings
    Add(f, "trunc", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t c = a[0].as_int();
      const std::string& s = a[1].as_string();
      int64_t n = static_cast<int64_t>(s.size());
      if (c < 0 && n + c > 0) return Value::String(s.substr(n + c));
      if (c >= 0 && n > c) return Value::String(s.substr(0, c));
      return Value::String(s);
    });
    Add(f, "trimAll", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      const std::string& cut = a[0].as_string();
      const std::string& s = a[1].as_string();
      size_t b = s.find_first_not_of(cut);
      if (b == std::string::npos) return Value::String("");
      size_t e = s.find_last_not_of(cut);
      return Value::String(s.substr(b, e - b + 1));
    });
    AddStr(f, "nospace", [](const std::string& s) {
      std::string r;
      for (char c : s)
        if (!std::isspace(static_cast<unsigned char>(c))) r.push_back(c);
      return r;
    });
    Add(f, "cat", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      std::string out;
      for (const Value& v : a) {
        if (v.is_nil()) continue;
        if (!out.empty() || &v != &a[0]) {
          if (!out.empty()) out += ' ';
        }
        out += Sprintf("%v", {v});
      }
      return Value::String(out);
    });
    Add(f, "substr", {A::kInt, A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t start = a[0].as_int(), end = a[1].as_int();
      const std::string& s = a[2].as_string();
      int64_t n = static_cast<int64_t>(s.size());
      if (start < 0) {
        if (end < 0 || end > n) return Invalid("runtime error: slice bounds out of range [:" + std::to_string(end) + "] with length " + std::to_string(n));
        return Value::String(s.substr(0, end));
      }
      if (end < 0 || end > n) {
        if (start > n) return Invalid("runtime error: slice bounds out of range [" + std::to_string(start) + ":" + std::to_string(n) + "]");
        return Value::String(s.substr(start));
      }
      if (start > end) return Invalid("runtime error: slice bounds out of range [" + std::to_string(start) + ":" + std::to_string(end) + "]");
      return Value::String(s.substr(start, end - start));
    });
    // Sprig returns the decoder's error text in place of the result.
    AddStr(f, "b64dec", [](const std::string& s) {
      auto r = Base64Decode(s);
      return r.ok() ? std::move(r).value() : r.status().message();
    });
    Add(f, "split", {A::kString, A::kString}, false, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
      const std::string& sep = a[0].as_string();
      const std::string& s = a[1].as_string();
      ValueMap m;
      size_t p = 0, i = 0;
      for (;;) {
        size_t q = sep.empty() ? std::string::npos : s.find(sep, p);
        if (q == std::string::npos) break;
        if (i >= ctx.max_elements()) return TooManyParts("split", ctx);
        m.emplace("_" + std::to_string(i++), Value::String(s.substr(p, q - p)));
        p = q + sep.size();
      }
      if (i >= ctx.max_elements()) return TooManyParts("split", ctx);
      if (i >= ctx.max_elements()) return TooManyParts("split", ctx);
      m.emplace("_" + std::to_string(i), Value::String(s.substr(p)));
      return Value::Map(std::move(m), "map[string]string");
    });
    Add(f, "toStrings", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return StringList(StrSlice(a[0]));
    });
    Add(f, "sortAlpha", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      auto l = StrSlice(a[0]);
      std::sort(l.begin(), l.end());
      return StringList(std::move(l));
    });
    // --- conversions
    Add(f, "int", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Int(ToInt64(a[0]));
    });
    Add(f, "int64", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Int64(ToInt64(a[0]));
    });
    Add(f, "float64", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Float(ToFloat64(a[0]));
    });
    Add(f, "all", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      for (const Value& v : a)
        if (Empty(v)) return Value::Bool(false);
      return Value::Bool(true);
    });
    Add(f, "any", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      for (const Value& v : a)
        if (!Empty(v)) return Value::Bool(true);
      return Value::Bool(false);
    });
    Add(f, "max", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t m = ToInt64(a[0]);
      for (const Value& v : a) m = std::max(m, ToInt64(v));
      return Value::Int64(m);
    });
    Add(f, "min", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t m = ToInt64(a[0]);
      for (const Value& v : a) m = std::min(m, ToInt64(v));
      return Value::Int64(m);
    });
    Add(f, "until", {A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      int64_t n = a[0].as_int();
      return IntList("until", 0, n, n < 0 ? -1 : 1);
    });
    Add(f, "untilStep", {A::kInt, A::kInt, A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return IntList("untilStep", a[0].as_int(), a[1].as_int(), a[2].as_int());
    });
    Add(f, "seq", {A::kInt}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      // Sprig's seq: like GNU seq, numbers joined by spaces.
      int64_t start = 1, end = 0, step = 1;
      switch (a.size()) {
        case 1: end = a[0].as_int(); step = end < start ? -1 : 1; break;
        case 2: start = a[0].as_int(); end = a[1].as_int(); step = end < start ? -1 : 1; break;
        case 3: {
          start = a[0].as_int();
          step = a[1].as_int();
          end = a[2].as_int();
          int64_t inc = 1;
          if (end < start) {
            inc = -1;
            if (step > 0) return Value::String("");
          }
          end = WrapAdd(end, inc);
          ECO_ASSIGN_OR_RETURN(auto l, IntList("seq", start, end, step));
          std::string out;
          for (const Value& v : l.as_list()) out += (out.empty() ? "" : " ") + std::to_string(v.as_int());
          return Value::String(out);
        }
        default: return Value::String("");
      }
      end = WrapAdd(end, step);
      ECO_ASSIGN_OR_RETURN(auto l, IntList("seq", start, end, step));
      std::string out;
      for (const Value& v : l.as_list()) out += (out.empty() ? "" : " ") + std::to_string(v.as_int());
      return Value::String(out);
    });
    // --- more lists
    f->emplace("tuple", f->at("list"));
    // Sprig's list functions; the must* forms report the error that the
    // plain forms would panic with (a panic is an error in templates too).
    auto list_fn = [f](const std::string& base, bool must, std::function<Result<Value>(CallContext&, const ValueList&)> fn) {
      std::string name = must ? "must" + std::string(1, static_cast<char>(std::toupper(base[0]))) + base.substr(1) : base;
      Add(f, name, {A::kAny}, false, [fn, base, must](CallContext& ctx, const ValueList& a) -> Result<Value> {
        auto l = MustList(a[0], base);
        if (!l.ok()) {
          if (!must && a[0].is_nil()) return Value();
          return l.status();
        }
        return fn(ctx, *l);
      });
    };
    for (bool must : {false, true}) {
      list_fn("first", must, [](CallContext&, const ValueList& l) -> Result<Value> { return l.empty() ? Value() : l.front(); });
      list_fn("last", must, [](CallContext&, const ValueList& l) -> Result<Value> { return l.empty() ? Value() : l.back(); });
      list_fn("rest", must, [](CallContext&, const ValueList& l) -> Result<Value> {
        if (l.empty()) return Value();
        return Value::Slice(ValueList(l.begin() + 1, l.end()));
      });
      list_fn("initial", must, [](CallContext&, const ValueList& l) -> Result<Value> {
        if (l.empty()) return Value::Slice({});
        return Value::Slice(ValueList(l.begin(), l.end() - 1));
      });
      list_fn("reverse", must, [](CallContext&, const ValueList& l) -> Result<Value> {
        return Value::Slice(ValueList(l.rbegin(), l.rend()));
      });
      // Quadratic, as Sprig's: a long list is stopped by the time limit.
      list_fn("uniq", must, [](CallContext& ctx, const ValueList& l) -> Result<Value> {
        ValueList out;
        for (const Value& v : l) {
          if (ctx.OverTime(out.size() + 1)) return TimeLimitExceeded();
          bool seen = false;
          for (const Value& o : out) seen = seen || DeepEqual(o, v);
          if (!seen) out.push_back(v);
        }
        return Value::Slice(std::move(out));
      });
      list_fn("compact", must, [](CallContext&, const ValueList& l) -> Result<Value> {
        ValueList out;
        for (const Value& v : l)
          if (!Empty(v)) out.push_back(v);
        return Value::Slice(std::move(out));
      });
    }
    for (const char* name : {"without", "mustWithout"}) {
      Add(f, name, {A::kAny, A::kAny}, true, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
        ECO_ASSIGN_OR_RETURN(auto l, MustList(a[0], "without"));
        ValueList out;
        for (const Value& v : l) {
          if (ctx.OverTime(a.size())) return TimeLimitExceeded();
          bool drop = false;
          for (size_t i = 1; i < a.size(); ++i) drop = drop || DeepEqual(v, a[i]);
          if (!drop) out.push_back(v);
        }
        return Value::Slice(std::move(out));
      });
    }
    for (const char* name : {"has", "mustHas"}) {
      Add(f, name, {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        if (a[1].is_nil()) return Value::Bool(false);
        ECO_ASSIGN_OR_RETURN(auto l, MustList(a[1], "has"));
        for (const Value& v : l)
          if (DeepEqual(v, a[0])) return Value::Bool(true);
        return Value::Bool(false);
      });
    }
    for (const char* name : {"append", "push", "mustAppend", "mustPush"}) {
      Add(f, name, {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        ECO_ASSIGN_OR_RETURN(auto l, MustList(a[0], "append"));
        ValueList out = l;
        out.push_back(a[1]);
        return Value::Slice(std::move(out));
      });
    }
    Add(f, "concat", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueList out;
      for (const Value& v : a) {
        if (v.kind() != Kind::kSlice) return Invalid("Cannot concat type " + v.TypeName() + " as list");
        out.insert(out.end(), v.as_list().begin(), v.as_list().end());
      }
      return Value::Slice(std::move(out));
    });
    // --- more dicts
    Add(f, "keys", {A::kMap}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      std::vector<std::string> k;
      for (const Value& d : a)
        for (const auto& [key, v] : d.as_map()) k.push_back(key);
      return StringList(std::move(k));
    });
    Add(f, "values", {A::kMap}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueList l;
      for (const auto& [k, v] : a[0].as_map()) l.push_back(v);
      return Value::Slice(std::move(l));
    });
    Add(f, "pick", {A::kMap, A::kString}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueMap m;
      for (size_t i = 1; i < a.size(); ++i) {
        auto it = a[0].as_map().find(a[i].as_string());
        if (it != a[0].as_map().end()) m.insert_or_assign(it->first, it->second);
      }
      return Value::Map(std::move(m));
    });
    Add(f, "omit", {A::kMap, A::kString}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueMap m = a[0].as_map();
      for (size_t i = 1; i < a.size(); ++i) m.erase(a[i].as_string());
      return Value::Map(std::move(m));
    });
    Add(f, "dig", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      if (a.size() < 3) return Invalid("dig needs at least three arguments");
      Value cur = a.back();
      for (size_t i = 0; i + 2 < a.size(); ++i) {
        if (cur.kind() != Kind::kMap) return Invalid("interface conversion: interface {} is " + cur.TypeName() + ", not map[string]interface {}");
        if (a[i].kind() != Kind::kString) return Invalid("interface conversion: interface {} is " + a[i].TypeName() + ", not string");
        auto it = cur.as_map().find(a[i].as_string());
        if (it == cur.as_map().end()) return a[a.size() - 2];
        cur = it->second;
      }
      return cur;
    });
    for (const char* name : {"deepCopy", "mustDeepCopy"}) {
      Add(f, name, {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        if (a[0].is_nil()) return Invalid("reflect: call of reflect.Value.Type on zero Value");
        return DeepCopy(a[0]);
      });
    }
    // --- JSON (encoding/json: sorted keys, HTML-safe escaping unless raw)
    auto to_json = [f](const char* name, bool html, const char* indent) {
      std::string ind = indent;
      Add(f, name, {A::kAny}, false, [html, ind](CallContext&, const ValueList& a) -> Result<Value> {
        std::string out;
        if (!ToJson(&out, a[0], html, ind, 0)) out.clear();
        return Value::String(out);
      });
    };
    to_json("toJson", true, "");
    to_json("toRawJson", false, "");
    to_json("toPrettyJson", true, "  ");
    Add(f, "fromJson", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      auto j = nlohmann::json::parse(a[0].as_string(), nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        ValueMap m;
        m.emplace("Error", Value::String(j.is_discarded() ? "invalid JSON" : "json: cannot unmarshal into Go value of type map[string]interface {}"));
        return Value::Map(std::move(m));
      }
      return FromNlohmann(j);
    });
    Add(f, "fromJsonArray", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      auto j = nlohmann::json::parse(a[0].as_string(), nullptr, false);
      if (j.is_discarded()) return Value::Slice({Value::String("invalid JSON array")});
      if (!j.is_array()) {
        std::string what = j.is_object() ? "object" : j.is_string() ? "string" : j.is_boolean() ? "bool" : "number";
        return Value::Slice({Value::String("json: cannot unmarshal " + what + " into Go value of type []interface {}")});
      }
      return FromNlohmann(j);
    });
    // --- paths (Go's path package, slash-separated)
    auto clean = [](const std::string& p) {
      if (p.empty()) return std::string(".");
      bool rooted = p[0] == '/';
      std::vector<std::string> parts;
      size_t i = 0;
      while (i <= p.size()) {
        size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        std::string seg = p.substr(i, j - i);
        if (seg == "..") {
          if (!parts.empty() && parts.back() != "..") parts.pop_back();
          else if (!rooted) parts.push_back("..");
        } else if (!seg.empty() && seg != ".") {
          parts.push_back(seg);
        }
        i = j + 1;
      }
      std::string out = rooted ? "/" : "";
      for (size_t k = 0; k < parts.size(); ++k) out += (k ? "/" : "") + parts[k];
      return out.empty() ? std::string(".") : out;
    };
    AddStr(f, "clean", clean);
    AddStr(f, "osClean", clean);
    auto base = [](const std::string& p0) {
      if (p0.empty()) return std::string(".");
      std::string p = p0;
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      if (p == "/") return p;
      size_t k = p.rfind('/');
      return k == std::string::npos ? p : p.substr(k + 1);
    };
    AddStr(f, "base", base);
    AddStr(f, "osBase", base);
    auto dir = [clean](const std::string& p) {
      size_t k = p.rfind('/');
      return clean(k == std::string::npos ? "" : p.substr(0, k + 1));
    };
    AddStr(f, "dir", dir);
    AddStr(f, "osDir", dir);
    auto ext = [](const std::string& p) {
      for (size_t i = p.size(); i-- > 0;) {
        if (p[i] == '/') break;
        if (p[i] == '.') return p.substr(i);
      }
      return std::string();
    };
    AddStr(f, "ext", ext);
    AddStr(f, "osExt", ext);
    for (const char* name : {"isAbs", "osIsAbs"}) {
      Add(f, name, {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        return Value::Bool(!a[0].as_string().empty() && a[0].as_string()[0] == '/');
      });
    }
    // --- float math (Sprig computes with decimals and returns float64)
    // long double keeps results such as 1.2*2.4*10*4 at Sprig's 115.2.
    auto floats = [f](const char* name, std::function<long double(long double, long double)> op) {
      Add(f, name, {A::kAny, A::kAny}, true, [op](CallContext&, const ValueList& a) -> Result<Value> {
        long double r = ToFloat64(a[0]);
        for (size_t i = 1; i < a.size(); ++i) r = op(r, ToFloat64(a[i]));
        return Value::Float(static_cast<double>(r));
      });
    };
    floats("addf", [](long double x, long double y) { return x + y; });
    floats("subf", [](long double x, long double y) { return x - y; });
    floats("mulf", [](long double x, long double y) { return x * y; });
    floats("divf", [](long double x, long double y) { return x / y; });
    floats("maxf", [](long double x, long double y) { return std::max(x, y); });
    floats("minf", [](long double x, long double y) { return std::min(x, y); });
    f->emplace("biggest", f->at("max"));
    Add(f, "atoi", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      char* end = nullptr;
      const std::string& s = a[0].as_string();
      long long r = std::strtoll(s.c_str(), &end, 10);
      return Value::Int((!s.empty() && end && *end == '\0') ? r : 0);
    });
    // --- reflection
    Add(f, "typeIs", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(a[0].as_string() == a[1].TypeName());
    });
    Add(f, "typeIsLike", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      std::string t = a[1].TypeName();
      return Value::Bool(a[0].as_string() == t || a[0].as_string() == "*" + t);
    });
    Add(f, "kindIs", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::Bool(a[0].as_string() == a[1].KindName());
    });
    // --- more lists
    for (const char* name : {"prepend", "mustPrepend"}) {
      Add(f, name, {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        ECO_ASSIGN_OR_RETURN(auto l, MustList(a[0], "prepend"));
        ValueList out{a[1]};
        out.insert(out.end(), l.begin(), l.end());
        return Value::Slice(std::move(out));
      });
    }
    for (const char* name : {"chunk", "mustChunk"}) {
      Add(f, name, {A::kInt, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
        ECO_ASSIGN_OR_RETURN(auto l, MustList(a[1], "chunk"));
        int64_t size = a[0].as_int();
        if (size <= 0) return Invalid("runtime error: integer divide by zero");
        size = std::min<int64_t>(size, std::max<size_t>(l.size(), 1));
        ValueList out;
        for (size_t i = 0; i < l.size(); i += size) {
          size_t e = std::min(l.size(), i + static_cast<size_t>(size));
          out.push_back(Value::Slice(ValueList(l.begin() + i, l.begin() + e)));
        }
        return Value::Slice(std::move(out), "[][]interface {}");
      });
    }
    Add(f, "pluck", {A::kString, A::kMap}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      ValueList out;
      for (size_t i = 1; i < a.size(); ++i) {
        auto it = a[i].as_map().find(a[0].as_string());
        if (it != a[i].as_map().end()) out.push_back(it->second);
      }
      return Value::Slice(std::move(out));
    });
    Add(f, "plural", {A::kString, A::kString, A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return a[2].as_int() == 1 ? a[0] : a[1];
    });
    Add(f, "splitn", {A::kString, A::kInt, A::kString}, false, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
      const std::string& sep = a[0].as_string();
      int64_t n = a[1].as_int();
      const std::string& s = a[2].as_string();
      ValueMap m;
      if (n == 0) return Value::Map(std::move(m), "map[string]string");
      size_t p = 0;
      int64_t i = 0;
      for (; n < 0 || i < n - 1; ++i) {
        size_t q = sep.empty() ? std::string::npos : s.find(sep, p);
        if (q == std::string::npos) break;
        if (static_cast<size_t>(i) >= ctx.max_elements()) return TooManyParts("splitn", ctx);
        m.emplace("_" + std::to_string(i), Value::String(s.substr(p, q - p)));
        p = q + sep.size();
      }
      if (static_cast<size_t>(i) >= ctx.max_elements()) return TooManyParts("splitn", ctx);
      m.emplace("_" + std::to_string(i), Value::String(s.substr(p)));
      return Value::Map(std::move(m), "map[string]string");
    });
    Add(f, "tpl", {A::kString, A::kAny}, false, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
      // Helm renders in a copy of the set, so defines made inside stay local.
      TemplateSet copy = *ctx.set;
      const std::string& text = a[0].as_string();
      Status s = copy.Parse("gotpl", text);
      if (!s.ok()) return Invalid("cannot parse template " + Quote(text) + ": " + s.message());
      ExecOptions opts;
      opts.missing_key = MissingKey::kZero;
      opts.max_depth = std::max(1, 100000 - ctx.depth);
      // The caller's output limit and deadline hold inside too.
      if (ctx.opts) {
        opts.max_output = ctx.opts->max_output;
        opts.deadline = ctx.opts->deadline;
      }
      auto r = copy.Execute("gotpl", a[1], opts);
      if (!r.ok()) return Invalid("error during tpl function execution for " + Quote(text) + ": " + r.status().message());
      std::string out = std::move(r).value();
      out = Replace(out, "<no value>", "");
      return Value::String(out);
    });
    AddRegexFuncs(f);
    AddCryptoFuncs(f);
    AddYamlInFuncs(f);
    Add(f, "toYaml", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(ToYaml(a[0]));
    });
    AddMoreFuncs(f);
    AddSemverFuncs(f);
    AddTimeFuncs(f);
    return std::shared_ptr<const FuncMap>(std::move(m));
  }();
  return kFuncs;
}

}  // namespace eco::helm
