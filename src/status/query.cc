#include "status/query.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "appcontext/appcontext.h"
#include "appcontext/event_record.h"
#include "appcontext/records.h"
#include "appcontext/rollout.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"
#include "common/json_fields.h"
#include "status/liveness.h"
#include "status/query_internal.h"

namespace eco::status {

using namespace detail;  // NOLINT: this file defines them

namespace {

bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A resource's drift in the deployed view: what differs now (fields,
// deleted, since) and how often eco applied it again.
json DriftJson(const appcontext::ResourceDrift& d) {
  json j = json::object();
  if (d.drifted) {
    json fields = json::array();
    for (const auto& f : d.fields) {
      json e = {{"path", f.path}, {"desired", f.desired}, {"live", f.live}};
      if (!f.manager.empty()) e["manager"] = f.manager;
      fields.push_back(std::move(e));
    }
    j = {{"fields", std::move(fields)}, {"deleted", d.deleted}, {"since", d.since}};
  }
  if (d.repairs > 0) {
    j["repairs"] = d.repairs;
    j["lastRepair"] = d.last_repair;
  }
  return j;
}

// EMCO's name rule (the API's ValidName; status sits below the API).
bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 128 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::vector<std::string> Values(const std::multimap<std::string, std::string>& p,
                                const std::string& k) {
  std::vector<std::string> out;
  auto [b, e] = p.equal_range(k);
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

bool In(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v) {
    if (x == s) return true;
  }
  return false;
}

// {"Group","Version","Kind"} of an object.
json Gvk(const json& obj) {
  std::string av = StringField(obj, "apiVersion");
  std::string group, version = av;
  if (auto slash = av.find('/'); slash != std::string::npos) {
    group = av.substr(0, slash);
    version = av.substr(slash + 1);
  }
  return {{"Group", group}, {"Version", version}, {"Kind", StringField(obj, "kind")}};
}

std::string MetaName(const json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() ? StringField(*m, "name") : std::string();
}

}  // namespace

namespace detail {

// The lifecycle state record; an empty one when none is stored. A
// malformed one is the query's error (catalog/lifecycle.h).
Result<catalog::LifecycleState> ReadState(store::Store& st, const std::string& type,
                                          const catalog::Keys& keys) {
  auto rec = catalog::ReadLifecycleState(st, type, keys);
  if (!rec.ok()) return rec.status();
  if (!rec->has_value()) return catalog::LifecycleState{};
  return std::move((*rec)->state);
}

// Every state record under `prefix`, by the rest of its key; a malformed
// one fails the read (an answer missing a deployment would look complete).
Result<std::map<std::string, catalog::LifecycleState>> ReadStates(store::Store& st, const std::string& prefix) {
  std::map<std::string, catalog::LifecycleState> out;
  store::RangeOptions o;
  for (;;) {
    o.limit = 5000;
    auto r = st.Range(prefix, o);
    if (!r.ok()) return r.status();
    for (const auto& kv : r->kvs) {
      auto rec = catalog::LifecycleStateOf(kv);
      if (!rec.ok()) return rec.status();
      out.emplace(kv.key.substr(prefix.size()), std::move(*rec));
    }
    if (!r->more || r->kvs.empty()) break;
    o.after = r->kvs.back().key;
  }
  return out;
}

// The aggregate readyStatus: Ready only when nothing counts otherwise.
std::string Aggregate(const std::map<std::string, int64_t>& counts) {
  for (const char* other : {"NotReady", "NotPresent", "Stale"}) {
    if (auto it = counts.find(other); it != counts.end() && it->second > 0) return "NotReady";
  }
  return "Ready";
}

// A cluster entry's eco additions: when it was last heard from, why it
// may be out of date.
void MarkLiveness(json& entry, const Liveness::Verdict& v) {
  if (v.last_seen) entry["lastSeen"] = *v.last_seen;
  if (v.unreachable) {
    json u = appcontext::ToJson(*v.unreachable);
    if (v.unreachable->since.empty()) u.erase("since");
    entry["unreachable"] = std::move(u);
  }
  if (v.stale) entry["stale"] = true;
}

}  // namespace detail

namespace {

class Builder {
 public:
  Builder(store::Store& st, const Query& q, bool for_lc, Liveness& live)
      : st_(st), ctx_(st), q_(q), for_lc_(for_lc), live_(live) {}

  // Fills `out` (which holds the identity fields) for AppContext `id` (or
  // only the states when there is none yet).
  Status Fill(json& out, const catalog::LifecycleState& state_rec) {
    std::string id = q_.instance.empty() ? state_rec.LastInstance() : q_.instance;
    if (!q_.instance.empty() && !state_rec.HasInstance(q_.instance)) {
      return Invalid("Invalid query instance: " + q_.instance + " is not an AppContext of this " +
                     (for_lc_ ? "Logical Cloud" : "DeploymentIntentGroup"));
    }
    bool listing = q_.list_apps || q_.list_clusters || q_.list_resources;
    if (!listing) out["states"] = catalog::ToJson(state_rec);
    if (id.empty()) {
      if (q_.list_apps)
        out["apps"] = json::array();
      else if (q_.list_clusters)
        out["clustersByApp"] = json::array();
      else if (q_.list_resources)
        out["resourcesByApp"] = json::array();
      return Status::Ok();
    }
    auto meta = ctx_.GetMeta(id);
    if (!meta.ok()) return meta.status();
    id_ = id;
    status_ctx_ = meta->status_context.empty() ? id : meta->status_context;
    std::vector<std::string> apps = meta->app_order;
    if (!for_lc_) {
      for (const auto& a : q_.apps) {
        if (!In(apps, a))
          return Invalid("Filter app " + a + " not in list of apps for AppContext " + id);
      }
    }
    if (q_.list_apps) {
      out["apps"] = apps;
      return Status::Ok();
    }
    std::vector<std::string> chosen;
    for (const auto& a : apps) {
      if (for_lc_ || q_.apps.empty() || In(q_.apps, a)) chosen.push_back(a);
    }
    if (q_.list_clusters) return ClustersByApp(out, chosen);
    if (q_.list_resources) return ResourcesByApp(out, chosen);
    return FullStatus(out, chosen);
  }

 private:
  bool ClusterWanted(const std::string& key) const {
    return q_.clusters.empty() || In(q_.clusters, key);
  }
  bool ResourceWanted(const std::string& name) const {
    return q_.resources.empty() || In(q_.resources, name);
  }

  // The resources a cluster reports on: everything rsync deploys for the
  // deployed view; without hooks for the ready view (hooks run and may be
  // deleted: EMCO excludes them from readiness too).
  static std::vector<const appcontext::Resource*> Listed(const appcontext::ResourceSet& rs,
                                                         bool ready) {
    std::vector<const appcontext::Resource*> v;
    for (const auto& r : rs.crds) v.push_back(&r);
    for (const auto& r : rs.resources) v.push_back(&r);
    if (!ready) {
      for (const auto& r : rs.hooks) v.push_back(&r);
    }
    return v;
  }

  // The name and GVK of a resource, worked out once: 10,000 clusters share
  // the same few objects.
  struct Shape {
    std::string name;
    json gvk;
  };
  const Shape& ShapeOf(const appcontext::Resource* r) {
    auto it = shapes_.find(r);
    if (it == shapes_.end())
      it = shapes_.emplace(r, Shape{MetaName(r->object), Gvk(r->object)}).first;
    return it->second;
  }

  Status ClustersByApp(json& out, const std::vector<std::string>& apps) {
    json list = json::array();
    for (const auto& a : apps) {
      auto cs = ctx_.Clusters(id_, a);
      if (!cs.ok()) return cs.status();
      json clusters = json::array();
      for (const auto& c : *cs)
        clusters.push_back({{"clusterProvider", c.provider}, {"cluster", c.name}});
      list.push_back({{"app", a}, {"clusters", std::move(clusters)}});
    }
    out["clustersByApp"] = std::move(list);
    return Status::Ok();
  }

  // Resolves each variant's set once: 10,000 clusters share a handful.
  struct SetCache {
    const appcontext::AppPlan* plan;
    std::map<int, appcontext::ResourceSet> sets;
    Result<const appcontext::ResourceSet*> For(const appcontext::ClusterRef& c) {
      if (c.variant == 0) return &plan->shared;
      auto it = sets.find(c.variant);
      if (it == sets.end()) {
        auto rs = plan->For(c);
        if (!rs.ok()) return rs.status();
        it = sets.emplace(c.variant, std::move(*rs)).first;
      }
      return &it->second;
    }
  };

  Status ResourcesByApp(json& out, const std::vector<std::string>& apps) {
    json list = json::array();
    for (const auto& a : apps) {
      auto plan = ctx_.ReadApp(id_, a);
      if (!plan.ok()) return plan.status();
      SetCache cache{&*plan, {}};
      for (const auto& c : plan->clusters) {
        if (!ClusterWanted(c.key())) continue;
        auto rs = cache.For(c);
        if (!rs.ok()) return rs.status();
        json res = json::array();
        for (const auto* r : Listed(**rs, q_.ready)) {
          res.push_back({{"name", MetaName(r->object)}, {"GVK", Gvk(r->object)}});
        }
        list.push_back({{"app", a},
                        {"clusterProvider", c.provider},
                        {"cluster", c.name},
                        {"resources", std::move(res)}});
      }
    }
    out["resourcesByApp"] = std::move(list);
    return Status::Ok();
  }

  // An app's records by cluster key: a point read per cluster when the
  // query names a few (a cluster's status at 10,000 clusters), else one
  // range read.
  template <typename Rec, typename Parse>
  Result<std::map<std::string, Rec>> Records(const std::string& prefix, Parse parse) {
    constexpr size_t kPointReads = 8;
    if (q_.clusters.empty() || q_.clusters.size() > kPointReads)
      return ReadRecords<Rec>(st_, prefix, parse);
    std::map<std::string, Rec> out;
    for (const auto& c : q_.clusters) {
      auto kv = st_.Get(prefix + c);
      if (!kv.ok()) return kv.status();
      if (!kv->has_value()) continue;
      auto rec = parse((*kv)->value);
      if (rec.ok()) out.emplace(c, std::move(*rec));
    }
    return out;
  }

  Status FullStatus(json& out, const std::vector<std::string>& apps) {
    const bool dep = q_.deprecated_names;
    auto top = ctx_.GetStatus(id_);
    if (!top.ok()) return top.status();
    if (!top->empty()) out[dep ? "status" : "deployedStatus"] = *top;

    std::map<std::string, int64_t> counts;
    if (q_.ready) counts = {{"Ready", 0}, {"NotReady", 0}, {"NotPresent", 0}};
    const bool skip_newer = id_ == status_ctx_;
    json app_list = json::array();
    for (const auto& a : apps) {
      shapes_.clear();  // it points into the previous app's plan
      auto plan = ctx_.ReadApp(id_, a);
      if (!plan.ok()) return plan.status();
      SetCache cache{&*plan, {}};
      auto deployed = Records<appcontext::DeployedRecord>(
          appcontext::DeployedPrefix(status_ctx_) + a + "/",
          [](const std::string& v) { return appcontext::ParseDeployed(v); });
      if (!deployed.ok()) return deployed.status();
      std::map<std::string, appcontext::ReadyRecord> ready;
      if (q_.ready) {
        auto r = Records<appcontext::ReadyRecord>(
            appcontext::ReadyPrefix(status_ctx_) + a + "/",
            [](const std::string& v) { return appcontext::ParseReady(v); });
        if (!r.ok()) return r.status();
        ready = std::move(*r);
      }
      // eco's: what the clusters changed out of band (docs/rollouts.md#drift).
      std::map<std::string, appcontext::DriftRecord> drift;
      if (!q_.ready) {
        auto r = Records<appcontext::DriftRecord>(appcontext::DriftPrefix(status_ctx_) + a + "/",
                                                  [](const std::string& v) { return appcontext::ParseDrift(v); });
        if (!r.ok()) return r.status();
        drift = std::move(*r);
      }
      json cluster_list = json::array();
      for (const auto& c : plan->clusters) {
        if (!ClusterWanted(c.key())) continue;
        auto rs = cache.For(c);
        if (!rs.ok()) return rs.status();
        const appcontext::DeployedRecord* drec = nullptr;
        if (auto it = deployed->find(c.key()); it != deployed->end()) drec = &it->second;
        const appcontext::ReadyRecord* rrec = nullptr;
        if (auto it = ready.find(c.key()); it != ready.end()) rrec = &it->second;
        const appcontext::DriftRecord* dft = nullptr;
        if (auto it = drift.find(c.key()); it != drift.end()) dft = &it->second;
        ECO_ASSIGN_OR_RETURN(const Liveness::Verdict live,
                             live_.Judge(c.provider, c.name, drec || rrec));
        json res_list = json::array();
        for (const auto* r : Listed(**rs, q_.ready)) {
          const Shape& shape = ShapeOf(r);
          const std::string& mname = shape.name;
          if (!ResourceWanted(mname)) continue;
          const appcontext::ResourceDeployed* d = nullptr;
          if (drec) {
            if (auto it = drec->resources.find(r->name); it != drec->resources.end())
              d = &it->second;
          }
          // A resource last acted on by a newer revision belongs to that one.
          if (skip_newer && d && !d->ref.empty() && d->ref != id_) continue;
          std::string state, reported;
          if (q_.ready) {
            state = "NotPresent";
            if (rrec) {
              if (auto it = rrec->resources.find(r->name); it != rrec->resources.end())
                state = it->second;
            }
            if (live.stale) reported = std::exchange(state, "Stale");
          } else {
            state = d && !d->status.empty() ? d->status : "Pending";
          }
          const appcontext::ResourceDrift* rdft = nullptr;
          if (dft && !q_.ready && state == "Applied") {
            if (auto it = dft->resources.find(r->name); it != dft->resources.end()) rdft = &it->second;
            if (rdft && rdft->drifted) state = "Drifted";
          }
          ++counts[state];
          if (q_.output == "summary") continue;  // counts only
          json e = {{"GVK", shape.gvk}, {"name", mname}};
          if (q_.ready) {
            e[dep ? "clusterStatus" : "readyStatus"] = state;
            if (live.stale) e["lastReported"] = reported;  // eco's: what the cluster last said
            // eco's: which revision the readiness is about.
            if (rrec) RevisionFields(e, *rrec, r->name, d, live.stale ? reported : state);
          } else {
            e[dep ? "rsyncStatus" : "deployedStatus"] = state;
            // eco's addition: the cluster's answer for a Failed resource,
            // what a Pending one waits for.
            if (d && !d->error.empty()) e["error"] = d->error;
            if (rdft && (rdft->drifted || rdft->repairs > 0)) e["drift"] = DriftJson(*rdft);
          }
          // eco's: fields the cluster's schema does not declare, left out
          // of the apply (DIG spec.fieldValidation Warn).
          if (d && !d->warnings.empty())
            e["warnings"] = d->warnings;
          if (q_.output == "detail") e["detail"] = r->object;
          res_list.push_back(std::move(e));
        }
        if (!q_.ready && drec) {
          // eco's: objects of a replaced revision that are still on the
          // cluster (an update that failed or was cut short has not removed
          // them yet), until rsync records them Deleted.
          std::set<std::string> listed;
          for (const auto* r : Listed(**rs, false)) listed.insert(r->name);
          for (const auto& [name, d] : drec->resources) {
            if (listed.count(name) || d.status == "Deleted" || d.status.empty()) continue;
            if (skip_newer && !d.ref.empty() && d.ref != id_) continue;
            const auto plus = name.rfind('+');
            std::string mname = name.substr(0, plus);
            if (!ResourceWanted(mname)) continue;
            ++counts[d.status];
            if (q_.output == "summary") continue;
            json e = {{"GVK", {{"Group", ""}, {"Version", ""}, {"Kind", plus == std::string::npos ? "" : name.substr(plus + 1)}}},
                      {"name", std::move(mname)},
                      {dep ? "rsyncStatus" : "deployedStatus", d.status},
                      {"replaced", true}};
            if (!d.error.empty()) e["error"] = d.error;
            res_list.push_back(std::move(e));
          }
        }
        if (q_.ready && rrec) {
          // Objects only the cluster has (the Pods of the app's workloads),
          // appended as EMCO does. Their detail is not kept.
          for (const auto& [key, recorded] : rrec->cluster_only) {
            std::string name = key.substr(0, key.rfind('+'));
            if (!ResourceWanted(name)) continue;
            const std::string& state = live.stale ? std::string("Stale") : recorded;
            ++counts[state];
            if (q_.output == "summary") continue;
            json e = {{"GVK", {{"Group", ""}, {"Version", "v1"}, {"Kind", "Pod"}}},
                      {"name", std::move(name)},
                      {dep ? "clusterStatus" : "readyStatus", state}};
            if (live.stale) e["lastReported"] = recorded;
            res_list.push_back(std::move(e));
          }
        }
        if (res_list.empty()) continue;  // EMCO omits clusters with nothing counted (summary: all)
        std::string conn = drec && !drec->connectivity.empty() ? drec->connectivity : "Unknown";
        json entry = {{"clusterProvider", c.provider},
                      {"cluster", c.name},
                      {dep ? "readyStatus" : "connectivity", conn},
                      {"resources", std::move(res_list)}};
        // eco's additions: the ready monitor cannot reach the cluster, or
        // its agent is silent, so what it last saw there may be stale.
        MarkLiveness(entry, live);
        // Also eco's: why rsync is retrying the cluster.
        if (drec && conn == "Retrying" && !drec->message.empty()) entry["connectivityError"] = drec->message;
        cluster_list.push_back(std::move(entry));
      }
      if (cluster_list.empty()) continue;
      app_list.push_back({{"name", a}, {"clusters", std::move(cluster_list)}});
    }
    if (q_.ready) {
      out[dep ? "clusterStatus" : "readyCounts"] = counts;
      out["readyStatus"] = Aggregate(counts);
    } else if (!counts.empty()) {
      out[dep ? "rsyncStatus" : "deployedCounts"] = counts;
    }
    if (q_.output != "summary" && !app_list.empty()) out["apps"] = std::move(app_list);
    return Status::Ok();
  }

  // The generations behind a resource's readiness: the one eco's apply
  // made (rsync's record), the one judged and the one its controller
  // observed; revisionReady says whether "Ready" is about that apply (a
  // cluster still rolling it out, or not yet seen at it, reads false).
  static void RevisionFields(json& e, const appcontext::ReadyRecord& rrec, const std::string& res,
                             const appcontext::ResourceDeployed* d, const std::string& state) {
    int64_t judged = 0, observed = -1;
    if (auto g = rrec.generations.find(res); g != rrec.generations.end()) judged = g->second;
    if (auto g = rrec.observed_generations.find(res); g != rrec.observed_generations.end()) observed = g->second;
    if (judged > 0) e["generation"] = judged;
    if (observed >= 0) e["observedGeneration"] = observed;
    if (!d || d->generation <= 0) return;  // no generation recorded at apply: nothing to compare
    e["appliedGeneration"] = d->generation;
    const bool current = judged >= d->generation && (observed < 0 || observed >= d->generation);
    e["revisionReady"] = state == "Ready" && current;
  }

  store::Store& st_;
  appcontext::Contexts ctx_;
  const Query& q_;
  bool for_lc_;
  Liveness& live_;
  std::string id_;
  std::string status_ctx_;
  std::map<const appcontext::Resource*, Shape> shapes_;  // pointers into plans alive for the query
};

}  // namespace

Result<Query> ParseQuery(const std::multimap<std::string, std::string>& p, bool for_lc) {
  Query q;
  auto single = [&](const char* k, std::string* v) -> bool {
    auto vals = Values(p, k);
    if (vals.size() > 1) return false;
    if (vals.size() == 1) *v = vals[0];
    return true;
  };
  std::string type, status, output;
  // dcm reads no `type`: a logical cloud ignores it, whatever its value.
  bool has_type = !for_lc && p.count("type") > 0, has_status = p.count("status") > 0;
  if (has_type && (!single("type", &type) || (type != "rsync" && type != "cluster"))) {
    return Invalid("Invalid query type");
  }
  if (!single("status", &status) || (has_status && status != "deployed" && status != "ready")) {
    return Invalid("Invalid query status");
  }
  if (!single("output", &output) ||
      (p.count("output") && output != "summary" && output != "all" && output != "detail" &&
       output != "clusters")) {
    return Invalid("Invalid query output");
  }
  if (output == "clusters" && for_lc) {
    return Invalid("Invalid Input: output=clusters is served for a DeploymentIntentGroup's status only");
  }
  if (!single("instance", &q.instance) || (p.count("instance") && q.instance.empty())) {
    return Invalid("Invalid query instance");
  }
  if (has_status) {
    q.ready = status == "ready";
    q.deprecated_names = false;
  } else if (for_lc) {
    // dcm's default, always with the new names.
    q.ready = true;
    q.deprecated_names = false;
  } else {
    q.ready = type == "cluster";
    q.deprecated_names = true;
  }
  if (!output.empty()) q.output = output;
  if (!for_lc) {
    q.apps = Values(p, "app");
    for (const auto& a : q.apps) {
      if (!ValidName(a)) return Invalid("Invalid app query");
    }
  }
  q.clusters = Values(p, "cluster");
  for (const auto& c : q.clusters) {
    auto plus = c.find('+');
    if (plus == std::string::npos || c.find('+', plus + 1) != std::string::npos ||
        !ValidName(c.substr(0, plus)) || !ValidName(c.substr(plus + 1))) {
      return Invalid("Invalid cluster query");
    }
  }
  q.resources = Values(p, "resource");
  for (const auto& r : q.resources) {
    if (!ValidName(r)) return Invalid("Invalid resources query");
  }
  q.list_apps = !for_lc && p.count("apps") > 0;
  q.list_clusters = p.count("clusters") > 0;
  q.list_resources = p.count("resources") > 0;
  // Precedence: apps > clusters > resources > full status.
  if (q.list_apps) q.list_clusters = q.list_resources = false;
  if (q.list_clusters) q.list_resources = false;
  return q;
}

namespace detail {

void Report(const Liveness& live, Facts* facts) {
  if (!facts) return;
  facts->silent = live.silent();
  facts->next_stale = live.next_stale();
}

// The staged rollout of AppContext `id` (null when it had none): its state,
// and per wave how many clusters ended how (appcontext/rollout.h).
// `event`: only the progress of that event (0: whichever is recorded).
Result<json> Rollout(store::Store& st, const std::string& id, int64_t event) {
  auto kv = st.Get(appcontext::RolloutKey(id));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return json(nullptr);
  auto p = appcontext::RolloutProgressFromJson(json::parse((*kv)->value, nullptr, false));
  if (!p.ok()) return p.status();
  if (event != 0 && p->event != event) return json(nullptr);
  auto ends = st.Range(appcontext::RolloutClusterPrefix(id));
  if (!ends.ok()) return ends.status();
  std::map<std::string, std::string> ended;
  const size_t prefix = appcontext::RolloutClusterPrefix(id).size();
  for (const auto& e : ends->kvs) {
    ended[e.key.substr(prefix)] = appcontext::RolloutClusterEndFromJson(json::parse(e.value, nullptr, false)).state;
  }
  json waves = json::array();
  for (const auto& w : p->waves) {
    std::map<std::string, int64_t> n = {{"done", 0}, {"failed", 0}, {"skipped", 0}, {"left", 0}};
    int64_t pending = 0;
    for (const auto& c : w.clusters) {
      auto it = ended.find(c);
      if (it == ended.end()) {
        ++pending;
      } else {
        ++n[it->second];
      }
    }
    json e = {{"name", w.name},           {"clusters", w.clusters.size()}, {"done", n["done"]},
              {"failed", n["failed"]},    {"pending", pending},            {"skipped", n["skipped"]},
              {"left", n["left"]}};
    if (!w.started_at.empty()) e["startedAt"] = w.started_at;
    if (!w.completed_at.empty()) e["completedAt"] = w.completed_at;
    waves.push_back(std::move(e));
  }
  json out = {{"state", p->state}, {"revision", p->revision}, {"waves", std::move(waves)}};
  if (p->wave < p->waves.size()) out["wave"] = {{"index", p->wave}, {"name", p->waves[p->wave].name}};
  if (!p->reason.empty()) out["reason"] = p->reason;
  if (!p->started_at.empty()) out["startedAt"] = p->started_at;
  if (!p->rollback_context.empty()) {
    // The event undoing it tells how far the rollback is: an update of the
    // previous revision runs as a rollout of its own, a terminate does not.
    json rb = {{"revision", p->rollback_revision}};
    auto ev = st.Get(appcontext::EventKey(p->rollback_context, p->rollback_event));
    if (!ev.ok()) return ev.status();
    std::string status = "pending";
    if (ev->has_value()) {
      auto e = appcontext::ParseEvent(**ev);
      if (e.ok()) {
        status = e->status;
        if (!e->message.empty()) rb["message"] = e->message;
      }
    }
    if (p->rollback_context != id) {
      ECO_ASSIGN_OR_RETURN(json undo, Rollout(st, p->rollback_context, p->rollback_event));
      if (undo.is_object()) {
        rb["waves"] = undo["waves"];
        if (undo.contains("reason")) rb["reason"] = undo["reason"];
        rb["state"] = undo["state"];
      }
    }
    if (status == "done") {
      out["state"] = "RolledBack";
    } else if (status == "error" || status == "skip") {
      out["state"] = "Failed";
      out["reason"] = p->reason + "; the rollback did not complete" +
                      (rb.contains("message") ? ": " + rb["message"].get<std::string>() : std::string());
    } else if (rb.value("state", "") == "Paused") {
      out["reason"] = p->reason + "; the rollback is paused: " + rb.value("reason", "");
    }
    out["rollback"] = std::move(rb);
  }
  return out;
}

}  // namespace detail

namespace {

Result<json> Dig(store::Store& st, const DigRef& d, const Query& q, const QueryOptions& opts,
                 Facts* facts) {
  catalog::Keys keys = {d.project, d.composite_app, d.version, d.dig};
  auto dig = catalog::Get(st, "deploymentIntentGroup", keys);
  if (!dig.ok()) return dig.status();
  if (!dig->has_value()) return NotFound("DeploymentIntentGroup not found");
  auto rec = ReadState(st, "deploymentIntentGroup", keys);
  if (!rec.ok()) return rec.status();
  json spec = (**dig).is_object() ? (**dig).value("spec", json::object()) : json::object();
  json out = {{"project", d.project},
              {"compositeApp", d.composite_app},
              {"compositeAppVersion", d.version},
              {"compositeProfile", StringField(spec, "compositeProfile")},
              {"name", d.dig}};
  Liveness live(st, opts, q.clusters);
  Builder b(st, q, false, live);
  ECO_RETURN_IF_ERROR(b.Fill(out, *rec));
  const std::string id = q.instance.empty() ? rec->LastInstance() : q.instance;
  if (!id.empty() && !q.list_apps && !q.list_clusters && !q.list_resources) {
    ECO_ASSIGN_OR_RETURN(json rollout, Rollout(st, id));
    if (!rollout.is_null()) out["rollout"] = std::move(rollout);
  }
  Report(live, facts);
  return out;
}

Result<json> Lc(store::Store& st, const std::string& project, const std::string& lc, const Query& q,
                const QueryOptions& opts, Facts* facts) {
  auto obj = catalog::Get(st, "logicalCloud", {project, lc});
  if (!obj.ok()) return obj.status();
  if (!obj->has_value()) return NotFound("Logical Cloud not found");
  auto rec = ReadState(st, "logicalCloud", {project, lc});
  if (!rec.ok()) return rec.status();
  // Logical clouds get no record when created: show one as the API would write it.
  if (rec->actions.empty())
    rec->Append("Created", "", 0, catalog::NowRfc3339(opts.clock ? *opts.clock : RealClock()));
  json out = {{"project", project}, {"name", lc}};
  Liveness live(st, opts, q.clusters);
  Builder b(st, q, true, live);
  ECO_RETURN_IF_ERROR(b.Fill(out, *rec));
  Report(live, facts);
  // dcm's shape: the cloud's one app's clusters at the top, no `apps`.
  if (auto apps = out.find("apps"); apps != out.end()) {
    json clusters = json::array();
    for (auto& app : *apps) {
      for (auto& c : app["clusters"]) clusters.push_back(std::move(c));
    }
    out.erase(apps);
    if (!clusters.empty()) out["clusters"] = std::move(clusters);
  }
  return out;
}

}  // namespace

Result<json> DigStatus(store::Store& st, const DigRef& d, const Query& q,
                       const QueryOptions& opts) {
  return Dig(st, d, q, opts, nullptr);
}

Result<json> LogicalCloudStatus(store::Store& st, const std::string& project, const std::string& lc,
                                const Query& q, const QueryOptions& opts) {
  return Lc(st, project, lc, q, opts, nullptr);
}

Result<json> ClusterStatus(store::Store& st, const std::string& provider, const std::string& cluster,
                           const Query& q, const QueryOptions& opts) {
  if (auto c = catalog::Get(st, "cluster", {provider, cluster}); !c.ok()) {
    return c.status();
  } else if (!c->has_value()) {
    return NotFound("Cluster not found");
  }
  if (!q.instance.empty()) {
    return Invalid("Invalid query instance: a cluster has no AppContext of its own in eco");
  }
  const bool dep = q.deprecated_names;
  const char* state_field = q.ready ? (dep ? "clusterStatus" : "readyStatus") : (dep ? "rsyncStatus" : "deployedStatus");
  // Each instantiation is asked for this one cluster, in full, and the
  // answer folded into one cluster's view.
  Query sub = q;
  sub.instance.clear();
  sub.apps.clear();
  sub.clusters = {provider + "+" + cluster};
  sub.list_apps = sub.list_clusters = sub.list_resources = false;
  if (sub.output == "summary") sub.output = "all";

  std::map<std::string, int64_t> counts;
  if (q.ready) counts = {{"Ready", 0}, {"NotReady", 0}, {"NotPresent", 0}};
  json resources = json::array();
  json deployments = json::array();
  std::string connectivity;
  appcontext::Contexts contexts(st);
  Liveness live(st, opts, sub.clusters);  // shared: one cluster, judged once
  bool stale = false;
  for (const char* type : {"deploymentIntentGroup", "logicalCloud"}) {
    const bool is_dig = std::string(type) == "deploymentIntentGroup";
    const std::string prefix = catalog::StatePrefix(type);
    auto recs = ReadStates(st, prefix);
    if (!recs.ok()) return recs.status();
    for (auto& [rest, rec] : *recs) {
      std::string id = rec.LastInstance();
      if (id.empty()) continue;
      auto top = contexts.GetStatus(id);
      if (!top.ok() || top->empty() || *top == "Terminated") continue;  // nothing left there
      catalog::Keys keys;
      for (size_t b = 0, e; b <= rest.size(); b = e + 1) {
        e = rest.find('/', b);
        if (e == std::string::npos) e = rest.size();
        keys.push_back(rest.substr(b, e - b));
      }
      if (keys.size() != (is_dig ? 4u : 2u)) continue;
      json owner = is_dig ? json{{"project", keys[0]}, {"compositeApp", keys[1]},
                                 {"compositeAppVersion", keys[2]}, {"deploymentIntentGroup", keys[3]}}
                          : json{{"project", keys[0]}, {"logicalCloud", keys[1]}};
      json one = json::object();
      Builder b(st, sub, !is_dig, live);
      if (auto s = b.Fill(one, rec); !s.ok()) {
        if (s.code() == Code::kNotFound) continue;  // deleted meanwhile
        return s;
      }
      std::map<std::string, int64_t> mine;
      for (const auto& app : one.value("apps", json::array())) {
        std::string app_name = StringField(app, "name");
        if (!q.apps.empty() && !In(q.apps, app_name)) continue;
        for (const auto& c : app.value("clusters", json::array())) {
          stale = stale || c.value("stale", false);
          std::string conn = StringField(c, dep ? "readyStatus" : "connectivity");
          // Retrying anywhere wins: the cluster is not answering rsync.
          if (conn == "Retrying" || connectivity.empty() || (connectivity == "Unknown" && conn == "Available"))
            connectivity = conn;
          for (auto r : c.value("resources", json::array())) {
            std::string state = StringField(r, state_field);
            ++mine[state];
            ++counts[state];
            if (q.output == "summary") continue;
            r["app"] = app_name;
            for (const auto& [k, v] : owner.items()) r[k] = v;
            resources.push_back(std::move(r));
          }
        }
      }
      if (mine.empty()) continue;  // nothing of it on this cluster
      json d = owner;
      d[dep ? "status" : "deployedStatus"] = *top;
      d[q.ready ? (dep ? "clusterStatus" : "readyCounts") : (dep ? "rsyncStatus" : "deployedCounts")] = mine;
      if (q.ready) d["readyStatus"] = Aggregate(mine);
      deployments.push_back(std::move(d));
    }
  }
  json out = {{"clusterProvider", provider}, {"name", cluster}};
  if (q.ready) {
    out[dep ? "clusterStatus" : "readyCounts"] = counts;
    out["readyStatus"] = Aggregate(counts);
  } else if (!counts.empty()) {
    out[dep ? "rsyncStatus" : "deployedCounts"] = counts;
  }
  out["deployments"] = std::move(deployments);
  // Stale when any deployment's records there are (an agent cluster with
  // records of one deployment only).
  ECO_ASSIGN_OR_RETURN(Liveness::Verdict v, live.Judge(provider, cluster, false));
  v.stale = v.stale || stale;
  MarkLiveness(out, v);
  if (v.seen && !v.seen->agent_version.empty()) out["agentVersion"] = v.seen->agent_version;
  if (q.output != "summary") {
    out["cluster"] = {{"clusterProvider", provider},
                      {"cluster", cluster},
                      {dep ? "readyStatus" : "connectivity", connectivity.empty() ? "Unknown" : connectivity},
                      {"resources", std::move(resources)}};
  }
  return out;
}

namespace detail {

// Follows a state record and the AppContexts it names; see WatchDigStatus.
Status WatchStatus(store::Store& st, const std::string& state_key,
                   const std::function<Result<json>(Facts*)>& compute,
                   const std::function<bool(const json&)>& emit, const std::function<bool()>& open,
                   std::chrono::milliseconds coalesce, Clock& clock) {
  std::mutex mu;
  std::condition_variable cv;
  bool changed = true;  // guarded by mu
  bool rewatch = true;  // guarded by mu: a watch ended, start them again
  // Agent clusters the last answer showed silent: a contact from one of
  // them changes the answer, anyone else's does not.
  std::set<std::string> silent;  // guarded by mu
  const std::string seen_prefix = appcontext::SeenPrefix();
  auto callbacks = [&](bool contacts) {
    store::WatchCallbacks cb;
    cb.on_events = [&, contacts](const std::vector<store::WatchEvent>& evs) {
      std::lock_guard<std::mutex> l(mu);
      bool any = !contacts;
      for (size_t i = 0; contacts && !any && i < evs.size(); ++i)
        any = silent.count(evs[i].kv.key.substr(seen_prefix.size())) > 0;
      if (!any) return;
      changed = true;
      cv.notify_all();
    };
    cb.on_error = [&](const Status&) {
      std::lock_guard<std::mutex> l(mu);
      changed = rewatch = true;
      cv.notify_all();
    };
    return cb;
  };
  std::vector<std::unique_ptr<store::WatchHandle>> watches;
  std::set<std::string> watched;  // prefixes
  std::string last;
  bool first = true;
  // When a cluster of the last answer turns stale (on `clock`; max: none will).
  Clock::Time stale_at = Clock::Time::max();
  Clock::Duration last_cost{};  // how long the last answer took to compute
  while (open()) {
    {
      std::unique_lock<std::mutex> l(mu);
      Clock::Time until = clock.Now() + std::chrono::seconds(1);
      if (stale_at < until) until = stale_at;
      if (!clock.WaitUntil(cv, l, until, [&] { return changed; })) {
        if (clock.Now() < stale_at) continue;
        changed = true;
      }
    }
    // Let a burst of writes land; a costly answer waits longer.
    if (!first) clock.SleepFor(std::max<Clock::Duration>(coalesce, 3 * last_cost));
    first = false;
    bool again;
    std::set<std::string> want = {state_key, std::string(appcontext::kUnreachablePrefix)};
    {
      std::lock_guard<std::mutex> l(mu);
      changed = false;
      again = rewatch;
      rewatch = false;
      // The contacts are watched only while some cluster is silent: a
      // fleet of agents writes them all the time.
      if (!silent.empty()) want.insert(seen_prefix);
    }
    // Watch before computing, so that no change slips between the two.
    auto kv = st.Get(state_key);
    if (!kv.ok()) return kv.status();
    if (kv->has_value()) {
      // A malformed record is compute()'s error to report.
      if (auto rec = catalog::LifecycleStateOf(**kv); rec.ok()) {
        if (!rec->status_context.empty()) want.insert(appcontext::ContextPrefix(rec->status_context));
        if (std::string i = rec->LastInstance(); !i.empty()) want.insert(appcontext::ContextPrefix(i));
      }
    }
    if (again || want != watched) {
      watches.clear();  // no callback runs after this
      for (const auto& p : want) {
        auto w = st.Watch(p, 0, callbacks(p == seen_prefix));
        if (!w.ok()) return w.status();
        watches.push_back(std::move(*w));
      }
      watched = want;
    }
    Facts facts;
    const Clock::Time began = clock.Now();
    auto out = compute(&facts);
    if (!out.ok()) return out.status();
    last_cost = clock.Now() - began;
    stale_at = facts.next_stale ? clock.Now() + *facts.next_stale : Clock::Time::max();
    {
      std::lock_guard<std::mutex> l(mu);
      // Newly silent clusters: computed again once their contacts are
      // watched, so that none written meanwhile is missed.
      if (!facts.silent.empty() && !watched.count(seen_prefix)) changed = true;
      silent = std::move(facts.silent);
    }
    std::string text = out->dump();
    if (text == last) continue;
    last = std::move(text);
    if (!emit(*out)) return Status::Ok();
  }
  return Status::Ok();
}

// The answers are measured on the stream's clock.
QueryOptions OnClock(QueryOptions opts, const Clock& clock) {
  opts.clock = &clock;
  return opts;
}

}  // namespace detail

Status WatchDigStatus(store::Store& st, const DigRef& d, const Query& q,
                      const std::function<bool(const json&)>& emit,
                      const std::function<bool()>& open, std::chrono::milliseconds coalesce,
                      Clock& clock, const QueryOptions& opts) {
  const QueryOptions o = OnClock(opts, clock);
  return WatchStatus(
      st,
      catalog::StateKey("deploymentIntentGroup", {d.project, d.composite_app, d.version, d.dig}),
      [&](Facts* f) { return Dig(st, d, q, o, f); }, emit, open, coalesce, clock);
}

Status WatchLogicalCloudStatus(store::Store& st, const std::string& project, const std::string& lc,
                               const Query& q, const std::function<bool(const json&)>& emit,
                               const std::function<bool()>& open,
                               std::chrono::milliseconds coalesce, Clock& clock,
                               const QueryOptions& opts) {
  const QueryOptions o = OnClock(opts, clock);
  return WatchStatus(
      st, catalog::StateKey("logicalCloud", {project, lc}),
      [&](Facts* f) { return Lc(st, project, lc, q, o, f); }, emit, open, coalesce, clock);
}

Result<std::string> StatusContextOf(store::Store& st, const std::string& id) {
  appcontext::Contexts c(st);
  auto m = c.GetMeta(id);
  if (!m.ok()) return m.status();
  return m->status_context.empty() ? id : m->status_context;
}

}  // namespace eco::status
