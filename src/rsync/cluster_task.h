// One app on one cluster within one event: its steps against the cluster
// (through the delivery seam), its DeployedRecord, and backoff while the
// cluster does not answer. A task waiting for its time holds no thread: it
// is a timer on the executor. It reports its end upward through TaskReport
// and nothing else.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/event_record.h"
#include "appcontext/records.h"
#include "common/clock.h"
#include "common/trace.h"
#include "rsync/agent_tasks.h"
#include "rsync/delivery.h"
#include "rsync/executor.h"
#include "rsync/metrics.h"
#include "rsync/rsync.h"
#include "rsync/steps.h"
#include "store/store.h"

namespace eco::rsync {

// Why an event stopped early. kShutdown (rsync stopping, lease or lock
// lost) leaves the event pending for whoever owns the context next.
enum class Abort { kNone, kFailed, kStopped, kTerminate, kSuperseded, kShutdown };

struct Task {
  std::string app;
  appcontext::ClusterRef cluster;
  std::vector<Step> steps;  // rebuilt from the plan after each wait (saves memory)
  std::shared_ptr<const PreparedSet> set, other_set;  // what `steps` point into
  bool built = false;
  size_t next = 0;
  int attempts = 0;
  uint64_t gen = 0;  // guarded by EventTasks::mu: a wake-up with an older gen is stale
  bool rec_loaded = false;
  appcontext::DeployedRecord rec;
  bool dirty = false;
  std::set<size_t> pending_written;  // lists whose Pending marks are stored
  // Waiting for a state of the cluster that passes (a CRD to be established,
  // a namespace to finish terminating): since when, and at which step.
  std::optional<Clock::Time> settling_since;
  size_t settling_step = 0;
  std::string note;      // why a delete left the object in place
  std::vector<std::string> warnings;  // what the step's apply left out (Warn field validation)
  int64_t generation = 0;             // what the step's apply made of the object's metadata.generation
  std::string wait_why;  // what a discovered Endpoints waits for
  std::optional<std::vector<PlannedStep>> planned;  // the plan as first built
  std::shared_ptr<ClusterTarget> target;
  std::string failure;  // why it finished unsuccessfully, kept for its span (traced events only)
  // The state each resource reached in this event (kDeployedStates index):
  // what eco_rsync_event_resources counts for it. Emptied when it finishes.
  std::unordered_map<std::string, uint8_t> marked;
};

// How a task's end reaches its event: the one call upward.
class TaskReport {
 public:
  virtual ~TaskReport() = default;
  // `own_failure`: the cluster failed (the event fails), rather than the
  // task being cut short by a cancel.
  virtual void TaskFinished(Task* t, bool ok, const std::string& msg, bool own_failure) = 0;
};

// What is on each cluster already, for the ownership check before a first
// apply: one metadata-only list per cluster, kind and namespace, shared by
// the event's apps there. A read per object doubled a first deploy's
// requests. A namespace holding more than kMaxListed objects of a kind is
// not kept (its objects are read one by one), which bounds the memory. A
// listing older than kFresh is made again: an app that waited for another
// checks what is there now, as a read just before its applies would.
class OwnerListings {
 public:
  static constexpr size_t kMaxListed = 100;
  static constexpr Clock::Duration kFresh = std::chrono::seconds(10);
  struct Marks {
    std::string owner, context;  // the owner annotation, the context label
    bool deleting = false;       // a deletionTimestamp is set
  };
  struct Listing {
    bool complete = false;  // false: over kMaxListed, read objects one by one
    std::unordered_map<std::string, Marks> objects;  // by name
  };
  using Lister = std::function<Result<Listing>()>;
  // `key`'s listing, made by `list` unless one made since `now - kFresh`
  // is kept (a failure is not kept). Callers of one key wait for the first.
  Result<std::shared_ptr<const Listing>> Get(const std::string& key, Clock::Time now, const Lister& list);

 private:
  struct Slot {
    std::mutex mu;
    std::shared_ptr<const Listing> listing;  // guarded by mu
    Clock::Time at{};                        // guarded by mu: when it was listed
  };
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;  // guarded by mu_
};

// What an event gives its tasks: its facts (fixed once it starts), the
// objects prepared once for all its clusters, the records read once per
// app, and whether it was cancelled.
struct EventData {
  EventData() = default;
  EventData(const EventData&) = delete;
  EventData& operator=(const EventData&) = delete;
  ~EventData();  // its resources leave eco_rsync_event_resources

  std::string id, type, other, status_ctx, fence;
  int64_t seq = 0;                 // the event's key under events/
  appcontext::EventRecord record;  // as queued
  std::string owner;           // appcontext::OwnerOf(meta)
  std::string replaced_owner;  // an update from another DIG (migrate): its objects are this one's
  std::set<std::string> only;  // resync: the clusters (keys) it re-applies to; empty = all
  trace::SpanContext trace;    // the event's span when traced
  store::Revision created = 0;
  bool other_complete = false;  // update: `other` finished deploying everywhere
  appcontext::Meta meta;
  std::map<std::string, std::shared_ptr<appcontext::AppPlan>> plans, other_plans;
  std::map<std::string, std::unordered_map<std::string, appcontext::ClusterRef>> other_index;  // app -> key -> ref
  std::optional<appcontext::Meta> other_meta;  // update: the replaced context's, when it exists
  TaskReport* report = nullptr;

  std::array<std::atomic<int64_t>, 4> marked{};  // resources by state, as in the gauge

  std::mutex prep_mu;
  std::map<std::pair<std::string, int>, std::shared_ptr<const PreparedSet>> prepared, other_prepared;  // prep_mu
  std::map<std::string, std::unordered_map<std::string, appcontext::DeployedRecord>> records;       // prep_mu
  std::map<std::string, uint64_t> published;  // prep_mu: agent clusters' revision of this event
  OwnerListings owners;
  // prep_mu: app -> cluster key -> ref, built by the first publish (fixed after)
  std::map<std::string, std::unordered_map<std::string, appcontext::ClusterRef>> index;

  std::mutex mu;
  Abort abort = Abort::kNone;  // guarded by mu
  std::string abort_msg;       // guarded by mu
  std::set<Task*> waiting;     // guarded by mu
  // Owned here, not by the event: a stale timer of a task may run after
  // the event ended, and finds its task.
  std::vector<std::unique_ptr<Task>> tasks;  // guarded by mu
  // The cancel message when cancelled.
  std::optional<std::string> Cancelled() {
    std::lock_guard<std::mutex> g(mu);
    if (abort == Abort::kNone) return std::nullopt;
    return abort_msg;
  }
};

// A write that holds only while this replica holds the context's lock
// (`fence`): kLost when the lock is gone, kError when the store failed.
enum class Write { kOk, kLost, kError };
Write Fenced(store::Store& st, const std::string& fence, std::vector<store::Compare> cmp, std::vector<store::Op> ops);

// Runs tasks on the executor. One per rsync instance; holds no per-event state.
class TaskRunner {
 public:
  // `agents`: how agent clusters are reached (null: every cluster is dialled).
  TaskRunner(store::Store& st, const Options& opt, Clock& clock, Random& random, Executor& exec,
             Delivery& delivery, Connectivity& connectivity, AgentTasks* agents = nullptr)
      : st_(st),
        opt_(opt),
        clock_(clock),
        random_(random),
        exec_(exec),
        delivery_(delivery),
        conn_(connectivity),
        agents_(agents) {}

  void Start(const std::shared_ptr<EventData>& ev, Task* t);
  // Cancels the event: waiting tasks run at once to their end. The first
  // reason wins, except that a shutdown overrides any.
  void Cancel(const std::shared_ptr<EventData>& ev, Abort why, const std::string& msg);

 private:
  void Run(const std::shared_ptr<EventData>& ev, Task* t);
  // On an agent cluster (agent_tasks.cc).
  void RunRemote(const std::shared_ptr<EventData>& ev, Task* t);
  // The steps from t->next on; returns when the task ended or waits.
  void RunSteps(const std::shared_ptr<EventData>& ev, Task* t);
  // false: the task ended or waits (the caller returns).
  bool MarkPending(const std::shared_ptr<EventData>& ev, Task* t, const Step& s);
  bool Answered(const std::shared_ptr<EventData>& ev, Task* t, const Step& s);
  // A passing state of the cluster: true when the task waits for it
  // (scheduled); `st` becomes the failure once the wait is too long.
  bool Settling(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, Status& st, bool& not_ready);
  bool Prepare(const std::shared_ptr<EventData>& ev, Task* t);
  Status Build(const std::shared_ptr<EventData>& ev, Task* t);
  Result<std::shared_ptr<const PreparedSet>> PreparedFor(const std::shared_ptr<EventData>& ev, bool other,
                                                         const std::string& app, const appcontext::ClusterRef& c);
  Status LoadRecord(const std::shared_ptr<EventData>& ev, Task* t);
  Status DoStep(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, bool* not_ready);
  Status Apply(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, const std::string& ns, bool shared,
               bool* not_ready);
  // One server-side apply; under Warn field validation, refused for fields
  // the cluster's schema does not declare, once more without them.
  Status ApplyObject(const EventData& ev, Task* t, const nlohmann::json& obj, const ApplyRequest& req);
  Status Delete(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, const std::string& ns, bool shared);
  Status Wait(Task* t, const Step& s, const std::string& ns, bool* not_ready);
  // A discovering Endpoints (appcontext::kDiscoverAnnotation) with the
  // addresses its server clusters answer; Waiting until they have them.
  Result<nlohmann::json> Discovered(Task* t, const nlohmann::json& endpoints);
  Status WriteRecord(const std::shared_ptr<EventData>& ev, Task* t);
  // Writes the record; false (and the task ended or rescheduled) when it
  // could not. `reschedule`: a store error waits retry_base and resumes.
  bool Written(const std::shared_ptr<EventData>& ev, Task* t, bool reschedule);
  void Mark(EventData& ev, Task* t, const std::string& name, appcontext::ResourceDeployed state);
  void Retry(const std::shared_ptr<EventData>& ev, Task* t, const Status& why);
  void Schedule(const std::shared_ptr<EventData>& ev, Task* t, Clock::Duration delay);
  // Marks the task waiting and returns its wake-up generation; nullopt
  // when the event was cancelled (the task is posted to end at once).
  std::optional<uint64_t> Park(const std::shared_ptr<EventData>& ev, Task* t);
  void Finish(const std::shared_ptr<EventData>& ev, Task* t, bool ok, const std::string& msg, bool own_failure);

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  Random& random_;
  Executor& exec_;
  Delivery& delivery_;
  Connectivity& conn_;
  AgentTasks* agents_;
};

}  // namespace eco::rsync
