#include "helm/manifests.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "helm/helmignore.h"
#include "helm/text_util.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

// Go's regexp \s (RE2): [\t\n\f\r ].
bool IsRegexSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

// Leftmost match of `(?:^|\s*\n)---\s*` at or after `from`: [*b, *e).
bool FindSeparator(std::string_view s, size_t from, size_t* b, size_t* e) {
  auto after_dashes = [&](size_t p) {
    p += 3;
    while (p < s.size() && IsRegexSpace(s[p])) ++p;
    return p;
  };
  if (from == 0 && s.substr(0, 3) == "---") {
    *b = 0;
    *e = after_dashes(0);
    return true;
  }
  // The first "\n---" at or after `from` ends the leftmost match, which
  // starts where the whitespace run before it starts.
  size_t nl = s.find("\n---", from);
  if (nl == std::string_view::npos) return false;
  size_t i = nl;
  while (i > from && IsRegexSpace(s[i - 1])) --i;
  *b = i;
  *e = after_dashes(nl + 1);
  return true;
}

constexpr std::array<std::string_view, 36> kInstallOrder = {
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
    "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
    "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService"};

int KindRank(std::string_view kind) {
  for (size_t i = 0; i < kInstallOrder.size(); ++i)
    if (kInstallOrder[i] == kind) return static_cast<int>(i);
  return -1;
}

bool IsHookEvent(std::string_view e) {
  static constexpr std::array<std::string_view, 10> kEvents = {
      "pre-install", "post-install", "pre-delete",   "post-delete", "pre-upgrade",
      "post-upgrade", "pre-rollback", "post-rollback", "test",       "test-success"};
  return std::find(kEvents.begin(), kEvents.end(), e) != kEvents.end();
}

// The JSON type name encoding/json uses in "cannot unmarshal X".
std::string JsonTypeName(const Value& v) {
  switch (v.kind()) {
    case Kind::kBool: return "bool";
    case Kind::kInt:
    case Kind::kInt64:
    case Kind::kFloat64: return "number";
    case Kind::kString: return "string";
    case Kind::kSlice: return "array";
    case Kind::kMap: return "object";
    default: return "null";
  }
}

Status FieldTypeError(const Value& v, std::string_view field, std::string_view go_type) {
  return Invalid("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal " + JsonTypeName(v) +
                 " into Go struct field SimpleHead." + std::string(field) + " of type " + std::string(go_type));
}

// A string field of releaseutil.SimpleHead: a JSON null leaves it empty.
Status StringField(const ValueMap& m, std::string_view key, std::string_view field, std::string* out) {
  auto it = m.find(key);
  if (it == m.end() || it->second.is_nil()) return Status::Ok();
  if (it->second.kind() != Kind::kString) return FieldTypeError(it->second, field, "string");
  *out = it->second.as_string();
  return Status::Ok();
}

// Reads what Helm's SimpleHead holds: apiVersion, kind, metadata.name and
// metadata.annotations (all strings).
Status ParseHead(std::string_view doc, Manifest* m, std::map<std::string, std::string>* annotations) {
  static const std::vector<std::string_view> kHeadKeys = {"apiVersion", "kind", "metadata"};
  ECO_ASSIGN_OR_RETURN(auto v, DecodeYamlTopKeys(doc, kHeadKeys));
  if (v.is_nil()) return Status::Ok();  // comment-only document
  if (v.kind() != Kind::kMap) {
    return Invalid("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal " + JsonTypeName(v) +
                   " into Go value of type releaseutil.SimpleHead");
  }
  const ValueMap& top = v.as_map();
  ECO_RETURN_IF_ERROR(StringField(top, "apiVersion", "apiVersion", &m->api_version));
  ECO_RETURN_IF_ERROR(StringField(top, "kind", "kind", &m->kind));
  auto md = top.find("metadata");
  if (md == top.end() || md->second.is_nil()) return Status::Ok();
  if (md->second.kind() != Kind::kMap) return FieldTypeError(md->second, "metadata", "struct { Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }");
  const ValueMap& meta = md->second.as_map();
  ECO_RETURN_IF_ERROR(StringField(meta, "name", "metadata.name", &m->name));
  auto an = meta.find("annotations");
  if (an == meta.end() || an->second.is_nil()) return Status::Ok();
  if (an->second.kind() != Kind::kMap) return FieldTypeError(an->second, "metadata.annotations", "map[string]string");
  for (const auto& [k, val] : an->second.as_map()) {
    if (val.is_nil()) {
      (*annotations)[k] = "";
      continue;
    }
    if (val.kind() != Kind::kString) return FieldTypeError(val, "metadata.annotations", "string");
    (*annotations)[k] = val.as_string();
  }
  return Status::Ok();
}

// What ParseHead reads from a document.
struct Head {
  Status status;
  std::string api_version, kind, name;
  std::map<std::string, std::string> annotations;
};

// ParseHead is a pure function of the document text, and the same documents
// come back on every render of a chart: results are remembered by text
// (bounded; cleared when full).
class HeadCache {
 public:
  std::shared_ptr<const Head> Get(const std::string& doc) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = map_.find(doc);
      if (it != map_.end()) return it->second;
    }
    auto head = std::make_shared<Head>();
    Manifest m;
    head->status = ParseHead(doc, &m, &head->annotations);
    head->api_version = std::move(m.api_version);
    head->kind = std::move(m.kind);
    head->name = std::move(m.name);
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ + doc.size() > kMaxBytes) {
      map_.clear();
      bytes_ = 0;
    }
    if (doc.size() <= kMaxBytes / 4 && map_.emplace(doc, head).second) bytes_ += doc.size();
    return head;
  }

 private:
  static constexpr size_t kMaxBytes = 32u << 20;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Head>> map_;
  size_t bytes_ = 0;
};

HeadCache& Heads() {
  static HeadCache cache;
  return cache;
}

std::string ToLowerAscii(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return o;
}

void SortByKind(std::vector<Manifest>* v) {
  std::stable_sort(v->begin(), v->end(), [](const Manifest& a, const Manifest& b) { return KindLess(a.kind, b.kind); });
}

}  // namespace

bool Manifest::IsTestHook() const {
  return std::any_of(hook_events.begin(), hook_events.end(),
                     [](const std::string& e) { return e == "test" || e == "test-success"; });
}

std::vector<std::string> SplitManifests(std::string_view text) {
  std::string_view s = TrimSpace(text);
  std::vector<std::string> out;
  size_t beg = 0, end = 0;
  size_t from = 0;
  size_t b, e;
  while (from <= s.size() && FindSeparator(s, from, &b, &e)) {
    end = b;
    if (e != 0) {
      std::string_view piece = s.substr(beg, end - beg);
      if (!piece.empty()) out.emplace_back(TrimSpace(piece));
    }
    beg = e;
    from = e;
  }
  if (end != s.size()) {
    std::string_view piece = s.substr(beg);
    if (!piece.empty()) out.emplace_back(TrimSpace(piece));
  }
  return out;
}

bool KindLess(std::string_view a, std::string_view b) {
  int ra = KindRank(a), rb = KindRank(b);
  if (ra < 0 && rb < 0) return a < b;
  if (ra < 0) return false;
  if (rb < 0) return true;
  return ra < rb;
}

Result<SortedManifests> SortManifests(const std::map<std::string, std::string>& files) {
  SortedManifests out;
  for (const auto& [path, content] : files) {
    std::string_view base = path;
    if (size_t slash = base.rfind('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
    if (!base.empty() && base[0] == '_') continue;
    if (TrimSpace(content).empty()) continue;
    for (std::string& doc : SplitManifests(content)) {
      std::shared_ptr<const Head> head = Heads().Get(doc);
      if (!head->status.ok()) return Invalid("YAML parse error on " + path + ": " + head->status.message());
      Manifest m;
      m.source = path;
      m.api_version = head->api_version;
      m.kind = head->kind;
      m.name = head->name;
      m.content = std::move(doc);
      const std::map<std::string, std::string>& annotations = head->annotations;
      auto hook = annotations.find("helm.sh/hook");
      if (hook == annotations.end()) {
        out.manifests.push_back(std::move(m));
        continue;
      }
      bool unknown = false;
      std::string_view events = hook->second;
      for (;;) {
        size_t comma = events.find(',');
        std::string e = ToLowerAscii(TrimSpace(events.substr(0, comma)));
        if (!IsHookEvent(e)) {
          unknown = true;
          break;
        }
        m.hook_events.push_back(std::move(e));
        if (comma == std::string_view::npos) break;
        events.remove_prefix(comma + 1);
      }
      if (unknown) continue;  // Helm skips hooks with an unknown event
      m.is_hook = true;
      out.hooks.push_back(std::move(m));
    }
  }
  SortByKind(&out.manifests);
  SortByKind(&out.hooks);
  return out;
}

std::string FormatDocument(std::string_view source, std::string_view content) {
  std::string s;
  s.reserve(source.size() + content.size() + 16);
  AppendDocument(&s, source, content);
  return s;
}

void AppendDocument(std::string* out, std::string_view source, std::string_view content) {
  *out += "---\n# Source: ";
  *out += source;
  *out += '\n';
  *out += content;
  *out += '\n';
}

// A malformed pattern matches nothing, as Helm ignores filepath.Match's error.
bool GoPathMatch(std::string_view pattern, std::string_view name) {
  Result<bool> m = FilepathMatch(pattern, name);
  return m.ok() && *m;
}

Result<std::string> ShowOnly(std::string_view text, const std::vector<std::string>& patterns) {
  std::vector<std::string> docs = SplitManifests(text);
  std::string out;
  for (const std::string& pattern : patterns) {
    bool missing = true;
    for (const std::string& doc : docs) {
      // "# Source: [^/]+/(.+)": the first such line names the document.
      size_t p = 0;
      std::string path;
      bool found = false;
      while ((p = doc.find("# Source: ", p)) != std::string::npos) {
        size_t start = p + 10;
        size_t eol = doc.find('\n', start);
        std::string_view line = std::string_view(doc).substr(start, eol == std::string::npos ? std::string::npos : eol - start);
        size_t slash = line.find('/');
        if (slash != std::string_view::npos && slash > 0 && slash + 1 < line.size()) {
          path = std::string(line.substr(slash + 1));
          found = true;
          break;
        }
        p = start;
      }
      if (!found || !GoPathMatch(pattern, path)) continue;
      out += "---\n";
      out += doc;
      out += '\n';
      missing = false;
    }
    if (missing) return Invalid("could not find template " + pattern + " in chart");
  }
  return out;
}

}  // namespace eco::helm
