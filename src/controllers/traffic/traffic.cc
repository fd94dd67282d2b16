#include "controllers/traffic/traffic.h"

#include <arpa/inet.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "controllers/traffic/traffic_resources.h"

namespace eco::controllers {

using nlohmann::json;
using namespace traffic;

namespace {

constexpr char kNetworkPolicyLabel[] = "networkpolicy-supported";

void Log(const std::string& level, const std::string& msg) {
  log::Write(log::ParseLevel(level).value_or(log::Level::kInfo), "traffic", msg);
}

bool IsIp(const std::string& a) {
  unsigned char buf[16];
  return inet_pton(AF_INET, a.c_str(), buf) == 1 || inet_pton(AF_INET6, a.c_str(), buf) == 1;
}

// Cluster facts (labels, kv-pairs), read per provider in two range reads so
// that thousands of clusters cost two reads, not three each.
class ClusterFacts {
 public:
  explicit ClusterFacts(store::Store& st) : st_(st) {}

  Result<bool> HasLabel(const std::string& provider, const std::string& name,
                        const std::string& label) {
    ECO_RETURN_IF_ERROR(Load(provider));
    auto it = labels_.find(provider + "+" + name);
    return it != labels_.end() && it->second.count(label) > 0;
  }

  // "" when the cluster has no such key.
  Result<std::string> Kv(const std::string& provider, const std::string& name,
                         const std::string& key) {
    ECO_RETURN_IF_ERROR(Load(provider));
    auto it = kv_.find(provider + "+" + name);
    if (it == kv_.end()) return std::string();
    auto v = it->second.find(key);
    return v == it->second.end() ? std::string() : v->second;
  }

 private:
  Status Load(const std::string& provider) {
    if (!loaded_.insert(provider).second) return Status::Ok();
    auto labels = catalog::List(st_, "clusterLabel", {provider});
    if (!labels.ok()) return labels.status();
    for (const auto& l : *labels) labels_[provider + "+" + l.keys[1]].insert(l.keys[2]);
    auto kvs = catalog::List(st_, "clusterKv", {provider});
    if (!kvs.ok()) return kvs.status();
    for (const auto& d : *kvs) {
      auto& m = kv_[provider + "+" + d.keys[1]];
      const json* list = nullptr;
      if (auto s = d.object.find("spec"); s != d.object.end() && s->is_object()) {
        if (auto k = s->find("kv"); k != s->end() && k->is_array()) list = &*k;
      }
      if (!list) continue;
      for (const auto& e : *list) {
        if (!e.is_object()) continue;
        for (auto& [k, v] : e.items()) m.emplace(k, v.is_string() ? v.get<std::string>() : v.dump());
      }
    }
    return Status::Ok();
  }

  store::Store& st_;
  std::set<std::string> loaded_;
  std::map<std::string, std::set<std::string>> labels_;                 // p+c -> labels
  std::map<std::string, std::map<std::string, std::string>> kv_;        // p+c -> key -> value (first wins)
};

// What every cluster of every app receives, as indices into a pool of
// resources: a resource meant for many clusters is built and stored once.
class Plan {
 public:
  // Every object is labelled as the scheduler labels a chart's (context
  // here, app in Apply): the ready monitor finds a deployment's objects on
  // the clusters by those labels, and would report these NotPresent.
  explicit Plan(std::string status_ctx) : status_ctx_(std::move(status_ctx)) {}

  int Add(json object) {
    if (!object.contains("metadata") || !object["metadata"].is_object()) object["metadata"] = json::object();
    json& labels = object["metadata"]["labels"];
    if (!labels.is_object()) labels = json::object();
    labels[appcontext::kContextLabel] = status_ctx_;
    std::string name = appcontext::ResourceName(object);
    pool_.push_back({std::move(name), std::move(object)});
    return static_cast<int>(pool_.size() - 1);
  }
  void Give(const std::string& app, const std::string& cluster_key, int resource) {
    apps_[app][cluster_key].push_back(resource);
  }
  bool empty() const { return apps_.empty(); }

  // One read and one batch write per app: clusters are grouped by (current
  // variant, additions), and each distinct resulting set is stored once.
  Status Apply(appcontext::Contexts& ctx, const std::string& id) const {
    for (const auto& [app, per_cluster] : apps_) {
      auto plan = ctx.ReadApp(id, app);
      if (!plan.ok()) return plan.status();
      std::map<std::pair<int, std::vector<int>>, std::vector<std::string>> groups;
      std::map<int, const appcontext::ClusterRef*> representative;  // variant -> one of its clusters
      for (const auto& c : plan->clusters) {
        auto it = per_cluster.find(c.key());
        if (it == per_cluster.end()) continue;
        groups[{c.variant, it->second}].push_back(c.key());
        representative.emplace(c.variant, &c);
      }
      std::vector<appcontext::ClusterEdit> edits;
      for (const auto& [group, keys] : groups) {
        auto base = plan->For(*representative.at(group.first));
        if (!base.ok()) return base.status();
        appcontext::ResourceSet rs = std::move(*base);
        for (int i : group.second) {
          appcontext::Resource r = pool_[static_cast<size_t>(i)];
          r.object["metadata"]["labels"][appcontext::kAppLabel] = appcontext::LabelValue(app);
          // A name already present (a re-run, two intents with one service
          // name) is replaced in place, keeping its position in the order.
          if (appcontext::Resource* old = rs.Find(r.name)) {
            old->object = std::move(r.object);
          } else {
            rs.resources.push_back(std::move(r));
          }
        }
        edits.push_back({keys, std::move(rs)});
      }
      if (edits.size() == 1 && edits[0].cluster_keys.size() == plan->clusters.size()) {
        ECO_RETURN_IF_ERROR(ctx.SetResources(id, app, {}, edits[0].resources));
      } else {
        ECO_RETURN_IF_ERROR(ctx.SetResourcesBatch(id, app, edits));
      }
    }
    return Status::Ok();
  }

 private:
  std::string status_ctx_;
  std::vector<appcontext::Resource> pool_;
  std::map<std::string, std::map<std::string, std::vector<int>>> apps_;  // app -> p+c -> resources
};

// The clusters an app will keep: every mandatory one and, for an anyOf
// group still open, its first key (what Contexts::ResolveGroups keeps).
std::vector<appcontext::ClusterRef> Survivors(const std::vector<appcontext::ClusterRef>& refs) {
  std::map<int, const appcontext::ClusterRef*> first;
  for (const auto& c : refs) {
    if (c.mandatory) continue;
    auto [it, fresh] = first.emplace(c.group, &c);
    if (!fresh && c.key() < it->second->key()) it->second = &c;
  }
  std::vector<appcontext::ClusterRef> out;
  for (const auto& c : refs) {
    if (c.mandatory || first.at(c.group) == &c) out.push_back(c);
  }
  return out;
}

Result<int> PortValue(const std::string& v, const std::string& what) {
  if (v.empty() || v.size() > 5 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Invalid(what + " '" + v + "' is not a port number");
  }
  int p = std::stoi(v);
  if (p < 1 || p > 65535) return Invalid(what + " '" + v + "' is not a port number");
  return p;
}

}  // namespace

TrafficController::TrafficController(store::Store& st, SubControllerFactory factory)
    : st_(st), factory_(std::move(factory)) {}

Status TrafficController::UpdateAppContext(const std::string& context_id,
                                           const std::string& intent_name,
                                           const std::string& /*update_from*/) {
  // An update builds its context afresh, so it is handled like an instantiate.
  ECO_RETURN_IF_ERROR(AddResources(context_id, intent_name));
  CallSubControllers(context_id, intent_name);
  return Status::Ok();
}

Status TrafficController::AddResources(const std::string& id, const std::string& group) {
  appcontext::Contexts ctx(st_);
  auto meta = ctx.GetMeta(id);
  if (!meta.ok()) return meta.status();
  const catalog::Keys dig = {meta->project, meta->composite_app, meta->composite_app_version,
                             meta->dig};
  catalog::Keys gk = dig;
  gk.push_back(group);
  auto tg = catalog::Get(st_, "trafficGroupIntent", gk);
  if (!tg.ok()) return tg.status();
  if (!tg->has_value()) {
    return NotFound("Traffic group intent not found: '" + group + "' in deployment intent group " +
                    meta->dig);
  }
  const std::string ns = meta->namespace_.empty() ? "default" : meta->namespace_;

  // The intents, clients and access points, in key order.
  std::vector<ServerIntent> servers;
  auto server_docs = catalog::List(st_, "inboundServerIntent", gk);
  if (!server_docs.ok()) return server_docs.status();
  for (const auto& sd : *server_docs) {
    auto s = ServerFromJson(sd.object);
    if (!s.ok()) return s.status();
    auto client_docs = catalog::List(st_, "inboundClientsIntent", sd.keys);
    if (!client_docs.ok()) return client_docs.status();
    for (const auto& cd : *client_docs) {
      auto c = ClientFromJson(cd.object);
      if (!c.ok()) return c.status();
      auto access_docs = catalog::List(st_, "inboundClientsAccessIntent", cd.keys);
      if (!access_docs.ok()) return access_docs.status();
      for (const auto& ad : *access_docs) {
        auto a = AccessFromJson(ad.object);
        if (!a.ok()) return a.status();
        c->access.push_back(std::move(*a));
      }
      s->clients.push_back(std::move(*c));
    }
    servers.push_back(std::move(*s));
  }
  if (servers.empty()) return Status::Ok();

  std::map<std::string, std::vector<appcontext::ClusterRef>> app_clusters;
  auto clusters_of = [&](const std::string& app, const std::string& role,
                         const std::string& intent) -> Result<const std::vector<appcontext::ClusterRef>*> {
    auto it = app_clusters.find(app);
    if (it == app_clusters.end()) {
      auto refs = ctx.Clusters(id, app);
      if (!refs.ok()) {
        if (refs.status().code() != Code::kNotFound) return refs.status();
        return Invalid("traffic group intent '" + group + "': " + role + " '" + intent +
                       "' names app '" + app + "', which is not placed in this deployment");
      }
      it = app_clusters.emplace(app, std::move(*refs)).first;
    }
    return &it->second;
  };

  // Logical cloud cluster references' loadBalancerIP, read on first need.
  std::optional<std::map<std::string, std::string>> lb_ips;
  auto lb_ip = [&](const std::string& key) -> Result<std::string> {
    if (!lb_ips) {
      lb_ips.emplace();
      if (!meta->logical_cloud.empty()) {
        auto refs = catalog::List(st_, "clusterReference", {meta->project, meta->logical_cloud});
        if (!refs.ok()) return refs.status();
        for (const auto& r : *refs) {
          const json& s = r.object.value("spec", json::object());
          std::string ip = s.value("loadBalancerIP", "");
          if (ip.empty() || ip == "0.0.0.0") continue;  // EMCO's placeholder for "none"
          (*lb_ips)[s.value("clusterProvider", "") + "+" + s.value("cluster", "")] = ip;
        }
      }
    }
    auto it = lb_ips->find(key);
    return it == lb_ips->end() ? std::string() : it->second;
  };

  ClusterFacts facts(st_);
  Plan plan(meta->status_context.empty() ? id : meta->status_context);
  for (const ServerIntent& s : servers) {
    const std::string where =
        "traffic group intent '" + group + "', inbound server intent '" + s.name + "'";
    auto srefs = clusters_of(s.app, "inbound server intent", s.name);
    if (!srefs.ok()) return srefs.status();
    const std::vector<appcontext::ClusterRef> server_clusters = Survivors(**srefs);
    std::set<std::string> server_keys;
    for (const auto& c : server_clusters) server_keys.insert(c.key());

    // Client clusters; a cluster hosting several client apps gets the
    // client-side resources once, with the first of them.
    std::vector<std::pair<std::string, std::string>> remote;  // (client app, p+c), no server there
    std::set<std::string> remote_keys;
    for (const ClientIntent& c : s.clients) {
      auto crefs = clusters_of(c.app, "inbound clients intent", c.name);
      if (!crefs.ok()) return crefs.status();
      for (const auto& r : **crefs) {
        if (!server_keys.count(r.key()) && remote_keys.insert(r.key()).second) {
          remote.emplace_back(c.app, r.key());
        }
      }
    }

    // 1. NetworkPolicy on the labelled server clusters.
    if (!s.clients.empty()) {
      int np = -1;
      for (const auto& c : server_clusters) {
        auto has = facts.HasLabel(c.provider, c.name, kNetworkPolicyLabel);
        if (!has.ok()) return has.status();
        if (!*has) continue;
        if (np < 0) np = plan.Add(NetworkPolicy(group, s, ns));
        plan.Give(s.app, c.key(), np);
      }
    }

    // 2. Service discovery for clients on clusters without the server.
    if (!remote.empty()) {
      std::vector<std::string> addresses;
      json discover = json::array();  // server clusters whose address rsync reads there
      for (const auto& c : server_clusters) {
        std::string addr, from;
        for (const char* k : {"serviceDiscoveryAddress", "istioIngressGatewayAddress"}) {
          auto v = facts.Kv(c.provider, c.name, k);
          if (!v.ok()) return v.status();
          if (!v->empty()) {
            addr = *v;
            from = std::string("kv-pair ") + k;
            break;
          }
        }
        if (addr.empty()) {
          auto ip = lb_ip(c.key());
          if (!ip.ok()) return ip.status();
          addr = *ip;
          from = "loadBalancerIP of logical cloud " + meta->logical_cloud;
        }
        if (addr.empty()) {
          // Read from the cluster once the server's Service is deployed:
          // it must be one that clients elsewhere can reach.
          auto rs = ctx.Resources(id, s.app, c.key());
          if (!rs.ok()) return rs.status();
          const json* svc = nullptr;
          for (const auto& r : rs->resources) {
            if (r.object.value("kind", "") == "Service" && r.object.value("apiVersion", "") == "v1" &&
                r.object.contains("metadata") && r.object["metadata"].value("name", "") == s.service_name) {
              svc = &r.object;
            }
          }
          const std::string type = svc && (*svc).contains("spec") && (*svc)["spec"].is_object()
                                       ? (*svc)["spec"].value("type", "ClusterIP")
                                       : "";
          if (type != "NodePort" && type != "LoadBalancer") {
            return Invalid(where + ": server cluster " + c.key() +
                           " has no address for clients on other clusters: set its kv-pair "
                           "serviceDiscoveryAddress or istioIngressGatewayAddress, or loadBalancerIP "
                           "in its cluster reference of logical cloud " + meta->logical_cloud +
                           ", or let app " + s.app + " deploy Service " + s.service_name +
                           " as NodePort or LoadBalancer, whose address is then read from the cluster (" +
                           (svc ? "it is " + type : std::string("the app has no such Service")) + ")");
          }
          std::string svc_ns = (*svc)["metadata"].value("namespace", "");
          discover.push_back(DiscoveryTarget(s, c.key(), svc_ns.empty() ? ns : svc_ns));
          continue;
        }
        if (!IsIp(addr)) {
          return Invalid(where + ": server cluster " + c.key() + " address '" + addr + "' (" + from +
                         ") is not an IP address");
        }
        if (std::find(addresses.begin(), addresses.end(), addr) == addresses.end()) {
          addresses.push_back(addr);
        }
      }
      int svc = plan.Add(HeadlessService(s, ns));
      json endpoints = DiscoveryEndpoints(s, ns, addresses);
      if (!discover.empty()) {
        endpoints["metadata"]["annotations"][appcontext::kDiscoverAnnotation] = discover.dump();
      }
      int ep = plan.Add(std::move(endpoints));
      for (const auto& [app, key] : remote) {
        plan.Give(app, key, svc);
        plan.Give(app, key, ep);
      }
    }

    // 3. Istio.
    if (s.service_mesh != "istio") continue;
    auto kv = [&](const appcontext::ClusterRef& c, const char* key) -> Result<std::string> {
      auto v = facts.Kv(c.provider, c.name, key);
      if (!v.ok()) return v.status();
      if (v->empty()) {
        return Invalid(where + " (serviceMesh istio): server cluster " + c.key() +
                       " has no kv-pair " + key);
      }
      return *v;
    };
    auto kv_port = [&](const appcontext::ClusterRef& c, const char* key) -> Result<int> {
      auto v = kv(c, key);
      if (!v.ok()) return v.status();
      return PortValue(*v, where + ": server cluster " + c.key() + " kv-pair " + key);
    };

    std::vector<GatewayCluster> gateways;
    if (!remote.empty()) {
      for (const auto& c : server_clusters) {
        GatewayCluster g{c.provider, c.name, "", 0, 0};
        auto addr = kv(c, "istioIngressGatewayAddress");
        if (!addr.ok()) return addr.status();
        g.address = *addr;
        auto port = kv_port(c, "istioIngressGatewayPort");
        if (!port.ok()) return port.status();
        g.port = *port;
        auto internal = kv_port(c, "istioIngressGatewayInternalPort");
        if (!internal.ok()) return internal.status();
        g.internal_port = *internal;
        gateways.push_back(std::move(g));
      }
      // Server side: every server cluster has a client elsewhere (a remote one).
      for (size_t i = 0; i < server_clusters.size(); ++i) {
        const std::string key = server_clusters[i].key();
        for (json o : {ServerGateway(s, ns, gateways[i]), ServerServiceEntry(s, ns, gateways[i]),
                       ServerDestinationRule(s, ns, gateways[i])}) {
          plan.Give(s.app, key, plan.Add(std::move(o)));
        }
      }
      // Client side, the same objects on every remote client cluster.
      std::vector<int> client_side;
      const std::string salt = meta->project + "/" + meta->composite_app + "/" +
                               meta->composite_app_version + "/" + meta->dig + "/" + group + "/" +
                               s.name;
      for (json& o : ClientIstio(s, ns, gateways, salt)) client_side.push_back(plan.Add(std::move(o)));
      for (const auto& [app, key] : remote) {
        for (int r : client_side) plan.Give(app, key, r);
      }
    }

    if (s.external_support && s.sidecar_proxy == "yes") {
      const char* port_key = ExternalMode(s) == "http" ? "istioIngressGatewayHttpPort"
                                                        : "istioIngressGatewayHttpsPort";
      std::map<int, std::vector<int>> by_port;  // gateway port -> resources (shared)
      for (const auto& c : server_clusters) {
        auto port = kv_port(c, port_key);
        if (!port.ok()) return port.status();
        auto it = by_port.find(*port);
        if (it == by_port.end()) {
          auto objs = ExternalAccess(s, ns, *port);
          if (!objs.ok()) return objs.status().Annotate("traffic group intent '" + group + "'");
          std::vector<int> ids;
          for (json& o : *objs) ids.push_back(plan.Add(std::move(o)));
          it = by_port.emplace(*port, std::move(ids)).first;
        }
        for (int r : it->second) plan.Give(s.app, c.key(), r);
      }
    }

    std::vector<int> policies;
    for (json& o : AuthorizationPolicies(s, ns)) policies.push_back(plan.Add(std::move(o)));
    if (!policies.empty()) {
      for (const auto& c : server_clusters) {
        for (int r : policies) plan.Give(s.app, c.key(), r);
      }
    }
  }
  return plan.Apply(ctx, id);
}

void TrafficController::CallSubControllers(const std::string& id, const std::string& group) {
  auto regs = catalog::List(st_, "dtcController", {});
  if (!regs.ok()) {
    Log("error", "listing dtc-controllers: " + regs.status().ToString());
    return;
  }
  struct Sub {
    std::string name, host;
    int port = 0;
    int64_t priority = 0;
  };
  std::vector<Sub> subs;
  for (const auto& r : *regs) {
    const json spec = r.object.value("spec", json::object());
    Sub s{r.keys.back(), spec.value("host", ""), 0, 0};
    if (auto p = spec.find("port"); p != spec.end() && p->is_number_integer()) s.port = p->get<int>();
    if (auto p = spec.find("priority"); p != spec.end() && p->is_number_integer()) {
      s.priority = p->get<int64_t>();
    }
    subs.push_back(std::move(s));
  }
  // Highest priority first (the opposite of the orchestrator), ties by name.
  std::stable_sort(subs.begin(), subs.end(),
                   [](const Sub& a, const Sub& b) { return a.priority > b.priority; });
  for (const Sub& s : subs) {
    std::unique_ptr<Controller> c = factory_ ? factory_(s.name, s.host, s.port) : nullptr;
    if (!c) {
      Log("warn", "dtc sub-controller " + s.name + " (" + s.host + ":" + std::to_string(s.port) +
                      "): no client could be made; skipped");
      continue;
    }
    Status st = c->UpdateAppContext(id, group, "");
    if (!st.ok()) {
      Log("warn", "dtc sub-controller " + s.name + " failed for AppContext " + id +
                      ", traffic group intent " + group + " (ignored): " + st.ToString());
    }
  }
}

}  // namespace eco::controllers
