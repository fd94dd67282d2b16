// Cluster registration: providers, clusters (kubeconfig upload), labels,
// kv-pairs, and the label queries.
#include <algorithm>
#include <string>

#include "api_env.h"

namespace eco::testing {
namespace {

using ClustersTest = ApiTest;

TEST_P(ClustersTest, Providers) {
  const std::string name = Name("prov");
  const std::string item = "/v2/cluster-providers/" + name;
  HttpResponse r = c().PostJson("/v2/cluster-providers", Meta(name));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), name));
  EXPECT_ERROR(c().PostJson("/v2/cluster-providers", Meta(name)), 409, "already exists");
  EXPECT_TRUE(HasFullMetadata(MustGet(item), name));
  HttpResponse list = c().Get("/v2/cluster-providers", kAcceptJson);
  ASSERT_STATUS(list, 200);
  ASSERT_TRUE(list.json().is_array());

  json rep = Meta(name);
  rep["metadata"]["description"] = "east coast";
  EXPECT_STATUS(c().PutJson(item, rep), 200);
  EXPECT_EQ(MustGet(item)["metadata"]["description"], "east coast");
  const std::string other = Name("prov");
  EXPECT_STATUS(c().PutJson("/v2/cluster-providers/" + other, Meta(other)), 201);
  EXPECT_ERROR(c().PutJson(item, Meta(other)), 400);

  EXPECT_ERROR(c().PostJson("/v2/cluster-providers", Meta("bad name")), 400);
  EXPECT_ERROR(c().PostRaw("/v2/cluster-providers", ""), 400);
  EXPECT_ERROR(c().PostRaw("/v2/cluster-providers", "{]"), 422);

  // A provider with clusters cannot go.
  MakeCluster(item, "c1");
  EXPECT_ERROR(c().Delete(item), 409);
  MustDelete(item + "/clusters/c1");
  EXPECT_STATUS(c().Delete(item), 204);
  EXPECT_ERROR(c().Get(item, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(item), 404);
  MustDelete("/v2/cluster-providers/" + other);
}

TEST_P(ClustersTest, ClustersUploadAndRepresentations) {
  const std::string prov = MakeProvider();
  const std::string coll = prov + "/clusters";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const std::string kc = Kubeconfig("edge1");
  HttpResponse r = c().PostMultipart(coll, Meta("edge1").dump(), kc, "kubeconfig");
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "edge1"));
  EXPECT_ERROR(c().PostMultipart(coll, Meta("edge1").dump(), kc), 409, "already exists");

  const std::string item = coll + "/edge1";
  for (const auto& h : {kAcceptJson, kAcceptAny, httplib::Headers{}}) {
    HttpResponse g = c().Get(item, h);
    EXPECT_STATUS(g, 200);
    EXPECT_TRUE(HasFullMetadata(g.json(), "edge1")) << g.Describe();
  }
  HttpResponse raw = c().Get(item, kAcceptOctet);
  EXPECT_STATUS(raw, 200);
  EXPECT_EQ(raw.body, kc);
  HttpResponse mp = c().Get(item, kAcceptMultipart);
  EXPECT_STATUS(mp, 200);
  auto parts = ParseMultipart(mp.content_type(), mp.body);
  ASSERT_TRUE(parts.has_value()) << mp.Describe();
  auto find = [&](const std::string& n) {
    return std::find_if(parts->begin(), parts->end(),
                        [&](const FormPart& p) { return p.name == n; });
  };
  ASSERT_NE(find("metadata"), parts->end());
  ASSERT_NE(find("file"), parts->end());
  EXPECT_TRUE(HasFullMetadata(json::parse(find("metadata")->content, nullptr, false), "edge1"));
  EXPECT_EQ(find("file")->content, kc);
  EXPECT_ERROR(c().Get(item, kAcceptHtml), 406);

  // Binary kubeconfig bytes survive unchanged too (the API must not treat
  // the file as text).
  std::string binary = RandomBytes(5000, 3);
  binary[10] = '\0';
  binary[11] = '\r';
  binary[12] = '\n';
  EXPECT_STATUS(c().PostMultipart(coll, Meta("edge2").dump(), binary), 201);
  EXPECT_TRUE(c().Get(coll + "/edge2", kAcceptOctet).body == binary);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 2));

  // PUT replaces metadata and kubeconfig (200) or creates (201).
  const std::string kc2 = Kubeconfig("edge1-rotated");
  json rep = Meta("edge1");
  rep["metadata"]["description"] = "rotated";
  EXPECT_STATUS(c().PutMultipart(item, rep.dump(), kc2), 200);
  EXPECT_EQ(c().Get(item, kAcceptOctet).body, kc2);
  EXPECT_EQ(MustGet(item)["metadata"]["description"], "rotated");
  // A PUT must carry the kubeconfig like a POST; a rejected one changes nothing.
  EXPECT_ERROR(c().PutMultipart(item, Meta("edge1").dump(), std::nullopt), 422);
  EXPECT_EQ(c().Get(item, kAcceptOctet).body, kc2);
  EXPECT_EQ(MustGet(item)["metadata"]["description"], "rotated");
  EXPECT_ERROR(c().PutMultipart(coll + "/edge3", Meta("edge3").dump(), std::nullopt), 422);
  EXPECT_STATUS(c().PutMultipart(coll + "/edge3", Meta("edge3").dump(), Kubeconfig("edge3")), 201);
  EXPECT_ERROR(c().PutMultipart(item, Meta("edge3").dump(), kc), 400);

  // Upload errors, none of which creates the cluster.
  EXPECT_ERROR(c().PostMultipart(coll, Meta("edge9").dump(), std::nullopt), 422);
  EXPECT_ERROR(c().PostMultipart(coll, "{\"metadata\":{", kc), 422);
  EXPECT_ERROR(c().PostMultipart(coll, "", kc), 400);
  EXPECT_ERROR(c().PostMultipart(coll, Meta("-edge9").dump(), kc), 400);
  EXPECT_ERROR(c().Get(coll + "/edge9", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Get(coll + "/edge9", kAcceptOctet), 404);

  // Missing provider.
  const std::string ghost = "/v2/cluster-providers/" + Name("ghost") + "/clusters";
  EXPECT_ERROR(c().PostMultipart(ghost, Meta("edge1").dump(), kc), 404);
  EXPECT_ERROR(c().Get(ghost, kAcceptJson), 404);

  for (const char* n : {"edge1", "edge2", "edge3"}) MustDelete(coll + "/" + n);
  EXPECT_ERROR(c().Delete(item), 404);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));
  MustDelete(prov);
}

TEST_P(ClustersTest, LabelsAndLabelQueries) {
  const std::string prov = MakeProvider();
  const std::string c1 = MakeCluster(prov, "c1");
  const std::string c2 = MakeCluster(prov, "c2");
  MakeCluster(prov, "c3");

  const std::string labels = c1 + "/labels";
  EXPECT_TRUE(IsJsonArray(c().Get(labels, kAcceptJson), 0));
  HttpResponse r = c().PostJson(labels, {{"clusterLabel", "edge"}});
  ASSERT_STATUS(r, 201);
  EXPECT_EQ(r.json(), json({{"clusterLabel", "edge"}}));
  EXPECT_ERROR(c().PostJson(labels, {{"clusterLabel", "edge"}}), 409, "already exists");
  EXPECT_EQ(MustGet(labels + "/edge"), json({{"clusterLabel", "edge"}}));
  EXPECT_STATUS(c().PostJson(labels, {{"clusterLabel", "east"}}), 201);
  EXPECT_STATUS(c().PostJson(c2 + "/labels", {{"clusterLabel", "edge"}}), 201);
  EXPECT_TRUE(IsJsonArray(c().Get(labels, kAcceptJson), 2));

  // PUT: create 201, replace 200, mismatch 400.
  EXPECT_STATUS(c().PutJson(labels + "/west", {{"clusterLabel", "west"}}), 201);
  EXPECT_STATUS(c().PutJson(labels + "/west", {{"clusterLabel", "west"}}), 200);
  EXPECT_ERROR(c().PutJson(labels + "/west", {{"clusterLabel", "north"}}), 400);

  // Schema.
  EXPECT_ERROR(c().PostJson(labels, json::object()), 400);
  EXPECT_ERROR(c().PostJson(labels, {{"clusterLabel", ""}}), 400);
  EXPECT_ERROR(c().PostJson(labels, {{"clusterLabel", "-x"}}), 400);
  EXPECT_ERROR(c().PostJson(labels, {{"clusterLabel", std::string(129, 'l')}}), 400);
  EXPECT_ERROR(c().PostJson(labels, {{"clusterLabel", 7}}), 400);
  EXPECT_ERROR(c().PostRaw(labels, ""), 400);
  EXPECT_ERROR(c().PostRaw(labels, "{\"clusterLabel\""), 422);
  EXPECT_ERROR(c().PostJson(prov + "/clusters/ghost/labels", {{"clusterLabel", "x"}}), 404);
  EXPECT_ERROR(c().Get(labels + "/ghost", kAcceptJson), 404, "not found");

  // ?label= lists the names of the provider's clusters carrying the label.
  HttpResponse q = c().Get(prov + "/clusters?label=edge", kAcceptJson);
  ASSERT_STATUS(q, 200);
  json names = q.json();
  ASSERT_TRUE(names.is_array()) << q.Describe();
  std::vector<std::string> got;
  for (const auto& n : names) got.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"c1", "c2"})) << q.Describe();
  EXPECT_EQ(c().Get(prov + "/clusters?label=east", kAcceptJson).json(), json({"c1"}));
  EXPECT_TRUE(IsJsonArray(c().Get(prov + "/clusters?label=nowhere", kAcceptJson), 0));

  // ?withLabels=true: every cluster with its labels.
  HttpResponse wl = c().Get(prov + "/clusters?withLabels=true", kAcceptJson);
  EXPECT_TRUE(IsJsonArray(wl, 3));
  for (const auto& cl : wl.json()) {
    ASSERT_TRUE(cl.contains("metadata") && cl.contains("labels")) << cl.dump();
    std::vector<std::string> ls;
    for (const auto& l : cl["labels"]) ls.push_back(l.value("clusterLabel", "?"));
    std::sort(ls.begin(), ls.end());
    const std::string n = cl["metadata"].value("name", "");
    if (n == "c1") {
      EXPECT_EQ(ls, (std::vector<std::string>{"east", "edge", "west"}));
    } else if (n == "c2") {
      EXPECT_EQ(ls, (std::vector<std::string>{"edge"}));
    } else {
      EXPECT_EQ(n, "c3");
      EXPECT_TRUE(ls.empty()) << cl.dump();
    }
  }

  // A cluster with labels has children.
  EXPECT_ERROR(c().Delete(c2), 409);
  MustDelete(c2 + "/labels/edge");
  EXPECT_ERROR(c().Get(c2 + "/labels/edge", kAcceptJson), 404);
  EXPECT_ERROR(c().Delete(c2 + "/labels/edge"), 404);
  EXPECT_EQ(c().Get(prov + "/clusters?label=edge", kAcceptJson).json(), json({"c1"}));
  MustDelete(c2);
}

TEST_P(ClustersTest, KvPairs) {
  const std::string prov = MakeProvider();
  const std::string cl = MakeCluster(prov, "c1");
  const std::string coll = cl + "/kv-pairs";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const json spec = json::parse(R"({"kv":[{"istioIngressGatewayAddress":"192.168.1.10"},
      {"istioIngressGatewayPort":"32001"},{"a":"1","b":"2"}]})");
  HttpResponse r = c().PostJson(coll, Meta("istio-gw", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "istio-gw"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("istio-gw", spec)), 409, "already exists");
  const std::string item = coll + "/istio-gw";
  EXPECT_EQ(MustGet(item)["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  EXPECT_EQ(c().Get(item + "?key=istioIngressGatewayPort", kAcceptJson).json(),
            json({{"value", "32001"}}));
  EXPECT_EQ(c().Get(item + "?key=b", kAcceptJson).json(), json({{"value", "2"}}));
  EXPECT_ERROR(c().Get(item + "?key=nope", kAcceptJson), 404);

  json spec2 = {{"kv", {{{"only", "one"}}}}};
  EXPECT_STATUS(c().PutJson(item, Meta("istio-gw", spec2)), 200);
  EXPECT_EQ(c().Get(item + "?key=only", kAcceptJson).json(), json({{"value", "one"}}));
  EXPECT_ERROR(c().Get(item + "?key=b", kAcceptJson), 404);
  EXPECT_STATUS(c().PutJson(coll + "/second", Meta("second", spec)), 201);
  EXPECT_ERROR(c().PutJson(item, Meta("second", spec)), 400);

  auto bad = [&](json s) { return c().PostJson(coll, Meta(Name("kv"), std::move(s))); };
  EXPECT_ERROR(bad(json::object()), 400);
  EXPECT_ERROR(bad({{"kv", "a=b"}}), 400);
  EXPECT_ERROR(bad({{"kv", {{{"k", std::string(129, 'v')}}}}}), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta("-kv", spec)), 400);
  EXPECT_ERROR(c().PostJson(prov + "/clusters/ghost/kv-pairs", Meta("x", spec)), 404);
  EXPECT_ERROR(c().Get(coll + "/ghost", kAcceptJson), 404, "not found");

  EXPECT_ERROR(c().Delete(cl), 409);  // has kv-pairs
  MustDelete(item);
  EXPECT_ERROR(c().Delete(item), 404);
  MustDelete(coll + "/second");
  MustDelete(cl);
  MustDelete(prov);
}

// EMCO lists in creation order; both stores must (names against the alphabet).
TEST_P(ClustersTest, ListsAreInCreationOrder) {
  const std::string prov = MakeProvider();
  const std::vector<std::string> order = {"zulu", "alpha", "mike"};
  for (const auto& n : order) MakeCluster(prov, n);
  std::vector<std::string> got;
  for (const auto& cl : MustGet(prov + "/clusters")) got.push_back(cl["metadata"]["name"]);
  EXPECT_EQ(got, order);
  for (const char* l : {"zz", "aa"}) MustCreate(prov + "/clusters/mike/labels", json{{"clusterLabel", l}});
  EXPECT_EQ(MustGet(prov + "/clusters/mike/labels"),
            json::array({json{{"clusterLabel", "zz"}}, json{{"clusterLabel", "aa"}}}));
  EXPECT_ERROR(c().Get("/v2/no-such-route", kAcceptJson), 404, "404 page not found");
}

ECO_INSTANTIATE_FOR_STORES(ClustersTest);

}  // namespace
}  // namespace eco::testing
