#include "k8s/openapi_schema.h"

#include <map>
#include <mutex>

#include "k8s/client.h"
#include "k8s/paths.h"

namespace eco::k8s {

using json = nlohmann::json;

namespace {

// Documents by their server-relative URL, which carries the content hash:
// 10,000 clusters of one Kubernetes version share one parsed document.
// Entries are weak so that documents no cluster uses any more go.
std::mutex g_docs_mu;
std::map<std::string, std::weak_ptr<const json>, std::less<>> g_docs;

constexpr std::string_view kRefPrefix = "#/components/schemas/";

class Pruner {
 public:
  explicit Pruner(const json& schemas) : schemas_(schemas) {}

  // `named`: the schema was reached by reference (a named type), where an
  // object schema without properties is opaque (RawExtension, FieldsV1);
  // written inline (a CRD's own schema) it declares no field at all.
  void Walk(const json& schema, bool named, json& value, const std::string& path) {
    const json* s = &schema;
    for (int hops = 0; hops < 8; ++hops) {  // allOf/$ref chains are short; a cycle is not followed
      const json* next = Resolve(*s);
      if (!next) break;
      s = next;
      named = true;
    }
    if (!s->is_object() || Flag(*s, "x-kubernetes-preserve-unknown-fields")) return;
    if (value.is_array()) {
      auto items = s->find("items");
      if (items == s->end()) return;
      for (size_t i = 0; i < value.size(); ++i) {
        Walk(*items, false, value[i], path + "[" + std::to_string(i) + "]");
      }
      return;
    }
    if (!value.is_object()) return;
    auto props = s->find("properties");
    auto extra = s->find("additionalProperties");
    const bool embedded = Flag(*s, "x-kubernetes-embedded-resource");
    const bool has_props = props != s->end() && props->is_object();
    const bool has_extra = extra != s->end() && (extra->is_object() || (extra->is_boolean() && extra->get<bool>()));
    if (!has_props && !has_extra) {
      // An object type with nothing declared: opaque when named; a schema
      // that says nothing of the type (no "type") accepts anything too.
      if (named || !s->contains("type")) return;
    }
    for (auto it = value.begin(); it != value.end();) {
      const std::string& key = it.key();
      const std::string sub = path.empty() ? key : path + "." + key;
      if (has_props) {
        if (auto p = props->find(key); p != props->end()) {
          Walk(*p, false, it.value(), sub);
          ++it;
          continue;
        }
      }
      if (embedded && (key == "apiVersion" || key == "kind" || key == "metadata")) {
        ++it;
        continue;
      }
      if (has_extra) {
        if (extra->is_object()) Walk(*extra, false, it.value(), sub);
        ++it;
        continue;
      }
      dropped_.push_back(sub);
      it = value.erase(it);
    }
  }

  std::vector<std::string> dropped_;

 private:
  static bool Flag(const json& s, const char* name) {
    auto f = s.find(name);
    return f != s.end() && f->is_boolean() && f->get<bool>();
  }

  // The schema a `$ref`, or an allOf of one `$ref` (how v3 documents write
  // a reference with a description or default beside it), points to.
  const json* Resolve(const json& s) const {
    if (!s.is_object()) return nullptr;
    const json* ref = nullptr;
    if (auto r = s.find("$ref"); r != s.end()) {
      ref = &*r;
    } else if (auto a = s.find("allOf"); a != s.end() && a->is_array() && a->size() == 1 && (*a)[0].is_object()) {
      if (auto r2 = (*a)[0].find("$ref"); r2 != (*a)[0].end()) ref = &*r2;
    }
    if (!ref || !ref->is_string()) return nullptr;
    std::string_view name = ref->get_ref<const std::string&>();
    if (name.substr(0, kRefPrefix.size()) != kRefPrefix) return nullptr;
    name.remove_prefix(kRefPrefix.size());
    auto it = schemas_.find(std::string(name));
    return it == schemas_.end() ? nullptr : &*it;
  }

  const json& schemas_;
};

bool MatchesGvk(const json& schema, std::string_view group, std::string_view version, std::string_view kind) {
  auto g = schema.find("x-kubernetes-group-version-kind");
  if (g == schema.end() || !g->is_array()) return false;
  for (const auto& e : *g) {
    if (e.is_object() && e.value("group", "") == group && e.value("version", "") == version &&
        e.value("kind", "") == kind)
      return true;
  }
  return false;
}

}  // namespace

Result<OpenApiDoc> FetchOpenApiDoc(ClusterClient& client, std::string_view api_version) {
  ECO_ASSIGN_OR_RETURN(GroupVersion gv, ParseApiVersion(api_version));
  const std::string key = GroupVersionPath(gv).substr(1);  // the index names "api/v1", "apis/G/V"
  ECO_ASSIGN_OR_RETURN(std::string index_body, client.GetRaw("/openapi/v3"));
  json index = json::parse(index_body, nullptr, false);
  if (index.is_discarded() || !index.is_object() || !index.contains("paths") || !index["paths"].is_object()) {
    return Internal("/openapi/v3: not an OpenAPI v3 discovery document");
  }
  auto entry = index["paths"].find(key);
  if (entry == index["paths"].end() || !entry->is_object() || !entry->contains("serverRelativeURL") ||
      !(*entry)["serverRelativeURL"].is_string()) {
    return NotFound("/openapi/v3 lists no document for " + key);
  }
  const std::string url = (*entry)["serverRelativeURL"].get<std::string>();
  {
    std::lock_guard<std::mutex> lock(g_docs_mu);
    if (auto it = g_docs.find(url); it != g_docs.end()) {
      if (auto doc = it->second.lock()) return OpenApiDoc(std::move(doc));
    }
  }
  ECO_ASSIGN_OR_RETURN(std::string body, client.GetRaw(url));
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Internal(url + ": not a JSON document");
  // Only the schemas are kept: paths are most of a document's size.
  json schemas = doc.contains("components") && doc["components"].is_object() && doc["components"].contains("schemas")
                     ? std::move(doc["components"]["schemas"])
                     : json::object();
  auto shared = std::make_shared<const json>(json{{"components", {{"schemas", std::move(schemas)}}}});
  std::lock_guard<std::mutex> lock(g_docs_mu);
  for (auto it = g_docs.begin(); it != g_docs.end();) it = it->second.expired() ? g_docs.erase(it) : std::next(it);
  g_docs[url] = shared;
  return OpenApiDoc(std::move(shared));
}

Result<std::vector<std::string>> DropUndeclaredFields(const json& doc, json& obj) {
  if (!obj.is_object()) return Invalid("not a Kubernetes object");
  const std::string av = obj.value("apiVersion", ""), kind = obj.value("kind", "");
  ECO_ASSIGN_OR_RETURN(GroupVersion gv, ParseApiVersion(av));
  const json* schemas = nullptr;
  if (auto c = doc.find("components"); c != doc.end() && c->is_object()) {
    if (auto s = c->find("schemas"); s != c->end() && s->is_object()) schemas = &*s;
  }
  if (!schemas) return NotFound("the OpenAPI document has no schemas");
  for (const auto& [name, schema] : schemas->items()) {
    if (!MatchesGvk(schema, gv.group, gv.version, kind)) continue;
    Pruner p(*schemas);
    p.Walk(schema, true, obj, "");
    return std::move(p.dropped_);
  }
  return NotFound("the cluster's OpenAPI v3 document has no schema for " + av + " " + kind);
}

}  // namespace eco::k8s
