// The world the fault tests deploy, and the checker that says whether what
// the clusters hold and what eco reports are what was asked for.
//
// One composite app "ca" with one app "web" whose chart renders whatever the
// profile's values say (see Revision), placed by label on every cluster of a
// kube-sim fleet through a level-0 logical cloud.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "eco_fixture.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "store/store.h"

namespace eco::testing {

inline const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
inline const std::string kDIG = kCA + "/deployment-intent-groups/dig";
inline const std::string kProfile = kCA + "/composite-profiles/cp/profiles/web-profile";
inline const std::string kRelease = "r1";         // the DIG's version
inline const std::string kNamespace = "default";  // a level-0 logical cloud without a namespace
inline const std::string kContextLabel = "app.eco.io/context";
inline const std::string kLockPrefix = "/eco/lock/rsync/";

// What one revision of the app deploys: one ConfigMap per item, a Deployment
// whose container carries `rev` in its environment, and a Service if asked.
struct Revision {
  std::string rev;
  std::map<std::string, std::string> items;
  int replicas = 1;
  bool service = false;
};

// The two revisions of a round of the fault tests: six ConfigMaps, a
// Deployment and a Service; then one ConfigMap kept as is, two changed,
// three and the Service dropped, two added, the Deployment scaled to 2.
Revision FirstRevision(int round);
Revision SecondRevision(int round);

// The app's chart (.tgz) and a profile (.tgz) holding revision `r`'s values.
std::string Chart();
std::string Profile(const Revision& r);

// Objects are compared by "Kind/namespace/name".
std::string KeyOf(const nlohmann::json& o);

// What a cluster must hold for revision `r` deployed under status context
// `ctx`: per object, the fields that must be there with these values.
std::map<std::string, nlohmann::json> Desired(const Revision& r, const std::string& ctx);

// The objects of a cluster that carry eco's context label. Objects the
// cluster's own controllers made (ReplicaSets and Pods inherit the label)
// are left out unless `owned`.
std::map<std::string, nlohmann::json> Labeled(KubeSim& sim, const std::string& cluster, bool owned);

// "" when `have` is exactly `want` (each wanted object holding at least the
// wanted fields); otherwise what is missing, left over or different.
std::string Diff(const std::map<std::string, nlohmann::json>& want,
                 const std::map<std::string, nlohmann::json>& have);

// "cluster-1" ... "cluster-n", kube-sim's default names.
std::vector<std::string> ClusterNames(int n);

// kube-sim with `clusters` clusters, each answering `latency_ms` late so that
// operations last long enough for faults to land in them. Fails the test
// (fatally) when it cannot start; check HasFatalFailure().
std::unique_ptr<KubeSim> SlowFleet(int clusters, int latency_ms);

// The seed of a test's random choices: $ECO_FAULT_SEED (a number, or
// "random" for a fresh one, as scripts/soak.sh asks), else 1; printed with
// `what`, so that a failure can be replayed.
uint64_t FaultSeed(const std::string& what);

// Clusters of `sim`, a level-0 logical cloud over them, the app with its
// profile at revision `first`, and a DIG placing it on every cluster,
// approved. Fails the test (fatally) on any unexpected answer.
void World(EcoClient& c, KubeSim& sim, const std::vector<std::string>& clusters,
           const Revision& first);

// The AppContext ids of the DIG's lifecycle, oldest first.
std::vector<std::string> Instances(EcoClient& c);
// The DIG's states.actions (empty when unreadable).
nlohmann::json Actions(EcoClient& c);
// deployedStatus and deployedCounts of the DIG (`instance`: "" = the latest).
nlohmann::json DeployedSummary(EcoClient& c, const std::string& instance = "");

// Reading rsync's log: the line it writes for `what` ("started", "done",
// "failed: ...") of an event of a context.
std::string LogLine(const std::string& ctx, const std::string& event, const std::string& what);
bool Has(const std::string& log, const std::string& needle);
size_t Count(const std::string& log, const std::string& needle);

// A child `eco` process with `args`, its output appended to `log`.
std::unique_ptr<Process> StartEco(const std::vector<std::string>& args, const std::string& log);

// One role of a distributed eco (`eco api` or `eco rsync`) on a shared etcd
// store, on a loopback port of its own, restartable after a kill.
class Role {
 public:
  // `role`: "api" or "rsync"; `store_url`: etcd://...; `extra`: more flags.
  Role(std::string name, std::string role, std::string store_url, std::string log_dir,
       std::vector<std::string> extra = {});
  // Starts it and waits until its /healthz answers 200 (retrying the start
  // when it exits, e.g. while etcd is away). Empty string on success.
  std::string Start(std::chrono::milliseconds limit = std::chrono::seconds(60));
  void Kill9();
  bool running() { return proc_ && proc_->running(); }
  // Read it for every request: a role that could not bind its port again
  // takes another one.
  int port() const { return port_.load(); }
  const std::string& name() const { return name_; }
  std::string Log() const { return proc_ ? proc_->ReadLog() : ReadFile(log_); }

 private:
  std::string name_, role_, store_url_, log_;
  std::vector<std::string> extra_;
  std::atomic<int> port_{-1};
  std::unique_ptr<Process> proc_;
};

// Lock keys rsync holds on context `ctx`.
std::vector<std::string> LockKeys(store::Store& st, const std::string& ctx);

// ---------------------------------------------------------------- checker

// What the DIG should have reached after its last operation.
struct Expectation {
  std::string state;                                // "Instantiated" or "Terminated"
  std::map<std::string, nlohmann::json> objects;    // per cluster (empty after a terminate)
  std::vector<std::string> clusters;                // every cluster of the fleet
};

// Compares, and returns every difference ("" when none):
// - the DIG's latest AppContext is in `want.state`;
// - each cluster holds exactly `want.objects` (no object missing or left
//   over, each holding the wanted fields with the wanted values: see Diff;
//   after a terminate also nothing its controllers made from them);
// - the status module's deployed view lists, per cluster, exactly those
//   objects, all Applied (Deleted after a terminate), the cluster Available;
// - after an instantiation its ready view says Ready for every one.
std::string CheckClustersAndStatus(EcoClient& c, KubeSim& sim, const Expectation& want);

// Returns what is still in flight in the store ("" when nothing): an active
// AppContext, an rsync lock, or an event of one of `contexts` that is not
// done -- unless the context is a key of `superseded` and the event was
// refused or failed as superseded by the update to the context named there.
std::string InFlight(store::Store& st, const std::vector<std::string>& contexts,
                     const std::map<std::string, std::string>& superseded = {});

// Polls `check` (which returns "" when satisfied) until it is satisfied or
// `limit` passes; returns its last answer.
std::string Converge(const std::function<std::string()>& check, std::chrono::milliseconds limit);

}  // namespace eco::testing
