// A cluster task on an agent cluster (docs/agent.md): the cluster is not
// dialled. The event is published once to the cluster's log (with the
// AppContexts it reads, as the cluster sees them); the agent runs it there
// with this same event code and reports how each app ended; the task ends
// with that report. A store watch on the reports wakes waiting tasks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "appcontext/agent_log.h"
#include "common/clock.h"
#include "rsync/rsync.h"
#include "store/store.h"

namespace eco::rsync {

struct EventData;

class AgentTasks {
 public:
  AgentTasks(store::Store& st, Clock& clock) : st_(st), clock_(clock) {}
  ~AgentTasks() { Stop(); }

  Status Start();  // watches the agents' reports
  void Stop();

  // Whether the cluster is reached through its agent (its delivery, read
  // once per cluster).
  bool Handles(const appcontext::ClusterRef& c);
  // Publishes the event to the cluster unless it was (once per event and
  // cluster). Conflict: the context's lock is lost.
  Status Publish(EventData& ev, const appcontext::ClusterRef& c);
  // The event was cancelled here (another cluster failed, or it was
  // stopped): tells the agent cluster, if the event was published to it,
  // so that its agent stops too. Called by the cluster's cancelled task
  // before it finishes, while the event still holds its context's lock.
  // Terminates and superseding updates need not: they are published
  // themselves. Best effort: a cancel not published leaves the agent
  // finishing the event, its status true.
  void PublishCancelTo(EventData& ev, const std::string& cluster_key);
  Result<std::optional<appcontext::Outcome>> OutcomeOf(const EventData& ev, const std::string& app,
                                                       const appcontext::ClusterRef& c);
  // `wake` runs once when the outcome under `key` may have arrived (or
  // when the watch restarted and anything may have).
  void Wait(const std::string& key, std::function<void()> wake);
  void Unwait(const std::string& key);

 private:
  void Watch();
  void RestartLater();  // mu_ held
  void WakeAll();
  // Why the event's end must reach its agents ("" when it need not).
  static std::string CancelWhy(EventData& ev, std::string* message);
  void PublishCancel(EventData& ev, const std::string& cluster_key, const std::string& why, const std::string& message);

  store::Store& st_;
  Clock& clock_;
  std::mutex mu_;
  std::unordered_map<std::string, bool> agent_;                     // guarded by mu_: cluster key -> is agent
  std::unordered_map<std::string, std::function<void()>> waiting_;  // guarded by mu_
  std::unique_ptr<store::WatchHandle> watch_;                       // guarded by mu_
  Clock::TimerId restart_ = 0;                                      // guarded by mu_
  bool stopped_ = false;                                            // guarded by mu_
};

}  // namespace eco::rsync
