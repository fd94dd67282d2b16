#include "catalog/catalog.h"

#include <chrono>
#include <cstdio>

#include "common/secrets.h"

namespace eco::catalog {

std::string JoinKeys(const Keys& k) {
  std::string s;
  for (size_t i = 0; i < k.size(); ++i) {
    if (i) s += '/';
    s += k[i];
  }
  return s;
}

namespace {
constexpr std::string_view kObjects = "/eco/r/";
constexpr std::string_view kFiles = "/eco/f/";
constexpr std::string_view kStates = "/eco/s/";
constexpr std::string_view kGuards = "/eco/g/";
constexpr std::string_view kRefs = "/eco/ref/";
constexpr std::string_view kUnique = "/eco/u/";
constexpr std::string_view kDigLocks = "/eco/lock/dig/";
constexpr std::string_view kLcLocks = "/eco/lock/lc/";

std::string Cat(std::string_view prefix, const std::string& rest) {
  std::string s(prefix);
  s += rest;
  return s;
}
}  // namespace

std::string ObjectKey(const std::string& type, const Keys& k) { return Cat(kObjects, type + "/" + JoinKeys(k)); }
std::string FileKey(const std::string& type, const Keys& k) { return Cat(kFiles, type + "/" + JoinKeys(k)); }
std::string StateKey(const std::string& type, const Keys& k) { return Cat(kStates, type + "/" + JoinKeys(k)); }
std::string ListPrefix(const std::string& type, const Keys& parent) {
  return parent.empty() ? Cat(kObjects, type + "/") : Cat(kObjects, type + "/" + JoinKeys(parent) + "/");
}
std::string FilePrefix(const std::string& type) { return Cat(kFiles, type + "/"); }
std::string StatePrefix() { return std::string(kStates); }
std::string StatePrefix(const std::string& type) { return Cat(kStates, type + "/"); }
std::string ResourceId(const std::string& type, const Keys& k) { return type + "/" + JoinKeys(k); }
std::string GuardKey(const std::string& type, const Keys& k) { return Cat(kGuards, ResourceId(type, k)); }
std::string RefPrefix(const std::string& type, const Keys& k) { return Cat(kRefs, ResourceId(type, k) + "|"); }
std::string RefKey(const std::string& target_type, const Keys& target, const std::string& source_type,
                   const Keys& source) {
  return RefPrefix(target_type, target) + ResourceId(source_type, source);
}
std::string UniqueKey(const std::string& type, const std::string& unique_id) {
  return Cat(kUnique, type + "/" + unique_id);
}
std::string DigLockKey(const Keys& dig) { return Cat(kDigLocks, JoinKeys(dig)); }
std::string LcLockKey(const std::string& project, const std::string& lc) { return Cat(kLcLocks, project + "/" + lc); }

bool KeyUnder(std::string_view key, std::string_view prefix) { return key.substr(0, prefix.size()) == prefix; }
bool IsStateKey(std::string_view key) { return KeyUnder(key, kStates); }

Result<std::optional<json>> Get(store::Store& st, const std::string& type, const Keys& k) {
  auto kv = st.Get(ObjectKey(type, k));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<json>();
  json j = json::parse((*kv)->value, nullptr, false);
  if (j.is_discarded()) return Internal("stored " + type + " " + JoinKeys(k) + " is not JSON");
  return std::optional<json>(std::move(j));
}

Result<std::vector<Item>> List(store::Store& st, const std::string& type, const Keys& parent) {
  const std::string prefix = ListPrefix(type, parent);
  std::vector<Item> out;
  store::RangeOptions ro;
  for (;;) {
    auto r = st.Range(prefix, ro);
    if (!r.ok()) return r.status();
    for (auto& kv : r->kvs) {
      Item it;
      it.keys = parent;
      std::string rest = kv.key.substr(prefix.size());
      size_t pos = 0;
      while (pos <= rest.size()) {
        size_t slash = rest.find('/', pos);
        if (slash == std::string::npos) slash = rest.size();
        it.keys.push_back(rest.substr(pos, slash - pos));
        pos = slash + 1;
      }
      it.object = json::parse(kv.value, nullptr, false);
      if (it.object.is_discarded()) return Internal("stored " + type + " " + kv.key + " is not JSON");
      out.push_back(std::move(it));
    }
    if (!r->more || r->kvs.empty()) break;
    ro.after = r->kvs.back().key;
  }
  return out;
}

Result<std::optional<std::string>> GetFile(store::Store& st, const std::string& type, const Keys& k) {
  auto kv = st.Get(FileKey(type, k));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) return std::optional<std::string>();
  // Kubeconfigs are stored sealed (common/secrets.h); other files as they are.
  auto plain = secrets::Open((*kv)->value);
  if (!plain.ok()) return plain.status().Annotate(FileKey(type, k));
  return std::optional<std::string>(std::move(*plain));
}

namespace {

// kv-pairs documents: spec.kv is a list of one-entry maps.
void CollectKv(const json& doc, std::vector<std::pair<std::string, std::string>>& out) {
  auto spec = doc.find("spec");
  if (spec == doc.end() || !spec->is_object()) return;
  auto kv = spec->find("kv");
  if (kv == spec->end() || !kv->is_array()) return;
  for (const auto& m : *kv) {
    if (!m.is_object()) continue;
    for (auto& [k, v] : m.items()) {
      bool seen = false;
      for (auto& e : out) seen = seen || e.first == k;
      if (!seen) out.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
}

}  // namespace

Result<std::vector<ClusterInfo>> ProviderClusters(store::Store& st, const std::string& provider) {
  auto clusters = List(st, "cluster", {provider});
  if (!clusters.ok()) return clusters.status();
  auto labels = List(st, "clusterLabel", {provider});
  if (!labels.ok()) return labels.status();
  std::vector<ClusterInfo> out;
  out.reserve(clusters->size());
  for (auto& c : *clusters) out.push_back({provider, c.keys.back(), {}, {}});
  // Both lists are in key order: merge labels onto their clusters.
  size_t i = 0;
  for (auto& l : *labels) {
    const std::string& cname = l.keys[1];
    while (i < out.size() && out[i].name < cname) ++i;
    if (i < out.size() && out[i].name == cname) out[i].labels.push_back(l.keys[2]);
  }
  return out;
}

Result<ClusterInfo> Cluster(store::Store& st, const std::string& provider, const std::string& name) {
  auto c = Get(st, "cluster", {provider, name});
  if (!c.ok()) return c.status();
  if (!c->has_value()) return NotFound("Cluster " + provider + "+" + name + " not found");
  ClusterInfo info{provider, name, {}, {}};
  auto labels = List(st, "clusterLabel", {provider, name});
  if (!labels.ok()) return labels.status();
  for (auto& l : *labels) info.labels.push_back(l.keys.back());
  auto kvs = List(st, "clusterKv", {provider, name});
  if (!kvs.ok()) return kvs.status();
  for (auto& d : *kvs) CollectKv(d.object, info.kv);
  return info;
}

Result<std::string> Kubeconfig(store::Store& st, const std::string& provider, const std::string& name) {
  auto f = GetFile(st, "cluster", {provider, name});
  if (!f.ok()) return f.status();
  if (!f->has_value()) return NotFound("Cluster " + provider + "+" + name + " has no kubeconfig");
  return std::move(**f);
}

std::string Rfc3339(Clock::WallTime t) {
  // Calendar arithmetic only: gmtime_r would have glibc read /etc/localtime
  // the first time, and this runs on every deployment's path.
  using namespace std::chrono;
  const auto now = floor<milliseconds>(t);
  const auto day = floor<days>(now);
  const year_month_day ymd(day);
  const hh_mm_ss<milliseconds> hms(now - day);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<int>(hms.subseconds().count()));
  return buf;
}

std::string NowRfc3339(const Clock& clock) { return Rfc3339(clock.WallNow()); }

std::string NowRfc3339() { return NowRfc3339(RealClock()); }

}  // namespace eco::catalog
