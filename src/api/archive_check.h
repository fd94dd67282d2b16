// Checks uploaded chart and profile archives before they are stored, so a
// bad upload fails at once with a reason instead of at instantiation time.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace eco::api {

struct ArchiveLimits {
  size_t max_expanded_bytes = 512u << 20;  // total size of all entries
  size_t max_entries = 100000;
};

// OK when `data` is a gzip-compressed tar holding at least one entry, only
// regular files and directories, no absolute or ".." paths, within limits.
// Otherwise Invalid, with a message that says what is wrong.
Status CheckTgz(const std::string& data, const ArchiveLimits& limits);

}  // namespace eco::api
