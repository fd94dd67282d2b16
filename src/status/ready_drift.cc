#include "status/ready_drift.h"

#include <unordered_map>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "k8s/drift.h"
#include "status/ready_metrics.h"

namespace eco::status {

using nlohmann::json;

namespace {

// Whether a live object (null: gone) may have drifted from its item: gone,
// a field the slim event shows differs, or (when the manifest sets fields
// the event does not show) its spec moved on (metadata.generation) or it
// has no generation to tell by.
bool MayHaveDrifted(const Shape::Item& item, const json* obj,
                    std::optional<ObjectStates::State> before, bool modified) {
  if (obj == nullptr) return true;
  if (!k8s::Covers(*obj, item.visible)) return true;
  if (!item.hidden) return false;
  int64_t gen = 0;
  if (auto md = obj->find("metadata"); md != obj->end() && md->is_object()) {
    if (auto g = md->find("generation"); g != md->end() && g->is_number_integer())
      gen = g->get<int64_t>();
  }
  if (gen == 0) return modified;
  return before && before->generation != gen;
}

// The paths a Warn apply left out ("spec.replicas: field not declared ...").
std::vector<std::string> LeftOut(const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const auto& w : warnings) out.push_back(w.substr(0, w.find(':')));
  return out;
}

// How one resource is now: nullopt when it could not be told (the cluster
// did not answer).
std::optional<appcontext::ResourceDrift> JudgeOne(k8s::ClusterClient& client,
                                                  const Shape::Item& item,
                                                  const appcontext::ResourceDeployed& rd,
                                                  const std::string& ns_default) {
  const std::string av = StringField(item.compared, "apiVersion"),
                    kind = StringField(item.compared, "kind");
  const json& md = item.compared.contains("metadata") ? item.compared["metadata"] : json::object();
  auto info = client.ResolveKind(av, kind);
  if (!info.ok()) return std::nullopt;
  std::string ns = info->namespaced ? StringField(md, "namespace") : "";
  if (info->namespaced && ns.empty()) ns = ns_default;
  appcontext::ResourceDrift now;
  auto live = client.Get(av, kind, ns, StringField(md, "name"));
  if (!live.ok()) {
    if (live.status().code() != Code::kNotFound) return std::nullopt;
    now.drifted = now.deleted = true;
    return now;
  }
  for (auto& f : k8s::DriftedFields(*live, item.compared, LeftOut(rd.warnings))) {
    now.fields.push_back(
        {std::move(f.path), std::move(f.desired), std::move(f.live), std::move(f.manager)});
  }
  now.drifted = !now.fields.empty();
  return now;
}

void Log(log::Level level, const char* msg, const DriftJob& job, const std::string& res,
         std::vector<log::Field> more = {}) {
  std::vector<log::Field> fields = {
      log::Field("context", job.d.status_ctx), log::Field("app", job.app),
      log::Field("cluster", job.cluster_key), log::Field("resource", res)};
  for (auto& f : more) fields.push_back(std::move(f));
  log::Write(level, "drift", msg, fields);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ChangeSuspects(
    const Plan& p, const KindWatch& w, const std::string& okey, const json* obj,
    std::optional<ObjectStates::State> before, bool modified) {
  std::vector<std::pair<std::string, std::string>> out;
  const bool by_name = w.by_name();
  const std::string_view label = std::string_view(okey).substr(0, okey.find('\n'));
  for (const auto& [l, ac_key] : w.by_label) {
    if (!by_name && l != label) continue;
    auto ac = p.acs.find(*ac_key);
    if (ac == p.acs.end()) continue;
    for (const auto& item : ac->second.shape->items) {
      if (ac->second.watch[item.kind] != &w || item.object_key != okey) continue;
      if (MayHaveDrifted(item, obj, before, modified)) out.emplace_back(*ac_key, item.res_name);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> RelistSuspects(const Plan& p, const KindWatch& w,
                                                                const std::vector<json>& items) {
  std::vector<std::pair<std::string, std::string>> out;
  std::unordered_map<std::string, const json*> listed;
  for (const auto& obj : items) listed.emplace(ObjectKey(obj, w.by_name()), &obj);
  for (const auto& [label, ac_key] : w.by_label) {
    auto ac = p.acs.find(*ac_key);
    if (ac == p.acs.end()) continue;
    for (const auto& item : ac->second.shape->items) {
      if (ac->second.watch[item.kind] != &w) continue;
      auto it = listed.find(item.object_key);
      const json* obj = it == listed.end() ? nullptr : it->second;
      auto before = w.seen.objects.Get(item.object_key);
      // The first list knows no generation before it: only what it shows.
      if (MayHaveDrifted(item, obj, w.seen.synced ? before : std::nullopt, false))
        out.emplace_back(*ac_key, item.res_name);
    }
  }
  return out;
}

std::vector<DriftOutcome> DriftJudge::Run(std::vector<DriftJob> jobs) {
  std::vector<DriftOutcome> out;
  std::map<std::string, std::pair<std::string, std::string>>
      ctx_state;  // plan ctx -> status, policy
  for (auto& job : jobs) {
    auto st = ctx_state.find(job.plan_ctx);
    if (st == ctx_state.end()) {
      appcontext::Contexts contexts(st_);
      auto status = contexts.GetStatus(job.plan_ctx);
      auto meta = contexts.GetMeta(job.plan_ctx);
      std::string state = status.ok() ? *status : std::string();
      // The plan this monitor compares with must still be the latest: an
      // update may have begun before its scan saw it, and what rsync
      // applies then is the next revision, not drift.
      if (meta.ok() && !IsLatest(*meta)) state = "Replaced";
      st = ctx_state
               .emplace(job.plan_ctx,
                        std::make_pair(state, meta.ok() ? meta->drift_policy : std::string()))
               .first;
    }
    // While an event runs (or failed half way) what is on the cluster is
    // rsync's work in progress, not drift.
    if (st->second.first != "Instantiated") {
      out.push_back({job.d, job.res, std::nullopt});
      continue;
    }
    out.push_back(Judge(job, st->second.second == "enforce"));
  }
  return out;
}

// Whether `m`'s context is its deployment's latest revision (its state
// record's last instance); false when that cannot be read.
bool DriftJudge::IsLatest(const appcontext::Meta& m) {
  const bool lc = m.kind == "logicalCloud";
  const catalog::Keys keys =
      lc ? catalog::Keys{m.project, m.logical_cloud}
         : catalog::Keys{m.project, m.composite_app, m.composite_app_version, m.dig};
  auto rec = catalog::ReadLifecycleState(st_, lc ? "logicalCloud" : "deploymentIntentGroup", keys);
  return rec.ok() && rec->has_value() && (*rec)->state.LastInstance() == m.id;
}

// Compares the resources of one app x cluster, records what changed, and
// with `enforce` applies the drifted ones again.
DriftOutcome DriftJudge::Judge(const DriftJob& job, bool enforce) {
  DriftOutcome out{job.d, {}, std::nullopt};
  auto deployed = appcontext::ReadDeployed(st_, job.d.status_ctx, job.app, job.cluster_key);
  auto stored = appcontext::ReadDrift(st_, job.d.status_ctx, job.app, job.cluster_key);
  auto client = client_(job.provider, job.cluster);
  appcontext::Contexts contexts(st_);
  auto meta = contexts.GetMeta(job.plan_ctx);
  if (!deployed.ok() || !stored.ok() || !client.ok() || !meta.ok()) {
    out.deferred = job.res;
    return out;
  }
  appcontext::DriftRecord rec = stored->value_or(appcontext::DriftRecord{});
  const appcontext::DriftRecord before = rec;
  const std::string now_time = catalog::NowRfc3339(clock_);
  std::vector<std::string> to_repair;
  for (const auto& res : job.res) {
    const Shape::Item* item = job.shape->ItemNamed(res);
    if (item == nullptr) {  // no longer planned
      rec.resources.erase(res);
      continue;
    }
    const appcontext::ResourceDeployed* rd = nullptr;
    if (*deployed) {
      auto it = (*deployed)->resources.find(res);
      if (it != (*deployed)->resources.end()) rd = &it->second;
    }
    // Only what eco applied and owns is judged.
    if (rd == nullptr || rd->status != "Applied" || rd->shared) {
      if (auto it = rec.resources.find(res); it != rec.resources.end() && it->second.drifted) {
        it->second = {false, false, {}, "", it->second.repairs, it->second.last_repair};
      }
      continue;
    }
    // Applied from another revision than the plan this monitor holds (an
    // update it has not caught up with, the previous revision being
    // cleaned up): its manifest is not the one to compare with.
    auto now =
        rd->ref == job.plan_ctx ? JudgeOne(**client, *item, *rd, meta->namespace_) : std::nullopt;
    if (!now) {
      out.deferred.insert(res);
      continue;
    }
    auto [it, fresh] = rec.resources.try_emplace(res);
    appcontext::ResourceDrift& e = it->second;
    const std::string guard =
        job.d.status_ctx + "\n" + res + "\n" + job.cluster_key + "\n" + job.app;
    if (!now->drifted && !e.drifted) {
      if (fresh) rec.resources.erase(it);
      repaired_as_.erase(guard);
      continue;
    }
    now->repairs = e.repairs;
    now->last_repair = e.last_repair;
    if (now->drifted) {
      now->since = e.drifted ? e.since : now_time;
      if (!e.drifted) LogDrift(job, res, *now);
      if (enforce && repair_) to_repair.push_back(res);
    } else {
      repaired_as_.erase(guard);
      Log(log::Level::kInfo, "drift ended", job, res);
    }
    e = std::move(*now);
  }
  // Recorded before it is acted on.
  bool ok = true;
  out.drifted = WriteDrift(job, before, rec, &ok);
  if (!ok) {
    out.deferred = job.res;
    return out;
  }
  if (to_repair.empty()) return out;
  const appcontext::DriftRecord drifted = rec;
  Repair(job, **deployed, **client, meta->namespace_, to_repair, rec, out);
  if (auto n = WriteDrift(job, drifted, rec, &ok)) out.drifted = n;
  if (!ok) out.deferred = job.res;
  return out;
}

void DriftJudge::Repair(const DriftJob& job, const appcontext::DeployedRecord& deployed,
                        k8s::ClusterClient& client, const std::string& ns_default,
                        const std::vector<std::string>& to_repair, appcontext::DriftRecord& rec,
                        DriftOutcome& out) {
  for (const auto& res : to_repair) {
    appcontext::ResourceDrift& e = rec.resources[res];
    const std::string guard =
        job.d.status_ctx + "\n" + res + "\n" + job.cluster_key + "\n" + job.app;
    const std::string what = appcontext::ToJson(e)["fields"].dump() + (e.deleted ? "deleted" : "");
    // The same drift again right after its repair: the apply does not hold
    // (a value the server writes another way); once is enough.
    if (auto g = repaired_as_.find(guard); g != repaired_as_.end() && g->second == what) continue;
    const auto& rd = deployed.resources.at(res);
    Status s = repair_(rd.ref, job.app, job.provider, job.cluster, res, !rd.warnings.empty());
    if (!s.ok()) {
      Log(log::Level::kWarn, "drift repair failed", job, res, {log::Field("error", s.message())});
      out.deferred.insert(res);
      continue;
    }
    repaired_as_[guard] = what;
    DriftMetrics::Get().repaired->Increment();
    ++e.repairs;
    e.last_repair = catalog::NowRfc3339(clock_);
    Log(log::Level::kInfo, "drift repaired", job, res,
        {log::Field("repairs", static_cast<long long>(e.repairs))});
    // Judged again at once: the repair's own watch event may come before
    // this record is written, and must not find it drifted.
    auto again = JudgeOne(client, *job.shape->ItemNamed(res), rd, ns_default);
    if (again && !again->drifted) e = {false, false, {}, "", e.repairs, e.last_repair};
  }
}

void DriftJudge::LogDrift(const DriftJob& job, const std::string& res,
                          const appcontext::ResourceDrift& d) {
  DriftMetrics::Get().detected->Increment();
  std::string paths, managers;
  for (const auto& f : d.fields) {
    paths += (paths.empty() ? "" : ",") + f.path;
    if (!f.manager.empty() && managers.find(f.manager) == std::string::npos)
      managers += (managers.empty() ? "" : ",") + f.manager;
  }
  log::Write(
      log::Level::kWarn, "drift", d.deleted ? "drift detected: deleted" : "drift detected",
      {log::Field("context", job.d.status_ctx), log::Field("revision_context", job.plan_ctx),
       log::Field("app", job.app), log::Field("cluster", job.cluster_key),
       log::Field("resource", res), log::Field("fields", paths), log::Field("manager", managers)});
}

// Writes the record when it differs from `before`; the resources drifted
// now when it wrote (nullopt: nothing to write, or it failed: *ok false).
std::optional<int32_t> DriftJudge::WriteDrift(const DriftJob& job,
                                              const appcontext::DriftRecord& before,
                                              const appcontext::DriftRecord& rec, bool* ok) {
  *ok = true;
  if (appcontext::ToJson(before) == appcontext::ToJson(rec)) return std::nullopt;
  const std::string key = appcontext::DriftKey(job.d.status_ctx, job.app, job.cluster_key);
  auto r = rec.resources.empty() ? st_.Delete(key).status()
                                 : st_.Put(key, appcontext::ToJson(rec).dump()).status();
  if (!r.ok()) {
    *ok = false;
    return std::nullopt;
  }
  int32_t n = 0;
  for (const auto& [res, d] : rec.resources) n += d.drifted ? 1 : 0;
  return n;
}

}  // namespace eco::status
