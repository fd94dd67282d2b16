// The ready monitor's layers one by one (docs/status.md, "How the ready
// monitor is built"), fed by hand: a SQLite store, a fake clock, a manual
// executor and watch events played through a WatchSource. No cluster, no
// thread of the monitor's.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "fake_clock.h"
#include "process.h"
#include "rsync/executor.h"
#include "status/ready_drift.h"
#include "status/ready_judge.h"
#include "status/ready_monitor.h"
#include "status/ready_plan.h"
#include "status/ready_scan.h"
#include "status/ready_starts.h"
#include "status/ready_writer.h"
#include "status/shared_watches.h"

namespace eco::status {
namespace {

using k8s::WatchEvent;
using k8s::WatchEventType;
using nlohmann::json;

json Obj(const std::string& av, const std::string& kind, const std::string& name) {
  return {{"apiVersion", av}, {"kind", kind}, {"metadata", {{"name", name}}}};
}

// `obj` as a cluster shows it, labelled for context `ctx` and app `app`.
json Live(json obj, const std::string& ctx, const std::string& app) {
  obj["metadata"]["namespace"] = "default";
  obj["metadata"]["labels"] = {{"app.eco.io/context", ctx}, {"app.eco.io/app", app}};
  return obj;
}

class FakeSource : public WatchSource {
 public:
  Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient>, const k8s::WatchSpec& spec,
                             k8s::WatchCallback callback) override {
    started.push_back({spec, std::move(callback)});
    return static_cast<k8s::WatchId>(started.size());
  }
  void Cancel(k8s::WatchId) override {}
  std::vector<std::pair<k8s::WatchSpec, k8s::WatchCallback>> started;
};

class ReadyLayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
  }

  // An instantiated DIG: app "web" (cfg ConfigMap, web Deployment) on
  // p+c1, app "db" (db-cfg ConfigMap) on p+c2.
  std::string Instantiate() {
    appcontext::Contexts c(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(600));
    appcontext::Meta m;
    m.kind = "dig";
    m.project = "proj";
    m.app_order = {"web", "db"};
    auto id = c.Create(m, *lease);
    EXPECT_TRUE(id.ok());
    appcontext::ResourceSet web, db;
    for (json o : {Obj("v1", "ConfigMap", "cfg"), Obj("apps/v1", "Deployment", "web")})
      web.resources.push_back({appcontext::ResourceName(o), o});
    json dbcm = Obj("v1", "ConfigMap", "db-cfg");
    db.resources.push_back({appcontext::ResourceName(dbcm), dbcm});
    EXPECT_TRUE(c.PutApp(*id, "web", web, {{"p", "c1", 1, true, 0}}).ok());
    EXPECT_TRUE(c.PutApp(*id, "db", db, {{"p", "c2", 2, true, 0}}).ok());
    EXPECT_TRUE(st_->Put(appcontext::StatusKey(*id), json{{"status", "Instantiated"}}.dump()).ok());
    json actions = json::array(
        {{{"state", "Instantiated"}, {"instance", *id}, {"time", "t"}, {"revision", 1}}});
    EXPECT_TRUE(st_->Put(catalog::StateKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
                         json{{"statusctxid", *id}, {"actions", actions}}.dump())
                    .ok());
    return *id;
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
};

// (d) Judgement: nothing before every kind has listed; then each planned
// object Ready / NotReady / NotPresent, and the app's Pods as cluster-only.
TEST(ReadyJudge, NothingUntilListedThenEachObjectAndTheAppsPods) {
  appcontext::ResourceSet rs;
  for (json o : {Obj("v1", "ConfigMap", "cfg"), Obj("apps/v1", "Deployment", "web")})
    rs.resources.push_back({appcontext::ResourceName(o), o});
  auto shape = MakeShape(rs, "web", false);
  ASSERT_EQ(shape->kinds.size(), 3u);  // ConfigMap, Deployment, and the Deployment's Pods
  ASSERT_EQ(shape->pod_kind, 2);
  KindObjects cms, deps, pods;
  pods.objects = ObjectStates(/*keep_names=*/true);
  EXPECT_FALSE(JudgeReady(*shape, {&cms, &deps, &pods}));
  cms.synced = deps.synced = pods.synced = true;
  json cm = Live(Obj("v1", "ConfigMap", "cfg"), "ctx", "web");
  EXPECT_TRUE(cms.objects.Set(ObjectKey(cm, false), cm));
  EXPECT_FALSE(cms.objects.Set(ObjectKey(cm, false), cm));  // no change
  json pod = Live(Obj("v1", "Pod", "web-1"), "ctx", "web");
  pod["status"] = {{"phase", "Pending"}};
  pods.objects.Set(ObjectKey(pod, false), pod);
  auto r = JudgeReady(*shape, {&cms, &deps, &pods});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->resources, (std::map<std::string, std::string>{{"cfg+ConfigMap", "Ready"},
                                                              {"web+Deployment", "NotPresent"}}));
  EXPECT_EQ(r->cluster_only, (std::map<std::string, std::string>{{"web-1+Pod", "NotReady"}}));
  EXPECT_FALSE(r->ready);
  EXPECT_EQ(CountByStatus(*r), (std::array<int32_t, 3>{1, 1, 1}));
  appcontext::ReadyRecord later = *r;
  later.time = "later";
  EXPECT_EQ(RecordHash(later), RecordHash(*r));  // the time alone writes nothing
}

// (a) Scan: the instantiated DIG is watched; an unchanged store is skipped.
TEST_F(ReadyLayersTest, ScanWatchesTheInstantiatedAndSkipsAnUnchangedStore) {
  ContextScan scan(*st_, /*skip_unchanged=*/true);
  auto none = scan.Scan();
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  scan.Completed();
  EXPECT_FALSE(scan.Scan());  // nothing moved
  EXPECT_EQ(scan.skipped_scans(), 1u);
  std::string ctx = Instantiate();
  auto want = scan.Scan();
  ASSERT_TRUE(want);
  EXPECT_EQ(*want, (WatchedContexts{{ctx, ctx}}));
  EXPECT_EQ(scan.full_scans(), 2u);
}

// (b) Plans: one subscription per cluster x kind the apps deploy there,
// only on the clusters watched from here.
TEST_F(ReadyLayersTest, PlanHasOneWatchPerClusterAndKindOfTheWatchedClusters) {
  std::string ctx = Instantiate();
  auto all = [](const std::string&, const std::string&) { return true; };
  auto p = BuildPlan(*st_, ctx, ctx, all, false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->acs.size(), 2u);
  std::vector<std::string> keys;
  for (const auto& [k, w] : (*p)->watches) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"p+c1\napps/v1\nDeployment", "p+c1\nv1\nConfigMap",
                                            "p+c1\nv1\nPod", "p+c2\nv1\nConfigMap"}));
  auto only_c1 = [](const std::string&, const std::string& c) { return c == "c1"; };
  auto q = BuildPlan(*st_, ctx, ctx, only_c1, false);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)->acs.size(), 1u);
  EXPECT_EQ((*q)->watches.size(), 3u);
}

// (e) Writer: an unreachable cluster is recorded and its record deleted
// when it answers again; contacts are written at most once per interval
// of the clock.
TEST_F(ReadyLayersTest, WriterRecordsReachabilityAndThrottlesContacts) {
  eco::testing::FakeClock clock;
  ReadyWriter w(*st_, clock, {true, "replica-1", std::chrono::seconds(60)});
  EXPECT_TRUE(w.SetReachable("p+c1", false, "refused"));
  EXPECT_FALSE(w.SetReachable("p+c1", false, "refused"));  // no change
  ASSERT_TRUE(w.WriteClusters());
  auto rec = appcontext::ReadUnreachable(*st_, "p+c1");
  ASSERT_TRUE(rec.ok() && rec->has_value());
  EXPECT_EQ((*rec)->error, "refused");
  EXPECT_TRUE(w.SetReachable("p+c1", true, ""));
  ASSERT_TRUE(w.WriteClusters());
  rec = appcontext::ReadUnreachable(*st_, "p+c1");
  ASSERT_TRUE(rec.ok());
  EXPECT_FALSE(rec->has_value());
  EXPECT_FALSE(w.AnyUnreachable());

  EXPECT_TRUE(w.Heard("p+c1"));
  EXPECT_FALSE(w.Heard("p+c1"));  // within the minute
  ASSERT_TRUE(w.WriteClusters());
  EXPECT_FALSE(w.Due());
  clock.Advance(std::chrono::seconds(61));
  EXPECT_TRUE(w.Heard("p+c1"));

  appcontext::ReadyRecord r;
  r.resources = {{"cfg+ConfigMap", "Ready"}};
  auto written = w.WriteRecords({{appcontext::ReadyKey("ctx", "web", "p+c1"), r}});
  EXPECT_EQ(written, std::vector<bool>{true});
  auto back = appcontext::ReadReady(*st_, "ctx", "web", "p+c1");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->resources, r.resources);
}

// Drift: a watch event makes a suspect only of what it shows changed or
// gone; a deployment not Instantiated (an event running) is judged later.
TEST_F(ReadyLayersTest, DriftSuspectsAreWhatTheEventShowsAndBusyDeploymentsWait) {
  std::string ctx = Instantiate();
  auto p = BuildPlan(
      *st_, ctx, ctx, [](const std::string&, const std::string&) { return true; }, true);
  ASSERT_TRUE(p.ok());
  const KindWatch& cms = (*p)->watches.at("p+c2\nv1\nConfigMap");
  json live = Live(Obj("v1", "ConfigMap", "db-cfg"), ctx, "db");
  const std::string okey = ObjectKey(live, false);
  EXPECT_TRUE(ChangeSuspects(**p, cms, okey, &live, std::nullopt, true).empty());
  live["metadata"]["name"] = "other";
  EXPECT_TRUE(ChangeSuspects(**p, cms, ObjectKey(live, false), &live, std::nullopt, true).empty());
  EXPECT_EQ(ChangeSuspects(**p, cms, okey, nullptr, std::nullopt, false),
            (std::vector<std::pair<std::string, std::string>>{{"db\np+c2", "db-cfg+ConfigMap"}}));
  EXPECT_EQ(RelistSuspects(**p, cms, {}).size(), 1u);  // listed without it: gone

  ASSERT_TRUE(st_->Put(appcontext::StatusKey(ctx), json{{"status", "Instantiating"}}.dump()).ok());
  eco::testing::FakeClock clock;
  DriftJudge judge(
      *st_, clock,
      [](const std::string&, const std::string&) {
        return Result<std::shared_ptr<k8s::ClusterClient>>(Unavailable("not asked"));
      },
      nullptr);
  const AppCluster& ac = (*p)->acs.at("db\np+c2");
  auto out = judge.Run(
      {{{ctx, 1, "db\np+c2"}, ctx, "db", "p+c2", "p", "c2", ac.shape, {"db-cfg+ConfigMap"}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].deferred, (std::set<std::string>{"db-cfg+ConfigMap"}));
  EXPECT_FALSE(out[0].drifted);
}

// Watch starts: one task per cluster, at most `limit` at once; a cluster
// that does not answer gives up its other items; subscriptions retired
// end only once no start is queued or running.
TEST(ReadyStarts, BoundedTasksPerClusterAndRetiredEndLast) {
  eco::testing::FakeClock clock;
  auto exec = rsync::Executor::Manual(clock);
  FakeSource source;
  SharedWatches shared(source);
  std::vector<std::string> tried;
  WatchStarts starts(
      1,
      [&](const WatchStarts::Item& t) {
        tried.push_back(t.cluster + "/" + t.kind);
        return t.cluster != "down";
      },
      [&](std::function<void()> task) { exec->Post(std::move(task)); }, shared);
  auto old = shared.Subscribe("old", WatchKey{"p+up", "v1", "ConfigMap"}, nullptr,
                              [](const WatchEvent&) {});
  ASSERT_TRUE(old.ok());
  auto item = [](const std::string& cluster, const std::string& kind) {
    return WatchStarts::Item{"ctx", 1, kind, "p", cluster, "v1", kind};
  };
  starts.Queue({{"p+down", {item("down", "ConfigMap"), item("down", "Secret")}},
                {"p+up", {item("up", "ConfigMap"), item("up", "Secret")}}});
  EXPECT_EQ(exec->Outstanding(), 1u);  // one cluster's task at a time
  starts.Retire({*old});
  EXPECT_TRUE(starts.Busy("p+down"));
  EXPECT_EQ(shared.active_watches(), 1u);  // not while starts are queued
  exec->RunReady();
  EXPECT_EQ(tried, (std::vector<std::string>{"down/ConfigMap", "up/ConfigMap", "up/Secret"}));
  EXPECT_FALSE(starts.Busy("p+down"));
  EXPECT_EQ(shared.active_watches(), 0u);  // retired once every start ran
  EXPECT_TRUE(starts.Stop().empty());
}

// The facade on a manual executor and the fake clock, its watches fed
// through the WatchSource seam: the scan subscribes, a relist makes the
// records due, and they are written once the clock passes the coalescing
// pause, stamped with its time. Nothing runs unless the test runs it.
TEST_F(ReadyLayersTest, MonitorRunsOnlyOnItsExecutorAndWritesOnItsClock) {
  std::string ctx = Instantiate();
  eco::testing::FakeClock clock;
  auto exec = rsync::Executor::Manual(clock);
  FakeSource source;
  ReadyMonitorOptions o;
  o.clock = &clock;
  o.source = &source;
  o.watch_states = false;
  o.clients = [](const std::string&, const std::string&) {
    return Result<std::shared_ptr<k8s::ClusterClient>>(std::shared_ptr<k8s::ClusterClient>());
  };
  o.watched = [](const std::string&, const std::string&) { return true; };
  o.post = [&](Clock::Duration after, std::function<void()> round) {
    after == Clock::Duration::zero() ? exec->Post(std::move(round))
                                     : exec->PostAfter(after, std::move(round));
  };
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  EXPECT_EQ(mon.watched_contexts(), 0u);  // nothing ran yet
  exec->RunReady();                       // the scan, then each cluster's watch starts
  EXPECT_EQ(mon.watched_contexts(), 1u);
  ASSERT_EQ(source.started.size(), 4u);
  for (auto& [spec, cb] : source.started) {
    std::vector<json> items;
    if (spec.kind == "ConfigMap") items = {Live(Obj("v1", "ConfigMap", "cfg"), ctx, "web")};
    WatchEvent e;
    e.type = WatchEventType::kResync;
    e.items = items;
    cb(e);
  }
  exec->RunReady();
  EXPECT_FALSE(
      appcontext::ReadReady(*st_, ctx, "web", "p+c1")->has_value());  // coalescing on the clock
  clock.Advance(std::chrono::milliseconds(100));
  exec->RunReady();
  auto web = appcontext::ReadReady(*st_, ctx, "web", "p+c1");
  ASSERT_TRUE(web.ok() && web->has_value());
  EXPECT_EQ((*web)->resources, (std::map<std::string, std::string>{
                                   {"cfg+ConfigMap", "Ready"}, {"web+Deployment", "NotPresent"}}));
  EXPECT_TRUE((*web)->time.starts_with("2026-01-01T00:00:00")) << (*web)->time;
  auto db = appcontext::ReadReady(*st_, ctx, "db", "p+c2");
  ASSERT_TRUE(db.ok() && db->has_value());
  EXPECT_EQ((*db)->resources,
            (std::map<std::string, std::string>{{"db-cfg+ConfigMap", "NotPresent"}}));
  mon.Stop();
}

// A watch start that waits (a cluster that is down, until its connect
// timeout) holds one task: the other cluster's watches start, its records
// are written and the scans go on meanwhile.
TEST_F(ReadyLayersTest, AStartThatWaitsHoldsUpNoOtherClusterNorAnyRound) {
  // p+c2 does not answer until released; the other starts are recorded.
  struct WaitingSource : WatchSource {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;                                               // guarded by mu
    std::vector<std::pair<k8s::WatchSpec, k8s::WatchCallback>> started;  // guarded by mu
    Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient>, const k8s::WatchSpec& spec,
                               k8s::WatchCallback callback) override {
      std::lock_guard<std::mutex> l(mu);
      started.push_back({spec, std::move(callback)});
      return static_cast<k8s::WatchId>(started.size());
    }
    void Cancel(k8s::WatchId) override {}
    void WaitReleased() {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return released; });
    }
  } source;
  std::string ctx = Instantiate();
  rsync::Executor pool(3);
  ReadyMonitorOptions o;
  o.source = &source;
  o.watch_states = false;
  o.start_threads = 2;
  o.scan_interval = std::chrono::milliseconds(20);
  o.clients = [&](const std::string&,
                  const std::string& cluster) -> Result<std::shared_ptr<k8s::ClusterClient>> {
    if (cluster != "c2") return std::shared_ptr<k8s::ClusterClient>();
    source.WaitReleased();  // the connect timeout of a cluster that is down
    return Unavailable("connect timeout");
  };
  o.watched = [](const std::string&, const std::string&) { return true; };
  o.post = [&](Clock::Duration after, std::function<void()> round) {
    pool.PostAfter(after, std::move(round));
  };
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(source.mu);
        return source.started.size() == 3;  // p+c1's three kinds
      },
      std::chrono::seconds(10)));
  std::vector<k8s::WatchCallback> callbacks;
  {
    std::lock_guard<std::mutex> l(source.mu);
    for (auto& [spec, cb] : source.started) callbacks.push_back(cb);
  }
  for (auto& cb : callbacks) {
    WatchEvent e;
    e.type = WatchEventType::kResync;
    cb(e);
  }
  EXPECT_TRUE(eco::testing::WaitUntil(
      [&] {
        auto web = appcontext::ReadReady(*st_, ctx, "web", "p+c1");
        return web.ok() && web->has_value();
      },
      std::chrono::seconds(10)));
  // Scans go on too (none queues p+c2 again while its start waits).
  const uint64_t scans = mon.full_scans();
  EXPECT_TRUE(eco::testing::WaitUntil([&] { return mon.full_scans() >= scans + 2; },
                                      std::chrono::seconds(10)));
  {
    std::lock_guard<std::mutex> l(source.mu);
    source.released = true;
  }
  source.cv.notify_all();
  mon.Stop();
}

}  // namespace
}  // namespace eco::status
