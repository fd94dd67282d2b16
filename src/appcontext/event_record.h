// One entry of an AppContext's event queue, as stored under
// /eco/ac/<id>/events/<seq> (appcontext::EventPrefix): queued by the
// scheduler and the API (Contexts::EnqueueOps), run and closed by rsync.
// Every reader and writer goes through this type.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace eco::appcontext {

struct EventRecord {
  std::string type;    // "instantiate", "terminate", "update", "update-delete", "resync"
  std::string status;  // "pending", then "done", "error" or "skip"
  std::string other;   // update: the context replaced; update-delete: the new one
  std::vector<std::string> clusters;  // resync: the cluster keys; empty = all
  std::string time;      // RFC 3339: when it was queued
  std::string finished;  // RFC 3339: when rsync closed it
  std::string message;   // why it failed or was skipped
  // The W3C trace context of the request that queued it (empty: untraced).
  std::map<std::string, std::string> trace;
  // instantiate, update: the rollout strategy it runs by (rollout.h); null: none.
  nlohmann::json rollout = nullptr;

  bool pending() const { return status == "pending"; }
};

nlohmann::json ToJson(const EventRecord& e);
// A malformed record (not an object, no event type or status, fields of
// the wrong type) is an error naming what is wrong; never a default.
Result<EventRecord> EventFromJson(const nlohmann::json& j);
// Parses a stored value; errors name `key`. A malformed record is logged
// once per key and revision, however often it is read.
Result<EventRecord> ParseEvent(const store::KeyValue& kv);

}  // namespace eco::appcontext
