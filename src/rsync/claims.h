// Which AppContexts this replica works on: it holds a lease, watches the
// active contexts and the context locks, claims a context by taking its
// lock (appcontext::RsyncLockKey, on the lease) and runs a ContextLoop for
// it; a dead replica's contexts are taken over once its lease expires.
// Its looks are executor jobs: one every lock_retry, and one as soon as a
// watch says something changed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rsync/context_loop.h"

namespace eco::rsync {

class Claims final : public std::enable_shared_from_this<Claims> {
 public:
  Claims(store::Store& st, const Options& opt, Clock& clock, Executor& exec, TaskRunner& tasks)
      : st_(st), opt_(opt), clock_(clock), exec_(exec), tasks_(tasks) {}
  Claims(const Claims&) = delete;
  Claims& operator=(const Claims&) = delete;

  Status Start();
  // Ends every loop (their events stay pending) and releases the lease.
  // On a manual executor it runs the executor until they have ended.
  void Stop();
  size_t Active() const;

 private:
  void Wake();
  void Look();
  void LookOnce();
  void Periodic();
  Status Watches();
  void Claim();
  bool Claimable(const std::string& id);
  void Reap();
  void AbortAll();
  bool AllEnded(const std::map<std::string, std::shared_ptr<ContextLoop>>& loops) const;
  void Log(const std::string& m) {
    if (opt_.log) opt_.log(m);
  }

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  Executor& exec_;
  TaskRunner& tasks_;
  std::mutex look_mu_;  // one look at a time; guards the three below
  std::unique_ptr<store::LeaseKeeper> keeper_;
  std::unique_ptr<store::WatchHandle> watch_active_, watch_locks_;
  bool renewing_ = false;  // the lease was lost: a new one once every loop ended
  std::atomic<bool> watches_broken_{false};
  std::atomic<bool> look_again_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // a loop ended
  bool started_ = false;     // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  bool look_queued_ = false; // guarded by mu_: a Wake's look is posted
  std::map<std::string, std::shared_ptr<ContextLoop>> loops_;  // guarded by mu_
};

}  // namespace eco::rsync
