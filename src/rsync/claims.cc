#include "rsync/claims.h"

namespace eco::rsync {

Status Claims::Start() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (started_) return Conflict("rsync already started");
  }
  auto k = st_.KeepAlive(opt_.lease_ttl);
  if (!k.ok()) return k.status().Annotate("rsync lease");
  keeper_ = std::move(*k);
  ECO_RETURN_IF_ERROR(Watches());
  {
    std::lock_guard<std::mutex> g(mu_);
    started_ = true;
    stopping_ = false;
    wake_ = true;  // look at the active contexts at once
  }
  manager_ = std::thread([this] { Manage(); });
  return Status::Ok();
}

void Claims::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (manager_.joinable()) manager_.join();
  watch_active_.reset();
  watch_locks_.reset();
  EndAll();
  keeper_.reset();  // revokes the lease: any lock left goes with it
  std::lock_guard<std::mutex> g(mu_);
  started_ = false;
}

size_t Claims::Active() const {
  std::lock_guard<std::mutex> g(mu_);
  return loops_.size();
}

void Claims::Wake() {
  {
    std::lock_guard<std::mutex> g(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

Status Claims::Watches() {
  watch_active_.reset();
  watch_locks_.reset();
  watches_broken_ = false;
  store::WatchCallbacks cb;
  cb.on_events = [this](const std::vector<store::WatchEvent>&) { Wake(); };
  cb.on_error = [this](const Status&) {
    watches_broken_ = true;
    Wake();
  };
  auto a = st_.Watch(appcontext::ActivePrefix(), 0, cb);
  if (!a.ok()) return a.status().Annotate("rsync watch");
  // Lock keys going away (a replica finished or died) make their contexts claimable.
  store::WatchCallbacks lcb;
  lcb.on_events = [this](const std::vector<store::WatchEvent>& evs) {
    for (const auto& e : evs) {
      if (e.type == store::WatchEvent::Type::kDelete) {
        Wake();
        return;
      }
    }
  };
  lcb.on_error = cb.on_error;
  auto l = st_.Watch(appcontext::RsyncLockPrefix(), 0, lcb);
  if (!l.ok()) return l.status().Annotate("rsync watch");
  watch_active_ = std::move(*a);
  watch_locks_ = std::move(*l);
  return Status::Ok();
}

void Claims::Manage() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopping_) {
    clock_.WaitFor(cv_, lk, opt_.lock_retry, [this] { return stopping_ || wake_; });
    wake_ = false;
    if (stopping_) break;
    lk.unlock();
    Reap();
    if (!keeper_->alive()) {
      // Whatever our locks guarded is no longer ours.
      Log("rsync: lease lost; abandoning this replica's contexts");
      EndAll();
      auto k = st_.KeepAlive(opt_.lease_ttl);
      if (k.ok()) keeper_ = std::move(*k);
    }
    if (watches_broken_) {
      Status s = Watches();
      if (!s.ok()) Log("rsync: " + s.ToString());
    }
    if (keeper_->alive()) Claim();
    lk.lock();
  }
}

// Held by another replica: only look. Queueing behind it would add and
// remove a key of ours, and every removal wakes the lock watches of all
// replicas, this one's too: they would keep trying without pause.
bool Claims::Claimable(const std::string& id) {
  store::RangeOptions held_opts;
  held_opts.keys_only = true;
  held_opts.limit = 1;
  auto held = st_.Range(appcontext::RsyncLockKey(id) + "/", held_opts);
  return held.ok() && held->kvs.empty();
}

void Claims::Claim() {
  store::RangeOptions ro;
  ro.keys_only = true;
  const std::string prefix = appcontext::ActivePrefix();
  auto r = st_.Range(prefix, ro);
  if (!r.ok()) {
    Log("rsync: listing active contexts: " + r.status().ToString());
    return;
  }
  for (const auto& kv : r->kvs) {
    std::string id = kv.key.substr(prefix.size());
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopping_) return;
      if (loops_.count(id)) continue;
    }
    if (!Claimable(id)) continue;
    auto lock = store::TryLock(st_, appcontext::RsyncLockKey(id), keeper_->id());
    if (!lock.ok()) continue;  // another replica was quicker (or the store hiccuped): next round
    auto loop = std::make_shared<ContextLoop>(st_, opt_, clock_, exec_, tasks_, id, std::move(*lock), [this] {
      Wake();
    });
    {
      std::lock_guard<std::mutex> g(mu_);
      loops_[id] = loop;
    }
    loop->Start();
  }
}

void Claims::Reap() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = loops_.begin(); it != loops_.end();) {
    it = it->second->done() ? loops_.erase(it) : std::next(it);
  }
}

void Claims::EndAll() {
  std::map<std::string, std::shared_ptr<ContextLoop>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    all.swap(loops_);
  }
  for (auto& [id, loop] : all) loop->Abort();
  // Each ends once its event's calls in flight to a cluster return.
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] {
    for (auto& [id, loop] : all) {
      if (!loop->done()) return false;
    }
    return true;
  });
}

}  // namespace eco::rsync
