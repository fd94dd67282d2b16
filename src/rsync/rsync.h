// rsync: takes sealed AppContexts to their clusters. It processes each
// context's event queue (instantiate, terminate, update, update-delete) with
// EMCO's state machine, one event at a time per context; within an event
// every app x cluster proceeds on its own on a bounded worker pool, and a
// cluster that does not answer is retried with exponential backoff without
// holding a worker. What it did is recorded per app and cluster in
// DeployedRecords (appcontext/records.h). Every replica on the same store
// works only on the contexts whose lock it holds (/eco/lock/rsync/<id>, on
// its lease); a dead replica's contexts are taken over once its lease expires.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/clock.h"
#include "k8s/client.h"
#include "k8s/client_pool.h"
#include "k8s/kubeconfig.h"
#include "store/store.h"

namespace eco::rsync {

class Executor;

// The client of a cluster by provider and name.
using ClientSource =
    std::function<Result<std::shared_ptr<k8s::ClusterClient>>(const std::string& provider, const std::string& cluster)>;

// How one app of one event ended on one cluster.
struct TaskEnd {
  std::string context;
  int64_t event = 0;  // the event's seq
  std::string app;
  std::string cluster;  // provider+name
  bool ok = false;
  std::string message;
  bool own_failure = false;  // the cluster failed, rather than a cancel
};

struct Options {
  // Threads that talk to clusters. Clusters waiting for a retry hold none.
  size_t workers = 16;
  // Retry delay for an unreachable cluster: base * 2^n up to cap, jittered
  // into [d/2, d].
  std::chrono::milliseconds retry_base{1000};
  std::chrono::milliseconds retry_cap{60000};
  // Retries of one cluster before its task fails; 0 = for as long as it takes.
  int max_retries = 0;
  // The lease under this replica's context locks.
  std::chrono::seconds lease_ttl{10};
  // How often contexts locked by another replica are tried again (also when
  // their lock key disappears).
  std::chrono::milliseconds lock_retry{2000};
  // How often a running event looks at the stop flag and for a queued
  // terminate, hook readiness is polled and Ready app dependencies checked.
  std::chrono::milliseconds poll{1000};
  // How long a cluster may stay in a state that passes before the app fails
  // there: a CRD not yet Established (its kinds not yet served), a namespace
  // still being deleted. Polled every `poll`; the cluster is not Retrying.
  std::chrono::milliseconds settle_timeout{300000};
  k8s::ClientOptions client;
  // Builds the client of a cluster (default: k8s::NewClusterClient). Tests
  // wrap the real client to count or fail requests.
  k8s::ClientFactory client_factory;
  // Where clusters' clients come from (null: from their stored kubeconfig
  // through the client pool). The agent passes its own cluster's client.
  ClientSource client_source;
  // Called as each app of an event ends on a cluster (the agent reports
  // these to the hub); may be empty.
  std::function<void(const TaskEnd&)> on_task_end;
  // Told of each object an event applied as its own (not a shared one, not
  // one filled in by discovery) with the resourceVersion the cluster
  // answered; may be empty. The agent's drift repair takes the object as
  // right at that version instead of reading it back.
  std::function<void(const std::string& api_version, const std::string& kind, const std::string& ns,
                     const std::string& name, const std::string& resource_version)>
      on_applied;
  // A task on an agent cluster waits for the agent's report; a store watch
  // wakes it at once, and it looks again this often in case a wake-up was
  // missed.
  std::chrono::milliseconds agent_recheck{30000};
  // Time and randomness (null: the machine's clock, entropy-seeded
  // randomness). A simulation passes a fake clock and a seed.
  Clock* clock = nullptr;
  Random* random = nullptr;
  // Where rsync's work runs (null: its own pool of `workers` threads). A
  // simulation passes a manual executor (Executor::Manual) it drives.
  Executor* executor = nullptr;
  // One line per notable happening (event start/end, lost lease); may be empty.
  std::function<void(const std::string&)> log;
  // Export each cluster's apply latency as its own series (opt-in: one
  // series per cluster).
  bool cluster_metrics = false;
  // Run an event's staged rollout (its spec.rollout) here. The agent does
  // not: the hub's rollout decides when its cluster's share is published.
  bool rollouts = true;
};

class Rsync {
 public:
  // `store` must outlive this object.
  Rsync(store::Store& store, Options options = {});
  ~Rsync();  // Stop()
  Rsync(const Rsync&) = delete;
  Rsync& operator=(const Rsync&) = delete;

  // Takes a lease and starts looking for work (/eco/active/ now and by watch).
  Status Start();
  // Interrupts running events without recording an outcome (they stay
  // pending and resume on the next start, here or on another replica),
  // releases every lock and joins all threads. Calls in flight to a cluster
  // finish first (at most the client's request timeout).
  void Stop();

  // Contexts this replica is working on now.
  size_t ActiveContexts() const;

  // The client rsync uses for a cluster (made from its kubeconfig on first
  // use, then kept). The ready monitor beside it shares these: one
  // connection pool per cluster, not two.
  Result<std::shared_ptr<k8s::ClusterClient>> ClusterClient(const std::string& provider,
                                                            const std::string& cluster);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::rsync
