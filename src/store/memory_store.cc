#include "store/memory_store.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "store/txn_rules.h"

namespace eco::store {
namespace {

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::function<void()> on_write) : on_write_(std::move(on_write)) {}
  MemoryStore(std::vector<KeyValue> kvs, Revision revision, std::function<void()> on_write)
      : on_write_(std::move(on_write)) {
    for (auto& kv : kvs) {
      rev_ = std::max(rev_, kv.mod_revision);
      std::string key = kv.key;
      kvs_.emplace(std::move(key), std::move(kv));
    }
    rev_ = std::max(rev_, revision);
  }

  Result<std::optional<KeyValue>> Get(const std::string& key) override {
    std::lock_guard<std::mutex> g(mu_);
    auto it = kvs_.find(key);
    if (it == kvs_.end()) return std::optional<KeyValue>();
    return std::optional<KeyValue>(it->second);
  }

  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease) override {
    if (key.empty()) return Invalid("memory store: key must not be empty");
    Told told{on_write_, true};
    std::lock_guard<std::mutex> g(mu_);
    ++rev_;
    PutLocked(key, value, lease);
    return rev_;
  }

  Result<int64_t> Delete(const std::string& key) override {
    Told told{on_write_};
    std::lock_guard<std::mutex> g(mu_);
    if (kvs_.count(key) == 0) return int64_t{0};
    told.wrote = true;
    ++rev_;
    kvs_.erase(key);
    return int64_t{1};
  }

  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    Told told{on_write_};
    std::lock_guard<std::mutex> g(mu_);
    const int64_t n = ErasePrefixLocked(prefix, /*bump=*/true);
    told.wrote = n > 0;
    return n;
  }

  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts) override {
    std::lock_guard<std::mutex> g(mu_);
    RangeResult out;
    out.revision = rev_;
    auto it = opts.after.empty() ? kvs_.lower_bound(prefix) : kvs_.upper_bound(opts.after);
    if (!opts.after.empty() && it != kvs_.end() && it->first < prefix) it = kvs_.lower_bound(prefix);
    for (; it != kvs_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      ++out.count;
      if (opts.count_only) continue;
      if (opts.limit > 0 && static_cast<int64_t>(out.kvs.size()) >= opts.limit) {
        out.more = true;
        continue;
      }
      KeyValue kv = it->second;
      if (opts.keys_only) kv.value.clear();
      out.kvs.push_back(std::move(kv));
    }
    return out;
  }

  Result<TxnResult> Commit(const Txn& txn) override {
    ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.success));
    ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.failure));
    Told told{on_write_};
    std::lock_guard<std::mutex> g(mu_);
    TxnResult r;
    r.succeeded = true;
    for (const Compare& c : txn.compares) {
      if (!Holds(c)) {
        r.succeeded = false;
        break;
      }
    }
    const auto& ops = r.succeeded ? txn.success : txn.failure;
    bool writes = false;
    for (const Op& op : ops) writes = writes || op.type != Op::Type::kGet;
    if (writes) ++rev_;
    told.wrote = writes;
    for (const Op& op : ops) {
      switch (op.type) {
        case Op::Type::kPut:
          PutLocked(op.key, op.value, op.lease);
          break;
        case Op::Type::kDelete:
          r.deleted += static_cast<int64_t>(kvs_.erase(op.key));
          break;
        case Op::Type::kDeletePrefix:
          r.deleted += ErasePrefixLocked(op.key, /*bump=*/false);
          break;
        case Op::Type::kGet: {
          auto it = kvs_.find(op.key);
          r.gets.push_back(it == kvs_.end() ? std::optional<KeyValue>() : std::optional<KeyValue>(it->second));
          break;
        }
      }
    }
    r.revision = rev_;
    return r;
  }

  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision, WatchCallbacks) override {
    return Invalid("memory store: no watches (asked for " + prefix + ")");
  }

  Result<LeaseId> GrantLease(std::chrono::seconds) override {
    std::lock_guard<std::mutex> g(mu_);
    return leases_.Grant();
  }
  Status KeepAliveOnce(LeaseId id) override {
    std::lock_guard<std::mutex> g(mu_);
    return leases_.Check(id);
  }
  Status RevokeLease(LeaseId id) override {
    Told told{on_write_};
    std::lock_guard<std::mutex> g(mu_);
    if (!leases_.Revoke(id)) return NotFound("lease not found");
    bool any = false;
    for (auto it = kvs_.begin(); it != kvs_.end();) {
      if (it->second.lease == id) {
        it = kvs_.erase(it);
        any = true;
      } else {
        ++it;
      }
    }
    if (any) ++rev_;
    told.wrote = any;
    return Status::Ok();
  }

  Result<std::unique_ptr<LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override {
    ECO_ASSIGN_OR_RETURN(LeaseId id, GrantLease(ttl));
    return std::unique_ptr<LeaseKeeper>(std::make_unique<LocalKeeper>(*this, id));
  }

  Result<Revision> CurrentRevision() override {
    std::lock_guard<std::mutex> g(mu_);
    return rev_;
  }
  std::string Backend() const override { return "memory"; }

 private:
  // Declared before the lock: tells of a write once the lock is released.
  struct Told {
    const std::function<void()>& fn;
    bool wrote = false;
    ~Told() {
      if (wrote && fn) fn();
    }
  };

  // rev_ is already the revision of this write.
  void PutLocked(const std::string& key, const std::string& value, LeaseId lease) {
    auto [it, fresh] = kvs_.try_emplace(key);
    KeyValue& kv = it->second;
    if (fresh) {
      kv.key = key;
      kv.create_revision = rev_;
      kv.version = 0;
    }
    kv.value = value;
    kv.mod_revision = rev_;
    ++kv.version;
    kv.lease = lease;
  }

  int64_t ErasePrefixLocked(const std::string& prefix, bool bump) {
    int64_t n = 0;
    for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = kvs_.erase(it);
      ++n;
    }
    if (bump && n > 0) ++rev_;
    return n;
  }

  bool Holds(const Compare& c) const {
    auto it = kvs_.find(c.key);
    const KeyValue none;
    const KeyValue& kv = it == kvs_.end() ? none : it->second;
    if (c.target == Compare::Target::kValue) return CompareHolds(c.op, kv.value.compare(c.value));
    int64_t v = 0;
    switch (c.target) {
      case Compare::Target::kModRevision: v = kv.mod_revision; break;
      case Compare::Target::kCreateRevision: v = kv.create_revision; break;
      case Compare::Target::kVersion: v = kv.version; break;
      case Compare::Target::kValue: break;
    }
    return CompareHolds(c.op, v < c.number ? -1 : (v > c.number ? 1 : 0));
  }

  const std::function<void()> on_write_;
  mutable std::mutex mu_;
  std::map<std::string, KeyValue> kvs_;
  LocalLeases leases_;
  Revision rev_ = 1;  // a fresh etcd's first revision
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore(std::function<void()> on_write) {
  return std::make_unique<MemoryStore>(std::move(on_write));
}
std::unique_ptr<Store> NewMemoryStore(std::vector<KeyValue> kvs, Revision revision, std::function<void()> on_write) {
  return std::make_unique<MemoryStore>(std::move(kvs), revision, std::move(on_write));
}

}  // namespace eco::store
