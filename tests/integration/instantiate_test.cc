// Instantiation end to end through real eco processes: on the embedded
// store, and two eco processes on one etcd racing to instantiate one DIG.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "context_builders.h"
#include "eco_fixture.h"
#include "etcd_fixture.h"
#include "store/etcd_store.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;


const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";

// Two clusters, a level-0 logical cloud, one app placed on both, approved.
void World(EcoClient& c) {
  auto ok = [](const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); };
  ok(c.PostJson("/v2/cluster-providers", Named("prov")));
  for (const char* n : {"edge1", "edge2"}) {
    ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), std::string("kubeconfig")));
    ok(c.PostJson(std::string("/v2/cluster-providers/prov/clusters/") + n + "/labels", json{{"clusterLabel", "edge"}}));
  }
  ok(c.PostJson("/v2/projects", Named("p")));
  ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
  for (const char* n : {"edge1", "edge2"}) {
    ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                  Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
  }
  ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
  ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
  ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), ChartTgz("web")));
  ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
  ok(c.PostJson(kCA + "/deployment-intent-groups",
                Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})));
  ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
  ok(c.PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                Doc("web", {{"app", "web"},
                                 {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
  ok(c.PostJson(kDIG + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
  ok(c.PostJson(kDIG + "/approve", json::object()), 202);
}

TEST(InstantiateIntegration, EmbeddedStoreEndToEnd) {
  EcoServer eco(EcoOptions{});
  ASSERT_TRUE(eco.ready()) << eco.error();
  EcoClient c = eco.client();
  World(c);
  auto r = c.PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe();
  json st = c.Get(kDIG + "/status?status=deployed").json();
  EXPECT_EQ(st["states"]["actions"].back()["state"], "Instantiated");
  // rsync picks it up at once; the clusters' kubeconfigs are not real, so it
  // fails the event (a bad kubeconfig is not worth retrying).
  std::string deployed = st.value("deployedStatus", "");
  EXPECT_TRUE(deployed == "Created" || deployed == "Instantiating" || deployed == "InstantiateFailed")
      << st.dump();
  EXPECT_EQ(c.PostJson(kDIG + "/instantiate", json::object()).status, 409);
  // The plan survives a crash of eco.
  ASSERT_TRUE(eco.Restart()) << eco.error();
  EcoClient c2 = eco.client();
  st = c2.Get(kDIG + "/status?status=deployed").json();
  EXPECT_EQ(st["states"]["actions"].back()["state"], "Instantiated");
  EXPECT_EQ(c2.PostJson(kDIG + "/terminate", json::object()).status, 202);
}

TEST(InstantiateIntegration, TwoEcoProcessesOnOneEtcdMakeOneAppContext) {
  EtcdProcess etcd;
  std::string err = etcd.Start();
  ASSERT_TRUE(err.empty()) << err;
  EcoOptions o;
  o.store = EcoOptions::Store::kEtcd;
  o.etcd_endpoint = etcd.endpoint();
  EcoServer a(o), b(o);
  ASSERT_TRUE(a.ready()) << a.error();
  ASSERT_TRUE(b.ready()) << b.error();
  {
    EcoClient c = a.client();
    World(c);
  }
  std::atomic<int> accepted{0}, conflicts{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      EcoClient c = (i % 2 ? a : b).client();
      int code = c.PostJson(kDIG + "/instantiate", json::object()).status;
      (code == 202 ? accepted : code == 409 ? conflicts : other)++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(conflicts.load(), 7);
  EXPECT_EQ(other.load(), 0);

  auto st = store::OpenEtcdStore(etcd.StoreOptions());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  store::RangeOptions ro;
  ro.keys_only = true;
  auto keys = (*st)->Range("/eco/ac/", ro);
  ASSERT_TRUE(keys.ok());
  std::set<std::string> ids;
  for (auto& kv : keys->kvs) ids.insert(kv.key.substr(8, kv.key.find('/', 8) - 8));
  EXPECT_EQ(ids.size(), 2u);  // the DIG's and the logical cloud's
  json status = a.client().Get(kDIG + "/status").json();
  EXPECT_TRUE(ids.count(status["states"]["statusctxid"].get<std::string>()));
  EXPECT_EQ(status["states"]["actions"].size(), 3u);  // Created, Approved, Instantiated
}

}  // namespace
}  // namespace eco::testing
