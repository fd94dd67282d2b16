// The store as one rsync process sees it in the simulation: the real
// embedded store underneath, with three differences that keep a run
// deterministic and let a test kill the process:
//  - watches never report (rsync then finds work by its lock_retry looks,
//    which are timers on the fake clock, not by a store thread's timing);
//  - the lease is kept alive by timers on the fake clock;
//  - Kill() makes every call fail as a dead process's would, and stops the
//    keep-alives without revoking: the lease ends at its deadline, when a
//    timer revokes it as the store's reaper would (at the same virtual
//    instant, but inside the clock's step rather than on another thread).
#pragma once

#include <atomic>
#include <memory>

#include "fake_clock.h"
#include "forwarding_store.h"

namespace eco::sim {

class SimStore final : public testing::ForwardingStore {
 public:
  SimStore(store::Store& inner, testing::FakeClock& clock) : ForwardingStore(inner), clock_(clock) {}
  ~SimStore() override;

  void Kill();
  bool killed() const { return state_->killed; }

  Result<std::optional<store::KeyValue>> Get(const std::string& key) override;
  Result<store::Revision> Put(const std::string& key, const std::string& value, store::LeaseId lease) override;
  Result<int64_t> Delete(const std::string& key) override;
  Result<int64_t> DeletePrefix(const std::string& prefix) override;
  Result<store::RangeResult> Range(const std::string& prefix, const store::RangeOptions& opts) override;
  Result<store::TxnResult> Commit(const store::Txn& txn) override;
  Result<std::unique_ptr<store::WatchHandle>> Watch(const std::string& prefix, store::Revision from,
                                                    store::WatchCallbacks callbacks) override;
  Result<std::unique_ptr<store::LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override;

 private:
  // Shared with the keepers' timers, which may outlive a keeper's owner.
  struct State {
    std::atomic<bool> killed{false};
  };
  Status Dead() const;
  testing::FakeClock& clock_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace eco::sim
