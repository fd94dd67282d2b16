// rsync against a real kube-sim fleet and an embedded store: contexts are
// built and sealed as the scheduler does (Contexts + SealOps), every client
// is the real one wrapped in a recorder that keeps the ordered list of
// applies and deletes per cluster.
#include "rsync/rsync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "common/log.h"
#include "common/metrics.h"
#include "catalog/catalog.h"
#include "k8s/client.h"
#include "rsync/cluster_task.h"
#include "k8s/kubeconfig.h"
#include "k8s/readiness.h"
#include "crds.h"
#include "forwarding_store.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "rsync/metrics.h"
#include "store/lock.h"
#include "store/sqlite_store.h"

namespace eco::rsync {
namespace {

using appcontext::ClusterRef;
using appcontext::Contexts;
using appcontext::Resource;
using appcontext::ResourceSet;
using nlohmann::json;
using std::chrono::milliseconds;

// Applies and deletes, per cluster, in the order they reached it.
class Recorder {
 public:
  void Add(const std::string& cluster, const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    log_[cluster].push_back(what);
  }
  std::vector<std::string> Of(const std::string& cluster) {
    std::lock_guard<std::mutex> g(mu_);
    return log_[cluster];
  }
  size_t Total() {
    std::lock_guard<std::mutex> g(mu_);
    size_t n = 0;
    for (const auto& [c, v] : log_) n += v.size();
    return n;
  }
  void Clear() {
    std::lock_guard<std::mutex> g(mu_);
    log_.clear();
    reads_.clear();
  }
  // Reads of objects, apart from the applies and deletes above.
  void AddRead(const std::string& cluster, const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    reads_[cluster].push_back(what);
  }
  std::vector<std::string> ReadsOf(const std::string& cluster) {
    std::lock_guard<std::mutex> g(mu_);
    return reads_[cluster];
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::string>> log_;
  std::map<std::string, std::vector<std::string>> reads_;
};

class RecordingClient : public k8s::ForwardingClusterClient {
 public:
  RecordingClient(std::shared_ptr<k8s::ClusterClient> inner, Recorder* rec)
      : ForwardingClusterClient(std::move(inner)), rec_(rec) {
    const std::string& s = rest_config().server;
    cluster_ = s.substr(s.rfind('/') + 1);
  }
  using ForwardingClusterClient::Apply;
  Result<json> Apply(const json& obj, const k8s::ApplyOptions& o) override {
    auto r = inner().Apply(obj, o);
    if (r.ok()) {
      rec_->Add(cluster_, "apply " + obj["kind"].get<std::string>() + "/" +
                              obj["metadata"]["name"].get<std::string>());
    }
    return r;
  }
  Result<json> Get(std::string_view av, std::string_view kind, std::string_view ns,
                   std::string_view name) override {
    rec_->AddRead(cluster_, "get " + std::string(kind) + "/" + std::string(name));
    return inner().Get(av, kind, ns, name);
  }
  Result<k8s::ObjectList> List(std::string_view av, std::string_view kind, std::string_view ns,
                               const k8s::ListOptions& o) override {
    rec_->AddRead(cluster_, std::string(o.metadata_only ? "list-metadata " : "list ") + std::string(kind) + " " +
                                std::string(ns));
    return inner().List(av, kind, ns, o);
  }
  Status Delete(std::string_view av, std::string_view kind, std::string_view ns,
                std::string_view name, k8s::Propagation p) override {
    Status s = inner().Delete(av, kind, ns, name, p);
    if (s.ok() || s.code() == Code::kNotFound)
      rec_->Add(cluster_, "delete " + std::string(kind) + "/" + std::string(name));
    return s;
  }

 private:
  Recorder* rec_;
  std::string cluster_;
};

using eco::testing::ReadFile;

json ConfigMap(const std::string& name, const std::string& v) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"v", v}}}};
}

json Deployment(const std::string& name) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "nginx"}}})}}}}}}}};
}

json Crd() {
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "widgets.example.com"}}},
          {"spec",
           {{"group", "example.com"},
            {"scope", "Namespaced"},
            {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
            {"versions", json::array({{{"name", "v1"}, {"served", true}, {"storage", true}}})}}}};
}

json HookJob(const std::string& name) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"restartPolicy", "Never"},
                {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}}};
}

// Everything a chart can bring: a CRD, a pre-install hook, a namespace and
// objects in it (without metadata.namespace: they go to meta.namespace_).
ResourceSet FullSet() {
  ResourceSet rs;
  rs.crds.push_back({"widgets.example.com+CustomResourceDefinition", Crd()});
  rs.hooks.push_back({"pre-hook+Job", HookJob("pre-hook")});
  rs.hook_events["pre-install"] = {"pre-hook+Job"};
  rs.resources.push_back(
      {"apps+Namespace",
       {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "apps"}}}}});
  rs.resources.push_back({"cfg+ConfigMap", ConfigMap("cfg", "1")});
  rs.resources.push_back({"web+Deployment", Deployment("web")});
  rs.resources.push_back({"w1+Widget",
                          {{"apiVersion", "example.com/v1"},
                           {"kind", "Widget"},
                           {"metadata", {{"name", "w1"}}},
                           {"spec", {{"size", 3}}}}});
  return rs;
}

ResourceSet ConfigMaps(const std::vector<std::pair<std::string, std::string>>& cms) {
  ResourceSet rs;
  for (const auto& [n, v] : cms) rs.resources.push_back({n + "+ConfigMap", ConfigMap(n, v)});
  return rs;
}

class RsyncTest : public ::testing::Test {
 protected:
  static constexpr int kClusters = 3;

  void SetUp() override {
    testing::KubeSimOptions o;
    o.clusters = kClusters;
    o.ready_delay_ms = 20;
    sim_ = std::make_unique<testing::KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
    for (int i = 1; i <= kClusters; ++i) {
      std::string c = "cluster-" + std::to_string(i);
      std::string kc = ReadFile(sim_->kubeconfig(c));
      ASSERT_FALSE(kc.empty()) << c;
      ASSERT_TRUE(st_->Put(catalog::FileKey("cluster", {"prov", c}), kc).ok());
    }
  }

  Options Opts(Recorder* rec) {
    Options o;
    o.workers = 4;
    o.retry_base = milliseconds(50);
    o.retry_cap = milliseconds(300);
    o.poll = milliseconds(100);
    o.lock_retry = milliseconds(200);
    o.lease_ttl = std::chrono::seconds(3);
    o.client.connect_timeout = milliseconds(1000);
    o.client.request_timeout = milliseconds(5000);
    o.client_factory =
        [rec](const k8s::RestConfig& rc,
              const k8s::ClientOptions& co) -> Result<std::shared_ptr<k8s::ClusterClient>> {
      auto c = k8s::NewClusterClient(rc, co);
      if (!c.ok()) return c.status();
      return std::shared_ptr<k8s::ClusterClient>(std::make_shared<RecordingClient>(
          std::shared_ptr<k8s::ClusterClient>(std::move(*c)), rec));
    };
    return o;
  }

  std::unique_ptr<Rsync> StartRsync(Recorder* rec) {
    auto r = std::make_unique<Rsync>(*st_, Opts(rec));
    eco::Status s = r->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return r;
  }

  // A sealed context with one app on `clusters`, its first event queued.
  std::string Context(const ResourceSet& rs, const std::vector<std::string>& clusters,
                      const std::string& event, const std::string& other = "",
                      const std::string& status_ctx = "") {
    appcontext::Meta m;
    m.kind = "dig";
    m.project = "p";
    m.composite_app = "ca";
    m.dig = dig_;
    m.adopt = adopt_;
    m.field_validation = field_validation_;
    m.namespace_ = ns_;
    m.status_context = status_ctx;
    m.update_from = other;
    m.app_order = {"app1"};
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    std::vector<ClusterRef> refs;
    int g = 0;
    for (const auto& c : clusters) refs.push_back({"prov", c, ++g, true, 0});
    EXPECT_TRUE(ctx_->PutApp(*id, "app1", rs, refs).ok());
    store::Txn txn;
    txn.compares.push_back(ctx_->NotSealed(*id));
    txn.success = ctx_->SealOps(*id, "Created", {event, other});
    auto r = st_->Commit(txn);
    EXPECT_TRUE(r.ok() && r->succeeded);
    return *id;
  }

  void Enqueue(const std::string& id, const std::string& event, const std::string& other = "",
               const std::vector<std::string>& clusters = {}) {
    auto seq = ctx_->NextEventSeq(id);
    ASSERT_TRUE(seq.ok());
    store::Txn txn;
    txn.success = ctx_->EnqueueOps(id, *seq, {event, other, clusters});
    ASSERT_TRUE(st_->Commit(txn).ok());
  }

  std::string StatusOf(const std::string& id) {
    auto s = ctx_->GetStatus(id);
    return s.ok() ? *s : "?";
  }
  bool WaitStatus(const std::string& id, const std::string& want,
                  milliseconds limit = milliseconds(60000)) {
    bool ok = testing::WaitUntil([&] { return StatusOf(id) == want; }, limit);
    if (!ok)
      ADD_FAILURE() << "context " << id << " is " << StatusOf(id) << ", not " << want << "\n"
                    << Events(id);
    return ok;
  }
  std::string Events(const std::string& id) {
    auto r = st_->Range(appcontext::EventPrefix(id));
    std::string out;
    if (r.ok()) {
      for (const auto& kv : r->kvs) out += kv.value + "\n";
    }
    return out;
  }
  std::vector<json> EventList(const std::string& id) {
    std::vector<json> out;
    auto r = st_->Range(appcontext::EventPrefix(id));
    if (r.ok()) {
      for (const auto& kv : r->kvs) out.push_back(json::parse(kv.value));
    }
    return out;
  }
  appcontext::DeployedRecord Record(const std::string& sc, const std::string& cluster) {
    auto r = appcontext::ReadDeployed(*st_, sc, "app1", "prov+" + cluster);
    if (!r.ok() || !r->has_value()) return {};
    return **r;
  }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok());
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok());
    return std::shared_ptr<k8s::ClusterClient>(std::move(*c));
  }
  Result<json> GetCm(const std::string& cluster, const std::string& name) {
    return Client(cluster)->Get("v1", "ConfigMap", "default", name);
  }

  std::string ns_ = "default";  // where namespaced objects without a namespace go
  std::string dig_ = "dig";     // the DIG the next Context() is of (its owner)
  bool adopt_ = false;          // its spec.adopt
  std::string field_validation_ = "Warn";  // its spec.fieldValidation
  testing::TempDir dir_;
  std::unique_ptr<testing::KubeSim> sim_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
};

const std::vector<std::string> kAll = {"cluster-1", "cluster-2", "cluster-3"};

TEST_F(RsyncTest, InstantiatePutsEveryObjectOnEveryClusterInOrder) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  ns_ = "apps";
  std::string id = Context(FullSet(), kAll, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  const std::vector<std::string> want = {"apply CustomResourceDefinition/widgets.example.com",
                                         "apply Job/pre-hook",
                                         "apply Namespace/apps",
                                         "apply ConfigMap/cfg",
                                         "apply Deployment/web",
                                         "apply Widget/w1"};
  for (const auto& c : kAll) {
    EXPECT_EQ(rec.Of(c), want) << c;
    auto r = Record(id, c);
    EXPECT_EQ(r.connectivity, "Available") << c;
    ASSERT_EQ(r.resources.size(), 5u) << c;  // the CRD too
    for (const auto& [name, d] : r.resources) {
      EXPECT_EQ(d.status, "Applied") << c << " " << name;
      EXPECT_EQ(d.ref, id);
    }
    // Ownership is checked from one metadata-only list per kind and
    // namespace, not a read of each object before its apply.
    const auto reads = rec.ReadsOf(c);
    for (const char* one : {"get ConfigMap/cfg", "get Deployment/web", "get Widget/w1", "get Namespace/apps"})
      EXPECT_EQ(std::count(reads.begin(), reads.end(), one), 0) << c << ": " << one;
    EXPECT_EQ(std::count(reads.begin(), reads.end(), "list-metadata ConfigMap apps"), 1) << c;
    EXPECT_EQ(std::count(reads.begin(), reads.end(), "list-metadata Namespace "), 1) << c;
    auto cl = Client(c);
    EXPECT_TRUE(cl->Get("apps/v1", "Deployment", "apps", "web").ok()) << c;  // meta.namespace_
    EXPECT_TRUE(cl->Get("example.com/v1", "Widget", "apps", "w1").ok()) << c;
    auto job = cl->Get("batch/v1", "Job", "default", "pre-hook");
    ASSERT_TRUE(job.ok()) << c;
    EXPECT_TRUE(k8s::CheckReady(*job).ready)
        << "the hook completed before the main resources: " << c;
  }
  auto evs = EventList(id);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["status"], "done");
  // Nothing left to do: the context is no longer active.
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        auto a = st_->Get(appcontext::ActiveKey(id));
        return a.ok() && !a->has_value();
      },
      milliseconds(10000)));
}

// The metrics rsync exports: outcomes, retries and connectivity by cluster
// count (no cluster label), and each cluster's latency only when asked.
TEST_F(RsyncTest, MetricsCountOutcomesRetriesAndConnectivity) {
  auto sample = [](const std::string& series) {
    const std::string text = metrics::Render();
    const size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 2));
  };
  const double applied0 = sample("eco_rsync_resources_total{op=\"apply\",result=\"ok\"}");
  const double retries0 = sample("eco_rsync_retries_total");
  const double retrying0 = sample("eco_rsync_clusters{connectivity=\"Retrying\"}");
  // One log line when a cluster stops answering and one when it is back,
  // however many retries come between.
  std::mutex log_mu;
  std::vector<std::string> lines;
  log::SetSinkForTest([&](const std::string& line) {
    std::lock_guard<std::mutex> l(log_mu);
    lines.push_back(line);
  });
  struct Unsink {
    ~Unsink() { log::SetSinkForTest(nullptr); }
  } unsink;
  auto count = [&](const std::string& message) {
    std::lock_guard<std::mutex> l(log_mu);
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find("\"message\":\"" + message + "\"") != std::string::npos &&
             line.find("\"cluster\":\"prov+cluster-2\"") != std::string::npos;
    });
  };
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  Recorder rec;
  Options o = Opts(&rec);
  o.cluster_metrics = true;
  auto rs = std::make_unique<Rsync>(*st_, o);
  ASSERT_TRUE(rs->Start().ok());
  std::string id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}}), kAll, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return Record(id, "cluster-2").connectivity == "Retrying"; },
                                 milliseconds(30000)));
  EXPECT_GE(sample("eco_rsync_retries_total"), retries0 + 1);
  EXPECT_EQ(sample("eco_rsync_clusters{connectivity=\"Retrying\"}"), retrying0 + 1);
  ASSERT_TRUE(testing::WaitUntil([&] { return sample("eco_rsync_retries_total") >= retries0 + 3; },
                                 milliseconds(30000)));
  EXPECT_EQ(count("cluster not answering; retrying"), 1);
  // While the event runs: the down cluster's two resources Pending, the
  // others' Applied (they stay counted until the event ends).
  auto state = [&](const char* s) {
    return sample(std::string("eco_rsync_event_resources{status=\"") + s + "\"}");
  };
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return state("Applied") == 2.0 * (kAll.size() - 1); }, milliseconds(30000)))
      << metrics::Render();
  EXPECT_EQ(state("Pending"), 2);
  EXPECT_EQ(state("Failed"), 0);
  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  // The event ended: its resources left the gauge.
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return state("Applied") == 0 && state("Pending") == 0; }, milliseconds(10000)))
      << metrics::Render();
  EXPECT_EQ(sample("eco_rsync_clusters{connectivity=\"Retrying\"}"), retrying0);
  log::Flush();
  EXPECT_EQ(count("cluster not answering; retrying"), 1);
  EXPECT_EQ(count("cluster answers again"), 1);
  EXPECT_EQ(sample("eco_rsync_resources_total{op=\"apply\",result=\"ok\"}"), applied0 + 2 * kAll.size());
  for (const auto& c : kAll) {
    EXPECT_GT(sample("eco_rsync_cluster_request_seconds{cluster=\"prov+" + c + "\"}"), 0) << c;
  }
}

TEST_F(RsyncTest, ClusterDownRetriesWhileOthersCompleteThenConverges) {
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}}), kAll, "instantiate");
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return Record(id, "cluster-2").connectivity == "Retrying" &&
               Record(id, "cluster-1").resources["b+ConfigMap"].status == "Applied" &&
               Record(id, "cluster-3").resources["b+ConfigMap"].status == "Applied";
      },
      milliseconds(30000)));
  EXPECT_FALSE(Record(id, "cluster-2").message.empty());
  EXPECT_EQ(Record(id, "cluster-2").resources["a+ConfigMap"].status, "Pending");
  EXPECT_EQ(StatusOf(id), "Instantiating");
  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  auto r = Record(id, "cluster-2");
  EXPECT_EQ(r.connectivity, "Available");
  EXPECT_EQ(r.resources["a+ConfigMap"].status, "Applied");
  EXPECT_EQ(r.resources["b+ConfigMap"].status, "Applied");
  EXPECT_TRUE(GetCm("cluster-2", "b").ok());
}

TEST_F(RsyncTest, MaxRetriesFailsTheEvent) {
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  Recorder rec;
  Options o = Opts(&rec);
  o.max_retries = 2;
  Rsync rs(*st_, o);
  ASSERT_TRUE(rs.Start().ok());
  std::string id = Context(ConfigMaps({{"a", "1"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  EXPECT_NE(EventList(id)[0].value("message", "").find("retries exceeded"), std::string::npos)
      << Events(id);
  EXPECT_EQ(Record(id, "cluster-1").connectivity, "Retrying");
}

TEST_F(RsyncTest, ApplyErrorFailsTheClusterAndTheEvent) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  ResourceSet set = ConfigMaps({{"a", "1"}});
  set.resources.push_back(
      {"x+Gadget", {{"apiVersion", "v1"}, {"kind", "Gadget"}, {"metadata", {{"name", "x"}}}}});
  set.resources.push_back({"b+ConfigMap", ConfigMap("b", "1")});
  std::string id = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  auto r = Record(id, "cluster-1");
  EXPECT_EQ(r.resources["a+ConfigMap"].status, "Applied");
  EXPECT_EQ(r.resources["x+Gadget"].status, "Failed");
  EXPECT_NE(r.resources["x+Gadget"].error.find("Gadget"), std::string::npos);
  EXPECT_EQ(r.resources["b+ConfigMap"].status, "Pending");  // never reached
  auto evs = EventList(id);
  EXPECT_EQ(evs[0]["status"], "error");
  EXPECT_NE(evs[0].value("message", "").find("x+Gadget"), std::string::npos);
}

// A malformed object (metadata not an object) fails its cluster with a
// clear message; rsync goes on.
TEST_F(RsyncTest, MalformedObjectFailsItsClusterClearly) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  ResourceSet set = ConfigMaps({{"a", "1"}});
  set.resources.push_back({"x+ConfigMap", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", "x"}}});
  std::string id = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  auto r = Record(id, "cluster-1");
  EXPECT_EQ(r.resources["a+ConfigMap"].status, "Applied");
  EXPECT_EQ(r.resources["x+ConfigMap"].status, "Failed");
  EXPECT_NE(r.resources["x+ConfigMap"].error.find("not a Kubernetes object"), std::string::npos)
      << r.resources["x+ConfigMap"].error;
  // Still working: the next context deploys.
  std::string next = Context(ConfigMaps({{"b", "1"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(next, "Instantiated"));
}

TEST_F(RsyncTest, StopEndsTheWaitingAndFailsTheEvent) {
  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string id = Context(ConfigMaps({{"a", "1"}}), kAll, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return Record(id, "cluster-3").connectivity == "Retrying"; },
                                 milliseconds(30000)));
  ASSERT_TRUE(st_->Put(appcontext::StopKey(id), "true").ok());
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  auto evs = EventList(id);
  EXPECT_EQ(evs[0]["status"], "error");
  EXPECT_EQ(evs[0].value("message", ""), "stopped");
  // Later events are refused while the flag is set.
  Enqueue(id, "instantiate");
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return EventList(id).size() == 2 && EventList(id)[1]["status"] == "skip"; },
      milliseconds(30000)))
      << Events(id);
}

// Agents that answer at once, and a store slow to read outcomes: the
// outcome lands while the task reads it, so the outcome watch's wake (and
// the recheck, due every millisecond) race the task's own read. Whichever
// wins, each task ends once: a second end ran its event's bookkeeping
// after the event was gone (eco died of it at 1,000 agent clusters).
TEST_F(RsyncTest, AgentOutcomesRacingTheirWakesEndEachTaskOnce) {
  class SlowOutcomes : public testing::ForwardingStore {
   public:
    using ForwardingStore::ForwardingStore;
    Result<std::optional<store::KeyValue>> Get(const std::string& key) override {
      if (key.starts_with(appcontext::OutcomePrefix())) std::this_thread::sleep_for(milliseconds(20));
      return inner_->Get(key);
    }
  };
  SlowOutcomes slow(*st_);
  std::vector<std::string> agents;
  for (int i = 0; i < 40; ++i) {
    agents.push_back("edge-" + std::to_string(i));
    ASSERT_TRUE(st_->Put(catalog::ObjectKey("cluster", {"prov", agents.back()}),
                         json{{"metadata", {{"name", agents.back()}}}, {"spec", {{"delivery", "agent"}}}}.dump())
                    .ok());
  }
  // The agents: each publication is answered ok, from the log's watch.
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> due;
  bool done = false;
  std::atomic<int> answered{0};
  store::WatchCallbacks cb;
  cb.on_events = [&](const std::vector<store::WatchEvent>& evs) {
    const std::string prefix = appcontext::LogPrefix();
    std::lock_guard<std::mutex> g(mu);
    for (const auto& e : evs) {
      if (e.type != store::WatchEvent::Type::kPut) continue;
      const std::string rest = e.kv.key.substr(prefix.size());
      due.insert(rest.substr(0, rest.find('/')));
    }
    cv.notify_all();
  };
  auto w = st_->Watch(appcontext::LogPrefix(), 0, std::move(cb));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::thread agent([&] {
    std::map<std::string, uint64_t> read;
    std::unique_lock<std::mutex> lk(mu);
    while (!done) {
      cv.wait(lk, [&] { return done || !due.empty(); });
      std::set<std::string> now;
      now.swap(due);
      lk.unlock();
      for (const auto& ck : now) {
        auto log = appcontext::ReadLog(*st_, ck, read[ck], 64 << 20);
        if (!log.ok()) continue;
        for (const auto& lp : *log) {
          read[ck] = lp.revision;
          auto p = appcontext::DecodePublication(lp.bytes);
          if (!p.ok() || !p->cancel.empty() || p->contexts.empty()) continue;
          for (const auto& app : p->contexts.front().apps) {
            if (!app.cluster) continue;
            appcontext::Outcome ok{true, "", false};
            if (st_->Put(appcontext::OutcomeKey(p->context, p->event, ck, app.name), appcontext::ToJson(ok).dump())
                    .ok())
              ++answered;
          }
        }
      }
      lk.lock();
    }
  });
  Recorder rec;
  Options o = Opts(&rec);
  o.agent_recheck = milliseconds(1);
  o.workers = 8;
  auto rs = std::make_unique<Rsync>(slow, o);
  ASSERT_TRUE(rs->Start().ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    dig_ = "race-" + std::to_string(i);
    ids.push_back(Context(ConfigMaps({{"a", "1"}}), agents, "instantiate"));
  }
  for (const auto& id : ids) EXPECT_TRUE(WaitStatus(id, "Instantiated"));
  for (const auto& id : ids) {
    auto evs = EventList(id);
    ASSERT_EQ(evs.size(), 1u) << Events(id);
    EXPECT_EQ(evs[0]["status"], "done") << Events(id);
  }
  EXPECT_EQ(answered.load(), 200);
  rs.reset();
  {
    std::lock_guard<std::mutex> g(mu);
    done = true;
  }
  cv.notify_all();
  agent.join();
  w->reset();
}

// The cancels the hub alone decides reach the agent clusters the event was
// published to: another cluster's failure (EMCO's errgroup), and a stop.
TEST_F(RsyncTest, CancelsDecidedHereArePublishedToAgentClusters) {
  ASSERT_TRUE(st_->Put(catalog::ObjectKey("cluster", {"prov", "cluster-1"}),
                       json{{"metadata", {{"name", "cluster-1"}}}, {"spec", {{"delivery", "agent"}}}}.dump())
                  .ok());
  auto cancels = [&](const std::string& id) {
    std::vector<appcontext::Publication> out;
    auto log = appcontext::ReadLog(*st_, "prov+cluster-1", 0, 64 << 20);
    EXPECT_TRUE(log.ok());
    for (const auto& lp : log.ok() ? *log : std::vector<appcontext::LoggedPublication>{}) {
      auto p = appcontext::DecodePublication(lp.bytes);
      EXPECT_TRUE(p.ok());
      if (p.ok() && p->context == id && !p->cancel.empty()) out.push_back(*p);
    }
    return out;
  };
  // cluster-2 answers slowly: cluster-1's publication is out before it fails.
  ASSERT_EQ(sim_->Fault("cluster-2", "latency", "ms=300"), 200);
  Recorder rec;
  auto rs = StartRsync(&rec);
  // cluster-2 refuses a kind it does not serve: the agent cluster's wait ends.
  ResourceSet set = ConfigMaps({{"a", "1"}});
  set.resources.push_back(
      {"x+Gadget", {{"apiVersion", "v1"}, {"kind", "Gadget"}, {"metadata", {{"name", "x"}}}}});
  std::string failed = Context(set, {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(failed, "InstantiateFailed"));
  ASSERT_TRUE(testing::WaitUntil([&] { return cancels(failed).size() == 1; }, milliseconds(10000)));
  auto c = cancels(failed).front();
  EXPECT_EQ(c.cancel, "failed");
  EXPECT_EQ(c.event, 1);
  EXPECT_TRUE(c.contexts.empty());
  EXPECT_NE(c.cancel_message.find("another cluster failed"), std::string::npos) << c.cancel_message;

  // A stop while the agent cluster's task waits for its agent.
  std::string stopped = Context(ConfigMaps({{"b", "1"}}), {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return appcontext::LastRevision(*st_, "prov+cluster-1").value() >= 3u; },
                                 milliseconds(30000)));
  ASSERT_TRUE(st_->Put(appcontext::StopKey(stopped), "true").ok());
  ASSERT_TRUE(WaitStatus(stopped, "InstantiateFailed"));
  ASSERT_TRUE(testing::WaitUntil([&] { return cancels(stopped).size() == 1; }, milliseconds(10000)));
  EXPECT_EQ(cancels(stopped).front().cancel, "stopped");
  // A push-only event publishes nothing.
  std::string pushed = Context(set, {"cluster-2", "cluster-3"}, "instantiate");
  ASSERT_TRUE(WaitStatus(pushed, "InstantiateFailed"));
  EXPECT_TRUE(cancels(pushed).empty());
}

TEST_F(RsyncTest, TerminateDeletesInReverseOrder) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}, {"c", "1"}}),
                           {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  rec.Clear();
  Enqueue(id, "terminate");
  ASSERT_TRUE(WaitStatus(id, "Terminated"));
  for (const std::string c : {"cluster-1", "cluster-2"}) {
    EXPECT_EQ(rec.Of(c), (std::vector<std::string>{"delete ConfigMap/c", "delete ConfigMap/b",
                                                   "delete ConfigMap/a"}));
    EXPECT_EQ(GetCm(c, "a").status().code(), Code::kNotFound);
    for (auto& [n, d] : Record(id, c).resources) EXPECT_EQ(d.status, "Deleted") << n;
  }
  // Terminate again: skipped, status unchanged.
  Enqueue(id, "terminate");
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return EventList(id).size() == 3 && EventList(id)[2]["status"] == "skip"; },
      milliseconds(30000)));
  EXPECT_EQ(StatusOf(id), "Terminated");
}

// Two deployments with an object of the same name: the second does not
// take it over (server-side apply with force would), fails naming object,
// cluster and owner, and changes nothing on that cluster; an object eco did
// not create is refused the same way; spec.adopt takes over; terminate
// deletes only what the deployment owns.
TEST_F(RsyncTest, ObjectsOfAnotherDeploymentOrOfNoneAreNotTakenOver) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  dig_ = "a";
  std::string a = Context(ConfigMaps({{"same", "a"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(a, "Instantiated"));
  auto live = GetCm("cluster-1", "same");
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)["metadata"]["annotations"][appcontext::kOwnerAnnotation], "dig:p/ca//a");

  dig_ = "b";
  std::string b = Context(ConfigMaps({{"first-b", "b"}, {"same", "b"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(b, "InstantiateFailed"));
  auto evs = EventList(b);
  const std::string msg = evs[0].value("message", "");
  EXPECT_NE(msg.find("ConfigMap default/same on cluster prov+cluster-1 belongs to dig:p/ca//a"), std::string::npos)
      << msg;
  EXPECT_EQ((*GetCm("cluster-1", "same"))["data"]["v"], "a");  // not taken over
  EXPECT_EQ(GetCm("cluster-1", "first-b").status().code(), Code::kNotFound) << "nothing changes on the cluster";
  auto rb = Record(b, "cluster-1");
  EXPECT_EQ(rb.resources["same+ConfigMap"].status, "Failed");
  EXPECT_NE(rb.resources["same+ConfigMap"].error.find("belongs to dig:p/ca//a"), std::string::npos);
  EXPECT_EQ(rb.connectivity, "Available");

  // Made by someone else (kubectl, another tool): refused too.
  auto cl = Client("cluster-1");
  k8s::ApplyOptions manual;
  manual.field_manager = "kubectl";
  ASSERT_TRUE(cl->Apply(ConfigMap("manual", "m"), manual).ok());
  dig_ = "c";
  std::string c = Context(ConfigMaps({{"manual", "c"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(c, "InstantiateFailed"));
  EXPECT_NE(EventList(c)[0].value("message", "").find("belongs to nothing eco deployed"), std::string::npos)
      << EventList(c)[0].dump();
  EXPECT_EQ((*GetCm("cluster-1", "manual"))["data"]["v"], "m");

  // With spec.adopt the DIG takes it over.
  dig_ = "b";
  adopt_ = true;
  std::string b2 = Context(ConfigMaps({{"first-b", "b"}, {"same", "b"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(b2, "Instantiated"));
  live = GetCm("cluster-1", "same");
  EXPECT_EQ((*live)["data"]["v"], "b");
  EXPECT_EQ((*live)["metadata"]["annotations"][appcontext::kOwnerAnnotation], "dig:p/ca//b");

  // a's terminate leaves what is b's now.
  Enqueue(a, "terminate");
  ASSERT_TRUE(WaitStatus(a, "Terminated"));
  EXPECT_TRUE(GetCm("cluster-1", "same").ok()) << "a deleted b's object";
  auto ra = Record(a, "cluster-1");
  EXPECT_EQ(ra.resources["same+ConfigMap"].status, "Deleted");
  EXPECT_NE(ra.resources["same+ConfigMap"].error.find("now owned by dig:p/ca//b"), std::string::npos);
  Enqueue(b2, "terminate");
  ASSERT_TRUE(WaitStatus(b2, "Terminated"));
  EXPECT_EQ(GetCm("cluster-1", "same").status().code(), Code::kNotFound);
}

// A namespace with more objects of a kind than one listing keeps: they are
// checked one by one, and one eco did not create is still refused.
TEST_F(RsyncTest, ACrowdedNamespaceIsCheckedObjectByObject) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  auto cl = Client("cluster-1");
  k8s::ApplyOptions manual;
  manual.field_manager = "kubectl";
  for (size_t i = 0; i <= OwnerListings::kMaxListed; ++i)
    ASSERT_TRUE(cl->Apply(ConfigMap("crowd-" + std::to_string(i), "m"), manual).ok());
  std::string id = Context(ConfigMaps({{"fresh", "e"}, {"crowd-7", "e"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  EXPECT_NE(EventList(id)[0].value("message", "").find("belongs to nothing eco deployed"), std::string::npos)
      << EventList(id)[0].dump();
  EXPECT_EQ((*GetCm("cluster-1", "crowd-7"))["data"]["v"], "m");
  const auto reads = rec.ReadsOf("cluster-1");
  EXPECT_EQ(std::count(reads.begin(), reads.end(), "get ConfigMap/crowd-7"), 1);
  EXPECT_EQ(GetCm("cluster-1", "fresh").status().code(), Code::kNotFound) << "nothing changes on the cluster";
}

// A Namespace that is on the cluster already is shared, not refused: the
// deployment applies its labels (not eco's marks) and never deletes it.
TEST_F(RsyncTest, APreExistingNamespaceIsSharedAndNeverDeleted) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  auto cl = Client("cluster-1");
  k8s::ApplyOptions manual;
  manual.field_manager = "kubectl";
  ASSERT_TRUE(cl->Apply({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "pre"}, {"labels", {{"team", "x"}}}}}}, manual).ok());
  ResourceSet set;
  set.resources.push_back({"pre+Namespace",
                           {{"apiVersion", "v1"},
                            {"kind", "Namespace"},
                            {"metadata", {{"name", "pre"}, {"labels", {{"tier", "edge"}, {appcontext::kContextLabel, "x"}}}}}}});
  set.resources.push_back({"cfg+ConfigMap", ConfigMap("cfg", "1")});
  ns_ = "pre";
  std::string id = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  auto n = cl->Get("v1", "Namespace", "", "pre");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)["metadata"]["labels"]["tier"], "edge");
  EXPECT_EQ((*n)["metadata"]["labels"]["team"], "x");
  EXPECT_FALSE((*n)["metadata"]["labels"].contains(appcontext::kContextLabel)) << n->dump();
  EXPECT_TRUE(Record(id, "cluster-1").resources["pre+Namespace"].shared);
  Enqueue(id, "terminate");
  ASSERT_TRUE(WaitStatus(id, "Terminated"));
  EXPECT_EQ(cl->Get("v1", "ConfigMap", "pre", "cfg").status().code(), Code::kNotFound);
  EXPECT_TRUE(cl->Get("v1", "Namespace", "", "pre").ok()) << "a namespace eco did not create was deleted";
}

// A cluster that lost the objects (rebuilt, deleted out of band) gets every
// object of the deployed revision again from a resync, and only the
// clusters it names get requests.
TEST_F(RsyncTest, ResyncReappliesEverythingToTheNamedClustersOnly) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}}), {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  ASSERT_TRUE(Client("cluster-1")->Delete("v1", "ConfigMap", "default", "a", k8s::Propagation::kBackground).ok());
  rec.Clear();
  Enqueue(id, "resync", "", {"prov+cluster-1"});
  ASSERT_TRUE(testing::WaitUntil([&] { return EventList(id).size() == 2 && EventList(id)[1]["status"] == "done"; },
                                 milliseconds(30000)))
      << Events(id);
  EXPECT_EQ(StatusOf(id), "Instantiated");
  EXPECT_EQ(rec.Of("cluster-1"), (std::vector<std::string>{"apply ConfigMap/a", "apply ConfigMap/b"}));
  EXPECT_TRUE(rec.Of("cluster-2").empty());
  EXPECT_TRUE(GetCm("cluster-1", "a").ok());
  for (const auto& [n, d] : Record(id, "cluster-1").resources) EXPECT_EQ(d.status, "Applied") << n;
  // Without clusters: all of them.
  rec.Clear();
  Enqueue(id, "resync");
  ASSERT_TRUE(testing::WaitUntil([&] { return EventList(id).size() == 3 && EventList(id)[2]["status"] == "done"; },
                                 milliseconds(30000)));
  EXPECT_EQ(rec.Of("cluster-2").size(), 2u);
}

// A refusal is not an outage. kube-sim answers as Kubernetes 1.26 does: a
// server-side apply with an undeclared field is a 500 about the object, a
// changed Deployment selector a 422. Both fail the event at once with the
// cluster's message; the cluster stays Available, never Retrying.
TEST_F(RsyncTest, RefusalsFailPromptlyAndTheClusterStaysAvailable) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  ResourceSet typo;
  json d = Deployment("web");
  d["spec"]["replica"] = 3;  // a typo of replicas
  field_validation_ = "Strict";  // under Warn it deploys without it (UndeclaredFields* below)
  typo.resources.push_back({"web+Deployment", d});
  std::string id = Context(typo, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed", milliseconds(20000)));
  auto r = Record(id, "cluster-1");
  EXPECT_EQ(r.connectivity, "Available");
  EXPECT_EQ(r.resources["web+Deployment"].status, "Failed");
  EXPECT_NE(r.resources["web+Deployment"].error.find(".spec.replica: field not declared in schema"), std::string::npos)
      << r.resources["web+Deployment"].error;

  // An update that changes an immutable field.
  ResourceSet one;
  one.resources.push_back({"api+Deployment", Deployment("api")});
  dig_ = "other";
  std::string v1 = Context(one, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(v1, "Instantiated"));
  ResourceSet two = one;
  two.resources[0].object["spec"]["selector"]["matchLabels"]["app"] = "api2";
  two.resources[0].object["spec"]["template"]["metadata"]["labels"]["app"] = "api2";
  std::string v2 = Context(two, {"cluster-1"}, "update", v1, v1);
  ASSERT_TRUE(WaitStatus(v2, "InstantiateFailed", milliseconds(20000)));
  auto r2 = Record(v1, "cluster-1");
  EXPECT_EQ(r2.connectivity, "Available");
  EXPECT_NE(r2.resources["api+Deployment"].error.find("field is immutable"), std::string::npos)
      << r2.resources["api+Deployment"].error;
}

// A CRD and its custom resources in one app: kube-sim, like an API server,
// serves the kind only once the CRD is Established; rsync waits for that
// instead of failing with "the cluster does not serve".
TEST_F(RsyncTest, CustomResourcesWaitUntilTheirCrdIsEstablished) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  ResourceSet set;
  set.crds.push_back({"widgets.example.com+CustomResourceDefinition", Crd()});
  set.resources.push_back({"w1+Widget",
                           {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w1"}}}}});
  std::string id = Context(set, {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  for (const std::string c : {"cluster-1", "cluster-2"}) {
    auto r = Record(id, c);
    EXPECT_EQ(r.resources["widgets.example.com+CustomResourceDefinition"].status, "Applied") << c;
    EXPECT_EQ(r.resources["w1+Widget"].status, "Applied") << c;
    EXPECT_TRUE(Client(c)->Get("example.com/v1", "Widget", "default", "w1").ok()) << c;
  }
  Enqueue(id, "terminate");
  ASSERT_TRUE(WaitStatus(id, "Terminated"));
  EXPECT_EQ(Record(id, "cluster-1").resources["widgets.example.com+CustomResourceDefinition"].status, "Deleted");
}

// Objects with fields the cluster's schema does not declare (a DaemonSet's
// spec.replicas as in EMCO's collectd chart, a typo in a Deployment, a
// custom resource's field its CRD lacks): under Warn they deploy without
// exactly those fields, each named in the record; under Strict the cluster's
// refusal fails the deployment at once, never Retrying.
ResourceSet WithUndeclaredFields() {
  ResourceSet set;
  set.crds.push_back({"gadgets.example.eco.io+CustomResourceDefinition", testing::GadgetCrd(testing::SizedGadgetSchema())});
  json pod = {{"metadata", {{"labels", {{"app", "collectd"}}}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "collectd"}}})}}}};
  set.resources.push_back({"collectd+DaemonSet",
                           {{"apiVersion", "apps/v1"},
                            {"kind", "DaemonSet"},
                            {"metadata", {{"name", "collectd"}}},
                            {"spec",
                             {{"replicas", 1},
                              {"selector", {{"matchLabels", {{"app", "collectd"}}}}},
                              {"template", pod}}}}});
  json typo = pod;
  typo["spec"]["containers"][0]["imagee"] = "web:2";
  set.resources.push_back({"web+Deployment",
                           {{"apiVersion", "apps/v1"},
                            {"kind", "Deployment"},
                            {"metadata", {{"name", "web"}}},
                            {"spec", {{"selector", {{"matchLabels", {{"app", "collectd"}}}}}, {"template", typo}}}}});
  set.resources.push_back({"g1+Gadget",
                           {{"apiVersion", "example.eco.io/v1"},
                            {"kind", "Gadget"},
                            {"metadata", {{"name", "g1"}}},
                            {"spec", {{"size", 2}, {"colour", "red"}}}}});
  return set;
}

TEST_F(RsyncTest, UndeclaredFieldsAreDroppedAndReportedUnderWarn) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  const double dropped_before = RsyncMetrics::Get().fields_dropped.Value();
  std::string id = Context(WithUndeclaredFields(), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  auto r = Record(id, "cluster-1");
  const std::string tail = ": field not declared in schema, not applied";
  EXPECT_EQ(r.resources["collectd+DaemonSet"].status, "Applied");
  EXPECT_EQ(r.resources["collectd+DaemonSet"].warnings, std::vector<std::string>{"spec.replicas" + tail});
  EXPECT_EQ(r.resources["web+Deployment"].warnings,
            std::vector<std::string>{"spec.template.spec.containers[0].imagee" + tail});
  EXPECT_EQ(r.resources["g1+Gadget"].warnings, std::vector<std::string>{"spec.colour" + tail});
  EXPECT_TRUE(r.resources["gadgets.example.eco.io+CustomResourceDefinition"].warnings.empty());
  EXPECT_EQ(RsyncMetrics::Get().fields_dropped.Value() - dropped_before, 3);
  // On the cluster: everything declared, nothing undeclared.
  auto ds = Client("cluster-1")->Get("apps/v1", "DaemonSet", "default", "collectd");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_FALSE((*ds)["spec"].contains("replicas"));
  EXPECT_EQ((*ds)["spec"]["template"]["spec"]["containers"][0]["image"], "collectd");
  auto g = Client("cluster-1")->Get("example.eco.io/v1", "Gadget", "default", "g1");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)["spec"], (json{{"size", 2}}));
  // A resync applies the same way and says the same.
  Enqueue(id, "resync");
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto evs = EventList(id);
    return evs.size() == 2 && evs[1].value("status", "") == "done";
  }, milliseconds(60000)));
  EXPECT_EQ(Record(id, "cluster-1").resources["collectd+DaemonSet"].warnings,
            std::vector<std::string>{"spec.replicas" + tail});
}

TEST_F(RsyncTest, UndeclaredFieldsFailAtOnceUnderStrict) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  field_validation_ = "Strict";
  std::string id = Context(WithUndeclaredFields(), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(id, "InstantiateFailed"));
  auto r = Record(id, "cluster-1");
  EXPECT_EQ(r.resources["collectd+DaemonSet"].status, "Failed");
  EXPECT_NE(r.resources["collectd+DaemonSet"].error.find(".spec.replicas: field not declared in schema"),
            std::string::npos)
      << r.resources["collectd+DaemonSet"].error;
  EXPECT_EQ(r.connectivity, "Available");  // the cluster answered: never Retrying
  EXPECT_EQ(r.resources["web+Deployment"].status, "Pending");  // never reached
  EXPECT_FALSE(Client("cluster-1")->Get("apps/v1", "DaemonSet", "default", "collectd").ok());
}

// A namespace still terminating (deleted a moment ago) refuses new content
// with a 403 that passes: rsync waits until it is gone, makes it anew and
// deploys; and a terminate ends only once its namespace is gone.
TEST_F(RsyncTest, ATerminatingNamespaceIsWaitedFor) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  auto cl = Client("cluster-1");
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "apps"}}}};
  ResourceSet set;
  set.resources.push_back({"apps+Namespace", ns});
  set.resources.push_back({"cfg+ConfigMap", ConfigMap("cfg", "1")});
  ns_ = "apps";
  std::string first = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(first, "Instantiated"));
  Enqueue(first, "terminate");
  ASSERT_TRUE(WaitStatus(first, "Terminated"));
  EXPECT_EQ(cl->Get("v1", "Namespace", "", "apps").status().code(), Code::kNotFound) << "Terminated before gone";

  // Deleted out of band and deployed again at once: it is still terminating.
  std::string second = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(second, "Instantiated"));
  ASSERT_TRUE(cl->Delete("v1", "Namespace", "", "apps", k8s::Propagation::kBackground).ok());
  auto n = cl->Get("v1", "Namespace", "", "apps");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)["status"]["phase"], "Terminating");
  std::string third = Context(set, {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(third, "Instantiated"));
  EXPECT_TRUE(cl->Get("v1", "ConfigMap", "apps", "cfg").ok());
  EXPECT_EQ(Record(third, "cluster-1").connectivity, "Available");
}

// Service discovery (appcontext::kDiscoverAnnotation): the Endpoints waits
// for the server's Service on another cluster, says so in its record, gets
// the nodes' addresses and the nodePort once it is there; bounded by
// settle_timeout; a Service unreachable from elsewhere fails it at once.
TEST_F(RsyncTest, DiscoveringEndpointsWaitForTheServersServiceOnItsCluster) {
  Recorder rec;
  Options o = Opts(&rec);
  o.settle_timeout = milliseconds(2000);
  auto rs = std::make_unique<Rsync>(*st_, o);
  ASSERT_TRUE(rs->Start().ok());
  auto endpoints = [](const std::string& service) {
    json want = json::array({{{"cluster", "prov+cluster-1"}, {"namespace", "default"}, {"service", service},
                              {"port", 80}, {"portName", "tcp"}, {"protocol", "TCP"}}});
    ResourceSet set;
    set.resources.push_back({"cm+ConfigMap", ConfigMap("cm", "1")});
    set.resources.push_back({"srv+Endpoints",
                             {{"apiVersion", "v1"},
                              {"kind", "Endpoints"},
                              {"metadata", {{"name", "srv"}, {"annotations", {{appcontext::kDiscoverAnnotation, want.dump()}}}}},
                              {"subsets", json::array()}}});
    return set;
  };
  std::string id = Context(endpoints("srv"), {"cluster-2"}, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return !Record(id, "cluster-2").resources["srv+Endpoints"].error.empty(); },
                                 milliseconds(10000)));
  auto r = Record(id, "cluster-2");
  EXPECT_EQ(r.resources["srv+Endpoints"].status, "Pending");
  EXPECT_EQ(r.resources["srv+Endpoints"].error,
            "waiting: Service default/srv on server cluster prov+cluster-1: not deployed yet");
  EXPECT_EQ(r.resources["cm+ConfigMap"].status, "Applied");
  EXPECT_EQ(r.connectivity, "Available");
  EXPECT_EQ(StatusOf(id), "Instantiating");
  // The server arrives.
  auto server = Client("cluster-1");
  auto svc = server->Apply({{"apiVersion", "v1"},
                            {"kind", "Service"},
                            {"metadata", {{"name", "srv"}, {"namespace", "default"}}},
                            {"spec", {{"type", "NodePort"}, {"ports", {{{"port", 80}}}}}}});
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  auto ep = Client("cluster-2")->Get("v1", "Endpoints", "default", "srv");
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  json want = {{{"addresses", {{{"ip", "10.0.0.2"}}, {{"ip", "10.0.0.3"}}, {{"ip", "10.0.0.4"}}}},
                {"ports", {{{"name", "tcp"}, {"port", (*svc)["spec"]["ports"][0]["nodePort"]}, {"protocol", "TCP"}}}}}};
  EXPECT_EQ((*ep)["subsets"], want) << ep->dump();
  EXPECT_EQ(Record(id, "cluster-2").resources["srv+Endpoints"].status, "Applied");

  // Never there: it fails after settle_timeout, with the reason.
  std::string never = Context(endpoints("never"), {"cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(never, "InstantiateFailed"));
  EXPECT_EQ(Record(never, "cluster-2").resources["srv+Endpoints"].error,
            "Service default/never on server cluster prov+cluster-1: not deployed yet after 2 s");
  // Unreachable from other clusters: fails at once.
  ASSERT_TRUE(server->Apply({{"apiVersion", "v1"},
                             {"kind", "Service"},
                             {"metadata", {{"name", "inside"}, {"namespace", "default"}}},
                             {"spec", {{"ports", {{{"port", 80}}}}}}})
                  .ok());
  std::string inside = Context(endpoints("inside"), {"cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(inside, "InstantiateFailed"));
  EXPECT_EQ(Record(inside, "cluster-2").resources["srv+Endpoints"].error,
            "Service default/inside on server cluster prov+cluster-1: it is of type ClusterIP, which clients on "
            "other clusters cannot reach");
}

// A migrate is an update from another DIG's context: that DIG's objects are
// taken over (and re-marked), other DIGs' still are not.
TEST_F(RsyncTest, AnUpdateFromAnotherDigsContextTakesOverItsObjects) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  dig_ = "old";
  std::string old = Context(ConfigMaps({{"kept", "1"}, {"gone", "1"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(old, "Instantiated"));
  dig_ = "other";
  std::string other = Context(ConfigMaps({{"theirs", "1"}}), {"cluster-1"}, "instantiate");
  ASSERT_TRUE(WaitStatus(other, "Instantiated"));
  dig_ = "new";
  std::string next = Context(ConfigMaps({{"kept", "2"}, {"added", "2"}}), {"cluster-1"}, "update", old);
  ASSERT_TRUE(WaitStatus(next, "Instantiated"));
  ASSERT_TRUE(WaitStatus(old, "Updated"));
  auto kept = GetCm("cluster-1", "kept");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)["data"]["v"], "2");
  EXPECT_EQ((*kept)["metadata"]["annotations"][appcontext::kOwnerAnnotation], "dig:p/ca//new");
  EXPECT_TRUE(GetCm("cluster-1", "added").ok());
  EXPECT_EQ(GetCm("cluster-1", "gone").status().code(), Code::kNotFound);
  // Another DIG's object is not the migrating one's to take.
  std::string grab = Context(ConfigMaps({{"theirs", "2"}}), {"cluster-1"}, "update", next);
  ASSERT_TRUE(WaitStatus(grab, "InstantiateFailed"));
  EXPECT_EQ((*GetCm("cluster-1", "theirs"))["data"]["v"], "1");
}

TEST_F(RsyncTest, TerminateCancelsAnInstantiateStillWaiting) {
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string id = Context(ConfigMaps({{"a", "1"}}), {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return Record(id, "cluster-2").connectivity == "Retrying"; },
                                 milliseconds(30000)));
  Enqueue(id, "terminate");
  ASSERT_TRUE(testing::WaitUntil([&] { return EventList(id)[0]["status"] == "error"; },
                                 milliseconds(30000)));
  EXPECT_NE(EventList(id)[0].value("message", "").find("terminate"), std::string::npos);
  // The terminate itself waits for cluster-2 like any other event.
  ASSERT_TRUE(
      testing::WaitUntil([&] { return GetCm("cluster-1", "a").status().code() == Code::kNotFound; },
                         milliseconds(30000)));
  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  ASSERT_TRUE(WaitStatus(id, "Terminated"));
  EXPECT_EQ(GetCm("cluster-2", "a").status().code(), Code::kNotFound);
}

TEST_F(RsyncTest, UpdateAppliesOnlyWhatChangedAndDeletesWhatWasRemoved) {
  Recorder rec;
  auto rs = StartRsync(&rec);
  std::string a = Context(ConfigMaps({{"keep", "1"}, {"change", "1"}, {"drop", "1"}}),
                          {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(WaitStatus(a, "Instantiated"));
  auto before = GetCm("cluster-1", "keep");
  ASSERT_TRUE(before.ok());
  rec.Clear();
  // The new revision drops cluster-2, changes one object, adds one, removes one.
  std::string b = Context(ConfigMaps({{"keep", "1"}, {"change", "2"}, {"added", "1"}}),
                          {"cluster-1"}, "update", a, a);
  ASSERT_TRUE(WaitStatus(b, "Instantiated"));
  ASSERT_TRUE(WaitStatus(a, "Updated"));
  EXPECT_EQ(rec.Of("cluster-1"),
            (std::vector<std::string>{"apply ConfigMap/change", "apply ConfigMap/added",
                                      "delete ConfigMap/drop"}));
  EXPECT_EQ(rec.Of("cluster-2"),
            (std::vector<std::string>{"delete ConfigMap/drop", "delete ConfigMap/change",
                                      "delete ConfigMap/keep"}));
  auto after = GetCm("cluster-1", "keep");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["metadata"]["resourceVersion"], (*before)["metadata"]["resourceVersion"]);
  EXPECT_EQ((*GetCm("cluster-1", "change"))["data"]["v"], "2");
  EXPECT_EQ(GetCm("cluster-1", "drop").status().code(), Code::kNotFound);
  EXPECT_EQ(GetCm("cluster-2", "keep").status().code(), Code::kNotFound);
  // Records stay under the status context (a).
  auto r = Record(a, "cluster-1");
  EXPECT_EQ(r.resources["added+ConfigMap"].status, "Applied");
  EXPECT_EQ(r.resources["added+ConfigMap"].ref, b);
  EXPECT_EQ(r.resources["change+ConfigMap"].ref, b);
  EXPECT_EQ(r.resources["keep+ConfigMap"].ref, a);
  EXPECT_EQ(r.resources["drop+ConfigMap"].status, "Deleted");
  auto evs = EventList(a);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1]["event"], "update-delete");
  EXPECT_EQ(evs[1]["other"], b);

  // Rollback: the same event towards the older context.
  rec.Clear();
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(a), json{{"status", "Created"}}.dump()).ok());
  Enqueue(a, "update", b);
  ASSERT_TRUE(WaitStatus(b, "Updated"));
  ASSERT_TRUE(WaitStatus(a, "Instantiated"));
  EXPECT_EQ((*GetCm("cluster-1", "change"))["data"]["v"], "1");
  EXPECT_TRUE(GetCm("cluster-1", "drop").ok());
  EXPECT_EQ(GetCm("cluster-1", "added").status().code(), Code::kNotFound);
  EXPECT_TRUE(GetCm("cluster-2", "keep").ok());
}

TEST_F(RsyncTest, AppsWaitForTheirDependencies) {
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  Recorder rec;
  auto rs = StartRsync(&rec);
  // db on clusters 1 and 2; web (cluster 2) waits for db Deployed; ui
  // (cluster 3) for web Ready.
  appcontext::Meta m;
  m.kind = "dig";
  m.namespace_ = "default";
  m.app_order = {"ui", "web", "db"};
  m.dependencies["web"] = {{"db", "Deployed", 0}};
  m.dependencies["ui"] = {{"web", "Ready", 0}};
  auto id = ctx_->Create(m, 0);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(ctx_->PutApp(*id, "db", ConfigMaps({{"db", "1"}}),
                           {{"prov", "cluster-1", 1, true, 0}, {"prov", "cluster-2", 2, true, 0}})
                  .ok());
  ASSERT_TRUE(
      ctx_->PutApp(*id, "web", ConfigMaps({{"web", "1"}}), {{"prov", "cluster-2", 1, true, 0}})
          .ok());
  ASSERT_TRUE(
      ctx_->PutApp(*id, "ui", ConfigMaps({{"ui", "1"}}), {{"prov", "cluster-3", 1, true, 0}}).ok());
  store::Txn txn;
  txn.compares.push_back(ctx_->NotSealed(*id));
  txn.success = ctx_->SealOps(*id, "Created", {"instantiate", ""});
  ASSERT_TRUE(st_->Commit(txn).ok());
  auto rec_of = [&](const std::string& app, const std::string& c) {
    auto r = appcontext::ReadDeployed(*st_, *id, app, "prov+" + c);
    return r.ok() && r->has_value() ? **r : appcontext::DeployedRecord{};
  };
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return rec_of("db", "cluster-2").resources["db+ConfigMap"].status == "Applied" &&
               rec_of("db", "cluster-1").connectivity == "Retrying";
      },
      milliseconds(30000)));
  // db is not deployed everywhere yet: web has not started.
  EXPECT_TRUE(rec_of("web", "cluster-2").resources.empty());
  EXPECT_EQ(rec.Of("cluster-2"), (std::vector<std::string>{"apply ConfigMap/db"}));
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return rec_of("web", "cluster-2").resources["web+ConfigMap"].status == "Applied"; },
      milliseconds(30000)));
  EXPECT_EQ(StatusOf(*id), "Instantiating");  // ui waits for web's ReadyRecords
  EXPECT_TRUE(rec.Of("cluster-3").empty());
  appcontext::ReadyRecord ready;
  ready.ready = true;
  ready.resources["web+ConfigMap"] = "Ready";
  ASSERT_TRUE(
      st_->Put(appcontext::ReadyKey(*id, "web", "prov+cluster-2"), appcontext::ToJson(ready).dump())
          .ok());
  ASSERT_TRUE(WaitStatus(*id, "Instantiated"));
  EXPECT_EQ(rec.Of("cluster-3"), (std::vector<std::string>{"apply ConfigMap/ui"}));
}

TEST_F(RsyncTest, SecondInstanceLeavesAContextOwnedByTheFirst) {
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  Recorder rec1, rec2;
  auto rs1 = StartRsync(&rec1);
  std::string id = Context(ConfigMaps({{"a", "1"}}), {"cluster-1", "cluster-2"}, "instantiate");
  ASSERT_TRUE(testing::WaitUntil([&] { return rs1->ActiveContexts() == 1; }, milliseconds(30000)));
  auto rs2 = StartRsync(&rec2);
  ASSERT_TRUE(testing::WaitUntil([&] { return Record(id, "cluster-1").connectivity == "Retrying"; },
                                 milliseconds(30000)));
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  EXPECT_EQ(rec2.Total(), 0u);
  EXPECT_EQ(rec1.Of("cluster-1"), (std::vector<std::string>{"apply ConfigMap/a"}));
  // rs2 may still pick the context up once rs1 lets go, and find nothing to do.
  EXPECT_TRUE(testing::WaitUntil([&] { return rs2->ActiveContexts() == 0; }, milliseconds(10000)));
  EXPECT_EQ(rec2.Total(), 0u);
}

TEST_F(RsyncTest, RestartResumesAndCompletes) {
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  Recorder rec1, rec2;
  std::string id;
  {
    auto rs1 = StartRsync(&rec1);
    id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}}), kAll, "instantiate");
    ASSERT_TRUE(testing::WaitUntil(
        [&] { return Record(id, "cluster-2").connectivity == "Retrying"; }, milliseconds(30000)));
    rs1->Stop();
  }
  EXPECT_EQ(StatusOf(id), "Instantiating");
  EXPECT_EQ(EventList(id)[0]["status"], "pending");
  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  auto rs2 = StartRsync(&rec2);
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  for (const auto& c : kAll) {
    EXPECT_TRUE(GetCm(c, "a").ok()) << c;
    EXPECT_EQ(Record(id, c).resources["b+ConfigMap"].status, "Applied") << c;
  }
  EXPECT_EQ(rec2.Of("cluster-2"),
            (std::vector<std::string>{"apply ConfigMap/a", "apply ConfigMap/b"}));
}

// The store fails the write that records a cluster's last list as Applied
// (etcd restarting at that moment): the task writes it again before it
// ends, instead of ending with its marks unwritten and the cluster's
// status Pending for ever.
TEST_F(RsyncTest, AFailedWriteOfTheLastListIsRetriedBeforeTheTaskEnds) {
  class LosesOneAppliedRecord : public testing::ForwardingStore {
   public:
    LosesOneAppliedRecord(store::Store& inner, std::string key) : ForwardingStore(inner), key_(std::move(key)) {}
    Result<store::TxnResult> Commit(const store::Txn& txn) override {
      for (const auto& op : txn.success) {
        if (op.key == key_ && op.value.find("\"Applied\"") != std::string::npos && !lost_.exchange(true))
          return Unavailable("store away for the test");
      }
      return inner_->Commit(txn);
    }
    bool lost() const { return lost_; }

   private:
    const std::string key_;
    std::atomic<bool> lost_{false};
  };
  std::string id = Context(ConfigMaps({{"a", "1"}, {"b", "1"}}), kAll, "instantiate");
  LosesOneAppliedRecord flaky(*st_, appcontext::DeployedKey(id, "app1", "prov+cluster-2"));
  Recorder rec;
  Rsync rs(flaky, Opts(&rec));
  ASSERT_TRUE(rs.Start().ok());
  ASSERT_TRUE(WaitStatus(id, "Instantiated"));
  EXPECT_TRUE(flaky.lost());
  for (const auto& c : kAll) {
    for (const char* r : {"a+ConfigMap", "b+ConfigMap"}) {
      EXPECT_EQ(Record(id, c).resources[r].status, "Applied") << c << " " << r;
    }
  }
  rs.Stop();
}

TEST_F(RsyncTest, DeadOwnersContextIsTakenOverWhenItsLeaseExpires) {
  // A replica that died: it holds the lock on a lease nobody keeps alive.
  std::string id = Context(ConfigMaps({{"a", "1"}}), {"cluster-1"}, "instantiate");
  auto lease = st_->GrantLease(std::chrono::seconds(2));
  ASSERT_TRUE(lease.ok());
  auto dead = store::TryLock(*st_, "/eco/lock/rsync/" + id, *lease);
  ASSERT_TRUE(dead.ok());
  Recorder rec;
  auto rs = StartRsync(&rec);
  ASSERT_TRUE(WaitStatus(id, "Instantiated", milliseconds(30000)));
  EXPECT_TRUE(GetCm("cluster-1", "a").ok());
  (void)(*dead)->Unlock();  // NotFound: the lease took it
}

// Two updates queued while rsync is down, over an instantiation cut short
// with a cluster down: the instantiation and the first update are
// superseded, and the last update takes over the objects of both. An object
// the instantiation applied (x=1) that the first update would have changed
// (x=2) and the last one keeps as the first had it must still reach the
// clusters: the first update never ran there.
TEST_F(RsyncTest, UpdatesQueuedOverUnfinishedDeploymentsSupersedeThem) {
  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  Recorder rec1, rec2;
  std::string o;
  {
    auto rs1 = StartRsync(&rec1);
    o = Context(ConfigMaps({{"x", "1"}, {"same", "1"}, {"only-o", "1"}}), kAll, "instantiate");
    ASSERT_TRUE(testing::WaitUntil(
        [&] {
          return Record(o, "cluster-1").resources["only-o+ConfigMap"].status == "Applied" &&
                 Record(o, "cluster-2").resources["only-o+ConfigMap"].status == "Applied" &&
                 Record(o, "cluster-3").connectivity == "Retrying";
        },
        milliseconds(30000)));
    rs1->Stop();
  }
  ASSERT_EQ(EventList(o)[0]["status"], "pending");
  const std::string n =
      Context(ConfigMaps({{"x", "2"}, {"same", "1"}, {"only-n", "1"}}), kAll, "update", o, o);
  const std::string m =
      Context(ConfigMaps({{"x", "2"}, {"same", "1"}, {"only-m", "1"}}), kAll, "update", n, o);
  auto rs2 = StartRsync(&rec2);
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return EventList(o)[0]["status"] == "skip" && EventList(n)[0]["status"] == "skip"; },
      milliseconds(30000)))
      << Events(o) << Events(n);
  EXPECT_EQ(EventList(o)[0].value("message", ""), "superseded by the update to AppContext " + n);
  EXPECT_EQ(EventList(n)[0].value("message", ""), "superseded by the update to AppContext " + m);
  // The clusters that answer get m while cluster-3 is still down.
  for (const std::string c : {"cluster-1", "cluster-2"}) {
    ASSERT_TRUE(testing::WaitUntil([&] { return GetCm(c, "only-m").ok(); }, milliseconds(30000)))
        << c << "\n"
        << Events(m);
    auto x = GetCm(c, "x");
    ASSERT_TRUE(x.ok()) << c;
    EXPECT_EQ((*x)["data"]["v"], "2") << c;
    EXPECT_EQ(Record(o, c).resources["x+ConfigMap"].ref, m) << c;
  }
  EXPECT_EQ(StatusOf(m), "Instantiating");
  EXPECT_TRUE(rec2.Of("cluster-3").empty());
  ASSERT_EQ(sim_->Fault("cluster-3", "up"), 200);
  ASSERT_TRUE(WaitStatus(m, "Instantiated"));
  // Both superseded contexts delete what m does not have, then end Updated.
  ASSERT_TRUE(WaitStatus(n, "Updated"));
  ASSERT_TRUE(WaitStatus(o, "Updated"));
  for (const auto& c : kAll) {
    auto x = GetCm(c, "x");
    ASSERT_TRUE(x.ok()) << c;
    EXPECT_EQ((*x)["data"]["v"], "2") << c;
    EXPECT_TRUE(GetCm(c, "same").ok()) << c;
    EXPECT_TRUE(GetCm(c, "only-m").ok()) << c;
    EXPECT_EQ(GetCm(c, "only-o").status().code(), Code::kNotFound) << c;
    EXPECT_EQ(GetCm(c, "only-n").status().code(), Code::kNotFound) << c;
    for (const char* r : {"x+ConfigMap", "same+ConfigMap", "only-m+ConfigMap"})
      EXPECT_EQ(Record(o, c).resources[r].status, "Applied") << c << " " << r;
  }
  for (const auto& id : {o, n}) {
    auto evs = EventList(id);
    ASSERT_EQ(evs.size(), 2u) << Events(id);
    EXPECT_EQ(evs[1]["event"], "update-delete");
    EXPECT_EQ(evs[1]["other"], m);
    EXPECT_EQ(evs[1]["status"], "done") << Events(id);
  }
}

}  // namespace
}  // namespace eco::rsync
