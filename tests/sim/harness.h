// The deterministic simulation of the deployment path: the AppContext
// hand-off as the scheduler makes it, rsync (one or more instances, each on
// a manual executor), the status module and a real embedded store, all on
// one fake clock and one thread, against the in-memory fleet (sim_fleet.h).
// Nothing waits in real time: a run advances the clock to the next timer
// whenever nothing is ready, so three virtual days pass in seconds.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "process.h"
#include "rsync/executor.h"
#include "rsync/rsync.h"
#include "sim_fleet.h"
#include "sim_store.h"

namespace eco::sim {

// The seed of a run: ECO_SIM_SEED when set, else `fallback`.
uint64_t SeedOr(uint64_t fallback);

class Sim {
 public:
  explicit Sim(uint64_t seed);
  ~Sim();

  uint64_t seed() const { return seed_; }
  testing::FakeClock& clock() { return clock_; }
  Fleet& fleet() { return fleet_; }
  store::Store& store() { return *st_; }
  Random& random() { return random_; }

  // rsync's options in the simulation (before StartRsync).
  rsync::Options& options() { return opts_; }

  // Clusters sim/<prefix>NNNN registered with a kubeconfig naming them.
  std::vector<std::string> AddClusters(int n, const std::string& prefix = "c");
  void AddCluster(const std::string& name, Faults f = {});

  // A new rsync process on the store; returns its number.
  int StartRsync();
  // The process dies at once (kill -9): its store calls fail from now on,
  // its lease is no longer kept alive (it ends at its deadline), and what it
  // had in memory is gone.
  void Kill(int instance);
  // A clean stop (releases its locks and lease).
  void StopRsync(int instance);
  size_t Live() const;

  // The scheduler's hand-off: a sealed AppContext of DIG `dig` with one app
  // on `clusters`, its instantiate queued, and the DIG's state record.
  // `rollout`: the DIG's spec.rollout as the event carries it (null: none).
  std::string Instantiate(const std::string& dig, const std::vector<std::string>& clusters,
                          const appcontext::ResourceSet& rs, const nlohmann::json& rollout = nullptr);
  // An update of the DIG to `rs` (the scheduler's Update): returns the new context.
  std::string Update(const std::string& dig, const appcontext::ResourceSet& rs,
                     const nlohmann::json& rollout = nullptr);
  // What a ready monitor would record: for each cluster of the DIG, every
  // object its deployed record names is Ready when `healthy(cluster)`,
  // NotReady otherwise, at the generation the cluster holds (an object not
  // on the cluster: NotPresent). Written when it differs; never for a
  // cluster `reported` rejects (its report goes stale).
  void ReportReady(const std::string& dig, const std::function<bool(const std::string& cluster)>& healthy,
                   const std::function<bool(const std::string& cluster)>& reported = nullptr);
  void Terminate(const std::string& dig);
  std::string Current(const std::string& dig) const { return digs_.at(dig).instance; }
  std::string StatusOf(const std::string& context);

  // Runs until `done` holds (checked whenever the clock is about to move)
  // or `limit` of virtual time passed; returns done().
  bool RunUntil(const std::function<bool()>& done, Clock::Duration limit);
  void RunFor(Clock::Duration d);

  // Invariants once faults healed. Each returns "" or what is wrong.
  // Every cluster of the DIG holds exactly the objects of `rs` (as rsync
  // puts them: the namespace filled in) and nothing else of it.
  std::string ClustersHold(const std::string& dig, const appcontext::ResourceSet& rs);
  std::string ClustersHoldNothing(const std::string& dig);
  // The status module (DigStatus) says every resource reached `state`.
  std::string StatusSays(const std::string& dig, const std::string& state, size_t resources);
  // No context is active, no event pending, no rsync works on anything.
  std::string NothingInFlight();

 private:
  struct Dig {
    std::vector<std::string> clusters;
    std::string status_ctx, instance;
    std::vector<nlohmann::json> actions;
    int64_t revision = 0;
  };
  struct Instance;
  std::string NewContext(const std::string& dig, const appcontext::ResourceSet& rs, const std::string& from);
  void WriteState(const std::string& dig);
  void Step();

  const uint64_t seed_;
  testing::FakeClock clock_;
  Random random_;
  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  Fleet fleet_;
  rsync::Options opts_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::map<std::string, Dig> digs_;
};

// A small app: a Namespace, ConfigMaps in it (values from `version`), and
// a Deployment.
appcontext::ResourceSet App(int configmaps, const std::string& version);

}  // namespace eco::sim
