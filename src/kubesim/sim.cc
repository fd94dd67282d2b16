// The Kubernetes API semantics of kube-sim's clusters: routing, discovery,
// create/get/list/update/patch/delete/watch, errors as Status objects.
#include "kubesim/sim.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <queue>
#include <random>
#include <set>

#include <yaml-cpp/yaml.h>

#include "common/yaml_scalar.h"
#include "kubesim/patch.h"
#include "kubesim/schema.h"
#include "kubesim/sim_internal.h"
#include "kubesim/update_rules.h"

namespace eco::kubesim {

// ---------------------------------------------------------------------------
// Small helpers

std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NewUid(Cluster& c) {
  uint64_t a = c.rng(), b = c.rng();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string ObjectKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }

namespace {

// Events kept per cluster for watches resuming from a resourceVersion (the API
// server keeps 100 per type in its watch cache by default); older ones get 410.
constexpr size_t kHistoryLimit = 100;
constexpr const char* kServerVersion = "v1.29.0";

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

HttpResponse JsonResponse(int code, std::string body) {
  HttpResponse r;
  r.status = code;
  r.body = std::move(body);
  return r;
}

// The fields of a Status's details, in the API server's order.
nlohmann::ordered_json OrderedDetails(const Json& d) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const char* k : {"name", "group", "kind", "uid"}) {
    if (d.contains(k)) o[k] = d[k];
  }
  if (d.contains("causes")) {
    nlohmann::ordered_json causes = nlohmann::ordered_json::array();
    for (const auto& c : d["causes"]) {
      nlohmann::ordered_json oc = nlohmann::ordered_json::object();
      for (const char* k : {"reason", "message", "field"}) {
        if (c.contains(k)) oc[k] = c[k];
      }
      causes.push_back(std::move(oc));
    }
    o["causes"] = std::move(causes);
  }
  if (d.contains("retryAfterSeconds")) o["retryAfterSeconds"] = d["retryAfterSeconds"];
  return o;
}

// A Kubernetes Status object for an error, its fields in the API server's
// order; an empty reason is left out, as the API server leaves out
// StatusReasonUnknown.
HttpResponse StatusError(int code, const std::string& reason, const std::string& message, Json details = nullptr) {
  nlohmann::ordered_json s = nlohmann::ordered_json::object();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = nlohmann::ordered_json::object();
  s["status"] = "Failure";
  s["message"] = message;
  if (!reason.empty()) s["reason"] = reason;
  if (details.is_object()) s["details"] = OrderedDetails(details);
  s["code"] = code;
  return JsonResponse(code, s.dump());
}

Json Details(const ResourceType& t, const std::string& name) {
  Json d = {{"name", name}, {"kind", t.plural}};
  if (!t.group.empty()) d["group"] = t.group;
  return d;
}

HttpResponse NotFoundError(const ResourceType& t, const std::string& name) {
  return StatusError(404, "NotFound", t.QualifiedPlural() + " \"" + name + "\" not found", Details(t, name));
}

// What the API server answers for a path it does not serve (an unknown
// group, version or resource; a custom resource before its CRD is
// Established): Go's http.NotFound, plain text.
HttpResponse NotFoundPath() {
  HttpResponse r;
  r.status = 404;
  r.content_type = "text/plain; charset=utf-8";
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.body = "404 page not found\n";
  return r;
}

HttpResponse BadRequest(const std::string& message) { return StatusError(400, "BadRequest", message); }

HttpResponse FromStatus(const Status& s, const ResourceType& t, const std::string& name) {
  switch (s.code()) {
    case Code::kConflict: return StatusError(409, "Conflict", s.message(), Details(t, name));
    case Code::kNotFound: return StatusError(404, "NotFound", s.message(), Details(t, name));
    case Code::kAlreadyExists: return StatusError(409, "AlreadyExists", s.message(), Details(t, name));
    case Code::kInvalid: return StatusError(422, "Invalid", s.message(), Details(t, name));
    default: return StatusError(500, "InternalError", s.message());
  }
}

// YAML → JSON as the API server reads a YAML body: sigs.k8s.io/yaml, i.e.
// go-yaml v2's scalar typing (`yes` is true, `0x1F` is 31), then JSON. The
// first error is kept in `err`.
Json YamlToJson(const YAML::Node& n, std::string* err) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& e : n) a.push_back(YamlToJson(e, err));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) {
        // Keys are typed too, then written back as JSON strings; float and
        // null keys keep their text (sigs.k8s.io/yaml reformats the one and
        // refuses the other).
        std::string key = kv.first.Scalar();
        if (kv.first.IsScalar() && kv.first.Tag() == "?") {
          GoYamlScalar k = ResolveGoYamlPlain(key);
          if (k.kind == GoYamlScalar::kBool) key = k.b ? "true" : "false";
          if (k.kind == GoYamlScalar::kInt) key = std::to_string(k.i);
        } else if (!kv.first.IsScalar()) {
          key = kv.first.as<std::string>();
        }
        o[key] = YamlToJson(kv.second, err);
      }
      return o;
    }
    case YAML::NodeType::Scalar: break;
  }
  const std::string& s = n.Scalar();
  const std::string& tag = n.Tag();
  // "!": quoted or the non-specific tag; any other explicit tag but the
  // resolvable ones of yaml.org keeps the text, as in go-yaml.
  static const std::string kYamlOrg = "tag:yaml.org,2002:";
  std::string_view want;
  if (tag != "?") {
    if (tag.compare(0, kYamlOrg.size(), kYamlOrg) != 0) return s;
    want = std::string_view(tag).substr(kYamlOrg.size());
    if (want != "bool" && want != "int" && want != "float" && want != "null") return s;
  }
  GoYamlScalar r = ResolveGoYamlPlain(s);
  std::string_view got = r.kind == GoYamlScalar::kNull   ? "null"
                         : r.kind == GoYamlScalar::kBool ? "bool"
                         : r.kind == GoYamlScalar::kFloat ? "float"
                         : r.kind == GoYamlScalar::kString ? "str"
                                                           : "int";
  if (!want.empty() && want != got && !(want == "float" && got == "int") && err->empty()) {
    *err = "yaml: cannot decode !!" + std::string(got) + " `" + s + "` as a !!" + std::string(want);
  }
  switch (r.kind) {
    case GoYamlScalar::kNull: return nullptr;
    case GoYamlScalar::kBool: return r.b;
    case GoYamlScalar::kInt: return r.i;
    case GoYamlScalar::kUint: return r.u;
    case GoYamlScalar::kFloat:
      // encoding/json has no spelling for these.
      if (!std::isfinite(r.f) && err->empty()) {
        *err = std::string("json: unsupported value: ") + (std::isnan(r.f) ? "NaN" : r.f > 0 ? "+Inf" : "-Inf");
      }
      return r.f;
    case GoYamlScalar::kString: break;
  }
  return s;
}

Result<Json> ParseBody(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_discarded()) return j;
  std::string err;
  try {
    j = YamlToJson(YAML::Load(body), &err);
  } catch (const std::exception& e) {
    return Invalid(std::string("the request body is neither JSON nor YAML: ") + e.what());
  }
  if (!err.empty()) return Invalid("error converting YAML to JSON: " + err);
  return j;
}

// A body that could not be read. Protobuf (newer kubectl's typed commands
// send it) would need every kind's schema to decode: 415 says so clearly.
HttpResponse BodyError(const HttpRequest& req, const Status& s) {
  const std::string& ct = req.Header("content-type");
  if (ct.find("protobuf") != std::string::npos) {
    return StatusError(415, "UnsupportedMediaType",
                       "kube-sim reads JSON and YAML request bodies only, not " + ct);
  }
  return BadRequest(s.message());
}

std::string Str(const Json& j, const std::string& dflt = "") {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number() || j.is_boolean()) return j.dump();
  return dflt;
}

// The fieldValidation directive of a create, update or patch.
enum class FieldValidation { kIgnore, kWarn, kStrict };

// Reads ?fieldValidation= (default Warn, as in Kubernetes 1.26); an unknown
// value is refused as the API server validates its options.
std::optional<HttpResponse> ReadFieldValidation(const HttpRequest& req, const std::string& options_kind,
                                                FieldValidation* out) {
  const std::string& v = req.Query("fieldValidation");
  if (v.empty() || v == "Warn") {
    *out = FieldValidation::kWarn;
  } else if (v == "Ignore") {
    *out = FieldValidation::kIgnore;
  } else if (v == "Strict") {
    *out = FieldValidation::kStrict;
  } else {
    std::string body = "Unsupported value: " + GoQuote(v) + ": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"";
    return StatusError(422, "Invalid", options_kind + ".meta.k8s.io \"\" is invalid: fieldValidation: " + body,
                       Json{{"group", "meta.k8s.io"},
                            {"kind", options_kind},
                            {"causes", Json::array({{{"reason", "FieldValueNotSupported"},
                                                     {"message", body},
                                                     {"field", "fieldValidation"}}})}});
  }
  return std::nullopt;
}

// The schema undeclared fields are checked against: the compiled table's
// for built-in kinds, the CRD's structural schema for custom resources.
const KindSchema* SchemaOf(const ResourceType& t) {
  return t.crd ? t.schema.get() : FindKindSchema(t.GroupVersion(), t.kind);
}

std::string StrictDecodingError(const std::vector<UnknownField>& fields) {
  std::string s = "strict decoding error: ";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    s += "unknown field " + GoQuote(fields[i].decode_path);
  }
  return s;
}

// Decodes a create/update body as the API server decodes it into the kind's
// type: undeclared fields are dropped (reported in `dropped` to warn about)
// or, with fieldValidation=Strict, refuse the request.
std::optional<HttpResponse> DecodeBody(const ResourceType& t, FieldValidation fv, Json& obj,
                                       std::vector<UnknownField>* dropped) {
  const KindSchema* schema = SchemaOf(t);
  if (!schema) return std::nullopt;
  std::vector<UnknownField> fields = UnknownFields(*schema, obj);
  if (fields.empty()) return std::nullopt;
  if (fv == FieldValidation::kStrict) {
    return StatusError(400, "BadRequest",
                       t.kind + " in version " + GoQuote(t.version) + " cannot be handled as a " + t.kind + ": " +
                           StrictDecodingError(fields));
  }
  DropUnknownFields(*schema, obj);
  if (fv == FieldValidation::kWarn) *dropped = std::move(fields);
  return std::nullopt;
}

// Go's %+v of a decoded JSON value (a strategic merge patch's map).
std::string GoPlusV(const Json& v) {
  if (v.is_null()) return "<nil>";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + GoPlusV(v[i]);
    return s + "]";
  }
  if (v.is_object()) {
    std::string s = "map[";
    bool first = true;
    for (const auto& [k, e] : v.items()) {
      s += (first ? "" : " ") + k + ":" + GoPlusV(e);
      first = false;
    }
    return s + "]";
  }
  return v.dump();
}

// The answer sent with dropped fields: a Warning header for each.
HttpResponse WithWarnings(HttpResponse r, const std::vector<UnknownField>& dropped) {
  for (const auto& f : dropped) {
    r.headers.emplace_back("Warning", "299 - " + GoQuote("unknown field " + GoQuote(f.decode_path)));
  }
  return r;
}

// "apps/v1, Kind=Deployment", "/v1, Kind=ConfigMap": a GroupVersionKind as Go prints it.
std::string GvkText(const std::string& api_version, const std::string& kind) {
  std::string gv = api_version.find('/') == std::string::npos ? "/" + api_version : api_version;
  return gv + ", Kind=" + kind;
}

// Server-side apply's answer when the applied configuration cannot be typed
// (undeclared fields, duplicate or keyless list entries): 500, no reason.
HttpResponse TypedPatchError(const Json& applied_meta, const std::string& api_version, const std::string& kind,
                             const std::string& errors) {
  return StatusError(500, "",
                     "failed to create typed patch object (" + Str(applied_meta.value("namespace", Json())) + "/" +
                         Str(applied_meta.value("name", Json())) + "; " + GvkText(api_version, kind) + "): " + errors);
}

// structured-merge-diff's text for a list of errors: one as is, several
// under "errors:", one per line.
std::string ApplyErrors(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return errors[0];
  std::string s = "errors:";
  for (const auto& e : errors) s += "\n  " + e;
  return s;
}

// DNS-1123 subdomain, as the API server requires of most names.
std::string NameError(const std::string& name) {
  if (name.empty()) return "name or generateName is required";
  if (name.size() > 253) return "must be no more than 253 characters";
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok || ((i == 0 || i + 1 == name.size()) && (c == '-' || c == '.'))) {
      return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character";
    }
  }
  return "";
}

std::string ContentType(const HttpRequest& req) {
  std::string ct = req.Header("content-type");
  size_t semi = ct.find(';');
  if (semi != std::string::npos) ct.resize(semi);
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  return ct;
}

std::string ManagerFor(const HttpRequest& req, const std::string& fallback) {
  const std::string& fm = req.Query("fieldManager");
  if (!fm.empty()) return fm;
  std::string ua = req.Header("user-agent");
  size_t slash = ua.find('/');
  if (slash != std::string::npos) ua.resize(slash);
  return ua.empty() ? fallback : ua;
}

bool SpecChanged(const Json& a, const Json& b) {
  // Everything but metadata and status counts as spec, as for generation.
  auto counted = [](const Json& o) {
    size_t n = 0;
    for (auto it = o.begin(); it != o.end(); ++it) n += it.key() != "metadata" && it.key() != "status";
    return n;
  };
  if (!a.is_object() || !b.is_object()) return a != b;
  if (counted(a) != counted(b)) return true;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (it.key() == "metadata" || it.key() == "status") continue;
    auto jt = b.find(it.key());
    if (jt == b.end() || *jt != it.value()) return true;
  }
  return false;
}

std::string HumanAge(const std::string& ts) {
  std::tm tm{};
  if (ts.size() < 19 || !strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return "<unknown>";
  long secs = static_cast<long>(std::difftime(std::time(nullptr), timegm(&tm)));
  if (secs < 0) secs = 0;
  char buf[32];
  if (secs < 120) std::snprintf(buf, sizeof buf, "%lds", secs);
  else if (secs < 600) std::snprintf(buf, sizeof buf, "%ldm%lds", secs / 60, secs % 60);
  else if (secs < 3 * 3600) std::snprintf(buf, sizeof buf, "%ldm", secs / 60);
  else if (secs < 48 * 3600) std::snprintf(buf, sizeof buf, "%ldh", secs / 3600);
  else std::snprintf(buf, sizeof buf, "%ldd", secs / 86400);
  return buf;
}

// Columns kubectl prints for a kind (server-side printing).
struct TableShape {
  std::vector<std::pair<std::string, std::string>> columns;  // name, type
  std::function<std::vector<Json>(const Json&)> cells;
};

TableShape ShapeFor(const std::string& kind) {
  auto age = [](const Json& o) { return HumanAge(Str(Field(o, {"metadata", "creationTimestamp"}))); };
  auto name = [](const Json& o) { return Str(Field(o, {"metadata", "name"})); };
  if (kind == "Namespace") {
    return {{{"Name", "string"}, {"Status", "string"}, {"Age", "string"}},
            [=](const Json& o) { return std::vector<Json>{name(o), Str(Field(o, {"status", "phase"})), age(o)}; }};
  }
  if (kind == "Pod") {
    return {{{"Name", "string"}, {"Ready", "string"}, {"Status", "string"}, {"Restarts", "integer"}, {"Age", "string"}},
            [=](const Json& o) {
              const Json& cs = Field(o, {"status", "containerStatuses"});
              int total = 0, ready = 0;
              const Json& containers = Field(o, {"spec", "containers"});
              if (containers.is_array()) total = static_cast<int>(containers.size());
              if (cs.is_array()) {
                for (const auto& c : cs) ready += c.value("ready", false) ? 1 : 0;
              }
              return std::vector<Json>{name(o), std::to_string(ready) + "/" + std::to_string(total),
                                       Str(Field(o, {"status", "phase"}), "Pending"), 0, age(o)};
            }};
  }
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet") {
    return {{{"Name", "string"}, {"Ready", "string"}, {"Up-to-date", "integer"}, {"Available", "integer"}, {"Age", "string"}},
            [=](const Json& o) {
              const Json& st = Field(o, {"status"});
              int want = Field(o, {"spec", "replicas"}).is_number() ? Field(o, {"spec", "replicas"}).get<int>() : 1;
              int ready = st.is_object() ? st.value("readyReplicas", 0) : 0;
              return std::vector<Json>{name(o), std::to_string(ready) + "/" + std::to_string(want),
                                       st.is_object() ? st.value("updatedReplicas", 0) : 0,
                                       st.is_object() ? st.value("availableReplicas", 0) : 0, age(o)};
            }};
  }
  if (kind == "Node") {
    return {{{"Name", "string"}, {"Status", "string"}, {"Roles", "string"}, {"Age", "string"}, {"Version", "string"}},
            [=](const Json& o) {
              return std::vector<Json>{name(o), "Ready", "<none>", age(o),
                                       Str(Field(o, {"status", "nodeInfo", "kubeletVersion"}))};
            }};
  }
  if (kind == "Service") {
    return {{{"Name", "string"}, {"Type", "string"}, {"Cluster-IP", "string"}, {"External-IP", "string"}, {"Age", "string"}},
            [=](const Json& o) {
              std::string ext = "<none>";
              const Json& ing = Field(o, {"status", "loadBalancer", "ingress"});
              if (ing.is_array() && !ing.empty()) {
                // As the API server prints it: every ingress IP or host name.
                ext.clear();
                for (const auto& i : ing) {
                  std::string a = i.contains("ip") ? Str(i["ip"]) : i.contains("hostname") ? Str(i["hostname"]) : "";
                  if (!a.empty()) ext += (ext.empty() ? "" : ",") + a;
                }
              } else if (Str(Field(o, {"spec", "type"})) == "LoadBalancer") ext = "<pending>";
              return std::vector<Json>{name(o), Str(Field(o, {"spec", "type"}), "ClusterIP"),
                                       Str(Field(o, {"spec", "clusterIP"}), "None"), ext, age(o)};
            }};
  }
  return {{{"Name", "string"}, {"Age", "string"}}, [=](const Json& o) { return std::vector<Json>{name(o), age(o)}; }};
}

std::string TableJson(const std::string& kind, const std::vector<const Json*>& objs, uint64_t rv) {
  TableShape shape = ShapeFor(kind);
  Json cols = Json::array();
  for (const auto& [n, t] : shape.columns) {
    cols.push_back({{"name", n}, {"type", t}, {"format", n == "Name" ? "name" : ""}, {"description", n}, {"priority", 0}});
  }
  Json rows = Json::array();
  for (const Json* o : objs) {
    Json meta = o->value("metadata", Json::object());
    meta.erase("managedFields");
    rows.push_back({{"cells", shape.cells(*o)},
                    {"object", {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", meta}}}});
  }
  Json t = {{"kind", "Table"},
            {"apiVersion", "meta.k8s.io/v1"},
            {"metadata", {{"resourceVersion", std::to_string(rv)}}},
            {"columnDefinitions", cols},
            {"rows", rows}};
  return t.dump();
}

bool WantsTable(const HttpRequest& req) { return req.Header("accept").find("as=Table") != std::string::npos; }

// Accept asks for metadata only (client-go's metadata client):
// "application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1".
bool WantsMetadata(const HttpRequest& req, bool list) {
  const std::string& a = req.Header("accept");
  const std::string want = list ? "as=PartialObjectMetadataList" : "as=PartialObjectMetadata";
  for (size_t at = a.find(want); at != std::string::npos; at = a.find(want, at + 1)) {
    const size_t end = at + want.size();
    if (end == a.size() || a[end] == ';' || a[end] == ',') return a.find("g=meta.k8s.io") != std::string::npos;
  }
  return false;
}

std::string PartialMetadata(const Json& obj) {
  Json m = {{"kind", "PartialObjectMetadata"},
            {"apiVersion", "meta.k8s.io/v1"},
            {"metadata", obj.contains("metadata") ? obj["metadata"] : Json::object()}};
  return m.dump();
}

// An OpenAPI v2 document with no definitions, in the protobuf encoding kubectl
// asks for: it makes kubectl's client-side validation skip unknown types.
std::string EmptyOpenApiProto() {
  auto field = [](int num, const std::string& payload) {
    std::string out;
    out += static_cast<char>((num << 3) | 2);
    out += static_cast<char>(payload.size());  // every payload here is < 128 bytes
    out += payload;
    return out;
  };
  std::string info = field(1, "Kubernetes") + field(2, kServerVersion);
  return field(1, "2.0") + field(2, info);
}

// The built-in documents under /openapi/v3 a cluster lists: those of the
// paths its discovery serves.
const std::vector<std::string>& BuiltinOpenApiPaths() {
  static const std::vector<std::string> paths = [] {
    std::set<std::string> want = {"api", "apis", "version"};
    for (const ResourceType& t : BuiltinTypes()) {
      if (t.group.empty()) {
        want.insert("api/" + t.version);
      } else {
        want.insert("apis/" + t.group);
        want.insert("apis/" + t.group + "/" + t.version);
      }
    }
    std::vector<std::string> out;
    for (const std::string& p : want) {
      if (BuiltinOpenApiDoc(p)) out.push_back(p);
    }
    return out;
  }();
  return paths;
}

// The document of a custom group-version ("apis/G/V") of an Established
// CRD, or null; built once per change of the cluster's CRDs (under c.mu).
std::shared_ptr<const OpenApiDoc> CrdOpenApi(Cluster& c, const std::string& path) {
  if (auto it = c.crd_openapi.find(path); it != c.crd_openapi.end()) return it->second;
  std::string group, version;
  std::vector<Json> crds;
  const auto store = c.store.find("apiextensions.k8s.io/customresourcedefinitions");
  for (const ResourceType& t : c.crd_types) {
    if (path != "apis/" + t.group + "/" + t.version) continue;
    group = t.group;
    version = t.version;
    if (store == c.store.end()) continue;
    if (auto e = store->second.find(ObjectKey("", t.plural + "." + t.group)); e != store->second.end()) {
      crds.push_back(e->second->Object());
    }
  }
  if (group.empty()) return nullptr;
  auto doc = std::make_shared<const OpenApiDoc>(CrdOpenApiDoc(group, version, crds));
  c.crd_openapi.emplace(path, doc);
  return doc;
}

// GET /openapi/v3 (the index) and /openapi/v3/PATH (?hash= is not checked).
HttpResponse OpenApiV3(Cluster& c, const std::vector<std::string>& rest) {
  std::string path;
  for (size_t i = 2; i < rest.size(); ++i) path += (i > 2 ? "/" : "") + rest[i];
  // Built-in documents are built (once per process) outside the cluster's lock.
  const auto& builtin = BuiltinOpenApiPaths();
  if (path.empty()) {
    std::vector<std::pair<std::string, std::string>> docs;
    for (const std::string& p : builtin) docs.emplace_back(p, BuiltinOpenApiDoc(p)->hash);
    std::lock_guard<std::mutex> lock(c.mu);
    for (const ResourceType& t : c.crd_types) {
      std::string p = "apis/" + t.group + "/" + t.version;
      if (auto doc = CrdOpenApi(c, p)) docs.emplace_back(p, doc->hash);
    }
    return JsonResponse(200, OpenApiIndexJson(docs));
  }
  if (std::find(builtin.begin(), builtin.end(), path) != builtin.end()) {
    return JsonResponse(200, BuiltinOpenApiDoc(path)->body);
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto doc = CrdOpenApi(c, path)) return JsonResponse(200, doc->body);
  return NotFoundPath();
}

struct ResourcePath {
  std::string group, version;
  std::string ns;  // "" = cluster scope / all namespaces
  std::string plural, name, sub;
};

}  // namespace

// ---------------------------------------------------------------------------
// The simulator

class SimImpl : public Simulator {
 public:
  SimImpl(std::vector<ClusterSpec> specs, SimOptions options) : options_(options) {
    LoadSchemas();  // at start: parsing costs once, and a broken table shows at once
    for (const ResourceType& t : BuiltinTypes()) {
      builtin_[t.group + "/" + t.version + "/" + t.plural] = &t;
    }
    const uint64_t seed = options_.seed != 0 ? options_.seed
                                             : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    for (auto& s : specs) {
      auto c = std::make_unique<Cluster>();
      c->name = s.name;
      c->token = s.token;
      c->load_balancer_pool = s.load_balancer_pool;
      // FNV-1a of the name: each cluster its own sequence from the one seed.
      uint64_t h = 1469598103934665603ULL;
      for (unsigned char ch : s.name) h = (h ^ ch) * 1099511628211ULL;
      c->rng.seed(seed ^ h);
      if (c->token.empty()) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(c->rng()),
                      static_cast<unsigned long long>(c->rng()));
        c->token = buf;
      }
      names_.push_back(s.name);
      Cluster* raw = c.get();
      clusters_.emplace(s.name, std::move(c));
      std::lock_guard<std::mutex> lock(raw->mu);
      ClusterOps ops(*this, *raw);
      Bootstrap(ops, s.nodes);
    }
    worker_ = std::thread([this] { Run(); });
  }

  ~SimImpl() override { Shutdown(); }

  bool HasCluster(const std::string& name) const override { return clusters_.count(name) > 0; }
  std::vector<std::string> ClusterNames() const override { return names_; }
  std::string Token(const std::string& name) const override {
    auto it = clusters_.find(name);
    return it == clusters_.end() ? "" : it->second->token;
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    queue_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    for (auto& [_, c] : clusters_) {
      std::lock_guard<std::mutex> lock(c->mu);
      for (auto& w : c->watchers) w->stream->Close();
      c->watchers.clear();
    }
  }

  HttpReply Handle(const HttpRequest& req) override;

  // --- used by ClusterOps ---------------------------------------------------
  const SimOptions& options() const { return options_; }

  void Enqueue(Cluster& c, const std::string& storage_key, const std::string& key, Clock::duration after) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (stopping_) return;
      queue_.push(WorkItem{Clock::now() + after, &c, storage_key, key});
    }
    queue_cv_.notify_one();
  }

  void Notify(Cluster& c, const WatchEvent& ev) {
    c.history.push_back(WatchEvent{ev.rv, ev.type, ev.storage_key, ev.ns, Light(ev.entry), Light(ev.prev)});
    while (c.history.size() > kHistoryLimit) {
      c.history_floor = c.history.front().rv;
      c.history.pop_front();
    }
    Lines lines;
    for (auto& w : c.watchers) Send(*w, ev, lines);
  }


 private:
  static std::string EventLine(const char* type, const std::string& text) {
    std::string line;
    line.reserve(text.size() + 32);
    line += "{\"type\":\"";
    line += type;
    line += "\",\"object\":";
    line += text;
    line += "}\n";
    return line;
  }

  static bool Matches(const Watcher& w, const WatchEvent& ev) {
    if (w.storage_key != ev.storage_key) return false;
    if (!w.ns.empty() && w.ns != ev.ns) return false;
    return Selects(w, *ev.entry);
  }

  // The object of an entry; a light one's is parsed into `scratch`.
  static const Json& ObjOf(const Entry& e, Json& scratch) {
    if (!e.light) return e.view;
    scratch = Json::parse(e.text(), nullptr, false);
    return scratch;
  }

  static bool Selects(const Watcher& w, const Entry& e) {
    if (w.labels.Empty() && w.fields.Empty()) return true;
    Json scratch;
    const Json& obj = ObjOf(e, scratch);
    if (!w.labels.Empty() && !w.labels.Matches(Field(obj, {"metadata", "labels"}))) return false;
    return w.fields.Matches(obj);
  }

  // What a watcher sees of an event. As the API server's watch cache does:
  // a change that takes an object into a watch's selectors is ADDED there,
  // one that takes it out is DELETED (the object as it was, at the event's
  // resourceVersion).
  enum class Sight { kNone, kAsIs, kEntered, kLeft };
  static Sight Seen(const Watcher& w, const WatchEvent& ev) {
    if (w.storage_key != ev.storage_key) return Sight::kNone;
    if (!w.ns.empty() && w.ns != ev.ns) return Sight::kNone;
    const bool now = Selects(w, *ev.entry);
    if (!ev.prev) return now ? Sight::kAsIs : Sight::kNone;
    const bool before = Selects(w, *ev.prev);
    if (now) return before ? Sight::kAsIs : Sight::kEntered;
    return before ? Sight::kLeft : Sight::kNone;
  }

  // An event's lines, each made once for all the watchers that see it so.
  struct Lines {
    std::string as_is, entered, left;
  };
  static void Send(const Watcher& w, const WatchEvent& ev, Lines& lines) {
    switch (Seen(w, ev)) {
      case Sight::kNone:
        return;
      case Sight::kAsIs:
        if (lines.as_is.empty()) lines.as_is = EventLine(ev.type, ev.entry->text());
        w.stream->Write(lines.as_is);
        return;
      case Sight::kEntered:
        if (lines.entered.empty()) lines.entered = EventLine("ADDED", ev.entry->text());
        w.stream->Write(lines.entered);
        return;
      case Sight::kLeft:
        if (lines.left.empty()) {
          Json was = Json::parse(ev.prev->text(), nullptr, false);
          was["metadata"]["resourceVersion"] = std::to_string(ev.rv);
          lines.left = EventLine("DELETED", was.dump());
        }
        w.stream->Write(lines.left);
        return;
    }
  }

  // The controllers' loop, plus watch upkeep (timeouts, bookmarks, closed peers).
  void Run() {
    Clock::time_point next_upkeep = Clock::now();
    std::unique_lock<std::mutex> lock(queue_mu_);
    while (!stopping_) {
      Clock::time_point now = Clock::now();
      if (now >= next_upkeep) {
        lock.unlock();
        Upkeep();
        lock.lock();
        next_upkeep = Clock::now() + std::chrono::seconds(1);
        continue;
      }
      if (!queue_.empty() && queue_.top().when <= now) {
        WorkItem item = queue_.top();
        queue_.pop();
        lock.unlock();
        {
          std::lock_guard<std::mutex> cl(item.cluster->mu);
          ClusterOps ops(*this, *item.cluster);
          try {
            Reconcile(ops, item.storage_key, item.key);
          } catch (const std::exception& e) {
            // An object the controllers cannot read stays as it is.
            std::fprintf(stderr, "kube-sim: %s: reconcile %s %s: %s\n", item.cluster->name.c_str(),
                         item.storage_key.c_str(), item.key.c_str(), e.what());
          }
        }
        lock.lock();
        continue;
      }
      Clock::time_point wake = next_upkeep;
      if (!queue_.empty()) wake = std::min(wake, queue_.top().when);
      queue_cv_.wait_until(lock, wake);
    }
  }

  void Upkeep() {
    Clock::time_point now = Clock::now();
    for (auto& [_, c] : clusters_) {
      std::lock_guard<std::mutex> lock(c->mu);
      if (c->watchers.empty()) continue;
      auto& ws = c->watchers;
      for (auto& w : ws) {
        if (w->stream->Closed()) continue;
        bool expired = now >= w->deadline;
        if (w->bookmarks && (expired || now >= w->next_bookmark)) {
          w->stream->Write(BookmarkLine(*w, c->rv));
          w->next_bookmark = now + std::chrono::seconds(10);
        }
        if (expired) w->stream->Close();
      }
      ws.erase(std::remove_if(ws.begin(), ws.end(), [](const auto& w) { return w->stream->Closed(); }), ws.end());
    }
  }

  static std::string BookmarkLine(const Watcher& w, uint64_t rv) {
    Json o = {{"kind", w.kind}, {"apiVersion", w.api_version}, {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
    return "{\"type\":\"BOOKMARK\",\"object\":" + o.dump() + "}\n";
  }

  HttpReply Route(const HttpRequest& req);
  HttpReply HandleSim(const HttpRequest& req, const std::vector<std::string>& seg);
  void CountRequest(Cluster& c, const std::string& user_agent, const std::string& method);
  HttpReply HandleCluster(Cluster& c, const HttpRequest& req, const std::vector<std::string>& rest);
  HttpReply HandleResource(Cluster& c, const HttpRequest& req, const ResourcePath& p);
  std::optional<ResourceType> Lookup(Cluster& c, const std::string& group, const std::string& version,
                                     const std::string& plural);
  std::vector<const ResourceType*> AllTypes(Cluster& c);

  HttpResponse Get(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse List(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpReply Watch(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse Create(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse Update(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse Patch(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse Delete(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);
  HttpResponse DeleteCollection(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p);

  // Checks the namespace an object is created in (under c.mu).
  // `name` is the object's as sent (empty with generateName).
  std::optional<HttpResponse> CheckNamespace(Cluster& c, const ResourceType& t, const std::string& ns,
                                             const std::string& name);
  // Fills uid, timestamps, generation and defaults of a new object.
  void InitNew(Cluster& c, const ResourceType& t, Json& obj);

  SimOptions options_;
  std::unordered_map<std::string, const ResourceType*> builtin_;
  std::unordered_map<std::string, std::unique_ptr<Cluster>> clusters_;  // fixed after construction
  std::vector<std::string> names_;

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::priority_queue<WorkItem, std::vector<WorkItem>, std::greater<>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

// ---------------------------------------------------------------------------
// Entries

Json TrimmedView(const Json& obj) {
  if (!obj.is_object()) return obj;
  Json view = Json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k == "data" || k == "binaryData" || k == "stringData") continue;
    const Json& v = it.value();
    if (!v.is_object() || (k != "metadata" && k != "spec" && k != "status")) {
      view.emplace(k, v);
      continue;
    }
    Json& part = view[k] = Json::object();
    for (auto f = v.begin(); f != v.end(); ++f) {
      const std::string& fk = f.key();
      if (k == "metadata" && (fk == "managedFields" || fk == "annotations")) continue;
      if (k == "spec" && (fk == "template" || fk == "volumes")) continue;
      if (k == "status" && fk.ends_with("ontainerStatuses")) continue;
      if (k == "spec" && f.value().is_array() && fk.ends_with("ontainers")) {
        // The scheduler sums the requests of every pod.
        Json slim = Json::array();
        for (const auto& c : f.value()) {
          Json one = Json::object();
          if (c.is_object()) {
            for (const char* keep : {"name", "resources"}) {
              if (auto ck = c.find(keep); ck != c.end()) one.emplace(keep, *ck);
            }
          }
          slim.push_back(std::move(one));
        }
        part.emplace(fk, std::move(slim));
        continue;
      }
      part.emplace(fk, f.value());
    }
  }
  return view;
}

EntryPtr MakeEntry(const Json& obj, uint64_t rv) {
  auto e = std::make_shared<Entry>();
  e->rv = rv;
  e->body = std::make_shared<const std::string>(obj.dump());
  e->view = TrimmedView(obj);
  return e;
}

// ---------------------------------------------------------------------------
// ClusterOps

EntryPtr ClusterOps::Find(const std::string& storage_key, const std::string& key) const {
  auto it = c_.store.find(storage_key);
  if (it == c_.store.end()) return nullptr;
  auto jt = it->second.find(key);
  return jt == it->second.end() ? nullptr : jt->second;
}

const std::map<std::string, EntryPtr>* ClusterOps::Collection(const std::string& storage_key) const {
  auto it = c_.store.find(storage_key);
  return it == c_.store.end() ? nullptr : &it->second;
}

// Parsing the text again costs more than serialising the new object.
EntryPtr ClusterOps::Put(const std::string& storage_key, Json obj, bool known_changed) {
  auto& coll = c_.store[storage_key];
  const Json& meta = obj["metadata"];
  std::string ns = Str(Field(meta, {"namespace"}));
  std::string key = ObjectKey(ns, Str(Field(meta, {"name"})));
  auto it = coll.find(key);
  if (it != coll.end() && !known_changed) {
    // Unchanged objects keep their resourceVersion and wake nobody: the
    // same value serialises to the same text.
    obj["metadata"]["resourceVersion"] = Str(Field(it->second->view, {"metadata", "resourceVersion"}));
    if (obj.dump() == it->second->text()) return it->second;
  }
  const uint64_t rv = ++c_.rv;
  obj["metadata"]["resourceVersion"] = std::to_string(rv);
  const char* type = it == coll.end() ? "ADDED" : "MODIFIED";
  EntryPtr prev = it == coll.end() ? nullptr : it->second;
  EntryPtr stored = MakeEntry(obj, rv);
  coll[key] = stored;
  sim_.Notify(c_, WatchEvent{stored->rv, type, storage_key, ns, stored, std::move(prev)});
  OnWrite(*this, storage_key, stored->view, false);
  return stored;
}

void ClusterOps::Remove(const std::string& storage_key, const std::string& key) {
  auto sit = c_.store.find(storage_key);
  if (sit == c_.store.end()) return;
  auto it = sit->second.find(key);
  if (it == sit->second.end()) return;
  EntryPtr old = it->second;
  sit->second.erase(it);
  // The DELETED event carries the last state with a new resourceVersion.
  Json last = old->Object();
  const uint64_t rv = ++c_.rv;
  last["metadata"]["resourceVersion"] = std::to_string(rv);
  EntryPtr e = MakeEntry(last, rv);
  std::string ns = Str(Field(old->view, {"metadata", "namespace"}));
  sim_.Notify(c_, WatchEvent{e->rv, "DELETED", storage_key, ns, e, nullptr});
  OnWrite(*this, storage_key, old->view, true);

  // Garbage collection of dependents (ownerReferences to this uid).
  std::string uid = Str(Field(old->view, {"metadata", "uid"}));
  if (uid.empty()) return;
  std::vector<std::pair<std::string, std::string>> dependents;
  for (auto& [skey, coll] : c_.store) {
    for (auto& [okey, entry] : coll) {
      const Json& refs = Field(entry->view, {"metadata", "ownerReferences"});
      if (!refs.is_array()) continue;
      for (const auto& r : refs) {
        if (r.is_object() && r.value("uid", "") == uid) {
          dependents.emplace_back(skey, okey);
          break;
        }
      }
    }
  }
  for (auto& [skey, okey] : dependents) Delete(skey, okey, "Background");
}

void ClusterOps::Delete(const std::string& storage_key, const std::string& key, const std::string& propagation) {
  EntryPtr e = Find(storage_key, key);
  if (!e) return;
  const Json& fins = Field(e->view, {"metadata", "finalizers"});
  bool has_finalizers = fins.is_array() && !fins.empty();
  if (propagation == "Orphan") {
    // Dependents lose their owner reference instead of being deleted.
    std::string uid = Str(Field(e->view, {"metadata", "uid"}));
    std::vector<std::pair<std::string, Json>> updates;
    for (auto& [skey, coll] : c_.store) {
      for (auto& [okey, entry] : coll) {
        const Json& refs = Field(entry->view, {"metadata", "ownerReferences"});
        if (!refs.is_array()) continue;
        Json kept = Json::array();
        for (const auto& r : refs) {
          if (!(r.is_object() && r.value("uid", "") == uid)) kept.push_back(r);
        }
        if (kept.size() != refs.size()) {
          Json o = entry->Object();
          if (kept.empty()) o["metadata"].erase("ownerReferences");
          else o["metadata"]["ownerReferences"] = kept;
          updates.emplace_back(skey, std::move(o));
        }
      }
    }
    for (auto& [skey, o] : updates) Put(skey, std::move(o));
  }
  if (!has_finalizers && propagation != "Foreground") {
    Remove(storage_key, key);
    return;
  }
  Json o = e->Object();
  if (!o["metadata"].contains("deletionTimestamp")) {
    o["metadata"]["deletionTimestamp"] = NowRfc3339();
    o["metadata"]["deletionGracePeriodSeconds"] = 0;
  }
  if (propagation == "Foreground") {
    Json& f = o["metadata"]["finalizers"];
    if (!f.is_array()) f = Json::array();
    if (std::find(f.begin(), f.end(), Json("foregroundDeletion")) == f.end()) f.push_back("foregroundDeletion");
  }
  Put(storage_key, std::move(o));
  Enqueue(storage_key, key);
}

void ClusterOps::Enqueue(const std::string& storage_key, const std::string& key, Clock::duration after) {
  sim_.Enqueue(c_, storage_key, key, after);
}

const SimOptions& ClusterOps::options() const { return sim_.options(); }

// ---------------------------------------------------------------------------
// Routing

HttpReply SimImpl::Handle(const HttpRequest& req) {
  // A malformed object must cost the client a 4xx/500, never the process.
  try {
    return Route(req);
  } catch (const std::exception& e) {
    return HttpReply::Whole(StatusError(500, "InternalError", std::string("kube-sim: ") + e.what()));
  }
}

HttpReply SimImpl::Route(const HttpRequest& req) {
  std::vector<std::string> seg = SplitPath(req.path);
  if (!seg.empty() && seg[0] == "sim") return HandleSim(req, seg);
  if (seg.size() < 2 || seg[0] != "clusters") return HttpReply::Whole(NotFoundPath());
  auto it = clusters_.find(seg[1]);
  if (it == clusters_.end()) {
    return HttpReply::Whole(StatusError(404, "NotFound", "cluster \"" + seg[1] + "\" is not simulated here"));
  }
  Cluster& c = *it->second;
  CountRequest(c, req.Header("user-agent"), req.method);
  const std::string& auth = req.Header("authorization");
  bool token_ok = auth.size() == 7 + c.token.size() && auth.compare(0, 7, "Bearer ") == 0 &&
                  auth.compare(7, std::string::npos, c.token) == 0;
  if ((options_.require_auth || !auth.empty()) && !token_ok) {
    return HttpReply::Whole(StatusError(401, "Unauthorized", "Unauthorized"));
  }
  return HandleCluster(c, req, std::vector<std::string>(seg.begin() + 2, seg.end()));
}

void SimImpl::CountRequest(Cluster& c, const std::string& user_agent, const std::string& method) {
  // A client inventing a user agent per request must not grow this without bound.
  constexpr size_t kMaxAgents = 64;
  std::lock_guard<std::mutex> lock(c.requests_mu);
  if (c.requests_by_method.size() < 16 || c.requests_by_method.count(method)) ++c.requests_by_method[method];
  auto it = c.requests_by_agent.find(user_agent);
  if (it != c.requests_by_agent.end()) {
    ++it->second;
  } else if (c.requests_by_agent.size() < kMaxAgents) {
    c.requests_by_agent.emplace(user_agent, 1);
  } else {
    ++c.requests_by_agent["(other)"];
  }
}

HttpReply SimImpl::HandleSim(const HttpRequest& req, const std::vector<std::string>& seg) {
  if (req.method != "GET") return HttpReply::Whole(StatusError(405, "MethodNotAllowed", "method not allowed"));
  if (seg.size() == 2 && seg[1] == "clusters") {
    return HttpReply::Whole(JsonResponse(200, Json{{"clusters", names_}}.dump()));
  }
  if (seg.size() == 4 && seg[1] == "clusters" && seg[3] == "requests") {
    auto it = clusters_.find(seg[2]);
    if (it == clusters_.end())
      return HttpReply::Whole(StatusError(404, "NotFound", "no cluster " + seg[2]));
    Cluster& c = *it->second;
    Json by = Json::object(), methods = Json::object();
    uint64_t total = 0;
    {
      std::lock_guard<std::mutex> lock(c.requests_mu);
      for (const auto& [agent, n] : c.requests_by_agent) {
        by[agent] = n;
        total += n;
      }
      for (const auto& [m, n] : c.requests_by_method) methods[m] = n;
    }
    Json out = {{"cluster", c.name}, {"total", total}, {"byUserAgent", std::move(by)}, {"byMethod", std::move(methods)}};
    // User agents are the clients' text: invalid UTF-8 must not throw.
    return HttpReply::Whole(
        JsonResponse(200, out.dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  if (seg.size() == 4 && seg[1] == "clusters" && seg[3] == "objects") {
    auto it = clusters_.find(seg[2]);
    if (it == clusters_.end()) return HttpReply::Whole(StatusError(404, "NotFound", "no cluster " + seg[2]));
    Cluster& c = *it->second;
    std::string body = "{\"cluster\":" + Json(c.name).dump() + ",\"objects\":[";
    std::lock_guard<std::mutex> lock(c.mu);
    std::vector<std::string> keys;
    for (const auto& [k, _] : c.store) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    bool first = true;
    for (const auto& k : keys) {
      for (const auto& [_, e] : c.store[k]) {
        if (!first) body += ',';
        first = false;
        body += e->text();
      }
    }
    body += "],\"resourceVersion\":\"" + std::to_string(c.rv) + "\"}";
    return HttpReply::Whole(JsonResponse(200, std::move(body)));
  }
  return HttpReply::Whole(NotFoundPath());
}

std::vector<const ResourceType*> SimImpl::AllTypes(Cluster& c) {
  std::vector<const ResourceType*> out;
  for (const ResourceType& t : BuiltinTypes()) out.push_back(&t);
  for (const ResourceType& t : c.crd_types) out.push_back(&t);
  return out;
}

std::optional<ResourceType> SimImpl::Lookup(Cluster& c, const std::string& group, const std::string& version,
                                            const std::string& plural) {
  auto it = builtin_.find(group + "/" + version + "/" + plural);
  if (it != builtin_.end()) return *it->second;
  std::lock_guard<std::mutex> lock(c.mu);
  for (const ResourceType& t : c.crd_types) {
    if (t.group == group && t.version == version && t.plural == plural) return t;
  }
  return std::nullopt;
}

HttpReply SimImpl::HandleCluster(Cluster& c, const HttpRequest& req, const std::vector<std::string>& rest) {
  auto whole = [](HttpResponse r) { return HttpReply::Whole(std::move(r)); };
  if (rest.empty()) {
    return whole(JsonResponse(
        200, R"({"paths":["/api","/api/v1","/apis","/healthz","/livez","/openapi/v2","/openapi/v3","/readyz","/version"]})"));
  }
  const std::string& head = rest[0];
  if (rest.size() == 1 && (head == "healthz" || head == "livez" || head == "readyz")) {
    HttpResponse r = JsonResponse(200, "ok");
    r.content_type = "text/plain";
    return whole(r);
  }
  if (rest.size() == 1 && head == "version") {
    Json v = {{"major", "1"},          {"minor", "29"},         {"gitVersion", kServerVersion},
              {"gitCommit", "kube-sim"}, {"gitTreeState", "clean"}, {"buildDate", "2026-01-01T00:00:00Z"},
              {"goVersion", "go1.21.0"}, {"compiler", "gc"},      {"platform", "linux/amd64"}};
    return whole(JsonResponse(200, v.dump()));
  }
  if (head == "openapi" && rest.size() == 2 && rest[1] == "v2") {
    if (req.Header("accept").find("protobuf") != std::string::npos) {
      HttpResponse r = JsonResponse(200, EmptyOpenApiProto());
      r.content_type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
      return whole(r);
    }
    Json doc = {{"swagger", "2.0"}, {"info", {{"title", "Kubernetes"}, {"version", kServerVersion}}},
                {"paths", Json::object()}, {"definitions", Json::object()}};
    return whole(JsonResponse(200, doc.dump()));
  }
  if (head == "openapi" && rest.size() >= 2 && rest[1] == "v3") return whole(OpenApiV3(c, rest));
  if (head == "api") {
    if (rest.size() == 1) return whole(JsonResponse(200, ApiVersionsJson()));
    if (rest[1] != "v1") return whole(NotFoundPath());
    if (rest.size() == 2) {
      std::lock_guard<std::mutex> lock(c.mu);
      return whole(JsonResponse(200, ApiResourceListJson(AllTypes(c), "", "v1").dump()));
    }
    ResourcePath p;
    p.version = "v1";
    std::vector<std::string> r(rest.begin() + 2, rest.end());
    // /api/v1/namespaces/NAME/{status,finalize} are the namespace's own subresources.
    if (r.size() >= 3 && r[0] == "namespaces" && !(r.size() == 3 && (r[2] == "status" || r[2] == "finalize"))) {
      p.ns = r[1];
      r.erase(r.begin(), r.begin() + 2);
    }
    if (r.size() > 3) return whole(NotFoundPath());
    p.plural = r[0];
    if (r.size() > 1) p.name = r[1];
    if (r.size() > 2) p.sub = r[2];
    return HandleResource(c, req, p);
  }
  if (head == "apis") {
    if (rest.size() == 1) {
      std::lock_guard<std::mutex> lock(c.mu);
      return whole(JsonResponse(200, ApiGroupListJson(AllTypes(c)).dump()));
    }
    if (rest.size() == 2) {
      std::lock_guard<std::mutex> lock(c.mu);
      Json groups = ApiGroupListJson(AllTypes(c))["groups"];
      for (auto& g : groups) {
        if (g["name"] == rest[1]) {
          g["kind"] = "APIGroup";
          g["apiVersion"] = "v1";
          return whole(JsonResponse(200, g.dump()));
        }
      }
      return whole(NotFoundPath());
    }
    if (rest.size() == 3) {
      std::lock_guard<std::mutex> lock(c.mu);
      Json list = ApiResourceListJson(AllTypes(c), rest[1], rest[2]);
      if (list["resources"].empty()) return whole(NotFoundPath());
      return whole(JsonResponse(200, list.dump()));
    }
    ResourcePath p;
    p.group = rest[1];
    p.version = rest[2];
    std::vector<std::string> r(rest.begin() + 3, rest.end());
    if (r.size() >= 3 && r[0] == "namespaces") {
      p.ns = r[1];
      r.erase(r.begin(), r.begin() + 2);
    }
    if (r.empty() || r.size() > 3) return whole(NotFoundPath());
    p.plural = r[0];
    if (r.size() > 1) p.name = r[1];
    if (r.size() > 2) p.sub = r[2];
    return HandleResource(c, req, p);
  }
  return whole(NotFoundPath());
}

HttpReply SimImpl::HandleResource(Cluster& c, const HttpRequest& req, const ResourcePath& p) {
  auto whole = [](HttpResponse r) { return HttpReply::Whole(std::move(r)); };
  std::optional<ResourceType> t = Lookup(c, p.group, p.version, p.plural);
  if (!t) return whole(NotFoundPath());
  if (!t->namespaced && !p.ns.empty()) return whole(NotFoundPath());
  if (!p.sub.empty() && !(p.sub == "status" && t->has_status) && !(p.sub == "finalize" && t->plural == "namespaces")) {
    return whole(NotFoundPath());
  }
  const std::string& m = req.method;
  if (p.name.empty()) {
    if (m == "GET") {
      const std::string& w = req.Query("watch");
      if (w == "true" || w == "1") return Watch(c, req, *t, p);
      return whole(List(c, req, *t, p));
    }
    if (m == "POST") return whole(Create(c, req, *t, p));
    if (m == "DELETE") return whole(DeleteCollection(c, req, *t, p));
    return whole(StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }
  if (m == "GET") return whole(Get(c, req, *t, p));
  if (m == "PUT") return whole(Update(c, req, *t, p));
  if (m == "PATCH") return whole(Patch(c, req, *t, p));
  if (m == "DELETE") return whole(Delete(c, req, *t, p));
  return whole(StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
}

// ---------------------------------------------------------------------------
// Reads

namespace {
// The stored text with the requested apiVersion (types served in several
// versions share one collection; no conversion beyond the apiVersion).
std::string TextAs(const Entry& e, const ResourceType& t) {
  if (Str(Field(e.view, {"apiVersion"})) == t.GroupVersion()) return e.text();
  Json o = e.Object();
  o["apiVersion"] = t.GroupVersion();
  return o.dump();
}
}  // namespace

HttpResponse SimImpl::Get(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  EntryPtr e = ops.Find(t.StorageKey(), ObjectKey(t.namespaced ? p.ns : "", p.name));
  if (!e) return NotFoundError(t, p.name);
  if (WantsTable(req)) {
    const Json whole = e->Object();
    return JsonResponse(200, TableJson(t.kind, {&whole}, e->rv));
  }
  if (WantsMetadata(req, false)) return JsonResponse(200, PartialMetadata(e->Object()));
  return JsonResponse(200, TextAs(*e, t));
}

HttpResponse SimImpl::List(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  Result<LabelSelector> ls = LabelSelector::Parse(req.Query("labelSelector"));
  if (!ls.ok()) return BadRequest(ls.status().message());
  Result<FieldSelector> fs = FieldSelector::Parse(req.Query("fieldSelector"));
  if (!fs.ok()) return BadRequest(fs.status().message());
  size_t limit = 0;
  if (!req.Query("limit").empty()) limit = std::strtoull(req.Query("limit").c_str(), nullptr, 10);
  const std::string& cont = req.Query("continue");

  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  const auto* coll = ops.Collection(t.StorageKey());
  std::vector<EntryPtr> items;
  std::string next, last_key;
  if (coll) {
    auto it = coll->begin();
    std::string prefix = t.namespaced && !p.ns.empty() ? p.ns + "/" : "";
    if (!prefix.empty()) it = coll->lower_bound(prefix);
    if (!cont.empty()) it = coll->upper_bound(std::max(cont, prefix));
    for (; it != coll->end(); ++it) {
      if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
      const Json& obj = it->second->view;
      if (!ls->Empty() && !ls->Matches(Field(obj, {"metadata", "labels"}))) continue;
      if (!fs->Matches(obj)) continue;
      if (limit > 0 && items.size() == limit) {
        next = last_key;
        break;
      }
      items.push_back(it->second);
      last_key = it->first;
    }
  }
  if (WantsTable(req)) {
    std::vector<Json> whole;
    whole.reserve(items.size());
    for (const EntryPtr& e : items) whole.push_back(e->Object());
    std::vector<const Json*> objs;
    for (const Json& o : whole) objs.push_back(&o);
    return JsonResponse(200, TableJson(t.kind, objs, c.rv));
  }
  const bool metadata = WantsMetadata(req, true);
  std::string body;
  body.reserve(128 + items.size() * 512);
  body += metadata ? std::string("{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1")
                   : "{\"kind\":\"" + t.kind + "List\",\"apiVersion\":\"" + t.GroupVersion();
  body += "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(c.rv) + "\"";
  if (!next.empty()) body += ",\"continue\":" + Json(next).dump();
  body += "},\"items\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) body += ',';
    body += metadata ? PartialMetadata(items[i]->Object()) : TextAs(*items[i], t);
  }
  body += "]}";
  return JsonResponse(200, std::move(body));
}

HttpReply SimImpl::Watch(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  Result<LabelSelector> ls = LabelSelector::Parse(req.Query("labelSelector"));
  if (!ls.ok()) return HttpReply::Whole(BadRequest(ls.status().message()));
  Result<FieldSelector> fs = FieldSelector::Parse(req.Query("fieldSelector"));
  if (!fs.ok()) return HttpReply::Whole(BadRequest(fs.status().message()));
  std::string rv_text = req.Query("resourceVersion");
  uint64_t from = 0;
  bool initial = rv_text.empty() || rv_text == "0";
  if (!initial) {
    char* end = nullptr;
    from = std::strtoull(rv_text.c_str(), &end, 10);
    if (!end || *end) return HttpReply::Whole(BadRequest("invalid resourceVersion \"" + rv_text + "\""));
  }
  auto w = std::make_shared<Watcher>();
  w->storage_key = t.StorageKey();
  w->ns = t.namespaced ? p.ns : "";
  w->labels = std::move(ls.value());
  w->fields = std::move(fs.value());
  const std::string& b = req.Query("allowWatchBookmarks");
  w->bookmarks = b == "true" || b == "1";
  w->api_version = t.GroupVersion();
  w->kind = t.kind;
  long timeout = std::strtol(req.Query("timeoutSeconds").c_str(), nullptr, 10);
  if (timeout <= 0) {
    std::lock_guard<std::mutex> lock(c.mu);
    timeout = 1800 + static_cast<long>(c.rng() % 1800);  // as the API server: 30-60 min
  }
  w->deadline = Clock::now() + std::chrono::seconds(timeout);
  w->next_bookmark = Clock::now() + std::chrono::seconds(10);

  HttpReply reply;
  reply.response.status = 200;
  reply.response.content_type = "application/json";
  Cluster* cp = &c;
  reply.on_stream = [cp, w, initial, from](std::shared_ptr<Stream> stream) {
    std::lock_guard<std::mutex> lock(cp->mu);
    w->stream = stream;
    if (initial) {
      // Synthetic ADDED events for what exists, then changes.
      auto it = cp->store.find(w->storage_key);
      if (it != cp->store.end()) {
        for (const auto& [key, e] : it->second) {
          WatchEvent ev{e->rv, "ADDED", w->storage_key, Str(Field(e->view, {"metadata", "namespace"})), e, nullptr};
          if (Matches(*w, ev)) stream->Write(EventLine("ADDED", e->text()));
        }
      }
    } else if (from < cp->history_floor) {
      Json st = {{"kind", "Status"},  {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Failure"},
                 {"message", "too old resource version: " + std::to_string(from) + " (" +
                                 std::to_string(cp->history_floor + 1) + ")"},
                 {"reason", "Expired"}, {"code", 410}};
      stream->Write("{\"type\":\"ERROR\",\"object\":" + st.dump() + "}\n");
      stream->Close();
      return;
    } else {
      for (const WatchEvent& ev : cp->history) {
        if (ev.rv <= from) continue;
        Lines lines;
        Send(*w, ev, lines);
      }
    }
    cp->watchers.push_back(w);
  };
  return reply;
}

// ---------------------------------------------------------------------------
// Writes

std::optional<HttpResponse> SimImpl::CheckNamespace(Cluster& c, const ResourceType& t, const std::string& ns,
                                                    const std::string& name) {
  if (!t.namespaced) return std::nullopt;
  ClusterOps ops(*this, c);
  EntryPtr n = ops.Find("/namespaces", ObjectKey("", ns));
  if (!n) {
    return StatusError(404, "NotFound", "namespaces \"" + ns + "\" not found", Json{{"name", ns}, {"kind", "namespaces"}});
  }
  if (Field(n->view, {"metadata", "deletionTimestamp"}).is_string()) {
    // The NamespaceLifecycle admission plugin's answer.
    Json details = {{"kind", t.plural},
                    {"causes", Json::array({{{"reason", "NamespaceTerminating"},
                                             {"message", "namespace " + ns + " is being terminated"},
                                             {"field", "metadata.namespace"}}})}};
    if (!name.empty()) details["name"] = name;
    if (!t.group.empty()) details["group"] = t.group;
    return StatusError(403, "Forbidden",
                       t.QualifiedPlural() + (name.empty() ? "" : " \"" + name + "\"") +
                           " is forbidden: unable to create new content in namespace " + ns +
                           " because it is being terminated",
                       std::move(details));
  }
  return std::nullopt;
}

namespace {
// The nodePorts every Service but `self` (its storage key) holds.
std::set<int64_t> NodePortsOfOtherServices(Cluster& c, const std::string& self) {
  std::set<int64_t> out;
  for (const auto& [k, e] : c.store["/services"]) {
    if (k == self) continue;
    const Json& ports = Field(e->view, {"spec", "ports"});
    if (!ports.is_array()) continue;
    for (const auto& p : ports) {
      if (p.contains("nodePort") && p["nodePort"].is_number_integer()) out.insert(p["nodePort"].get<int64_t>());
    }
  }
  return out;
}

// The API server's NodePort allocator: a NodePort or LoadBalancer Service's
// ports without a nodePort get a free one of 30000-32767 (an update keeps
// the one the same port had), unless allocateLoadBalancerNodePorts is false.
// Here the lowest free one, not a random one, so that runs repeat.
void AllocateNodePorts(Cluster& c, Json& svc, const Json* live) {
  Json& spec = svc["spec"];
  const std::string type = spec.is_object() ? spec.value("type", "") : "";
  if (type != "NodePort" && type != "LoadBalancer") return;
  if (type == "LoadBalancer" && spec.value("allocateLoadBalancerNodePorts", true) == false) return;
  if (!spec.contains("ports") || !spec["ports"].is_array()) return;
  const std::string self = Field(svc, {"metadata", "namespace"}).is_string()
                               ? ObjectKey(svc["metadata"]["namespace"], Str(Field(svc, {"metadata", "name"})))
                               : "";
  std::set<int64_t> used = NodePortsOfOtherServices(c, self);
  for (const auto& p : spec["ports"]) {
    if (p.contains("nodePort") && p["nodePort"].is_number_integer()) used.insert(p["nodePort"].get<int64_t>());
  }
  const Json& old_ports = live ? Field(*live, {"spec", "ports"}) : Json();
  for (auto& p : spec["ports"]) {
    // 0 asks for one, as leaving it out does.
    if (!p.is_object() || (p.contains("nodePort") && !p["nodePort"].is_null() && p["nodePort"] != 0)) continue;
    p.erase("nodePort");
    if (old_ports.is_array()) {
      for (const auto& o : old_ports) {
        if (o.value("port", Json()) == p.value("port", Json()) &&
            o.value("protocol", "TCP") == p.value("protocol", "TCP") && o.contains("nodePort")) {
          p["nodePort"] = o["nodePort"];
        }
      }
      if (p.contains("nodePort")) continue;
    }
    int64_t n = 30000;
    while (used.count(n) && n < 32767) ++n;
    if (used.count(n)) return;  // full: the real server refuses; kube-sim leaves it unset
    used.insert(n);
    p["nodePort"] = n;
  }
}

// The API server's Service port validation (after allocation): a nodePort
// in range, on no other Service, once per protocol within the Service,
// and none on a ClusterIP Service.
std::optional<HttpResponse> CheckNodePorts(Cluster& c, const ResourceType& t, const std::string& sub, const Json& svc) {
  if (sub == "status" || !t.group.empty() || t.kind != "Service") return std::nullopt;
  const Json& ports = Field(svc, {"spec", "ports"});
  if (!ports.is_array()) return std::nullopt;
  const std::string type = Str(Field(svc, {"spec", "type"}));
  const std::string name = Str(Field(svc, {"metadata", "name"}));
  const std::string self = ObjectKey(Str(Field(svc, {"metadata", "namespace"})), name);
  const std::set<int64_t> others = NodePortsOfOtherServices(c, self);
  std::vector<FieldError> errs;
  std::set<std::pair<int64_t, std::string>> seen;
  for (size_t i = 0; i < ports.size(); ++i) {
    const Json& p = ports[i];
    if (!p.is_object() || !p.contains("nodePort") || !p["nodePort"].is_number_integer()) continue;
    const int64_t n = p["nodePort"].get<int64_t>();
    if (n == 0) continue;  // unset
    const std::string field = "spec.ports[" + std::to_string(i) + "].nodePort";
    const std::string v = std::to_string(n);
    if (type == "ClusterIP") {
      errs.push_back({"FieldValueForbidden", field, "Forbidden: may not be used when `type` is 'ClusterIP'"});
    } else if (n < 30000 || n > 32767) {
      errs.push_back({"FieldValueInvalid", field,
                      "Invalid value: " + v + ": provided port is not in the valid range. The range of valid ports is 30000-32767"});
    } else if (!seen.insert({n, p.value("protocol", "TCP")}).second) {
      errs.push_back({"FieldValueDuplicate", field, "Duplicate value: " + v});
    } else if (others.count(n)) {
      errs.push_back({"FieldValueInvalid", field, "Invalid value: " + v + ": provided port is already allocated"});
    }
  }
  if (errs.empty()) return std::nullopt;
  Json causes = Json::array();
  for (const auto& e : errs) causes.push_back({{"reason", e.reason}, {"message", e.body}, {"field", e.field}});
  return StatusError(422, "Invalid", InvalidMessage("Service", name, errs),
                     Json{{"name", name}, {"kind", "Service"}, {"causes", std::move(causes)}});
}
}  // namespace

void SimImpl::InitNew(Cluster& c, const ResourceType& t, Json& obj) {
  Json& meta = obj["metadata"];
  meta["uid"] = NewUid(c);
  meta["creationTimestamp"] = NowRfc3339();
  meta["generation"] = 1;
  if (t.has_status && !t.crd && t.kind != "Namespace") obj.erase("status");
  if (t.kind == "Deployment" || t.kind == "StatefulSet" || t.kind == "ReplicaSet") {
    if (!Field(obj, {"spec", "replicas"}).is_number()) obj["spec"]["replicas"] = 1;
  }
  if (t.kind == "Namespace") {
    obj["spec"]["finalizers"] = Json::array({"kubernetes"});
    obj["status"] = {{"phase", "Active"}};
  }
  if (t.kind == "Service") {
    Json& spec = obj["spec"];
    if (!spec.is_object()) spec = Json::object();
    if (!spec.contains("type")) spec["type"] = "ClusterIP";
    if (!spec.contains("clusterIP") && spec["type"] != "ExternalName") {
      uint64_t n = ++c.name_seq;
      spec["clusterIP"] = "10.96." + std::to_string((n / 250) % 250) + "." + std::to_string(n % 250 + 1);
    }
    if (spec.contains("clusterIP") && !spec.contains("clusterIPs")) spec["clusterIPs"] = Json::array({spec["clusterIP"]});
    AllocateNodePorts(c, obj, nullptr);
  }
  if (t.kind == "CustomResourceDefinition" && t.group == "apiextensions.k8s.io") {
    // As the API server stores a new CRD: defaults, and a status its
    // controllers have not touched yet.
    Json& names = obj["spec"]["names"];
    if (names.is_object()) {
      std::string kind = Str(names.value("kind", Json()));
      if (!names.contains("listKind") && !kind.empty()) names["listKind"] = kind + "List";
    }
    if (!obj["spec"].contains("conversion")) obj["spec"]["conversion"] = {{"strategy", "None"}};
    Json stored = Json::array();
    const Json& versions = Field(obj, {"spec", "versions"});
    if (versions.is_array()) {
      for (const auto& v : versions) {
        if (v.is_object() && v.value("storage", false)) stored.push_back(v.value("name", ""));
      }
    }
    obj["status"] = {{"conditions", nullptr}, {"acceptedNames", {{"plural", ""}, {"kind", ""}}}, {"storedVersions", stored}};
  }
}

HttpResponse SimImpl::Create(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  FieldValidation fv;
  if (auto bad = ReadFieldValidation(req, "CreateOptions", &fv)) return *bad;
  Result<Json> body = ParseBody(req.body);
  if (!body.ok()) return BodyError(req, body.status());
  Json obj = std::move(body.value());
  if (!obj.is_object()) return BadRequest("the body of the request was in an unknown format");
  std::string av = Str(obj["apiVersion"]), kind = Str(obj["kind"]);
  if (!kind.empty() && kind != t.kind) {
    return BadRequest("the kind in the data (" + kind + ") does not match the expected kind (" + t.kind + ")");
  }
  if (!av.empty() && av != t.GroupVersion()) {
    return BadRequest("the API version in the data (" + av + ") does not match the expected API version (" +
                      t.GroupVersion() + ")");
  }
  std::vector<UnknownField> dropped;
  if (auto bad = DecodeBody(t, fv, obj, &dropped)) return *bad;
  obj["apiVersion"] = t.GroupVersion();
  obj["kind"] = t.kind;
  Json& meta = obj["metadata"];
  if (!meta.is_object()) meta = Json::object();
  std::string ns;
  if (t.namespaced) {
    std::string body_ns = Str(meta["namespace"]);
    ns = p.ns.empty() ? (body_ns.empty() ? "default" : body_ns) : p.ns;
    if (!body_ns.empty() && body_ns != ns) {
      return BadRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  std::lock_guard<std::mutex> lock(c.mu);
  std::string name = Str(meta["name"]);
  // Admission (the namespace) comes before the name is generated and validated.
  if (auto bad = CheckNamespace(c, t, ns, name)) return *bad;
  if (name.empty() && meta.contains("generateName")) {
    static const char kAlnum[] = "bcdfghjklmnpqrstvwxz2456789";
    name = Str(meta["generateName"]);
    for (int i = 0; i < 5; ++i) name += kAlnum[c.rng() % (sizeof kAlnum - 1)];
    meta["name"] = name;
  }
  std::string err = NameError(name);
  if (!err.empty()) {
    return StatusError(422, "Invalid",
                       t.kind + " \"" + name + "\" is invalid: metadata.name: " + (name.empty() ? "Required value: " : "Invalid value: \"" + name + "\": ") + err,
                       [&] {
                         Json d = {{"name", name}, {"kind", t.kind},
                                   {"causes", Json::array({{{"reason", name.empty() ? "FieldValueRequired" : "FieldValueInvalid"},
                                                            {"message", err}, {"field", "metadata.name"}}})}};
                         if (!t.group.empty()) d["group"] = t.group;
                         return d;
                       }());
  }
  ClusterOps ops(*this, c);
  if (EntryPtr existing = ops.Find(t.StorageKey(), ObjectKey(ns, name))) {
    bool deleting = Field(existing->view, {"metadata", "deletionTimestamp"}).is_string();
    return StatusError(409, "AlreadyExists",
                       std::string(deleting ? "object is being deleted: " : "") + t.QualifiedPlural() + " \"" + name +
                           "\" already exists",
                       Details(t, name));
  }
  meta.erase("resourceVersion");
  InitNew(c, t, obj);
  if (auto bad = CheckNodePorts(c, t, "", obj)) return *bad;
  TrackUpdate(nullptr, obj, ManagerFor(req, "unknown"), NowRfc3339());
  if (!req.Query("dryRun").empty()) return WithWarnings(JsonResponse(201, obj.dump()), dropped);
  EntryPtr e = ops.Put(t.StorageKey(), std::move(obj));
  return WithWarnings(JsonResponse(201, e->text()), dropped);
}

namespace {
// Applies the parts of a write the API server keeps from the live object.
void KeepSystemFields(const Json& live, Json& obj, const ResourceType& t, const std::string& sub) {
  Json& meta = obj["metadata"];
  const Json& lm = live["metadata"];
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"}) {
    if (lm.contains(k)) meta[k] = lm[k];
    else meta.erase(k);
  }
  meta["name"] = lm["name"];
  if (lm.contains("namespace")) meta["namespace"] = lm["namespace"];
  obj["apiVersion"] = live["apiVersion"];
  obj["kind"] = live["kind"];
  if (sub == "status") {
    // Only status changes through the status subresource.
    Json status = obj.contains("status") ? obj["status"] : Json();
    Json managed = meta.contains("managedFields") ? meta["managedFields"] : Json();
    obj = live;
    if (status.is_null()) obj.erase("status");
    else obj["status"] = std::move(status);
    if (!managed.is_null()) obj["metadata"]["managedFields"] = std::move(managed);
  } else if (t.has_status && !t.crd) {
    if (live.contains("status")) obj["status"] = live["status"];
    else obj.erase("status");
  }
  if (SpecChanged(live, obj)) meta["generation"] = lm.value("generation", 1) + 1;
}
}  // namespace

namespace {
// Stores an updated object; one whose deletion waited only for the
// finalizers this write removed goes away instead.
HttpResponse StoreWrite(ClusterOps& ops, const ResourceType& t, const std::string& key, Json obj) {
  const Json& fins = Field(obj, {"metadata", "finalizers"});
  if (Field(obj, {"metadata", "deletionTimestamp"}).is_string() && (!fins.is_array() || fins.empty())) {
    ops.Put(t.StorageKey(), obj);
    ops.Remove(t.StorageKey(), key);
    return JsonResponse(200, obj.dump());
  }
  EntryPtr stored = ops.Put(t.StorageKey(), std::move(obj));
  return JsonResponse(200, stored->text());
}
}  // namespace

namespace {
// What the API server fills into an update before validating it (a
// Service's allocated clusterIPs).
void PrepareWrite(Cluster& c, const ResourceType& t, const std::string& sub, const Json& live, Json& obj) {
  if (sub != "status" && !t.crd) PrepareUpdate(t.group, t.kind, live, obj);
  if (sub != "status" && t.group.empty() && t.kind == "Service" && obj.is_object()) {
    // Leaving NodePort/LoadBalancer: the nodePorts it had allocated go.
    const std::string was = Str(Field(live, {"spec", "type"})), now = Str(Field(obj, {"spec", "type"}));
    const Json& old_ports = Field(live, {"spec", "ports"});
    if (now == "ClusterIP" && (was == "NodePort" || was == "LoadBalancer") && old_ports.is_array() &&
        obj["spec"].contains("ports") && obj["spec"]["ports"].is_array()) {
      for (auto& p : obj["spec"]["ports"]) {
        for (const auto& o : old_ports) {
          if (p.is_object() && p.contains("nodePort") && o.is_object() && o.value("nodePort", Json()) == p["nodePort"]) {
            p.erase("nodePort");
            break;
          }
        }
      }
    }
    AllocateNodePorts(c, obj, &live);
  }
}

// The API server's update validation of fields that may not change: 422.
std::optional<HttpResponse> CheckUpdate(const ResourceType& t, const std::string& sub, const Json& live,
                                        const Json& obj) {
  if (sub == "status" || t.crd) return std::nullopt;
  std::vector<FieldError> errs = ValidateUpdate(t.group, t.kind, live, obj);
  if (errs.empty()) return std::nullopt;
  std::string name = Str(Field(live, {"metadata", "name"}));
  Json causes = Json::array();
  for (const auto& e : errs) causes.push_back({{"reason", e.reason}, {"message", e.body}, {"field", e.field}});
  Json details = {{"name", name}, {"kind", t.kind}, {"causes", std::move(causes)}};
  if (!t.group.empty()) details["group"] = t.group;
  return StatusError(422, "Invalid", InvalidMessage(t.group.empty() ? t.kind : t.kind + "." + t.group, name, errs),
                     std::move(details));
}
}  // namespace

HttpResponse SimImpl::Update(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  FieldValidation fv;
  if (auto bad = ReadFieldValidation(req, "UpdateOptions", &fv)) return *bad;
  Result<Json> body = ParseBody(req.body);
  if (!body.ok()) return BodyError(req, body.status());
  Json obj = std::move(body.value());
  if (!obj.is_object() || !obj["metadata"].is_object()) return BadRequest("the body of the request was in an unknown format");
  std::vector<UnknownField> dropped;
  if (auto bad = DecodeBody(t, fv, obj, &dropped)) return *bad;
  std::string name = Str(obj["metadata"]["name"]);
  if (name != p.name) {
    return BadRequest("the name of the object (" + name + ") does not match the name on the URL (" + p.name + ")");
  }
  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  std::string key = ObjectKey(t.namespaced ? p.ns : "", p.name);
  EntryPtr e = ops.Find(t.StorageKey(), key);
  if (!e) return NotFoundError(t, p.name);
  std::string want_rv = Str(obj["metadata"]["resourceVersion"]);
  if (!want_rv.empty() && want_rv != std::to_string(e->rv) && want_rv != Str(Field(e->view, {"metadata", "resourceVersion"}))) {
    return StatusError(409, "Conflict",
                       "Operation cannot be fulfilled on " + t.QualifiedPlural() + " \"" + p.name +
                           "\": the object has been modified; please apply your changes to the latest version and try again",
                       Details(t, p.name));
  }
  Json live = e->Object();
  PrepareWrite(c, t, p.sub, live, obj);
  KeepSystemFields(live, obj, t, p.sub);
  if (auto bad = CheckUpdate(t, p.sub, live, obj)) return *bad;
  if (auto bad = CheckNodePorts(c, t, p.sub, obj)) return *bad;
  TrackUpdate(live, obj, ManagerFor(req, "unknown"), NowRfc3339());
  if (!req.Query("dryRun").empty()) return WithWarnings(JsonResponse(200, obj.dump()), dropped);
  return WithWarnings(StoreWrite(ops, t, key, std::move(obj)), dropped);
}

HttpResponse SimImpl::Patch(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  std::string ct = ContentType(req);
  std::string ns = t.namespaced ? (p.ns.empty() ? "default" : p.ns) : "";
  std::string key = ObjectKey(ns, p.name);
  std::string now = NowRfc3339();
  bool dry_run = !req.Query("dryRun").empty();
  FieldValidation fv;
  if (auto bad = ReadFieldValidation(req, "PatchOptions", &fv)) return *bad;

  if (ct == "application/apply-patch+yaml") {
    const std::string& manager = req.Query("fieldManager");
    if (manager.empty()) {
      return StatusError(422, "Invalid",
                         "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                         Json{{"kind", "PatchOptions"}, {"group", "meta.k8s.io"}});
    }
    Result<Json> body = ParseBody(req.body);
    if (!body.ok()) return BodyError(req, body.status());
    Json applied = std::move(body.value());
    if (!applied.is_object()) return BadRequest("the body of the request was in an unknown format");
    std::string av = Str(applied["apiVersion"]), kind = Str(applied["kind"]);
    if (kind.empty() || av.empty()) {
      return BadRequest("invalid object type: apply patches must set apiVersion and kind");
    }
    if (kind != t.kind) {
      return BadRequest("the kind in the data (" + kind + ") does not match the expected kind (" + t.kind + ")");
    }
    if (av != t.GroupVersion()) {
      return BadRequest("Incorrect version specified in apply patch. Specified patch version: " + av +
                        ", expected: " + t.GroupVersion());
    }
    Json& meta = applied["metadata"];
    if (!meta.is_object()) meta = Json::object();
    if (meta.contains("managedFields") && !meta["managedFields"].is_null()) {
      return BadRequest("metadata.managedFields must be nil");
    }
    // The configuration is typed against the kind's schema first, as sent.
    if (const KindSchema* schema = SchemaOf(t)) {
      std::vector<UnknownField> unknown = UnknownFields(*schema, applied);
      if (!unknown.empty()) {
        std::vector<std::string> errs;
        for (const auto& u : unknown) errs.push_back(u.apply_path + ": field not declared in schema");
        return TypedPatchError(meta, av, kind, ApplyErrors(errs));
      }
    }
    Json sent_meta = meta;
    if (Str(meta["name"]) != p.name) {
      return BadRequest("the name of the object (" + Str(meta["name"]) + ") does not match the name on the URL (" +
                        p.name + ")");
    }
    if (t.namespaced) {
      std::string body_ns = Str(meta["namespace"]);
      if (!body_ns.empty() && body_ns != ns) {
        return BadRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      meta["namespace"] = ns;
    } else {
      meta.erase("namespace");
    }
    const std::string& f = req.Query("force");
    bool force = f == "true" || f == "1";
    std::lock_guard<std::mutex> lock(c.mu);
    ClusterOps ops(*this, c);
    EntryPtr e = ops.Find(t.StorageKey(), key);
    const Json live = e ? e->Object() : Json();
    // A resourceVersion in the configuration is a precondition on the live
    // object, as in the API server's update path (optimistic locking).
    const std::string want_rv = Str(sent_meta["resourceVersion"]);
    if (e && !want_rv.empty() && want_rv != std::to_string(e->rv) &&
        want_rv != Str(Field(live, {"metadata", "resourceVersion"}))) {
      return StatusError(409, "Conflict",
                         "Operation cannot be fulfilled on " + t.QualifiedPlural() + " \"" + p.name +
                             "\": the object has been modified; please apply your changes to the latest version and try again",
                         Details(t, p.name));
    }
    // The main resource ignores status, as the API server does.
    if (p.sub != "status" && t.has_status && !t.crd) applied.erase("status");
    std::vector<ApplyConflict> conflicts;
    Result<ApplyResult> r = ServerSideApply(live, applied, manager, force, now, &conflicts);
    if (!r.ok()) {
      if (r.status().code() == Code::kInvalid) {
        return TypedPatchError(sent_meta, av, kind, r.status().message());
      }
      if (r.status().code() == Code::kConflict) {
        Json causes = Json::array();
        for (const auto& cf : conflicts) {
          causes.push_back({{"reason", "FieldManagerConflict"}, {"message", "conflict with " + cf.manager}, {"field", cf.field}});
        }
        return StatusError(409, "Conflict", r.status().message(), Json{{"causes", std::move(causes)}});
      }
      return FromStatus(r.status(), t, p.name);
    }
    Json obj = std::move(r->object);
    obj["apiVersion"] = e ? live["apiVersion"] : Json(t.GroupVersion());
    if (!e) {
      // Creating: admission (the namespace) and validation (the name).
      if (auto bad = CheckNamespace(c, t, ns, p.name)) return *bad;
      std::string err = NameError(p.name);
      if (!err.empty()) return StatusError(422, "Invalid", t.kind + " \"" + p.name + "\" is invalid: metadata.name: " + err);
      InitNew(c, t, obj);
      obj["metadata"]["name"] = p.name;
      if (t.namespaced) obj["metadata"]["namespace"] = ns;
      if (auto bad = CheckNodePorts(c, t, "", obj)) return *bad;
      if (dry_run) return JsonResponse(201, obj.dump());
      EntryPtr stored = ops.Put(t.StorageKey(), std::move(obj));
      return JsonResponse(201, stored->text());
    }
    if (!r->changed) return JsonResponse(200, e->text());
    PrepareWrite(c, t, p.sub, live, obj);
    KeepSystemFields(live, obj, t, p.sub);
    if (auto bad = CheckUpdate(t, p.sub, live, obj)) return *bad;
    if (auto bad = CheckNodePorts(c, t, p.sub, obj)) return *bad;
    if (dry_run) return JsonResponse(200, obj.dump());
    EntryPtr stored = ops.Put(t.StorageKey(), std::move(obj), /*known_changed=*/true);
    return JsonResponse(200, stored->text());
  }

  Result<Json> patch = ParseBody(req.body);
  if (!patch.ok()) return BodyError(req, patch.status());
  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  EntryPtr e = ops.Find(t.StorageKey(), key);
  if (!e) return NotFoundError(t, p.name);
  Json live = e->Object();
  Json obj;
  bool strategic = false;
  if (ct == "application/merge-patch+json") {
    if (!patch->is_object()) return BadRequest("a merge patch must be a JSON object");
    obj = MergePatch(live, *patch);
  } else if (ct == "application/json-patch+json") {
    Result<Json> r = JsonPatch(live, *patch);
    if (!r.ok()) return StatusError(422, "Invalid", r.status().message(), Details(t, p.name));
    obj = std::move(r.value());
  } else if (ct == "application/strategic-merge-patch+json") {
    if (t.crd) {
      return StatusError(415, "UnsupportedMediaType",
                         "strategic merge patch is not supported for custom resources; use a merge patch");
    }
    Result<Json> r = StrategicMergePatch(live, *patch);
    if (!r.ok()) return StatusError(422, "Invalid", r.status().message(), Details(t, p.name));
    obj = std::move(r.value());
    strategic = true;
  } else {
    return StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json");
  }
  if (!obj.is_object() || !obj["metadata"].is_object()) return BadRequest("the patch removed the object's metadata");
  // The patched object is decoded into the kind: undeclared fields drop,
  // or with Strict refuse the patch (422, naming the patched value).
  std::vector<UnknownField> dropped;
  if (const KindSchema* schema = SchemaOf(t)) {
    std::vector<UnknownField> unknown = UnknownFields(*schema, obj);
    if (!unknown.empty() && fv == FieldValidation::kStrict) {
      std::string body = "Invalid value: " + GoQuote(strategic ? GoPlusV(*patch) : obj.dump()) + ": " +
                         StrictDecodingError(unknown);
      return StatusError(422, "Invalid", " \"\" is invalid: patch: " + body,
                         Json{{"causes", Json::array({{{"reason", "FieldValueInvalid"}, {"message", body}, {"field", "patch"}}})}});
    }
    if (!unknown.empty()) {
      DropUnknownFields(*schema, obj);
      if (fv == FieldValidation::kWarn) dropped = std::move(unknown);
    }
  }
  std::string want_rv = Str(obj["metadata"]["resourceVersion"]);
  if (!want_rv.empty() && want_rv != Str(Field(live, {"metadata", "resourceVersion"}))) {
    return StatusError(409, "Conflict",
                       "Operation cannot be fulfilled on " + t.QualifiedPlural() + " \"" + p.name +
                           "\": the object has been modified; please apply your changes to the latest version and try again",
                       Details(t, p.name));
  }
  PrepareWrite(c, t, p.sub, live, obj);
  KeepSystemFields(live, obj, t, p.sub);
  if (auto bad = CheckUpdate(t, p.sub, live, obj)) return *bad;
  if (auto bad = CheckNodePorts(c, t, p.sub, obj)) return *bad;
  TrackUpdate(live, obj, ManagerFor(req, "unknown"), now);
  if (dry_run) return WithWarnings(JsonResponse(200, obj.dump()), dropped);
  return WithWarnings(StoreWrite(ops, t, key, std::move(obj)), dropped);
}

HttpResponse SimImpl::Delete(Cluster& c, const HttpRequest& req, const ResourceType& t, const ResourcePath& p) {
  Json opts = Json::object();
  if (!req.body.empty()) {
    Result<Json> b = ParseBody(req.body);
    if (!b.ok() || !b->is_object()) return BadRequest("the DeleteOptions body is not a JSON object");
    opts = std::move(b.value());
  }
  std::string propagation = Str(opts["propagationPolicy"]);
  if (propagation.empty()) propagation = req.Query("propagationPolicy");
  if (propagation.empty()) propagation = "Background";
  if (propagation != "Background" && propagation != "Foreground" && propagation != "Orphan") {
    return BadRequest("propagationPolicy must be one of Background, Foreground, Orphan; got " + propagation);
  }
  bool dry_run = !req.Query("dryRun").empty() || (opts.contains("dryRun") && !opts["dryRun"].empty());
  std::string ns = t.namespaced ? p.ns : "";
  std::string key = ObjectKey(ns, p.name);
  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  EntryPtr e = ops.Find(t.StorageKey(), key);
  if (!e) return NotFoundError(t, p.name);
  const Json& pre = opts.value("preconditions", Json::object());
  if (pre.is_object()) {
    std::string uid = Str(pre.value("uid", Json())), rv = Str(pre.value("resourceVersion", Json()));
    if ((!uid.empty() && uid != Str(Field(e->view, {"metadata", "uid"}))) ||
        (!rv.empty() && rv != Str(Field(e->view, {"metadata", "resourceVersion"})))) {
      return StatusError(409, "Conflict",
                         "Operation cannot be fulfilled on " + t.QualifiedPlural() + " \"" + p.name +
                             "\": the precondition in the delete options does not match the object",
                         Details(t, p.name));
    }
  }
  if (t.kind == "Namespace" && (p.name == "default" || p.name == "kube-system" || p.name == "kube-public")) {
    return StatusError(403, "Forbidden", "namespaces \"" + p.name + "\" is forbidden: this namespace may not be deleted",
                       Details(t, p.name));
  }
  EntryPtr before = c.store[t.StorageKey()][key];
  if (dry_run) return JsonResponse(200, before->text());
  if (t.kind == "CustomResourceDefinition" && t.group == "apiextensions.k8s.io") {
    // The API server holds a deleted CRD with its cleanup finalizer until
    // its custom resources are gone.
    Json o = before->Object();
    if (!o["metadata"].contains("deletionTimestamp")) o["metadata"]["deletionTimestamp"] = NowRfc3339();
    Json& fins = o["metadata"]["finalizers"];
    if (!fins.is_array()) fins = Json::array();
    if (std::find(fins.begin(), fins.end(), Json(kCrdCleanupFinalizer)) == fins.end()) fins.push_back(kCrdCleanupFinalizer);
    Json& conds = o["status"]["conditions"];
    if (!conds.is_array()) conds = Json::array();
    bool marked = false;
    for (const auto& cond : conds) marked = marked || (cond.is_object() && cond.value("type", "") == "Terminating");
    if (!marked) {
      conds.push_back({{"type", "Terminating"},
                       {"status", "True"},
                       {"lastTransitionTime", NowRfc3339()},
                       {"reason", "InstanceDeletionPending"},
                       {"message", "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"}});
    }
    EntryPtr stored = ops.Put(t.StorageKey(), std::move(o));
    ops.Enqueue(t.StorageKey(), key);
    return JsonResponse(200, stored->text());
  }
  if (t.kind == "Namespace") {
    Json o = before->Object();
    if (!o["metadata"].contains("deletionTimestamp")) o["metadata"]["deletionTimestamp"] = NowRfc3339();
    o["status"]["phase"] = "Terminating";
    EntryPtr stored = ops.Put(t.StorageKey(), std::move(o));
    c.terminating_since.emplace(key, Clock::now());  // the first delete starts the clock
    ops.Enqueue(t.StorageKey(), key);
    return JsonResponse(200, stored->text());
  }
  ops.Delete(t.StorageKey(), key, propagation);
  EntryPtr after = ops.Find(t.StorageKey(), key);
  return JsonResponse(200, after ? after->text() : before->text());
}

HttpResponse SimImpl::DeleteCollection(Cluster& c, const HttpRequest& req, const ResourceType& t,
                                       const ResourcePath& p) {
  Result<LabelSelector> ls = LabelSelector::Parse(req.Query("labelSelector"));
  if (!ls.ok()) return BadRequest(ls.status().message());
  Result<FieldSelector> fs = FieldSelector::Parse(req.Query("fieldSelector"));
  if (!fs.ok()) return BadRequest(fs.status().message());
  std::lock_guard<std::mutex> lock(c.mu);
  ClusterOps ops(*this, c);
  const auto* coll = ops.Collection(t.StorageKey());
  std::vector<std::string> keys;
  if (coll) {
    for (const auto& [k, e] : *coll) {
      if (t.namespaced && !p.ns.empty() && Str(Field(e->view, {"metadata", "namespace"})) != p.ns) continue;
      if (!ls->Empty() && !ls->Matches(Field(e->view, {"metadata", "labels"}))) continue;
      if (!fs->Matches(e->view)) continue;
      keys.push_back(k);
    }
  }
  for (const auto& k : keys) ops.Delete(t.StorageKey(), k, "Background");
  Json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"status", "Success"}};
  return JsonResponse(200, s.dump());
}

// ---------------------------------------------------------------------------

std::unique_ptr<Simulator> Simulator::Create(std::vector<ClusterSpec> clusters, SimOptions options) {
  return std::make_unique<SimImpl>(std::move(clusters), options);
}

}  // namespace eco::kubesim
