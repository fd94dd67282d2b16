#include "kubesim/openapi.h"

#include <openssl/evp.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "common/json_fields.h"

namespace eco::kubesim {

namespace {

constexpr const char* kTable =
#include "kubesim/openapi_v3.inc"
    ;

constexpr const char* kSchemaRef = "#/components/schemas/";
constexpr const char* kMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.";

// The generated table, parsed once: {"version", "schemas", "documents"}.
const Json& Table() {
  static const Json table = [] {
    Json t = Json::parse(kTable, nullptr, /*allow_exceptions=*/false);
    if (!t.is_object() || !t["schemas"].is_object() || !t["documents"].is_object()) {
      std::fprintf(stderr, "kube-sim: the compiled-in OpenAPI v3 table is malformed\n");
      return Json::object(
          {{"version", ""}, {"schemas", Json::object()}, {"documents", Json::object()}});
    }
    return t;
  }();
  return table;
}

std::string Sha512Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha512(), nullptr) != 1) return "";
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

OpenApiDoc Finish(const Json& info, Json schemas) {
  Json doc = {{"openapi", "3.0.0"},
              {"info", info},
              {"paths", Json::object()},
              {"components", {{"schemas", std::move(schemas)}}}};
  OpenApiDoc out;
  out.body = doc.dump();
  out.hash = Sha512Hex(out.body);
  return out;
}

Json Ref(const std::string& name) {
  return {{"allOf", Json::array({{{"$ref", kSchemaRef + name}}})}};
}

// "example.eco.io" → "io.eco.example", as the API server prefixes a CRD's schema names.
std::string ReversedGroup(const std::string& group) {
  std::vector<std::string> labels;
  for (size_t i = 0;;) {
    size_t dot = group.find('.', i);
    labels.push_back(group.substr(i, dot == std::string::npos ? std::string::npos : dot - i));
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  std::string out;
  for (auto it = labels.rbegin(); it != labels.rend(); ++it) out += (out.empty() ? "" : ".") + *it;
  return out;
}

Json Gvk(const std::string& group, const std::string& version, const std::string& kind) {
  return Json::array({{{"group", group}, {"kind", kind}, {"version", version}}});
}

}  // namespace

const OpenApiDoc* BuiltinOpenApiDoc(std::string_view path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<const OpenApiDoc>, std::less<>>
      built;  // guarded by mu
  const Json& table = Table();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = built.find(path); it != built.end()) return it->second.get();
  auto names = table["documents"].find(std::string(path));
  if (names == table["documents"].end()) return nullptr;
  Json schemas = Json::object();
  for (const auto& n : *names) {
    const std::string name = n.get<std::string>();
    if (auto s = table["schemas"].find(name); s != table["schemas"].end()) schemas[name] = *s;
  }
  auto doc = std::make_unique<const OpenApiDoc>(
      Finish({{"title", "Kubernetes"}, {"version", table["version"]}}, std::move(schemas)));
  return built.emplace(std::string(path), std::move(doc)).first->second.get();
}

OpenApiDoc CrdOpenApiDoc(const std::string& group, const std::string& version,
                         const std::vector<Json>& crds) {
  const Json& table = Table();
  Json schemas = Json::object();
  const std::string prefix = ReversedGroup(group) + "." + version + ".";
  for (const Json& crd : crds) {
    const Json& spec = crd.value("spec", Json::object());
    const Json& names = spec.value("names", Json::object());
    const std::string kind = StringField(names, "kind");
    const std::string list_kind = StringField(names, "listKind", kind + "List");
    if (kind.empty()) continue;
    Json schema = {{"type", "object"}};
    for (const auto& v : spec.value("versions", Json::array())) {
      if (StringField(v, "name") != version) continue;
      const Json& given = v.value("schema", Json::object());
      if (given.is_object() && given.contains("openAPIV3Schema") &&
          given["openAPIV3Schema"].is_object()) {
        schema = given["openAPIV3Schema"];
      }
    }
    Json& props = schema["properties"];
    if (!props.is_object()) props = Json::object();
    props["apiVersion"] = {{"type", "string"}};
    props["kind"] = {{"type", "string"}};
    props["metadata"] = Ref(std::string(kMeta) + "ObjectMeta");
    schema["x-kubernetes-group-version-kind"] = Gvk(group, version, kind);
    schemas[prefix + kind] = std::move(schema);
    // The list's items refer to the kind directly, as the API server writes them.
    schemas[prefix + list_kind] = {
        {"required", Json::array({"items"})},
        {"properties",
         {{"apiVersion", {{"type", "string"}}},
          {"items", {{"type", "array"}, {"items", {{"$ref", kSchemaRef + prefix + kind}}}}},
          {"kind", {{"type", "string"}}},
          {"metadata", Ref(std::string(kMeta) + "ListMeta")}}},
        {"x-kubernetes-group-version-kind", Gvk(group, version, list_kind)}};
  }
  // The meta schemas the operations refer to, without their kinds' GVKs.
  for (const char* meta : {"DeleteOptions", "FieldsV1", "ListMeta", "ManagedFieldsEntry",
                           "ObjectMeta", "OwnerReference", "Patch", "Preconditions", "Status",
                           "StatusCause", "StatusDetails", "Time"}) {
    const std::string name = std::string(kMeta) + meta;
    if (auto s = table["schemas"].find(name); s != table["schemas"].end()) {
      Json copy = *s;
      copy.erase("x-kubernetes-group-version-kind");
      schemas[name] = std::move(copy);
    }
  }
  return Finish({{"title", "Kubernetes CRD Swagger"}, {"version", "v0.1.0"}}, std::move(schemas));
}

std::string OpenApiIndexJson(const std::vector<std::pair<std::string, std::string>>& docs) {
  Json paths = Json::object();
  for (const auto& [path, hash] : docs) {
    paths[path] = {{"serverRelativeURL", "/openapi/v3/" + path + "?hash=" + hash}};
  }
  return Json{{"paths", std::move(paths)}}.dump();
}

}  // namespace eco::kubesim
