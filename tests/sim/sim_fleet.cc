#include "sim_fleet.h"

#include <set>

#include "k8s/kubeconfig.h"

namespace eco::sim {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* k) {
  if (!j.is_object()) return "";
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool ClusterScoped(const std::string& kind) {
  return kind == "Namespace" || kind == "CustomResourceDefinition" || kind == "Node";
}

int64_t Ms(Clock::Time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

// The client of one simulated cluster. Every call runs on the simulation's
// one thread: its latency moves the fake clock forward.
class SimClient final : public k8s::ClusterClient {
 public:
  SimClient(Fleet& fleet, Fleet::Cluster& c, k8s::RestConfig rc, k8s::ClientOptions o)
      : fleet_(fleet), c_(c), rc_(std::move(rc)), o_(std::move(o)) {}

  using k8s::ClusterClient::Apply;
  Result<json> Apply(const json& obj, const k8s::ApplyOptions& opts) override {
    const std::string kind = Str(obj, "kind"), name = Str(obj["metadata"], "name");
    std::string ns = ClusterScoped(kind) ? "" : Str(obj["metadata"], "namespace");
    if (!ClusterScoped(kind) && ns.empty()) ns = rc_.default_namespace;
    ECO_RETURN_IF_ERROR(Answer("apply", kind, ns, name));
    json o = obj;
    if (kind == "CustomResourceDefinition") {
      o["status"] = {{"conditions", json::array({{{"type", "Established"}, {"status", "True"}}})}};
    }
    std::lock_guard<std::mutex> g(fleet_.mu_);
    // metadata.generation as an API server keeps it: 1, then one more for
    // each change of anything but metadata and status.
    auto& slot = c_.state.objects[{Str(obj, "apiVersion"), kind, ns, name}];
    auto spec_of = [](json x) {
      if (x.is_object()) {
        x.erase("metadata");
        x.erase("status");
      }
      return x;
    };
    int64_t gen = 1;
    if (slot.is_object()) {
      const int64_t old = slot["metadata"].value("generation", int64_t{1});
      gen = spec_of(slot) == spec_of(o) ? old : old + 1;
    }
    o["metadata"]["generation"] = gen;
    if (opts.generation != nullptr) *opts.generation = gen;
    slot = std::move(o);
    c_.applies.push_back({fleet_.clock_.Now(), kind, name});
    return json::object();
  }

  Result<json> Get(std::string_view av, std::string_view kind, std::string_view ns,
                   std::string_view name) override {
    const std::string n = Ns(kind, ns);
    ECO_RETURN_IF_ERROR(Answer("get", std::string(kind), n, std::string(name)));
    std::lock_guard<std::mutex> g(fleet_.mu_);
    auto it = c_.state.objects.find({std::string(av), std::string(kind), n, std::string(name)});
    if (it == c_.state.objects.end()) return NotFound("404: " + std::string(kind) + " " + std::string(name) + " not found");
    return it->second;
  }

  Result<k8s::ObjectList> List(std::string_view av, std::string_view kind, std::string_view ns,
                               const k8s::ListOptions&) override {
    ECO_RETURN_IF_ERROR(Answer("list", std::string(kind), std::string(ns), ""));
    k8s::ObjectList out;
    std::lock_guard<std::mutex> g(fleet_.mu_);
    for (const auto& [k, o] : c_.state.objects) {
      if (std::get<0>(k) == av && std::get<1>(k) == kind && (ns.empty() || std::get<2>(k) == ns))
        out.items.push_back(o);
    }
    return out;
  }

  Status Delete(std::string_view av, std::string_view kind, std::string_view ns, std::string_view name,
                k8s::Propagation) override {
    const std::string n = Ns(kind, ns);
    ECO_RETURN_IF_ERROR(Answer("delete", std::string(kind), n, std::string(name)));
    std::lock_guard<std::mutex> g(fleet_.mu_);
    auto& objs = c_.state.objects;
    if (objs.erase({std::string(av), std::string(kind), n, std::string(name)}) == 0)
      return NotFound("404: " + std::string(kind) + " " + std::string(name) + " not found");
    if (kind == "Namespace") {  // its content goes with it
      for (auto it = objs.begin(); it != objs.end();) it = std::get<2>(it->first) == name ? objs.erase(it) : std::next(it);
    }
    return Status::Ok();
  }

  Result<k8s::ResourceInfo> ResolveKind(std::string_view av, std::string_view kind) override {
    ECO_RETURN_IF_ERROR(Answer("discover", std::string(kind), "", ""));
    k8s::ResourceInfo info;
    const std::string avs(av);
    const size_t slash = avs.find('/');
    info.group = slash == std::string::npos ? "" : avs.substr(0, slash);
    info.version = slash == std::string::npos ? avs : avs.substr(slash + 1);
    info.kind = std::string(kind);
    info.namespaced = !ClusterScoped(info.kind);
    static const std::set<std::pair<std::string, std::string>> builtin = {
        {"v1", "Namespace"},   {"v1", "ConfigMap"}, {"v1", "Secret"},           {"v1", "Service"},
        {"apps/v1", "Deployment"}, {"batch/v1", "Job"},
        {"apiextensions.k8s.io/v1", "CustomResourceDefinition"}};
    if (builtin.count({avs, info.kind})) return info;
    // A custom kind is served while a CRD of the cluster defines it.
    std::lock_guard<std::mutex> g(fleet_.mu_);
    for (const auto& [k, o] : c_.state.objects) {
      if (std::get<1>(k) != "CustomResourceDefinition") continue;
      const json& spec = o["spec"];
      if (Str(spec, "group") + "/" + "v1" == av && Str(spec["names"], "kind") == kind) return info;
    }
    return NotFound("the cluster does not serve " + std::string(av) + " " + std::string(kind));
  }

  Result<std::vector<k8s::ResourceInfo>> Discover() override { return std::vector<k8s::ResourceInfo>{}; }
  // The simulated clusters declare every field: nothing is dropped.
  Result<std::string> GetRaw(std::string_view path) override {
    return NotFound("the simulated cluster serves no " + std::string(path));
  }
  const k8s::RestConfig& rest_config() const override { return rc_; }
  const k8s::ClientOptions& options() const override { return o_; }

 private:
  std::string Ns(std::string_view kind, std::string_view ns) const {
    if (ClusterScoped(std::string(kind))) return "";
    return ns.empty() ? rc_.default_namespace : std::string(ns);
  }

  // The call takes its latency, then answers as the schedule says.
  Status Answer(const char* op, const std::string& kind, const std::string& ns, const std::string& name) {
    const Faults& f = c_.faults;
    const Clock::Time start = fleet_.clock_.Now();
    Status s = Status::Ok();
    bool down = false;
    for (const auto& [from, to] : f.outages) down = down || (start >= from && start < to);
    if (down) {
      s = Unavailable("connect: connection refused (simulated outage)");
    } else {
      fleet_.clock_.AdvanceTo(start + f.latency);
      const double u = c_.random->Uniform();
      if (u < f.throttle_rate) {
        s = Unavailable("429 Too Many Requests (simulated)");
        s.set_retry_after(std::chrono::seconds(2));
      } else if (u < f.throttle_rate + f.error_rate) {
        s = Unavailable("500 Internal Server Error (simulated)");
      }
    }
    fleet_.Trace(std::to_string(Ms(start)) + " " + c_.name + " " + op + " " + kind + " " + ns + "/" + name + " " +
                 (s.ok() ? "ok" : std::string(CodeName(s.code()))));
    return s;
  }

  Fleet& fleet_;
  Fleet::Cluster& c_;
  const k8s::RestConfig rc_;
  const k8s::ClientOptions o_;
};

void Fleet::Add(const std::string& name, Faults f) {
  auto c = std::make_unique<Cluster>();
  c->name = name;
  c->faults = std::move(f);
  // Each cluster its own stream: what one draws does not move another's.
  uint64_t h = seed_ ^ 0x9e3779b97f4a7c15ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  c->random = std::make_unique<Random>(h);
  std::lock_guard<std::mutex> g(mu_);
  clusters_[name] = std::move(c);
}

void Fleet::SetFaults(const std::string& name, Faults f) {
  std::lock_guard<std::mutex> g(mu_);
  clusters_.at(name)->faults = std::move(f);
}

Result<std::shared_ptr<k8s::ClusterClient>> Fleet::Client(const k8s::RestConfig& rc, const k8s::ClientOptions& o) {
  const std::string name = rc.server.substr(rc.server.rfind('/') + 1);
  std::lock_guard<std::mutex> g(mu_);
  auto it = clusters_.find(name);
  if (it == clusters_.end()) return NotFound("no simulated cluster " + name);
  return std::shared_ptr<k8s::ClusterClient>(std::make_shared<SimClient>(*this, *it->second, rc, o));
}

ClusterState Fleet::State(const std::string& name) {
  std::lock_guard<std::mutex> g(mu_);
  return clusters_.at(name)->state;
}

void Fleet::Remove(const std::string& cluster, const ClusterState::Key& k) {
  std::lock_guard<std::mutex> g(mu_);
  clusters_.at(cluster)->state.objects.erase(k);
}

void Fleet::Trace(const std::string& line) {
  std::lock_guard<std::mutex> g(mu_);
  for (unsigned char ch : line) hash_ = (hash_ ^ ch) * 1099511628211ull;
  hash_ = (hash_ ^ '\n') * 1099511628211ull;
  ++lines_;
  trace_.push_back(line);
  if (trace_.size() > 200) trace_.erase(trace_.begin(), trace_.begin() + 100);
}

uint64_t Fleet::TraceHash() {
  std::lock_guard<std::mutex> g(mu_);
  return hash_;
}

size_t Fleet::TraceLines() {
  std::lock_guard<std::mutex> g(mu_);
  return lines_;
}

std::vector<std::string> Fleet::TraceTail(size_t n) {
  std::lock_guard<std::mutex> g(mu_);
  return {trace_.end() - static_cast<std::ptrdiff_t>(std::min(n, trace_.size())), trace_.end()};
}

std::vector<Fleet::Applied> Fleet::AppliesOf(const std::string& cluster) {
  std::lock_guard<std::mutex> g(mu_);
  return clusters_.at(cluster)->applies;
}

}  // namespace eco::sim
