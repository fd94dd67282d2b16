// rsync under faults, with real processes. eco is killed with SIGKILL at
// random moments while it instantiates, updates and terminates a DIG (the
// embedded store), and restarted; two `eco rsync` replicas share an etcd and
// the one that owns a context is killed; an update supersedes an
// instantiation stuck on a cluster that is down. Each time the clusters must
// end up holding exactly what the deployed revision says: nothing missing,
// nothing left over, no content of an older revision, and nothing left in
// flight.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "context_builders.h"
#include "eco_fixture.h"
#include "etcd_fixture.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "store/etcd_store.h"
#include "store/store.h"
#include "test_archives.h"
#include "world.h"

namespace eco::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The pieces of one operation, for reading rsync's log: (context, event).
using Events = std::vector<std::pair<std::string, std::string>>;

// ------------------------------------------------------------------ kill -9

class RsyncCrash : public ::testing::Test {
 protected:
  static constexpr int kClusters = 8;
  static constexpr int kRounds = 3;
  // Every answer of every cluster is this late, so an operation lasts long
  // enough (about a second) for a kill to land in it.
  static constexpr int kLatencyMs = 150;

  void SetUp() override {
    seed_ = FaultSeed("rsync crash test");
    rng_.seed(seed_);
    sim_ = SlowFleet(kClusters, kLatencyMs);
    if (HasFatalFailure()) return;
    clusters_ = ClusterNames(kClusters);
    EcoOptions eo;
    // Short leases: after a restart the dead process's locks expire quickly.
    eo.extra_args = {"--rsync-lease-seconds", "2",  "--rsync-retry-base-ms", "100",
                     "--rsync-retry-cap-ms",  "500"};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Kills eco once or twice at random moments while the operation `what`
  // (made of `evs`) may be under way, restarting it each time. Reads the log
  // written since `log_from` to tell where each kill landed.
  void KillAtRandom(const std::string& what, const Events& evs, size_t log_from) {
    const int kills = Uniform(1, 2);
    for (int k = 0; k < kills; ++k) {
      // The first kill within the operation's own length; a later one may
      // also land while the restarted eco waits out the dead one's lease.
      const int delay = Uniform(0, k == 0 ? 1200 : 3500);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      eco_->Kill9();
      const std::string log = eco_->Log().substr(log_from);
      bool started = false, over = true;
      for (const auto& [ctx, ev] : evs) {
        started = started || Has(log, LogLine(ctx, ev, "started"));
        over = over && (Has(log, LogLine(ctx, ev, "done")) || Has(log, LogLine(ctx, ev, "failed")));
      }
      const char* where = !started ? "before rsync started it"
                          : over   ? "after it finished"
                                   : "while under way";
      ++kills_;
      if (started && !over) ++kills_under_way_[what];
      std::printf("  %s: kill %d after %d ms landed %s\n", what.c_str(), k + 1, delay, where);
      std::fflush(stdout);
      ASSERT_TRUE(eco_->Restart()) << eco_->error();
    }
  }

  // Waits until the DIG's latest context (and `old`, if any) reach their
  // final states; they must not get stuck or fail.
  void WaitSettled(const std::string& want, const std::string& old = "",
                   const std::string& old_want = "") {
    EcoClient c = eco_->client();
    json last, last_old;
    bool ok = WaitUntil(
        [&] {
          last = DeployedSummary(c);
          if (last.value("deployedStatus", "") != want) return false;
          if (old.empty()) return true;
          last_old = DeployedSummary(c, old);
          return last_old.value("deployedStatus", "") == old_want;
        },
        90s);
    ASSERT_TRUE(ok) << "want " << want << ", have " << last.dump() << "\nold: " << last_old.dump()
                    << "\neco log tail:\n"
                    << eco_->LogTail(6000);
  }

  // Every cluster holds exactly `want` (objects made by the clusters' own
  // controllers aside).
  void ExpectClusters(const std::map<std::string, json>& want, const std::string& when) {
    for (const auto& n : clusters_) {
      EXPECT_EQ(Diff(want, Labeled(*sim_, n, false)), "") << when << ", cluster " << n;
    }
  }

  // The status records agree: every resource of the latest plan in `state`.
  void ExpectCounts(const std::string& state, size_t per_cluster) {
    EcoClient c = eco_->client();
    json s = DeployedSummary(c);
    json want = {{state, per_cluster * clusters_.size()}};
    EXPECT_EQ(s.value("deployedCounts", json::object()), want) << s.dump();
  }

  // With eco stopped (killed while idle, one more crash), the store shows
  // nothing in flight: no context active, no rsync lock held, every event
  // of `evs` done (or, for a context in `superseded`, refused or failed as
  // superseded by the update to the context named there). Then eco starts
  // again.
  void ExpectQuietStore(const Events& evs,
                        const std::map<std::string, std::string>& superseded = {}) {
    eco_->Kill9();
    {
      auto st = store::Open(eco_->data_dir());
      ASSERT_TRUE(st.ok()) << st.status().ToString();
      std::vector<std::string> contexts;
      for (const auto& [ctx, ev] : evs) contexts.push_back(ctx);
      EXPECT_EQ(InFlight(**st, contexts, superseded), "");
    }
    ASSERT_TRUE(eco_->Restart()) << eco_->error();
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::vector<std::string> clusters_;
  int kills_ = 0;
  std::map<std::string, int> kills_under_way_;
};

TEST_F(RsyncCrash, KilledDuringInstantiateUpdateAndTerminateEndsExactlyAsDesired) {
  // Each round deploys v1, updates to v2 (one ConfigMap kept as is, two
  // changed, two new, three and the Service dropped, the Deployment changed)
  // and terminates.
  auto v1 = FirstRevision;
  auto v2 = SecondRevision;
  auto c = std::make_unique<EcoClient>(eco_->port());
  World(*c, *sim_, clusters_, v1(0));
  if (HasFatalFailure()) return;

  for (int round = 0; round < kRounds; ++round) {
    std::printf("round %d\n", round);
    std::fflush(stdout);
    if (round > 0) {
      c = std::make_unique<EcoClient>(eco_->port());
      auto put = c->PutMultipart(kProfile, Doc("web-profile", {{"app", "web"}}).dump(),
                                 Profile(v1(round)));
      ASSERT_EQ(put.status, 200) << put.Describe();
    }

    // Instantiate.
    size_t from = eco_->Log().size();
    c = std::make_unique<EcoClient>(eco_->port());
    auto r = c->PostJson(kDIG + "/instantiate", json::object());
    ASSERT_EQ(r.status, 202) << r.Describe();
    std::vector<std::string> ids = Instances(*c);
    ASSERT_FALSE(ids.empty());
    const std::string first = ids.back();
    KillAtRandom("instantiate", {{first, "instantiate"}}, from);
    if (HasFatalFailure()) return;
    WaitSettled("Instantiated");
    if (HasFatalFailure()) return;
    ExpectClusters(Desired(v1(round), first), "after instantiate, round " + std::to_string(round));
    ExpectCounts("Applied", Desired(v1(round), first).size());
    ExpectQuietStore({{first, "instantiate"}});
    if (HasFatalFailure()) return;

    // Update to v2.
    c = std::make_unique<EcoClient>(eco_->port());
    auto put =
        c->PutMultipart(kProfile, Doc("web-profile", {{"app", "web"}}).dump(), Profile(v2(round)));
    ASSERT_EQ(put.status, 200) << put.Describe();
    from = eco_->Log().size();
    r = c->PostJson(kDIG + "/update", json::object());
    ASSERT_EQ(r.status, 202) << r.Describe();
    ids = Instances(*c);
    ASSERT_GE(ids.size(), 2u);
    const std::string second = ids.back();
    ASSERT_NE(second, first);
    const Events update = {{second, "update"}, {first, "update-delete"}};
    KillAtRandom("update", update, from);
    if (HasFatalFailure()) return;
    WaitSettled("Instantiated", first, "Updated");
    if (HasFatalFailure()) return;
    // Labels keep naming the first context: it is the status context.
    ExpectClusters(Desired(v2(round), first), "after update, round " + std::to_string(round));
    ExpectCounts("Applied", Desired(v2(round), first).size());
    ExpectQuietStore(update);
    if (HasFatalFailure()) return;

    // Terminate.
    c = std::make_unique<EcoClient>(eco_->port());
    from = eco_->Log().size();
    r = c->PostJson(kDIG + "/terminate", json::object());
    ASSERT_EQ(r.status, 202) << r.Describe();
    KillAtRandom("terminate", {{second, "terminate"}}, from);
    if (HasFatalFailure()) return;
    WaitSettled("Terminated");
    if (HasFatalFailure()) return;
    ExpectClusters({}, "after terminate, round " + std::to_string(round));
    ExpectCounts("Deleted", Desired(v2(round), first).size());
    ExpectQuietStore({{second, "terminate"}});
    if (HasFatalFailure()) return;
    // What the clusters' controllers made from eco's objects goes with them.
    for (const auto& n : clusters_) {
      std::map<std::string, json> left;
      EXPECT_TRUE(WaitUntil(
          [&] {
            left = Labeled(*sim_, n, true);
            return left.empty();
          },
          30s))
          << n << ":" << Diff({}, left);
    }
  }
  std::printf("kills: %d; under way: instantiate %d, update %d, terminate %d\n", kills_,
              kills_under_way_["instantiate"], kills_under_way_["update"],
              kills_under_way_["terminate"]);
  // The kills must really have interrupted work, or the test proves nothing.
  int under_way = 0;
  for (const auto& [what, n] : kills_under_way_) under_way += n;
  EXPECT_GE(under_way, kRounds) << "too few kills landed while an operation was under way (seed "
                                << seed_ << ")";
}

// An update called right after a crash, while the restarted eco still waits
// for the dead one's lock on the interrupted instantiation: that
// instantiation is superseded (or, if it got to finish first, done), and the
// update runs only once it has ended, or the older revision's objects could
// land on the clusters after the newer ones.
TEST_F(RsyncCrash, UpdateRightAfterACrashSupersedesTheInterruptedInstantiation) {
  Revision v1, v2;
  v1.rev = "first";
  v2.rev = "second";
  v2.replicas = 3;
  for (int i = 0; i < 6; ++i) v1.items["cm" + std::to_string(i)] = "first-" + std::to_string(i);
  for (int i = 2; i < 6; ++i) v2.items["cm" + std::to_string(i)] = "second-" + std::to_string(i);
  v1.service = true;
  auto c = std::make_unique<EcoClient>(eco_->port());
  World(*c, *sim_, clusters_, v1);
  if (HasFatalFailure()) return;
  // The last cluster is down until the kill: the instantiation cannot have
  // ended before it, however fast the other clusters take their objects.
  const std::string held = clusters_.back();
  ASSERT_EQ(sim_->Fault(held, "down"), 200);
  size_t from = eco_->Log().size();
  auto r = c->PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  const std::string first = Instances(*c).back();
  // Killed once objects are arriving.
  ASSERT_TRUE(WaitUntil([&] { return !Labeled(*sim_, clusters_[0], false).empty(); }, 30s))
      << eco_->LogTail();
  eco_->Kill9();
  const std::string log = eco_->Log().substr(from);
  ASSERT_TRUE(Has(log, LogLine(first, "instantiate", "started")));
  ASSERT_FALSE(Has(log, LogLine(first, "instantiate", "done")))
      << "done while " << held << " was down";
  // Up again, as late as the others ("up" clears every fault).
  ASSERT_EQ(sim_->Fault(held, "up"), 200);
  ASSERT_EQ(sim_->Fault(held, "latency", "ms=" + std::to_string(kLatencyMs)), 200);
  ASSERT_TRUE(eco_->Restart()) << eco_->error();

  c = std::make_unique<EcoClient>(eco_->port());
  auto put = c->PutMultipart(kProfile, Doc("web-profile", {{"app", "web"}}).dump(), Profile(v2));
  ASSERT_EQ(put.status, 200) << put.Describe();
  r = c->PostJson(kDIG + "/update", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  const std::string second = Instances(*c).back();
  ASSERT_NE(second, first);
  WaitSettled("Instantiated", first, "Updated");
  if (HasFatalFailure()) return;
  ExpectClusters(Desired(v2, first), "after the update");
  ExpectCounts("Applied", Desired(v2, first).size());
  ExpectQuietStore({{first, "instantiate"}, {second, "update"}, {first, "update-delete"}},
                   {{first, second}});
}

// ------------------------------------------------------------------ supersede

// Per cluster of the DIG's latest revision: connectivity, and how many of
// its resources are Applied; apart, what the status lists of the revision
// it replaced, still on the cluster ("replaced").
struct ClusterState {
  std::string connectivity;
  size_t resources = 0;
  size_t applied = 0;
  size_t replaced = 0;
};

std::map<std::string, ClusterState> ClusterStates(EcoClient& c) {
  std::map<std::string, ClusterState> out;
  json s = c.Get(kDIG + "/status?status=deployed").json();
  if (!s.is_object() || !s.contains("apps") || !s["apps"].is_array()) return out;
  for (const auto& app : s["apps"]) {
    for (const auto& cl : app.value("clusters", json::array())) {
      ClusterState& st = out[cl.value("cluster", "")];
      st.connectivity = cl.value("connectivity", "");
      for (const auto& r : cl.value("resources", json::array())) {
        if (r.value("replaced", false)) {
          ++st.replaced;
          continue;
        }
        ++st.resources;
        if (r.value("deployedStatus", "") == "Applied") ++st.applied;
      }
    }
  }
  return out;
}

int64_t LatestRevision(EcoClient& c) {
  json st = c.Get(kDIG + "/status").json();
  if (!st.is_object() || !st.contains("states")) return -1;
  const json a = st["states"].value("actions", json::array());
  return a.empty() ? -1 : a.back().value("revision", int64_t{-1});
}

class RsyncSupersede : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeSimOptions ko;
    ko.clusters = 3;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    clusters_ = ClusterNames(3);
    EcoOptions eo;
    eo.extra_args = {"--rsync-retry-base-ms", "100", "--rsync-retry-cap-ms", "500"};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
  }

  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::vector<std::string> clusters_;
};

// Revision 1 is being instantiated on three clusters, one of them down;
// revision 2 is asked for before it comes back. The instantiation of
// revision 1 ends at once (superseded), the two clusters that answer get
// revision 2 without waiting for the third, and once the third is back it
// gets revision 2 only, and revision 1's leftovers go everywhere.
TEST_F(RsyncSupersede, UpdateWhileAClusterIsDownDoesNotWaitForIt) {
  Revision v1, v2;
  v1.rev = "first";
  v1.service = true;
  for (int i = 0; i < 4; ++i) v1.items["cm" + std::to_string(i)] = "first-" + std::to_string(i);
  v2.rev = "second";
  v2.replicas = 2;
  v2.items["cm1"] = v1.items["cm1"];  // identical in both
  for (int i = 2; i < 5; ++i) v2.items["cm" + std::to_string(i)] = "second-" + std::to_string(i);
  // cm0 and the Service are revision 1's only.
  EcoClient c = eco_->client();
  World(c, *sim_, clusters_, v1);
  if (HasFatalFailure()) return;

  ASSERT_EQ(sim_->Fault("cluster-3", "down"), 200);
  auto r = c.PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  const std::string first = Instances(c).back();
  const auto want1 = Desired(v1, first);
  std::string diff;
  ASSERT_TRUE(WaitUntil(
      [&] {
        diff = Diff(want1, Labeled(*sim_, "cluster-1", false)) +
               Diff(want1, Labeled(*sim_, "cluster-2", false));
        return diff.empty() && ClusterStates(c)["cluster-3"].connectivity == "Retrying";
      },
      60s))
      << diff << "\n"
      << eco_->LogTail();
  ASSERT_EQ(DeployedSummary(c).value("deployedStatus", ""), "Instantiating");

  auto put = c.PutMultipart(kProfile, Doc("web-profile", {{"app", "web"}}).dump(), Profile(v2));
  ASSERT_EQ(put.status, 200) << put.Describe();
  r = c.PostJson(kDIG + "/update", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  const std::string second = Instances(c).back();
  ASSERT_NE(second, first);
  // Labels keep naming the first context: it is the status context.
  const auto want2 = Desired(v2, first);

  // The instantiation of revision 1 ends, superseded.
  const std::string superseded =
      LogLine(first, "instantiate", "failed: superseded by the update to AppContext " + second);
  ASSERT_TRUE(WaitUntil([&] { return Has(eco_->Log(), superseded); }, 30s)) << eco_->LogTail();
  // Revision 2 reaches the clusters that answer: each of its objects with its
  // content. What only revision 1 had goes once the update is done
  // everywhere (update-delete), so it may still be there.
  std::map<std::string, json> only1;
  for (const auto& [k, v] : want1) {
    if (!want2.count(k)) only1[k] = v;
  }
  ASSERT_EQ(only1.size(), 2u);
  for (const std::string n : {"cluster-1", "cluster-2"}) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          auto have = Labeled(*sim_, n, false);
          for (const auto& [k, v] : only1) have.erase(k);
          return (diff = Diff(want2, have)).empty();
        },
        60s))
        << n << ":" << diff << "\n"
        << eco_->LogTail();
  }
  // The third cluster is still down and got nothing.
  EXPECT_TRUE(Labeled(*sim_, "cluster-3", false).empty());
  // The DIG's status shows revision 2: applied where the clusters answer,
  // being retried on the third.
  std::map<std::string, ClusterState> states;
  EXPECT_TRUE(WaitUntil(
      [&] {
        states = ClusterStates(c);
        return states["cluster-1"].applied == want2.size() &&
               states["cluster-2"].applied == want2.size() &&
               states["cluster-3"].connectivity == "Retrying";
      },
      30s))
      << c.Get(kDIG + "/status?status=deployed").body;
  EXPECT_EQ(states["cluster-1"].resources, want2.size());
  // What only revision 1 has is still there: shown as replaced until the
  // update-delete removes it.
  EXPECT_EQ(states["cluster-1"].replaced, only1.size());
  EXPECT_EQ(states["cluster-3"].applied, 0u);
  EXPECT_EQ(LatestRevision(c), 2);
  EXPECT_EQ(Instances(c).back(), second);
  EXPECT_EQ(DeployedSummary(c).value("deployedStatus", ""), "Instantiating");
  EXPECT_EQ(DeployedSummary(c, first).value("deployedStatus", ""), "InstantiateFailed");

  // The third cluster comes back: it gets revision 2 and nothing of revision
  // 1; revision 1's context deletes its leftovers and ends Updated.
  ASSERT_EQ(sim_->Fault("cluster-3", "up"), 200);
  json last, last_old;
  ASSERT_TRUE(WaitUntil(
      [&] {
        last = DeployedSummary(c);
        last_old = DeployedSummary(c, first);
        return last.value("deployedStatus", "") == "Instantiated" &&
               last_old.value("deployedStatus", "") == "Updated";
      },
      60s))
      << last.dump() << "\n"
      << last_old.dump() << "\n"
      << eco_->LogTail();
  for (const auto& n : clusters_) EXPECT_EQ(Diff(want2, Labeled(*sim_, n, false)), "") << n;
  EXPECT_EQ(DeployedSummary(c).value("deployedCounts", json::object()),
            (json{{"Applied", want2.size() * clusters_.size()}}));
  const std::string log = eco_->Log();
  EXPECT_EQ(Count(log, LogLine(second, "update", "done")), 1u) << log;
  EXPECT_EQ(Count(log, LogLine(first, "update-delete", "done")), 1u) << log;

  // Nothing is left in flight: every event ended as it should.
  eco_->Kill9();
  auto st = store::Open(eco_->data_dir());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  store::RangeOptions keys;
  keys.keys_only = true;
  auto active = (*st)->Range("/eco/active/", keys);
  ASSERT_TRUE(active.ok());
  for (const auto& kv : active->kvs) ADD_FAILURE() << "still active: " << kv.key;
  auto events = [&](const std::string& id) {
    std::vector<json> out;
    auto evs = (*st)->Range(appcontext::EventPrefix(id));
    EXPECT_TRUE(evs.ok());
    if (evs.ok()) {
      for (const auto& kv : evs->kvs) out.push_back(json::parse(kv.value, nullptr, false));
    }
    return out;
  };
  auto old_events = events(first);
  ASSERT_EQ(old_events.size(), 2u);
  EXPECT_EQ(old_events[0].value("event", ""), "instantiate");
  EXPECT_EQ(old_events[0].value("status", ""), "error");
  EXPECT_EQ(old_events[0].value("message", ""), "superseded by the update to AppContext " + second);
  EXPECT_EQ(old_events[1].value("event", ""), "update-delete");
  EXPECT_EQ(old_events[1].value("status", ""), "done");
  auto new_events = events(second);
  ASSERT_EQ(new_events.size(), 1u);
  EXPECT_EQ(new_events[0].value("status", ""), "done");
}

// ------------------------------------------------------------------ replicas

std::unique_ptr<Process> StartReplica(const std::string& url, const std::string& log) {
  auto p = StartEco({"rsync", "--store", url, "--port", "0", "--bind", "127.0.0.1", "--workers", "8",
                     "--rsync-lease-seconds", "3",
                     "--rsync-retry-base-ms", "100", "--rsync-retry-cap-ms", "400"},
                    log);
  bool up = WaitUntil([&] { return Has(p->ReadLog(), "eco rsync running"); }, 20s);
  EXPECT_TRUE(up) << p->ReadLog();
  return p;
}

// An rsync replica's metrics port, from its start line (0: not found).
int MetricsPort(Process& p) {
  const std::string log = p.ReadLog();
  const std::string mark = "; metrics on ";
  const size_t at = log.find(mark);
  if (at == std::string::npos) return 0;
  const size_t colon = log.find(':', at + mark.size());
  return colon == std::string::npos ? 0 : std::atoi(log.c_str() + colon + 1);
}

// eco_rsync_contexts_held_elsewhere_total of the replica at `port` (-1: unreadable).
double HeldElsewhere(int port) {
  HttpResponse r = EcoClient(port).Get("/metrics");
  const std::string name = "\neco_rsync_contexts_held_elsewhere_total ";
  const size_t at = r.body.find(name);
  if (r.status != 200 || at == std::string::npos) return -1;
  return std::atof(r.body.c_str() + at + name.size());
}

// Records every rsync lock key created from `from` on (a store watch).
class LockWatch {
 public:
  LockWatch(store::Store& st, store::Revision from) {
    store::WatchCallbacks cb;
    cb.on_events = [this](const std::vector<store::WatchEvent>& evs) {
      std::lock_guard<std::mutex> g(mu_);
      for (const auto& e : evs) {
        if (e.type == store::WatchEvent::Type::kPut && e.kv.version == 1)
          created_.push_back(e.kv.key);
      }
    };
    cb.on_error = [](const Status&) {};
    auto h = st.Watch(kLockPrefix, from, cb);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (h.ok()) handle_ = std::move(*h);
  }
  // Those of context `ctx`, in order of creation.
  std::vector<std::string> Created(const std::string& ctx) {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<std::string> out;
    for (const auto& k : created_) {
      if (k.rfind(kLockPrefix + ctx + "/", 0) == 0) out.push_back(k);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> created_;
  std::unique_ptr<store::WatchHandle> handle_;
};

TEST(RsyncReplicas, OwnerKilledAnotherReplicaTakesOverAndFinishes) {
  EtcdProcess* etcd = SharedEtcd();
  ASSERT_NE(etcd, nullptr) << "no etcd";
  const std::string prefix = "rsync-faults-" + std::to_string(::getpid());
  const std::string url = "etcd://" + etcd->endpoint() + "/" + prefix;
  auto opened = store::OpenEtcdStore(etcd->StoreOptions(prefix + "/"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& st = **opened;

  KubeSimOptions ko;
  ko.clusters = 4;
  KubeSim sim(ko);
  ASSERT_TRUE(sim.ok()) << sim.error();
  const std::vector<std::string> clusters = ClusterNames(4);
  const std::vector<std::string> down = {"cluster-3", "cluster-4"};

  TempDir dir;
  std::unique_ptr<Process> api;
  int port = -1;
  for (int attempt = 0; attempt < 3 && port < 0; ++attempt) {
    int p = FreePort();
    api = StartEco({"api", "--store", url, "--port", std::to_string(p), "--bind", "127.0.0.1"},
                   dir.path() + "/api.log");
    if (WaitUntil([&] { return !api->running() || EcoClient(p).Get("/healthz").status == 200; },
                  20s) &&
        api->running()) {
      port = p;
    }
  }
  ASSERT_GT(port, 0) << api->ReadLog();
  std::vector<std::unique_ptr<Process>> replicas;
  replicas.push_back(StartReplica(url, dir.path() + "/rsync-0.log"));
  replicas.push_back(StartReplica(url, dir.path() + "/rsync-1.log"));
  if (HasFailure()) return;

  Revision rev;
  rev.rev = "replicas";
  for (int i = 0; i < 4; ++i) rev.items["cm" + std::to_string(i)] = "value-" + std::to_string(i);
  rev.service = true;
  EcoClient c(port);
  World(c, sim, clusters, rev);
  if (HasFatalFailure()) return;

  // Two clusters do not answer: the instantiation stays under way.
  for (const auto& n : down) ASSERT_EQ(sim.Fault(n, "down"), 200);
  auto rev0 = st.CurrentRevision();
  ASSERT_TRUE(rev0.ok());
  LockWatch watch(st, *rev0 + 1);
  auto r = c.PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  std::vector<std::string> ids = Instances(c);
  ASSERT_FALSE(ids.empty());
  const std::string id = ids.back();
  const std::string started = LogLine(id, "instantiate", "started");
  const std::string done = LogLine(id, "instantiate", "done");
  const std::string any = "rsync: context " + id + ":";

  int owner = -1;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int i = 0; i < 2; ++i) {
          if (Has(replicas[i]->ReadLog(), started)) owner = i;
        }
        return owner >= 0;
      },
      30s));
  const int other = 1 - owner;
  std::printf("replica %d owns %s\n", owner, id.c_str());
  // It deploys to the clusters that answer...
  const auto want = Desired(rev, id);
  std::string diff;
  EXPECT_TRUE(
      WaitUntil([&] { return (diff = Diff(want, Labeled(sim, "cluster-1", false))).empty(); }, 30s))
      << diff;
  // ...while the other replica leaves the context alone for several of its
  // lock retries (2 s apart), and tries no lock while the owner holds it.
  const auto owner_locks = LockKeys(st, id);
  ASSERT_EQ(owner_locks.size(), 1u) << ::testing::PrintToString(owner_locks);
  const size_t created_first = watch.Created(id).size();
  // Judged by the other replica's own count of its looks at the context.
  const int other_port = MetricsPort(*replicas[other]);
  ASSERT_GT(other_port, 0) << replicas[other]->ReadLog();
  const double looked = HeldElsewhere(other_port);
  ASSERT_TRUE(WaitUntil(
      [&] {
        EXPECT_EQ(LockKeys(st, id), owner_locks);
        EXPECT_FALSE(Has(replicas[other]->ReadLog(), any)) << replicas[other]->ReadLog();
        return HeldElsewhere(other_port) >= looked + 2;
      },
      30s))
      << "the other replica looked " << HeldElsewhere(other_port) - looked << " times";
  if (HasFailure()) return;
  EXPECT_EQ(watch.Created(id).size(), created_first)
      << "lock keys made while the owner held the lock: "
      << ::testing::PrintToString(watch.Created(id));
  EXPECT_FALSE(Has(replicas[owner]->ReadLog(), done));

  // The owner dies. Its lease runs out, and the other replica takes over
  // although two clusters are still down.
  replicas[owner]->Kill(SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return Has(replicas[other]->ReadLog(), started); }, 30s))
      << replicas[other]->ReadLog();
  // A fresh replica in the dead one's place stands by as well.
  replicas[owner] = StartReplica(url, dir.path() + "/rsync-2.log");
  if (HasFailure()) return;
  const auto taken = LockKeys(st, id);
  ASSERT_EQ(taken.size(), 1u) << ::testing::PrintToString(taken);
  EXPECT_NE(taken, owner_locks);
  const size_t created_before = watch.Created(id).size();
  const int fresh_port = MetricsPort(*replicas[owner]);
  ASSERT_GT(fresh_port, 0) << replicas[owner]->ReadLog();
  ASSERT_TRUE(WaitUntil(
      [&] {
        EXPECT_EQ(LockKeys(st, id), taken);
        EXPECT_FALSE(Has(replicas[owner]->ReadLog(), any)) << replicas[owner]->ReadLog();
        return HeldElsewhere(fresh_port) >= 2;
      },
      30s))
      << "the fresh replica looked " << HeldElsewhere(fresh_port) << " times";
  if (HasFailure()) return;
  EXPECT_EQ(watch.Created(id).size(), created_before)
      << ::testing::PrintToString(watch.Created(id));

  for (const auto& n : down) ASSERT_EQ(sim.Fault(n, "up"), 200);
  json last;
  ASSERT_TRUE(WaitUntil(
      [&] {
        last = DeployedSummary(c);
        return last.value("deployedStatus", "") == "Instantiated";
      },
      60s))
      << last.dump() << "\n"
      << replicas[other]->ReadLog();
  for (const auto& n : clusters) EXPECT_EQ(Diff(want, Labeled(sim, n, false)), "") << n;
  EXPECT_EQ(DeployedSummary(c).value("deployedCounts", json::object()),
            (json{{"Applied", want.size() * clusters.size()}}));

  // Exactly one replica finished it, once; the standby never touched it.
  const std::string survivor = replicas[other]->ReadLog();
  EXPECT_EQ(Count(survivor, started), 1u) << survivor;
  EXPECT_EQ(Count(survivor, done), 1u) << survivor;
  EXPECT_FALSE(Has(replicas[owner]->ReadLog(), any)) << replicas[owner]->ReadLog();
  // Nothing is left in flight.
  EXPECT_TRUE(WaitUntil(
      [&] {
        auto a = st.Get(appcontext::ActiveKey(id));
        return a.ok() && !a->has_value() && LockKeys(st, id).empty();
      },
      20s));
}

}  // namespace
}  // namespace eco::testing
