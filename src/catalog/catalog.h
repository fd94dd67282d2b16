// Read access to the configuration resources the north API stores (projects,
// apps, DIGs, intents, clusters, logical clouds, controller intents...), for
// the components below the API: the scheduler and the controllers. The key
// layout is defined here once; the API writes through the same functions.
//
// Layout (all under /eco/):
//   r/<type>/<k1>/<k2>...   the resource's JSON ({metadata, spec} as stored)
//   f/<type>/<keys>         its uploaded file (chart, profile, kubeconfig)
//   s/<type>/<keys>         its lifecycle state record (catalog/lifecycle.h)
//   g/<type>/<keys>         guard: touched whenever a child or a reference to
//                           it is created, so a delete racing with that create
//                           fails its compare-and-swap instead of orphaning it
//   ref/<target id>|<source id>   reference index, one key per reference
//   u/<type>/<unique id>    uniqueness index (e.g. one profile per app)
//   lock/dig/<keys>, lock/lc/<project>/<lc>   locks of lifecycle operations
// <type> is the resource type id of api/resources.cc ("compositeApp",
// "cluster", "hpaIntent"...); keys are the URL's names, ancestors first; an
// id is "<type>/<keys>". Names follow EMCO's rule and never contain '/' or '|'.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/json_fields.h"
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
std::string FilePrefix(const std::string& type);   // every file of `type`
std::string StatePrefix();                         // every state record
std::string StatePrefix(const std::string& type);  // every state record of `type`
// "<type>/<keys>", how guard, reference and uniqueness keys name a resource.
std::string ResourceId(const std::string& type, const Keys& k);
std::string GuardKey(const std::string& type, const Keys& k);
// References to (type, k): RefKey(type, k, ...) for each referring resource.
std::string RefPrefix(const std::string& type, const Keys& k);
std::string RefKey(const std::string& target_type, const Keys& target, const std::string& source_type,
                   const Keys& source);
std::string UniqueKey(const std::string& type, const std::string& unique_id);
// Names of the locks (store/lock.h) a lifecycle operation holds.
std::string DigLockKey(const Keys& dig);  // {project, compositeApp, version, dig}
std::string LcLockKey(const std::string& project, const std::string& logical_cloud);

// Whether `key` lies under `prefix` (one of the prefixes above).
bool KeyUnder(std::string_view key, std::string_view prefix);
bool IsStateKey(std::string_view key);

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

// j[key] when j is an object holding a string there, else "" (common/json_fields.h).
using eco::StringField;

// RFC 3339 UTC time with milliseconds, as state records carry it.
std::string Rfc3339(Clock::WallTime t);
// The clock's wall time as Rfc3339.
std::string NowRfc3339(const Clock& clock);
// On the machine's clock; kept for callers not yet given a Clock.
std::string NowRfc3339();
std::string NowRfc3339(const Clock& clock);

}  // namespace eco::catalog
