// JSON merge patch, JSON patch and strategic merge patch.
#include "kubesim/patch.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace eco::kubesim {

namespace {

bool AnyElementHas(const Json& list, const char* key) {
  if (!list.is_array()) return false;
  for (const Json& e : list) {
    if (e.is_object() && e.contains(key)) return true;
  }
  return false;
}

}  // namespace

ListType ListTypeOf(std::string_view field, const Json& a, const Json& b) {
  using K = ListType::Kind;
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "volumes" || field == "env" || field == "imagePullSecrets") {
    return {K::kKeyed, "name"};
  }
  if (field == "volumeMounts") return {K::kKeyed, "mountPath"};
  if (field == "ports") {
    // Container ports carry containerPort; Service ports carry port.
    if (AnyElementHas(a, "containerPort") || AnyElementHas(b, "containerPort")) {
      return {K::kKeyed, "containerPort"};
    }
    return {K::kKeyed, "port"};
  }
  if (field == "hostAliases") return {K::kKeyed, "ip"};
  if (field == "conditions") return {K::kKeyed, "type"};
  if (field == "ownerReferences") return {K::kKeyed, "uid"};
  if (field == "finalizers") return {K::kSet, nullptr};
  return {K::kAtomic, nullptr};
}

// ---------------------------------------------------------------------------
// RFC 7386

namespace {

void MergePatchInto(Json& target, const Json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = Json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      MergePatchInto(target[key], value);
    }
  }
}

}  // namespace

Json MergePatch(const Json& target, const Json& patch) {
  if (!patch.is_object()) return patch;
  Json result = target;
  MergePatchInto(result, patch);
  return result;
}

// ---------------------------------------------------------------------------
// RFC 6902

namespace {

// A parsed RFC 6901 pointer: reference tokens, unescaped.
Result<std::vector<std::string>> ParsePointer(const std::string& text) {
  std::vector<std::string> tokens;
  if (text.empty()) return tokens;
  if (text[0] != '/') return Invalid("pointer \"" + text + "\" does not start with '/'");
  std::string token;
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
      continue;
    }
    if (text[i] == '~') {
      if (i + 1 < text.size() && text[i + 1] == '0') {
        token += '~';
      } else if (i + 1 < text.size() && text[i + 1] == '1') {
        token += '/';
      } else {
        return Invalid("pointer \"" + text + "\" has an invalid escape");
      }
      ++i;
      continue;
    }
    token += text[i];
  }
  return tokens;
}

// An array index token: digits without leading zeros. -1 when not one.
long ArrayIndex(const std::string& token) {
  if (token.empty() || token.size() > 9) return -1;
  if (token.size() > 1 && token[0] == '0') return -1;
  long v = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size()) return -1;
  return v;
}

// The value the first `n` tokens point at, or nullptr.
Json* Walk(Json& doc, const std::vector<std::string>& tokens, size_t n) {
  Json* cur = &doc;
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = tokens[i];
    if (cur->is_object()) {
      auto it = cur->find(t);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      long idx = ArrayIndex(t);
      if (idx < 0 || static_cast<size_t>(idx) >= cur->size()) return nullptr;
      cur = &(*cur)[static_cast<size_t>(idx)];
    } else {
      return nullptr;
    }
  }
  return cur;
}

Status AddAt(Json& doc, const std::vector<std::string>& tokens, Json value) {
  if (tokens.empty()) {
    doc = std::move(value);
    return Status::Ok();
  }
  Json* parent = Walk(doc, tokens, tokens.size() - 1);
  if (parent == nullptr) return Invalid("parent does not exist");
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    (*parent)[last] = std::move(value);
    return Status::Ok();
  }
  if (parent->is_array()) {
    if (last == "-") {
      parent->push_back(std::move(value));
      return Status::Ok();
    }
    long idx = ArrayIndex(last);
    if (idx < 0 || static_cast<size_t>(idx) > parent->size())
      return Invalid("array index out of range");
    parent->insert(parent->begin() + idx, std::move(value));
    return Status::Ok();
  }
  return Invalid("parent is not an object or array");
}

Result<Json> RemoveAt(Json& doc, const std::vector<std::string>& tokens) {
  if (tokens.empty()) return Invalid("cannot remove the whole document");
  Json* parent = Walk(doc, tokens, tokens.size() - 1);
  if (parent == nullptr) return Invalid("path does not exist");
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    auto it = parent->find(last);
    if (it == parent->end()) return Invalid("path does not exist");
    Json removed = std::move(*it);
    parent->erase(it);
    return removed;
  }
  if (parent->is_array()) {
    long idx = ArrayIndex(last);
    if (idx < 0 || static_cast<size_t>(idx) >= parent->size())
      return Invalid("array index out of range");
    Json removed = std::move((*parent)[static_cast<size_t>(idx)]);
    parent->erase(static_cast<size_t>(idx));
    return removed;
  }
  return Invalid("path does not exist");
}

Status ApplyOp(Json& doc, const Json& op) {
  if (!op.is_object()) return Invalid("operation is not an object");
  auto op_it = op.find("op");
  auto path_it = op.find("path");
  if (op_it == op.end() || !op_it->is_string()) return Invalid("missing \"op\"");
  if (path_it == op.end() || !path_it->is_string()) return Invalid("missing \"path\"");
  const std::string& name = op_it->get_ref<const std::string&>();
  ECO_ASSIGN_OR_RETURN(auto tokens, ParsePointer(path_it->get_ref<const std::string&>()));
  auto value_it = op.find("value");
  auto need_value = [&]() -> Status {
    return value_it == op.end() ? Invalid("missing \"value\"") : Status::Ok();
  };
  auto from_tokens = [&]() -> Result<std::vector<std::string>> {
    auto from_it = op.find("from");
    if (from_it == op.end() || !from_it->is_string()) return Invalid("missing \"from\"");
    return ParsePointer(from_it->get_ref<const std::string&>());
  };

  if (name == "add") {
    ECO_RETURN_IF_ERROR(need_value());
    return AddAt(doc, tokens, *value_it);
  }
  if (name == "remove") {
    auto removed = RemoveAt(doc, tokens);
    return removed.status();
  }
  if (name == "replace") {
    ECO_RETURN_IF_ERROR(need_value());
    Json* target = Walk(doc, tokens, tokens.size());
    if (target == nullptr) return Invalid("path does not exist");
    *target = *value_it;
    return Status::Ok();
  }
  if (name == "move") {
    ECO_ASSIGN_OR_RETURN(auto from, from_tokens());
    // A value cannot move into one of its own children.
    if (from.size() < tokens.size() && std::equal(from.begin(), from.end(), tokens.begin())) {
      return Invalid("\"from\" is a prefix of \"path\"");
    }
    if (from == tokens) return Status::Ok();
    auto moved = RemoveAt(doc, from);
    if (!moved.ok()) return moved.status().Annotate("from");
    return AddAt(doc, tokens, std::move(moved).value());
  }
  if (name == "copy") {
    ECO_ASSIGN_OR_RETURN(auto from, from_tokens());
    Json* source = Walk(doc, from, from.size());
    if (source == nullptr) return Invalid("\"from\" does not exist");
    Json copy = *source;
    return AddAt(doc, tokens, std::move(copy));
  }
  if (name == "test") {
    ECO_RETURN_IF_ERROR(need_value());
    Json* target = Walk(doc, tokens, tokens.size());
    if (target == nullptr) return Invalid("path does not exist");
    if (*target != *value_it) return Invalid("test failed: value is " + target->dump());
    return Status::Ok();
  }
  return Invalid("unknown op \"" + name + "\"");
}

}  // namespace

Result<Json> JsonPatch(const Json& target, const Json& patch_ops) {
  if (!patch_ops.is_array()) return Invalid("json patch: the patch is not an array of operations");
  Json doc = target;
  for (size_t i = 0; i < patch_ops.size(); ++i) {
    const Json& op = patch_ops[i];
    Status s;
    try {
      s = ApplyOp(doc, op);
    } catch (const nlohmann::json::exception& e) {
      s = Invalid(e.what());
    }
    if (!s.ok()) {
      std::string what = "json patch: operation " + std::to_string(i);
      if (op.is_object()) {
        auto o = op.find("op");
        auto p = op.find("path");
        what += " (";
        what += (o != op.end() && o->is_string()) ? o->get<std::string>() : "?";
        what += " ";
        what += (p != op.end() && p->is_string()) ? p->get<std::string>() : "?";
        what += ")";
      }
      return Invalid(what + ": " + s.message());
    }
  }
  return doc;
}

// ---------------------------------------------------------------------------
// Strategic merge patch

namespace {

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kSetOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeletePrimitivePrefix = "$deleteFromPrimitiveList/";

bool IsDirective(const std::string& key) { return !key.empty() && key[0] == '$'; }

// The patch value with every directive removed, for values that land in the
// result without merging (new list elements, replaced maps).
Json StripDirectives(const Json& v) {
  if (v.is_object()) {
    Json out = Json::object();
    for (const auto& [k, child] : v.items()) {
      if (IsDirective(k)) continue;
      if (child.is_null()) continue;  // null means "absent" in a patch
      out[k] = StripDirectives(child);
    }
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& e : v) {
      if (e.is_object() && e.contains(kPatchDirective)) continue;
      out.push_back(StripDirectives(e));
    }
    return out;
  }
  return v;
}

// Reorders `list` by `order` (elements' keys, or the values themselves when
// key is null); items absent from `order` keep their place among the rest.
void ApplyElementOrder(Json& list, const Json& order, const char* key) {
  if (!list.is_array() || !order.is_array()) return;
  auto id_of = [key](const Json& e) -> std::string {
    if (key == nullptr) return e.dump();
    if (e.is_object()) {
      auto it = e.find(key);
      if (it != e.end()) return it->dump();
    }
    return {};
  };
  std::unordered_map<std::string, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) {
    std::string id = id_of(order[i]);
    if (!id.empty()) rank.emplace(std::move(id), i);
  }
  // Elements named in the order are placed in order into the slots the named
  // elements occupied; unnamed elements stay where they are.
  std::vector<size_t> slots;
  std::vector<std::pair<size_t, Json>> named;
  for (size_t i = 0; i < list.size(); ++i) {
    auto it = rank.find(id_of(list[i]));
    if (it != rank.end()) {
      slots.push_back(i);
      named.emplace_back(it->second, std::move(list[i]));
    }
  }
  std::stable_sort(named.begin(), named.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < slots.size(); ++i) list[slots[i]] = std::move(named[i].second);
}

// `deleted` is set when the patch deletes the target value itself ($patch: delete).
Status SmpMap(Json& target, const Json& patch, bool& deleted);

Status SmpKeyedList(Json& target, const Json& patch, const char* key, const std::string& field) {
  if (!target.is_array()) target = Json::array();
  // {"$patch": "replace"} as an element: the patch's other elements are the list.
  for (const Json& e : patch) {
    if (e.is_object() && e.size() == 1) {
      auto it = e.find(kPatchDirective);
      if (it != e.end() && *it == "replace") {
        target = StripDirectives(patch);
        return Status::Ok();
      }
    }
  }
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].is_object()) {
      auto it = target[i].find(key);
      if (it != target[i].end()) index.emplace(it->dump(), i);
    }
  }
  std::vector<bool> erased(target.size(), false);
  for (const Json& e : patch) {
    if (!e.is_object())
      return Invalid("strategic merge patch: " + field + ": element is not an object");
    auto key_it = e.find(key);
    if (key_it == e.end()) {
      return Invalid("strategic merge patch: " + field +
                     ": element does not contain the merge key \"" + key + "\"");
    }
    auto pos = index.find(key_it->dump());
    auto directive = e.find(kPatchDirective);
    if (directive != e.end() && *directive == "delete") {
      if (pos != index.end()) erased[pos->second] = true;
      continue;
    }
    if (pos != index.end() && !erased[pos->second]) {
      bool gone = false;
      ECO_RETURN_IF_ERROR(SmpMap(target[pos->second], e, gone));
      if (gone) erased[pos->second] = true;
    } else {
      index[key_it->dump()] = target.size();
      target.push_back(StripDirectives(e));
      erased.push_back(false);
    }
  }
  if (std::find(erased.begin(), erased.end(), true) != erased.end()) {
    Json kept = Json::array();
    for (size_t i = 0; i < target.size(); ++i) {
      if (!erased[i]) kept.push_back(std::move(target[i]));
    }
    target = std::move(kept);
  }
  return Status::Ok();
}

void SmpSetList(Json& target, const Json& patch) {
  if (!target.is_array()) target = Json::array();
  std::unordered_set<std::string> have;
  for (const Json& e : target) have.insert(e.dump());
  for (const Json& e : patch) {
    if (have.insert(e.dump()).second) target.push_back(e);
  }
}

Status SmpValue(Json& target, const Json& patch, const std::string& field, bool& deleted) {
  if (patch.is_object()) {
    if (!target.is_object()) target = Json::object();
    return SmpMap(target, patch, deleted);
  }
  if (patch.is_array()) {
    ListType lt = ListTypeOf(field, target, patch);
    if (lt.kind == ListType::kKeyed) return SmpKeyedList(target, patch, lt.key, field);
    if (lt.kind == ListType::kSet) {
      SmpSetList(target, patch);
      return Status::Ok();
    }
    target = StripDirectives(patch);
    return Status::Ok();
  }
  target = patch;
  return Status::Ok();
}

Status SmpMap(Json& target, const Json& patch, bool& deleted) {
  deleted = false;
  if (!target.is_object()) target = Json::object();
  auto directive = patch.find(kPatchDirective);
  if (directive != patch.end()) {
    if (*directive == "delete") {
      deleted = true;
      return Status::Ok();
    }
    if (*directive == "replace") {
      target = StripDirectives(patch);
      return Status::Ok();
    }
    if (*directive != "merge") {
      return Invalid("strategic merge patch: unknown $patch directive " + directive->dump());
    }
  }
  // Primitive deletions apply to the live list before the patch's additions.
  for (const auto& [k, v] : patch.items()) {
    if (k.compare(0, kDeletePrimitivePrefix.size(), kDeletePrimitivePrefix) != 0) continue;
    std::string field = k.substr(kDeletePrimitivePrefix.size());
    auto it = target.find(field);
    if (it == target.end() || !it->is_array() || !v.is_array()) continue;
    Json kept = Json::array();
    for (Json& e : *it) {
      if (std::find(v.begin(), v.end(), e) == v.end()) kept.push_back(std::move(e));
    }
    *it = std::move(kept);
  }
  for (const auto& [k, v] : patch.items()) {
    if (IsDirective(k)) continue;
    if (v.is_null()) {
      target.erase(k);
      continue;
    }
    Json& child = target[k];
    bool gone = false;
    ECO_RETURN_IF_ERROR(SmpValue(child, v, k, gone));
    if (gone) target.erase(k);
  }
  for (const auto& [k, v] : patch.items()) {
    if (k.compare(0, kSetOrderPrefix.size(), kSetOrderPrefix) != 0) continue;
    std::string field = k.substr(kSetOrderPrefix.size());
    auto it = target.find(field);
    if (it == target.end()) continue;
    ListType lt = ListTypeOf(field, *it, Json());
    ApplyElementOrder(*it, v, lt.kind == ListType::kKeyed ? lt.key : nullptr);
  }
  auto retain = patch.find(kRetainKeys);
  if (retain != patch.end()) {
    if (!retain->is_array()) return Invalid("strategic merge patch: $retainKeys is not a list");
    for (auto it = target.begin(); it != target.end();) {
      if (std::find(retain->begin(), retain->end(), it.key()) == retain->end()) {
        it = target.erase(it);
      } else {
        ++it;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Json> StrategicMergePatch(const Json& target, const Json& patch) {
  if (!patch.is_object()) return Invalid("strategic merge patch: the patch is not a JSON object");
  Json result = target.is_object() ? target : Json::object();
  bool deleted = false;
  try {
    ECO_RETURN_IF_ERROR(SmpMap(result, patch, deleted));
  } catch (const nlohmann::json::exception& e) {
    return Invalid(std::string("strategic merge patch: ") + e.what());
  }
  if (deleted) return Json::object();
  return result;
}

}  // namespace eco::kubesim
