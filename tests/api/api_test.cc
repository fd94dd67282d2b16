// Unit tests of the north API engine: requests go straight to Api::Handle
// over a real embedded store in a temp dir (no HTTP).
#include "api/api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "api/archive_check.h"
#include "api/validate.h"
#include "api_test_fixture.h"
#include "process.h"
#include "store/sqlite_store.h"
#include "test_archives.h"

namespace eco::api {
namespace {

using nlohmann::json;

json Body(const Response& r) { return json::parse(r.body); }

TEST(ValidNameTest, FollowsEmcoRule) {
  EXPECT_TRUE(ValidName("a"));
  EXPECT_TRUE(ValidName("web-1.v2_x"));
  EXPECT_FALSE(ValidName(""));
  EXPECT_FALSE(ValidName("-a"));
  EXPECT_FALSE(ValidName("a-"));
  EXPECT_FALSE(ValidName("a/b"));
  EXPECT_FALSE(ValidName("a b"));
  EXPECT_TRUE(ValidName(std::string(128, 'x')));
  EXPECT_FALSE(ValidName(std::string(129, 'x')));
}

TEST(ArchiveCheckTest, AcceptsChartRejectsGarbage) {
  ArchiveLimits lim;
  EXPECT_TRUE(CheckTgz(eco::testing::ChartTgz("web"), lim).ok());
  Status s = CheckTgz("definitely not gzip", lim);
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("gzip"), std::string::npos) << s.message();
  std::string tgz = eco::testing::ChartTgz("web");
  EXPECT_FALSE(CheckTgz(tgz.substr(0, tgz.size() / 2), lim).ok());
  EXPECT_FALSE(CheckTgz(eco::testing::TgzOf({{"../evil", "x"}}), lim).ok());
  lim.max_expanded_bytes = 10;
  EXPECT_FALSE(CheckTgz(eco::testing::TgzOf({{"big", std::string(100, 'a')}}), lim).ok());
}

TEST_F(ApiTest, ProjectLifecycle) {
  EXPECT_EQ(Get("/v2/projects").body, "[]");
  auto r = Post("/v2/projects", {{"metadata", {{"name", "p1"}, {"description", "d"}}}});
  ASSERT_EQ(r.status, 201) << r.body;
  json b = Body(r);
  EXPECT_EQ(b["metadata"]["name"], "p1");
  EXPECT_EQ(b["metadata"]["userData1"], "");  // all four keys echoed
  EXPECT_EQ(Post("/v2/projects", Meta("p1")).status, 409);
  EXPECT_EQ(Get("/v2/projects/p1").status, 200);
  EXPECT_EQ(Body(Get("/v2/projects")).size(), 1u);
  EXPECT_EQ(Get("/v2/projects/nope").status, 404);

  json upd = {{"metadata", {{"name", "p1"}, {"description", "new"}}}};
  EXPECT_EQ(Put("/v2/projects/p1", upd).status, 200);
  EXPECT_EQ(Body(Get("/v2/projects/p1"))["metadata"]["description"], "new");
  EXPECT_EQ(Put("/v2/projects/p2", Meta("p2")).status, 201);
  EXPECT_EQ(Put("/v2/projects/p2", Meta("other")).status, 400);

  EXPECT_EQ(Del("/v2/projects/p1").status, 204);
  EXPECT_EQ(Del("/v2/projects/p1").status, 404);
  EXPECT_EQ(Get("/v2/projects/p1").status, 404);
}

TEST_F(ApiTest, BadBodies) {
  EXPECT_EQ(Call("POST", "/v2/projects", "").status, 400);
  EXPECT_EQ(Call("POST", "/v2/projects", "{not json").status, 422);
  EXPECT_EQ(Call("POST", "/v2/projects", "[1,2]").status, 422);
  EXPECT_EQ(Post("/v2/projects", {{"metadata", {{"name", "bad name"}}}}).status, 400);
  EXPECT_EQ(Post("/v2/projects", {{"metadata", {{"name", 5}}}}).status, 400);
  EXPECT_EQ(Post("/v2/projects", {{"metadata", {{"name", "p"}, {"description", std::string(1025, 'd')}}}}).status, 400);
  auto r = Post("/v2/projects", {{"spec", {}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_FALSE(Body(r)["message"].get<std::string>().empty());
  EXPECT_EQ(Body(r)["code"], 400);
  EXPECT_EQ(Get("/v2/projects/bad%name").status, 400);
  EXPECT_EQ(Get("/v2/nothing-here").status, 404);
  EXPECT_EQ(Call("PATCH", "/v2/projects").status, 405);
}

TEST_F(ApiTest, ParentMissingIs404AndChildrenBlockDelete) {
  json c = Meta("ca");
  c["spec"] = {{"compositeAppVersion", "v1"}};
  EXPECT_EQ(Post("/v2/projects/p/composite-apps", c).status, 404);
  EXPECT_EQ(Get("/v2/projects/p/composite-apps").status, 404);
  MakeProjectAndApp("p", "ca");
  EXPECT_EQ(Get("/v2/projects/p/composite-apps/ca/v1").status, 200);
  EXPECT_EQ(Get("/v2/projects/p/composite-apps/ca/v2").status, 404);
  auto r = Del("/v2/projects/p");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(Body(r)["message"].get<std::string>().find("CompositeApp"), std::string::npos);
  EXPECT_EQ(Del("/v2/projects/p/composite-apps/ca/v1").status, 204);
  EXPECT_EQ(Del("/v2/projects/p").status, 204);
}

TEST_F(ApiTest, AppUploadAndDownload) {
  MakeProjectAndApp("p", "ca");
  const std::string base = "/v2/projects/p/composite-apps/ca/v1/apps";
  std::string chart = eco::testing::ChartTgz("web");
  EXPECT_EQ(Multipart("POST", base, Meta("web"), std::nullopt).status, 422);
  auto bad = Multipart("POST", base, Meta("web"), std::string("garbage"));
  EXPECT_EQ(bad.status, 422);
  EXPECT_NE(Body(bad)["message"].get<std::string>().find("gzip"), std::string::npos);
  ASSERT_EQ(Multipart("POST", base, Meta("web"), chart).status, 201);
  EXPECT_EQ(Multipart("POST", base, Meta("web"), chart).status, 409);

  EXPECT_EQ(Body(Call("GET", base + "/web", "", {}, "application/json"))["metadata"]["name"], "web");
  auto raw = Call("GET", base + "/web", "", {}, "application/octet-stream");
  EXPECT_EQ(raw.status, 200);
  EXPECT_EQ(raw.body, chart);
  auto mp = Call("GET", base + "/web", "", {}, "multipart/form-data");
  EXPECT_EQ(mp.status, 200);
  EXPECT_EQ(mp.content_type.rfind("multipart/form-data; boundary=", 0), 0u);
  EXPECT_NE(mp.body.find(chart), std::string::npos);
  EXPECT_EQ(Call("GET", base + "/web", "", {}, "text/html").status, 406);

  // A replace is whole: without a file it is refused and changes nothing.
  json upd = {{"metadata", {{"name", "web"}, {"description", "v2"}}}};
  EXPECT_EQ(Multipart("PUT", base + "/web", upd, std::nullopt).status, 422);
  std::string chart2 = eco::testing::ChartTgz("web", "v2");
  EXPECT_EQ(Multipart("PUT", base + "/web", upd, chart2).status, 200);
  EXPECT_EQ(Call("GET", base + "/web", "", {}, "application/octet-stream").body, chart2);
  EXPECT_EQ(Body(Call("GET", base + "/web"))["metadata"]["description"], "v2");
}

TEST_F(ApiTest, ReferencesBlockDelete) {
  MakeProjectAndApp("p", "ca");
  const std::string ca = "/v2/projects/p/composite-apps/ca/v1";
  ASSERT_EQ(Multipart("POST", ca + "/apps", Meta("web"), eco::testing::ChartTgz("web")).status, 201);
  ASSERT_EQ(Post(ca + "/composite-profiles", Meta("cp")).status, 201);
  json prof = Meta("web-prof");
  prof["spec"] = {{"app", "web"}};
  std::string ptgz = eco::testing::ProfileTgz();
  ASSERT_EQ(Multipart("POST", ca + "/composite-profiles/cp/profiles", prof, ptgz).status, 201);
  json prof2 = Meta("web-prof2");
  prof2["spec"] = {{"app", "web"}};
  auto dup = Multipart("POST", ca + "/composite-profiles/cp/profiles", prof2, ptgz);
  EXPECT_EQ(dup.status, 409);
  EXPECT_NE(dup.body.find("already has an AppProfile"), std::string::npos);
  auto byapp = Call("GET", ca + "/composite-profiles/cp/profiles", "", {{"app", "web"}});
  EXPECT_EQ(Body(byapp)["metadata"]["name"], "web-prof");

  auto r = Del(ca + "/apps/web");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(Body(r)["message"].get<std::string>().find("AppProfile"), std::string::npos);
  EXPECT_EQ(Del(ca + "/composite-profiles/cp/profiles/web-prof").status, 204);
  EXPECT_EQ(Del(ca + "/apps/web").status, 204);
}

TEST_F(ApiTest, ClusterReferencedByLogicalCloudAndAppIntent) {
  ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  ASSERT_EQ(Multipart("POST", "/v2/cluster-providers/prov/clusters", Meta("edge1"),
                      std::string("apiVersion: v1\nkind: Config\n")).status, 201);
  EXPECT_EQ(Post("/v2/cluster-providers/prov/clusters/edge1/labels", {{"clusterLabel", "east"}}).status, 201);
  EXPECT_EQ(Body(Call("GET", "/v2/cluster-providers/prov/clusters", "", {{"label", "east"}})),
            json::array({"edge1"}));
  auto wl = Body(Call("GET", "/v2/cluster-providers/prov/clusters", "", {{"withLabels", "true"}}));
  EXPECT_EQ(wl[0]["labels"][0]["clusterLabel"], "east");

  MakeProjectAndApp("p", "ca");
  json lc = Meta("lc");
  lc["spec"] = {{"level", "1"}, {"namespace", "ns"}};
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", lc).status, 201);
  json ref = Meta("r1");
  ref["spec"] = {{"clusterProvider", "prov"}, {"cluster", "edge1"}};
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds/lc/cluster-references", ref).status, 201);
  EXPECT_EQ(Del("/v2/cluster-providers/prov/clusters/edge1/labels/east").status, 204);
  auto r = Del("/v2/cluster-providers/prov/clusters/edge1");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(Body(r)["message"].get<std::string>().find("Cluster Reference"), std::string::npos);
  EXPECT_EQ(Del("/v2/projects/p/logical-clouds/lc/cluster-references/r1").status, 204);
  EXPECT_EQ(Del("/v2/cluster-providers/prov/clusters/edge1").status, 204);
  EXPECT_EQ(Del("/v2/cluster-providers/prov").status, 204);
}

TEST_F(ApiTest, DigIntentsAndPlacement) {
  MakeProjectAndApp("p", "ca");
  const std::string ca = "/v2/projects/p/composite-apps/ca/v1";
  ASSERT_EQ(Multipart("POST", ca + "/apps", Meta("web"), eco::testing::ChartTgz("web")).status, 201);
  json lc = Meta("lc");
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", lc).status, 201);
  EXPECT_EQ(Body(Get("/v2/projects/p/logical-clouds/lc"))["spec"]["level"], "1");
  json dig = Meta("dig");
  dig["spec"] = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};
  ASSERT_EQ(Post(ca + "/deployment-intent-groups", dig).status, 201);
  EXPECT_EQ(Body(Get(ca + "/deployment-intent-groups/dig"))["spec"]["overrideValues"], json::array());
  EXPECT_EQ(Put(ca + "/deployment-intent-groups/dig", dig).status, 200);
  EXPECT_EQ(Del("/v2/projects/p/logical-clouds/lc").status, 409);

  const std::string d = ca + "/deployment-intent-groups/dig";
  json ctl = Meta("hpa");
  ctl["spec"] = {{"host", "h"}, {"port", 9099}, {"type", "placement"}, {"priority", 1}};
  ASSERT_EQ(Post("/v2/controllers", ctl).status, 201);
  json in = Meta("intents");
  in["spec"] = {{"intent", {{"genericPlacementIntent", "gpi"}, {"hpa", "h1"}}}};
  ASSERT_EQ(Post(d + "/intents", in).status, 201);
  EXPECT_EQ(Body(Get(d + "/intents"))["intent"][0]["hpa"], "h1");
  EXPECT_EQ(Body(Call("GET", d + "/intents/", "", {{"intent", "intents"}}))["intent"][0]["genericPlacementIntent"], "gpi");
  EXPECT_EQ(Del("/v2/controllers/hpa").status, 409);

  ASSERT_EQ(Post(d + "/generic-placement-intents", Meta("gpi")).status, 201);
  json ai = Meta("web-pl");
  json both = {{"clusterProvider", "prov"}, {"cluster", "c"}, {"clusterLabel", "x"}};
  ai["spec"] = {{"app", "web"}, {"intent", {{"allOf", json::array({both})}}}};
  auto bad = Post(d + "/generic-placement-intents/gpi/app-intents", ai);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("Only one of cluster name or cluster label"), std::string::npos);
  json by_label = {{"clusterProvider", "prov"}, {"clusterLabel", "east"}};
  json by_name = {{"clusterProvider", "prov"}, {"cluster", "e9"}};
  json any = {{"anyOf", json::array({by_name})}};
  ai["spec"]["intent"] = {{"allOf", json::array({by_label, any})}};
  ASSERT_EQ(Post(d + "/generic-placement-intents/gpi/app-intents", ai).status, 201);
  EXPECT_EQ(Body(Call("GET", d + "/generic-placement-intents/gpi/app-intents/", "", {{"app-name", "web"}}))["app"], "web");
  EXPECT_EQ(Del(ca + "/apps/web").status, 409);
  EXPECT_EQ(Del(d + "/generic-placement-intents/gpi").status, 409);
  EXPECT_EQ(Del(d).status, 409);  // children
}

TEST_F(ApiTest, QuotaRefusedOnLevelZeroCloud) {
  ASSERT_EQ(Post("/v2/projects", Meta("p")).status, 201);
  json lc = Meta("lc0");
  lc["spec"] = {{"level", "0"}};
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", lc).status, 201);
  json q = Meta("q");
  q["spec"] = {{"pods", "10"}};
  EXPECT_EQ(Post("/v2/projects/p/logical-clouds/lc0/cluster-quotas", q).status, 400);
  lc = Meta("lc1");
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", lc).status, 201);
  EXPECT_EQ(Post("/v2/projects/p/logical-clouds/lc1/cluster-quotas", q).status, 201);
}

TEST_F(ApiTest, ConcurrentCreatesExactlyOneWins) {
  constexpr int kThreads = 8;
  std::vector<int> codes(kThreads);
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] { codes[i] = Post("/v2/projects", Meta("race")).status; });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 201), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 409), kThreads - 1);
}

TEST_F(ApiTest, DeleteRacingChildCreateNeverOrphans) {
  // Each round: one thread deletes the project while another creates a
  // child under it. Either the child exists (and the project too), or the
  // project is gone and so is every child.
  for (int round = 0; round < 30; ++round) {
    std::string p = "p" + std::to_string(round);
    ASSERT_EQ(Post("/v2/projects", Meta(p)).status, 201);
    json lc = Meta("lc");
    Response del, create;
    std::thread a([&] { del = Del("/v2/projects/" + p); });
    std::thread b([&] { create = Post("/v2/projects/" + p + "/logical-clouds", lc); });
    a.join();
    b.join();
    bool project_exists = Get("/v2/projects/" + p).status == 200;
    bool child_exists = Get("/v2/projects/" + p + "/logical-clouds/lc").status == 200;
    EXPECT_FALSE(child_exists && !project_exists) << "orphan in round " << round;
    EXPECT_EQ(project_exists, del.status != 204);
  }
}

TEST_F(ApiTest, KvPairsAndHealth) {
  ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  ASSERT_EQ(Multipart("POST", "/v2/cluster-providers/prov/clusters", Meta("c1"), std::string("kubeconfig")).status, 201);
  json kv = Meta("gw");
  kv["spec"] = {{"kv", {{{"istioIngressGatewayAddress", "1.2.3.4"}}, {{"port", "32001"}}}}};
  ASSERT_EQ(Post("/v2/cluster-providers/prov/clusters/c1/kv-pairs", kv).status, 201);
  auto v = Call("GET", "/v2/cluster-providers/prov/clusters/c1/kv-pairs/gw", "", {{"key", "port"}});
  EXPECT_EQ(Body(v)["value"], "32001");
  EXPECT_EQ(Call("GET", "/v2/cluster-providers/prov/clusters/c1/kv-pairs/gw", "", {{"key", "zz"}}).status, 404);
  EXPECT_EQ(Del("/v2/cluster-providers/prov/clusters/c1").status, 409);
  auto h = Get("/healthz");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(Body(h)["store"], store_->Backend());
}

}  // namespace
}  // namespace eco::api
