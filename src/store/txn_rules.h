// Transaction rules both backends share (internal to src/store).
#pragma once

#include <set>
#include <vector>

#include "store/store.h"

namespace eco::store {

// etcd's rule for one branch of a transaction: a key is put at most once and
// is not also deleted (by key or by prefix) in the same branch.
Status ValidateTxnBranch(const std::vector<Op>& ops);

// Whether `op` holds for a three-way comparison result (<0, 0, >0).
bool CompareHolds(Compare::Op op, int cmp);

// The leases of a store that lives in this process (memory, a plan's
// overlay): ids with no clock, alive until revoked. Guarded by the store's lock.
class LocalLeases {
 public:
  LeaseId Grant() {
    leases_.insert(++next_);
    return next_;
  }
  Status Check(LeaseId id) const { return leases_.count(id) != 0 ? Status::Ok() : NotFound("lease not found"); }
  bool Revoke(LeaseId id) { return leases_.erase(id) > 0; }

 private:
  std::set<LeaseId> leases_;
  LeaseId next_ = 0;
};

// The keeper of such a lease: revokes it when dropped.
class LocalKeeper final : public LeaseKeeper {
 public:
  LocalKeeper(Store& st, LeaseId id) : st_(st), id_(id) {}
  ~LocalKeeper() override { (void)st_.RevokeLease(id_); }
  LeaseId id() const override { return id_; }
  bool alive() const override { return st_.KeepAliveOnce(id_).ok(); }

 private:
  Store& st_;
  LeaseId id_;
};

}  // namespace eco::store
