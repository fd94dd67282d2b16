#include "rsync/rsync.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/trace.h"
#include "k8s/readiness.h"
#include "rsync/executor.h"
#include "rsync/logic.h"
#include "store/lock.h"

namespace eco::rsync {

namespace {

using appcontext::AppPlan;
using appcontext::ClusterRef;
using appcontext::Resource;
using appcontext::ResourceSet;
using nlohmann::json;
using store::Compare;
using store::Op;
using Clock = std::chrono::steady_clock;

// rsync's series (docs/observability.md). None is labelled by cluster: at
// ten thousand clusters that would be ten thousand series per name.
// The deployed states of a resource, as records and the status API name them.
constexpr const char* kDeployedStates[] = {"Pending", "Applied", "Deleted", "Failed"};

struct RsyncMetrics {
  prometheus::Counter& applied;
  prometheus::Counter& deleted;
  prometheus::Counter& apply_failed;
  prometheus::Counter& delete_failed;
  prometheus::Counter& retries;
  prometheus::Histogram& apply_latency;
  prometheus::Histogram& delete_latency;
  prometheus::Gauge& available;
  prometheus::Gauge& retrying;
  // eco_rsync_event_resources{status}: Pending, Applied, Deleted, Failed.
  std::array<prometheus::Gauge*, 4> event_resources;

  static RsyncMetrics& Get() {
    static RsyncMetrics m = Make();
    return m;
  }

 private:
  static std::array<prometheus::Gauge*, 4> EventResources(prometheus::Registry& reg) {
    auto& fam = prometheus::BuildGauge()
                    .Name("eco_rsync_event_resources")
                    .Help("Resources of the events this rsync is running, by the deployed status "
                          "each reached (Pending, Applied, Deleted, Failed); an event's leave "
                          "when it ends.")
                    .Register(reg);
    std::array<prometheus::Gauge*, 4> g{};
    for (size_t i = 0; i < g.size(); ++i) g[i] = &fam.Add({{"status", kDeployedStates[i]}});
    return g;
  }

  static RsyncMetrics Make() {
    auto& reg = metrics::Registry();
    auto& res =
        prometheus::BuildCounter()
            .Name("eco_rsync_resources_total")
            .Help("Resources rsync applied or deleted on clusters, by operation and result.")
            .Register(reg);
    auto& lat =
        prometheus::BuildHistogram()
            .Name("eco_rsync_request_duration_seconds")
            .Help("Time of one apply or delete of one resource on a cluster, answer included.")
            .Register(reg);
    auto& clusters =
        prometheus::BuildGauge()
            .Name("eco_rsync_clusters")
            .Help("Clusters rsync has worked on, by connectivity (Available or Retrying).")
            .Register(reg);
    return RsyncMetrics{
        res.Add({{"op", "apply"}, {"result", "ok"}}),
        res.Add({{"op", "delete"}, {"result", "ok"}}),
        res.Add({{"op", "apply"}, {"result", "failed"}}),
        res.Add({{"op", "delete"}, {"result", "failed"}}),
        prometheus::BuildCounter()
            .Name("eco_rsync_retries_total")
            .Help(
                "Times rsync put off an app on a cluster that did not answer (backoff and retry).")
            .Register(reg)
            .Add({}),
        lat.Add({{"op", "apply"}}, metrics::LatencyBuckets()),
        lat.Add({{"op", "delete"}}, metrics::LatencyBuckets()),
        clusters.Add({{"connectivity", "Available"}}),
        clusters.Add({{"connectivity", "Retrying"}}),
        EventResources(reg),
    };
  }
};

constexpr char kActivePrefix[] = "/eco/active/";
constexpr char kLockPrefix[] = "/eco/lock/rsync/";

std::string Str(const json& j, const char* k) {
  if (!j.is_object()) return "";
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string MetaName(const json& o) {
  return o.is_object() && o.contains("metadata") ? Str(o["metadata"], "name") : "";
}

json StatusValue(const std::string& s) { return {{"status", s}, {"time", catalog::NowRfc3339()}}; }

// Why an event stopped early. kShutdown (rsync stopping, lease or lock
// lost) leaves the event pending for whoever owns the context next.
enum class Abort { kNone, kFailed, kStopped, kTerminate, kSuperseded, kShutdown };

// One app's resources for a group of clusters (a plan variant), with each
// object serialized once for the whole event rather than once per cluster.
struct PreparedSet {
  ResourceSet rs;
  struct Bodies {
    std::string as_is;         // the object as it is
    std::string in_namespace;  // with metadata.namespace set to the event's
                               // namespace ("" when it names one already)
  };
  std::unordered_map<const Resource*, Bodies> bodies;
};

// `o` with the deployment's owner annotation (appcontext::kOwnerAnnotation).
json Owned(const json& o, const std::string& owner) {
  json copy = o;
  json& md = copy["metadata"];
  if (!md.is_object()) md = json::object();
  json& ann = md["annotations"];
  if (!ann.is_object()) ann = json::object();
  ann[appcontext::kOwnerAnnotation] = owner;
  return copy;
}

// `serialize`: false for the replaced revision's sets, which are only
// compared with, never applied. The bodies carry `owner`'s annotation.
std::shared_ptr<const PreparedSet> Prepare(ResourceSet rs, const std::string& ns, bool serialize,
                                           const std::string& owner) {
  auto p = std::make_shared<PreparedSet>();
  p->rs = std::move(rs);
  if (!serialize) return p;
  for (const auto* list : {&p->rs.crds, &p->rs.resources, &p->rs.hooks}) {
    for (const Resource& r : *list) {
      PreparedSet::Bodies& b = p->bodies[&r];
      const json& o = r.object;
      // Objects DoStep refuses (no object, metadata not an object) are
      // sent as they are, and get no namespaced copy.
      const bool shaped = o.is_object() && (!o.contains("metadata") || o["metadata"].is_object());
      if (!shaped) {
        b.as_is = o.dump();
        continue;
      }
      json owned = Owned(o, owner);
      b.as_is = owned.dump();
      const bool has_ns = o.contains("metadata") && !Str(o["metadata"], "namespace").empty();
      if (!has_ns && !ns.empty()) {
        owned["metadata"]["namespace"] = ns;
        b.in_namespace = owned.dump();
      }
    }
  }
  return p;
}

struct Step {
  // kGone: wait until a deleted Namespace is gone (it terminates a while).
  // kCheck: before anything is applied, whether an object already on the
  // cluster is this deployment's to apply (ClaimObject).
  enum class Kind { kApply, kDelete, kWait, kGone, kCheck };
  Kind kind = Kind::kApply;
  const Resource* res = nullptr;  // in the task's prepared sets
  const PreparedSet::Bodies* bodies = nullptr;
  bool recorded = false;  // a main resource or CRD: its DeployedRecord entry follows it
  bool lenient = false;   // cleanup: errors other than an unreachable cluster are ignored
  bool bounded = false;   // kWait for a CRD, kGone: fails after Options::settle_timeout
  size_t list = 0;        // index of the first step of its list (where a retry restarts)
};

// 32 bits of FNV-1a as hex: a short, stable name part.
std::string ShortHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char out[9];
  std::snprintf(out, sizeof out, "%08x", static_cast<unsigned>(h ^ (h >> 32)));
  return out;
}

// The name of the CRD in `rs` that defines kind `kind` of `api_version`; ""
// when none does.
std::string DefiningCrd(const ResourceSet& rs, const std::string& api_version, const std::string& kind) {
  const size_t slash = api_version.find('/');
  if (slash == std::string::npos) return "";
  const std::string group = api_version.substr(0, slash), version = api_version.substr(slash + 1);
  for (const Resource& c : rs.crds) {
    const json& o = c.object;
    if (!o.is_object() || !o.contains("spec") || !o["spec"].is_object()) continue;
    const json& spec = o["spec"];
    if (Str(spec, "group") != group || !spec.contains("names") || Str(spec["names"], "kind") != kind) continue;
    bool served = !spec.contains("versions") && Str(spec, "version") == version;  // v1beta1's single version
    if (spec.contains("versions") && spec["versions"].is_array()) {
      for (const auto& v : spec["versions"]) served = served || Str(v, "name") == version;
    }
    if (served) return o.contains("metadata") ? Str(o["metadata"], "name") : "";
  }
  return "";
}

// Hooks of these kinds are waited for until ready (Job and Pod: succeeded).
bool Waitable(const std::string& kind) {
  return kind == "Job" || kind == "Pod" || kind == "Deployment" || kind == "StatefulSet" ||
         kind == "DaemonSet";
}

// One app on one cluster within one event. Touched by one worker at a time:
// it is either queued, running, or waiting on a timer.
struct Task {
  std::string app;
  ClusterRef cluster;
  std::vector<Step> steps;  // rebuilt from the plan after each wait (saves memory)
  std::shared_ptr<const PreparedSet> set, other_set;  // what `steps` point into
  bool built = false;
  size_t next = 0;
  int attempts = 0;
  uint64_t gen = 0;  // guarded by EventRun::mu: a wake-up with an older gen is stale
  bool rec_loaded = false;
  appcontext::DeployedRecord rec;
  bool dirty = false;
  std::set<size_t> pending_written;  // lists whose Pending marks are stored
  // Waiting for a state of the cluster that passes (a CRD to be established,
  // a namespace to finish terminating): since when, and at which step.
  std::optional<Clock::time_point> settling_since;
  size_t settling_step = 0;
  std::string note;  // set by DoStep: why a delete left the object in place
  std::string wait_why;  // set by DoStep: what a discovered Endpoints waits for
  // The plan as first built, by place in the prepared set (0 CRDs, 1 main
  // resources, 2 hooks; index): later builds (after each wait) make these
  // same steps. Decisions read from the record, which the task itself
  // changes (what to check, what an update skips), must not move `next`.
  struct PlannedStep {
    Step::Kind kind;
    uint8_t where;
    size_t pos;
    bool recorded, lenient, bounded;
    size_t list;
  };
  std::optional<std::vector<PlannedStep>> planned;
  std::shared_ptr<k8s::ClusterClient> client;
  std::string failure;  // why it finished unsuccessfully, kept for its span (traced events only)
  // The state each resource reached in this event (kDeployedStates index):
  // what eco_rsync_event_resources counts for it. Emptied when it finishes.
  std::unordered_map<std::string, uint8_t> marked;
};

struct AppState {
  std::vector<appcontext::Dependency> deps;
  bool opened = false;
  size_t remaining = 0;  // clusters not yet done
  bool deployed = false;
  std::optional<Clock::time_point> due;  // dependencies met: opens then
};

// One event being run. Shared by its tasks (held by their queued closures).
struct EventRun {
  EventRun() = default;
  EventRun(const EventRun&) = delete;
  EventRun& operator=(const EventRun&) = delete;
  ~EventRun() {  // the event ended: its resources leave the gauge
    for (size_t i = 0; i < marked.size(); ++i) {
      if (const int64_t n = marked[i].load()) {
        RsyncMetrics::Get().event_resources[i]->Decrement(static_cast<double>(n));
      }
    }
  }
  std::array<std::atomic<int64_t>, 4> marked{};  // resources by state, as in the gauge
  std::string id, type, other, status_ctx, fence;
  std::string owner;            // appcontext::OwnerOf(meta)
  // An update from another DIG's context (a migrate): that DIG's objects
  // are this one's to take over.
  std::string replaced_owner;
  std::set<std::string> only;   // resync: the clusters (keys) it re-applies to; empty = all
  trace::SpanContext trace;     // the event's span when traced: its clusters' spans are children
  store::Revision created = 0;  // when the event was queued
  bool other_complete = false;  // update: `other` finished deploying everywhere
  appcontext::Meta meta;
  std::map<std::string, std::shared_ptr<AppPlan>> plans;
  std::map<std::string, std::shared_ptr<AppPlan>> other_plans;
  std::map<std::string, std::unordered_map<std::string, ClusterRef>>
      other_index;  // app -> key -> ref

  // Prepared sets per (app, variant) of this event's plans and the other's;
  // deployed records per app, read with one range when its first task
  // starts (taken out as tasks load them).
  std::mutex prep_mu;
  std::map<std::pair<std::string, int>, std::shared_ptr<const PreparedSet>>
      prepared;  // guarded by prep_mu
  std::map<std::pair<std::string, int>, std::shared_ptr<const PreparedSet>>
      other_prepared;  // guarded by prep_mu
  std::map<std::string, std::unordered_map<std::string, appcontext::DeployedRecord>>
      records;  // guarded by prep_mu: app -> cluster key -> record

  std::mutex mu;
  std::condition_variable cv;
  size_t outstanding = 0;                    // guarded by mu
  size_t unopened = 0;                       // guarded by mu
  std::map<std::string, AppState> apps;      // guarded by mu
  Abort abort = Abort::kNone;                // guarded by mu
  std::string abort_msg;                     // guarded by mu
  std::string error;                         // guarded by mu: the first failure
  std::set<Task*> waiting;                   // guarded by mu
  std::vector<std::unique_ptr<Task>> tasks;  // guarded by mu
};

// The object has a deletionTimestamp: it is going away.
bool BeingDeleted(const json& live) {
  auto md = live.find("metadata");
  if (md == live.end() || !md->is_object()) return false;
  auto ts = md->find("deletionTimestamp");
  return ts != md->end() && !ts->is_null();
}

// Who owns `live` if not the deployment `run` is of: "" when it is its own
// (its owner annotation, or, from before owners were written, its context
// label), else a description for a message.
// `unmarked_is_own`: an object without any eco mark counts as its own (a
// delete of what the record says it applied: logical clouds' objects had
// no marks before owners were written).
std::string OtherOwner(const EventRun& run, const json& live, bool unmarked_is_own = false) {
  const json empty = json::object();
  const json& md = live.contains("metadata") && live["metadata"].is_object() ? live["metadata"] : empty;
  const std::string owner = md.contains("annotations") ? Str(md["annotations"], appcontext::kOwnerAnnotation) : "";
  const std::string ctx = md.contains("labels") ? Str(md["labels"], appcontext::kContextLabel) : "";
  if (owner == run.owner || (owner.empty() && !ctx.empty() && ctx == run.status_ctx)) return "";
  if (!owner.empty() && owner == run.replaced_owner) return "";
  if (unmarked_is_own && owner.empty() && ctx.empty()) return "";
  if (!owner.empty()) return owner;
  if (!ctx.empty()) return "eco's AppContext " + ctx;
  return "nothing eco deployed (it has no " + std::string(appcontext::kOwnerAnnotation) + " annotation)";
}

// Whether this deployment may apply over `live`, an object already on the
// cluster: its own, a Namespace or CRD it shares (recorded so: it is never
// deleted, and is applied without eco's marks), or anything with the DIG's
// spec.adopt. Otherwise a conflict naming the object, cluster and owner.
Status ClaimObject(const EventRun& run, Task* t, const Step& s, const json& live, const std::string& ns) {
  const std::string other = OtherOwner(run, live);
  if (other.empty()) return Status::Ok();
  const std::string kind = Str(s.res->object, "kind"), av = Str(s.res->object, "apiVersion");
  // Going away: what is applied next is made anew, and is this deployment's.
  if (BeingDeleted(live)) return Status::Ok();
  if ((kind == "Namespace" && av == "v1") || kind == "CustomResourceDefinition") {
    t->rec.resources[s.res->name].shared = true;
    t->dirty = true;
    return Status::Ok();
  }
  if (run.meta.adopt) return Status::Ok();
  return Conflict(kind + " " + (ns.empty() ? "" : ns + "/") + MetaName(s.res->object) + " on cluster " +
                  t->cluster.key() + " belongs to " + other +
                  "; a DIG takes over objects that are not its own only with spec.adopt: true");
}

// Sets a resource's deployed state in the task's record, and moves it
// between the states of eco_rsync_event_resources.
void Mark(EventRun& run, Task* t, const std::string& name, appcontext::ResourceDeployed state) {
  const auto* end = std::end(kDeployedStates);
  const auto idx = static_cast<uint8_t>(
      std::find_if(std::begin(kDeployedStates), end,
                   [&](const char* s) { return state.status == s; }) -
      std::begin(kDeployedStates));
  auto& gauges = RsyncMetrics::Get().event_resources;
  if (idx < gauges.size()) {
    auto [it, fresh] = t->marked.try_emplace(name, idx);
    if (fresh || it->second != idx) {
      if (!fresh) {
        gauges[it->second]->Decrement();
        --run.marked[it->second];
      }
      it->second = idx;
      gauges[idx]->Increment();
      ++run.marked[idx];
    }
  }
  // Shared stays shared: the mark is of the deployment, not of one event.
  if (auto it = t->rec.resources.find(name); it != t->rec.resources.end()) state.shared = state.shared || it->second.shared;
  t->rec.resources[name] = std::move(state);
}

struct Outcome {
  bool aborted = false;  // leave the event pending
  bool ok = false;
  std::string message;
};

// The trace of the request that queued an event (appcontext's EnqueueOps).
std::optional<trace::SpanContext> EventTrace(const json& ev) {
  auto tr = ev.find("trace");
  if (tr == ev.end() || !tr->is_object()) return std::nullopt;
  return trace::Extract([&tr](std::string_view name) -> std::optional<std::string> {
    auto f = tr->find(std::string(name));
    if (f == tr->end() || !f->is_string()) return std::nullopt;
    return f->get<std::string>();
  });
}

std::vector<QueuedEvent> QueueOf(const store::RangeResult& evs) {
  std::vector<QueuedEvent> out;
  for (const auto& kv : evs.kvs) {
    json e = json::parse(kv.value, nullptr, false);
    out.push_back({Str(e, "event"), Str(e, "status"), Str(e, "other"), kv.create_revision});
  }
  return out;
}

// What an update (or a terminate that cut one short) takes over from the
// contexts it replaces.
struct Replaced {
  bool known = false;              // their queues could be read
  bool deploying = false;          // one of them still has an instantiate or update queued before
  bool from_complete = false;      // the first one finished deploying everywhere
  std::vector<std::string> chain;  // see ReplacedChain
};

}  // namespace

class Rsync::Impl {
 public:
  Impl(store::Store& st, Options o) : st_(st), opt_(std::move(o)), rng_(std::random_device{}()) {
    RsyncMetrics::Get();  // the series exist from the first scrape on
  }
  ~Impl() {
    Stop();
    // This instance's clusters leave the process-wide gauges.
    std::lock_guard<std::mutex> g(connectivity_mu_);
    for (const auto& [key, up] : connectivity_)
      (up ? RsyncMetrics::Get().available : RsyncMetrics::Get().retrying).Decrement();
  }

  Status Start();
  void Stop();
  size_t Active() const {
    std::lock_guard<std::mutex> g(mu_);
    return runners_.size();
  }
  Result<std::shared_ptr<k8s::ClusterClient>> SharedClient(const ClusterRef& c) {
    return Client(c);
  }

 private:
  struct Runner {
    std::string id;
    std::unique_ptr<store::LockGuard> lock;
    std::thread thread;
    std::atomic<bool> done{false};
    std::atomic<bool> abort{false};
    std::mutex mu;
    std::condition_variable cv;
    std::shared_ptr<EventRun> run;  // guarded by mu
  };

  void Log(const std::string& m) {
    if (opt_.log) opt_.log(m);
  }
  void Wake() {
    {
      std::lock_guard<std::mutex> g(mu_);
      wake_ = true;
    }
    cv_.notify_all();
  }

  // Manager: finds contexts and claims them.
  void Manage();
  Status Watches();
  void Claim();
  void Reap();
  void AbortAll();
  void JoinAll();
  void AbortRunner(Runner* r);

  // One context, its events one at a time.
  void RunContext(Runner* r);
  void SleepFor(Runner* r, std::chrono::milliseconds d);
  enum class Write { kOk, kLost, kError };
  Write Fenced(const std::string& fence, std::vector<Compare> cmp, std::vector<Op> ops);
  // Runs one event; a span of the trace that queued it, when it was traced.
  // `only`: a resync's clusters (keys; empty = all).
  Outcome Execute(Runner* r, const std::string& id, const std::string& type,
                  const std::string& other, const std::set<std::string>& only, store::Revision created,
                  bool other_complete, const std::optional<trace::SpanContext>& parent);
  Outcome ExecuteEvent(Runner* r, const std::string& id, const std::string& type,
                       const std::string& other, const std::set<std::string>& only, store::Revision created,
                       bool other_complete, const trace::SpanContext& span);
  void OpenApps(const std::shared_ptr<EventRun>& run);
  bool ReadyOnAll(const std::shared_ptr<EventRun>& run, const std::string& app);
  bool TerminateQueued(const std::string& id, const std::string& after_key);
  // The contexts an update of `self` from `from`, queued at revision `at`,
  // replaces. It waits until none of them deploys anything queued before it
  // (their events are superseded and end soon): otherwise one of them,
  // resumed or still retrying a cluster, could apply older objects after
  // the newer ones.
  Replaced Replacing(const std::string& self, const std::string& from, store::Revision at);
  // The context's superseded marker, as seen by its event queued at `event`
  // (0: none). `ok` (optional) tells whether the store answered.
  Supersession SupersededOf(const std::string& id, store::Revision event, bool* ok = nullptr);

  // Tasks, on the executor.
  void RunTask(const std::shared_ptr<EventRun>& run, Task* t);
  Status Build(const std::shared_ptr<EventRun>& run, Task* t);
  Result<std::shared_ptr<const PreparedSet>> PreparedFor(const std::shared_ptr<EventRun>& run,
                                                         bool other, const std::string& app,
                                                         const ClusterRef& c);
  Status LoadRecord(const std::shared_ptr<EventRun>& run, Task* t);
  Status DoStep(const std::shared_ptr<EventRun>& run, Task* t, const Step& s, bool* not_ready);
  // A discovering Endpoints (appcontext::kDiscoverAnnotation) with the
  // addresses its server clusters answer; Waiting until they have them.
  Result<json> Discovered(Task* t, const json& endpoints);
  Status WriteRecord(const std::shared_ptr<EventRun>& run, Task* t);
  void Retry(const std::shared_ptr<EventRun>& run, Task* t, const Status& why);
  void Schedule(const std::shared_ptr<EventRun>& run, Task* t, std::chrono::milliseconds delay);
  void Finish(const std::shared_ptr<EventRun>& run, Task* t, bool ok, const std::string& msg,
              bool own_failure);
  void Cancel(const std::shared_ptr<EventRun>& run, Abort why, const std::string& msg);

  Result<std::shared_ptr<k8s::ClusterClient>> Client(const ClusterRef& c);
  std::string Namespace(const std::shared_ptr<EventRun>& run, const k8s::ResourceInfo& info,
                        const json& obj);

  store::Store& st_;
  const Options opt_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<store::LeaseKeeper> keeper_;  // manager thread (and Start/Stop) only
  std::unique_ptr<store::WatchHandle> watch_active_, watch_locks_;  // manager thread only
  std::atomic<bool> watches_broken_{false};
  std::thread manager_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;                                    // guarded by mu_
  bool stopping_ = false;                                   // guarded by mu_
  bool wake_ = false;                                       // guarded by mu_
  std::map<std::string, std::unique_ptr<Runner>> runners_;  // guarded by mu_

  std::mutex clients_mu_;
  std::map<std::string, std::shared_ptr<k8s::ClusterClient>> clients_;  // guarded by clients_mu_
  std::mutex rng_mu_;
  std::mt19937_64 rng_;  // guarded by rng_mu_

  // Each cluster's last connectivity (true: Available), for the gauges.
  // Also one log line per change (not per retry), for operators reading logs.
  void NoteConnectivity(const std::string& cluster, bool up, const std::string& why = "") {
    std::lock_guard<std::mutex> g(connectivity_mu_);
    auto [it, fresh] = connectivity_.try_emplace(cluster, up);
    if (!fresh && it->second == up) return;
    RsyncMetrics& m = RsyncMetrics::Get();
    if (!fresh) (it->second ? m.available : m.retrying).Decrement();
    it->second = up;
    (up ? m.available : m.retrying).Increment();
    if (!up) {
      log::Write(log::Level::kWarn, "rsync", "cluster not answering; retrying",
                 {log::Field("cluster", cluster), log::Field("error", why)});
    } else if (!fresh) {
      log::Write(log::Level::kInfo, "rsync", "cluster answers again", {log::Field("cluster", cluster)});
    }
  }
  std::mutex connectivity_mu_;
  std::unordered_map<std::string, bool> connectivity_;  // guarded by connectivity_mu_

  // --metrics-per-cluster: a moving average of each cluster's apply and
  // delete time (the last ~20 requests weigh most).
  void ClusterLatency(const std::string& cluster, Clock::time_point start) {
    static auto& fam = prometheus::BuildGauge()
                           .Name("eco_rsync_cluster_request_seconds")
                           .Help("Moving average of the time of one apply or delete on each cluster "
                                 "(--metrics-per-cluster).")
                           .Register(metrics::Registry());
    const double took = metrics::SecondsSince(start);
    std::lock_guard<std::mutex> g(connectivity_mu_);
    auto [it, fresh] = cluster_latency_.try_emplace(cluster, nullptr);
    if (fresh) {
      it->second = &fam.Add({{"cluster", cluster}});
      it->second->Set(took);
    } else {
      it->second->Set(it->second->Value() * 0.95 + took * 0.05);
    }
  }
  std::unordered_map<std::string, prometheus::Gauge*> cluster_latency_;  // guarded by connectivity_mu_
};

// ---------------------------------------------------------------- manager

Status Rsync::Impl::Start() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (started_) return Conflict("rsync already started");
  }
  auto k = st_.KeepAlive(opt_.lease_ttl);
  if (!k.ok()) return k.status().Annotate("rsync lease");
  keeper_ = std::move(*k);
  exec_ = std::make_unique<Executor>(opt_.workers);
  ECO_RETURN_IF_ERROR(Watches());
  {
    std::lock_guard<std::mutex> g(mu_);
    started_ = true;
    stopping_ = false;
    wake_ = true;  // look at /eco/active/ at once
  }
  manager_ = std::thread([this] { Manage(); });
  return Status::Ok();
}

void Rsync::Impl::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (manager_.joinable()) manager_.join();
  watch_active_.reset();
  watch_locks_.reset();
  AbortAll();
  JoinAll();
  if (exec_) exec_->Shutdown();
  keeper_.reset();  // revokes the lease: any lock left goes with it
  {
    std::lock_guard<std::mutex> g(clients_mu_);
    clients_.clear();
  }
  std::lock_guard<std::mutex> g(mu_);
  started_ = false;
}

Status Rsync::Impl::Watches() {
  watch_active_.reset();
  watch_locks_.reset();
  watches_broken_ = false;
  store::WatchCallbacks cb;
  cb.on_events = [this](const std::vector<store::WatchEvent>&) { Wake(); };
  cb.on_error = [this](const Status&) {
    watches_broken_ = true;
    Wake();
  };
  auto a = st_.Watch(kActivePrefix, 0, cb);
  if (!a.ok()) return a.status().Annotate("rsync watch");
  // Lock keys going away (a replica finished or died) make their contexts claimable.
  store::WatchCallbacks lcb;
  lcb.on_events = [this](const std::vector<store::WatchEvent>& evs) {
    for (const auto& e : evs) {
      if (e.type == store::WatchEvent::Type::kDelete) {
        Wake();
        return;
      }
    }
  };
  lcb.on_error = cb.on_error;
  auto l = st_.Watch(kLockPrefix, 0, lcb);
  if (!l.ok()) return l.status().Annotate("rsync watch");
  watch_active_ = std::move(*a);
  watch_locks_ = std::move(*l);
  return Status::Ok();
}

void Rsync::Impl::Manage() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopping_) {
    cv_.wait_for(lk, opt_.lock_retry, [this] { return stopping_ || wake_; });
    wake_ = false;
    if (stopping_) break;
    lk.unlock();
    Reap();
    if (!keeper_->alive()) {
      // Whatever our locks guarded is no longer ours.
      Log("rsync: lease lost; abandoning this replica's contexts");
      AbortAll();
      JoinAll();
      auto k = st_.KeepAlive(opt_.lease_ttl);
      if (k.ok()) keeper_ = std::move(*k);
    }
    if (watches_broken_) {
      Status s = Watches();
      if (!s.ok()) Log("rsync: " + s.ToString());
    }
    if (keeper_->alive()) Claim();
    lk.lock();
  }
}

void Rsync::Impl::Claim() {
  store::RangeOptions ro;
  ro.keys_only = true;
  auto r = st_.Range(kActivePrefix, ro);
  if (!r.ok()) {
    Log("rsync: listing active contexts: " + r.status().ToString());
    return;
  }
  for (const auto& kv : r->kvs) {
    std::string id = kv.key.substr(sizeof(kActivePrefix) - 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopping_) return;
      if (runners_.count(id)) continue;
    }
    // Held by another replica: only look. Queueing behind it would add and
    // remove a key of ours, and every removal wakes the lock watches of all
    // replicas, this one's too: they would keep trying without pause.
    store::RangeOptions held_opts;
    held_opts.keys_only = true;
    held_opts.limit = 1;
    auto held = st_.Range(kLockPrefix + id + "/", held_opts);
    if (!held.ok() || !held->kvs.empty()) continue;
    auto lock = store::TryLock(st_, kLockPrefix + id, keeper_->id());
    if (!lock.ok()) continue;  // another replica was quicker (or the store hiccuped): next round
    auto runner = std::make_unique<Runner>();
    runner->id = id;
    runner->lock = std::move(*lock);
    Runner* raw = runner.get();
    std::lock_guard<std::mutex> g(mu_);
    runners_[id] = std::move(runner);
    raw->thread = std::thread([this, raw] { RunContext(raw); });
  }
}

void Rsync::Impl::Reap() {
  std::vector<std::unique_ptr<Runner>> done;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = runners_.begin(); it != runners_.end();) {
      if (it->second->done) {
        done.push_back(std::move(it->second));
        it = runners_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : done) {
    if (r->thread.joinable()) r->thread.join();
  }
}

void Rsync::Impl::AbortRunner(Runner* r) {
  r->abort = true;
  std::shared_ptr<EventRun> run;
  {
    std::lock_guard<std::mutex> g(r->mu);
    run = r->run;
  }
  if (run) Cancel(run, Abort::kShutdown, "rsync stopped");
  r->cv.notify_all();
}

void Rsync::Impl::AbortAll() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [id, r] : runners_) AbortRunner(r.get());
}

void Rsync::Impl::JoinAll() {
  std::map<std::string, std::unique_ptr<Runner>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    all.swap(runners_);
  }
  for (auto& [id, r] : all) {
    if (r->thread.joinable()) r->thread.join();
  }
}

// ---------------------------------------------------------------- context runner

void Rsync::Impl::SleepFor(Runner* r, std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lk(r->mu);
  r->cv.wait_for(lk, d, [r] { return r->abort.load(); });
}

Rsync::Impl::Write Rsync::Impl::Fenced(const std::string& fence, std::vector<Compare> cmp,
                                       std::vector<Op> ops) {
  store::Txn txn;
  txn.compares = std::move(cmp);
  txn.compares.push_back(Compare::Exists(fence));
  txn.success = std::move(ops);
  txn.failure.push_back(Op::Get(fence));
  auto r = st_.Commit(txn);
  if (!r.ok()) return Write::kError;
  if (r->succeeded) return Write::kOk;
  return !r->gets.empty() && r->gets[0].has_value() ? Write::kError : Write::kLost;
}

bool Rsync::Impl::TerminateQueued(const std::string& id, const std::string& after_key) {
  auto evs = st_.Range(appcontext::EventPrefix(id));
  if (!evs.ok()) return false;
  for (const auto& kv : evs->kvs) {
    if (kv.key <= after_key) continue;
    json e = json::parse(kv.value, nullptr, false);
    if (Str(e, "status") == "pending" && Str(e, "event") == "terminate") return true;
  }
  return false;
}

Replaced Rsync::Impl::Replacing(const std::string& self, const std::string& from,
                                store::Revision at) {
  Replaced out;
  std::map<std::string, std::vector<QueuedEvent>> queues;
  bool read = true;
  auto queue_of = [&](const std::string& id) -> const std::vector<QueuedEvent>& {
    auto it = queues.find(id);
    if (it != queues.end()) return it->second;
    auto r = st_.Range(appcontext::EventPrefix(id));
    if (!r.ok()) read = false;
    return queues.emplace(id, r.ok() ? QueueOf(*r) : std::vector<QueuedEvent>{}).first->second;
  };
  out.chain = ReplacedChain(self, from, at, queue_of);
  const QueuedEvent* last = LastApplyBefore(queue_of(from), at);
  out.from_complete = last != nullptr && last->status == "done";
  for (const auto& c : out.chain)
    out.deploying = out.deploying || ApplyPendingBefore(queue_of(c), at);
  out.known = read;  // cannot tell: wait and look again
  return out;
}

Supersession Rsync::Impl::SupersededOf(const std::string& id, store::Revision event, bool* ok) {
  Supersession s;
  auto kv = st_.Get(appcontext::SupersededKey(id));
  if (ok != nullptr) *ok = kv.ok();
  if (kv.ok() && kv->has_value()) {
    s.by = (*kv)->value;
    s.event_before = event > 0 && event < (*kv)->mod_revision;
  }
  return s;
}

void Rsync::Impl::RunContext(Runner* r) {
  const std::string& id = r->id;
  const std::string fence = r->lock->key();
  appcontext::Contexts ctx(st_);
  std::string waiting_for;  // the event whose wait was logged
  while (!r->abort) {
    auto active = st_.Get(appcontext::ActiveKey(id));
    auto evs = st_.Range(appcontext::EventPrefix(id));
    if (!active.ok() || !evs.ok()) {
      SleepFor(r, opt_.poll);
      continue;
    }
    store::Revision active_rev = active->has_value() ? (*active)->mod_revision : 0;
    const store::KeyValue* first = nullptr;
    json ev;
    bool terminate_later = false;
    for (const auto& kv : evs->kvs) {
      json e = json::parse(kv.value, nullptr, false);
      if (Str(e, "status") != "pending") continue;
      if (first == nullptr) {
        first = &kv;
        ev = std::move(e);
      } else if (Str(e, "event") == "terminate") {
        terminate_later = true;
      }
    }
    if (first == nullptr) {
      // Done, unless an event was queued since we read (it bumps the active key).
      Write w = Fenced(fence, {Compare::ModRevisionIs(appcontext::ActiveKey(id), active_rev)},
                       {Op::Delete(appcontext::ActiveKey(id))});
      if (w == Write::kOk || w == Write::kLost) break;
      continue;
    }
    const std::string ev_key = first->key;
    const std::string type = Str(ev, "event");
    const std::string other = Str(ev, "other");
    auto stop = st_.Get(appcontext::StopKey(id));
    auto cur = ctx.GetStatus(id);
    if (!stop.ok() || !cur.ok()) {
      SleepFor(r, opt_.poll);
      continue;
    }
    bool stopped = stop->has_value() && (*stop)->value == "true";
    bool sup_ok = false;
    Supersession sup = SupersededOf(id, first->create_revision, &sup_ok);
    if (!sup_ok) {
      SleepFor(r, opt_.poll);
      continue;
    }
    Decision d = Decide(type, *cur, stopped, terminate_later, sup);
    if (!d.run) {
      ev["status"] = "skip";
      ev["message"] = d.message;
      ev["finished"] = catalog::NowRfc3339();
      std::vector<Op> ops = {Op::Put(ev_key, ev.dump())};
      if (d.change_status)
        ops.push_back(Op::Put(appcontext::StatusKey(id), StatusValue(d.status).dump()));
      Log("rsync: context " + id + ": " + type + " skipped: " + d.message);
      if (Fenced(fence, {}, std::move(ops)) == Write::kLost) break;
      continue;
    }
    // An update, and a terminate that cut one short, take over the objects
    // of the contexts replaced.
    std::string from;
    store::Revision at = 0;
    if (type == "update") {
      from = other;
      at = first->create_revision;
    } else if (type == "terminate") {
      const auto own = QueueOf(*evs);
      const QueuedEvent* last = LastApplyBefore(own, first->create_revision);
      if (last != nullptr && last->type == "update" && last->status != "done") {
        from = last->other;
        at = last->created;
      }
    }
    Replaced rep;
    if (!from.empty()) {
      rep = Replacing(id, from, at);
      if (!rep.known || rep.deploying) {
        if (waiting_for != ev_key) {
          waiting_for = ev_key;
          Log("rsync: context " + id + ": " + type + " waits for AppContext " + from +
              " to finish deploying");
        }
        SleepFor(r, opt_.poll);
        continue;
      }
    }
    Write w = Fenced(fence, {}, {Op::Put(appcontext::StatusKey(id), StatusValue(d.status).dump())});
    if (w == Write::kLost) break;
    if (w == Write::kError) {
      SleepFor(r, opt_.poll);
      continue;
    }
    Log("rsync: context " + id + ": " + type + " started");
    std::set<std::string> only;
    if (auto cl = ev.find("clusters"); type == "resync" && cl != ev.end() && cl->is_array()) {
      for (const auto& c : *cl) {
        if (c.is_string()) only.insert(c.get<std::string>());
      }
    }
    Outcome o = Execute(r, id, type, other, only, first->create_revision, rep.from_complete, EventTrace(ev));
    if (o.aborted) break;
    const EventStates* states = StatesFor(type);
    bool lost = false;
    for (int attempt = 0; attempt < 5; ++attempt) {
      json done = ev;
      done["status"] = o.ok ? "done" : "error";
      if (!o.message.empty()) done["message"] = o.message;
      done["finished"] = catalog::NowRfc3339();
      std::vector<Op> ops = {Op::Put(ev_key, done.dump()),
                             Op::Put(appcontext::StatusKey(id),
                                     StatusValue(o.ok ? states->success : states->failure).dump())};
      std::vector<Compare> cmp;
      // The replaced contexts delete what this one does not have: after a
      // successful update, and after a terminate of a context whose update
      // never finished (they were never cleaned up then). Beyond the one an
      // update names, they are the older ones whose own replacement was cut
      // short; those get it only where it is accepted.
      bool unread = false;  // a store read failed: try the whole write again
      for (size_t i = 0; o.ok && i < rep.chain.size() && !unread; ++i) {
        const std::string& old = rep.chain[i];
        if (type != "update" || i > 0) {
          auto st = ctx.GetStatus(old);
          bool sup_ok = false;
          Supersession s = SupersededOf(old, 0, &sup_ok);
          unread = !st.ok() || !sup_ok;
          if (unread || !Decide("update-delete", *st, false, false, s).run) continue;
        }
        auto exists = ctx.Exists(old);
        auto seq = ctx.NextEventSeq(old);
        unread = !exists.ok() || !seq.ok();
        if (!unread && *exists) {
          auto q = ctx.EnqueueOps(old, *seq, {"update-delete", id});
          cmp.push_back(Compare::Missing(q[0].key));
          for (auto& op : q) ops.push_back(std::move(op));
        }
      }
      w = unread ? Write::kError : Fenced(fence, std::move(cmp), std::move(ops));
      if (w == Write::kOk) break;
      if (w == Write::kLost) {
        lost = true;
        break;
      }
      SleepFor(r, opt_.poll);
      if (r->abort) break;
    }
    if (o.ok) {
      Log("rsync: context " + id + ": " + type + " done");
    } else {
      // A failed deployment is an operator's concern: warn, not info (the
      // same words as the other event lines, which scripts look for).
      log::Write(log::Level::kWarn, "rsync", "rsync: context " + id + ": " + type + " failed: " + o.message,
                 {log::Field("context", id)});
    }
    if (lost || w != Write::kOk) break;
  }
  if (r->lock) (void)r->lock->Unlock();
  r->done = true;
  Wake();
}

Outcome Rsync::Impl::Execute(Runner* r, const std::string& id, const std::string& type,
                             const std::string& other, const std::set<std::string>& only,
                             store::Revision created, bool other_complete,
                             const std::optional<trace::SpanContext>& parent) {
  trace::Span span;
  if (parent) {
    span = trace::Span::Start("rsync " + type, trace::Kind::kInternal, &*parent);
    span.SetAttribute("eco.appcontext", id);
  }
  Outcome out = ExecuteEvent(r, id, type, other, only, created, other_complete,
                             span.recording() ? span.context() : trace::SpanContext{});
  if (out.aborted) {
    span.SetAttribute("eco.outcome", std::string("left pending"));
  } else if (!out.ok) {
    span.SetError(out.message);
  }
  return out;
}

Outcome Rsync::Impl::ExecuteEvent(Runner* r, const std::string& id, const std::string& type,
                                  const std::string& other, const std::set<std::string>& only,
                                  store::Revision created, bool other_complete,
                                  const trace::SpanContext& span) {
  Outcome out;
  appcontext::Contexts ctx(st_);
  auto run = std::make_shared<EventRun>();
  run->id = id;
  run->type = type;
  run->other = other;
  run->only = only;
  run->created = created;
  run->other_complete = other_complete;
  run->fence = r->lock->key();
  run->trace = span;
  auto meta = ctx.GetMeta(id);
  if (!meta.ok()) {
    // A store hiccup leaves the event pending: the context is claimed again shortly.
    out.aborted = meta.status().retryable();
    out.message = meta.status().ToString();
    return out;
  }
  run->meta = std::move(*meta);
  run->owner = appcontext::OwnerOf(run->meta);
  run->status_ctx = run->meta.status_context.empty() ? id : run->meta.status_context;
  for (const auto& app : run->meta.app_order) {
    auto plan = ctx.ReadApp(id, app);
    if (!plan.ok()) {
      out.aborted = plan.status().retryable();
      out.message = "app " + app + ": " + plan.status().ToString();
      return out;
    }
    run->plans[app] = std::make_shared<AppPlan>(std::move(*plan));
  }
  if (type == "update" || type == "update-delete") {
    if (other.empty()) {
      out.message = type + " names no other AppContext";
      return out;
    }
    auto om = ctx.GetMeta(other);
    if (om.ok()) {
      if (type == "update" && appcontext::OwnerOf(*om) != run->owner) run->replaced_owner = appcontext::OwnerOf(*om);
      for (const auto& app : om->app_order) {
        auto plan = ctx.ReadApp(other, app);
        if (!plan.ok()) {
          out.message = "app " + app + " of AppContext " + other + ": " + plan.status().ToString();
          return out;
        }
        auto& idx = run->other_index[app];
        for (const auto& c : plan->clusters) idx[c.key()] = c;
        run->other_plans[app] = std::make_shared<AppPlan>(std::move(*plan));
      }
    } else if (type == "update-delete" || om.status().code() != Code::kNotFound) {
      out.message = "AppContext " + other + ": " + om.status().ToString();
      return out;
    }
  }
  {
    std::lock_guard<std::mutex> g(run->mu);
    for (const auto& app : run->meta.app_order) {
      AppState a;
      if (IsApplyEvent(type)) {
        auto it = run->meta.dependencies.find(app);
        if (it != run->meta.dependencies.end()) a.deps = it->second;
      }
      for (const auto& c : run->plans[app]->clusters) a.remaining += run->only.empty() || run->only.count(c.key());
      run->apps[app] = std::move(a);
    }
    run->unopened = run->apps.size();
  }
  {
    std::lock_guard<std::mutex> g(r->mu);
    r->run = run;
  }
  if (r->abort) Cancel(run, Abort::kShutdown, "rsync stopped");

  auto last_check = Clock::now();
  while (true) {
    OpenApps(run);
    {
      std::unique_lock<std::mutex> lk(run->mu);
      auto finished = [&] {
        return run->outstanding == 0 && (run->unopened == 0 || run->abort != Abort::kNone);
      };
      if (finished()) break;
      auto wait = opt_.poll;
      auto now = Clock::now();
      for (const auto& [name, a] : run->apps) {
        if (!a.opened && a.due) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*a.due - now);
          wait = std::max(std::chrono::milliseconds(1), std::min(wait, left));
        }
      }
      run->cv.wait_for(lk, wait, finished);
      if (finished()) break;
    }
    if (Clock::now() - last_check >= opt_.poll) {
      last_check = Clock::now();
      if (r->abort) Cancel(run, Abort::kShutdown, "rsync stopped");
      auto stop = st_.Get(appcontext::StopKey(id));
      if (stop.ok() && stop->has_value() && (*stop)->value == "true") {
        Cancel(run, Abort::kStopped, "stopped");
      }
      if (IsApplyEvent(type) && TerminateQueued(id, "")) {
        Cancel(run, Abort::kTerminate, "cancelled by a queued terminate");
      }
      if (IsApplyEvent(type)) {
        Supersession s = SupersededOf(id, created);
        if (s.event_before) {
          Cancel(run, Abort::kSuperseded, "superseded by the update to AppContext " + s.by);
        }
      }
    }
  }
  {
    std::lock_guard<std::mutex> g(r->mu);
    r->run.reset();
  }
  std::lock_guard<std::mutex> g(run->mu);
  if (run->abort == Abort::kShutdown) {
    out.aborted = true;
    return out;
  }
  out.ok = run->error.empty() && run->abort == Abort::kNone;
  out.message = !run->error.empty() ? run->error : run->abort_msg;
  return out;
}

bool Rsync::Impl::ReadyOnAll(const std::shared_ptr<EventRun>& run, const std::string& app) {
  auto plan = run->plans.find(app);
  if (plan == run->plans.end()) return true;
  auto r = st_.Range(appcontext::ReadyPrefix(run->status_ctx) + app + "/");
  if (!r.ok()) return false;
  std::set<std::string> ready;
  const size_t skip = appcontext::ReadyPrefix(run->status_ctx).size() + app.size() + 1;
  for (const auto& kv : r->kvs) {
    auto rec = appcontext::ReadyFromJson(json::parse(kv.value, nullptr, false));
    if (rec.ok() && rec->ready) ready.insert(kv.key.substr(skip));
  }
  for (const auto& c : plan->second->clusters) {
    if (!ready.count(c.key())) return false;
  }
  return true;
}

void Rsync::Impl::OpenApps(const std::shared_ptr<EventRun>& run) {
  for (bool again = true; again;) {
    again = false;
    // Which apps wait only for Ready dependencies now (store reads happen unlocked).
    std::map<std::string, std::vector<std::string>> need_ready;
    {
      std::lock_guard<std::mutex> g(run->mu);
      if (run->abort != Abort::kNone) return;
      for (auto& [name, a] : run->apps) {
        if (a.opened || a.due) continue;
        bool deployed = true;
        std::vector<std::string> ready;
        for (const auto& d : a.deps) {
          auto it = run->apps.find(d.app);
          if (it == run->apps.end() || d.app == name) continue;  // unknown: nothing to wait for
          if (!it->second.deployed) deployed = false;
          if (d.op_status == "Ready") ready.push_back(d.app);
        }
        if (deployed) need_ready[name] = std::move(ready);
      }
    }
    std::map<std::string, bool> ready_cache;
    std::set<std::string> met;
    for (const auto& [name, deps] : need_ready) {
      bool ok = true;
      for (const auto& d : deps) {
        auto it = ready_cache.find(d);
        if (it == ready_cache.end()) it = ready_cache.emplace(d, ReadyOnAll(run, d)).first;
        ok = ok && it->second;
      }
      if (ok) met.insert(name);
    }
    std::vector<Task*> start;
    {
      std::lock_guard<std::mutex> g(run->mu);
      if (run->abort != Abort::kNone) return;
      auto now = Clock::now();
      for (auto& [name, a] : run->apps) {
        if (a.opened) continue;
        if (!a.due && met.count(name)) {
          int wait = 0;
          for (const auto& d : a.deps) wait = std::max(wait, d.wait_seconds);
          a.due = now + std::chrono::seconds(wait);
        }
        if (!a.due || *a.due > now) continue;
        a.opened = true;
        --run->unopened;
        const auto& plan = *run->plans[name];
        size_t tasks = 0;
        for (const auto& c : plan.clusters) {
          if (!run->only.empty() && !run->only.count(c.key())) continue;
          auto t = std::make_unique<Task>();
          t->app = name;
          t->cluster = c;
          start.push_back(t.get());
          run->tasks.push_back(std::move(t));
          ++tasks;
        }
        run->outstanding += tasks;
        if (tasks == 0) {
          a.deployed = true;
          again = true;
        }
      }
    }
    for (Task* t : start) exec_->Post([this, run, t] { RunTask(run, t); });
  }
}

// ---------------------------------------------------------------- tasks

Result<std::shared_ptr<k8s::ClusterClient>> Rsync::Impl::Client(const ClusterRef& c) {
  const std::string key = c.key();
  {
    std::lock_guard<std::mutex> g(clients_mu_);
    auto it = clients_.find(key);
    if (it != clients_.end()) return it->second;
  }
  auto kc = catalog::Kubeconfig(st_, c.provider, c.name);
  if (!kc.ok()) return kc.status();
  auto rc = k8s::ParseStoredKubeconfig(*kc);
  if (!rc.ok()) return rc.status().Annotate("kubeconfig of cluster " + key);
  std::shared_ptr<k8s::ClusterClient> client;
  if (opt_.client_factory) {
    auto f = opt_.client_factory(*rc, opt_.client);
    if (!f.ok()) return f.status();
    client = std::move(*f);
  } else {
    auto f = k8s::NewClusterClient(*rc, opt_.client);
    if (!f.ok()) return f.status();
    client = std::shared_ptr<k8s::ClusterClient>(std::move(*f));
  }
  std::lock_guard<std::mutex> g(clients_mu_);
  auto [it, fresh] = clients_.emplace(key, client);
  return it->second;
}

Result<std::shared_ptr<const PreparedSet>> Rsync::Impl::PreparedFor(
    const std::shared_ptr<EventRun>& run, bool other, const std::string& app, const ClusterRef& c) {
  auto& cache = other ? run->other_prepared : run->prepared;
  const auto key = std::make_pair(app, c.variant);
  {
    std::lock_guard<std::mutex> g(run->prep_mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  auto rs = (other ? run->other_plans : run->plans).at(app)->For(c);
  if (!rs.ok()) return rs.status();
  auto p = Prepare(std::move(*rs), run->meta.namespace_, /*serialize=*/!other, run->owner);
  std::lock_guard<std::mutex> g(run->prep_mu);
  return cache.emplace(key, std::move(p)).first->second;
}

Status Rsync::Impl::LoadRecord(const std::shared_ptr<EventRun>& run, Task* t) {
  std::lock_guard<std::mutex> g(run->prep_mu);
  auto it = run->records.find(t->app);
  if (it == run->records.end()) {
    // One range read per app and event instead of one read per cluster.
    const std::string prefix = appcontext::DeployedPrefix(run->status_ctx) + t->app + "/";
    auto r = st_.Range(prefix);
    if (!r.ok()) return r.status();
    std::unordered_map<std::string, appcontext::DeployedRecord> recs;
    for (const auto& kv : r->kvs) {
      auto rec = appcontext::DeployedFromJson(json::parse(kv.value, nullptr, false));
      if (!rec.ok()) return rec.status().Annotate("deployed record " + kv.key);
      recs.emplace(kv.key.substr(prefix.size()), std::move(*rec));
    }
    it = run->records.emplace(t->app, std::move(recs)).first;
  }
  if (auto r = it->second.find(t->cluster.key()); r != it->second.end()) {
    t->rec = std::move(r->second);
    it->second.erase(r);
  }
  t->rec_loaded = true;
  return Status::Ok();
}

Status Rsync::Impl::Build(const std::shared_ptr<EventRun>& run, Task* t) {
  if (!t->rec_loaded) ECO_RETURN_IF_ERROR(LoadRecord(run, t));
  auto set = PreparedFor(run, false, t->app, t->cluster);
  if (!set.ok()) return set.status();
  t->set = std::move(*set);
  t->other_set.reset();
  if (!run->other.empty()) {
    auto idx = run->other_index.find(t->app);
    if (idx != run->other_index.end()) {
      auto c = idx->second.find(t->cluster.key());
      if (c != idx->second.end()) {
        auto o = PreparedFor(run, true, t->app, c->second);
        if (!o.ok()) return o.status();
        t->other_set = std::move(*o);
      }
    }
  }
  const ResourceSet* rs = &t->set->rs;
  const ResourceSet* other = t->other_set ? &t->other_set->rs : nullptr;
  std::vector<Step>& steps = t->steps;
  steps.clear();
  const std::vector<Resource>* lists[] = {&rs->crds, &rs->resources, &rs->hooks};
  if (t->planned) {
    for (const Task::PlannedStep& p : *t->planned) {
      const Resource& r = (*lists[p.where])[p.pos];
      steps.push_back(Step{p.kind, &r, &t->set->bodies.at(&r), p.recorded, p.lenient, p.bounded, p.list});
    }
    t->built = true;
    return Status::Ok();
  }
  auto begin = [&] { return steps.size(); };
  auto add = [&](Step::Kind k, const Resource& r, bool recorded, bool lenient, size_t list) {
    // Every step is one of this event's own resources (Changed and Removed
    // point into `rs`); the replaced revision's are only compared with.
    steps.push_back(Step{k, &r, &t->set->bodies.at(&r), recorded, lenient, false, list});
  };
  // Objects this deployment does not know to be its own on the cluster are
  // looked at first, all of them before anything is applied: one that
  // belongs to another deployment, or that eco did not create, fails the
  // app there with nothing changed.
  auto checks = [&](const std::vector<const Resource*>& v) {
    size_t list = begin();
    for (const Resource* r : v) {
      auto it = t->rec.resources.find(r->name);
      if (it != t->rec.resources.end() && (it->second.shared || it->second.status == "Applied")) continue;
      add(Step::Kind::kCheck, *r, false, false, list);
    }
  };
  // CRDs first, then a wait until each is Established: its kinds are served
  // only after that, and a custom resource applied sooner is refused.
  auto crds = [&](const std::vector<const Resource*>& v) {
    size_t list = begin();
    for (const Resource* c : v) add(Step::Kind::kApply, *c, true, false, list);
    for (const Resource* c : v) {
      add(Step::Kind::kWait, *c, false, false, list);
      steps.back().bounded = true;
    }
  };
  auto hooks = [&](const char* event) {
    size_t list = begin();
    auto it = rs->hook_events.find(event);
    if (it == rs->hook_events.end()) return;
    for (const auto& name : it->second) {
      for (const auto& h : rs->hooks) {
        if (h.name != name) continue;
        add(Step::Kind::kApply, h, false, false, list);
        if (Waitable(Str(h.object, "kind"))) add(Step::Kind::kWait, h, false, false, list);
      }
    }
  };
  // A deleted Namespace terminates while its content goes: the event ends
  // when it is gone, so that what comes next (an instantiate) can create it.
  auto gone = [&](const Resource& r, size_t list) {
    if (Str(r.object, "kind") != "Namespace" || Str(r.object, "apiVersion") != "v1") return;
    add(Step::Kind::kGone, r, false, false, list);
    steps.back().bounded = true;
  };
  auto cleanup = [&](const std::vector<const Resource*>& hs,
                     const std::vector<const Resource*>& crds) {
    size_t list = begin();
    for (const Resource* h : hs) add(Step::Kind::kDelete, *h, false, true, list);
    for (const Resource* c : crds) add(Step::Kind::kDelete, *c, true, true, list);
  };
  auto all = [](const std::vector<Resource>& v) {
    std::vector<const Resource*> out;
    for (const Resource& r : v) out.push_back(&r);
    return out;
  };
  if (run->type == "instantiate") {
    std::vector<const Resource*> applied = all(rs->crds), main = all(rs->resources);
    applied.insert(applied.end(), main.begin(), main.end());
    checks(applied);
    crds(all(rs->crds));
    hooks("pre-install");
    size_t list = begin();
    for (const auto& r : rs->resources) add(Step::Kind::kApply, r, true, false, list);
    hooks("post-install");
  } else if (run->type == "resync") {
    // Everything of this revision again, as an update that finds nothing
    // on the cluster would: no hooks.
    std::vector<const Resource*> applied = all(rs->crds), main = all(rs->resources);
    applied.insert(applied.end(), main.begin(), main.end());
    checks(applied);
    crds(all(rs->crds));
    size_t list = begin();
    for (const auto& r : rs->resources) add(Step::Kind::kApply, r, true, false, list);
  } else if (run->type == "terminate") {
    hooks("pre-delete");
    size_t list = begin();
    for (auto it = rs->resources.rbegin(); it != rs->resources.rend(); ++it) {
      add(Step::Kind::kDelete, *it, true, false, list);
      gone(*it, list);
    }
    hooks("post-delete");
    cleanup(all(rs->hooks), all(rs->crds));
  } else if (run->type == "update") {
    // Identical objects are skipped only where the record says they are on
    // the cluster with the replaced revision's content: an earlier revision
    // that failed or was cut short there (a cluster down, a stop, a newer
    // update) left them out or older, and this revision must not.
    const std::set<std::string> on_cluster =
        KnownOnCluster(t->rec, run->other, run->other_complete);
    bool complete = run->other_complete;
    for (const auto& r : rs->resources) complete = complete && on_cluster.count(r.name) > 0;
    // CRDs recorded by releases before their records existed have none: all
    // of them again unless the earlier revision got everything there.
    const auto changed_crds = Changed(rs->crds, other && complete ? &other->crds : nullptr);
    const auto changed = Changed(rs->resources, other ? &other->resources : nullptr, &on_cluster);
    std::vector<const Resource*> applied = changed_crds;
    applied.insert(applied.end(), changed.begin(), changed.end());
    checks(applied);
    crds(changed_crds);
    size_t list = begin();
    for (const Resource* r : changed) add(Step::Kind::kApply, *r, true, false, list);
  } else if (run->type == "update-delete") {
    auto removed = Removed(rs->resources, other ? &other->resources : nullptr);
    size_t list = begin();
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) {
      add(Step::Kind::kDelete, **it, true, false, list);
      gone(**it, list);
    }
    cleanup(Removed(rs->hooks, other ? &other->hooks : nullptr),
            Removed(rs->crds, other ? &other->crds : nullptr));
  }
  std::vector<Task::PlannedStep> planned;
  planned.reserve(steps.size());
  for (const Step& st : steps) {
    uint8_t where = 0;
    const std::less<const Resource*> before;
    auto in = [&](const std::vector<Resource>* v) {
      return !before(st.res, v->data()) && before(st.res, v->data() + v->size());
    };
    while (where < 2 && !in(lists[where])) ++where;
    planned.push_back({st.kind, where, static_cast<size_t>(st.res - lists[where]->data()), st.recorded, st.lenient,
                       st.bounded, st.list});
  }
  t->planned = std::move(planned);
  t->built = true;
  return Status::Ok();
}

std::string Rsync::Impl::Namespace(const std::shared_ptr<EventRun>& run,
                                   const k8s::ResourceInfo& info, const json& obj) {
  if (!info.namespaced) return "";
  std::string ns = obj.contains("metadata") ? Str(obj["metadata"], "namespace") : "";
  return ns.empty() ? run->meta.namespace_ : ns;
}

Status Rsync::Impl::DoStep(const std::shared_ptr<EventRun>& run, Task* t, const Step& s,
                           bool* not_ready) {
  const json& o = s.res->object;
  if (!o.is_object() || (o.contains("metadata") && !o["metadata"].is_object())) {
    if (s.kind == Step::Kind::kCheck) return Status::Ok();  // its apply says so, in order
    return Invalid("resource " + s.res->name + " is not a Kubernetes object");
  }
  const std::string av = Str(o, "apiVersion"), kind = Str(o, "kind");
  const std::string name = o.contains("metadata") ? Str(o["metadata"], "name") : "";
  auto info = t->client->ResolveKind(av, kind);
  if (!info.ok()) {
    if (info.status().code() != Code::kNotFound) return info.status();
    // The kind is gone, so is the object; or it is not there yet, nor the object.
    if (s.kind == Step::Kind::kDelete || s.kind == Step::Kind::kCheck) return Status::Ok();
    // A kind of the app's own CRDs is served a moment after the CRD is
    // Established (the API server installs its handler then).
    if (s.kind == Step::Kind::kApply && !DefiningCrd(t->set->rs, av, kind).empty()) {
      *not_ready = true;
      return Status::Ok();
    }
    return Invalid("the cluster does not serve " + av + " " + kind);
  }
  const std::string ns = Namespace(run, *info, o);
  const auto rec = t->rec.resources.find(s.res->name);
  const bool shared = rec != t->rec.resources.end() && rec->second.shared;
  switch (s.kind) {
    case Step::Kind::kCheck: {
      auto live = t->client->Get(av, kind, ns, name);
      if (!live.ok()) return live.status().code() == Code::kNotFound ? Status::Ok() : live.status();
      return ClaimObject(*run, t, s, *live, ns);
    }
    case Step::Kind::kApply: {
      k8s::ApplyOptions ao;
      ao.want_object = false;
      if (kind == "Endpoints" && av == "v1" && o.contains("metadata") && o["metadata"].contains("annotations") &&
          o["metadata"]["annotations"].is_object() &&
          o["metadata"]["annotations"].contains(appcontext::kDiscoverAnnotation)) {
        auto filled = Discovered(t, o);
        if (!filled.ok()) {
          if (!filled.status().waiting()) return filled.status();
          // Not a fault of this cluster: it waits, bounded, without
          // applying its list again (RunTask).
          t->wait_why = filled.status().message();
          *not_ready = true;
          return Status::Ok();
        }
        json obj = Owned(*filled, run->owner);
        if (Str(obj["metadata"], "namespace").empty() && !ns.empty()) obj["metadata"]["namespace"] = ns;
        return t->client->Apply(obj, ao).status();
      }
      if (shared) {
        // Another's CRD is left as its owner keeps it (Helm leaves an
        // existing CRD alone too). A shared Namespace gets the chart's
        // labels and annotations, not eco's marks, under a field manager
        // of this deployment's own, so that no one else's fields go.
        if (kind == "CustomResourceDefinition") return Status::Ok();
        json obj = o;
        if (auto& md = obj["metadata"]; md.is_object()) {
          if (md.contains("labels") && md["labels"].is_object()) {
            md["labels"].erase(appcontext::kContextLabel);
            md["labels"].erase(appcontext::kAppLabel);
          }
        }
        ao.field_manager = "eco-share-" + ShortHash(run->owner);
        return t->client->Apply(obj, ao).status();
      }
      const std::string own_ns = o.contains("metadata") ? Str(o["metadata"], "namespace") : "";
      if (ns.empty() || own_ns == ns) {
        ao.serialized = &s.bodies->as_is;
        return t->client->Apply(o, ao).status();
      }
      json obj = Owned(o, run->owner);
      obj["metadata"]["namespace"] = ns;
      // The event's namespace is the only one filled in (Namespace()).
      if (own_ns.empty() && !s.bodies->in_namespace.empty())
        ao.serialized = &s.bodies->in_namespace;
      return t->client->Apply(obj, ao).status();
    }
    case Step::Kind::kDelete: {
      if (shared) {
        t->note = "left in place: it was on the cluster before this deployment";
        return Status::Ok();
      }
      if (s.recorded || kind == "CustomResourceDefinition") {
        // Only what this deployment owns goes: another may have taken the
        // object over (spec.adopt) since it was applied.
        auto live = t->client->Get(av, kind, ns, name);
        if (!live.ok()) return live.status().code() == Code::kNotFound ? Status::Ok() : live.status();
        if (const std::string other = OtherOwner(*run, *live, /*unmarked_is_own=*/true); !other.empty()) {
          t->note = "left in place: now owned by " + other;
          return Status::Ok();
        }
      }
      Status d = t->client->Delete(av, kind, ns, name, k8s::Propagation::kBackground);
      return d.code() == Code::kNotFound ? Status::Ok() : d;
    }
    case Step::Kind::kGone: {
      if (shared) return Status::Ok();  // not deleted: it stays
      auto live = t->client->Get(av, kind, ns, name);
      if (!live.ok()) return live.status().code() == Code::kNotFound ? Status::Ok() : live.status();
      // Still there and being deleted; one left in place is not waited for.
      *not_ready = BeingDeleted(*live);
      return Status::Ok();
    }
    case Step::Kind::kWait: {
      auto live = t->client->Get(av, kind, ns, name);
      if (!live.ok()) {
        if (live.status().code() != Code::kNotFound) return live.status();
        *not_ready = true;
        return Status::Ok();
      }
      const json& st = live->contains("status") ? (*live)["status"] : json();
      if (kind == "Pod" && Str(st, "phase") == "Failed")
        return Invalid("hook Pod " + name + " failed");
      if (kind == "Job" && st.is_object() && st.contains("conditions") &&
          st["conditions"].is_array()) {
        for (const auto& c : st["conditions"]) {
          if (Str(c, "type") == "Failed" && Str(c, "status") == "True")
            return Invalid("hook Job " + name + " failed");
        }
      }
      *not_ready = !k8s::CheckReady(*live).ready;
      return Status::Ok();
    }
  }
  return Internal("unknown step");
}

Result<json> Rsync::Impl::Discovered(Task* t, const json& endpoints) {
  const json wanted = json::parse(Str(endpoints["metadata"]["annotations"], appcontext::kDiscoverAnnotation),
                                  nullptr, false);
  if (!wanted.is_array()) {
    return Invalid("annotation " + std::string(appcontext::kDiscoverAnnotation) + " is not a JSON array");
  }
  json out = endpoints;
  for (const auto& w : wanted) {
    const std::string key = Str(w, "cluster"), ns = Str(w, "namespace"), name = Str(w, "service");
    const size_t plus = key.find('+');
    const int port = w.is_object() && w.contains("port") && w["port"].is_number_integer() ? w["port"].get<int>() : 0;
    if (plus == std::string::npos || name.empty() || port <= 0) {
      return Invalid("annotation " + std::string(appcontext::kDiscoverAnnotation) + ": an entry needs cluster, service and port");
    }
    const std::string where = "Service " + (ns.empty() ? name : ns + "/" + name) + " on server cluster " + key;
    ClusterRef c;
    c.provider = key.substr(0, plus);
    c.name = key.substr(plus + 1);
    // The server cluster is another task's: its trouble is waited out here
    // (bounded), not counted against the client cluster's connectivity.
    auto client = c.key() == t->cluster.key() && t->client ? Result<std::shared_ptr<k8s::ClusterClient>>(t->client) : Client(c);
    if (!client.ok()) {
      if (client.status().retryable()) return Waiting(where + ": " + client.status().message());
      return client.status().Annotate(where);
    }
    auto svc = (*client)->Get("v1", "Service", ns, name);
    if (!svc.ok()) {
      if (svc.status().code() == Code::kNotFound) return Waiting(where + ": not deployed yet");
      if (svc.status().retryable()) return Waiting(where + ": " + svc.status().message());
      return svc.status().Annotate(where);
    }
    std::vector<json> nodes;
    if (NeedsNodes(*svc)) {
      auto list = (*client)->List("v1", "Node", "", k8s::ListOptions{});
      if (!list.ok()) {
        if (list.status().retryable()) return Waiting(where + ": listing its nodes: " + list.status().message());
        return list.status().Annotate(where + ": listing its nodes");
      }
      nodes = std::move(list->items);
    }
    auto addr = ReachableAddress(*svc, nodes, port);
    if (!addr.ok()) return Status(addr.status().code(), where + ": " + addr.status().message());
    out = WithAddresses(std::move(out), *addr, Str(w, "portName"), Str(w, "protocol"));
  }
  return out;
}

Status Rsync::Impl::WriteRecord(const std::shared_ptr<EventRun>& run, Task* t) {
  Write w = Fenced(run->fence, {},
                   {Op::Put(appcontext::DeployedKey(run->status_ctx, t->app, t->cluster.key()),
                            appcontext::ToJson(t->rec).dump())});
  if (w == Write::kLost) {
    Cancel(run, Abort::kShutdown, "lost the lock of AppContext " + run->id);
    return Conflict("lost the lock of AppContext " + run->id);
  }
  if (w == Write::kError) return Unavailable("store: writing the deployed record failed");
  t->dirty = false;
  return Status::Ok();
}

void Rsync::Impl::RunTask(const std::shared_ptr<EventRun>& run, Task* t) {
  // A traced event: a span per cluster and attempt, the Kubernetes calls
  // below its children; marked failed when the cluster failed or is left
  // retrying.
  trace::Span span;
  if (run->trace.valid()) {
    span = trace::Span::Start("rsync cluster", trace::Kind::kInternal, &run->trace);
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
    std::lock_guard<std::mutex> g(run->mu);
    run->waiting.erase(t);
    if (run->abort != Abort::kNone) aborted = run->abort_msg;
  }
  if (aborted) {
    if (t->dirty && t->rec_loaded) (void)WriteRecord(run, t);
    return Finish(run, t, false, *aborted, false);
  }
  if (!t->built) {
    Status b = Build(run, t);
    if (!b.ok()) {
      if (b.retryable())
        return Schedule(run, t, Backoff(++t->attempts, opt_.retry_base, opt_.retry_cap, 0.5));
      return Finish(run, t, false, b.message(), true);
    }
  }
  if (!t->client) {
    auto c = Client(t->cluster);
    if (!c.ok()) {
      if (c.status().retryable()) return Retry(run, t, c.status());
      return Finish(run, t, false, c.status().message(), true);
    }
    t->client = std::move(*c);
  }
  const std::string now_ref = run->id;
  while (t->next < t->steps.size()) {
    const Step& s = t->steps[t->next];
    if (s.list == t->next && t->next > 0) {
      // Between lists is a waiting point too: a cancelled event goes no further.
      std::optional<std::string> aborted;
      {
        std::lock_guard<std::mutex> g(run->mu);
        if (run->abort != Abort::kNone) aborted = run->abort_msg;
      }
      if (aborted) {
        if (t->dirty) (void)WriteRecord(run, t);
        return Finish(run, t, false, *aborted, false);
      }
    }
    if ((s.recorded || s.kind == Step::Kind::kCheck) && !t->pending_written.count(s.list)) {
      // Recorded before it is acted on: the whole list is Pending (the
      // objects checked are those about to be applied).
      for (size_t i = s.list; i < t->steps.size() && t->steps[i].list == s.list; ++i) {
        const Step& x = t->steps[i];
        if (!(x.recorded && x.kind == Step::Kind::kApply) && x.kind != Step::Kind::kCheck) continue;
        auto known = t->rec.resources.find(x.res->name);
        if (known != t->rec.resources.end() && known->second.status == "Pending" && known->second.ref == now_ref &&
            known->second.error.empty())
          continue;  // marked so by the checks already: no second write
        Mark(*run, t, x.res->name, {"Pending", now_ref, "", catalog::NowRfc3339()});
        t->dirty = true;
      }
      if (t->dirty) {
        Status w = WriteRecord(run, t);
        if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
        if (!w.ok()) return Schedule(run, t, opt_.retry_base);
      }
      t->pending_written.insert(s.list);
    }
    bool not_ready = false;
    const auto step_start = Clock::now();
    Status st = DoStep(run, t, s, &not_ready);
    if (s.kind == Step::Kind::kApply || s.kind == Step::Kind::kDelete) {
      RsyncMetrics& m = RsyncMetrics::Get();
      const bool apply = s.kind == Step::Kind::kApply;
      const bool answered = !st.retryable();
      if (answered)
        (apply ? m.apply_latency : m.delete_latency).Observe(metrics::SecondsSince(step_start));
      if (!st.ok() && answered && !st.waiting()) (apply ? m.apply_failed : m.delete_failed).Increment();
      if (st.ok() && !not_ready) (apply ? m.applied : m.deleted).Increment();
      if (opt_.cluster_metrics && answered) ClusterLatency(t->cluster.key(), step_start);
    }
    if (!st.ok() && st.retryable()) {
      t->next = s.list;  // the list restarts once the cluster answers
      return Retry(run, t, st);
    }
    if (t->rec.connectivity != "Available") {
      // A cluster back from Retrying shows so at once; first contact during
      // main resources rides with the write that closes their list (one
      // store write fewer per app and cluster).
      const bool at_once = t->rec.connectivity == "Retrying" || !s.recorded;
      t->rec.connectivity = "Available";
      NoteConnectivity(t->cluster.key(), true);
      t->rec.message.clear();
      t->attempts = 0;
      t->dirty = true;
      if (at_once) {
        Status w = WriteRecord(run, t);
        if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
      }
    }
    // A state of the cluster that passes: a CRD not yet Established, its
    // kind not yet served, a namespace being deleted. Waited for, bounded.
    const bool discovering = not_ready && !t->wait_why.empty();
    const bool unserved = not_ready && s.kind == Step::Kind::kApply && !discovering;
    if (st.waiting() || unserved || discovering || (not_ready && s.bounded)) {
      const auto now = Clock::now();
      const bool first = !t->settling_since || t->settling_step != t->next;
      if (first) {
        t->settling_since = now;
        t->settling_step = t->next;
      }
      std::string why;
      if (st.waiting()) {
        why = st.message();
      } else if (discovering) {
        why = t->wait_why;
        t->wait_why.clear();
      } else if (unserved) {
        why = "the cluster does not serve " + Str(s.res->object, "apiVersion") + " " + Str(s.res->object, "kind") +
              " yet";
      } else if (s.kind == Step::Kind::kGone) {
        why = "Namespace " + MetaName(s.res->object) + " is still terminating";
      } else {
        why = "CustomResourceDefinition " + MetaName(s.res->object) + " is not Established";
      }
      if (now - *t->settling_since < opt_.settle_timeout) {
        auto known = t->rec.resources.find(s.res->name);
        const bool news = known == t->rec.resources.end() || known->second.error != "waiting: " + why;
        if ((first || (discovering && news)) && s.recorded) {
          Mark(*run, t, s.res->name, {"Pending", now_ref, "waiting: " + why, catalog::NowRfc3339()});
          t->dirty = true;
          Status w = WriteRecord(run, t);
          if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
        }
        // A namespace being deleted is gone afterwards: the list starts
        // again from its first item, which may be that namespace.
        if (st.waiting()) t->next = s.list;
        return Schedule(run, t, opt_.poll);
      }
      st = Invalid(why + " after " + std::to_string(opt_.settle_timeout.count() / 1000) + " s");
      not_ready = false;
    }
    if (t->settling_since && t->next >= t->settling_step) t->settling_since.reset();
    if (!st.ok()) {
      if (s.recorded || s.kind == Step::Kind::kCheck) {
        Mark(*run, t, s.res->name, {"Failed", now_ref, st.message(), catalog::NowRfc3339()});
        t->dirty = true;
      }
      // A failed delete does not stop the others (EMCO); a failed apply ends the cluster's work.
      if (!s.lenient && s.kind != Step::Kind::kDelete) {
        (void)WriteRecord(run, t);
        return Finish(run, t, false, s.res->name + ": " + st.message(), true);
      }
    } else {
      if (not_ready) return Schedule(run, t, opt_.poll);
      if (s.recorded) {
        Mark(*run, t, s.res->name,
             {s.kind == Step::Kind::kApply ? "Applied" : "Deleted", now_ref, t->note, catalog::NowRfc3339()});
        t->dirty = true;
      }
      t->note.clear();
    }
    size_t list = s.list;
    ++t->next;
    if (t->next < t->steps.size() && t->steps[t->next].list != list && t->dirty) {
      Status w = WriteRecord(run, t);
      if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
      if (!w.ok()) return Schedule(run, t, opt_.retry_base);
    }
  }
  if (t->dirty) {
    // The last list's record, also when the task comes back here after that
    // write failed (the store away): the marks are written before the task
    // ends, or they would be lost with it.
    Status w = WriteRecord(run, t);
    if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
    if (!w.ok()) return Schedule(run, t, opt_.retry_base);
  }
  Finish(run, t, true, "", false);
}

void Rsync::Impl::Retry(const std::shared_ptr<EventRun>& run, Task* t, const Status& why) {
  ++t->attempts;
  t->rec.connectivity = "Retrying";
  NoteConnectivity(t->cluster.key(), false, why.message());
  RsyncMetrics::Get().retries.Increment();
  t->rec.message = why.message();
  t->dirty = true;
  Status w = t->rec_loaded ? WriteRecord(run, t) : Status::Ok();
  if (w.code() == Code::kConflict) return Finish(run, t, false, w.message(), false);
  if (opt_.max_retries > 0 && t->attempts > opt_.max_retries) {
    return Finish(run, t, false,
                  "cluster " + t->cluster.key() + ": retries exceeded max (" +
                      std::to_string(opt_.max_retries) + "): " + why.message(),
                  true);
  }
  double jitter;
  {
    std::lock_guard<std::mutex> g(rng_mu_);
    jitter = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }
  auto delay =
      std::max(Backoff(t->attempts, opt_.retry_base, opt_.retry_cap, jitter), why.retry_after());
  Schedule(run, t, std::min(delay, std::max(opt_.retry_cap, why.retry_after())));
}

void Rsync::Impl::Schedule(const std::shared_ptr<EventRun>& run, Task* t,
                           std::chrono::milliseconds delay) {
  // Waiting tasks keep only their position and record, not their resources.
  t->steps.clear();
  t->steps.shrink_to_fit();
  t->set.reset();
  t->other_set.reset();
  t->built = false;
  uint64_t gen;
  {
    std::lock_guard<std::mutex> g(run->mu);
    if (run->abort != Abort::kNone) {
      exec_->Post([this, run, t] { RunTask(run, t); });
      return;
    }
    gen = ++t->gen;
    run->waiting.insert(t);
  }
  exec_->PostAt(Clock::now() + delay, [this, run, t, gen] {
    {
      std::lock_guard<std::mutex> g(run->mu);
      if (t->gen != gen || !run->waiting.count(t)) return;  // woken earlier by a cancel
    }
    RunTask(run, t);
  });
}

void Rsync::Impl::Finish(const std::shared_ptr<EventRun>& run, Task* t, bool ok,
                         const std::string& msg, bool own_failure) {
  t->steps.clear();
  t->steps.shrink_to_fit();
  t->set.reset();
  t->other_set.reset();
  t->client.reset();
  // Its record is in the store: finished tasks (every app x cluster until
  // the event ends) keep nothing but their place.
  t->rec = appcontext::DeployedRecord{};
  t->pending_written.clear();
  t->marked = {};  // what it counted stays in the event's share until the event ends
  if (!ok && run->trace.valid()) t->failure = msg;
  bool cancel_others = false;
  {
    std::lock_guard<std::mutex> g(run->mu);
    --run->outstanding;
    if (ok) {
      auto& a = run->apps[t->app];
      if (a.remaining > 0 && --a.remaining == 0) a.deployed = true;
    } else if (own_failure && run->error.empty()) {
      run->error = "app " + t->app + ", cluster " + t->cluster.key() + ": " + msg;
      cancel_others = run->abort == Abort::kNone;
    }
  }
  // EMCO's errgroup: one failure ends the waiting of the others.
  if (cancel_others) Cancel(run, Abort::kFailed, "cancelled: another cluster failed");
  run->cv.notify_all();
}

void Rsync::Impl::Cancel(const std::shared_ptr<EventRun>& run, Abort why, const std::string& msg) {
  std::vector<Task*> wake;
  {
    std::lock_guard<std::mutex> g(run->mu);
    if (run->abort != Abort::kNone && why != Abort::kShutdown) return;
    if (run->abort == Abort::kShutdown) return;
    run->abort = why;
    run->abort_msg = msg;
    for (Task* t : run->waiting) {
      ++t->gen;
      wake.push_back(t);
    }
    run->waiting.clear();
  }
  for (Task* t : wake) exec_->Post([this, run, t] { RunTask(run, t); });
  run->cv.notify_all();
}

// ---------------------------------------------------------------- public

Rsync::Rsync(store::Store& store, Options options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}
Rsync::~Rsync() { impl_->Stop(); }
Status Rsync::Start() { return impl_->Start(); }
void Rsync::Stop() { impl_->Stop(); }
size_t Rsync::ActiveContexts() const { return impl_->Active(); }
Result<std::shared_ptr<k8s::ClusterClient>> Rsync::ClusterClient(const std::string& provider,
                                                                 const std::string& cluster) {
  appcontext::ClusterRef c;
  c.provider = provider;
  c.name = cluster;
  return impl_->SharedClient(c);
}

}  // namespace eco::rsync
