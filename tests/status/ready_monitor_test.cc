// ReadyMonitor against a real kube-sim: objects applied with eco's client
// carry the scheduler's labels; the monitor's ReadyRecords follow the
// cluster (Ready, NotReady for a Deployment that cannot schedule,
// NotPresent for what is missing or deleted), one watch per cluster and kind.
#include "status/ready_monitor.h"

#include <gtest/gtest.h>

#include <atomic>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "fake_clock.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "rsync/executor.h"
#include "status/liveness.h"
#include "status/query.h"

namespace eco::status {
namespace {

using appcontext::ResourceSet;
using nlohmann::json;

json Labelled(json obj, const std::string& ctx, const std::string& app) {
  obj["metadata"]["namespace"] = "default";
  obj["metadata"]["labels"] = {{"app.eco.io/context", ctx}, {"app.eco.io/app", app}};
  // Pod templates carry them too, as the scheduler renders them.
  if (obj.contains("spec") && obj["spec"].contains("template")) {
    obj["spec"]["template"]["metadata"]["labels"]["app.eco.io/context"] = ctx;
    obj["spec"]["template"]["metadata"]["labels"]["app.eco.io/app"] = app;
  }
  return obj;
}

json ConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"k", "v"}}}};
}

json Deployment(const std::string& name, bool schedulable) {
  json pod = {{"containers", json::array({{{"name", "c"}, {"image", "nginx:1.25"}}})}};
  if (!schedulable) pod["nodeSelector"] = {{"eco.test/no-such-node", "true"}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"run", name}}}}},
            {"template", {{"metadata", {{"labels", {{"run", name}}}}}, {"spec", pod}}}}}};
}

class ReadyMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    eco::testing::KubeSimOptions o;
    o.clusters = 2;
    o.ready_delay_ms = 50;
    sim_ = std::make_unique<eco::testing::KubeSim>(o);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
  }

  // Fast scans; clients straight from kube-sim's kubeconfigs.
  ReadyMonitorOptions Options() {
    ReadyMonitorOptions o;
    o.scan_interval = std::chrono::milliseconds(200);
    o.post = [this](Clock::Duration after, std::function<void()> round) { pool_.PostAfter(after, std::move(round)); };
    o.clients = [this](const std::string&,
                       const std::string& cluster) -> Result<std::shared_ptr<k8s::ClusterClient>> {
      return Client(cluster);
    };
    return o;
  }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    auto rc = k8s::LoadKubeconfigFile(sim_->kubeconfig(cluster));
    EXPECT_TRUE(rc.ok()) << rc.status().ToString();
    auto c = k8s::NewClusterClient(*rc);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::shared_ptr<k8s::ClusterClient>(std::move(*c));
  }

  // An instantiated DIG: web (cfg, web, stuck) on cluster-1, db (db-cfg) on cluster-2.
  std::string Instantiate() {
    appcontext::Contexts c(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(600));
    EXPECT_TRUE(lease.ok());
    appcontext::Meta m;
    m.kind = "dig";
    m.project = "proj";
    m.app_order = {"web", "db"};
    auto id = c.Create(m, *lease);
    EXPECT_TRUE(id.ok());
    ResourceSet web, db;
    for (json o : {ConfigMap("cfg"), Deployment("web", true), Deployment("stuck", false)}) {
      web.resources.push_back({appcontext::ResourceName(o), o});
    }
    json dbcm = ConfigMap("db-cfg");
    db.resources.push_back({appcontext::ResourceName(dbcm), dbcm});
    EXPECT_TRUE(c.PutApp(*id, "web", web, {{"p", "cluster-1", 1, true, 0}}).ok());
    EXPECT_TRUE(c.PutApp(*id, "db", db, {{"p", "cluster-2", 2, true, 0}}).ok());
    EXPECT_TRUE(st_->Put(appcontext::StatusKey(*id), json{{"status", "Instantiated"}}.dump()).ok());
    EXPECT_TRUE(st_->Put(catalog::ObjectKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
                         json{{"metadata", {{"name", "dig"}}}, {"spec", json::object()}}.dump())
                    .ok());
    SetState({{"Approved", ""}, {"Instantiated", *id}}, *id);
    return *id;
  }

  void SetState(const std::vector<std::pair<std::string, std::string>>& actions,
                const std::string& sctx) {
    json a = json::array();
    for (const auto& [s, i] : actions)
      a.push_back({{"state", s}, {"instance", i}, {"time", "t"}, {"revision", 1}});
    ASSERT_TRUE(st_->Put(catalog::StateKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
                         json{{"statusctxid", sctx}, {"actions", a}}.dump())
                    .ok());
  }

  std::optional<appcontext::ReadyRecord> Record(const std::string& ctx, const std::string& app,
                                                const std::string& cluster) {
    auto r = appcontext::ReadReady(*st_, ctx, app, cluster);
    return r.ok() ? *r : std::nullopt;
  }

  // Waits until the record's resources equal `want`.
  bool WaitRecord(const std::string& ctx, const std::string& app, const std::string& cluster,
                  const std::map<std::string, std::string>& want) {
    return eco::testing::WaitUntil(
        [&] {
          auto r = Record(ctx, app, cluster);
          return r && r->resources == want;
        },
        std::chrono::seconds(60));
  }

  std::string Describe(const std::string& ctx, const std::string& app, const std::string& cluster) {
    auto r = Record(ctx, app, cluster);
    return r ? appcontext::ToJson(*r).dump() : "no record";
  }

  testing::TempDir dir_;
  rsync::Executor pool_{4};  // the monitors' rounds and watch starts
  std::unique_ptr<eco::testing::KubeSim> sim_;
  std::unique_ptr<store::Store> st_;

  // The records follow the cluster: NotPresent, Ready, NotReady, Pods,
  // and no watch once the context is done.
  void RecordsFollowTheCluster(ReadyMonitorOptions o);
};

void ReadyMonitorTest::RecordsFollowTheCluster(ReadyMonitorOptions o) {
  std::string ctx = Instantiate();
  ReadyMonitor mon(*st_, std::move(o));
  ASSERT_TRUE(mon.Start().ok());

  // Nothing applied yet: every expected object is NotPresent.
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "NotPresent"}}))
      << Describe(ctx, "db", "p+cluster-2");

  auto c1 = Client("cluster-1");
  for (json o : {ConfigMap("cfg"), Deployment("web", true), Deployment("stuck", false)}) {
    auto r = c1->Apply(Labelled(o, ctx, "web"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // The same object name labelled for another context is not ours.
  ASSERT_TRUE(c1->Apply(Labelled(ConfigMap("other"), "999", "web")).ok());

  ASSERT_TRUE(WaitRecord(
      ctx, "web", "p+cluster-1",
      {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}, {"stuck+Deployment", "NotReady"}}))
      << Describe(ctx, "web", "p+cluster-1");
  EXPECT_FALSE(Record(ctx, "web", "p+cluster-1")->ready);
  // The Deployments' Pods are listed as cluster-only objects: web's runs, stuck's cannot schedule.
  auto pods_are = [&](int ready, int not_ready) {
    auto r = Record(ctx, "web", "p+cluster-1");
    int n_ready = 0, n_not = 0;
    if (r) {
      for (const auto& [name, state] : r->cluster_only) {
        if (!name.ends_with("+Pod")) return false;
        (state == "Ready" ? n_ready : n_not)++;
      }
    }
    return n_ready == ready && n_not == not_ready;
  };
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return pods_are(1, 1); }, std::chrono::seconds(60)))
      << Describe(ctx, "web", "p+cluster-1");
  // One watch per cluster and kind: ConfigMap, Deployment and Pod on cluster-1, ConfigMap on cluster-2.
  EXPECT_EQ(mon.active_watches(), 4u);
  EXPECT_EQ(mon.watched_contexts(), 1u);

  // The status query shows what the monitor recorded, Pods included.
  auto q = ParseQuery({{"status", "ready"}, {"app", "web"}});
  ASSERT_TRUE(q.ok());
  auto st = DigStatus(*st_, {"proj", "ca", "v1", "dig"}, *q);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ((*st)["readyCounts"], (json{{"Ready", 3}, {"NotReady", 2}, {"NotPresent", 0}}));
  // Each object's readiness is about the generation it was judged at (a
  // rollout's gate compares it with the one its apply made).
  auto generation = [&](const std::string& res) {
    auto r = Record(ctx, "web", "p+cluster-1");
    auto g = r ? r->generations.find(res) : decltype(r->generations.end()){};
    return r && g != r->generations.end() ? g->second : int64_t{-1};
  };
  EXPECT_EQ(generation("web+Deployment"), 1);
  json respec = Deployment("web", true);
  respec["spec"]["revisionHistoryLimit"] = 5;
  ASSERT_TRUE(c1->Apply(Labelled(respec, ctx, "web")).ok());
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return generation("web+Deployment") == 2; }, std::chrono::seconds(30)))
      << Describe(ctx, "web", "p+cluster-1");

  // Applied on cluster-2: the db app turns ready.
  auto c2 = Client("cluster-2");
  ASSERT_TRUE(c2->Apply(Labelled(ConfigMap("db-cfg"), ctx, "db")).ok());
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "Ready"}}));
  EXPECT_TRUE(Record(ctx, "db", "p+cluster-2")->ready);

  // Deleted: NotPresent.
  ASSERT_TRUE(c1->Delete("v1", "ConfigMap", "default", "cfg", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                         {{"cfg+ConfigMap", "NotPresent"},
                          {"web+Deployment", "Ready"},
                          {"stuck+Deployment", "NotReady"}}))
      << Describe(ctx, "web", "p+cluster-1");

  // Terminated and its AppContext done: no longer watched.
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(ctx), json{{"status", "Terminated"}}.dump()).ok());
  SetState({{"Approved", ""}, {"Instantiated", ctx}, {"Terminated", ctx}}, ctx);
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] { return mon.watched_contexts() == 0 && mon.active_watches() == 0; },
      std::chrono::seconds(30)));
  mon.Stop();
}

TEST_F(ReadyMonitorTest, RecordsFollowTheCluster) { RecordsFollowTheCluster(Options()); }

// The same with its rounds posted to a pool (an agent's executor) instead
// of two threads of its own; rounds still due after Stop do nothing.
TEST_F(ReadyMonitorTest, RoundsOnAPoolRecordsFollowTheCluster) {
  rsync::Executor pool(2);
  std::atomic<int> posted{0}, ran{0};
  ReadyMonitorOptions o = Options();
  o.post = [&](Clock::Duration after, std::function<void()> round) {
    ++posted;
    pool.PostAfter(after, [&, round = std::move(round)] {
      round();
      ++ran;
    });
  };
  RecordsFollowTheCluster(o);
  if (HasFatalFailure()) return;
  EXPECT_GT(posted.load(), 2);  // scans, their interval, write rounds
  EXPECT_GT(ran.load(), 2);
  // The scan interval's timer (200 ms) comes due after the monitor is
  // gone: a no-op that posts nothing. Once every round posted has run,
  // none can post again.
  const int before = posted.load();
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return ran.load() == posted.load(); },
                                      std::chrono::seconds(30)))
      << ran.load() << " of " << posted.load() << " rounds ran";
  EXPECT_EQ(posted.load(), before);  // nothing posted anything more
  pool.Shutdown();
}

// An agent's monitor (its store written by no one else) skips the scans
// that find the store as the last one did; a write makes the next one
// read the records again, and the context it ends is let go.
TEST_F(ReadyMonitorTest, ScansOfAnUnchangedStoreReadNothing) {
  std::string ctx = Instantiate();
  ReadyMonitorOptions o = Options();
  o.scan_interval = std::chrono::milliseconds(20);
  o.watch_states = false;
  o.skip_unchanged = true;
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "NotPresent"}}));
  ASSERT_TRUE(
      eco::testing::WaitUntil([&] { return mon.active_watches() == 4; }, std::chrono::seconds(30)));
  // Once its own records are written nothing moves the store: fifteen
  // scans in a row are skipped (a write starts the count again).
  uint64_t settled = mon.full_scans();
  uint64_t skipped_from = mon.skipped_scans();
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        // Skips read first: unchanged full scans after them mean none came between.
        const uint64_t skipped = mon.skipped_scans();
        const uint64_t full = mon.full_scans();
        if (full != settled) {
          settled = full;
          skipped_from = mon.skipped_scans();
          return false;
        }
        return skipped >= skipped_from + 15;
      },
      std::chrono::seconds(30)))
      << settled << " full scans, " << mon.skipped_scans() - skipped_from << " skipped since";
  EXPECT_EQ(mon.watched_contexts(), 1u);
  // Terminated (no ScanSoon, no state watch): the next interval's scan reads it.
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(ctx), json{{"status", "Terminated"}}.dump()).ok());
  SetState({{"Approved", ""}, {"Instantiated", ctx}, {"Terminated", ctx}}, ctx);
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] { return mon.watched_contexts() == 0 && mon.active_watches() == 0; },
      std::chrono::seconds(30)));
  EXPECT_GT(mon.full_scans(), settled);
  mon.Stop();
}

TEST_F(ReadyMonitorTest, OnAFakeClockRecordsWaitForItsTimeAndCarryIt) {
  std::string ctx = Instantiate();
  eco::testing::FakeClock clock;  // 2026-01-01T00:00:00Z
  clock.Advance(std::chrono::hours(48));
  ReadyMonitorOptions o = Options();
  o.clock = &clock;
  rsync::Executor pool(4, clock);  // the rounds' pauses are on the fake clock too
  o.post = [&pool](Clock::Duration after, std::function<void()> round) {
    // What is due now runs without waiting for the fake clock to move.
    after == Clock::Duration::zero() ? pool.Post(std::move(round)) : pool.PostAfter(after, std::move(round));
  };
  std::atomic<int> relists{0};
  o.on_relist = [&](const std::string&, const std::string&, const std::vector<json>&, const std::string&) {
    ++relists;
  };
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  // The writer coalesces for 100 ms of the clock's time: without the clock
  // moving, the scan's watches start but nothing is written.
  ASSERT_TRUE(
      eco::testing::WaitUntil([&] { return mon.active_watches() == 4; }, std::chrono::seconds(30)));
  // Every watch has listed (both records are due) and the writer waits on
  // the clock: its pause's timer, 100 ms ahead, is the earliest (the scan
  // interval's is 200 ms ahead).
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        Clock::Time next;
        return relists.load() >= 4 && clock.NextTimer(&next) &&
               next == clock.Now() + std::chrono::milliseconds(100);
      },
      std::chrono::seconds(30)))
      << relists.load() << " relists";
  EXPECT_FALSE(Record(ctx, "db", "p+cluster-2").has_value());
  EXPECT_FALSE(Record(ctx, "web", "p+cluster-1").has_value());
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        clock.Advance(std::chrono::milliseconds(100));
        return Record(ctx, "db", "p+cluster-2").has_value();
      },
      std::chrono::seconds(30)));
  auto r = Record(ctx, "db", "p+cluster-2");
  EXPECT_EQ(r->resources, (std::map<std::string, std::string>{{"db-cfg+ConfigMap", "NotPresent"}}));
  EXPECT_TRUE(r->time.starts_with("2026-01-03T00:")) << r->time;
  mon.Stop();
}

// The monitor records when it last heard from each push cluster it
// watches, on its clock, at most once per interval; an agent cluster (which
// it does not watch) gets none from it, and nothing is recorded unless asked.
TEST_F(ReadyMonitorTest, PushClustersLastContactIsRecordedThrottled) {
  std::string ctx = Instantiate();
  ASSERT_TRUE(
      st_->Put(
             catalog::ObjectKey("cluster", {"p", "cluster-2"}),
             json{{"metadata", {{"name", "cluster-2"}}}, {"spec", {{"delivery", "agent"}}}}.dump())
          .ok());
  eco::testing::FakeClock clock;
  clock.Advance(std::chrono::hours(24));  // 2026-01-02
  ReadyMonitorOptions o = Options();
  o.clock = &clock;
  rsync::Executor pool(4, clock);  // the rounds' pauses are on the fake clock too
  o.post = [&pool](Clock::Duration after, std::function<void()> round) {
    // What is due now runs without waiting for the fake clock to move.
    after == Clock::Duration::zero() ? pool.Post(std::move(round)) : pool.PostAfter(after, std::move(round));
  };
  o.record_seen = true;
  o.replica = "replica-a";
  o.seen_every = std::chrono::seconds(60);
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  auto seen = [&](const std::string& cluster)
      -> std::optional<std::pair<appcontext::Seen, store::Revision>> {
    auto kv = st_->Get(appcontext::SeenKey(cluster));
    if (!kv.ok() || !kv->has_value()) return std::nullopt;
    auto s = appcontext::ParseSeen((*kv)->value);
    if (!s.ok()) return std::nullopt;
    return std::pair{*s, (*kv)->mod_revision};
  };
  // The writer runs on the clock: moved in steps of its coalescing pause.
  auto step_until = [&](const std::function<bool()>& done) {
    return eco::testing::WaitUntil(
        [&] {
          clock.Advance(std::chrono::milliseconds(100));
          return done();
        },
        std::chrono::seconds(30));
  };
  ASSERT_TRUE(step_until([&] { return seen("p+cluster-1").has_value(); }));
  auto first = seen("p+cluster-1");
  EXPECT_EQ(first->first.replica, "replica-a");
  EXPECT_TRUE(first->first.time.starts_with("2026-01-02T00:00:")) << first->first.time;
  // cluster-1 only: ConfigMap, Deployment, Pod.
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return mon.active_watches() == 3u; },
                                      std::chrono::seconds(30)));
  EXPECT_FALSE(seen("p+cluster-2").has_value());

  // An event within the interval is not written again...
  auto c1 = Client("cluster-1");
  ASSERT_TRUE(c1->Apply(Labelled(ConfigMap("cfg"), ctx, "web")).ok());
  ASSERT_TRUE(step_until([&] {
    auto r = Record(ctx, "web", "p+cluster-1");
    return r && r->resources["cfg+ConfigMap"] == "Ready";
  }));
  EXPECT_EQ(seen("p+cluster-1")->second, first->second);
  // ...one after it is.
  clock.Advance(std::chrono::seconds(60));
  ASSERT_TRUE(c1->Delete("v1", "ConfigMap", "default", "cfg", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(step_until([&] { return seen("p+cluster-1")->second != first->second; }));
  auto later = seen("p+cluster-1");
  EXPECT_GE(*ParseRfc3339(later->first.time) - *ParseRfc3339(first->first.time),
            std::chrono::seconds(60));
  mon.Stop();

  // Not asked to: no contact recorded.
  ASSERT_TRUE(st_->Delete(appcontext::SeenKey("p+cluster-1")).ok());
  ReadyMonitor quiet(*st_, Options());
  ASSERT_TRUE(quiet.Start().ok());
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return quiet.active_watches() == 3u; },
                                      std::chrono::seconds(30)));
  // A record it writes from what cluster-1's watches heard: a contact,
  // had one been taken, is written in the same round, before the records.
  ASSERT_TRUE(c1->Apply(Labelled(ConfigMap("cfg"), ctx, "web")).ok());
  ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                         {{"cfg+ConfigMap", "Ready"},
                          {"web+Deployment", "NotPresent"},
                          {"stuck+Deployment", "NotPresent"}}));
  EXPECT_FALSE(seen("p+cluster-1").has_value());
}

TEST_F(ReadyMonitorTest, UnreachableClusterGetsNoRecordUntilItAnswers) {
  std::string ctx = Instantiate();
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  ReadyMonitor mon(*st_, Options());
  ASSERT_TRUE(mon.Start().ok());
  ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                         {{"cfg+ConfigMap", "NotPresent"},
                          {"web+Deployment", "NotPresent"},
                          {"stuck+Deployment", "NotPresent"}}));
  EXPECT_FALSE(Record(ctx, "db", "p+cluster-2").has_value());
  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "NotPresent"}}));
}

// A cluster that goes away while watched is recorded as unreachable (the
// status queries say so), and the record goes when it answers again, when
// nothing is watched there any more, and when a new monitor finds a stale one.
TEST_F(ReadyMonitorTest, UnreachableClustersAreRecordedWhileTheyLast) {
  std::string ctx = Instantiate();
  // A leftover of an earlier process, for a cluster nothing is deployed on.
  ASSERT_TRUE(st_->Put(appcontext::UnreachableKey("p+gone"),
                       appcontext::ToJson(appcontext::UnreachableRecord{"t", "old"}).dump()).ok());
  ReadyMonitor mon(*st_, Options());
  ASSERT_TRUE(mon.Start().ok());
  auto unreachable = [&] {
    auto u = appcontext::ReadUnreachable(*st_);
    EXPECT_TRUE(u.ok());
    std::set<std::string> keys;
    if (u.ok()) {
      for (const auto& [k, r] : *u) keys.insert(k);
    }
    return keys;
  };
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "NotPresent"}}));
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return unreachable().empty(); }, std::chrono::seconds(30)))
      << "the stale record of an unwatched cluster is dropped";

  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return unreachable() == std::set<std::string>{"p+cluster-2"}; },
                                      std::chrono::seconds(30)));
  auto u = appcontext::ReadUnreachable(*st_);
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->at("p+cluster-2").since.empty());
  EXPECT_FALSE(u->at("p+cluster-2").error.empty());
  // Both views carry it on that cluster only; the cluster's own status too.
  for (const char* view : {"ready", "deployed"}) {
    auto q = ParseQuery({{"status", view}});
    ASSERT_TRUE(q.ok());
    auto st = DigStatus(*st_, {"proj", "ca", "v1", "dig"}, *q);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    int marked = 0;
    for (const auto& app : (*st)["apps"]) {
      for (const auto& c : app["clusters"]) {
        if (c.contains("unreachable")) {
          ++marked;
          EXPECT_EQ(c["cluster"], "cluster-2") << view;
          EXPECT_EQ(c["unreachable"]["since"], u->at("p+cluster-2").since);
        }
      }
    }
    EXPECT_EQ(marked, 1) << view << " " << st->dump();
  }
  ASSERT_TRUE(st_->Put(catalog::ObjectKey("cluster", {"p", "cluster-2"}),
                       json{{"metadata", {{"name", "cluster-2"}}}}.dump()).ok());
  auto cs = ClusterStatus(*st_, "p", "cluster-2", *ParseQuery({{"status", "ready"}}));
  ASSERT_TRUE(cs.ok()) << cs.status().ToString();
  EXPECT_TRUE(cs->contains("unreachable")) << cs->dump();

  ASSERT_EQ(sim_->Fault("cluster-2", "up"), 200);
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return unreachable().empty(); }, std::chrono::seconds(30)));

  // Down again, then nothing is deployed there any more: the record goes.
  ASSERT_EQ(sim_->Fault("cluster-2", "down"), 200);
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return !unreachable().empty(); }, std::chrono::seconds(30)));
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(ctx), json{{"status", "Terminated"}}.dump()).ok());
  SetState({{"Approved", ""}, {"Instantiated", ctx}, {"Terminated", ctx}}, ctx);
  EXPECT_TRUE(eco::testing::WaitUntil([&] { return unreachable().empty(); }, std::chrono::seconds(30)));
  mon.Stop();
}

TEST_F(ReadyMonitorTest, UpdateFollowsTheNewPlanUnderTheStatusContext) {
  std::string ctx = Instantiate();
  ReadyMonitor mon(*st_, Options());
  ASSERT_TRUE(mon.Start().ok());
  auto c2 = Client("cluster-2");
  ASSERT_TRUE(c2->Apply(Labelled(ConfigMap("db-cfg"), ctx, "db")).ok());
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "Ready"}}));

  // The update's AppContext adds a Deployment to db; objects keep the
  // status context's label, records stay under it.
  appcontext::Contexts c(*st_);
  auto lease = st_->GrantLease(std::chrono::seconds(600));
  ASSERT_TRUE(lease.ok());
  appcontext::Meta m;
  m.kind = "dig";
  m.status_context = ctx;
  m.app_order = {"db"};
  auto next = c.Create(m, *lease);
  ASSERT_TRUE(next.ok());
  ResourceSet db;
  for (json obj : {ConfigMap("db-cfg"), Deployment("db", true)})
    db.resources.push_back({appcontext::ResourceName(obj), obj});
  ASSERT_TRUE(c.PutApp(*next, "db", db, {{"p", "cluster-2", 1, true, 0}}).ok());
  SetState({{"Approved", ""}, {"Instantiated", ctx}, {"Updated", ctx}, {"Instantiated", *next}},
           ctx);
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2",
                         {{"db-cfg+ConfigMap", "Ready"}, {"db+Deployment", "NotPresent"}}))
      << Describe(ctx, "db", "p+cluster-2");
  ASSERT_TRUE(c2->Apply(Labelled(Deployment("db", true), ctx, "db")).ok());
  ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2",
                         {{"db-cfg+ConfigMap", "Ready"}, {"db+Deployment", "Ready"}}))
      << Describe(ctx, "db", "p+cluster-2");
  EXPECT_EQ(mon.watched_contexts(), 1u);
  EXPECT_EQ(mon.active_watches(), 3u);  // the new plan: ConfigMap, Deployment and its Pods on cluster-2
}

// A restarted monitor rewrites only the records that changed while it was
// away (it keeps a digest of what the store holds, not a copy).
TEST_F(ReadyMonitorTest, RestartRewritesOnlyWhatChanged) {
  std::string ctx = Instantiate();
  auto c2 = Client("cluster-2");
  ASSERT_TRUE(c2->Apply(Labelled(ConfigMap("db-cfg"), ctx, "db")).ok());
  auto revision = [&](const std::string& app, const std::string& cluster) -> store::Revision {
    auto kv = st_->Get(appcontext::ReadyKey(ctx, app, cluster));
    return kv.ok() && kv->has_value() ? (*kv)->mod_revision : 0;
  };
  {
    ReadyMonitor mon(*st_, Options());
    ASSERT_TRUE(mon.Start().ok());
    ASSERT_TRUE(WaitRecord(ctx, "db", "p+cluster-2", {{"db-cfg+ConfigMap", "Ready"}}));
    ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                           {{"cfg+ConfigMap", "NotPresent"},
                            {"web+Deployment", "NotPresent"},
                            {"stuck+Deployment", "NotPresent"}}));
  }
  const store::Revision db_rev = revision("db", "p+cluster-2");
  const store::Revision web_rev = revision("web", "p+cluster-1");
  ASSERT_GT(db_rev, 0);
  ASSERT_GT(web_rev, 0);
  // While no monitor runs, web's ConfigMap appears on cluster-1.
  ASSERT_TRUE(Client("cluster-1")->Apply(Labelled(ConfigMap("cfg"), ctx, "web")).ok());

  ReadyMonitorOptions o = Options();
  std::atomic<bool> db_listed{false};
  o.on_relist = [&](const std::string&, const std::string& kind, const std::vector<json>& items, const std::string&) {
    for (const auto& i : items) {
      if (kind == "ConfigMap" && i.value("metadata", json::object()).value("name", "") == "db-cfg")
        db_listed = true;
    }
  };
  ReadyMonitor mon(*st_, o);
  ASSERT_TRUE(mon.Start().ok());
  ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                         {{"cfg+ConfigMap", "Ready"},
                          {"web+Deployment", "NotPresent"},
                          {"stuck+Deployment", "NotPresent"}}))
      << Describe(ctx, "web", "p+cluster-1");
  EXPECT_GT(revision("web", "p+cluster-1"), web_rev);
  // db's record is computed again once cluster-2's watch has listed, and
  // found unchanged: not rewritten (were the digest wrong, it would be).
  // The listing makes it due before a change on cluster-1 made after it
  // makes web's due: once web's record shows that change, the round that
  // computed db's has written whatever it was going to.
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return db_listed.load(); }, std::chrono::seconds(30)));
  ASSERT_TRUE(Client("cluster-1")
                  ->Delete("v1", "ConfigMap", "default", "cfg", k8s::Propagation::kBackground)
                  .ok());
  ASSERT_TRUE(WaitRecord(ctx, "web", "p+cluster-1",
                         {{"cfg+ConfigMap", "NotPresent"},
                          {"web+Deployment", "NotPresent"},
                          {"stuck+Deployment", "NotPresent"}}))
      << Describe(ctx, "web", "p+cluster-1");
  EXPECT_EQ(revision("db", "p+cluster-2"), db_rev);
}

}  // namespace
}  // namespace eco::status

namespace eco::status {
namespace {

// A Deployment asking 3 of a node's 4 CPUs: one Pod per node at most.
json BigDeployment(const std::string& name, const std::string& image) {
  json c = {{"name", "c"}, {"image", image}, {"resources", {{"requests", {{"cpu", "3"}}}}}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", {{"run", name}}}}},
            {"template", {{"metadata", {{"labels", {{"run", name}}}}}, {"spec", {{"containers", json::array({c})}}}}}}}};
}

// Readiness per revision: eco updates a Deployment (a new pod template,
// metadata.generation 2) on a cluster with no room for the new ReplicaSet's
// Pod while the old one still runs. The status reads NotReady for the new
// revision (its controller observed generation 2; the old Pod serving
// does not make it Ready), then Ready at generation 2 once room frees up.
TEST_F(ReadyMonitorTest, ReadinessIsAboutTheRevisionEcoApplied) {
  appcontext::Contexts c(*st_);
  auto lease = st_->GrantLease(std::chrono::seconds(600));
  ASSERT_TRUE(lease.ok());
  appcontext::Meta m;
  m.kind = "dig";
  m.project = "proj";
  m.app_order = {"web"};
  auto ctx = c.Create(m, *lease);
  ASSERT_TRUE(ctx.ok());
  ResourceSet web;
  json dep = BigDeployment("roll", "nginx:1.25");
  web.resources.push_back({appcontext::ResourceName(dep), dep});
  ASSERT_TRUE(c.PutApp(*ctx, "web", web, {{"p", "cluster-1", 1, true, 0}}).ok());
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(*ctx), json{{"status", "Instantiated"}}.dump()).ok());
  ASSERT_TRUE(st_->Put(catalog::ObjectKey("deploymentIntentGroup", {"proj", "ca", "v1", "dig"}),
                       json{{"metadata", {{"name", "dig"}}}, {"spec", json::object()}}.dump())
                  .ok());
  SetState({{"Approved", ""}, {"Instantiated", *ctx}}, *ctx);

  // What rsync does: apply, and record the generation the apply made.
  auto c1 = Client("cluster-1");
  auto apply = [&](const std::string& image) {
    auto r = c1->Apply(Labelled(BigDeployment("roll", image), *ctx, "web"));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    appcontext::DeployedRecord d;
    d.connectivity = "Available";
    appcontext::ResourceDeployed rd;
    rd.status = "Applied";
    rd.ref = *ctx;
    rd.generation = r.ok() ? (*r)["metadata"].value("generation", int64_t{0}) : 0;
    d.resources["roll+Deployment"] = rd;
    EXPECT_TRUE(st_->Put(appcontext::DeployedKey(*ctx, "web", "p+cluster-1"), appcontext::ToJson(d).dump()).ok());
    return rd.generation;
  };
  ASSERT_EQ(apply("nginx:1.25"), 1);

  ReadyMonitor mon(*st_, Options());
  ASSERT_TRUE(mon.Start().ok());
  // The status answer's entry for the Deployment.
  auto entry = [&]() -> json {
    auto q = ParseQuery({{"status", "ready"}, {"app", "web"}});
    if (!q.ok()) return json();
    auto st = DigStatus(*st_, {"proj", "ca", "v1", "dig"}, *q);
    if (!st.ok() || !st->contains("apps")) return json();
    for (const auto& r : (*st)["apps"][0]["clusters"][0]["resources"]) {
      if (r["name"] == "roll" && r["GVK"]["Kind"] == "Deployment") return r;
    }
    return json();
  };
  auto reads = [&](const std::string& status, bool revision_ready, int64_t gen) {
    json e = entry();
    return e.is_object() && e.value("readyStatus", "") == status && e.value("revisionReady", !revision_ready) == revision_ready &&
           e.value("appliedGeneration", int64_t{0}) == gen && e.value("generation", int64_t{0}) == gen &&
           e.value("observedGeneration", int64_t{0}) == gen;
  };
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return reads("Ready", true, 1); }, std::chrono::seconds(30))) << entry();

  // Fill the other two nodes (3.5 of 4 CPUs each): no node has 3 CPUs free.
  auto hog = [&](const std::string& name) {
    json c = {{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "3500m"}}}}}};
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", {{"containers", json::array({c})}}}};
    auto r = c1->Apply(pod);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(eco::testing::WaitUntil(
        [&] {
          auto p = c1->Get("v1", "Pod", "default", name);
          return p.ok() && (*p)["spec"].value("nodeName", "") != "";
        },
        std::chrono::seconds(30)));
  };
  hog("hog-1");
  hog("hog-2");

  // eco updates it: the new ReplicaSet's Pod cannot schedule, the old one serves.
  ASSERT_EQ(apply("nginx:1.26"), 2);
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return reads("NotReady", false, 2); }, std::chrono::seconds(30)))
      << entry();
  auto rec = Record(*ctx, "web", "p+cluster-1");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->observed_generations["roll+Deployment"], 2);
  EXPECT_EQ(rec->resources["roll+Deployment"], "NotReady");
  // Held there, not passing through: the new Pod is unschedulable.
  k8s::ListOptions by_run;
  by_run.label_selector = "run=roll";
  auto pods = c1->List("v1", "Pod", "default", by_run);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  int unschedulable = 0;
  for (const auto& p : pods->items) {
    for (const auto& cond : p["status"].value("conditions", json::array()))
      unschedulable += cond.value("reason", "") == "Unschedulable";
  }
  EXPECT_EQ(unschedulable, 1) << json(pods->items).dump();

  // Room again: the rollout catches up, and Ready is about generation 2.
  ASSERT_TRUE(c1->Delete("v1", "Pod", "default", "hog-1", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(eco::testing::WaitUntil([&] { return reads("Ready", true, 2); }, std::chrono::seconds(30))) << entry();
  mon.Stop();
}

}  // namespace
}  // namespace eco::status
