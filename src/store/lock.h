// A distributed mutex built only on the Store interface, so it behaves the
// same on every backend (etcd's concurrency recipe):
//
//   * each contender puts `<name>/<lease as 16 hex digits>` attached to its
//     lease, only if that key is missing;
//   * the owner is the contender whose key has the smallest create_revision;
//   * a waiter watches for the deletion of the key just ahead of it, then
//     checks again.
//
// Whoever holds the lock loses it when its lease ends (expiry or revoke): the
// key goes with the lease and the next waiter takes over. A holder that must
// not act after losing the lock should keep its lease alive (Store::KeepAlive)
// and use revision() as a fencing token in its own compare-and-swaps.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::store {

// Proof of ownership; releases the lock when destroyed. Must not outlive the
// Store it came from.
class LockGuard {
 public:
  // `clock` paces the retries of Unlock.
  LockGuard(Store& store, std::string key, Revision revision, Clock& clock = RealClock())
      : store_(store), clock_(clock), key_(std::move(key)), revision_(revision) {}
  ~LockGuard();
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

  // Deletes our key. NotFound when the lock was already lost (lease gone).
  // While the store is unavailable it tries again for up to 15 s.
  // Calling it twice is a no-op the second time.
  Status Unlock();

  const std::string& key() const { return key_; }
  // create_revision of our key: grows with every acquisition of this lock.
  Revision revision() const { return revision_; }

 private:
  Store& store_;
  Clock& clock_;
  const std::string key_;
  const Revision revision_;
  bool released_ = false;
};

// Blocks until the lock `name` is ours, or `timeout` passes (Unavailable), or
// `lease` ends while waiting (NotFound). AlreadyExists when `lease` already
// holds or waits for this lock. `lease` must be alive and should be kept
// alive for as long as the lock is held. `timeout` and the waits between
// re-reads of the queue run on `clock`, which the guard keeps.
Result<std::unique_ptr<LockGuard>> Lock(Store& store, const std::string& name, LeaseId lease,
                                        std::chrono::milliseconds timeout,
                                        Clock& clock = RealClock());

// Takes the lock only if nobody holds or waits for it; Conflict otherwise.
Result<std::unique_ptr<LockGuard>> TryLock(Store& store, const std::string& name, LeaseId lease,
                                           Clock& clock = RealClock());

}  // namespace eco::store
