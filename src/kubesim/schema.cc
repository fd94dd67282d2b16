#include "kubesim/schema.h"

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <type_traits>

#include "common/json_fields.h"

namespace eco::kubesim {

namespace {

constexpr const char* kTable =
#include "kubesim/schemas.inc"
    ;

// A field's type, as the table writes it (see scripts/kubesim_schemas.py).
struct Def;

struct Type {
  enum Kind { kScalar, kOpaque, kStruct, kList, kMap } kind = kScalar;
  const Def* def = nullptr;       // kStruct
  std::unique_ptr<Type> elem;     // kList, kMap
  std::vector<std::string> keys;  // kList keyed by these fields
  bool set = false;               // kList of scalars, identified by value
};

struct Def {
  std::string name;
  std::map<std::string, Type, std::less<>> fields;
  // x-kubernetes-preserve-unknown-fields: other fields are kept as they are.
  bool preserve_unknown = false;
};

}  // namespace

class KindSchema {
 public:
  const Def* def = nullptr;
  std::deque<Def> owned;  // a custom resource's definitions (a deque: `def` pointers stay valid)
};

namespace {

struct Table {
  std::deque<Def> defs;  // a deque: types point at definitions
  std::map<std::string, int, std::less<>> def_index;
  std::map<std::string, KindSchema, std::less<>> kinds;  // "apps/v1 Deployment"
  bool ok = false;
};

// Parses one TYPE of the table; false on a malformed one.
bool ParseType(std::string_view text, const Table& t, Type& out) {
  if (text.empty()) return false;
  switch (text[0]) {
    case 's':
    case 'i':
    case 'n':
    case 'b':
    case 't':
      out.kind = Type::kScalar;
      return text.size() == 1;
    case 'x':
      out.kind = Type::kOpaque;
      return text.size() == 1;
    case '@': {
      auto it = t.def_index.find(text.substr(1));
      if (it == t.def_index.end()) return false;
      out.kind = Type::kStruct;
      out.def = &t.defs[it->second];
      return true;
    }
    case '{':
      out.kind = Type::kMap;
      out.elem = std::make_unique<Type>();
      return ParseType(text.substr(1), t, *out.elem);
    case '[': {
      out.kind = Type::kList;
      out.elem = std::make_unique<Type>();
      std::string_view rest = text.substr(1);
      size_t slash = rest.find('/');
      if (slash != std::string_view::npos) {
        std::string_view how = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
        if (how == "set") {
          out.set = true;
        } else {
          size_t i = 0;
          while (i <= how.size()) {
            size_t comma = how.find(',', i);
            if (comma == std::string_view::npos) comma = how.size();
            if (comma == i) return false;
            out.keys.emplace_back(how.substr(i, comma - i));
            i = comma + 1;
          }
        }
      }
      return ParseType(rest, t, *out.elem);
    }
    default:
      return false;
  }
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool Parse(Table& t) {
  std::vector<std::string_view> lines;
  std::string_view all(kTable);
  for (size_t i = 0; i < all.size();) {
    size_t nl = all.find('\n', i);
    if (nl == std::string_view::npos) nl = all.size();
    if (nl > i) lines.push_back(all.substr(i, nl - i));
    i = nl + 1;
  }
  // Names first: definitions refer to each other in any order.
  for (std::string_view line : lines) {
    auto w = Words(line);
    if (w.size() >= 2 && w[0] == "def") {
      t.def_index.emplace(std::string(w[1]), static_cast<int>(t.defs.size()));
      t.defs.emplace_back().name = std::string(w[1]);
    }
  }
  for (std::string_view line : lines) {
    auto w = Words(line);
    if (w.empty()) continue;
    if (w[0] == "kind") {
      if (w.size() != 4) return false;
      auto it = t.def_index.find(w[3]);
      if (it == t.def_index.end()) return false;
      t.kinds[std::string(w[1]) + " " + std::string(w[2])].def = &t.defs[it->second];
    } else if (w[0] == "def") {
      Def& d = t.defs[t.def_index.find(w[1])->second];
      for (size_t i = 2; i < w.size(); ++i) {
        if (w[i][0] == '!') continue;  // flags (!atomic) matter to field ownership, not here
        size_t colon = w[i].find(':');
        if (colon == std::string_view::npos) return false;
        Type type;
        if (!ParseType(w[i].substr(colon + 1), t, type)) return false;
        d.fields.emplace(std::string(w[i].substr(0, colon)), std::move(type));
      }
    } else {
      return false;
    }
  }
  return !t.kinds.empty();
}

const Table& GetTable() {
  // Filled in place: types point into it.
  static Table table;
  static const bool parsed = [] {
    table.ok = Parse(table);
    if (!table.ok) std::fprintf(stderr, "kube-sim: the compiled-in schema table is malformed\n");
    return true;
  }();
  (void)parsed;
  return table;
}

// JSON text of a list key's value, as structured-merge-diff prints it.
std::string KeyValueText(const Json& v) { return v.dump(); }

// The two paths of the field being walked.
struct Paths {
  std::string apply;
  std::string decode;
};

// The path element of list item i in server-side apply's notation.
std::string ApplyElement(const Type& list, const Json& item, size_t i) {
  if (!list.keys.empty() && item.is_object()) {
    // Keys print sorted by name; a missing protocol takes its default.
    std::map<std::string, std::string> parts;
    for (const auto& k : list.keys) {
      auto it = item.find(k);
      if (it != item.end())
        parts[k] = KeyValueText(*it);
      else if (k == "protocol")
        parts[k] = "\"TCP\"";
      else
        return "[" + std::to_string(i) + "]";
    }
    std::string s = "[";
    bool first = true;
    for (const auto& [k, v] : parts) {
      if (!first) s += ",";
      first = false;
      s += k + "=" + v;
    }
    return s + "]";
  }
  if (list.set && !item.is_object() && !item.is_array()) return "[=" + KeyValueText(item) + "]";
  return "[" + std::to_string(i) + "]";
}

// Walks value against type, reporting the undeclared fields into out (when
// set); a mutable value also loses them.
template <typename J>
void Walk(const Type& type, J& value, Paths& path, std::vector<UnknownField>* out) {
  constexpr bool drop = !std::is_const_v<J>;
  switch (type.kind) {
    case Type::kScalar:
    case Type::kOpaque:
      return;
    case Type::kStruct: {
      if (!value.is_object()) return;
      const Def& d = *type.def;
      for (auto it = value.begin(); it != value.end();) {
        auto f = d.fields.find(it.key());
        if (f == d.fields.end() && d.preserve_unknown) {
          ++it;
          continue;
        }
        size_t apply_len = path.apply.size(), decode_len = path.decode.size();
        path.apply += "." + it.key();
        if (!path.decode.empty()) path.decode += ".";
        path.decode += it.key();
        if (f == d.fields.end()) {
          if (out) out->push_back(UnknownField{path.apply, path.decode});
          path.apply.resize(apply_len);
          path.decode.resize(decode_len);
          if constexpr (drop) {
            it = value.erase(it);
          } else {
            ++it;
          }
          continue;
        }
        Walk(f->second, it.value(), path, out);
        path.apply.resize(apply_len);
        path.decode.resize(decode_len);
        ++it;
      }
      return;
    }
    case Type::kMap: {
      if (!value.is_object()) return;
      for (auto it = value.begin(); it != value.end(); ++it) {
        size_t apply_len = path.apply.size(), decode_len = path.decode.size();
        path.apply += "." + it.key();
        if (!path.decode.empty()) path.decode += ".";
        path.decode += it.key();
        Walk(*type.elem, it.value(), path, out);
        path.apply.resize(apply_len);
        path.decode.resize(decode_len);
      }
      return;
    }
    case Type::kList: {
      if (!value.is_array()) return;
      for (size_t i = 0; i < value.size(); ++i) {
        size_t apply_len = path.apply.size(), decode_len = path.decode.size();
        path.apply += ApplyElement(type, value[i], i);
        path.decode += "[" + std::to_string(i) + "]";
        Walk(*type.elem, value[i], path, out);
        path.apply.resize(apply_len);
        path.decode.resize(decode_len);
      }
      return;
    }
  }
}

// A custom resource's schema node (openAPIV3Schema, structural) as a type;
// new object definitions go into ks.
void FromCrdNode(const Json& node, KindSchema& ks, Type& out, bool resource_root);

// A schema's boolean extension; a CRD is stored unvalidated, so any shape may come.
bool Flag(const Json& node, const char* key) {
  auto it = node.find(key);
  return it != node.end() && it->is_boolean() && it->get<bool>();
}

// An object node: its properties, and apiVersion/kind/metadata where a
// resource sits (the root, x-kubernetes-embedded-resource).
const Def* CrdObject(const Json& node, KindSchema& ks, bool resource) {
  Def& d = ks.owned.emplace_back();
  d.preserve_unknown = Flag(node, "x-kubernetes-preserve-unknown-fields");
  if (auto props = node.find("properties"); props != node.end() && props->is_object()) {
    for (const auto& [name, sub] : props->items()) FromCrdNode(sub, ks, d.fields[name], false);
  }
  if (resource) {
    d.fields["apiVersion"].kind = Type::kScalar;
    d.fields["kind"].kind = Type::kScalar;
    Type& meta = d.fields["metadata"];
    const Table& t = GetTable();
    if (auto it = t.def_index.find("meta.v1.ObjectMeta"); it != t.def_index.end()) {
      meta = Type{};
      meta.kind = Type::kStruct;
      meta.def = &t.defs[it->second];
    }
  }
  return &d;
}

void FromCrdNode(const Json& node, KindSchema& ks, Type& out, bool resource_root) {
  out.kind = Type::kOpaque;
  if (!node.is_object()) return;
  const std::string type = StringField(node, "type");
  const bool embedded = Flag(node, "x-kubernetes-embedded-resource");
  const bool preserve = Flag(node, "x-kubernetes-preserve-unknown-fields");
  if (Flag(node, "x-kubernetes-int-or-string")) {
    out.kind = Type::kScalar;
  } else if (type == "array") {
    out.kind = Type::kList;
    out.elem = std::make_unique<Type>();
    FromCrdNode(node.value("items", Json()), ks, *out.elem, false);
    const std::string list_type = StringField(node, "x-kubernetes-list-type");
    if (list_type == "set") out.set = true;
    const Json& keys = node.value("x-kubernetes-list-map-keys", Json::array());
    if (list_type == "map" && keys.is_array()) {
      for (const auto& k : keys) {
        if (k.is_string()) out.keys.push_back(k.get<std::string>());
      }
    }
  } else if (resource_root || embedded || node.contains("properties")) {
    out.kind = Type::kStruct;
    out.def = CrdObject(node, ks, resource_root || embedded);
  } else if (preserve) {
    // Anything beneath is kept.
  } else if (type == "object") {
    const Json& more = node.value("additionalProperties", Json());
    if (more.is_object()) {
      out.kind = Type::kMap;
      out.elem = std::make_unique<Type>();
      FromCrdNode(more, ks, *out.elem, false);
    } else if (!more.is_boolean()) {
      // An object declaring no field: pruning removes whatever it holds.
      out.kind = Type::kStruct;
      out.def = CrdObject(node, ks, false);
    }
  } else if (!type.empty()) {
    out.kind = Type::kScalar;
  }
}

}  // namespace

std::shared_ptr<const KindSchema> CrdKindSchema(const Json& open_api_v3_schema) {
  auto ks = std::make_shared<KindSchema>();
  Type root;
  FromCrdNode(open_api_v3_schema, *ks, root, true);
  ks->def = root.def;
  return ks;
}

bool LoadSchemas() { return GetTable().ok; }

const KindSchema* FindKindSchema(std::string_view api_version, std::string_view kind) {
  const Table& t = GetTable();
  std::string key;
  key.reserve(api_version.size() + kind.size() + 1);
  key.append(api_version).append(" ").append(kind);
  auto it = t.kinds.find(key);
  return it == t.kinds.end() ? nullptr : &it->second;
}

std::vector<UnknownField> UnknownFields(const KindSchema& schema, const Json& obj) {
  std::vector<UnknownField> out;
  Type root;
  root.kind = Type::kStruct;
  root.def = schema.def;
  Paths path;
  Walk(root, obj, path, &out);
  return out;
}

void DropUnknownFields(const KindSchema& schema, Json& obj) {
  Type root;
  root.kind = Type::kStruct;
  root.def = schema.def;
  Paths path;
  Walk(root, obj, path, nullptr);
}

}  // namespace eco::kubesim
