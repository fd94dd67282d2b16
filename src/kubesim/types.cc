#include "kubesim/types.h"

#include <map>
#include <set>

#include "kubesim/schema.h"

namespace eco::kubesim {
namespace {

ResourceType T(std::string group, std::string version, std::string kind, std::string plural, bool namespaced,
               std::vector<std::string> short_names = {}, bool has_status = true,
               std::vector<std::string> categories = {}) {
  ResourceType t;
  t.group = std::move(group);
  t.version = std::move(version);
  t.kind = std::move(kind);
  t.plural = std::move(plural);
  t.singular.reserve(t.kind.size());
  for (char c : t.kind) t.singular += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t.namespaced = namespaced;
  t.short_names = std::move(short_names);
  t.has_status = has_status;
  t.categories = std::move(categories);
  return t;
}

std::vector<ResourceType> MakeBuiltins() {
  const std::vector<std::string> all = {"all"};
  return {
      T("", "v1", "Namespace", "namespaces", false, {"ns"}),
      T("", "v1", "Node", "nodes", false, {"no"}),
      T("", "v1", "Pod", "pods", true, {"po"}, true, all),
      T("", "v1", "Service", "services", true, {"svc"}, true, all),
      T("", "v1", "Endpoints", "endpoints", true, {"ep"}, false),
      T("", "v1", "ConfigMap", "configmaps", true, {"cm"}, false),
      T("", "v1", "Secret", "secrets", true, {}, false),
      T("", "v1", "ServiceAccount", "serviceaccounts", true, {"sa"}, false),
      T("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, {"pvc"}),
      T("", "v1", "PersistentVolume", "persistentvolumes", false, {"pv"}),
      T("", "v1", "Event", "events", true, {"ev"}, false),
      T("", "v1", "LimitRange", "limitranges", true, {"limits"}, false),
      T("", "v1", "ResourceQuota", "resourcequotas", true, {"quota"}),
      T("", "v1", "ReplicationController", "replicationcontrollers", true, {"rc"}, true, all),
      T("apps", "v1", "Deployment", "deployments", true, {"deploy"}, true, all),
      T("apps", "v1", "StatefulSet", "statefulsets", true, {"sts"}, true, all),
      T("apps", "v1", "DaemonSet", "daemonsets", true, {"ds"}, true, all),
      T("apps", "v1", "ReplicaSet", "replicasets", true, {"rs"}, true, all),
      T("apps", "v1", "ControllerRevision", "controllerrevisions", true, {}, false),
      T("batch", "v1", "Job", "jobs", true, {}, true, all),
      T("batch", "v1", "CronJob", "cronjobs", true, {"cj"}, true, all),
      T("networking.k8s.io", "v1", "Ingress", "ingresses", true, {"ing"}),
      T("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, {"netpol"}, false),
      T("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, {}, false),
      T("rbac.authorization.k8s.io", "v1", "Role", "roles", true, {}, false),
      T("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, {}, false),
      T("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, {}, false),
      T("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, {}, false),
      T("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, {"pdb"}),
      T("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, {"hpa"}, true, all),
      T("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, {"hpa"}, true, all),
      T("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false,
        {"crd", "crds"}),
      T("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, {"sc"}, false),
      T("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, {"pc"}, false),
      T("coordination.k8s.io", "v1", "Lease", "leases", true, {}, false),
      T("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
        false, {}, false),
      T("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations", false, {}, false),
  };
}

const std::vector<std::string>& Verbs() {
  static const std::vector<std::string> v = {"create", "delete", "deletecollection", "get",
                                             "list",   "patch",  "update",           "watch"};
  return v;
}

}  // namespace

const std::vector<ResourceType>& BuiltinTypes() {
  static const std::vector<ResourceType> types = MakeBuiltins();
  return types;
}

std::string ApiVersionsJson() {
  return R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]})";
}

Json ApiGroupListJson(const std::vector<const ResourceType*>& types) {
  // Group → versions in order of first appearance (the first is preferred).
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> versions;
  for (const ResourceType* t : types) {
    if (t->group.empty()) continue;
    auto& v = versions[t->group];
    if (v.empty()) order.push_back(t->group);
    bool seen = false;
    for (const auto& x : v) seen = seen || x == t->version;
    if (!seen) v.push_back(t->version);
  }
  Json groups = Json::array();
  for (const auto& g : order) {
    Json vs = Json::array();
    for (const auto& v : versions[g]) vs.push_back({{"groupVersion", g + "/" + v}, {"version", v}});
    groups.push_back({{"name", g},
                      {"versions", vs},
                      {"preferredVersion", {{"groupVersion", g + "/" + versions[g][0]}, {"version", versions[g][0]}}}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

Json ApiResourceListJson(const std::vector<const ResourceType*>& types, const std::string& group,
                         const std::string& version) {
  Json resources = Json::array();
  for (const ResourceType* t : types) {
    if (t->group != group || t->version != version) continue;
    Json r = {{"name", t->plural},     {"singularName", t->singular}, {"namespaced", t->namespaced},
              {"kind", t->kind},       {"verbs", Verbs()}};
    if (!t->short_names.empty()) r["shortNames"] = t->short_names;
    if (!t->categories.empty()) r["categories"] = t->categories;
    resources.push_back(std::move(r));
    if (t->has_status) {
      resources.push_back({{"name", t->plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", t->namespaced},
                           {"kind", t->kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  std::string gv = group.empty() ? version : group + "/" + version;
  return {{"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", gv}, {"resources", resources}};
}

std::vector<ResourceType> TypesFromCrd(const Json& crd) {
  std::vector<ResourceType> out;
  const Json* spec = crd.contains("spec") ? &crd["spec"] : nullptr;
  if (!spec || !spec->is_object()) return out;
  const Json& names = spec->value("names", Json::object());
  std::string group = spec->value("group", "");
  std::string kind = names.value("kind", "");
  std::string plural = names.value("plural", "");
  if (group.empty() || kind.empty() || plural.empty()) return out;
  std::string singular = names.value("singular", "");
  if (singular.empty()) {
    for (char c : kind) singular += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  bool namespaced = spec->value("scope", "Namespaced") != "Cluster";
  const Json& versions = spec->value("versions", Json::array());
  // The storage version is served first, as the API server prefers it.
  std::vector<const Json*> ordered;
  for (const auto& v : versions) {
    if (v.is_object() && v.value("served", true) && v.value("storage", false)) ordered.push_back(&v);
  }
  for (const auto& v : versions) {
    if (v.is_object() && v.value("served", true) && !v.value("storage", false)) ordered.push_back(&v);
  }
  for (const Json* v : ordered) {
    ResourceType t;
    t.group = group;
    t.version = v->value("name", "");
    if (t.version.empty()) continue;
    t.kind = kind;
    t.plural = plural;
    t.singular = singular;
    t.namespaced = namespaced;
    if (names.contains("shortNames") && names["shortNames"].is_array()) {
      for (const auto& s : names["shortNames"]) {
        if (s.is_string()) t.short_names.push_back(s.get<std::string>());
      }
    }
    if (names.contains("categories") && names["categories"].is_array()) {
      for (const auto& s : names["categories"]) {
        if (s.is_string()) t.categories.push_back(s.get<std::string>());
      }
    }
    const Json& sub = v->value("subresources", Json::object());
    t.has_status = sub.is_object() && sub.contains("status");
    t.crd = true;
    const Json& schema = v->value("schema", Json::object());
    if (schema.is_object() && schema.contains("openAPIV3Schema") && schema["openAPIV3Schema"].is_object()) {
      t.schema = CrdKindSchema(schema["openAPIV3Schema"]);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace eco::kubesim
