// The lifecycle state record of a deployment intent group or a logical
// cloud, stored at StateKey(type, keys) (catalog.h). The API writes the
// first one when a DIG is created; the scheduler appends an action at each
// lifecycle call; the status module and the ready monitor read it. This
// header is its only reader and writer:
//
//   {"statusctxid": "<first AppContext of the instantiation>",
//    "actions": [{"state": "Created", "instance": "", "time": "<RFC 3339>", "revision": 0}, ...]}
//
// Policy for a malformed record (not JSON, not an object, actions missing
// or not an array of objects, a field of the wrong type): parsing returns
// Internal naming the key and what is wrong, and the read helpers log it
// once per key and mod revision. Nobody substitutes a default for it: API
// and status callers get the error; background scanners skip that one
// record. A missing key is not malformed (nullopt).
//
// Fields an action or the record may lack are read as their zero value
// ("" or 0) and written in full; fields eco does not know are kept as they
// are, so that a replica of another version rewriting a record loses none.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::catalog {

struct LifecycleAction {
  std::string state;     // "Created", "Approved", "Instantiated", "Terminated", "Updated", ...
  std::string instance;  // the AppContext acted on ("" for Created and Approved)
  std::string time;      // RFC 3339, as NowRfc3339 writes it
  int64_t revision = 0;  // the DIG revision the instance deploys (0 before the first)
  json extra = json::object();  // unknown fields, kept
};

struct LifecycleState {
  std::string status_context;            // "statusctxid"
  std::vector<LifecycleAction> actions;  // oldest first
  json extra = json::object();           // unknown fields, kept

  // The newest action, nullptr when there is none.
  const LifecycleAction* Last() const { return actions.empty() ? nullptr : &actions.back(); }
  // The newest action's state, instance and revision ("" / 0 when none).
  std::string CurrentState() const;
  std::string LastInstance() const;
  int64_t LastRevision() const;
  // The highest revision of any action (0 when none).
  int64_t MaxRevision() const;
  // Whether any action names AppContext `id`; every AppContext named.
  bool HasInstance(const std::string& id) const;
  std::set<std::string> Instances() const;
  // The AppContext of the first action with `revision` that names one.
  std::optional<std::string> InstanceOfRevision(int64_t revision) const;

  // `time` comes from the caller's clock (NowRfc3339()).
  void Append(std::string state, std::string instance, int64_t revision, std::string time);
};

// What the API stores when a DIG is created: one Created action.
LifecycleState CreatedLifecycleState(std::string time);

json ToJson(const LifecycleState& s);
// `key` only names the record in errors.
Result<LifecycleState> LifecycleStateFromJson(const json& j, std::string_view key);
// The stored bytes; Internal when they are not JSON or not a record.
Result<LifecycleState> ParseLifecycleState(std::string_view value, std::string_view key);

// A record as read, with what a compare-and-swap on it needs.
struct StoredLifecycleState {
  std::string key;
  LifecycleState state;
  store::Revision mod_revision = 0;  // 0: not stored yet

  // The key is as read: unchanged since (missing when it was missing).
  store::Compare Unchanged() const;
  // Writes `state` at the key.
  store::Op Put() const;
};

// The record of (type, keys); nullopt when none is stored. A malformed one
// is an Internal error, logged once.
Result<std::optional<StoredLifecycleState>> ReadLifecycleState(store::Store& st, const std::string& type,
                                                               const Keys& keys);
// The same, or an empty record (mod_revision 0) when none is stored.
Result<StoredLifecycleState> ReadLifecycleStateOrEmpty(store::Store& st, const std::string& type,
                                                       const Keys& keys);
// A record from a range read of StatePrefix(type), same policy (logged once).
Result<LifecycleState> LifecycleStateOf(const store::KeyValue& kv);

}  // namespace eco::catalog
