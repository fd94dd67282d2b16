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
#include "k8s/kubeconfig.h"
#include "k8s/readiness.h"

namespace eco::status {

using nlohmann::json;

namespace {

using appcontext::kAppLabel;
using appcontext::kContextLabel;
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
  return api_version == "v1" && kind == "Namespace";
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

class ReadyMonitor::Impl {
 public:
  Impl(store::Store& st, ReadyMonitorOptions opts)
      : st_(st),
        opts_(std::move(opts)),
        clock_(opts_.clock ? *opts_.clock : RealClock()),
        own_hub_(opts_.shared_hub ? nullptr : std::make_unique<k8s::WatchHub>(opts_.hub)),
        hub_(opts_.shared_hub ? *opts_.shared_hub : *own_hub_) {
    if (!opts_.clients) opts_.clients = CatalogClients(st_);
    if (!opts_.watched) {
      opts_.watched = [this](const std::string& provider, const std::string& cluster) {
        return !IsAgentCluster(provider, cluster);
      };
    }
    ReadyGauges::Get();  // the series exist from the first scrape on
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
    if (scanner_.joinable()) scanner_.join();
    if (writer_.joinable()) writer_.join();
    life_.Close();  // rounds posted and not begun do nothing; a running one is waited for
    if (own_hub_) {
      own_hub_->Shutdown();
      return;
    }
    // A shared hub lives on: this monitor's watches end here.
    std::vector<k8s::WatchId> ids;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& [sctx, c] : ctxs_) {
        for (auto& [k, w] : c->watches) {
          if (w.started) ids.push_back(w.id);
          w.started = false;
        }
      }
    }
    for (auto id : ids) hub_.Cancel(id);
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
  // With a shared hub: the watches this monitor started.
  size_t active_watches() const {
    if (own_hub_) return own_hub_->active_watches();
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    for (const auto& [sctx, c] : ctxs_) {
      for (const auto& [k, w] : c->watches) n += w.started ? 1 : 0;
    }
    return n;
  }

 private:
  // What an app (one plan variant) expects on each of its clusters; shared
  // by those clusters, so that a fleet costs a few pointers per cluster.
  struct Shape {
    struct Item {
      std::string res_name;    // "<name>+<Kind>"
      size_t kind = 0;         // index in `kinds`
      std::string object_key;  // app label "\n" metadata.name
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
    std::shared_ptr<const Shape> shape;
    std::vector<KindWatch*> watch;  // per shape kind (nodes of Ctx::watches)
    // Hash of the stored record (RecordHash), when there is one: a 64-bit
    // digest instead of a copy of every record keeps ~1.5 KB per app and
    // cluster out of memory.
    std::optional<size_t> written;
    // Its resources by status (Ready, NotReady, NotPresent) in the gauges.
    std::array<int32_t, 3> counted{};
  };
  // Whether each object of a kind on a cluster is ready, and at which
  // metadata.generation, by object key (app label "\n" name). Ten thousand
  // clusters hold a million of these, so keys are kept as 64-bit digests
  // (two keys of one kind on one cluster colliding: ~1e-16), except where
  // the status lists objects by name (Pods, the cluster-only objects); the
  // state is one word: generation << 1 | ready.
  class ObjectStates {
   public:
    struct State {
      bool ready = false;
      int64_t generation = 0;
    };
    explicit ObjectStates(bool keep_names = false) : keep_names_(keep_names) {}
    // Sets the object's state from the live object; false when it had
    // that state already.
    bool Set(const std::string& key, const nlohmann::json& obj) {
      const uint64_t packed = Pack(k8s::CheckReady(obj).ready, Generation(obj));
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
    const std::map<std::string, uint64_t, std::less<>>& named() const { return named_; }
    static State Unpack(uint64_t v) { return {(v & 1) != 0, static_cast<int64_t>(v >> 1)}; }

   private:
    static uint64_t Digest(const std::string& key) { return std::hash<std::string>{}(key); }
    static int64_t Generation(const nlohmann::json& obj) {
      auto m = obj.find("metadata");
      if (m == obj.end() || !m->is_object()) return 0;
      auto g = m->find("generation");
      return g != m->end() && g->is_number_integer() ? std::max<int64_t>(0, g->get<int64_t>()) : 0;
    }
    static uint64_t Pack(bool ready, int64_t generation) {
      return (static_cast<uint64_t>(generation) << 1) | (ready ? 1 : 0);
    }
    template <typename Map, typename Key>
    static bool Update(Map& m, const Key& key, uint64_t state) {
      auto [it, fresh] = m.try_emplace(key, state);
      if (fresh) return true;
      if (it->second == state) return false;
      it->second = state;
      return true;
    }

    bool keep_names_;
    std::unordered_map<uint64_t, uint64_t> hashed_;
    std::map<std::string, uint64_t, std::less<>> named_;
  };

  struct KindWatch {
    std::string provider, cluster, api_version, kind;
    k8s::WatchId id = 0;
    bool started = false;  // the hub runs it
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
          shape = MakeShape(*rs, label);
        }
        auto [ac_it, added] = c->acs.try_emplace(app + "\n" + cl.key());
        const std::string* ac_key = &ac_it->first;
        AppCluster& ac = ac_it->second;
        ac.app = app;
        ac.cluster = cl.key();
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
    return c;
  }

  static std::shared_ptr<const Shape> MakeShape(const appcontext::ResourceSet& rs, const std::string& label) {
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
        shape->items.push_back({r.name, shape->KindIndex(av, kind), (ByName(av, kind) ? "" : label) + "\n" + name});
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
    // Cancel outside the lock: a running callback may be waiting for it.
    for (auto& c : dead) {
      for (auto& [k, w] : c->watches) {
        if (w.started) hub_.Cancel(w.id);
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
      ctxs_[sctx] = std::move(*c);
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      ForgetUnwatched(!dead.empty());
      if (complete) scanned_rev_ = rev;
    }
    StartWatches();
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
    k8s::WatchSpec spec;
    spec.api_version = t.api_version;
    spec.kind = t.kind;
    if (!ByName(t.api_version, t.kind)) spec.label_selector = std::string(kContextLabel) + "=" + t.sctx;
    spec.slim = true;  // only names, labels and readiness are looked at
    spec.report_connected = true;  // a reconnect clears "unreachable"
    auto id = hub_.Watch(*client, spec,
                         [this, sctx = t.sctx, serial = t.serial, key = t.key](
                             const k8s::WatchEvent& e) { OnEvent(sctx, serial, key, e); });
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
      hub_.Cancel(*id);  // the context went away meanwhile
      return true;
    }
    w->started = true;
    w->id = *id;
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
        // A change readiness does not see changes nothing.
        if (!w->objects.Set(okey, e.object)) return;
        break;
      case k8s::WatchEventType::kDeleted:
        okey = ObjectKey(e.object, by_name);
        if (by_name && !w->names.count(okey)) return;
        if (opts_.on_object) opts_.on_object(w->api_version, w->kind, e.object, true);
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
    for (auto& [key, ac] : c.acs) Apply(ac, {});
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
