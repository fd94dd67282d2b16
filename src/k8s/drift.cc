#include "k8s/drift.h"

#include <algorithm>
#include <cctype>
#include <variant>

namespace eco::k8s {

using nlohmann::json;

namespace {

using Segment = std::variant<std::string, size_t>;  // a map key or a list index

std::string PathText(const std::vector<Segment>& path) {
  std::string out;
  for (const auto& s : path) {
    if (const size_t* i = std::get_if<size_t>(&s)) {
      out += "[" + std::to_string(*i) + "]";
      continue;
    }
    const std::string& k = std::get<std::string>(s);
    if (k.find_first_of("./[]") != std::string::npos) {
      out += "[" + k + "]";
    } else {
      if (!out.empty()) out += ".";
      out += k;
    }
  }
  return out;
}

std::vector<Segment> ParsePath(const std::string& text) {
  std::vector<Segment> out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '.') {
      ++i;
      continue;
    }
    if (text[i] == '[') {
      const size_t end = text.find(']', i);
      const std::string in = text.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
      const bool digits = !in.empty() && std::all_of(in.begin(), in.end(), [](unsigned char c) { return std::isdigit(c); });
      if (digits) {
        out.emplace_back(static_cast<size_t>(std::stoull(in)));
      } else {
        out.emplace_back(in);
      }
      i = end == std::string::npos ? text.size() : end + 1;
      continue;
    }
    const size_t end = text.find_first_of(".[", i);
    out.emplace_back(text.substr(i, end == std::string::npos ? std::string::npos : end - i));
    i = end == std::string::npos ? text.size() : end;
  }
  return out;
}

bool SameValue(const json& live, const json& want) {
  if (want.is_number() && live.is_number()) return want.get<double>() == live.get<double>();
  return live == want;
}

bool Under(const std::string& path, const std::vector<std::string>& skip) {
  for (const auto& s : skip) {
    if (path == s || (path.size() > s.size() && path.starts_with(s) && (path[s.size()] == '.' || path[s.size()] == '[')))
      return true;
  }
  return false;
}

void Walk(const json* live, const json& want, std::vector<Segment>& path, const std::vector<std::string>& skip,
          std::vector<FieldDrift>& out) {
  if (!skip.empty() && !path.empty() && Under(PathText(path), skip)) return;
  if (want.is_object() && live != nullptr && live->is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it) {
      auto l = live->find(it.key());
      path.emplace_back(it.key());
      Walk(l == live->end() ? nullptr : &*l, it.value(), path, skip, out);
      path.pop_back();
    }
    return;
  }
  if (want.is_array() && live != nullptr && live->is_array() && live->size() == want.size()) {
    for (size_t i = 0; i < want.size(); ++i) {
      path.emplace_back(i);
      Walk(&(*live)[i], want[i], path, skip, out);
      path.pop_back();
    }
    return;
  }
  if (want.is_object() && want.empty() && live != nullptr && live->is_object()) return;
  if (live != nullptr && SameValue(*live, want)) return;
  out.push_back({PathText(path), want, live ? *live : json(), ""});
}

// Whether the fieldsV1 set `node` holds `path` of `obj` (the live object
// the path walks along, to name list elements by key or value).
bool Owns(const json& node, const json* obj, const std::vector<Segment>& path, size_t at) {
  if (at == path.size()) return true;
  if (!node.is_object()) return false;
  if (const std::string* k = std::get_if<std::string>(&path[at])) {
    auto c = node.find("f:" + *k);
    const json* next = obj && obj->is_object() && obj->contains(*k) ? &(*obj)[*k] : nullptr;
    return c != node.end() && Owns(*c, next, path, at + 1);
  }
  const size_t i = std::get<size_t>(path[at]);
  const json* elem = obj && obj->is_array() && i < obj->size() ? &(*obj)[i] : nullptr;
  if (auto c = node.find("i:" + std::to_string(i)); c != node.end()) return Owns(*c, elem, path, at + 1);
  if (!elem) return false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string& key = it.key();
    if (key.starts_with("k:")) {
      json id = json::parse(key.substr(2), nullptr, false);
      if (!id.is_object() || !elem->is_object()) continue;
      bool match = true;
      for (auto f = id.begin(); f != id.end() && match; ++f) {
        auto e = elem->find(f.key());
        match = e != elem->end() && SameValue(*e, f.value());
      }
      if (match) return Owns(it.value(), elem, path, at + 1);
    } else if (key.starts_with("v:")) {
      json v = json::parse(key.substr(2), nullptr, false);
      if (!v.is_discarded() && SameValue(*elem, v)) return Owns(it.value(), elem, path, at + 1);
    }
  }
  return false;
}

std::string ManagerOf(const json& live, const std::vector<Segment>& path) {
  auto md = live.find("metadata");
  if (md == live.end() || !md->is_object()) return "";
  auto mf = md->find("managedFields");
  if (mf == md->end() || !mf->is_array()) return "";
  std::string best, best_time;
  for (const auto& e : *mf) {
    if (!e.is_object()) continue;
    auto f = e.find("fieldsV1");
    if (f == e.end() || !Owns(*f, &live, path, 0)) continue;
    const std::string t = e.value("time", "");
    if (best.empty() || t > best_time) {
      best = e.value("manager", "");
      best_time = t;
    }
  }
  return best;
}

}  // namespace

std::vector<FieldDrift> DriftedFields(const json& live, const json& desired, const std::vector<std::string>& skip) {
  std::vector<FieldDrift> out;
  if (!desired.is_object()) return out;
  const json want = ComparedPart(desired);
  std::vector<Segment> path;
  Walk(&live, want, path, skip, out);
  for (auto& f : out) {
    if (!f.live.is_null()) f.manager = ManagerOf(live, ParsePath(f.path));
  }
  return out;
}

json ComparedPart(json desired) {
  if (!desired.is_object()) return desired;
  if (auto md = desired.find("metadata"); md != desired.end() && md->is_object()) {
    json keep = json::object();
    for (const char* k : {"name", "namespace", "labels", "annotations"}) {
      if (md->contains(k)) keep[k] = (*md)[k];
    }
    *md = std::move(keep);
  }
  desired.erase("status");
  return desired;
}

bool Covers(const json& live, const json& want) {
  if (want.is_object()) {
    if (!live.is_object()) return false;
    for (auto it = want.begin(); it != want.end(); ++it) {
      auto l = live.find(it.key());
      if (l == live.end() || !Covers(*l, it.value())) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!live.is_array() || live.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Covers(live[i], want[i])) return false;
    }
    return true;
  }
  return SameValue(live, want);
}

std::string FieldManager(const json& live, const std::string& path) { return ManagerOf(live, ParsePath(path)); }

}  // namespace eco::k8s
