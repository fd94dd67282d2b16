#include "agent/runner.h"

#include "agent/local_keys.h"

#include "appcontext/appcontext.h"
#include "appcontext/event_record.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "rsync/cluster_task.h"
#include "rsync/delivery.h"
#include "rsync/event_run.h"
#include "rsync/executor.h"
#include "rsync/metrics.h"
#include "status/ready_monitor.h"
#include "store/memory_store.h"

namespace eco::agent {

using nlohmann::json;
using store::Op;

namespace {

const std::string kHaveKey = local::HaveKey();
const std::string kOutPrefix = local::OutcomePrefix();
const std::string kEventPrefix = local::EventInfoPrefix();
const std::string kStatusCtxPrefix = local::StatusContextPrefix();
using local::EventInfoKey;

}  // namespace

Runner::Runner(RunnerOptions opt, std::shared_ptr<k8s::ClusterClient> cluster)
    : opt_(std::move(opt)),
      clock_(opt_.clock != nullptr ? *opt_.clock : RealClock()),
      random_(opt_.random != nullptr ? *opt_.random : ProcessRandom()),
      cluster_(std::move(cluster)),
      st_(store::NewMemoryStore([this] { Changed(); })) {
  // Every cluster the events name is this one.
  opt_.rsync.rollouts = false;
  opt_.rsync.client_source = [c = cluster_](const std::string&, const std::string&)
      -> Result<std::shared_ptr<k8s::ClusterClient>> { return c; };
  opt_.rsync.on_task_end = [this](const rsync::TaskEnd& e) { TaskEnded(e); };
  if (opt_.drift_interval.count() > 0) {
    opt_.rsync.on_applied = [this](const std::string& av, const std::string& kind, const std::string& ns,
                                   const std::string& name, const std::string& rv) { Applied(av, kind, ns, name, rv); };
  }
  opt_.rsync.clock = &clock_;
  opt_.rsync.random = &random_;
}

Runner::~Runner() { Stop(); }

Status Runner::Restore(std::string_view snapshot) {
  json j = json::parse(snapshot, nullptr, false);
  if (!j.is_object() || !j.value("kvs", json()).is_array() || !j.value("revision", json()).is_number_integer())
    return Invalid("agent state: not a snapshot");
  std::vector<store::KeyValue> kvs;
  for (const auto& e : j["kvs"]) {
    if (!e.is_array() || e.size() != 5 || !e[0].is_string() || !e[1].is_string())
      return Invalid("agent state: a malformed entry");
    store::KeyValue kv;
    kv.key = e[0].get<std::string>();
    kv.value = e[1].get<std::string>();
    kv.create_revision = e[2].get<int64_t>();
    kv.mod_revision = e[3].get<int64_t>();
    kv.version = e[4].get<int64_t>();
    kvs.push_back(std::move(kv));
  }
  std::lock_guard<std::mutex> g(mu_);
  if (started_) return Conflict("agent state: restore after start");
  st_ = store::NewMemoryStore(std::move(kvs), j["revision"].get<int64_t>(), [this] { Changed(); });
  restored_ = static_cast<uint64_t>(j["revision"].get<int64_t>());
  return Status::Ok();
}

std::string Runner::Snapshot() {
  auto r = st_->Range("");
  json kvs = json::array();
  if (r.ok()) {
    for (const auto& kv : r->kvs)
      kvs.push_back(json::array({kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version}));
  }
  return json{{"revision", r.ok() ? r->revision : 0}, {"kvs", std::move(kvs)}}.dump();
}

uint64_t Runner::Revision() {
  auto r = st_->CurrentRevision();
  return r.ok() ? static_cast<uint64_t>(*r) : 0;
}

Status Runner::Start() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (started_) return Conflict("agent runner already started");
    started_ = true;
    if (opt_.executor != nullptr) {
      exec_ = opt_.executor;
    } else {
      own_exec_ = std::make_unique<rsync::Executor>(opt_.rsync.workers, clock_);
      exec_ = own_exec_.get();
    }
    delivery_ = rsync::PushDelivery(opt_.rsync.client_source);
    conn_ = std::make_unique<rsync::Connectivity>(clock_, false);
    tasks_ = std::make_unique<rsync::TaskRunner>(*st_, opt_.rsync, clock_, random_, *exec_, *delivery_, *conn_);
    if (opt_.ready) {
      status::ReadyMonitorOptions ro;
      ro.clients = opt_.rsync.client_source;
      ro.watched = [](const std::string&, const std::string&) { return true; };
      ro.watch_states = false;
      ro.skip_unchanged = true;  // its store is its own: idle scans read nothing
      ro.scan_interval = opt_.ready_scan;
      ro.start_threads = 1;
      ro.shared_hub = opt_.watch_hub;
      // Its rounds run on the runner's executor: no threads of its own.
      ro.post = [exec = exec_](Clock::Duration after, std::function<void()> round) {
        // What is due now runs at once, whatever the clock (a test's may not move).
        after == Clock::Duration::zero() ? exec->Post(std::move(round)) : exec->PostAfter(after, std::move(round));
      };
      ro.clock = &clock_;
      if (opt_.drift_interval.count() > 0) {
        ro.on_object = [this](const std::string& av, const std::string& kind, const nlohmann::json& o, bool gone) {
          Watched(av, kind, o, gone);
        };
        ro.on_relist = [this](const std::string& av, const std::string& kind, const std::vector<nlohmann::json>& items,
                              const std::string& rv) { Relisted(av, kind, items, rv); };
      }
      ready_ = std::make_unique<status::ReadyMonitor>(*st_, ro);
    }
  }
  if (ready_) ECO_RETURN_IF_ERROR(ready_->Start().Annotate("ready monitor"));
  // Events left pending by the last run resume in their order.
  store::RangeOptions keys;
  keys.keys_only = true;
  ECO_ASSIGN_OR_RETURN(auto evs, st_->Range(kEventPrefix, keys));
  std::set<std::string> ctxs;
  for (const auto& kv : evs.kvs) {
    const std::string rest = kv.key.substr(std::string(kEventPrefix).size());
    ctxs.insert(rest.substr(0, rest.find('/')));
  }
  for (const auto& c : ctxs) Kick(c);
  ScheduleDrift();
  return Status::Ok();
}

void Runner::ScheduleDrift() {
  if (opt_.drift_interval.count() <= 0) return;
  exec_->PostAfter(opt_.drift_interval, [this] {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!started_) return;
      drift_busy_ = true;
    }
    // Not while an event applies: it is the one changing the objects.
    if (Busy() == 0) {
      bool sweep = !ready_;
      {
        std::lock_guard<std::mutex> g(drift_mu_);
        if (clock_.Now() >= next_sweep_) sweep = true;
      }
      auto n = CheckDrift(sweep);
      if (n.ok() && *n > 0) Changed();
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      drift_busy_ = false;
      if (!started_) {
        drift_cv_.notify_all();
        return;
      }
    }
    drift_cv_.notify_all();
    ScheduleDrift();
  });
}

void Runner::Stop() {
  std::vector<std::shared_ptr<rsync::EventRun>> runs;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_) return;
    started_ = false;
    for (auto& [id, c] : ctxs_) {
      if (c.run) runs.push_back(c.run);
    }
  }
  for (auto& r : runs) r->Shutdown("agent stopping");
  {
    std::unique_lock<std::mutex> lk(mu_);
    drift_cv_.wait(lk, [this] { return !drift_busy_; });
  }
  if (ready_) ready_->Stop();
  if (own_exec_) own_exec_->Shutdown();
  std::lock_guard<std::mutex> g(mu_);
  ctxs_.clear();
  ready_.reset();
  if (own_exec_) {
    tasks_.reset();
    conn_.reset();
    delivery_.reset();
    own_exec_.reset();
  } else {
    // A shared pool may still hold work of the events just stopped (a
    // retry due later), which names the task runner; today that work
    // returns before touching it, but nothing forces it to: the task runner
    // lives until the runner does, after the pool (RunnerOptions::executor).
    retired_.push_back(std::shared_ptr<void>(std::move(tasks_)));
    retired_.push_back(std::shared_ptr<void>(std::move(conn_)));
    retired_.push_back(std::shared_ptr<void>(std::move(delivery_)));
  }
  exec_ = nullptr;
}

uint64_t Runner::HaveRevision() {
  auto kv = st_->Get(kHaveKey);
  if (!kv.ok() || !kv->has_value()) return 0;
  return std::strtoull((*kv)->value.c_str(), nullptr, 10);
}

Status Runner::Accept(const appcontext::Publication& pub) {
  if (pub.revision <= HaveRevision()) {
    ++already_held_;
    return Status::Ok();
  }
  if (!pub.cancel.empty()) return AcceptCancel(pub);
  if (pub.contexts.empty() || pub.contexts.front().meta.id != pub.context)
    return Invalid("publication " + std::to_string(pub.revision) + ": its first context is not its event's");
  // Contexts as the hub sees them for this cluster; a key already holding
  // the same value is not rewritten (its revision orders the checks of
  // running events: a superseded mark must not look newer than it is).
  std::vector<Op> ops;
  for (const auto& pc : pub.contexts) {
    for (auto& op : appcontext::ImportOps(pc)) {
      ECO_ASSIGN_OR_RETURN(auto cur, st_->Get(op.key));
      if (cur && cur->value == op.value) continue;
      ops.push_back(std::move(op));
    }
    const std::string sc = pc.meta.status_context.empty() ? pc.meta.id : pc.meta.status_context;
    ops.push_back(Op::Put(std::string(kStatusCtxPrefix) + sc, ""));
    ops.push_back(Op::Put(appcontext::RsyncLockKey(pc.meta.id), "agent"));
  }
  store::Txn txn;
  txn.success = std::move(ops);
  const std::string ev_key = appcontext::EventKey(pub.context, pub.event);
  ECO_ASSIGN_OR_RETURN(auto have_ev, st_->Get(ev_key));
  if (!have_ev) {
    appcontext::EventRecord rec = pub.record;
    rec.status = "pending";
    txn.success.push_back(Op::Put(ev_key, appcontext::ToJson(rec).dump()));
    txn.success.push_back(
        Op::Put(EventInfoKey(pub.context, pub.event), json{{"otherComplete", pub.other_complete}}.dump()));
  }
  txn.success.push_back(Op::Put(kHaveKey, std::to_string(pub.revision)));
  if (!pub.state_key.empty()) txn.success.push_back(Op::Put(pub.state_key, pub.state_value));
  // Puts of one key twice (two projections of one context) keep the last.
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < txn.success.size(); ++i) last[txn.success[i].key] = i;
  std::vector<Op> uniq;
  for (size_t i = 0; i < txn.success.size(); ++i) {
    if (last[txn.success[i].key] == i) uniq.push_back(std::move(txn.success[i]));
  }
  txn.success = std::move(uniq);
  ECO_RETURN_IF_ERROR(st_->Commit(txn).status());
  Kick(pub.context);
  if (ready_) ready_->ScanSoon();
  return Status::Ok();
}

namespace {

rsync::Abort AbortOf(const std::string& why) {
  return why == "stopped" ? rsync::Abort::kStopped : rsync::Abort::kFailed;
}

}  // namespace

// Kept in the event's info (so that an event not started yet, or resumed
// after a restart, is cancelled when it starts), then told to its run.
Status Runner::AcceptCancel(const appcontext::Publication& pub) {
  const std::string info_key = EventInfoKey(pub.context, pub.event);
  ECO_ASSIGN_OR_RETURN(auto ev, st_->Get(appcontext::EventKey(pub.context, pub.event)));
  ECO_ASSIGN_OR_RETURN(auto info, st_->Get(info_key));
  store::Txn txn;
  bool pending = false;
  if (ev) {
    auto rec = appcontext::ParseEvent(*ev);
    pending = rec.ok() && rec->pending();
  }
  if (pending) {
    json j = info ? json::parse(info->value, nullptr, false) : json::object();
    if (!j.is_object()) j = json::object();
    j["cancel"] = {{"why", pub.cancel}, {"message", pub.cancel_message}};
    txn.success.push_back(Op::Put(info_key, j.dump()));
  }
  txn.success.push_back(Op::Put(kHaveKey, std::to_string(pub.revision)));
  ECO_RETURN_IF_ERROR(st_->Commit(txn).status());
  std::shared_ptr<rsync::EventRun> run;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = ctxs_.find(pub.context);
    if (pending && it != ctxs_.end() && it->second.run && it->second.seq == pub.event) run = it->second.run;
  }
  if (run) run->Cancel(AbortOf(pub.cancel), pub.cancel_message);
  return Status::Ok();
}

void Runner::Kick(const std::string& ctx) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_) return;
    if (ctxs_[ctx].running) return;
    ctxs_[ctx].running = true;
  }
  // The context's first event still pending here.
  auto evs = st_->Range(appcontext::EventPrefix(ctx));
  std::optional<store::KeyValue> next;
  appcontext::EventRecord rec;
  if (evs.ok()) {
    for (const auto& kv : evs->kvs) {
      auto e = appcontext::ParseEvent(kv);
      if (e.ok() && e->pending()) {
        next = kv;
        rec = std::move(*e);
        break;
      }
    }
  }
  std::shared_ptr<rsync::EventRun> run;
  rsync::EventSpec spec;
  std::string cancel_why, cancel_message;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!next || !started_) {
      ctxs_[ctx].running = false;
      return;
    }
    spec.id = ctx;
    spec.seq = std::strtoll(next->key.c_str() + appcontext::EventPrefix(ctx).size(), nullptr, 10);
    spec.type = rec.type;
    spec.other = rec.other;
    spec.record = rec;
    spec.only.insert(rec.clusters.begin(), rec.clusters.end());
    spec.created = next->create_revision;
    spec.fence = appcontext::RsyncLockKey(ctx);
    auto info = st_->Get(EventInfoKey(ctx, spec.seq));
    if (info.ok() && info->has_value()) {
      json j = json::parse((*info)->value, nullptr, false);
      spec.other_complete = j.is_object() && j.value("otherComplete", false);
      if (j.is_object() && j.contains("cancel") && j["cancel"].is_object()) {
        cancel_why = j["cancel"].value("why", "failed");
        cancel_message = j["cancel"].value("message", "cancelled by the hub");
      }
    }
    run = std::make_shared<rsync::EventRun>(*st_, opt_.rsync, clock_, *exec_, *tasks_);
    ctxs_[ctx].run = run;
    ctxs_[ctx].seq = spec.seq;
  }
  // Cancelled by the hub before it ran here: it starts and ends at once
  // (Cancel before Start is applied when Start has loaded it).
  if (!cancel_why.empty()) run->Cancel(AbortOf(cancel_why), cancel_message);
  const int64_t seq = spec.seq;
  // A context terminated, or cleaned up after the update that replaced
  // it, is needed by no later event: its definition goes (its records stay).
  const bool last = rec.type == "terminate" || rec.type == "update-delete";
  run->Start(std::move(spec), [this, ctx, seq, last](rsync::Outcome o) { Finished(ctx, seq, o, last); });
}

void Runner::Finished(const std::string& ctx, int64_t seq, const rsync::Outcome& o, bool last) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& c = ctxs_[ctx];
    c.running = false;
    c.run.reset();
    if (!started_) return;
  }
  if (o.aborted) return;  // stopping: it stays pending
  const std::string key = appcontext::EventKey(ctx, seq);
  auto kv = st_->Get(key);
  if (kv.ok() && kv->has_value()) {
    auto rec = appcontext::ParseEvent(**kv);
    if (rec.ok()) {
      rec->status = o.ok ? "done" : "error";
      rec->message = o.message;
      rec->finished = catalog::NowRfc3339(clock_);
      (void)st_->Put(key, appcontext::ToJson(*rec).dump());
    }
  }
  if (o.ok && last) {
    store::Txn txn;
    txn.success = appcontext::DropDefinitionOps(ctx);
    txn.success.push_back(Op::DeletePrefix(std::string(kEventPrefix) + ctx + "/"));
    (void)st_->Commit(txn);
  }
  // The watches of a context that ended its last event go now, not at the
  // next scan.
  if (ready_ && last) ready_->ScanSoon();
  exec_->Post([this, ctx] { Kick(ctx); });
}

void Runner::TaskEnded(const rsync::TaskEnd& e) {
  appcontext::Outcome o{e.ok, e.message, e.own_failure};
  (void)st_->Put(local::OutcomeKey(e.context, e.event, e.app), appcontext::ToJson(o).dump());
}

void Runner::Changed() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> g(change_mu_);
    fn = on_change_;
  }
  if (fn) fn();
}

void Runner::OnChange(std::function<void()> fn) {
  std::lock_guard<std::mutex> g(change_mu_);
  on_change_ = std::move(fn);
}

size_t Runner::Busy() {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (const auto& [id, c] : ctxs_) n += c.running ? 1 : 0;
  return n;
}

Result<Report> Runner::ReportSince(uint64_t after) {
  Report rep;
  ECO_ASSIGN_OR_RETURN(auto cur, st_->CurrentRevision());
  rep.seq = static_cast<uint64_t>(cur);
  const std::string me = opt_.provider + "+" + opt_.cluster;
  store::RangeOptions keys;
  keys.keys_only = true;
  ECO_ASSIGN_OR_RETURN(auto scs, st_->Range(kStatusCtxPrefix, keys));
  for (const auto& s : scs.kvs) {
    const std::string sc = s.key.substr(std::string(kStatusCtxPrefix).size());
    for (auto [kind, prefix] : {std::pair{ReportItem::Kind::kDeployed, appcontext::DeployedPrefix(sc)},
                                std::pair{ReportItem::Kind::kReady, appcontext::ReadyPrefix(sc)},
                                std::pair{ReportItem::Kind::kDrift, appcontext::DriftPrefix(sc)}}) {
      ECO_ASSIGN_OR_RETURN(auto recs, st_->Range(prefix));
      for (const auto& kv : recs.kvs) {
        if (static_cast<uint64_t>(kv.mod_revision) <= after) continue;
        // <app>/<cluster key>: only this cluster's records go up.
        const std::string rest = kv.key.substr(prefix.size());
        const size_t slash = rest.find('/');
        if (slash == std::string::npos || rest.substr(slash + 1) != me) continue;
        rep.items.push_back({kind, sc, "", 0, rest.substr(0, slash), kv.value});
      }
    }
  }
  ECO_ASSIGN_OR_RETURN(auto outs, st_->Range(kOutPrefix));
  for (const auto& kv : outs.kvs) {
    if (static_cast<uint64_t>(kv.mod_revision) <= after) continue;
    const std::string rest = kv.key.substr(std::string(kOutPrefix).size());
    const size_t a = rest.find('/');
    const size_t b = a == std::string::npos ? a : rest.find('/', a + 1);
    if (b == std::string::npos) continue;
    ReportItem it;
    it.kind = ReportItem::Kind::kOutcome;
    it.context = rest.substr(0, a);
    it.event = std::strtoll(rest.substr(a + 1, b - a - 1).c_str(), nullptr, 10);
    it.app = rest.substr(b + 1);
    it.json = kv.value;
    rep.items.push_back(std::move(it));
  }
  return rep;
}

}  // namespace eco::agent
