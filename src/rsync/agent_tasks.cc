#include "rsync/agent_tasks.h"

#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "rsync/cluster_task.h"
#include "rsync/logic.h"

namespace eco::rsync {

using appcontext::ClusterRef;

Status AgentTasks::Start() {
  Watch();
  return Status::Ok();
}

void AgentTasks::Stop() {
  std::unique_ptr<store::WatchHandle> w;
  Clock::TimerId t = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopped_ = true;
    w = std::move(watch_);
    t = restart_;
    restart_ = 0;
    waiting_.clear();
  }
  if (t != 0) clock_.Cancel(t);
  w.reset();
}

void AgentTasks::Watch() {
  store::WatchCallbacks cb;
  cb.on_events = [this](const std::vector<store::WatchEvent>& evs) {
    std::vector<std::function<void()>> wake;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (const auto& e : evs) {
        if (e.type != store::WatchEvent::Type::kPut) continue;
        if (auto it = waiting_.find(e.kv.key); it != waiting_.end()) {
          wake.push_back(std::move(it->second));
          waiting_.erase(it);
        }
      }
    }
    for (auto& w : wake) w();
  };
  cb.on_error = [this](const Status&) {
    std::lock_guard<std::mutex> g(mu_);
    RestartLater();
  };
  auto w = st_.Watch(appcontext::OutcomePrefix(), 0, std::move(cb));
  std::lock_guard<std::mutex> g(mu_);
  if (stopped_) return;
  if (w.ok()) {
    watch_ = std::move(*w);
  } else {
    RestartLater();
  }
}

// Reports may have come while the watch was down: everyone looks again.
void AgentTasks::RestartLater() {
  if (stopped_ || restart_ != 0) return;
  restart_ = clock_.After(std::chrono::seconds(1), [this] {
    {
      std::lock_guard<std::mutex> g(mu_);
      restart_ = 0;
      if (stopped_) return;
    }
    Watch();
    WakeAll();
  });
}

void AgentTasks::WakeAll() {
  std::unordered_map<std::string, std::function<void()>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    all.swap(waiting_);
  }
  for (auto& [k, w] : all) w();
}

bool AgentTasks::Handles(const ClusterRef& c) {
  const std::string key = c.key();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = agent_.find(key); it != agent_.end()) return it->second;
  }
  auto d = catalog::ClusterDelivery(st_, c.provider, c.name);
  // Unknown now (the store did not answer): asked again next time.
  if (!d.ok() && d.status().code() != Code::kNotFound) return false;
  const bool agent = d.ok() && *d == catalog::Delivery::kAgent;
  std::lock_guard<std::mutex> g(mu_);
  agent_[key] = agent;
  return agent;
}

Status AgentTasks::Publish(EventData& ev, const ClusterRef& c) {
  const std::string key = c.key();
  {
    std::lock_guard<std::mutex> g(ev.prep_mu);
    if (ev.published.count(key) != 0) return Status::Ok();
  }
  appcontext::Publication pub;
  pub.context = ev.id;
  pub.event = ev.seq;
  pub.record = ev.record;
  pub.other_complete = ev.other_complete;
  // From the plans the event read once: a projection reading them per
  // cluster cost N² over N clusters.
  std::vector<appcontext::PlannedApp> mine, theirs;
  {
    std::lock_guard<std::mutex> g(ev.prep_mu);
    if (ev.index.empty()) {
      for (const auto& [app, plan] : ev.plans) {
        auto& idx = ev.index[app];
        for (const auto& cr : plan->clusters) idx.emplace(cr.key(), cr);
      }
    }
    auto planned = [&](const appcontext::Meta& meta, const auto& plans, const auto& index) {
      std::vector<appcontext::PlannedApp> out;
      for (const auto& app : meta.app_order) {
        appcontext::PlannedApp pa;
        if (auto p = plans.find(app); p != plans.end()) pa.plan = p->second.get();
        if (auto i = index.find(app); i != index.end()) {
          if (auto r = i->second.find(key); r != i->second.end()) pa.cluster = &r->second;
        }
        out.push_back(pa);
      }
      return out;
    };
    mine = planned(ev.meta, ev.plans, ev.index);
    if (ev.other_meta) theirs = planned(*ev.other_meta, ev.other_plans, ev.other_index);
  }
  ECO_ASSIGN_OR_RETURN(auto own, appcontext::Project(st_, ev.id, ev.meta, mine));
  const appcontext::Meta& m = own.meta;
  pub.state_key = m.kind == "logicalCloud"
                      ? catalog::StateKey("logicalCloud", {m.project, m.logical_cloud})
                      : catalog::StateKey("deploymentIntentGroup", {m.project, m.composite_app, m.composite_app_version, m.dig});
  ECO_ASSIGN_OR_RETURN(auto state, st_.Get(pub.state_key));
  if (state) {
    pub.state_value = state->value;
  } else {
    pub.state_key.clear();
  }
  pub.contexts.push_back(std::move(own));
  if (!ev.other.empty() && ev.other_meta) {
    ECO_ASSIGN_OR_RETURN(auto other, appcontext::Project(st_, ev.other, *ev.other_meta, theirs));
    pub.contexts.push_back(std::move(other));
  } else if (!ev.other.empty()) {  // an event that did not read the other context itself
    auto other = appcontext::Project(st_, ev.other, key);
    if (other.ok()) {
      pub.contexts.push_back(std::move(*other));
    } else if (other.status().code() != Code::kNotFound) {
      return other.status();
    }
  }
  ECO_ASSIGN_OR_RETURN(uint64_t rev, appcontext::Publish(st_, key, std::move(pub), ev.fence));
  {
    std::lock_guard<std::mutex> g(ev.prep_mu);
    ev.published[key] = rev;
  }
  // Cancelled while it was being published: the task's Park sees it and
  // its cancelled run publishes the cancel.
  return Status::Ok();
}

std::string AgentTasks::CancelWhy(EventData& ev, std::string* message) {
  std::lock_guard<std::mutex> g(ev.mu);
  *message = ev.abort_msg;
  if (ev.abort == Abort::kFailed) return "failed";
  if (ev.abort == Abort::kStopped) return "stopped";
  return "";
}

void AgentTasks::PublishCancelTo(EventData& ev, const std::string& cluster_key) {
  std::string message;
  const std::string why = CancelWhy(ev, &message);
  if (why.empty()) return;
  {
    std::lock_guard<std::mutex> g(ev.prep_mu);
    if (!ev.published.count(cluster_key)) return;
  }
  PublishCancel(ev, cluster_key, why, message);
}

void AgentTasks::PublishCancel(EventData& ev, const std::string& cluster_key, const std::string& why,
                               const std::string& message) {
  appcontext::Publication pub;
  pub.context = ev.id;
  pub.event = ev.seq;
  pub.record = ev.record;
  pub.cancel = why;
  pub.cancel_message = message;
  auto r = appcontext::Publish(st_, cluster_key, std::move(pub), ev.fence);
  if (!r.ok())
    eco::log::Write(eco::log::Level::kWarn, "rsync",
                    "the cancel of an event was not published; its agent finishes it: " + r.status().ToString(),
                    {{"cluster", cluster_key}, {"appcontext", ev.id}});
}

Result<std::optional<appcontext::Outcome>> AgentTasks::OutcomeOf(const EventData& ev, const std::string& app,
                                                                 const ClusterRef& c) {
  ECO_ASSIGN_OR_RETURN(auto kv, st_.Get(appcontext::OutcomeKey(ev.id, ev.seq, c.key(), app)));
  if (!kv) return std::optional<appcontext::Outcome>();
  ECO_ASSIGN_OR_RETURN(auto o, appcontext::ParseOutcome(kv->value));
  return std::optional<appcontext::Outcome>(std::move(o));
}

void AgentTasks::Wait(const std::string& key, std::function<void()> wake) {
  std::lock_guard<std::mutex> g(mu_);
  if (stopped_) return;
  waiting_[key] = std::move(wake);
}

void AgentTasks::Unwait(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  waiting_.erase(key);
}

// The task on an agent cluster: publish, then wait for the agent's report.
void TaskRunner::RunRemote(const std::shared_ptr<EventData>& ev, Task* t) {
  Status s = agents_->Publish(*ev, t->cluster);
  if (!s.ok()) {
    if (s.code() == Code::kConflict) return Finish(ev, t, false, s.message(), false);
    if (s.retryable()) return Schedule(ev, t, Backoff(++t->attempts, opt_.retry_base, opt_.retry_cap, 0.5));
    return Finish(ev, t, false, s.message(), true);
  }
  const std::string key = appcontext::OutcomeKey(ev->id, ev->seq, t->cluster.key(), t->app);
  auto parked = Park(ev, t);
  if (!parked) return;
  // Both the outcome watch and the recheck may wake the task: the first
  // claims it (out of `waiting`, a new gen), so it runs once. Two runs of
  // one task would finish it twice and leave its event waiting forever.
  auto wake = [this, ev, t, gen = *parked] {
    {
      std::lock_guard<std::mutex> g(ev->mu);
      if (t->gen != gen || !ev->waiting.count(t)) return;
      ev->waiting.erase(t);
      ++t->gen;
    }
    exec_.Post([this, ev, t] { Run(ev, t); });
  };
  // Registered before the read: a report landing in between still wakes us.
  agents_->Wait(key, wake);
  auto o = agents_->OutcomeOf(*ev, t->app, t->cluster);
  if (o.ok() && o->has_value()) {
    agents_->Unwait(key);
    {
      // Claimed as a wake does: the outcome watch (or a cancel) may have
      // woken the task since it was parked, and that run finishes it.
      std::lock_guard<std::mutex> g(ev->mu);
      if (t->gen != *parked || !ev->waiting.count(t)) return;
      ev->waiting.erase(t);
      ++t->gen;
    }
    const appcontext::Outcome& out = **o;
    return Finish(ev, t, out.ok, out.message, !out.ok && out.own_failure);
  }
  exec_.PostAfter(opt_.agent_recheck, wake);
}

}  // namespace eco::rsync
