#include "store/overlay_store.h"

#include <map>
#include <mutex>
#include <set>

#include "store/txn_rules.h"

namespace eco::store {
namespace {

bool HasPrefix(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

class OverlayStore final : public Store {
 public:
  OverlayStore(Store& base, Revision start) : base_(base), rev_(start) {}

  Result<std::optional<KeyValue>> Get(const std::string& key) override {
    std::lock_guard<std::mutex> g(mu_);
    return GetLocked(key);
  }

  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease) override {
    if (key.empty()) return Invalid("overlay store: key must not be empty");
    std::lock_guard<std::mutex> g(mu_);
    ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(key));
    ++rev_;
    PutLocked(key, value, lease, cur);
    return rev_;
  }

  Result<int64_t> Delete(const std::string& key) override {
    std::lock_guard<std::mutex> g(mu_);
    ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(key));
    if (!cur) return int64_t{0};
    ++rev_;
    local_[key] = std::nullopt;
    return int64_t{1};
  }

  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    std::lock_guard<std::mutex> g(mu_);
    ECO_ASSIGN_OR_RETURN(int64_t n, ErasePrefixLocked(prefix));
    if (n > 0) ++rev_;
    return n;
  }

  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts) override {
    std::lock_guard<std::mutex> g(mu_);
    ECO_ASSIGN_OR_RETURN(auto view, ViewLocked(prefix, opts.after));
    RangeResult out;
    out.revision = rev_;
    for (auto& [key, kv] : view) {
      ++out.count;
      if (opts.count_only) continue;
      if (opts.limit > 0 && static_cast<int64_t>(out.kvs.size()) >= opts.limit) {
        out.more = true;
        continue;
      }
      if (opts.keys_only) kv.value.clear();
      out.kvs.push_back(std::move(kv));
    }
    return out;
  }

  Result<TxnResult> Commit(const Txn& txn) override {
    ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.success));
    ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.failure));
    std::lock_guard<std::mutex> g(mu_);
    TxnResult r;
    r.succeeded = true;
    for (const Compare& c : txn.compares) {
      ECO_ASSIGN_OR_RETURN(bool holds, HoldsLocked(c));
      if (!holds) {
        r.succeeded = false;
        break;
      }
    }
    const auto& ops = r.succeeded ? txn.success : txn.failure;
    bool writes = false;
    for (const Op& op : ops) writes = writes || op.type != Op::Type::kGet;
    if (writes) ++rev_;
    for (const Op& op : ops) {
      switch (op.type) {
        case Op::Type::kPut: {
          ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(op.key));
          PutLocked(op.key, op.value, op.lease, cur);
          break;
        }
        case Op::Type::kDelete: {
          ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(op.key));
          if (cur) {
            local_[op.key] = std::nullopt;
            ++r.deleted;
          }
          break;
        }
        case Op::Type::kDeletePrefix: {
          ECO_ASSIGN_OR_RETURN(int64_t n, ErasePrefixLocked(op.key));
          r.deleted += n;
          break;
        }
        case Op::Type::kGet: {
          ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(op.key));
          r.gets.push_back(std::move(cur));
          break;
        }
      }
    }
    r.revision = rev_;
    return r;
  }

  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision, WatchCallbacks) override {
    return Invalid("overlay store: no watches (asked for " + prefix + ")");
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
    std::lock_guard<std::mutex> g(mu_);
    if (!leases_.Revoke(id)) return NotFound("lease not found");
    bool any = false;
    for (auto& [key, kv] : local_) {
      if (kv && kv->lease == id) {
        kv = std::nullopt;
        any = true;
      }
    }
    if (any) ++rev_;
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
  std::string Backend() const override { return base_.Backend(); }

 private:
  Result<std::optional<KeyValue>> GetLocked(const std::string& key) {
    if (auto it = local_.find(key); it != local_.end()) return it->second;
    return base_.Get(key);
  }

  // rev_ is already the revision of this write; `cur` is the key as seen before it.
  void PutLocked(const std::string& key, const std::string& value, LeaseId lease, const std::optional<KeyValue>& cur) {
    KeyValue kv;
    kv.key = key;
    kv.create_revision = cur ? cur->create_revision : rev_;
    kv.version = (cur ? cur->version : 0) + 1;
    kv.mod_revision = rev_;
    kv.value = value;
    kv.lease = lease;
    local_[key] = std::move(kv);
  }

  // Keys under `prefix` (after `after`) as the overlay sees them, ascending.
  Result<std::map<std::string, KeyValue>> ViewLocked(const std::string& prefix, const std::string& after) {
    RangeOptions bo;
    bo.after = after;
    ECO_ASSIGN_OR_RETURN(RangeResult base, base_.Range(prefix, bo));
    std::map<std::string, KeyValue> view;
    for (auto& kv : base.kvs) {
      std::string key = kv.key;
      view.emplace(std::move(key), std::move(kv));
    }
    auto it = after.empty() || after < prefix ? local_.lower_bound(prefix) : local_.upper_bound(after);
    for (; it != local_.end() && HasPrefix(it->first, prefix); ++it) {
      if (it->second) {
        view[it->first] = *it->second;
      } else {
        view.erase(it->first);
      }
    }
    return view;
  }

  Result<int64_t> ErasePrefixLocked(const std::string& prefix) {
    ECO_ASSIGN_OR_RETURN(auto view, ViewLocked(prefix, ""));
    for (const auto& [key, kv] : view) local_[key] = std::nullopt;
    return static_cast<int64_t>(view.size());
  }

  Result<bool> HoldsLocked(const Compare& c) {
    ECO_ASSIGN_OR_RETURN(auto cur, GetLocked(c.key));
    const KeyValue kv = cur ? *cur : KeyValue{};
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

  Store& base_;
  std::mutex mu_;
  // Written or deleted here (nullopt: deleted); guarded by mu_.
  std::map<std::string, std::optional<KeyValue>> local_;
  LocalLeases leases_;
  Revision rev_;
};

}  // namespace

Result<std::unique_ptr<Store>> NewOverlayStore(Store& base) {
  ECO_ASSIGN_OR_RETURN(Revision rev, base.CurrentRevision());
  return std::unique_ptr<Store>(std::make_unique<OverlayStore>(base, rev));
}

}  // namespace eco::store
