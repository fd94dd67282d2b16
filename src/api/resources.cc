#include "api/resources.h"

#include <map>
#include <memory>

#include "api/validate.h"
#include "appcontext/rollout.h"
#include "catalog/agent_identity.h"

// The table below uses designated initializers and relies on the defaults
// of the fields it leaves out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace eco::api {

size_t ResourceDef::depth() const {
  return own_keys.size() + (parent ? parent->depth() : 0);
}

namespace {

Status NoSpec(json&) { return Status::Ok(); }

// A cluster's spec.gitOps.gitOpsType ("" when absent).
std::string GitOpsType(const json& b) {
  auto s = b.find("spec");
  if (s == b.end() || !s->is_object()) return "";
  auto g = s->find("gitOps");
  if (g == s->end() || !g->is_object()) return "";
  auto t = g->find("gitOpsType");
  return t != g->end() && t->is_string() ? t->get<std::string>() : "";
}

bool IsAgentCluster(const json& b) {
  auto d = catalog::DeliveryOf(b);
  return d.ok() && *d == catalog::Delivery::kAgent;
}

// First `n` key values (an ancestor's key).
KeyValues Prefix(const KeyValues& k, size_t n) { return KeyValues(k.begin(), k.begin() + n); }

// clusterProvider + cluster pairs anywhere in a placement intent.
void CollectClusters(const json& j, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    auto p = j.find("clusterProvider");
    auto c = j.find("cluster");
    if (p != j.end() && c != j.end() && p->is_string() && c->is_string()) {
      out.emplace_back(p->get<std::string>(), c->get<std::string>());
    }
    for (auto& [k, v] : j.items()) {
      if (v.is_structured()) CollectClusters(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) CollectClusters(v, out);
  }
}

// One placement term: {clusterProvider, cluster|clusterLabel}, or (inside
// allOf) {anyOf: [...]}. Messages as EMCO words them.
Status CheckPlacementTerm(const json& t, bool allow_any_of) {
  if (!t.is_object()) return Invalid("Invalid Input: a placement term must be an object");
  if (allow_any_of && t.contains("anyOf")) {
    const json& a = t["anyOf"];
    if (!a.is_array()) return Invalid("Invalid Input: anyOf must be an array");
    for (const auto& x : a) ECO_RETURN_IF_ERROR(CheckPlacementTerm(x, false));
    return Status::Ok();
  }
  ECO_RETURN_IF_ERROR(CheckString(t, "clusterProvider", "clusterProvider", {false, 128, true}));
  ECO_RETURN_IF_ERROR(CheckString(t, "cluster", "cluster", {false, 128, true}));
  ECO_RETURN_IF_ERROR(CheckString(t, "clusterLabel", "clusterLabel", {false, 128, true}));
  auto has = [&](const char* k) {
    auto it = t.find(k);
    return it != t.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
  };
  if (!has("clusterProvider")) return Invalid("Invalid Input: Missing clusterProvider in an intent");
  if (!has("cluster") && !has("clusterLabel")) {
    return Invalid("Invalid Input: Missing cluster or clusterLabel");
  }
  if (has("cluster") && has("clusterLabel")) {
    return Invalid("Invalid Input: Only one of cluster name or cluster label allowed");
  }
  return Status::Ok();
}

struct Registry {
  std::vector<std::unique_ptr<ResourceDef>> owned;
  std::vector<const ResourceDef*> all;
  std::map<std::string, const ResourceDef*> by_type;

  ResourceDef* Add(ResourceDef d) {
    owned.push_back(std::make_unique<ResourceDef>(std::move(d)));
    ResourceDef* r = owned.back().get();
    if (!r->validate) r->validate = NoSpec;
    all.push_back(r);
    by_type[r->type] = r;
    if (r->parent) const_cast<ResourceDef*>(r->parent)->children.push_back(r);
    return r;
  }

  Registry();
};

Registry::Registry() {
  // ---- orchestrator ----
  auto* project = Add({.type = "project", .display = "Project", .collection = {"projects"},
                       .own_keys = {"project"}});
  std::vector<std::string> P = {"projects", "{project}"};
  auto under = [](std::vector<std::string> base, std::initializer_list<std::string> more) {
    base.insert(base.end(), more);
    return base;
  };

  auto* compositeApp = Add({
      .type = "compositeApp", .display = "CompositeApp", .parent = project,
      .collection = under(P, {"composite-apps"}),
      .own_keys = {"compositeApp", "compositeAppVersion"},
      .validate = [](json& b) {
        ECO_RETURN_IF_ERROR(RequireSpec(b, true));
        return CheckString(b["spec"], "compositeAppVersion", "spec.compositeAppVersion", kName);
      }});
  std::vector<std::string> CA = under(P, {"composite-apps", "{compositeApp}", "{compositeAppVersion}"});

  auto* app = Add({.type = "app", .display = "App", .parent = compositeApp,
                   .collection = under(CA, {"apps"}), .own_keys = {"app"},
                   .file = FileKind::kArchive, .file_download_name = "fileContent"});

  Add({.type = "appDependency", .display = "AppDependency", .parent = app,
       .collection = under(CA, {"apps", "{app}", "dependency"}), .own_keys = {"appDependency"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         json& s = b["spec"];
         ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
         ECO_RETURN_IF_ERROR(CheckString(s, "opStatus", "spec.opStatus", {true, 128, false}));
         std::string op = s["opStatus"].get<std::string>();
         for (auto& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
         if (op != "ready" && op != "deployed") {
           return Invalid("Invalid Input: spec.opStatus must be Ready or Deployed");
         }
         return CheckInt(s, "wait", "spec.wait", false, 0, 4096);
       }});

  auto* compositeProfile = Add({.type = "compositeProfile", .display = "CompositeProfile",
                                .parent = compositeApp,
                                .collection = under(CA, {"composite-profiles"}),
                                .own_keys = {"compositeProfile"}});

  Add({.type = "appProfile", .display = "AppProfile", .parent = compositeProfile,
       .collection = under(CA, {"composite-profiles", "{compositeProfile}", "profiles"}),
       .own_keys = {"appProfile"}, .file = FileKind::kArchive, .file_download_name = "file",
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         return CheckString(b["spec"], "app", "spec.app", kName);
       },
       .refs = [app](const json& b, const KeyValues& k, std::vector<Ref>& out) {
         KeyValues t = Prefix(k, 3);
         t.push_back(b["spec"]["app"].get<std::string>());
         out.push_back({app, std::move(t)});
       },
       .unique = [](const json& b, const KeyValues& k) {
         // One profile per app within a composite profile.
         std::string id;
         for (size_t i = 0; i < 4; ++i) id += k[i] + "/";
         return id + b["spec"]["app"].get<std::string>();
       },
       .unique_message = "App already has an AppProfile"});

  const ResourceDef* logicalCloud = nullptr;  // declared below; DIG refers to it
  auto* dig = Add({
      .type = "deploymentIntentGroup", .display = "DeploymentIntentGroup",
      .exists_message = "DeploymentIntent already exists",
      .parent = compositeApp, .collection = under(CA, {"deployment-intent-groups"}),
      .own_keys = {"deploymentIntentGroup"}, .has_state = true,
      .validate = [](json& b) {
        ECO_RETURN_IF_ERROR(RequireSpec(b, true));
        json& s = b["spec"];
        ECO_RETURN_IF_ERROR(CheckString(s, "compositeProfile", "spec.compositeProfile", kName));
        ECO_RETURN_IF_ERROR(CheckString(s, "version", "spec.version", kName));
        ECO_RETURN_IF_ERROR(CheckString(s, "logicalCloud", "spec.logicalCloud", kName));
        // eco's extension: take over objects that are not this DIG's.
        if (auto a = s.find("adopt"); a != s.end() && !a->is_null() && !a->is_boolean()) {
          return Invalid("Invalid Input: spec.adopt must be true or false");
        }
        // eco's extension: what a field the cluster does not declare does.
        if (auto f = s.find("fieldValidation"); f != s.end() && !f->is_null() &&
            (!f->is_string() || (*f != "Warn" && *f != "Strict"))) {
          return Invalid("Invalid Input: spec.fieldValidation must be \"Warn\" or \"Strict\", got " + f->dump());
        }
        // eco's extension: what eco does when a cluster drifts from what it applied.
        if (auto f = s.find("driftPolicy"); f != s.end() && !f->is_null() &&
            (!f->is_string() || (*f != "report" && *f != "enforce"))) {
          return Invalid("Invalid Input: spec.driftPolicy must be \"report\" or \"enforce\", got " + f->dump());
        }
        // eco's extension: staged rollouts (docs/rollouts.md).
        ECO_RETURN_IF_ERROR(appcontext::ParseRollout(s).status());
        auto ov = s.find("overrideValues");
        if (ov == s.end() || ov->is_null()) {
          s["overrideValues"] = json::array();
        } else {
          if (!ov->is_array()) return Invalid("Invalid Input: spec.overrideValues must be an array");
          for (auto& item : *ov) {
            if (!item.is_object()) {
              return Invalid("Invalid Input: spec.overrideValues items must be objects");
            }
            ECO_RETURN_IF_ERROR(CheckString(item, "app", "spec.overrideValues[].app", kName));
            ECO_RETURN_IF_ERROR(
                CheckStringMap(item, "values", "spec.overrideValues[].values", true, 128));
          }
        }
        return Status::Ok();
      }});

  Add({.type = "groupIntent", .display = "Intent", .parent = dig,
       .collection = under(CA, {"deployment-intent-groups", "{deploymentIntentGroup}", "intents"}),
       .own_keys = {"groupIntent"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         return CheckStringMap(b["spec"], "intent", "spec.intent", true, 128);
       },
       .refs = [this](const json& b, const KeyValues&, std::vector<Ref>& out) {
         // Every key but the reserved one names a registered controller.
         const ResourceDef* controller = by_type.at("controller");
         for (auto& [k, v] : b["spec"]["intent"].items()) {
           if (k != "genericPlacementIntent") out.push_back({controller, {k}});
         }
       }});

  auto* gpi = Add({.type = "genericPlacementIntent", .display = "GenericPlacementIntent",
                   .parent = dig,
                   .collection = under(CA, {"deployment-intent-groups", "{deploymentIntentGroup}",
                                            "generic-placement-intents"}),
                   .own_keys = {"genericPlacementIntent"}});

  Add({.type = "genericAppPlacementIntent", .display = "AppIntent", .parent = gpi,
       .collection = under(CA, {"deployment-intent-groups", "{deploymentIntentGroup}",
                                "generic-placement-intents", "{genericPlacementIntent}",
                                "app-intents"}),
       .own_keys = {"genericAppPlacementIntent"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         json& s = b["spec"];
         auto a = s.find("app");
         if (a == s.end() || !a->is_string() || a->get_ref<const std::string&>().empty()) {
           return Invalid("Invalid Input: Missing app for the intent");
         }
         ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
         auto in = s.find("intent");
         if (in == s.end() || !in->is_object()) {
           return Invalid("Invalid Input: spec.intent is required and must be an object");
         }
         for (const char* k : {"allOf", "anyOf"}) {
           auto l = in->find(k);
           if (l == in->end() || l->is_null()) continue;
           if (!l->is_array()) return Invalid(std::string("Invalid Input: ") + k + " must be an array");
           for (const auto& t : *l) ECO_RETURN_IF_ERROR(CheckPlacementTerm(t, k[1] == 'l'));
         }
         return Status::Ok();
       },
       .refs = [app, this](const json& b, const KeyValues& k, std::vector<Ref>& out) {
         KeyValues t = Prefix(k, 3);
         t.push_back(b["spec"]["app"].get<std::string>());
         out.push_back({app, std::move(t)});
         std::vector<std::pair<std::string, std::string>> cl;
         CollectClusters(b["spec"]["intent"], cl);
         const ResourceDef* cluster = by_type.at("cluster");
         for (auto& [p, c] : cl) out.push_back({cluster, {p, c}});
       }});

  auto controller_validate = [](bool with_type) {
    return [with_type](json& b) {
      ECO_RETURN_IF_ERROR(RequireSpec(b, true));
      json& s = b["spec"];
      ECO_RETURN_IF_ERROR(CheckString(s, "host", "spec.host", {true, 128, false}));
      ECO_RETURN_IF_ERROR(CheckInt(s, "port", "spec.port", true, 0, 65535));
      ECO_RETURN_IF_ERROR(CheckInt(s, "priority", "spec.priority", false, 0, 100));
      if (!s.contains("priority")) s["priority"] = 0;
      if (with_type) {
        ECO_RETURN_IF_ERROR(CheckString(s, "type", "spec.type", {false, 48, false}));
        std::string t = s.value("type", "");
        if (t != "" && t != "placement" && t != "action") {
          return Invalid("Invalid Input: spec.type must be placement or action");
        }
        s["type"] = t;
      }
      return Status::Ok();
    };
  };
  Add({.type = "controller", .display = "Controller", .collection = {"controllers"},
       .own_keys = {"controller"}, .validate = controller_validate(true)});
  Add({.type = "clmController", .display = "ClmController", .collection = {"clm-controllers"},
       .own_keys = {"clmController"}, .validate = controller_validate(false)});

  // ---- clusters (clm) ----
  auto* provider = Add({.type = "clusterProvider", .display = "Cluster provider",
                        .exists_message = "ClusterProvider already exists",
                        .collection = {"cluster-providers"}, .own_keys = {"clusterProvider"}});
  std::vector<std::string> CP = {"cluster-providers", "{clusterProvider}"};
  auto* cluster = Add({
      .type = "cluster", .display = "Cluster", .parent = provider,
      .collection = under(CP, {"clusters"}), .own_keys = {"cluster"},
      .file = FileKind::kKubeconfig, .file_download_name = "kubeconfig",
      .validate = [](json& b) {
        ECO_RETURN_IF_ERROR(RequireSpec(b, false));
        json& s = b["spec"];
        auto g = s.find("gitOps");
        if (g != s.end() && !g->is_null()) {
          if (!g->is_object()) return Invalid("Invalid Input: spec.gitOps must be an object");
          for (const char* k : {"gitOpsType", "gitOpsReferenceObject", "gitOpsResourceObject"}) {
            ECO_RETURN_IF_ERROR(CheckString(*g, k, std::string("spec.gitOps.") + k, {false, 512, false}));
          }
        }
        // eco's extension (docs/agent.md): who connects, eco or the cluster's agent.
        auto delivery = catalog::DeliveryOf(b);
        if (!delivery.ok()) return delivery.status();
        if (*delivery == catalog::Delivery::kAgent && GitOpsType(b) != "") {
          return Invalid("Invalid Input: spec.gitOps and spec.delivery \"agent\" exclude each other: an agent "
                         "applies its cluster's objects itself");
        }
        return Status::Ok();
      },
      .file_optional = [](const json& b) {
        return GitOpsType(b) != "" || IsAgentCluster(b);
      },
      .file_refused = [](const json& b) {
        return IsAgentCluster(b) ? std::string("an agent cluster has no kubeconfig: its agent dials eco "
                                               "(docs/agent.md)")
                                 : std::string();
      },
      .replace_check = [](const json& old_body, const json& b) {
        auto was = catalog::DeliveryOf(old_body);
        auto now = catalog::DeliveryOf(b);
        if (was.ok() && now.ok() && *was != *now) {
          return Conflict("A cluster's spec.delivery cannot change (from \"" +
                          std::string(catalog::DeliveryName(*was)) + "\" to \"" +
                          std::string(catalog::DeliveryName(*now)) +
                          "\"): what it runs was delivered the old way; delete the cluster and register it again");
        }
        return Status::Ok();
      }});
  std::vector<std::string> CL = under(CP, {"clusters", "{cluster}"});

  Add({.type = "clusterLabel", .display = "Cluster label",
       .exists_message = "Cluster Label already exists", .parent = cluster,
       .collection = under(CL, {"labels"}), .own_keys = {"clusterLabel"}, .label_body = true});

  auto kv_validate = [](size_t max_value) {
    return [max_value](json& b) {
      ECO_RETURN_IF_ERROR(RequireSpec(b, true));
      json& s = b["spec"];
      auto kv = s.find("kv");
      if (kv == s.end() || kv->is_null()) return Invalid("Invalid Input: spec.kv is required");
      if (!kv->is_array()) return Invalid("Invalid Input: spec.kv must be an array of objects");
      for (const auto& m : *kv) {
        if (!m.is_object()) return Invalid("Invalid Input: spec.kv must be an array of objects");
        for (auto& [k, v] : m.items()) {
          if (v.is_string() && v.get_ref<const std::string&>().size() > max_value) {
            return Invalid("Invalid Input: spec.kv value of '" + k + "' is longer than " +
                           std::to_string(max_value) + " characters");
          }
        }
      }
      return Status::Ok();
    };
  };
  Add({.type = "clusterKv", .display = "Cluster key value pair",
       .exists_message = "Cluster KV Pair already exists", .parent = cluster,
       .collection = under(CL, {"kv-pairs"}), .own_keys = {"clusterKv"},
       .validate = kv_validate(128)});
  Add({.type = "clusterSyncObject", .display = "Cluster sync object",
       .exists_message = "Cluster Sync Objects already exists", .parent = provider,
       .collection = under(CP, {"cluster-sync-objects"}), .own_keys = {"clusterSyncObject"},
       .validate = kv_validate(4096)});

  // ---- logical clouds (dcm) ----
  auto* lc = Add({
      .type = "logicalCloud", .display = "Logical Cloud", .parent = project,
      .collection = under(P, {"logical-clouds"}), .own_keys = {"logicalCloud"},
      .validate = [](json& b) {
        ECO_RETURN_IF_ERROR(RequireSpec(b, false));
        json& s = b["spec"];
        ECO_RETURN_IF_ERROR(CheckString(s, "level", "spec.level", {false, 2, false}));
        std::string level = s.value("level", "");
        if (level.empty()) level = "1";
        if (level != "0" && level != "1") return Invalid("Invalid Input: spec.level must be \"0\" or \"1\"");
        s["level"] = level;
        ECO_RETURN_IF_ERROR(CheckString(s, "namespace", "spec.namespace", {false, 128, false}));
        // As given ("" when not) until instantiate: there a level-0 cloud
        // gets its clusters' namespace, as dcm fills it in (scheduler).
        if (!s.contains("namespace") || s["namespace"].is_null()) s["namespace"] = "";
        ECO_RETURN_IF_ERROR(CheckStringMap(s, "labels", "spec.labels", false, 128));
        auto u = s.find("user");
        if (u != s.end() && !u->is_null()) {
          if (!u->is_object()) return Invalid("Invalid Input: spec.user must be an object");
          ECO_RETURN_IF_ERROR(CheckString(*u, "userName", "spec.user.userName", {false, 20, false}));
          ECO_RETURN_IF_ERROR(CheckString(*u, "type", "spec.user.type", {false, 128, false}));
        }
        return Status::Ok();
      }});
  logicalCloud = lc;
  std::vector<std::string> LC = under(P, {"logical-clouds", "{logicalCloud}"});

  Add({.type = "clusterReference", .display = "Cluster Reference", .parent = lc,
       .collection = under(LC, {"cluster-references"}), .own_keys = {"clusterReference"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         json& s = b["spec"];
         ECO_RETURN_IF_ERROR(CheckString(s, "clusterProvider", "spec.clusterProvider", kName));
         ECO_RETURN_IF_ERROR(CheckString(s, "cluster", "spec.cluster", kName));
         return CheckString(s, "loadBalancerIP", "spec.loadBalancerIP", {false, 16, false});
       },
       .refs = [cluster](const json& b, const KeyValues&, std::vector<Ref>& out) {
         out.push_back({cluster, {b["spec"]["clusterProvider"].get<std::string>(),
                                  b["spec"]["cluster"].get<std::string>()}});
       }});
  Add({.type = "userPermission", .display = "User Permission", .parent = lc,
       .collection = under(LC, {"user-permissions"}), .own_keys = {"userPermission"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         json& s = b["spec"];
         ECO_RETURN_IF_ERROR(CheckString(s, "namespace", "spec.namespace", {false, 128, false}));
         for (const char* k : {"apiGroups", "resources", "verbs"}) {
           ECO_RETURN_IF_ERROR(CheckStringArray(s, k, std::string("spec.") + k));
         }
         return Status::Ok();
       }});
  Add({.type = "clusterQuota", .display = "Cluster Quota", .parent = lc,
       .collection = under(LC, {"cluster-quotas"}), .own_keys = {"clusterQuota"},
       .validate = [](json& b) {
         ECO_RETURN_IF_ERROR(RequireSpec(b, true));
         json wrapper = {{"spec", b["spec"]}};
         return CheckStringMap(wrapper, "spec", "spec", true, 128);
       },
       .parent_check = [](const json&, const json& cloud) {
         if (cloud["spec"].value("level", "1") == "0") {
           return Invalid("Cluster Quotas not allowed for Logical Cloud Level 0");
         }
         return Status::Ok();
       }});
  Add({.type = "logicalCloudKv", .display = "Logical Cloud KV Pair", .parent = lc,
       .collection = under(LC, {"kv-pairs"}), .own_keys = {"logicalCloudKv"},
       .validate = kv_validate(128)});

  std::vector<std::string> DIG = under(CA, {"deployment-intent-groups", "{deploymentIntentGroup}"});
  AddFn add = [this](ResourceDef d) { return Add(std::move(d)); };
  AddHpaResources(add, dig, DIG);
  AddTrafficResources(add, dig, DIG);
  AddGacResources(add, dig, DIG, cluster);

  // The DIG's references need the logical cloud definition, which sits
  // later in the table (it hangs off the project, not the composite app).
  dig->refs = [logicalCloud, compositeProfile](const json& b, const KeyValues& k,
                                               std::vector<Ref>& out) {
    const json& s = b["spec"];
    out.push_back({logicalCloud, {k[0], s["logicalCloud"].get<std::string>()}});
    KeyValues cp = Prefix(k, 3);
    cp.push_back(s["compositeProfile"].get<std::string>());
    out.push_back({compositeProfile, std::move(cp)});
  };
}

Registry& Reg() {
  static Registry r;
  return r;
}

}  // namespace

const std::vector<const ResourceDef*>& AllResources() { return Reg().all; }

const ResourceDef* FindResource(const std::string& type) {
  auto& m = Reg().by_type;
  auto it = m.find(type);
  return it == m.end() ? nullptr : it->second;
}

}  // namespace eco::api
