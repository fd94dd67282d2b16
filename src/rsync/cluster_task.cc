#include "rsync/cluster_task.h"

#include "catalog/catalog.h"
#include "k8s/readiness.h"
#include "rsync/agent_tasks.h"
#include "rsync/logic.h"

namespace eco::rsync {

using appcontext::ClusterRef;
using appcontext::ResourceDeployed;
using nlohmann::json;
using store::Compare;
using store::Op;

EventData::~EventData() {
  for (size_t i = 0; i < marked.size(); ++i) {
    if (const int64_t n = marked[i].load()) RsyncMetrics::Get().event_resources[i]->Decrement(static_cast<double>(n));
  }
}

namespace {

// Why a step waits for a passing state of the cluster (for its record).
std::string SettleReason(const Step& s, const Status& st, bool discovering, bool unserved, std::string* wait_why) {
  if (st.waiting()) return st.message();
  if (discovering) {
    std::string why = std::move(*wait_why);
    wait_why->clear();
    return why;
  }
  if (unserved) {
    return "the cluster does not serve " + Str(s.res->object, "apiVersion") + " " + Str(s.res->object, "kind") +
           " yet";
  }
  if (s.kind == Step::Kind::kGone) return "Namespace " + MetaName(s.res->object) + " is still terminating";
  return "CustomResourceDefinition " + MetaName(s.res->object) + " is not Established";
}

}  // namespace

void TaskRunner::Start(const std::shared_ptr<EventData>& ev, Task* t) {
  exec_.Post([this, ev, t] { Run(ev, t); });
}

Write Fenced(store::Store& st, const std::string& fence, std::vector<Compare> cmp, std::vector<Op> ops) {
  store::Txn txn;
  txn.compares = std::move(cmp);
  txn.compares.push_back(Compare::Exists(fence));
  txn.success = std::move(ops);
  txn.failure.push_back(Op::Get(fence));
  auto r = st.Commit(txn);
  if (!r.ok()) return Write::kError;
  if (r->succeeded) return Write::kOk;
  return !r->gets.empty() && r->gets[0].has_value() ? Write::kError : Write::kLost;
}

void TaskRunner::Mark(EventData& ev, Task* t, const std::string& name, ResourceDeployed state) {
  const uint8_t idx = DeployedStateIndex(state.status);
  auto& gauges = RsyncMetrics::Get().event_resources;
  if (idx < gauges.size()) {
    auto [it, fresh] = t->marked.try_emplace(name, idx);
    if (fresh || it->second != idx) {
      if (!fresh) {
        gauges[it->second]->Decrement();
        --ev.marked[it->second];
      }
      it->second = idx;
      gauges[idx]->Increment();
      ++ev.marked[idx];
    }
  }
  // Shared stays shared: the mark is of the deployment, not of one event.
  if (auto it = t->rec.resources.find(name); it != t->rec.resources.end())
    state.shared = state.shared || it->second.shared;
  t->rec.resources[name] = std::move(state);
}

Result<std::shared_ptr<const PreparedSet>> TaskRunner::PreparedFor(const std::shared_ptr<EventData>& ev, bool other,
                                                                   const std::string& app, const ClusterRef& c) {
  auto& cache = other ? ev->other_prepared : ev->prepared;
  const auto key = std::make_pair(app, c.variant);
  {
    std::lock_guard<std::mutex> g(ev->prep_mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  ECO_ASSIGN_OR_RETURN(auto rs, (other ? ev->other_plans : ev->plans).at(app)->For(c));
  auto p = rsync::Prepare(std::move(rs), ev->meta.namespace_, /*serialize=*/!other, ev->owner);
  std::lock_guard<std::mutex> g(ev->prep_mu);
  return cache.emplace(key, std::move(p)).first->second;
}

Status TaskRunner::LoadRecord(const std::shared_ptr<EventData>& ev, Task* t) {
  std::lock_guard<std::mutex> g(ev->prep_mu);
  auto it = ev->records.find(t->app);
  if (it == ev->records.end()) {
    // One range read per app and event instead of one read per cluster.
    const std::string prefix = appcontext::DeployedPrefix(ev->status_ctx) + t->app + "/";
    ECO_ASSIGN_OR_RETURN(auto r, st_.Range(prefix));
    std::unordered_map<std::string, appcontext::DeployedRecord> recs;
    for (const auto& kv : r.kvs) {
      auto rec = appcontext::ParseDeployed(kv.value);
      if (!rec.ok()) return rec.status().Annotate("deployed record " + kv.key);
      recs.emplace(kv.key.substr(prefix.size()), std::move(*rec));
    }
    it = ev->records.emplace(t->app, std::move(recs)).first;
  }
  if (auto r = it->second.find(t->cluster.key()); r != it->second.end()) {
    t->rec = std::move(r->second);
    it->second.erase(r);
  }
  t->rec_loaded = true;
  return Status::Ok();
}

Status TaskRunner::Build(const std::shared_ptr<EventData>& ev, Task* t) {
  if (!t->rec_loaded) ECO_RETURN_IF_ERROR(LoadRecord(ev, t));
  ECO_ASSIGN_OR_RETURN(t->set, PreparedFor(ev, false, t->app, t->cluster));
  t->other_set.reset();
  if (!ev->other.empty()) {
    auto idx = ev->other_index.find(t->app);
    if (idx != ev->other_index.end()) {
      auto c = idx->second.find(t->cluster.key());
      if (c != idx->second.end()) {
        ECO_ASSIGN_OR_RETURN(t->other_set, PreparedFor(ev, true, t->app, c->second));
      }
    }
  }
  if (t->planned) {
    t->steps = StepsOf(*t->set, *t->planned);
  } else {
    PlanInput in{ev->type, t->set.get(), t->other_set.get(), &t->rec, ev->other, ev->other_complete};
    std::vector<PlannedStep> planned;
    t->steps = PlanSteps(in, &planned);
    t->planned = std::move(planned);
  }
  t->built = true;
  return Status::Ok();
}

Status TaskRunner::WriteRecord(const std::shared_ptr<EventData>& ev, Task* t) {
  Write w = Fenced(st_, ev->fence, {}, {Op::Put(appcontext::DeployedKey(ev->status_ctx, t->app, t->cluster.key()),
                                       appcontext::ToJson(t->rec).dump())});
  if (w == Write::kLost) {
    Cancel(ev, Abort::kShutdown, "lost the lock of AppContext " + ev->id);
    return Conflict("lost the lock of AppContext " + ev->id);
  }
  if (w == Write::kError) return Unavailable("store: writing the deployed record failed");
  t->dirty = false;
  return Status::Ok();
}

bool TaskRunner::Written(const std::shared_ptr<EventData>& ev, Task* t, bool reschedule) {
  Status w = WriteRecord(ev, t);
  if (w.code() == Code::kConflict) {
    Finish(ev, t, false, w.message(), false);
    return false;
  }
  if (!w.ok() && reschedule) {
    Schedule(ev, t, opt_.retry_base);
    return false;
  }
  return true;
}

void TaskRunner::Run(const std::shared_ptr<EventData>& ev, Task* t) {
  // A traced event: a span per cluster and attempt, the Kubernetes calls
  // below its children; marked failed when the cluster failed or is left
  // retrying.
  trace::Span span;
  if (ev->trace.valid()) {
    span = trace::Span::Start("rsync cluster", trace::Kind::kInternal, &ev->trace);
    span.SetAttribute("eco.cluster", t->cluster.key());
    span.SetAttribute("eco.app", t->app);
  }
  trace::Scope scope(span);
  struct SpanEnd {
    trace::Span& span;
    const Task* t;
    ~SpanEnd() {
      if (!span.recording()) return;
      span.SetAttribute("eco.steps_done", static_cast<int64_t>(t->next));
      if (!t->failure.empty()) {
        span.SetError(t->failure);
      } else if (t->rec.connectivity == "Retrying") {
        span.SetError(t->rec.message);
      }
    }
  } span_end{span, t};
  std::optional<std::string> aborted;
  {
    std::lock_guard<std::mutex> g(ev->mu);
    ev->waiting.erase(t);
    if (ev->abort != Abort::kNone) aborted = ev->abort_msg;
  }
  const bool remote = agents_ != nullptr && agents_->Handles(t->cluster);
  if (aborted) {
    if (remote) {
      agents_->Unwait(appcontext::OutcomeKey(ev->id, ev->seq, t->cluster.key(), t->app));
      agents_->PublishCancelTo(*ev, t->cluster.key());
    }
    if (t->dirty && t->rec_loaded) (void)WriteRecord(ev, t);
    return Finish(ev, t, false, *aborted, false);
  }
  if (remote) return RunRemote(ev, t);
  if (Prepare(ev, t)) RunSteps(ev, t);
}

bool TaskRunner::Prepare(const std::shared_ptr<EventData>& ev, Task* t) {
  if (!t->built) {
    Status b = Build(ev, t);
    if (!b.ok()) {
      if (b.retryable()) {
        Schedule(ev, t, Backoff(++t->attempts, opt_.retry_base, opt_.retry_cap, 0.5));
      } else {
        Finish(ev, t, false, b.message(), true);
      }
      return false;
    }
  }
  if (!t->target) {
    auto c = delivery_.Target(t->cluster);
    if (!c.ok()) {
      if (c.status().retryable()) {
        Retry(ev, t, c.status());
      } else {
        Finish(ev, t, false, c.status().message(), true);
      }
      return false;
    }
    t->target = std::move(*c);
  }
  return true;
}

bool TaskRunner::MarkPending(const std::shared_ptr<EventData>& ev, Task* t, const Step& s) {
  if (s.list == t->next && t->next > 0) {
    // Between lists is a waiting point too: a cancelled event goes no further.
    if (auto aborted = ev->Cancelled()) {
      if (t->dirty) (void)WriteRecord(ev, t);
      Finish(ev, t, false, *aborted, false);
      return false;
    }
  }
  if (!(s.recorded || s.kind == Step::Kind::kCheck) || t->pending_written.count(s.list)) return true;
  // Recorded before it is acted on: the whole list is Pending (the objects
  // checked are those about to be applied).
  for (size_t i = s.list; i < t->steps.size() && t->steps[i].list == s.list; ++i) {
    const Step& x = t->steps[i];
    if (!(x.recorded && x.kind == Step::Kind::kApply) && x.kind != Step::Kind::kCheck) continue;
    auto known = t->rec.resources.find(x.res->name);
    if (known != t->rec.resources.end() && known->second.status == "Pending" && known->second.ref == ev->id &&
        known->second.error.empty())
      continue;  // marked so by the checks already: no second write
    Mark(*ev, t, x.res->name, {"Pending", ev->id, "", catalog::NowRfc3339(clock_)});
    t->dirty = true;
  }
  if (t->dirty && !Written(ev, t, true)) return false;
  t->pending_written.insert(s.list);
  return true;
}

// The cluster answered a step (whatever it said): it is Available. A
// cluster back from Retrying shows so at once; first contact during main
// resources rides with the write that closes their list (one store write
// fewer per app and cluster).
bool TaskRunner::Answered(const std::shared_ptr<EventData>& ev, Task* t, const Step& s) {
  if (t->rec.connectivity == "Available") return true;
  const bool at_once = t->rec.connectivity == "Retrying" || !s.recorded;
  t->rec.connectivity = "Available";
  conn_.Note(t->cluster.key(), true);
  t->rec.message.clear();
  t->attempts = 0;
  t->dirty = true;
  return !at_once || Written(ev, t, false);
}

bool TaskRunner::Settling(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, Status& st,
                          bool& not_ready) {
  const bool discovering = not_ready && !t->wait_why.empty();
  const bool unserved = not_ready && s.kind == Step::Kind::kApply && !discovering;
  if (!(st.waiting() || unserved || discovering || (not_ready && s.bounded))) return false;
  const auto now = clock_.Now();
  const bool first = !t->settling_since || t->settling_step != t->next;
  if (first) {
    t->settling_since = now;
    t->settling_step = t->next;
  }
  const std::string why = SettleReason(s, st, discovering, unserved, &t->wait_why);
  if (now - *t->settling_since >= opt_.settle_timeout) {
    st = Invalid(why + " after " + std::to_string(opt_.settle_timeout.count() / 1000) + " s");
    not_ready = false;
    return false;
  }
  auto known = t->rec.resources.find(s.res->name);
  const bool news = known == t->rec.resources.end() || known->second.error != "waiting: " + why;
  if ((first || (discovering && news)) && s.recorded) {
    Mark(*ev, t, s.res->name, {"Pending", ev->id, "waiting: " + why, catalog::NowRfc3339(clock_)});
    t->dirty = true;
    if (!Written(ev, t, false)) return true;
  }
  // A namespace being deleted is gone afterwards: the list starts again
  // from its first item, which may be that namespace.
  if (st.waiting()) t->next = s.list;
  Schedule(ev, t, opt_.poll);
  return true;
}

void TaskRunner::RunSteps(const std::shared_ptr<EventData>& ev, Task* t) {
  while (t->next < t->steps.size()) {
    const Step& s = t->steps[t->next];
    if (!MarkPending(ev, t, s)) return;
    bool not_ready = false;
    const auto step_start = clock_.Now();
    Status st = DoStep(ev, t, s, &not_ready);
    if (s.kind == Step::Kind::kApply || s.kind == Step::Kind::kDelete) {
      RsyncMetrics& m = RsyncMetrics::Get();
      const bool apply = s.kind == Step::Kind::kApply;
      const bool answered = !st.retryable();
      if (answered) {
        (apply ? m.apply_latency : m.delete_latency)
            .Observe(std::chrono::duration<double>(clock_.Now() - step_start).count());
        conn_.Latency(t->cluster.key(), step_start);
      }
      if (!st.ok() && answered && !st.waiting()) (apply ? m.apply_failed : m.delete_failed).Increment();
      if (st.ok() && !not_ready) (apply ? m.applied : m.deleted).Increment();
    }
    if (!st.ok() && st.retryable()) {
      t->next = s.list;  // the list restarts once the cluster answers
      return Retry(ev, t, st);
    }
    if (!Answered(ev, t, s)) return;
    // A state of the cluster that passes: a CRD not yet Established, its
    // kind not yet served, a namespace being deleted. Waited for, bounded.
    if (Settling(ev, t, s, st, not_ready)) return;
    if (t->settling_since && t->next >= t->settling_step) t->settling_since.reset();
    if (!st.ok()) {
      if (s.recorded || s.kind == Step::Kind::kCheck) {
        Mark(*ev, t, s.res->name, {"Failed", ev->id, st.message(), catalog::NowRfc3339(clock_)});
        t->dirty = true;
      }
      // A failed delete does not stop the others (EMCO); a failed apply ends the cluster's work.
      if (!s.lenient && s.kind != Step::Kind::kDelete) {
        (void)WriteRecord(ev, t);
        return Finish(ev, t, false, s.res->name + ": " + st.message(), true);
      }
    } else {
      if (not_ready) return Schedule(ev, t, opt_.poll);
      if (s.recorded) {
        Mark(*ev, t, s.res->name,
             {s.kind == Step::Kind::kApply ? "Applied" : "Deleted", ev->id, t->note, catalog::NowRfc3339(clock_),
              false, std::move(t->warnings), s.kind == Step::Kind::kApply ? t->generation : 0});
        t->dirty = true;
      }
      t->note.clear();
      t->warnings.clear();
      t->generation = 0;
    }
    const size_t list = s.list;
    ++t->next;
    if (t->next < t->steps.size() && t->steps[t->next].list != list && t->dirty && !Written(ev, t, true)) return;
  }
  // The last list's record, also when the task comes back here after that
  // write failed (the store away): the marks are written before the task
  // ends, or they would be lost with it.
  if (t->dirty && !Written(ev, t, true)) return;
  Finish(ev, t, true, "", false);
}

void TaskRunner::Retry(const std::shared_ptr<EventData>& ev, Task* t, const Status& why) {
  ++t->attempts;
  t->rec.connectivity = "Retrying";
  conn_.Note(t->cluster.key(), false, why.message());
  RsyncMetrics::Get().retries.Increment();
  t->rec.message = why.message();
  t->dirty = true;
  Status w = t->rec_loaded ? WriteRecord(ev, t) : Status::Ok();
  if (w.code() == Code::kConflict) return Finish(ev, t, false, w.message(), false);
  if (opt_.max_retries > 0 && t->attempts > opt_.max_retries) {
    return Finish(ev, t, false,
                  "cluster " + t->cluster.key() + ": retries exceeded max (" + std::to_string(opt_.max_retries) +
                      "): " + why.message(),
                  true);
  }
  const double jitter = random_.Uniform();
  auto delay = std::max(Backoff(t->attempts, opt_.retry_base, opt_.retry_cap, jitter), why.retry_after());
  Schedule(ev, t, std::min(delay, std::max(opt_.retry_cap, why.retry_after())));
}

void TaskRunner::Schedule(const std::shared_ptr<EventData>& ev, Task* t, Clock::Duration delay) {
  // Waiting tasks keep only their position and record, not their resources.
  t->steps.clear();
  t->steps.shrink_to_fit();
  t->set.reset();
  t->other_set.reset();
  t->built = false;
  auto gen = Park(ev, t);
  if (!gen) return;
  exec_.PostAfter(delay, [this, ev, t, gen = *gen] {
    {
      std::lock_guard<std::mutex> g(ev->mu);
      if (t->gen != gen || !ev->waiting.count(t)) return;  // woken earlier by a cancel
    }
    Run(ev, t);
  });
}

std::optional<uint64_t> TaskRunner::Park(const std::shared_ptr<EventData>& ev, Task* t) {
  std::lock_guard<std::mutex> g(ev->mu);
  if (ev->abort != Abort::kNone) {
    exec_.Post([this, ev, t] { Run(ev, t); });
    return std::nullopt;
  }
  ev->waiting.insert(t);
  return ++t->gen;
}

void TaskRunner::Finish(const std::shared_ptr<EventData>& ev, Task* t, bool ok, const std::string& msg,
                        bool own_failure) {
  t->steps.clear();
  t->steps.shrink_to_fit();
  t->set.reset();
  t->other_set.reset();
  t->target.reset();
  // Its record is in the store: finished tasks (every app x cluster until
  // the event ends) keep nothing but their place.
  t->rec = appcontext::DeployedRecord{};
  t->pending_written.clear();
  t->marked = {};  // what it counted stays in the event's share until the event ends
  if (!ok && ev->trace.valid()) t->failure = msg;
  if (opt_.on_task_end) opt_.on_task_end({ev->id, ev->seq, t->app, t->cluster.key(), ok, msg, own_failure});
  ev->report->TaskFinished(t, ok, msg, own_failure);
}

void TaskRunner::Cancel(const std::shared_ptr<EventData>& ev, Abort why, const std::string& msg) {
  std::vector<Task*> wake;
  {
    std::lock_guard<std::mutex> g(ev->mu);
    if (ev->abort == Abort::kShutdown) return;
    if (ev->abort != Abort::kNone && why != Abort::kShutdown) return;
    ev->abort = why;
    ev->abort_msg = msg;
    for (Task* t : ev->waiting) {
      ++t->gen;
      wake.push_back(t);
    }
    ev->waiting.clear();
  }
  // An agent cluster's task publishes the cancel to its agent itself,
  // before it finishes: a cancel published after the event ended would find
  // the context's lock gone.
  for (Task* t : wake) exec_.Post([this, ev, t] { Run(ev, t); });
}

}  // namespace eco::rsync
