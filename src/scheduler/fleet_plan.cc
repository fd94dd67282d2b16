#include "scheduler/fleet_plan.h"

#include <openssl/evp.h>

#include <algorithm>
#include <set>
#include <utility>

#include "appcontext/rollout.h"
#include "common/hex.h"

namespace eco::scheduler {

using appcontext::AppPlan;
using appcontext::ClusterRef;
using appcontext::Resource;
using appcontext::ResourceSet;
using nlohmann::json;

namespace {

std::string PlanSha256Hex(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), md, &n, EVP_sha256(), nullptr);
  std::string out;
  hex::Append(out, std::string_view(reinterpret_cast<const char*>(md), n));
  return out;
}

bool PlainKey(const std::string& k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::string Child(const std::string& path, const std::string& key) {
  if (PlainKey(key)) return path.empty() ? key : path + "." + key;
  return path + "[" + json(key).dump() + "]";
}

void DiffInto(const json& from, const json& to, const std::string& path, json& out) {
  if (from == to) return;
  if (from.is_object() && to.is_object()) {
    for (auto it = from.begin(); it != from.end(); ++it) {
      auto t = to.find(it.key());
      if (t == to.end()) {
        out.push_back({{"path", Child(path, it.key())}, {"from", it.value()}});
      } else {
        DiffInto(it.value(), *t, Child(path, it.key()), out);
      }
    }
    for (auto it = to.begin(); it != to.end(); ++it) {
      if (!from.contains(it.key())) out.push_back({{"path", Child(path, it.key())}, {"to", it.value()}});
    }
    return;
  }
  if (from.is_array() && to.is_array() && from.size() == to.size()) {
    for (size_t i = 0; i < from.size(); ++i) DiffInto(from[i], to[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  out.push_back({{"path", path}, {"from", from}, {"to", to}});
}

// What the plan names an object by.
json ObjectRefOf(const Resource& r) {
  json j = {{"kind", r.object.value("kind", "")}, {"name", ""}};
  if (auto md = r.object.find("metadata"); md != r.object.end() && md->is_object()) {
    if (auto n = md->find("name"); n != md->end() && n->is_string()) j["name"] = *n;
    if (auto ns = md->find("namespace"); ns != md->end() && ns->is_string()) j["namespace"] = *ns;
  }
  return j;
}

// The objects that stay on a cluster, in apply order: CRDs and main
// resources (hooks run at install and are not state an update compares).
std::vector<const Resource*> Kept(const ResourceSet* rs) {
  std::vector<const Resource*> out;
  if (!rs) return out;
  for (const auto& r : rs->crds) out.push_back(&r);
  for (const auto& r : rs->resources) out.push_back(&r);
  return out;
}

// One app's change on the clusters that share a pair of resource sets.
struct AppDelta {
  json create = json::array();
  json change = json::array();
  json remove = json::array();
  int64_t bytes = 0;
  std::string digest;  // of everything above and of the manifests applied
};

// A manifest as hashed: the new context's own id (a fresh one in every
// build, in labels only before a first instantiation) left out.
std::string Normalized(const json& object, const std::string& id) {
  std::string s = object.dump();
  if (id.empty()) return s;
  const std::string quoted = "\"" + id + "\"";
  for (size_t at = s.find(quoted); at != std::string::npos; at = s.find(quoted, at + 5)) s.replace(at, quoted.size(), "\"new\"");
  return s;
}

AppDelta Compute(const ResourceSet* from, const ResourceSet* to, const std::string& next_id) {
  AppDelta d;
  std::string h;
  std::map<std::string, const Resource*> old;
  for (const Resource* r : Kept(from)) old.emplace(r->name, r);
  std::set<std::string> now;
  for (const Resource* r : Kept(to)) {
    now.insert(r->name);
    auto o = old.find(r->name);
    if (o != old.end() && o->second->object == r->object) continue;
    const std::string body = Normalized(r->object, next_id);
    d.bytes += static_cast<int64_t>(body.size());
    h += (o == old.end() ? "+" : "~") + r->name + "\n" + body + "\n";
    if (o == old.end()) {
      d.create.push_back(ObjectRefOf(*r));
    } else {
      json c = ObjectRefOf(*r);
      c["diff"] = DiffManifests(o->second->object, r->object);
      d.change.push_back(std::move(c));
    }
  }
  // rsync deletes in reverse order.
  auto gone = Kept(from);
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
    if (now.count((*it)->name)) continue;
    d.remove.push_back(ObjectRefOf(**it));
    h += "-" + (*it)->name + "\n";
  }
  d.digest = PlanSha256Hex(h);
  return d;
}

// The resource sets of an app's variants, each resolved once.
class Variants {
 public:
  explicit Variants(const AppPlan* plan) : plan_(plan) {}
  Result<const ResourceSet*> Of(const ClusterRef* c) {
    if (!plan_ || !c) return static_cast<const ResourceSet*>(nullptr);
    if (c->variant == 0) return &plan_->shared;
    auto it = sets_.find(c->variant);
    if (it == sets_.end()) {
      ECO_ASSIGN_OR_RETURN(ResourceSet rs, plan_->For(*c));
      it = sets_.emplace(c->variant, std::move(rs)).first;
    }
    return &it->second;
  }

 private:
  const AppPlan* plan_;
  std::map<int, ResourceSet> sets_;
};

std::vector<std::string> NaturallySorted(std::set<std::string> keys) {
  std::vector<std::string> v(keys.begin(), keys.end());
  std::sort(v.begin(), v.end(), appcontext::NaturalLess);
  return v;
}

}  // namespace

json DiffManifests(const json& from, const json& to) {
  json out = json::array();
  DiffInto(from, to, "", out);
  return out;
}

Result<json> DescribePlan(const PlanInput& in) {
  static const BuildTrace kNoTrace;
  const BuildTrace& trace = in.trace ? *in.trace : kNoTrace;
  ECO_ASSIGN_OR_RETURN(appcontext::Meta next, in.next->GetMeta(in.next_id));
  appcontext::Meta cur;
  if (!in.current_id.empty()) {
    ECO_ASSIGN_OR_RETURN(cur, in.current->GetMeta(in.current_id));
  }
  std::vector<std::string> apps = next.app_order;
  for (const auto& a : cur.app_order) {
    if (std::find(apps.begin(), apps.end(), a) == apps.end()) apps.push_back(a);
  }

  // Per app, the deltas of each (new variant, old variant) pair: a manifest
  // shared by many clusters is compared once.
  struct AppWork {
    std::map<std::pair<int, int>, AppDelta> deltas;
  };
  std::map<std::string, AppWork> work;
  std::map<std::string, std::vector<std::pair<std::string, const AppDelta*>>> per_cluster;
  json apps_out = json::array();
  for (const auto& app : apps) {
    AppPlan np, cp;
    const bool in_next = std::find(next.app_order.begin(), next.app_order.end(), app) != next.app_order.end();
    const bool in_cur = std::find(cur.app_order.begin(), cur.app_order.end(), app) != cur.app_order.end();
    if (in_next) {
      ECO_ASSIGN_OR_RETURN(np, in.next->ReadApp(in.next_id, app));
    }
    if (in_cur) {
      ECO_ASSIGN_OR_RETURN(cp, in.current->ReadApp(in.current_id, app));
    }
    std::map<std::string, const ClusterRef*> nk, ck;
    for (const auto& c : np.clusters) nk[c.key()] = &c;
    for (const auto& c : cp.clusters) ck[c.key()] = &c;
    std::set<std::string> all;
    for (const auto& [k, c] : nk) all.insert(k);
    for (const auto& [k, c] : ck) all.insert(k);
    Variants nv(in_next ? &np : nullptr), cv(in_cur ? &cp : nullptr);
    AppWork& w = work[app];
    json a = {{"name", app}, {"clusters", json::array()}, {"added", json::array()}, {"removed", json::array()}};
    const auto placed = trace.placed.find(app);
    const auto custom = trace.customized.find(app);
    for (const auto& key : NaturallySorted(all)) {
      auto n = nk.find(key);
      auto c = ck.find(key);
      const ClusterRef* ncl = n == nk.end() ? nullptr : n->second;
      const ClusterRef* ccl = c == ck.end() ? nullptr : c->second;
      if (ncl) {
        json e = {{"cluster", key}};
        if (placed != trace.placed.end()) {
          if (auto r = placed->second.find(key); r != placed->second.end()) e["reason"] = r->second;
        }
        if (custom != trace.customized.end()) {
          if (auto r = custom->second.find(key); r != custom->second.end()) e["customizedBy"] = r->second;
        }
        a["clusters"].push_back(std::move(e));
        if (!ccl) a["added"].push_back(key);
      } else {
        a["removed"].push_back(key);
      }
      const std::pair<int, int> pair{ncl ? ncl->variant : -1, ccl ? ccl->variant : -1};
      auto d = w.deltas.find(pair);
      if (d == w.deltas.end()) {
        ECO_ASSIGN_OR_RETURN(const ResourceSet* to, nv.Of(ncl));
        ECO_ASSIGN_OR_RETURN(const ResourceSet* from, cv.Of(ccl));
        d = w.deltas.emplace(pair, Compute(from, to, in.next_id)).first;
      }
      per_cluster[key].emplace_back(app, &d->second);
    }
    if (auto dr = trace.dropped.find(app); dr != trace.dropped.end() && !dr->second.empty()) {
      json np_out = json::array();
      for (const auto& [key, why] : dr->second) np_out.push_back({{"cluster", key}, {"reason", why}});
      a["notPlaced"] = std::move(np_out);
    }
    apps_out.push_back(std::move(a));
  }

  // Waves over every cluster the operation touches.
  std::set<std::string> keys;
  for (const auto& [k, v] : per_cluster) keys.insert(k);
  ECO_ASSIGN_OR_RETURN(auto strategy, appcontext::ParseRollout(in.dig_spec));
  std::vector<appcontext::PlannedWave> waves;
  if (!strategy) {
    waves.push_back({"all", NaturallySorted(keys)});
  } else {
    std::map<std::string, std::vector<catalog::ClusterInfo>> providers;
    std::vector<appcontext::RolloutCluster> rc;
    for (const auto& k : keys) {
      const std::string provider = k.substr(0, k.find('+'));
      const std::string name = k.substr(k.find('+') + 1);
      auto p = providers.find(provider);
      if (p == providers.end()) {
        ECO_ASSIGN_OR_RETURN(auto cs, in.clusters_of(provider));
        p = providers.emplace(provider, std::move(cs)).first;
      }
      appcontext::RolloutCluster c{k, {}};
      for (const auto& info : p->second) {
        if (info.name == name) c.labels = info.labels;
      }
      rc.push_back(std::move(c));
    }
    waves = appcontext::SplitIntoWaves(*strategy, std::move(rc));
  }

  json out = {{"operation", in.operation}, {"revision", in.revision}};
  if (!in.current_id.empty()) out["currentRevision"] = cur.revision;
  json waves_out = json::array();
  for (const auto& w : waves) waves_out.push_back({{"name", w.name}, {"clusters", w.clusters}});
  out["waves"] = std::move(waves_out);
  out["apps"] = std::move(apps_out);
  if (!trace.not_run.empty()) out["notRun"] = trace.not_run;

  // The id covers what the answer says and, per cluster, the digest of
  // each app's change (which includes the manifests applied).
  std::string id_input = out.dump();
  json clusters_out = json::array();
  json cluster_counts = json::array();
  json wave_counts = json::array();
  json app_counts = json::object();
  int64_t total_create = 0, total_change = 0, total_delete = 0, total_bytes = 0, changing = 0;
  for (const auto& w : waves) {
    int64_t wc = 0, wch = 0, wd = 0, wb = 0, wn = 0;
    for (const auto& key : w.clusters) {
      const auto& parts = per_cluster[key];
      json e = {{"cluster", key}, {"wave", w.name}, {"create", json::array()}, {"change", json::array()}, {"delete", json::array()}};
      int64_t c = 0, ch = 0, d = 0, b = 0;
      id_input += "\n" + key + "@" + w.name;
      for (const auto& [app, delta] : parts) {
        id_input += " " + app + ":" + delta->digest;
        c += static_cast<int64_t>(delta->create.size());
        ch += static_cast<int64_t>(delta->change.size());
        d += static_cast<int64_t>(delta->remove.size());
        b += delta->bytes;
        json& ac = app_counts[app];
        if (ac.is_null()) ac = {{"create", 0}, {"change", 0}, {"delete", 0}, {"clusters", 0}};
        ac["create"] = ac["create"].get<int64_t>() + static_cast<int64_t>(delta->create.size());
        ac["change"] = ac["change"].get<int64_t>() + static_cast<int64_t>(delta->change.size());
        ac["delete"] = ac["delete"].get<int64_t>() + static_cast<int64_t>(delta->remove.size());
        if (!delta->create.empty() || !delta->change.empty() || !delta->remove.empty()) {
          ac["clusters"] = ac["clusters"].get<int64_t>() + 1;
        }
        if (in.summary_only) continue;
        for (const char* f : {"create", "change", "delete"}) {
          const json& src = std::string(f) == "create" ? delta->create : std::string(f) == "change" ? delta->change : delta->remove;
          for (const auto& o : src) {
            json x = o;
            x["app"] = app;
            e[f].push_back(std::move(x));
          }
        }
      }
      if (c + ch + d == 0) continue;
      ++wn;
      wc += c, wch += ch, wd += d, wb += b;
      cluster_counts.push_back({{"cluster", key}, {"wave", w.name}, {"create", c}, {"change", ch}, {"delete", d}, {"bytes", b}});
      if (!in.summary_only) clusters_out.push_back(std::move(e));
    }
    wave_counts.push_back({{"name", w.name}, {"clusters", w.clusters.size()}, {"clustersChanging", wn}, {"create", wc},
                           {"change", wch}, {"delete", wd}, {"bytes", wb}});
    total_create += wc, total_change += wch, total_delete += wd, total_bytes += wb, changing += wn;
  }
  if (!in.summary_only) out["clusters"] = std::move(clusters_out);
  out["summary"] = {{"create", total_create},   {"change", total_change},  {"delete", total_delete},
                    {"bytes", total_bytes},     {"clusters", keys.size()}, {"clustersChanging", changing},
                    {"apps", std::move(app_counts)}, {"waves", std::move(wave_counts)},
                    {"byCluster", std::move(cluster_counts)}};
  out["planId"] = PlanSha256Hex(id_input);
  return out;
}

}  // namespace eco::scheduler
