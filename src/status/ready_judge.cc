#include "status/ready_judge.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "appcontext/agent_log.h"
#include "common/json_fields.h"
#include "k8s/drift.h"
#include "k8s/readiness.h"
#include "status/shared_watches.h"

namespace eco::status {

using nlohmann::json;

namespace {

// Kinds whose controllers create Pods carrying the pod template's labels.
bool MakesPods(const std::string& api_version, const std::string& kind) {
  if (api_version == "apps/v1")
    return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" ||
           kind == "ReplicaSet";
  if (api_version == "batch/v1") return kind == "Job" || kind == "CronJob";
  return false;
}

// What of a compared manifest a slim watch event shows (k8s::ParseSlim
// drops ConfigMap and Secret data, annotations and pod templates);
// `hidden` tells whether the manifest sets anything it does not show.
json VisiblePart(json compared, bool* hidden) {
  *hidden = false;
  if (!compared.is_object()) return compared;
  for (const char* k : {"data", "binaryData", "stringData"}) *hidden |= compared.erase(k) > 0;
  for (auto& [key, sub] : compared.items()) {
    if (!sub.is_object()) continue;
    for (const char* k :
         {"managedFields", "annotations", "template", "jobTemplate", "volumeClaimTemplates"})
      *hidden |= sub.erase(k) > 0;
  }
  return compared;
}

uint64_t Digest(const std::string& key) { return std::hash<std::string>{}(key); }

int64_t Generation(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return 0;
  auto g = m->find("generation");
  return g != m->end() && g->is_number_integer() ? std::max<int64_t>(0, g->get<int64_t>()) : 0;
}

int64_t Observed(const json& obj) {
  auto s = obj.find("status");
  if (s == obj.end() || !s->is_object()) return -1;
  auto g = s->find("observedGeneration");
  return g != s->end() && g->is_number_integer() ? std::max<int64_t>(-1, g->get<int64_t>()) : -1;
}

ObjectStates::Packed Pack(bool ready, int64_t generation, int64_t observed) {
  return {(static_cast<uint64_t>(generation) << 1) | (ready ? 1 : 0),
          static_cast<uint64_t>(observed + 1)};
}

template <typename Map, typename Key>
bool Update(Map& m, const Key& key, const ObjectStates::Packed& state) {
  auto [it, fresh] = m.try_emplace(key, state);
  if (fresh) return true;
  if (it->second == state) return false;
  it->second = state;
  return true;
}

}  // namespace

std::string ObjectKey(const json& obj, bool by_name) {
  const json& md = obj.contains("metadata") ? obj["metadata"] : json::object();
  std::string app;
  if (!by_name) {
    if (auto l = md.find("labels"); l != md.end() && l->is_object())
      app = StringField(*l, appcontext::kAppLabel);
  }
  return app + "\n" + StringField(md, "name");
}

size_t Shape::KindIndex(const std::string& av, const std::string& kind) {
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i].first == av && kinds[i].second == kind) return i;
  }
  kinds.emplace_back(av, kind);
  return kinds.size() - 1;
}

const Shape::Item* Shape::ItemNamed(const std::string& res_name) const {
  const Item* found = nullptr;
  for (const auto& i : items) {
    if (i.res_name == res_name) found = &i;
  }
  return found;
}

std::shared_ptr<const Shape> MakeShape(const appcontext::ResourceSet& rs, const std::string& label,
                                       bool drift) {
  auto shape = std::make_shared<Shape>();
  shape->label = label;
  bool makes_pods = false;
  // Hooks are left out: they run and may be deleted (EMCO excludes them
  // from readiness too).
  for (const auto* list : {&rs.crds, &rs.resources}) {
    for (const auto& r : *list) {
      std::string av = StringField(r.object, "apiVersion"), kind = StringField(r.object, "kind");
      std::string name =
          r.object.contains("metadata") ? StringField(r.object["metadata"], "name") : "";
      if (av.empty() || kind.empty() || name.empty()) continue;
      const bool by_name = SharedWatches::ByName(av, kind);
      shape->items.push_back({r.name,
                              shape->KindIndex(av, kind),
                              (by_name ? "" : label) + "\n" + name,
                              {},
                              {},
                              false});
      if (drift) {
        Shape::Item& item = shape->items.back();
        item.compared = k8s::ComparedPart(r.object);
        item.visible = VisiblePart(item.compared, &item.hidden);
      }
      makes_pods = makes_pods || MakesPods(av, kind);
    }
  }
  // The Pods of its workloads are listed too (EMCO appends such
  // cluster-only objects): one Pod watch per cluster, as for any kind.
  if (makes_pods) shape->pod_kind = static_cast<int>(shape->KindIndex("v1", "Pod"));
  return shape;
}

bool ObjectStates::Set(const std::string& key, const json& obj) {
  const Packed packed = Pack(k8s::CheckReady(obj).ready, Generation(obj), Observed(obj));
  if (keep_names_) return Update(named_, key, packed);
  return Update(hashed_, Digest(key), packed);
}

bool ObjectStates::Erase(const std::string& key) {
  return keep_names_ ? named_.erase(key) > 0 : hashed_.erase(Digest(key)) > 0;
}

void ObjectStates::Clear() {
  hashed_.clear();
  named_.clear();
}

std::optional<ObjectStates::State> ObjectStates::Get(const std::string& key) const {
  if (keep_names_) {
    auto it = named_.find(key);
    return it == named_.end() ? std::nullopt : std::optional<State>(Unpack(it->second));
  }
  auto it = hashed_.find(Digest(key));
  return it == hashed_.end() ? std::nullopt : std::optional<State>(Unpack(it->second));
}

ObjectStates::State ObjectStates::Unpack(const Packed& v) {
  return {(v.word & 1) != 0, static_cast<int64_t>(v.word >> 1),
          static_cast<int64_t>(v.observed) - 1};
}

std::optional<appcontext::ReadyRecord> JudgeReady(const Shape& shape,
                                                  const std::vector<const KindObjects*>& kinds) {
  for (const KindObjects* k : kinds) {
    if (!k->synced) return std::nullopt;
  }
  appcontext::ReadyRecord r;
  bool all = !shape.items.empty();
  for (const auto& item : shape.items) {
    std::optional<ObjectStates::State> state = kinds[item.kind]->objects.Get(item.object_key);
    if (!state || !state->ready) all = false;
    r.resources[item.res_name] = !state ? "NotPresent" : state->ready ? "Ready" : "NotReady";
    if (state && state->generation > 0) r.generations[item.res_name] = state->generation;
    if (state && state->observed >= 0) r.observed_generations[item.res_name] = state->observed;
  }
  if (shape.pod_kind >= 0) {
    const auto pod_kind = static_cast<size_t>(shape.pod_kind);
    std::set<std::string_view> expected;
    for (const auto& item : shape.items) {
      if (item.kind == pod_kind) expected.insert(item.object_key);
    }
    const auto& pods = kinds[pod_kind]->objects.named();
    const std::string prefix = shape.label + "\n";
    for (auto it = pods.lower_bound(prefix); it != pods.end() && it->first.starts_with(prefix);
         ++it) {
      if (expected.count(it->first)) continue;
      const bool ready = ObjectStates::Unpack(it->second).ready;
      r.cluster_only[it->first.substr(prefix.size()) + "+Pod"] = ready ? "Ready" : "NotReady";
      if (!ready) all = false;
    }
  }
  r.ready = all;
  return r;
}

size_t RecordHash(const appcontext::ReadyRecord& r) {
  std::string canon = r.ready ? "1" : "0";
  for (const auto& [k, v] : r.resources) canon.append("\n").append(k).append("=").append(v);
  canon.append("\n|");
  for (const auto& [k, v] : r.cluster_only) canon.append("\n").append(k).append("=").append(v);
  canon.append("\n|");
  for (const auto& [k, v] : r.generations)
    canon.append("\n").append(k).append("=").append(std::to_string(v));
  canon.append("\n|");
  for (const auto& [k, v] : r.observed_generations)
    canon.append("\n").append(k).append("=").append(std::to_string(v));
  return std::hash<std::string>{}(canon);
}

std::array<int32_t, 3> CountByStatus(const appcontext::ReadyRecord& r) {
  std::array<int32_t, 3> now{};
  auto add = [&](const std::string& status) {
    now[status == "Ready" ? 0 : status == "NotReady" ? 1 : 2] += 1;
  };
  for (const auto& [name, status] : r.resources) add(status);
  for (const auto& [name, status] : r.cluster_only) add(status);
  return now;
}

}  // namespace eco::status
