#include "ecoctl/document.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ecoctl/values_template.h"
#include "ecoctl/yaml_json.h"

namespace eco::ecoctl {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kVersion = "emco/v2";

// Verbs that make an anchor a lifecycle call rather than a collection.
constexpr std::array<std::string_view, 9> kActionVerbs = {"approve", "instantiate", "terminate",
                                                          "stop",    "update",      "rollback",
                                                          "migrate", "status",      "apply"};

std::string CurrentDir(const std::string& cwd) {
  if (!cwd.empty()) return cwd;
  std::error_code ec;
  fs::path p = fs::current_path(ec);
  return ec ? std::string(".") : p.string();
}

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// `file:` is looked up relative to the current directory first (emcoctl's
// behaviour), then relative to the YAML file, so examples work from anywhere.
Result<std::string> ResolveFile(const std::string& name, const ParseOptions& opts,
                                const std::string& cwd) {
  fs::path p(name);
  if (p.is_absolute()) {
    if (opts.require_files && !IsRegularFile(p)) return NotFound("file \"" + name + "\" not found");
    return p.lexically_normal().string();
  }
  fs::path in_cwd = (fs::path(cwd) / p).lexically_normal();
  if (IsRegularFile(in_cwd)) return in_cwd.string();
  if (!opts.base_dir.empty()) {
    fs::path in_base = (fs::path(opts.base_dir) / p).lexically_normal();
    if (IsRegularFile(in_base)) return in_base.string();
    if (opts.require_files) {
      return NotFound("file \"" + name + "\" not found (looked in " + cwd + " and " +
                      opts.base_dir + ")");
    }
  } else if (opts.require_files) {
    return NotFound("file \"" + name + "\" not found (looked in " + cwd + ")");
  }
  return in_cwd.string();
}

std::string DocName(const ParseOptions& opts, int index) {
  std::string s = "document " + std::to_string(index);
  if (!opts.source.empty()) s += " of " + opts.source;
  return s;
}

// Checks one document and turns it into a Document; errors are unprefixed.
Result<Document> ParseOne(const json& doc, int index, const ParseOptions& opts,
                          const std::string& cwd) {
  if (!doc.is_object()) return Invalid(std::string("not a mapping but a ") + doc.type_name());

  auto version = doc.find("version");
  if (version == doc.end() || version->is_null()) {
    return Invalid("missing version (want version: emco/v2)");
  }
  if (!version->is_string() || version->get<std::string>() != kVersion) {
    std::string got = version->is_string()
                          ? version->get<std::string>()
                          : version->dump(-1, ' ', false, json::error_handler_t::replace);
    return Invalid("unsupported version \"" + got + "\" (want emco/v2)");
  }

  auto ctx = doc.find("resourceContext");
  if (ctx == doc.end() || !ctx->is_object() || !ctx->contains("anchor") ||
      !(*ctx)["anchor"].is_string() || (*ctx)["anchor"].get<std::string>().empty()) {
    return Invalid("missing resourceContext.anchor");
  }
  ECO_ASSIGN_OR_RETURN(auto anchor, NormalizeAnchor((*ctx)["anchor"].get<std::string>()));

  Document d;
  d.source = opts.source;
  d.index = index;
  d.anchor = std::move(anchor);
  d.action = ActionVerb(d.anchor);
  d.body = json::object();
  for (const auto& [k, v] : doc.items()) {
    if (k == "version" || k == "resourceContext" || k == "file" || k == "files") continue;
    d.body[k] = v;
  }

  if (auto f = doc.find("file"); f != doc.end() && !f->is_null()) {
    if (!f->is_string() || f->get<std::string>().empty()) {
      return Invalid("file: must be a path string");
    }
    ECO_ASSIGN_OR_RETURN(auto path, ResolveFile(f->get<std::string>(), opts, cwd));
    d.file = std::move(path);
  }
  if (auto fl = doc.find("files"); fl != doc.end() && !fl->is_null()) {
    if (!fl->is_array()) return Invalid("files: must be a list of paths");
    for (const auto& item : *fl) {
      if (!item.is_string() || item.get<std::string>().empty()) {
        return Invalid("files: must be a list of paths");
      }
      ECO_ASSIGN_OR_RETURN(auto path, ResolveFile(item.get<std::string>(), opts, cwd));
      d.files.push_back(std::move(path));
    }
  }
  if (!d.file.empty() && !d.files.empty()) return Invalid("give either file: or files:, not both");
  return d;
}

}  // namespace

std::string Document::Label(bool with_source) const {
  std::string s;
  if (with_source && !source.empty()) s = fs::path(source).filename().string();
  return s + "#" + std::to_string(index);
}

std::string ActionVerb(std::string_view anchor) {
  std::string_view path = anchor.substr(0, anchor.find('?'));
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  // A lone segment ("projects") is always a collection.
  if (slash == std::string_view::npos) return "";
  std::string_view last = path.substr(slash + 1);
  for (auto verb : kActionVerbs) {
    if (last == verb) return std::string(verb);
  }
  return "";
}

Result<std::string> NormalizeAnchor(std::string_view anchor) {
  std::string_view a = anchor;
  while (!a.empty() && (a.front() == ' ' || a.front() == '\t')) a.remove_prefix(1);
  while (!a.empty() && (a.back() == ' ' || a.back() == '\t')) a.remove_suffix(1);
  if (a.starts_with("/")) a.remove_prefix(1);
  if (a.starts_with("v2/")) a.remove_prefix(3);
  std::string_view path = a.substr(0, a.find('?'));
  if (path.empty()) return Invalid("empty anchor \"" + std::string(anchor) + "\"");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return Invalid("bad anchor \"" + std::string(anchor) + "\": empty or relative path segment");
    }
    for (char c : seg) {
      if (static_cast<unsigned char>(c) <= ' ' || c == '#') {
        return Invalid("bad anchor \"" + std::string(anchor) + "\": invalid character");
      }
    }
    start = end + 1;
  }
  return std::string(a);
}

Result<Document> CommandLineDocument(std::string_view anchor) {
  ECO_ASSIGN_OR_RETURN(auto a, NormalizeAnchor(anchor));
  Document d;
  d.index = 1;
  d.anchor = std::move(a);
  d.action = ActionVerb(d.anchor);
  d.body = json::object();
  d.raw = true;
  return d;
}

Result<std::vector<Document>> ParseDocuments(std::string_view yaml_text, const ParseOptions& opts) {
  auto parsed = ParseYamlDocuments(yaml_text);
  if (!parsed.ok()) {
    return Invalid((opts.source.empty() ? std::string() : opts.source + ": ") +
                   parsed.status().message());
  }
  const std::string cwd = CurrentDir(opts.cwd);
  std::vector<Document> docs;
  std::string errors;
  int index = 0;
  for (const auto& raw : *parsed) {
    ++index;
    if (raw.is_null()) continue;  // "---" separators with nothing between
    auto d = ParseOne(raw, index, opts, cwd);
    if (!d.ok()) {
      if (!errors.empty()) errors += "\n";
      errors += DocName(opts, index) + ": " + d.status().message();
      continue;
    }
    docs.push_back(std::move(d).value());
  }
  if (!errors.empty()) return Invalid(errors);
  return docs;
}

Result<std::string> ReadFileBytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Invalid("\"" + path + "\" is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open \"" + path + "\"");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Internal("error reading \"" + path + "\"");
  return ss.str();
}

Result<std::vector<Document>> LoadDocuments(const LoadOptions& opts) {
  const std::string cwd = CurrentDir(opts.cwd);

  json values = json::object();
  for (const auto& vf : opts.values_files) {
    auto text = ReadFileBytes(vf);
    if (!text.ok()) return Invalid("values file: " + text.status().message());
    auto v = ParseYamlValues(*text);
    if (!v.ok()) return Invalid(vf + ": " + v.status().message());
    MergeValues(values, *v);
  }

  std::vector<Document> all;
  for (const auto& f : opts.files) {
    std::string text;
    ParseOptions po;
    po.cwd = cwd;
    po.require_files = opts.require_files;
    if (f == "-") {
      text = opts.stdin_text;
      po.source = "<stdin>";
    } else {
      auto t = ReadFileBytes(f);
      if (!t.ok()) return Invalid(t.status().message());
      text = std::move(t).value();
      po.source = f;
      fs::path p(f);
      po.base_dir =
          (p.is_absolute() ? p : fs::path(cwd) / p).parent_path().lexically_normal().string();
    }
    if (!opts.values_files.empty()) {
      auto rendered = RenderValuesTemplate(text, values);
      if (!rendered.ok()) return Invalid(po.source + ": " + rendered.status().message());
      text = std::move(rendered).value();
    }
    auto docs = ParseDocuments(text, po);
    if (!docs.ok()) {
      if (opts.values_files.empty() && text.find("{{") != std::string::npos) {
        return Invalid(docs.status().message() +
                       "\nhint: the file holds {{ }} template actions; give the values with -v");
      }
      return docs.status();
    }
    for (auto& d : *docs) all.push_back(std::move(d));
  }
  return all;
}

}  // namespace eco::ecoctl
