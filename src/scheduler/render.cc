#include "scheduler/render.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/metrics.h"
#include "helm/chart.h"
#include "helm/manifests.h"
#include "helm/render.h"
#include "helm/yaml_in.h"

namespace eco::scheduler {

using nlohmann::json;

namespace {

json ValueToJson(const helm::Value& v) {
  switch (v.kind()) {
    case helm::Kind::kNil: return nullptr;
    case helm::Kind::kBool: return v.as_bool();
    case helm::Kind::kInt:
    case helm::Kind::kInt64: return v.as_int();
    case helm::Kind::kFloat64: {
      // sigs.k8s.io/yaml keeps integers as integers; DecodeYaml's float64
      // view of them is turned back here.
      double f = v.as_float();
      if (std::isfinite(f) && std::floor(f) == f && std::fabs(f) < 9.0e15) {
        return static_cast<int64_t>(f);
      }
      return f;
    }
    case helm::Kind::kString:
    case helm::Kind::kBytes: return v.as_string();
    case helm::Kind::kSlice: {
      json a = json::array();
      for (const auto& e : v.as_list()) a.push_back(ValueToJson(e));
      return a;
    }
    case helm::Kind::kMap: {
      json o = json::object();
      for (const auto& [k, e] : v.as_map()) o[k] = ValueToJson(e);
      return o;
    }
    default: return nullptr;
  }
}

struct Profile {
  std::string values;  // contents of the values file ("" = none)
  std::vector<helm::ChartFileOverride> files;
};

std::string MapString(const helm::Value& m, const char* key) {
  if (m.kind() != helm::Kind::kMap) return "";
  auto it = m.as_map().find(key);
  if (it == m.as_map().end() || it->second.kind() != helm::Kind::kString) return "";
  return it->second.as_string();
}

Result<Profile> ReadProfile(const std::string& app, const std::string& tgz) {
  auto files = helm::ReadTgzFiles(tgz);
  if (!files.ok()) return files.status().Annotate("profile of app " + app);
  auto find = [&](const std::string& path) -> const std::string* {
    for (const auto& f : *files) {
      if (f.name == path) return &f.data;
    }
    return nullptr;
  };
  const std::string* manifest = find("manifest.yaml");
  if (!manifest) return Invalid("profile of app " + app + ": no manifest.yaml at the archive root");
  auto doc = helm::DecodeYaml(*manifest, helm::YamlTarget::kMap);
  if (!doc.ok()) return doc.status().Annotate("profile of app " + app + ": manifest.yaml");
  Profile p;
  auto type_it = doc->as_map().find("type");
  if (type_it == doc->as_map().end() || type_it->second.kind() != helm::Kind::kMap) return p;
  const helm::Value& type = type_it->second;
  std::string values_file = MapString(type, "values");
  if (!values_file.empty()) {
    const std::string* v = find(values_file);
    if (!v) {
      return Invalid("profile of app " + app + ": manifest.yaml names values file " + values_file +
                     ", which the archive does not hold");
    }
    p.values = *v;
  }
  auto cr = type.as_map().find("configresource");
  if (cr != type.as_map().end() && cr->second.kind() == helm::Kind::kSlice) {
    for (const auto& e : cr->second.as_list()) {
      std::string from = MapString(e, "filepath");
      std::string to = MapString(e, "chartpath");
      if (from.empty() || to.empty()) {
        return Invalid("profile of app " + app + ": every configresource needs filepath and chartpath");
      }
      const std::string* data = find(from);
      if (!data) {
        return Invalid("profile of app " + app + ": configresource file " + from +
                       " is not in the archive");
      }
      p.files.push_back({to, *data});
    }
  }
  return p;
}

int HookWeight(const json& obj) {
  const json* md = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (!md || !md->is_object() || !md->contains("annotations")) return 0;
  const json& ann = (*md)["annotations"];
  if (!ann.is_object()) return 0;
  auto it = ann.find("helm.sh/hook-weight");
  if (it == ann.end() || !it->is_string()) return 0;
  try {
    return std::stoi(it->get<std::string>());
  } catch (...) {
    return 0;  // Helm treats a malformed weight as 0
  }
}

}  // namespace

Result<json> ManifestToJson(const std::string& yaml) {
  auto v = helm::DecodeYaml(yaml);
  if (!v.ok()) return v.status();
  return ValueToJson(*v);
}

void AddLabels(json& obj, const std::map<std::string, std::string>& labels) {
  if (labels.empty() || !obj.is_object()) return;
  auto put = [&](json& md) {
    if (!md.is_object()) md = json::object();
    json& l = md["labels"];
    if (!l.is_object()) l = json::object();
    for (const auto& [k, v] : labels) l[k] = v;
  };
  put(obj["metadata"]);
  static const std::set<std::string> kWorkloads = {"Deployment", "StatefulSet", "DaemonSet",
                                                   "ReplicaSet", "Job", "ReplicationController"};
  std::string kind = obj.value("kind", "");
  json* spec = obj.contains("spec") && obj["spec"].is_object() ? &obj["spec"] : nullptr;
  if (!spec) return;
  if (kWorkloads.count(kind) && spec->contains("template") && (*spec)["template"].is_object()) {
    put((*spec)["template"]["metadata"]);
  } else if (kind == "CronJob" && spec->contains("jobTemplate") && (*spec)["jobTemplate"].is_object()) {
    json& jt = (*spec)["jobTemplate"];
    put(jt["metadata"]);
    if (jt.contains("spec") && jt["spec"].is_object() && jt["spec"].contains("template")) {
      put(jt["spec"]["template"]["metadata"]);
    }
  }
}

Result<appcontext::ResourceSet> RenderApp(const RenderInput& in) {
  auto chart = helm::LoadChartArchive(in.chart_tgz);
  if (!chart.ok()) return chart.status().Annotate("chart of app " + in.app);
  helm::ReleaseOptions ro;
  ro.name = in.release;
  ro.namespace_ = in.namespace_.empty() ? "default" : in.namespace_;
  ro.time_limit = in.time_limit;
  if (!in.profile_tgz.empty()) {
    auto p = ReadProfile(in.app, in.profile_tgz);
    if (!p.ok()) return p.status();
    if (!p->files.empty()) {
      Status s = helm::ApplyChartFileOverrides(&*chart, p->files);
      if (!s.ok()) return s.Annotate("profile of app " + in.app);
    }
    if (!p->values.empty()) ro.values.value_files.emplace_back("override_values.yaml", p->values);
  }
  for (const auto& [k, v] : in.overrides) ro.values.set.push_back(k + "=" + v);
  auto caps = helm::MakeCapabilities("", {});
  if (!caps.ok()) return caps.status();
  ro.capabilities = *caps;
  const Clock::Time render_start = in.clock->Now();
  auto rel = helm::RenderRelease(*chart, ro);
  static auto& render_time = prometheus::BuildHistogram()
                                 .Name("eco_helm_render_duration_seconds")
                                 .Help("Time to render one app's Helm chart, by result (OK or the error class).")
                                 .Register(metrics::Registry());
  render_time
      .Add({{"result", std::string(CodeName(rel.status().code()))}}, metrics::LatencyBuckets())
      .Observe(metrics::SecondsSince(*in.clock, render_start));
  if (!rel.ok()) return rel.status().Annotate("rendering app " + in.app);

  appcontext::ResourceSet rs;
  std::set<std::string> seen;
  auto convert = [&](const std::string& source, const std::string& content,
                     std::vector<appcontext::Resource>& into) -> Status {
    auto obj = ManifestToJson(content);
    if (!obj.ok()) return obj.status().Annotate("app " + in.app + ": " + source);
    if (obj->is_null()) return Status::Ok();  // comments only
    if (!obj->is_object() || !obj->contains("kind") || !(*obj)["kind"].is_string()) {
      return Invalid("app " + in.app + ": " + source + " renders an object without a kind");
    }
    AddLabels(*obj, in.labels);
    std::string name = appcontext::ResourceName(*obj);
    if (name.front() == '+') {
      // EMCO names an unnamed object (e.g. a List) after its template file.
      std::string base = source.substr(source.rfind('/') + 1);
      name = base + name;
    }
    if (!seen.insert(name).second) {
      return Invalid("app " + in.app + " renders two objects named " + name);
    }
    into.push_back({std::move(name), std::move(*obj)});
    return Status::Ok();
  };
  for (const auto& crd : rel->crds) {
    for (const auto& doc : helm::SplitManifests(crd.data)) {
      ECO_RETURN_IF_ERROR(convert(crd.source, doc, rs.crds));
    }
  }
  for (const auto& m : rel->manifests) {
    ECO_RETURN_IF_ERROR(convert(m.source, m.content, m.kind == "CustomResourceDefinition" ? rs.crds : rs.resources));
  }
  struct Hook {
    appcontext::Resource r;
    int weight;
    std::vector<std::string> events;
  };
  std::vector<Hook> hooks;
  for (const auto& h : rel->hooks) {
    if (h.IsTestHook()) continue;
    std::vector<appcontext::Resource> one;
    ECO_RETURN_IF_ERROR(convert(h.source, h.content, one));
    if (one.empty()) continue;
    int w = HookWeight(one[0].object);
    hooks.push_back({std::move(one[0]), w, h.hook_events});
  }
  std::stable_sort(hooks.begin(), hooks.end(), [](const Hook& a, const Hook& b) {
    return a.weight != b.weight ? a.weight < b.weight : a.r.name < b.r.name;
  });
  for (auto& h : hooks) {
    for (const auto& ev : h.events) {
      if (ev != "test" && ev != "test-success") rs.hook_events[ev].push_back(h.r.name);
    }
    rs.hooks.push_back(std::move(h.r));
  }
  return rs;
}

}  // namespace eco::scheduler
