// One AppContext's event queue, EMCO's state machine: the first pending
// event is run or skipped by the state table (logic.h), an update waits
// until the contexts it replaces deploy nothing older, and each outcome is
// written with the context's status in one fenced transaction. The loop is
// a chain of executor jobs: a wait is a timer, not a thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "rsync/event_run.h"
#include "rsync/logic.h"
#include "store/lock.h"

namespace eco::rsync {

class ContextLoop final : public std::enable_shared_from_this<ContextLoop> {
 public:
  // `lock`: this replica's lock of the context; `ended` is called once the
  // loop ended and let the lock go.
  ContextLoop(store::Store& st, const Options& opt, Clock& clock, Executor& exec, TaskRunner& tasks, std::string id,
              std::unique_ptr<store::LockGuard> lock, std::function<void()> ended)
      : st_(st), opt_(opt), clock_(clock), exec_(exec), tasks_(tasks), id_(std::move(id)), lock_(std::move(lock)),
        ended_(std::move(ended)) {}

  void Start();
  // Ends the loop soon: a running event stops without an outcome (it stays
  // pending for whoever claims the context next).
  void Abort();
  bool done() const { return done_; }
  const std::string& id() const { return id_; }

 private:
  struct Pending;
  void Next();
  void Later();
  // false: the loop ended or waits.
  bool Decided(const Pending& p, Decision* d);
  // false: it waits for the contexts it replaces (or the loop ended).
  bool TakesOver(const Pending& p, std::vector<std::string>* chain, bool* from_complete);
  void Run(std::shared_ptr<Pending> p, bool from_complete, std::vector<std::string> chain);
  void Outcome(std::shared_ptr<Pending> p, const rsync::Outcome& o, std::vector<std::string> chain, int attempt);
  // The ops that queue update-delete on the replaced contexts; false when
  // a store read failed.
  bool CleanupOps(const Pending& p, const std::vector<std::string>& chain, std::vector<store::Compare>* cmp,
                  std::vector<store::Op>* ops);
  void LogOutcome(const Pending& p, const rsync::Outcome& o);
  void End();
  void Log(const std::string& m) {
    if (opt_.log) opt_.log(m);
  }

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  Executor& exec_;
  TaskRunner& tasks_;
  const std::string id_;
  std::unique_ptr<store::LockGuard> lock_;
  std::function<void()> ended_;
  std::string waiting_for_;  // the event whose wait was logged
  std::atomic<bool> abort_{false};
  std::atomic<bool> ending_{false};
  std::atomic<bool> done_{false};
  std::mutex step_mu_;  // held by Next and Outcome
  std::mutex mu_;
  std::shared_ptr<EventRun> run_;  // guarded by mu_
};

}  // namespace eco::rsync
