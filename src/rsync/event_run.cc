#include "rsync/event_run.h"

#include <algorithm>

#include "appcontext/event_record.h"
#include "rsync/logic.h"

namespace eco::rsync {

using appcontext::AppPlan;
using nlohmann::json;

void EventRun::Start(EventSpec spec, std::function<void(Outcome)> done) {
  spec_ = std::move(spec);
  done_ = std::move(done);
  if (spec_.parent) {
    span_ = trace::Span::Start("rsync " + spec_.type, trace::Kind::kInternal, &*spec_.parent);
    span_.SetAttribute("eco.appcontext", spec_.id);
  }
  auto ev = std::make_shared<EventData>();
  {
    std::lock_guard<std::mutex> g(mu_);
    ev_ = ev;
  }
  ev_->id = spec_.id;
  ev_->type = spec_.type;
  ev_->other = spec_.other;
  ev_->seq = spec_.seq;
  ev_->record = spec_.record;
  ev_->only = spec_.only;
  ev_->created = spec_.created;
  ev_->other_complete = spec_.other_complete;
  ev_->fence = spec_.fence;
  ev_->trace = span_.recording() ? span_.context() : trace::SpanContext{};
  ev_->report = this;
  if (auto failed = Load()) {
    if (failed->aborted) {
      span_.SetAttribute("eco.outcome", std::string("left pending"));
    } else {
      span_.SetError(failed->message);
    }
    span_.End();
    // Not inline: the caller may hold its own lock.
    auto self = shared_from_this();
    exec_.Post([self, o = std::move(*failed)]() mutable {
      auto done = std::move(self->done_);
      done(std::move(o));
    });
    return;
  }
  last_check_ = clock_.Now();
  Abort early;
  {
    std::lock_guard<std::mutex> g(mu_);
    started_ = true;
    early = early_;
  }
  if (early != Abort::kNone) tasks_.Cancel(ev_, early, early_why_);
  if (ro_) WatchRollout();
  auto self = shared_from_this();
  exec_.Post([self] { self->Tick(); });
}

void EventRun::WatchRollout() {
  std::weak_ptr<EventRun> weak = weak_from_this();
  // Coalesced: a burst of record writes (a wave of clusters turning Ready)
  // is one judgement. The callback never holds the run itself: its last
  // reference must not go on the store's watch thread, inside the watch.
  const auto delay = std::max<Clock::Duration>(std::chrono::milliseconds(20), opt_.poll / 20);
  auto wake = [weak, soon = judge_soon_, exec = &exec_, delay](const std::vector<store::WatchEvent>&) {
    if (soon->exchange(true)) return;
    exec->PostAfter(delay, [weak, soon] {
      soon->store(false);
      if (auto s = weak.lock()) s->LookRollout(true);
    });
  };
  std::vector<std::unique_ptr<store::WatchHandle>> ws;
  for (const std::string& prefix :
       {appcontext::ReadyPrefix(ev_->status_ctx), appcontext::RolloutControlKey(spec_.id)}) {
    store::WatchCallbacks cb;
    cb.on_events = wake;
    cb.on_error = [](const Status&) {};  // the poll still judges
    auto w = st_.Watch(prefix, 0, std::move(cb));
    if (w.ok()) ws.push_back(std::move(*w));
  }
  std::lock_guard<std::mutex> g(mu_);
  if (!completed_) ro_watches_ = std::move(ws);
}

std::optional<Outcome> EventRun::Load() {
  appcontext::Contexts ctx(st_, clock_);
  Outcome out;
  auto meta = ctx.GetMeta(spec_.id);
  if (!meta.ok()) {
    // A store hiccup leaves the event pending: the context is claimed again shortly.
    out.aborted = meta.status().retryable();
    out.message = meta.status().ToString();
    return out;
  }
  ev_->meta = std::move(*meta);
  ev_->owner = appcontext::OwnerOf(ev_->meta);
  ev_->status_ctx = ev_->meta.status_context.empty() ? spec_.id : ev_->meta.status_context;
  for (const auto& app : ev_->meta.app_order) {
    auto plan = ctx.ReadApp(spec_.id, app);
    if (!plan.ok()) {
      out.aborted = plan.status().retryable();
      out.message = "app " + app + ": " + plan.status().ToString();
      return out;
    }
    ev_->plans[app] = std::make_shared<AppPlan>(std::move(*plan));
  }
  if (spec_.type == "update" || spec_.type == "update-delete") {
    if (auto failed = LoadOther(ctx)) return failed;
  }
  if (opt_.rollouts && (spec_.type == "instantiate" || spec_.type == "update") && spec_.record.rollout.is_object()) {
    auto strategy = appcontext::ParseRollout(json{{"rollout", spec_.record.rollout}});
    if (!strategy.ok() || !strategy->has_value()) {
      out.message = "spec.rollout: " + (strategy.ok() ? std::string("empty") : strategy.status().message());
      return out;
    }
    ro_ = std::make_unique<RolloutRun>(st_, opt_, clock_, std::move(**strategy));
    if (Status st = ro_->Load(ev_); !st.ok()) {
      out.aborted = st.retryable() || st.code() == Code::kConflict;
      out.message = "rollout: " + st.ToString();
      return out;
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& app : ev_->meta.app_order) {
    AppState a;
    if (IsApplyEvent(spec_.type)) {
      auto it = ev_->meta.dependencies.find(app);
      if (it != ev_->meta.dependencies.end()) a.deps = it->second;
    }
    for (const auto& c : ev_->plans[app]->clusters) a.remaining += ev_->only.empty() || ev_->only.count(c.key());
    apps_[app] = std::move(a);
  }
  unopened_ = apps_.size();
  return std::nullopt;
}

std::optional<Outcome> EventRun::LoadOther(appcontext::Contexts& ctx) {
  Outcome out;
  const std::string& other = spec_.other;
  if (other.empty()) {
    out.message = spec_.type + " names no other AppContext";
    return out;
  }
  auto om = ctx.GetMeta(other);
  if (om.ok()) {
    ev_->other_meta = *om;
    if (spec_.type == "update" && appcontext::OwnerOf(*om) != ev_->owner)
      ev_->replaced_owner = appcontext::OwnerOf(*om);
    for (const auto& app : om->app_order) {
      auto plan = ctx.ReadApp(other, app);
      if (!plan.ok()) {
        out.message = "app " + app + " of AppContext " + other + ": " + plan.status().ToString();
        return out;
      }
      auto& idx = ev_->other_index[app];
      for (const auto& c : plan->clusters) idx[c.key()] = c;
      ev_->other_plans[app] = std::make_shared<AppPlan>(std::move(*plan));
    }
  } else if (spec_.type == "update-delete" || om.status().code() != Code::kNotFound) {
    out.message = "AppContext " + other + ": " + om.status().ToString();
    return out;
  }
  return std::nullopt;
}

void EventRun::Cancel(Abort why, const std::string& message) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_) {  // Start cancels at its end; a shutdown wins
      if (early_ == Abort::kNone || why == Abort::kShutdown) {
        early_ = why;
        early_why_ = message;
      }
      return;
    }
  }
  tasks_.Cancel(ev_, why, message);
  auto self = shared_from_this();
  exec_.Post([self] { self->Look(); });
}

void EventRun::TaskFinished(Task* t, bool ok, const std::string& msg, bool own_failure) {
  if (ro_) {
    // A cluster's failure is the rollout's to count, not the end of the event.
    ro_->TaskEnded(*t, ok, msg, own_failure);
    {
      std::lock_guard<std::mutex> g(mu_);
      --outstanding_;
    }
    auto self = shared_from_this();
    exec_.Post([self] { self->LookRollout(false); });
    return;
  }
  bool cancel_others = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    --outstanding_;
    if (ok) {
      auto& a = apps_[t->app];
      if (a.remaining > 0 && --a.remaining == 0) a.deployed = true;
    } else if (own_failure && error_.empty()) {
      error_ = "app " + t->app + ", cluster " + t->cluster.key() + ": " + msg;
      cancel_others = !ev_->Cancelled();
    }
  }
  // EMCO's errgroup: one failure ends the waiting of the others.
  if (cancel_others) tasks_.Cancel(ev_, Abort::kFailed, "cancelled: another cluster failed");
  auto self = shared_from_this();
  exec_.Post([self] { self->Look(); });
}

// Every `poll`: the checks, and apps whose wait after their dependencies
// ended. Also at the time an app is due.
void EventRun::Tick() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (completed_) return;
  }
  bool checked = false;
  if (clock_.Now() - last_check_ >= opt_.poll) {
    last_check_ = clock_.Now();
    Checks();
    checked = true;
  }
  if (ro_) {
    LookRollout(checked);
  } else {
    Look();
  }
  std::lock_guard<std::mutex> g(mu_);
  if (completed_) return;
  auto self = shared_from_this();
  exec_.PostAt(last_check_ + opt_.poll, [self] { self->Tick(); });
}

void EventRun::Checks() {
  auto stop = st_.Get(appcontext::StopKey(spec_.id));
  if (stop.ok() && stop->has_value() && (*stop)->value == "true") tasks_.Cancel(ev_, Abort::kStopped, "stopped");
  if (!IsApplyEvent(spec_.type)) return;
  if (TerminateQueued()) tasks_.Cancel(ev_, Abort::kTerminate, "cancelled by a queued terminate");
  auto kv = st_.Get(appcontext::SupersededKey(spec_.id));
  if (kv.ok() && kv->has_value() && spec_.created > 0 && spec_.created < (*kv)->mod_revision) {
    tasks_.Cancel(ev_, Abort::kSuperseded, "superseded by the update to AppContext " + (*kv)->value);
  }
}

bool EventRun::TerminateQueued() {
  auto evs = st_.Range(appcontext::EventPrefix(spec_.id));
  if (!evs.ok()) return false;
  for (const auto& kv : evs->kvs) {
    auto e = appcontext::ParseEvent(kv);
    if (e.ok() && e->pending() && e->type == "terminate") return true;
  }
  return false;
}

void EventRun::LookRollout(bool judge) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (completed_) return;
  }
  RolloutRun::StepResult r;
  if (!ev_->Cancelled()) r = ro_->Step(ev_, judge);
  if (r.cancel) {
    tasks_.Cancel(ev_, Abort::kStopped,
                  ro_->rolling_back() ? "cancelled: the rollout rolls back" : "rollout aborted by the operator");
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    outstanding_ += r.start.size();
  }
  for (Task* t : r.start) tasks_.Start(ev_, t);
  std::vector<std::unique_ptr<store::WatchHandle>> watches;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (completed_ || outstanding_ != 0 || (!r.over && !ev_->Cancelled())) return;
    completed_ = true;
    watches = std::move(ro_watches_);
  }
  watches.clear();  // outside the lock: a callback in flight may want it
  Complete();
}

void EventRun::Look() {
  if (ro_) return LookRollout(false);
  OpenApps();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (completed_ || outstanding_ != 0 || (unopened_ != 0 && !ev_->Cancelled())) return;
    completed_ = true;
  }
  Complete();
}

void EventRun::Complete() {
  Outcome out;
  {
    std::lock_guard<std::mutex> g(mu_);  // before ev_->mu, as everywhere
    std::lock_guard<std::mutex> g2(ev_->mu);
    if (ev_->abort == Abort::kShutdown) {
      out.aborted = true;
    } else if (ro_ && (ev_->abort == Abort::kNone || ro_->aborted() || ro_->rolling_back())) {
      auto end = ro_->Outcome();
      out.ok = end.ok;
      out.message = end.message;
    } else {
      out.ok = error_.empty() && ev_->abort == Abort::kNone;
      out.message = !error_.empty() ? error_ : ev_->abort_msg;
    }
  }
  if (ro_ && !out.aborted && ro_->rolling_back()) {
    auto ops = ro_->RollbackOps();
    if (ops.ok()) {
      out.extra = std::move(*ops);
    } else {
      // Left pending: whoever claims the context next judges it again.
      out.aborted = true;
    }
  }
  // Stopped, superseded or cut short by a terminate: the progress says so.
  if (ro_ && !out.aborted && !out.ok && !ro_->aborted() && !ro_->rolling_back()) ro_->Closed(ev_, out.message);
  if (out.aborted) {
    span_.SetAttribute("eco.outcome", std::string("left pending"));
  } else if (!out.ok) {
    span_.SetError(out.message);
  }
  span_.End();
  auto done = std::move(done_);
  done(std::move(out));
}

bool EventRun::ReadyOnAll(const std::string& app) {
  auto plan = ev_->plans.find(app);
  if (plan == ev_->plans.end()) return true;
  const std::string prefix = appcontext::ReadyPrefix(ev_->status_ctx) + app + "/";
  auto r = st_.Range(prefix);
  if (!r.ok()) return false;
  std::set<std::string> ready;
  for (const auto& kv : r->kvs) {
    auto rec = appcontext::ParseReady(kv.value);
    if (rec.ok() && rec->ready) ready.insert(kv.key.substr(prefix.size()));
  }
  for (const auto& c : plan->second->clusters) {
    if (!ready.count(c.key())) return false;
  }
  return true;
}

std::map<std::string, std::vector<std::string>> EventRun::Deployable() {
  std::map<std::string, std::vector<std::string>> need_ready;
  std::lock_guard<std::mutex> g(mu_);
  if (ev_->Cancelled()) return need_ready;
  for (auto& [name, a] : apps_) {
    if (a.opened || a.due) continue;
    bool deployed = true;
    std::vector<std::string> ready;
    for (const auto& d : a.deps) {
      auto it = apps_.find(d.app);
      if (it == apps_.end() || d.app == name) continue;  // unknown: nothing to wait for
      if (!it->second.deployed) deployed = false;
      if (d.op_status == "Ready") ready.push_back(d.app);
    }
    if (deployed) need_ready[name] = std::move(ready);
  }
  return need_ready;
}

void EventRun::OpenApps() {
  for (bool again = true; again;) {
    again = false;
    // Which apps wait only for Ready dependencies now (store reads happen unlocked).
    std::map<std::string, bool> ready_cache;
    std::set<std::string> met;
    for (const auto& [name, deps] : Deployable()) {
      bool ok = true;
      for (const auto& d : deps) {
        auto it = ready_cache.find(d);
        if (it == ready_cache.end()) it = ready_cache.emplace(d, ReadyOnAll(d)).first;
        ok = ok && it->second;
      }
      if (ok) met.insert(name);
    }
    std::vector<Task*> start;
    std::vector<Clock::Time> due;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (completed_ || ev_->Cancelled()) return;
      const auto now = clock_.Now();
      for (auto& [name, a] : apps_) {
        if (a.opened) continue;
        if (!a.due && met.count(name)) {
          int wait = 0;
          for (const auto& d : a.deps) wait = std::max(wait, d.wait_seconds);
          a.due = now + std::chrono::seconds(wait);
          if (*a.due > now) due.push_back(*a.due);
        }
        if (!a.due || *a.due > now) continue;
        a.opened = true;
        --unopened_;
        size_t n = 0;
        for (const auto& c : ev_->plans[name]->clusters) {
          if (!ev_->only.empty() && !ev_->only.count(c.key())) continue;
          auto t = std::make_unique<Task>();
          t->app = name;
          t->cluster = c;
          start.push_back(t.get());
          std::lock_guard<std::mutex> tg(ev_->mu);
          ev_->tasks.push_back(std::move(t));
          ++n;
        }
        outstanding_ += n;
        if (n == 0) {
          a.deployed = true;
          again = true;
        }
      }
    }
    auto self = shared_from_this();
    for (Clock::Time when : due) exec_.PostAt(when, [self] { self->Look(); });
    for (Task* t : start) tasks_.Start(ev_, t);
  }
}

}  // namespace eco::rsync
