#include "appcontext/event_record.h"

#include <mutex>
#include <set>

#include "common/log.h"

namespace eco::appcontext {

using nlohmann::json;

json ToJson(const EventRecord& e) {
  json j = {{"event", e.type}, {"status", e.status}};
  if (!e.time.empty()) j["time"] = e.time;
  if (!e.other.empty()) j["other"] = e.other;
  if (!e.clusters.empty()) j["clusters"] = e.clusters;
  if (!e.finished.empty()) j["finished"] = e.finished;
  if (!e.message.empty()) j["message"] = e.message;
  if (!e.trace.empty()) j["trace"] = e.trace;
  if (!e.rollout.is_null()) j["rollout"] = e.rollout;
  return j;
}

namespace {

Status StringField(const json& j, const char* key, bool required, std::string* out) {
  auto it = j.find(key);
  if (it == j.end()) return required ? Invalid(std::string("no \"") + key + "\"") : Status::Ok();
  if (!it->is_string()) return Invalid(std::string("\"") + key + "\" is not a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

Result<EventRecord> EventFromJson(const json& j) {
  if (!j.is_object()) return Invalid("an event record is a JSON object");
  EventRecord e;
  ECO_RETURN_IF_ERROR(StringField(j, "event", true, &e.type));
  ECO_RETURN_IF_ERROR(StringField(j, "status", true, &e.status));
  ECO_RETURN_IF_ERROR(StringField(j, "other", false, &e.other));
  ECO_RETURN_IF_ERROR(StringField(j, "time", false, &e.time));
  ECO_RETURN_IF_ERROR(StringField(j, "finished", false, &e.finished));
  ECO_RETURN_IF_ERROR(StringField(j, "message", false, &e.message));
  if (auto c = j.find("clusters"); c != j.end()) {
    if (!c->is_array()) return Invalid("\"clusters\" is not a list");
    for (const auto& k : *c) {
      if (!k.is_string()) return Invalid("\"clusters\" holds a value that is not a string");
      e.clusters.push_back(k.get<std::string>());
    }
  }
  if (auto t = j.find("trace"); t != j.end()) {
    if (!t->is_object()) return Invalid("\"trace\" is not an object");
    for (const auto& [k, v] : t->items()) {
      if (v.is_string()) e.trace[k] = v.get<std::string>();
    }
  }
  if (auto r = j.find("rollout"); r != j.end()) {
    if (!r->is_object() && !r->is_null()) return Invalid("\"rollout\" is not an object");
    e.rollout = *r;
  }
  return e;
}

Result<EventRecord> ParseEvent(const store::KeyValue& kv) {
  auto e = EventFromJson(json::parse(kv.value, nullptr, false));
  if (e.ok()) return e;
  Status err = Internal("malformed event record " + kv.key + ": " + e.status().message());
  static std::mutex mu;
  static std::set<std::pair<std::string, store::Revision>> logged;
  std::lock_guard<std::mutex> g(mu);
  if (logged.emplace(kv.key, kv.mod_revision).second) {
    log::Write(log::Level::kError, "appcontext", err.message(), {log::Field("key", kv.key)});
  }
  return err;
}

}  // namespace eco::appcontext
