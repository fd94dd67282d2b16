// The ready monitor's facade (docs/status.md, "How the ready monitor is
// built"): the scan builds plans and queues watch starts (ready_starts);
// watch events update the plans and mark app x clusters dirty; the write
// round judges and writes them; the drift round judges drift apart.
#include "status/ready_monitor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/lifeline.h"
#include "status/ready_clients.h"
#include "status/ready_drift.h"
#include "status/ready_metrics.h"
#include "status/ready_plan.h"
#include "status/ready_scan.h"
#include "status/ready_starts.h"
#include "status/ready_writer.h"
#include "status/shared_watches.h"

namespace eco::status {

using nlohmann::json;

namespace {

constexpr auto kWriteCoalesce = std::chrono::milliseconds(100);
// When a round writes this many records (a fleet deploying), the next one
// waits longer: each record then takes in more of its objects' changes.
constexpr size_t kBusyRound = 256;
constexpr auto kBusyCoalesce = std::chrono::milliseconds(500);
constexpr auto kWriteRetry = std::chrono::milliseconds(500);

bool IsConnectionFailure(const Status& s) { return s.code() == Code::kUnavailable; }

}  // namespace

class ReadyMonitor::Impl {
 public:
  Impl(store::Store& st, ReadyMonitorOptions opts)
      : st_(st),
        opts_(std::move(opts)),
        clock_(opts_.clock ? *opts_.clock : RealClock()),
        clients_(st, opts_.clients ? opts_.clients : CatalogClients(st)),
        own_hub_(opts_.source || opts_.shared_hub ? nullptr
                                                  : std::make_unique<k8s::WatchHub>(opts_.hub)),
        hub_source_(opts_.source ? nullptr
                                 : std::make_unique<HubWatchSource>(
                                       opts_.shared_hub ? *opts_.shared_hub : *own_hub_)),
        shared_(opts_.source ? *opts_.source : *hub_source_),
        scan_(st, opts_.skip_unchanged),
        writer_(st, clock_, {opts_.record_seen, opts_.replica, opts_.seen_every}),
        starts_(
            opts_.start_threads, [this](const WatchStarts::Item& t) { return StartOne(t); },
            [this](std::function<void()> task) { Post(Clock::Duration::zero(), std::move(task)); },
            shared_),
        drift_(
            st, clock_,
            [this](const std::string& p, const std::string& c) { return clients_.Get(p, c); },
            opts_.repair) {
    if (!opts_.watched) {
      opts_.watched = [this](const std::string& provider, const std::string& cluster) {
        return !clients_.IsAgentCluster(provider, cluster);
      };
    }
    ReadyGauges::Get();  // the series exist from the first scrape on
    if (opts_.drift) DriftMetrics::Get();
  }

  ~Impl() {
    Stop();
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, p] : plans_) Uncount(*p);
  }

  Status Start() {
    if (!opts_.post) return Invalid("ready monitor: no executor (ReadyMonitorOptions::post)");
    {
      std::lock_guard<std::mutex> l(mu_);
      if (started_ || stopping_) return Status::Ok();
      started_ = true;
    }
    // Lifecycle changes (instantiate, terminate, update) show in the state
    // records: scan at once rather than at the next interval. (Not under
    // mu_: the callback takes it.)
    if (opts_.watch_states) {
      store::WatchCallbacks cb;
      cb.on_events = [this](const std::vector<store::WatchEvent>&) { ScanSoon(); };
      cb.on_error = [this](const Status&) { ScanSoon(); };
      auto w = st_.Watch(catalog::StatePrefix(), 0, std::move(cb));
      if (!w.ok()) {
        std::lock_guard<std::mutex> l(mu_);
        started_ = false;
        return w.status();
      }
      state_watch_ = std::move(*w);
    }
    // A previous monitor's verdicts: confirmed or cleared by this one's
    // watches, dropped at a scan for clusters nothing is watched on.
    writer_.LoadUnreachable();
    std::lock_guard<std::mutex> l(mu_);
    WakeScanner();
    return Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    state_watch_.reset();
    life_.Close();  // rounds posted and not begun do nothing; a running one is waited for
    // This monitor's subscriptions end here (a shared hub lives on).
    std::vector<SubscriptionId> subs = starts_.Stop();
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [sctx, p] : plans_) {
        for (auto& [k, w] : p->watches) {
          if (w.started) subs.push_back(w.sub);
          w.started = false;
        }
      }
    }
    for (auto id : subs) shared_.Unsubscribe(id);
    if (own_hub_) own_hub_->Shutdown();
  }

  void ScanSoon() {
    std::lock_guard<std::mutex> l(mu_);
    WakeScanner();
  }

  size_t watched_contexts() const {
    std::lock_guard<std::mutex> l(mu_);
    return plans_.size();
  }
  uint64_t full_scans() const { return scan_.full_scans(); }
  uint64_t skipped_scans() const { return scan_.skipped_scans(); }
  size_t active_watches() const { return shared_.active_watches(); }

 private:
  // ---- rounds on the executor ----

  // Runs `fn` on the executor `after` from now unless the monitor stopped
  // first (from any thread, mu_ held or not).
  void Post(Clock::Duration after, std::function<void()> fn) {
    opts_.post(after, life_.Wrap(std::move(fn)));
  }

  // mu_ held. A scan is due now.
  void WakeScanner() {
    scan_pending_ = true;
    if (scan_posted_ || scanning_ || !started_ || stopping_) return;  // a running round rescans
    scan_posted_ = true;
    Post(Clock::Duration::zero(), [this] { ScanRound(); });
  }

  // mu_ held. Records are due for writing (after the coalescing pause: a
  // cluster's objects arrive one after another, and each record is then
  // computed and written once, not per event).
  void WakeWriter() {
    if (write_posted_ || writing_ || !started_ || stopping_) return;  // a running round looks again
    write_posted_ = true;
    Post(write_busy_ ? kBusyCoalesce : kWriteCoalesce, [this] { WriteRound(); });
  }

  // mu_ held. Drift suspects are due `after` from now.
  void WakeDrift(Clock::Duration after) {
    if (!opts_.drift || drift_posted_ || drifting_ || !started_ || stopping_) return;
    drift_posted_ = true;
    Post(after, [this] { DriftRound(); });
  }

  void ScanRound() {
    {
      std::lock_guard<std::mutex> l(mu_);
      scan_posted_ = false;
      if (stopping_ || scanning_) return;
      scanning_ = true;
      scan_pending_ = false;
    }
    Scan();
    std::lock_guard<std::mutex> l(mu_);
    scanning_ = false;
    if (stopping_) return;
    if (scan_pending_) WakeScanner();
    if (!scan_timer_) {
      scan_timer_ = true;
      Post(opts_.scan_interval, [this] {
        std::lock_guard<std::mutex> g(mu_);
        scan_timer_ = false;
        WakeScanner();
      });
    }
  }

  // ---- scanning ----

  void Scan() {
    auto want = scan_.Scan();
    if (!want) {  // nothing changed (or the store is down): retry the watches that failed to start
      QueueStarts();
      return;
    }
    bool complete = true;
    std::vector<std::unique_ptr<Plan>> dead;
    std::vector<std::pair<std::string, std::string>> fresh;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto it = plans_.begin(); it != plans_.end();) {
        auto w = want->find(it->first);
        if (w == want->end() || w->second != it->second->plan_ctx) {
          Uncount(*it->second);
          dead.push_back(std::move(it->second));
          it = plans_.erase(it);
        } else {
          ++it;
        }
      }
      for (const auto& [sctx, plan] : *want) {
        if (!plans_.count(sctx)) fresh.emplace_back(sctx, plan);
      }
    }
    for (const auto& [sctx, plan] : fresh) {
      auto p = BuildPlan(st_, sctx, plan, opts_.watched, opts_.drift);
      if (!p.ok()) {
        complete = false;  // built again at the next scan
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      (*p)->serial = ++serial_;
      AddSuspects(sctx, (*p)->serial, (*p)->stored_drift);
      (*p)->stored_drift.clear();
      plans_[sctx] = std::move(*p);
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      ForgetUnwatched(!dead.empty());
    }
    if (complete) scan_.Completed();
    QueueStarts();
    // Ended once the starts queued now are done. (Events for a plan gone
    // are dropped meanwhile.)
    std::vector<SubscriptionId> subs;
    for (auto& p : dead) {
      for (auto& [k, w] : p->watches) {
        if (w.started) subs.push_back(w.sub);
      }
    }
    starts_.Retire(subs);
  }

  // mu_ held. Clusters no context watches any more are not judged.
  void ForgetUnwatched(bool contexts_went) {
    if (!contexts_went && !writer_.AnyUnreachable()) return;
    std::set<std::string> watched;
    for (const auto& [id, p] : plans_) {
      for (const auto& [k, w] : p->watches) watched.insert(w.cluster_key());
    }
    if (writer_.Forget(watched, contexts_went)) WakeWriter();
  }

  // ---- watch starts (ready_starts) ----

  // Queues the watches not running yet, by cluster.
  void QueueStarts() {
    std::map<std::string, std::vector<WatchStarts::Item>> by_cluster;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      for (auto& [sctx, p] : plans_) {
        for (auto& [k, w] : p->watches) {
          if (w.started || starts_.Busy(w.cluster_key())) continue;
          by_cluster[w.cluster_key()].push_back(
              {sctx, p->serial, k, w.provider, w.cluster, w.api_version, w.kind});
        }
      }
    }
    starts_.Queue(std::move(by_cluster));
  }

  // False when the cluster could not be reached.
  bool StartOne(const WatchStarts::Item& t) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return false;
    }
    auto client = clients_.Get(t.provider, t.cluster);
    if (!client.ok()) return false;
    // A watch of the kind on the cluster that already listed hands this
    // context its objects at once (OnEvent runs before Subscribe returns).
    auto id = shared_.Subscribe(
        t.sctx, WatchKey{t.provider + "+" + t.cluster, t.api_version, t.kind}, *client,
        [this, sctx = t.sctx, serial = t.serial, key = t.key](const k8s::WatchEvent& e) {
          OnEvent(sctx, serial, key, e);
        });
    std::unique_lock<std::mutex> l(mu_);
    Plan* p = FindPlan(t.sctx, t.serial);
    KindWatch* w = p ? FindWatch(*p, t.key) : nullptr;
    if (!id.ok()) {
      if (id.status().code() != Code::kNotFound) {
        if (w && IsConnectionFailure(id.status()) &&
            writer_.SetReachable(t.provider + "+" + t.cluster, false, id.status().message()))
          WakeWriter();
        return false;
      }
      if (w && !w->seen.synced) {
        // The cluster does not serve the kind (a CRD not applied yet):
        // none of these objects is there. Retried at the next scan.
        w->seen.synced = true;
        w->seen.objects.Clear();
        MarkDirty(t.sctx, t.serial, *w);
      }
      return true;
    }
    if (!w || stopping_) {
      l.unlock();
      shared_.Unsubscribe(*id);  // the context went away (or the monitor stops) meanwhile
      return true;
    }
    w->started = true;
    w->sub = *id;
    return true;
  }

  // ---- watch events ----

  // mu_ held.
  Plan* FindPlan(const std::string& sctx, uint64_t serial) {
    auto it = plans_.find(sctx);
    return it == plans_.end() || it->second->serial != serial ? nullptr : it->second.get();
  }
  static KindWatch* FindWatch(Plan& p, const std::string& key) {
    auto w = p.watches.find(key);
    return w == p.watches.end() ? nullptr : &w->second;
  }
  AppCluster* FindAc(const AcKey& d) {
    Plan* p = FindPlan(d.status_ctx, d.serial);
    if (!p) return nullptr;
    auto a = p->acs.find(d.ac);
    return a == p->acs.end() ? nullptr : &a->second;
  }

  // mu_ held.
  void MarkDirty(const std::string& sctx, uint64_t serial, const KindWatch& w) {
    for (const auto& [label, ac] : w.by_label) dirty_.insert({sctx, serial, *ac});
    WakeWriter();
  }

  // mu_ held. The cluster of `w` answered: each watch passes on one contact
  // per interval at most, so that a busy cluster costs a time comparison
  // per event.
  void RecordContact(KindWatch& w) {
    if (!opts_.record_seen) return;
    const Clock::Time now = clock_.Now();
    if (w.heard != Clock::Time{} && now - w.heard < opts_.seen_every) return;
    w.heard = now;
    if (writer_.Heard(w.cluster_key())) WakeWriter();
  }

  void OnEvent(const std::string& sctx, uint64_t serial, const std::string& key,
               const k8s::WatchEvent& e) {
    if (e.type == k8s::WatchEventType::kBookmark && !opts_.record_seen) return;
    std::lock_guard<std::mutex> l(mu_);
    Plan* p = FindPlan(sctx, serial);
    KindWatch* w = p ? FindWatch(*p, key) : nullptr;
    if (!w) return;
    if (e.type == k8s::WatchEventType::kError) {
      // Two failures in a row: one dropped stream that reconnects at once
      // is not a cluster going away.
      if (IsConnectionFailure(e.error) && ++w->failures >= 2 &&
          writer_.SetReachable(w->cluster_key(), false, e.error.message()))
        WakeWriter();
      return;
    }
    RecordContact(*w);
    // A bookmark says the stream is alive, nothing more (it never reset
    // the failure count: a stream that keeps failing to reconnect sends none).
    if (e.type == k8s::WatchEventType::kBookmark) return;
    w->failures = 0;
    if (writer_.AnyUnreachable() && writer_.SetReachable(w->cluster_key(), true, "")) WakeWriter();
    if (e.type == k8s::WatchEventType::kConnected) return;
    if (e.type == k8s::WatchEventType::kResync) {
      Relisted(*p, *w, e.items, e.resource_version);
      return;
    }
    const bool by_name = w->by_name();
    const bool gone = e.type == k8s::WatchEventType::kDeleted;
    if (!gone && e.type != k8s::WatchEventType::kAdded && e.type != k8s::WatchEventType::kModified)
      return;
    const std::string okey = ObjectKey(e.object, by_name);
    if (by_name && !w->names.count(okey)) return;
    if (opts_.on_object) opts_.on_object(w->api_version, w->kind, e.object, gone);
    if (opts_.drift && w->seen.synced) {
      AddSuspects(sctx, serial,
                  ChangeSuspects(*p, *w, okey, gone ? nullptr : &e.object,
                                 gone ? std::nullopt : w->seen.objects.Get(okey),
                                 e.type == k8s::WatchEventType::kModified));
    }
    // A change readiness does not see changes nothing.
    if (!(gone ? w->seen.objects.Erase(okey) : w->seen.objects.Set(okey, e.object))) return;
    if (!w->seen.synced) return;
    // Only the app x cluster the object's label names can see the change
    // (any of them for an object matched by name).
    const std::string_view label = std::string_view(okey).substr(0, okey.find('\n'));
    auto first = by_name ? w->by_label.begin()
                         : std::lower_bound(w->by_label.begin(), w->by_label.end(), label,
                                            [](const auto& entry, std::string_view lb) {
                                              return entry.first < lb;
                                            });
    bool any = false;
    for (auto it = first; it != w->by_label.end() && (by_name || it->first == label); ++it) {
      dirty_.insert({sctx, serial, *it->second});
      any = true;
    }
    if (any) WakeWriter();
  }

  // mu_ held. A relist: the watch's objects are the list's.
  void Relisted(Plan& p, KindWatch& w, const std::vector<json>& items, const std::string& rv) {
    if (opts_.on_relist) opts_.on_relist(w.api_version, w.kind, items, rv);
    if (opts_.drift) AddSuspects(p.status_ctx, p.serial, RelistSuspects(p, w, items));
    w.seen.objects.Clear();
    const bool by_name = w.by_name();
    for (const auto& obj : items) {
      std::string okey = ObjectKey(obj, by_name);
      if (by_name && !w.names.count(okey)) continue;
      w.seen.objects.Set(okey, obj);
    }
    w.seen.synced = true;
    MarkDirty(p.status_ctx, p.serial, w);
  }

  // ---- writing ----

  // mu_ held.
  bool WritesDue() const { return !dirty_.empty() || writer_.Due(); }

  // Judges the app x clusters marked dirty (under the lock) and writes
  // what differs from the stored records, with the clusters' records.
  void WriteRound() {
    std::vector<AcKey> keys;
    std::vector<std::pair<std::string, appcontext::ReadyRecord>> recs;
    {
      std::lock_guard<std::mutex> l(mu_);
      write_posted_ = false;
      if (stopping_) return;
      writing_ = true;
      std::set<AcKey> batch;
      batch.swap(dirty_);
      for (const auto& d : batch) {
        AppCluster* ac = FindAc(d);
        if (!ac) continue;
        std::optional<appcontext::ReadyRecord> rec = ac->Judge();
        if (rec) Count(*ac, CountByStatus(*rec));
        if (!rec || (ac->written && *ac->written == RecordHash(*rec))) continue;
        rec->time = catalog::NowRfc3339(clock_);
        keys.push_back(d);
        recs.emplace_back(appcontext::ReadyKey(d.status_ctx, ac->app, ac->cluster),
                          std::move(*rec));
      }
      write_busy_ = recs.size() >= kBusyRound;
    }
    bool failed = !writer_.WriteClusters();
    const std::vector<bool> written = writer_.WriteRecords(recs);
    std::lock_guard<std::mutex> l(mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!written[i]) {
        dirty_.insert(keys[i]);  // retried after a pause
        failed = true;
      } else if (AppCluster* ac = FindAc(keys[i])) {
        ac->written = RecordHash(recs[i].second);
      }
    }
    writing_ = false;
    if (stopping_) return;
    if (failed) {
      write_posted_ = true;  // the store is down: pause before the next round
      Post(kWriteRetry, [this] { WriteRound(); });
    } else if (WritesDue()) {
      WakeWriter();
    }
  }

  // mu_ held. The gauges follow the app x cluster's new counts.
  static void Count(AppCluster& ac, const std::array<int32_t, 3>& now) {
    auto& g = ReadyGauges::Get().by_status;
    for (size_t i = 0; i < 3; ++i) {
      if (now[i] != ac.counted[i]) g[i]->Increment(now[i] - ac.counted[i]);
    }
    ac.counted = now;
  }
  // mu_ held. A context no longer watched leaves the gauges.
  static void Uncount(Plan& p) {
    for (auto& [key, ac] : p.acs) {
      Count(ac, {});
      if (ac.drifted != 0) DriftMetrics::Get().resources->Decrement(ac.drifted);
      ac.drifted = 0;
    }
  }

  // ---- drift: judged in a round of its own (it reads the clusters) ----

  // mu_ held.
  void AddSuspects(const std::string& sctx, uint64_t serial,
                   const std::vector<std::pair<std::string, std::string>>& suspects) {
    for (const auto& [ac, res] : suspects) drift_suspects_[{sctx, serial, ac}].insert(res);
    // A burst (an object applied, then its status) is looked at once.
    if (!suspects.empty()) WakeDrift(kWriteCoalesce);
  }

  void DriftRound() {
    std::vector<DriftJob> jobs;
    {
      std::lock_guard<std::mutex> l(mu_);
      drift_posted_ = false;
      if (stopping_) return;
      drifting_ = true;
      std::map<AcKey, std::set<std::string>> batch;
      batch.swap(drift_suspects_);
      for (auto& [d, res] : drift_deferred_) batch[d].insert(res.begin(), res.end());
      drift_deferred_.clear();
      for (auto& [d, res] : batch) {
        AppCluster* ac = FindAc(d);
        if (!ac) continue;  // its context is no longer watched
        jobs.push_back({d, plans_[d.status_ctx]->plan_ctx, ac->app, ac->cluster, ac->provider,
                        ac->cluster_name, ac->shape, std::move(res)});
      }
    }
    std::vector<DriftOutcome> outcomes = drift_.Run(std::move(jobs));
    std::lock_guard<std::mutex> l(mu_);
    for (auto& o : outcomes) {
      if (!o.deferred.empty()) drift_deferred_[o.d].merge(o.deferred);
      if (AppCluster* ac = FindAc(o.d); ac && o.drifted && ac->drifted != *o.drifted) {
        DriftMetrics::Get().resources->Increment(*o.drifted - ac->drifted);
        ac->drifted = *o.drifted;
      }
    }
    drifting_ = false;
    // Changes seen while its deployment was busy, or the cluster did not
    // answer, are looked at again after drift_retry.
    if (!drift_suspects_.empty()) {
      WakeDrift(kWriteCoalesce);
    } else if (!drift_deferred_.empty()) {
      WakeDrift(opts_.drift_retry);
    }
  }

  store::Store& st_;
  ReadyMonitorOptions opts_;
  Clock& clock_;
  ClusterClients clients_;
  std::unique_ptr<k8s::WatchHub> own_hub_;      // null with a shared hub or a source
  std::unique_ptr<HubWatchSource> hub_source_;  // null with opts_.source
  SharedWatches shared_;                        // every context's watches, one per cluster x kind
  ContextScan scan_;                            // scan rounds only (one at a time)
  ReadyWriter writer_;
  WatchStarts starts_;
  DriftJudge drift_;  // drift rounds only (one at a time)
  std::unique_ptr<store::WatchHandle> state_watch_;

  mutable std::mutex mu_;
  bool started_ = false;                                // guarded by mu_
  bool stopping_ = false;                               // guarded by mu_
  uint64_t serial_ = 0;                                 // guarded by mu_
  std::map<std::string, std::unique_ptr<Plan>> plans_;  // guarded by mu_; by status context
  std::set<AcKey> dirty_;                               // guarded by mu_: to judge and write
  // Drift: the resources (by app x cluster) a watch saw change in a way
  // that may be drift, and those to look at again later.
  std::map<AcKey, std::set<std::string>> drift_suspects_;  // guarded by mu_
  std::map<AcKey, std::set<std::string>> drift_deferred_;  // guarded by mu_
  // Whether each round is posted or running, and the interval's timer is
  // set. Rounds reach the monitor through life_.
  bool scan_pending_ = false, scan_posted_ = false, scanning_ = false,
       scan_timer_ = false;                      // guarded by mu_
  bool write_posted_ = false, writing_ = false;  // guarded by mu_
  bool write_busy_ = false;  // guarded by mu_: the last round wrote many records
  bool drift_posted_ = false, drifting_ = false;  // guarded by mu_
  Lifeline life_;
};

ReadyMonitor::ReadyMonitor(store::Store& st, ReadyMonitorOptions opts)
    : impl_(std::make_unique<Impl>(st, std::move(opts))) {}
ReadyMonitor::~ReadyMonitor() = default;
Status ReadyMonitor::Start() { return impl_->Start(); }
void ReadyMonitor::Stop() { impl_->Stop(); }
size_t ReadyMonitor::watched_contexts() const { return impl_->watched_contexts(); }
size_t ReadyMonitor::active_watches() const { return impl_->active_watches(); }
uint64_t ReadyMonitor::full_scans() const { return impl_->full_scans(); }
uint64_t ReadyMonitor::skipped_scans() const { return impl_->skipped_scans(); }
void ReadyMonitor::ScanSoon() { impl_->ScanSoon(); }

}  // namespace eco::status
