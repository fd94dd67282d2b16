// The ready monitor's drift judging (docs/rollouts.md#drift; docs/status.md,
// "How the ready monitor is built"), beside the readiness judgement: which
// resources a watch event says may have drifted (suspects, from the plan
// and the watch alone), and for those the live objects read and compared
// with the manifests, the DriftRecords written, and with driftPolicy
// enforce the drifted ones applied again through `repair`. Judging blocks
// (it reads the cluster): the monitor runs it as a task of its own.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/client.h"
#include "status/ready_plan.h"
#include "store/store.h"

namespace eco::status {

// The resources of `p` that may have drifted, as (app x cluster key,
// resource): those whose object `w` saw change (`obj`) or go (null);
// `before` is what the watch held of it, `modified` whether it was a change.
std::vector<std::pair<std::string, std::string>> ChangeSuspects(
    const Plan& p, const KindWatch& w, const std::string& okey, const nlohmann::json* obj,
    std::optional<ObjectStates::State> before, bool modified);
// The same for a relist of `w` (`items`), before it replaces the watch's objects.
std::vector<std::pair<std::string, std::string>> RelistSuspects(
    const Plan& p, const KindWatch& w, const std::vector<nlohmann::json>& items);

// The resources of one app x cluster to judge.
struct DriftJob {
  AcKey d;
  std::string plan_ctx, app, cluster_key, provider, cluster;
  std::shared_ptr<const Shape> shape;
  std::set<std::string> res;
};

struct DriftOutcome {
  AcKey d;
  std::set<std::string> deferred;  // to look at again later
  std::optional<int32_t> drifted;  // resources drifted now, when its record was written
};

class DriftJudge {
 public:
  using ClientFn = std::function<Result<std::shared_ptr<k8s::ClusterClient>>(
      const std::string& provider, const std::string& cluster)>;
  using RepairFn = std::function<Status(const std::string& ref, const std::string& app,
                                        const std::string& provider, const std::string& cluster,
                                        const std::string& res_name, bool left_out)>;
  // `st` and `clock` must outlive it; `repair` null: never repaired.
  DriftJudge(store::Store& st, Clock& clock, ClientFn client, RepairFn repair)
      : st_(st), clock_(clock), client_(std::move(client)), repair_(std::move(repair)) {}

  // Judges the jobs one after another (one caller at a time).
  std::vector<DriftOutcome> Run(std::vector<DriftJob> jobs);

 private:
  DriftOutcome Judge(const DriftJob& job, bool enforce);
  bool IsLatest(const appcontext::Meta& m);
  void LogDrift(const DriftJob& job, const std::string& res, const appcontext::ResourceDrift& d);
  std::optional<int32_t> WriteDrift(const DriftJob& job, const appcontext::DriftRecord& before,
                                    const appcontext::DriftRecord& rec, bool* ok);
  void Repair(const DriftJob& job, const appcontext::DeployedRecord& deployed,
              k8s::ClusterClient& client, const std::string& ns_default,
              const std::vector<std::string>& to_repair, appcontext::DriftRecord& rec,
              DriftOutcome& out);

  store::Store& st_;
  Clock& clock_;
  ClientFn client_;
  RepairFn repair_;
  // Per resource drifted (ctx\nres\ncluster\napp), the fields last
  // repaired: a repair that does not hold is not repeated for the same change.
  std::map<std::string, std::string> repaired_as_;
};

}  // namespace eco::status
