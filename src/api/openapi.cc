#include "api/openapi.h"

#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "api/resources.h"

namespace eco::api {

using nlohmann::json;

namespace {

std::string V2Path(const std::vector<std::string>& segs) {
  std::string out = "/v2";
  for (const auto& s : segs) out += "/" + s;
  return out;
}

// What a path is: a resource's collection or item, or neither.
struct Place {
  const ResourceDef* def = nullptr;
  bool item = false;
};

std::map<std::string, Place> Places() {
  std::map<std::string, Place> out;
  for (const ResourceDef* d : AllResources()) {
    out[V2Path(d->collection)] = {d, false};
    std::vector<std::string> item = d->collection;
    for (const auto& k : d->own_keys) item.push_back("{" + k + "}");
    out[V2Path(item)] = {d, true};
  }
  return out;
}

std::string LastSegment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json ErrorResponses() {
  json err = {{"description", "the API's error: {\"code\", \"message\"}"},
              {"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
  return {{"default", err}};
}

json Ok(const std::string& code, const std::string& what, json content = nullptr) {
  json r = ErrorResponses();
  r[code] = {{"description", what}};
  if (!content.is_null()) r[code]["content"] = std::move(content);
  return r;
}

json JsonOf(const std::string& schema) {
  return {{"application/json", {{"schema", Ref(schema)}}}};
}

// The request body of a create or replace.
json Body(const ResourceDef& d) {
  if (d.file != FileKind::kNone) {
    json props = {{"metadata", {{"type", "string"}, {"description", "the resource as JSON ({metadata, spec})"}}}};
    if (d.file == FileKind::kFiles) {
      props["files"] = {{"type", "array"},
                        {"items", {{"type", "string"}, {"format", "binary"}}},
                        {"description", "zero or more files: ConfigMap/Secret data or merge patches"}};
    } else {
      const std::string file = d.file == FileKind::kArchive    ? "a gzip-compressed tar archive (.tgz)"
                               : d.file == FileKind::kManifest ? "the Kubernetes manifest (YAML) of a new object"
                                                               : "the kubeconfig";
      props["file"] = {{"type", "string"}, {"format", "binary"}, {"description", file}};
    }
    json content = {{"multipart/form-data", {{"schema", {{"type", "object"}, {"properties", props}}}}}};
    // An agent cluster (spec.delivery "agent") has no kubeconfig: plain JSON.
    if (d.file == FileKind::kKubeconfig) content["application/json"] = {{"schema", Ref("Resource")}};
    return {{"required", true}, {"content", std::move(content)}};
  }
  return {{"required", true}, {"content", JsonOf(d.label_body ? "Label" : "Resource")}};
}

json Operation(const std::string& method, const std::string& path, const Place* place) {
  json op;
  json params = json::array();
  for (size_t at = path.find('{'); at != std::string::npos; at = path.find('{', at + 1)) {
    const std::string name = path.substr(at + 1, path.find('}', at) - at - 1);
    params.push_back({{"name", name}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
  }
  const std::string last = LastSegment(path);
  if (place && place->def) {
    const ResourceDef& d = *place->def;
    op["tags"] = json::array({d.display});
    if (place->item) {
      if (method == "GET") {
        op["summary"] = "Get one " + d.display;
        op["responses"] = Ok("200", "the " + d.display, JsonOf(d.label_body ? "Label" : "Resource"));
      } else if (method == "PUT") {
        op["summary"] = "Create or replace a " + d.display;
        op["requestBody"] = Body(d);
        op["responses"] = Ok("200", "replaced (201 when created)", JsonOf(d.label_body ? "Label" : "Resource"));
      } else if (method == "DELETE") {
        op["summary"] = "Delete a " + d.display;
        op["responses"] = Ok("204", "deleted");
      }
    } else {
      if (method == "GET") {
        op["summary"] = "List " + d.display + " items";
        if (!d.name_query.empty()) {
          params.push_back({{"name", d.name_query}, {"in", "query"}, {"required", false},
                            {"description", "answer this one item instead of the list"},
                            {"schema", {{"type", "string"}}}});
        }
        op["responses"] = Ok("200", "the items", {{"application/json", {{"schema", {{"type", "array"}, {"items", Ref(d.label_body ? "Label" : "Resource")}}}}}});
      } else if (method == "POST") {
        op["summary"] = "Create a " + d.display;
        op["requestBody"] = Body(d);
        op["responses"] = Ok("201", "created", JsonOf(d.label_body ? "Label" : "Resource"));
      } else if (method == "DELETE") {
        op["summary"] = "Delete every " + d.display + " (and their children)";
        op["responses"] = Ok("204", "deleted");
      }
    }
  } else if (last == "status") {
    op["tags"] = json::array({"Status"});
    op["summary"] = "Deployed and ready status (docs/status.md)";
    for (const char* q : {"status", "type", "output", "instance", "app", "cluster", "resource", "apps", "clusters",
                          "resources", "watch"}) {
      params.push_back({{"name", q}, {"in", "query"}, {"required", false}, {"schema", {{"type", "string"}}}});
    }
    op["responses"] = Ok("200", "the status", {{"application/json", {{"schema", {{"type", "object"}}}}}});
  } else if (path == "/v2/whoami") {
    op["tags"] = json::array({"Console"});
    op["summary"] = "Who the caller is: {auth, user, admin, projects} (docs/api.md#console)";
    op["responses"] = Ok("200", "the caller", {{"application/json", {{"schema", {{"type", "object"}}}}}});
  } else if (path == "/v2/fleet") {
    op["tags"] = json::array({"Console"});
    op["summary"] = "Every DIG and logical cloud the caller may see, with counts and the fleet's problems (docs/api.md#console)";
    op["responses"] = Ok("200", "{digs, logicalClouds, providers, problems}",
                         {{"application/json", {{"schema", {{"type", "object"}}}}}});
  } else if (path == "/v2/fleet/clusters") {
    op["tags"] = json::array({"Console"});
    op["summary"] = "Every cluster with its liveness and what is deployed there; administrators (docs/api.md#console)";
    op["responses"] = Ok("200", "the clusters",
                         {{"application/json", {{"schema", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}});
  } else if (last == "unreachable-clusters") {
    op["tags"] = json::array({"Status"});
    op["summary"] = "Clusters the ready monitor cannot reach now (docs/status.md)";
    op["responses"] = Ok("200", "[{clusterProvider, cluster, since, error}]",
                         {{"application/json", {{"schema", {{"type", "array"}, {"items", {{"type", "object"}}}}}}}});
  } else if (last == "agent-bootstrap") {
    op["tags"] = json::array({"Agent clusters"});
    op["summary"] = "A single-use bootstrap token for an agent cluster's agent (docs/api.md#agent-clusters)";
    params.push_back({{"name", "ttl"}, {"in", "query"}, {"required", false},
                      {"description", "the token's lifetime as a Go duration, 1m to 720h (default 24h)"},
                      {"schema", {{"type", "string"}}}});
    const json ttl_body = {{"type", "object"}, {"properties", {{"ttl", {{"type", "string"}}}}}};
    op["requestBody"] = {{"required", false}, {"content", {{"application/json", {{"schema", ttl_body}}}}}};
    op["responses"] = Ok("201", "the token, shown once", JsonOf("AgentBootstrap"));
  } else if (last == "agent-revoke") {
    op["tags"] = json::array({"Agent clusters"});
    op["summary"] = "Revoke an agent cluster's credential and unused bootstrap tokens";
    op["responses"] = Ok("204", "revoked (also when there was nothing to revoke)");
  } else if (last == "openapi.json") {
    op["tags"] = json::array({"System"});
    op["summary"] = "This description";
    op["responses"] = Ok("200", "OpenAPI 3.0 document", {{"application/json", {{"schema", {{"type", "object"}}}}}});
  } else if (last == "plan" && method == "POST") {
    op["tags"] = json::array({"Lifecycle"});
    op["summary"] = "The fleet plan: what instantiate or update would do, changing nothing (docs/rollouts.md#plans)";
    params.push_back({{"name", "output"}, {"in", "query"}, {"required", false},
                      {"description", "summary: counts only, no per-cluster object lists"},
                      {"schema", {{"type", "string"}, {"enum", {"full", "summary"}}}}});
    op["responses"] = Ok("200", "the plan", {{"application/json", {{"schema", {{"type", "object"}}}}}});
  } else if (method == "POST" && path.find("/rollout/") != std::string::npos) {
    op["tags"] = json::array({"Lifecycle"});
    op["summary"] = "Staged rollout: " + last + " (docs/rollouts.md#staged-rollouts)";
    op["responses"] = Ok("202", "accepted");
  } else if (method == "POST") {
    op["tags"] = json::array({"Lifecycle"});
    op["summary"] = "Lifecycle operation: " + last;
    if ((last == "update" || last == "instantiate") && path.find("/deployment-intent-groups/") != std::string::npos) {
      params.push_back({{"name", "plan"}, {"in", "query"}, {"required", false},
                        {"description", "a plan's planId: 409 unless the operation still does what that plan says"},
                        {"schema", {{"type", "string"}}}});
    }
    op["responses"] = Ok("202", "accepted; progress shows in the status");
  } else {
    op["tags"] = json::array({"Other"});
    op["summary"] = method + " " + last;
    op["responses"] = Ok("200", "answer", {{"application/json", {{"schema", {{"type", "object"}}}}}});
  }
  if (!op.contains("summary")) {
    op["summary"] = method + " " + path;
    op["responses"] = Ok("200", "answer");
  }
  if (!params.empty()) op["parameters"] = std::move(params);
  std::string id = method;
  for (char c : path) id += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  op["operationId"] = id;
  return op;
}

json Schemas() {
  json metadata = {{"type", "object"},
                   {"required", {"name"}},
                   {"properties",
                    {{"name", {{"type", "string"}, {"maxLength", 128}}},
                     {"description", {{"type", "string"}}},
                     {"userData1", {{"type", "string"}}},
                     {"userData2", {{"type", "string"}}}}}};
  return {{"Resource",
           {{"type", "object"},
            {"required", {"metadata"}},
            {"properties", {{"metadata", metadata}, {"spec", {{"type", "object"}}}}}}},
          {"Label", {{"type", "object"}, {"required", {"clusterLabel"}}, {"properties", {{"clusterLabel", {{"type", "string"}}}}}}},
          {"AgentBootstrap",
           {{"type", "object"},
            {"required", {"token", "hub", "expires"}},
            {"properties",
             {{"token", {{"type", "string"}, {"description", "single use; give it to the agent"}}},
              {"hub", {{"type", "string"}, {"description", "the URL the agent dials"}}},
              {"expires", {{"type", "string"}, {"format", "date-time"}}}}}}},
          {"Error",
           {{"type", "object"},
            {"properties", {{"code", {{"type", "integer"}}}, {"message", {{"type", "string"}}}}}}}};
}

}  // namespace

json OpenApiDocument(const std::vector<std::string>& routes, const std::string& version) {
  const auto places = Places();
  json paths = json::object();
  for (const std::string& r : routes) {
    const auto sp = r.find(' ');
    std::string method = r.substr(0, sp), path = r.substr(sp + 1);
    auto it = places.find(path);
    std::string lower;
    for (char c : method) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    paths[path][lower] = Operation(method, path, it == places.end() ? nullptr : &it->second);
  }
  // Served by every role's HTTP server outside the API's route table.
  paths["/healthz"]["get"] = {{"operationId", "GET_healthz"}, {"tags", {"System"}}, {"summary", "Liveness: {\"status\":\"ok\"}"},
                              {"responses", Ok("200", "alive")}};
  paths["/metrics"]["get"] = {{"operationId", "GET_metrics"}, {"tags", {"System"}},
                              {"summary", "Prometheus metrics (docs/observability.md)"},
                              {"responses", Ok("200", "text exposition format")}};
  paths["/log-level"]["get"] = {{"operationId", "GET_log_level"}, {"tags", {"System"}}, {"summary", "The log level"},
                                {"responses", Ok("200", "{\"level\": ...}")}};
  paths["/log-level"]["put"] = {{"operationId", "PUT_log_level"}, {"tags", {"System"}}, {"summary", "Set the log level"},
                                {"responses", Ok("200", "{\"level\": ...}")}};
  return {{"openapi", "3.0.3"},
          {"info",
           {{"title", "eco — Edge Cluster Orchestrator"},
            {"version", version},
            {"description", "EMCO's /v2 REST API as eco serves it; see docs/api.md."}}},
          {"paths", std::move(paths)},
          {"components", {{"schemas", Schemas()}}}};
}

}  // namespace eco::api
