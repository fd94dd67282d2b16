// The ready monitor's judgement (docs/status.md, "How the ready monitor is
// built"): what an app expects on a cluster (its Shape), what a watch
// holds of the cluster's objects (ObjectStates), and from these the
// ReadyRecord of one app x cluster. Pure: no store, no clock, no lock.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"

namespace eco::status {

// How an object is matched against the plan: its app label and name, "\n"
// between (by name alone for the kinds matched by name, v1 Namespace).
std::string ObjectKey(const nlohmann::json& obj, bool by_name);

// What an app (one plan variant) expects on each of its clusters; shared
// by those clusters, so that a fleet costs a few pointers per cluster.
struct Shape {
  struct Item {
    std::string res_name;    // "<name>+<Kind>"
    size_t kind = 0;         // index in `kinds`
    std::string object_key;  // app label "\n" metadata.name
    // With drift on: the manifest (k8s::ComparedPart of it), what of it a
    // slim watch event shows, and whether it sets more than that.
    nlohmann::json compared, visible;
    bool hidden = false;
  };
  std::vector<std::pair<std::string, std::string>> kinds;  // apiVersion, kind
  std::vector<Item> items;
  // Index in `kinds` of v1 Pod when its workloads make Pods (they are
  // listed too), else -1.
  int pod_kind = -1;
  std::string label;  // its app label value

  size_t KindIndex(const std::string& av, const std::string& kind);
  const Item* ItemNamed(const std::string& res_name) const;
};

// The shape of a resource set (hooks left out); `drift` keeps the compared
// manifests too.
std::shared_ptr<const Shape> MakeShape(const appcontext::ResourceSet& rs, const std::string& label,
                                       bool drift);

// Whether each object of a kind on a cluster is ready, at which
// metadata.generation, and which status.observedGeneration its controller
// reported, by object key. Ten thousand clusters hold a million of these,
// so keys are kept as 64-bit digests (two keys of one kind on one cluster
// colliding: ~1e-16), except where the status lists objects by name (Pods,
// the cluster-only objects); the state is two words.
class ObjectStates {
 public:
  struct State {
    bool ready = false;
    int64_t generation = 0;
    int64_t observed = -1;  // status.observedGeneration, -1: none
  };
  struct Packed {
    uint64_t word = 0;      // generation << 1 | ready
    uint64_t observed = 0;  // observedGeneration + 1 (0: none)
    bool operator==(const Packed&) const = default;
  };
  explicit ObjectStates(bool keep_names = false) : keep_names_(keep_names) {}
  // Sets the object's state from the live object; false when it had it already.
  bool Set(const std::string& key, const nlohmann::json& obj);
  bool Erase(const std::string& key);
  void Clear();
  // nullopt: not on the cluster.
  std::optional<State> Get(const std::string& key) const;
  // By name, in key order (only when names are kept); Unpack the values.
  const std::map<std::string, Packed, std::less<>>& named() const { return named_; }
  static State Unpack(const Packed& v);

 private:
  bool keep_names_;
  std::unordered_map<uint64_t, Packed> hashed_;
  std::map<std::string, Packed, std::less<>> named_;
};

// What a context knows of one kind on one cluster.
struct KindObjects {
  bool synced = false;  // `objects` is the cluster's current set
  ObjectStates objects;
};

// The record of one app x cluster: nothing until every watch it needs
// (`kinds`, one per shape kind) has listed.
std::optional<appcontext::ReadyRecord> JudgeReady(const Shape& shape,
                                                  const std::vector<const KindObjects*>& kinds);

// What decides whether a record must be written again (not its time).
size_t RecordHash(const appcontext::ReadyRecord& r);

// The counts of a record by status: Ready, NotReady, NotPresent.
std::array<int32_t, 3> CountByStatus(const appcontext::ReadyRecord& r);

}  // namespace eco::status
