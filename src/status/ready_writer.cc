#include "status/ready_writer.h"

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "common/log.h"

namespace eco::status {

void ReadyWriter::LoadUnreachable() {
  auto stored = appcontext::ReadUnreachable(st_);
  if (!stored.ok()) return;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [key, rec] : *stored) reach_[key] = Reach{true, true, rec.since, rec.error};
}

bool ReadyWriter::Heard(const std::string& cluster) {
  if (!opts_.record_seen) return false;
  const Clock::Time now = clock_.Now();
  std::lock_guard<std::mutex> l(mu_);
  auto [it, fresh] = seen_at_.try_emplace(cluster, now);
  if (!fresh) {
    if (now - it->second < opts_.seen_every) return false;
    it->second = now;
  }
  seen_dirty_[cluster] =
      appcontext::ToJson(appcontext::Seen{catalog::NowRfc3339(clock_), opts_.replica}).dump();
  return true;
}

bool ReadyWriter::SetReachable(const std::string& cluster, bool reachable,
                               const std::string& error) {
  std::lock_guard<std::mutex> l(mu_);
  if (reachable) {
    auto it = reach_.find(cluster);
    if (it == reach_.end() || !it->second.unreachable) return false;
    it->second.unreachable = false;
    log::Write(log::Level::kInfo, "ready", "cluster reachable again",
               {log::Field("cluster", cluster)});
  } else {
    Reach& r = reach_[cluster];
    if (r.unreachable) return false;
    r = Reach{true, r.stored, catalog::NowRfc3339(clock_), error};
    log::Write(log::Level::kWarn, "ready", "cluster unreachable",
               {log::Field("cluster", cluster), log::Field("error", error)});
  }
  reach_dirty_.insert(cluster);
  return true;
}

bool ReadyWriter::AnyUnreachable() const {
  std::lock_guard<std::mutex> l(mu_);
  return !reach_.empty();
}

bool ReadyWriter::Forget(const std::set<std::string>& watched, bool contexts_went) {
  std::lock_guard<std::mutex> l(mu_);
  if (contexts_went)
    std::erase_if(seen_at_, [&](const auto& e) { return !watched.count(e.first); });
  for (auto& [cluster, r] : reach_) {
    if (r.unreachable && !watched.count(cluster)) {
      r.unreachable = false;
      reach_dirty_.insert(cluster);
    }
  }
  return !reach_dirty_.empty();
}

bool ReadyWriter::Due() const {
  std::lock_guard<std::mutex> l(mu_);
  return !reach_dirty_.empty() || !seen_dirty_.empty();
}

bool ReadyWriter::WriteClusters() {
  const bool reach_written = WriteReachability();
  return WriteContacts() && reach_written;
}

// A failed write is tried again with the next round unless a newer
// contact came meanwhile.
bool ReadyWriter::WriteContacts() {
  std::map<std::string, std::string> batch;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (seen_dirty_.empty()) return true;
    batch.swap(seen_dirty_);
  }
  appcontext::WriteSeen(st_, batch);
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [cluster, rec] : batch) seen_dirty_.try_emplace(cluster, std::move(rec));
  return batch.empty();
}

// Puts the record of a cluster that became unreachable, deletes that of
// one reached again.
bool ReadyWriter::WriteReachability() {
  store::Txn txn;
  std::vector<std::pair<std::string, bool>> now;  // cluster, record stored after the txn
  {
    std::lock_guard<std::mutex> l(mu_);
    if (reach_dirty_.empty()) return true;
    std::set<std::string> batch;
    batch.swap(reach_dirty_);
    for (const auto& c : batch) {
      auto it = reach_.find(c);
      if (it == reach_.end()) continue;
      const Reach& r = it->second;
      if (r.unreachable && !r.stored) {
        txn.success.push_back(store::Op::Put(
            appcontext::UnreachableKey(c),
            appcontext::ToJson(appcontext::UnreachableRecord{r.since, r.error}).dump()));
        now.emplace_back(c, true);
      } else if (!r.unreachable) {
        if (r.stored) txn.success.push_back(store::Op::Delete(appcontext::UnreachableKey(c)));
        now.emplace_back(c, false);
      }
    }
    if (txn.success.empty()) {
      for (const auto& [c, stored] : now) reach_.erase(c);
      return true;
    }
  }
  auto r = st_.Commit(txn);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [c, stored] : now) {
    auto it = reach_.find(c);
    if (it == reach_.end()) continue;
    if (!r.ok()) {
      reach_dirty_.insert(c);  // with the next round
      continue;
    }
    it->second.stored = stored;
    // Changed again while the store wrote: the next round writes that.
    if (it->second.unreachable != stored) {
      reach_dirty_.insert(c);
    } else if (!stored) {
      reach_.erase(it);
    }
  }
  return r.ok();
}

std::vector<bool> ReadyWriter::WriteRecords(
    const std::vector<std::pair<std::string, appcontext::ReadyRecord>>& recs) {
  std::vector<bool> written(recs.size(), false);
  constexpr size_t kPerTxn = 128;
  for (size_t i = 0; i < recs.size(); i += kPerTxn) {
    const size_t end = std::min(recs.size(), i + kPerTxn);
    store::Txn txn;
    for (size_t j = i; j < end; ++j) {
      txn.success.push_back(
          store::Op::Put(recs[j].first, appcontext::ToJson(recs[j].second).dump()));
    }
    const bool ok = st_.Commit(txn).ok();
    for (size_t j = i; j < end; ++j) written[j] = ok;
  }
  return written;
}

}  // namespace eco::status
