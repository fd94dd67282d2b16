#include "helm/yaml_in.h"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/base64.h"
#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
namespace {

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

using GoScalar = GoYamlScalar;

// strconv.FormatFloat(f, 'g', -1, 32), which sigs.k8s.io/yaml uses for float
// keys; go-yaml spells NaN and the infinities.
std::string FormatFloat32(double v) {
  std::string g = FormatFloat32G(v);
  if (g == "NaN") return ".nan";
  if (g == "+Inf") return ".inf";
  if (g == "-Inf") return "-.inf";
  return g;
}

// encoding/json replaces invalid UTF-8 by U+FFFD when it marshals a string.
std::string SanitizeUtf8(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (ok && len > 1) {
      ok = !((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
             cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff));
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string ShortTag(std::string_view tag) {
  if (tag.substr(0, kTagPrefix.size()) == kTagPrefix) return "!!" + std::string(tag.substr(kTagPrefix.size()));
  return std::string(tag);
}

std::string_view GoScalarTag(const GoScalar& s) {
  switch (s.kind) {
    case GoScalar::kNull:
      return "!!null";
    case GoScalar::kBool:
      return "!!bool";
    case GoScalar::kInt:
    case GoScalar::kUint:
      return "!!int";
    case GoScalar::kFloat:
      return "!!float";
    case GoScalar::kString:
      break;
  }
  return "!!str";
}

// A non-string scalar after the JSON round trip (nil interface, bool or
// float64); false for a string, whose text the caller has.
bool NonStringValue(const GoScalar& s, Value* out) {
  switch (s.kind) {
    case GoScalar::kNull:
      *out = Value::NilInterface();
      return true;
    case GoScalar::kBool:
      *out = Value::Bool(s.b);
      return true;
    case GoScalar::kInt:
      *out = Value::Float(static_cast<double>(s.i));
      return true;
    case GoScalar::kUint:
      *out = Value::Float(static_cast<double>(s.u));
      return true;
    case GoScalar::kFloat:
      *out = Value::Float(s.f);
      return true;
    case GoScalar::kString:
      break;
  }
  return false;
}

// A scalar event's data; `tag` is empty when the scalar has none.
struct ScalarText {
  std::string_view text;
  std::string_view tag;
  bool plain = false;  // plain style (or the "!" tag): resolvable when untagged
};

// RAII for libyaml's C objects.
struct YamlParser {
  yaml_parser_t p;
  bool ok;
  YamlParser() { ok = yaml_parser_initialize(&p) != 0; }
  ~YamlParser() { yaml_parser_delete(&p); }
  YamlParser(const YamlParser&) = delete;
  YamlParser& operator=(const YamlParser&) = delete;
};

struct YamlEvent {
  yaml_event_t e;
  bool live = false;
  ~YamlEvent() { Reset(); }
  void Reset() {
    if (live) yaml_event_delete(&e);
    live = false;
  }
};

std::string_view Chars(const yaml_char_t* s) {
  return s ? std::string_view(reinterpret_cast<const char*>(s)) : std::string_view();
}

// go-yaml v2's parser.fail(): a scanner error's line is reported one-based,
// a parser error's zero-based mark is printed as is.
std::string GoYamlParseError(const yaml_parser_t& p) {
  size_t line = 0;
  if (p.problem_mark.line != 0) {
    line = p.problem_mark.line;
    if (p.error == YAML_SCANNER_ERROR) ++line;
  } else if (p.context_mark.line != 0) {
    line = p.context_mark.line;
  }
  std::string msg = "yaml: ";
  if (line != 0) msg += "line " + std::to_string(line) + ": ";
  msg += p.problem ? p.problem : "unknown problem parsing YAML content";
  return msg;
}

// Builds the Value of the first document from libyaml's events as go-yaml v2
// + sigs.k8s.io/yaml would. Go decodes only after the whole document parsed,
// then converts keys, then marshals JSON, so errors are kept per stage and a
// syntax error anywhere in the document wins over all of them.
class Builder {
 public:
  // Parse error (or "unknown anchor"): set and returned at once.
  std::string fatal;
  // With keep_: the document has an alias, decode it in full instead.
  bool restart = false;

  Builder() = default;
  // Builds only the values of these top-level keys of a mapping document.
  explicit Builder(const std::vector<std::string_view>* keep) : keep_(keep) {}

  Result<Value> Run(std::string_view text) {
    YamlParser parser;
    if (!parser.ok) return Invalid("error converting YAML to JSON: yaml: out of memory");
    // libyaml asserts a non-null input, which an empty view may not have.
    const char* data = text.data() ? text.data() : "";
    yaml_parser_set_input_string(&parser.p, reinterpret_cast<const unsigned char*>(data), text.size());
    YamlEvent ev;
    bool in_doc = false;
    for (;;) {
      ev.Reset();
      if (!yaml_parser_parse(&parser.p, &ev.e)) {
        return Invalid("error converting YAML to JSON: " + GoYamlParseError(parser.p));
      }
      ev.live = true;
      yaml_event_type_t t = ev.e.type;
      if (t == YAML_STREAM_END_EVENT) break;
      if (t == YAML_DOCUMENT_START_EVENT) {
        in_doc = true;
        continue;
      }
      if (t == YAML_DOCUMENT_END_EVENT) {
        if (in_doc) break;
        continue;
      }
      if (t == YAML_STREAM_START_EVENT || t == YAML_NO_EVENT) continue;
      Event(ev.e);
      if (!fatal.empty()) return Invalid("error converting YAML to JSON: " + fatal);
    }
    for (const std::string& e : errors_) {
      if (!e.empty()) return Invalid("error converting YAML to JSON: " + e);
    }
    return has_root_ ? std::move(root_) : Value::NilInterface();
  }

 private:
  static constexpr size_t kMaxDepth = 10000;
  static constexpr size_t kMaxNodes = 4'000'000;
  // Error stages, in the order Go reports them.
  enum Stage { kDecode = 0, kKeys = 1, kJson = 2 };

  // An open sequence or mapping.
  struct Frame {
    bool is_map = false;
    bool merge_seq = false;  // the value of a `<<` key: maps only
    ValueList items;
    ValueMap map;
    bool have_key = false;   // in a mapping: a key was read, its value comes next
    bool merge_key = false;  // that key is `<<`
    std::string key;
    std::string anchor;
    size_t start_nodes = 0;
    size_t height = 0;  // deepest nesting below this node
    bool skip = false;        // checked for errors but not built (see keep_)
    bool skip_value = false;  // the value of the current key is not built
    std::string key_error;    // the current key cannot be a JSON key
  };

  struct Anchored {
    bool done = false;
    Value value;
    size_t nodes = 1;
    size_t height = 0;
    bool is_scalar = false;
    std::string text, tag;  // a scalar's event, to spell it as a key
    bool plain = false;
  };

  void Fail(Stage s, std::string msg) {
    if (errors_[s].empty()) errors_[s] = std::move(msg);
  }
  bool Skipping() const { return !errors_[kDecode].empty(); }

  void Event(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        ScalarText st{std::string_view(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length),
                      Chars(e.data.scalar.tag), false};
        st.plain = e.data.scalar.plain_implicit != 0 && (st.tag.empty() || st.tag == "!");
        std::string_view anchor = Chars(e.data.scalar.anchor);
        if (!anchor.empty()) anchors_[std::string(anchor)] = Anchored{};
        Scalar(st, anchor);
        return;
      }
      case YAML_ALIAS_EVENT:
        Alias(Chars(e.data.alias.anchor));
        return;
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        bool is_map = e.type == YAML_MAPPING_START_EVENT;
        std::string_view anchor = Chars(is_map ? e.data.mapping_start.anchor : e.data.sequence_start.anchor);
        Open(is_map, anchor);
        return;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        Close();
        return;
      default:
        return;
    }
  }

  // --- nodes ---

  void Open(bool is_map, std::string_view anchor) {
    if (stack_.size() + 1 > kMaxDepth) Fail(kDecode, "yaml: exceeded max depth of 10000");
    Count(1);
    Frame f;
    f.is_map = is_map;
    if (!stack_.empty()) {
      const Frame& parent = stack_.back();
      f.skip = parent.skip || (parent.is_map && parent.have_key && parent.skip_value);
    }
    if (!stack_.empty() && stack_.back().is_map && stack_.back().have_key && stack_.back().merge_key && !is_map) {
      f.merge_seq = true;
    }
    f.start_nodes = count_;
    if (!anchor.empty()) {
      f.anchor = std::string(anchor);
      anchors_[f.anchor] = Anchored{};  // open: an alias to it now contains itself
    }
    stack_.push_back(std::move(f));
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Value v = f.skip ? Value() : f.is_map ? Value::Map(std::move(f.map)) : Value::Slice(std::move(f.items));
    if (!f.anchor.empty()) {
      Anchored& a = anchors_[f.anchor];
      a.done = true;
      a.value = v;
      a.nodes = count_ - f.start_nodes + 1;
      a.height = f.height;
    }
    Complete(std::move(v), f.is_map ? kMapNode : kSeqNode, nullptr, f.height);
  }

  void Scalar(const ScalarText& st, std::string_view anchor) {
    Count(1);
    if (!anchor.empty()) {
      // Kept as text: resolved again where an alias uses it (as a key or a value).
      Anchored& a = anchors_[std::string(anchor)];
      a.done = true;
      a.is_scalar = true;
      a.text = std::string(st.text);
      a.tag = std::string(st.tag);
      a.plain = st.plain;
    }
    Complete(Value(), kScalarNode, &st, 0);
  }

  void Alias(std::string_view name) {
    if (keep_) {
      // Skipped nodes have no values to copy: the caller decodes in full.
      restart = true;
      fatal = "alias";
      return;
    }
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      fatal = "yaml: unknown anchor '" + std::string(name) + "' referenced";
      return;
    }
    const Anchored& a = it->second;
    if (!a.done) {
      Fail(kDecode, "yaml: anchor '" + std::string(name) + "' value contains itself");
      return;
    }
    if (stack_.size() + a.height > kMaxDepth) Fail(kDecode, "yaml: exceeded max depth of 10000");
    Count(a.nodes);
    if (Skipping()) return;
    NodeKind kind = a.is_scalar ? kScalarNode : a.value.kind() == Kind::kMap ? kMapNode : kSeqNode;
    ScalarText st{a.text, a.tag, a.plain};
    Complete(a.value, kind, a.is_scalar ? &st : nullptr, a.height);
  }

  enum NodeKind { kScalarNode, kSeqNode, kMapNode };

  // A finished node `v` goes into its parent (or becomes the root). A
  // scalar's value is made from `st` only where a value is needed.
  void Complete(Value v, NodeKind kind, const ScalarText* st, size_t height) {
    if (stack_.empty()) {
      root_ = kind == kScalarNode ? ScalarValue(*st) : std::move(v);
      has_root_ = true;
      return;
    }
    Frame& parent = stack_.back();
    parent.height = std::max(parent.height, height + 1);
    if (Skipping()) return;
    if (!parent.is_map) {
      if (parent.merge_seq && kind != kMapNode) Fail(kDecode, kWantMap);
      if (parent.skip) {
        if (kind == kScalarNode) CheckScalar(*st);
        return;
      }
      parent.items.push_back(kind == kScalarNode ? ScalarValue(*st) : std::move(v));
      return;
    }
    if (!parent.have_key) {
      parent.have_key = true;
      parent.merge_key = false;
      parent.skip_value = false;
      parent.key.clear();
      parent.key_error.clear();
      if (kind != kScalarNode) {
        if (keep_) {
          // Skipped values cannot be printed in the message: decode in full.
          restart = true;
          fatal = "key";
          return;
        }
        Fail(kDecode, "yaml: invalid map key: " + GoSharpV(v, false));
        return;
      }
      if (st->text == "<<" && ((st->plain && st->tag.empty()) || st->tag == "tag:yaml.org,2002:merge")) {
        parent.merge_key = true;
        return;
      }
      KeyString(*st, &parent.key, &parent.key_error);
      if (keep_ && !parent.key_error.empty()) {
        restart = true;
        fatal = "key";
        return;
      }
      if (keep_ && stack_.size() == 1) {
        parent.skip_value = std::find(keep_->begin(), keep_->end(), parent.key) == keep_->end();
      }
      return;
    }
    parent.have_key = false;
    if (parent.skip || parent.skip_value) {
      // Only the errors Go would report for this value.
      if (kind == kScalarNode) {
        if (parent.merge_key) Fail(kDecode, kWantMap);
        else CheckScalar(*st);
      }
      return;
    }
    if (kind == kScalarNode && !parent.merge_key) v = ScalarValue(*st);
    if (!parent.key_error.empty()) {
      Fail(kKeys, parent.key_error + ", value: " + GoSharpV(v, false));
      return;
    }
    if (parent.merge_key) {
      if (kind == kMapNode) {
        MergeInto(v.as_map(), &parent.map);
      } else if (kind == kSeqNode) {
        // Earlier maps take precedence, so they are applied last.
        const ValueList& list = v.as_list();
        for (size_t i = list.size(); i-- > 0;) {
          if (list[i].kind() == Kind::kMap) MergeInto(list[i].as_map(), &parent.map);
        }
      } else {
        Fail(kDecode, kWantMap);
      }
      return;
    }
    parent.map.insert_or_assign(std::move(parent.key), std::move(v));
  }

  // The errors ScalarValue would report, without building the value.
  void CheckScalar(const ScalarText& st) {
    GoScalar s = Resolve(st);
    if (s.kind == GoScalar::kFloat && (std::isnan(s.f) || std::isinf(s.f))) {
      Fail(kJson, std::string("json: unsupported value: ") + (std::isnan(s.f) ? "NaN" : s.f > 0 ? "+Inf" : "-Inf"));
    }
  }

  static void MergeInto(const ValueMap& from, ValueMap* to) {
    for (const auto& [k, v] : from) (*to)[k] = v;
  }

  void Count(size_t n) {
    count_ += n;
    if (count_ > kMaxNodes) Fail(kDecode, "yaml: document contains excessive aliasing");
  }

  // The Go value of a scalar, before JSON.
  GoScalar Resolve(const ScalarText& st) {
    binary_ok_ = false;
    if (st.plain) return st.tag == "!" ? GoScalar{} : ResolveGoYamlPlain(st.text);
    std::string_view tag = st.tag;
    if (tag.empty() || tag == "!" || tag == "tag:yaml.org,2002:str") return GoScalar{};
    if (tag == "tag:yaml.org,2002:binary") {
      Result<std::string> decoded = Base64Decode(st.text);
      if (!decoded.ok()) {
        Fail(kDecode, "yaml: !!binary value contains invalid base64 data");
        return GoScalar{};
      }
      binary_ = std::move(decoded).value();
      binary_ok_ = true;
      return GoScalar{};
    }
    std::string_view want;
    if (tag == "tag:yaml.org,2002:int") want = "!!int";
    if (tag == "tag:yaml.org,2002:float") want = "!!float";
    if (tag == "tag:yaml.org,2002:bool") want = "!!bool";
    if (tag == "tag:yaml.org,2002:null") want = "!!null";
    if (want.empty()) return GoScalar{};  // other tags (timestamp, custom): the text, as a string
    GoScalar r = ResolveGoYamlPlain(st.text);
    std::string_view got = GoScalarTag(r);
    if (got == want) return r;
    if (want == "!!float" && (r.kind == GoScalar::kInt || r.kind == GoScalar::kUint)) {
      r.f = r.kind == GoScalar::kInt ? static_cast<double>(r.i) : static_cast<double>(r.u);
      r.kind = GoScalar::kFloat;
      return r;
    }
    Fail(kDecode, "yaml: cannot decode " + std::string(got) + " `" + std::string(st.text) + "` as a " + ShortTag(tag));
    return GoScalar{};
  }

  Value ScalarValue(const ScalarText& st) {
    GoScalar s = Resolve(st);
    if (s.kind == GoScalar::kFloat && (std::isnan(s.f) || std::isinf(s.f))) {
      Fail(kJson, std::string("json: unsupported value: ") + (std::isnan(s.f) ? "NaN" : s.f > 0 ? "+Inf" : "-Inf"));
    }
    Value v;
    if (NonStringValue(s, &v)) return v;
    if (binary_ok_) return Value::String(SanitizeUtf8(binary_));
    return Value::String(std::string(st.text));
  }

  // sigs.k8s.io/yaml's spelling of a decoded key; `key_error` receives the
  // start of its message for a key JSON cannot have (the value follows).
  void KeyString(const ScalarText& st, std::string* out, std::string* key_error) {
    GoScalar s = Resolve(st);
    switch (s.kind) {
      case GoScalar::kString:
        *out = binary_ok_ ? binary_ : std::string(st.text);
        return;
      case GoScalar::kInt:
        *out = std::to_string(s.i);
        return;
      case GoScalar::kFloat:
        *out = FormatFloat32(s.f);
        return;
      case GoScalar::kBool:
        *out = s.b ? "true" : "false";
        return;
      case GoScalar::kUint: {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(s.u));
        *key_error = std::string("Unsupported map key of type: uint64, key: 0x") + buf;
        return;
      }
      case GoScalar::kNull:
        break;
    }
    *key_error = "Unsupported map key of type: %!s(<nil>), key: <nil>";
  }

  // Go's %#v of a decoded value (%+#v prints the same here); `nested`: inside
  // a container, where a nil interface prints as "interface {}(nil)".
  static std::string GoSharpV(const Value& v, bool nested) {
    switch (v.kind()) {
      case Kind::kBool:
        return v.as_bool() ? "true" : "false";
      case Kind::kFloat64:
        return FormatFloat(v.as_float(), 'g', -1);
      case Kind::kString:
        return Quote(v.as_string());
      case Kind::kSlice: {
        std::string out = "[]interface {}{";
        for (size_t i = 0; i < v.as_list().size(); ++i) out += (i ? ", " : "") + GoSharpV(v.as_list()[i], true);
        return out + "}";
      }
      case Kind::kMap: {
        std::string out = "map[interface {}]interface {}{";
        bool first = true;
        for (const auto& [k, x] : v.as_map()) {
          out += (first ? "" : ", ") + Quote(k) + ":" + GoSharpV(x, true);
          first = false;
        }
        return out + "}";
      }
      default:
        return nested ? "interface {}(nil)" : "<nil>";
    }
  }

  static constexpr const char* kWantMap = "yaml: map merge requires map or sequence of maps as the value";

  const std::vector<std::string_view>* keep_ = nullptr;
  std::vector<Frame> stack_;
  std::map<std::string, Anchored, std::less<>> anchors_;
  std::string errors_[3];
  Value root_;
  bool has_root_ = false;
  size_t count_ = 0;
  std::string binary_;
  bool binary_ok_ = false;
};

std::string_view JsonKind(const Value& v) {
  switch (v.kind()) {
    case Kind::kMap:
      return "object";
    case Kind::kSlice:
      return "array";
    case Kind::kBool:
      return "bool";
    case Kind::kString:
      return "string";
    default:
      return "number";
  }
}

}  // namespace

Value ResolveYamlScalar(std::string_view plain) {
  Value v;
  if (NonStringValue(ResolveGoYamlPlain(plain), &v)) return v;
  return Value::String(std::string(plain));
}

Result<Value> DecodeYaml(std::string_view text, YamlTarget target, std::string_view go_type) {
  Builder builder;
  ECO_ASSIGN_OR_RETURN(Value v, builder.Run(text));
  if (target == YamlTarget::kAny || v.is_nil()) return v;
  bool ok = target == YamlTarget::kMap ? v.kind() == Kind::kMap : v.kind() == Kind::kSlice;
  if (ok) return v;
  std::string type(go_type.empty() ? (target == YamlTarget::kMap ? "map[string]interface {}" : "[]interface {}")
                                   : go_type);
  return Invalid("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal " + std::string(JsonKind(v)) +
                 " into Go value of type " + type);
}

Result<Value> DecodeYamlTopKeys(std::string_view text, const std::vector<std::string_view>& keep) {
  Builder builder(&keep);
  Result<Value> r = builder.Run(text);
  if (builder.restart) return DecodeYaml(text);
  return r;
}

void AddYamlInFuncs(FuncMap* f) {
  (*f)["fromYaml"] = Function{{ArgType::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    Result<Value> r = DecodeYaml(a[0].as_string(), YamlTarget::kMap);
    if (!r.ok()) {
      ValueMap m;
      m.emplace("Error", Value::String(r.status().message()));
      return Value::Map(std::move(m));
    }
    if (r->is_nil()) return Value::Map({});
    return std::move(r).value();
  }};
  (*f)["fromYamlArray"] = Function{{ArgType::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    Result<Value> r = DecodeYaml(a[0].as_string(), YamlTarget::kList);
    if (!r.ok()) return Value::Slice({Value::String(r.status().message())});
    if (r->is_nil()) return Value::Slice({});
    return std::move(r).value();
  }};
}

}  // namespace eco::helm
