// rsync's pure logic: EMCO's event/state table, the update diff, the retry
// backoff, and the worker pool's timer queue.
#include "rsync/logic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_clock.h"
#include "rsync/executor.h"

namespace eco::rsync {
namespace {

using appcontext::Resource;
using nlohmann::json;

TEST(DecideTest, AcceptedStatesRunWithTheRunningState) {
  for (const char* s : {"Created", "Instantiated", "InstantiateFailed", "Instantiating"}) {
    Decision d = Decide("instantiate", s, false, false);
    EXPECT_TRUE(d.run) << s;
    EXPECT_EQ(d.status, "Instantiating") << s;
  }
  EXPECT_EQ(Decide("terminate", "Instantiated", false, false).status, "Terminating");
  EXPECT_EQ(Decide("terminate", "UpdatedFailed", false, false).status, "Terminating");
  EXPECT_EQ(Decide("update", "Created", false, false).status, "Instantiating");
  EXPECT_EQ(Decide("update", "Updated", false, false).status, "Instantiating");  // rollback target
  EXPECT_EQ(Decide("update-delete", "Instantiated", false, false).status, "Updating");
}

TEST(DecideTest, InvalidEventIsSkippedWithItsFailureState) {
  Decision d = Decide("instantiate", "Terminated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_TRUE(d.change_status);
  EXPECT_EQ(d.status, "InstantiateFailed");
  EXPECT_NE(d.message.find("Terminated"), std::string::npos);
  d = Decide("update-delete", "Created", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_EQ(d.status, "UpdatedFailed");
  d = Decide("terminate", "Created", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_EQ(d.status, "TerminateFailed");
}

TEST(DecideTest, TerminateWhenTerminatedChangesNothing) {
  Decision d = Decide("terminate", "Terminated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_FALSE(d.change_status);
}

TEST(DecideTest, StopFlagRefusesEveryEvent) {
  for (const char* e : {"instantiate", "terminate", "update", "update-delete"}) {
    Decision d = Decide(e, "Instantiated", true, false);
    EXPECT_FALSE(d.run) << e;
    EXPECT_TRUE(d.change_status) << e;
    EXPECT_EQ(d.status, StatesFor(e)->failure) << e;
  }
}

TEST(DecideTest, QueuedTerminateRefusesOtherEventsOnly) {
  EXPECT_FALSE(Decide("instantiate", "Created", false, true).run);
  EXPECT_FALSE(Decide("update", "Created", false, true).run);
  EXPECT_TRUE(Decide("terminate", "Instantiated", false, true).run);
}

TEST(DecideTest, ResumedEventRunsAgain) {
  // A restart finds the status the event itself wrote.
  EXPECT_TRUE(Decide("update", "Instantiating", false, false).run);
  EXPECT_TRUE(Decide("update-delete", "Updating", false, false).run);
  EXPECT_TRUE(Decide("terminate", "Terminating", false, false).run);
}

TEST(DecideTest, UnknownEventIsSkippedWithoutStatusChange) {
  Decision d = Decide("read", "Instantiated", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_FALSE(d.change_status);
  EXPECT_EQ(StatesFor("read"), nullptr);
}

TEST(DecideTest, ApplyEventsQueuedBeforeASupersedingUpdateAreRefused) {
  const Supersession before{"42", true};
  for (const char* st : {"Created", "Instantiating", "Instantiated"}) {
    Decision d = Decide("instantiate", st, false, false, before);
    EXPECT_FALSE(d.run) << st;
    EXPECT_TRUE(d.change_status) << st;
    EXPECT_EQ(d.status, "InstantiateFailed") << st;
    EXPECT_EQ(d.message, "superseded by the update to AppContext 42") << st;
  }
  EXPECT_FALSE(Decide("update", "Created", false, false, before).run);
  EXPECT_FALSE(Decide("update", "Instantiating", false, false, before).run);  // resumed
  // Events queued after it, and the other kinds, are not superseded.
  const Supersession after{"42", false};
  EXPECT_TRUE(Decide("instantiate", "Created", false, false, after).run);
  EXPECT_TRUE(Decide("terminate", "Instantiating", false, false, before).run);
  EXPECT_TRUE(Decide("update-delete", "Instantiated", false, false, before).run);
  // The stop flag and a queued terminate keep their own reasons.
  EXPECT_NE(Decide("instantiate", "Created", true, false, before).message.find("stopped"),
            std::string::npos);
  EXPECT_NE(Decide("update", "Created", false, true, before).message.find("terminate"),
            std::string::npos);
}

TEST(DecideTest, SupersededContextAcceptsUpdateDeleteAfterItsDeploymentFailed) {
  const Supersession replaced{"42", false};
  Decision d = Decide("update-delete", "InstantiateFailed", false, false, replaced);
  EXPECT_TRUE(d.run);
  EXPECT_EQ(d.status, "Updating");
  // Without the marker, EMCO's table: refused.
  d = Decide("update-delete", "InstantiateFailed", false, false);
  EXPECT_FALSE(d.run);
  EXPECT_EQ(d.status, "UpdatedFailed");
  // A rollback to a context whose superseded deployment ended after the
  // rollback reset it to Created.
  EXPECT_TRUE(Decide("update", "InstantiateFailed", false, false, replaced).run);
  EXPECT_FALSE(Decide("update", "InstantiateFailed", false, false).run);
  // Other states are as in the table.
  EXPECT_FALSE(Decide("update-delete", "Created", false, false, replaced).run);
  EXPECT_FALSE(Decide("update-delete", "TerminateFailed", false, false, replaced).run);
  EXPECT_FALSE(Decide("update-delete", "InstantiateFailed", true, false, replaced).run);
}

TEST(ReplacedTest, LastApplyAndPendingLookOnlyBeforeTheRevision) {
  const std::vector<QueuedEvent> q = {{"instantiate", "done", "", 3},
                                      {"update-delete", "pending", "9", 5},
                                      {"update", "pending", "7", 8},
                                      {"instantiate", "pending", "", 12}};
  EXPECT_EQ(LastApplyBefore(q, 3), nullptr);
  EXPECT_EQ(LastApplyBefore(q, 4), &q[0]);
  EXPECT_EQ(LastApplyBefore(q, 8), &q[0]);
  EXPECT_EQ(LastApplyBefore(q, 9), &q[2]);
  EXPECT_EQ(LastApplyBefore(q, 100), &q[3]);
  EXPECT_FALSE(ApplyPendingBefore(q, 8));  // the update-delete does not count
  EXPECT_TRUE(ApplyPendingBefore(q, 9));
  EXPECT_FALSE(ApplyPendingBefore({}, 100));
  // A resync re-applies what the update before it deployed: the update stays
  // the last apply (what it replaced is still to be cleaned up after it).
  std::vector<QueuedEvent> r = {{"update", "error", "o", 5}, {"resync", "done", "", 9}};
  EXPECT_EQ(LastApplyBefore(r, 100), &r[0]);
  EXPECT_TRUE(IsApplyEvent("resync"));  // still waits for dependencies, is superseded
}

TEST(ReplacedTest, ChainFollowsUpdatesThatDidNotSucceed) {
  // p was instantiated; o's update from p was superseded; n's update from o
  // too; m updates from n (queued at 20).
  std::map<std::string, std::vector<QueuedEvent>> queues = {
      {"p", {{"instantiate", "done", "", 1}}},
      {"o", {{"update", "error", "p", 5}}},
      {"n", {{"update", "skip", "o", 10}}},
      {"m", {{"update", "pending", "n", 20}}},
  };
  std::vector<std::string> asked;
  auto queue_of = [&](const std::string& id) -> const std::vector<QueuedEvent>& {
    asked.push_back(id);
    return queues[id];
  };
  EXPECT_EQ(ReplacedChain("m", "n", 20, queue_of), (std::vector<std::string>{"n", "o", "p"}));
  // A successful update ends the chain: what came before it was cleaned up.
  queues["o"][0].status = "done";
  EXPECT_EQ(ReplacedChain("m", "n", 20, queue_of), (std::vector<std::string>{"n", "o"}));
  // Events queued after the update do not count.
  queues["n"].push_back({"update", "done", "x", 25});
  EXPECT_EQ(ReplacedChain("m", "n", 20, queue_of), (std::vector<std::string>{"n", "o"}));
  // A rollback: the chain leads back to the context being updated; it stops there.
  queues["o"] = {{"update", "error", "m", 5}};
  asked.clear();
  EXPECT_EQ(ReplacedChain("m", "n", 20, queue_of), (std::vector<std::string>{"n", "o"}));
  EXPECT_EQ(asked, (std::vector<std::string>{"n", "o"}));
  // A cycle without the context itself ends too.
  queues["o"] = {{"update", "error", "n", 5}};
  EXPECT_EQ(ReplacedChain("m", "n", 20, queue_of), (std::vector<std::string>{"n", "o"}));
  EXPECT_TRUE(ReplacedChain("m", "", 20, queue_of).empty());
}

TEST(ReplacedTest, KnownOnClusterTrustsOtherRevisionsOnlyAfterAFinishedDeployment) {
  appcontext::DeployedRecord rec;
  rec.resources["a"] = {"Applied", "o", "", ""};
  rec.resources["b"] = {"Applied", "p", "", ""};  // applied by an older revision
  rec.resources["c"] = {"Pending", "o", "", ""};
  rec.resources["d"] = {"Deleted", "o", "", ""};
  rec.resources["e"] = {"Failed", "o", "x", ""};
  EXPECT_EQ(KnownOnCluster(rec, "o", false), (std::set<std::string>{"a"}));
  EXPECT_EQ(KnownOnCluster(rec, "o", true), (std::set<std::string>{"a", "b"}));
  EXPECT_TRUE(KnownOnCluster({}, "o", true).empty());
}

Resource R(const std::string& name, int v) {
  return {name, json{{"kind", "ConfigMap"}, {"data", {{"v", v}}}}};
}

std::vector<std::string> Names(const std::vector<const Resource*>& v) {
  std::vector<std::string> out;
  for (const Resource* r : v) out.push_back(r->name);
  return out;
}

TEST(DiffTest, ChangedKeepsNewOrderAndSkipsIdentical) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("d", 1), R("a", 1), R("b", 2)};
  EXPECT_EQ(Names(Changed(now, &before)), (std::vector<std::string>{"d", "b"}));
  EXPECT_EQ(Names(Changed(now, nullptr)), (std::vector<std::string>{"d", "a", "b"}));
  EXPECT_TRUE(Changed(before, &before).empty());
}

TEST(DiffTest, IdenticalButNeverAppliedIsApplied) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("a", 1), R("b", 2), R("c", 1)};
  std::set<std::string> on_cluster = {"a"};  // c never reached the cluster
  EXPECT_EQ(Names(Changed(now, &before, &on_cluster)), (std::vector<std::string>{"b", "c"}));
  on_cluster = {"a", "b", "c"};
  EXPECT_EQ(Names(Changed(now, &before, &on_cluster)), (std::vector<std::string>{"b"}));
}

TEST(DiffTest, RemovedKeepsOldOrder) {
  std::vector<Resource> before = {R("a", 1), R("b", 1), R("c", 1)};
  std::vector<Resource> now = {R("b", 5)};
  EXPECT_EQ(Names(Removed(before, &now)), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(Names(Removed(before, nullptr)), (std::vector<std::string>{"a", "b", "c"}));
}

// Service discovery: where a server Service is reached from other clusters.
nlohmann::json Svc(const std::string& type, nlohmann::json status = nlohmann::json::object()) {
  return {{"spec", {{"type", type}, {"ports", {{{"port", 80}, {"nodePort", 30080}}, {{"port", 443}, {"nodePort", 30443}}}}}},
          {"status", std::move(status)}};
}
nlohmann::json Node(nlohmann::json addresses, const std::string& ready = "True") {
  return {{"status", {{"addresses", std::move(addresses)}, {"conditions", {{{"type", "Ready"}, {"status", ready}}}}}}};
}

TEST(DiscoveryTest, LoadBalancerIngressIpsOnTheServicePort) {
  auto svc = Svc("LoadBalancer", {{"loadBalancer", {{"ingress", {{{"ip", "203.0.113.7"}}, {{"hostname", "lb.example"}}}}}}});
  EXPECT_FALSE(NeedsNodes(svc));
  auto a = ReachableAddress(svc, {}, 443);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->ips, std::vector<std::string>{"203.0.113.7"});
  EXPECT_EQ(a->port, 443);
  auto pending = ReachableAddress(Svc("LoadBalancer"), {}, 80);
  EXPECT_TRUE(pending.status().waiting()) << pending.status().ToString();
}

TEST(DiscoveryTest, NodePortOnReadyNodesExternalBeforeInternal) {
  std::vector<nlohmann::json> nodes = {
      Node({{{"type", "InternalIP"}, {"address", "10.0.0.2"}}, {{"type", "ExternalIP"}, {"address", "198.51.100.2"}}}),
      Node({{{"type", "InternalIP"}, {"address", "10.0.0.3"}}, {{"type", "Hostname"}, {"address", "n3"}}}),
      Node({{{"type", "InternalIP"}, {"address", "10.0.0.4"}}}, "False")};
  EXPECT_TRUE(NeedsNodes(Svc("NodePort")));
  auto a = ReachableAddress(Svc("NodePort"), nodes, 80);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->ips, (std::vector<std::string>{"198.51.100.2", "10.0.0.3"}));
  EXPECT_EQ(a->port, 30080);
  // A LoadBalancer with host names only: its nodePort.
  auto hosts = Svc("LoadBalancer", {{"loadBalancer", {{"ingress", {{{"hostname", "lb.example"}}}}}}});
  EXPECT_TRUE(NeedsNodes(hosts));
  EXPECT_EQ(ReachableAddress(hosts, nodes, 443)->port, 30443);
  EXPECT_TRUE(ReachableAddress(Svc("NodePort"), {}, 80).status().waiting());
}

TEST(DiscoveryTest, UnreachableServicesAndPortsAreErrors) {
  EXPECT_EQ(ReachableAddress(Svc("ClusterIP"), {}, 80).status().code(), Code::kInvalid);
  EXPECT_EQ(ReachableAddress(nlohmann::json::object(), {}, 80).status().code(), Code::kInvalid);
  EXPECT_EQ(ReachableAddress(Svc("NodePort"), {}, 8080).status().code(), Code::kInvalid);
}

TEST(DiscoveryTest, AddressesJoinTheSubsetOfTheirPort) {
  nlohmann::json ep = {{"subsets", {{{"addresses", {{{"ip", "10.0.0.9"}}}}, {"ports", {{{"name", "tcp"}, {"port", 80}}}}}}}};
  ep = WithAddresses(ep, {{"203.0.113.7", "10.0.0.9"}, 80}, "tcp", "TCP");
  ep = WithAddresses(ep, {{"198.51.100.2"}, 30080}, "tcp", "TCP");
  EXPECT_EQ(ep["subsets"], nlohmann::json::parse(R"([
    {"addresses":[{"ip":"10.0.0.9"},{"ip":"203.0.113.7"}],"ports":[{"name":"tcp","port":80}]},
    {"addresses":[{"ip":"198.51.100.2"}],"ports":[{"name":"tcp","port":30080,"protocol":"TCP"}]}])"));
}

TEST(BackoffTest, DoublesUpToTheCapWithJitterInTheUpperHalf) {
  using std::chrono::milliseconds;
  EXPECT_EQ(Backoff(1, milliseconds(1000), milliseconds(60000), 0.999999).count(), 999);
  EXPECT_EQ(Backoff(1, milliseconds(1000), milliseconds(60000), 0.0).count(), 500);
  EXPECT_EQ(Backoff(3, milliseconds(1000), milliseconds(60000), 0.0).count(), 2000);
  EXPECT_EQ(Backoff(30, milliseconds(1000), milliseconds(60000), 0.0).count(), 30000);
  EXPECT_LE(Backoff(1000, milliseconds(1000), milliseconds(60000), 1.0).count(), 60000);
}

TEST(ExecutorTest, TimedTasksRunInDeadlineOrderOnFewThreads) {
  Executor ex(2);
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> done;
  auto now = RealClock().Now();
  auto rec = [&](int i) {
    std::lock_guard<std::mutex> g(mu);
    order.push_back(i);
    if (order.size() == 3) done.set_value();
  };
  ex.PostAt(now + std::chrono::milliseconds(60), [&] { rec(3); });
  ex.PostAt(now + std::chrono::milliseconds(30), [&] { rec(2); });
  ex.Post([&] { rec(1); });
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(ExecutorTest, ShutdownDropsWhatHasNotRun) {
  std::atomic<int> ran{0};
  {
    Executor ex(1);
    ex.PostAt(RealClock().Now() + std::chrono::hours(1), [&] { ++ran; });
    ex.Shutdown();
    ex.Post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 0);
}

TEST(ExecutorTest, TimedTasksWaitForTheirClock) {
  eco::testing::FakeClock clock;
  Executor ex(2, clock);
  std::atomic<int> ran{0};
  std::promise<void> done;
  ex.PostAfter(std::chrono::hours(72), [&] {
    ++ran;
    done.set_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ran.load(), 0);  // three virtual days have not passed
  clock.Advance(std::chrono::hours(71));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran.load(), 0);
  clock.Advance(std::chrono::hours(1));
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace eco::rsync
