// Transaction rules both backends share (internal to src/store).
#pragma once

#include <vector>

#include "store/store.h"

namespace eco::store {

// etcd's rule for one branch of a transaction: a key is put at most once and
// is not also deleted (by key or by prefix) in the same branch.
Status ValidateTxnBranch(const std::vector<Op>& ops);

// Whether `op` holds for a three-way comparison result (<0, 0, >0).
bool CompareHolds(Compare::Op op, int cmp);

}  // namespace eco::store
