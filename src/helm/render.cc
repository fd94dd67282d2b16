#include "helm/render.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "common/base64.h"
#include "helm/funcs.h"
#include "helm/funcs_internal.h"
#include "helm/semver.h"
#include "helm/template.h"
#include "helm/text_util.h"

namespace eco::helm {
namespace {

constexpr std::string_view kFilesType = "engine.files";

// What follows the last '/' ("" for "a/"); unlike path.Base, no "." for "".
std::string AfterLastSlash(std::string_view p) {
  size_t slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

// ---------------------------------------------------------------------------
// .Files.Glob uses github.com/gobwas/glob with '/' as separator: `*` and `?`
// stop at '/', `**` crosses it, `[...]`/`[!...]` classes, `{a,b}`
// alternatives, `\` escapes. No packaged library has these semantics
// (fnmatch lacks `**` and braces), hence this matcher.

// End of the `{...}` group starting at `open` (index of the matching '}').
size_t BraceEnd(std::string_view p, size_t open) {
  int depth = 0;
  for (size_t i = open; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] == '{') ++depth;
    if (p[i] == '}' && --depth == 0) return i;
  }
  return std::string_view::npos;
}

bool GlobFrom(std::string_view p, std::string_view s);

// Alternatives of the group p[open..close], each followed by `rest`.
bool GlobAlternatives(std::string_view p, size_t open, size_t close, std::string_view rest, std::string_view s) {
  size_t start = open + 1;
  int depth = 0;
  for (size_t i = open + 1; i <= close; ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] == '{') ++depth;
    if (p[i] == '}' && depth > 0) {
      --depth;
      continue;
    }
    if ((p[i] == ',' && depth == 0) || i == close) {
      std::string alt(p.substr(start, i - start));
      alt += rest;
      if (GlobFrom(alt, s)) return true;
      start = i + 1;
    }
  }
  return false;
}

bool GlobFrom(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0;
  while (pi < p.size()) {
    char c = p[pi];
    if (c == '*') {
      bool super = pi + 1 < p.size() && p[pi + 1] == '*';
      pi += super ? 2 : 1;
      std::string_view rest = p.substr(pi);
      for (size_t k = si;; ++k) {
        if (GlobFrom(rest, s.substr(k))) return true;
        if (k >= s.size() || (!super && s[k] == '/')) return false;
      }
    }
    if (c == '{') {
      size_t close = BraceEnd(p, pi);
      if (close == std::string_view::npos) return false;
      return GlobAlternatives(p, pi, close, p.substr(close + 1), s.substr(si));
    }
    if (si >= s.size()) return false;
    if (c == '?') {
      if (s[si] == '/') return false;
      ++pi, ++si;
      continue;
    }
    if (c == '[') {
      size_t i = pi + 1;
      bool negate = i < p.size() && p[i] == '!';
      if (negate) ++i;
      bool found = false;
      bool closed = false;
      while (i < p.size()) {
        if (p[i] == ']') {
          closed = true;
          break;
        }
        char lo = p[i], hi = lo;
        if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
          hi = p[i + 2];
          i += 3;
        } else {
          ++i;
        }
        if (lo <= s[si] && s[si] <= hi) found = true;
      }
      if (!closed || found == negate || s[si] == '/') return false;
      pi = i + 1;
      ++si;
      continue;
    }
    if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
    if (s[si] != c) return false;
    ++pi, ++si;
  }
  return si == s.size();
}

// ---------------------------------------------------------------------------
// Helm's engine.files: a map of path → bytes with methods, registered as
// "engine.files.<Method>" functions that the executor dispatches to.

Value MakeFiles(ValueMap entries) { return Value::Map(std::move(entries), std::string(kFilesType)); }

void AddFilesMethods(FuncMap* f) {
  using A = ArgType;
  auto add = [f](const std::string& name, std::vector<ArgType> params,
                 std::function<Result<Value>(CallContext&, const ValueList&)> fn) {
    (*f)[std::string(kFilesType) + "." + name] = Function{std::move(params), false, std::move(fn)};
  };
  auto lookup = [](const Value& files, const Value& name) -> const Value* {
    if (name.kind() != Kind::kString) return nullptr;
    auto it = files.as_map().find(name.as_string());
    return it == files.as_map().end() ? nullptr : &it->second;
  };
  add("Get", {A::kAny, A::kString}, [lookup](CallContext&, const ValueList& a) -> Result<Value> {
    const Value* v = lookup(a[0], a.size() > 1 ? a[1] : Value());
    return Value::String(v ? v->as_string() : "");
  });
  add("GetBytes", {A::kAny, A::kString}, [lookup](CallContext&, const ValueList& a) -> Result<Value> {
    const Value* v = lookup(a[0], a.size() > 1 ? a[1] : Value());
    return Value::Bytes(v ? v->as_string() : "");
  });
  add("Glob", {A::kAny, A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    ValueMap out;
    if (a.size() > 1 && a[1].kind() == Kind::kString) {
      for (const auto& [k, v] : a[0].as_map())
        if (GlobFrom(a[1].as_string(), k)) out.emplace(k, v);
    }
    return MakeFiles(std::move(out));
  });
  add("Lines", {A::kAny, A::kString}, [lookup](CallContext&, const ValueList& a) -> Result<Value> {
    const Value* v = lookup(a[0], a.size() > 1 ? a[1] : Value());
    ValueList lines;
    if (v) {
      std::string_view s = v->as_string();
      if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
      for (;;) {
        size_t nl = s.find('\n');
        lines.push_back(Value::String(std::string(s.substr(0, nl))));
        if (nl == std::string_view::npos) break;
        s.remove_prefix(nl + 1);
      }
    }
    return Value::Slice(std::move(lines), "[]string");
  });
  add("AsConfig", {A::kAny}, [](CallContext&, const ValueList& a) -> Result<Value> {
    ValueMap m;
    for (const auto& [k, v] : a[0].as_map())
      m.insert_or_assign(AfterLastSlash(k), Value::String(v.as_string()));
    if (m.empty()) return Value::String("{}");
    return Value::String(ToYaml(Value::Map(std::move(m), "map[string]string")));
  });
  add("AsSecrets", {A::kAny}, [](CallContext&, const ValueList& a) -> Result<Value> {
    ValueMap m;
    for (const auto& [k, v] : a[0].as_map())
      m.insert_or_assign(AfterLastSlash(k), Value::String(Base64Encode(v.as_string())));
    if (m.empty()) return Value::String("{}");
    return Value::String(ToYaml(Value::Map(std::move(m), "map[string]string")));
  });
}

// chartutil.Values: .Values with its Go methods (AsMap, YAML, Table, PathValue).
constexpr std::string_view kValuesType = "chartutil.Values";

Value AsValues(const Value& v) {
  if (v.kind() != Kind::kMap) return Value::Map({}, std::string(kValuesType));
  if (v.TypeName() == kValuesType) return v;
  return Value::Map(v.as_map(), std::string(kValuesType));
}

void AddValuesMethods(FuncMap* f) {
  using A = ArgType;
  auto add = [f](const std::string& name, std::vector<ArgType> params,
                 std::function<Result<Value>(CallContext&, const ValueList&)> fn) {
    (*f)[std::string(kValuesType) + "." + name] = Function{std::move(params), false, std::move(fn)};
  };
  add("AsMap", {A::kAny}, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::Map(a[0].as_map());
  });
  add("YAML", {A::kAny}, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(ToYaml(a[0]) + "\n");
  });
  add("Table", {A::kAny, A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    std::string name = a.size() > 1 && a[1].kind() == Kind::kString ? a[1].as_string() : "";
    Value cur = a[0];
    for (const std::string& part : SplitDots(name)) {
      auto it = cur.as_map().find(part);
      if (it == cur.as_map().end() || it->second.kind() != Kind::kMap)
        return NotFound("no table named \"" + name + "\"");
      cur = it->second;
    }
    return AsValues(cur);
  });
  add("PathValue", {A::kAny, A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    std::string path = a.size() > 1 && a[1].kind() == Kind::kString ? a[1].as_string() : "";
    std::vector<std::string> parts = SplitDots(path);
    Value cur = a[0];
    for (size_t i = 0; i < parts.size(); ++i) {
      if (cur.kind() != Kind::kMap) break;
      auto it = cur.as_map().find(parts[i]);
      if (it == cur.as_map().end()) break;
      if (i + 1 == parts.size()) {
        if (it->second.kind() == Kind::kMap) break;
        return it->second;
      }
      cur = it->second;
    }
    return NotFound("no value for key \"" + path + "\"");
  });
}

std::shared_ptr<const FuncMap> RenderFuncs() {
  static const std::shared_ptr<const FuncMap> kFuncs = [] {
    auto m = std::make_shared<FuncMap>(*HelmFuncs());
    AddFilesMethods(m.get());
    AddValuesMethods(m.get());
    return std::shared_ptr<const FuncMap>(std::move(m));
  }();
  return kFuncs;
}

// ---------------------------------------------------------------------------
// .Capabilities (chartutil.Capabilities and its parts).

class KubeVersionObject : public Object {
 public:
  explicit KubeVersionObject(const Capabilities& c) : v_(c.kube_version), major_(c.kube_major), minor_(c.kube_minor) {}
  std::string TypeName() const override { return "chartutil.KubeVersion"; }
  std::string Format() const override { return v_; }
  std::string StructText() const { return "{" + v_ + " " + major_ + " " + minor_ + "}"; }
  bool HasMember(std::string_view n) const override {
    return n == "Version" || n == "Major" || n == "Minor" || n == "GitVersion" || n == "String";
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (!args.empty() && (name == "Version" || name == "Major" || name == "Minor"))
      return Invalid(std::string(name) + " is not a method but has arguments");
    if (name == "Version" || name == "GitVersion" || name == "String") return Value::String(v_);
    if (name == "Major") return Value::String(major_);
    if (name == "Minor") return Value::String(minor_);
    return Object::Call(name, args);
  }

 private:
  std::string v_, major_, minor_;
};

class VersionSetObject : public Object {
 public:
  explicit VersionSetObject(std::vector<std::string> v) : v_(std::move(v)), set_(v_.begin(), v_.end()) {}
  std::string TypeName() const override { return "chartutil.VersionSet"; }
  std::string GoKind() const override { return "slice"; }
  std::string Format() const override {
    std::string s = "[";
    for (size_t i = 0; i < v_.size(); ++i) s += (i ? " " : "") + v_[i];
    return s + "]";
  }
  bool HasMember(std::string_view n) const override { return n == "Has"; }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (name == "Has") {
      if (args.size() != 1) return Invalid("wrong number of args for Has: want 1 got " + std::to_string(args.size()));
      if (args[0].kind() != Kind::kString) return Invalid("wrong type for value; expected string; got " + args[0].TypeName());
      return Value::Bool(set_.count(args[0].as_string()) > 0);
    }
    return Object::Call(name, args);
  }

 private:
  std::vector<std::string> v_;
  std::set<std::string, std::less<>> set_;
};

class HelmVersionObject : public Object {
 public:
  explicit HelmVersionObject(std::string v) : v_(std::move(v)) {}
  std::string TypeName() const override { return "version.BuildInfo"; }
  std::string Format() const override { return "{" + v_ + "   }"; }
  bool HasMember(std::string_view n) const override {
    return n == "Version" || n == "GitCommit" || n == "GitTreeState" || n == "GoVersion";
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (name == "Version") return Value::String(v_);
    if (HasMember(name)) return Value::String("");
    return Object::Call(name, args);
  }

 private:
  std::string v_;
};

class CapabilitiesObject : public Object {
 public:
  explicit CapabilitiesObject(const Capabilities& c)
      : kube_(std::make_shared<KubeVersionObject>(c)),
        apis_(std::make_shared<VersionSetObject>(c.api_versions)),
        helm_(std::make_shared<HelmVersionObject>(c.helm_version)) {}
  std::string TypeName() const override { return "*chartutil.Capabilities"; }
  std::string GoKind() const override { return "ptr"; }
  std::string Format() const override {
    return "&{" + kube_->StructText() + " " + apis_->Format() + " " + helm_->Format() + "}";
  }
  bool HasMember(std::string_view n) const override {
    return n == "KubeVersion" || n == "APIVersions" || n == "HelmVersion";
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (!args.empty() && HasMember(name)) return Invalid(std::string(name) + " is not a method but has arguments");
    if (name == "KubeVersion") return Value::Obj(kube_);
    if (name == "APIVersions") return Value::Obj(apis_);
    if (name == "HelmVersion") return Value::Obj(helm_);
    return Object::Call(name, args);
  }

 private:
  std::shared_ptr<const KubeVersionObject> kube_;
  std::shared_ptr<const VersionSetObject> apis_;
  std::shared_ptr<const HelmVersionObject> helm_;
};

// ---------------------------------------------------------------------------
// .Chart: chart.Metadata with its Go field names (plus IsRoot).

Value ChartValue(const ChartMetadata& md, bool root) {
  ValueMap m;
  m["Name"] = Value::String(md.name);
  m["Home"] = Value::String(md.home);
  m["Sources"] = funcs_internal::StringList(md.sources);
  m["Version"] = Value::String(md.version);
  m["Description"] = Value::String(md.description);
  m["Keywords"] = funcs_internal::StringList(md.keywords);
  ValueList maint;
  for (const auto& x : md.maintainers) {
    maint.push_back(Value::Map({{"Name", Value::String(x.name)}, {"Email", Value::String(x.email)}, {"URL", Value::String(x.url)}},
                               "*chart.Maintainer"));
  }
  m["Maintainers"] = Value::Slice(std::move(maint), "[]*chart.Maintainer");
  m["Icon"] = Value::String(md.icon);
  m["APIVersion"] = Value::String(md.api_version);
  m["Condition"] = Value::String("");
  m["Tags"] = Value::String("");
  m["AppVersion"] = Value::String(md.app_version);
  m["Deprecated"] = Value::Bool(md.deprecated);
  ValueMap ann;
  for (const auto& [k, v] : md.annotations) ann.emplace(k, Value::String(v));
  m["Annotations"] = Value::Map(std::move(ann), "map[string]string");
  m["KubeVersion"] = Value::String(md.kube_version);
  ValueList deps;
  for (const auto& d : md.dependencies) {
    ValueList imports;
    for (const auto& iv : d.import_values) {
      if (iv.is_string) imports.push_back(Value::String(iv.value));
      else imports.push_back(Value::Map({{"child", Value::String(iv.child)}, {"parent", Value::String(iv.parent)}}));
    }
    deps.push_back(Value::Map({{"Name", Value::String(d.name)},
                               {"Version", Value::String(d.version)},
                               {"Repository", Value::String(d.repository)},
                               {"Condition", Value::String(d.condition)},
                               {"Tags", funcs_internal::StringList(d.tags)},
                               {"Enabled", Value::Bool(d.enabled)},
                               {"ImportValues", Value::Slice(std::move(imports))},
                               {"Alias", Value::String(d.alias)}},
                              "*chart.Dependency"));
  }
  m["Dependencies"] = Value::Slice(std::move(deps), "[]*chart.Dependency");
  m["Type"] = Value::String(md.type);
  m["IsRoot"] = Value::Bool(root);
  return Value::Map(std::move(m));
}

// ---------------------------------------------------------------------------
// The engine (pkg/engine): templates of every chart with their top-level data.

struct Renderable {
  std::string name;  // "<chart path>/templates/<rel>"
  const std::string* text;
  std::shared_ptr<const ValueMap> data;  // the chart's data, without .Template
  std::string base_path;
};

// Helm's recAllTpls: builds the chart's data (its .Subcharts built first)
// and collects its templates.
Value CollectTemplates(const Chart& c, bool root, const std::string& path, const Value& parent_values,
                       const Value& release, const Value& caps, std::vector<Renderable>* out) {
  ValueMap next;
  next["Chart"] = ChartValue(c.metadata, root);
  ValueMap files;
  for (const auto& f : c.files) files.emplace(f.name, Value::Bytes(f.data));
  next["Files"] = MakeFiles(std::move(files));
  next["Release"] = release;
  next["Capabilities"] = caps;
  Value values = AsValues(Value());
  if (root) {
    values = AsValues(parent_values);
  } else if (parent_values.kind() == Kind::kMap) {
    auto it = parent_values.as_map().find(c.name());
    if (it != parent_values.as_map().end() && it->second.kind() == Kind::kMap) values = AsValues(it->second);
  }
  next["Values"] = values;
  ValueMap subcharts;
  for (const Chart& sub : c.subcharts)
    subcharts[sub.name()] = CollectTemplates(sub, false, path + "/charts/" + sub.name(), values, release, caps, out);
  next["Subcharts"] = Value::Map(std::move(subcharts));
  auto data = std::make_shared<const ValueMap>(next);
  for (const ChartFile& t : c.templates) {
    // A library chart contributes only its partials.
    if (c.IsLibrary() && AfterLastSlash(t.name).rfind('_', 0) != 0) continue;
    out->push_back(Renderable{path + "/" + t.name, &t.data, data, path + "/templates"});
  }
  return Value::Map(std::move(next));
}

// Parsing every template is a large part of a render and the same chart is
// rendered again and again, so parsed sets are kept, keyed by every (name,
// text) in parse order. A parsed set is never changed afterwards (execution
// is const; tpl parses into a copy), so sharing it between renders is safe.
class ParsedSets {
 public:
  using Key = std::vector<std::pair<std::string, std::string>>;

  std::shared_ptr<const TemplateSet> Find(const std::vector<Renderable>& tpls) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (Same(e.key, tpls)) return e.set;
    }
    return nullptr;
  }

  void Add(const std::vector<Renderable>& tpls, std::shared_ptr<const TemplateSet> set) {
    Entry e;
    size_t bytes = 0;
    for (const Renderable& r : tpls) {
      e.key.emplace_back(r.name, *r.text);
      bytes += r.name.size() + r.text->size();
    }
    if (bytes > kMaxBytes / 4) return;
    e.bytes = bytes;
    e.set = std::move(set);
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(std::move(e));
    bytes_ += bytes;
    while (bytes_ > kMaxBytes || entries_.size() > kMaxEntries) {
      bytes_ -= entries_.front().bytes;
      entries_.pop_front();
    }
  }

 private:
  static constexpr size_t kMaxEntries = 16;
  static constexpr size_t kMaxBytes = 32u << 20;
  struct Entry {
    Key key;
    size_t bytes = 0;
    std::shared_ptr<const TemplateSet> set;
  };
  static bool Same(const Key& key, const std::vector<Renderable>& tpls) {
    if (key.size() != tpls.size()) return false;
    for (size_t i = 0; i < key.size(); ++i) {
      if (key[i].first != tpls[i].name || key[i].second != *tpls[i].text) return false;
    }
    return true;
  }
  std::mutex mu_;
  std::deque<Entry> entries_;
  size_t bytes_ = 0;
};

ParsedSets& ParsedSetCache() {
  static ParsedSets cache;
  return cache;
}

// required/fail errors read "execution error at (<name:line:col>): <message>".
std::string CleanupExecError(const std::string& msg) {
  size_t a = msg.find(kHelmUserErrorStart);
  size_t b = msg.find(kHelmUserErrorEnd);
  if (a == std::string::npos || b == std::string::npos || b < a) return msg;
  std::string user = msg.substr(a + kHelmUserErrorStart.size(), b - a - kHelmUserErrorStart.size());
  size_t p1 = msg.find(": ");
  size_t p2 = p1 == std::string::npos ? p1 : msg.find(": ", p1 + 2);
  std::string loc = p2 == std::string::npos ? "" : msg.substr(p1 + 2, p2 - p1 - 2);
  return "execution error at (" + loc + "): " + user;
}

// ---------------------------------------------------------------------------

Status CheckDependencies(const Chart& c) {
  std::string missing;
  for (const Dependency& d : c.metadata.dependencies) {
    bool found = std::any_of(c.subcharts.begin(), c.subcharts.end(), [&](const Chart& s) { return s.name() == d.name; });
    if (!found) missing += (missing.empty() ? "" : ", ") + d.name;
  }
  if (missing.empty()) return Status::Ok();
  return Invalid(
      "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to "
      "fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: " +
      missing);
}

void CollectCrds(const Chart& c, const std::string& path, std::vector<CrdFile>* out) {
  for (const ChartFile* f : c.CrdFiles()) out->push_back(CrdFile{path + "/" + f->name, f->data});
  for (const Chart& sub : c.subcharts) CollectCrds(sub, path + "/charts/" + sub.name(), out);
}

// `with_crds`: also copy the CRD files into `out` (large; often unused).
Status RenderReleaseImpl(const Chart& chart_in, const ReleaseOptions& opts, RenderedRelease* out,
                         bool* render_started, RenderedFiles* files_out, bool with_crds = true) {
  *render_started = false;
  ECO_ASSIGN_OR_RETURN(auto user, MergeValues(opts.values));
  const std::string& type = chart_in.metadata.type;
  if (type != "" && type != "application") return Invalid(type + " charts are not installable");
  if (chart_in.metadata.deprecated) out->warnings.push_back("WARNING: This chart is deprecated");
  if (!chart_in.metadata.dependencies.empty()) ECO_RETURN_IF_ERROR(CheckDependencies(chart_in));
  Status name_ok = ValidateReleaseName(opts.name);
  if (!name_ok.ok()) return Invalid("release name \"" + opts.name + "\": " + name_ok.message());

  Chart chart = chart_in;
  Value user_values = std::move(user);
  ECO_RETURN_IF_ERROR(ProcessDependencies(&chart, &user_values));
  ECO_ASSIGN_OR_RETURN(auto values, CoalesceValues(chart, user_values));
  if (!opts.skip_schema_validation) ECO_RETURN_IF_ERROR(ValidateValuesSchema(chart, values));

  *render_started = true;
  const std::string& constraint = chart.metadata.kube_version;
  if (!constraint.empty()) {
    // Helm's IsCompatibleRange: an unparsable constraint is incompatible too.
    auto ok = SemverSatisfies(opts.capabilities.kube_version, constraint);
    if (!ok.ok() || !*ok)
      return Invalid("chart requires kubeVersion: " + constraint + " which is incompatible with Kubernetes " +
                     opts.capabilities.kube_version);
  }
  ECO_ASSIGN_OR_RETURN(auto files, RenderTemplates(chart, values, opts));
  auto sorted = SortManifests(files.files);
  if (!sorted.ok()) {
    if (files_out) *files_out = std::move(files);
    return sorted.status();
  }
  out->manifests = std::move(sorted->manifests);
  out->hooks = std::move(sorted->hooks);
  out->notes = std::move(files.notes);
  if (with_crds) CollectCrds(chart, chart.name(), &out->crds);
  return Status::Ok();
}

}  // namespace

Result<Capabilities> MakeCapabilities(std::string_view kube_version, const std::vector<std::string>& extra) {
  Capabilities c;
  if (!kube_version.empty()) {
    auto v = ParseSemver(kube_version);
    if (!v.ok()) return Invalid("invalid kube version '" + std::string(kube_version) + "': " + v.status().message());
    c.kube_version = "v" + v->String();
    c.kube_major = std::to_string(v->major);
    c.kube_minor = std::to_string(v->minor);
  }
  c.api_versions = DefaultApiVersions();
  c.api_versions.insert(c.api_versions.end(), extra.begin(), extra.end());
  return c;
}

Status ApplyChartFileOverrides(Chart* chart, const std::vector<ChartFileOverride>& overrides) {
  for (const ChartFileOverride& o : overrides) {
    std::string_view p = o.path;
    size_t slash = p.find('/');
    if (slash == std::string_view::npos) return Invalid("chart file override " + o.path + ": no file below the chart directory");
    p.remove_prefix(slash + 1);
    Chart* c = chart;
    // Descend into charts/<dir>/ for a subchart's file.
    while (p.rfind("charts/", 0) == 0) {
      size_t end = p.find('/', 7);
      if (end == std::string_view::npos) break;
      std::string origin(p.substr(0, end));
      auto it = std::find_if(c->subcharts.begin(), c->subcharts.end(), [&](const Chart& s) { return s.origin == origin; });
      if (it == c->subcharts.end()) break;
      c = &*it;
      p.remove_prefix(end + 1);
    }
    std::string rel(p);
    if (rel == "Chart.yaml") return Invalid("chart file override " + o.path + ": Chart.yaml cannot be replaced");
    if (rel == "values.yaml") {
      c->values_yaml = o.data;
      continue;
    }
    if (rel == "values.schema.json") {
      c->values_schema_json = o.data;
      continue;
    }
    auto& list = rel.rfind("templates/", 0) == 0 ? c->templates : c->files;
    auto it = std::find_if(list.begin(), list.end(), [&](const ChartFile& f) { return f.name == rel; });
    if (it != list.end()) it->data = o.data;
    else list.push_back(ChartFile{rel, o.data});
  }
  return Status::Ok();
}

Result<RenderedFiles> RenderTemplates(const Chart& chart, const Value& shared_values, const ReleaseOptions& opts) {
  // A copy that shares no map or list with the defaults: Sprig's set/unset/
  // merge write through maps as Go does, and defaults are shared between
  // renders (values.cc caches them), so each render gets its own copy.
  const Value values = funcs_internal::DeepCopy(shared_values);
  Value release = Value::Map({{"Name", Value::String(opts.name)},
                              {"Namespace", Value::String(opts.namespace_)},
                              {"IsUpgrade", Value::Bool(opts.is_upgrade)},
                              {"IsInstall", Value::Bool(!opts.is_upgrade)},
                              {"Revision", Value::Int(opts.revision)},
                              {"Service", Value::String("Helm")}});
  Value caps = Value::Obj(std::make_shared<CapabilitiesObject>(opts.capabilities));
  std::vector<Renderable> tpls;
  CollectTemplates(chart, true, chart.name(), values, release, caps, &tpls);

  // Parse order: deeper paths first, then reverse byte order; a later
  // define replaces an earlier one, so parents override subcharts.
  auto slashes = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
  std::sort(tpls.begin(), tpls.end(), [&](const Renderable& a, const Renderable& b) {
    auto ca = slashes(a.name), cb = slashes(b.name);
    if (ca != cb) return ca > cb;
    return a.name > b.name;
  });
  std::shared_ptr<const TemplateSet> parsed = ParsedSetCache().Find(tpls);
  if (!parsed) {
    auto fresh = std::make_shared<TemplateSet>(RenderFuncs());
    for (const Renderable& r : tpls) {
      Status s = fresh->Parse(r.name, *r.text);
      if (!s.ok()) return Invalid(CleanupParseError(r.name, s.message()));
    }
    parsed = fresh;
    ParsedSetCache().Add(tpls, parsed);
  }
  const TemplateSet& set = *parsed;
  ExecOptions eo;
  eo.missing_key = MissingKey::kZero;
  if (opts.time_limit.count() > 0) eo.deadline = std::chrono::steady_clock::now() + opts.time_limit;
  RenderedFiles out;
  const std::string notes_name = chart.name() + "/templates/NOTES.txt";
  for (const Renderable& r : tpls) {
    if (AfterLastSlash(r.name).rfind('_', 0) == 0) continue;
    ValueMap top = *r.data;
    top["Template"] = Value::Map({{"Name", Value::String(r.name)}, {"BasePath", Value::String(r.base_path)}},
                                 "chartutil.Values");
    auto text = set.Execute(r.name, Value::Map(std::move(top)), eo);
    if (!text.ok()) return Invalid(CleanupExecError(text.status().message()));
    std::string s = std::move(text).value();
    EraseAll(&s, "<no value>");
    // NOTES.txt is not a manifest; only the top chart's is kept, as notes.
    if (r.name.size() >= 9 && r.name.compare(r.name.size() - 9, 9, "NOTES.txt") == 0) {
      if (r.name == notes_name) out.notes = std::move(s);
      continue;
    }
    out.files.emplace(r.name, std::move(s));
  }
  return out;
}

Result<RenderedRelease> RenderRelease(const Chart& chart, const ReleaseOptions& opts, RenderedFiles* files_on_error) {
  RenderedRelease out;
  bool started = false;
  Status s = RenderReleaseImpl(chart, opts, &out, &started, files_on_error);
  if (!s.ok()) return s;
  return out;
}

Result<std::string> RenderNameTemplate(std::string_view text) {
  TemplateSet set(HelmFuncs());
  Status s = set.Parse("name-template", text);
  if (!s.ok()) return s;
  return set.Execute("name-template", Value());
}

Status ValidateReleaseName(std::string_view name) {
  if (name.empty()) return Invalid("no name provided");
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  // ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$, at most 53 bytes.
  bool ok = name.size() <= 53;
  size_t start = 0;
  while (ok) {
    size_t dot = name.find('.', start);
    std::string_view label = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    ok = !label.empty() && alnum(label.front()) && alnum(label.back()) &&
         std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; });
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (ok) return Status::Ok();
  return Invalid(
      "invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and "
      "the length must not be longer than 53");
}

TemplateOutput HelmTemplateText(const Chart& chart, const TemplateOptions& opts) {
  TemplateOutput o;
  RenderedRelease rel;
  bool started = false;
  RenderedFiles debug_files;
  Status err = RenderReleaseImpl(chart, opts.release, &rel, &started, &debug_files, opts.include_crds);
  o.warnings = rel.warnings;
  if (!err.ok() && !started) {
    o.error = err;
    return o;
  }
  if (!err.ok() && !opts.debug) {
    o.error = Invalid(err.message() + "\n\nUse --debug flag to render out invalid YAML");
    return o;
  }
  // The release manifest (B): CRDs if asked, then manifests; with
  // --output-dir they go to files instead.
  std::string b;
  std::map<std::string, size_t> file_index;
  auto write = [&](const std::string& name, std::string_view content) {
    std::string path = opts.output_dir + "/" + name;
    auto [it, fresh] = file_index.emplace(path, o.written.size());
    if (fresh) o.written.emplace_back(path, "");
    o.written[it->second].second += FormatDocument(name, content);
    o.out += "wrote " + path + "\n";
  };
  if (!err.ok()) {
    // --debug: the rendered files, then the error.
    for (const auto& [name, content] : debug_files.files)
      if (!TrimSpace(content).empty()) AppendDocument(&b, name, content);
  } else {
    if (opts.include_crds) {
      for (const CrdFile& crd : rel.crds) {
        if (opts.output_dir.empty()) AppendDocument(&b, crd.source, crd.data);
        else write(crd.source, crd.data);
      }
    }
    if (opts.output_dir.empty()) {
      size_t size = b.size();
      for (const Manifest& m : rel.manifests) size += m.source.size() + m.content.size() + 16;
      b.reserve(size);
    }
    for (const Manifest& m : rel.manifests) {
      if (opts.output_dir.empty()) AppendDocument(&b, m.source, m.content);
      else write(m.source, m.content);
    }
  }
  std::string_view trimmed = TrimSpace(b);
  std::string text;
  if (trimmed.size() == b.size()) {
    text = std::move(b);
  } else {
    text.assign(trimmed);
  }
  text += '\n';
  if (!opts.no_hooks) {
    for (const Manifest& h : rel.hooks) {
      if (opts.skip_tests && h.IsTestHook()) continue;
      if (opts.output_dir.empty()) AppendDocument(&text, h.source, h.content);
      else write(h.source, h.content);
    }
  }
  if (!opts.show_only.empty()) {
    auto shown = ShowOnly(text, opts.show_only);
    if (!shown.ok()) {
      o.error = shown.status();
      return o;
    }
    o.out += *shown;
  } else if (o.out.empty()) {
    o.out = std::move(text);
  } else {
    o.out += text;
  }
  o.error = err;
  return o;
}

std::string CleanupParseError(const std::string& filename, const std::string& msg) {
  std::vector<std::string> tokens;
  size_t start = 0;
  for (;;) {
    size_t p = msg.find(": ", start);
    if (p == std::string::npos) {
      tokens.push_back(msg.substr(start));
      break;
    }
    tokens.push_back(msg.substr(start, p - start));
    start = p + 2;
  }
  if (tokens.size() == 1) {
    return filename.empty() ? "parse error: " + msg : "parse error in (" + filename + "): " + msg;
  }
  return "parse error at (" + tokens[1] + "): " + tokens.back();
}

}  // namespace eco::helm
