#include "store/lock.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

namespace eco::store {
namespace {

// A waiter re-reads the queue at least this often even if no event came:
// cheap insurance against a watch that silently stalls on some backend.
constexpr std::chrono::seconds kRecheckEvery{5};

// Fixed width, so no contender's key is a prefix of another's.
std::string LeaseHex(LeaseId lease) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(lease));
  return buf;
}

// Deletes our key only if it is still the one we created.
Status Release(Store& store, const std::string& key, Revision revision) {
  Txn txn;
  txn.compares.push_back(
      {key, Compare::Target::kCreateRevision, Compare::Op::kEqual, revision, {}});
  txn.success.push_back(Op::Delete(key));
  auto r = store.Commit(txn);
  if (!r.ok()) return r.status();
  if (!r->succeeded) return NotFound("lock key " + key + " is gone: its lease ended");
  return Status::Ok();
}

// A release the store could not take (etcd restarting, say) is tried again
// for a while: the key lives on a lease its process keeps alive, so a key
// left behind would hold the lock until the process ends. Deleting is
// guarded by the key's create revision, so trying again is safe.
Status ReleaseRetrying(Store& store, const std::string& key, Revision revision, Clock& clock) {
  constexpr auto kFor = std::chrono::seconds(15);
  const auto until = clock.Now() + kFor;
  auto pause = std::chrono::milliseconds(100);
  while (true) {
    Status st = Release(store, key, revision);
    if (!st.retryable() || clock.Now() + pause > until) return st;
    clock.SleepFor(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(1));
  }
}

struct Queue {
  bool self_present = false;
  std::optional<std::string> ahead;  // contender just before us; none = we own it
  Revision revision = 0;             // store revision the queue was read at
};

Result<Queue> ReadQueue(Store& store, const std::string& prefix, const std::string& key,
                        Revision mine) {
  RangeOptions opts;
  opts.keys_only = true;
  auto r = store.Range(prefix, opts);
  if (!r.ok()) return r.status();
  Queue q;
  q.revision = r->revision;
  Revision best = 0;
  for (const KeyValue& kv : r->kvs) {
    if (kv.key == key) {
      q.self_present = kv.create_revision == mine;
    } else if (kv.create_revision < mine && kv.create_revision > best) {
      best = kv.create_revision;
      q.ahead = kv.key;
    }
  }
  return q;
}

// Set by watch callbacks (backend thread), read by the waiting caller.
struct WaitState {
  std::mutex mu;
  std::condition_variable cv;
  bool deleted = false;         // guarded by mu
  std::optional<Status> error;  // guarded by mu
};

// Waits until `ahead` is deleted (true), the deadline or a recheck is due
// (false), or the watch fails (error).
Result<bool> WaitForDelete(Store& store, const std::string& ahead, Revision after,
                           Clock::Time deadline, Clock& clock) {
  auto st = std::make_shared<WaitState>();
  WatchCallbacks cb;
  cb.on_events = [st, ahead](const std::vector<WatchEvent>& events) {
    for (const WatchEvent& e : events) {
      if (e.type == WatchEvent::Type::kDelete && e.kv.key == ahead) {
        std::lock_guard lk(st->mu);
        st->deleted = true;
        st->cv.notify_all();
      }
    }
  };
  cb.on_error = [st](const Status& s) {
    std::lock_guard lk(st->mu);
    st->error = s;
    st->cv.notify_all();
  };
  // From just after the read of the queue: a delete in between is not missed.
  auto handle = store.Watch(ahead, after + 1, std::move(cb));
  if (!handle.ok()) return handle.status();
  std::unique_lock lk(st->mu);
  clock.WaitUntil(st->cv, lk, std::min(deadline, clock.Now() + kRecheckEvery),
                  [&] { return st->deleted || st->error.has_value(); });
  if (st->error) return *st->error;
  return st->deleted;
}

// `deadline` nullopt = try once.
Result<std::unique_ptr<LockGuard>> Acquire(Store& store, const std::string& name, LeaseId lease,
                                           std::optional<Clock::Time> deadline, Clock& clock) {
  if (name.empty()) return Invalid("lock: empty name");
  if (lease <= 0) return Invalid("lock: a lease is required");
  const std::string prefix = name + "/";
  const std::string key = prefix + LeaseHex(lease);

  Txn txn;
  txn.compares.push_back(Compare::Missing(key));
  txn.success.push_back(Op::Put(key, "", lease));
  auto put = store.Commit(txn);
  if (!put.ok()) return put.status().Annotate("lock " + name);
  if (!put->succeeded) {
    return AlreadyExists("lock " + name + ": lease " + LeaseHex(lease) +
                         " already holds or waits for it");
  }
  const Revision mine = put->revision;
  auto give_up = [&](Status why) {
    (void)ReleaseRetrying(store, key, mine, clock);
    return why;
  };

  while (true) {
    auto q = ReadQueue(store, prefix, key, mine);
    if (!q.ok()) return give_up(q.status().Annotate("lock " + name));
    if (!q->self_present) {
      return NotFound("lock " + name + ": our key vanished while waiting (lease ended)");
    }
    if (!q->ahead) return std::make_unique<LockGuard>(store, key, mine, clock);
    if (!deadline) return give_up(Conflict("lock " + name + " is held"));
    if (clock.Now() >= *deadline) {
      return give_up(Unavailable("lock " + name + ": timed out waiting"));
    }
    auto gone = WaitForDelete(store, *q->ahead, q->revision, *deadline, clock);
    if (!gone.ok()) return give_up(gone.status().Annotate("lock " + name + ": watch"));
  }
}

}  // namespace

LockGuard::~LockGuard() { (void)Unlock(); }

Status LockGuard::Unlock() {
  if (released_) return Status::Ok();
  Status st = ReleaseRetrying(store_, key_, revision_, clock_);
  // A transient failure leaves the guard armed so the caller may retry.
  if (st.ok() || st.code() == Code::kNotFound) released_ = true;
  return st;
}

Result<std::unique_ptr<LockGuard>> Lock(Store& store, const std::string& name, LeaseId lease,
                                        std::chrono::milliseconds timeout, Clock& clock) {
  return Acquire(store, name, lease, clock.Now() + timeout, clock);
}

Result<std::unique_ptr<LockGuard>> TryLock(Store& store, const std::string& name, LeaseId lease,
                                           Clock& clock) {
  return Acquire(store, name, lease, std::nullopt, clock);
}

}  // namespace eco::store
