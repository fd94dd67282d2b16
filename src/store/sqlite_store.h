// Embedded backend of the Store interface: SQLite in WAL mode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "store/store.h"

namespace eco::store {

struct SqliteOptions {
  std::string dir;         // created if missing; the database is dir/eco.db
  bool sync_full = false;  // fsync every commit (power-loss safe); default survives kill -9
  // Revisions of the event log kept for watch replay; a watch from an older
  // revision ends with a "compacted" error. 0 keeps everything.
  int64_t keep_revisions = 100000;
};

Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts);

}  // namespace eco::store
