// The agent's local half (docs/agent.md): it keeps the cluster's share of
// the hub's AppContexts in a store of its own and runs each published
// event there with rsync's event code (EventRun, TaskRunner) against the
// one cluster it sits in, so that what lands on the cluster is what push
// delivery would apply, object for object. What it records (deployed
// records, how each app of each event ended) is reported to the hub by
// the link; everything it holds is one snapshot the link persists in the
// cluster.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "appcontext/agent_log.h"
#include "common/clock.h"
#include "common/status.h"
#include "k8s/client.h"
#include "rsync/rsync.h"
#include "store/store.h"

namespace eco::rsync {
struct Outcome;
class Executor;
class EventRun;
class TaskRunner;
class Delivery;
class Connectivity;
}  // namespace eco::rsync

namespace eco::status {
class ReadyMonitor;
}  // namespace eco::status

namespace eco::k8s {
class WatchHub;
}  // namespace eco::k8s

namespace eco::agent {

struct RunnerOptions {
  std::string provider, cluster;  // the cluster it runs in, as the hub names it
  rsync::Options rsync;           // workers, retries, polls (client_source and on_task_end are the runner's)
  Clock* clock = nullptr;         // null: the machine's
  Random* random = nullptr;
  // null: its own pool of rsync.workers threads. Fleet mode shares one,
  // which must be shut down before the runner is destroyed.
  rsync::Executor* executor = nullptr;
  // The ready status: watched here with the ready monitor's rules and
  // reported (false: none is recorded, as with --ready-monitor=false).
  bool ready = true;
  std::chrono::milliseconds ready_scan{2000};
  // The watches' hub (null: the ready monitor's own). Fleet mode shares
  // one; it must outlive the runner.
  k8s::WatchHub* watch_hub = nullptr;
  // Drift repair (drift.cc): how often the applied objects the watches saw
  // change since are compared with what their events applied, and
  // re-applied where they were deleted or changed out of band (0: never).
  std::chrono::milliseconds drift_interval{10000};
  // How often every applied object is read and compared, whatever the
  // watches saw (jittered ±25 %; the first round after Start is one).
  // Without the ready monitor's watches every round is one.
  std::chrono::milliseconds drift_sweep{600000};
};

// One record or outcome to report, keyed as the hub stores it.
struct ReportItem {
  enum class Kind { kDeployed, kReady, kOutcome, kDrift };
  Kind kind = Kind::kDeployed;
  std::string status_context;  // records
  std::string context;         // outcomes
  int64_t event = 0;           // outcomes
  std::string app;
  std::string json;  // the record, or appcontext::ToJson(Outcome)
};

struct Report {
  uint64_t seq = 0;  // the local revision it reaches: ReportSince(seq) next time
  std::vector<ReportItem> items;
};

class Runner {
 public:
  Runner(RunnerOptions opt, std::shared_ptr<k8s::ClusterClient> cluster);
  ~Runner();  // Stop()
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Before Start: the state a Snapshot() gave (nothing: a fresh agent).
  Status Restore(std::string_view snapshot);
  std::string Snapshot();
  // The local revision of the last change (a snapshot is due when it moved).
  uint64_t Revision();
  // The revision the restored snapshot had (0: started fresh).
  uint64_t RestoredRevision() const { return restored_; }

  Status Start();  // resumes the events left pending
  void Stop();     // running events stay pending for the next start

  // The newest publication accepted (Hello's have_revision).
  uint64_t HaveRevision();
  // Takes a publication into the store and starts its event when the
  // context's earlier events are done. Older revisions than HaveRevision()
  // are ignored; Invalid when the publication contradicts itself.
  Status Accept(const appcontext::Publication& pub);

  // Records and outcomes written after local revision `after`.
  Result<Report> ReportSince(uint64_t after);
  // Called (from any thread, after each write to the runner's store) when
  // there is something new to report or persist: quick, and not calling
  // back into the runner under a lock the caller's writes may hold.
  void OnChange(std::function<void()> fn);

  // Events not yet finished here (tests, status).
  size_t Busy();
  // Objects re-applied because they had drifted, since the start.
  uint64_t DriftRepaired() const { return drift_repaired_.load(); }
  // Publications offered again that it already held (the hub resent them).
  uint64_t AlreadyHeld() const { return already_held_.load(); }
  // Compares once now (drift.cc), every applied object (`sweep`) or those
  // the watches saw change; returns how many objects it re-applied.
  Result<uint64_t> CheckDrift(bool sweep = true);
  // Applied objects whose change the watches reported, to compare next.
  size_t DriftSuspects();
  // Rounds that read the deployed records (a quiet round skips them).
  uint64_t DriftRoundsRead() const { return drift_rounds_read_.load(); }
  // Live objects drift repair has read from the cluster, since the start.
  uint64_t DriftReads() const { return drift_reads_.load(); }

 private:
  struct Ctx {
    bool running = false;
    int64_t seq = 0;  // of the event running
    std::shared_ptr<rsync::EventRun> run;
  };
  // A cancel from the hub for an event published before (Accept).
  Status AcceptCancel(const appcontext::Publication& pub);
  void Kick(const std::string& ctx);
  void Finished(const std::string& ctx, int64_t seq, const rsync::Outcome& o, bool last);
  void TaskEnded(const rsync::TaskEnd& e);
  void Changed();
  void ScheduleDrift();
  // The ready monitor's watches: a change of an object, a relist of a kind.
  void Watched(const std::string& api_version, const std::string& kind, const nlohmann::json& object, bool gone);
  // An event applied the object and the cluster answered with `rv`: it is
  // right at that version (its watch event needs no read back).
  void Applied(const std::string& av, const std::string& kind, const std::string& ns, const std::string& name,
               const std::string& rv);
  // `list_rv`: the list's resourceVersion ("" when unknown).
  void Relisted(const std::string& api_version, const std::string& kind, const std::vector<nlohmann::json>& items,
                const std::string& list_rv);

  RunnerOptions opt_;
  Clock& clock_;
  Random& random_;
  std::shared_ptr<k8s::ClusterClient> cluster_;
  std::unique_ptr<store::Store> st_;
  uint64_t restored_ = 0;
  std::unique_ptr<rsync::Executor> own_exec_;
  rsync::Executor* exec_ = nullptr;
  std::unique_ptr<rsync::Delivery> delivery_;
  std::unique_ptr<rsync::Connectivity> conn_;
  std::unique_ptr<rsync::TaskRunner> tasks_;
  // Stopped runs' task runners and what they use, on a shared pool: kept
  // to the end (Stop()).
  std::vector<std::shared_ptr<void>> retired_;
  std::unique_ptr<status::ReadyMonitor> ready_;

  std::mutex mu_;
  std::map<std::string, Ctx> ctxs_;  // guarded by mu_
  bool started_ = false;             // guarded by mu_
  // Its own lock: Changed() is called from store writes, some made under mu_.
  std::mutex change_mu_;
  std::function<void()> on_change_;  // guarded by change_mu_
  // Drift: live resourceVersion last found right of each object (by
  // apiVersion/kind/namespace/name), the objects (name+Kind, as records
  // name them) whose change the watches reported and those they cover at
  // all, when the next sweep is
  // due, and whether a check runs (Stop waits for it).
  std::mutex drift_run_mu_;  // one check at a time
  // The store's revision when a round between sweeps found nothing to
  // look at (guarded by drift_run_mu_): until the store or the watches
  // say otherwise, the next such round has nothing to look at either.
  store::Revision drift_quiet_rev_ = -1;
  std::atomic<uint64_t> drift_rounds_read_{0};
  std::atomic<uint64_t> drift_reads_{0};
  std::mutex drift_mu_;
  std::map<std::string, std::string> drift_seen_;  // guarded by drift_mu_
  std::set<std::string> drift_suspects_;           // guarded by drift_mu_
  // guarded by drift_mu_: the version a watch last reported each suspect
  // at (name+Kind), so that the apply's own answer can clear it.
  std::map<std::string, std::string> drift_suspect_rv_;
  std::set<std::string> drift_watched_;            // guarded by drift_mu_: name+Kind a watch reported
  Clock::Time next_sweep_{};                       // guarded by drift_mu_
  std::condition_variable drift_cv_;
  bool drift_busy_ = false;  // guarded by mu_
  std::atomic<uint64_t> drift_repaired_{0};
  std::atomic<uint64_t> already_held_{0};
};

}  // namespace eco::agent
