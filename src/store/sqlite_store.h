// Embedded backend of the Store interface: SQLite in WAL mode, for one
// process (a second store on the same directory is refused with Unavailable).
//
// What it adds to store.h:
//   * Durability: an acknowledged write survives kill -9 of the process;
//     with sync_full it also survives power loss.
//   * Revisions start at 1 like a fresh etcd; each write that changes a key
//     is exactly one revision, including after a reopen.
//   * Watch history: the event log keeps the last `keep_revisions`
//     revisions. A watch from an older revision ends with on_error(NotFound,
//     "... compacted ..."): re-list, then watch from the list's revision.
//   * Leases after a reopen restart their full TTL counted from the open
//     (nobody could keep them alive while the process was down; etcd
//     likewise refreshes leases on a leader change).
//   * No value size limit beyond SQLite's 1 GB.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "store/store.h"

namespace eco::store {

struct SqliteOptions {
  std::string dir;         // created if missing; the database is dir/eco.db
  bool sync_full = false;  // fsync every commit (power-loss safe); default survives kill -9
  // Revisions of the event log kept for watch replay; a watch from an older
  // revision ends with a "compacted" error. 0 keeps everything.
  int64_t keep_revisions = 100000;
  // Lease expiry and keep-alive pacing run on `clock` (a test's fake clock
  // expires a lease by advancing it); lease ids come from `random`. Both
  // must outlive the store and its lease keepers.
  Clock* clock = &RealClock();
  Random* random = &ProcessRandom();
};

Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts);

}  // namespace eco::store
