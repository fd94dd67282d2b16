// The ready monitor's plans (docs/status.md, "How the ready monitor is
// built"): for one watched context, the app x clusters it deploys (each
// with its Shape) and the (cluster, kind) subscriptions they read. Built
// from the store (the AppContext's plan, the records stored already);
// the monitor keeps what the watches say in it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "status/ready_judge.h"
#include "status/shared_watches.h"
#include "store/store.h"

namespace eco::status {

// What a context reads of one shared watch (cluster x kind).
struct KindWatch {
  std::string provider, cluster, api_version, kind;
  SubscriptionId sub = 0;
  bool started = false;  // subscribed
  int failures = 0;      // connection failures since the last success
  Clock::Time heard{};   // when it last passed a contact on
  KindObjects seen;      // what the watch holds of the context's objects
  // The app x clusters that read this watch, by app label (sorted; the
  // label points into the app's Shape, the key into Plan::acs): a change
  // to one object concerns only the app x cluster its label names.
  std::vector<std::pair<std::string_view, const std::string*>> by_label;
  // A watch matched by name (SharedWatches::ByName): the object keys the
  // plans have; the cluster's other objects of the kind are not kept.
  std::set<std::string, std::less<>> names;

  bool by_name() const { return SharedWatches::ByName(api_version, kind); }
  std::string cluster_key() const { return provider + "+" + cluster; }
};

struct AppCluster {
  std::string app, cluster;
  std::string provider, cluster_name;
  std::shared_ptr<const Shape> shape;
  std::vector<KindWatch*> watch;  // per shape kind (nodes of Plan::watches)
  // Hash of the stored record (RecordHash), when there is one: a 64-bit
  // digest instead of a copy of every record keeps ~1.5 KB per app and
  // cluster out of memory.
  std::optional<size_t> written;
  // Its resources by status (Ready, NotReady, NotPresent) in the gauges.
  std::array<int32_t, 3> counted{};
  int32_t drifted = 0;  // its resources drifted now, in eco_drift_resources

  std::optional<appcontext::ReadyRecord> Judge() const;
};

// One watched context.
struct Plan {
  uint64_t serial = 0;  // set by the monitor: tells a rebuilt plan from the last
  std::string status_ctx, plan_ctx;
  std::map<std::string, KindWatch> watches;  // cluster "\n" apiVersion "\n" kind
  std::map<std::string, AppCluster> acs;     // app "\n" cluster
  // Drift records stored with resources drifted (ac key, resource):
  // looked at again once this context is watched, whatever the watches say.
  std::vector<std::pair<std::string, std::string>> stored_drift;
};

// An app x cluster of one plan (serial) of a status context.
struct AcKey {
  std::string status_ctx;
  uint64_t serial;
  std::string ac;
  bool operator<(const AcKey& o) const {
    return std::tie(status_ctx, serial, ac) < std::tie(o.status_ctx, o.serial, o.ac);
  }
};

using WatchedFn = std::function<bool(const std::string& provider, const std::string& cluster)>;

// The plan of status context `sctx` watching AppContext `plan_id`'s
// clusters that `watched` names; `drift` keeps the manifests and reads the
// stored drift records.
Result<std::unique_ptr<Plan>> BuildPlan(store::Store& st, const std::string& sctx,
                                        const std::string& plan_id, const WatchedFn& watched,
                                        bool drift);

}  // namespace eco::status
