#include "ecoctl/plan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

constexpr std::string_view kJson = "application/json";

std::string StringField(const json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// Replaces invalid UTF-8 instead of throwing.
std::string DumpJson(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsEmptyBody(const json& body) { return body.is_null() || (body.is_object() && body.empty()); }

// The request that creates (POST) or replaces (PUT) a document's resource.
HttpRequest WriteRequest(const Document& doc, std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.accept = std::string(kJson);
  if (!doc.file.empty() || !doc.files.empty()) {
    // EMCO wants the JSON as a plain form value (no filename) named "metadata".
    r.parts.push_back({"metadata", DumpJson(doc.body), "", "", ""});
    if (!doc.file.empty()) {
      r.parts.push_back({"file", "", doc.file, std::filesystem::path(doc.file).filename().string(),
                         "application/octet-stream"});
    }
    for (const auto& f : doc.files) {
      r.parts.push_back({"files", "", f, std::filesystem::path(f).filename().string(),
                         "application/octet-stream"});
    }
  } else if (!IsEmptyBody(doc.body)) {
    r.content_type = std::string(kJson);
    r.body = DumpJson(doc.body);
  }
  return r;
}

HttpRequest Simple(std::string method, std::string path) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.accept = std::string(kJson);
  return r;
}

Result<PlanStep> PlanOne(const Document& doc, Verb verb, bool label_with_source) {
  PlanStep s;
  s.label = doc.Label(label_with_source);
  s.body = doc.body;
  s.file = doc.file;
  s.has_files = !doc.files.empty();
  const std::string anchor_path = "/v2/" + doc.anchor;

  if (doc.raw) {
    // Command-line anchors address the URL itself and carry no body.
    s.resource_path = anchor_path;
    switch (verb) {
      case Verb::kApply:
        s.request = Simple(doc.action == "status" ? "GET" : "POST", anchor_path);
        s.query = doc.action == "status";
        break;
      case Verb::kGet:
        s.request = Simple("GET", anchor_path);
        s.query = true;
        break;
      case Verb::kDelete:
        s.request = Simple("DELETE", anchor_path);
        break;
    }
    return s;
  }

  if (doc.is_action()) {
    // A status document is a query: apply and get both read it.
    if (doc.action == "status" && verb != Verb::kDelete) {
      s.request = Simple("GET", anchor_path);
      s.query = true;
      return s;
    }
    if (verb == Verb::kApply) {
      s.request = WriteRequest(doc, "POST", anchor_path);
      return s;
    }
    s.skip = true;
    s.skip_reason = "action document";
    s.request = Simple("-", anchor_path);
    return s;
  }

  auto rp = ResourcePath(doc);
  if (rp.ok()) s.resource_path = *rp;
  switch (verb) {
    case Verb::kApply:
      s.request = WriteRequest(doc, "POST", anchor_path);
      if (rp.ok()) s.replace = WriteRequest(doc, "PUT", *rp);
      break;
    case Verb::kGet:
      if (!rp.ok()) return rp.status();
      s.request = Simple("GET", *rp);
      s.query = true;
      break;
    case Verb::kDelete:
      if (!rp.ok()) return rp.status();
      s.request = Simple("DELETE", *rp);
      break;
  }
  return s;
}

}  // namespace

std::string_view VerbName(Verb v) {
  switch (v) {
    case Verb::kApply:
      return "apply";
    case Verb::kGet:
      return "get";
    case Verb::kDelete:
      return "delete";
  }
  return "?";
}

std::string EscapePathSegment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

Result<std::string> ResourcePath(const Document& doc) {
  if (doc.raw) return "/v2/" + doc.anchor;
  if (doc.is_action()) return Invalid("action documents do not name a resource");

  std::string path = doc.anchor, query;
  if (size_t q = path.find('?'); q != std::string::npos) {
    query = path.substr(q);
    path.resize(q);
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string_view last = path;
  if (size_t slash = last.rfind('/'); slash != std::string_view::npos)
    last = last.substr(slash + 1);

  const std::string name = StringField(doc.body.value("metadata", json::object()), "name");
  const std::string label = StringField(doc.body, "clusterLabel");
  std::string tail;
  if (!name.empty()) {
    tail = EscapePathSegment(name);
    if (last == "composite-apps") {
      // Composite apps are keyed by name and version.
      const std::string version =
          StringField(doc.body.value("spec", json::object()), "compositeAppVersion");
      if (version.empty()) {
        return Invalid("composite app \"" + name + "\" has no spec.compositeAppVersion");
      }
      tail += "/" + EscapePathSegment(version);
    }
  } else if (!label.empty()) {
    tail = EscapePathSegment(label);
  } else {
    return Invalid("no metadata.name (or clusterLabel) to address the resource by");
  }
  return "/v2/" + path + "/" + tail + query;
}

Result<std::vector<PlanStep>> Plan(const std::vector<Document>& docs, Verb verb,
                                   bool label_with_source) {
  std::vector<PlanStep> steps;
  std::string errors;
  for (const auto& d : docs) {
    auto s = PlanOne(d, verb, label_with_source);
    if (!s.ok()) {
      if (!errors.empty()) errors += "\n";
      errors += "document " + std::to_string(d.index);
      if (!d.source.empty()) errors += " of " + d.source;
      errors += ": " + s.status().message();
      continue;
    }
    steps.push_back(std::move(s).value());
  }
  if (!errors.empty()) return Invalid(errors);
  // Children are deleted before their parents.
  if (verb == Verb::kDelete) std::reverse(steps.begin(), steps.end());
  return steps;
}

}  // namespace eco::ecoctl
