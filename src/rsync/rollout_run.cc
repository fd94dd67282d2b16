#include "rsync/rollout_run.h"

#include <algorithm>

#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "rsync/metrics.h"

namespace eco::rsync {

using nlohmann::json;

std::string RolloutRun::ClusterOf(const std::string& key, std::string* provider) {
  const auto plus = key.find('+');
  *provider = key.substr(0, plus);
  return plus == std::string::npos ? "" : key.substr(plus + 1);
}

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
  migrate_ = !ev->replaced_owner.empty();
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
  RsyncMetrics::Get().rollout_waves.Add({{"wave", progress_.waves[w].name}, {"event", "started"}}).Increment();
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

// mu_ held.
void RolloutRun::Advance() {
  if (over_) return;
  // A migrate's "previous revision" belongs to the DIG it left: going back
  // is the operator's call (rollback or migrate again), not eco's.
  const bool rolls_back = strategy_.on_failure == "rollback" && !migrate_;
  if (aborted_) {
    if (rolls_back) return BeginRollback("aborted by the operator");
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
    if (rolls_back) return BeginRollback(reason);
    if (migrate_ && strategy_.on_failure == "rollback") reason += "; a migrate is not rolled back automatically";
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
      RsyncMetrics::Get().rollout_waves.Add({{"wave", wave.name}, {"event", "completed"}}).Increment();
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
