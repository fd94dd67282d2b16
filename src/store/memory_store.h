// A Store held in memory: the agent's working copy of its cluster's
// desired state and records (the copy that lasts is in the cluster, see
// docs/agent.md), and thousands of them side by side in fleet mode, where
// an embedded SQLite store each (files, threads) would not fit. Revisions,
// transactions and ranges behave as store.h says; leases never expire
// (nothing here outlives its process) and there is no watch history: a
// watch is refused.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "store/store.h"

namespace eco::store {

// `on_write` (if any) is called after each write that moved the revision,
// on the writer's thread once the store's lock is released: in place of
// watches, it tells an owner that something changed.
std::unique_ptr<Store> NewMemoryStore(std::function<void()> on_write = nullptr);
// One holding `kvs` as they were (revisions and versions kept), at store
// revision `revision`: a snapshot taken with Range("") restored.
std::unique_ptr<Store> NewMemoryStore(std::vector<KeyValue> kvs, Revision revision,
                                      std::function<void()> on_write = nullptr);

}  // namespace eco::store
