// A Store held in memory: the agent's working copy of its cluster's
// desired state and records (the copy that lasts is in the cluster, see
// docs/agent.md), and thousands of them side by side in fleet mode, where
// an embedded SQLite store each (files, threads) would not fit. Revisions,
// transactions and ranges behave as store.h says; leases never expire
// (nothing here outlives its process) and there is no watch history: a
// watch is refused.
#pragma once

#include <memory>
#include <vector>

#include "store/store.h"

namespace eco::store {

std::unique_ptr<Store> NewMemoryStore();
// One holding `kvs` as they were (revisions and versions kept), at store
// revision `revision`: a snapshot taken with Range("") restored.
std::unique_ptr<Store> NewMemoryStore(std::vector<KeyValue> kvs, Revision revision);

}  // namespace eco::store
