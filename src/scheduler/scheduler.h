// The scheduler: the lifecycle of deployment intent groups and logical
// clouds (EMCO's state machines, reference §4.1 and §2.3) and the
// instantiation flow that turns a DIG into a sealed AppContext handed to
// rsync: validate, place, render, run the placement and action controllers,
// resolve anyOf groups, seal and enqueue — all or nothing.
//
// Mutual exclusion per DIG / logical cloud comes from a store lock held on
// the scheduler's lease, so two eco processes on one etcd never build two
// AppContexts for one DIG; every state change is also a compare-and-swap on
// the state record.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/clock.h"
#include "common/status.h"
#include "controllers/controller.h"
#include "store/store.h"

namespace eco::scheduler {

using nlohmann::json;

struct DigKey {
  std::string project;
  std::string composite_app;
  std::string version;  // composite app version
  std::string dig;
};

// A controller the orchestrator can call.
struct ControllerRef {
  std::string name;
  std::string type;  // "placement" or "action"
  int priority = 0;  // lower runs first
  std::shared_ptr<controllers::Controller> controller;
};

// Makes a client for a controller registered at /v2/controllers.
using RemoteFactory = std::function<std::shared_ptr<controllers::Controller>(
    const std::string& name, const std::string& host, int port)>;

struct Options {
  // Built-in controllers by name; a registration of the same name at
  // /v2/controllers replaces the built-in.
  std::vector<ControllerRef> builtins;
  RemoteFactory remote;  // null: registered controllers cannot be called
  // The built-in controllers again, over another store: a fleet plan runs
  // them on its overlay of the store. Null: plans leave them out (notRun).
  std::function<std::vector<ControllerRef>(store::Store&)> builtins_on;
  // Lease TTL of the scheduler's locks and of the AppContexts it builds.
  std::chrono::seconds lease_ttl{10};
  // How long a lifecycle call waits for another one on the same DIG.
  std::chrono::milliseconds lock_wait{0};
  // Worker threads rendering apps in parallel.
  int render_threads = 2;
  // Wall time one app's templates may take to execute; a chart looping for
  // longer fails to render (docs/limits.md). Zero: no limit.
  std::chrono::milliseconds render_time_limit{10000};
  // A DIG's field validation when its spec.fieldValidation is not set
  // ("Warn" or "Strict"; `eco serve --field-validation`).
  std::string field_validation = "Warn";
  // Lock waits, state records' and AppContexts' time stamps and durations
  // run on `clock`; new AppContext ids draw from `random`. Both must
  // outlive the scheduler.
  Clock* clock = &RealClock();
  Random* random = &ProcessRandom();
};

class Scheduler {
 public:
  Scheduler(store::Store& st, Options opts);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // DIG lifecycle. Errors: NotFound (404), Invalid (400), Conflict (409:
  // the action is not valid in the current state, the reason says why),
  // Unavailable (503: store or controller unreachable).
  Status Approve(const DigKey& k);
  // Returns the id of the sealed AppContext handed to rsync. With a
  // `plan_id` (FleetPlan's planId), Conflict when the plan of this
  // instantiation now has another id: nothing is changed then.
  Result<std::string> Instantiate(const DigKey& k, const std::string& plan_id = "");
  Status Terminate(const DigKey& k);
  Status Stop(const DigKey& k);
  // Returns the new revision. `plan_id` as for Instantiate.
  Result<int64_t> Update(const DigKey& k, const std::string& plan_id = "");
  // The fleet plan (scheduler/fleet_plan.h, docs/rollouts.md#plans): what
  // approve+instantiate (a DIG not instantiated) or update (an
  // instantiated one) would do, built by the same pipeline into an overlay
  // of the store: nothing is written. The errors of that operation, and
  // Conflict where its state refuses both.
  Result<json> FleetPlan(const DigKey& k, bool summary_only = false);
  // The plan of a rollback to `revision`: that revision's own AppContext
  // against the one deployed (no placement is run, so no reasons).
  Result<json> RollbackPlan(const DigKey& k, int64_t revision, bool summary_only = false);
  // `plan_id` (RollbackPlan's planId) as for Instantiate.
  Status Rollback(const DigKey& k, int64_t revision, const std::string& plan_id = "");
  // EMCO's migrate: the deployed DIG `k` moves to the Approved DIG
  // `target_dig` of version `target_version` of the same composite app. The
  // target's new AppContext is queued as an update from k's deployed one
  // (rsync applies the new objects, then deletes what only k had); k becomes
  // Updated, the target Instantiated. NotFound: no such target; Conflict:
  // a state does not allow it; Invalid: the target is k, or it deploys into
  // another logical cloud.
  Status Migrate(const DigKey& k, const std::string& target_version, const std::string& target_dig);
  // eco's resync: every object of the deployed revision applied again to
  // `clusters` ("provider+cluster" keys of the deployment; empty = all of
  // them), for a cluster rebuilt or whose objects were deleted. Queued on
  // the current AppContext; Conflict unless instantiated and idle.
  Status Resync(const DigKey& k, const std::vector<std::string>& clusters);
  Status ResyncLogicalCloud(const std::string& project, const std::string& lc,
                            const std::vector<std::string>& clusters);
  // Steers the staged rollout of the DIG's latest revision (spec.rollout):
  // "pause", "resume", "approve" (the next wave, under between-waves
  // approval) or "abort". Conflict when no rollout is running or its state
  // does not allow it (the reason says which); Invalid for another action.
  Status RolloutAction(const DigKey& k, const std::string& action);
  // Whether a DIG may be deleted now; on success the AppContexts it owned
  // are deleted (the caller then deletes the DIG itself).
  Status PrepareDigDelete(const DigKey& k);

  // Logical cloud lifecycle.
  Status InstantiateLogicalCloud(const std::string& project, const std::string& lc);
  Status TerminateLogicalCloud(const std::string& project, const std::string& lc);
  Status StopLogicalCloud(const std::string& project, const std::string& lc);
  Status UpdateLogicalCloud(const std::string& project, const std::string& lc);
  Status PrepareLogicalCloudDelete(const std::string& project, const std::string& lc);

  // Removes AppContexts whose builder died mid-way; returns how many.
  Result<int> CollectAbandoned();

  // The controllers a DIG's intents name, in call order (placement first).
  Result<std::vector<ControllerRef>> ResolveControllers(const std::map<std::string, std::string>& intents);

 private:
  Result<std::string> InstantiateDig(const DigKey& k, const std::string& plan_id);  // without its metrics
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::scheduler
