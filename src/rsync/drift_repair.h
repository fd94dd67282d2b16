// Drift repair of push clusters (spec.driftPolicy "enforce",
// docs/rollouts.md#drift): an object a cluster lost, or whose fields as
// eco's manifest sets them someone changed, is applied again exactly as
// its event applied it. The ready monitor finds the drift and records it;
// `eco serve` and `eco rsync` hand it this, so that what writes to
// clusters stays rsync's.
#pragma once

#include <string>

#include "common/status.h"
#include "k8s/client.h"
#include "store/store.h"

namespace eco::rsync {

// Applies resource `res_name` ("<name>+<Kind>") of `app`, as AppContext
// `ref` planned it for cluster `cluster_key`, to `cluster` (server-side
// apply, field manager eco, forced). `left_out`: its apply left out
// fields the cluster does not declare (Warn field validation), which are
// left out again.
Status ApplyAgain(store::Store& st, k8s::ClusterClient& cluster, const std::string& ref, const std::string& app,
                  const std::string& cluster_key, const std::string& res_name, bool left_out);

}  // namespace eco::rsync
