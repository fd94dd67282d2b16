#include "sim_store.h"

namespace eco::sim {
namespace {

class NoWatch final : public store::WatchHandle {};

// Keeps the lease alive every ttl/3 of virtual time; after a kill it stops
// and revokes the lease at its deadline.
class TimerKeeper final : public store::LeaseKeeper {
 public:
  TimerKeeper(store::Store& inner, testing::FakeClock& clock, store::LeaseId id, std::chrono::seconds ttl,
              std::shared_ptr<std::atomic<bool>> killed)
      : s_(std::make_shared<Shared>(inner, clock, id, ttl, std::move(killed))) {
    s_->deadline = clock.Now() + ttl;
    Arm(s_);
  }
  ~TimerKeeper() override {
    s_->clock.Cancel(s_->timer.load());
    // A live process revokes its lease as it ends; a killed one cannot:
    // its lease ends at its deadline.
    if (!*s_->killed) {
      (void)s_->inner.RevokeLease(s_->id);
      return;
    }
    auto s = s_;
    s->clock.At(s->deadline, [s] { (void)s->inner.RevokeLease(s->id); });
  }
  store::LeaseId id() const override { return s_->id; }
  bool alive() const override { return s_->alive && !*s_->killed; }

 private:
  struct Shared {
    Shared(store::Store& i, testing::FakeClock& c, store::LeaseId l, std::chrono::seconds t,
           std::shared_ptr<std::atomic<bool>> k)
        : inner(i), clock(c), id(l), ttl(t), killed(std::move(k)) {}
    store::Store& inner;
    testing::FakeClock& clock;
    const store::LeaseId id;
    const std::chrono::seconds ttl;
    std::shared_ptr<std::atomic<bool>> killed;
    std::atomic<bool> alive{true};
    std::atomic<Clock::TimerId> timer{0};
    Clock::Time deadline;  // touched by its timers only (the clock's one stepping thread)
  };
  static void Arm(const std::shared_ptr<Shared>& s) {
    std::weak_ptr<Shared> w = s;
    s->timer = s->clock.After(s->ttl / 3, [w] {
      auto s = w.lock();
      if (!s) return;
      if (*s->killed) {
        // Dead: nothing refreshes it; it ends at its deadline.
        s->timer = s->clock.At(s->deadline, [w] {
          if (auto s = w.lock()) (void)s->inner.RevokeLease(s->id);
        });
        return;
      }
      if (!s->inner.KeepAliveOnce(s->id).ok()) {
        s->alive = false;
        return;
      }
      s->deadline = s->clock.Now() + s->ttl;
      Arm(s);
    });
  }
  std::shared_ptr<Shared> s_;
};

}  // namespace

SimStore::~SimStore() = default;

void SimStore::Kill() { state_->killed = true; }

Status SimStore::Dead() const {
  // Not Unavailable: nothing in a dead process waits and tries again.
  return Internal("simulated process killed");
}

Result<std::optional<store::KeyValue>> SimStore::Get(const std::string& key) {
  if (killed()) return Dead();
  return ForwardingStore::Get(key);
}
Result<store::Revision> SimStore::Put(const std::string& key, const std::string& value, store::LeaseId lease) {
  if (killed()) return Dead();
  return ForwardingStore::Put(key, value, lease);
}
Result<int64_t> SimStore::Delete(const std::string& key) {
  if (killed()) return Dead();
  return ForwardingStore::Delete(key);
}
Result<int64_t> SimStore::DeletePrefix(const std::string& prefix) {
  if (killed()) return Dead();
  return ForwardingStore::DeletePrefix(prefix);
}
Result<store::RangeResult> SimStore::Range(const std::string& prefix, const store::RangeOptions& opts) {
  if (killed()) return Dead();
  return ForwardingStore::Range(prefix, opts);
}
Result<store::TxnResult> SimStore::Commit(const store::Txn& txn) {
  if (killed()) return Dead();
  return ForwardingStore::Commit(txn);
}
Result<std::unique_ptr<store::WatchHandle>> SimStore::Watch(const std::string&, store::Revision,
                                                            store::WatchCallbacks) {
  if (killed()) return Dead();
  return std::unique_ptr<store::WatchHandle>(std::make_unique<NoWatch>());
}

Result<std::unique_ptr<store::LeaseKeeper>> SimStore::KeepAlive(std::chrono::seconds ttl) {
  if (killed()) return Dead();
  ECO_ASSIGN_OR_RETURN(store::LeaseId id, inner_->GrantLease(ttl));
  auto killed = std::shared_ptr<std::atomic<bool>>(state_, &state_->killed);
  return std::unique_ptr<store::LeaseKeeper>(std::make_unique<TimerKeeper>(*inner_, clock_, id, ttl, killed));
}

}  // namespace eco::sim
