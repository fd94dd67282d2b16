// Coalescing and dependency processing as Helm v3's pkg/chartutil
// (coalesce.go, dependencies.go, values.go). Go mutates maps in place; here
// each level is copied out, changed and stored back, which gives the same
// results without Go's aliasing.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/semver.h"
#include "helm/text_util.h"
#include "helm/values.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

constexpr std::string_view kGlobalKey = "global";

// Parsed values.yaml texts, most recently used kept: dependency processing
// and coalescing read the same defaults many times per render, and renders
// of one chart repeat. Values code never changes a map in place; templates
// may (set, unset), so RenderTemplates gives them a copy of their own.
class DefaultsCache {
 public:
  std::optional<Value> Get(const std::string& text) {
    size_t h = std::hash<std::string>{}(text);
    Value hit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [&](const Entry& e) { return e.hash == h && e.text == text; });
      if (it == entries_.end()) return std::nullopt;
      it->used = ++clock_;
      hit = it->value;
    }
    return hit;
  }

  void Put(const std::string& text, const Value& v) {
    if (text.size() > kMaxBytes / 4) return;
    size_t h = std::hash<std::string>{}(text);
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (e.hash == h && e.text == text) return;
    }
    while (!entries_.empty() && (entries_.size() >= kMaxEntries || bytes_ + text.size() > kMaxBytes)) {
      auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                     [](const Entry& a, const Entry& b) { return a.used < b.used; });
      bytes_ -= oldest->text.size();
      entries_.erase(oldest);
    }
    bytes_ += text.size();
    entries_.push_back(Entry{h, text, v, ++clock_});
  }

 private:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = 32u << 20;
  struct Entry {
    size_t hash;
    std::string text;
    Value value;
    uint64_t used;
  };
  std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
  size_t bytes_ = 0;            // guarded by mu_
  uint64_t clock_ = 0;          // guarded by mu_
};

DefaultsCache& Defaults() {
  static DefaultsCache cache;
  return cache;
}


bool IsTable(const Value& v) { return v.kind() == Kind::kMap; }

Value MapValue(ValueMap m) { return Value::Map(std::move(m)); }

// coalesceTablesFullKey: dst has precedence; with !merge a null in dst
// deletes the key.
void CoalesceTables(ValueMap* dst, ValueMap src, bool merge) {
  for (const auto& [k, v] : *dst) {
    if (v.is_nil()) src[k] = Value::NilInterface();
  }
  for (auto& [key, val] : src) {
    auto it = dst->find(key);
    if (it != dst->end() && !merge && it->second.is_nil()) {
      dst->erase(it);
    } else if (it == dst->end()) {
      dst->emplace(key, val);
    } else if (IsTable(val)) {
      if (IsTable(it->second)) {
        ValueMap d = it->second.as_map();
        CoalesceTables(&d, val.as_map(), merge);
        it->second = MapValue(std::move(d));
      }
      // else: Helm warns that a table cannot overwrite a non-table.
    }
  }
}

bool IsSubchartName(const Chart& c, std::string_view key) {
  return std::any_of(c.subcharts.begin(), c.subcharts.end(), [&](const Chart& s) { return s.name() == key; });
}

// coalesceValues: the chart's defaults under `v`.
Status CoalesceChartValues(const Chart& c, ValueMap* v, bool merge) {
  ECO_ASSIGN_OR_RETURN(Value defaults, ChartDefaultValues(c));
  for (const auto& [key, val] : defaults.as_map()) {
    auto it = v->find(key);
    if (it == v->end()) {
      v->emplace(key, val);
    } else if (it->second.is_nil() && !merge) {
      v->erase(it);
    } else if (IsTable(it->second) && IsTable(val)) {
      bool sub_merge = merge || IsSubchartName(c, key);
      ValueMap d = it->second.as_map();
      CoalesceTables(&d, val.as_map(), sub_merge);
      it->second = MapValue(std::move(d));
    }
  }
  return Status::Ok();
}

// coalesceGlobals: the parent's globals (src) copied into the subchart's (dest).
void CoalesceGlobals(ValueMap* dest, const ValueMap& src) {
  ValueMap dg;
  if (auto it = dest->find(kGlobalKey); it != dest->end()) {
    if (!IsTable(it->second)) return;  // Helm warns and skips
    dg = it->second.as_map();
  }
  ValueMap sg;
  if (auto it = src.find(kGlobalKey); it != src.end()) {
    if (!IsTable(it->second)) return;
    sg = it->second.as_map();
  }
  for (const auto& [key, val] : sg) {
    auto dit = dg.find(key);
    if (IsTable(val)) {
      ValueMap vv = val.as_map();
      if (dit == dg.end()) {
        dg.emplace(key, MapValue(std::move(vv)));
      } else if (IsTable(dit->second)) {
        CoalesceTables(&vv, dit->second.as_map(), true);
        dit->second = MapValue(std::move(vv));
      }
      // else: "cannot merge map onto non-map", skipped.
    } else if (dit != dg.end() && IsTable(dit->second)) {
      // A table is not replaced by a scalar.
    } else {
      dg[key] = val;
    }
  }
  (*dest)[std::string(kGlobalKey)] = MapValue(std::move(dg));
}

Status Coalesce(const Chart& c, ValueMap* dest, bool merge);

Status CoalesceDeps(const Chart& c, ValueMap* dest, bool merge) {
  for (const Chart& sub : c.subcharts) {
    auto it = dest->find(sub.name());
    if (it == dest->end()) {
      it = dest->emplace(sub.name(), MapValue({})).first;
    } else if (!IsTable(it->second)) {
      return Invalid("type mismatch on " + sub.name() + ": " + Sprintf("%t", {it->second}));
    }
    ValueMap dv = it->second.as_map();
    CoalesceGlobals(&dv, *dest);
    ECO_RETURN_IF_ERROR(Coalesce(sub, &dv, merge));
    (*dest)[sub.name()] = MapValue(std::move(dv));
  }
  return Status::Ok();
}

Status Coalesce(const Chart& c, ValueMap* dest, bool merge) {
  ECO_RETURN_IF_ERROR(CoalesceChartValues(c, dest, merge));
  return CoalesceDeps(c, dest, merge);
}

Result<Value> CoalesceOrMerge(const Chart& chart, const Value& user_values, bool merge) {
  ValueMap dest;
  if (IsTable(user_values)) dest = user_values.as_map();
  ECO_RETURN_IF_ERROR(Coalesce(chart, &dest, merge));
  return MapValue(std::move(dest));
}

// ---------------------------------------------------------------------------
// Values.Table / PathValue (pkg/chartutil/values.go).

// The table at a dotted path, or nullopt if any element is missing or not a table.
std::optional<Value> Table(const Value& v, std::string_view path) {
  Value cur = v;
  for (const std::string& n : SplitDots(path)) {
    if (!IsTable(cur)) return std::nullopt;
    auto it = cur.as_map().find(n);
    if (it == cur.as_map().end() || !IsTable(it->second)) return std::nullopt;
    cur = it->second;
  }
  return cur;
}

// PathValue: a non-table value at a dotted path.
std::optional<Value> PathValue(const Value& v, std::string_view path) {
  if (path.empty()) return std::nullopt;
  std::vector<std::string> parts = SplitDots(path);
  Value table = v;
  if (parts.size() > 1) {
    std::string prefix;
    for (size_t i = 0; i + 1 < parts.size(); ++i) prefix += (i ? "." : "") + parts[i];
    auto t = Table(v, prefix);
    if (!t) return std::nullopt;
    table = *t;
  }
  if (!IsTable(table)) return std::nullopt;
  auto it = table.as_map().find(parts.back());
  if (it == table.as_map().end() || IsTable(it->second)) return std::nullopt;
  return it->second;
}

// Go's strings.TrimSpace for the separators a condition list holds.
std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// IsCompatibleRange: false when either side does not parse.
bool IsCompatibleRange(std::string_view constraint, std::string_view version) {
  Result<bool> r = SemverSatisfies(version, constraint);
  return r.ok() && *r;
}

// ---------------------------------------------------------------------------
// processDependencyEnabled.

void ProcessTags(std::vector<Dependency>* reqs, const Value& cvals) {
  auto tags = Table(cvals, "tags");
  if (!tags) return;
  for (Dependency& r : *reqs) {
    bool has_true = false, has_false = false;
    for (const std::string& k : r.tags) {
      auto it = tags->as_map().find(k);
      if (it == tags->as_map().end() || it->second.kind() != Kind::kBool) continue;
      (it->second.as_bool() ? has_true : has_false) = true;
    }
    if (!has_true && has_false) {
      r.enabled = false;
    } else {
      r.enabled = true;
    }
  }
}

void ProcessConditions(std::vector<Dependency>* reqs, const Value& cvals, const std::string& path) {
  for (Dependency& r : *reqs) {
    std::string cond = Trim(r.condition);
    size_t start = 0;
    for (;;) {
      size_t comma = cond.find(',', start);
      std::string c = cond.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!c.empty()) {
        auto v = PathValue(cvals, path + c);
        if (v && v->kind() == Kind::kBool) {
          r.enabled = v->as_bool();
          break;
        }
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
}

Status ProcessEnabled(Chart* c, const Value& v, const std::string& path) {
  if (c->metadata.dependencies.empty()) return Status::Ok();
  std::vector<Chart>& subs = c->subcharts;
  std::vector<Dependency>& reqs = c->metadata.dependencies;
  // Which subchart each entry uses (the first of its name whose version
  // fits), and how often each is used: the last use moves, others copy.
  std::vector<int> match(reqs.size(), -1);
  std::vector<int> uses(subs.size(), 0);
  std::vector<bool> referenced(subs.size(), false);
  for (size_t j = 0; j < subs.size(); ++j) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (subs[j].name() != reqs[i].name || !IsCompatibleRange(reqs[i].version, subs[j].metadata.version)) continue;
      referenced[j] = true;
      if (match[i] == -1) {
        match[i] = static_cast<int>(j);
        ++uses[j];
      }
    }
  }
  std::vector<Chart> deps;
  // Subcharts no Chart.yaml entry refers to stay as they are.
  for (size_t j = 0; j < subs.size(); ++j) {
    if (!referenced[j]) deps.push_back(std::move(subs[j]));
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (match[i] >= 0) {
      size_t j = static_cast<size_t>(match[i]);
      Chart dep = --uses[j] == 0 ? std::move(subs[j]) : subs[j];
      if (!reqs[i].alias.empty()) dep.metadata.name = reqs[i].alias;
      deps.push_back(std::move(dep));
    }
    if (!reqs[i].alias.empty()) reqs[i].name = reqs[i].alias;
  }
  c->subcharts = std::move(deps);
  for (Dependency& req : c->metadata.dependencies) req.enabled = true;
  ECO_ASSIGN_OR_RETURN(Value cvals, CoalesceOrMerge(*c, v, false));
  ProcessTags(&c->metadata.dependencies, cvals);
  ProcessConditions(&c->metadata.dependencies, cvals, path);
  std::vector<std::string> removed;
  for (const Dependency& r : c->metadata.dependencies) {
    if (!r.enabled) removed.push_back(r.name);
  }
  auto is_removed = [&](const std::string& n) { return std::find(removed.begin(), removed.end(), n) != removed.end(); };
  std::vector<Chart> kept;
  for (Chart& s : c->subcharts) {
    if (!is_removed(s.name())) kept.push_back(std::move(s));
  }
  std::vector<Dependency> kept_md;
  for (Dependency& d : c->metadata.dependencies) {
    if (!is_removed(d.name)) kept_md.push_back(std::move(d));
  }
  for (Chart& t : kept) {
    ECO_RETURN_IF_ERROR(ProcessEnabled(&t, cvals, path + t.name() + "."));
  }
  c->metadata.dependencies = std::move(kept_md);
  c->subcharts = std::move(kept);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// processImportValues (with merge, as ProcessDependenciesWithMerge).

// Go's MergeTables is coalesceTablesFullKey with merge = true.
Value MergeTables(const Value& dst, const Value& src) {
  ValueMap d = IsTable(dst) ? dst.as_map() : ValueMap{};
  CoalesceTables(&d, IsTable(src) ? src.as_map() : ValueMap{}, true);
  return MapValue(std::move(d));
}

Value PathToMap(const std::string& path, const Value& data) {
  if (path == ".") return data;
  std::vector<std::string> parts = SplitDots(path);
  Value cur = data;
  for (size_t i = parts.size(); i-- > 0;) {
    ValueMap m;
    m.emplace(parts[i], cur);
    cur = MapValue(std::move(m));
  }
  return cur;
}

// Everything ProcessImportValues reads, spelled out: the names and
// values.yaml texts of the chart and all its subcharts, and the chart's
// dependency names with their import-values.
void AppendField(std::string_view s, std::string* key) {
  key->append(std::to_string(s.size()));
  key->push_back(':');
  key->append(s);
}

void AppendValuesTree(const Chart& c, std::string* key) {
  AppendField(c.name(), key);
  AppendField(c.values_yaml, key);
  key->append(std::to_string(c.subcharts.size()));
  key->push_back('[');
  for (const Chart& sub : c.subcharts) AppendValuesTree(sub, key);
  key->push_back(']');
}

std::string ImportKey(const Chart& c) {
  std::string key;
  AppendValuesTree(c, &key);
  for (const Dependency& d : c.metadata.dependencies) {
    AppendField(d.name, &key);
    key.append(std::to_string(d.import_values.size()));
    for (const ImportValue& iv : d.import_values) {
      key.push_back(iv.is_string ? 's' : 'm');
      AppendField(iv.value, &key);
      AppendField(iv.child, &key);
      AppendField(iv.parent, &key);
    }
  }
  return key;
}

// ProcessImportValues's results by ImportKey: the new values and their YAML,
// whose printing is most of the work and is the same on every render.
class ImportsCache {
 public:
  struct Entry {
    std::string key;
    std::string yaml;
    Value merged;
    uint64_t used = 0;
  };

  std::optional<Entry> Get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_) {
      if (e.key == key) {
        e.used = ++clock_;
        return e;
      }
    }
    return std::nullopt;
  }

  void Put(Entry e) {
    size_t size = e.key.size() + e.yaml.size();
    if (size > kMaxBytes / 4) return;
    std::lock_guard<std::mutex> lock(mu_);
    while (!entries_.empty() && (entries_.size() >= kMaxEntries || bytes_ + size > kMaxBytes)) {
      auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                     [](const Entry& a, const Entry& b) { return a.used < b.used; });
      bytes_ -= oldest->key.size() + oldest->yaml.size();
      entries_.erase(oldest);
    }
    bytes_ += size;
    e.used = ++clock_;
    entries_.push_back(std::move(e));
  }

 private:
  static constexpr size_t kMaxEntries = 32;
  static constexpr size_t kMaxBytes = 32u << 20;
  std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
  size_t bytes_ = 0;            // guarded by mu_
  uint64_t clock_ = 0;          // guarded by mu_
};

ImportsCache& Imports() {
  static ImportsCache cache;
  return cache;
}

Status ProcessImportValues(Chart* c) {
  if (c->metadata.dependencies.empty()) return Status::Ok();
  std::string key = ImportKey(*c);
  if (std::optional<ImportsCache::Entry> hit = Imports().Get(key)) {
    // The import-values rewrite below, without the values work.
    for (Dependency& r : c->metadata.dependencies) {
      for (ImportValue& iv : r.import_values) {
        if (iv.is_string) {
          iv.child = "exports." + iv.value;
          iv.parent = ".";
        }
        iv.is_string = false;
        iv.value.clear();
      }
    }
    c->values_yaml = std::move(hit->yaml);
    Defaults().Put(c->values_yaml, hit->merged);
    return Status::Ok();
  }
  ECO_ASSIGN_OR_RETURN(Value cvals, CoalesceOrMerge(*c, Value(), true));
  Value b = MapValue({});
  for (Dependency& r : c->metadata.dependencies) {
    std::vector<ImportValue> out;
    for (const ImportValue& iv : r.import_values) {
      ImportValue o;
      if (iv.is_string) {
        o.child = "exports." + iv.value;
        o.parent = ".";
      } else {
        o.child = iv.child;
        o.parent = iv.parent;
      }
      out.push_back(o);
      auto table = Table(cvals, r.name + "." + o.child);
      if (!table) continue;  // Helm logs "ImportValues missing table"
      b = MergeTables(b, iv.is_string ? *table : PathToMap(o.parent, *table));
    }
    r.import_values = std::move(out);
  }
  // The parent's own values win over imported ones.
  Value merged = MergeTables(cvals, b);
  // The chart has no other home for its new defaults than values.yaml; the
  // cache keeps the exact values so they are not parsed back.
  c->values_yaml = ToYaml(merged);
  if (c->values_yaml.empty()) c->values_yaml = "{}";
  Defaults().Put(c->values_yaml, merged);
  Imports().Put(ImportsCache::Entry{std::move(key), c->values_yaml, merged, 0});
  return Status::Ok();
}

Status ProcessImports(Chart* c) {
  for (Chart& d : c->subcharts) ECO_RETURN_IF_ERROR(ProcessImports(&d));
  return ProcessImportValues(c);
}

}  // namespace

Result<Value> ChartDefaultValues(const Chart& c) {
  if (c.values_yaml.empty()) return MapValue({});
  if (auto hit = Defaults().Get(c.values_yaml)) return *hit;
  Result<Value> v = DecodeYaml(c.values_yaml, YamlTarget::kMap, "map[string]interface {}");
  if (!v.ok()) return Invalid("cannot load values.yaml: " + v.status().message());
  Value out = v->is_nil() ? MapValue({}) : *v;
  Defaults().Put(c.values_yaml, out);
  return out;
}

Result<Value> ParseYamlValues(std::string_view yaml, std::string_view source) {
  Result<Value> v = DecodeYaml(yaml, YamlTarget::kMap, "map[string]interface {}");
  if (!v.ok()) return Invalid("failed to parse " + std::string(source) + ": " + v.status().message());
  if (v->is_nil()) return MapValue({});
  return v;
}

Result<Value> CoalesceValues(const Chart& chart, const Value& user_values) {
  return CoalesceOrMerge(chart, user_values, false);
}

Result<Value> MergeChartValues(const Chart& chart, const Value& user_values) {
  return CoalesceOrMerge(chart, user_values, true);
}

Status ProcessDependencies(Chart* chart, Value* values) {
  ECO_RETURN_IF_ERROR(ProcessEnabled(chart, values ? *values : Value(), ""));
  return ProcessImports(chart);
}

bool SemverRangeMatches(std::string_view constraint, std::string_view version) {
  return IsCompatibleRange(constraint, version);
}

}  // namespace eco::helm
