// High availability on a real etcd cluster: three etcd members on
// loopback, two `eco api` and two `eco rsync` replicas on them, a fleet of
// 100 kube-sim clusters. While a DIG is being instantiated on all of them,
// the etcd leader, the API replica that took the request and the rsync
// replica doing the work are killed with SIGKILL. The instantiation must
// complete through the survivors with nothing lost: every cluster holds
// exactly what was asked for, the status agrees, nothing is left in flight,
// and the DIG can then be terminated as usual.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "context_builders.h"
#include "eco_fixture.h"
#include "etcd_fixture.h"
#include "kubesim_fixture.h"
#include "process.h"
#include "store/etcd_store.h"
#include "world.h"

namespace eco::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int kClusters = 100;
constexpr int kMembers = 3;
constexpr int kLatencyMs = 40;

TEST(HighAvailability, OneOfEachKilledDuringAHundredClusterInstantiationLosesNothing) {
  // Three members of one cluster.
  std::vector<int> client(kMembers), peer(kMembers);
  std::string initial;
  for (int i = 0; i < kMembers; ++i) {
    client[i] = FreePort();
    do {
      peer[i] = FreePort();
    } while (peer[i] == client[i]);
    initial += (i ? "," : "") + std::string("m") + std::to_string(i) + "=http://127.0.0.1:" +
               std::to_string(peer[i]);
  }
  std::vector<std::unique_ptr<EtcdProcess>> etcd;
  for (int i = 0; i < kMembers; ++i) {
    EtcdMemberConfig cfg;
    cfg.name = "m" + std::to_string(i);
    cfg.client_port = client[i];
    cfg.peer_port = peer[i];
    cfg.initial_cluster = initial;
    etcd.push_back(std::make_unique<EtcdProcess>(cfg));
  }
  std::vector<EtcdProcess*> members;
  for (auto& m : etcd) members.push_back(m.get());
  ASSERT_EQ(StartEtcdCluster(members), "");

  std::string endpoints;
  for (int i = 0; i < kMembers; ++i) endpoints += (i ? "," : "") + etcd[i]->endpoint();
  const std::string url = "etcd://" + endpoints + "/ha";

  // Slow enough answers that the instantiation is still under way when the
  // kills land.
  auto fleet = SlowFleet(kClusters, kLatencyMs);
  if (HasFatalFailure()) return;
  KubeSim& sim = *fleet;
  const std::vector<std::string> clusters = ClusterNames(kClusters);

  TempDir dir;
  const std::vector<std::string> rsync_flags = {"--workers", "8", "--rsync-lease-seconds", "3",
                                                "--rsync-retry-base-ms", "100",
                                                "--rsync-retry-cap-ms", "500"};
  std::vector<std::unique_ptr<Role>> apis, rsyncs;
  for (int i = 0; i < 2; ++i) {
    apis.push_back(std::make_unique<Role>("api-" + std::to_string(i), "api", url, dir.path()));
    rsyncs.push_back(
        std::make_unique<Role>("rsync-" + std::to_string(i), "rsync", url, dir.path(), rsync_flags));
  }
  for (auto& r : apis) ASSERT_EQ(r->Start(), "");
  for (auto& r : rsyncs) ASSERT_EQ(r->Start(), "");

  Revision rev;
  rev.rev = "ha";
  for (int i = 0; i < 4; ++i) rev.items["cm" + std::to_string(i)] = "value-" + std::to_string(i);
  rev.service = true;
  {
    EcoClient c(apis[0]->port());
    World(c, sim, clusters, rev);
    if (HasFatalFailure()) return;
  }

  // The last cluster is down until the kills: the instantiation cannot
  // have ended before them, however fast the others go.
  const std::string held = clusters.back();
  ASSERT_EQ(sim.Fault(held, "down"), 200);
  EcoClient c0(apis[0]->port());
  const HttpResponse r = c0.PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  const std::vector<std::string> ids = Instances(c0);
  ASSERT_FALSE(ids.empty());
  const std::string id = ids.back();
  const std::string started_line = LogLine(id, "instantiate", "started");
  const std::string done_line = LogLine(id, "instantiate", "done");

  // Once the work is under way (a tenth of the objects recorded Applied),
  // the rsync replica doing the work, the API replica that took the
  // request and the etcd leader die.
  int owner = -1;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int i = 0; i < 2; ++i) {
          if (Has(rsyncs[i]->Log(), started_line)) owner = i;
        }
        return owner >= 0;
      },
      60s));
  const size_t tenth = Desired(rev, id).size() * kClusters / 10;
  json counts;
  ASSERT_TRUE(WaitUntil(
      [&] {
        counts = DeployedSummary(c0).value("deployedCounts", json::object());
        return counts.value("Applied", size_t{0}) >= tenth;
      },
      60s))
      << counts.dump();
  // The member to die is the leader: a new one must be elected meanwhile.
  int leader = -1;
  for (int i = 0; i < kMembers && leader < 0; ++i) {
    if (EtcdIsLeader(etcd[i]->endpoint())) leader = i;
  }
  ASSERT_GE(leader, 0) << "no etcd leader";
  rsyncs[owner]->Kill9();
  apis[0]->Kill9();
  etcd[leader]->Kill();
  std::printf("killed rsync-%d (owner of %s), api-0 and the etcd leader m%d\n", owner, id.c_str(),
              leader);
  std::fflush(stdout);
  ASSERT_FALSE(Has(rsyncs[owner]->Log(), done_line)) << "done while " << held << " was down";
  size_t done_at_kill = 0;
  for (const auto& n : clusters) {
    if (Diff(Desired(rev, id), Labeled(sim, n, false)).empty()) ++done_at_kill;
  }
  std::printf("%zu of %d clusters complete when the kills landed\n", done_at_kill, kClusters);
  EXPECT_LT(done_at_kill, static_cast<size_t>(kClusters));
  // Up again, as late as the others ("up" clears every fault).
  ASSERT_EQ(sim.Fault(held, "up"), 200);
  ASSERT_EQ(sim.Fault(held, "latency", "ms=" + std::to_string(kLatencyMs)), 200);

  // The survivors finish it.
  const int other = 1 - owner;
  EcoClient c1(apis[1]->port());
  const Expectation want{"Instantiated", Desired(rev, id), clusters};
  std::string diff = Converge([&] { return CheckClustersAndStatus(c1, sim, want); }, 180s);
  ASSERT_EQ(diff, "") << "\nrsync-" << other << " log tail:\n"
                      << rsyncs[other]->Log().substr(
                             rsyncs[other]->Log().size() > 6000 ? rsyncs[other]->Log().size() - 6000 : 0);
  EXPECT_EQ(Count(rsyncs[other]->Log(), done_line), 1u);

  // Nothing lost from the catalogue written before the kills.
  const json list = c1.Get("/v2/cluster-providers/prov/clusters").json();
  EXPECT_TRUE(list.is_array() && list.size() == static_cast<size_t>(kClusters)) << list.dump().substr(0, 300);
  EXPECT_EQ(DeployedSummary(c1).value("deployedCounts", json::object()),
            (json{{"Applied", want.objects.size() * kClusters}}));

  // Nothing in flight, seen through the members still up.
  store::EtcdOptions so;
  for (int i = 0; i < kMembers; ++i) {
    if (i != leader) so.endpoints.push_back(etcd[i]->endpoint());
  }
  so.key_prefix = "ha/";
  auto st = store::OpenEtcdStore(so);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(Converge([&] { return InFlight(**st, {id}); }, 30s), "");

  // Still fully usable on two members, one API and one rsync: terminate.
  const HttpResponse t = c1.PostJson(kDIG + "/terminate", json::object());
  ASSERT_EQ(t.status, 202) << t.Describe();
  const Expectation gone{"Terminated", {}, clusters};
  EXPECT_EQ(Converge([&] { return CheckClustersAndStatus(c1, sim, gone); }, 180s), "");
  EXPECT_EQ(Converge([&] { return InFlight(**st, {id}); }, 30s), "");
}

}  // namespace
}  // namespace eco::testing
