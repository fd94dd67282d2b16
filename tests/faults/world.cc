#include "world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <signal.h>
#include <thread>

#include "appcontext/appcontext.h"
#include "context_builders.h"
#include "test_archives.h"

namespace eco::testing {

using nlohmann::json;
using namespace std::chrono_literals;

std::string Chart() {
  return TgzOf({
      {"web/", ""},
      {"web/Chart.yaml", "apiVersion: v2\nname: web\ntype: application\nversion: 0.1.0\n"},
      {"web/values.yaml", "rev: none\nreplicas: 1\nservice: false\nitems: {}\n"},
      {"web/templates/", ""},
      {"web/templates/configmaps.yaml",
       "{{- range $k, $v := .Values.items }}\n"
       "---\n"
       "apiVersion: v1\n"
       "kind: ConfigMap\n"
       "metadata:\n"
       "  name: {{ $.Release.Name }}-{{ $k }}\n"
       "data:\n"
       "  value: {{ $v | quote }}\n"
       "{{- end }}\n"},
      {"web/templates/deployment.yaml",
       "apiVersion: apps/v1\n"
       "kind: Deployment\n"
       "metadata:\n"
       "  name: {{ .Release.Name }}-web\n"
       "spec:\n"
       "  replicas: {{ .Values.replicas }}\n"
       "  selector:\n"
       "    matchLabels:\n"
       "      app: web\n"
       "  template:\n"
       "    metadata:\n"
       "      labels:\n"
       "        app: web\n"
       "    spec:\n"
       "      containers:\n"
       "        - name: web\n"
       "          image: nginx:stable\n"
       "          env:\n"
       "            - name: REV\n"
       "              value: {{ .Values.rev | quote }}\n"},
      {"web/templates/service.yaml",
       "{{- if .Values.service }}\n"
       "apiVersion: v1\n"
       "kind: Service\n"
       "metadata:\n"
       "  name: {{ .Release.Name }}-web\n"
       "spec:\n"
       "  selector:\n"
       "    app: web\n"
       "  ports:\n"
       "    - port: 80\n"
       "      targetPort: 8080\n"
       "{{- end }}\n"},
  });
}

Revision FirstRevision(int round) {
  Revision r;
  r.rev = "round" + std::to_string(round) + "-v1";
  for (int i = 0; i < 6; ++i) r.items["cm" + std::to_string(i)] = r.rev + "-" + std::to_string(i);
  r.service = true;
  return r;
}

Revision SecondRevision(int round) {
  const Revision first = FirstRevision(round);
  Revision r;
  r.rev = "round" + std::to_string(round) + "-v2";
  r.replicas = 2;
  r.items["cm3"] = first.items.at("cm3");
  for (int i = 4; i < 8; ++i) r.items["cm" + std::to_string(i)] = r.rev + "-" + std::to_string(i);
  return r;
}

std::string Profile(const Revision& r) {
  std::string values = "rev: \"" + r.rev + "\"\nreplicas: " + std::to_string(r.replicas) +
                       "\nservice: " + (r.service ? "true" : "false") + "\nitems:\n";
  for (const auto& [k, v] : r.items) values += "  " + k + ": \"" + v + "\"\n";
  return TgzOf({{"manifest.yaml", "version: v1\ntype:\n  values: \"override_values.yaml\"\n"},
                {"override_values.yaml", values}});
}

std::string KeyOf(const json& o) {
  const json& m = o.value("metadata", json::object());
  return o.value("kind", "") + "/" + m.value("namespace", "") + "/" + m.value("name", "");
}

std::map<std::string, json> Desired(const Revision& r, const std::string& ctx) {
  const json meta = {{"labels", {{kContextLabel, ctx}, {"app.eco.io/app", "web"}}}};
  const std::string prefix = "/" + kNamespace + "/" + kRelease + "-";
  std::map<std::string, json> out;
  for (const auto& [k, v] : r.items) {
    out["ConfigMap" + prefix + k] = {{"metadata", meta}, {"data", {{"value", v}}}};
  }
  json env = json::array({{{"name", "REV"}, {"value", r.rev}}});
  json container = {{"name", "web"}, {"env", env}};
  out["Deployment" + prefix + "web"] = {
      {"metadata", meta},
      {"spec",
       {{"replicas", r.replicas},
        {"template", {{"spec", {{"containers", json::array({container})}}}}}}}};
  if (r.service) {
    out["Service" + prefix + "web"] = {{"metadata", meta},
                                       {"spec", {{"ports", json::array({{{"port", 80}}})}}}};
  }
  return out;
}

namespace {

// `have` holds every field of `want` with the same value (arrays: same
// length, element by element).
bool Contains(const json& have, const json& want) {
  if (want.is_object()) {
    if (!have.is_object()) return false;
    for (const auto& [k, v] : want.items()) {
      if (!have.contains(k) || !Contains(have[k], v)) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Contains(have[i], want[i])) return false;
    }
    return true;
  }
  return have == want;
}

}  // namespace

std::map<std::string, json> Labeled(KubeSim& sim, const std::string& cluster, bool owned) {
  std::map<std::string, json> out;
  json body = json::parse(sim.Objects(cluster), nullptr, false);
  if (!body.is_object() || !body.contains("objects") || !body["objects"].is_array()) {
    out["<objects of " + cluster + " unreadable>"] = json::object();
    return out;
  }
  for (const auto& o : body["objects"]) {
    const json& m = o.value("metadata", json::object());
    const json labels = m.value("labels", json::object());
    if (!labels.is_object() || !labels.contains(kContextLabel)) continue;
    if (!owned && m.contains("ownerReferences") && !m["ownerReferences"].empty()) continue;
    out[KeyOf(o)] = o;
  }
  return out;
}

std::string Diff(const std::map<std::string, json>& want, const std::map<std::string, json>& have) {
  std::string out;
  for (const auto& [k, w] : want) {
    auto it = have.find(k);
    if (it == have.end()) {
      out += "\n  missing " + k;
    } else if (!Contains(it->second, w)) {
      out += "\n  differs " + k + ": want at least " + w.dump() + ", have " +
             it->second.dump().substr(0, 800);
    }
  }
  for (const auto& [k, h] : have) {
    if (!want.count(k)) out += "\n  left over " + k;
  }
  return out;
}

std::vector<std::string> ClusterNames(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("cluster-" + std::to_string(i));
  return out;
}

std::unique_ptr<KubeSim> SlowFleet(int clusters, int latency_ms) {
  KubeSimOptions ko;
  ko.clusters = clusters;
  auto sim = std::make_unique<KubeSim>(ko);
  [&] {
    ASSERT_TRUE(sim->ok()) << sim->error();
    for (const auto& n : ClusterNames(clusters)) {
      ASSERT_EQ(sim->Fault(n, "latency", "ms=" + std::to_string(latency_ms)), 200);
    }
  }();
  return sim;
}

uint64_t FaultSeed(const std::string& what) {
  // Fixed unless asked: a CI run that fails must fail again on a rerun.
  const char* env = std::getenv("ECO_FAULT_SEED");
  const std::string v = env ? env : "";
  const uint64_t seed = v.empty() ? 1 : v == "random" ? std::random_device{}() : std::strtoull(v.c_str(), nullptr, 10);
  std::printf("%s seed: %llu (ECO_FAULT_SEED=%llu replays it)\n", what.c_str(),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

void World(EcoClient& c, KubeSim& sim, const std::vector<std::string>& clusters,
           const Revision& first) {
  auto ok = [](const HttpResponse& r, int code = 201) {
    ASSERT_EQ(r.status, code) << r.Describe();
  };
  ok(c.PostJson("/v2/cluster-providers", Named("prov")));
  for (const auto& n : clusters) {
    ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(),
                       ReadFile(sim.kubeconfig(n)), "kubeconfig"));
    ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels",
                  json{{"clusterLabel", "edge"}}));
  }
  ok(c.PostJson("/v2/projects", Named("p")));
  ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
  for (const auto& n : clusters) {
    ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                  Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
  }
  ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
  ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
  ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), Chart()));
  ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
  ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles",
                     Doc("web-profile", {{"app", "web"}}).dump(), Profile(first)));
  ok(c.PostJson(
      kCA + "/deployment-intent-groups",
      Doc("dig", {{"compositeProfile", "cp"}, {"version", kRelease}, {"logicalCloud", "lc"}})));
  ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
  ok(c.PostJson(
      kDIG + "/generic-placement-intents/gpi/app-intents",
      Doc("web",
          {{"app", "web"},
           {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
  ok(c.PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
  ok(c.PostJson(kDIG + "/approve", json::object()), 202);
}

json Actions(EcoClient& c) {
  json st = c.Get(kDIG + "/status").json();
  if (!st.is_object() || !st.contains("states") || !st["states"].is_object()) return json::array();
  json a = st["states"].value("actions", json::array());
  return a.is_array() ? a : json::array();
}

std::vector<std::string> Instances(EcoClient& c) {
  std::vector<std::string> out;
  for (const auto& a : Actions(c)) {
    std::string id = a.value("instance", "");
    if (!id.empty() && (out.empty() || out.back() != id)) out.push_back(id);
  }
  return out;
}

json DeployedSummary(EcoClient& c, const std::string& instance) {
  std::string q = kDIG + "/status?status=deployed&output=summary";
  if (!instance.empty()) q += "&instance=" + instance;
  json j = c.Get(q).json();
  return j.is_object() ? j : json::object();
}

std::string LogLine(const std::string& ctx, const std::string& event, const std::string& what) {
  return "rsync: context " + ctx + ": " + event + " " + what;
}

bool Has(const std::string& log, const std::string& needle) {
  return log.find(needle) != std::string::npos;
}

size_t Count(const std::string& log, const std::string& needle) {
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::unique_ptr<Process> StartEco(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv{BinaryPath("eco")};
  argv.insert(argv.end(), args.begin(), args.end());
  // eco refuses etcd without an encryption key unless told; these tests
  // share plain-text fixtures between processes.
  bool etcd = std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.rfind("etcd://", 0) == 0; });
  if (etcd) argv.push_back("--allow-plaintext-kubeconfigs");
  return std::make_unique<Process>(argv, log);
}

Role::Role(std::string name, std::string role, std::string store_url, std::string log_dir,
           std::vector<std::string> extra)
    : name_(std::move(name)),
      role_(std::move(role)),
      store_url_(std::move(store_url)),
      log_(log_dir + "/" + name_ + ".log"),
      extra_(std::move(extra)) {}

std::string Role::Start(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string why;
  while (std::chrono::steady_clock::now() < deadline) {
    // A restart keeps its port, so clients and tests find it again; a port
    // taken by someone else in between means a new one.
    if (port_ < 0 || why == "exited") port_ = FreePort();
    std::vector<std::string> args{role_, "--store", store_url_, "--port", std::to_string(port_),
                                  "--bind", "127.0.0.1"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    proc_ = StartEco(args, log_);
    why = "not healthy";
    while (std::chrono::steady_clock::now() < deadline) {
      if (!proc_->running()) {
        why = "exited";
        break;
      }
      if (EcoClient(port_).Get("/healthz").status == 200) return "";
      std::this_thread::sleep_for(50ms);
    }
    if (why == "exited") std::this_thread::sleep_for(200ms);
  }
  if (proc_) proc_->Kill(SIGKILL);
  std::string log = ReadFile(log_);
  if (log.size() > 4000) log = log.substr(log.size() - 4000);
  return name_ + " did not come up (" + why + "); log tail:\n" + log;
}

void Role::Kill9() {
  if (proc_) proc_->Kill(SIGKILL);
}

std::vector<std::string> LockKeys(store::Store& st, const std::string& ctx) {
  store::RangeOptions keys;
  keys.keys_only = true;
  std::vector<std::string> out;
  auto r = st.Range(kLockPrefix + ctx + "/", keys);
  if (!r.ok()) return {"<range failed: " + r.status().ToString() + ">"};
  for (const auto& kv : r->kvs) out.push_back(kv.key);
  return out;
}

// ---------------------------------------------------------------- checker

namespace {

// "Kind/name" of an object key "Kind/namespace/name".
std::string KindName(const std::string& key) {
  auto first = key.find('/');
  auto last = key.rfind('/');
  return key.substr(0, first) + key.substr(last);
}

// The status view `status` (deployed|ready) as cluster -> (Kind/name ->
// per-resource state), with each cluster's connectivity under "".
std::map<std::string, std::map<std::string, std::string>> StatusView(const json& s,
                                                                     const std::string& field) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& app : s.value("apps", json::array())) {
    for (const auto& cl : app.value("clusters", json::array())) {
      auto& m = out[cl.value("cluster", "")];
      m[""] = cl.value("connectivity", "");
      for (const auto& r : cl.value("resources", json::array())) {
        const std::string kind = r.value("GVK", json::object()).value("Kind", "");
        m[kind + "/" + r.value("name", "")] = r.value(field, "");
      }
    }
  }
  return out;
}

}  // namespace

std::string CheckClustersAndStatus(EcoClient& c, KubeSim& sim, const Expectation& want) {
  std::string out;
  const bool up = want.state == "Instantiated";
  const json summary = DeployedSummary(c);
  if (summary.value("deployedStatus", "") != want.state) {
    return "DIG is " + summary.dump() + ", want " + want.state;
  }
  std::set<std::string> kinds_names;
  for (const auto& [k, v] : want.objects) kinds_names.insert(KindName(k));

  for (const auto& n : want.clusters) {
    // After a terminate, also what the cluster's controllers made.
    std::string d = Diff(want.objects, Labeled(sim, n, !up));
    if (!d.empty()) out += "\ncluster " + n + ":" + d;
  }

  const HttpResponse deployed = c.Get(kDIG + "/status?status=deployed");
  if (deployed.status != 200) return out + "\ndeployed status: " + deployed.Describe();
  auto view = StatusView(deployed.json(), "deployedStatus");
  for (const auto& n : want.clusters) {
    auto it = view.find(n);
    if (it == view.end()) {
      out += "\nstatus: cluster " + n + " not reported";
      continue;
    }
    auto& res = it->second;
    if (res[""] != "Available") out += "\nstatus: cluster " + n + " connectivity " + res[""];
    std::set<std::string> listed;
    for (const auto& [k, st] : res) {
      if (k.empty()) continue;
      listed.insert(k);
      const std::string w = up ? "Applied" : "Deleted";
      if (st != w) out += "\nstatus: " + n + " " + k + " is " + st + ", want " + w;
    }
    // Terminated: the status still lists what the last revision deployed.
    if (up && listed != kinds_names) {
      out += "\nstatus: " + n + " lists " + ::testing::PrintToString(listed) + ", cluster should hold " +
             ::testing::PrintToString(kinds_names);
    }
  }
  for (const auto& [n, res] : view) {
    if (std::find(want.clusters.begin(), want.clusters.end(), n) == want.clusters.end()) {
      out += "\nstatus: unknown cluster " + n;
    }
  }
  if (!up || !out.empty()) return out;

  const HttpResponse ready = c.Get(kDIG + "/status?status=ready");
  if (ready.status != 200) return out + "\nready status: " + ready.Describe();
  const json r = ready.json();
  if (r.value("readyStatus", "") != "Ready") {
    out += "\nready view: " + r.value("readyStatus", "") + " " + r.value("readyCounts", json{}).dump();
  }
  return out;
}

std::string InFlight(store::Store& st, const std::vector<std::string>& contexts,
                     const std::map<std::string, std::string>& superseded) {
  std::string out;
  store::RangeOptions keys;
  keys.keys_only = true;
  auto active = st.Range("/eco/active/", keys);
  if (!active.ok()) return "range /eco/active/: " + active.status().ToString();
  for (const auto& kv : active->kvs) out += "\n  still active: " + kv.key;
  auto locks = st.Range(kLockPrefix, keys);
  if (!locks.ok()) return "range locks: " + locks.status().ToString();
  for (const auto& kv : locks->kvs) out += "\n  still locked: " + kv.key;
  for (const auto& ctx : contexts) {
    auto events = st.Range(appcontext::EventPrefix(ctx));
    if (!events.ok()) return "range events: " + events.status().ToString();
    for (const auto& kv : events->kvs) {
      json e = json::parse(kv.value, nullptr, false);
      const std::string status = e.is_object() ? e.value("status", "") : "";
      if (status == "done") continue;
      const std::string message = e.is_object() ? e.value("message", "") : "";
      auto by = superseded.find(ctx);
      if (by != superseded.end() && (status == "skip" || status == "error") &&
          message == "superseded by the update to AppContext " + by->second) {
        continue;
      }
      out += "\n  event not done: " + kv.key + " " + kv.value;
    }
  }
  return out;
}

std::string Converge(const std::function<std::string()>& check, std::chrono::milliseconds limit) {
  std::string last;
  WaitUntil(
      [&] {
        last = check();
        return last.empty();
      },
      limit);
  return last;
}

}  // namespace eco::testing
