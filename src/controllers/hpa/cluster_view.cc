#include "controllers/hpa/cluster_view.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "catalog/catalog.h"
#include "common/json_fields.h"
#include "k8s/client_pool.h"

namespace eco::hpa {

using nlohmann::json;

int64_t NodeState::Free(const std::string& resource) const {
  auto a = allocatable.find(resource);
  if (a == allocatable.end()) return 0;
  auto r = requested.find(resource);
  return a->second - (r == requested.end() ? 0 : r->second);
}

std::vector<Result<ClusterState>> ReadClusters(ClusterView& view,
                                               const std::vector<ClusterId>& clusters,
                                               size_t max_threads) {
  std::vector<Result<ClusterState>> out(clusters.size(),
                                        Result<ClusterState>(Internal("not read")));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < clusters.size(); i = next++) {
      out[i] = view.Read(clusters[i].first, clusters[i].second);
    }
  };
  size_t n = std::min(std::max<size_t>(max_threads, 1), clusters.size());
  std::vector<std::thread> threads;
  threads.reserve(n > 0 ? n - 1 : 0);
  for (size_t t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return out;
}

Result<int64_t> ParseQuantity(std::string_view text, bool milli) {
  auto bad = [&] { return Invalid("malformed quantity '" + std::string(text) + "'"); };
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
  size_t digits_start = i;
  long double v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') v = v * 10 + (text[i++] - '0');
  bool any = i > digits_start;
  if (i < text.size() && text[i] == '.') {
    ++i;
    long double scale = 0.1L;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v += scale * (text[i++] - '0');
      scale /= 10;
      any = true;
    }
  }
  if (!any) return bad();
  std::string_view suffix = text.substr(i);
  long double mul = 1;
  if (suffix.empty()) {
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {  // "1E" is exa
    int exp = 0;
    size_t j = 1;
    bool eneg = false;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) eneg = suffix[j++] == '-';
    if (j >= suffix.size()) return bad();
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9' || exp > 100) return bad();
      exp = exp * 10 + (suffix[j] - '0');
    }
    mul = std::pow(10.0L, eneg ? -exp : exp);
  } else {
    static const std::pair<std::string_view, long double> kSuffixes[] = {
        {"n", 1e-9L},
        {"u", 1e-6L},
        {"m", 1e-3L},
        {"k", 1e3L},
        {"M", 1e6L},
        {"G", 1e9L},
        {"T", 1e12L},
        {"P", 1e15L},
        {"E", 1e18L},
        {"Ki", 1024.0L},
        {"Mi", 1048576.0L},
        {"Gi", 1073741824.0L},
        {"Ti", 1099511627776.0L},
        {"Pi", 1125899906842624.0L},
        {"Ei", 1152921504606846976.0L},
    };
    bool found = false;
    for (const auto& [s, m] : kSuffixes) {
      if (s == suffix) {
        mul = m;
        found = true;
      }
    }
    if (!found) return bad();
  }
  long double base = v * mul * (milli ? 1000.0L : 1.0L);
  if (neg) base = -base;
  // Round up as Kubernetes does when it scales a quantity down; the epsilon
  // absorbs binary representation error of decimal fractions ("0.1").
  long double rounded = std::ceil(base - 1e-9L);
  if (rounded > 9.2e18L || rounded < -9.2e18L)
    return Invalid("quantity '" + std::string(text) + "' is out of range");
  return static_cast<int64_t>(rounded);
}

namespace {

// Adds a resources map ({"cpu": "250m", ...}) to `into`.
Status AddQuantities(const json& m, std::map<std::string, int64_t>& into, bool take_max) {
  if (!m.is_object()) return Status::Ok();
  for (auto& [name, q] : m.items()) {
    int64_t v = 0;
    if (q.is_string()) {
      auto p = ParseQuantity(q.get_ref<const std::string&>(), name == "cpu");
      if (!p.ok()) return p.status().Annotate(name);
      v = *p;
    } else if (q.is_number()) {
      auto p = ParseQuantity(q.dump(), name == "cpu");
      if (!p.ok()) return p.status().Annotate(name);
      v = *p;
    } else {
      continue;
    }
    if (take_max) {
      into[name] = std::max(into[name], v);
    } else {
      into[name] += v;
    }
  }
  return Status::Ok();
}

// A container's effective requests: requests, and limits where a resource
// has a limit but no request (the API server defaults the request to it).
Status ContainerRequests(const json& c, std::map<std::string, int64_t>& out) {
  auto res = c.find("resources");
  if (res == c.end() || !res->is_object()) return Status::Ok();
  json eff = json::object();
  if (auto l = res->find("limits"); l != res->end() && l->is_object()) eff = *l;
  if (auto r = res->find("requests"); r != res->end() && r->is_object()) {
    for (auto& [k, v] : r->items()) eff[k] = v;
  }
  return AddQuantities(eff, out, false);
}

// What the scheduler charges a pod: max(sum of containers, largest init
// container) per resource, plus overhead.
Status PodRequests(const json& pod, std::map<std::string, int64_t>& out) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return Status::Ok();
  std::map<std::string, int64_t> sum, init;
  if (auto cs = spec->find("containers"); cs != spec->end() && cs->is_array()) {
    for (const auto& c : *cs) ECO_RETURN_IF_ERROR(ContainerRequests(c, sum));
  }
  if (auto cs = spec->find("initContainers"); cs != spec->end() && cs->is_array()) {
    for (const auto& c : *cs) {
      std::map<std::string, int64_t> one;
      ECO_RETURN_IF_ERROR(ContainerRequests(c, one));
      for (auto& [k, v] : one) init[k] = std::max(init[k], v);
    }
  }
  for (auto& [k, v] : init) sum[k] = std::max(sum[k], v);
  if (auto o = spec->find("overhead"); o != spec->end())
    ECO_RETURN_IF_ERROR(AddQuantities(*o, sum, false));
  for (auto& [k, v] : sum) out[k] += v;
  return Status::Ok();
}

Result<ClusterState> ReadClusterStateUnguarded(k8s::ClusterClient& client) {
  auto nodes = client.List("v1", "Node", "", {});
  if (!nodes.ok()) return nodes.status().Annotate("listing nodes");
  // Only bound pods that still hold their requests (both fields are ones
  // the API server indexes for pods); filtered again below all the same.
  k8s::ListOptions running;
  running.field_selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
  auto pods = client.List("v1", "Pod", "", running);
  if (!pods.ok()) return pods.status().Annotate("listing pods");

  ClusterState st;
  std::map<std::string, size_t> by_name;
  for (const auto& n : nodes->items) {
    NodeState ns;
    const json& md = n.value("metadata", json::object());
    ns.name = md.value("name", "");
    if (auto l = md.find("labels"); l != md.end() && l->is_object()) {
      for (auto& [k, v] : l->items()) {
        if (v.is_string()) ns.labels[k] = v.get<std::string>();
      }
    }
    const json& spec = n.value("spec", json::object());
    if (auto u = spec.find("unschedulable"); u != spec.end() && u->is_boolean()) {
      ns.unschedulable = u->get<bool>();
    }
    if (auto ts = spec.find("taints"); ts != spec.end() && ts->is_array()) {
      for (const auto& t : *ts) {
        if (!t.is_object()) continue;
        ns.taints.push_back(
            {StringField(t, "key"), StringField(t, "value"), StringField(t, "effect")});
      }
    }
    const json& status = n.value("status", json::object());
    if (auto a = status.find("allocatable"); a != status.end()) {
      Status s = AddQuantities(*a, ns.allocatable, false);
      if (!s.ok()) return s.Annotate("node " + ns.name + " allocatable");
    }
    ns.ready = false;
    if (auto cs = status.find("conditions"); cs != status.end() && cs->is_array()) {
      for (const auto& c : *cs) {
        if (c.is_object() && StringField(c, "type") == "Ready") {
          ns.ready = StringField(c, "status") == "True";
        }
      }
    }
    st.nodes.push_back(std::move(ns));
  }
  std::sort(st.nodes.begin(), st.nodes.end(),
            [](const NodeState& a, const NodeState& b) { return a.name < b.name; });
  for (size_t i = 0; i < st.nodes.size(); ++i) by_name[st.nodes[i].name] = i;

  for (const auto& p : pods->items) {
    const json& spec = p.value("spec", json::object());
    std::string node = spec.value("nodeName", "");
    if (node.empty()) continue;
    std::string phase = p.value("status", json::object()).value("phase", "");
    if (phase == "Succeeded" || phase == "Failed") continue;
    auto it = by_name.find(node);
    if (it == by_name.end()) continue;
    Status s = PodRequests(p, st.nodes[it->second].requested);
    if (!s.ok()) {
      return s.Annotate("pod " + p.value("metadata", json::object()).value("name", "") +
                        " requests");
    }
  }
  return st;
}

}  // namespace

Result<ClusterState> ReadClusterState(k8s::ClusterClient& client) {
  // A server answering odd types (metadata: null) must not throw out of here.
  try {
    return ReadClusterStateUnguarded(client);
  } catch (const json::exception& e) {
    return Invalid(std::string("unexpected node or pod object: ") + e.what());
  }
}

KubeClusterView::KubeClusterView(store::Store& st, k8s::ClientOptions options)
    : st_(st), options_(std::move(options)) {}

k8s::ClientOptions KubeClusterView::DefaultOptions() {
  k8s::ClientOptions o;
  // Well inside the orchestrator's 10 s controller-call deadline.
  o.connect_timeout = std::chrono::milliseconds(2000);
  o.request_timeout = std::chrono::milliseconds(6000);
  o.max_connections = 2;
  return o;
}

Result<ClusterState> KubeClusterView::Read(const std::string& provider,
                                           const std::string& cluster) {
  ECO_ASSIGN_OR_RETURN(auto client, k8s::ClientOfCluster(st_, provider, cluster, options_));
  return ReadClusterState(*client);
}

}  // namespace eco::hpa
