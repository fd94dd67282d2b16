// Logical clouds and their sub-collections: cluster references, user
// permissions, cluster quotas, kv-pairs.
#include <string>

#include "api_env.h"

namespace eco::testing {
namespace {

using LogicalCloudsTest = ApiTest;

const json kLevel1 = json::parse(R"({"namespace":"ns1","level":"1","labels":{"geo":"eu"},
    "user":{"userName":"user-1","type":"certificate"}})");

TEST_P(LogicalCloudsTest, LogicalClouds) {
  const std::string proj = MakeProject();
  const std::string coll = proj + "/logical-clouds";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  HttpResponse r = c().PostJson(coll, Meta("lc1", kLevel1));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "lc1"));
  EXPECT_EQ(r.json()["spec"]["namespace"], "ns1");
  EXPECT_EQ(r.json()["spec"]["level"], "1");
  EXPECT_EQ(r.json()["spec"]["labels"], kLevel1["labels"]);
  EXPECT_EQ(r.json()["spec"]["user"], kLevel1["user"]);
  EXPECT_ERROR(c().PostJson(coll, Meta("lc1", kLevel1)), 409, "already exists");
  EXPECT_STATUS(c().PostJson(coll, Meta("lc0", {{"level", "0"}})), 201);
  EXPECT_EQ(MustGet(coll + "/lc0")["spec"]["level"], "0");
  EXPECT_EQ(MustGet(coll + "/lc1")["spec"]["user"]["userName"], "user-1");
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 2));

  json s2 = kLevel1;
  s2["labels"] = {{"geo", "us"}};
  EXPECT_STATUS(c().PutJson(coll + "/lc1", Meta("lc1", s2)), 200);
  EXPECT_EQ(MustGet(coll + "/lc1")["spec"]["labels"]["geo"], "us");
  EXPECT_STATUS(c().PutJson(coll + "/lc2", Meta("lc2", kLevel1)), 201);
  EXPECT_ERROR(c().PutJson(coll + "/lc1", Meta("lc2", kLevel1)), 400);

  auto bad = [&](json s) { return c().PostJson(coll, Meta(Name("lc"), std::move(s))); };
  json b = kLevel1;
  b["level"] = "7";
  EXPECT_ERROR(bad(b), 400);
  b["level"] = 1;
  EXPECT_ERROR(bad(b), 400);
  b = kLevel1;
  b["labels"] = {{"geo", 5}};
  EXPECT_ERROR(bad(b), 400);
  b = kLevel1;
  b["namespace"] = std::string(129, 'n');
  EXPECT_ERROR(bad(b), 400);
  b = kLevel1;
  b["user"] = "user-1";
  EXPECT_ERROR(bad(b), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta("-lc", kLevel1)), 400);
  EXPECT_ERROR(c().PostRaw(coll, ""), 400);
  EXPECT_ERROR(c().PostRaw(coll, "{{"), 422);

  const std::string ghost = "/v2/projects/" + Name("ghost") + "/logical-clouds";
  EXPECT_ERROR(c().PostJson(ghost, Meta("lc1", kLevel1)), 404);
  EXPECT_ERROR(c().Get(ghost, kAcceptJson), 404);
  EXPECT_ERROR(c().Get(coll + "/ghost", kAcceptJson), 404, "not found");

  EXPECT_ERROR(c().Delete(proj), 409);  // has logical clouds
  for (const char* n : {"lc0", "lc1", "lc2"}) MustDelete(coll + "/" + n);
  EXPECT_ERROR(c().Delete(coll + "/lc0"), 404);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));
  MustDelete(proj);
}

TEST_P(LogicalCloudsTest, ClusterReferences) {
  const std::string proj = MakeProject();
  const std::string prov = MakeProvider();
  const std::string pn = LastSegment(prov);
  const std::string edge1 = MakeCluster(prov, "edge1");
  MakeCluster(prov, "edge2");
  const std::string lc = proj + "/logical-clouds/lc1";
  MustCreate(proj + "/logical-clouds", Meta("lc1", kLevel1));

  const std::string coll = lc + "/cluster-references";
  // EMCO answers 400 for an empty list; the contract says [].
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));
  const json spec = {{"clusterProvider", pn}, {"cluster", "edge1"}, {"loadBalancerIP", "0.0.0.0"}};
  HttpResponse r = c().PostJson(coll, Meta("ref-1", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "ref-1"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("ref-1", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/ref-1")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  json s2 = {{"clusterProvider", pn}, {"cluster", "edge2"}};
  EXPECT_STATUS(c().PutJson(coll + "/ref-2", Meta("ref-2", s2)), 201);
  s2["loadBalancerIP"] = "10.0.0.1";
  EXPECT_STATUS(c().PutJson(coll + "/ref-2", Meta("ref-2", s2)), 200);
  EXPECT_EQ(MustGet(coll + "/ref-2")["spec"]["loadBalancerIP"], "10.0.0.1");
  EXPECT_ERROR(c().PutJson(coll + "/ref-2", Meta("ref-1", s2)), 400);

  auto bad = [&](json s) { return c().PostJson(coll, Meta(Name("ref"), std::move(s))); };
  EXPECT_ERROR(bad({{"cluster", "edge1"}}), 400);
  EXPECT_ERROR(bad({{"clusterProvider", pn}}), 400);
  EXPECT_ERROR(bad({{"clusterProvider", pn}, {"cluster", 1}}), 400);
  EXPECT_ERROR(bad({{"clusterProvider", pn},
                    {"cluster", "edge1"},
                    {"loadBalancerIP", std::string(17, '1')}}),
               400);
  EXPECT_ERROR(c().PostJson(proj + "/logical-clouds/ghost/cluster-references", Meta("r", spec)),
               404);

  // The referenced cluster stays; the logical cloud has children.
  EXPECT_ERROR(c().Delete(edge1), 409);
  EXPECT_STATUS(c().Get(edge1, kAcceptJson), 200);
  EXPECT_ERROR(c().Delete(lc), 409);
  MustDelete(coll + "/ref-1");
  EXPECT_ERROR(c().Get(coll + "/ref-1", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(coll + "/ref-1"), 404);
  MustDelete(edge1);
  MustDelete(coll + "/ref-2");
  MustDelete(lc);
}

TEST_P(LogicalCloudsTest, UserPermissions) {
  const std::string proj = MakeProject();
  const std::string lc = proj + "/logical-clouds/lc1";
  MustCreate(proj + "/logical-clouds", Meta("lc1", kLevel1));
  const std::string coll = lc + "/user-permissions";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const json spec = json::parse(R"({"namespace":"ns1","apiGroups":["","apps","k8splugin.io"],
      "resources":["secrets","pods","configmaps","services","deployments"],
      "verbs":["get","watch","list","create"]})");
  HttpResponse r = c().PostJson(coll, Meta("perm-1", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "perm-1"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("perm-1", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/perm-1")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  json s2 = spec;
  s2["verbs"] = {"get"};
  EXPECT_STATUS(c().PutJson(coll + "/perm-1", Meta("perm-1", s2)), 200);
  EXPECT_EQ(MustGet(coll + "/perm-1")["spec"]["verbs"], json({"get"}));
  EXPECT_STATUS(c().PutJson(coll + "/perm-2", Meta("perm-2", s2)), 201);
  EXPECT_ERROR(c().PutJson(coll + "/perm-2", Meta("perm-1", s2)), 400);

  auto bad = [&](json s) { return c().PostJson(coll, Meta(Name("perm"), std::move(s))); };
  json b = spec;
  b["verbs"] = "get";
  EXPECT_ERROR(bad(b), 400);
  b = spec;
  b["apiGroups"] = {1, 2};
  EXPECT_ERROR(bad(b), 400);
  b = spec;
  b["namespace"] = 3;
  EXPECT_ERROR(bad(b), 400);
  EXPECT_ERROR(c().PostJson(proj + "/logical-clouds/ghost/user-permissions", Meta("p", spec)), 404);

  EXPECT_ERROR(c().Delete(lc), 409);
  MustDelete(coll + "/perm-1");
  EXPECT_ERROR(c().Delete(coll + "/perm-1"), 404);
  EXPECT_ERROR(c().Get(coll + "/perm-1", kAcceptJson), 404, "not found");
  MustDelete(coll + "/perm-2");
  MustDelete(lc);
}

TEST_P(LogicalCloudsTest, ClusterQuotas) {
  const std::string proj = MakeProject();
  const std::string lcs = proj + "/logical-clouds";
  MustCreate(lcs, Meta("lc1", kLevel1));
  MustCreate(lcs, Meta("lc0", {{"level", "0"}}));
  const std::string coll = lcs + "/lc1/cluster-quotas";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const json spec = {{"limits.cpu", "400"},
                     {"requests.memory", "900Gi"},
                     {"pods", "500"},
                     {"count/deployments.apps", "10"}};
  HttpResponse r = c().PostJson(coll, Meta("quota-1", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "quota-1"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("quota-1", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/quota-1")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  EXPECT_STATUS(c().PutJson(coll + "/quota-1", Meta("quota-1", {{"pods", "5"}})), 200);
  EXPECT_EQ(MustGet(coll + "/quota-1")["spec"]["pods"], "5");
  EXPECT_STATUS(c().PutJson(coll + "/quota-2", Meta("quota-2", spec)), 201);
  EXPECT_ERROR(c().PutJson(coll + "/quota-2", Meta("quota-1", spec)), 400);

  EXPECT_ERROR(c().PostJson(coll, Meta(Name("q"), {{"pods", 5}})), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("q"), {{"pods", std::string(129, '9')}})), 400);
  // Quotas are meaningless on a level-0 (admin) logical cloud.
  EXPECT_ERROR(c().PostJson(lcs + "/lc0/cluster-quotas", Meta("quota-1", spec)), 400);
  EXPECT_ERROR(c().PostJson(lcs + "/ghost/cluster-quotas", Meta("quota-1", spec)), 404);

  EXPECT_ERROR(c().Delete(lcs + "/lc1"), 409);
  MustDelete(coll + "/quota-1");
  EXPECT_ERROR(c().Delete(coll + "/quota-1"), 404);
  MustDelete(coll + "/quota-2");
  MustDelete(lcs + "/lc1");
}

TEST_P(LogicalCloudsTest, KvPairs) {
  const std::string proj = MakeProject();
  const std::string lc = proj + "/logical-clouds/lc1";
  MustCreate(proj + "/logical-clouds", Meta("lc1", kLevel1));
  const std::string coll = lc + "/kv-pairs";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const json spec = json::parse(R"({"kv":[{"owner":"team-a"},{"tier":"gold"}]})");
  HttpResponse r = c().PostJson(coll, Meta("info", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "info"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("info", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/info")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));
  EXPECT_STATUS(c().PutJson(coll + "/info", Meta("info", {{"kv", {{{"owner", "team-b"}}}}})), 200);
  EXPECT_EQ(MustGet(coll + "/info")["spec"]["kv"][0]["owner"], "team-b");
  EXPECT_STATUS(c().PutJson(coll + "/info2", Meta("info2", spec)), 201);
  EXPECT_ERROR(c().PutJson(coll + "/info2", Meta("info", spec)), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("kv"), json::object())), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("kv"), {{"kv", 4}})), 400);
  EXPECT_ERROR(c().PostJson(proj + "/logical-clouds/ghost/kv-pairs", Meta("k", spec)), 404);

  EXPECT_ERROR(c().Delete(lc), 409);
  MustDelete(coll + "/info");
  EXPECT_ERROR(c().Delete(coll + "/info"), 404);
  EXPECT_ERROR(c().Get(coll + "/info", kAcceptJson), 404);
  MustDelete(coll + "/info2");
  MustDelete(lc);
  MustDelete(proj);
}

// dcm fills a level-0 cloud's namespace from the clusters' level-0
// cloudConfig ("default") at instantiate: "" before, "default" from then on.
TEST_P(LogicalCloudsTest, LevelZeroNamespaceIsFilledInAtInstantiate) {
  const std::string proj = MakeProject();
  const std::string prov = MakeProvider();
  const std::string cluster = Name("edge");
  MakeCluster(prov, cluster);
  const std::string lc = proj + "/logical-clouds/" + Name("admin");
  json created = MustCreate(proj + "/logical-clouds", Meta(lc.substr(lc.rfind('/') + 1), {{"level", "0"}}));
  EXPECT_EQ(created["spec"]["namespace"], "") << created;
  MustCreate(lc + "/cluster-references",
             Meta("ref", {{"clusterProvider", prov.substr(prov.rfind('/') + 1)}, {"cluster", cluster}}));
  EXPECT_EQ(MustGet(lc)["spec"]["namespace"], "");

  EXPECT_STATUS(c().PostJson(lc + "/instantiate", json::object()), 202);
  EXPECT_EQ(MustGet(lc)["spec"]["namespace"], "default");
  // Terminate is refused (409) until the empty-shell AppContext is done.
  int code = 0;
  WaitUntil([&] { return (code = c().PostJson(lc + "/terminate", json::object()).status) != 409; },
            std::chrono::seconds(30));
  ASSERT_EQ(code, 202);
  EXPECT_EQ(MustGet(lc)["spec"]["namespace"], "default");
  // Once terminated, the reference and then the cloud can go.
  WaitUntil([&] { return c().Delete(lc + "/cluster-references/ref").status != 409; }, std::chrono::seconds(30));
  MustDelete(lc);
}

ECO_INSTANTIATE_FOR_STORES(LogicalCloudsTest);

}  // namespace
}  // namespace eco::testing
