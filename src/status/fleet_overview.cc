#include "status/fleet_overview.h"

#include <algorithm>
#include <map>
#include <utility>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/json_fields.h"
#include "status/fleet_view.h"
#include "status/query_internal.h"

namespace eco::status {

namespace {

using detail::Directory;

// A state record's key rest ("p/ca/v1/dig") as its keys.
catalog::Keys Split(const std::string& rest) {
  catalog::Keys keys;
  for (size_t b = 0, e; b <= rest.size(); b = e + 1) {
    e = rest.find('/', b);
    if (e == std::string::npos) e = rest.size();
    keys.push_back(rest.substr(b, e - b));
  }
  return keys;
}

int64_t Count(const json& j, const char* k) { return j.is_object() ? j.value(k, int64_t{0}) : 0; }

// The fleet's problems, from one deployment's rows: one entry per kind,
// naming the cluster when only one is concerned.
class Problems {
 public:
  void Add(const json& owner, const std::string& kind, const std::string& severity, std::string message,
           const std::string& since, const std::vector<const json*>& rows = {}) {
    json p = owner;
    p["kind"] = kind;
    p["severity"] = severity;
    if (rows.size() == 1) {
      p["clusterProvider"] = (*rows[0])["clusterProvider"];
      p["cluster"] = (*rows[0])["cluster"];
    } else if (!rows.empty()) {
      p["count"] = rows.size();
    }
    p["message"] = std::move(message);
    if (!since.empty()) p["since"] = since;
    list_.push_back(std::move(p));
  }
  json Take() {
    // Errors first; stable otherwise (deployments in key order).
    std::stable_sort(list_.begin(), list_.end(), [](const json& a, const json& b) {
      return a["severity"] == "error" && b["severity"] != "error";
    });
    return std::move(list_);
  }

 private:
  json list_ = json::array();
};

std::string Clusters(const std::vector<const json*>& rows) {
  if (rows.size() == 1) return "cluster " + (*rows[0])["clusterProvider"].get<std::string>() + "+" +
                                (*rows[0])["cluster"].get<std::string>();
  return std::to_string(rows.size()) + " clusters";
}

void DigProblems(const json& owner, const json& view, const catalog::LifecycleState& rec, Problems& out) {
  const std::string last_change = rec.actions.empty() ? "" : rec.actions.back().time;
  const std::string deployed = StringField(view, "deployedStatus");
  std::vector<const json*> failed, retrying, unreachable, stale, drifted;
  std::string unreachable_since, stale_since;
  for (const auto& row : view["clusters"]) {
    if (row.value("connectivity", "") == "Retrying") retrying.push_back(&row);
    const std::string state = row.value("state", "");
    bool has_failed = false;
    constexpr size_t kFailedCell = 5;  // kCellFields[5] == "failed"
    for (const auto& c : row["cells"])
      has_failed = has_failed || (c.is_array() && c[kFailedCell].get<int64_t>() > 0);
    if (has_failed) failed.push_back(&row);
    if (state == "stale") {
      stale.push_back(&row);
      const std::string seen = row.value("lastSeen", "");
      if (!seen.empty() && (stale_since.empty() || seen < stale_since)) stale_since = seen;
    } else if (state == "unreachable") {
      unreachable.push_back(&row);
      std::string since = row.contains("unreachable") ? StringField(row["unreachable"], "since") : "";
      if (!since.empty() && (unreachable_since.empty() || since < unreachable_since)) unreachable_since = since;
    }
    if (state == "drifted") drifted.push_back(&row);
  }
  if (deployed.find("Failed") != std::string::npos)
    out.Add(owner, "failed", "error", "the last operation ended " + deployed, last_change);
  if (!failed.empty())
    out.Add(owner, "failed", "error", "resources failed to apply on " + Clusters(failed), last_change, failed);
  if (!retrying.empty()) {
    std::string why = retrying.size() == 1 ? ": " + retrying[0]->value("connectivityError", "") : "";
    out.Add(owner, "retrying", "error", "eco keeps retrying " + Clusters(retrying) + why, "", retrying);
  }
  if (!stale.empty())
    out.Add(owner, "stale", "error", "no report from " + Clusters(stale) + " for longer than the grace",
            stale_since, stale);
  if (!unreachable.empty())
    out.Add(owner, "unreachable", "warning", Clusters(unreachable) + " cannot be reached", unreachable_since,
            unreachable);
  if (!drifted.empty())
    out.Add(owner, "drifted", "warning", "resources changed out of band on " + Clusters(drifted), "", drifted);
  if (view.contains("rollout")) {
    const json& r = view["rollout"];
    const std::string state = StringField(r, "state");
    std::string wave = r.contains("wave") ? StringField(r["wave"], "name") : "";
    if (state == "WaitingApproval")
      out.Add(owner, "approval", "warning", "the rollout waits for approval before wave " + wave, last_change);
    if (state == "Paused")
      out.Add(owner, "paused", "warning", "the rollout is paused" + (r.contains("reason") ? ": " + StringField(r, "reason") : std::string()),
              last_change);
    if (state == "Failed")
      out.Add(owner, "failed", "error", "the rollout failed" + (r.contains("reason") ? ": " + StringField(r, "reason") : std::string()),
              last_change);
  }
}

}  // namespace

Result<json> FleetOverview(store::Store& st, const FleetScope& scope, const QueryOptions& opts) {
  Liveness live(st, opts);
  Directory dir(st, &live);
  Problems problems;
  json digs = json::array();
  Query q;
  q.output = "clusters";
  ECO_ASSIGN_OR_RETURN(auto dig_states, detail::ReadStates(st, catalog::StatePrefix("deploymentIntentGroup")));
  for (const auto& [rest, rec] : dig_states) {
    catalog::Keys k = Split(rest);
    if (k.size() != 4 || !scope.Sees(k[0])) continue;
    auto view = detail::DigClustersWith(st, {k[0], k[1], k[2], k[3]}, q, live, dir);
    if (!view.ok()) {
      if (view.status().code() == Code::kNotFound) continue;  // deleted meanwhile
      return view.status();
    }
    json owner = {{"project", k[0]}, {"compositeApp", k[1]}, {"compositeAppVersion", k[2]}, {"dig", k[3]}};
    json d = {{"project", k[0]},
              {"compositeApp", k[1]},
              {"compositeAppVersion", k[2]},
              {"name", k[3]},
              {"state", rec.actions.empty() ? "" : rec.actions.back().state},
              {"lastChange", rec.actions.empty() ? "" : rec.actions.back().time},
              {"deployedStatus", (*view)["deployedStatus"]},
              {"revision", rec.LastRevision()},
              {"readyStatus", (*view)["readyStatus"]},
              {"clusters", (*view)["clusterCounts"]}};
    const json& c = (*view)["counts"];
    d["resources"] = {{"Ready", Count(c, "Ready")},
                      {"NotReady", Count(c, "NotReady") + Count(c, "NotPresent")},
                      {"Failed", Count(c, "Failed")},
                      {"Stale", Count(c, "Stale")},
                      {"Drifted", Count(c, "Drifted")},
                      {"Pending", Count(c, "Pending")}};
    if (view->contains("rollout")) {
      const json& r = (*view)["rollout"];
      json ro = {{"state", r["state"]}};
      if (r.contains("wave")) ro["wave"] = r["wave"]["name"];
      d["rollout"] = std::move(ro);
    }
    DigProblems(owner, *view, rec, problems);
    digs.push_back(std::move(d));
  }

  // Logical clouds: listed per project (they get no state record until acted on).
  json clouds = json::array();
  ECO_ASSIGN_OR_RETURN(auto projects, catalog::List(st, "project", {}));
  Query ready;
  ready.ready = true;
  ready.deprecated_names = false;
  for (const auto& p : projects) {
    const std::string& project = p.keys.back();
    if (!scope.Sees(project)) continue;
    ECO_ASSIGN_OR_RETURN(auto lcs, catalog::List(st, "logicalCloud", {project}));
    for (const auto& lc : lcs) {
      const std::string& name = lc.keys.back();
      auto s = LogicalCloudStatus(st, project, name, ready, opts);
      if (!s.ok()) {
        if (s.status().code() == Code::kNotFound) continue;
        return s.status();
      }
      const json spec = lc.object.is_object() ? lc.object.value("spec", json::object()) : json::object();
      const json& actions = (*s)["states"]["actions"];
      json e = {{"project", project},
                {"name", name},
                {"level", spec.is_object() ? spec.value("level", "1") : "1"},
                {"state", actions.empty() ? "" : actions.back().value("state", "")},
                {"clusters", s->contains("clusters") ? (*s)["clusters"].size() : 0}};
      const json& rc = s->value("readyCounts", json::object());
      json res = {{"Ready", Count(rc, "Ready")}, {"NotReady", Count(rc, "NotReady") + Count(rc, "NotPresent")},
                  {"Failed", 0}, {"Stale", Count(rc, "Stale")}, {"Drifted", 0}, {"Pending", 0}};
      e["resources"] = std::move(res);
      std::vector<const json*> stale;
      if (s->contains("clusters")) {
        for (const auto& c : (*s)["clusters"]) {
          if (c.value("stale", false)) stale.push_back(&c);
        }
      }
      if (!stale.empty()) {
        problems.Add({{"project", project}, {"logicalCloud", name}}, "stale", "error",
                     "no report from " + Clusters(stale) + " for longer than the grace", "", stale);
      }
      clouds.push_back(std::move(e));
    }
  }

  json out = {{"digs", std::move(digs)}, {"logicalClouds", std::move(clouds)}};
  if (scope.admin) {
    json providers = json::array();
    ECO_ASSIGN_OR_RETURN(auto list, catalog::List(st, "clusterProvider", {}));
    for (const auto& p : list) {
      const std::string& name = p.keys.back();
      ECO_ASSIGN_OR_RETURN(auto* clusters, dir.Provider(name));
      int64_t agent = 0, unreachable = 0, stale = 0;
      for (const auto& [cname, e] : *clusters) {
        agent += e.agent;
        ECO_ASSIGN_OR_RETURN(const Liveness::Verdict v, live.Judge(name, cname, false));
        unreachable += v.unreachable != nullptr;
        stale += v.stale;
      }
      providers.push_back({{"name", name},
                           {"clusters", clusters->size()},
                           {"push", static_cast<int64_t>(clusters->size()) - agent},
                           {"agent", agent},
                           {"unreachable", unreachable},
                           {"stale", stale}});
    }
    out["providers"] = std::move(providers);
  }
  out["problems"] = problems.Take();
  return out;
}

Result<json> FleetClusters(store::Store& st, const QueryOptions& opts) {
  Liveness live(st, opts);
  Directory dir(st, &live);
  struct Where {
    json deployments = json::array();
    std::map<std::string, int64_t> ready;
    bool has_records = false;
  };
  std::map<std::string, Where> by_key;
  appcontext::Contexts ctx(st);
  for (const char* type : {"deploymentIntentGroup", "logicalCloud"}) {
    const bool is_dig = std::string(type) == "deploymentIntentGroup";
    ECO_ASSIGN_OR_RETURN(auto recs, detail::ReadStates(st, catalog::StatePrefix(type)));
    for (const auto& [rest, rec] : recs) {
      const std::string id = rec.LastInstance();
      if (id.empty()) continue;
      catalog::Keys k = Split(rest);
      if (k.size() != (is_dig ? 4u : 2u)) continue;
      auto top = ctx.GetStatus(id);
      if (!top.ok() || top->empty() || *top == "Terminated") continue;  // nothing left there
      auto meta = ctx.GetMeta(id);
      if (!meta.ok()) continue;  // removed meanwhile
      const std::string status_ctx = meta->status_context.empty() ? id : meta->status_context;
      json owner = is_dig ? json{{"project", k[0]}, {"compositeApp", k[1]},
                                 {"compositeAppVersion", k[2]}, {"deploymentIntentGroup", k[3]}}
                          : json{{"project", k[0]}, {"logicalCloud", k[1]}};
      std::set<std::string> placed;
      for (const auto& app : meta->app_order) {
        ECO_ASSIGN_OR_RETURN(auto cs, ctx.Clusters(id, app));
        for (const auto& c : cs) placed.insert(c.key());
      }
      for (const auto& key : placed) by_key[key].deployments.push_back(owner);
      // The ready records of every app at once: "<app>/<cluster key>".
      ECO_ASSIGN_OR_RETURN(auto ready, detail::ReadRecords<appcontext::ReadyRecord>(
                                           st, appcontext::ReadyPrefix(status_ctx),
                                           [](const std::string& v) { return appcontext::ParseReady(v); }));
      for (const auto& [app_cluster, r] : ready) {
        const std::string key = app_cluster.substr(app_cluster.find('/') + 1);
        if (!placed.count(key)) continue;
        Where& w = by_key[key];
        w.has_records = true;
        for (const auto& [name, state] : r.resources) ++w.ready[state];
      }
    }
  }
  json out = json::array();
  ECO_ASSIGN_OR_RETURN(auto providers, catalog::List(st, "clusterProvider", {}));
  for (const auto& p : providers) {
    const std::string& provider = p.keys.back();
    ECO_ASSIGN_OR_RETURN(auto* clusters, dir.Provider(provider));
    for (const auto& [name, e] : *clusters) {
      const std::string key = provider + "+" + name;
      Where* w = nullptr;
      if (auto it = by_key.find(key); it != by_key.end()) w = &it->second;
      ECO_ASSIGN_OR_RETURN(const Liveness::Verdict v, live.Judge(provider, name, w && w->has_records));
      json c = {{"clusterProvider", provider}, {"cluster", name}, {"labels", e.labels},
                {"delivery", e.agent ? "agent" : "push"}};
      // Reachable: heard from (the agent, or the ready monitor watching it).
      c["connectivity"] = v.unreachable ? "Unreachable" : v.last_seen ? "Reachable" : "NotWatched";
      detail::MarkLiveness(c, v);
      if (e.agent && v.seen && !v.seen->agent_version.empty()) c["agentVersion"] = v.seen->agent_version;
      c["deployments"] = w ? w->deployments : json::array();
      if (w && w->has_records) {
        json rc = {{"Ready", 0}, {"NotReady", 0}, {"NotPresent", 0}, {"Stale", 0}};
        for (const auto& [state, n] : w->ready) rc[v.stale ? "Stale" : state] = rc.value(v.stale ? "Stale" : state, int64_t{0}) + n;
        c["readyCounts"] = std::move(rc);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace eco::status
