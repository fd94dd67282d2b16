// The ready monitor's scan (docs/status.md, "How the ready monitor is
// built"): which contexts to watch, from the state records. Every DIG and
// logical cloud whose record says Instantiated or InstantiateStopped, and
// those Terminated (or TerminateStopped) whose AppContext has not finished
// terminating yet; the plan watched is the record's latest AppContext.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/status.h"
#include "store/store.h"

namespace eco::status {

// status context -> the AppContext whose plan is watched.
using WatchedContexts = std::map<std::string, std::string>;

// Reads the state records.
Result<WatchedContexts> ReadWatchedContexts(store::Store& st);

// Scans the state records, or (skip_unchanged) skips when the store's
// revision is where the last complete scan found it: nothing lifecycle or
// plan could have changed. Used by one scan at a time.
class ContextScan {
 public:
  ContextScan(store::Store& st, bool skip_unchanged) : st_(st), skip_unchanged_(skip_unchanged) {}
  // nullopt: skipped (or the store is down: nothing changes until it answers).
  std::optional<WatchedContexts> Scan();
  // The last Scan's result was acted on entirely: the next one may be skipped.
  void Completed() { scanned_rev_ = rev_; }

  // Read from any thread.
  uint64_t full_scans() const { return full_.load(); }
  uint64_t skipped_scans() const { return skipped_.load(); }

 private:
  store::Store& st_;
  const bool skip_unchanged_;
  std::optional<store::Revision> rev_, scanned_rev_;
  std::atomic<uint64_t> full_{0}, skipped_{0};
};

}  // namespace eco::status
