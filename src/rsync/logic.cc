#include "rsync/logic.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace eco::rsync {

namespace {

const std::map<std::string, EventStates, std::less<>>& Table() {
  static const std::map<std::string, EventStates, std::less<>> t = {
      {"instantiate",
       {{"Created", "Instantiated", "InstantiateFailed", "Instantiating"},
        "Instantiating",
        "Instantiated",
        "InstantiateFailed"}},
      {"terminate",
       {{"InstantiateFailed", "Instantiating", "Instantiated", "TerminateFailed", "Terminating",
         "Updated", "UpdatedFailed", "Updating"},
        "Terminating",
        "Terminated",
        "TerminateFailed"}},
      {"update", {{"Created", "Updated"}, "Instantiating", "Instantiated", "InstantiateFailed"}},
      {"update-delete", {{"Instantiated"}, "Updating", "Updated", "UpdatedFailed"}},
      // eco's: every object of the deployed revision again, on some clusters.
      {"resync", {{"Instantiated", "InstantiateFailed"}, "Instantiating", "Instantiated", "InstantiateFailed"}},
  };
  return t;
}

}  // namespace

const EventStates* StatesFor(std::string_view event) {
  auto it = Table().find(event);
  return it == Table().end() ? nullptr : &it->second;
}

bool IsApplyEvent(std::string_view event) {
  return event == "instantiate" || event == "update" || event == "resync";
}

Decision Decide(std::string_view event, std::string_view current, bool stop_flag,
                bool terminate_queued, const Supersession& superseded) {
  Decision d;
  const EventStates* s = StatesFor(event);
  if (s == nullptr) {
    d.message = "unknown event " + std::string(event);
    return d;
  }
  if (event == "terminate" && current == "Terminated") {
    d.message = "the AppContext is already Terminated";
    return d;
  }
  d.change_status = true;
  d.status = s->failure;
  if (stop_flag) {
    d.message = "the AppContext is stopped: " + std::string(event) + " refused";
    return d;
  }
  if (terminate_queued && event != "terminate") {
    d.message = "a terminate is queued: " + std::string(event) + " refused";
    return d;
  }
  if (superseded.event_before && IsApplyEvent(event)) {
    d.message = "superseded by the update to AppContext " + superseded.by;
    return d;
  }
  bool ok = current == s->running ||
            std::find(s->accepted.begin(), s->accepted.end(), current) != s->accepted.end();
  // A superseded deployment ends InstantiateFailed; what it put on the
  // clusters still has to go (update-delete), and a rollback to it may
  // have found it still ending.
  if (!superseded.by.empty() && current == "InstantiateFailed" &&
      (event == "update-delete" || event == "update"))
    ok = true;
  if (!ok) {
    d.message = std::string(event) + " is not allowed when the AppContext is " +
                (current.empty() ? std::string("without status") : std::string(current));
    return d;
  }
  d.run = true;
  d.change_status = true;
  d.status = s->running;
  d.message.clear();
  return d;
}

const QueuedEvent* LastApplyBefore(const std::vector<QueuedEvent>& queue, store::Revision before) {
  const QueuedEvent* last = nullptr;
  for (const auto& e : queue) {
    // A resync re-applies the revision the last instantiate or update
    // deployed; it says nothing of what that one replaced.
    if (e.created < before && IsApplyEvent(e.type) && e.type != "resync") last = &e;
  }
  return last;
}

bool ApplyPendingBefore(const std::vector<QueuedEvent>& queue, store::Revision before) {
  for (const auto& e : queue) {
    if (e.created < before && e.status == "pending" && IsApplyEvent(e.type)) return true;
  }
  return false;
}

std::vector<std::string> ReplacedChain(
    const std::string& self, const std::string& from, store::Revision at,
    const std::function<const std::vector<QueuedEvent>&(const std::string&)>& queue_of) {
  std::vector<std::string> out;
  std::set<std::string> seen = {self};
  for (std::string cur = from; !cur.empty() && seen.insert(cur).second;) {
    out.push_back(cur);
    const QueuedEvent* last = LastApplyBefore(queue_of(cur), at);
    if (last == nullptr || last->type != "update" || last->status == "done") break;
    cur = last->other;
  }
  return out;
}

std::set<std::string> KnownOnCluster(const appcontext::DeployedRecord& rec,
                                     const std::string& other, bool other_complete) {
  std::set<std::string> out;
  for (const auto& [name, d] : rec.resources) {
    if (d.status == "Applied" && (other_complete || d.ref == other)) out.insert(name);
  }
  return out;
}

std::vector<const appcontext::Resource*> Changed(const std::vector<appcontext::Resource>& now,
                                                 const std::vector<appcontext::Resource>* before,
                                                 const std::set<std::string>* on_cluster) {
  std::unordered_map<std::string, const nlohmann::json*> old;
  if (before != nullptr) {
    for (const auto& r : *before) old[r.name] = &r.object;
  }
  std::vector<const appcontext::Resource*> out;
  for (const auto& r : now) {
    auto it = old.find(r.name);
    if (it == old.end() || *it->second != r.object || (on_cluster && !on_cluster->count(r.name)))
      out.push_back(&r);
  }
  return out;
}

std::vector<const appcontext::Resource*> Removed(const std::vector<appcontext::Resource>& before,
                                                 const std::vector<appcontext::Resource>* now) {
  std::unordered_map<std::string, bool> keep;
  if (now != nullptr) {
    for (const auto& r : *now) keep[r.name] = true;
  }
  std::vector<const appcontext::Resource*> out;
  for (const auto& r : before) {
    if (!keep.count(r.name)) out.push_back(&r);
  }
  return out;
}

std::chrono::milliseconds Backoff(int attempt, std::chrono::milliseconds base,
                                  std::chrono::milliseconds cap, double jitter) {
  if (attempt < 1) attempt = 1;
  int64_t d = base.count();
  for (int i = 1; i < attempt && d < cap.count(); ++i) d *= 2;
  d = std::min<int64_t>(d, cap.count());
  jitter = std::clamp(jitter, 0.0, 1.0);
  return std::chrono::milliseconds(d / 2 +
                                   static_cast<int64_t>(static_cast<double>(d - d / 2) * jitter));
}

namespace {

const nlohmann::json& At(const nlohmann::json& o, const char* k) {
  static const nlohmann::json null;
  if (!o.is_object()) return null;
  auto it = o.find(k);
  return it == o.end() ? null : *it;
}

std::string Text(const nlohmann::json& o, const char* k) {
  const nlohmann::json& v = At(o, k);
  return v.is_string() ? v.get<std::string>() : std::string();
}

}  // namespace

bool NeedsNodes(const nlohmann::json& service) {
  const nlohmann::json& spec = At(service, "spec");
  if (Text(spec, "type") == "NodePort") return true;
  if (Text(spec, "type") != "LoadBalancer") return false;
  const nlohmann::json& ingress = At(At(At(service, "status"), "loadBalancer"), "ingress");
  if (!ingress.is_array()) return false;
  // Host names only: Endpoints take IP addresses, so the NodePort serves.
  bool hostnames = false;
  for (const auto& in : ingress) {
    if (!Text(in, "ip").empty()) return false;
    hostnames = hostnames || !Text(in, "hostname").empty();
  }
  return hostnames;
}

Result<ServiceAddress> ReachableAddress(const nlohmann::json& service, const std::vector<nlohmann::json>& nodes,
                                        int port) {
  const nlohmann::json& spec = At(service, "spec");
  const std::string type = Text(spec, "type").empty() ? "ClusterIP" : Text(spec, "type");
  if (type != "LoadBalancer" && type != "NodePort") {
    return Invalid("it is of type " + type + ", which clients on other clusters cannot reach");
  }
  const nlohmann::json* match = nullptr;
  const nlohmann::json& ports = At(spec, "ports");
  if (ports.is_array()) {
    for (const auto& p : ports) {
      if (At(p, "port").is_number_integer() && At(p, "port").get<int>() == port) match = &p;
    }
    if (!match && ports.size() == 1) match = &ports[0];
  }
  if (!match) return Invalid("it has no port " + std::to_string(port));
  ServiceAddress out;
  if (type == "LoadBalancer" && !NeedsNodes(service)) {
    const nlohmann::json& ingress = At(At(At(service, "status"), "loadBalancer"), "ingress");
    if (ingress.is_array()) {
      for (const auto& in : ingress) {
        const std::string ip = Text(in, "ip");
        if (!ip.empty() && std::find(out.ips.begin(), out.ips.end(), ip) == out.ips.end()) out.ips.push_back(ip);
      }
    }
    if (out.ips.empty()) return Waiting("it has no LoadBalancer ingress address yet");
    out.port = At(*match, "port").get<int>();
    return out;
  }
  const nlohmann::json& node_port = At(*match, "nodePort");
  if (!node_port.is_number_integer()) {
    // allocateLoadBalancerNodePorts: false, or a NodePort not allocated yet.
    if (type == "NodePort") return Waiting("its port " + std::to_string(port) + " has no nodePort yet");
    return Invalid("its LoadBalancer ingress has host names only and its port " + std::to_string(port) +
                   " has no nodePort");
  }
  out.port = node_port.get<int>();
  for (const auto& n : nodes) {
    const nlohmann::json& st = At(n, "status");
    bool ready = true;
    if (At(st, "conditions").is_array()) {
      for (const auto& c : At(st, "conditions")) {
        if (Text(c, "type") == "Ready") ready = Text(c, "status") == "True";
      }
    }
    if (!ready || !At(st, "addresses").is_array()) continue;
    std::string internal, external;
    for (const auto& a : At(st, "addresses")) {
      if (Text(a, "type") == "ExternalIP" && external.empty()) external = Text(a, "address");
      if (Text(a, "type") == "InternalIP" && internal.empty()) internal = Text(a, "address");
    }
    const std::string ip = external.empty() ? internal : external;
    if (!ip.empty() && std::find(out.ips.begin(), out.ips.end(), ip) == out.ips.end()) out.ips.push_back(ip);
  }
  if (out.ips.empty()) return Waiting("no Ready node of its cluster has an InternalIP or ExternalIP address yet");
  return out;
}

nlohmann::json WithAddresses(nlohmann::json endpoints, const ServiceAddress& a, const std::string& port_name,
                             const std::string& protocol) {
  nlohmann::json& subsets = endpoints["subsets"];
  if (!subsets.is_array()) subsets = nlohmann::json::array();
  nlohmann::json* into = nullptr;
  for (auto& s : subsets) {
    const nlohmann::json& ports = At(s, "ports");
    if (ports.is_array() && ports.size() == 1 && At(ports[0], "port") == a.port) into = &s;
  }
  if (!into) {
    nlohmann::json p = {{"port", a.port}, {"protocol", protocol.empty() ? "TCP" : protocol}};
    if (!port_name.empty()) p["name"] = port_name;
    subsets.push_back({{"addresses", nlohmann::json::array()}, {"ports", nlohmann::json::array({p})}});
    into = &subsets.back();
  }
  nlohmann::json& addrs = (*into)["addresses"];
  if (!addrs.is_array()) addrs = nlohmann::json::array();
  for (const auto& ip : a.ips) {
    bool have = false;
    for (const auto& x : addrs) have = have || Text(x, "ip") == ip;
    if (!have) addrs.push_back({{"ip", ip}});
  }
  return endpoints;
}

}  // namespace eco::rsync
