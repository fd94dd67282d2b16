// One event of one AppContext: reads its plans, opens apps as their
// dependencies are met, starts a cluster task per app and cluster, and
// cancels them when the context is stopped, a terminate is queued, an
// update supersedes it or a cluster fails (EMCO's errgroup). Nothing here
// blocks a thread: its checks are executor timers, and its end is a
// callback to the context loop that started it.
#pragma once

#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/trace.h"
#include "rsync/cluster_task.h"
#include "rsync/rollout_run.h"

namespace eco::rsync {

struct Outcome {
  bool aborted = false;  // leave the event pending
  bool ok = false;
  std::string message;
  // Written with the outcome, in its transaction: a rollout's rollback
  // event queued.
  std::vector<store::Op> extra;
};

struct EventSpec {
  std::string id, type, other;
  int64_t seq = 0;                 // its key under the context's events/
  appcontext::EventRecord record;  // as queued
  std::set<std::string> only;  // resync: the clusters (keys) it re-applies to; empty = all
  store::Revision created = 0;
  bool other_complete = false;
  std::string fence;  // the context's lock key: every write of the event depends on it
  std::optional<trace::SpanContext> parent;  // the trace of the request that queued it
};

class EventRun final : public TaskReport, public std::enable_shared_from_this<EventRun> {
 public:
  EventRun(store::Store& st, const Options& opt, Clock& clock, Executor& exec, TaskRunner& tasks)
      : st_(st), opt_(opt), clock_(clock), exec_(exec), tasks_(tasks) {}

  // Runs the event; `done` is called once with its outcome.
  void Start(EventSpec spec, std::function<void(Outcome)> done);
  // rsync stops or lost the context: the event ends without an outcome.
  void Shutdown(const std::string& why) { Cancel(Abort::kShutdown, why); }
  // Ends the event's waiting tasks for `why` (an agent told by its hub
  // that the event failed elsewhere or was stopped). Before Start has
  // loaded the event it is kept and applied then.
  void Cancel(Abort why, const std::string& message);
  void TaskFinished(Task* t, bool ok, const std::string& msg, bool own_failure) override;

 private:
  struct AppState {
    std::vector<appcontext::Dependency> deps;
    bool opened = false;
    size_t remaining = 0;  // clusters not yet done
    bool deployed = false;
    std::optional<Clock::Time> due;  // dependencies met: opens then
  };
  // Reads what the event needs; an error outcome when it cannot.
  std::optional<Outcome> Load();
  std::optional<Outcome> LoadOther(appcontext::Contexts& ctx);
  void Tick();
  void Look();  // opens what may open, ends the event when nothing is left
  // Look for a staged rollout; `judge`: also read gates and the operator's
  // control (on ticks, not after every task).
  void LookRollout(bool judge);
  void Checks();
  void OpenApps();
  // Apps whose dependencies are deployed, with the ones they need Ready.
  std::map<std::string, std::vector<std::string>> Deployable();
  bool ReadyOnAll(const std::string& app);
  bool TerminateQueued();
  void Complete();

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  Executor& exec_;
  TaskRunner& tasks_;
  EventSpec spec_;
  std::function<void(Outcome)> done_;
  trace::Span span_;
  std::shared_ptr<EventData> ev_;
  std::unique_ptr<RolloutRun> ro_;  // set by Load for a staged rollout, fixed after
  // A rollout judges its gates when a ready record or the operator's
  // control changes, not only every `poll`: eco adds little between a wave
  // being done and the next starting. Dropped when the event completes.
  std::vector<std::unique_ptr<store::WatchHandle>> ro_watches_;  // guarded by mu_
  std::shared_ptr<std::atomic<bool>> judge_soon_ = std::make_shared<std::atomic<bool>>(false);
  void WatchRollout();
  Clock::Time last_check_{};

  // Lock order: mu_ before ev_->mu.
  std::mutex mu_;
  size_t outstanding_ = 0;                    // guarded by mu_
  size_t unopened_ = 0;                       // guarded by mu_
  std::map<std::string, AppState> apps_;      // guarded by mu_
  std::string error_;                         // guarded by mu_: the first failure
  bool completed_ = false;                    // guarded by mu_
  bool started_ = false;                      // guarded by mu_: loaded and running
  Abort early_ = Abort::kNone;                // guarded by mu_: a Cancel came before that
  std::string early_why_;                     // guarded by mu_
};

}  // namespace eco::rsync
