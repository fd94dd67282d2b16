// kube-sim's simulated controllers: Deployments → ReplicaSets → Pods,
// StatefulSets, DaemonSets, Jobs, a capacity-aware scheduler and kubelet,
// LoadBalancer Services, PVCs, CRDs and namespace deletion. Each reconcile
// runs under the cluster's lock and writes only what changed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include "kubesim/sim_internal.h"

namespace eco::kubesim {

namespace {

const char* const kPods = "/pods";
const char* const kNodes = "/nodes";
const char* const kNamespaces = "/namespaces";
const char* const kDeployments = "apps/deployments";
const char* const kReplicaSets = "apps/replicasets";
const char* const kStatefulSets = "apps/statefulsets";
const char* const kDaemonSets = "apps/daemonsets";
const char* const kJobs = "batch/jobs";
const char* const kServices = "/services";
const char* const kPvcs = "/persistentvolumeclaims";
const char* const kCrds = "apiextensions.k8s.io/customresourcedefinitions";

std::string S(const Json& j) { return j.is_string() ? j.get<std::string>() : ""; }
int I(const Json& j, int dflt) { return j.is_number_integer() ? j.get<int>() : dflt; }

bool Deleting(const Json& o) { return Field(o, {"metadata", "deletionTimestamp"}).is_string(); }

// Drawn from the cluster's seeded sequence (c.mu held).
std::string RandomSuffix(Cluster& c) {
  static const char kAlnum[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += kAlnum[c.rng() % (sizeof kAlnum - 1)];
  return s;
}

std::string TemplateHash(const Json& tmpl) {
  // Stable across runs: FNV-1a of the serialised template, printed in decimal.
  uint64_t h = 1469598103934665603ULL;
  for (char c : tmpl.dump()) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(h % 10000000000ULL));
  return buf;
}

Json OwnerRef(const Json& owner) {
  return {{"apiVersion", owner["apiVersion"]}, {"kind", owner["kind"]},  {"name", owner["metadata"]["name"]},
          {"uid", owner["metadata"]["uid"]},   {"controller", true},    {"blockOwnerDeletion", true}};
}

bool OwnedBy(const Json& o, const std::string& uid) {
  const Json& refs = Field(o, {"metadata", "ownerReferences"});
  if (!refs.is_array()) return false;
  for (const auto& r : refs) {
    if (r.is_object() && r.value("uid", "") == uid) return true;
  }
  return false;
}

// Fills the fields the API server sets on create.
Json& Stamp(Json& o, Cluster& c) {
  Json& m = o["metadata"];
  m["uid"] = NewUid(c);
  m["creationTimestamp"] = NowRfc3339();
  m["generation"] = 1;
  return o;
}

// Sets a condition, keeping lastTransitionTime when the status did not change.
void SetCondition(Json& status, const std::string& type, const std::string& value, const std::string& reason,
                  const std::string& message, bool with_update_time = false) {
  Json& conds = status["conditions"];
  if (!conds.is_array()) conds = Json::array();
  for (auto& c : conds) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = NowRfc3339();
    if (with_update_time && (c.value("reason", "") != reason || c.value("status", "") != value)) {
      c["lastUpdateTime"] = NowRfc3339();
    }
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    return;
  }
  Json c = {{"type", type}, {"status", value}, {"lastTransitionTime", NowRfc3339()}, {"reason", reason}, {"message", message}};
  if (with_update_time) c["lastUpdateTime"] = NowRfc3339();
  conds.push_back(std::move(c));
}

// Pods of a namespace owned by `uid` (not being deleted).
std::vector<EntryPtr> OwnedPods(ClusterOps& ops, const std::string& ns, const std::string& uid) {
  std::vector<EntryPtr> out;
  const auto* pods = ops.Collection(kPods);
  if (!pods) return out;
  std::string prefix = ns + "/";
  for (auto it = pods->lower_bound(prefix); it != pods->end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (OwnedBy(it->second->view, uid) && !Deleting(it->second->view)) out.push_back(it->second);
  }
  return out;
}

bool PodReady(const Json& pod) {
  const Json& conds = Field(pod, {"status", "conditions"});
  if (!conds.is_array()) return false;
  for (const auto& c : conds) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

std::string Phase(const Json& pod) { return S(Field(pod, {"status", "phase"})); }

Json NewPod(Cluster& c, const Json& owner, const Json& tmpl, const std::string& name, const std::string& ns,
            const std::map<std::string, std::string>& extra_labels) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  Json meta = tmpl.value("metadata", Json::object());
  meta["name"] = name;
  meta["namespace"] = ns;
  for (const auto& [k, v] : extra_labels) meta["labels"][k] = v;
  meta["ownerReferences"] = Json::array({OwnerRef(owner)});
  pod["metadata"] = std::move(meta);
  pod["spec"] = tmpl.value("spec", Json::object());
  pod["status"] = {{"phase", "Pending"}, {"qosClass", "BestEffort"}};
  return Stamp(pod, c);
}

// ---------------------------------------------------------------------------
// Scheduling

// Resource requests of a pod in milli-units (containers summed; init
// containers count with their maximum, as the scheduler does).
std::map<std::string, long double> PodRequests(const Json& pod) {
  std::map<std::string, long double> sum, init_max;
  auto add = [](std::map<std::string, long double>& into, const Json& c, bool max) {
    const Json& res = Field(c, {"resources"});
    const Json& req = res.is_object() && res.contains("requests") ? res["requests"] : Field(c, {"resources", "limits"});
    if (!req.is_object()) return;
    for (auto it = req.begin(); it != req.end(); ++it) {
      long double v = 0;
      std::string text = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
      if (!ParseQuantityMilli(text, &v)) continue;
      if (max) into[it.key()] = std::max(into[it.key()], v);
      else into[it.key()] += v;
    }
  };
  const Json& cs = Field(pod, {"spec", "containers"});
  if (cs.is_array()) {
    for (const auto& c : cs) add(sum, c, false);
  }
  const Json& ics = Field(pod, {"spec", "initContainers"});
  if (ics.is_array()) {
    for (const auto& c : ics) add(init_max, c, true);
  }
  for (const auto& [k, v] : init_max) sum[k] = std::max(sum[k], v);
  return sum;
}

bool MatchExpression(const Json& labels, const Json& expr, const std::string& node_name, bool field) {
  std::string key = S(expr.value("key", Json()));
  std::string op = S(expr.value("operator", Json()));
  const Json& values = expr.value("values", Json::array());
  bool has = false;
  std::string val;
  if (field) {
    has = key == "metadata.name";
    val = node_name;
  } else if (labels.is_object() && labels.contains(key)) {
    has = true;
    val = S(labels[key]);
  }
  auto in = [&] {
    for (const auto& v : values) {
      if (S(v) == val) return true;
    }
    return false;
  };
  if (op == "In") return has && in();
  if (op == "NotIn") return !has || !in();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (op == "Gt" || op == "Lt") {
    if (!has || values.empty()) return false;
    long long a = std::strtoll(val.c_str(), nullptr, 10), b = std::strtoll(S(values[0]).c_str(), nullptr, 10);
    return op == "Gt" ? a > b : a < b;
  }
  return false;
}

// nodeSelector and required node affinity.
bool NodeMatches(const Json& pod_spec, const Json& node) {
  const Json& labels = Field(node, {"metadata", "labels"});
  std::string node_name = S(Field(node, {"metadata", "name"}));
  const Json& sel = Field(pod_spec, {"nodeSelector"});
  if (sel.is_object()) {
    for (auto it = sel.begin(); it != sel.end(); ++it) {
      if (!labels.is_object() || !labels.contains(it.key()) || labels[it.key()] != it.value()) return false;
    }
  }
  const Json& terms =
      Field(pod_spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (terms.is_array() && !terms.empty()) {
    bool any = false;
    for (const auto& term : terms) {
      bool all = true;
      for (const char* part : {"matchExpressions", "matchFields"}) {
        const Json& exprs = term.value(part, Json::array());
        for (const auto& e : exprs) {
          all = all && MatchExpression(labels, e, node_name, std::string(part) == "matchFields");
        }
      }
      any = any || all;
    }
    if (!any) return false;
  }
  // Taints with NoSchedule/NoExecute need a matching toleration.
  const Json& taints = Field(node, {"spec", "taints"});
  if (taints.is_array()) {
    const Json& tols = Field(pod_spec, {"tolerations"});
    for (const auto& t : taints) {
      std::string effect = S(t.value("effect", Json()));
      if (effect != "NoSchedule" && effect != "NoExecute") continue;
      bool tolerated = false;
      if (tols.is_array()) {
        for (const auto& tol : tols) {
          std::string op = S(tol.value("operator", Json("Equal")));
          std::string key = S(tol.value("key", Json()));
          bool key_ok = key.empty() ? op == "Exists" : key == S(t.value("key", Json()));
          bool val_ok = op == "Exists" || S(tol.value("value", Json())) == S(t.value("value", Json()));
          bool eff_ok = S(tol.value("effect", Json())).empty() || S(tol.value("effect", Json())) == effect;
          tolerated = tolerated || (key_ok && val_ok && eff_ok);
        }
      }
      if (!tolerated) return false;
    }
  }
  return true;
}

// Picks a node for a pod: fits selector/affinity/taints and free capacity;
// the node with the most free CPU wins. On failure `why` says why, as the
// scheduler's event does.
std::string Schedule(ClusterOps& ops, const Json& pod, std::string* why) {
  const auto* nodes = ops.Collection(kNodes);
  if (!nodes || nodes->empty()) {
    *why = "0/0 nodes are available: no nodes in the cluster.";
    return "";
  }
  // Usage per node from the pods bound to it.
  std::map<std::string, std::map<std::string, long double>> used;
  std::map<std::string, int> pod_count;
  if (const auto* pods = ops.Collection(kPods)) {
    for (const auto& [_, e] : *pods) {
      std::string n = S(Field(e->view, {"spec", "nodeName"}));
      std::string ph = Phase(e->view);
      if (n.empty() || ph == "Succeeded" || ph == "Failed") continue;
      for (const auto& [r, v] : PodRequests(e->view)) used[n][r] += v;
      pod_count[n]++;
    }
  }
  auto want = PodRequests(pod);
  const Json& spec = pod["spec"];
  std::string best;
  long double best_free = -1;
  int mismatched = 0;
  std::map<std::string, int> insufficient;
  for (const auto& [_, e] : *nodes) {
    const Json& node = e->view;
    std::string name = S(Field(node, {"metadata", "name"}));
    if (!NodeMatches(spec, node)) {
      ++mismatched;
      continue;
    }
    const Json& alloc = Field(node, {"status", "allocatable"});
    bool fits = true;
    for (const auto& [r, v] : want) {
      if (v <= 0) continue;
      long double have = 0;
      if (!alloc.is_object() || !alloc.contains(r) || !ParseQuantityMilli(S(alloc[r]), &have) ||
          have - used[name][r] < v) {
        insufficient[r]++;
        fits = false;
      }
    }
    long double max_pods = 110000;
    if (alloc.is_object() && alloc.contains("pods")) ParseQuantityMilli(S(alloc["pods"]), &max_pods);
    if ((pod_count[name] + 1) * 1000.0L > max_pods) {
      insufficient["pods"]++;
      fits = false;
    }
    if (!fits) continue;
    long double cpu = 0;
    if (alloc.is_object() && alloc.contains("cpu")) ParseQuantityMilli(S(alloc["cpu"]), &cpu);
    long double free = cpu - used[name]["cpu"];
    if (free > best_free) {
      best_free = free;
      best = name;
    }
  }
  if (best.empty()) {
    std::string msg = "0/" + std::to_string(nodes->size()) + " nodes are available:";
    bool first = true;
    for (const auto& [r, n] : insufficient) {
      msg += (first ? " " : ", ") + std::to_string(n) + " Insufficient " + r;
      first = false;
    }
    if (mismatched > 0) {
      msg += (first ? " " : ", ") + std::to_string(mismatched) + " node(s) didn't match Pod's node affinity/selector";
    }
    *why = msg + ".";
  }
  return best;
}

void EnqueuePendingPods(ClusterOps& ops) {
  const auto* pods = ops.Collection(kPods);
  if (!pods) return;
  for (const auto& [key, e] : *pods) {
    if (S(Field(e->view, {"spec", "nodeName"})).empty() && !Deleting(e->view)) ops.Enqueue(kPods, key);
  }
}

// The owner (controller reference) of an object, as a storage key + object key.
bool ControllerOf(const Json& o, std::string* storage_key, std::string* key) {
  const Json& refs = Field(o, {"metadata", "ownerReferences"});
  if (!refs.is_array()) return false;
  std::string ns = S(Field(o, {"metadata", "namespace"}));
  for (const auto& r : refs) {
    if (!r.is_object() || !r.value("controller", false)) continue;
    std::string kind = S(r.value("kind", Json()));
    if (kind == "ReplicaSet") *storage_key = kReplicaSets;
    else if (kind == "Deployment") *storage_key = kDeployments;
    else if (kind == "StatefulSet") *storage_key = kStatefulSets;
    else if (kind == "DaemonSet") *storage_key = kDaemonSets;
    else if (kind == "Job") *storage_key = kJobs;
    else return false;
    *key = ObjectKey(ns, S(r.value("name", Json())));
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Reconcilers

void ReconcilePod(ClusterOps& ops, const std::string& key, std::chrono::milliseconds delay) {
  EntryPtr e = ops.Find(kPods, key);
  if (!e || Deleting(e->view)) return;
  Json pod = e->Object();
  Json& status = pod["status"];
  if (!status.is_object()) status = Json::object();
  auto& bound_at = ops.cluster().pod_bound_at;
  std::string node = S(Field(pod, {"spec", "nodeName"}));
  if (node.empty()) {
    std::string why;
    node = Schedule(ops, pod, &why);
    if (node.empty()) {
      status["phase"] = "Pending";
      SetCondition(status, "PodScheduled", "False", "Unschedulable", why);
      ops.Put(kPods, std::move(pod));
      return;
    }
    pod["spec"]["nodeName"] = node;
    status["phase"] = "Pending";
    SetCondition(status, "PodScheduled", "True", "", "");
    bound_at[key] = Clock::now();
    ops.Put(kPods, std::move(pod));
    ops.Enqueue(kPods, key, delay);
    return;
  }
  std::string phase = S(status.value("phase", Json("Pending")));
  if (phase != "Pending") return;
  auto it = bound_at.find(key);
  if (it == bound_at.end()) it = bound_at.emplace(key, Clock::now()).first;
  Clock::time_point due = it->second + delay;
  if (Clock::now() < due) {
    ops.Enqueue(kPods, key, due - Clock::now());
    return;
  }
  // The kubelet: containers start; a Job's pod runs to completion.
  std::string owner_key, owner_storage;
  bool job = ControllerOf(pod, &owner_storage, &owner_key) && owner_storage == kJobs;
  std::string now = NowRfc3339();
  Json statuses = Json::array();
  const Json& cs = Field(pod, {"spec", "containers"});
  if (cs.is_array()) {
    for (const auto& c : cs) {
      Json st = {{"name", c.value("name", "")},   {"image", c.value("image", "")},
                 {"imageID", ""},                  {"ready", !job},
                 {"started", !job},                {"restartCount", 0},
                 {"containerID", "sim://" + NewUid(ops.cluster())}};
      if (job) st["state"] = {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", now}, {"finishedAt", now}}}};
      else st["state"] = {{"running", {{"startedAt", now}}}};
      statuses.push_back(std::move(st));
    }
  }
  status["containerStatuses"] = std::move(statuses);
  status["phase"] = job ? "Succeeded" : "Running";
  status["startTime"] = now;
  uint64_t n = std::hash<std::string>{}(key);
  status["podIP"] = "10.244." + std::to_string((n >> 8) % 250) + "." + std::to_string(n % 250 + 2);
  status["hostIP"] = "10.0.0." + std::to_string(std::hash<std::string>{}(node) % 250 + 2);
  SetCondition(status, "Initialized", "True", "", "");
  SetCondition(status, "ContainersReady", job ? "False" : "True", job ? "PodCompleted" : "", "");
  SetCondition(status, "Ready", job ? "False" : "True", job ? "PodCompleted" : "", "");
  ops.Put(kPods, std::move(pod));
}

void ReconcileReplicaSet(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kReplicaSets, key);
  if (!e || Deleting(e->view)) return;
  Json rs = e->Object();
  std::string ns = S(rs["metadata"]["namespace"]), uid = S(rs["metadata"]["uid"]), name = S(rs["metadata"]["name"]);
  int want = I(Field(rs, {"spec", "replicas"}), 1);
  std::vector<EntryPtr> pods = OwnedPods(ops, ns, uid);
  if (static_cast<int>(pods.size()) < want) {
    const Json& tmpl = Field(rs, {"spec", "template"});
    for (int i = static_cast<int>(pods.size()); i < want; ++i) {
      std::string pod_name = name + "-" + RandomSuffix(ops.cluster());
      while (ops.Find(kPods, ObjectKey(ns, pod_name))) pod_name = name + "-" + RandomSuffix(ops.cluster());
      ops.Put(kPods, NewPod(ops.cluster(), rs, tmpl.is_object() ? tmpl : Json::object(), pod_name, ns, {}));
    }
  } else if (static_cast<int>(pods.size()) > want) {
    // Unscheduled and not-ready pods go first.
    std::stable_sort(pods.begin(), pods.end(), [](const EntryPtr& a, const EntryPtr& b) {
      return PodReady(a->view) < PodReady(b->view);
    });
    std::vector<std::string> doomed;
    for (size_t i = 0; i < pods.size() - static_cast<size_t>(want); ++i) {
      doomed.push_back(ObjectKey(ns, S(pods[i]->view["metadata"]["name"])));
    }
    for (const auto& k : doomed) ops.Delete(kPods, k, "Background");
  }
  pods = OwnedPods(ops, ns, uid);
  int ready = 0;
  for (const EntryPtr& p : pods) ready += PodReady(p->view) ? 1 : 0;
  Json status = {{"replicas", static_cast<int>(pods.size())},
                 {"fullyLabeledReplicas", static_cast<int>(pods.size())},
                 {"readyReplicas", ready},
                 {"availableReplicas", ready},
                 {"observedGeneration", rs["metadata"].value("generation", 1)}};
  rs["status"] = std::move(status);
  ops.Put(kReplicaSets, std::move(rs));
}

void ReconcileDeployment(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kDeployments, key);
  if (!e || Deleting(e->view)) return;
  Json d = e->Object();
  std::string ns = S(d["metadata"]["namespace"]), uid = S(d["metadata"]["uid"]), name = S(d["metadata"]["name"]);
  int want = I(Field(d, {"spec", "replicas"}), 1);
  Json tmpl = Field(d, {"spec", "template"});
  if (!tmpl.is_object()) tmpl = Json::object();
  std::string hash = TemplateHash(tmpl);
  std::string rs_name = name + "-" + hash;
  tmpl["metadata"]["labels"]["pod-template-hash"] = hash;

  EntryPtr current = nullptr;
  std::vector<EntryPtr> old;
  if (const auto* all = ops.Collection(kReplicaSets)) {
    std::string prefix = ns + "/";
    for (auto it = all->lower_bound(prefix); it != all->end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (!OwnedBy(it->second->view, uid)) continue;
      if (S(it->second->view["metadata"]["name"]) == rs_name) current = it->second;
      else old.push_back(it->second);
    }
  }
  bool paused = Field(d, {"spec", "paused"}).is_boolean() && Field(d, {"spec", "paused"}).get<bool>();
  if (!current && !paused) {
    Json selector = Field(d, {"spec", "selector"});
    if (!selector.is_object()) selector = Json::object();
    selector["matchLabels"]["pod-template-hash"] = hash;
    Json rs = {{"apiVersion", "apps/v1"},
               {"kind", "ReplicaSet"},
               {"metadata",
                {{"name", rs_name},
                 {"namespace", ns},
                 {"labels", tmpl["metadata"]["labels"]},
                 {"annotations", {{"deployment.kubernetes.io/revision", std::to_string(old.size() + 1)}}},
                 {"ownerReferences", Json::array({OwnerRef(d)})}}},
               {"spec", {{"replicas", want}, {"selector", selector}, {"template", tmpl}}}};
    current = ops.Put(kReplicaSets, Stamp(rs, ops.cluster()));
  } else if (current && I(Field(current->view, {"spec", "replicas"}), 1) != want && !paused) {
    Json rs = current->Object();
    rs["spec"]["replicas"] = want;
    current = ops.Put(kReplicaSets, std::move(rs));
  }
  // A rollout replaces old pods once the new ReplicaSet is fully ready.
  bool new_ready = current && I(Field(current->view, {"status", "readyReplicas"}), 0) >= want;
  for (const EntryPtr& o : old) {
    if (new_ready && I(Field(o->view, {"spec", "replicas"}), 1) != 0) {
      Json rs = o->Object();
      rs["spec"]["replicas"] = 0;
      ops.Put(kReplicaSets, std::move(rs));
    }
  }
  int replicas = 0, ready = 0, updated = 0;
  auto count = [&](const EntryPtr& rs, bool is_new) {
    if (!rs) return;
    int r = I(Field(rs->view, {"status", "replicas"}), 0);
    replicas += r;
    ready += I(Field(rs->view, {"status", "readyReplicas"}), 0);
    if (is_new) updated += r;
  };
  count(current, true);
  for (const EntryPtr& o : old) count(ops.Find(kReplicaSets, ObjectKey(ns, S(o->view["metadata"]["name"]))), false);
  Json status = d.value("status", Json::object());
  status["observedGeneration"] = d["metadata"].value("generation", 1);
  status["replicas"] = replicas;
  status["updatedReplicas"] = updated;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = ready;
  if (replicas - ready > 0) status["unavailableReplicas"] = replicas - ready;
  else status.erase("unavailableReplicas");
  if (ready == 0) status.erase("readyReplicas");
  bool available = ready >= want;
  SetCondition(status, "Available", available ? "True" : "False",
               available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
               available ? "Deployment has minimum availability." : "Deployment does not have minimum availability.",
               true);
  bool complete = updated == want && replicas == want && ready == want;
  SetCondition(status, "Progressing", "True", complete ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
               "ReplicaSet \"" + rs_name + (complete ? "\" has successfully progressed." : "\" is progressing."), true);
  d["status"] = std::move(status);
  ops.Put(kDeployments, std::move(d));
}

void ReconcileStatefulSet(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kStatefulSets, key);
  if (!e || Deleting(e->view)) return;
  Json sts = e->Object();
  std::string ns = S(sts["metadata"]["namespace"]), uid = S(sts["metadata"]["uid"]), name = S(sts["metadata"]["name"]);
  int want = I(Field(sts, {"spec", "replicas"}), 1);
  bool parallel = S(Field(sts, {"spec", "podManagementPolicy"})) == "Parallel";
  Json tmpl = Field(sts, {"spec", "template"});
  if (!tmpl.is_object()) tmpl = Json::object();
  std::string revision = name + "-" + TemplateHash(tmpl);
  std::map<int, EntryPtr> by_ordinal;
  for (const EntryPtr& p : OwnedPods(ops, ns, uid)) {
    std::string pn = S(p->view["metadata"]["name"]);
    if (pn.size() > name.size() + 1) by_ordinal[std::atoi(pn.c_str() + name.size() + 1)] = p;
  }
  // Scale down from the highest ordinal.
  for (auto it = by_ordinal.rbegin(); it != by_ordinal.rend(); ++it) {
    if (it->first >= want) ops.Delete(kPods, ObjectKey(ns, name + "-" + std::to_string(it->first)), "Background");
  }
  bool all_ready = true;
  for (int i = 0; i < want; ++i) {
    auto it = by_ordinal.find(i);
    if (it == by_ordinal.end()) {
      if (!parallel && !all_ready) break;
      Json pod = NewPod(ops.cluster(), sts, tmpl, name + "-" + std::to_string(i), ns,
                        {{"controller-revision-hash", revision}, {"statefulset.kubernetes.io/pod-name", name + "-" + std::to_string(i)}});
      pod["spec"]["hostname"] = name + "-" + std::to_string(i);
      ops.Put(kPods, std::move(pod));
      all_ready = false;
      if (!parallel) break;
      continue;
    }
    all_ready = all_ready && PodReady(it->second->view);
  }
  // Rolling update: replace the highest outdated pod once all are ready.
  if (all_ready) {
    for (auto it = by_ordinal.rbegin(); it != by_ordinal.rend(); ++it) {
      if (it->first >= want) continue;
      if (S(Field(it->second->view, {"metadata", "labels", "controller-revision-hash"})) != revision) {
        ops.Delete(kPods, ObjectKey(ns, name + "-" + std::to_string(it->first)), "Background");
        break;
      }
    }
  }
  int replicas = 0, ready = 0, updated = 0;
  for (const EntryPtr& p : OwnedPods(ops, ns, uid)) {
    ++replicas;
    ready += PodReady(p->view) ? 1 : 0;
    if (S(Field(p->view, {"metadata", "labels", "controller-revision-hash"})) == revision) ++updated;
  }
  Json status = {{"observedGeneration", sts["metadata"].value("generation", 1)},
                 {"replicas", replicas},
                 {"readyReplicas", ready},
                 {"currentReplicas", updated},
                 {"updatedReplicas", updated},
                 {"availableReplicas", ready},
                 {"currentRevision", updated == replicas ? revision : S(Field(sts, {"status", "currentRevision"}))},
                 {"updateRevision", revision},
                 {"collisionCount", 0}};
  if (S(status["currentRevision"]).empty()) status["currentRevision"] = revision;
  sts["status"] = std::move(status);
  ops.Put(kStatefulSets, std::move(sts));
}

void ReconcileDaemonSet(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kDaemonSets, key);
  if (!e || Deleting(e->view)) return;
  Json ds = e->Object();
  std::string ns = S(ds["metadata"]["namespace"]), uid = S(ds["metadata"]["uid"]), name = S(ds["metadata"]["name"]);
  Json tmpl = Field(ds, {"spec", "template"});
  if (!tmpl.is_object()) tmpl = Json::object();
  std::string revision = TemplateHash(tmpl);
  std::map<std::string, EntryPtr> by_node;
  std::vector<std::string> extra;
  for (const EntryPtr& p : OwnedPods(ops, ns, uid)) {
    std::string n = S(Field(p->view, {"spec", "nodeName"}));
    if (by_node.count(n) || S(Field(p->view, {"metadata", "labels", "controller-revision-hash"})) != revision) {
      extra.push_back(ObjectKey(ns, S(p->view["metadata"]["name"])));
    } else {
      by_node[n] = p;
    }
  }
  int desired = 0;
  std::set<std::string> wanted;
  if (const auto* nodes = ops.Collection(kNodes)) {
    for (const auto& [_, n] : *nodes) {
      if (!NodeMatches(tmpl.value("spec", Json::object()), n->view)) continue;
      std::string node = S(n->view["metadata"]["name"]);
      wanted.insert(node);
      ++desired;
      if (by_node.count(node)) continue;
      Json pod = NewPod(ops.cluster(), ds, tmpl, name + "-" + RandomSuffix(ops.cluster()), ns,
                        {{"controller-revision-hash", revision}});
      pod["spec"]["nodeName"] = node;
      ops.Put(kPods, std::move(pod));
    }
  }
  for (const auto& [node, p] : by_node) {
    if (!wanted.count(node)) extra.push_back(ObjectKey(ns, S(p->view["metadata"]["name"])));
  }
  for (const auto& k : extra) ops.Delete(kPods, k, "Background");
  int current = 0, ready = 0;
  for (const EntryPtr& p : OwnedPods(ops, ns, uid)) {
    ++current;
    ready += PodReady(p->view) ? 1 : 0;
  }
  ds["status"] = {{"observedGeneration", ds["metadata"].value("generation", 1)},
                  {"desiredNumberScheduled", desired},
                  {"currentNumberScheduled", current},
                  {"updatedNumberScheduled", current},
                  {"numberReady", ready},
                  {"numberAvailable", ready},
                  {"numberMisscheduled", 0}};
  if (ready < desired) ds["status"]["numberUnavailable"] = desired - ready;
  ops.Put(kDaemonSets, std::move(ds));
}

void ReconcileJob(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kJobs, key);
  if (!e || Deleting(e->view)) return;
  Json job = e->Object();
  std::string ns = S(job["metadata"]["namespace"]), uid = S(job["metadata"]["uid"]), name = S(job["metadata"]["name"]);
  int completions = I(Field(job, {"spec", "completions"}), 1);
  int parallelism = I(Field(job, {"spec", "parallelism"}), 1);
  bool suspended = Field(job, {"spec", "suspend"}).is_boolean() && Field(job, {"spec", "suspend"}).get<bool>();
  int active = 0, succeeded = 0;
  for (const EntryPtr& p : OwnedPods(ops, ns, uid)) {
    if (Phase(p->view) == "Succeeded") ++succeeded;
    else ++active;
  }
  Json status = job.value("status", Json::object());
  if (!suspended) {
    if (!status.contains("startTime")) status["startTime"] = NowRfc3339();
    Json tmpl = Field(job, {"spec", "template"});
    if (!tmpl.is_object()) tmpl = Json::object();
    while (active < parallelism && active + succeeded < completions) {
      ops.Put(kPods, NewPod(ops.cluster(), job, tmpl, name + "-" + RandomSuffix(ops.cluster()), ns, {{"job-name", name}}));
      ++active;
    }
  }
  status["active"] = active;
  if (active == 0) status.erase("active");
  status["succeeded"] = succeeded;
  if (succeeded >= completions) {
    if (!status.contains("completionTime")) status["completionTime"] = NowRfc3339();
    SetCondition(status, "Complete", "True", "", "");
  }
  job["status"] = std::move(status);
  ops.Put(kJobs, std::move(job));
}

void ReconcileService(ClusterOps& ops, const std::string& key, std::chrono::milliseconds delay) {
  EntryPtr e = ops.Find(kServices, key);
  if (!e || Deleting(e->view)) return;
  Json svc = e->Object();
  bool lb = S(Field(svc, {"spec", "type"})) == "LoadBalancer";
  const Json& ingress = Field(svc, {"status", "loadBalancer", "ingress"});
  bool has = ingress.is_array() && !ingress.empty();
  if (lb == has) return;
  if (!lb) {
    svc["status"]["loadBalancer"] = Json::object();
    ops.Put(kServices, std::move(svc));
    return;
  }
  auto& created = ops.cluster().created_at;
  auto it = created.find(kServices + key);
  if (it == created.end()) it = created.emplace(kServices + key, Clock::now()).first;
  if (Clock::now() < it->second + delay) {
    ops.Enqueue(kServices, key, it->second + delay - Clock::now());
    return;
  }
  const std::vector<std::string>& pool = ops.cluster().load_balancer_pool;
  if (!pool.empty()) {
    // The first address of the pool no other Service holds; none: pending.
    std::set<std::string> taken;
    for (const auto& [k, other] : ops.cluster().store[kServices]) {
      const Json& in = Field(other->view, {"status", "loadBalancer", "ingress"});
      if (!in.is_array()) continue;
      for (const auto& i : in) {
        if (i.contains("ip")) taken.insert(S(i["ip"]));
        if (i.contains("hostname")) taken.insert(S(i["hostname"]));
      }
    }
    auto free = std::find_if(pool.begin(), pool.end(), [&](const std::string& a) { return !taken.count(a); });
    if (free == pool.end()) {  // pending until a Service that holds one goes
      ops.Enqueue(kServices, key, std::chrono::milliseconds(500));
      return;
    }
    created.erase(it);
    const bool ip = free->find_first_not_of("0123456789.:abcdefABCDEF") == std::string::npos &&
                    free->find_first_of(".:") != std::string::npos;
    svc["status"]["loadBalancer"]["ingress"] = Json::array({{{ip ? "ip" : "hostname", *free}}});
    ops.Put(kServices, std::move(svc));
    return;
  }
  created.erase(it);
  uint64_t n = ++ops.cluster().name_seq;
  svc["status"]["loadBalancer"]["ingress"] =
      Json::array({{{"ip", "172.18." + std::to_string(200 + (n / 250) % 50) + "." + std::to_string(n % 250 + 1)}}});
  ops.Put(kServices, std::move(svc));
}

void ReconcilePvc(ClusterOps& ops, const std::string& key, std::chrono::milliseconds delay) {
  EntryPtr e = ops.Find(kPvcs, key);
  if (!e || Deleting(e->view) || S(Field(e->view, {"status", "phase"})) == "Bound") return;
  auto& created = ops.cluster().created_at;
  auto it = created.find(kPvcs + key);
  if (it == created.end()) it = created.emplace(kPvcs + key, Clock::now()).first;
  Json pvc = e->Object();
  if (Clock::now() < it->second + delay) {
    if (S(Field(pvc, {"status", "phase"})) != "Pending") {
      pvc["status"]["phase"] = "Pending";
      ops.Put(kPvcs, std::move(pvc));
    }
    ops.Enqueue(kPvcs, key, it->second + delay - Clock::now());
    return;
  }
  created.erase(it);
  pvc["spec"]["volumeName"] = "pvc-" + S(pvc["metadata"]["uid"]);
  pvc["status"]["phase"] = "Bound";
  const Json& storage = Field(pvc, {"spec", "resources", "requests", "storage"});
  if (!storage.is_null()) pvc["status"]["capacity"]["storage"] = storage;
  const Json& modes = Field(pvc, {"spec", "accessModes"});
  if (!modes.is_null()) pvc["status"]["accessModes"] = modes;
  ops.Put(kPvcs, std::move(pvc));
}

bool ConditionTrue(const Json& obj, const char* type) {
  const Json& conds = Field(obj, {"status", "conditions"});
  if (!conds.is_array()) return false;
  for (const auto& c : conds) {
    if (c.is_object() && c.value("type", "") == type) return c.value("status", "") == "True";
  }
  return false;
}

// The kinds served: those of Established CRDs (all valid ones at once when
// establishing takes no time).
void RebuildCrdTypes(ClusterOps& ops) {
  bool at_once = ops.options().crd_establish_delay.count() == 0;
  std::vector<ResourceType> types;
  if (const auto* crds = ops.Collection(kCrds)) {
    for (const auto& [_, e] : *crds) {
      if (!at_once && !ConditionTrue(e->view, "Established")) continue;
      for (auto& t : TypesFromCrd(e->view)) types.push_back(std::move(t));
    }
  }
  ops.cluster().crd_types = std::move(types);
  ops.cluster().crd_openapi.clear();
}

// The naming controller accepts the names at once; the establishing
// controller marks the CRD Established after the delay, and only then are
// its kinds served (as the API server's handler and discovery wait for it).
void ReconcileCrd(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kCrds, key);
  if (!e || Deleting(e->view)) return;
  Json crd = e->Object();
  Json& status = crd["status"];
  if (!status.is_object()) status = Json::object();
  Json stored = Json::array();
  const Json& versions = Field(crd, {"spec", "versions"});
  if (versions.is_array()) {
    for (const auto& v : versions) {
      if (v.is_object() && v.value("storage", false)) stored.push_back(v.value("name", ""));
    }
  }
  status["storedVersions"] = stored;
  bool valid = !TypesFromCrd(crd).empty();
  if (!valid) {
    SetCondition(status, "NamesAccepted", "False", "InvalidNames", "spec.names and spec.group are required");
    SetCondition(status, "Established", "False", "NotAccepted", "not all names are accepted");
    ops.Put(kCrds, std::move(crd));
    return;
  }
  SetCondition(status, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
  Json names = Field(crd, {"spec", "names"});
  if (names.is_object() && !names.contains("singular")) {
    std::string singular;
    for (char c : S(names.value("kind", Json()))) singular += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names["singular"] = singular;
  }
  status["acceptedNames"] = names;
  auto& created = ops.cluster().created_at;
  const std::string timer = kCrds + key;
  std::chrono::milliseconds delay = ops.options().crd_establish_delay;
  if (!ConditionTrue(crd, "Established") && delay.count() > 0) {
    auto it = created.find(timer);
    if (it == created.end()) it = created.emplace(timer, Clock::now()).first;
    Clock::time_point due = it->second + delay;
    if (Clock::now() < due) {
      SetCondition(status, "Established", "False", "Installing", "the initial names have been accepted");
      ops.Put(kCrds, std::move(crd));
      ops.Enqueue(kCrds, key, due - Clock::now());
      return;
    }
  }
  created.erase(timer);
  SetCondition(status, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted");
  ops.Put(kCrds, std::move(crd));
}

void ReconcileNamespace(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kNamespaces, key);
  if (!e || !Deleting(e->view)) return;
  std::string ns = S(e->view["metadata"]["name"]);
  std::string prefix = ns + "/";
  std::vector<std::pair<std::string, std::string>> doomed;
  bool remaining = false;
  for (auto& [skey, coll] : ops.cluster().store) {
    for (auto it = coll.lower_bound(prefix); it != coll.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      remaining = true;
      if (!Deleting(it->second->view)) doomed.emplace_back(skey, it->first);
    }
  }
  for (auto& [skey, k] : doomed) ops.Delete(skey, k, "Background");
  if (remaining) {
    // Objects held by finalizers keep the namespace Terminating.
    bool left = false;
    for (auto& [skey, coll] : ops.cluster().store) {
      auto it = coll.lower_bound(prefix);
      left = left || (it != coll.end() && it->first.compare(0, prefix.size(), prefix) == 0);
    }
    if (left) {
      ops.Enqueue(kNamespaces, key, std::chrono::milliseconds(100));
      return;
    }
  }
  // Empty: the namespace controller takes its time before finalizing.
  auto& since = ops.cluster().terminating_since;
  auto it = since.find(key);
  if (it == since.end()) it = since.emplace(key, Clock::now()).first;
  Clock::time_point due = it->second + ops.options().namespace_terminate;
  if (Clock::now() < due) {
    ops.Enqueue(kNamespaces, key, due - Clock::now());
    return;
  }
  since.erase(it);
  ops.Remove(kNamespaces, key);
}

// A deleted CRD: its custom resources go, then its cleanup finalizer, then it.
void ReconcileCrdDeletion(ClusterOps& ops, const std::string& key) {
  EntryPtr e = ops.Find(kCrds, key);
  if (!e || !Deleting(e->view)) return;
  for (const auto& t : TypesFromCrd(e->view)) {
    std::vector<std::string> keys;
    if (const auto* coll = ops.Collection(t.StorageKey())) {
      for (const auto& [k, _] : *coll) keys.push_back(k);
    }
    for (const auto& k : keys) ops.Remove(t.StorageKey(), k);
  }
  Json o = e->Object();
  Json kept = Json::array();
  for (const auto& f : Field(o, {"metadata", "finalizers"})) {
    if (f != kCrdCleanupFinalizer) kept.push_back(f);
  }
  if (kept.empty()) {
    ops.Remove(kCrds, key);
    return;
  }
  o["metadata"]["finalizers"] = kept;  // others' finalizers hold it longer
  ops.Put(kCrds, std::move(o));
}

// Foreground deletion: the owner goes once its dependents are gone.
void ReconcileForeground(ClusterOps& ops, const std::string& storage_key, const std::string& key) {
  EntryPtr e = ops.Find(storage_key, key);
  if (!e || !Deleting(e->view)) return;
  const Json& fins = Field(e->view, {"metadata", "finalizers"});
  if (!fins.is_array() || std::find(fins.begin(), fins.end(), Json("foregroundDeletion")) == fins.end()) return;
  std::string uid = S(Field(e->view, {"metadata", "uid"}));
  std::vector<std::pair<std::string, std::string>> deps;
  for (auto& [skey, coll] : ops.cluster().store) {
    for (auto& [okey, entry] : coll) {
      if (OwnedBy(entry->view, uid)) deps.emplace_back(skey, okey);
    }
  }
  if (!deps.empty()) {
    for (auto& [skey, okey] : deps) {
      EntryPtr d = ops.Find(skey, okey);
      if (d && !Deleting(d->view)) ops.Delete(skey, okey, "Foreground");
    }
    ops.Enqueue(storage_key, key, std::chrono::milliseconds(50));
    return;
  }
  Json o = e->Object();
  Json kept = Json::array();
  for (const auto& f : fins) {
    if (f != "foregroundDeletion") kept.push_back(f);
  }
  if (kept.empty()) {
    ops.Remove(storage_key, key);
    return;
  }
  o["metadata"]["finalizers"] = kept;
  ops.Put(storage_key, std::move(o));
}

// What the kubelet reports: the configured addresses (with a Hostname
// added when none is given), else one InternalIP and the Hostname.
Json NodeAddresses(const NodeSpec& spec, int index) {
  if (spec.addresses.empty()) {
    return Json::array({{{"type", "InternalIP"}, {"address", "10.0.0." + std::to_string(index + 2)}},
                        {{"type", "Hostname"}, {"address", spec.name}}});
  }
  Json out = Json::array();
  bool hostname = false;
  for (const auto& [type, address] : spec.addresses) {
    out.push_back({{"type", type}, {"address", address}});
    hostname = hostname || type == "Hostname";
  }
  if (!hostname) out.push_back({{"type", "Hostname"}, {"address", spec.name}});
  return out;
}

Json NodeObject(Cluster& c, const NodeSpec& spec, int index) {
  static const char* kZones[] = {"sim-a", "sim-b", "sim-c"};
  Json labels = {{"kubernetes.io/hostname", spec.name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"beta.kubernetes.io/arch", "amd64"},
                 {"node.kubernetes.io/instance-type", "sim.standard"},
                 {"topology.kubernetes.io/region", "sim"},
                 {"topology.kubernetes.io/zone", kZones[index % 3]}};
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  Json alloc = Json::object();
  for (const auto& [k, v] : spec.allocatable) alloc[k] = v;
  if (!alloc.contains("pods")) alloc["pods"] = "110";
  Json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}, {"labels", labels}}},
               {"spec", {{"podCIDR", "10.244." + std::to_string(index) + ".0/24"}}},
               {"status",
                {{"capacity", alloc},
                 {"allocatable", alloc},
                 {"addresses", NodeAddresses(spec, index)},
                 {"nodeInfo",
                  {{"kubeletVersion", "v1.29.0"},
                   {"containerRuntimeVersion", "sim://1.0"},
                   {"operatingSystem", "linux"},
                   {"architecture", "amd64"},
                   {"osImage", "kube-sim"},
                   {"kernelVersion", "6.1.0"}}}}}};
  SetCondition(node["status"], "Ready", "True", "KubeletReady", "kubelet is posting ready status");
  return Stamp(node, c);
}

}  // namespace

// ---------------------------------------------------------------------------

bool ParseQuantityMilli(const std::string& text, long double* out) {
  if (text.empty()) return false;
  size_t i = 0;
  if (text[0] == '+' || text[0] == '-') ++i;
  size_t num_end = i;
  while (num_end < text.size() && (std::isdigit(static_cast<unsigned char>(text[num_end])) || text[num_end] == '.')) {
    ++num_end;
  }
  if (num_end == i) return false;
  long double v = std::strtold(text.substr(0, num_end).c_str(), nullptr);
  std::string suffix = text.substr(num_end);
  long double mul = 1;
  if (suffix.empty()) mul = 1;
  else if (suffix == "m") mul = 1e-3L;
  else if (suffix == "k") mul = 1e3L;
  else if (suffix == "M") mul = 1e6L;
  else if (suffix == "G") mul = 1e9L;
  else if (suffix == "T") mul = 1e12L;
  else if (suffix == "P") mul = 1e15L;
  else if (suffix == "E") mul = 1e18L;
  else if (suffix == "Ki") mul = 1024.0L;
  else if (suffix == "Mi") mul = 1024.0L * 1024;
  else if (suffix == "Gi") mul = 1024.0L * 1024 * 1024;
  else if (suffix == "Ti") mul = 1024.0L * 1024 * 1024 * 1024;
  else if (suffix == "Pi") mul = 1024.0L * 1024 * 1024 * 1024 * 1024;
  else if (suffix == "Ei") mul = 1024.0L * 1024 * 1024 * 1024 * 1024 * 1024;
  else if (suffix[0] == 'e' || suffix[0] == 'E') {
    char* end = nullptr;
    long e = std::strtol(suffix.c_str() + 1, &end, 10);
    if (!end || *end) return false;
    mul = std::pow(10.0L, static_cast<long double>(e));
  } else {
    return false;
  }
  *out = v * mul * 1000.0L;
  return true;
}

void Bootstrap(ClusterOps& ops, const std::vector<NodeSpec>& nodes) {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    Json o = {{"apiVersion", "v1"},
              {"kind", "Namespace"},
              {"metadata", {{"name", ns}, {"labels", {{"kubernetes.io/metadata.name", ns}}}}},
              {"spec", {{"finalizers", Json::array({"kubernetes"})}}},
              {"status", {{"phase", "Active"}}}};
    ops.Put(kNamespaces, Stamp(o, ops.cluster()));
  }
  std::vector<NodeSpec> specs = nodes;
  if (specs.empty()) {
    for (int i = 1; i <= 3; ++i) {
      NodeSpec n;
      n.name = "node-" + std::to_string(i);
      n.allocatable = {{"cpu", "4"}, {"memory", "16Gi"}, {"ephemeral-storage", "100Gi"}};
      specs.push_back(std::move(n));
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) ops.Put(kNodes, NodeObject(ops.cluster(), specs[i], static_cast<int>(i)));
}

void OnWrite(ClusterOps& ops, const std::string& storage_key, const Json& obj, bool deleted) {
  std::string ns = S(Field(obj, {"metadata", "namespace"}));
  std::string key = ObjectKey(ns, S(Field(obj, {"metadata", "name"})));
  if (storage_key == kCrds) {
    RebuildCrdTypes(ops);
    if (deleted) {
      // Custom resources of a deleted CRD go with it.
      for (const auto& t : TypesFromCrd(obj)) {
        ops.cluster().store.erase(t.StorageKey());
      }
      ops.cluster().created_at.erase(storage_key + key);
    } else {
      ops.Enqueue(kCrds, key);
    }
    return;
  }
  if (storage_key == kPods) {
    std::string owner_storage, owner_key;
    if (ControllerOf(obj, &owner_storage, &owner_key)) ops.Enqueue(owner_storage, owner_key);
    if (deleted) {
      ops.cluster().pod_bound_at.erase(key);
      EnqueuePendingPods(ops);
    } else if (!Deleting(obj)) {
      ops.Enqueue(kPods, key);
    }
    return;
  }
  if (storage_key == kNodes) {
    if (!deleted) EnqueuePendingPods(ops);
    return;
  }
  if (storage_key == kReplicaSets || storage_key == kStatefulSets || storage_key == kDaemonSets ||
      storage_key == kJobs) {
    std::string owner_storage, owner_key;
    if (ControllerOf(obj, &owner_storage, &owner_key)) ops.Enqueue(owner_storage, owner_key);
  }
  if (deleted) {
    ops.cluster().created_at.erase(storage_key + key);
    return;
  }
  if (Deleting(obj)) {
    ops.Enqueue(storage_key, key);
    return;
  }
  if (storage_key == kDeployments || storage_key == kReplicaSets || storage_key == kStatefulSets ||
      storage_key == kDaemonSets || storage_key == kJobs || storage_key == kServices || storage_key == kPvcs) {
    ops.Enqueue(storage_key, key);
  }
}

void Reconcile(ClusterOps& ops, const std::string& storage_key, const std::string& key) {
  const std::chrono::milliseconds ready_delay = ops.options().ready_delay;
  EntryPtr e = ops.Find(storage_key, key);
  if (!e) return;
  if (Deleting(e->view)) {
    if (storage_key == kNamespaces) ReconcileNamespace(ops, key);
    else if (storage_key == kCrds) ReconcileCrdDeletion(ops, key);
    else ReconcileForeground(ops, storage_key, key);
    return;
  }
  if (storage_key == kPods) ReconcilePod(ops, key, ready_delay);
  else if (storage_key == kReplicaSets) ReconcileReplicaSet(ops, key);
  else if (storage_key == kDeployments) ReconcileDeployment(ops, key);
  else if (storage_key == kStatefulSets) ReconcileStatefulSet(ops, key);
  else if (storage_key == kDaemonSets) ReconcileDaemonSet(ops, key);
  else if (storage_key == kJobs) ReconcileJob(ops, key);
  else if (storage_key == kServices) ReconcileService(ops, key, ready_delay);
  else if (storage_key == kPvcs) ReconcilePvc(ops, key, ready_delay);
  else if (storage_key == kCrds) ReconcileCrd(ops, key);
}

}  // namespace eco::kubesim
