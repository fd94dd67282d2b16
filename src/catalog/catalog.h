// Read access to the configuration resources the north API stores (projects,
// apps, DIGs, intents, clusters, logical clouds, controller intents...), for
// the components below the API: the scheduler and the controllers. The key
// layout is defined here once; the API writes through the same functions.
//
// Layout (all under /eco/):
//   r/<type>/<k1>/<k2>...   the resource's JSON ({metadata, spec} as stored)
//   f/<type>/<keys>         its uploaded file (chart, profile, kubeconfig)
//   s/<type>/<keys>         its lifecycle state record ({statusctxid, actions})
// <type> is the resource type id of api/resources.cc ("compositeApp",
// "cluster", "hpaIntent"...); keys are the URL's names, ancestors first.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::catalog {

using nlohmann::json;
using Keys = std::vector<std::string>;

std::string JoinKeys(const Keys& k);
std::string ObjectKey(const std::string& type, const Keys& k);
std::string FileKey(const std::string& type, const Keys& k);
std::string StateKey(const std::string& type, const Keys& k);
// Prefix of the objects of `type` under `parent` (all of them when empty).
std::string ListPrefix(const std::string& type, const Keys& parent);

// The object, nullopt when missing.
Result<std::optional<json>> Get(store::Store& st, const std::string& type, const Keys& k);
// Objects of `type` below `parent`, in key order, with their own key values.
struct Item {
  Keys keys;  // full key values (parent's then own)
  json object;
};
Result<std::vector<Item>> List(store::Store& st, const std::string& type, const Keys& parent);
// The uploaded file, nullopt when missing.
Result<std::optional<std::string>> GetFile(store::Store& st, const std::string& type, const Keys& k);

// A cluster as placement and controllers see it.
struct ClusterInfo {
  std::string provider;
  std::string name;
  std::vector<std::string> labels;
  // Every key/value of every kv-pairs document of the cluster (first wins).
  std::vector<std::pair<std::string, std::string>> kv;
};
// All clusters of a provider with their labels (kv left empty), by name.
Result<std::vector<ClusterInfo>> ProviderClusters(store::Store& st, const std::string& provider);
// One cluster with labels and kv-pairs; NotFound when missing.
Result<ClusterInfo> Cluster(store::Store& st, const std::string& provider, const std::string& name);
// The cluster's kubeconfig bytes (NotFound when the cluster or file is missing).
Result<std::string> Kubeconfig(store::Store& st, const std::string& provider, const std::string& name);

// j[key] when j is an object holding a string there, else "".
std::string StringField(const json& j, const char* key);

// The last action's state of a state record ("" when none).
std::string CurrentState(const json& state_record);

// RFC 3339 UTC time with milliseconds, as state records carry it.
std::string Rfc3339(Clock::WallTime t);
// The clock's wall time as Rfc3339.
std::string NowRfc3339(const Clock& clock);
// On the machine's clock; kept for callers not yet given a Clock.
std::string NowRfc3339();

}  // namespace eco::catalog
