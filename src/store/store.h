// The one storage interface every eco component uses. Two backends implement
// it: embedded SQLite (default, one process) and etcd v3 (many processes).
// The semantics follow etcd's: a single global revision that every write
// bumps, per-key create/mod revisions and versions, transactions guarded by
// comparisons, watches that replay from a revision, and TTL leases.
//
// Keys and values are arbitrary byte strings. Values may be larger than
// etcd's request limit; backends handle that without the caller noticing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace eco::store {

using Revision = int64_t;
using LeaseId = int64_t;

struct KeyValue {
  std::string key;
  std::string value;
  Revision create_revision = 0;  // revision of the write that created the key
  Revision mod_revision = 0;     // revision of the last write to the key
  int64_t version = 0;           // number of writes since creation (1 after create)
  LeaseId lease = 0;             // 0 = no lease
};

struct RangeOptions {
  // At most this many keys; 0 = no limit.
  int64_t limit = 0;
  // Start strictly after this key (pagination: pass the last key seen).
  // Empty = from the start of the prefix.
  std::string after;
  bool keys_only = false;  // values left empty
  bool count_only = false;  // kvs left empty, only `count` filled
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // ascending by key
  bool more = false;          // true when `limit` cut the result short
  int64_t count = 0;          // keys matching the prefix after `after`, ignoring limit
  Revision revision = 0;      // store revision the read was served at
};

// One comparison of a transaction. Targets a single key; a missing key has
// create_revision == mod_revision == version == 0 and an empty value.
struct Compare {
  enum class Target { kModRevision, kCreateRevision, kVersion, kValue };
  enum class Op { kEqual, kNotEqual, kLess, kGreater };
  std::string key;
  Target target = Target::kModRevision;
  Op op = Op::kEqual;
  int64_t number = 0;  // for the revision/version targets
  std::string value;   // for kValue

  static Compare ModRevisionIs(std::string k, Revision r) {
    return {std::move(k), Target::kModRevision, Op::kEqual, r, {}};
  }
  static Compare Missing(std::string k) {
    return {std::move(k), Target::kCreateRevision, Op::kEqual, 0, {}};
  }
  static Compare Exists(std::string k) {
    return {std::move(k), Target::kCreateRevision, Op::kGreater, 0, {}};
  }
};

struct Op {
  enum class Type { kPut, kDelete, kDeletePrefix, kGet };
  Type type = Type::kPut;
  std::string key;     // key, or prefix for kDeletePrefix
  std::string value;   // for kPut
  LeaseId lease = 0;   // for kPut

  static Op Put(std::string k, std::string v, LeaseId l = 0) {
    return {Type::kPut, std::move(k), std::move(v), l};
  }
  static Op Delete(std::string k) { return {Type::kDelete, std::move(k), {}, 0}; }
  static Op DeletePrefix(std::string p) { return {Type::kDeletePrefix, std::move(p), {}, 0}; }
  static Op Get(std::string k) { return {Type::kGet, std::move(k), {}, 0}; }
};

struct Txn {
  std::vector<Compare> compares;  // all must hold for `success` to run
  std::vector<Op> success;
  std::vector<Op> failure;
};

struct TxnResult {
  bool succeeded = false;
  Revision revision = 0;  // store revision after the transaction
  // One entry per kGet op of the branch that ran, in order; nullopt = missing.
  std::vector<std::optional<KeyValue>> gets;
  // Keys removed by kDelete/kDeletePrefix ops of the branch that ran.
  int64_t deleted = 0;
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // for kDelete: key and mod_revision (the deleting revision) only
};

// Receives events in revision order, batched by revision. Called on a
// backend thread; must not block for long. A non-ok status ends the watch
// and is the last call: NotFound when the start revision was compacted
// (the message says so), Unavailable when the store closed or failed.
struct WatchCallbacks {
  std::function<void(const std::vector<WatchEvent>&)> on_events;
  std::function<void(const Status&)> on_error;
};

// Cancels the watch when destroyed; after destruction no callback runs.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
};

// Keeps a lease alive in the background until destroyed, then revokes it.
// `alive()` turns false once a keep-alive finds the lease gone: whatever it
// guarded is no longer ours.
class LeaseKeeper {
 public:
  virtual ~LeaseKeeper() = default;
  virtual LeaseId id() const = 0;
  virtual bool alive() const = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Result<std::optional<KeyValue>> Get(const std::string& key) = 0;
  // Returns the revision of the write.
  virtual Result<Revision> Put(const std::string& key, const std::string& value,
                               LeaseId lease = 0) = 0;
  // Returns how many keys were deleted (0 or 1).
  virtual Result<int64_t> Delete(const std::string& key) = 0;
  virtual Result<int64_t> DeletePrefix(const std::string& prefix) = 0;
  // All keys starting with `prefix`, ascending.
  virtual Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts = {}) = 0;
  virtual Result<TxnResult> Commit(const Txn& txn) = 0;

  // Events for keys under `prefix` with revision >= `from_revision`
  // (0 = only changes after the call).
  virtual Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix,
                                                     Revision from_revision,
                                                     WatchCallbacks callbacks) = 0;

  virtual Result<LeaseId> GrantLease(std::chrono::seconds ttl) = 0;
  virtual Status KeepAliveOnce(LeaseId id) = 0;  // NotFound if expired/revoked
  virtual Status RevokeLease(LeaseId id) = 0;    // deletes the keys attached to it
  // Grants a lease and keeps it alive from a background thread.
  virtual Result<std::unique_ptr<LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) = 0;

  // Current store revision.
  virtual Result<Revision> CurrentRevision() = 0;
  // A short name for logs and metrics: "sqlite" or "etcd".
  virtual std::string Backend() const = 0;
};

// The smallest key greater than every key with this prefix ("" if none),
// i.e. etcd's range_end for a prefix.
std::string PrefixEnd(const std::string& prefix);

// Opens a store from a URL:
//   sqlite:///path/to/dir or a plain directory path  -> embedded store
//   etcd://host:port[,host:port...]                  -> etcd v3
// Lease time runs on `clock` and lease ids / blob nonces draw from
// `random` (both must outlive the store); the first form uses the machine's.
Result<std::unique_ptr<Store>> Open(const std::string& url, Clock& clock, Random& random);
Result<std::unique_ptr<Store>> Open(const std::string& url);

// The embedded store's directory a URL names ("" for etcd or a bad URL).
std::string EmbeddedDir(const std::string& url);

}  // namespace eco::store
