#include "appcontext/appcontext.h"

#include <cctype>

#include <algorithm>
#include <cstdio>
#include <set>

#include "appcontext/agent_log.h"
#include "appcontext/event_record.h"
#include "catalog/catalog.h"
#include "common/trace.h"

namespace eco::appcontext {

using store::Compare;
using store::Op;

std::string ContextPrefix(const std::string& id) { return "/eco/ac/" + id + "/"; }
std::string StatusKey(const std::string& id) { return ContextPrefix(id) + "status"; }
std::string StopKey(const std::string& id) { return ContextPrefix(id) + "stop"; }
std::string SupersededKey(const std::string& id) { return ContextPrefix(id) + "superseded"; }
std::string SealedKey(const std::string& id) { return ContextPrefix(id) + "sealed"; }
std::string ActivePrefix() { return "/eco/active/"; }
std::string ActiveKey(const std::string& id) { return ActivePrefix() + id; }
std::string RsyncLockPrefix() { return "/eco/lock/rsync/"; }
std::string RsyncLockKey(const std::string& id) { return RsyncLockPrefix() + id; }
std::string EventPrefix(const std::string& id) { return ContextPrefix(id) + "events/"; }
std::string EventKey(const std::string& id, int64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(seq));
  return EventPrefix(id) + buf;
}

namespace {

std::string MetaKey(const std::string& id) { return ContextPrefix(id) + "meta"; }
std::string BuildingKey(const std::string& id) { return ContextPrefix(id) + "building"; }
std::string BuildIndexKey(const std::string& id) { return "/eco/acb/" + id; }
std::string AppPrefix(const std::string& id, const std::string& app) {
  return ContextPrefix(id) + "app/" + app + "/";
}
std::string SharedKey(const std::string& id, const std::string& app) { return AppPrefix(id, app) + "shared"; }
std::string ClustersKey(const std::string& id, const std::string& app) {
  return AppPrefix(id, app) + "clusters";
}
std::string VariantPrefix(const std::string& id, const std::string& app) {
  return AppPrefix(id, app) + "variant/";
}
std::string VariantKey(const std::string& id, const std::string& app, int n) {
  return VariantPrefix(id, app) + std::to_string(n);
}
std::string VariantIndexKey(const std::string& id, const std::string& app) {
  return AppPrefix(id, app) + "variants";
}

// FNV-1a over the delta text: finds an identical variant in the index.
std::string HashHex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx-%zx", static_cast<unsigned long long>(h), s.size());
  return buf;
}

json NameList(const std::vector<Resource>& v) {
  json a = json::array();
  for (const auto& r : v) a.push_back(r.name);
  return a;
}

}  // namespace

// A variant as a delta from the shared set: the names in order for each
// list, the hook events, and only the objects that differ from (or are
// missing in) the shared set. null when `rs` equals the shared set.
static json Delta(const ResourceSet& shared, const ResourceSet& rs) {
  json objects = json::object();
  bool same = rs.hook_events == shared.hook_events && rs.size() == shared.size();
  for (const auto* list : {&rs.crds, &rs.resources, &rs.hooks}) {
    for (const auto& r : *list) {
      const Resource* s = shared.Find(r.name);
      if (!s || s->object != r.object) {
        objects[r.name] = r.object;
        same = false;
      }
    }
  }
  if (same && NameList(rs.crds) == NameList(shared.crds) && NameList(rs.resources) == NameList(shared.resources) &&
      NameList(rs.hooks) == NameList(shared.hooks)) {
    return nullptr;
  }
  json he = json::object();
  for (const auto& [ev, names] : rs.hook_events) he[ev] = names;
  return {{"crds", NameList(rs.crds)},
          {"resources", NameList(rs.resources)},
          {"hooks", NameList(rs.hooks)},
          {"hookEvents", std::move(he)},
          {"objects", std::move(objects)}};
}

static Result<ResourceSet> ApplyDelta(const ResourceSet& shared, const json& delta) {
  if (!delta.is_object() || !delta.contains("objects") || !delta["objects"].is_object()) {
    return Internal("AppContext variant is malformed");
  }
  const json& objects = delta["objects"];
  ResourceSet out;
  auto fill = [&](const char* field, std::vector<Resource>& into) -> Status {
    auto it = delta.find(field);
    if (it == delta.end() || !it->is_array()) return Status::Ok();
    for (const auto& n : *it) {
      if (!n.is_string()) return Internal("AppContext variant is malformed");
      const std::string& name = n.get_ref<const std::string&>();
      auto o = objects.find(name);
      if (o != objects.end()) {
        into.push_back({name, *o});
      } else if (const Resource* s = shared.Find(name)) {
        into.push_back(*s);
      } else {
        return Internal("AppContext variant names " + name + ", which it does not hold");
      }
    }
    return Status::Ok();
  };
  ECO_RETURN_IF_ERROR(fill("crds", out.crds));
  ECO_RETURN_IF_ERROR(fill("resources", out.resources));
  ECO_RETURN_IF_ERROR(fill("hooks", out.hooks));
  if (auto he = delta.find("hookEvents"); he != delta.end() && he->is_object()) {
    for (auto& [ev, names] : he->items()) {
      for (const auto& n : names) {
        if (n.is_string()) out.hook_events[ev].push_back(n.get<std::string>());
      }
    }
  }
  return out;
}

namespace {

// After an edit lost its compare-and-swap: Conflict when the context was
// sealed meanwhile (retrying cannot help), Ok to retry otherwise.
Status RefuseIfSealed(store::Store& st, const std::string& id) {
  auto kv = st.Get(SealedKey(id));
  if (kv.ok() && kv->has_value()) return Conflict("AppContext " + id + " is sealed: it can no longer be edited");
  return Status::Ok();
}

// Contexts are edited by one controller at a time; a few retries cover a
// concurrent status write or a janitor racing with us.
constexpr int kAttempts = 8;

std::string NewId(Random& random) {
  return std::to_string(random.Next() >> 1);  // non-negative 63-bit, as EMCO's ids
}

json ResourcesToJson(const std::vector<Resource>& v) {
  json a = json::array();
  for (const auto& r : v) a.push_back({{"name", r.name}, {"object", r.object}});
  return a;
}

Status ResourcesFromJson(const json& j, const char* field, std::vector<Resource>& out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Internal(std::string("AppContext resource set: ") + field + " is not a list");
  for (const auto& e : *it) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) {
      return Internal("AppContext resource set: malformed resource entry");
    }
    out.push_back({e["name"].get<std::string>(), e.value("object", json::object())});
  }
  return Status::Ok();
}

// Clusters are stored compactly: [provider, name, group, mandatory, variant].
json ClustersToJson(const std::vector<ClusterRef>& cs) {
  json a = json::array();
  for (const auto& c : cs) a.push_back({c.provider, c.name, c.group, c.mandatory ? 1 : 0, c.variant});
  return a;
}

Result<std::vector<ClusterRef>> ClustersFromString(const std::string& s) {
  json a = json::parse(s, nullptr, false);
  if (!a.is_array()) return Internal("AppContext cluster list is not a JSON list");
  std::vector<ClusterRef> out;
  out.reserve(a.size());
  for (const auto& e : a) {
    if (!e.is_array() || e.size() != 5 || !e[0].is_string() || !e[1].is_string() ||
        !e[2].is_number_integer() || !e[3].is_number_integer() || !e[4].is_number_integer()) {
      return Internal("AppContext cluster list has a malformed entry");
    }
    out.push_back({e[0].get<std::string>(), e[1].get<std::string>(), e[2].get<int>(),
                   e[3].get<int>() != 0, e[4].get<int>()});
  }
  return out;
}


}  // namespace

std::string LabelValue(std::string v) {
  if (v.size() > 63) v.resize(63);
  while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

std::string ResourceName(const json& object) {
  std::string name, kind;
  if (object.is_object()) {
    kind = catalog::StringField(object, "kind");
    auto md = object.find("metadata");
    if (md != object.end() && md->is_object()) name = catalog::StringField(*md, "name");
  }
  return name + "+" + kind;
}

Resource* ResourceSet::Find(std::string_view name) {
  for (auto* v : {&crds, &resources, &hooks}) {
    for (auto& r : *v) {
      if (r.name == name) return &r;
    }
  }
  return nullptr;
}

const Resource* ResourceSet::Find(std::string_view name) const {
  return const_cast<ResourceSet*>(this)->Find(name);
}

json ToJson(const ResourceSet& rs) {
  json j = {{"crds", ResourcesToJson(rs.crds)},
            {"resources", ResourcesToJson(rs.resources)},
            {"hooks", ResourcesToJson(rs.hooks)},
            {"hookEvents", json::object()}};
  for (const auto& [ev, names] : rs.hook_events) j["hookEvents"][ev] = names;
  return j;
}

Result<ResourceSet> ResourceSetFromJson(const json& j) {
  if (!j.is_object()) return Internal("AppContext resource set is not a JSON object");
  ResourceSet rs;
  ECO_RETURN_IF_ERROR(ResourcesFromJson(j, "crds", rs.crds));
  ECO_RETURN_IF_ERROR(ResourcesFromJson(j, "resources", rs.resources));
  ECO_RETURN_IF_ERROR(ResourcesFromJson(j, "hooks", rs.hooks));
  auto he = j.find("hookEvents");
  if (he != j.end() && he->is_object()) {
    for (auto& [ev, names] : he->items()) {
      if (!names.is_array()) continue;
      for (const auto& n : names) {
        if (n.is_string()) rs.hook_events[ev].push_back(n.get<std::string>());
      }
    }
  }
  return rs;
}

json ToJson(const Meta& m) {
  json deps = json::object();
  for (const auto& [app, list] : m.dependencies) {
    json a = json::array();
    for (const auto& d : list) a.push_back({{"app", d.app}, {"opStatus", d.op_status}, {"wait", d.wait_seconds}});
    deps[app] = std::move(a);
  }
  return {{"id", m.id},
          {"kind", m.kind},
          {"project", m.project},
          {"compositeApp", m.composite_app},
          {"compositeAppVersion", m.composite_app_version},
          {"deploymentIntentGroup", m.dig},
          {"compositeProfile", m.composite_profile},
          {"release", m.release},
          {"logicalCloud", m.logical_cloud},
          {"level", m.level},
          {"namespace", m.namespace_},
          {"statusContext", m.status_context},
          {"updateFrom", m.update_from},
          {"revision", m.revision},
          {"created", m.created},
          {"appOrder", m.app_order},
          {"dependencies", std::move(deps)},
          {"adopt", m.adopt},
          {"fieldValidation", m.field_validation},
          {"driftPolicy", m.drift_policy}};
}

std::string OwnerOf(const Meta& m) {
  if (m.kind == "logicalCloud") return "logical-cloud:" + m.project + "/" + m.logical_cloud;
  return "dig:" + m.project + "/" + m.composite_app + "/" + m.composite_app_version + "/" + m.dig;
}

Result<Meta> MetaFromJson(const json& j) {
  if (!j.is_object()) return Internal("AppContext meta is not a JSON object");
  Meta m;
  m.id = catalog::StringField(j, "id");
  m.kind = catalog::StringField(j, "kind");
  m.project = catalog::StringField(j, "project");
  m.composite_app = catalog::StringField(j, "compositeApp");
  m.composite_app_version = catalog::StringField(j, "compositeAppVersion");
  m.dig = catalog::StringField(j, "deploymentIntentGroup");
  m.composite_profile = catalog::StringField(j, "compositeProfile");
  m.release = catalog::StringField(j, "release");
  m.logical_cloud = catalog::StringField(j, "logicalCloud");
  m.level = catalog::StringField(j, "level");
  m.namespace_ = catalog::StringField(j, "namespace");
  m.status_context = catalog::StringField(j, "statusContext");
  m.update_from = catalog::StringField(j, "updateFrom");
  m.created = catalog::StringField(j, "created");
  if (auto a = j.find("adopt"); a != j.end() && a->is_boolean()) m.adopt = a->get<bool>();
  if (std::string fv = catalog::StringField(j, "fieldValidation"); !fv.empty()) m.field_validation = fv;
  if (std::string dp = catalog::StringField(j, "driftPolicy"); !dp.empty()) m.drift_policy = dp;
  if (auto r = j.find("revision"); r != j.end() && r->is_number_integer()) m.revision = r->get<int64_t>();
  if (auto o = j.find("appOrder"); o != j.end() && o->is_array()) {
    for (const auto& a : *o) {
      if (a.is_string()) m.app_order.push_back(a.get<std::string>());
    }
  }
  if (auto d = j.find("dependencies"); d != j.end() && d->is_object()) {
    for (auto& [app, list] : d->items()) {
      if (!list.is_array()) continue;
      for (const auto& e : list) {
        if (!e.is_object()) continue;
        Dependency dep{catalog::StringField(e, "app"), catalog::StringField(e, "opStatus"), 0};
        if (auto w = e.find("wait"); w != e.end() && w->is_number_integer()) dep.wait_seconds = w->get<int>();
        m.dependencies[app].push_back(std::move(dep));
      }
    }
  }
  return m;
}

Result<std::string> Contexts::Create(Meta meta, store::LeaseId building_lease) {
  meta.created = catalog::NowRfc3339(clock_);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    meta.id = NewId(random_);
    store::Txn txn;
    txn.compares.push_back(Compare::Missing(MetaKey(meta.id)));
    txn.success.push_back(Op::Put(MetaKey(meta.id), ToJson(meta).dump()));
    txn.success.push_back(Op::Put(BuildingKey(meta.id), "", building_lease));
    txn.success.push_back(Op::Put(BuildIndexKey(meta.id), ""));
    auto r = st_.Commit(txn);
    if (!r.ok()) return r.status();
    if (r->succeeded) return meta.id;
  }
  return Internal("could not allocate an AppContext id");
}

Status Contexts::PutApp(const std::string& id, const std::string& app, const ResourceSet& shared,
                        const std::vector<ClusterRef>& clusters) {
  store::Txn txn;
  txn.compares.push_back(Compare::Exists(MetaKey(id)));
  txn.compares.push_back(NotSealed(id));
  txn.success.push_back(Op::Put(SharedKey(id, app), ToJson(shared).dump()));
  std::vector<ClusterRef> cs = clusters;
  for (auto& c : cs) c.variant = 0;
  txn.success.push_back(Op::Put(ClustersKey(id, app), ClustersToJson(cs).dump()));
  txn.success.push_back(Op::DeletePrefix(VariantPrefix(id, app)));
  txn.success.push_back(Op::Delete(VariantIndexKey(id, app)));
  auto r = st_.Commit(txn);
  if (!r.ok()) return r.status();
  if (!r->succeeded) return Conflict("AppContext " + id + " is sealed or gone");
  return Status::Ok();
}

Result<Meta> Contexts::GetMeta(const std::string& id) {
  auto kv = st_.Get(MetaKey(id));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return NotFound("AppContext " + id + " not found");
  json j = json::parse((*kv)->value, nullptr, false);
  return MetaFromJson(j);
}

Result<std::vector<ClusterRef>> Contexts::Clusters(const std::string& id, const std::string& app) {
  auto kv = st_.Get(ClustersKey(id, app));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
  return ClustersFromString((*kv)->value);
}

Result<ResourceSet> Contexts::Resources(const std::string& id, const std::string& app,
                                        const std::string& cluster_key) {
  int variant = 0;
  if (!cluster_key.empty()) {
    auto cs = Clusters(id, app);
    if (!cs.ok()) return cs.status();
    auto it = std::find_if(cs->begin(), cs->end(), [&](const ClusterRef& c) { return c.key() == cluster_key; });
    if (it == cs->end()) return NotFound("Cluster " + cluster_key + " not found for app " + app);
    variant = it->variant;
  }
  auto kv = st_.Get(SharedKey(id, app));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
  auto shared = ResourceSetFromJson(json::parse((*kv)->value, nullptr, false));
  if (!shared.ok() || variant == 0) return shared;
  auto v = st_.Get(VariantKey(id, app, variant));
  if (!v.ok()) return v.status();
  if (!v->has_value()) return Internal("AppContext " + id + ": variant " + std::to_string(variant) + " of app " + app + " is missing");
  return ApplyDelta(*shared, json::parse((*v)->value, nullptr, false));
}

namespace {
std::string NoteKey(const std::string& id, const std::string& source, const std::string& app,
                    const std::string& cluster_key) {
  return ContextPrefix(id) + "notes/" + source + "/" + app + "/" + cluster_key;
}
}  // namespace

Status Contexts::NoteClusters(const std::string& id, const std::string& source, const std::string& app,
                              const std::map<std::string, std::string>& notes) {
  // etcd takes at most 128 operations per transaction.
  std::vector<Op> ops;
  for (const auto& [cluster, text] : notes) ops.push_back(Op::Put(NoteKey(id, source, app, cluster), text));
  for (size_t i = 0; i < ops.size(); i += 100) {
    store::Txn txn;
    txn.compares.push_back(NotSealed(id));
    txn.success.assign(ops.begin() + static_cast<std::ptrdiff_t>(i),
                       ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), i + 100)));
    auto r = st_.Commit(txn);
    if (!r.ok()) return r.status();
    if (!r->succeeded) return Conflict("AppContext " + id + " is sealed");
  }
  return Status::Ok();
}

Result<std::optional<std::string>> Contexts::ClusterNote(const std::string& id, const std::string& source,
                                                         const std::string& app, const std::string& cluster_key) {
  auto kv = st_.Get(NoteKey(id, source, app, cluster_key));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<std::string>();
  return std::optional<std::string>((*kv)->value);
}

Status Contexts::RemoveClusters(const std::string& id, const std::string& app,
                                const std::vector<std::string>& cluster_keys) {
  std::set<std::string> drop(cluster_keys.begin(), cluster_keys.end());
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto kv = st_.Get(ClustersKey(id, app));
    if (!kv.ok()) return kv.status();
    if (!kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
    auto cs = ClustersFromString((*kv)->value);
    if (!cs.ok()) return cs.status();
    // Variants a removed cluster used stay indexed (an identical edit may
    // reuse them) and go with the context.
    std::vector<ClusterRef> keep;
    for (auto& c : *cs) {
      if (!drop.count(c.key())) keep.push_back(std::move(c));
    }
    if (keep.size() == cs->size()) return Status::Ok();
    store::Txn txn;
    txn.compares.push_back(Compare::ModRevisionIs(ClustersKey(id, app), (*kv)->mod_revision));
    txn.compares.push_back(NotSealed(id));
    txn.success.push_back(Op::Put(ClustersKey(id, app), ClustersToJson(keep).dump()));
    auto r = st_.Commit(txn);
    if (!r.ok()) return r.status();
    if (r->succeeded) return Status::Ok();
    ECO_RETURN_IF_ERROR(RefuseIfSealed(st_, id));
  }
  return Conflict("AppContext " + id + ": too many concurrent edits");
}

Status Contexts::SetResources(const std::string& id, const std::string& app,
                              const std::vector<std::string>& cluster_keys, const ResourceSet& rs) {
  const std::string dump = ToJson(rs).dump();
  const std::set<std::string> targets(cluster_keys.begin(), cluster_keys.end());
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto kv = st_.Get(ClustersKey(id, app));
    if (!kv.ok()) return kv.status();
    if (!kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
    auto cs = ClustersFromString((*kv)->value);
    if (!cs.ok()) return cs.status();
    if (!targets.empty()) {
      size_t covered = 0;
      for (const auto& c : *cs) covered += targets.count(c.key());
      if (covered != cs->size() || targets.size() != cs->size()) {
        return SetResourcesBatch(id, app, {{cluster_keys, rs}});
      }
    }
    // Every cluster gets the same set: it becomes the shared one.
    for (auto& c : *cs) c.variant = 0;
    store::Txn txn;
    txn.compares.push_back(Compare::ModRevisionIs(ClustersKey(id, app), (*kv)->mod_revision));
    txn.compares.push_back(NotSealed(id));
    txn.success.push_back(Op::Put(SharedKey(id, app), dump));
    txn.success.push_back(Op::Put(ClustersKey(id, app), ClustersToJson(*cs).dump()));
    txn.success.push_back(Op::DeletePrefix(VariantPrefix(id, app)));
    txn.success.push_back(Op::Delete(VariantIndexKey(id, app)));
    auto r = st_.Commit(txn);
    if (!r.ok()) return r.status();
    if (r->succeeded) return Status::Ok();
    ECO_RETURN_IF_ERROR(RefuseIfSealed(st_, id));
  }
  return Conflict("AppContext " + id + ": too many concurrent edits");
}

Status Contexts::SetResourcesBatch(const std::string& id, const std::string& app,
                                   const std::vector<ClusterEdit>& edits) {
  if (edits.empty()) return Status::Ok();
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto kv = st_.Get(ClustersKey(id, app));
    if (!kv.ok()) return kv.status();
    if (!kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
    auto cs = ClustersFromString((*kv)->value);
    if (!cs.ok()) return cs.status();
    auto shared_kv = st_.Get(SharedKey(id, app));
    if (!shared_kv.ok()) return shared_kv.status();
    if (!shared_kv->has_value()) return NotFound("App " + app + " not found in AppContext " + id);
    auto shared = ResourceSetFromJson(json::parse((*shared_kv)->value, nullptr, false));
    if (!shared.ok()) return shared.status();
    auto idx_kv = st_.Get(VariantIndexKey(id, app));
    if (!idx_kv.ok()) return idx_kv.status();
    json index = {{"next", 1}, {"h", json::object()}};
    if (idx_kv->has_value()) index = json::parse((*idx_kv)->value, nullptr, false);
    if (!index.is_object() || !index.contains("h")) return Internal("AppContext variant index is malformed");

    std::map<std::string, size_t> pos;
    for (size_t i = 0; i < cs->size(); ++i) pos[(*cs)[i].key()] = i;
    std::vector<int> assigned(cs->size(), -1);
    std::vector<std::pair<int, std::string>> fresh;  // variant n, delta text
    for (const auto& e : edits) {
      if (e.cluster_keys.empty()) return Invalid("SetResourcesBatch: an edit names no cluster");
      json delta = Delta(*shared, e.resources);
      int n = 0;
      if (!delta.is_null()) {
        std::string text = delta.dump();
        std::string h = HashHex(text);
        auto hit = index["h"].find(h);
        if (hit != index["h"].end()) {
          n = hit->get<int>();
        } else {
          n = index.value("next", 1);
          index["next"] = n + 1;
          index["h"][h] = n;
          fresh.emplace_back(n, std::move(text));
        }
      }
      for (const auto& k : e.cluster_keys) {
        auto it = pos.find(k);
        if (it == pos.end()) return NotFound("Cluster " + k + " not found for app " + app + " in AppContext " + id);
        if (assigned[it->second] >= 0) return Invalid("SetResourcesBatch: cluster " + k + " is in two edits");
        assigned[it->second] = n;
      }
    }
    std::set<int> used;
    for (size_t i = 0; i < cs->size(); ++i) {
      if (assigned[i] >= 0) (*cs)[i].variant = assigned[i];
      used.insert((*cs)[i].variant);
    }
    std::vector<std::string> unused;
    for (auto it = index["h"].begin(); it != index["h"].end();) {
      int n = it->get<int>();
      if (!used.count(n)) {
        unused.push_back(VariantKey(id, app, n));
        it = index["h"].erase(it);
      } else {
        ++it;
      }
    }
    // New variants first, in small batches: until the cluster list points
    // at them they are invisible, and they go with the context if we die.
    for (size_t i = 0; i < fresh.size();) {
      store::Txn pre;
      for (size_t k = 0; k < 64 && i < fresh.size(); ++k, ++i) {
        pre.success.push_back(Op::Put(VariantKey(id, app, fresh[i].first), fresh[i].second));
      }
      auto r = st_.Commit(pre);
      if (!r.ok()) return r.status();
    }
    store::Txn txn;
    txn.compares.push_back(Compare::ModRevisionIs(ClustersKey(id, app), (*kv)->mod_revision));
    txn.compares.push_back(Compare::ModRevisionIs(SharedKey(id, app), (*shared_kv)->mod_revision));
    txn.compares.push_back(idx_kv->has_value() ? Compare::ModRevisionIs(VariantIndexKey(id, app), (*idx_kv)->mod_revision)
                                               : Compare::Missing(VariantIndexKey(id, app)));
    txn.compares.push_back(NotSealed(id));
    txn.success.push_back(Op::Put(ClustersKey(id, app), ClustersToJson(*cs).dump()));
    txn.success.push_back(Op::Put(VariantIndexKey(id, app), index.dump()));
    auto r = st_.Commit(txn);
    if (!r.ok()) return r.status();
    std::vector<std::string> garbage = r->succeeded ? unused : std::vector<std::string>{};
    if (!r->succeeded) {
      for (const auto& [n, text] : fresh) garbage.push_back(VariantKey(id, app, n));
    }
    for (size_t i = 0; i < garbage.size();) {
      store::Txn del;
      for (size_t k = 0; k < 64 && i < garbage.size(); ++k, ++i) del.success.push_back(Op::Delete(garbage[i]));
      (void)st_.Commit(del);  // leftovers are harmless and go with the context
    }
    if (r->succeeded) return Status::Ok();
    ECO_RETURN_IF_ERROR(RefuseIfSealed(st_, id));
  }
  return Conflict("AppContext " + id + ": too many concurrent edits");
}

Result<AppPlan> Contexts::ReadApp(const std::string& id, const std::string& app) {
  AppPlan plan;
  auto cs = Clusters(id, app);
  if (!cs.ok()) return cs.status();
  plan.clusters = std::move(*cs);
  auto shared = Resources(id, app, "");
  if (!shared.ok()) return shared.status();
  plan.shared = std::move(*shared);
  auto vars = st_.Range(VariantPrefix(id, app));
  if (!vars.ok()) return vars.status();
  for (const auto& v : vars->kvs) {
    int n = std::atoi(v.key.c_str() + VariantPrefix(id, app).size());
    plan.deltas_[n] = json::parse(v.value, nullptr, false);
  }
  return plan;
}

Result<ResourceSet> AppPlan::For(const ClusterRef& c) const {
  if (c.variant == 0) return shared;
  auto it = deltas_.find(c.variant);
  if (it == deltas_.end()) return Internal("AppContext variant " + std::to_string(c.variant) + " is missing");
  return ApplyDelta(shared, it->second);
}

Status Contexts::ResolveGroups(const std::string& id) {
  auto meta = GetMeta(id);
  if (!meta.ok()) return meta.status();
  for (const auto& app : meta->app_order) {
    auto cs = Clusters(id, app);
    if (!cs.ok()) return cs.status();
    std::map<int, std::string> first;  // optional group -> smallest key
    for (const auto& c : *cs) {
      if (c.mandatory) continue;
      auto [it, fresh] = first.emplace(c.group, c.key());
      if (!fresh && c.key() < it->second) it->second = c.key();
    }
    std::vector<std::string> drop;
    for (const auto& c : *cs) {
      if (!c.mandatory && first[c.group] != c.key()) drop.push_back(c.key());
    }
    if (!drop.empty()) ECO_RETURN_IF_ERROR(RemoveClusters(id, app, drop));
  }
  return Status::Ok();
}

store::Compare Contexts::NotSealed(const std::string& id) const { return Compare::Missing(SealedKey(id)); }

std::vector<store::Op> Contexts::SealOps(const std::string& id, const std::string& status,
                                         const Event& first) const {
  std::vector<Op> ops;
  ops.push_back(Op::Put(SealedKey(id), catalog::NowRfc3339(clock_)));
  ops.push_back(Op::Delete(BuildingKey(id)));
  ops.push_back(Op::Delete(BuildIndexKey(id)));
  ops.push_back(Op::Put(StatusKey(id),
                        json{{"status", status}, {"time", catalog::NowRfc3339(clock_)}}.dump()));
  if (!first.type.empty()) {
    for (auto& op : EnqueueOps(id, 1, first)) ops.push_back(std::move(op));
  }
  return ops;
}

std::vector<store::Op> Contexts::EnqueueOps(const std::string& id, int64_t seq, const Event& e) const {
  EventRecord ev;
  ev.type = e.type;
  ev.status = "pending";
  ev.time = catalog::NowRfc3339(clock_);
  ev.other = e.other;
  ev.clusters = e.clusters;
  ev.rollout = e.rollout;
  // Queued by a traced request: rsync's work on the event joins its trace.
  if (const trace::SpanContext* c = trace::Current(); c != nullptr && c->sampled) {
    for (auto& [k, v] : trace::Inject(*c)) ev.trace[k] = std::move(v);
  }
  std::vector<Op> ops = {Op::Put(EventKey(id, seq), ToJson(ev).dump()), Op::Put(ActiveKey(id), "")};
  // In the same write: rsync ends what the replaced context still deploys.
  if (e.type == "update" && !e.other.empty()) ops.push_back(Op::Put(SupersededKey(e.other), id));
  return ops;
}

Result<int64_t> Contexts::NextEventSeq(const std::string& id) {
  store::RangeOptions ro;
  ro.keys_only = true;
  auto r = st_.Range(EventPrefix(id), ro);
  if (!r.ok()) return r.status();
  if (r->kvs.empty()) return int64_t{1};
  return std::atoll(r->kvs.back().key.c_str() + EventPrefix(id).size()) + 1;
}

Result<bool> Contexts::Exists(const std::string& id) {
  auto kv = st_.Get(MetaKey(id));
  if (!kv.ok()) return kv.status();
  return kv->has_value();
}

Result<bool> Contexts::Sealed(const std::string& id) {
  auto kv = st_.Get(SealedKey(id));
  if (!kv.ok()) return kv.status();
  return kv->has_value();
}

Result<std::string> Contexts::GetStatus(const std::string& id) {
  auto kv = st_.Get(StatusKey(id));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::string();
  json j = json::parse((*kv)->value, nullptr, false);
  return j.is_object() ? catalog::StringField(j, "status") : std::string();
}

Status Contexts::Delete(const std::string& id) {
  store::Txn txn;
  txn.success.push_back(Op::DeletePrefix(ContextPrefix(id)));
  txn.success.push_back(Op::Delete(BuildIndexKey(id)));
  txn.success.push_back(Op::Delete(ActiveKey(id)));
  // What agent clusters were told of it and answered (agent_log.h).
  for (auto& op : ForgetContextOps(id)) txn.success.push_back(std::move(op));
  auto r = st_.Commit(txn);
  return r.ok() ? Status::Ok() : r.status();
}

Result<int> Contexts::CollectAbandoned() {
  store::RangeOptions ro;
  ro.keys_only = true;
  auto r = st_.Range("/eco/acb/", ro);
  if (!r.ok()) return r.status();
  int n = 0;
  for (const auto& kv : r->kvs) {
    std::string id = kv.key.substr(std::string("/eco/acb/").size());
    auto b = st_.Get(BuildingKey(id));
    if (!b.ok()) return b.status();
    if (b->has_value()) continue;  // its builder is alive
    ECO_RETURN_IF_ERROR(Delete(id));
    ++n;
  }
  return n;
}

Result<int64_t> Contexts::SizeBytes(const std::string& id) {
  auto r = st_.Range(ContextPrefix(id));
  if (!r.ok()) return r.status();
  int64_t n = 0;
  for (const auto& kv : r->kvs) n += static_cast<int64_t>(kv.key.size() + kv.value.size());
  return n;
}

}  // namespace eco::appcontext

// The agent's copy of a context (agent_log.h): written here, beside the
// layout it writes.
namespace eco::appcontext {

std::vector<store::Op> ImportOps(const ProjectedContext& pc) {
  const std::string& id = pc.meta.id;
  std::vector<Op> ops;
  ops.push_back(Op::Put(MetaKey(id), ToJson(pc.meta).dump()));
  for (const auto& a : pc.apps) {
    ops.push_back(Op::Put(SharedKey(id, a.name), ToJson(a.resources).dump()));
    std::vector<ClusterRef> cs;
    if (a.cluster) {
      cs.push_back(*a.cluster);
      cs.back().variant = 0;
    }
    ops.push_back(Op::Put(ClustersKey(id, a.name), ClustersToJson(cs).dump()));
  }
  ops.push_back(Op::Put(SealedKey(id), pc.meta.created));
  if (pc.stopped) ops.push_back(Op::Put(StopKey(id), "true"));
  if (!pc.superseded.empty()) ops.push_back(Op::Put(SupersededKey(id), pc.superseded));
  return ops;
}

std::vector<store::Op> DropDefinitionOps(const std::string& id) {
  return {Op::Delete(MetaKey(id)),       Op::DeletePrefix(ContextPrefix(id) + "app/"),
          Op::DeletePrefix(EventPrefix(id)), Op::Delete(SealedKey(id)),
          Op::Delete(StopKey(id)),       Op::Delete(SupersededKey(id)),
          Op::Delete(StatusKey(id)),     Op::Delete(RsyncLockKey(id))};
}

}  // namespace eco::appcontext
