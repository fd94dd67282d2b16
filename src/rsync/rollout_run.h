// The staged rollout of one event (the DIG's spec.rollout, carried by the
// event record): which clusters an instantiate or update may change now.
// Clusters go in waves; within a wave at most maxConcurrency at once; each
// runs its apps in dependency order on its own and counts as done only
// when every resource of this revision is Ready at the generation eco's
// apply gave it, for soakSeconds. Failures past maxFailures pause the
// rollout. Progress lives in the store (appcontext/rollout.h): a new owner
// of the context resumes the wave it was in without re-applying finished
// clusters.
//
// The event run owns one and calls it from its own jobs: Load once, Step
// on every tick and after each task end, TaskEnded for each task.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "appcontext/rollout.h"
#include "rsync/cluster_task.h"

namespace eco::rsync {

class RolloutRun {
 public:
  RolloutRun(store::Store& st, const Options& opt, Clock& clock, appcontext::RolloutStrategy strategy)
      : st_(st), opt_(opt), clock_(clock), strategy_(std::move(strategy)) {}

  // Starts the rollout of `ev`, or resumes the one recorded for it. An
  // error leaves the event pending (store) or fails it.
  Status Load(const std::shared_ptr<EventData>& ev);

  struct StepResult {
    std::vector<Task*> start;  // new tasks (already in ev->tasks), to be started
    bool cancel = false;       // the operator aborted, or it rolls back: cancel the event's tasks
    bool over = false;         // nothing more will be released
  };
  // Reads the operator's control, judges gates, timeouts and unreachable
  // clusters, moves through waves and opens what may open. Serialised.
  StepResult Step(const std::shared_ptr<EventData>& ev, bool judge);
  // A task of this rollout ended.
  void TaskEnded(const Task& t, bool ok, const std::string& msg, bool own_failure);
  // How the event ends once Step said `over` and no task runs.
  struct End {
    bool ok = true;
    std::string message;
  };
  End Outcome();
  bool aborted() {
    std::lock_guard<std::mutex> g(mu_);
    return aborted_;
  }
  bool rolling_back() {
    std::lock_guard<std::mutex> g(mu_);
    return rolling_back_;
  }
  // Rolling back: the ops that queue the event undoing what the rollout
  // changed, and record it in the progress (with the event's outcome, in
  // one transaction). After an update, the previous revision's context is
  // updated back on the clusters it changed, in reverse wave order and
  // under the same gate; after an instantiate, it is terminated there.
  Result<std::vector<store::Op>> RollbackOps();
  // The event ended another way (stopped, superseded, terminated): the
  // progress says so. Not on a shutdown: the next owner resumes it.
  void Closed(const std::shared_ptr<EventData>& ev, const std::string& why);

 private:
  enum class Phase { kQueued, kApplying, kVerifying, kDone, kFailed, kSkipped, kLeft };
  struct AppOn {
    bool opened = false, deployed = false;
    std::optional<Clock::Time> due;
  };
  struct ClusterRun {
    Phase phase = Phase::kQueued;
    size_t wave = 0;
    std::map<std::string, AppOn> apps;  // the apps placed on it
    appcontext::ClusterRef ref;         // as the first app's plan names it (provider, name)
    std::map<std::string, appcontext::ClusterRef> refs;  // app -> its ref (variants differ)
    Clock::Time released{};
    Clock::Duration offline{};       // time unreachable while waited for (not counted)
    std::optional<Clock::Time> unreachable_since;
    std::optional<Clock::Time> ready_since;
    std::string failure;             // a task's own failure, to classify (failed or left)
    std::string reason;
    bool persisted = false;          // its end is in the store
    bool touched = false;            // resumed in a wave that had started: it may hold part of the change
  };

  // A cluster as the gate looks at it, and what it found.
  struct Look {
    std::string key;
    Phase phase;
    std::vector<std::string> apps;
    bool classify = false;  // a task failed: still in the fleet?
  };
  struct Gate {
    bool passed = false;    // verifying: every app's objects Ready, this revision
    bool retrying = false;  // applying: the cluster does not answer
    std::string not_ready, retry_why;
    std::optional<bool> gone;  // classify: no longer registered
  };
  static std::string ClusterOf(const std::string& key, std::string* provider);
  bool Terminal(Phase p) const {
    return p == Phase::kDone || p == Phase::kFailed || p == Phase::kSkipped || p == Phase::kLeft;
  }
  static const char* PhaseName(Phase p);
  std::vector<appcontext::PlannedWave> Split(const std::set<std::string>& only);
  void StartWave(size_t w);
  void ReadControl();
  void Judge(const std::shared_ptr<EventData>& ev);
  Gate ReadGate(const std::shared_ptr<EventData>& ev, const Look& l);
  std::string AppGate(const std::shared_ptr<EventData>& ev, const std::string& app, const std::string& cluster);
  void Decide(ClusterRun& c, const Gate& gate, Clock::Time now);
  void Advance();
  std::vector<Task*> Open(const std::shared_ptr<EventData>& ev);
  bool ReadyOn(const std::shared_ptr<EventData>& ev, const std::string& app, const std::string& cluster);
  Status Persist(const std::shared_ptr<EventData>& ev);
  int64_t Failures() const;
  void SetState(const std::string& state, const std::string& reason);
  // Failures past the limit, or an abort, under onFailure rollback.
  void BeginRollback(const std::string& reason);
  void LogWave(const char* what, size_t w);

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  const appcontext::RolloutStrategy strategy_;
  std::string owner_, ctx_, fence_;

  std::mutex step_mu_;  // one Step at a time
  std::mutex mu_;       // the state below, shared with TaskEnded
  appcontext::RolloutProgress progress_;
  bool progress_dirty_ = false;
  std::map<std::string, ClusterRun> clusters_;  // by "provider+cluster"
  int64_t fleet_ = 0;
  bool aborted_ = false;
  bool over_ = false;
  bool rolling_back_ = false;
  std::string type_, other_;         // the event's type and the context an update replaces
  int64_t other_revision_ = 0;
  bool migrate_ = false;             // an update from another DIG: not rolled back automatically
  appcontext::RolloutControl control_;
};

}  // namespace eco::rsync
