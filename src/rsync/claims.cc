#include "rsync/claims.h"
#include "rsync/metrics.h"

namespace eco::rsync {

Status Claims::Start() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (started_) return Conflict("rsync already started");
  }
  std::lock_guard<std::mutex> look(look_mu_);
  auto k = st_.KeepAlive(opt_.lease_ttl);
  if (!k.ok()) return k.status().Annotate("rsync lease");
  keeper_ = std::move(*k);
  ECO_RETURN_IF_ERROR(Watches());
  {
    std::lock_guard<std::mutex> g(mu_);
    started_ = true;
    stopping_ = false;
  }
  Wake();  // look at the active contexts at once
  Periodic();
  return Status::Ok();
}

void Claims::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  std::lock_guard<std::mutex> look(look_mu_);  // a look running now ends first
  watch_active_.reset();
  watch_locks_.reset();
  std::map<std::string, std::shared_ptr<ContextLoop>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    all.swap(loops_);
  }
  for (auto& [id, loop] : all) loop->Abort();
  // Each ends once its event's calls in flight to a cluster return.
  if (exec_.manual()) {
    while (!AllEnded(all) && exec_.RunReady() > 0) {
    }
  } else {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return AllEnded(all); });
  }
  keeper_.reset();  // revokes the lease: any lock left goes with it
  std::lock_guard<std::mutex> g(mu_);
  started_ = false;
}

bool Claims::AllEnded(const std::map<std::string, std::shared_ptr<ContextLoop>>& loops) const {
  for (const auto& [id, loop] : loops) {
    if (!loop->done()) return false;
  }
  return true;
}

size_t Claims::Active() const {
  std::lock_guard<std::mutex> g(mu_);
  return loops_.size();
}

void Claims::Wake() {
  {
    std::lock_guard<std::mutex> g(mu_);
    cv_.notify_all();
    if (stopping_ || look_queued_) return;
    look_queued_ = true;
  }
  std::weak_ptr<Claims> self = weak_from_this();
  exec_.Post([self] {
    if (auto c = self.lock()) {
      {
        std::lock_guard<std::mutex> g(c->mu_);
        c->look_queued_ = false;
      }
      c->Look();
    }
  });
}

// Contexts locked by another replica are looked at again every lock_retry
// (also when their lock key disappears, by watch).
void Claims::Periodic() {
  std::weak_ptr<Claims> self = weak_from_this();
  exec_.PostAfter(opt_.lock_retry, [self] {
    auto c = self.lock();
    if (!c) return;
    {
      std::lock_guard<std::mutex> g(c->mu_);
      if (c->stopping_) return;
    }
    c->Look();
    c->Periodic();
  });
}

void Claims::Look() {
  // Never blocks a worker: a look (or Stop) in progress looks again for us.
  std::unique_lock<std::mutex> look(look_mu_, std::try_to_lock);
  if (!look.owns_lock()) {
    look_again_ = true;
    return;
  }
  do {
    look_again_ = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopping_ || !started_) return;
    }
    LookOnce();
  } while (look_again_);
}

void Claims::LookOnce() {
  Reap();
  if (!keeper_->alive() && !renewing_) {
    // Whatever our locks guarded is no longer ours.
    Log("rsync: lease lost; abandoning this replica's contexts");
    AbortAll();
    renewing_ = true;
  }
  if (renewing_) {
    if (Active() > 0) return;  // a later look, once they ended
    auto k = st_.KeepAlive(opt_.lease_ttl);
    if (!k.ok()) return;
    keeper_ = std::move(*k);
    renewing_ = false;
  }
  if (watches_broken_) {
    Status s = Watches();
    if (!s.ok()) Log("rsync: " + s.ToString());
  }
  if (keeper_->alive()) Claim();
}

Status Claims::Watches() {
  watch_active_.reset();
  watch_locks_.reset();
  watches_broken_ = false;
  std::weak_ptr<Claims> self = weak_from_this();
  store::WatchCallbacks cb;
  cb.on_events = [self](const std::vector<store::WatchEvent>&) {
    if (auto c = self.lock()) c->Wake();
  };
  cb.on_error = [self](const Status&) {
    if (auto c = self.lock()) {
      c->watches_broken_ = true;
      c->Wake();
    }
  };
  auto a = st_.Watch(appcontext::ActivePrefix(), 0, cb);
  if (!a.ok()) return a.status().Annotate("rsync watch");
  // Lock keys going away (a replica finished or died) make their contexts claimable.
  store::WatchCallbacks lcb;
  lcb.on_events = [self](const std::vector<store::WatchEvent>& evs) {
    for (const auto& e : evs) {
      if (e.type != store::WatchEvent::Type::kDelete) continue;
      if (auto c = self.lock()) c->Wake();
      return;
    }
  };
  lcb.on_error = cb.on_error;
  auto l = st_.Watch(appcontext::RsyncLockPrefix(), 0, lcb);
  if (!l.ok()) return l.status().Annotate("rsync watch");
  watch_active_ = std::move(*a);
  watch_locks_ = std::move(*l);
  return Status::Ok();
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
    if (!Claimable(id)) {
      RsyncMetrics::Get().held_elsewhere.Increment();
      continue;
    }
    auto lock = store::TryLock(st_, appcontext::RsyncLockKey(id), keeper_->id(), clock_);
    if (!lock.ok()) continue;  // another replica was quicker (or the store hiccuped): next round
    std::weak_ptr<Claims> self = weak_from_this();
    auto loop = std::make_shared<ContextLoop>(st_, opt_, clock_, exec_, tasks_, id, std::move(*lock), [self] {
      if (auto c = self.lock()) c->Wake();
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
  for (auto it = loops_.begin(); it != loops_.end();) it = it->second->done() ? loops_.erase(it) : std::next(it);
}

void Claims::AbortAll() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [id, loop] : loops_) loop->Abort();
}

}  // namespace eco::rsync
