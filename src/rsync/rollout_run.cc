#include "rsync/rollout_run.h"

#include <algorithm>

#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "common/metrics.h"

namespace eco::rsync {

using appcontext::RolloutClusterEnd;
using nlohmann::json;
using store::Op;

namespace {

// etcd refuses a transaction of more than 128 operations by default.
constexpr size_t kOpsPerTxn = 100;

struct RolloutMetrics {
  prometheus::Family<prometheus::Counter>& clusters;
  prometheus::Family<prometheus::Counter>& waves;
  static RolloutMetrics& Get() {
    static RolloutMetrics m{
        prometheus::BuildCounter()
            .Name("eco_rollout_clusters_total")
            .Help("Clusters that ended their part of a staged rollout, by wave name and outcome "
                  "(done, failed, skipped, left).")
            .Register(metrics::Registry()),
        prometheus::BuildCounter()
            .Name("eco_rollout_waves_total")
            .Help("Waves of staged rollouts that started and completed, by wave name.")
            .Register(metrics::Registry())};
    return m;
  }
};

std::string ClusterOf(const std::string& key, std::string* provider) {
  const auto plus = key.find('+');
  *provider = key.substr(0, plus);
  return plus == std::string::npos ? "" : key.substr(plus + 1);
}

}  // namespace

const char* RolloutRun::PhaseName(Phase p) {
  switch (p) {
    case Phase::kQueued: return "queued";
    case Phase::kApplying: return "applying";
    case Phase::kVerifying: return "verifying";
    case Phase::kDone: return "done";
    case Phase::kFailed: return "failed";
    case Phase::kSkipped: return "skipped";
    case Phase::kLeft: return "left";
  }
  return "";
}

std::vector<appcontext::PlannedWave> RolloutRun::Split(const std::set<std::string>& keys) {
  // Labels as they are now, one read per provider.
  std::map<std::string, std::vector<std::string>> labels;
  std::set<std::string> providers;
  for (const auto& k : keys) {
    std::string p;
    ClusterOf(k, &p);
    providers.insert(p);
  }
  for (const auto& p : providers) {
    auto cs = catalog::ProviderClusters(st_, p);
    if (!cs.ok()) continue;  // no labels: label waves pass it by
    for (auto& c : *cs) labels[p + "+" + c.name] = std::move(c.labels);
  }
  std::vector<appcontext::RolloutCluster> in;
  in.reserve(keys.size());
  for (const auto& k : keys) {
    auto it = labels.find(k);
    in.push_back({k, it == labels.end() ? std::vector<std::string>{} : it->second});
  }
  return appcontext::SplitIntoWaves(strategy_, std::move(in));
}

Status RolloutRun::Load(const std::shared_ptr<EventData>& ev) {
  owner_ = ev->owner;
  ctx_ = ev->id;
  fence_ = ev->fence;
  type_ = ev->type;
  other_ = ev->other;
  if (ev->other_meta) other_revision_ = ev->other_meta->revision;
  for (const auto& app : ev->meta.app_order) {
    auto plan = ev->plans.find(app);
    if (plan == ev->plans.end()) continue;
    for (const auto& c : plan->second->clusters) {
      if (!ev->only.empty() && !ev->only.count(c.key())) continue;  // a rollback: the clusters it undoes
      ClusterRun& cr = clusters_[c.key()];
      cr.apps[app] = {};
      cr.refs[app] = c;
      cr.ref = c;
    }
  }
  fleet_ = static_cast<int64_t>(clusters_.size());
  const std::string now = catalog::NowRfc3339(clock_);

  auto kv = st_.Get(appcontext::RolloutKey(ctx_));
  if (!kv.ok()) return kv.status();
  std::optional<appcontext::RolloutProgress> found;
  if (kv->has_value()) {
    auto p = appcontext::RolloutProgressFromJson(json::parse((*kv)->value, nullptr, false));
    if (p.ok() && p->event == ev->seq) found = std::move(*p);
  }
  std::lock_guard<std::mutex> g(mu_);
  if (found) {
    // Resumed: the waves as recorded, the clusters that ended as recorded.
    progress_ = std::move(*found);
    std::set<std::string> placed;
    for (size_t w = 0; w < progress_.waves.size(); ++w) {
      for (const auto& k : progress_.waves[w].clusters) {
        auto it = clusters_.find(k);
        if (it == clusters_.end()) continue;
        it->second.wave = w;
        placed.insert(k);
      }
    }
    for (auto& [k, c] : clusters_) {
      if (!placed.count(k)) c.wave = progress_.waves.empty() ? 0 : progress_.waves.size() - 1;
    }
    auto ends = st_.Range(appcontext::RolloutClusterPrefix(ctx_));
    if (!ends.ok()) return ends.status();
    const size_t prefix = appcontext::RolloutClusterPrefix(ctx_).size();
    for (const auto& e : ends->kvs) {
      auto it = clusters_.find(e.key.substr(prefix));
      if (it == clusters_.end()) continue;
      RolloutClusterEnd end = appcontext::RolloutClusterEndFromJson(json::parse(e.value, nullptr, false));
      Phase p = end.state == "done"      ? Phase::kDone
                : end.state == "failed"  ? Phase::kFailed
                : end.state == "skipped" ? Phase::kSkipped
                : end.state == "left"    ? Phase::kLeft
                                         : Phase::kQueued;
      it->second.phase = p;
      it->second.reason = end.reason;
      it->second.persisted = p != Phase::kQueued;
    }
    for (auto& [k, c] : clusters_) {
      c.touched = c.phase == Phase::kQueued && c.wave < progress_.waves.size() &&
                  !progress_.waves[c.wave].started_at.empty();
    }
    log::Write(log::Level::kInfo, "rsync", "rollout resumed",
               {log::Field("owner", owner_), log::Field("context", ctx_), log::Field("state", progress_.state),
                log::Field("wave", progress_.waves.empty() ? std::string() : progress_.waves[progress_.wave].name)});
    return Status::Ok();
  }
  std::set<std::string> keys;
  for (const auto& [k, c] : clusters_) keys.insert(k);
  progress_ = {};
  progress_.event = ev->seq;
  progress_.revision = ev->meta.revision;
  progress_.state = "Progressing";
  progress_.started_at = now;
  for (const auto& w : Split(keys)) {
    for (const auto& k : w.clusters) clusters_[k].wave = progress_.waves.size();
    progress_.waves.push_back({w.name, w.clusters, "", ""});
  }
  progress_dirty_ = true;
  // A rollout of an earlier event of this context leaves its cluster ends.
  auto w = Fenced(st_, fence_, {}, {Op::DeletePrefix(appcontext::RolloutClusterPrefix(ctx_))});
  if (w == Write::kLost) return Conflict("lost the lock of AppContext " + ctx_);
  if (w == Write::kError) return Unavailable("store: clearing the rollout's cluster records failed");
  if (!progress_.waves.empty()) StartWave(0);
  return Status::Ok();
}

// mu_ held.
void RolloutRun::StartWave(size_t w) {
  if (w > 0) {
    // Clusters relabelled since the rollout began: one whose new wave has
    // not started moves there; one relabelled into a wave that is over
    // gets the change now, with this wave.
    std::set<std::string> queued;
    for (const auto& [k, c] : clusters_) {
      if (c.phase == Phase::kQueued && c.wave >= w) queued.insert(k);
    }
    std::set<std::string> all;
    for (const auto& [k, c] : clusters_) all.insert(k);
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < progress_.waves.size(); ++i) index[progress_.waves[i].name] = i;
    for (const auto& pw : Split(all)) {
      auto it = index.find(pw.name);
      if (it == index.end()) {  // "rest", which had no clusters when the rollout began
        progress_.waves.push_back({pw.name, {}, "", ""});
        it = index.emplace(pw.name, progress_.waves.size() - 1).first;
      }
      for (const auto& k : pw.clusters) {
        if (queued.count(k)) clusters_[k].wave = std::max(it->second, w);
      }
    }
    for (size_t i = w; i < progress_.waves.size(); ++i) progress_.waves[i].clusters.clear();
    for (const auto& [k, c] : clusters_) {
      if (c.wave >= w) progress_.waves[c.wave].clusters.push_back(k);
    }
    for (size_t i = w; i < progress_.waves.size(); ++i) {
      auto& cs = progress_.waves[i].clusters;
      std::sort(cs.begin(), cs.end(), appcontext::NaturalLess);
    }
  }
  progress_.wave = w;
  progress_.waves[w].started_at = catalog::NowRfc3339(clock_);
  progress_dirty_ = true;
  RolloutMetrics::Get().waves.Add({{"wave", progress_.waves[w].name}, {"event", "started"}}).Increment();
  LogWave("rollout wave started", w);
}

// mu_ held.
void RolloutRun::LogWave(const char* what, size_t w) {
  long long done = 0, failed = 0, skipped = 0;
  for (const auto& [k, c] : clusters_) {
    if (c.wave != w) continue;
    done += c.phase == Phase::kDone;
    failed += c.phase == Phase::kFailed;
    skipped += c.phase == Phase::kSkipped;
  }
  log::Write(log::Level::kInfo, "rsync", what,
             {log::Field("owner", owner_), log::Field("context", ctx_), log::Field("wave", progress_.waves[w].name),
              log::Field("index", static_cast<long long>(w)),
              log::Field("clusters", static_cast<long long>(progress_.waves[w].clusters.size())),
              log::Field("done", done), log::Field("failed", failed), log::Field("skipped", skipped)});
}

void RolloutRun::ReadControl() {
  auto kv = st_.Get(appcontext::RolloutControlKey(ctx_));
  if (!kv.ok() || !kv->has_value()) return;
  auto c = appcontext::RolloutControlFromJson(json::parse((*kv)->value, nullptr, false));
  std::lock_guard<std::mutex> g(mu_);
  if (c.event == progress_.event) control_ = c;
}

int64_t RolloutRun::Failures() const {
  int64_t n = 0;
  for (const auto& [k, c] : clusters_) n += c.phase == Phase::kFailed;
  return n;
}

// mu_ held.
void RolloutRun::SetState(const std::string& state, const std::string& reason) {
  if (progress_.state == state && progress_.reason == reason) return;
  progress_.state = state;
  progress_.reason = reason;
  progress_dirty_ = true;
  log::Write(state == "Failed" || state == "Paused" ? log::Level::kWarn : log::Level::kInfo, "rsync",
             "rollout " + state, {log::Field("owner", owner_), log::Field("context", ctx_), log::Field("reason", reason)});
}

bool RolloutRun::ReadyOn(const std::shared_ptr<EventData>& ev, const std::string& app, const std::string& cluster) {
  auto r = appcontext::ReadReady(st_, ev->status_ctx, app, cluster);
  return r.ok() && r->has_value() && (*r)->ready;
}

void RolloutRun::Judge(const std::shared_ptr<EventData>& ev) {
  struct Look {
    std::string key;
    Phase phase;
    std::vector<std::string> apps;
    bool classify = false;
  };
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
  const auto soak = std::chrono::seconds(strategy_.soak_seconds);
  const auto timeout = std::chrono::seconds(strategy_.ready_timeout_seconds);
  for (const auto& l : looks) {
    // Store reads first, the decision under the lock.
    std::optional<bool> gone;
    if (l.classify) {
      std::string provider;
      const std::string name = ClusterOf(l.key, &provider);
      auto c = catalog::Cluster(st_, provider, name);
      if (c.ok()) gone = false;
      else if (c.status().code() == Code::kNotFound) gone = true;
    }
    bool retrying = false;
    std::string retry_why, not_ready;
    bool passed = l.phase == Phase::kVerifying;
    for (const auto& app : l.apps) {
      auto d = appcontext::ReadDeployed(st_, ev->status_ctx, app, l.key);
      if (l.phase == Phase::kApplying) {
        if (d.ok() && d->has_value() && (*d)->connectivity == "Retrying") {
          retrying = true;
          retry_why = (*d)->message;
        }
        continue;
      }
      if (!d.ok() || !d->has_value()) {
        passed = false;
        if (not_ready.empty()) not_ready = "app " + app + ": nothing recorded as deployed yet";
        continue;
      }
      // This revision's objects, at the generation its apply made: the
      // previous revision's Ready does not count. Only they are judged: an
      // object another revision left (one a rollback is deleting) is not.
      size_t applied = 0, judged = 0;
      for (const auto& [name, res] : (*d)->resources) applied += res.status == "Applied" && res.ref == ctx_;
      if (applied == 0) continue;  // nothing of it on this cluster
      auto r = appcontext::ReadReady(st_, ev->status_ctx, app, l.key);
      if (!r.ok() || !r->has_value()) {
        passed = false;
        if (not_ready.empty()) not_ready = "app " + app + ": no readiness reported yet";
        continue;
      }
      const auto& ready = **r;
      for (const auto& [name, res] : (*d)->resources) {
        if (res.status != "Applied" || res.ref != ctx_) continue;
        auto st = ready.resources.find(name);
        if (st == ready.resources.end()) continue;  // not judged (a hook)
        ++judged;
        auto gen = ready.generations.find(name);
        const bool current = res.generation == 0 || (gen != ready.generations.end() && gen->second >= res.generation);
        if (st->second != "Ready" || !current) {
          passed = false;
          if (not_ready.empty())
            not_ready = "app " + app + ": " + name +
                        (current ? " is " + st->second : " not yet observed at generation " + std::to_string(res.generation));
        }
      }
      if (judged == 0) {
        passed = false;
        if (not_ready.empty()) not_ready = "app " + app + ": its objects are not reported yet";
      }
      // The workloads' Pods (cluster-only objects) count as the monitor counts them.
      for (const auto& [pod, st] : ready.cluster_only) {
        if (st == "Ready") continue;
        passed = false;
        if (not_ready.empty()) not_ready = "app " + app + ": " + pod + " is " + st;
        break;
      }
    }
    std::lock_guard<std::mutex> g(mu_);
    auto it = clusters_.find(l.key);
    if (it == clusters_.end()) continue;
    ClusterRun& c = it->second;
    if (c.phase != l.phase && !(l.phase == Phase::kApplying && c.phase == Phase::kVerifying)) continue;
    if (!c.failure.empty() && gone.has_value()) {
      if (*gone) {
        c.phase = Phase::kLeft;
        c.reason = "removed from the fleet during the rollout";
      } else {
        c.phase = Phase::kFailed;
        c.reason = c.failure;
      }
      continue;
    }
    if (!c.failure.empty()) continue;  // the catalog did not answer: next time
    if (c.phase == Phase::kApplying) {
      if (retrying) {
        if (strategy_.offline == "skip") {
          c.phase = Phase::kSkipped;
          c.reason = "unreachable (" + retry_why + "): left pending; it gets the change when it returns";
          continue;
        }
        if (strategy_.offline == "fail") {
          c.phase = Phase::kFailed;
          c.reason = "unreachable: " + retry_why;
          continue;
        }
        if (!c.unreachable_since) c.unreachable_since = now;
      } else if (c.unreachable_since) {
        c.offline += now - *c.unreachable_since;
        c.unreachable_since.reset();
      }
    }
    if (c.phase == Phase::kVerifying) {
      if (passed) {
        if (!c.ready_since) c.ready_since = now;
        if (now - *c.ready_since >= soak) {
          c.phase = Phase::kDone;
          c.reason.clear();
          continue;
        }
      } else {
        c.ready_since.reset();
        c.reason = not_ready;
      }
    }
    // The time it was waited for while unreachable does not count.
    Clock::Duration spent = now - c.released - c.offline;
    if (c.unreachable_since) spent -= now - *c.unreachable_since;
    if (spent > timeout) {
      c.phase = Phase::kFailed;
      c.reason = "not done within readyTimeoutSeconds (" + std::to_string(strategy_.ready_timeout_seconds) +
                 " s)" + (c.reason.empty() ? std::string() : ": " + c.reason);
    }
  }
}

// mu_ held.
void RolloutRun::Advance() {
  if (over_) return;
  if (aborted_) {
    if (strategy_.on_failure == "rollback") return BeginRollback("aborted by the operator");
    SetState("Failed", "aborted by the operator");
    over_ = true;
    return;
  }
  // The operator's requests.
  if (control_.resumes > progress_.resumes_seen) {
    progress_.resumes_seen = control_.resumes;
    progress_.acknowledged = Failures();
    progress_dirty_ = true;
    if (progress_.state == "Paused") SetState("Progressing", "");
  }
  if (control_.paused && (progress_.state == "Progressing" || progress_.state == "WaitingApproval")) {
    SetState("Paused", "paused by the operator");
  }
  const int64_t failures = Failures() - progress_.acknowledged;
  const int64_t allowed = strategy_.max_failures.Of(fleet_);
  if (failures > allowed && progress_.state != "Paused") {
    std::string first;
    for (const auto& [k, c] : clusters_) {
      if (c.phase == Phase::kFailed) {
        first = k + ": " + c.reason;
        break;
      }
    }
    std::string reason = std::to_string(failures) + " cluster(s) failed, more than maxFailures (" +
                         std::to_string(allowed) + "); first: " + first;
    if (strategy_.on_failure == "rollback") return BeginRollback(reason);
    SetState("Paused", reason);
  }
  for (;;) {
    if (progress_.state != "Progressing" && progress_.state != "WaitingApproval") return;
    const size_t w = progress_.wave;
    bool wave_over = true;
    for (const auto& [k, c] : clusters_) {
      if (c.wave == w && !Terminal(c.phase)) wave_over = false;
    }
    if (!wave_over) break;
    auto& wave = progress_.waves[w];
    if (wave.completed_at.empty()) {
      wave.completed_at = catalog::NowRfc3339(clock_);
      progress_dirty_ = true;
      RolloutMetrics::Get().waves.Add({{"wave", wave.name}, {"event", "completed"}}).Increment();
      LogWave("rollout wave completed", w);
    }
    if (w + 1 >= progress_.waves.size()) {
      const int64_t failed = Failures();
      SetState("Complete", failed == 0 ? "" : std::to_string(failed) + " cluster(s) failed, within maxFailures");
      over_ = true;
      return;
    }
    if (strategy_.approval == "between-waves" && control_.approved <= static_cast<int64_t>(w)) {
      SetState("WaitingApproval", "wave " + progress_.waves[w + 1].name + " waits for approval");
      return;
    }
    SetState("Progressing", "");
    StartWave(w + 1);
  }
  if (progress_.state != "Progressing") return;
  // Release the wave's clusters, at most maxConcurrency changing at once.
  const size_t w = progress_.wave;
  const int64_t size = static_cast<int64_t>(progress_.waves[w].clusters.size());
  const int64_t limit = strategy_.max_concurrency ? strategy_.max_concurrency->Of(size) : size;
  int64_t active = 0;
  for (const auto& [k, c] : clusters_) {
    active += c.wave == w && (c.phase == Phase::kApplying || c.phase == Phase::kVerifying);
  }
  const auto now = clock_.Now();
  for (const auto& k : progress_.waves[w].clusters) {
    if (active >= limit) break;
    auto it = clusters_.find(k);
    if (it == clusters_.end() || it->second.phase != Phase::kQueued || it->second.wave != w) continue;
    it->second.phase = Phase::kApplying;
    it->second.released = now;
    ++active;
  }
}

std::vector<Task*> RolloutRun::Open(const std::shared_ptr<EventData>& ev) {
  // Which apps of which applying clusters wait only for Ready dependencies.
  struct Want {
    std::string cluster, app;
    std::vector<std::string> ready;
  };
  std::vector<Want> wants;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [k, c] : clusters_) {
      if (c.phase != Phase::kApplying || !c.failure.empty()) continue;
      for (const auto& [app, a] : c.apps) {
        if (a.opened || a.due) continue;
        Want want{k, app, {}};
        bool deployed = true;
        auto deps = ev->meta.dependencies.find(app);
        if (deps != ev->meta.dependencies.end()) {
          for (const auto& d : deps->second) {
            auto on = c.apps.find(d.app);
            if (on == c.apps.end() || d.app == app) continue;  // not on this cluster: nothing to wait for
            if (!on->second.deployed) deployed = false;
            if (d.op_status == "Ready") want.ready.push_back(d.app);
          }
        }
        if (deployed) wants.push_back(std::move(want));
      }
    }
  }
  std::set<std::pair<std::string, std::string>> met;
  for (const auto& w : wants) {
    bool ok = true;
    for (const auto& d : w.ready) ok = ok && ReadyOn(ev, d, w.cluster);
    if (ok) met.insert({w.cluster, w.app});
  }
  std::vector<Task*> start;
  std::lock_guard<std::mutex> g(mu_);
  const auto now = clock_.Now();
  for (auto& [k, c] : clusters_) {
    if (c.phase != Phase::kApplying || !c.failure.empty()) continue;
    for (auto& [app, a] : c.apps) {
      if (a.opened) continue;
      if (!a.due && met.count({k, app})) {
        int wait = 0;
        auto deps = ev->meta.dependencies.find(app);
        if (deps != ev->meta.dependencies.end()) {
          for (const auto& d : deps->second) {
            if (c.apps.count(d.app)) wait = std::max(wait, d.wait_seconds);
          }
        }
        a.due = now + std::chrono::seconds(wait);
      }
      if (!a.due || *a.due > now) continue;
      a.opened = true;
      auto t = std::make_unique<Task>();
      t->app = app;
      t->cluster = c.refs[app];
      start.push_back(t.get());
      std::lock_guard<std::mutex> tg(ev->mu);
      ev->tasks.push_back(std::move(t));
    }
  }
  return start;
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
      RolloutMetrics::Get().clusters.Add({{"wave", wave}, {"outcome", PhaseName(c.phase)}}).Increment();
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

RolloutRun::StepResult RolloutRun::Step(const std::shared_ptr<EventData>& ev, bool judge) {
  std::lock_guard<std::mutex> step(step_mu_);
  StepResult out;
  if (judge) {
    ReadControl();
    Judge(ev);
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (control_.abort && !aborted_) {
      aborted_ = true;
      out.cancel = true;
    }
    const bool was = rolling_back_;
    Advance();
    if (rolling_back_ && !was) out.cancel = true;
  }
  out.start = Open(ev);
  Status st = Persist(ev);
  if (!st.ok()) {
    log::Write(log::Level::kWarn, "rsync", "rollout progress not written: " + st.message(),
               {log::Field("owner", owner_), log::Field("context", ctx_)});
  }
  std::lock_guard<std::mutex> g(mu_);
  out.over = over_;
  return out;
}

void RolloutRun::TaskEnded(const Task& t, bool ok, const std::string& msg, bool own_failure) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = clusters_.find(t.cluster.key());
  if (it == clusters_.end()) return;
  ClusterRun& c = it->second;
  auto a = c.apps.find(t.app);
  if (a == c.apps.end()) return;
  if (ok) {
    a->second.deployed = true;
    bool all = true;
    for (const auto& [name, x] : c.apps) all = all && x.deployed;
    if (all && c.phase == Phase::kApplying && c.failure.empty()) {
      c.phase = Phase::kVerifying;
      c.ready_since.reset();
      c.reason.clear();
    }
    return;
  }
  if (own_failure && (c.phase == Phase::kApplying || c.phase == Phase::kVerifying) && c.failure.empty()) {
    c.phase = Phase::kApplying;  // judged (failed, or left the fleet) by the next step
    c.failure = "app " + t.app + ": " + msg;
  }
}

RolloutRun::End RolloutRun::Outcome() {
  std::lock_guard<std::mutex> g(mu_);
  if (rolling_back_) {
    return {false, "rollout rolled back (" + progress_.reason + ")"};
  }
  if (aborted_) return {false, "rollout aborted by the operator"};
  std::vector<std::string> failed;
  for (const auto& [k, c] : clusters_) {
    if (c.phase == Phase::kFailed) failed.push_back(k + ": " + c.reason);
  }
  if (failed.empty()) return {};
  std::string m = "rollout: " + std::to_string(failed.size()) + " of " + std::to_string(fleet_) + " clusters failed";
  for (size_t i = 0; i < failed.size() && i < 3; ++i) m += (i == 0 ? ": " : "; ") + failed[i];
  if (failed.size() > 3) m += "; …";
  return {false, m};
}

void RolloutRun::Closed(const std::shared_ptr<EventData>& ev, const std::string& why) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (over_) return;
    over_ = true;
    SetState("Failed", why);
  }
  (void)Persist(ev);
}

}  // namespace eco::rsync
