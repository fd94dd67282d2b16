// The generic action controller's intents, EMCO's gac API:
//   DIG/generic-k8s-intents/{genericK8sIntent}
//     /resources/{genericResource}                (multipart: metadata + file)
//       /customizations/{customization}           (multipart: metadata + files)
// Bodies follow gac's JSON schemas; the controller is controllers/gac/.
#include <set>

#include "api/resources.h"
#include "api/validate.h"
#include "common/json_fields.h"
#include "controllers/gac/customize.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace eco::api {
namespace {

std::string Lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// A string field that must be "true" or "false" (gac's schema enums).
Status CheckTrueFalse(const json& obj, const char* field, const std::string& where, bool required) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    return required ? Invalid("Invalid Input: " + where + " is required (\"true\" or \"false\")") : Status::Ok();
  }
  if (!it->is_string() || (*it != "true" && *it != "false")) {
    return Invalid("Invalid Input: " + where + " must be \"true\" or \"false\"");
  }
  return Status::Ok();
}

Status ValidateResource(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
  ECO_RETURN_IF_ERROR(CheckTrueFalse(s, "newObject", "spec.newObject", true));
  auto g = s.find("resourceGVK");
  if (g == s.end() || g->is_null()) return Invalid("Invalid Input: spec.resourceGVK is required");
  if (!g->is_object()) return Invalid("Invalid Input: spec.resourceGVK must be an object");
  for (const char* k : {"apiVersion", "kind", "name"}) {
    ECO_RETURN_IF_ERROR(CheckString(*g, k, std::string("spec.resourceGVK.") + k, {true, 128, false}));
  }
  b["spec"] = json{{"app", s["app"]},
                   {"newObject", s["newObject"]},
                   {"resourceGVK", {{"apiVersion", (*g)["apiVersion"]}, {"kind", (*g)["kind"]}, {"name", (*g)["name"]}}}};
  return Status::Ok();
}

bool IsConfigMapOrSecret(const json& body) {
  std::string kind = Lower(StringField(body["spec"]["resourceGVK"], "kind"));
  return kind == "configmap" || kind == "secret";
}

// The manifest of a new object must be the object resourceGVK names: what
// the controller will read from it (gac::NewObject) is checked here.
Status CheckManifest(const json& body, const std::string& file) {
  ECO_ASSIGN_OR_RETURN(auto r, gac::ResourceFromStored(body, file));
  auto o = gac::NewObject(r);
  if (!o.ok()) return Invalid("Invalid Input: " + o.status().message());
  gac::GenericResource by_kind_and_name = r;
  by_kind_and_name.api_version.clear();  // the manifest's apiVersion is the one deployed
  if (!gac::Names(by_kind_and_name, *o)) {
    return Invalid("Invalid Input: the resource file holds " + StringField(*o, "kind") + " " +
                   StringField((*o)["metadata"], "name") + ", but spec.resourceGVK names " + r.kind + " " +
                   r.object_name);
  }
  return Status::Ok();
}

Status ValidateDataKeys(const json& s, const char* field) {
  auto o = s.find(field);
  if (o == s.end() || o->is_null()) return Status::Ok();
  std::string where = std::string("spec.") + field;
  if (!o->is_object()) return Invalid("Invalid Input: " + where + " must be an object");
  auto d = o->find("dataKeyOptions");
  if (d == o->end() || d->is_null()) return Status::Ok();
  if (!d->is_array()) return Invalid("Invalid Input: " + where + ".dataKeyOptions must be an array");
  for (const auto& e : *d) {
    if (!e.is_object()) return Invalid("Invalid Input: " + where + ".dataKeyOptions items must be objects");
    ECO_RETURN_IF_ERROR(CheckString(e, "fileName", where + ".dataKeyOptions[].fileName", {true, 128, false}));
    ECO_RETURN_IF_ERROR(CheckString(e, "keyName", where + ".dataKeyOptions[].keyName", {true, 128, false}));
    ECO_RETURN_IF_ERROR(CheckTrueFalse(e, "mergePatch", where + ".dataKeyOptions[].mergePatch", false));
    if (StringField(e, "mergePatch") != "true" && !gac::ValidDataKey(StringField(e, "keyName"))) {
      return Invalid("Invalid Input: " + where + ".dataKeyOptions[].keyName '" + StringField(e, "keyName") +
                     "' is not a valid ConfigMap/Secret key (letters, digits, '-', '_', '.')");
    }
  }
  return Status::Ok();
}

// A JSON patch value EMCO resolves by calling a URL at instantiation.
bool IsHttpLookup(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.rfind("$(http", 0) == 0 && s.size() >= 2 && s.compare(s.size() - 2, 2, ")$") == 0;
}

Status ValidatePatch(const json& s) {
  auto p = s.find("patchJson");
  if (p == s.end() || p->is_null()) return Status::Ok();
  if (!p->is_array()) return Invalid("Invalid Input: spec.patchJson must be an array");
  for (const auto& op : *p) {
    if (!op.is_object()) return Invalid("Invalid Input: spec.patchJson items must be objects");
    std::string o = StringField(op, "op");
    if (o != "add" && o != "remove" && o != "replace" && o != "move" && o != "copy" && o != "test") {
      return Invalid("Invalid Input: spec.patchJson[].op must be add, remove, replace, move, copy or test");
    }
    ECO_RETURN_IF_ERROR(CheckString(op, "path", "spec.patchJson[].path", {true, 128, false}));
    std::string path = StringField(op, "path");
    if (!path.empty() && path[0] != '/') {
      return Invalid("Invalid Input: spec.patchJson[].path '" + path + "' is not a JSON pointer (starts with /)");
    }
    if ((o == "move" || o == "copy") && StringField(op, "from").empty()) {
      return Invalid("Invalid Input: spec.patchJson[] " + o + " needs from");
    }
    if (!op.contains("value") && o != "remove" && o != "move" && o != "copy") {
      return Invalid("Invalid Input: spec.patchJson[].value is required");
    }
    if (op.contains("value") && IsHttpLookup(op["value"])) {
      return Invalid("Invalid Input: spec.patchJson[].value '" + op["value"].get<std::string>() +
                     "': values looked up over HTTP at instantiation are not supported by eco; "
                     "give the value itself");
    }
  }
  return Status::Ok();
}

Status ValidateCustomization(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckTrueFalse(s, "clusterSpecific", "spec.clusterSpecific", true));
  auto ci = s.find("clusterInfo");
  if (ci == s.end() || ci->is_null()) return Invalid("Invalid Input: spec.clusterInfo is required");
  if (!ci->is_object()) return Invalid("Invalid Input: spec.clusterInfo must be an object");
  std::string scope = StringField(*ci, "scope"), mode = StringField(*ci, "mode");
  if (scope != "label" && scope != "name") return Invalid("Invalid Input: spec.clusterInfo.scope must be label or name");
  if (mode != "allow" && mode != "deny") return Invalid("Invalid Input: spec.clusterInfo.mode must be allow or deny");
  // Required by gac's schema, which lets it be "" when not cluster-specific.
  if (!ci->contains("clusterProvider")) return Invalid("Invalid Input: spec.clusterInfo.clusterProvider is required");
  ECO_RETURN_IF_ERROR(CheckString(*ci, "clusterProvider", "spec.clusterInfo.clusterProvider", {false, 128, false}));
  ECO_RETURN_IF_ERROR(CheckString(*ci, "cluster", "spec.clusterInfo.cluster", {false, 128, false}));
  ECO_RETURN_IF_ERROR(CheckString(*ci, "clusterLabel", "spec.clusterInfo.clusterLabel", {false, 128, false}));
  if (s["clusterSpecific"] == "true") {
    if (StringField(*ci, "clusterProvider").empty()) {
      return Invalid("Invalid Input: spec.clusterInfo.clusterProvider is required for a cluster-specific customization");
    }
    if (scope == "name" && StringField(*ci, "cluster").empty()) {
      return Invalid("Invalid Input: spec.clusterInfo.cluster is required when scope is name");
    }
    if (scope == "label" && StringField(*ci, "clusterLabel").empty()) {
      return Invalid("Invalid Input: spec.clusterInfo.clusterLabel is required when scope is label");
    }
  }
  auto pt = s.find("patchType");
  if (pt != s.end() && !pt->is_null() && (!pt->is_string() || (*pt != "json" && *pt != "merge" && *pt != ""))) {
    return Invalid("Invalid Input: spec.patchType must be json or merge");
  }
  ECO_RETURN_IF_ERROR(ValidatePatch(s));
  ECO_RETURN_IF_ERROR(ValidateDataKeys(s, "configMapOptions"));
  ECO_RETURN_IF_ERROR(ValidateDataKeys(s, "secretOptions"));
  json out = {{"clusterSpecific", s["clusterSpecific"]},
              {"clusterInfo",
               {{"scope", scope},
                {"clusterProvider", StringField(*ci, "clusterProvider")},
                {"cluster", StringField(*ci, "cluster")},
                {"clusterLabel", StringField(*ci, "clusterLabel")},
                {"mode", mode}}},
              {"patchType", pt != s.end() && pt->is_string() ? *pt : json("")},
              {"patchJson", s.contains("patchJson") && s["patchJson"].is_array() ? s["patchJson"] : json::array()}};
  for (const char* k : {"configMapOptions", "secretOptions"}) {
    if (s.contains(k) && s[k].is_object()) out[k] = s[k];
  }
  b["spec"] = std::move(out);
  return Status::Ok();
}

// The uploaded files of a customization: each becomes a data key by its
// file name unless dataKeyOptions maps it, so names follow the key rule.
Status CheckCustomizationFiles(const json&, const std::vector<gac::File>& files) {
  std::set<std::string> seen;
  size_t total = 0;
  for (const auto& f : files) {
    if (!gac::ValidDataKey(f.name)) {
      return Invalid("Invalid Input: file name '" + f.name +
                     "' cannot be a ConfigMap/Secret key (letters, digits, '-', '_', '.')");
    }
    if (!seen.insert(f.name).second) return Invalid("Invalid Input: two files are named " + f.name);
    total += f.content.size();
  }
  // A ConfigMap or Secret holds at most 1 MiB of data.
  if (total > (1u << 20)) {
    return Invalid("Invalid Input: the files hold " + std::to_string(total) +
                   " bytes; a ConfigMap or Secret holds at most 1048576");
  }
  return Status::Ok();
}

}  // namespace

void AddGacResources(const AddFn& add, const ResourceDef* dig, const std::vector<std::string>& dig_item,
                     const ResourceDef* cluster) {
  const ResourceDef* app = nullptr;
  if (dig->parent) {
    for (const ResourceDef* c : dig->parent->children) {
      if (c->type == "app") app = c;
    }
  }
  auto G = Under(dig_item, {"generic-k8s-intents"});
  auto* intent = add({.type = "gacIntent", .display = "GenericK8sIntent", .parent = dig, .collection = G,
                      .own_keys = {"genericK8sIntent"}});

  auto R = Under(G, {"{genericK8sIntent}", "resources"});
  auto* resource = add({
      .type = "gacResource", .display = "Resource", .parent = intent, .collection = R,
      .own_keys = {"genericResource"}, .file = FileKind::kManifest, .file_download_name = "file",
      .validate = ValidateResource,
      .refs = [app](const json& b, const KeyValues& k, std::vector<Ref>& out) {
        if (app == nullptr) return;
        KeyValues t(k.begin(), k.begin() + 3);
        t.push_back(b["spec"]["app"].get<std::string>());
        out.push_back({app, std::move(t)});
      },
      // A new object needs its manifest, except a ConfigMap/Secret that its
      // customizations fill; an existing object's file is not used.
      .file_optional = [](const json& b) { return b["spec"]["newObject"] != "true" || IsConfigMapOrSecret(b); },
      .file_check = [](const json& b, const std::string& file) {
        if (b["spec"]["newObject"] != "true") return Status::Ok();
        return CheckManifest(b, file);
      }});

  add({.type = "gacCustomization", .display = "Customization", .parent = resource,
       .collection = Under(R, {"{genericResource}", "customizations"}), .own_keys = {"customization"},
       .file = FileKind::kFiles, .file_download_name = "files", .validate = ValidateCustomization,
       .refs = [cluster](const json& b, const KeyValues&, std::vector<Ref>& out) {
         // A cluster named by a customization is kept while it is (EMCO's clm).
         const json& ci = b["spec"]["clusterInfo"];
         if (cluster == nullptr || b["spec"]["clusterSpecific"] != "true" || ci["scope"] != "name" ||
             ci["cluster"] == "") {
           return;
         }
         out.push_back({cluster, {ci["clusterProvider"].get<std::string>(), ci["cluster"].get<std::string>()}});
       },
       .files_check = CheckCustomizationFiles});
}

}  // namespace eco::api
