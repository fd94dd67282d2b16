// Server-side apply and managedFields bookkeeping, after the model of
// structured-merge-diff: a manager owns a set of field paths; apply merges
// the applied configuration, prunes what the manager stopped applying, and
// reports conflicts with other owners of fields whose value it changes.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "kubesim/patch.h"

namespace eco::kubesim {

namespace {

// A set of field paths in the shape of fieldsV1: each child is keyed by its
// path element ("f:name", "k:{...}", "v:...") and `member` says the path
// itself is in the set (the "." of fieldsV1, or a leaf).
struct FieldSet {
  bool member = false;
  std::map<std::string, FieldSet, std::less<>> children;

  bool Empty() const { return !member && children.empty(); }
  bool operator==(const FieldSet& o) const { return member == o.member && children == o.children; }
};

void Union(FieldSet& a, const FieldSet& b) {
  a.member = a.member || b.member;
  for (const auto& [pe, child] : b.children) Union(a.children[pe], child);
}

// Removes b's paths from a, dropping nodes left empty.
void Subtract(FieldSet& a, const FieldSet& b) {
  if (b.member) a.member = false;
  for (const auto& [pe, bchild] : b.children) {
    auto it = a.children.find(pe);
    if (it == a.children.end()) continue;
    Subtract(it->second, bchild);
    if (it->second.Empty()) a.children.erase(it);
  }
}

FieldSet Intersect(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && b.member;
  for (const auto& [pe, achild] : a.children) {
    auto it = b.children.find(pe);
    if (it == b.children.end()) continue;
    FieldSet c = Intersect(achild, it->second);
    if (!c.Empty()) out.children.emplace(pe, std::move(c));
  }
  return out;
}

FieldSet FromFieldsV1(const Json& j) {
  FieldSet s;
  if (!j.is_object()) return s;
  for (const auto& [k, v] : j.items()) {
    if (k == ".") {
      s.member = true;
      continue;
    }
    FieldSet child = FromFieldsV1(v);
    // A path element with no children is a leaf: the path is a member.
    if (child.children.empty()) child.member = true;
    s.children.emplace(k, std::move(child));
  }
  return s;
}

Json ToFieldsV1(const FieldSet& s) {
  Json j = Json::object();
  for (const auto& [pe, child] : s.children) {
    if (child.children.empty()) {
      j.emplace(pe, Json::object());
      continue;
    }
    Json c = ToFieldsV1(child);
    if (child.member) c.emplace(".", Json::object());
    j.emplace(pe, std::move(c));
  }
  return j;
}

// ---------------------------------------------------------------------------
// Paths and list identity

enum class Level { kTop, kMetadata, kOther };

Level ChildLevel(Level level, std::string_view key) {
  return level == Level::kTop && key == "metadata" ? Level::kMetadata : Level::kOther;
}

// Fields the API server never records an owner for.
bool Unowned(Level level, std::string_view key) {
  if (level == Level::kTop) return key == "apiVersion" || key == "kind";
  if (level == Level::kMetadata) {
    return key == "name" || key == "namespace" || key == "uid" || key == "resourceVersion" ||
           key == "generation" || key == "creationTimestamp" || key == "managedFields" ||
           key == "selfLink" || key == "clusterName";
  }
  return false;
}

std::string FieldElement(std::string_view key) {
  std::string s;
  s.reserve(key.size() + 2);
  s += "f:";
  s += key;
  return s;
}

// Appends value as compact JSON; plain strings skip the serializer.
void AppendJson(std::string& out, const Json& value) {
  if (value.is_string()) {
    const std::string& str = value.get_ref<const std::string&>();
    bool plain = std::all_of(str.begin(), str.end(), [](char c) {
      return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    });
    if (plain) {
      out += '"';
      out += str;
      out += '"';
      return;
    }
  }
  out += value.dump();
}

// Merge key names are plain identifiers, so they need no escaping.
std::string KeyElement(const char* key, const Json& value) {
  std::string s;
  s.reserve(32);
  s += "k:{\"";
  s += key;
  s += "\":";
  AppendJson(s, value);
  s += '}';
  return s;
}

std::string ValueElement(const Json& value) {
  std::string s = "v:";
  AppendJson(s, value);
  return s;
}

// Whether a keyed list can merge by key: objects, each with a distinct key.
// Live lists that do not (written by a plain update) are treated as atomic.
// Lists are short: quadratic scans beat hashing serialized keys.
bool KeyedUsable(const Json& list, const char* key) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    if (!e.is_object()) return false;
    auto it = e.find(key);
    if (it == e.end()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (list[j].at(key) == *it) return false;
    }
  }
  return true;
}

bool SetUsable(const Json& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_object() || list[i].is_array()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (list[j] == list[i]) return false;
    }
  }
  return true;
}

// The identity of a list item: its merge key's value, or itself in a set.
const Json& ItemId(const Json& item, const char* key) {
  return key != nullptr ? item.at(key) : item;
}

// The position in list of the item whose identity is id, or npos.
size_t FindItem(const Json& list, const char* key, const Json& id) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (ItemId(list[i], key) == id) return i;
  }
  return std::string::npos;
}

// The effective list type of two lists being merged or compared.
ListType UsableListType(std::string_view field, const Json& a, const Json& b) {
  ListType lt = ListTypeOf(field, a, b);
  if (lt.kind == ListType::kKeyed) {
    if (!(a.is_array() ? KeyedUsable(a, lt.key) : true) ||
        !(b.is_array() ? KeyedUsable(b, lt.key) : true)) {
      return {};
    }
  } else if (lt.kind == ListType::kSet) {
    if (!(a.is_array() ? SetUsable(a) : true) || !(b.is_array() ? SetUsable(b) : true)) return {};
  }
  return lt;
}

// Maps Kubernetes declares atomic (label selectors): owned and replaced whole.
bool AtomicMap(std::string_view field) {
  return field == "selector" || field == "podSelector" || field == "namespaceSelector" ||
         field == "labelSelector";
}

// Go's %q for the values that appear in keys, close enough for conflict messages.
std::string ValueText(const Json& v) { return v.dump(); }

// ".spec.template.spec.containers[name=\"web\"].image", as Kubernetes prints paths.
std::string ElementText(const std::string& pe) {
  if (pe.size() < 2) return pe;
  std::string_view body(pe);
  body.remove_prefix(2);
  switch (pe[0]) {
    case 'f':
      return "." + std::string(body);
    case 'k': {
      Json key = Json::parse(body, nullptr, false);
      std::string s = "[";
      bool first = true;
      if (key.is_object()) {
        for (const auto& [k, v] : key.items()) {
          if (!first) s += ',';
          first = false;
          s += k + "=" + ValueText(v);
        }
      }
      return s + "]";
    }
    case 'v': {
      Json v = Json::parse(body, nullptr, false);
      return "[=" + ValueText(v) + "]";
    }
    case 'i':
      return "[" + std::string(body) + "]";
    default:
      return pe;
  }
}

// Members before children at each level, both in element order, as
// structured-merge-diff iterates a set.
void ForEachPath(const FieldSet& s, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [pe, child] : s.children) {
    if (child.member) out.push_back(prefix + ElementText(pe));
  }
  for (const auto& [pe, child] : s.children) {
    if (!child.children.empty()) ForEachPath(child, prefix + ElementText(pe), out);
  }
}

// ---------------------------------------------------------------------------
// The field set of an applied configuration

// The path being walked, rendered only for an error message.
struct PathChain {
  const PathChain* parent;
  std::string_view field;  // ".name" step when element is empty
  std::string_view element;

  std::string Text() const {
    std::string s = parent != nullptr ? parent->Text() : std::string();
    if (!element.empty()) return s + ElementText(std::string(element));
    if (!field.empty()) s += "." + std::string(field);
    return s;
  }
};

Status AddFields(const Json& obj, FieldSet& set, Level level, const PathChain* path);

Status AddValue(const Json& v, std::string_view field, FieldSet& node, Level level,
                const PathChain* path) {
  if (v.is_object() && !AtomicMap(field)) return AddFields(v, node, level, path);
  if (!v.is_array()) {
    node.member = true;
    return Status::Ok();
  }
  ListType lt = ListTypeOf(field, v, Json());
  if (lt.kind == ListType::kAtomic) {
    node.member = true;
    return Status::Ok();
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& e = v[i];
    std::string pe;
    if (lt.kind == ListType::kKeyed) {
      auto key_it = e.is_object() ? e.find(lt.key) : e.end();
      if (!e.is_object() || key_it == e.end()) {
        return Invalid(path->Text() + ": element " + std::to_string(i) +
                       ": associative list with keys has an element that omits key field \"" +
                       lt.key + "\"");
      }
      pe = KeyElement(lt.key, *key_it);
    } else {
      if (e.is_object() || e.is_array()) {
        return Invalid(path->Text() + ": element " + std::to_string(i) +
                       ": expected a scalar in a set");
      }
      pe = ValueElement(e);
    }
    auto [it, inserted] = node.children.try_emplace(std::move(pe));
    if (!inserted)
      return Invalid(path->Text() + ": duplicate entries for key " + ElementText(it->first));
    it->second.member = true;
    if (lt.kind == ListType::kKeyed) {
      PathChain item{path, {}, it->first};
      ECO_RETURN_IF_ERROR(AddFields(e, it->second, Level::kOther, &item));
    }
  }
  return Status::Ok();
}

Status AddFields(const Json& obj, FieldSet& set, Level level, const PathChain* path) {
  for (const auto& [k, v] : obj.items()) {
    if (Unowned(level, k)) continue;
    FieldSet child;
    PathChain step{path, k, {}};
    ECO_RETURN_IF_ERROR(AddValue(v, k, child, ChildLevel(level, k), &step));
    if (!child.Empty()) set.children.emplace(FieldElement(k), std::move(child));
  }
  return Status::Ok();
}

// Every path of a newly added value: itself and all it contains.
void AddAll(const Json& v, std::string_view field, FieldSet& node, Level level) {
  node.member = level != Level::kMetadata;  // metadata itself is never owned
  if (v.is_object() && !AtomicMap(field)) {
    for (const auto& [k, child] : v.items()) {
      if (Unowned(level, k)) continue;
      AddAll(child, k, node.children[FieldElement(k)], ChildLevel(level, k));
    }
    return;
  }
  if (!v.is_array()) return;
  ListType lt = UsableListType(field, v, Json());
  if (lt.kind == ListType::kKeyed) {
    for (const Json& e : v) {
      FieldSet& c = node.children[KeyElement(lt.key, e.at(lt.key))];
      c.member = true;
      for (const auto& [k, child] : e.items())
        AddAll(child, k, c.children[FieldElement(k)], Level::kOther);
    }
  } else if (lt.kind == ListType::kSet) {
    for (const Json& e : v) node.children[ValueElement(e)].member = true;
  }
}

// ---------------------------------------------------------------------------
// Comparison: the paths added or modified from a to b, and those removed.

void CompareMaps(const Json& a, const Json& b, FieldSet& changed, FieldSet* removed, Level level);

void CompareValues(const Json& a, const Json& b, std::string_view field, FieldSet& changed,
                   FieldSet* removed, Level level) {
  if (a.is_object() && b.is_object() && !AtomicMap(field)) {
    CompareMaps(a, b, changed, removed, level);
    return;
  }
  if (a.is_array() && b.is_array()) {
    ListType lt = UsableListType(field, a, b);
    if (lt.kind != ListType::kAtomic) {
      const char* key = lt.kind == ListType::kKeyed ? lt.key : nullptr;
      auto element = [key](const Json& e) {
        return key != nullptr ? KeyElement(key, e.at(key)) : ValueElement(e);
      };
      for (const Json& e : b) {
        size_t pos = FindItem(a, key, ItemId(e, key));
        if (pos == std::string::npos) {
          FieldSet& c = changed.children[element(e)];
          c.member = true;
          if (key != nullptr) {
            for (const auto& [k, child] : e.items())
              AddAll(child, k, c.children[FieldElement(k)], Level::kOther);
          }
        } else if (key != nullptr && a[pos] != e) {
          FieldSet c;
          FieldSet r;
          CompareMaps(a[pos], e, c, removed ? &r : nullptr, Level::kOther);
          if (!c.Empty()) changed.children.emplace(element(e), std::move(c));
          if (!r.Empty()) removed->children.emplace(element(e), std::move(r));
        }
      }
      if (removed) {
        for (const Json& e : a) {
          if (FindItem(b, key, ItemId(e, key)) != std::string::npos) continue;
          FieldSet& c = removed->children[element(e)];
          c.member = true;
          if (key != nullptr) {
            for (const auto& [k, child] : e.items())
              AddAll(child, k, c.children[FieldElement(k)], Level::kOther);
          }
        }
      }
      return;
    }
  }
  if (a != b) changed.member = true;
}

void CompareMaps(const Json& a, const Json& b, FieldSet& changed, FieldSet* removed, Level level) {
  for (const auto& [k, bv] : b.items()) {
    if (Unowned(level, k)) continue;
    auto it = a.find(k);
    if (it == a.end()) {
      AddAll(bv, k, changed.children[FieldElement(k)], ChildLevel(level, k));
      continue;
    }
    if (*it == bv) continue;
    FieldSet c;
    FieldSet r;
    CompareValues(*it, bv, k, c, removed ? &r : nullptr, ChildLevel(level, k));
    if (!c.Empty()) changed.children.emplace(FieldElement(k), std::move(c));
    if (!r.Empty()) removed->children.emplace(FieldElement(k), std::move(r));
  }
  if (removed) {
    for (const auto& [k, av] : a.items()) {
      if (Unowned(level, k) || b.contains(k)) continue;
      AddAll(av, k, removed->children[FieldElement(k)], ChildLevel(level, k));
    }
  }
}

// Whether a and b are the same object, managedFields aside.
bool SameObject(const Json& a, const Json& b) {
  if (!a.is_object() || !b.is_object()) return a == b;
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia.key() != ib.key()) return false;
    if (ia.key() != "metadata" || !ia->is_object() || !ib->is_object()) {
      if (*ia != *ib) return false;
      continue;
    }
    // Compare metadata skipping managedFields on both sides.
    auto ma = ia->begin(), mb = ib->begin();
    while (true) {
      while (ma != ia->end() && ma.key() == "managedFields") ++ma;
      while (mb != ib->end() && mb.key() == "managedFields") ++mb;
      if (ma == ia->end() || mb == ib->end()) {
        if (ma != ia->end() || mb != ib->end()) return false;
        break;
      }
      if (ma.key() != mb.key() || *ma != *mb) return false;
      ++ma;
      ++mb;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Merging an applied configuration into the live object

// The merges return whether they changed dst.
bool MergeValue(Json& dst, const Json& src, std::string_view field);

bool MergeMap(Json& dst, const Json& src) {
  bool changed = false;
  for (const auto& [k, v] : src.items()) {
    auto it = dst.find(k);
    if (it == dst.end()) {
      dst.emplace(k, v);
      changed = true;
    } else {
      changed |= MergeValue(*it, v, k);
    }
  }
  return changed;
}

// Merges two lists of identified items (key: the merge key, or null for a
// set) the way structured-merge-diff does: live-only items keep their place,
// applied items keep their order and merge into their live counterparts.
bool MergeList(Json& lhs, const Json& rhs, const char* key) {
  constexpr size_t npos = std::string::npos;
  const size_t nl = lhs.size(), nr = rhs.size();
  // Common case: every applied item is live already, in the same order.
  {
    size_t prev = 0;
    bool in_place = true;
    std::vector<size_t> pos(nr);
    for (size_t r = 0; r < nr && in_place; ++r) {
      pos[r] = FindItem(lhs, key, ItemId(rhs[r], key));
      in_place = pos[r] != npos && (r == 0 || pos[r] > prev);
      prev = pos[r];
    }
    if (in_place) {
      bool changed = false;
      if (key != nullptr) {
        for (size_t r = 0; r < nr; ++r) changed |= MergeMap(lhs[pos[r]], rhs[r]);
      }
      return changed;
    }
  }
  std::vector<size_t> l_to_r(nl, npos), r_to_l(nr, npos);
  for (size_t i = 0; i < nl; ++i) {
    l_to_r[i] = FindItem(rhs, key, ItemId(lhs[i], key));
    if (l_to_r[i] != npos) r_to_l[l_to_r[i]] = i;
  }
  std::vector<size_t> shared;  // rhs positions of items also in lhs, in rhs order
  for (size_t r = 0; r < nr; ++r) {
    if (r_to_l[r] != npos) shared.push_back(r);
  }
  size_t next_shared = 0;
  std::vector<bool> merged_r(nr, false);
  auto take = [&](size_t l, size_t r) -> Json {
    merged_r[r] = true;
    if (next_shared < shared.size() && shared[next_shared] == r) ++next_shared;
    if (l == npos || key == nullptr) return rhs[r];
    Json item = std::move(lhs[l]);
    MergeMap(item, rhs[r]);
    return item;
  };
  Json out = Json::array();
  out.get_ref<Json::array_t&>().reserve(nl + nr);
  size_t li = 0, ri = 0;
  while (li < nl || ri < nr) {
    if (li < nl && ri < nr) {
      if (l_to_r[li] == ri) {
        out.push_back(take(li, ri));
        ++li;
        ++ri;
        continue;
      }
      if (l_to_r[li] != npos && !merged_r[l_to_r[li]] && next_shared < shared.size() &&
          shared[next_shared] != l_to_r[li]) {
        ++li;  // a shared item, but not the next one in applied order
        continue;
      }
    }
    if (li < nl) {
      if (l_to_r[li] == npos) {
        out.push_back(std::move(lhs[li]));
        ++li;
        continue;
      }
      if (merged_r[l_to_r[li]]) {
        ++li;
        continue;
      }
    }
    if (ri < nr) {
      out.push_back(take(r_to_l[ri], ri));
      ++ri;
      continue;
    }
    ++li;
  }
  lhs = std::move(out);
  return true;
}

bool MergeValue(Json& dst, const Json& src, std::string_view field) {
  if (src.is_object() && dst.is_object() && !AtomicMap(field)) return MergeMap(dst, src);
  if (src.is_array() && dst.is_array()) {
    ListType lt = UsableListType(field, dst, src);
    if (lt.kind != ListType::kAtomic)
      return MergeList(dst, src, lt.kind == ListType::kKeyed ? lt.key : nullptr);
  }
  if (dst == src) return false;
  dst = src;
  return true;
}

// ---------------------------------------------------------------------------
// Pruning fields the applier no longer applies

void RemoveFromValue(Json& v, std::string_view field, const FieldSet& remove, const FieldSet* keep);

// True when something under `keep` is still owned, so the node must stay.
bool KeepsChildren(const FieldSet* keep) { return keep != nullptr && !keep->children.empty(); }

const FieldSet* Find(const FieldSet* s, const std::string& pe) {
  if (s == nullptr) return nullptr;
  auto it = s->children.find(pe);
  return it == s->children.end() ? nullptr : &it->second;
}

void RemoveFromMap(Json& obj, const FieldSet& remove, const FieldSet* keep) {
  for (const auto& [pe, rchild] : remove.children) {
    if (pe.compare(0, 2, "f:") != 0) continue;
    std::string key = pe.substr(2);
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    const FieldSet* kchild = Find(keep, pe);
    if (rchild.member && !KeepsChildren(kchild)) {
      obj.erase(it);
      continue;
    }
    bool was_empty = (it->is_object() || it->is_array()) && it->empty();
    RemoveFromValue(*it, key, rchild, kchild);
    // A map or list emptied by pruning goes too, as omitempty would drop it.
    if (!was_empty && (it->is_object() || it->is_array()) && it->empty()) obj.erase(it);
  }
}

void RemoveFromValue(Json& v, std::string_view field, const FieldSet& remove,
                     const FieldSet* keep) {
  if (v.is_object()) {
    RemoveFromMap(v, remove, keep);
    return;
  }
  if (!v.is_array()) return;
  ListType lt = UsableListType(field, v, Json());
  if (lt.kind == ListType::kAtomic) return;
  Json kept = Json::array();
  for (Json& e : v) {
    std::string pe =
        lt.kind == ListType::kKeyed ? KeyElement(lt.key, e.at(lt.key)) : ValueElement(e);
    const FieldSet* rchild = Find(&remove, pe);
    if (rchild != nullptr) {
      const FieldSet* kchild = Find(keep, pe);
      if (rchild->member && !KeepsChildren(kchild)) continue;
      if (e.is_object()) RemoveFromMap(e, *rchild, kchild);
    }
    kept.push_back(std::move(e));
  }
  v = std::move(kept);
}

// ---------------------------------------------------------------------------
// managedFields entries

struct Entry {
  std::string manager;
  std::string operation;
  std::string api_version;
  std::string time;
  std::string subresource;
  const Json* original = nullptr;   // the entry as read, reused when untouched
  const Json* fields_v1 = nullptr;  // its fieldsV1, parsed only when needed
  bool touched = false;             // manager, time or set changed: encode anew
  bool set_changed = false;         // fieldsV1 must be encoded anew

  FieldSet& Set() {
    if (!parsed_) {
      if (fields_v1 != nullptr) set_ = FromFieldsV1(*fields_v1);
      parsed_ = true;
    }
    return set_;
  }
  void Assign(FieldSet set) {
    set_ = std::move(set);
    parsed_ = true;
  }
  bool SetEmpty() const {
    if (parsed_) return set_.Empty();
    return fields_v1 == nullptr || !fields_v1->is_object() || fields_v1->empty();
  }

 private:
  FieldSet set_;
  bool parsed_ = false;
};

Entry NewEntry(const std::string& manager, const char* operation, const std::string& api_version,
               const std::string& now, FieldSet set) {
  Entry e;
  e.manager = manager;
  e.operation = operation;
  e.api_version = api_version;
  e.time = now;
  e.touched = e.set_changed = true;
  e.Assign(std::move(set));
  return e;
}

// Whether s is exactly the set fieldsV1 j encodes, without parsing j.
bool SameAsFieldsV1(const FieldSet& s, const Json& j) {
  if (!j.is_object()) return s.children.empty();
  size_t keys = j.size() - (j.contains(".") ? 1 : 0);
  if (keys != s.children.size()) return false;
  for (const auto& [pe, child] : s.children) {
    auto it = j.find(pe);
    if (it == j.end() || !it->is_object()) return false;
    if (child.children.empty()) {
      if (!child.member || !it->empty()) return false;
      continue;
    }
    if (child.member != it->contains(".") || !SameAsFieldsV1(child, *it)) return false;
  }
  return true;
}

std::string StringField(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Moves metadata.managedFields out of object (null when absent).
Json TakeManagedFields(Json& object) {
  if (!object.is_object()) return Json();
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return Json();
  auto mf = md->find("managedFields");
  if (mf == md->end()) return Json();
  Json taken = std::move(*mf);
  md->erase(mf);
  return taken;
}

std::vector<Entry> ReadEntries(const Json& managed_fields) {
  std::vector<Entry> entries;
  if (!managed_fields.is_array()) return entries;
  entries.reserve(managed_fields.size() + 1);
  for (size_t i = 0; i < managed_fields.size(); ++i) {
    const Json& e = managed_fields[i];
    if (!e.is_object()) continue;
    Entry entry;
    entry.manager = StringField(e, "manager");
    entry.operation = StringField(e, "operation");
    entry.api_version = StringField(e, "apiVersion");
    entry.time = StringField(e, "time");
    entry.subresource = StringField(e, "subresource");
    auto f = e.find("fieldsV1");
    if (f != e.end()) entry.fields_v1 = &*f;
    entry.original = &e;
    entries.push_back(std::move(entry));
  }
  return entries;
}

const Json& ManagedFieldsOf(const Json& object) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return kNull;
  auto mf = md->find("managedFields");
  return mf == md->end() ? kNull : *mf;
}

// A copy of object (an object or null) without metadata.managedFields,
// which the apply rebuilds anyway.
Json CopyWithoutManagedFields(const Json& object) {
  Json out = Json::object();
  if (!object.is_object()) return out;
  for (const auto& [k, v] : object.items()) {
    if (k != "metadata" || !v.is_object()) {
      out.emplace(k, v);
      continue;
    }
    Json md = Json::object();
    for (const auto& [mk, mv] : v.items()) {
      if (mk != "managedFields") md.emplace(mk, mv);
    }
    out.emplace(k, std::move(md));
  }
  return out;
}

// Whether the client sent managedFields (an empty list too, which resets them).
bool HasManagedFieldsKey(const Json& taken) { return !taken.is_null(); }

Json Encode(Entry& e) {
  if (!e.touched && e.original != nullptr) return *e.original;
  Json j = Json::object();
  j.emplace("apiVersion", e.api_version);
  j.emplace("fieldsType", "FieldsV1");
  const Json* old_fields = nullptr;
  if (!e.set_changed && e.original != nullptr) {
    auto it = e.original->find("fieldsV1");
    if (it != e.original->end()) old_fields = &*it;
  }
  j.emplace("fieldsV1", old_fields != nullptr ? *old_fields : ToFieldsV1(e.Set()));
  j.emplace("manager", e.manager);
  j.emplace("operation", e.operation);
  if (!e.subresource.empty()) j.emplace("subresource", e.subresource);
  if (!e.time.empty()) j.emplace("time", e.time);
  return j;
}

// Drops empty entries, orders the rest as the API server does (operation,
// time, manager, apiVersion, subresource) and stores them in object.
void WriteEntries(std::vector<Entry>& entries, Json& object) {
  std::vector<Entry*> kept;
  for (Entry& e : entries) {
    if (!e.SetEmpty()) kept.push_back(&e);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Entry* p, const Entry* q) {
    return std::tie(p->operation, p->time, p->manager, p->api_version, p->subresource) <
           std::tie(q->operation, q->time, q->manager, q->api_version, q->subresource);
  });
  Json list = Json::array();
  for (Entry* e : kept) list.push_back(Encode(*e));
  if (list.empty()) {
    auto md = object.find("metadata");
    if (md != object.end() && md->is_object()) md->erase("managedFields");
    return;
  }
  Json& md = object["metadata"];
  if (!md.is_object()) md = Json::object();
  md["managedFields"] = std::move(list);
}

std::string ManagerText(const Entry& e) {
  std::string s = Json(e.manager).dump();
  if (!e.subresource.empty()) s += " with subresource " + Json(e.subresource).dump();
  if (e.operation == "Update") s += " using " + e.api_version;
  return s;
}

std::string ConflictMessage(
    const std::vector<std::pair<const Entry*, std::vector<std::string>>>& conflicts) {
  size_t total = 0;
  for (const auto& c : conflicts) total += c.second.size();
  if (total == 1) {
    return "Apply failed with 1 conflict: conflict with " + ManagerText(*conflicts[0].first) +
           ": " + conflicts[0].second[0];
  }
  auto sorted = conflicts;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->manager, a.first->operation, a.first->api_version) <
           std::tie(b.first->manager, b.first->operation, b.first->api_version);
  });
  std::string msg = "Apply failed with " + std::to_string(total) + " conflicts: ";
  bool first = true;
  for (const auto& [entry, paths] : sorted) {
    if (!first) msg += '\n';
    first = false;
    msg += "conflicts with " + ManagerText(*entry) + ":";
    for (const std::string& p : paths) msg += "\n- " + p;
  }
  return msg;
}

// The object a create is compared against: top-level maps exist but are
// empty, as the zero value of a built-in kind's spec/status/metadata would.
Json CreateBaseline(const Json& object) {
  Json base = Json::object();
  if (!object.is_object()) return base;
  for (const auto& [k, v] : object.items()) {
    if (v.is_object()) base.emplace(k, Json::object());
  }
  return base;
}

}  // namespace

namespace {

Result<ApplyResult> Apply(const Json& live, const Json& applied, const std::string& manager,
                          bool force, const std::string& now,
                          std::vector<ApplyConflict>* conflicts_out) {
  if (!applied.is_object()) return Invalid("apply: the configuration is not a JSON object");
  if (!live.is_null() && !live.is_object())
    return Invalid("apply: the live object is not a JSON object");

  FieldSet new_set;
  ECO_RETURN_IF_ERROR(AddFields(applied, new_set, Level::kTop, nullptr));

  Json merged = CopyWithoutManagedFields(live);
  const Json& managed_fields = ManagedFieldsOf(live);
  std::vector<Entry> entries = ReadEntries(managed_fields);
  size_t mine = entries.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].manager == manager && entries[i].operation == "Apply" &&
        entries[i].subresource.empty()) {
      mine = i;
      break;
    }
  }

  bool merge_changed = MergeMap(merged, applied);
  // managedFields in an applied configuration are not part of the intent.
  if (auto md = merged.find("metadata"); md != merged.end() && md->is_object())
    md->erase("managedFields");

  // Prune what the applier owned before and no longer applies, unless another
  // manager (or the new configuration) still owns it.
  if (mine < entries.size()) {
    Entry& e = entries[mine];
    e.set_changed = e.fields_v1 == nullptr || !SameAsFieldsV1(new_set, *e.fields_v1);
  }
  std::string api_version = StringField(applied, "apiVersion");
  if (api_version.empty() && live.is_object()) api_version = StringField(live, "apiVersion");
  // Re-applying the same intent onto an object that already holds it: a no-op.
  if (!merge_changed && mine < entries.size() && !entries[mine].set_changed &&
      entries[mine].api_version == api_version) {
    if (!managed_fields.is_null()) merged["metadata"]["managedFields"] = managed_fields;
    return ApplyResult{std::move(merged), false};
  }
  if (mine < entries.size() && entries[mine].set_changed) {
    FieldSet keep = new_set;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i != mine) Union(keep, entries[i].Set());
    }
    FieldSet remove = entries[mine].Set();
    Subtract(remove, keep);
    if (!remove.Empty()) RemoveFromMap(merged, remove, &keep);
  }

  // Other managers' fields whose value this apply adds or changes conflict.
  FieldSet changed;
  CompareMaps(live.is_object() ? live : Json::object(), merged, changed, nullptr, Level::kTop);
  std::vector<std::pair<const Entry*, std::vector<std::string>>> conflicts;
  std::vector<std::pair<size_t, FieldSet>> lost;
  if (!changed.Empty()) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i == mine) continue;
      FieldSet c = Intersect(entries[i].Set(), changed);
      if (c.Empty()) continue;
      std::vector<std::string> paths;
      ForEachPath(c, "", paths);
      conflicts.emplace_back(&entries[i], std::move(paths));
      lost.emplace_back(i, std::move(c));
    }
  }
  if (!conflicts.empty() && !force) {
    if (conflicts_out != nullptr) {
      auto sorted = conflicts;
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return std::tie(a.first->manager, a.first->operation, a.first->api_version) <
               std::tie(b.first->manager, b.first->operation, b.first->api_version);
      });
      for (const auto& [entry, paths] : sorted) {
        for (const std::string& p : paths) conflicts_out->push_back(ApplyConflict{ManagerText(*entry), p});
      }
    }
    return Conflict(ConflictMessage(conflicts));
  }
  for (auto& [i, c] : lost) {
    Subtract(entries[i].Set(), c);
    entries[i].touched = entries[i].set_changed = true;
  }

  bool managers_changed = !lost.empty();
  if (mine == entries.size()) {
    entries.push_back(NewEntry(manager, "Apply", api_version, now, std::move(new_set)));
    managers_changed = true;
  } else {
    Entry& e = entries[mine];
    if (e.set_changed || e.api_version != api_version) managers_changed = true;
    e.Assign(std::move(new_set));
    e.api_version = api_version;
    e.touched = true;
  }

  bool object_changed = !live.is_object() || !SameObject(live, merged);
  if (!object_changed && !managers_changed) {
    // merged is live without its managedFields.
    if (!managed_fields.is_null()) merged["metadata"]["managedFields"] = managed_fields;
    return ApplyResult{std::move(merged), false};
  }

  // The applier's entry carries the time of its last effective apply.
  entries[mine].time = now;
  WriteEntries(entries, merged);
  return ApplyResult{std::move(merged), true};
}

}  // namespace

Result<ApplyResult> ServerSideApply(const Json& live, const Json& applied,
                                    const std::string& manager, bool force,
                                    const std::string& now,
                                    std::vector<ApplyConflict>* conflicts) {
  try {
    return Apply(live, applied, manager, force, now, conflicts);
  } catch (const nlohmann::json::exception& e) {
    return Internal(std::string("server-side apply: ") + e.what());
  }
}

void TrackUpdate(const Json& before, Json& object, const std::string& manager,
                 const std::string& now) {
  if (!object.is_object()) return;
  // A client that sends managedFields resets them; otherwise the old ones stay.
  Json managed_fields = TakeManagedFields(object);
  if (!HasManagedFieldsKey(managed_fields) && before.is_object()) {
    auto md = before.find("metadata");
    if (md != before.end() && md->is_object()) managed_fields = md->value("managedFields", Json());
  }
  std::vector<Entry> entries = ReadEntries(managed_fields);

  FieldSet changed;
  FieldSet removed;
  if (before.is_object()) {
    CompareMaps(before, object, changed, &removed, Level::kTop);
  } else {
    CompareMaps(CreateBaseline(object), object, changed, nullptr, Level::kTop);
  }

  std::string api_version = StringField(object, "apiVersion");
  if (!changed.Empty() || !removed.Empty()) {
    size_t mine = entries.size();
    for (size_t i = 0; i < entries.size(); ++i) {
      Entry& e = entries[i];
      if (e.manager == manager && e.operation == "Update" && e.api_version == api_version &&
          e.subresource.empty()) {
        mine = i;
        continue;
      }
      // An update takes the fields it changes from every other owner.
      FieldSet c = Intersect(e.Set(), changed);
      if (c.Empty()) continue;
      Subtract(e.Set(), c);
      e.touched = e.set_changed = true;
    }
    if (mine == entries.size()) {
      entries.push_back(NewEntry(manager, "Update", api_version, now, FieldSet()));
    }
    Entry& me = entries[mine];
    FieldSet before_set = me.Set();
    Union(me.Set(), changed);
    Subtract(me.Set(), removed);
    me.set_changed = !(me.Set() == before_set);
    me.time = now;
    me.touched = true;
  }
  WriteEntries(entries, object);
}

}  // namespace eco::kubesim
