// The agent's runner against a real kube-sim: a publication built from
// the hub's AppContext (appcontext::Project) is applied on the cluster by
// rsync's own event code, object for object as push delivery applies the
// same context to another cluster; a snapshot restores everything; a
// terminate removes what was applied.
#include <gtest/gtest.h>

#include "agent/runner.h"
#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "live_objects.h"
#include "process.h"
#include "rsync/executor.h"
#include "rsync/metrics.h"
#include "rsync/rsync.h"
#include "store/sqlite_store.h"

namespace eco {
namespace {

using appcontext::ClusterRef;
using appcontext::ResourceSet;
using nlohmann::json;
using std::chrono::milliseconds;

ResourceSet App() {
  ResourceSet rs;
  rs.resources.push_back({"web-ns+Namespace",
                          {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "web-ns"}}}}});
  rs.resources.push_back({"cfg+ConfigMap",
                          {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", "cfg"}, {"namespace", "web-ns"}}},
                           {"data", {{"a", "1"}, {"b", "two"}}}}});
  rs.resources.push_back(
      {"web+Deployment",
       {{"apiVersion", "apps/v1"},
        {"kind", "Deployment"},
        {"metadata", {{"name", "web"}, {"namespace", "web-ns"}}},
        {"spec",
         {{"replicas", 2},
          {"selector", {{"matchLabels", {{"app", "web"}}}}},
          {"template",
           {{"metadata", {{"labels", {{"app", "web"}}}}},
            {"spec", {{"containers", json::array({{{"name", "web"}, {"image", "nginx:1.25"}}})}}}}}}}}});
  return rs;
}

// What an object is on the cluster, without what the server stamps.
class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::KubeSimOptions o;
    o.clusters = 2;
    sim_ = std::make_unique<testing::KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/hub"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    hub_ = std::move(*s);
    ctx_ = std::make_unique<appcontext::Contexts>(*hub_);
  }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    return testing::ClientOfKubeconfig(sim_->kubeconfig(cluster));
  }

  // A sealed context of one app on both clusters, its instantiate queued.
  // Its objects carry the labels the scheduler gives them.
  // `drift_policy`: the DIG's spec.driftPolicy (these tests repair unless told).
  std::string Context(ResourceSet rs, const std::string& drift_policy = "enforce") {
    appcontext::Meta m;
    m.drift_policy = drift_policy;
    m.kind = "dig";
    m.project = "p";
    m.composite_app = "ca";
    m.composite_app_version = "v1";
    m.dig = "dig";
    m.namespace_ = "default";
    m.app_order = {"app1"};
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok());
    for (auto& r : rs.resources) {
      r.object["metadata"]["labels"][appcontext::kContextLabel] = *id;
      r.object["metadata"]["labels"][appcontext::kAppLabel] = appcontext::LabelValue("app1");
    }
    EXPECT_TRUE(ctx_->PutApp(*id, "app1", rs, {{"prov", "cluster-1", 1, true, 0}, {"prov", "cluster-2", 2, true, 0}}).ok());
    store::Txn txn;
    txn.compares.push_back(ctx_->NotSealed(*id));
    txn.success = ctx_->SealOps(*id, "Created", {"instantiate", ""});
    EXPECT_TRUE(hub_->Commit(txn).ok());
    return *id;
  }

  appcontext::Publication Pub(uint64_t rev, const std::string& id, int64_t seq, const std::string& type) {
    appcontext::Publication p;
    p.revision = rev;
    p.context = id;
    p.event = seq;
    p.record.type = type;
    p.record.status = "pending";
    p.record.time = "2026-12-02T00:00:00.000Z";
    auto pc = appcontext::Project(*hub_, id, "prov+cluster-1");
    EXPECT_TRUE(pc.ok()) << pc.status().ToString();
    p.contexts.push_back(*pc);
    return p;
  }

  // The instantiate with the DIG's state: the ready monitor watches the
  // context's objects.
  appcontext::Publication WatchedPub(const std::string& id) {
    auto pub = Pub(1, id, 1, "instantiate");
    pub.state_key = catalog::StateKey("deploymentIntentGroup", {"p", "ca", "v1", "dig"});
    pub.state_value =
        json{{"statusctxid", id},
             {"actions", json::array({{{"state", "Instantiated"}, {"instance", id}, {"time", "t"}, {"revision", 1}}})}}
            .dump();
    return pub;
  }

  std::unique_ptr<agent::Runner> NewRunner(std::chrono::milliseconds drift = std::chrono::milliseconds(0),
                                           bool ready = true, rsync::Executor* exec = nullptr) {
    agent::RunnerOptions ro;
    ro.drift_interval = drift;
    ro.ready = ready;
    ro.executor = exec;
    ro.provider = "prov";
    ro.cluster = "cluster-1";
    ro.rsync.workers = 2;
    ro.rsync.poll = milliseconds(100);
    ro.rsync.retry_base = milliseconds(50);
    ro.rsync.retry_cap = milliseconds(200);
    return std::make_unique<agent::Runner>(ro, Client("cluster-1"));
  }

  // The outcome of app1 for (context, event), once reported.
  std::optional<appcontext::Outcome> OutcomeOf(agent::Runner& r, const std::string& id, int64_t ev) {
    auto rep = r.ReportSince(0);
    if (!rep.ok()) return std::nullopt;
    for (const auto& it : rep->items) {
      if (it.kind == agent::ReportItem::Kind::kOutcome && it.context == id && it.event == ev && it.app == "app1") {
        auto o = appcontext::ParseOutcome(it.json);
        if (o.ok()) return *o;
      }
    }
    return std::nullopt;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::KubeSim> sim_;
  std::unique_ptr<store::Store> hub_;
  std::unique_ptr<appcontext::Contexts> ctx_;
};

TEST_F(RunnerTest, AppliesAsPushDoesRestoresAndTerminates) {
  const std::string id = Context(App());
  auto runner = NewRunner();
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  EXPECT_EQ(runner->HaveRevision(), 1u);
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  auto out = OutcomeOf(*runner, id, 1);
  EXPECT_TRUE(out->ok) << out->message;

  // The deployed record goes up under the status context, for this cluster only.
  auto rep = runner->ReportSince(0);
  ASSERT_TRUE(rep.ok());
  bool deployed = false;
  for (const auto& it : rep->items) {
    if (it.kind != agent::ReportItem::Kind::kDeployed) continue;
    deployed = true;
    EXPECT_EQ(it.status_context, id);
    auto rec = appcontext::ParseDeployed(it.json);
    ASSERT_TRUE(rec.ok());
    EXPECT_EQ(rec->resources.at("cfg+ConfigMap").status, "Applied");
    EXPECT_EQ(rec->resources.at("web+Deployment").status, "Applied");
  }
  EXPECT_TRUE(deployed);

  // Push delivery of the same context to cluster-2: the same objects.
  rsync::Options po;
  po.workers = 2;
  po.poll = milliseconds(100);
  po.lock_retry = milliseconds(200);
  po.lease_ttl = std::chrono::seconds(3);
  po.client_source = [this](const std::string&, const std::string& c) -> Result<std::shared_ptr<k8s::ClusterClient>> {
    if (c != "cluster-2") return Unavailable("only cluster-2 is pushed to here");
    return Client(c);
  };
  rsync::Rsync push(*hub_, po);
  ASSERT_TRUE(push.Start().ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto r = appcontext::ReadDeployed(*hub_, id, "app1", "prov+cluster-2");
        return r.ok() && r->has_value() && (**r).resources.count("web+Deployment") &&
               (**r).resources.at("web+Deployment").status == "Applied";
      },
      milliseconds(30000)));
  push.Stop();
  auto c1 = Client("cluster-1"), c2 = Client("cluster-2");
  for (auto [av, kind, ns, name] : std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"v1", "Namespace", "", "web-ns"}, {"v1", "ConfigMap", "web-ns", "cfg"}, {"apps/v1", "Deployment", "web-ns", "web"}}) {
    auto a = c1->Get(av, kind, ns, name);
    auto b = c2->Get(av, kind, ns, name);
    ASSERT_TRUE(a.ok()) << kind << " " << name << ": " << a.status().ToString();
    ASSERT_TRUE(b.ok()) << kind << " " << name << ": " << b.status().ToString();
    EXPECT_EQ(testing::Comparable(*a), testing::Comparable(*b)) << kind << " " << name;
  }

  // A snapshot holds everything: a new runner knows the revision and reports the same.
  const std::string snap = runner->Snapshot();
  runner->Stop();
  auto again = NewRunner();
  ASSERT_TRUE(again->Restore(snap).ok());
  ASSERT_TRUE(again->Start().ok());
  EXPECT_EQ(again->HaveRevision(), 1u);
  EXPECT_GT(again->RestoredRevision(), 0u);
  ASSERT_TRUE(OutcomeOf(*again, id, 1).has_value());
  // An older revision again is ignored.
  ASSERT_TRUE(again->Accept(Pub(1, id, 1, "instantiate")).ok());

  // Terminate: the objects go.
  ASSERT_TRUE(again->Accept(Pub(2, id, 2, "terminate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*again, id, 2).has_value(); }, milliseconds(30000)));
  EXPECT_TRUE(OutcomeOf(*again, id, 2)->ok);
  EXPECT_EQ(c1->Get("v1", "ConfigMap", "web-ns", "cfg").status().code(), Code::kNotFound);
  EXPECT_EQ(c1->Get("apps/v1", "Deployment", "web-ns", "web").status().code(), Code::kNotFound);
  again->Stop();
}

// Someone else's server-side apply (forced, as kubectl's --force-conflicts).
bool ByHand(k8s::ClusterClient& c, const json& object, const std::string& manager) {
  k8s::ApplyOptions hand;
  hand.field_manager = manager;
  return c.Apply(object, hand).ok();
}

TEST_F(RunnerTest, RepairsDriftAndLeavesWhatIsRightAlone) {
  const std::string id = Context(App());
  auto runner = NewRunner(milliseconds(100));
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  auto c1 = Client("cluster-1");
  // Nothing drifted: nothing is re-applied, however often it looks.
  auto before = c1->Get("apps/v1", "Deployment", "web-ns", "web");
  ASSERT_TRUE(before.ok());
  testing::WaitUntil([] { return false; }, milliseconds(600));
  EXPECT_EQ(runner->DriftRepaired(), 0u);
  auto same = c1->Get("apps/v1", "Deployment", "web-ns", "web");
  EXPECT_EQ((*same)["metadata"]["resourceVersion"], (*before)["metadata"]["resourceVersion"]);

  // Deleted out of band: back, counted.
  ASSERT_TRUE(c1->Delete("v1", "ConfigMap", "web-ns", "cfg", k8s::Propagation::kBackground).ok());
  // The count moves after the apply returns: waited for too.
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return c1->Get("v1", "ConfigMap", "web-ns", "cfg").ok() && runner->DriftRepaired() >= 1u; },
      milliseconds(20000)))
      << runner->DriftRepaired();
  EXPECT_EQ((*c1->Get("v1", "ConfigMap", "web-ns", "cfg"))["data"]["b"], "two");

  // A field eco applies changed by someone else: set back.
  const uint64_t so_far = runner->DriftRepaired();
  ASSERT_TRUE(ByHand(*c1,
                     {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", "cfg"}, {"namespace", "web-ns"}}},
                      {"data", {{"a", "changed by hand"}}}},
                     "kubectl-edit"));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto cm = c1->Get("v1", "ConfigMap", "web-ns", "cfg");
        return cm.ok() && (*cm)["data"]["a"] == "1" && runner->DriftRepaired() > so_far;
      },
      milliseconds(20000)))
      << runner->DriftRepaired() << " " << so_far;
  runner->Stop();
}

// spec.driftPolicy "report": the agent records the drift (what changed,
// by whom, or that the object is gone) for the hub and applies nothing.
TEST_F(RunnerTest, ReportPolicyRecordsDriftAndRepairsNothing) {
  const std::string id = Context(App(), "report");
  auto runner = NewRunner();  // no rounds of its own: CheckDrift below
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  auto c1 = Client("cluster-1");
  auto drift_reported = [&]() -> json {
    auto rep = runner->ReportSince(0);
    if (!rep.ok()) return json();
    for (const auto& it : rep->items) {
      if (it.kind == agent::ReportItem::Kind::kDrift && it.app == "app1") return json::parse(it.json);
    }
    return json();
  };
  auto none = runner->CheckDrift(true);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(drift_reported().is_null());  // nothing drifted, nothing recorded

  ASSERT_TRUE(ByHand(*c1,
                     {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", "cfg"}, {"namespace", "web-ns"}}},
                      {"data", {{"a", "changed by hand"}}}},
                     "kubectl-edit"));
  auto n = runner->CheckDrift(true);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(runner->DriftRepaired(), 0u);
  EXPECT_EQ((*c1->Get("v1", "ConfigMap", "web-ns", "cfg"))["data"]["a"], "changed by hand");
  json rec = drift_reported();
  ASSERT_TRUE(rec.is_object());
  json cfg = rec["resources"]["cfg+ConfigMap"];
  EXPECT_EQ(cfg["drifted"], true);
  EXPECT_EQ(cfg["deleted"], false);
  ASSERT_TRUE(cfg["fields"].is_array());
  bool seen = false;
  for (const auto& f : cfg["fields"]) {
    if (f["path"] != "data.a") continue;
    seen = true;
    EXPECT_EQ(f["desired"], "1");
    EXPECT_EQ(f["live"], "changed by hand");
    EXPECT_EQ(f.value("manager", ""), "kubectl-edit");
  }
  EXPECT_TRUE(seen) << cfg.dump();

  ASSERT_TRUE(c1->Delete("v1", "ConfigMap", "web-ns", "cfg", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return !c1->Get("v1", "ConfigMap", "web-ns", "cfg").ok(); }, milliseconds(5000)));
  ASSERT_TRUE(runner->CheckDrift(true).ok());
  EXPECT_EQ(drift_reported()["resources"]["cfg+ConfigMap"]["deleted"], true);
  EXPECT_EQ(c1->Get("v1", "ConfigMap", "web-ns", "cfg").status().code(), Code::kNotFound);
  EXPECT_EQ(runner->DriftRepaired(), 0u);
  runner->Stop();
}

// Every request the cluster has served.
uint64_t Served(testing::KubeSim& sim, const std::string& cluster) {
  json by = json::parse(sim.Requests(cluster), nullptr, false);
  uint64_t n = 0;
  if (by.is_object()) {
    for (const auto& [ua, count] : by.items()) n += count.is_number_unsigned() ? count.get<uint64_t>() : 0;
  }
  return n;
}

// Between sweeps a quiet cluster is not read at all: the rounds look only
// at what the watches saw change, and still see a deletion.
TEST_F(RunnerTest, AQuietClusterIsNotReadBetweenSweeps) {
  const std::string id = Context(App());
  auto runner = NewRunner(milliseconds(100));
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(WatchedPub(id)).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  // Reading every object every 100 ms would never let the count rest for
  // a second (ten rounds).
  uint64_t last = Served(*sim_, "cluster-1");
  auto since = std::chrono::steady_clock::now();
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const uint64_t now = Served(*sim_, "cluster-1");
        if (now != last || runner->DriftSuspects() != 0) since = std::chrono::steady_clock::now();
        last = now;
        return std::chrono::steady_clock::now() - since >= milliseconds(1000);
      },
      milliseconds(30000)))
      << "requests kept coming: " << sim_->Requests("cluster-1");
  EXPECT_EQ(runner->DriftRepaired(), 0u);
  // Nor are its records parsed again: ten rounds, not one reads them.
  const uint64_t read = runner->DriftRoundsRead();
  testing::WaitUntil([] { return false; }, milliseconds(1000));
  EXPECT_EQ(runner->DriftRoundsRead(), read);
  auto c1 = Client("cluster-1");
  ASSERT_TRUE(c1->Delete("v1", "ConfigMap", "web-ns", "cfg", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return c1->Get("v1", "ConfigMap", "web-ns", "cfg").ok() && runner->DriftRepaired() == 1u; },
      milliseconds(20000)))
      << runner->DriftRepaired();
  EXPECT_GT(runner->DriftRoundsRead(), read);
  runner->Stop();
}

// What an event applied is right at the version the cluster answered: its
// watch reporting that version (before or after the answer is back) makes
// no suspect, and a round reads nothing back; a change by someone else does.
TEST_F(RunnerTest, WhatAnEventAppliedIsNotReadBack) {
  ResourceSet rs;
  for (const char* name : {"one", "two"}) {
    rs.resources.push_back({std::string(name) + "+ConfigMap",
                            {{"apiVersion", "v1"},
                             {"kind", "ConfigMap"},
                             {"metadata", {{"name", name}}},
                             {"data", {{"k", name}}}}});
  }
  const std::string id = Context(rs);
  auto runner = NewRunner(std::chrono::minutes(10));  // rounds only when asked
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(WatchedPub(id)).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  // A ready record is written once the watches have listed: they have seen both.
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto rep = runner->ReportSince(0);
        if (!rep.ok()) return false;
        for (const auto& it : rep->items) {
          if (it.kind == agent::ReportItem::Kind::kReady) return true;
        }
        return false;
      },
      milliseconds(30000)));
  EXPECT_EQ(runner->DriftSuspects(), 0u);
  auto first = runner->CheckDrift(false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, 0u);
  EXPECT_EQ(runner->DriftReads(), 0u);

  auto c1 = Client("cluster-1");
  ASSERT_TRUE(ByHand(*c1,
                     {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", "two"}, {"namespace", "default"}}},
                      {"data", {{"k", "by hand"}}}},
                     "kubectl-edit"));
  ASSERT_TRUE(testing::WaitUntil([&] { return runner->DriftSuspects() == 1; }, milliseconds(20000)));
  auto second = runner->CheckDrift(false);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, 1u);
  EXPECT_EQ(runner->DriftReads(), 1u);
  EXPECT_EQ((*c1->Get("v1", "ConfigMap", "default", "two"))["data"]["k"], "two");
  runner->Stop();
}

// Without the watches (no ready monitor) every round reads everything.
TEST_F(RunnerTest, WithoutWatchesEveryRoundIsASweep) {
  const std::string id = Context(App());
  auto runner = NewRunner(milliseconds(100), /*ready=*/false);
  ASSERT_TRUE(runner->Start().ok());
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(30000)));
  auto c1 = Client("cluster-1");
  ASSERT_TRUE(ByHand(*c1,
                     {{"apiVersion", "apps/v1"},
                      {"kind", "Deployment"},
                      {"metadata", {{"name", "web"}, {"namespace", "web-ns"}}},
                      {"spec", {{"replicas", 5}}}},
                     "kubectl-scale"));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto d = c1->Get("apps/v1", "Deployment", "web-ns", "web");
        return d.ok() && (*d)["spec"]["replicas"] == 2 && runner->DriftRepaired() >= 1u;
      },
      milliseconds(20000)))
      << runner->DriftRepaired();
  runner->Stop();
}

// A cancel from the hub (the event failed on another cluster, or was
// stopped) ends the event running here, and one not started yet ends at
// its start, before anything is applied.
TEST_F(RunnerTest, AHubCancelEndsTheEventHereRunningOrNot) {
  const std::string id = Context(App());
  auto c1 = Client("cluster-1");
  auto cancel = [&](uint64_t rev, int64_t seq, const std::string& why) {
    appcontext::Publication p;
    p.revision = rev;
    p.context = id;
    p.event = seq;
    p.record.type = "instantiate";
    p.cancel = why;
    p.cancel_message = "cancelled: another cluster failed";
    return p;
  };

  // The runners work on a pool of the test's, which says when nothing is
  // left to run (no ready monitor and no drift rounds: only events post
  // there). It is shut down before they go, as fleet mode's is.
  rsync::Executor exec(2);
  std::unique_ptr<agent::Runner> runner, later;
  struct ShutDown {
    rsync::Executor& pool;
    ~ShutDown() { pool.Shutdown(); }
  } shut_down{exec};
  auto& retries = rsync::RsyncMetrics::Get().retries;  // this runner's alone while it runs

  // Running: the cluster does not answer, so the task waits to retry.
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  runner = NewRunner(milliseconds(0), /*ready=*/false, &exec);
  ASSERT_TRUE(runner->Start().ok());
  const double retried = retries.Value();
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return runner->Busy() == 1; }, milliseconds(10000)));
  ASSERT_TRUE(
      testing::WaitUntil([&] { return retries.Value() >= retried + 3; }, milliseconds(10000)))
      << "a few retries";
  ASSERT_TRUE(runner->Accept(cancel(2, 1, "failed")).ok());
  EXPECT_EQ(runner->HaveRevision(), 2u);
  ASSERT_TRUE(testing::WaitUntil([&] { return runner->Busy() == 0; }, milliseconds(10000)));
  ASSERT_TRUE(testing::WaitUntil([&] { return OutcomeOf(*runner, id, 1).has_value(); }, milliseconds(10000)));
  EXPECT_FALSE(OutcomeOf(*runner, id, 1)->ok);
  EXPECT_NE(OutcomeOf(*runner, id, 1)->message.find("another cluster failed"), std::string::npos)
      << OutcomeOf(*runner, id, 1)->message;
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
  // Every timer the task had set has come due and nothing is left to run:
  // a retry that outlived the cancel would have applied by now.
  ASSERT_TRUE(testing::WaitUntil([&] { return exec.Outstanding() == 0; }, milliseconds(10000)))
      << exec.Outstanding() << " still to run";
  EXPECT_EQ(c1->Get("v1", "ConfigMap", "web-ns", "cfg").status().code(), Code::kNotFound);
  runner->Stop();

  // Not started yet: published and cancelled while the agent was stopped.
  const std::string id2 = Context(App());
  later = NewRunner(milliseconds(0), /*ready=*/false, &exec);
  ASSERT_TRUE(later->Accept(Pub(1, id2, 1, "instantiate")).ok());
  auto c = cancel(2, 1, "stopped");
  c.context = id2;
  ASSERT_TRUE(later->Accept(c).ok());
  ASSERT_TRUE(later->Start().ok());
  // Ended, and nothing of it left to run.
  ASSERT_TRUE(testing::WaitUntil([&] { return later->Busy() == 0 && exec.Outstanding() == 0; },
                                 milliseconds(10000)));
  EXPECT_EQ(c1->Get("v1", "ConfigMap", "web-ns", "cfg").status().code(), Code::kNotFound);
  // A cancel of an event that ended is only taken in.
  ASSERT_TRUE(later->Accept(cancel(3, 1, "failed")).ok());
  EXPECT_EQ(later->HaveRevision(), 3u);
  later->Stop();
}

// Fleet mode stops each runner while the shared pool may still hold their
// events' work (a task waiting to retry): it all runs out after Stop() and
// leaves nothing busy. (Checked under AddressSanitizer by hand: no use
// after free, with or without the task runner kept alive.)
TEST_F(RunnerTest, StoppedOnASharedPoolItsLeftoverWorkRunsSafely) {
  const std::string id = Context(App());
  rsync::Executor exec(2);
  std::unique_ptr<agent::Runner> runner;
  struct ShutDown {
    rsync::Executor& pool;
    ~ShutDown() { pool.Shutdown(); }
  } shut_down{exec};
  auto& retries = rsync::RsyncMetrics::Get().retries;
  ASSERT_EQ(sim_->Fault("cluster-1", "down"), 200);
  runner = NewRunner(milliseconds(0), /*ready=*/false, &exec);
  ASSERT_TRUE(runner->Start().ok());
  const double retried = retries.Value();
  ASSERT_TRUE(runner->Accept(Pub(1, id, 1, "instantiate")).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return retries.Value() >= retried + 2; }, milliseconds(10000)));
  runner->Stop();
  ASSERT_TRUE(testing::WaitUntil([&] { return exec.Outstanding() == 0; }, milliseconds(10000)))
      << exec.Outstanding() << " still to run";
  EXPECT_EQ(runner->Busy(), 0u);
  ASSERT_EQ(sim_->Fault("cluster-1", "up"), 200);
}

TEST_F(RunnerTest, RefusesAPublicationThatContradictsItself) {
  const std::string id = Context(App());
  auto runner = NewRunner();
  ASSERT_TRUE(runner->Start().ok());
  auto p = Pub(1, id, 1, "instantiate");
  p.context = "another";
  EXPECT_EQ(runner->Accept(p).code(), Code::kInvalid);
  EXPECT_EQ(runner->HaveRevision(), 0u);
  EXPECT_FALSE(runner->Restore("{}").ok());
  runner->Stop();
}

TEST(PublicationCodec, RoundTripsAndRefusesGarbage) {
  appcontext::Publication p;
  p.revision = 7;
  p.context = "c1";
  p.event = 3;
  p.record.type = "update";
  p.record.status = "pending";
  p.record.other = "c0";
  p.other_complete = true;
  appcontext::ProjectedContext pc;
  pc.meta.id = "c1";
  pc.meta.app_order = {"a"};
  pc.apps.push_back({"a", App(), ClusterRef{"p", "x", 1, true, 0}});
  pc.superseded = "c2";
  p.contexts.push_back(pc);
  const std::string bytes = appcontext::EncodePublication(p);
  auto back = appcontext::DecodePublication(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(appcontext::ToJson(*back), appcontext::ToJson(p));
  EXPECT_FALSE(appcontext::DecodePublication("").ok());
  EXPECT_FALSE(appcontext::DecodePublication(bytes.substr(0, bytes.size() / 2)).ok());
  std::string big = bytes;
  big[7] = '\x7f';  // claims a size far beyond the bound
  EXPECT_FALSE(appcontext::DecodePublication(big).ok());
}

}  // namespace
}  // namespace eco
