// EMCO's API details that scripts written against EMCO depend on: list
// order, the unknown-route answer, error wording and the query forms'
// shapes (issue 23, item 4).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/api.h"
#include "api_test_fixture.h"
#include "test_archives.h"

namespace eco::api {
namespace {

using nlohmann::json;

json LenientBody(const Response& r) { return json::parse(r.body, nullptr, false); }

std::string Message(const Response& r) {
  json b = LenientBody(r);
  return b.is_object() && b["message"].is_string() ? b["message"].get<std::string>() : "";
}

std::vector<std::string> Names(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list) out.push_back(item["metadata"]["name"].get<std::string>());
  return out;
}

using Strings = std::vector<std::string>;

const std::string kCa = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDig = kCa + "/deployment-intent-groups/dig";

class EmcoDetailsTest : public ApiTest {
 protected:
  // Project p, composite app ca/v1 with app web, logical cloud lc, DIG dig.
  void MakeDig() {
    MakeProjectAndApp("p", "ca");
    ASSERT_EQ(Multipart("POST", kCa + "/apps", Meta("web"), eco::testing::ChartTgz("web")).status, 201);
    ASSERT_EQ(Post("/v2/projects/p/logical-clouds", Meta("lc")).status, 201);
    json dig = Meta("dig");
    dig["spec"] = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};
    ASSERT_EQ(Post(kCa + "/deployment-intent-groups", dig).status, 201);
  }
  void MakeCluster(const std::string& provider, const std::string& name) {
    ASSERT_EQ(Multipart("POST", "/v2/cluster-providers/" + provider + "/clusters", Meta(name),
                        std::string("kubeconfig"))
                  .status,
              201);
  }
};

// EMCO lists what its database holds in insertion order; the store ranges
// in key order, so names chosen against the alphabet tell the two apart.
TEST_F(EmcoDetailsTest, ListsAreInCreationOrder) {
  for (const char* p : {"zeta", "alpha", "mid"}) ASSERT_EQ(Post("/v2/projects", Meta(p)).status, 201);
  EXPECT_EQ(Names(LenientBody(Get("/v2/projects"))), (Strings{"zeta", "alpha", "mid"}));

  // A replace keeps an item's place; a re-created item goes last.
  json alpha = Meta("alpha");
  alpha["metadata"]["description"] = "replaced";
  ASSERT_EQ(Put("/v2/projects/alpha", alpha).status, 200);
  EXPECT_EQ(Names(LenientBody(Get("/v2/projects"))), (Strings{"zeta", "alpha", "mid"}));
  ASSERT_EQ(Del("/v2/projects/zeta").status, 204);
  ASSERT_EQ(Post("/v2/projects", Meta("zeta")).status, 201);
  EXPECT_EQ(Names(LenientBody(Get("/v2/projects"))), (Strings{"alpha", "mid", "zeta"}));

  // Items with two key values (composite app versions) and nested ones.
  for (const char* v : {"v9", "v1", "v5"}) {
    json ca = Meta("ca");
    ca["spec"] = {{"compositeAppVersion", v}};
    ASSERT_EQ(Post("/v2/projects/mid/composite-apps", ca).status, 201);
  }
  Strings versions;
  for (const auto& c : LenientBody(Get("/v2/projects/mid/composite-apps"))) {
    versions.push_back(c["spec"]["compositeAppVersion"].get<std::string>());
  }
  EXPECT_EQ(versions, (Strings{"v9", "v1", "v5"}));

  ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  for (const char* c : {"edge2", "core", "edge1"}) MakeCluster("prov", c);
  EXPECT_EQ(Names(LenientBody(Get("/v2/cluster-providers/prov/clusters"))), (Strings{"edge2", "core", "edge1"}));
  // ?label= names the clusters in the order they were labelled.
  for (const char* c : {"edge1", "core"}) {
    ASSERT_EQ(Post("/v2/cluster-providers/prov/clusters/" + std::string(c) + "/labels",
                   {{"clusterLabel", "east"}})
                  .status,
              201);
  }
  auto labelled = Call("GET", "/v2/cluster-providers/prov/clusters", "", {{"label", "east"}});
  EXPECT_EQ(LenientBody(labelled), json::array({"edge1", "core"})) << labelled.body;
  for (const char* l : {"zz", "aa"}) {
    ASSERT_EQ(Post("/v2/cluster-providers/prov/clusters/core/labels", {{"clusterLabel", l}}).status, 201);
  }
  EXPECT_EQ(LenientBody(Get("/v2/cluster-providers/prov/clusters/core/labels")),
            json::array({json{{"clusterLabel", "east"}}, json{{"clusterLabel", "zz"}}, json{{"clusterLabel", "aa"}}}));
}

TEST_F(EmcoDetailsTest, ControllersAreListedInRegistrationOrder) {
  const Strings order = {"traffic", "hpa-placement", "gac", "a-last"};
  int priority = 10;
  for (const auto& name : order) {
    json c = Meta(name);
    c["spec"] = {{"host", name}, {"port", 9000 + priority}, {"type", "action"}, {"priority", priority--}};
    ASSERT_EQ(Post("/v2/controllers", c).status, 201);
  }
  EXPECT_EQ(Names(LenientBody(Get("/v2/controllers"))), order);
}

TEST_F(EmcoDetailsTest, DigIntentsListAndQueryInCreationOrder) {
  MakeDig();
  for (const char* n : {"second", "first"}) {
    json in = Meta(n);
    in["spec"] = {{"intent", {{"genericPlacementIntent", std::string("gpi-") + n}}}};
    ASSERT_EQ(Post(kDig + "/intents", in).status, 201);
  }
  json all = LenientBody(Get(kDig + "/intents"));
  ASSERT_EQ(all["intent"].size(), 2u) << all;
  EXPECT_EQ(all["intent"][0]["genericPlacementIntent"], "gpi-second");
  EXPECT_EQ(all["intent"][1]["genericPlacementIntent"], "gpi-first");

  // The query form answers EMCO's shape: a list under "intent".
  auto one = Call("GET", kDig + "/intents/", "", {{"intent", "first"}});
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(LenientBody(one), json({{"intent", json::array({{{"genericPlacementIntent", "gpi-first"}}})}}));
  auto none = Call("GET", kDig + "/intents/", "", {{"intent", "ghost"}});
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(Message(none), "Intent not found");
  EXPECT_EQ(Call("GET", kDig + "/intents/", "", {{"intent", ""}}).status, 400);
}

TEST_F(EmcoDetailsTest, AppIntentQueryReadsAppName) {
  MakeDig();
  const std::string ai = kDig + "/generic-placement-intents/gpi/app-intents";
  ASSERT_EQ(Post(kDig + "/generic-placement-intents", Meta("gpi")).status, 201);
  json pl = Meta("web-pl");
  json term = {{"clusterProvider", "prov"}, {"clusterLabel", "east"}};
  pl["spec"] = {{"app", "web"}, {"intent", {{"allOf", json::array({term})}}}};
  ASSERT_EQ(Post(ai, pl).status, 201);

  // EMCO's route needs app=, its handler reads app-name.
  auto only_app = Call("GET", ai + "/", "", {{"app", "web"}});
  EXPECT_EQ(only_app.status, 400) << only_app.body;
  EXPECT_NE(Message(only_app).find("Missing appName in GET request"), std::string::npos) << only_app.body;
  auto found = Call("GET", ai + "/", "", {{"app", "web"}, {"app-name", "web"}});
  ASSERT_EQ(found.status, 200) << found.body;
  EXPECT_EQ(LenientBody(found), pl["spec"]);
  auto unknown = Call("GET", ai + "/", "", {{"app", "db"}, {"app-name", "db"}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(Message(unknown), "AppIntent not found");
  // No query: the list.
  EXPECT_EQ(Names(LenientBody(Get(ai))), (Strings{"web-pl"}));
}

TEST_F(EmcoDetailsTest, UnknownRouteIsGosNotFound) {
  for (const char* path : {"/v2/no-such-thing", "/v2/projects/p/composite-apps/ca/v1/nope/x/y", "/v3/projects"}) {
    auto r = Get(path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.content_type, "application/json") << path;
    EXPECT_EQ(LenientBody(r)["code"], 404) << r.body;
    EXPECT_NE(Message(r).find("404 page not found"), std::string::npos) << r.body;
  }
  // A missing resource on a real route keeps its own message.
  EXPECT_EQ(Message(Get("/v2/projects/ghost")), "Project not found");
}

// Each message must contain what EMCO says for the same condition
// (emco.md 2.0.1, 2.2, 2.3): scripts grep for these strings.
TEST_F(EmcoDetailsTest, ErrorMessagesContainEmcosWording) {
  MakeDig();
  ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  MakeCluster("prov", "c1");
  const std::string cl = "/v2/cluster-providers/prov/clusters/c1";
  ASSERT_EQ(Post(cl + "/labels", {{"clusterLabel", "east"}}).status, 201);
  json kv = Meta("gw");
  kv["spec"] = {{"kv", json::array({{{"k", "v"}}})}};
  ASSERT_EQ(Post(cl + "/kv-pairs", kv).status, 201);
  ASSERT_EQ(Post("/v2/cluster-providers/prov/cluster-sync-objects", kv).status, 201);
  json dig = Meta("dig");
  dig["spec"] = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};

  struct Case {
    Response r;
    int code;
    std::string text;
  };
  json no_name = {{"metadata", {{"description", "x"}}}};
  json lc_other = Meta("other");
  std::vector<Case> cases = {
      {Post("/v2/cluster-providers", Meta("prov")), 409, "ClusterProvider already exists"},
      {Get("/v2/cluster-providers/ghost"), 404, "Cluster provider not found"},
      {Multipart("POST", "/v2/cluster-providers/prov/clusters", Meta("c1"), std::string("kubeconfig")), 409,
       "Cluster already exists"},
      {Get("/v2/cluster-providers/prov/clusters/ghost"), 404, "Cluster not found"},
      {Post(cl + "/labels", {{"clusterLabel", "east"}}), 409, "Cluster Label already exists"},
      {Get(cl + "/labels/ghost"), 404, "Cluster label not found"},
      {Post(cl + "/labels", json::object()), 400, "Missing label name in POST request"},
      {Put(cl + "/labels/east", {{"clusterLabel", "west"}}), 400, "Mismatched label name in PUT request"},
      {Post(cl + "/kv-pairs", kv), 409, "Cluster KV Pair already exists"},
      {Get(cl + "/kv-pairs/ghost"), 404, "Cluster key value pair not found"},
      {Post("/v2/cluster-providers/prov/cluster-sync-objects", kv), 409, "Cluster Sync Objects already exists"},
      {Get("/v2/cluster-providers/prov/cluster-sync-objects/ghost"), 404, "Cluster sync object not found"},
      {Post("/v2/cluster-providers", no_name), 400, "Missing name in POST request"},
      {Put("/v2/projects/p", no_name), 400, "Missing name in PUT request"},
      {Post("/v2/projects", Meta("p")), 409, "Project already exists"},
      {Get("/v2/projects/ghost"), 404, "Project not found"},
      {Post(kCa + "/deployment-intent-groups", dig), 409, "DeploymentIntent already exists"},
      {Get(kCa + "/deployment-intent-groups/ghost"), 404, "DeploymentIntentGroup not found"},
      {Multipart("POST", kCa + "/apps", Meta("web"), eco::testing::ChartTgz("web")), 409, "App already exists"},
      {Get(kCa + "/apps/ghost"), 404, "App not found"},
      {Post("/v2/projects/p/logical-clouds", Meta("lc")), 409, "Logical Cloud already exists"},
      {Get("/v2/projects/p/logical-clouds/ghost"), 404, "Logical Cloud not found"},
      {Put("/v2/projects/p/logical-clouds/lc", lc_other), 400, "Logical Cloud name mismatch"},
      {Put("/v2/projects/p", Meta("q")), 400, "Mismatched name in PUT request"},
      {Get(kDig + "/generic-placement-intents/ghost"), 404, "GenericPlacementIntent not found"},
      {Get("/v2/controllers/ghost"), 404, "Controller not found"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.r.status, c.code) << c.text << ": " << c.r.body;
    EXPECT_NE(Message(c.r).find(c.text), std::string::npos) << "want \"" << c.text << "\" in " << c.r.body;
  }
}

// A level-0 cloud's namespace is what the user gave ("" when nothing)
// until instantiate fills it in from the clusters, as dcm does (EMCO's API
// suite: test_postLogicalClouds, test_getLogicalClouds,
// test_getLogicalCloudsByName; scheduler's lifecycle_test covers instantiate).
TEST_F(EmcoDetailsTest, LevelZeroLogicalCloudNamespaceIsAsGivenBeforeInstantiate) {
  MakeProjectAndApp("p", "ca");
  json lc0 = Meta("admin");
  lc0["spec"] = {{"level", "0"}};
  auto r = Post("/v2/projects/p/logical-clouds", lc0);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(LenientBody(r)["spec"]["namespace"], "") << r.body;
  EXPECT_EQ(LenientBody(Get("/v2/projects/p/logical-clouds/admin"))["spec"]["namespace"], "");
  EXPECT_EQ(LenientBody(Get("/v2/projects/p/logical-clouds"))[0]["spec"]["namespace"], "");
  // One the user names is kept.
  json named = Meta("named");
  named["spec"] = {{"level", "0"}, {"namespace", "ops"}};
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", named).status, 201);
  EXPECT_EQ(LenientBody(Get("/v2/projects/p/logical-clouds/named"))["spec"]["namespace"], "ops");
  // Level 1 alike: its namespace is the user's to name.
  json lc1 = Meta("std");
  lc1["spec"] = {{"level", "1"}};
  ASSERT_EQ(Post("/v2/projects/p/logical-clouds", lc1).status, 201);
  EXPECT_EQ(LenientBody(Get("/v2/projects/p/logical-clouds/std"))["spec"]["namespace"], "");
}

// EMCO's API suite compares whole bodies: its logical clouds as sent and
// answered (test_postLogicalClouds, test_getLogicalClouds,
// test_getLogicalCloudsByName), null labels and empty user included.
TEST_F(EmcoDetailsTest, LogicalCloudBodiesAreEmcoApiSuites) {
  ASSERT_EQ(Post("/v2/projects", Meta("proj1")).status, 201);
  const json lc0 = json::parse(R"({"metadata": {"name": "default", "description": "default description",
      "userData1": "data1", "userData2": "data2"},
    "spec": {"labels": null, "level": "0", "namespace": "", "user": {"userName": "", "type": ""}}})");
  const json lc1 = json::parse(R"({"metadata": {"name": "lc1", "description": "lc1 description",
      "userData1": "data1", "userData2": "data2"},
    "spec": {"namespace": "ns1", "labels": null, "level": "1", "user": {"userName": "user-1", "type": "certificate"}}})");
  auto r = Post("/v2/projects/proj1/logical-clouds", lc0);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(LenientBody(r), lc0);
  r = Post("/v2/projects/proj1/logical-clouds", lc1);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(LenientBody(r), lc1);
  EXPECT_EQ(LenientBody(Get("/v2/projects/proj1/logical-clouds")), json::array({lc0, lc1}));
  EXPECT_EQ(LenientBody(Get("/v2/projects/proj1/logical-clouds/default")), lc0);
  EXPECT_EQ(LenientBody(Get("/v2/projects/proj1/logical-clouds/lc1")), lc1);
}

}  // namespace
}  // namespace eco::api
