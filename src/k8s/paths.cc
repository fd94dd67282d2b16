#include "k8s/paths.h"

namespace eco::k8s {

Result<GroupVersion> ParseApiVersion(std::string_view api_version) {
  if (api_version.empty()) return Invalid("empty apiVersion");
  size_t slash = api_version.find('/');
  if (slash == std::string_view::npos) return GroupVersion{"", std::string(api_version)};
  if (slash == 0 || slash + 1 == api_version.size() ||
      api_version.find('/', slash + 1) != std::string_view::npos) {
    return Invalid("malformed apiVersion \"" + std::string(api_version) + "\"");
  }
  return GroupVersion{std::string(api_version.substr(0, slash)),
                      std::string(api_version.substr(slash + 1))};
}

std::string GroupVersionPath(const GroupVersion& gv) {
  if (gv.group.empty()) return "/api/" + gv.version;
  return "/apis/" + gv.group + "/" + gv.version;
}

std::optional<ResourceInfo> BuiltinKind(const GroupVersion& gv, std::string_view kind) {
  struct Row {
    const char* group;
    const char* kind;
    const char* resource;
    bool namespaced;
  };
  // All served as version v1.
  static constexpr Row kRows[] = {
      {"", "ConfigMap", "configmaps", true},
      {"", "Endpoints", "endpoints", true},
      {"", "LimitRange", "limitranges", true},
      {"", "Namespace", "namespaces", false},
      {"", "Node", "nodes", false},
      {"", "PersistentVolume", "persistentvolumes", false},
      {"", "PersistentVolumeClaim", "persistentvolumeclaims", true},
      {"", "Pod", "pods", true},
      {"", "ReplicationController", "replicationcontrollers", true},
      {"", "ResourceQuota", "resourcequotas", true},
      {"", "Secret", "secrets", true},
      {"", "Service", "services", true},
      {"", "ServiceAccount", "serviceaccounts", true},
      {"apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", false},
      {"apps", "ControllerRevision", "controllerrevisions", true},
      {"apps", "DaemonSet", "daemonsets", true},
      {"apps", "Deployment", "deployments", true},
      {"apps", "ReplicaSet", "replicasets", true},
      {"apps", "StatefulSet", "statefulsets", true},
      {"batch", "CronJob", "cronjobs", true},
      {"batch", "Job", "jobs", true},
      {"networking.k8s.io", "Ingress", "ingresses", true},
      {"networking.k8s.io", "IngressClass", "ingressclasses", false},
      {"networking.k8s.io", "NetworkPolicy", "networkpolicies", true},
      {"policy", "PodDisruptionBudget", "poddisruptionbudgets", true},
      {"rbac.authorization.k8s.io", "ClusterRole", "clusterroles", false},
      {"rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", false},
      {"rbac.authorization.k8s.io", "Role", "roles", true},
      {"rbac.authorization.k8s.io", "RoleBinding", "rolebindings", true},
      {"scheduling.k8s.io", "PriorityClass", "priorityclasses", false},
      {"storage.k8s.io", "StorageClass", "storageclasses", false},
  };
  static const std::vector<ResourceInfo> kInfos = [] {
    std::vector<ResourceInfo> v;
    for (const Row& r : kRows) {
      ResourceInfo info;
      info.group = r.group;
      info.version = "v1";
      info.kind = r.kind;
      info.resource = r.resource;
      info.namespaced = r.namespaced;
      info.verbs = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
      v.push_back(std::move(info));
    }
    return v;
  }();
  if (gv.version != "v1") return std::nullopt;
  for (const ResourceInfo& info : kInfos) {
    if (info.group == gv.group && info.kind == kind) return info;
  }
  return std::nullopt;
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

void AddQuery(std::string& url, std::string_view key, std::string_view value) {
  url.push_back(url.find('?') == std::string::npos ? '?' : '&');
  url.append(key);
  url.push_back('=');
  url.append(PercentEncode(value));
}

std::string ResourcePath(const ResourceInfo& r, std::string_view ns, std::string_view name) {
  std::string path = GroupVersionPath({r.group, r.version});
  if (r.namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += PercentEncode(ns);
  }
  path += '/';
  path += r.resource;
  if (!name.empty()) {
    path += '/';
    path += PercentEncode(name);
  }
  return path;
}

Result<std::vector<ResourceInfo>> ParseResourceList(const nlohmann::json& doc,
                                                    const GroupVersion& gv) {
  if (!doc.is_object() || !doc.contains("resources") || !doc["resources"].is_array()) {
    return Invalid("discovery document for " + GroupVersionPath(gv) + " has no resources list");
  }
  std::vector<ResourceInfo> out;
  for (const auto& r : doc["resources"]) {
    if (!r.is_object()) continue;
    std::string name = r.value("name", "");
    std::string kind = r.value("kind", "");
    if (name.empty() || kind.empty() || name.find('/') != std::string::npos) continue;
    ResourceInfo info;
    info.group = gv.group;
    info.version = gv.version;
    info.kind = std::move(kind);
    info.resource = std::move(name);
    info.namespaced = r.value("namespaced", false);
    if (auto v = r.find("verbs"); v != r.end() && v->is_array()) {
      for (const auto& verb : *v) {
        if (verb.is_string()) info.verbs.push_back(verb.get<std::string>());
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<GroupVersion>> ParseGroupList(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("groups") || !doc["groups"].is_array()) {
    return Invalid("discovery document /apis has no groups list");
  }
  std::vector<GroupVersion> out;
  for (const auto& g : doc["groups"]) {
    if (!g.is_object()) continue;
    std::string name = g.value("name", "");
    if (name.empty()) continue;
    std::string preferred;
    if (auto p = g.find("preferredVersion"); p != g.end() && p->is_object()) {
      preferred = p->value("version", "");
    }
    if (!preferred.empty()) out.push_back({name, preferred});
    if (auto vs = g.find("versions"); vs != g.end() && vs->is_array()) {
      for (const auto& v : *vs) {
        if (!v.is_object()) continue;
        std::string version = v.value("version", "");
        if (!version.empty() && version != preferred) out.push_back({name, version});
      }
    }
  }
  return out;
}

}  // namespace eco::k8s
