#include "catalog/lifecycle.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

#include "common/log.h"

namespace eco::catalog {

std::string LifecycleState::CurrentState() const { return actions.empty() ? std::string() : actions.back().state; }
std::string LifecycleState::LastInstance() const {
  return actions.empty() ? std::string() : actions.back().instance;
}
int64_t LifecycleState::LastRevision() const { return actions.empty() ? 0 : actions.back().revision; }

int64_t LifecycleState::MaxRevision() const {
  int64_t m = 0;
  for (const auto& a : actions) m = std::max(m, a.revision);
  return m;
}

bool LifecycleState::HasInstance(const std::string& id) const {
  for (const auto& a : actions) {
    if (a.instance == id) return true;
  }
  return false;
}

std::set<std::string> LifecycleState::Instances() const {
  std::set<std::string> ids;
  for (const auto& a : actions) {
    if (!a.instance.empty()) ids.insert(a.instance);
  }
  return ids;
}

std::optional<std::string> LifecycleState::InstanceOfRevision(int64_t revision) const {
  for (const auto& a : actions) {
    if (a.revision == revision && !a.instance.empty()) return a.instance;
  }
  return std::nullopt;
}

void LifecycleState::Append(std::string state, std::string instance, int64_t revision, std::string time) {
  LifecycleAction a;
  a.state = std::move(state);
  a.instance = std::move(instance);
  a.time = std::move(time);
  a.revision = revision;
  actions.push_back(std::move(a));
}

LifecycleState CreatedLifecycleState(std::string time) {
  LifecycleState s;
  s.Append("Created", "", 0, std::move(time));
  return s;
}

json ToJson(const LifecycleState& s) {
  json actions = json::array();
  for (const auto& a : s.actions) {
    json e = a.extra.is_object() ? a.extra : json::object();
    e["state"] = a.state;
    e["instance"] = a.instance;
    e["time"] = a.time;
    e["revision"] = a.revision;
    actions.push_back(std::move(e));
  }
  json j = s.extra.is_object() ? s.extra : json::object();
  j["statusctxid"] = s.status_context;
  j["actions"] = std::move(actions);
  return j;
}

namespace {

Status Malformed(std::string_view key, const std::string& what) {
  return Internal("lifecycle state record " + std::string(key) + " is malformed: " + what);
}

// An optional string field: absent reads as "", any other type is an error.
Status StringOf(const json& obj, const char* field, const std::string& where, std::string_view key,
                std::string* out) {
  auto it = obj.find(field);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_string()) return Malformed(key, where + field + " is not a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

// Malformed records already reported, by key and mod revision: a poll that
// reads the same bad record again stays quiet.
void LogOnce(const std::string& key, store::Revision mod, const Status& s) {
  static std::mutex mu;
  static std::set<std::pair<std::string, store::Revision>> reported;  // guarded by mu
  {
    std::lock_guard<std::mutex> l(mu);
    if (reported.size() >= 4096) reported.clear();  // bounded: forgetting only means a repeat line
    if (!reported.emplace(key, mod).second) return;
  }
  log::Write(log::Level::kError, "catalog", s.message(),
             json{{"key", key}, {"mod_revision", static_cast<long long>(mod)}});
}

}  // namespace

Result<LifecycleState> LifecycleStateFromJson(const json& j, std::string_view key) {
  if (!j.is_object()) return Malformed(key, "not a JSON object");
  LifecycleState s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "statusctxid" && it.key() != "actions") s.extra[it.key()] = it.value();
  }
  ECO_RETURN_IF_ERROR(StringOf(j, "statusctxid", "", key, &s.status_context));
  auto actions = j.find("actions");
  if (actions == j.end()) return Malformed(key, "actions is missing");
  if (!actions->is_array()) return Malformed(key, "actions is not an array");
  for (size_t i = 0; i < actions->size(); ++i) {
    const json& a = (*actions)[i];
    const std::string where = "actions[" + std::to_string(i) + "]";
    if (!a.is_object()) return Malformed(key, where + " is not an object");
    LifecycleAction act;
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (it.key() != "state" && it.key() != "instance" && it.key() != "time" && it.key() != "revision") {
        act.extra[it.key()] = it.value();
      }
    }
    if (!a.contains("state")) return Malformed(key, where + ".state is missing");
    ECO_RETURN_IF_ERROR(StringOf(a, "state", where + ".", key, &act.state));
    ECO_RETURN_IF_ERROR(StringOf(a, "instance", where + ".", key, &act.instance));
    ECO_RETURN_IF_ERROR(StringOf(a, "time", where + ".", key, &act.time));
    if (auto r = a.find("revision"); r != a.end()) {
      // Unsigned values above int64's range are not revisions either.
      if (!r->is_number_integer() || (r->is_number_unsigned() && r->get<uint64_t>() > INT64_MAX)) {
        return Malformed(key, where + ".revision is not an integer");
      }
      act.revision = r->get<int64_t>();
    }
    s.actions.push_back(std::move(act));
  }
  return s;
}

Result<LifecycleState> ParseLifecycleState(std::string_view value, std::string_view key) {
  json j = json::parse(value.begin(), value.end(), nullptr, false);
  if (j.is_discarded()) return Malformed(key, "not JSON");
  return LifecycleStateFromJson(j, key);
}

store::Compare StoredLifecycleState::Unchanged() const {
  return mod_revision == 0 ? store::Compare::Missing(key) : store::Compare::ModRevisionIs(key, mod_revision);
}

store::Op StoredLifecycleState::Put() const { return store::Op::Put(key, ToJson(state).dump()); }

Result<LifecycleState> LifecycleStateOf(const store::KeyValue& kv) {
  auto s = ParseLifecycleState(kv.value, kv.key);
  if (!s.ok()) LogOnce(kv.key, kv.mod_revision, s.status());
  return s;
}

Result<std::optional<StoredLifecycleState>> ReadLifecycleState(store::Store& st, const std::string& type,
                                                               const Keys& keys) {
  const std::string key = StateKey(type, keys);
  auto kv = st.Get(key);
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<StoredLifecycleState>();
  auto s = LifecycleStateOf(**kv);
  if (!s.ok()) return s.status();
  return std::optional<StoredLifecycleState>(StoredLifecycleState{key, std::move(*s), (*kv)->mod_revision});
}

Result<StoredLifecycleState> ReadLifecycleStateOrEmpty(store::Store& st, const std::string& type, const Keys& keys) {
  auto r = ReadLifecycleState(st, type, keys);
  if (!r.ok()) return r.status();
  if (r->has_value()) return std::move(**r);
  return StoredLifecycleState{StateKey(type, keys), LifecycleState{}, 0};
}

}  // namespace eco::catalog
