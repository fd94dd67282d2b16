// Random faults against a distributed eco: `eco api` and `eco rsync` as
// separate processes on a real etcd, a kube-sim fleet, and a DIG taken
// through rounds of instantiate, update and terminate. While each operation
// is asked for and carried out, a fault injector kills the API or rsync
// with SIGKILL, kills etcd and starts it again, or makes clusters flap,
// while a reader keeps querying the API. The client does what an operator's
// script does: retries what got no answer, after checking whether it took
// effect. After each operation, with every fault healed, the checker
// compares every cluster with the desired state and the status module's
// report with the clusters, and the store must have nothing in flight.
//
// ECO_FAULT_ROUNDS (default 2) sets the number of rounds, ECO_SOAK_SECONDS
// a time limit instead (scripts/soak.sh), ECO_FAULT_SEED replays a run
// (default 1; "random" for a fresh seed, as the soak runs do).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
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
using Clock = std::chrono::steady_clock;

constexpr int kClusters = 6;
// Every answer of every cluster is this late, so an operation lasts long
// enough (a second or two) for faults to land in it.
constexpr int kLatencyMs = 100;

uint64_t EnvU64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

enum class Fault { kKillApi, kKillRsync, kRestartEtcd, kFlap };
const char* Name(Fault f) {
  switch (f) {
    case Fault::kKillApi: return "kill -9 eco api";
    case Fault::kKillRsync: return "kill -9 eco rsync";
    case Fault::kRestartEtcd: return "kill -9 etcd, start it again";
    case Fault::kFlap: return "clusters flapping";
  }
  return "?";
}

class FaultSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = FaultSeed("fault suite");
    rng_.seed(seed_);

    ASSERT_EQ(etcd_.Start(), "");
    const std::string prefix = "faults";
    url_ = "etcd://" + etcd_.endpoint() + "/" + prefix;
    auto opened = store::OpenEtcdStore(etcd_.StoreOptions(prefix + "/"));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);

    sim_ = SlowFleet(kClusters, kLatencyMs);
    if (HasFatalFailure()) return;
    clusters_ = ClusterNames(kClusters);
    api_ = std::make_unique<Role>("api", "api", url_, dir_.path());
    // Short leases and retries: a restarted rsync takes over soon, and a
    // cluster back from a flap is retried soon.
    rsync_ = std::make_unique<Role>(
        "rsync", "rsync", url_, dir_.path(),
        std::vector<std::string>{"--workers", "8", "--rsync-lease-seconds", "2",
                                 "--rsync-retry-base-ms", "100", "--rsync-retry-cap-ms", "500"});
    ASSERT_EQ(api_->Start(), "");
    ASSERT_EQ(rsync_->Start(), "");
    injector_ = std::thread([this] { InjectorLoop(); });
  }

  void TearDown() override {
    stop_reader_ = true;
    if (reader_.joinable()) reader_.join();
    {
      std::lock_guard<std::mutex> g(plan_mu_);
      quit_ = true;
      plan_cv_.notify_all();
    }
    if (injector_.joinable()) injector_.join();
    if (HasFailure()) {
      std::printf("--- api log tail:\n%s\n--- rsync log tail:\n%s\n",
                  Tail(api_ ? api_->Log() : "").c_str(), Tail(rsync_ ? rsync_->Log() : "").c_str());
    }
  }

  static std::string Tail(const std::string& s, size_t n = 6000) {
    return s.size() > n ? s.substr(s.size() - n) : s;
  }

  EcoClient Client() { return EcoClient(api_->port()); }
  int Uniform(int lo, int hi) {
    std::lock_guard<std::mutex> g(rng_mu_);
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }

  // Keeps querying the API (status, lists) from its own thread until the
  // test ends; every answer is counted by class.
  void StartReader() {
    reader_ = std::thread([this] {
      const std::vector<std::string> paths = {
          kDIG + "/status?status=ready&output=summary", kDIG + "/status?status=deployed",
          "/v2/cluster-providers/prov/clusters", "/v2/projects/p/composite-apps"};
      size_t i = 0;
      while (!stop_reader_) {
        const HttpResponse r = EcoClient(api_->port()).Get(paths[i++ % paths.size()]);
        {
          std::lock_guard<std::mutex> g(answers_mu_);
          ++answers_[r.status == 0 ? "no answer" : std::to_string(r.status)];
          if (r.status >= 500 && r.status != 503) unexpected_.push_back(r.Describe());
        }
        std::this_thread::sleep_for(20ms);
      }
    });
  }

  // One fault, from injection to healing.
  void Inject(Fault f) {
    ++injected_[f];
    if (under_way_) ++during_[f];
    std::printf("  %s%s\n", Name(f), under_way_ ? " (during the operation)" : "");
    std::fflush(stdout);
    switch (f) {
      case Fault::kKillApi: {
        api_->Kill9();
        std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(0, 1000)));
        const std::string err = api_->Start();
        EXPECT_EQ(err, "");
        std::printf("    api back on port %d\n", api_->port());
        break;
      }
      case Fault::kKillRsync: {
        rsync_->Kill9();
        std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(0, 1000)));
        const std::string err = rsync_->Start();
        EXPECT_EQ(err, "");
        break;
      }
      case Fault::kRestartEtcd: {
        etcd_.Kill();
        std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(300, 2500)));
        const std::string err = etcd_.Restart();
        EXPECT_EQ(err, "");
        break;
      }
      case Fault::kFlap: {
        std::vector<std::string> flapping;
        const int n = Uniform(1, 3);
        for (int i = 0; i < n; ++i) flapping.push_back(clusters_[Uniform(0, kClusters - 1)]);
        const int toggles = Uniform(2, 6);
        for (int t = 0; t < toggles; ++t) {
          for (const auto& c : flapping) EXPECT_EQ(sim_->Fault(c, t % 2 ? "up" : "down"), 200);
          std::this_thread::sleep_for(std::chrono::milliseconds(Uniform(150, 700)));
        }
        for (const auto& c : flapping) EXPECT_EQ(sim_->Fault(c, "up"), 200);
        break;
      }
    }
  }

  // Injects 1..3 random faults at random moments from now on, in the
  // injector thread; AwaitHealed() returns once every one is healed. One
  // thread does it all along: processes it restarts die with the thread
  // that started them (their parent-death signal).
  void InjectSoon() {
    std::vector<std::pair<int, Fault>> plan;
    const int n = Uniform(1, 3);
    for (int i = 0; i < n; ++i) {
      // A third of the first faults land within the request itself.
      const int gap = i == 0 && Uniform(0, 2) == 0 ? Uniform(0, 10) : Uniform(0, 1500);
      plan.emplace_back(gap, static_cast<Fault>(Uniform(0, 3)));
    }
    std::lock_guard<std::mutex> g(plan_mu_);
    plan_ = std::move(plan);
    healed_ = false;
    plan_cv_.notify_all();
  }
  void AwaitHealed() {
    std::unique_lock<std::mutex> g(plan_mu_);
    plan_cv_.wait(g, [&] { return healed_; });
  }
  void InjectorLoop() {
    std::unique_lock<std::mutex> g(plan_mu_);
    while (true) {
      plan_cv_.wait(g, [&] { return quit_ || !plan_.empty(); });
      if (quit_) return;
      auto plan = std::move(plan_);
      plan_.clear();
      g.unlock();
      for (const auto& [gap, f] : plan) {
        std::this_thread::sleep_for(std::chrono::milliseconds(gap));
        Inject(f);
      }
      g.lock();
      healed_ = true;
      plan_cv_.notify_all();
    }
  }

  // The DIG's action count, or -1 while the API cannot tell.
  long ActionCount() {
    EcoClient c = Client();
    const HttpResponse r = c.Get(kDIG + "/status");
    if (r.status != 200) return -1;
    return static_cast<long>(Actions(c).size());
  }

  // Asks for `op` (instantiate, update, terminate) until it is accepted or
  // has taken effect: an answer lost to a kill is checked against the DIG's
  // actions before asking again, as an operator's script would.
  void Operate(const std::string& op, long actions_before) {
    const auto deadline = Clock::now() + 120s;
    while (Clock::now() < deadline) {
      const HttpResponse r = Client().PostJson(kDIG + "/" + op, json::object());
      if (r.status == 202) return;
      // A killed API's lock on the DIG lasts until its lease runs out; the
      // answer says to retry, and an operator's script does.
      const bool busy = r.status == 409 && r.body.find("in progress; retry") != std::string::npos;
      ASSERT_TRUE(r.status == 0 || r.status >= 500 || busy) << op << ": " << r.Describe();
      if (busy) ++busy_;
      ++retried_;
      long now = -1;
      WaitUntil([&] { return (now = ActionCount()) >= 0; }, 60s);
      if (now > actions_before) return;
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << op << " was not accepted within 120 s";
  }

  // Waits (with every fault healed) until the clusters, the status and the
  // store agree with `want`.
  void ExpectSettled(const Expectation& want, const std::vector<std::string>& contexts,
                     const std::map<std::string, std::string>& superseded, const std::string& when) {
    EcoClient c = Client();
    std::string diff = Converge([&] { return CheckClustersAndStatus(c, *sim_, want); }, 120s);
    EXPECT_EQ(diff, "") << when;
    diff = Converge([&] { return InFlight(*store_, contexts, superseded); }, 30s);
    EXPECT_EQ(diff, "") << when;
  }

  // The DIG's AppContext ids once the API answers again (empty if it never does).
  std::vector<std::string> InstancesWhenUp() {
    std::vector<std::string> ids;
    WaitUntil(
        [&] {
          EcoClient c(api_->port());
          if (c.Get(kDIG + "/status").status != 200) return false;
          ids = Instances(c);
          return true;
        },
        60s);
    return ids;
  }

  // A whole operation under faults, then the checks.
  void Round(const std::string& op, long actions) {
    under_way_ = true;
    InjectSoon();
    Operate(op, actions);
    AwaitHealed();
    under_way_ = false;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::mutex rng_mu_;
  TempDir dir_;
  EtcdProcess etcd_;
  std::string url_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<Role> api_, rsync_;
  std::vector<std::string> clusters_;

  std::thread injector_;
  std::mutex plan_mu_;
  std::condition_variable plan_cv_;
  std::vector<std::pair<int, Fault>> plan_;
  bool healed_ = true;
  bool quit_ = false;
  std::atomic<bool> under_way_{false};
  std::map<Fault, int> injected_, during_;
  int retried_ = 0;
  int busy_ = 0;

  std::thread reader_;
  std::atomic<bool> stop_reader_{false};
  std::mutex answers_mu_;
  std::map<std::string, int> answers_;
  std::vector<std::string> unexpected_;
};

TEST_F(FaultSuite, RandomFaultsDuringInstantiateUpdateTerminateLoseNothing) {
  const uint64_t rounds = EnvU64("ECO_FAULT_ROUNDS", 2);
  const uint64_t soak_seconds = EnvU64("ECO_SOAK_SECONDS", 0);
  const auto start = Clock::now();
  {
    EcoClient c = Client();
    World(c, *sim_, clusters_, FirstRevision(0));
    if (HasFatalFailure()) return;
  }
  StartReader();

  int round = 0;
  for (;; ++round) {
    if (soak_seconds > 0 ? Clock::now() - start > std::chrono::seconds(soak_seconds)
                         : round >= static_cast<int>(rounds)) {
      break;
    }
    std::printf("round %d\n", round);
    std::fflush(stdout);
    const std::string r = "round " + std::to_string(round);
    if (round > 0) {
      // The profile of this round's first revision (no faults meanwhile).
      const HttpResponse put = Client().PutMultipart(
          kProfile, Doc("web-profile", {{"app", "web"}}).dump(), Profile(FirstRevision(round)));
      ASSERT_EQ(put.status, 200) << put.Describe();
    }

    long actions = ActionCount();
    ASSERT_GE(actions, 0);
    Round("instantiate", actions);
    if (HasFatalFailure()) return;
    const std::vector<std::string> ids = InstancesWhenUp();
    ASSERT_FALSE(ids.empty()) << Client().Get(kDIG + "/status").Describe();
    const std::string first = ids.back();
    ExpectSettled({"Instantiated", Desired(FirstRevision(round), first), clusters_}, {first}, {},
                  r + ", after instantiate");
    if (HasFailure()) return;

    const HttpResponse put = Client().PutMultipart(
        kProfile, Doc("web-profile", {{"app", "web"}}).dump(), Profile(SecondRevision(round)));
    ASSERT_EQ(put.status, 200) << put.Describe();
    actions = ActionCount();
    ASSERT_GE(actions, 0);
    Round("update", actions);
    if (HasFatalFailure()) return;
    const std::vector<std::string> after = InstancesWhenUp();
    ASSERT_FALSE(after.empty());
    const std::string second = after.back();
    ASSERT_NE(second, first);
    // Labels keep naming the first context: it is the status context.
    ExpectSettled({"Instantiated", Desired(SecondRevision(round), first), clusters_}, {first, second},
                  {{first, second}}, r + ", after update");
    {
      EcoClient c(api_->port());
      EXPECT_EQ(DeployedSummary(c, first).value("deployedStatus", ""), "Updated");
    }
    if (HasFailure()) return;

    actions = ActionCount();
    ASSERT_GE(actions, 0);
    Round("terminate", actions);
    if (HasFatalFailure()) return;
    ExpectSettled({"Terminated", {}, clusters_}, {first, second}, {{first, second}},
                  r + ", after terminate");
    if (HasFailure()) return;
  }

  stop_reader_ = true;
  reader_.join();
  int faults = 0, during = 0;
  std::printf("fault suite: %d rounds in %llds, seed %llu\n", round,
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count()),
              static_cast<unsigned long long>(seed_));
  for (const auto& [f, n] : injected_) {
    faults += n;
    during += during_[f];
    std::printf("  %-30s %3d injected, %3d while an operation was asked for or under way\n",
                Name(f), n, during_[f]);
  }
  std::printf("  requests retried by the client: %d (%d of them 409: another operation in progress)\n"
              "  reader's answers:",
              retried_, busy_);
  for (const auto& [k, n] : answers_) std::printf(" %s: %d;", k.c_str(), n);
  std::printf("\n");
  std::fflush(stdout);
  EXPECT_GE(faults, 3 * round);
  EXPECT_GE(during, round) << "too few faults landed during an operation (seed " << seed_ << ")";
  // 503 is the API's answer while the store is away; anything else of 5xx
  // is a bug.
  for (const auto& u : unexpected_) ADD_FAILURE() << "reader got " << u;
}

}  // namespace
}  // namespace eco::testing
