// Helm's --set family (pkg/strvals: parser.go, literal_parser.go) and the
// order in which pkg/cli/values.MergeValues applies user values.
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "helm/fmt.h"
#include "helm/values.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

constexpr int kMaxIndex = 65536;
constexpr int kMaxNestedNameLevel = 30;

enum class Mode { kTyped, kString, kJson, kFile, kLiteral };

// A parse error; `eof` marks io.EOF (also when wrapped), which ends a line
// without an error.
struct StrvalsError {
  bool eof = false;
  std::string msg;
};
using Err = std::optional<StrvalsError>;

Err Eof() { return StrvalsError{true, "EOF"}; }
Err Fail(std::string msg) { return StrvalsError{false, std::move(msg)}; }
// fmt.Errorf("...%w", err): keeps io.EOF visible to errors.Is.
Err Wrap(const std::string& prefix, const Err& e) { return StrvalsError{e->eof, prefix + e->msg}; }

// Go's %T of a value held in an interface{}, for interface-conversion panics.
std::string GoTypeOf(const Value& v) {
  if (v.is_nil()) return "nil";
  return v.TypeName();
}

std::string ConversionPanic(const Value& v, const char* want) {
  return "interface conversion: interface {} is " + GoTypeOf(v) + ", not " + want;
}

// Thrown inside a key and turned into "unable to parse key: ..." as Go's recover does.
struct Panic {
  std::string msg;
};

void Set(ValueMap* data, const std::string& key, Value v) {
  if (key.empty()) return;
  (*data)[key] = std::move(v);
}

// JSON as Go's json.Unmarshal into interface{}: numbers are float64, null is a nil interface.
Value JsonToValue(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::NilInterface();
    case nlohmann::json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return Value::Float(j.get<double>());
    case nlohmann::json::value_t::string:
      return Value::String(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList l;
      for (const auto& e : j) l.push_back(JsonToValue(e));
      return Value::Slice(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      ValueMap m;
      for (auto it = j.begin(); it != j.end(); ++it) m[it.key()] = JsonToValue(it.value());
      return Value::Map(std::move(m));
    }
    default:
      break;
  }
  return Value::NilInterface();
}

bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// strvals.typedVal.
Value TypedVal(const std::string& val, bool as_string) {
  if (as_string) return Value::String(val);
  if (EqualFold(val, "true")) return Value::Bool(true);
  if (EqualFold(val, "false")) return Value::Bool(false);
  if (EqualFold(val, "null")) return Value::NilInterface();
  if (val == "0") return Value::Int64(0);
  if (!val.empty() && val[0] != '0') {
    // strconv.ParseInt(val, 10, 64)
    std::string_view s = val;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
      neg = s[0] == '-';
      s.remove_prefix(1);
    }
    bool ok = !s.empty();
    uint64_t u = 0;
    for (char c : s) {
      if (c < '0' || c > '9' || u > (UINT64_MAX - 9) / 10) {
        ok = false;
        break;
      }
      u = u * 10 + static_cast<uint64_t>(c - '0');
    }
    uint64_t limit = neg ? static_cast<uint64_t>(INT64_MAX) + 1 : static_cast<uint64_t>(INT64_MAX);
    if (ok && u <= limit) return Value::Int64(neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u));
  }
  return Value::String(val);
}

// strconv.Atoi's result or its error text.
Err Atoi(const std::string& s, int64_t* out) {
  std::string_view v = s;
  bool neg = false;
  if (!v.empty() && (v[0] == '+' || v[0] == '-')) {
    neg = v[0] == '-';
    v.remove_prefix(1);
  }
  if (v.empty()) return Fail("strconv.Atoi: parsing " + Quote(s) + ": invalid syntax");
  uint64_t u = 0;
  bool range = false;
  for (char c : v) {
    if (c < '0' || c > '9') return Fail("strconv.Atoi: parsing " + Quote(s) + ": invalid syntax");
    if (u > (UINT64_MAX - 9) / 10) range = true;
    else u = u * 10 + static_cast<uint64_t>(c - '0');
  }
  uint64_t limit = neg ? static_cast<uint64_t>(INT64_MAX) + 1 : static_cast<uint64_t>(INT64_MAX);
  if (range || u > limit) return Fail("strconv.Atoi: parsing " + Quote(s) + ": value out of range");
  *out = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
  return std::nullopt;
}

Err SetIndex(ValueList* list, int64_t index, Value v) {
  if (index < 0) return Fail("negative " + std::to_string(index) + " index not allowed");
  if (index > kMaxIndex) {
    return Fail("index of " + std::to_string(index) + " is greater than maximum supported index of " +
                std::to_string(kMaxIndex));
  }
  if (static_cast<int64_t>(list->size()) <= index) list->resize(static_cast<size_t>(index) + 1, Value::NilInterface());
  (*list)[static_cast<size_t>(index)] = std::move(v);
  return std::nullopt;
}

class StrvalsParser {
 public:
  StrvalsParser(std::string_view s, Mode mode, const std::function<Result<std::string>(const std::string&)>* read_file)
      : s_(s), mode_(mode), read_file_(read_file) {}

  Err Parse(ValueMap* data) {
    for (;;) {
      Err e = Key(data, 0);
      if (!e) continue;
      if (e->eof) return std::nullopt;
      return e;
    }
  }

 private:
  bool AtEnd() const { return pos_ >= s_.size(); }

  // runesUntil: reads up to a stop character; backslash escapes the next one
  // (not for --set-literal). `last` is the stop character; eof when none.
  std::string Until(std::string_view stop, char* last, bool* eof) {
    std::string v;
    *eof = false;
    *last = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (stop.find(c) != std::string_view::npos) {
        *last = c;
        return v;
      }
      if (c == '\\' && mode_ != Mode::kLiteral) {
        if (pos_ >= s_.size()) {
          *eof = true;
          return v;
        }
        v += s_[pos_++];
        continue;
      }
      v += c;
    }
    *eof = true;
    return v;
  }

  Result<Value> Read(const std::string& rs) {
    switch (mode_) {
      case Mode::kTyped:
        return TypedVal(rs, false);
      case Mode::kString:
      case Mode::kLiteral:
        return Value::String(rs);
      case Mode::kFile: {
        if (!read_file_ || !*read_file_) return Invalid("open " + rs + ": no such file or directory");
        ECO_ASSIGN_OR_RETURN(std::string r, (*read_file_)(rs));
        return Value::String(std::move(r));
      }
      case Mode::kJson:
        break;
    }
    return Value::String(rs);
  }

  Err ReadErr(const Result<Value>& r) { return r.ok() ? Err() : Fail(r.status().message()); }

  // Skips blanks and one comma; true when the value is empty.
  bool EmptyVal() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ',') {
        ++pos_;
        return true;
      }
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') return false;
      ++pos_;
    }
    return true;
  }

  // json.Decoder.Decode of the next value, consuming exactly that value.
  Err JsonValue(Value* out) {
    size_t i = pos_;
    while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
    size_t start = i;
    if (i < s_.size() && (s_[i] == '{' || s_[i] == '[')) {
      int depth = 0;
      bool in_str = false;
      for (; i < s_.size(); ++i) {
        char c = s_[i];
        if (in_str) {
          if (c == '\\') ++i;
          else if (c == '"') in_str = false;
          continue;
        }
        if (c == '"') in_str = true;
        else if (c == '{' || c == '[') ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) {
          ++i;
          break;
        }
      }
    } else if (i < s_.size() && s_[i] == '"') {
      for (++i; i < s_.size(); ++i) {
        if (s_[i] == '\\') ++i;
        else if (s_[i] == '"') {
          ++i;
          break;
        }
      }
    } else {
      while (i < s_.size() && std::string_view(",]} \t\r\n").find(s_[i]) == std::string_view::npos) ++i;
    }
    auto j = nlohmann::json::parse(s_.substr(start, i - start), nullptr, false);
    if (j.is_discarded()) return Fail("invalid JSON value");
    *out = JsonToValue(j);
    pos_ = i;
    return std::nullopt;
  }

  // valList: `{a,b}` or ErrNotList (nullopt list, no error).
  Err ValList(std::optional<ValueList>* out) {
    if (AtEnd()) return Eof();
    if (s_[pos_] != '{') return std::nullopt;
    ++pos_;
    ValueList list;
    for (;;) {
      char last;
      bool eof;
      std::string rs = Until(",}", &last, &eof);
      if (eof) {
        *out = std::move(list);
        return Fail("list must terminate with '}'");
      }
      Result<Value> v = Read(rs);
      if (last == '}') {
        if (!AtEnd() && s_[pos_] == ',') ++pos_;
        list.push_back(v.ok() ? *v : Value::NilInterface());
        *out = std::move(list);
        return ReadErr(v);
      }
      if (!v.ok()) {
        *out = std::move(list);
        return ReadErr(v);
      }
      list.push_back(*v);
    }
  }

  Err Key(ValueMap* data, int level) {
    try {
      return KeyImpl(data, level);
    } catch (const Panic& p) {
      return Fail("unable to parse key: " + p.msg);
    }
  }

  Err KeyImpl(ValueMap* data, int level) {
    const bool literal = mode_ == Mode::kLiteral;
    char last;
    bool eof;
    std::string k = Until(literal ? "=[." : "=[,.", &last, &eof);
    if (eof) {
      if (k.empty() || literal) return Eof();
      return Fail("key " + Quote(k) + " has no value");
    }
    if (last == '[') {
      int64_t i = 0;
      Err e = KeyIndex(&i);
      if (e) return Wrap("error parsing index: ", e);
      ValueList list;
      if (auto it = data->find(k); it != data->end()) {
        if (it->second.kind() != Kind::kSlice) throw Panic{ConversionPanic(it->second, "[]interface {}")};
        list = it->second.as_list();
      }
      Err le = ListItem(&list, i, level);
      Set(data, k, Value::Slice(std::move(list)));
      return le;
    }
    if (last == '=') {
      if (literal) {
        std::string rest(s_.substr(pos_));
        pos_ = s_.size();
        Set(data, k, Value::String(std::move(rest)));
        return std::nullopt;
      }
      if (mode_ == Mode::kJson) {
        if (EmptyVal()) {
          Set(data, k, Value::NilInterface());
          return std::nullopt;
        }
        Value v;
        if (Err e = JsonValue(&v)) return e;
        Set(data, k, v);
        EmptyVal();
        return std::nullopt;
      }
      std::optional<ValueList> vl;
      Err e = ValList(&vl);
      if (!e && vl) {
        Set(data, k, Value::Slice(std::move(*vl)));
        return std::nullopt;
      }
      if (e && e->eof) {
        Set(data, k, Value::String(""));
        return e;
      }
      if (e) return e;
      std::string rs = Until(",", &last, &eof);
      Result<Value> v = Read(rs);
      Set(data, k, v.ok() ? *v : Value::NilInterface());
      return ReadErr(v);
    }
    if (last == ',') {
      Set(data, k, Value::String(""));
      return Fail("key " + Quote(k) + " has no value (cannot end with ,)");
    }
    // last == '.'
    if (++level > kMaxNestedNameLevel) {
      return Fail("value name nested level is greater than maximum supported nested level of " +
                  std::to_string(kMaxNestedNameLevel));
    }
    ValueMap inner;
    if (auto it = data->find(k); it != data->end()) {
      if (it->second.kind() != Kind::kMap) throw Panic{ConversionPanic(it->second, "map[string]interface {}")};
      inner = it->second.as_map();
    }
    Err e = Key(&inner, level);
    if (!e && inner.empty()) return Fail("key map " + Quote(k) + " has no value");
    if (!inner.empty()) Set(data, k, Value::Map(std::move(inner)));
    return e;
  }

  Err KeyIndex(int64_t* i) {
    char last;
    bool eof;
    std::string v = Until("]", &last, &eof);
    if (eof) return Eof();
    return Atoi(v, i);
  }

  Err ListItem(ValueList* list, int64_t i, int level) {
    if (i < 0) return Fail("negative " + std::to_string(i) + " index not allowed");
    char last;
    bool eof;
    std::string k = Until("[.=", &last, &eof);
    if (!k.empty()) return Fail("unexpected data at end of array index: " + Quote(k));
    if (eof) return Eof();
    if (last == '=') {
      if (mode_ == Mode::kLiteral) {
        std::string rest(s_.substr(pos_));
        pos_ = s_.size();
        return SetIndex(list, i, Value::String(std::move(rest)));
      }
      if (mode_ == Mode::kJson) {
        if (EmptyVal()) return SetIndex(list, i, Value::NilInterface());
        Value v;
        if (Err e = JsonValue(&v)) return e;
        if (Err e = SetIndex(list, i, v)) return e;
        EmptyVal();
        return std::nullopt;
      }
      std::optional<ValueList> vl;
      Err e = ValList(&vl);
      if (!e && vl) return SetIndex(list, i, Value::Slice(std::move(*vl)));
      if (e && e->eof) return SetIndex(list, i, Value::String(""));
      if (e) return e;
      std::string rs = Until(",", &last, &eof);
      Result<Value> v = Read(rs);
      if (!v.ok()) return ReadErr(v);
      return SetIndex(list, i, *v);
    }
    if (last == '[') {
      int64_t next = 0;
      Err e = KeyIndex(&next);
      if (e) return Wrap("error parsing index: ", e);
      ValueList crt;
      if (static_cast<int64_t>(list->size()) > i) {
        const Value& existed = (*list)[static_cast<size_t>(i)];
        if (!existed.is_nil()) {
          if (existed.kind() != Kind::kSlice) throw Panic{ConversionPanic(existed, "[]interface {}")};
          crt = existed.as_list();
        }
      }
      if (Err le = ListItem(&crt, next, level)) return le;
      return SetIndex(list, i, Value::Slice(std::move(crt)));
    }
    // last == '.'
    ValueMap inner;
    if (static_cast<int64_t>(list->size()) > i) {
      const Value& existed = (*list)[static_cast<size_t>(i)];
      if (existed.kind() == Kind::kMap) inner = existed.as_map();
    }
    if (Err e = Key(&inner, level)) return e;
    return SetIndex(list, i, Value::Map(std::move(inner)));
  }

  std::string_view s_;
  size_t pos_ = 0;
  Mode mode_;
  const std::function<Result<std::string>(const std::string&)>* read_file_;
};

// pkg/cli/values.mergeMaps: b over a, maps merged recursively.
ValueMap MergeMaps(const ValueMap& a, const ValueMap& b) {
  ValueMap out = a;
  for (const auto& [k, v] : b) {
    if (v.kind() == Kind::kMap) {
      auto it = out.find(k);
      if (it != out.end() && it->second.kind() == Kind::kMap) {
        it->second = Value::Map(MergeMaps(it->second.as_map(), v.as_map()));
        continue;
      }
    }
    out[k] = v;
  }
  return out;
}

Status ParseLine(std::string_view line, Mode mode, ValueMap* dest, const ValueOptions* opts) {
  StrvalsParser p(line, mode, opts ? &opts->read_file : nullptr);
  Err e = p.Parse(dest);
  if (e) return Invalid(e->msg);
  return Status::Ok();
}

}  // namespace

Status ParseSetInto(std::string_view line, SetKind kind, Value* dest,
                    const std::function<Result<std::string>(const std::string&)>& read_file) {
  ValueMap m;
  if (dest->kind() == Kind::kMap) m = dest->as_map();
  Mode mode = kind == SetKind::kSet          ? Mode::kTyped
              : kind == SetKind::kSetString  ? Mode::kString
              : kind == SetKind::kSetJson    ? Mode::kJson
              : kind == SetKind::kSetFile    ? Mode::kFile
                                             : Mode::kLiteral;
  StrvalsParser p(line, mode, &read_file);
  Err e = p.Parse(&m);
  *dest = Value::Map(std::move(m));
  if (e) return Invalid(e->msg);
  return Status::Ok();
}

Result<Value> MergeValues(const ValueOptions& opts) {
  ValueMap base;
  for (const auto& [name, contents] : opts.value_files) {
    ECO_ASSIGN_OR_RETURN(Value cur, ParseYamlValues(contents, name));
    base = MergeMaps(base, cur.as_map());
  }
  for (const std::string& value : opts.set_json) {
    std::string_view t = value;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    if (!t.empty() && t.front() == '{') {
      // A whole JSON object is merged as a values file would be.
      auto j = nlohmann::json::parse(t, nullptr, false);
      if (j.is_discarded() || !(j.is_object() || j.is_null())) {
        return Invalid("failed parsing --set-json data JSON: " + value);
      }
      if (j.is_object()) base = MergeMaps(base, JsonToValue(j).as_map());
      continue;
    }
    if (!ParseLine(value, Mode::kJson, &base, &opts).ok()) return Invalid("failed parsing --set-json data " + value);
  }
  struct Pass {
    const std::vector<std::string>* lines;
    Mode mode;
    const char* flag;
  } passes[] = {
      {&opts.set, Mode::kTyped, "--set"},
      {&opts.set_string, Mode::kString, "--set-string"},
      {&opts.set_file, Mode::kFile, "--set-file"},
      {&opts.set_literal, Mode::kLiteral, "--set-literal"},
  };
  for (const Pass& pass : passes) {
    for (const std::string& line : *pass.lines) {
      Status s = ParseLine(line, pass.mode, &base, &opts);
      if (!s.ok()) return Invalid("failed parsing " + std::string(pass.flag) + " data: " + s.message());
    }
  }
  return Value::Map(std::move(base));
}

}  // namespace eco::helm
