// What a rollout reads and writes in the store: the gates (deployed and
// ready records), its progress, and the event that undoes it.
#include <algorithm>

#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "rsync/metrics.h"
#include "rsync/rollout_run.h"

namespace eco::rsync {

using appcontext::RolloutClusterEnd;
using nlohmann::json;
using store::Op;

namespace {
// etcd refuses a transaction of more than 128 operations by default.
constexpr size_t kOpsPerTxn = 100;
}  // namespace

bool RolloutRun::ReadyOn(const std::shared_ptr<EventData>& ev, const std::string& app, const std::string& cluster) {
  auto r = appcontext::ReadReady(st_, ev->status_ctx, app, cluster);
  return r.ok() && r->has_value() && (*r)->ready;
}

// One app on one cluster: are this revision's objects Ready at the
// generation its apply made? The previous revision's Ready does not count.
// Only they are judged: an object another revision left (one a rollback is
// deleting) is not. "" when they are, else what is not.
std::string RolloutRun::AppGate(const std::shared_ptr<EventData>& ev, const std::string& app, const std::string& cluster) {
  auto d = appcontext::ReadDeployed(st_, ev->status_ctx, app, cluster);
  if (!d.ok() || !d->has_value()) return "app " + app + ": nothing recorded as deployed yet";
  size_t applied = 0, judged = 0;
  for (const auto& [name, res] : (*d)->resources) applied += res.status == "Applied" && res.ref == ctx_;
  if (applied == 0) return "";  // nothing of it on this cluster
  auto r = appcontext::ReadReady(st_, ev->status_ctx, app, cluster);
  if (!r.ok() || !r->has_value()) return "app " + app + ": no readiness reported yet";
  const auto& ready = **r;
  std::string why;
  for (const auto& [name, res] : (*d)->resources) {
    if (res.status != "Applied" || res.ref != ctx_) continue;
    auto st = ready.resources.find(name);
    if (st == ready.resources.end()) continue;  // not judged (a hook)
    ++judged;
    auto gen = ready.generations.find(name);
    const bool current = res.generation == 0 || (gen != ready.generations.end() && gen->second >= res.generation);
    if ((st->second != "Ready" || !current) && why.empty()) {
      why = "app " + app + ": " + name +
            (current ? " is " + st->second : " not yet observed at generation " + std::to_string(res.generation));
    }
  }
  if (!why.empty()) return why;
  if (judged == 0) return "app " + app + ": its objects are not reported yet";
  // The workloads' Pods (cluster-only objects) count as the monitor counts them.
  for (const auto& [pod, st] : ready.cluster_only) {
    if (st != "Ready") return "app " + app + ": " + pod + " is " + st;
  }
  return "";
}

RolloutRun::Gate RolloutRun::ReadGate(const std::shared_ptr<EventData>& ev, const Look& l) {
  Gate g;
  if (l.classify) {
    std::string provider;
    const std::string name = ClusterOf(l.key, &provider);
    auto c = catalog::Cluster(st_, provider, name);
    if (c.ok()) {
      g.gone = false;
    } else if (c.status().code() == Code::kNotFound) {
      g.gone = true;
    }
  }
  g.passed = l.phase == Phase::kVerifying;
  for (const auto& app : l.apps) {
    if (l.phase == Phase::kApplying) {
      auto d = appcontext::ReadDeployed(st_, ev->status_ctx, app, l.key);
      if (d.ok() && d->has_value() && (*d)->connectivity == "Retrying") {
        g.retrying = true;
        g.retry_why = (*d)->message;
      }
      continue;
    }
    std::string why = AppGate(ev, app, l.key);
    if (why.empty()) continue;
    g.passed = false;
    if (g.not_ready.empty()) g.not_ready = std::move(why);
  }
  return g;
}

void RolloutRun::Judge(const std::shared_ptr<EventData>& ev) {
  std::vector<Look> looks;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [k, c] : clusters_) {
      if (c.phase != Phase::kApplying && c.phase != Phase::kVerifying) continue;
      Look l{k, c.phase, {}, !c.failure.empty()};
      for (const auto& [app, a] : c.apps) {
        if (c.phase == Phase::kVerifying || (a.opened && !a.deployed)) l.apps.push_back(app);
      }
      looks.push_back(std::move(l));
    }
  }
  const auto now = clock_.Now();
  for (const auto& l : looks) {
    const Gate gate = ReadGate(ev, l);  // store reads first, the decision under the lock
    std::lock_guard<std::mutex> g(mu_);
    auto it = clusters_.find(l.key);
    if (it == clusters_.end()) continue;
    ClusterRun& c = it->second;
    if (c.phase != l.phase && !(l.phase == Phase::kApplying && c.phase == Phase::kVerifying)) continue;
    Decide(c, gate, now);
  }
}

// mu_ held.
void RolloutRun::Decide(ClusterRun& c, const Gate& gate, Clock::Time now) {
  if (!c.failure.empty()) {
    if (!gate.gone) return;  // the catalog did not answer: next time
    c.phase = *gate.gone ? Phase::kLeft : Phase::kFailed;
    c.reason = *gate.gone ? "removed from the fleet during the rollout" : c.failure;
    return;
  }
  if (c.phase == Phase::kApplying) {
    if (gate.retrying && strategy_.offline != "wait") {
      c.phase = strategy_.offline == "skip" ? Phase::kSkipped : Phase::kFailed;
      c.reason = strategy_.offline == "skip"
                     ? "unreachable (" + gate.retry_why + "): left pending; it gets the change when it returns"
                     : "unreachable: " + gate.retry_why;
      return;
    }
    if (gate.retrying && !c.unreachable_since) c.unreachable_since = now;
    if (!gate.retrying && c.unreachable_since) {
      c.offline += now - *c.unreachable_since;
      c.unreachable_since.reset();
    }
  }
  if (c.phase == Phase::kVerifying) {
    if (gate.passed) {
      if (!c.ready_since) c.ready_since = now;
      if (now - *c.ready_since >= std::chrono::seconds(strategy_.soak_seconds)) {
        c.phase = Phase::kDone;
        c.reason.clear();
        return;
      }
    } else {
      c.ready_since.reset();
      c.reason = gate.not_ready;
    }
  }
  // The time it was waited for while unreachable does not count.
  Clock::Duration spent = now - c.released - c.offline;
  if (c.unreachable_since) spent -= now - *c.unreachable_since;
  if (spent > std::chrono::seconds(strategy_.ready_timeout_seconds)) {
    c.phase = Phase::kFailed;
    c.reason = "not done within readyTimeoutSeconds (" + std::to_string(strategy_.ready_timeout_seconds) + " s)" +
               (c.reason.empty() ? std::string() : ": " + c.reason);
  }
}

Status RolloutRun::Persist(const std::shared_ptr<EventData>& ev) {
  std::vector<Op> ops;
  std::vector<std::string> ended;
  {
    std::lock_guard<std::mutex> g(mu_);
    const std::string now = catalog::NowRfc3339(clock_);
    for (auto& [k, c] : clusters_) {
      if (!Terminal(c.phase) || c.persisted) continue;
      ops.push_back(Op::Put(appcontext::RolloutClusterKey(ctx_, k),
                            ToJson(RolloutClusterEnd{PhaseName(c.phase), now, c.reason}).dump()));
      ended.push_back(k);
      const std::string wave = c.wave < progress_.waves.size() ? progress_.waves[c.wave].name : "";
      RsyncMetrics::Get().rollout_clusters.Add({{"wave", wave}, {"outcome", PhaseName(c.phase)}}).Increment();
      if (c.phase == Phase::kFailed || c.phase == Phase::kSkipped || c.phase == Phase::kLeft) {
        log::Write(c.phase == Phase::kFailed ? log::Level::kWarn : log::Level::kInfo, "rsync",
                   std::string("rollout cluster ") + PhaseName(c.phase),
                   {log::Field("owner", owner_), log::Field("cluster", k), log::Field("wave", wave),
                    log::Field("reason", c.reason)});
      }
    }
    if (progress_dirty_) ops.push_back(Op::Put(appcontext::RolloutKey(ctx_), ToJson(progress_).dump()));
  }
  (void)ev;
  for (size_t i = 0; i < ops.size(); i += kOpsPerTxn) {
    std::vector<Op> part(ops.begin() + static_cast<std::ptrdiff_t>(i),
                         ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), i + kOpsPerTxn)));
    Write w = Fenced(st_, fence_, {}, std::move(part));
    if (w == Write::kLost) return Conflict("lost the lock of AppContext " + ctx_);
    if (w == Write::kError) return Unavailable("store: writing the rollout's progress failed");
  }
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& k : ended) clusters_[k].persisted = true;
  // The progress went in the last transaction; a change since sets it again.
  if (!ops.empty()) progress_dirty_ = false;
  return Status::Ok();
}

// mu_ held.
void RolloutRun::BeginRollback(const std::string& reason) {
  rolling_back_ = true;
  over_ = true;
  SetState("RollingBack", reason);
}

Result<std::vector<Op>> RolloutRun::RollbackOps() {
  std::lock_guard<std::mutex> g(mu_);
  // The clusters it changed (or began to), latest wave first.
  std::vector<std::pair<std::string, std::vector<std::string>>> waves;
  std::vector<std::string> all;
  for (size_t w = progress_.waves.size(); w-- > 0;) {
    std::vector<std::string> changed;
    for (const auto& k : progress_.waves[w].clusters) {
      auto it = clusters_.find(k);
      if (it == clusters_.end() || it->second.wave != w) continue;
      // Every cluster released (after a restart, those that ended before
      // it too): one skipped may hold part of the change.
      const ClusterRun& c = it->second;
      if ((c.phase == Phase::kQueued && !c.touched) || c.phase == Phase::kLeft) continue;
      changed.push_back(k);
      all.push_back(k);
    }
    if (!changed.empty()) waves.emplace_back("undo-" + progress_.waves[w].name, std::move(changed));
  }
  appcontext::Contexts contexts(st_, clock_);
  const bool update = type_ == "update" && !other_.empty();
  const std::string target = update ? other_ : ctx_;
  std::vector<Op> ops;
  if (!all.empty()) {
    ECO_ASSIGN_OR_RETURN(int64_t seq, contexts.NextEventSeq(target));
    appcontext::Event e;
    e.clusters = all;
    if (update) {
      json undo = json::array();
      for (const auto& [name, cs] : waves) undo.push_back({{"name", name}, {"clusters", cs}});
      appcontext::RolloutStrategy back = strategy_;
      json rollout = appcontext::ToJson(back);
      rollout["waves"] = std::move(undo);
      rollout["soakSeconds"] = 0;
      rollout["approval"] = "none";
      rollout["onFailure"] = "pause";  // a rollback that fails waits for the operator
      e.type = "update";
      e.other = ctx_;
      e.rollout = std::move(rollout);
      ops.push_back(Op::Put(appcontext::StatusKey(target),
                            json{{"status", "Created"}, {"time", catalog::NowRfc3339(clock_)}}.dump()));
    } else {
      e.type = "terminate";
    }
    for (auto& op : contexts.EnqueueOps(target, seq, e)) ops.push_back(std::move(op));
    progress_.rollback_context = target;
    progress_.rollback_event = seq;
    progress_.rollback_revision = update ? other_revision_ : 0;
  } else {
    SetState("RolledBack", progress_.reason + "; no cluster had changed");
  }
  ops.push_back(Op::Put(appcontext::RolloutKey(ctx_), ToJson(progress_).dump()));
  log::Write(log::Level::kWarn, "rsync", "rollout rolling back",
             {log::Field("owner", owner_), log::Field("context", ctx_), log::Field("to", target),
              log::Field("clusters", static_cast<long long>(all.size()))});
  return ops;
}

}  // namespace eco::rsync
