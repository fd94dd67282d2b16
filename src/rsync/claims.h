// Which AppContexts this replica works on: it holds a lease, watches the
// active contexts and the context locks, claims a context by taking its
// lock (/eco/lock/rsync/<id>, on the lease) and runs a ContextLoop for it;
// a dead replica's contexts are taken over once its lease expires. One
// thread looks (on the clock); the loops run on the executor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rsync/context_loop.h"

namespace eco::rsync {

class Claims {
 public:
  Claims(store::Store& st, const Options& opt, Clock& clock, Executor& exec, TaskRunner& tasks)
      : st_(st), opt_(opt), clock_(clock), exec_(exec), tasks_(tasks) {}
  ~Claims() { Stop(); }
  Claims(const Claims&) = delete;
  Claims& operator=(const Claims&) = delete;

  Status Start();
  // Ends every loop (their events stay pending), releases the lease.
  void Stop();
  size_t Active() const;

 private:
  void Wake();
  void Manage();
  Status Watches();
  void Claim();
  bool Claimable(const std::string& id);
  void Reap();
  // Aborts every loop and waits until all have ended.
  void EndAll();
  void Log(const std::string& m) {
    if (opt_.log) opt_.log(m);
  }

  store::Store& st_;
  const Options& opt_;
  Clock& clock_;
  Executor& exec_;
  TaskRunner& tasks_;
  std::unique_ptr<store::LeaseKeeper> keeper_;  // manager thread (and Start/Stop) only
  std::unique_ptr<store::WatchHandle> watch_active_, watch_locks_;  // manager thread only
  std::atomic<bool> watches_broken_{false};
  std::thread manager_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;   // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  bool wake_ = false;      // guarded by mu_
  std::map<std::string, std::shared_ptr<ContextLoop>> loops_;  // guarded by mu_
};

}  // namespace eco::rsync
