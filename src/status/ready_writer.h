// The ready monitor's writer (docs/status.md, "How the ready monitor is
// built"): ReadyRecords many per transaction, and per cluster whether it
// is unreachable (appcontext::UnreachableRecord) and when it was last heard
// from (appcontext::Seen). Holds what is still to write; writes when the
// monitor's write round calls it, on the store only (no clock of its own
// but the one stamping records, no thread).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "appcontext/records.h"
#include "common/clock.h"
#include "store/store.h"

namespace eco::status {

class ReadyWriter {
 public:
  struct Options {
    bool record_seen = false;
    std::string replica;
    std::chrono::milliseconds seen_every{60000};
  };
  // `st` and `clock` must outlive it.
  ReadyWriter(store::Store& st, Clock& clock, Options opts)
      : st_(st), clock_(clock), opts_(std::move(opts)) {}

  // A previous process's verdicts, confirmed or cleared by this one's watches.
  void LoadUnreachable();

  // Each returns true when a write is now due.
  //
  // The cluster ("provider+cluster") answered: its contact is recorded
  // when the last one is `seen_every` old.
  bool Heard(const std::string& cluster);
  // Marks a cluster (un)reachable; changes are recorded.
  bool SetReachable(const std::string& cluster, bool reachable, const std::string& error);
  // Whether any cluster is judged unreachable or awaits its record's deletion.
  bool AnyUnreachable() const;
  // Clusters no context watches any more are not judged: their verdicts go,
  // and (`contexts_went`) when they were last heard from.
  bool Forget(const std::set<std::string>& watched, bool contexts_went);
  // Whether reachability or contacts are still to write.
  bool Due() const;

  // Writes reachability and contacts; false when a write failed (what
  // failed is written with the next round).
  bool WriteClusters();
  // Writes the records (key, record), many per transaction; returns, per
  // record, whether it was written.
  std::vector<bool> WriteRecords(
      const std::vector<std::pair<std::string, appcontext::ReadyRecord>>& recs);

 private:
  bool WriteContacts();
  bool WriteReachability();

  struct Reach {
    bool unreachable = false;
    bool stored = false;  // the store has its UnreachableRecord
    std::string since, error;
  };
  store::Store& st_;
  Clock& clock_;
  const Options opts_;
  mutable std::mutex mu_;
  // Clusters judged unreachable, or whose record is still to be deleted;
  // empty when every cluster answers.
  std::map<std::string, Reach> reach_;  // guarded by mu_; by "provider+cluster"
  std::set<std::string> reach_dirty_;   // guarded by mu_
  // When each watched cluster's contact was last queued for writing, and
  // the contacts (their records) not written yet.
  std::unordered_map<std::string, Clock::Time> seen_at_;  // guarded by mu_
  std::map<std::string, std::string> seen_dirty_;         // guarded by mu_
};

}  // namespace eco::status
