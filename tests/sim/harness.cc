#include "harness.h"

#include <cstdlib>

#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "status/query.h"
#include "store/sqlite_store.h"

namespace eco::sim {

using appcontext::ResourceSet;
using nlohmann::json;

uint64_t SeedOr(uint64_t fallback) {
  const char* s = std::getenv("ECO_SIM_SEED");
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : fallback;
}

struct Sim::Instance {
  std::unique_ptr<SimStore> store;
  std::unique_ptr<rsync::Executor> exec;
  std::unique_ptr<Random> random;
  std::unique_ptr<rsync::Rsync> rsync;
};

Sim::Sim(uint64_t seed) : seed_(seed), random_(seed), fleet_(clock_, seed) {
  store::SqliteOptions so;
  so.dir = dir_.path() + "/db";
  so.clock = &clock_;
  so.random = &random_;
  auto s = store::OpenSqliteStore(so);
  if (s.ok()) st_ = std::move(*s);
  opts_.workers = 1;
  opts_.retry_base = std::chrono::seconds(1);
  opts_.retry_cap = std::chrono::minutes(10);
  opts_.poll = std::chrono::seconds(5);
  opts_.lock_retry = std::chrono::seconds(5);
  opts_.lease_ttl = std::chrono::seconds(30);
  opts_.settle_timeout = std::chrono::minutes(5);
  opts_.clock = &clock_;
  opts_.client_factory = [this](const k8s::RestConfig& rc, const k8s::ClientOptions& o) {
    return fleet_.Client(rc, o);
  };
}

Sim::~Sim() {
  for (size_t i = 0; i < instances_.size(); ++i) {
    if (instances_[i] && instances_[i]->rsync) StopRsync(static_cast<int>(i));
  }
}

std::vector<std::string> Sim::AddClusters(int n, const std::string& prefix) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "%s%04d", prefix.c_str(), i);
    AddCluster(name);
    out.push_back(name);
  }
  return out;
}

void Sim::AddCluster(const std::string& name, Faults f) {
  fleet_.Add(name, std::move(f));
  const std::string kc = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " +
                         Fleet::ServerOf(name) +
                         "\nusers:\n- name: u\n  user:\n    token: sim\ncontexts:\n- name: c\n  context:\n"
                         "    cluster: c\n    user: u\ncurrent-context: c\n";
  (void)st_->Put(catalog::ObjectKey("cluster", {"sim", name}), json{{"metadata", {{"name", name}}}}.dump());
  (void)st_->Put(catalog::FileKey("cluster", {"sim", name}), kc);
}

int Sim::StartRsync() {
  auto in = std::make_unique<Instance>();
  in->store = std::make_unique<SimStore>(*st_, clock_);
  in->exec = rsync::Executor::Manual(clock_);
  in->random = std::make_unique<Random>(seed_ * 31 + instances_.size());
  rsync::Options o = opts_;
  o.executor = in->exec.get();
  o.random = in->random.get();
  in->rsync = std::make_unique<rsync::Rsync>(*in->store, o);
  Status s = in->rsync->Start();
  if (!s.ok()) return -1;
  instances_.push_back(std::move(in));
  return static_cast<int>(instances_.size()) - 1;
}

void Sim::Kill(int i) {
  Instance& in = *instances_.at(i);
  in.store->Kill();
  // Whatever it had queued dies with it; Stop only lets its objects go
  // (every store call fails now, so it writes nothing).
  in.exec->Shutdown();
  in.rsync->Stop();
  in.rsync.reset();
  in.exec.reset();
}

void Sim::StopRsync(int i) {
  Instance& in = *instances_.at(i);
  in.rsync->Stop();  // runs its executor until its contexts let go
  in.rsync.reset();
  in.exec.reset();
}

size_t Sim::Live() const {
  size_t n = 0;
  for (const auto& in : instances_) n += in && in->rsync ? 1 : 0;
  return n;
}

ResourceSet App(int configmaps, const std::string& version) {
  ResourceSet rs;
  rs.resources.push_back({"sim+Namespace", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "sim"}}}}});
  for (int i = 0; i < configmaps; ++i) {
    const std::string n = "cm" + std::to_string(i);
    rs.resources.push_back({n + "+ConfigMap",
                            {{"apiVersion", "v1"},
                             {"kind", "ConfigMap"},
                             {"metadata", {{"name", n}}},
                             {"data", {{"version", version}}}}});
  }
  rs.resources.push_back({"web+Deployment",
                          {{"apiVersion", "apps/v1"},
                           {"kind", "Deployment"},
                           {"metadata", {{"name", "web"}}},
                           {"spec", {{"replicas", 1}, {"template", {{"metadata", {{"labels", {{"v", version}}}}}}}}}}});
  return rs;
}

std::string Sim::NewContext(const std::string& dig, const ResourceSet& rs, const std::string& from) {
  Dig& d = digs_[dig];
  appcontext::Contexts ctx(*st_, clock_, random_);
  appcontext::Meta m;
  m.kind = "dig";
  m.project = "p";
  m.composite_app = "ca";
  m.composite_app_version = "v1";
  m.dig = dig;
  m.namespace_ = "sim";
  m.status_context = d.status_ctx;
  m.update_from = from;
  m.app_order = {"app1"};
  auto id = ctx.Create(m, 0);
  if (!id.ok()) return "";
  std::vector<appcontext::ClusterRef> refs;
  int g = 0;
  for (const auto& c : d.clusters) refs.push_back({"sim", c, ++g, true, 0});
  if (!ctx.PutApp(*id, "app1", rs, refs).ok()) return "";
  return *id;
}

void Sim::WriteState(const std::string& dig) {
  Dig& d = digs_[dig];
  json rec = {{"statusctxid", d.status_ctx}, {"actions", d.actions}};
  (void)st_->Put(catalog::StateKey("deploymentIntentGroup", {"p", "ca", "v1", dig}), rec.dump());
}

std::string Sim::Instantiate(const std::string& dig, const std::vector<std::string>& clusters, const ResourceSet& rs,
                             const json& rollout) {
  Dig& d = digs_[dig];
  d.clusters = clusters;
  (void)st_->Put(catalog::ObjectKey("deploymentIntentGroup", {"p", "ca", "v1", dig}),
                 json{{"metadata", {{"name", dig}}}, {"spec", json::object()}}.dump());
  const std::string id = NewContext(dig, rs, "");
  appcontext::Contexts ctx(*st_, clock_, random_);
  store::Txn txn;
  txn.compares.push_back(ctx.NotSealed(id));
  txn.success = ctx.SealOps(id, "Created", {"instantiate", "", {}, rollout});
  (void)st_->Commit(txn);
  d.status_ctx = id;
  d.instance = id;
  d.revision = 1;
  d.actions = {{{"state", "Created"}, {"instance", ""}, {"time", catalog::NowRfc3339(clock_)}, {"revision", 0}},
               {{"state", "Instantiated"}, {"instance", id}, {"time", catalog::NowRfc3339(clock_)}, {"revision", 1}}};
  WriteState(dig);
  return id;
}

std::string Sim::Update(const std::string& dig, const ResourceSet& rs, const json& rollout) {
  Dig& d = digs_.at(dig);
  const std::string from = d.instance;
  const std::string id = NewContext(dig, rs, from);
  appcontext::Contexts ctx(*st_, clock_, random_);
  store::Txn txn;
  txn.compares.push_back(ctx.NotSealed(id));
  txn.success = ctx.SealOps(id, "Created", {"update", from, {}, rollout});
  (void)st_->Commit(txn);
  d.actions.push_back({{"state", "Updated"}, {"instance", from}, {"time", catalog::NowRfc3339(clock_)}, {"revision", d.revision}});
  d.instance = id;
  ++d.revision;
  d.actions.push_back({{"state", "Instantiated"}, {"instance", id}, {"time", catalog::NowRfc3339(clock_)}, {"revision", d.revision}});
  WriteState(dig);
  return id;
}

void Sim::Terminate(const std::string& dig) {
  Dig& d = digs_.at(dig);
  appcontext::Contexts ctx(*st_, clock_, random_);
  auto seq = ctx.NextEventSeq(d.instance);
  store::Txn txn;
  txn.success = ctx.EnqueueOps(d.instance, seq.ok() ? *seq : 1, {"terminate", ""});
  (void)st_->Commit(txn);
  d.actions.push_back({{"state", "Terminated"}, {"instance", d.instance}, {"time", catalog::NowRfc3339(clock_)}, {"revision", d.revision}});
  WriteState(dig);
}

std::string Sim::StatusOf(const std::string& context) {
  appcontext::Contexts ctx(*st_, clock_, random_);
  auto s = ctx.GetStatus(context);
  return s.ok() ? *s : "?";
}

void Sim::Step() {
  size_t ran = 0;
  do {
    ran = 0;
    for (auto& in : instances_) {
      if (in && in->exec) ran += in->exec->RunReady();
    }
  } while (ran > 0);
}

bool Sim::RunUntil(const std::function<bool()>& done, Clock::Duration limit) {
  const Clock::Time end = clock_.Now() + limit;
  for (;;) {
    Step();
    if (done()) return true;
    Clock::Time next;
    if (!clock_.NextTimer(&next) || next > end) {
      clock_.AdvanceTo(end);
      Step();
      return done();
    }
    clock_.AdvanceTo(next);
  }
}

void Sim::ReportReady(const std::string& dig, const std::function<bool(const std::string&)>& healthy,
                      const std::function<bool(const std::string&)>& reported) {
  const Dig& d = digs_.at(dig);
  for (const auto& c : d.clusters) {
    if (reported && !reported(c)) continue;
    auto dep = appcontext::ReadDeployed(*st_, d.status_ctx, "app1", "sim+" + c);
    if (!dep.ok() || !dep->has_value()) continue;
    std::map<std::string, int64_t> live;  // "<name>+<Kind>" -> generation
    for (const auto& [k, o] : fleet_.State(c).objects) {
      live[std::get<3>(k) + "+" + std::get<1>(k)] = o["metadata"].value("generation", int64_t{0});
    }
    appcontext::ReadyRecord r;
    r.ready = true;
    for (const auto& [name, res] : (*dep)->resources) {
      auto l = live.find(name);
      const std::string st = l == live.end() ? "NotPresent" : healthy(c) ? "Ready" : "NotReady";
      r.resources[name] = st;
      if (l != live.end() && l->second > 0) r.generations[name] = l->second;
      r.ready = r.ready && st == "Ready";
    }
    r.time = catalog::NowRfc3339(clock_);
    const std::string key = appcontext::ReadyKey(d.status_ctx, "app1", "sim+" + c);
    auto cur = appcontext::ReadReady(*st_, d.status_ctx, "app1", "sim+" + c);
    if (cur.ok() && cur->has_value() && (*cur)->resources == r.resources && (*cur)->generations == r.generations &&
        (*cur)->ready == r.ready)
      continue;
    (void)st_->Put(key, appcontext::ToJson(r).dump());
  }
}

void Sim::RunFor(Clock::Duration d) {
  RunUntil([] { return false; }, d);
}

namespace {

// What rsync puts on a cluster for `rs` in namespace "sim".
std::map<ClusterState::Key, json> Desired(const ResourceSet& rs) {
  std::map<ClusterState::Key, json> out;
  for (const auto& r : rs.resources) {
    const std::string kind = r.object["kind"];
    const std::string ns = kind == "Namespace" ? "" : "sim";
    out[{r.object["apiVersion"], kind, ns, r.object["metadata"]["name"]}] = r.object;
  }
  return out;
}

}  // namespace

std::string Sim::ClustersHold(const std::string& dig, const ResourceSet& rs) {
  const auto want = Desired(rs);
  for (const auto& c : digs_.at(dig).clusters) {
    const ClusterState s = fleet_.State(c);
    if (s.objects.size() != want.size()) {
      return "cluster " + c + " holds " + std::to_string(s.objects.size()) + " objects, not " +
             std::to_string(want.size());
    }
    for (const auto& [k, o] : want) {
      auto it = s.objects.find(k);
      if (it == s.objects.end()) return "cluster " + c + " lacks " + std::get<1>(k) + " " + std::get<3>(k);
      const char* field = o.contains("data") ? "data" : "spec";
      if (o.contains(field) && it->second.value(field, json()) != o[field]) {
        return "cluster " + c + " holds an old " + std::get<1>(k) + " " + std::get<3>(k);
      }
    }
  }
  return "";
}

std::string Sim::ClustersHoldNothing(const std::string& dig) {
  for (const auto& c : digs_.at(dig).clusters) {
    const ClusterState s = fleet_.State(c);
    if (!s.objects.empty()) return "cluster " + c + " still holds " + std::to_string(s.objects.size()) + " objects";
  }
  return "";
}

std::string Sim::StatusSays(const std::string& dig, const std::string& state, size_t resources) {
  auto q = status::ParseQuery({{"status", "deployed"}});
  if (!q.ok()) return q.status().ToString();
  auto ans = status::DigStatus(*st_, {"p", "ca", "v1", dig}, *q);
  if (!ans.ok()) return "status: " + ans.status().ToString();
  const json counts = ans->value("deployedCounts", json::object());
  const size_t want = resources * digs_.at(dig).clusters.size();
  if (counts != json{{state, want}}) return "status says " + counts.dump() + ", not " + std::to_string(want) + " " + state;
  return "";
}

std::string Sim::NothingInFlight() {
  store::RangeOptions ro;
  ro.keys_only = true;
  auto active = st_->Range(appcontext::ActivePrefix(), ro);
  if (!active.ok()) return active.status().ToString();
  if (!active->kvs.empty()) return "still active: " + active->kvs[0].key;
  for (const auto& [name, d] : digs_) {
    for (const auto& id : {d.status_ctx, d.instance}) {
      auto evs = st_->Range(appcontext::EventPrefix(id));
      if (!evs.ok()) return evs.status().ToString();
      for (const auto& kv : evs->kvs) {
        if (kv.value.find("\"pending\"") != std::string::npos) return "pending: " + kv.key + " " + kv.value;
      }
    }
  }
  for (const auto& in : instances_) {
    if (in && in->rsync && in->rsync->ActiveContexts() != 0) return "an rsync still works on a context";
  }
  return "";
}

}  // namespace eco::sim
