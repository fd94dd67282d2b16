#include "status/fleet_view.h"

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "appcontext/rollout.h"
#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "common/json_fields.h"
#include "status/query_internal.h"

namespace eco::status {

namespace detail {

Result<const std::map<std::string, Directory::Entry>*> Directory::Provider(const std::string& provider) {
  if (auto it = providers_.find(provider); it != providers_.end()) return &it->second;
  ECO_ASSIGN_OR_RETURN(auto clusters, catalog::List(st_, "cluster", {provider}));
  ECO_ASSIGN_OR_RETURN(auto labels, catalog::List(st_, "clusterLabel", {provider}));
  std::map<std::string, Entry> out;
  std::map<std::string, bool> agent;
  for (const auto& c : clusters) {
    if (c.keys.size() != 2) continue;
    auto d = catalog::DeliveryOf(c.object);  // malformed: the catalog's to report; push
    Entry& e = out[c.keys[1]];
    e.agent = d.ok() && *d == catalog::Delivery::kAgent;
    agent[c.keys[1]] = e.agent;
  }
  for (const auto& l : labels) {
    if (l.keys.size() != 3) continue;
    if (auto it = out.find(l.keys[1]); it != out.end()) it->second.labels.push_back(l.keys[2]);
  }
  if (live_) live_->KnowDelivery(provider, agent);
  return &providers_.emplace(provider, std::move(out)).first->second;
}

Result<const Directory::Entry*> Directory::Find(const std::string& provider, const std::string& name) {
  ECO_ASSIGN_OR_RETURN(auto* p, Provider(provider));
  auto it = p->find(name);
  return it == p->end() ? nullptr : &it->second;
}

}  // namespace detail

namespace {

using detail::Directory;

enum Cell { kTotal, kReady, kNotReady, kNotPresent, kStale, kFailed, kPending, kDrifted, kWarnings, kCells };
using Cells = std::array<int64_t, kCells>;

struct Row {
  std::string provider, name;
  std::vector<std::optional<Cells>> cells;  // per app; nullopt: not placed there
  std::string connectivity;                 // merged: Retrying wins, then Available
  std::string connectivity_error;
  bool has_records = false;
  // Liveness::Judge's `stale`, by its has_records argument: judged once per
  // cluster, not once per app.
  std::optional<bool> stale[2];
};

// Where each cluster stands in the rollout of AppContext `id`: its wave's
// name and "done", "failed", "skipped", "left" (its end), "inProgress"
// (its wave started) or "pending". Empty when there is no rollout.
Result<std::map<std::string, std::pair<std::string, std::string>>> Waves(store::Store& st,
                                                                         const std::string& id) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  ECO_ASSIGN_OR_RETURN(auto kv, st.Get(appcontext::RolloutKey(id)));
  if (!kv) return out;
  auto p = appcontext::RolloutProgressFromJson(json::parse(kv->value, nullptr, false));
  if (!p.ok()) return p.status();
  const std::string prefix = appcontext::RolloutClusterPrefix(id);
  ECO_ASSIGN_OR_RETURN(auto ends, detail::ReadRecords<appcontext::RolloutClusterEnd>(
                                      st, prefix, [](const std::string& v) -> Result<appcontext::RolloutClusterEnd> {
                                        return appcontext::RolloutClusterEndFromJson(json::parse(v, nullptr, false));
                                      }));
  for (const auto& w : p->waves) {
    for (const auto& c : w.clusters) {
      std::string where = w.started_at.empty() ? "pending" : "inProgress";
      if (auto it = ends.find(c); it != ends.end() && !it->second.state.empty()) where = it->second.state;
      out.try_emplace(c, w.name, std::move(where));
    }
  }
  return out;
}

// The worst of a cluster (docs/status.md "output=clusters").
std::string StateOf(const Row& row, const Liveness::Verdict& v) {
  Cells sum{};
  for (const auto& c : row.cells) {
    if (!c) continue;
    for (int i = 0; i < kCells; ++i) sum[i] += (*c)[i];
  }
  if (sum[kFailed] > 0 || row.connectivity == "Retrying") return "failed";
  if (v.stale) return "stale";
  if (v.unreachable) return "unreachable";
  if (sum[kDrifted] > 0) return "drifted";
  if (sum[kNotReady] > 0) return "notReady";
  // Not applied yet: what it lacks is on its way.
  if (sum[kPending] > 0) return "pending";
  if (sum[kNotPresent] > 0) return "notReady";
  return "ready";
}

}  // namespace

namespace detail {

// The DIG's state record, or what the query must refuse: the DIG missing,
// an `instance` not its.
Result<catalog::LifecycleState> DigStateFor(store::Store& st, const DigRef& d, const Query& q) {
  catalog::Keys keys = {d.project, d.composite_app, d.version, d.dig};
  ECO_ASSIGN_OR_RETURN(auto dig, catalog::Get(st, "deploymentIntentGroup", keys));
  if (!dig) return NotFound("DeploymentIntentGroup not found");
  ECO_ASSIGN_OR_RETURN(auto rec, detail::ReadState(st, "deploymentIntentGroup", keys));
  if (!q.instance.empty() && !rec.HasInstance(q.instance)) {
    return Invalid("Invalid query instance: " + q.instance + " is not an AppContext of this DeploymentIntentGroup");
  }
  return rec;
}

Result<json> DigClustersWith(store::Store& st, const DigRef& d, const Query& q, Liveness& live, Directory& dir) {
  ECO_ASSIGN_OR_RETURN(auto rec, DigStateFor(st, d, q));
  json out = {{"project", d.project},
              {"compositeApp", d.composite_app},
              {"compositeAppVersion", d.version},
              {"name", d.dig},
              {"states", catalog::ToJson(rec)}};
  json cell_fields = json::array();
  for (const char* f : kCellFields) cell_fields.push_back(f);
  out["cellFields"] = std::move(cell_fields);
  const std::string id = q.instance.empty() ? rec.LastInstance() : q.instance;
  std::map<std::string, int64_t> counts = {{"Ready", 0},  {"NotReady", 0}, {"NotPresent", 0}, {"Stale", 0},
                                           {"Failed", 0}, {"Pending", 0},  {"Drifted", 0}};
  std::map<std::string, int64_t> cluster_counts = {{"total", 0},       {"ready", 0}, {"notReady", 0},
                                                   {"failed", 0},      {"unreachable", 0}, {"stale", 0},
                                                   {"drifted", 0},     {"pending", 0}};
  json rows = json::array();
  std::vector<std::string> apps;
  if (!id.empty()) {
    appcontext::Contexts ctx(st);
    ECO_ASSIGN_OR_RETURN(auto meta, ctx.GetMeta(id));
    const std::string status_ctx = meta.status_context.empty() ? id : meta.status_context;
    const bool skip_newer = id == status_ctx;
    apps = meta.app_order;
    ECO_ASSIGN_OR_RETURN(std::string top, ctx.GetStatus(id));
    out["deployedStatus"] = top;
    std::map<std::string, Row> by_key;
    for (size_t ai = 0; ai < apps.size(); ++ai) {
      const std::string& a = apps[ai];
      ECO_ASSIGN_OR_RETURN(auto plan, ctx.ReadApp(id, a));
      ECO_ASSIGN_OR_RETURN(auto deployed, detail::ReadRecords<appcontext::DeployedRecord>(
                                              st, appcontext::DeployedPrefix(status_ctx) + a + "/",
                                              [](const std::string& v) { return appcontext::ParseDeployed(v); }));
      ECO_ASSIGN_OR_RETURN(auto ready, detail::ReadRecords<appcontext::ReadyRecord>(
                                           st, appcontext::ReadyPrefix(status_ctx) + a + "/",
                                           [](const std::string& v) { return appcontext::ParseReady(v); }));
      ECO_ASSIGN_OR_RETURN(auto drift, detail::ReadRecords<appcontext::DriftRecord>(
                                           st, appcontext::DriftPrefix(status_ctx) + a + "/",
                                           [](const std::string& v) { return appcontext::ParseDrift(v); }));
      std::map<int, appcontext::ResourceSet> variants;  // resolved once: clusters share a handful
      for (const auto& c : plan.clusters) {
        const appcontext::ResourceSet* rs = &plan.shared;
        if (c.variant != 0) {
          auto it = variants.find(c.variant);
          if (it == variants.end()) {
            ECO_ASSIGN_OR_RETURN(auto v, plan.For(c));
            it = variants.emplace(c.variant, std::move(v)).first;
          }
          rs = &it->second;
        }
        const std::string key = c.key();
        Row& row = by_key[key];
        if (row.cells.empty()) {
          row.provider = c.provider;
          row.name = c.name;
          row.cells.resize(apps.size());
        }
        const appcontext::DeployedRecord* drec = nullptr;
        if (auto it = deployed.find(key); it != deployed.end()) drec = &it->second;
        const appcontext::ReadyRecord* rrec = nullptr;
        if (auto it = ready.find(key); it != ready.end()) rrec = &it->second;
        const appcontext::DriftRecord* dft = nullptr;
        if (auto it = drift.find(key); it != drift.end()) dft = &it->second;
        row.has_records = row.has_records || drec || rrec;
        if (drec) {
          const std::string& conn = drec->connectivity;
          if (conn == "Retrying") {
            row.connectivity = conn;
            if (row.connectivity_error.empty()) row.connectivity_error = drec->message;
          } else if (conn == "Available" && row.connectivity != "Retrying") {
            row.connectivity = conn;
          }
        }
        Cells cell{};
        // The deployed view: everything rsync applies, hooks too. True
        // when rsync deleted the resource (a terminate): nothing to be Ready.
        auto deployed_state = [&](const appcontext::Resource& r) {
          const appcontext::ResourceDeployed* dr = nullptr;
          if (drec) {
            if (auto it = drec->resources.find(r.name); it != drec->resources.end()) dr = &it->second;
          }
          // A resource last acted on by a newer revision belongs to that one.
          if (skip_newer && dr && !dr->ref.empty() && dr->ref != id) return false;
          if (dr && !dr->warnings.empty()) ++cell[kWarnings];
          const std::string_view state = dr && !dr->status.empty() ? std::string_view(dr->status) : "Pending";
          if (state == "Failed") ++cell[kFailed];
          if (state == "Pending") ++cell[kPending];
          if (state == "Applied" && dft) {
            if (auto it = dft->resources.find(r.name); it != dft->resources.end() && it->second.drifted)
              ++cell[kDrifted];
          }
          return state == "Deleted";
        };
        // The ready view: no hooks (they run, and may be deleted).
        auto ready_state = [&](const appcontext::Resource& r, bool stale) {
          ++cell[kTotal];
          if (stale) {
            ++cell[kStale];
            return;
          }
          std::string state = "NotPresent";
          if (rrec) {
            if (auto it = rrec->resources.find(r.name); it != rrec->resources.end()) state = it->second;
          }
          ++cell[state == "Ready" ? kReady : state == "NotReady" ? kNotReady : kNotPresent];
        };
        std::optional<bool>& stale = row.stale[drec || rrec ? 1 : 0];
        if (!stale) {
          ECO_RETURN_IF_ERROR(dir.Provider(c.provider).status());  // before Judge: its delivery, read once
          ECO_ASSIGN_OR_RETURN(const Liveness::Verdict v, live.Judge(c.provider, c.name, drec || rrec));
          stale = v.stale;
        }
        for (const auto* list : {&rs->crds, &rs->resources}) {
          for (const auto& r : *list) {
            if (!deployed_state(r)) ready_state(r, *stale);
          }
        }
        for (const auto& r : rs->hooks) deployed_state(r);
        counts["Ready"] += cell[kReady];
        counts["NotReady"] += cell[kNotReady];
        counts["NotPresent"] += cell[kNotPresent];
        counts["Stale"] += cell[kStale];
        counts["Failed"] += cell[kFailed];
        counts["Pending"] += cell[kPending];
        counts["Drifted"] += cell[kDrifted];
        row.cells[ai] = cell;
      }
    }
    ECO_ASSIGN_OR_RETURN(auto waves, Waves(st, id));
    for (const auto& [key, row] : by_key) {
      ECO_ASSIGN_OR_RETURN(const Directory::Entry* entry, dir.Find(row.provider, row.name));
      ECO_ASSIGN_OR_RETURN(const Liveness::Verdict v, live.Judge(row.provider, row.name, row.has_records));
      json j = {{"clusterProvider", row.provider},
                {"cluster", row.name},
                {"labels", entry ? entry->labels : std::vector<std::string>{}},
                {"delivery", entry && entry->agent ? "agent" : "push"},
                {"connectivity", row.connectivity.empty() ? "Unknown" : row.connectivity}};
      if (!row.connectivity_error.empty()) j["connectivityError"] = row.connectivity_error;
      detail::MarkLiveness(j, v);
      if (auto w = waves.find(key); w != waves.end()) {
        j["wave"] = w->second.first;
        j["rollout"] = w->second.second;
      }
      const std::string state = StateOf(row, v);
      ++cluster_counts[state];
      ++cluster_counts["total"];
      j["state"] = state;
      json cells = json::array();
      for (const auto& c : row.cells) cells.push_back(c ? json(*c) : json(nullptr));
      j["cells"] = std::move(cells);
      rows.push_back(std::move(j));
    }
    ECO_ASSIGN_OR_RETURN(json rollout, detail::Rollout(st, id));
    if (!rollout.is_null()) out["rollout"] = std::move(rollout);
  } else {
    out["deployedStatus"] = "";
  }
  // Nothing deployed yet: nothing to call Ready.
  out["readyStatus"] = id.empty() ? std::string() : detail::Aggregate({{"NotReady", counts["NotReady"]},
                                                                     {"NotPresent", counts["NotPresent"]},
                                                                     {"Stale", counts["Stale"]}});
  out["apps"] = apps;
  out["counts"] = counts;
  out["clusterCounts"] = cluster_counts;
  out["clusters"] = std::move(rows);
  return out;
}

}  // namespace detail

namespace {

Result<json> Compute(store::Store& st, const DigRef& d, const Query& q, const QueryOptions& opts,
                     detail::Facts* facts) {
  Liveness live(st, opts);
  Directory dir(st, &live);
  auto out = detail::DigClustersWith(st, d, q, live, dir);
  detail::Report(live, facts);
  return out;
}

}  // namespace

Status CheckDigClusters(store::Store& st, const DigRef& d, const Query& q) {
  return detail::DigStateFor(st, d, q).status();
}

Result<json> DigClusters(store::Store& st, const DigRef& dig, const Query& q, const QueryOptions& opts) {
  return Compute(st, dig, q, opts, nullptr);
}

Status WatchDigClusters(store::Store& st, const DigRef& d, const Query& q,
                        const std::function<bool(const json&)>& emit, const std::function<bool()>& open,
                        std::chrono::milliseconds coalesce, Clock& clock, const QueryOptions& opts) {
  const QueryOptions o = detail::OnClock(opts, clock);
  return detail::WatchStatus(
      st, catalog::StateKey("deploymentIntentGroup", {d.project, d.composite_app, d.version, d.dig}),
      [&](detail::Facts* f) { return Compute(st, d, q, o, f); }, emit, open, coalesce, clock);
}

}  // namespace eco::status
