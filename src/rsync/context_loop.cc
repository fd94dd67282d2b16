#include "rsync/context_loop.h"

#include <nlohmann/json.hpp>

#include "appcontext/event_record.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "rsync/logic.h"

namespace eco::rsync {

using nlohmann::json;
using store::Compare;
using store::Op;

namespace {

json StatusValue(const Clock& clock, const std::string& s) {
  return {{"status", s}, {"time", catalog::NowRfc3339(clock)}};
}

// The trace of the request that queued an event (appcontext's EnqueueOps).
std::optional<trace::SpanContext> EventTrace(const appcontext::EventRecord& ev) {
  if (ev.trace.empty()) return std::nullopt;
  return trace::Extract([&ev](std::string_view name) -> std::optional<std::string> {
    auto f = ev.trace.find(std::string(name));
    if (f == ev.trace.end()) return std::nullopt;
    return f->second;
  });
}

// A malformed entry (logged once by ParseEvent) is not part of the queue.
std::vector<QueuedEvent> QueueOf(const store::RangeResult& evs) {
  std::vector<QueuedEvent> out;
  for (const auto& kv : evs.kvs) {
    auto e = appcontext::ParseEvent(kv);
    if (e.ok()) out.push_back({e->type, e->status, e->other, kv.create_revision});
  }
  return out;
}

// The context's superseded marker, as seen by its event queued at `event`
// (0: none). `ok` tells whether the store answered.
Supersession SupersededOf(store::Store& st, const std::string& id, store::Revision event, bool* ok) {
  Supersession s;
  auto kv = st.Get(appcontext::SupersededKey(id));
  *ok = kv.ok();
  if (kv.ok() && kv->has_value()) {
    s.by = (*kv)->value;
    s.event_before = event > 0 && event < (*kv)->mod_revision;
  }
  return s;
}

// What an update (or a terminate that cut one short) takes over from the
// contexts it replaces.
struct Replaced {
  bool known = false;              // their queues could be read
  bool deploying = false;          // one of them still has an instantiate or update queued before
  bool from_complete = false;      // the first one finished deploying everywhere
  std::vector<std::string> chain;  // see ReplacedChain
};

// The contexts an update of `self` from `from`, queued at revision `at`,
// replaces. It waits until none of them deploys anything queued before it
// (their events are superseded and end soon): otherwise one of them,
// resumed or still retrying a cluster, could apply older objects after the
// newer ones.
Replaced Replacing(store::Store& st, const std::string& self, const std::string& from, store::Revision at) {
  Replaced out;
  std::map<std::string, std::vector<QueuedEvent>> queues;
  bool read = true;
  auto queue_of = [&](const std::string& id) -> const std::vector<QueuedEvent>& {
    auto it = queues.find(id);
    if (it != queues.end()) return it->second;
    auto r = st.Range(appcontext::EventPrefix(id));
    if (!r.ok()) read = false;
    return queues.emplace(id, r.ok() ? QueueOf(*r) : std::vector<QueuedEvent>{}).first->second;
  };
  out.chain = ReplacedChain(self, from, at, queue_of);
  const QueuedEvent* last = LastApplyBefore(queue_of(from), at);
  out.from_complete = last != nullptr && last->status == "done";
  for (const auto& c : out.chain) out.deploying = out.deploying || ApplyPendingBefore(queue_of(c), at);
  out.known = read;  // cannot tell: wait and look again
  return out;
}

}  // namespace

// The first pending event of the queue, as read.
struct ContextLoop::Pending {
  std::string key;
  appcontext::EventRecord ev;
  std::string type, other;
  store::Revision created = 0;
  bool terminate_later = false;  // a terminate is pending after it
  std::vector<QueuedEvent> queue;
};

void ContextLoop::Start() {
  auto self = shared_from_this();
  exec_.Post([self] { self->Next(); });
}

void ContextLoop::Abort() {
  abort_ = true;
  std::shared_ptr<EventRun> run;
  {
    std::lock_guard<std::mutex> g(mu_);
    run = run_;
  }
  if (run) {
    run->Shutdown("rsync stopped");
  } else {
    // Waiting for a timer: end now rather than at its time.
    auto self = shared_from_this();
    exec_.Post([self] { self->Next(); });
  }
}

void ContextLoop::Later() {
  auto self = shared_from_this();
  // Waits are cut short by an abort only at their end; `poll` is short.
  exec_.PostAfter(opt_.poll, [self] { self->Next(); });
}

void ContextLoop::End() {
  if (ending_.exchange(true)) return;
  if (lock_) (void)lock_->Unlock();
  done_ = true;
  if (ended_) ended_();
}

void ContextLoop::Next() {
  // One look at a time: an abort posts one beside the loop's own.
  std::lock_guard<std::mutex> step(step_mu_);
  if (done_) return;
  if (abort_) {
    std::lock_guard<std::mutex> g(mu_);
    if (run_) return;  // its end ends the loop
  }
  if (abort_) return End();
  auto active = st_.Get(appcontext::ActiveKey(id_));
  auto evs = st_.Range(appcontext::EventPrefix(id_));
  if (!active.ok() || !evs.ok()) return Later();
  const store::Revision active_rev = active->has_value() ? (*active)->mod_revision : 0;
  auto p = std::make_shared<Pending>();
  bool found = false;
  for (const auto& kv : evs->kvs) {
    auto e = appcontext::ParseEvent(kv);
    if (!e.ok() || !e->pending()) continue;
    if (!found) {
      found = true;
      p->key = kv.key;
      p->created = kv.create_revision;
      p->ev = std::move(*e);
    } else if (e->type == "terminate") {
      p->terminate_later = true;
    }
  }
  if (!found) {
    // Done, unless an event was queued since we read (it bumps the active key).
    Write w = Fenced(st_, lock_->key(), {Compare::ModRevisionIs(appcontext::ActiveKey(id_), active_rev)},
                     {Op::Delete(appcontext::ActiveKey(id_))});
    if (w == Write::kOk || w == Write::kLost) return End();
    auto self = shared_from_this();
    return exec_.Post([self] { self->Next(); });
  }
  p->type = p->ev.type;
  p->other = p->ev.other;
  p->queue = QueueOf(*evs);
  Decision d;
  if (!Decided(*p, &d)) return;
  std::vector<std::string> chain;
  bool from_complete = false;
  if (!TakesOver(*p, &chain, &from_complete)) return;
  // The running state now: a restart resumes the event from it.
  Write w = Fenced(st_, lock_->key(), {}, {Op::Put(appcontext::StatusKey(id_), StatusValue(clock_, d.status).dump())});
  if (w == Write::kLost) return End();
  if (w == Write::kError) return Later();
  Run(std::move(p), from_complete, std::move(chain));
}

bool ContextLoop::Decided(const Pending& p, Decision* out) {
  appcontext::Contexts ctx(st_, clock_);
  auto stop = st_.Get(appcontext::StopKey(id_));
  auto cur = ctx.GetStatus(id_);
  bool sup_ok = false;
  const Supersession sup = stop.ok() && cur.ok() ? SupersededOf(st_, id_, p.created, &sup_ok) : Supersession{};
  if (!sup_ok) {
    Later();
    return false;
  }
  const bool stopped = stop->has_value() && (*stop)->value == "true";
  const Decision d = Decide(p.type, *cur, stopped, p.terminate_later, sup);
  if (d.run) {
    *out = d;
    return true;
  }
  appcontext::EventRecord ev = p.ev;
  ev.status = "skip";
  ev.message = d.message;
  ev.finished = catalog::NowRfc3339(clock_);
  std::vector<Op> ops = {Op::Put(p.key, appcontext::ToJson(ev).dump())};
  if (d.change_status) ops.push_back(Op::Put(appcontext::StatusKey(id_), StatusValue(clock_, d.status).dump()));
  Log("rsync: context " + id_ + ": " + p.type + " skipped: " + d.message);
  if (Fenced(st_, lock_->key(), {}, std::move(ops)) == Write::kLost) {
    End();
  } else {
    auto self = shared_from_this();
    exec_.Post([self] { self->Next(); });
  }
  return false;
}

// An update, and a terminate that cut one short, take over the objects of
// the contexts replaced; they wait while one of those still deploys.
bool ContextLoop::TakesOver(const Pending& p, std::vector<std::string>* chain, bool* from_complete) {
  std::string from;
  store::Revision at = 0;
  if (p.type == "update") {
    from = p.other;
    at = p.created;
  } else if (p.type == "terminate") {
    const QueuedEvent* last = LastApplyBefore(p.queue, p.created);
    if (last != nullptr && last->type == "update" && last->status != "done") {
      from = last->other;
      at = last->created;
    }
  }
  if (from.empty()) return true;
  Replaced rep = Replacing(st_, id_, from, at);
  if (rep.known && !rep.deploying) {
    *from_complete = rep.from_complete;
    *chain = std::move(rep.chain);
    return true;
  }
  if (waiting_for_ != p.key) {
    waiting_for_ = p.key;
    Log("rsync: context " + id_ + ": " + p.type + " waits for AppContext " + from + " to finish deploying");
  }
  Later();
  return false;
}

void ContextLoop::Run(std::shared_ptr<Pending> p, bool from_complete, std::vector<std::string> chain) {
  Log("rsync: context " + id_ + ": " + p->type + " started");
  EventSpec spec;
  spec.id = id_;
  spec.type = p->type;
  spec.other = p->other;
  spec.record = p->ev;
  spec.seq = std::strtoll(p->key.c_str() + appcontext::EventPrefix(id_).size(), nullptr, 10);
  // A resync's clusters; a rollout's rollback (update, terminate) is
  // limited to the clusters the rollout changed.
  spec.only.insert(p->ev.clusters.begin(), p->ev.clusters.end());
  spec.created = p->created;
  spec.other_complete = from_complete;
  spec.fence = lock_->key();
  spec.parent = EventTrace(p->ev);
  auto run = std::make_shared<EventRun>(st_, opt_, clock_, exec_, tasks_);
  {
    std::lock_guard<std::mutex> g(mu_);
    run_ = run;
  }
  // Weak: the run holds this callback, and whoever ends this loop (the
  // claims) may drop it with its event unfinished (a killed process).
  std::weak_ptr<ContextLoop> weak = weak_from_this();
  run->Start(std::move(spec), [weak, p, chain = std::move(chain)](rsync::Outcome o) mutable {
    auto self = weak.lock();
    if (!self) return;
    {
      std::lock_guard<std::mutex> g(self->mu_);
      self->run_.reset();
    }
    self->Outcome(std::move(p), std::move(o), std::move(chain), 0);
  });
  // An abort that came before run_ was set.
  if (abort_) run->Shutdown("rsync stopped");
}

bool ContextLoop::CleanupOps(const Pending& p, const std::vector<std::string>& chain, std::vector<Compare>* cmp,
                             std::vector<Op>* ops) {
  // The replaced contexts delete what this one does not have: after a
  // successful update, and after a terminate of a context whose update
  // never finished (they were never cleaned up then). Beyond the one an
  // update names, they are the older ones whose own replacement was cut
  // short; those get it only where it is accepted.
  appcontext::Contexts ctx(st_, clock_);
  for (size_t i = 0; i < chain.size(); ++i) {
    const std::string& old = chain[i];
    if (p.type != "update" || i > 0) {
      auto st = ctx.GetStatus(old);
      bool sup_ok = false;
      Supersession s = SupersededOf(st_, old, 0, &sup_ok);
      if (!st.ok() || !sup_ok) return false;
      if (!Decide("update-delete", *st, false, false, s).run) continue;
    }
    auto exists = ctx.Exists(old);
    auto seq = ctx.NextEventSeq(old);
    if (!exists.ok() || !seq.ok()) return false;
    if (*exists) {
      auto q = ctx.EnqueueOps(old, *seq, {"update-delete", id_});
      cmp->push_back(Compare::Missing(q[0].key));
      for (auto& op : q) ops->push_back(std::move(op));
    }
  }
  return true;
}

void ContextLoop::LogOutcome(const Pending& p, const rsync::Outcome& o) {
  if (o.ok) {
    Log("rsync: context " + id_ + ": " + p.type + " done");
  } else {
    // A failed deployment is an operator's concern: warn, not info (the
    // same words as the other event lines, which scripts look for).
    log::Write(log::Level::kWarn, "rsync", "rsync: context " + id_ + ": " + p.type + " failed: " + o.message,
               {log::Field("context", id_)});
  }
}

void ContextLoop::Outcome(std::shared_ptr<Pending> p, const rsync::Outcome& o, std::vector<std::string> chain,
                          int attempt) {
  std::unique_lock<std::mutex> step(step_mu_);
  if (o.aborted) return End();
  const EventStates* states = StatesFor(p->type);
  appcontext::EventRecord done = p->ev;
  done.status = o.ok ? "done" : "error";
  if (!o.message.empty()) done.message = o.message;
  done.finished = catalog::NowRfc3339(clock_);
  std::vector<Op> ops = {Op::Put(p->key, appcontext::ToJson(done).dump()),
                         Op::Put(appcontext::StatusKey(id_),
                                 StatusValue(clock_, o.ok ? states->success : states->failure).dump())};
  for (const auto& op : o.extra) ops.push_back(op);
  std::vector<Compare> cmp;
  // A store read failed: the whole write again.
  const bool read = !o.ok || CleanupOps(*p, chain, &cmp, &ops);
  const Write w = read ? Fenced(st_, lock_->key(), std::move(cmp), std::move(ops)) : Write::kError;
  if (w == Write::kError && attempt + 1 < 5 && !abort_) {
    auto self = shared_from_this();
    exec_.PostAfter(opt_.poll, [self, p, o, chain = std::move(chain), attempt]() mutable {
      if (self->abort_) {
        self->LogOutcome(*p, o);
        return self->End();
      }
      self->Outcome(std::move(p), o, std::move(chain), attempt + 1);
    });
    return;
  }
  LogOutcome(*p, o);
  if (w != Write::kOk) return End();
  step.unlock();
  auto self = shared_from_this();
  exec_.Post([self] { self->Next(); });
}

}  // namespace eco::rsync
