#include "status/ready_monitor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"
#include "common/json_fields.h"
#include "common/lifeline.h"
#include "common/log.h"
#include "common/metrics.h"
#include "k8s/client_pool.h"
#include "k8s/drift.h"
#include "k8s/kubeconfig.h"
#include "k8s/readiness.h"
#include "status/shared_watches.h"

namespace eco::status {

using nlohmann::json;

namespace {

using appcontext::kAppLabel;
constexpr auto kWriteCoalesce = std::chrono::milliseconds(100);
// When a round writes this many records (a fleet deploying), the next one
// waits longer: each record then takes in more of its objects' changes.
constexpr size_t kBusyRound = 256;
constexpr auto kBusyCoalesce = std::chrono::milliseconds(500);

using appcontext::LabelValue;

// Namespaces are matched by name alone, and watched without a label
// selector: a deployment may share one that another (or nobody in eco)
// owns, whose labels are not its own (rsync never takes them over). Only
// the names the plan has are kept. (CRDs, which rsync may share too, are
// not: listing every CRD of every cluster costs megabytes per cluster.)
bool ByName(const std::string& api_version, const std::string& kind) {
  return SharedWatches::ByName(api_version, kind);
}

// How an object is matched against the plan: its app label and name (by
// name alone for the kinds ByName names).
std::string ObjectKey(const json& obj, bool by_name) {
  const json& md = obj.contains("metadata") ? obj["metadata"] : json::object();
  std::string app;
  if (!by_name) {
    if (auto l = md.find("labels"); l != md.end() && l->is_object()) app = StringField(*l, kAppLabel);
  }
  return app + "\n" + StringField(md, "name");
}

// Kinds whose controllers create Pods carrying the pod template's labels.
bool MakesPods(const std::string& api_version, const std::string& kind) {
  if (api_version == "apps/v1")
    return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet";
  if (api_version == "batch/v1") return kind == "Job" || kind == "CronJob";
  return false;
}

}  // namespace

ClientFactory CatalogClients(store::Store& st, k8s::ClientOptions options) {
  return [&st, options](const std::string& provider,
                        const std::string& cluster) -> Result<std::shared_ptr<k8s::ClusterClient>> {
    return k8s::ClientOfCluster(st, provider, cluster, options);
  };
}

// eco_ready_resources{status}: the resources of the watched AppContexts by
// ready status, summed over every monitor of the process (moved by deltas).
struct ReadyGauges {
  std::array<prometheus::Gauge*, 3> by_status{};  // Ready, NotReady, NotPresent
  static ReadyGauges& Get() {
    static ReadyGauges g = [] {
      auto& fam = prometheus::BuildGauge()
                      .Name("eco_ready_resources")
                      .Help("Resources of deployed apps by ready status (Ready, NotReady, NotPresent), cluster-only Pods included.")
                      .Register(metrics::Registry());
      ReadyGauges made;
      made.by_status = {&fam.Add({{"status", "Ready"}}), &fam.Add({{"status", "NotReady"}}),
                        &fam.Add({{"status", "NotPresent"}})};
      return made;
    }();
    return g;
  }
};

// Drift of push clusters: resources drifted now, drifts found and repairs
// made (docs/observability.md).
struct DriftMetrics {
  prometheus::Gauge* resources = nullptr;
  prometheus::Counter* detected = nullptr;
  prometheus::Counter* repaired = nullptr;
  static DriftMetrics& Get() {
    static DriftMetrics m = [] {
      DriftMetrics made;
      made.resources = &prometheus::BuildGauge()
                            .Name("eco_drift_resources")
                            .Help("Resources of push clusters drifted now: deleted or changed out of band.")
                            .Register(metrics::Registry())
                            .Add({});
      made.detected = &prometheus::BuildCounter()
                           .Name("eco_drift_detected_total")
                           .Help("Resources of push clusters found drifted (each time one starts to drift).")
                           .Register(metrics::Registry())
                           .Add({});
      made.repaired = &prometheus::BuildCounter()
                           .Name("eco_drift_repaired_total")
                           .Help("Drifted resources of push clusters applied again (spec.driftPolicy enforce).")
                           .Register(metrics::Registry())
                           .Add({});
      return made;
    }();
    return m;
  }
};

namespace {

// What of a compared manifest a slim watch event shows (k8s::ParseSlim
// drops ConfigMap and Secret data, annotations and pod templates);
// `hidden` tells whether the manifest sets anything it does not show.
json VisiblePart(json compared, bool* hidden) {
  *hidden = false;
  if (!compared.is_object()) return compared;
  for (const char* k : {"data", "binaryData", "stringData"}) *hidden |= compared.erase(k) > 0;
  for (auto& [key, sub] : compared.items()) {
    if (!sub.is_object()) continue;
    for (const char* k : {"managedFields", "annotations", "template", "jobTemplate", "volumeClaimTemplates"})
      *hidden |= sub.erase(k) > 0;
  }
  return compared;
}

// The paths a Warn apply left out ("spec.replicas: field not declared ...").
std::vector<std::string> LeftOut(const std::vector<std::string>& warnings) {
  std::vector<std::string> out;
  for (const auto& w : warnings) out.push_back(w.substr(0, w.find(':')));
  return out;
}

}  // namespace

class ReadyMonitor::Impl {
 public:
  Impl(store::Store& st, ReadyMonitorOptions opts)
      : st_(st),
        opts_(std::move(opts)),
        clock_(opts_.clock ? *opts_.clock : RealClock()),
        own_hub_(opts_.shared_hub ? nullptr : std::make_unique<k8s::WatchHub>(opts_.hub)),
        hub_(opts_.shared_hub ? *opts_.shared_hub : *own_hub_),
        source_(hub_),
        shared_(source_) {
    if (!opts_.clients) opts_.clients = CatalogClients(st_);
    if (!opts_.watched) {
      opts_.watched = [this](const std::string& provider, const std::string& cluster) {
        return !IsAgentCluster(provider, cluster);
      };
    }
    ReadyGauges::Get();  // the series exist from the first scrape on
    opts_.drift = opts_.drift && !opts_.post;  // its thread is the monitor's own
    if (opts_.drift) DriftMetrics::Get();
  }

  ~Impl() {
    Stop();
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, c] : ctxs_) Uncount(*c);
  }

  Status Start() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (started_ || stopping_) return Status::Ok();
      started_ = true;
    }
    // Lifecycle changes (instantiate, terminate, update) show in the state
    // records: scan at once rather than at the next interval. (Not under
    // mu_: the callback takes it.)
    store::WatchCallbacks cb;
    cb.on_events = [this](const std::vector<store::WatchEvent>&) { ScanSoon(); };
    cb.on_error = [this](const Status&) { ScanSoon(); };
    if (opts_.watch_states) {
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
    auto stored = appcontext::ReadUnreachable(st_);
    std::lock_guard<std::mutex> l(mu_);
    if (stored.ok()) {
      for (auto& [key, rec] : *stored) reach_[key] = Reach{true, true, rec.since, rec.error};
    }
    if (opts_.post) {
      WakeScanner();
    } else {
      scan_pending_ = true;
      scanner_ = std::thread([this] { ScanLoop(); });
      writer_ = std::thread([this] { WriteLoop(); });
      if (opts_.drift) drifter_ = std::thread([this] { DriftLoop(); });
    }
    return Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    state_watch_.reset();
    scan_cv_.notify_all();
    write_cv_.notify_all();
    drift_cv_.notify_all();
    if (scanner_.joinable()) scanner_.join();
    if (writer_.joinable()) writer_.join();
    if (drifter_.joinable()) drifter_.join();
    life_.Close();  // rounds posted and not begun do nothing; a running one is waited for
    // This monitor's subscriptions end here (a shared hub lives on).
    std::vector<SubscriptionId> subs;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [sctx, c] : ctxs_) {
        for (auto& [k, w] : c->watches) {
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

  // mu_ held. A scan is due now.
  void WakeScanner() {
    scan_pending_ = true;
    if (!opts_.post) {
      scan_cv_.notify_all();
      return;
    }
    if (scan_posted_ || scanning_ || !started_ || stopping_) return;  // a running round rescans
    scan_posted_ = true;
    Post(Clock::Duration::zero(), &Impl::ScanRound);
  }

  // mu_ held. Records are due for writing (after the coalescing pause).
  void WakeWriter() {
    if (!opts_.post) {
      write_cv_.notify_all();
      return;
    }
    if (write_posted_ || writing_ || !started_ || stopping_) return;  // a running round looks again
    write_posted_ = true;
    Post(write_busy_ ? kBusyCoalesce : kWriteCoalesce, &Impl::WriteTask);
  }

  // mu_ held. Runs `round` on opts_.post's threads unless the monitor
  // stopped first.
  void Post(Clock::Duration after, void (Impl::*round)()) {
    opts_.post(after, life_.Wrap([this, round] { (this->*round)(); }));
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
      Post(opts_.scan_interval, &Impl::ScanTimer);
    }
  }

  void ScanTimer() {
    std::lock_guard<std::mutex> l(mu_);
    scan_timer_ = false;
    WakeScanner();
  }

  void WriteTask() {
    std::unique_lock<std::mutex> l(mu_);
    write_posted_ = false;
    if (stopping_) return;
    writing_ = true;
    const bool failed = WriteRound(l);
    writing_ = false;
    if (stopping_) return;
    if (failed) {
      write_posted_ = true;  // the store is down: pause before the next round
      Post(std::chrono::milliseconds(500), &Impl::WriteTask);
    } else if (WritesDue()) {
      WakeWriter();
    }
  }

  size_t watched_contexts() const {
    std::lock_guard<std::mutex> l(mu_);
    return ctxs_.size();
  }
  uint64_t full_scans() const { return full_scans_.load(); }
  uint64_t skipped_scans() const { return skipped_scans_.load(); }
  // The shared watches (one per cluster x kind, whatever the contexts).
  size_t active_watches() const { return shared_.active_watches(); }

 private:
  // What an app (one plan variant) expects on each of its clusters; shared
  // by those clusters, so that a fleet costs a few pointers per cluster.
  struct Shape {
    struct Item {
      std::string res_name;    // "<name>+<Kind>"
      size_t kind = 0;         // index in `kinds`
      std::string object_key;  // app label "\n" metadata.name
      // With drift on: the manifest (k8s::ComparedPart of it), what of it a
      // slim watch event shows, and whether it sets more than that.
      json compared, visible;
      bool hidden = false;
    };
    std::vector<std::pair<std::string, std::string>> kinds;  // apiVersion, kind
    std::vector<Item> items;
    // Index in `kinds` of v1 Pod when its workloads make Pods (they are
    // listed too), else -1.
    int pod_kind = -1;
    std::string label;  // its app label value

    size_t KindIndex(const std::string& av, const std::string& kind) {
      for (size_t i = 0; i < kinds.size(); ++i) {
        if (kinds[i].first == av && kinds[i].second == kind) return i;
      }
      kinds.emplace_back(av, kind);
      return kinds.size() - 1;
    }
  };
  struct KindWatch;
  struct AppCluster {
    std::string app, cluster;
    std::string provider, cluster_name;
    std::shared_ptr<const Shape> shape;
    std::vector<KindWatch*> watch;  // per shape kind (nodes of Ctx::watches)
    // Hash of the stored record (RecordHash), when there is one: a 64-bit
    // digest instead of a copy of every record keeps ~1.5 KB per app and
    // cluster out of memory.
    std::optional<size_t> written;
    // Its resources by status (Ready, NotReady, NotPresent) in the gauges.
    std::array<int32_t, 3> counted{};
    int32_t drifted = 0;  // its resources drifted now, in eco_drift_resources
  };
  // Whether each object of a kind on a cluster is ready, at which
  // metadata.generation, and which status.observedGeneration its controller
  // reported, by object key (app label "\n" name). Ten thousand clusters
  // hold a million of these, so keys are kept as 64-bit digests (two keys
  // of one kind on one cluster colliding: ~1e-16), except where the status
  // lists objects by name (Pods, the cluster-only objects); the state is
  // two words: generation << 1 | ready, and observedGeneration + 1 (0: none).
  class ObjectStates {
   public:
    struct State {
      bool ready = false;
      int64_t generation = 0;
      int64_t observed = -1;  // status.observedGeneration, -1: none
    };
    struct Packed {
      uint64_t word = 0;
      uint64_t observed = 0;
      bool operator==(const Packed&) const = default;
    };
    explicit ObjectStates(bool keep_names = false) : keep_names_(keep_names) {}
    // Sets the object's state from the live object; false when it had
    // that state already.
    bool Set(const std::string& key, const nlohmann::json& obj) {
      const Packed packed = Pack(k8s::CheckReady(obj).ready, Generation(obj), Observed(obj));
      if (keep_names_) return Update(named_, key, packed);
      return Update(hashed_, Digest(key), packed);
    }
    bool Erase(const std::string& key) {
      return keep_names_ ? named_.erase(key) > 0 : hashed_.erase(Digest(key)) > 0;
    }
    void Clear() {
      hashed_.clear();
      named_.clear();
    }
    // nullopt: not on the cluster.
    std::optional<State> Get(const std::string& key) const {
      if (keep_names_) {
        auto it = named_.find(key);
        return it == named_.end() ? std::nullopt : std::optional<State>(Unpack(it->second));
      }
      auto it = hashed_.find(Digest(key));
      return it == hashed_.end() ? std::nullopt : std::optional<State>(Unpack(it->second));
    }
    // By name, in key order (only when names are kept); Unpack the values.
    const std::map<std::string, Packed, std::less<>>& named() const { return named_; }
    static State Unpack(const Packed& v) {
      return {(v.word & 1) != 0, static_cast<int64_t>(v.word >> 1), static_cast<int64_t>(v.observed) - 1};
    }

   private:
    static uint64_t Digest(const std::string& key) { return std::hash<std::string>{}(key); }
    static int64_t Generation(const nlohmann::json& obj) {
      auto m = obj.find("metadata");
      if (m == obj.end() || !m->is_object()) return 0;
      auto g = m->find("generation");
      return g != m->end() && g->is_number_integer() ? std::max<int64_t>(0, g->get<int64_t>()) : 0;
    }
    static int64_t Observed(const nlohmann::json& obj) {
      auto s = obj.find("status");
      if (s == obj.end() || !s->is_object()) return -1;
      auto g = s->find("observedGeneration");
      return g != s->end() && g->is_number_integer() ? std::max<int64_t>(-1, g->get<int64_t>()) : -1;
    }
    static Packed Pack(bool ready, int64_t generation, int64_t observed) {
      return {(static_cast<uint64_t>(generation) << 1) | (ready ? 1 : 0), static_cast<uint64_t>(observed + 1)};
    }
    template <typename Map, typename Key>
    static bool Update(Map& m, const Key& key, const Packed& state) {
      auto [it, fresh] = m.try_emplace(key, state);
      if (fresh) return true;
      if (it->second == state) return false;
      it->second = state;
      return true;
    }

    bool keep_names_;
    std::unordered_map<uint64_t, Packed> hashed_;
    std::map<std::string, Packed, std::less<>> named_;
  };

  // What a context reads of one shared watch (cluster x kind).
  struct KindWatch {
    std::string provider, cluster, api_version, kind;
    SubscriptionId sub = 0;
    bool started = false;  // subscribed
    bool synced = false;   // `objects` is the cluster's current set
    int failures = 0;      // connection failures since the last success
    Clock::Time heard{};   // when it last passed a contact on (RecordContact)
    ObjectStates objects;
    // The app x clusters that read this watch, by app label (sorted; the
    // label points into the app's Shape, the key into Ctx::acs): a change
    // to one object concerns only the app x cluster its label names.
    std::vector<std::pair<std::string_view, const std::string*>> by_label;
    // A watch matched by name (ByName): the object keys the plans have;
    // the cluster's other objects of the kind are not kept.
    std::set<std::string, std::less<>> names;
  };
  struct Ctx {
    uint64_t serial = 0;
    std::string status_ctx, plan_ctx;
    std::map<std::string, KindWatch> watches;  // cluster "\n" apiVersion "\n" kind
    std::map<std::string, AppCluster> acs;     // app "\n" cluster
    // Drift records stored with resources drifted (ac key, resource):
    // looked at again once this context is watched, whatever the watches say.
    std::vector<std::pair<std::string, std::string>> stored_drift;
  };
  struct DirtyKey {
    std::string status_ctx;
    uint64_t serial;
    std::string ac;
    bool operator<(const DirtyKey& o) const {
      return std::tie(status_ctx, serial, ac) < std::tie(o.status_ctx, o.serial, o.ac);
    }
  };

  // ---- scanning ----

  void ScanLoop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      clock_.WaitFor(scan_cv_, l, opts_.scan_interval,
                     [this] { return stopping_ || scan_pending_; });
      if (stopping_) break;
      scan_pending_ = false;
      l.unlock();
      Scan();
      l.lock();
    }
  }

  // status context -> the AppContext whose plan is watched.
  Result<std::map<std::string, std::string>> Desired() {
    std::map<std::string, std::string> want;
    appcontext::Contexts contexts(st_);
    for (const char* type : {"deploymentIntentGroup", "logicalCloud"}) {
      auto r = st_.Range(catalog::StatePrefix(type));
      if (!r.ok()) return r.status();
      for (const auto& kv : r->kvs) {
        // A malformed record is logged (once) by the catalog; the others
        // are still watched.
        auto rec = catalog::LifecycleStateOf(kv);
        if (!rec.ok() || rec->actions.empty()) continue;
        const catalog::LifecycleAction& last = rec->actions.back();
        const std::string& state = last.state;
        const std::string& instance = last.instance;
        if (instance.empty()) continue;
        bool watch = state == "Instantiated" || state == "InstantiateStopped";
        if (state == "Terminated" || state == "TerminateStopped") {
          auto s = contexts.GetStatus(instance);
          watch = s.ok() && !s->empty() && *s != "Terminated" && *s != "TerminateFailed";
        }
        if (!watch) continue;
        std::string sctx = rec->status_context;
        if (sctx.empty()) sctx = instance;
        want[sctx] = instance;
      }
    }
    return want;
  }

  Result<std::unique_ptr<Ctx>> Build(const std::string& sctx, const std::string& plan_id) {
    appcontext::Contexts contexts(st_);
    auto meta = contexts.GetMeta(plan_id);
    if (!meta.ok()) return meta.status();
    auto c = std::make_unique<Ctx>();
    c->status_ctx = sctx;
    c->plan_ctx = plan_id;
    for (const auto& app : meta->app_order) {
      auto plan = contexts.ReadApp(plan_id, app);
      if (!plan.ok()) return plan.status();
      std::map<int, std::shared_ptr<const Shape>> shapes;  // by variant
      const std::string label = LabelValue(app);
      for (const auto& cl : plan->clusters) {
        if (!opts_.watched(cl.provider, cl.name)) continue;
        auto& shape = shapes[cl.variant];
        if (!shape) {
          auto rs = plan->For(cl);
          if (!rs.ok()) return rs.status();
          shape = MakeShape(*rs, label, opts_.drift);
        }
        auto [ac_it, added] = c->acs.try_emplace(app + "\n" + cl.key());
        const std::string* ac_key = &ac_it->first;
        AppCluster& ac = ac_it->second;
        ac.app = app;
        ac.cluster = cl.key();
        ac.provider = cl.provider;
        ac.cluster_name = cl.name;
        ac.shape = shape;
        for (const auto& [av, kind] : shape->kinds) {
          KindWatch& w = c->watches[cl.key() + "\n" + av + "\n" + kind];
          if (w.cluster.empty()) {
            w.provider = cl.provider;
            w.cluster = cl.name;
            w.api_version = av;
            w.kind = kind;
            if (av == "v1" && kind == "Pod") w.objects = ObjectStates(/*keep_names=*/true);
          }
          w.by_label.emplace_back(shape->label, ac_key);
          if (ByName(av, kind)) {
            const size_t k = ac.watch.size();
            for (const auto& item : shape->items) {
              if (item.kind == k) w.names.insert(item.object_key);
            }
          }
          ac.watch.push_back(&w);
        }
      }
    }
    for (auto& [key, w] : c->watches) std::sort(w.by_label.begin(), w.by_label.end());
    // What is stored already (one range read), so that a restart rewrites
    // nothing that has not changed.
    // In pages: after a restart at ten thousand clusters the records are
    // ~150 MB, which one read would hold at once.
    const std::string prefix = appcontext::ReadyPrefix(sctx);
    store::RangeOptions page;
    page.limit = 2000;
    while (true) {
      auto stored = st_.Range(prefix, page);
      if (!stored.ok()) return stored.status();
      for (const auto& kv : stored->kvs) {
        std::string rest = kv.key.substr(prefix.size());  // "<app>/<provider+cluster>"
        auto slash = rest.find('/');
        if (slash == std::string::npos) continue;
        auto ac = c->acs.find(rest.substr(0, slash) + "\n" + rest.substr(slash + 1));
        if (ac == c->acs.end()) continue;
        auto rec = appcontext::ParseReady(kv.value);
        if (rec.ok()) ac->second.written = RecordHash(*rec);
      }
      if (!stored->more || stored->kvs.empty()) break;
      page.after = stored->kvs.back().key;
    }
    if (opts_.drift) {
      const std::string dprefix = appcontext::DriftPrefix(sctx);
      auto drifts = st_.Range(dprefix);
      if (!drifts.ok()) return drifts.status();
      for (const auto& kv : drifts->kvs) {
        std::string rest = kv.key.substr(dprefix.size());
        auto slash = rest.find('/');
        auto rec = appcontext::ParseDrift(kv.value);
        if (slash == std::string::npos || !rec.ok()) continue;
        std::string ac_key = rest.substr(0, slash) + "\n" + rest.substr(slash + 1);
        for (const auto& [res, d] : rec->resources) {
          if (d.drifted) c->stored_drift.emplace_back(ac_key, res);
        }
      }
    }
    return c;
  }

  static std::shared_ptr<const Shape> MakeShape(const appcontext::ResourceSet& rs, const std::string& label,
                                                bool drift) {
    auto shape = std::make_shared<Shape>();
    shape->label = label;
    bool makes_pods = false;
    // Hooks are left out: they run and may be deleted (EMCO excludes them
    // from readiness too).
    for (const auto* list : {&rs.crds, &rs.resources}) {
      for (const auto& r : *list) {
        std::string av = StringField(r.object, "apiVersion"), kind = StringField(r.object, "kind");
        std::string name = r.object.contains("metadata") ? StringField(r.object["metadata"], "name") : "";
        if (av.empty() || kind.empty() || name.empty()) continue;
        shape->items.push_back({r.name, shape->KindIndex(av, kind), (ByName(av, kind) ? "" : label) + "\n" + name, {}, {}, false});
        if (drift) {
          Shape::Item& item = shape->items.back();
          item.compared = k8s::ComparedPart(r.object);
          item.visible = VisiblePart(item.compared, &item.hidden);
        }
        makes_pods = makes_pods || MakesPods(av, kind);
      }
    }
    // The Pods of its workloads are listed too (EMCO appends such
    // cluster-only objects): one Pod watch per cluster, as for any kind.
    if (makes_pods) shape->pod_kind = static_cast<int>(shape->KindIndex("v1", "Pod"));
    return shape;
  }

  // What decides whether a record must be written again (not its time).
  static size_t RecordHash(const appcontext::ReadyRecord& r) {
    std::string canon = r.ready ? "1" : "0";
    for (const auto& [k, v] : r.resources) canon.append("\n").append(k).append("=").append(v);
    canon.append("\n|");
    for (const auto& [k, v] : r.cluster_only) canon.append("\n").append(k).append("=").append(v);
    canon.append("\n|");
    for (const auto& [k, v] : r.generations) canon.append("\n").append(k).append("=").append(std::to_string(v));
    canon.append("\n|");
    for (const auto& [k, v] : r.observed_generations)
      canon.append("\n").append(k).append("=").append(std::to_string(v));
    return std::hash<std::string>{}(canon);
  }

  void Scan() {
    // Read before the records: a write during this scan makes the next one full.
    std::optional<store::Revision> rev;
    if (opts_.skip_unchanged) {
      auto r = st_.CurrentRevision();
      if (r.ok()) rev = *r;
      if (rev && rev == scanned_rev_) {
        skipped_scans_.fetch_add(1);
        StartWatches();
        return;
      }
    }
    full_scans_.fetch_add(1);
    auto want = Desired();
    if (!want.ok()) return;  // the store is down: try again at the next scan
    bool complete = true;
    std::vector<std::unique_ptr<Ctx>> dead;
    std::vector<std::pair<std::string, std::string>> fresh;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto it = ctxs_.begin(); it != ctxs_.end();) {
        auto w = want->find(it->first);
        if (w == want->end() || w->second != it->second->plan_ctx) {
          Uncount(*it->second);
          dead.push_back(std::move(it->second));
          it = ctxs_.erase(it);
        } else {
          ++it;
        }
      }
      for (const auto& [sctx, plan] : *want) {
        if (!ctxs_.count(sctx)) fresh.emplace_back(sctx, plan);
      }
    }
    for (const auto& [sctx, plan] : fresh) {
      auto c = Build(sctx, plan);
      if (!c.ok()) {
        complete = false;  // built again at the next scan
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      (*c)->serial = ++serial_;
      for (auto& [ac, res] : (*c)->stored_drift) drift_suspects_[{sctx, (*c)->serial, ac}].insert(res);
      if (!(*c)->stored_drift.empty()) drift_cv_.notify_all();
      (*c)->stored_drift.clear();
      ctxs_[sctx] = std::move(*c);
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      ForgetUnwatched(!dead.empty());
      if (complete) scanned_rev_ = rev;
    }
    StartWatches();
    // Only now: a watch the next revision of a context reads too has its
    // new subscriber already, and goes on without listing again. (Events
    // for a context no longer in ctxs_ are dropped by OnEvent meanwhile.)
    // Outside the lock: a running callback may be waiting for it.
    for (auto& c : dead) {
      for (auto& [k, w] : c->watches) {
        if (w.started) shared_.Unsubscribe(w.sub);
      }
    }
  }

  struct ToStart {
    std::string sctx;
    uint64_t serial;
    std::string key;
    std::string provider, cluster, api_version, kind;
  };

  // Starts the watches not running yet, a few clusters at a time: starting
  // one resolves the kind on the cluster, which waits for the connect
  // timeout when the cluster is down.
  void StartWatches() {
    std::map<std::string, std::vector<ToStart>> by_cluster;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [sctx, c] : ctxs_) {
        for (auto& [k, w] : c->watches) {
          if (!w.started) {
            by_cluster[w.provider + "+" + w.cluster].push_back(
                {sctx, c->serial, k, w.provider, w.cluster, w.api_version, w.kind});
          }
        }
      }
    }
    std::vector<const std::vector<ToStart>*> groups;
    for (const auto& [c, v] : by_cluster) groups.push_back(&v);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < groups.size();) {
        for (const auto& t : *groups[i]) {
          if (!StartOne(t)) break;  // the cluster did not answer: the rest waits for the next scan
        }
      }
    };
    size_t n = std::min<size_t>(std::max<size_t>(opts_.start_threads, 1), groups.size());
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
  }

  // False when the cluster could not be reached.
  bool StartOne(const ToStart& t) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return false;
    }
    auto client = Client(t.provider, t.cluster);
    if (!client.ok()) return false;
    // A watch of the kind on the cluster that already listed hands this
    // context its objects at once (OnEvent runs before Subscribe returns).
    auto id = shared_.Subscribe(t.sctx, WatchKey{t.provider + "+" + t.cluster, t.api_version, t.kind}, *client,
                                [this, sctx = t.sctx, serial = t.serial, key = t.key](const k8s::WatchEvent& e) {
                                  OnEvent(sctx, serial, key, e);
                                });
    std::unique_lock<std::mutex> l(mu_);
    KindWatch* w = Find(t.sctx, t.serial, t.key);
    if (!id.ok()) {
      if (id.status().code() != Code::kNotFound) {
        if (w && IsConnectionFailure(id.status()))
          SetReachable(t.provider + "+" + t.cluster, false, id.status().message());
        return false;
      }
      if (w && !w->synced) {
        // The cluster does not serve the kind (a CRD not applied yet):
        // none of these objects is there. Retried at the next scan.
        w->synced = true;
        w->objects.Clear();
        MarkDirty(t.sctx, t.serial, *w);
      }
      return true;
    }
    if (!w) {
      l.unlock();
      shared_.Unsubscribe(*id);  // the context went away meanwhile
      return true;
    }
    w->started = true;
    w->sub = *id;
    return true;
  }

  // Delivery never changes for a cluster: asked once (an unanswered read
  // is asked again).
  bool IsAgentCluster(const std::string& provider, const std::string& cluster) {
    const std::string key = provider + "+" + cluster;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = agent_.find(key); it != agent_.end()) return it->second;
    }
    auto d = catalog::ClusterDelivery(st_, provider, cluster);
    if (!d.ok() && d.status().code() != Code::kNotFound) return false;
    const bool agent = d.ok() && *d == catalog::Delivery::kAgent;
    std::lock_guard<std::mutex> l(mu_);
    agent_[key] = agent;
    return agent;
  }

  Result<std::shared_ptr<k8s::ClusterClient>> Client(const std::string& provider,
                                                     const std::string& cluster) {
    std::string key = provider + "+" + cluster;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = clients_.find(key); it != clients_.end()) return it->second;
    }
    auto c = opts_.clients(provider, cluster);
    if (!c.ok()) return c.status();
    std::lock_guard<std::mutex> l(mu_);
    clients_[key] = *c;
    return *c;
  }

  // mu_ held.
  KindWatch* Find(const std::string& sctx, uint64_t serial, const std::string& key) {
    auto it = ctxs_.find(sctx);
    if (it == ctxs_.end() || it->second->serial != serial) return nullptr;
    auto w = it->second->watches.find(key);
    return w == it->second->watches.end() ? nullptr : &w->second;
  }

  // mu_ held.
  void MarkDirty(const std::string& sctx, uint64_t serial, const KindWatch& w) {
    for (const auto& [label, ac] : w.by_label) dirty_.insert({sctx, serial, *ac});
    WakeWriter();
  }

  void OnEvent(const std::string& sctx, uint64_t serial, const std::string& key,
               const k8s::WatchEvent& e) {
    if (e.type == k8s::WatchEventType::kBookmark && !opts_.record_seen) return;
    std::lock_guard<std::mutex> l(mu_);
    KindWatch* w = Find(sctx, serial, key);
    if (!w) return;
    if (e.type == k8s::WatchEventType::kError) {
      // Two failures in a row: one dropped stream that reconnects at once
      // is not a cluster going away.
      if (IsConnectionFailure(e.error) && ++w->failures >= 2)
        SetReachable(w->provider + "+" + w->cluster, false, e.error.message());
      return;
    }
    RecordContact(*w);
    // A bookmark says the stream is alive, nothing more (it never reset
    // the failure count: a stream that keeps failing to reconnect sends none).
    if (e.type == k8s::WatchEventType::kBookmark) return;
    w->failures = 0;
    if (!reach_.empty()) SetReachable(w->provider + "+" + w->cluster, true, "");
    if (e.type == k8s::WatchEventType::kConnected) return;
    std::string okey;
    const bool by_name = ByName(w->api_version, w->kind);
    switch (e.type) {
      case k8s::WatchEventType::kResync:
        if (opts_.on_relist) opts_.on_relist(w->api_version, w->kind, e.items);
        if (opts_.drift) RelistSuspects(sctx, serial, *w, e.items, by_name);
        w->objects.Clear();
        for (const auto& obj : e.items) {
          std::string key = ObjectKey(obj, by_name);
          if (by_name && !w->names.count(key)) continue;
          w->objects.Set(key, obj);
        }
        w->synced = true;
        MarkDirty(sctx, serial, *w);
        return;
      case k8s::WatchEventType::kAdded:
      case k8s::WatchEventType::kModified:
        okey = ObjectKey(e.object, by_name);
        if (by_name && !w->names.count(okey)) return;
        if (opts_.on_object) opts_.on_object(w->api_version, w->kind, e.object, false);
        if (opts_.drift && w->synced) {
          ChangeSuspects(sctx, serial, *w, okey, &e.object, w->objects.Get(okey),
                         e.type == k8s::WatchEventType::kModified);
        }
        // A change readiness does not see changes nothing.
        if (!w->objects.Set(okey, e.object)) return;
        break;
      case k8s::WatchEventType::kDeleted:
        okey = ObjectKey(e.object, by_name);
        if (by_name && !w->names.count(okey)) return;
        if (opts_.on_object) opts_.on_object(w->api_version, w->kind, e.object, true);
        if (opts_.drift && w->synced) ChangeSuspects(sctx, serial, *w, okey, nullptr, std::nullopt, false);
        if (!w->objects.Erase(okey)) return;
        break;
      default:
        return;
    }
    if (!w->synced) return;
    // Only the app x cluster the object's label names can see the change
    // (any of them for an object matched by name).
    const std::string_view label = std::string_view(okey).substr(0, okey.find('\n'));
    auto first = by_name ? w->by_label.begin()
                         : std::lower_bound(w->by_label.begin(), w->by_label.end(), label,
                                            [](const auto& entry, std::string_view l) { return entry.first < l; });
    bool any = false;
    for (auto it = first; it != w->by_label.end() && (by_name || it->first == label); ++it) {
      dirty_.insert({sctx, serial, *it->second});
      any = true;
    }
    if (any) WakeWriter();
  }

  // ---- drift ----

  // mu_ held. The app x clusters reading `w` whose label `okey` names (any
  // of them for a watch by name), with the plan's item for the object.
  template <typename Fn>
  void ForItems(const std::string& sctx, uint64_t serial, const KindWatch& w, const std::string& okey, Fn fn) {
    const bool by_name = ByName(w.api_version, w.kind);
    const std::string_view label = std::string_view(okey).substr(0, okey.find('\n'));
    for (const auto& [l, ac_key] : w.by_label) {
      if (!by_name && l != label) continue;
      AppCluster* ac = FindAc({sctx, serial, *ac_key});
      if (!ac) continue;
      for (const auto& item : ac->shape->items) {
        if (ac->watch[item.kind] == &w && item.object_key == okey) fn(*ac_key, item);
      }
    }
  }

  // mu_ held. Whether a live object (null: gone) may have drifted from its
  // item: gone, a field the slim event shows differs, or (when the
  // manifest sets fields the event does not show) its spec moved on
  // (metadata.generation) or it has no generation to tell by.
  static bool MayHaveDrifted(const Shape::Item& item, const json* obj, std::optional<ObjectStates::State> before,
                             bool modified) {
    if (obj == nullptr) return true;
    if (!k8s::Covers(*obj, item.visible)) return true;
    if (!item.hidden) return false;
    int64_t gen = 0;
    if (auto md = obj->find("metadata"); md != obj->end() && md->is_object()) {
      if (auto g = md->find("generation"); g != md->end() && g->is_number_integer()) gen = g->get<int64_t>();
    }
    if (gen == 0) return modified;
    return before && before->generation != gen;
  }

  // mu_ held. An object a watch saw change or go.
  void ChangeSuspects(const std::string& sctx, uint64_t serial, const KindWatch& w, const std::string& okey,
                      const json* obj, std::optional<ObjectStates::State> before, bool modified) {
    bool any = false;
    ForItems(sctx, serial, w, okey, [&](const std::string& ac_key, const Shape::Item& item) {
      if (!MayHaveDrifted(item, obj, before, modified)) return;
      drift_suspects_[{sctx, serial, ac_key}].insert(item.res_name);
      any = true;
    });
    if (any) drift_cv_.notify_all();
  }

  // mu_ held, before the relist replaces the watch's objects: what is gone
  // from it, or listed changed.
  void RelistSuspects(const std::string& sctx, uint64_t serial, const KindWatch& w, const std::vector<json>& items,
                      bool by_name) {
    std::unordered_map<std::string, const json*> listed;
    for (const auto& obj : items) listed.emplace(ObjectKey(obj, by_name), &obj);
    bool any = false;
    for (const auto& [label, ac_key] : w.by_label) {
      AppCluster* ac = FindAc({sctx, serial, *ac_key});
      if (!ac) continue;
      for (const auto& item : ac->shape->items) {
        if (ac->watch[item.kind] != &w) continue;
        auto it = listed.find(item.object_key);
        const json* obj = it == listed.end() ? nullptr : it->second;
        auto before = w.objects.Get(item.object_key);
        // The first list knows no generation before it: only what it shows.
        if (!MayHaveDrifted(item, obj, w.synced ? before : std::nullopt, false)) continue;
        drift_suspects_[{sctx, serial, *ac_key}].insert(item.res_name);
        any = true;
      }
    }
    if (any) drift_cv_.notify_all();
  }

  void DriftLoop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      if (drift_deferred_.empty()) {
        drift_cv_.wait(l, [this] { return stopping_ || !drift_suspects_.empty(); });
      } else {
        clock_.WaitFor(drift_cv_, l, opts_.drift_retry, [this] { return stopping_; });
      }
      if (stopping_) break;
      // A burst (an object applied, then its status) is looked at once.
      clock_.WaitFor(drift_cv_, l, kWriteCoalesce, [this] { return stopping_; });
      if (stopping_) break;
      std::map<DirtyKey, std::set<std::string>> batch;
      batch.swap(drift_suspects_);
      for (auto& [d, res] : drift_deferred_) batch[d].insert(res.begin(), res.end());
      drift_deferred_.clear();
      // Snapshots of what each app x cluster needs, taken under the lock.
      std::vector<DriftJob> jobs;
      for (auto& [d, res] : batch) {
        AppCluster* ac = FindAc(d);
        if (!ac) continue;  // its context is no longer watched
        jobs.push_back({d, ctxs_[d.status_ctx]->plan_ctx, ac->app, ac->cluster, ac->provider, ac->cluster_name,
                        ac->shape, std::move(res)});
      }
      l.unlock();
      std::map<std::string, std::pair<std::string, std::string>> ctx_state;  // plan ctx -> status, policy
      for (auto& job : jobs) {
        auto st = ctx_state.find(job.plan_ctx);
        if (st == ctx_state.end()) {
          appcontext::Contexts contexts(st_);
          auto status = contexts.GetStatus(job.plan_ctx);
          auto meta = contexts.GetMeta(job.plan_ctx);
          std::string state = status.ok() ? *status : std::string();
          // The plan this monitor compares with must still be the latest:
          // an update may have begun before its scan saw it, and what rsync
          // applies then is the next revision, not drift.
          if (meta.ok() && !IsLatest(*meta)) state = "Replaced";
          st = ctx_state.emplace(job.plan_ctx, std::make_pair(state, meta.ok() ? meta->drift_policy : std::string()))
                   .first;
        }
        // While an event runs (or failed half way) what is on the cluster
        // is rsync's work in progress, not drift.
        if (st->second.first != "Instantiated") {
          drift_deferred_[job.d].insert(job.res.begin(), job.res.end());
          continue;
        }
        JudgeDrift(job, st->second.second == "enforce");
      }
      l.lock();
    }
  }

  // Whether `m`'s context is its deployment's latest revision (its state
  // record's last instance); false when that cannot be read.
  bool IsLatest(const appcontext::Meta& m) {
    const bool lc = m.kind == "logicalCloud";
    const catalog::Keys keys = lc ? catalog::Keys{m.project, m.logical_cloud}
                                  : catalog::Keys{m.project, m.composite_app, m.composite_app_version, m.dig};
    auto rec = catalog::ReadLifecycleState(st_, lc ? "logicalCloud" : "deploymentIntentGroup", keys);
    return rec.ok() && rec->has_value() && (*rec)->state.LastInstance() == m.id;
  }

  struct DriftJob {
    DirtyKey d;
    std::string plan_ctx, app, cluster_key, provider, cluster;
    std::shared_ptr<const Shape> shape;
    std::set<std::string> res;
  };

  // How one resource is now: nullopt when it could not be told (the
  // cluster did not answer).
  std::optional<appcontext::ResourceDrift> Judge(k8s::ClusterClient& client, const Shape::Item& item, const appcontext::ResourceDeployed& rd,
                                                 const std::string& ns_default) {
    const std::string av = StringField(item.compared, "apiVersion"), kind = StringField(item.compared, "kind");
    const json& md = item.compared.contains("metadata") ? item.compared["metadata"] : json::object();
    auto info = client.ResolveKind(av, kind);
    if (!info.ok()) return std::nullopt;
    std::string ns = info->namespaced ? StringField(md, "namespace") : "";
    if (info->namespaced && ns.empty()) ns = ns_default;
    appcontext::ResourceDrift now;
    auto live = client.Get(av, kind, ns, StringField(md, "name"));
    if (!live.ok()) {
      if (live.status().code() != Code::kNotFound) return std::nullopt;
      now.drifted = now.deleted = true;
      return now;
    }
    for (auto& f : k8s::DriftedFields(*live, item.compared, LeftOut(rd.warnings))) {
      now.fields.push_back({std::move(f.path), std::move(f.desired), std::move(f.live), std::move(f.manager)});
    }
    now.drifted = !now.fields.empty();
    return now;
  }

  // Off the lock: compares the resources of one app x cluster a watch
  // said may have drifted, records what changed, and with `enforce`
  // applies the drifted ones again.
  void JudgeDrift(const DriftJob& job, bool enforce) {
    auto defer = [&](const std::string& res) {
      std::lock_guard<std::mutex> g(mu_);
      drift_deferred_[job.d].insert(res);
    };
    auto defer_all = [&] {
      for (const auto& r : job.res) defer(r);
    };
    auto deployed = appcontext::ReadDeployed(st_, job.d.status_ctx, job.app, job.cluster_key);
    auto stored = appcontext::ReadDrift(st_, job.d.status_ctx, job.app, job.cluster_key);
    auto client = Client(job.provider, job.cluster);
    appcontext::Contexts contexts(st_);
    auto meta = contexts.GetMeta(job.plan_ctx);
    if (!deployed.ok() || !stored.ok() || !client.ok() || !meta.ok()) return defer_all();
    appcontext::DriftRecord rec = stored->value_or(appcontext::DriftRecord{});
    const appcontext::DriftRecord before = rec;
    const std::string now_time = catalog::NowRfc3339(clock_);
    std::vector<std::string> to_repair;
    for (const auto& res : job.res) {
      const Shape::Item* item = nullptr;
      for (const auto& i : job.shape->items) {
        if (i.res_name == res) item = &i;
      }
      if (item == nullptr) {  // no longer planned
        rec.resources.erase(res);
        continue;
      }
      const appcontext::ResourceDeployed* rd = nullptr;
      if (*deployed) {
        auto it = (*deployed)->resources.find(res);
        if (it != (*deployed)->resources.end()) rd = &it->second;
      }
      // Only what eco applied and owns is judged.
      if (rd == nullptr || rd->status != "Applied" || rd->shared) {
        if (auto it = rec.resources.find(res); it != rec.resources.end() && it->second.drifted) {
          it->second = {false, false, {}, "", it->second.repairs, it->second.last_repair};
        }
        continue;
      }
      // Applied from another revision than the plan this monitor holds
      // (an update it has not caught up with, the previous revision being
      // cleaned up): its manifest is not the one to compare with.
      if (rd->ref != job.plan_ctx) {
        defer(res);
        continue;
      }
      auto now = Judge(**client, *item, *rd, meta->namespace_);
      if (!now) {
        defer(res);
        continue;
      }
      auto [it, fresh] = rec.resources.try_emplace(res);
      appcontext::ResourceDrift& e = it->second;
      if (!now->drifted && !e.drifted) {
        if (fresh) rec.resources.erase(it);
        drift_repaired_as_.erase(job.d.status_ctx + "\n" + res + "\n" + job.cluster_key + "\n" + job.app);
        continue;
      }
      now->repairs = e.repairs;
      now->last_repair = e.last_repair;
      if (now->drifted) {
        now->since = e.drifted ? e.since : now_time;
        if (!e.drifted) LogDrift(job, res, *now);
        if (enforce && opts_.repair) to_repair.push_back(res);
      } else {
        drift_repaired_as_.erase(job.d.status_ctx + "\n" + res + "\n" + job.cluster_key + "\n" + job.app);
        log::Write(log::Level::kInfo, "drift", "drift ended",
                   {log::Field("context", job.d.status_ctx), log::Field("app", job.app),
                    log::Field("cluster", job.cluster_key), log::Field("resource", res)});
      }
      e = std::move(*now);
    }
    // Recorded before it is acted on.
    if (!WriteDrift(job, before, rec)) return defer_all();
    if (to_repair.empty()) return;
    const appcontext::DriftRecord drifted = rec;
    for (const auto& res : to_repair) {
      appcontext::ResourceDrift& e = rec.resources[res];
      const std::string guard = job.d.status_ctx + "\n" + res + "\n" + job.cluster_key + "\n" + job.app;
      const std::string what = appcontext::ToJson(e)["fields"].dump() + (e.deleted ? "deleted" : "");
      // The same drift again right after its repair: the apply does not
      // hold (a value the server writes another way); once is enough.
      if (auto g = drift_repaired_as_.find(guard); g != drift_repaired_as_.end() && g->second == what) continue;
      const auto& rd = (*deployed)->resources.at(res);
      Status s = opts_.repair(rd.ref, job.app, job.provider, job.cluster, res, !rd.warnings.empty());
      if (!s.ok()) {
        log::Write(log::Level::kWarn, "drift", "drift repair failed",
                   {log::Field("context", job.d.status_ctx), log::Field("app", job.app),
                    log::Field("cluster", job.cluster_key), log::Field("resource", res),
                    log::Field("error", s.message())});
        defer(res);
        continue;
      }
      drift_repaired_as_[guard] = what;
      DriftMetrics::Get().repaired->Increment();
      ++e.repairs;
      e.last_repair = catalog::NowRfc3339(clock_);
      log::Write(log::Level::kInfo, "drift", "drift repaired",
                 {log::Field("context", job.d.status_ctx), log::Field("app", job.app),
                  log::Field("cluster", job.cluster_key), log::Field("resource", res),
                  log::Field("repairs", static_cast<long long>(e.repairs))});
      // Judged again at once: the repair's own watch event may come
      // before this record is written, and must not find it drifted.
      const Shape::Item* item = nullptr;
      for (const auto& i : job.shape->items) {
        if (i.res_name == res) item = &i;
      }
      auto again = Judge(**client, *item, rd, meta->namespace_);
      if (again && !again->drifted) {
        e = {false, false, {}, "", e.repairs, e.last_repair};
      }
    }
    if (!WriteDrift(job, drifted, rec)) defer_all();
  }

  void LogDrift(const DriftJob& job, const std::string& res, const appcontext::ResourceDrift& d) {
    DriftMetrics::Get().detected->Increment();
    std::string paths, managers;
    for (const auto& f : d.fields) {
      paths += (paths.empty() ? "" : ",") + f.path;
      if (!f.manager.empty() && managers.find(f.manager) == std::string::npos)
        managers += (managers.empty() ? "" : ",") + f.manager;
    }
    log::Write(log::Level::kWarn, "drift", d.deleted ? "drift detected: deleted" : "drift detected",
               {log::Field("context", job.d.status_ctx), log::Field("revision_context", job.plan_ctx),
                log::Field("app", job.app), log::Field("cluster", job.cluster_key), log::Field("resource", res),
                log::Field("fields", paths), log::Field("manager", managers)});
  }

  // Writes the record when it differs from `before`, and moves the gauge.
  bool WriteDrift(const DriftJob& job, const appcontext::DriftRecord& before, const appcontext::DriftRecord& rec) {
    if (appcontext::ToJson(before) == appcontext::ToJson(rec)) return true;
    const std::string key = appcontext::DriftKey(job.d.status_ctx, job.app, job.cluster_key);
    auto r = rec.resources.empty() ? st_.Delete(key).status() : st_.Put(key, appcontext::ToJson(rec).dump()).status();
    if (!r.ok()) return false;
    int32_t n = 0;
    for (const auto& [res, d] : rec.resources) n += d.drifted ? 1 : 0;
    std::lock_guard<std::mutex> g(mu_);
    if (AppCluster* ac = FindAc(job.d); ac && ac->drifted != n) {
      DriftMetrics::Get().resources->Increment(n - ac->drifted);
      ac->drifted = n;
    }
    return true;
  }

  // ---- writing ----

  // mu_ held.
  bool WritesDue() const { return !dirty_.empty() || !reach_dirty_.empty() || !seen_dirty_.empty(); }

  void WriteLoop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      write_cv_.wait(l, [this] { return stopping_ || WritesDue(); });
      if (stopping_) break;
      // A cluster's objects arrive one after another: let the burst settle
      // so that each record is computed and written once, not per event.
      clock_.WaitFor(write_cv_, l, write_busy_ ? kBusyCoalesce : kWriteCoalesce,
                     [this] { return stopping_; });
      if (stopping_) break;
      if (WriteRound(l)) {
        clock_.WaitFor(write_cv_, l, std::chrono::milliseconds(500), [this] { return stopping_; });
      }
    }
  }

  // mu_ held (released while the store writes). Writes what is due; true
  // when a write failed (the store is down).
  bool WriteRound(std::unique_lock<std::mutex>& l) {
    WriteReachability(l);
    const bool contacts_written = WriteContacts(l);
    std::set<DirtyKey> batch;
    batch.swap(dirty_);
    // Compute under the lock; only what differs from the stored record
    // is written, many records per transaction.
    std::vector<std::pair<DirtyKey, appcontext::ReadyRecord>> changed;
    for (const auto& d : batch) {
      AppCluster* ac = FindAc(d);
      if (!ac) continue;
      std::optional<appcontext::ReadyRecord> rec = Compute(*ac);
      if (rec) Count(*ac, *rec);
      if (!rec || (ac->written && *ac->written == RecordHash(*rec))) continue;
      rec->time = catalog::NowRfc3339(clock_);
      changed.emplace_back(d, std::move(*rec));
    }
    write_busy_ = changed.size() >= kBusyRound;
    bool failed = !contacts_written;
    constexpr size_t kPerTxn = 128;
    for (size_t i = 0; i < changed.size() && !stopping_; i += kPerTxn) {
      size_t end = std::min(changed.size(), i + kPerTxn);
      store::Txn txn;
      for (size_t j = i; j < end; ++j) {
        const auto& [d, rec] = changed[j];
        const AppCluster* ac = FindAc(d);
        if (!ac) continue;
        txn.success.push_back(
            store::Op::Put(appcontext::ReadyKey(d.status_ctx, ac->app, ac->cluster),
                           appcontext::ToJson(rec).dump()));
      }
      l.unlock();
      auto r = st_.Commit(txn);
      l.lock();
      for (size_t j = i; j < end; ++j) {
        auto& [d, rec] = changed[j];
        if (!r.ok()) {
          dirty_.insert(d);  // retried after a pause
        } else if (AppCluster* ac = FindAc(d)) {
          ac->written = RecordHash(rec);
        }
      }
      failed = failed || !r.ok();
    }
    return failed;
  }

  static bool IsConnectionFailure(const Status& s) { return s.code() == Code::kUnavailable; }

  // mu_ held. The cluster of `w` answered: its contact is written when the
  // last one is `seen_every` old. Each watch passes on one contact per
  // interval at most, so that a busy cluster costs a time comparison per
  // event.
  void RecordContact(KindWatch& w) {
    if (!opts_.record_seen) return;
    const Clock::Time now = clock_.Now();
    if (w.heard != Clock::Time{} && now - w.heard < opts_.seen_every) return;
    w.heard = now;
    std::string cluster = w.provider + "+" + w.cluster;
    auto [it, fresh] = seen_at_.try_emplace(cluster, now);
    if (!fresh) {
      if (now - it->second < opts_.seen_every) return;
      it->second = now;
    }
    seen_dirty_[std::move(cluster)] =
        appcontext::ToJson(appcontext::Seen{catalog::NowRfc3339(clock_), opts_.replica}).dump();
    WakeWriter();
  }

  // mu_ held (released while the store writes). Writes the contacts heard
  // since the last round; a failed write is tried again with the next
  // round unless a newer contact came meanwhile. False when one failed.
  bool WriteContacts(std::unique_lock<std::mutex>& l) {
    if (seen_dirty_.empty()) return true;
    std::map<std::string, std::string> batch;
    batch.swap(seen_dirty_);
    l.unlock();
    appcontext::WriteSeen(st_, batch);
    l.lock();
    for (auto& [cluster, rec] : batch) seen_dirty_.try_emplace(cluster, std::move(rec));
    return batch.empty();
  }

  // mu_ held. Marks a cluster (un)reachable; the writer records changes.
  void SetReachable(const std::string& cluster, bool reachable, const std::string& error) {
    if (reachable) {
      auto it = reach_.find(cluster);
      if (it == reach_.end() || !it->second.unreachable) return;
      it->second.unreachable = false;
      log::Write(log::Level::kInfo, "ready", "cluster reachable again", {log::Field("cluster", cluster)});
    } else {
      Reach& r = reach_[cluster];
      if (r.unreachable) return;
      r = Reach{true, r.stored, catalog::NowRfc3339(clock_), error};
      log::Write(log::Level::kWarn, "ready", "cluster unreachable",
                 {log::Field("cluster", cluster), log::Field("error", error)});
    }
    reach_dirty_.insert(cluster);
    WakeWriter();
  }

  // mu_ held (released while the store writes). Puts the record of a
  // cluster that became unreachable, deletes that of one reached again.
  void WriteReachability(std::unique_lock<std::mutex>& l) {
    if (reach_dirty_.empty()) return;
    std::set<std::string> batch;
    batch.swap(reach_dirty_);
    store::Txn txn;
    std::vector<std::pair<std::string, bool>> now;  // cluster, record stored after the txn
    for (const auto& c : batch) {
      auto it = reach_.find(c);
      if (it == reach_.end()) continue;
      const Reach& r = it->second;
      if (r.unreachable && !r.stored) {
        txn.success.push_back(store::Op::Put(appcontext::UnreachableKey(c),
                                             appcontext::ToJson(appcontext::UnreachableRecord{r.since, r.error}).dump()));
        now.emplace_back(c, true);
      } else if (!r.unreachable) {
        if (r.stored) txn.success.push_back(store::Op::Delete(appcontext::UnreachableKey(c)));
        now.emplace_back(c, false);
      }
    }
    if (txn.success.empty()) {
      for (const auto& [c, stored] : now) reach_.erase(c);
      return;
    }
    l.unlock();
    auto r = st_.Commit(txn);
    l.lock();
    for (const auto& [c, stored] : now) {
      auto it = reach_.find(c);
      if (it == reach_.end()) continue;
      if (!r.ok()) {
        reach_dirty_.insert(c);  // with the next round
        continue;
      }
      it->second.stored = stored;
      // Changed again while the store wrote: the next round writes that.
      if (it->second.unreachable != stored) {
        reach_dirty_.insert(c);
      } else if (!stored) {
        reach_.erase(it);
      }
    }
  }

  // mu_ held. Clusters no context watches any more are not judged: their
  // verdicts go, and (when contexts went) when they were last heard from.
  void ForgetUnwatched(bool contexts_went) {
    if (reach_.empty() && (!contexts_went || seen_at_.empty())) return;
    std::set<std::string> watched;
    for (const auto& [id, c] : ctxs_) {
      for (const auto& [k, w] : c->watches) watched.insert(w.provider + "+" + w.cluster);
    }
    if (contexts_went) {
      std::erase_if(seen_at_, [&](const auto& e) { return !watched.count(e.first); });
    }
    for (auto& [cluster, r] : reach_) {
      if (r.unreachable && !watched.count(cluster)) {
        r.unreachable = false;
        reach_dirty_.insert(cluster);
      }
    }
    if (!reach_dirty_.empty()) WakeWriter();
  }

  // mu_ held.
  AppCluster* FindAc(const DirtyKey& d) {
    auto it = ctxs_.find(d.status_ctx);
    if (it == ctxs_.end() || it->second->serial != d.serial) return nullptr;
    auto a = it->second->acs.find(d.ac);
    return a == it->second->acs.end() ? nullptr : &a->second;
  }

  // mu_ held. The gauges follow the app x cluster's new counts.
  static void Count(AppCluster& ac, const appcontext::ReadyRecord& r) {
    std::array<int32_t, 3> now{};
    auto add = [&](const std::string& status) {
      now[status == "Ready" ? 0 : status == "NotReady" ? 1 : 2] += 1;
    };
    for (const auto& [name, status] : r.resources) add(status);
    for (const auto& [name, status] : r.cluster_only) add(status);
    Apply(ac, now);
  }
  static void Apply(AppCluster& ac, const std::array<int32_t, 3>& now) {
    auto& g = ReadyGauges::Get().by_status;
    for (size_t i = 0; i < 3; ++i) {
      if (now[i] != ac.counted[i]) g[i]->Increment(now[i] - ac.counted[i]);
    }
    ac.counted = now;
  }
  // mu_ held. A context no longer watched leaves the gauges.
  static void Uncount(Ctx& c) {
    for (auto& [key, ac] : c.acs) {
      Apply(ac, {});
      if (ac.drifted != 0) DriftMetrics::Get().resources->Decrement(ac.drifted);
      ac.drifted = 0;
    }
  }

  // mu_ held. Nothing until every watch the app x cluster needs has listed.
  static std::optional<appcontext::ReadyRecord> Compute(const AppCluster& ac) {
    for (const KindWatch* w : ac.watch) {
      if (!w->synced) return std::nullopt;
    }
    const Shape& shape = *ac.shape;
    appcontext::ReadyRecord r;
    bool all = !shape.items.empty();
    for (const auto& item : shape.items) {
      std::optional<ObjectStates::State> state = ac.watch[item.kind]->objects.Get(item.object_key);
      if (!state || !state->ready) all = false;
      r.resources[item.res_name] = !state ? "NotPresent" : state->ready ? "Ready" : "NotReady";
      if (state && state->generation > 0) r.generations[item.res_name] = state->generation;
      if (state && state->observed >= 0) r.observed_generations[item.res_name] = state->observed;
    }
    if (shape.pod_kind >= 0) {
      const auto pod_kind = static_cast<size_t>(shape.pod_kind);
      std::set<std::string_view> expected;
      for (const auto& item : shape.items) {
        if (item.kind == pod_kind) expected.insert(item.object_key);
      }
      const auto& pods = ac.watch[pod_kind]->objects.named();
      const std::string prefix = shape.label + "\n";
      for (auto it = pods.lower_bound(prefix); it != pods.end() && it->first.starts_with(prefix); ++it) {
        if (expected.count(it->first)) continue;
        const bool ready = ObjectStates::Unpack(it->second).ready;
        r.cluster_only[it->first.substr(prefix.size()) + "+Pod"] = ready ? "Ready" : "NotReady";
        if (!ready) all = false;
      }
    }
    r.ready = all;
    return r;
  }

  store::Store& st_;
  ReadyMonitorOptions opts_;
  Clock& clock_;
  std::unique_ptr<k8s::WatchHub> own_hub_;  // null with a shared hub
  k8s::WatchHub& hub_;
  HubWatchSource source_;
  SharedWatches shared_;  // every context's watches, one per cluster x kind
  std::unique_ptr<store::WatchHandle> state_watch_;

  mutable std::mutex mu_;
  std::condition_variable scan_cv_;                   // scan_pending_ / stopping_
  std::condition_variable write_cv_;                  // dirty_ / stopping_
  bool started_ = false;                              // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  bool scan_pending_ = false;                         // guarded by mu_
  uint64_t serial_ = 0;                               // guarded by mu_
  std::optional<store::Revision> scanned_rev_;        // of the last complete scan; scans only (one at a time)
  std::atomic<uint64_t> full_scans_{0};
  std::atomic<uint64_t> skipped_scans_{0};
  std::map<std::string, std::unique_ptr<Ctx>> ctxs_;  // guarded by mu_; by status context
  std::map<std::string, std::shared_ptr<k8s::ClusterClient>> clients_;  // guarded by mu_
  std::map<std::string, bool> agent_;  // guarded by mu_: cluster key -> delivered by its agent
  std::set<DirtyKey> dirty_;                                            // guarded by mu_
  // Clusters judged unreachable, or whose record is still to be deleted;
  // empty when every cluster answers.
  struct Reach {
    bool unreachable = false;
    bool stored = false;  // the store has its UnreachableRecord
    std::string since, error;
  };
  std::map<std::string, Reach> reach_;    // guarded by mu_; by "provider+cluster"
  std::set<std::string> reach_dirty_;     // guarded by mu_
  // When each watched cluster's contact was last queued for writing, and
  // the contacts (their records) not written yet.
  std::unordered_map<std::string, Clock::Time> seen_at_;  // guarded by mu_
  std::map<std::string, std::string> seen_dirty_;         // guarded by mu_
  std::thread scanner_, writer_;  // without opts_.post
  // Drift: the resources (by app x cluster) a watch saw change in a way
  // that may be drift, those to look at again later (their deployment was
  // busy, the cluster did not answer), and per resource drifted the fields
  // last repaired (so that a repair that does not hold is not repeated
  // for the same change).
  std::thread drifter_;
  std::condition_variable drift_cv_;
  std::map<DirtyKey, std::set<std::string>> drift_suspects_;  // guarded by mu_
  std::map<DirtyKey, std::set<std::string>> drift_deferred_;  // drift thread only
  std::map<std::string, std::string> drift_repaired_as_;      // drift thread only: ctx\nac\nres -> fields
  // With opts_.post: whether a round is posted or running, and the
  // interval's timer is set. Rounds reach the monitor through life_.
  bool scan_posted_ = false, scanning_ = false, scan_timer_ = false;  // guarded by mu_
  bool write_posted_ = false, writing_ = false;                       // guarded by mu_
  bool write_busy_ = false;  // guarded by mu_: the last round wrote many records
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
