// The facade: wires the layers (claims → context loop → event run →
// cluster task → steps → logic) on one executor, one clock and one client
// pool. docs/rsync.md describes them.
#include "rsync/rsync.h"

#include "catalog/catalog.h"
#include "k8s/client_pool.h"
#include "rsync/agent_tasks.h"
#include "rsync/claims.h"
#include "rsync/cluster_task.h"
#include "rsync/delivery.h"
#include "rsync/executor.h"
#include "rsync/metrics.h"

namespace eco::rsync {

class Rsync::Impl {
 public:
  Impl(store::Store& st, Options o)
      : st_(st),
        opt_(std::move(o)),
        clock_(opt_.clock != nullptr ? *opt_.clock : RealClock()),
        random_(opt_.random != nullptr ? *opt_.random : ProcessRandom()),
        pool_(st, opt_.client, opt_.client_factory),
        conn_(clock_, opt_.cluster_metrics) {
    RsyncMetrics::Get();  // the series exist from the first scrape on
    if (opt_.client_source) {
      delivery_ = PushDelivery(opt_.client_source);
    } else {
      delivery_ = PushDelivery([this](const std::string& p, const std::string& c) { return pool_.Get(p, c); });
    }
  }
  ~Impl() { Stop(); }

  Status Start() {
    std::lock_guard<std::mutex> g(mu_);
    if (claims_) return Conflict("rsync already started");
    if (opt_.executor != nullptr) {
      exec_ = opt_.executor;
    } else {
      own_exec_ = std::make_unique<Executor>(opt_.workers, clock_);
      exec_ = own_exec_.get();
    }
    agents_ = std::make_unique<AgentTasks>(st_, clock_);
    (void)agents_->Start();
    tasks_ = std::make_unique<TaskRunner>(st_, opt_, clock_, random_, *exec_, *delivery_, conn_, agents_.get());
    claims_ = std::make_shared<Claims>(st_, opt_, clock_, *exec_, *tasks_);
    Status s = claims_->Start();
    if (!s.ok()) {
      claims_.reset();
      tasks_.reset();
      agents_.reset();
      own_exec_.reset();
      exec_ = nullptr;
    }
    return s;
  }

  void Stop() {
    std::lock_guard<std::mutex> g(mu_);
    if (!claims_) return;
    claims_->Stop();
    if (agents_) agents_->Stop();
    // What is still queued (stale timers) is dropped with our executor; a
    // given one is its owner's to drop, before this object goes.
    if (own_exec_) own_exec_->Shutdown();
    claims_.reset();
    tasks_.reset();
    agents_.reset();
    own_exec_.reset();
    exec_ = nullptr;
    pool_.Clear();
  }

  size_t Active() const {
    std::lock_guard<std::mutex> g(mu_);
    return claims_ ? claims_->Active() : 0;
  }

  k8s::ClientPool& pool() { return pool_; }

 private:
  store::Store& st_;
  const Options opt_;
  Clock& clock_;
  Random& random_;
  k8s::ClientPool pool_;
  Connectivity conn_;
  std::unique_ptr<Delivery> delivery_;
  mutable std::mutex mu_;
  std::unique_ptr<Executor> own_exec_;  // guarded by mu_
  Executor* exec_ = nullptr;            // guarded by mu_: own_exec_ or Options::executor
  std::unique_ptr<AgentTasks> agents_;  // guarded by mu_
  std::unique_ptr<TaskRunner> tasks_;   // guarded by mu_
  std::shared_ptr<Claims> claims_;      // guarded by mu_ (its jobs hold weak references)
};

Rsync::Rsync(store::Store& store, Options options) : impl_(std::make_unique<Impl>(store, std::move(options))) {}
Rsync::~Rsync() { impl_->Stop(); }
Status Rsync::Start() { return impl_->Start(); }
void Rsync::Stop() { impl_->Stop(); }
size_t Rsync::ActiveContexts() const { return impl_->Active(); }
Result<std::shared_ptr<k8s::ClusterClient>> Rsync::ClusterClient(const std::string& provider,
                                                                 const std::string& cluster) {
  return impl_->pool().Get(provider, cluster);
}

}  // namespace eco::rsync
