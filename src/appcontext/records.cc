#include "appcontext/records.h"

#include <simdjson.h>

#include <type_traits>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"

namespace eco::appcontext {

using nlohmann::json;

std::string DeployedPrefix(const std::string& s) { return ContextPrefix(s) + "deployed/"; }
std::string ReadyPrefix(const std::string& s) { return ContextPrefix(s) + "ready/"; }
std::string DeployedKey(const std::string& s, const std::string& app, const std::string& c) {
  return DeployedPrefix(s) + app + "/" + c;
}
std::string ReadyKey(const std::string& s, const std::string& app, const std::string& c) {
  return ReadyPrefix(s) + app + "/" + c;
}

json ToJson(const DeployedRecord& r) {
  json res = json::object();
  for (const auto& [name, d] : r.resources) {
    json e = {{"status", d.status}, {"ref", d.ref}, {"time", d.time}};
    if (!d.error.empty()) e["error"] = d.error;
    if (d.shared) e["shared"] = true;
    if (!d.warnings.empty()) e["warnings"] = d.warnings;
    if (d.generation > 0) e["generation"] = d.generation;
    res[name] = std::move(e);
  }
  json j = {{"connectivity", r.connectivity}, {"resources", std::move(res)}};
  if (!r.message.empty()) j["message"] = r.message;
  return j;
}

Result<DeployedRecord> DeployedFromJson(const json& j) {
  if (!j.is_object()) return Internal("deployed record is not a JSON object");
  DeployedRecord r;
  r.connectivity = catalog::StringField(j, "connectivity");
  if (r.connectivity.empty()) r.connectivity = "Unknown";
  r.message = catalog::StringField(j, "message");
  if (auto res = j.find("resources"); res != j.end() && res->is_object()) {
    for (auto& [name, e] : res->items()) {
      if (!e.is_object()) continue;
      auto shared = e.find("shared");
      ResourceDeployed& d = r.resources[name];
      d = {catalog::StringField(e, "status"), catalog::StringField(e, "ref"), catalog::StringField(e, "error"),
           catalog::StringField(e, "time"), shared != e.end() && shared->is_boolean() && shared->get<bool>(), {}};
      if (auto w = e.find("warnings"); w != e.end() && w->is_array()) {
        for (const auto& x : *w) {
          if (x.is_string()) d.warnings.push_back(x.get<std::string>());
        }
      }
      if (auto g = e.find("generation"); g != e.end() && g->is_number_integer()) d.generation = g->get<int64_t>();
    }
  }
  return r;
}

json ToJson(const ReadyRecord& r) {
  json j = {{"resources", r.resources}, {"ready", r.ready}, {"time", r.time}};
  if (!r.cluster_only.empty()) j["clusterOnly"] = r.cluster_only;
  if (!r.generations.empty()) j["generations"] = r.generations;
  if (!r.observed_generations.empty()) j["observedGenerations"] = r.observed_generations;
  return j;
}

Result<ReadyRecord> ReadyFromJson(const json& j) {
  if (!j.is_object()) return Internal("ready record is not a JSON object");
  ReadyRecord r;
  if (auto res = j.find("resources"); res != j.end() && res->is_object()) {
    for (auto& [name, v] : res->items()) {
      if (v.is_string()) r.resources[name] = v.get<std::string>();
    }
  }
  if (auto co = j.find("clusterOnly"); co != j.end() && co->is_object()) {
    for (auto& [name, v] : co->items()) {
      if (v.is_string()) r.cluster_only[name] = v.get<std::string>();
    }
  }
  if (auto g = j.find("generations"); g != j.end() && g->is_object()) {
    for (auto& [name, v] : g->items()) {
      if (v.is_number_integer()) r.generations[name] = v.get<int64_t>();
    }
  }
  if (auto g = j.find("observedGenerations"); g != j.end() && g->is_object()) {
    for (auto& [name, v] : g->items()) {
      if (v.is_number_integer()) r.observed_generations[name] = v.get<int64_t>();
    }
  }
  if (auto rd = j.find("ready"); rd != j.end() && rd->is_boolean()) r.ready = rd->get<bool>();
  r.time = catalog::StringField(j, "time");
  return r;
}

// The stored text is read with simdjson, straight into the record: status
// answers parse every record of a DIG (200,000 at 10,000 clusters x 10
// apps), and a JSON tree per record cost most of their time. Same rules as
// the *FromJson readers: a field of the wrong type reads as absent.
namespace {

namespace dom = simdjson::dom;

json ParseValue(std::string_view value) { return json::parse(value.begin(), value.end(), nullptr, false); }

dom::parser& Parser() {
  thread_local dom::parser parser;
  return parser;
}

std::string Str(dom::object o, std::string_view key) {
  std::string_view v;
  return o[key].get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
}

// Every member of the object o[key] that is a T (a string or an integer), by name.
template <typename T>
void Members(dom::object o, std::string_view key, std::map<std::string, T>& out) {
  dom::object m;
  if (o[key].get(m) != simdjson::SUCCESS) return;
  for (auto [name, v] : m) {
    if constexpr (std::is_same_v<T, std::string>) {
      std::string_view x;
      if (v.get(x) == simdjson::SUCCESS) out[std::string(name)] = std::string(x);
    } else {
      T x;
      if (v.get(x) == simdjson::SUCCESS) out[std::string(name)] = x;
    }
  }
}

Result<dom::object> Root(std::string_view value, const char* what) {
  dom::object root;
  if (Parser().parse(value.data(), value.size(), /*realloc_if_needed=*/true).get(root) != simdjson::SUCCESS) {
    return Internal(std::string(what) + " record is not a JSON object");
  }
  return root;
}

}  // namespace

Result<DeployedRecord> ParseDeployed(std::string_view value) {
  ECO_ASSIGN_OR_RETURN(dom::object root, Root(value, "deployed"));
  DeployedRecord r;
  r.connectivity = Str(root, "connectivity");
  if (r.connectivity.empty()) r.connectivity = "Unknown";
  r.message = Str(root, "message");
  dom::object res;
  if (root["resources"].get(res) == simdjson::SUCCESS) {
    for (auto [name, v] : res) {
      dom::object e;
      if (v.get(e) != simdjson::SUCCESS) continue;
      ResourceDeployed& d = r.resources[std::string(name)];
      bool shared = false;
      d = {Str(e, "status"), Str(e, "ref"), Str(e, "error"), Str(e, "time"),
           e["shared"].get(shared) == simdjson::SUCCESS && shared, {}};
      dom::array w;
      if (e["warnings"].get(w) == simdjson::SUCCESS) {
        for (auto x : w) {
          std::string_view sv;
          if (x.get(sv) == simdjson::SUCCESS) d.warnings.emplace_back(sv);
        }
      }
      int64_t g = 0;
      if (e["generation"].get(g) == simdjson::SUCCESS) d.generation = g;
    }
  }
  return r;
}

Result<ReadyRecord> ParseReady(std::string_view value) {
  ECO_ASSIGN_OR_RETURN(dom::object root, Root(value, "ready"));
  ReadyRecord r;
  Members(root, "resources", r.resources);
  Members(root, "clusterOnly", r.cluster_only);
  Members(root, "generations", r.generations);
  Members(root, "observedGenerations", r.observed_generations);
  bool ready = false;
  if (root["ready"].get(ready) == simdjson::SUCCESS) r.ready = ready;
  r.time = Str(root, "time");
  return r;
}

Result<std::optional<DeployedRecord>> ReadDeployed(store::Store& st, const std::string& s, const std::string& app,
                                                   const std::string& c) {
  auto kv = st.Get(DeployedKey(s, app, c));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<DeployedRecord>();
  auto r = ParseDeployed((*kv)->value);
  if (!r.ok()) return r.status();
  return std::optional<DeployedRecord>(std::move(*r));
}

Result<std::optional<ReadyRecord>> ReadReady(store::Store& st, const std::string& s, const std::string& app,
                                             const std::string& c) {
  auto kv = st.Get(ReadyKey(s, app, c));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<ReadyRecord>();
  auto r = ParseReady((*kv)->value);
  if (!r.ok()) return r.status();
  return std::optional<ReadyRecord>(std::move(*r));
}

std::string DriftPrefix(const std::string& s) { return ContextPrefix(s) + "drift/"; }
std::string DriftKey(const std::string& s, const std::string& app, const std::string& c) {
  return DriftPrefix(s) + app + "/" + c;
}

json ToJson(const ResourceDrift& d) {
  json fields = json::array();
  for (const auto& f : d.fields) {
    json e = {{"path", f.path}, {"desired", f.desired}, {"live", f.live}};
    if (!f.manager.empty()) e["manager"] = f.manager;
    fields.push_back(std::move(e));
  }
  json j = {{"drifted", d.drifted}, {"deleted", d.deleted}, {"fields", std::move(fields)}};
  if (!d.since.empty()) j["since"] = d.since;
  if (d.repairs > 0) j["repairs"] = d.repairs;
  if (!d.last_repair.empty()) j["lastRepair"] = d.last_repair;
  return j;
}

json ToJson(const DriftRecord& r) {
  json res = json::object();
  for (const auto& [name, d] : r.resources) res[name] = ToJson(d);
  return {{"resources", std::move(res)}};
}

Result<DriftRecord> DriftFromJson(const json& j) {
  if (!j.is_object()) return Internal("drift record is not a JSON object");
  DriftRecord r;
  auto res = j.find("resources");
  if (res == j.end() || !res->is_object()) return r;
  for (auto& [name, e] : res->items()) {
    if (!e.is_object()) continue;
    ResourceDrift& d = r.resources[name];
    auto flag = [&](const char* k) {
      auto it = e.find(k);
      return it != e.end() && it->is_boolean() && it->get<bool>();
    };
    d.drifted = flag("drifted");
    d.deleted = flag("deleted");
    d.since = catalog::StringField(e, "since");
    d.last_repair = catalog::StringField(e, "lastRepair");
    if (auto n = e.find("repairs"); n != e.end() && n->is_number_integer()) d.repairs = n->get<int64_t>();
    if (auto fs = e.find("fields"); fs != e.end() && fs->is_array()) {
      for (const auto& f : *fs) {
        if (!f.is_object()) continue;
        d.fields.push_back({catalog::StringField(f, "path"), f.value("desired", json()), f.value("live", json()),
                            catalog::StringField(f, "manager")});
      }
    }
  }
  return r;
}

Result<DriftRecord> ParseDrift(std::string_view value) { return DriftFromJson(ParseValue(value)); }

Result<std::optional<DriftRecord>> ReadDrift(store::Store& st, const std::string& s, const std::string& app,
                                             const std::string& c) {
  auto kv = st.Get(DriftKey(s, app, c));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<DriftRecord>();
  auto r = ParseDrift((*kv)->value);
  if (!r.ok()) return r.status();
  return std::optional<DriftRecord>(std::move(*r));
}

std::string UnreachableKey(const std::string& cluster_key) {
  return std::string(kUnreachablePrefix) + cluster_key;
}

json ToJson(const UnreachableRecord& r) { return {{"since", r.since}, {"error", r.error}}; }

UnreachableRecord UnreachableFromJson(const json& j) {
  return {catalog::StringField(j, "since"), catalog::StringField(j, "error")};
}

Result<std::map<std::string, UnreachableRecord>> ReadUnreachable(store::Store& st) {
  auto r = st.Range(std::string(kUnreachablePrefix));
  if (!r.ok()) return r.status();
  std::map<std::string, UnreachableRecord> out;
  for (const auto& kv : r->kvs) {
    out.emplace(kv.key.substr(kUnreachablePrefix.size()), UnreachableFromJson(ParseValue(kv.value)));
  }
  return out;
}

Result<std::optional<UnreachableRecord>> ReadUnreachable(store::Store& st, const std::string& cluster_key) {
  auto kv = st.Get(UnreachableKey(cluster_key));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<UnreachableRecord>();
  return std::optional<UnreachableRecord>(UnreachableFromJson(ParseValue((*kv)->value)));
}

}  // namespace eco::appcontext
