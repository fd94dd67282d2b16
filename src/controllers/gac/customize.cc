#include "controllers/gac/customize.h"

#include <algorithm>
#include <cctype>

#include "common/base64.h"
#include "common/json_fields.h"
#include "scheduler/render.h"

namespace eco::gac {

namespace {

std::string Lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool IsConfigMap(const json& o) { return StringField(o, "kind") == "ConfigMap"; }
bool IsSecret(const json& o) { return StringField(o, "kind") == "Secret"; }

// dataKeyOptions entry for `file`, or null.
const json* KeyOption(const std::vector<json>& options, const std::string& file) {
  for (const auto& o : options) {
    if (StringField(o, "fileName") == file) return &o;
  }
  return nullptr;
}

// A merge patch document from a file: YAML or JSON, an object.
Result<json> PatchDocument(const File& f) {
  auto doc = scheduler::ManifestToJson(f.content);
  if (!doc.ok()) return Invalid("file " + f.name + " is not a YAML or JSON document: " + doc.status().message());
  if (!doc->is_object()) return Invalid("file " + f.name + " is not a mapping, so not a merge patch");
  return std::move(*doc);
}

}  // namespace

bool ValidDataKey(const std::string& key) {
  if (key.empty() || key.size() > 253 || key == "." || key == "..") return false;
  return std::all_of(key.begin(), key.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
}

std::string FilesToStored(const std::vector<File>& files) {
  json a = json::array();
  for (const auto& f : files) a.push_back({{"name", f.name}, {"content", Base64Encode(f.content)}});
  return a.dump();
}

Result<std::vector<File>> FilesFromStored(const std::string& stored) {
  std::vector<File> out;
  if (stored.empty()) return out;
  json a = json::parse(stored, nullptr, false);
  if (!a.is_array()) return Internal("stored customization files are not a JSON array");
  for (const auto& e : a) {
    auto content = Base64Decode(StringField(e, "content"));
    if (!content.ok()) return Internal("stored customization file " + StringField(e, "name") + ": " + content.status().message());
    out.push_back({StringField(e, "name"), std::move(*content)});
  }
  return out;
}

Result<GenericResource> ResourceFromStored(const json& body, const std::string& manifest) {
  GenericResource r;
  r.name = StringField(body["metadata"], "name");
  const json& s = body.contains("spec") && body["spec"].is_object() ? body["spec"] : json::object();
  r.app = StringField(s, "app");
  r.new_object = StringField(s, "newObject") == "true";
  if (auto g = s.find("resourceGVK"); g != s.end() && g->is_object()) {
    r.api_version = StringField(*g, "apiVersion");
    r.kind = StringField(*g, "kind");
    r.object_name = StringField(*g, "name");
  }
  r.manifest = manifest;
  return r;
}

Result<Customization> CustomizationFromStored(const json& body, const std::string& files_json) {
  Customization c;
  c.name = StringField(body["metadata"], "name");
  const json& s = body.contains("spec") && body["spec"].is_object() ? body["spec"] : json::object();
  c.scope.specific = StringField(s, "clusterSpecific") == "true";
  if (auto ci = s.find("clusterInfo"); ci != s.end() && ci->is_object()) {
    c.scope.by_label = StringField(*ci, "scope") == "label";
    c.scope.deny = StringField(*ci, "mode") == "deny";
    c.scope.provider = StringField(*ci, "clusterProvider");
    c.scope.cluster = StringField(*ci, "cluster");
    c.scope.label = StringField(*ci, "clusterLabel");
  }
  c.patch_type = StringField(s, "patchType");
  if (auto p = s.find("patchJson"); p != s.end() && p->is_array()) c.patch_json = *p;
  auto keys = [&s](const char* field, std::vector<json>& out) {
    auto o = s.find(field);
    if (o == s.end() || !o->is_object()) return;
    auto d = o->find("dataKeyOptions");
    if (d == o->end() || !d->is_array()) return;
    for (const auto& e : *d) out.push_back(e);
  };
  keys("configMapOptions", c.configmap_keys);
  keys("secretOptions", c.secret_keys);
  auto files = FilesFromStored(files_json);
  if (!files.ok()) return files.status();
  c.files = std::move(*files);
  return c;
}

bool Selects(const ClusterScope& c, const std::string& provider, const std::string& name,
             const std::set<std::string>& labels) {
  if (!c.specific) return true;
  bool match = provider == c.provider &&
               (c.by_label ? labels.count(c.label) > 0 : name == c.cluster);
  return c.deny ? !match : match;
}

Result<json> NewObject(const GenericResource& r) {
  if (r.manifest.find_first_not_of(" \t\r\n") == std::string::npos) {
    std::string kind = Lower(r.kind);
    if (kind != "configmap" && kind != "secret") {
      return Invalid("resource " + r.name + " is a new " + r.kind + " without a manifest file");
    }
    json o = {{"apiVersion", r.api_version.empty() ? "v1" : r.api_version},
              {"kind", kind == "configmap" ? "ConfigMap" : "Secret"},
              {"metadata", {{"name", r.object_name}}}};
    if (kind == "secret") o["type"] = "Opaque";
    return o;
  }
  auto o = scheduler::ManifestToJson(r.manifest);
  if (!o.ok()) return Invalid("resource " + r.name + ": the manifest is not YAML: " + o.status().message());
  if (!o->is_object() || StringField(*o, "kind").empty() || !o->contains("metadata") ||
      StringField((*o)["metadata"], "name").empty()) {
    return Invalid("resource " + r.name + ": the manifest is not one Kubernetes object with kind and metadata.name");
  }
  return std::move(*o);
}

bool Names(const GenericResource& r, const json& object) {
  if (Lower(StringField(object, "kind")) != Lower(r.kind)) return false;
  if (!object.contains("metadata") || StringField(object["metadata"], "name") != r.object_name) return false;
  return r.api_version.empty() || StringField(object, "apiVersion") == r.api_version;
}

Status Apply(const Customization& c, json& object) {
  json out = object;
  const bool cm = IsConfigMap(out), secret = IsSecret(out);
  const std::vector<json>& options = secret ? c.secret_keys : c.configmap_keys;
  for (const auto& f : c.files) {
    const json* opt = (cm || secret) ? KeyOption(options, f.name) : nullptr;
    bool merge = opt ? StringField(*opt, "mergePatch") == "true" : (!cm && !secret && c.patch_type == "merge");
    if (merge) {
      auto doc = PatchDocument(f);
      if (!doc.ok()) return doc.status();
      out.merge_patch(*doc);
      continue;
    }
    if (!cm && !secret) continue;  // EMCO ignores files of other kinds
    std::string key = opt ? StringField(*opt, "keyName") : f.name;
    if (!ValidDataKey(key)) {
      return Invalid("data key '" + key + "' (from file " + f.name +
                     ") is not a valid ConfigMap/Secret key: letters, digits, '-', '_' or '.'");
    }
    json& data = out["data"];
    if (!data.is_object()) data = json::object();
    data[key] = secret ? Base64Encode(f.content) : f.content;
  }
  if (c.patch_type == "json" && !c.patch_json.empty()) {
    // nlohmann's RFC 6902 implementation reports failures as exceptions;
    // they stop here and become the customization's error.
    // One operation at a time, so the error can say which one failed.
    for (size_t i = 0; i < c.patch_json.size(); ++i) {
      const json& op = c.patch_json[i];
      try {
        // RFC 6902: "add" needs an existing object or array as the target's
        // parent; nlohmann's patch converts a null and skips a scalar there.
        if (StringField(op, "op") == "add" || StringField(op, "op") == "move" || StringField(op, "op") == "copy") {
          json::json_pointer target(StringField(op, "path"));
          if (!target.empty()) {
            const json& parent = out.at(target.parent_pointer());
            if (!parent.is_object() && !parent.is_array()) {
              return Invalid("JSON patch failed at operation " + std::to_string(i + 1) + " (" + StringField(op, "op") + " " +
                             StringField(op, "path") + "): " + target.parent_pointer().to_string() + " is " +
                             parent.type_name() + ", not an object or array");
            }
          }
        }
        out = out.patch(json::array({op}));
      } catch (const json::exception& e) {
        std::string why = e.what();
        if (auto b = why.find("] "); why.rfind("[json.exception", 0) == 0 && b != std::string::npos) {
          why = why.substr(b + 2);
        }
        return Invalid("JSON patch failed at operation " + std::to_string(i + 1) + " (" + StringField(op, "op") + " " +
                       StringField(op, "path") + "): " + why);
      }
    }
  }
  if (!out.is_object() || StringField(out, "kind") != StringField(object, "kind") || !out.contains("metadata") ||
      StringField(out["metadata"], "name") != StringField(object["metadata"], "name")) {
    return Invalid("the patch changes the object's kind or metadata.name, which identify it");
  }
  object = std::move(out);
  return Status::Ok();
}

}  // namespace eco::gac
