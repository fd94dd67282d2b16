#include "appcontext/rollout.h"

#include <algorithm>
#include <set>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"

namespace eco::appcontext {

using nlohmann::json;

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Invalid("Invalid Input: spec.rollout." + field + ": " + why);
}

bool Digits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// N, "N" or "N%"; at least `min`.
Result<RolloutLimit> ParseLimit(const json& v, const std::string& field, int64_t min) {
  RolloutLimit l;
  if (v.is_number_integer()) {
    l.value = v.get<int64_t>();
  } else if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      l.percent = true;
      s.pop_back();
    }
    if (!Digits(s)) return Bad(field, "must be a whole number or a percentage such as \"10%\", got " + v.dump());
    l.value = std::stoll(s);
  } else {
    return Bad(field, "must be a whole number or a percentage such as \"10%\", got " + v.dump());
  }
  if (l.value < min) return Bad(field, "must be at least " + std::to_string(min) + ", got " + v.dump());
  if (l.percent && l.value > 100) return Bad(field, "a percentage is at most 100%, got " + v.dump());
  return l;
}

Result<int64_t> ParseSeconds(const json& v, const std::string& field, int64_t min) {
  if (!v.is_number_integer() || v.get<int64_t>() < min) {
    return Bad(field, "must be a whole number of seconds, at least " + std::to_string(min) + ", got " + v.dump());
  }
  return v.get<int64_t>();
}

Result<std::string> ParseChoice(const json& v, const std::string& field, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v.is_string() && v.get<std::string>() == a) return std::string(a);
    list += std::string(list.empty() ? "" : ", ") + "\"" + a + "\"";
  }
  return Bad(field, "must be one of " + list + ", got " + v.dump());
}

bool ValidClusterKey(const std::string& k) {
  const auto plus = k.find('+');
  return plus != std::string::npos && plus > 0 && plus + 1 < k.size() && k.find('+', plus + 1) == std::string::npos;
}

Result<RolloutWave> ParseWave(const json& w, size_t i, std::set<std::string>& names, std::set<std::string>& named) {
  const std::string field = "waves[" + std::to_string(i) + "]";
  if (!w.is_object()) return Bad(field, "must be an object");
  RolloutWave wave;
  int selectors = 0;
  for (const auto& [k, v] : w.items()) {
    if (k == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) return Bad(field + ".name", "must be a non-empty string");
      wave.name = v.get<std::string>();
    } else if (k == "clusterLabel") {
      if (!v.is_string() || v.get<std::string>().empty())
        return Bad(field + ".clusterLabel", "must be a non-empty string");
      wave.cluster_label = v.get<std::string>();
      ++selectors;
    } else if (k == "clusters") {
      if (!v.is_array() || v.empty())
        return Bad(field + ".clusters", "must be a non-empty list of \"provider+cluster\"");
      for (const auto& c : v) {
        if (!c.is_string() || !ValidClusterKey(c.get<std::string>()))
          return Bad(field + ".clusters", "each entry is \"provider+cluster\", got " + c.dump());
        if (!named.insert(c.get<std::string>()).second)
          return Bad(field + ".clusters", "cluster " + c.get<std::string>() + " is named twice");
        wave.clusters.push_back(c.get<std::string>());
      }
      ++selectors;
    } else if (k == "percent") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100)
        return Bad(field + ".percent", "must be a whole number from 1 to 100, got " + v.dump());
      wave.percent = static_cast<int>(v.get<int64_t>());
      ++selectors;
    } else {
      return Bad(field + "." + k, "unknown field (a wave has name, clusterLabel, clusters or percent)");
    }
  }
  if (wave.name.empty()) return Bad(field + ".name", "is required");
  if (!names.insert(wave.name).second) return Bad(field + ".name", "wave " + wave.name + " is named twice");
  if (wave.name == "rest") return Bad(field + ".name", "\"rest\" names the wave of the clusters no wave selects");
  if (selectors != 1) return Bad(field, "a wave needs exactly one of clusterLabel, clusters and percent");
  return wave;
}

}  // namespace

int64_t RolloutLimit::Of(int64_t n) const {
  if (!percent) return value;
  const int64_t v = (n * value + 99) / 100;
  return value > 0 ? std::max<int64_t>(v, 1) : 0;
}

Result<std::optional<RolloutStrategy>> ParseRollout(const json& spec) {
  if (!spec.is_object()) return std::optional<RolloutStrategy>();
  auto r = spec.find("rollout");
  if (r == spec.end() || r->is_null()) return std::optional<RolloutStrategy>();
  if (!r->is_object()) return Invalid("Invalid Input: spec.rollout must be an object");
  RolloutStrategy s;
  std::set<std::string> names, named;
  for (const auto& [k, v] : r->items()) {
    if (k == "waves") {
      if (!v.is_array() || v.empty()) return Bad("waves", "must be a non-empty list");
      for (size_t i = 0; i < v.size(); ++i) {
        ECO_ASSIGN_OR_RETURN(RolloutWave w, ParseWave(v[i], i, names, named));
        s.waves.push_back(std::move(w));
      }
    } else if (k == "maxConcurrency") {
      ECO_ASSIGN_OR_RETURN(RolloutLimit l, ParseLimit(v, k, 1));
      s.max_concurrency = l;
    } else if (k == "maxFailures") {
      ECO_ASSIGN_OR_RETURN(s.max_failures, ParseLimit(v, k, 0));
    } else if (k == "soakSeconds") {
      ECO_ASSIGN_OR_RETURN(s.soak_seconds, ParseSeconds(v, k, 0));
    } else if (k == "readyTimeoutSeconds") {
      ECO_ASSIGN_OR_RETURN(s.ready_timeout_seconds, ParseSeconds(v, k, 1));
    } else if (k == "offline") {
      ECO_ASSIGN_OR_RETURN(s.offline, ParseChoice(v, k, {"wait", "skip", "fail"}));
    } else if (k == "onFailure") {
      ECO_ASSIGN_OR_RETURN(s.on_failure, ParseChoice(v, k, {"pause", "rollback"}));
    } else if (k == "approval") {
      ECO_ASSIGN_OR_RETURN(s.approval, ParseChoice(v, k, {"none", "between-waves"}));
    } else {
      return Bad(k, "unknown field (a rollout has waves, maxConcurrency, maxFailures, soakSeconds, "
                    "readyTimeoutSeconds, offline, onFailure and approval)");
    }
  }
  if (s.waves.empty()) return Bad("waves", "is required: at least one wave");
  return std::optional<RolloutStrategy>(std::move(s));
}

json ToJson(const RolloutStrategy& s) {
  auto limit = [](const RolloutLimit& l) -> json {
    if (l.percent) return std::to_string(l.value) + "%";
    return l.value;
  };
  json waves = json::array();
  for (const auto& w : s.waves) {
    json e = {{"name", w.name}};
    if (!w.cluster_label.empty()) e["clusterLabel"] = w.cluster_label;
    if (!w.clusters.empty()) e["clusters"] = w.clusters;
    if (w.percent > 0) e["percent"] = w.percent;
    waves.push_back(std::move(e));
  }
  json j = {{"waves", std::move(waves)},
            {"maxFailures", limit(s.max_failures)},
            {"soakSeconds", s.soak_seconds},
            {"readyTimeoutSeconds", s.ready_timeout_seconds},
            {"offline", s.offline},
            {"onFailure", s.on_failure},
            {"approval", s.approval}};
  if (s.max_concurrency) j["maxConcurrency"] = limit(*s.max_concurrency);
  return j;
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      // Without leading zeros, a longer run is a larger number.
      size_t zi = i, zj = j;
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      if (int c = a.compare(zi, ei - zi, b, zj, ej - zj); c != 0) return c < 0;
      if (ei - i != ej - j) return ei - i < ej - j;  // "e-02" after "e-2": stable and total
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<PlannedWave> SplitIntoWaves(const RolloutStrategy& s, std::vector<RolloutCluster> clusters) {
  std::sort(clusters.begin(), clusters.end(),
            [](const RolloutCluster& x, const RolloutCluster& y) { return NaturalLess(x.key, y.key); });
  const int64_t fleet = static_cast<int64_t>(clusters.size());
  std::vector<bool> taken(clusters.size(), false);
  std::vector<PlannedWave> out;
  for (const auto& w : s.waves) {
    PlannedWave p{w.name, {}};
    int64_t want = w.percent > 0 ? RolloutLimit{w.percent, true}.Of(fleet) : 0;
    for (size_t i = 0; i < clusters.size(); ++i) {
      if (taken[i]) continue;
      const RolloutCluster& c = clusters[i];
      bool in = false;
      if (!w.cluster_label.empty()) {
        in = std::find(c.labels.begin(), c.labels.end(), w.cluster_label) != c.labels.end();
      } else if (!w.clusters.empty()) {
        in = std::find(w.clusters.begin(), w.clusters.end(), c.key) != w.clusters.end();
      } else {
        in = want > 0;
        if (in) --want;
      }
      if (!in) continue;
      taken[i] = true;
      p.clusters.push_back(c.key);
    }
    out.push_back(std::move(p));
  }
  PlannedWave rest{"rest", {}};
  for (size_t i = 0; i < clusters.size(); ++i) {
    if (!taken[i]) rest.clusters.push_back(clusters[i].key);
  }
  if (!rest.clusters.empty()) out.push_back(std::move(rest));
  return out;
}

std::string RolloutKey(const std::string& ctx) { return ContextPrefix(ctx) + "rollout"; }
std::string RolloutClusterPrefix(const std::string& ctx) { return ContextPrefix(ctx) + "rollout-clusters/"; }
std::string RolloutClusterKey(const std::string& ctx, const std::string& k) { return RolloutClusterPrefix(ctx) + k; }
std::string RolloutControlKey(const std::string& ctx) { return ContextPrefix(ctx) + "rollout-control"; }

namespace {

int64_t IntField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

json ToJson(const RolloutProgress& p) {
  json waves = json::array();
  for (const auto& w : p.waves) {
    json e = {{"name", w.name}, {"clusters", w.clusters}};
    if (!w.started_at.empty()) e["startedAt"] = w.started_at;
    if (!w.completed_at.empty()) e["completedAt"] = w.completed_at;
    waves.push_back(std::move(e));
  }
  json j = {{"event", p.event},  {"revision", p.revision}, {"state", p.state},
            {"wave", p.wave},    {"waves", std::move(waves)}, {"acknowledged", p.acknowledged},
            {"resumesSeen", p.resumes_seen}, {"startedAt", p.started_at}};
  if (!p.reason.empty()) j["reason"] = p.reason;
  return j;
}

Result<RolloutProgress> RolloutProgressFromJson(const json& j) {
  if (!j.is_object()) return Internal("rollout progress is not a JSON object");
  RolloutProgress p;
  p.event = IntField(j, "event");
  p.revision = IntField(j, "revision");
  p.state = catalog::StringField(j, "state");
  p.wave = static_cast<size_t>(std::max<int64_t>(0, IntField(j, "wave")));
  p.reason = catalog::StringField(j, "reason");
  p.acknowledged = IntField(j, "acknowledged");
  p.resumes_seen = IntField(j, "resumesSeen");
  p.started_at = catalog::StringField(j, "startedAt");
  if (auto w = j.find("waves"); w != j.end() && w->is_array()) {
    for (const auto& e : *w) {
      if (!e.is_object()) return Internal("rollout progress: a wave is not an object");
      RolloutWaveProgress wp;
      wp.name = catalog::StringField(e, "name");
      wp.started_at = catalog::StringField(e, "startedAt");
      wp.completed_at = catalog::StringField(e, "completedAt");
      if (auto c = e.find("clusters"); c != e.end() && c->is_array()) {
        for (const auto& k : *c) {
          if (k.is_string()) wp.clusters.push_back(k.get<std::string>());
        }
      }
      p.waves.push_back(std::move(wp));
    }
  }
  if (p.state.empty() || p.event <= 0) return Internal("rollout progress names no state or event");
  return p;
}

json ToJson(const RolloutClusterEnd& e) {
  json j = {{"state", e.state}, {"time", e.time}};
  if (!e.reason.empty()) j["reason"] = e.reason;
  return j;
}

RolloutClusterEnd RolloutClusterEndFromJson(const json& j) {
  if (!j.is_object()) return {};
  return {catalog::StringField(j, "state"), catalog::StringField(j, "time"), catalog::StringField(j, "reason")};
}

json ToJson(const RolloutControl& c) {
  return {{"event", c.event}, {"paused", c.paused}, {"resumes", c.resumes}, {"approved", c.approved}, {"abort", c.abort}};
}

RolloutControl RolloutControlFromJson(const json& j) {
  RolloutControl c;
  if (!j.is_object()) return c;
  c.event = IntField(j, "event");
  c.resumes = IntField(j, "resumes");
  c.approved = IntField(j, "approved");
  auto flag = [&j](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  c.paused = flag("paused");
  c.abort = flag("abort");
  return c;
}

}  // namespace eco::appcontext
