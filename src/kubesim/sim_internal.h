// Internals shared by the simulator's REST layer (sim.cc) and its
// controllers (controllers.cc). Not a public interface.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "kubesim/http.h"
#include "kubesim/openapi.h"
#include "kubesim/selector.h"
#include "kubesim/sim.h"
#include "kubesim/types.h"

namespace eco::kubesim {

using Clock = std::chrono::steady_clock;

// One stored object version; immutable once stored, shared by the live map
// and in-flight responses. The object is kept as its text; what is looked
// up across objects (selectors, owners, the controllers' scans) is kept
// parsed in `view`, which leaves out the bulky parts nothing reads there
// (TrimmedView): parsed JSON takes about seven times the bytes of its
// text, and the live objects were most of kube-sim's memory. The watch
// history keeps light copies: the text alone.
struct Entry {
  Json view;  // null in a light copy
  std::shared_ptr<const std::string> body;  // the whole object, serialised once
  uint64_t rv = 0;
  bool light = false;
  const std::string& text() const { return *body; }
  // The whole object, parsed from the text.
  Json Object() const { return Json::parse(*body); }
};
using EntryPtr = std::shared_ptr<const Entry>;

// The object without managedFields, annotations, ConfigMap and Secret
// data, pod templates, volumes, container statuses, and containers but
// their names and resources: the parts no lookup across objects reads.
Json TrimmedView(const Json& obj);

// A stored entry for `obj` (whose resourceVersion is already set).
EntryPtr MakeEntry(const Json& obj, uint64_t rv);

// The history's copy of an entry: its text and resourceVersion only.
inline EntryPtr Light(const EntryPtr& e) {
  if (!e || e->light) return e;
  auto l = std::make_shared<Entry>();
  l->body = e->body;
  l->rv = e->rv;
  l->light = true;
  return l;
}

struct WatchEvent {
  uint64_t rv;
  const char* type;  // "ADDED", "MODIFIED", "DELETED"
  std::string storage_key;
  std::string ns;
  EntryPtr entry;
  EntryPtr prev;  // MODIFIED: the object before (a selector it leaves sees DELETED)
};

struct Watcher {
  std::string storage_key;
  std::string ns;  // "" = every namespace
  LabelSelector labels;
  FieldSelector fields;
  std::shared_ptr<Stream> stream;
  bool bookmarks = false;
  std::string api_version;  // for bookmark objects
  std::string kind;
  Clock::time_point deadline;
  Clock::time_point next_bookmark;
};

struct Cluster {
  std::string name;
  std::string token;

  // Requests that reached the cluster, per User-Agent (GET /sim/clusters/NAME/requests).
  std::mutex requests_mu;
  std::map<std::string, uint64_t> requests_by_agent;  // guarded by requests_mu
  // Requests by HTTP method (GET, PATCH, DELETE...): a test tells writes
  // from the reads and watches of the same client.
  std::map<std::string, uint64_t> requests_by_method;  // guarded by requests_mu

  std::mutex mu;  // guards everything below
  uint64_t rv = 1;
  // storage key ("apps/deployments") → "ns/name" → object.
  std::unordered_map<std::string, std::map<std::string, EntryPtr>> store;
  std::vector<ResourceType> crd_types;
  // /openapi/v3 documents of custom group-versions ("apis/G/V"), built on
  // first request; emptied whenever crd_types is rebuilt.
  std::map<std::string, std::shared_ptr<const OpenApiDoc>> crd_openapi;
  std::deque<WatchEvent> history;  // bounded; oldest first
  uint64_t history_floor = 0;      // events at or below this rv are gone
  std::vector<std::shared_ptr<Watcher>> watchers;
  // When each bound pod was bound (its readiness clock).
  std::unordered_map<std::string, Clock::time_point> pod_bound_at;
  std::unordered_map<std::string, Clock::time_point> created_at;  // jobs, services, pvcs, crds
  std::unordered_map<std::string, Clock::time_point> terminating_since;  // namespaces being deleted
  uint64_t name_seq = 0;
  std::mt19937_64 rng;  // SimOptions::seed mixed with the cluster's name
  std::vector<std::string> load_balancer_pool;  // ClusterSpec::load_balancer_pool
};

// Work for the controllers: reconcile one object of one cluster at a time.
struct WorkItem {
  Clock::time_point when;
  Cluster* cluster;
  std::string storage_key;
  std::string key;  // "ns/name"
  bool operator>(const WorkItem& o) const { return when > o.when; }
};

// The value at a path of object keys, or null when any step is missing.
inline const Json& Field(const Json& o, std::initializer_list<const char*> path) {
  static const Json kNull;
  const Json* cur = &o;
  for (const char* p : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(p);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

// The finalizer a deleted CustomResourceDefinition waits on while its
// custom resources are removed.
inline constexpr const char* kCrdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io";

std::string NowRfc3339();
std::string NewUid(Cluster& c);  // c.mu held
std::string ObjectKey(const std::string& ns, const std::string& name);

class SimImpl;

// The controllers' view of the simulator: object writes under the cluster lock.
class ClusterOps {
 public:
  ClusterOps(SimImpl& sim, Cluster& c) : sim_(sim), c_(c) {}
  EntryPtr Find(const std::string& storage_key, const std::string& key) const;
  const std::map<std::string, EntryPtr>* Collection(const std::string& storage_key) const;
  // Stores `obj` (ADDED if new, MODIFIED otherwise) unless it equals what is
  // stored; returns the stored entry. `known_changed` skips the comparison
  // when the caller has already established a difference.
  EntryPtr Put(const std::string& storage_key, Json obj, bool known_changed = false);
  // Removes an object now (no finalizers); cascades to dependents.
  void Remove(const std::string& storage_key, const std::string& key);
  // Deletes as the API does: finalizers → deletionTimestamp; else Remove.
  void Delete(const std::string& storage_key, const std::string& key, const std::string& propagation);
  void Enqueue(const std::string& storage_key, const std::string& key, Clock::duration after = {});
  const SimOptions& options() const;
  Cluster& cluster() { return c_; }
  SimImpl& sim() { return sim_; }

 private:
  SimImpl& sim_;
  Cluster& c_;
};

// controllers.cc
void Reconcile(ClusterOps& ops, const std::string& storage_key, const std::string& key);
// Called after every write of an object (under the lock) to queue the
// controllers that care about it.
void OnWrite(ClusterOps& ops, const std::string& storage_key, const Json& obj, bool deleted);
// Objects a new cluster starts with: namespaces and nodes.
void Bootstrap(ClusterOps& ops, const std::vector<NodeSpec>& nodes);
// Kubernetes quantities ("500m", "16Gi") in milli-units.
bool ParseQuantityMilli(const std::string& text, long double* out);

}  // namespace eco::kubesim
