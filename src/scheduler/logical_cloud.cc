#include "scheduler/logical_cloud.h"

#include "catalog/catalog.h"

namespace eco::scheduler {

using nlohmann::json;

namespace {


json StringList(const json& spec, const char* k) {
  auto it = spec.find(k);
  return it != spec.end() && it->is_array() ? *it : json::array();
}

// A cluster-wide role of a user permission, unique per logical cloud: two
// clouds (or projects) with a permission of the same name must not share
// one. ':' cannot occur in eco's names, so the parts cannot run together;
// RBAC names allow it (system:... roles use it) up to 253 characters.
std::string ClusterWideName(const std::string& project, const std::string& lc, const std::string& perm) {
  std::string name = project + ":" + lc + ":" + perm;
  if (name.size() <= 253) return name;
  const std::string digest = std::to_string(std::hash<std::string>{}(name));
  return name.substr(0, 253 - digest.size() - 1) + "-" + digest;
}

}  // namespace

Result<LogicalCloudContent> LogicalCloudPlan(store::Store& st, const std::string& project,
                                             const std::string& lc, const json& object) {
  LogicalCloudContent out;
  const json& spec = object.contains("spec") ? object["spec"] : json::object();
  out.level = catalog::StringField(spec, "level");
  if (out.level.empty()) out.level = "1";
  out.namespace_ = catalog::StringField(spec, "namespace");

  auto refs = catalog::List(st, "clusterReference", {project, lc});
  if (!refs.ok()) return refs.status();
  if (refs->empty()) return Invalid("No Cluster References associated with Logical Cloud " + lc);
  int group = 0;
  for (const auto& r : *refs) {
    const json& s = r.object["spec"];
    out.clusters.push_back({catalog::StringField(s, "clusterProvider"), catalog::StringField(s, "cluster"), ++group, true, 0});
  }
  if (out.level == "0") {
    if (out.namespace_.empty()) out.namespace_ = "default";
    return out;
  }
  if (out.namespace_.empty()) return Invalid("Level-1 Logical Cloud " + lc + " needs spec.namespace");

  auto perms = catalog::List(st, "userPermission", {project, lc});
  if (!perms.ok()) return perms.status();
  bool primary = false;
  for (const auto& p : *perms) primary = primary || catalog::StringField(p.object["spec"], "namespace") == out.namespace_;
  if (!primary) {
    return Conflict("Level-1 Logical Clouds require a User Permission assigned to its primary namespace (" +
                    out.namespace_ + ")");
  }
  auto quotas = catalog::List(st, "clusterQuota", {project, lc});
  if (!quotas.ok()) return quotas.status();

  const std::string& ns = out.namespace_;
  std::string user = spec.contains("user") ? catalog::StringField(spec["user"], "userName") : "";
  if (user.empty()) user = lc + "-user";
  auto add = [&](json obj) {
    std::string name = appcontext::ResourceName(obj);
    out.resources.resources.push_back({std::move(name), std::move(obj)});
  };
  json ns_obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  if (spec.contains("labels") && spec["labels"].is_object() && !spec["labels"].empty()) {
    ns_obj["metadata"]["labels"] = spec["labels"];
  }
  add(std::move(ns_obj));
  add({{"apiVersion", "v1"},
       {"kind", "ServiceAccount"},
       {"metadata", {{"name", user}, {"namespace", ns}}}});
  add({{"apiVersion", "v1"},
       {"kind", "Secret"},
       {"type", "kubernetes.io/service-account-token"},
       {"metadata",
        {{"name", user + "-token"},
         {"namespace", ns},
         {"annotations", {{"kubernetes.io/service-account.name", user}}}}}});
  for (const auto& q : *quotas) {
    json hard = json::object();
    for (auto& [k, v] : q.object["spec"].items()) {
      if (v.is_string()) hard[k] = v;
    }
    add({{"apiVersion", "v1"},
         {"kind", "ResourceQuota"},
         {"metadata", {{"name", q.keys.back()}, {"namespace", ns}}},
         {"spec", {{"hard", hard}}}});
  }
  json subjects = json::array({{{"kind", "User"}, {"name", user}, {"apiGroup", "rbac.authorization.k8s.io"}},
                               {{"kind", "ServiceAccount"}, {"name", user}, {"namespace", ns}}});
  std::vector<json> bindings;
  for (const auto& p : *perms) {
    const json& s = p.object["spec"];
    std::string pns = catalog::StringField(s, "namespace");
    const std::string& name = p.keys.back();
    json rule = {{"apiGroups", StringList(s, "apiGroups")},
                 {"resources", StringList(s, "resources")},
                 {"verbs", StringList(s, "verbs")}};
    bool cluster_wide = pns.empty();
    const std::string role_name = cluster_wide ? ClusterWideName(project, lc, name) : name;
    json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", cluster_wide ? "ClusterRole" : "Role"},
                 {"metadata", {{"name", role_name}}},
                 {"rules", json::array({rule})}};
    if (!cluster_wide) role["metadata"]["namespace"] = pns;
    add(std::move(role));
    json binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                    {"kind", cluster_wide ? "ClusterRoleBinding" : "RoleBinding"},
                    {"metadata", {{"name", role_name}}},
                    {"subjects", subjects},
                    {"roleRef",
                     {{"apiGroup", "rbac.authorization.k8s.io"},
                      {"kind", cluster_wide ? "ClusterRole" : "Role"},
                      {"name", role_name}}}};
    if (!cluster_wide) binding["metadata"]["namespace"] = pns;
    bindings.push_back(std::move(binding));
  }
  // Bindings after every role they name.
  for (auto& b : bindings) add(std::move(b));
  return out;
}

}  // namespace eco::scheduler
