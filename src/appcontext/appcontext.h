// The AppContext: the concrete plan of one instantiation (or update) of a
// deployment intent group or logical cloud — which apps go to which clusters
// with which resources, in which order. The scheduler builds it, placement
// and action controllers edit it, then it is sealed and handed to rsync;
// from then on only rsync and the status module add records under it.
//
// Store layout (under /eco/ac/<id>/; values are JSON):
//   meta                      Meta
//   app/<app>/shared          ResourceSet rendered for the app, stored once
//   app/<app>/clusters        [ClusterRef...]: the app's clusters, each with
//                             its placement group and the variant it uses
//   app/<app>/variant/<n>     what a controller changed for some clusters,
//                             as a delta from the shared set (n >= 1;
//                             identical edits share one variant)
//   app/<app>/variants        {"next": n, "h": {content hash: n}}: the index
//                             that finds an identical variant without reading
//                             them all
//   building                  attached to the builder's lease until sealed
//   sealed                    present once handed off: edits are refused
//   status                    {"status": AppContext status, "time"} (rsync)
//   stop                      "true" when a stop was requested
//   superseded                the id of the context an update replacing this
//                             one was queued on (written with that update)
//   events/<seq>              rsync's event queue (see Event)
//   rsync/..., ready/...      rsync's and the status module's records
// plus /eco/acb/<id> (a context being built; the janitor's index) and
// /eco/active/<id> (a context rsync has work for).
//
// Size grows with the number of clusters only by one small ClusterRef each:
// manifests are never copied per cluster unless a controller changed them.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::appcontext {

using nlohmann::json;

// One object to deploy, named "<metadata.name>+<Kind>" as in EMCO.
struct Resource {
  std::string name;
  json object;  // the whole Kubernetes object
};
std::string ResourceName(const json& object);  // "<metadata.name>+<kind>"

// The labels every deployed object carries: the status context of its
// deployment and its app (the ready monitor finds and matches objects by
// them). Label values are at most 63 characters, alphanumeric at the end.
inline constexpr const char* kContextLabel = "app.eco.io/context";
inline constexpr const char* kAppLabel = "app.eco.io/app";
// Which deployment owns an object on a cluster (OwnerOf); rsync refuses to
// take over an object another one owns, or one eco did not create.
inline constexpr const char* kOwnerAnnotation = "app.eco.io/owner";
std::string LabelValue(std::string v);
// On an Endpoints object: addresses rsync reads from other clusters of the
// deployment when it applies it (service discovery, EMCO's sds). The value
// is a JSON array of {"cluster": "provider+name", "namespace", "service",
// "port", "portName", "protocol"}: the Service whose LoadBalancer ingress or
// NodePort (on the nodes' addresses) clients reach it by. Until a Service
// has one, the Endpoints waits (rsync.md).
inline constexpr const char* kDiscoverAnnotation = "app.eco.io/discover";

// What one app deploys on one cluster, in order.
struct ResourceSet {
  std::vector<Resource> crds;       // CustomResourceDefinitions: applied first
  std::vector<Resource> resources;  // main resources in apply order
  std::vector<Resource> hooks;      // Helm hooks, by weight then name
  // Hook event ("pre-install", "post-install", "pre-delete", ...) -> names
  // of `hooks` it runs, in order.
  std::map<std::string, std::vector<std::string>> hook_events;

  Resource* Find(std::string_view name);
  const Resource* Find(std::string_view name) const;
  size_t size() const { return crds.size() + resources.size() + hooks.size(); }
};
json ToJson(const ResourceSet& rs);
Result<ResourceSet> ResourceSetFromJson(const json& j);

// EMCO's app dependency: wait for `app` to be Deployed or Ready, then `wait` seconds.
struct Dependency {
  std::string app;
  std::string op_status;  // "Ready" or "Deployed"
  int wait_seconds = 0;
};

struct Meta {
  std::string id;
  std::string kind;  // "dig" or "logicalCloud"
  std::string project;
  std::string composite_app;  // DIG contexts only
  std::string composite_app_version;
  std::string dig;
  std::string composite_profile;
  std::string release;  // Helm release name (DIG spec.version)
  std::string logical_cloud;
  std::string level;       // "0" admin or "1" standard logical cloud
  std::string namespace_;  // where namespaced resources go
  // Context whose status records this one writes (an update keeps the
  // status context of the instantiation); empty = itself.
  std::string status_context;
  std::string update_from;  // the deployed context an update replaces
  int64_t revision = 0;
  std::string created;  // RFC 3339
  std::vector<std::string> app_order;
  std::map<std::string, std::vector<Dependency>> dependencies;  // app -> what it waits for
  // The DIG's spec.adopt (eco's extension): take over objects that exist on
  // a cluster without being this deployment's.
  bool adopt = false;
  // The DIG's spec.fieldValidation (eco's extension): "Warn" drops the
  // fields a cluster's schema does not declare and applies the rest,
  // "Strict" fails on them. Contexts written before it read "Warn".
  std::string field_validation = "Warn";
  // The DIG's spec.driftPolicy (eco's extension): "report" records an
  // object changed or deleted out of band, "enforce" also applies it again.
  std::string drift_policy = "report";
};
json ToJson(const Meta& m);
// The owner a deployment writes into kOwnerAnnotation: the DIG
// ("dig:PROJECT/APP/VERSION/DIG") or the logical cloud
// ("logical-cloud:PROJECT/CLOUD"), the same for all its revisions.
std::string OwnerOf(const Meta& m);
Result<Meta> MetaFromJson(const json& j);

// One edit of a batch: `cluster_keys` get `resources`.
struct ClusterEdit {
  std::vector<std::string> cluster_keys;
  ResourceSet resources;
};

// Everything rsync needs for one app, read at once: the clusters, the
// shared set, and the variants (resolved on demand: 10,000 per-cluster
// variants are kept as small deltas, not as 10,000 full sets).
class AppPlan;

struct ClusterRef {
  std::string provider;
  std::string name;
  int group = 0;          // placement group (5.4 of the reference)
  bool mandatory = true;  // an allOf group of one, or one of an anyOf group
  int variant = 0;        // 0 = the app's shared resources
  std::string key() const { return provider + "+" + name; }
};

// An rsync event, queued under events/<seq> with status "pending".
struct Event {
  std::string type;   // "instantiate", "terminate", "update", "update-delete", "resync"
  std::string other;  // for update: the context replaced; update-delete: the new one
  std::vector<std::string> clusters = {};  // resync: the cluster keys; empty = all
  // instantiate, update: the DIG's spec.rollout as the operation began
  // (rollout.h's ToJson); null: every cluster at once.
  nlohmann::json rollout = nullptr;
};

class AppPlan {
 public:
  std::vector<ClusterRef> clusters;
  ResourceSet shared;
  // The resources of a cluster of this app.
  Result<ResourceSet> For(const ClusterRef& c) const;

 private:
  friend class Contexts;
  std::map<int, json> deltas_;
};

// Keys, for code that builds its own transactions.
std::string ContextPrefix(const std::string& id);  // "/eco/ac/<id>/"
std::string StatusKey(const std::string& id);
std::string StopKey(const std::string& id);
// Written in the transaction that queues an update replacing `id`: the
// events of `id` queued before it (older revision) are superseded.
std::string SupersededKey(const std::string& id);
std::string SealedKey(const std::string& id);
std::string ActiveKey(const std::string& id);  // ActivePrefix() + id
// Every active marker: rsync watches and lists them.
std::string ActivePrefix();
// rsync's per-AppContext locks (store/lock.h): the name RsyncLockKey(id),
// every one under RsyncLockPrefix().
std::string RsyncLockPrefix();
std::string RsyncLockKey(const std::string& id);
std::string EventPrefix(const std::string& id);
std::string EventKey(const std::string& id, int64_t seq);  // EventPrefix(id) + the seq, zero-padded

class Contexts {
 public:
  // `clock` stamps the records' times, `random` draws new context ids.
  explicit Contexts(store::Store& st, const Clock& clock = RealClock(),
                    Random& random = ProcessRandom())
      : st_(st), clock_(clock), random_(random) {}

  // A new empty context with `meta` (id and created are filled in). The
  // `building` marker rides on `building_lease`: if the builder dies before
  // sealing, CollectAbandoned removes the context.
  Result<std::string> Create(Meta meta, store::LeaseId building_lease);
  // Writes an app's shared resources and its clusters (all variant 0).
  Status PutApp(const std::string& id, const std::string& app, const ResourceSet& shared,
                const std::vector<ClusterRef>& clusters);

  Result<Meta> GetMeta(const std::string& id);
  Result<std::vector<ClusterRef>> Clusters(const std::string& id, const std::string& app);
  // The resources a cluster of the app gets ("" = the shared set).
  Result<ResourceSet> Resources(const std::string& id, const std::string& app,
                                const std::string& cluster_key);

  // The app's clusters and resources in three reads (for rsync).
  Result<AppPlan> ReadApp(const std::string& id, const std::string& app);

  // Edits, refused (Conflict) once the context is sealed.
  // Placement: drops clusters ("provider+name") from an app.
  Status RemoveClusters(const std::string& id, const std::string& app,
                        const std::vector<std::string>& cluster_keys);
  // What a controller did to each cluster ("provider+name" -> text) of an
  // app, for the fleet plan to tell, kept with the context: why a placement
  // controller dropped it (source "placement"), which customizations an
  // action controller applied ("action/<intent>").
  Status NoteClusters(const std::string& id, const std::string& source, const std::string& app,
                      const std::map<std::string, std::string>& notes);
  // The note of a cluster; nullopt when none was made.
  Result<std::optional<std::string>> ClusterNote(const std::string& id, const std::string& source,
                                                 const std::string& app, const std::string& cluster_key);
  // Action: the listed clusters of the app (all of them when empty) now get
  // `rs`. Clusters that end up with identical sets share one stored copy;
  // giving every cluster the same set replaces the shared one.
  Status SetResources(const std::string& id, const std::string& app,
                      const std::vector<std::string>& cluster_keys, const ResourceSet& rs);
  // Several edits in one read and one compare-and-swap (controllers that
  // give different objects to many clusters). Cluster lists must not
  // overlap; an empty list is not allowed here.
  Status SetResourcesBatch(const std::string& id, const std::string& app,
                           const std::vector<ClusterEdit>& edits);
  // Keeps the first cluster (by key) of every anyOf group still open.
  Status ResolveGroups(const std::string& id);

  // For the hand-off transaction: the compare (not sealed yet) and the ops
  // that seal the context, set its status to `status`, mark it active and
  // queue `first` (when its type is non-empty).
  store::Compare NotSealed(const std::string& id) const;
  std::vector<store::Op> SealOps(const std::string& id, const std::string& status,
                                 const Event& first) const;
  // Ops queueing `e` on a sealed context; seq from NextEventSeq. An
  // update also marks the context it replaces (e.other) superseded by `id`.
  std::vector<store::Op> EnqueueOps(const std::string& id, int64_t seq, const Event& e) const;
  Result<int64_t> NextEventSeq(const std::string& id);

  Result<bool> Exists(const std::string& id);
  Result<bool> Sealed(const std::string& id);
  Result<std::string> GetStatus(const std::string& id);  // "" when none recorded
  Status Delete(const std::string& id);
  // Deletes contexts whose builder died before sealing them; returns how many.
  Result<int> CollectAbandoned();
  // Bytes of keys and values under the context (benchmarks, docs).
  Result<int64_t> SizeBytes(const std::string& id);

 private:
  store::Store& st_;
  const Clock& clock_;
  Random& random_;
};

}  // namespace eco::appcontext
