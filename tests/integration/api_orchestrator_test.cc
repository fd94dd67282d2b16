// Orchestrator resources: composite apps, apps (chart upload), app
// dependencies, composite and app profiles, deployment intent groups, the
// intents map, generic placement intents and app intents.
#include <string>

#include "api_env.h"

namespace eco::testing {
namespace {

using OrchestratorTest = ApiTest;

// Checks GET of an uploaded object in every representation.
void ExpectRepresentations(EcoClient& c, const std::string& path, const std::string& name,
                           const std::string& bytes) {
  SCOPED_TRACE("representations of " + path);
  for (const auto& h : {kAcceptJson, kAcceptAny, httplib::Headers{}}) {
    HttpResponse r = c.Get(path, h);
    EXPECT_STATUS(r, 200);
    EXPECT_TRUE(HasFullMetadata(r.json(), name)) << r.Describe();
  }
  HttpResponse raw = c.Get(path, kAcceptOctet);
  EXPECT_STATUS(raw, 200);
  EXPECT_TRUE(raw.body == bytes) << "octet-stream body differs: " << raw.body.size() << " bytes vs "
                                 << bytes.size() << " uploaded";

  HttpResponse mp = c.Get(path, kAcceptMultipart);
  EXPECT_STATUS(mp, 200);
  auto parts = ParseMultipart(mp.content_type(), mp.body);
  ASSERT_TRUE(parts.has_value()) << "not multipart: " << mp.content_type();
  bool saw_meta = false, saw_file = false;
  for (const auto& p : *parts) {
    if (p.name == "metadata") {
      saw_meta = true;
      json m = json::parse(p.content, nullptr, false);
      EXPECT_TRUE(HasFullMetadata(m, name)) << p.content;
    } else if (p.name == "file") {
      saw_file = true;
      EXPECT_TRUE(p.content == bytes)
          << "multipart file part differs: " << p.content.size() << " bytes vs " << bytes.size();
    }
  }
  EXPECT_TRUE(saw_meta && saw_file) << "parts: " << parts->size();
  EXPECT_ERROR(c.Get(path, kAcceptHtml), 406);
}

// Upload failures common to apps and app profiles; none may create `name`.
void ExpectUploadErrors(EcoClient& c, const std::string& collection, const json& meta) {
  SCOPED_TRACE("upload errors on " + collection);
  const std::string name = meta["metadata"]["name"];
  const std::string md = meta.dump();
  EXPECT_ERROR(c.PostMultipart(collection, md, std::nullopt), 422);
  EXPECT_ERROR(c.PostMultipart(collection, md, RandomBytes(3000)), 422);
  EXPECT_ERROR(c.PostMultipart(collection, md, TruncatedTgz()), 422);
  EXPECT_ERROR(c.PostMultipart(collection, md, GzipOfText("just text, no tar\n")), 422);
  EXPECT_ERROR(c.PostMultipart(collection, md, ""), 422);
  EXPECT_ERROR(c.PostMultipart(collection, "{\"metadata\":", ChartTgz(name)), 422);
  EXPECT_ERROR(c.PostMultipart(collection, "", ChartTgz(name)), 400);
  EXPECT_ERROR(c.PostParts(collection, {{"file", ChartTgz(name), "c.tgz", "application/gzip"}}),
               400);
  json badname = meta;
  badname["metadata"]["name"] = "-bad-";
  EXPECT_ERROR(c.PostMultipart(collection, badname.dump(), ChartTgz(name)), 400);
  json longdesc = meta;
  longdesc["metadata"]["description"] = std::string(1025, 'd');
  EXPECT_ERROR(c.PostMultipart(collection, longdesc.dump(), ChartTgz(name)), 400);
  EXPECT_ERROR(c.Get(collection + "/" + name, kAcceptJson), 404);
  // A bad PUT changes nothing either.
  EXPECT_ERROR(c.PutMultipart(collection + "/" + name, md, RandomBytes(100)), 422);
  EXPECT_ERROR(c.Get(collection + "/" + name, kAcceptJson), 404);
}

TEST_P(OrchestratorTest, CompositeApps) {
  const std::string proj = MakeProject();
  const std::string coll = proj + "/composite-apps";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const std::string ca = Name("ca");
  HttpResponse r = c().PostJson(coll, Meta(ca, {{"compositeAppVersion", "v1"}}));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), ca));
  EXPECT_EQ(r.json()["spec"]["compositeAppVersion"], "v1");
  EXPECT_ERROR(c().PostJson(coll, Meta(ca, {{"compositeAppVersion", "v1"}})), 409,
               "already exists");
  // Each version is its own object.
  EXPECT_STATUS(c().PostJson(coll, Meta(ca, {{"compositeAppVersion", "v2"}})), 201);

  const std::string v1 = coll + "/" + ca + "/v1";
  EXPECT_EQ(MustGet(v1)["spec"]["compositeAppVersion"], "v1");
  EXPECT_EQ(MustGet(coll + "/" + ca + "/v2")["spec"]["compositeAppVersion"], "v2");
  EXPECT_ERROR(c().Get(coll + "/" + ca + "/v3", kAcceptJson), 404, "not found");
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 2));

  json rep = Meta(ca, {{"compositeAppVersion", "v1"}});
  rep["metadata"]["description"] = "replaced";
  EXPECT_STATUS(c().PutJson(v1, rep), 200);
  EXPECT_EQ(MustGet(v1)["metadata"]["description"], "replaced");
  const std::string ca2 = Name("ca");
  EXPECT_STATUS(c().PutJson(coll + "/" + ca2 + "/v1", Meta(ca2, {{"compositeAppVersion", "v1"}})),
                201);
  EXPECT_STATUS(c().Get(coll + "/" + ca2 + "/v1", kAcceptJson), 200);
  EXPECT_ERROR(c().PutJson(v1, Meta(ca2, {{"compositeAppVersion", "v1"}})), 400);

  // Schema: version required and follows the name rule.
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("ca"))), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("ca"), json::object())), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("ca"), {{"compositeAppVersion", "-v"}})), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("ca"), {{"compositeAppVersion", 1}})), 400);
  EXPECT_ERROR(c().PostRaw(coll, ""), 400);
  EXPECT_ERROR(c().PostRaw(coll, "{"), 422);

  // Missing parent project: 404 for create, list and get.
  const std::string ghost = "/v2/projects/" + Name("ghost") + "/composite-apps";
  EXPECT_ERROR(c().PostJson(ghost, Meta(Name("ca"), {{"compositeAppVersion", "v1"}})), 404);
  EXPECT_ERROR(c().Get(ghost, kAcceptJson), 404);

  // A project with composite apps cannot go.
  EXPECT_ERROR(c().Delete(proj), 409);

  EXPECT_STATUS(c().Delete(coll + "/" + ca + "/v2"), 204);
  EXPECT_ERROR(c().Get(coll + "/" + ca + "/v2", kAcceptJson), 404);
  EXPECT_ERROR(c().Delete(coll + "/" + ca + "/v2"), 404);
  EXPECT_STATUS(c().Get(v1, kAcceptJson), 200);
  MustDelete(v1);
  MustDelete(coll + "/" + ca2 + "/v1");
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));
  MustDelete(proj);
}

TEST_P(OrchestratorTest, AppsUploadAndRepresentations) {
  const std::string ca = MakeCompositeApp(MakeProject());
  const std::string coll = ca + "/apps";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const std::string chart = ChartTgz("web");
  HttpResponse r = c().PostMultipart(coll, Meta("web").dump(), chart, "web.tgz");
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "web"));
  EXPECT_ERROR(c().PostMultipart(coll, Meta("web").dump(), chart), 409, "already exists");

  ExpectRepresentations(c(), coll + "/web", "web", chart);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));
  EXPECT_EQ(c().Get(coll, kAcceptJson).json()[0]["metadata"]["name"], "web");

  // PUT replaces metadata and chart (200) or creates (201).
  const std::string chart2 = ChartTgz("web", "second");
  ASSERT_NE(chart, chart2);
  json rep = Meta("web");
  rep["metadata"]["description"] = "v2 chart";
  EXPECT_STATUS(c().PutMultipart(coll + "/web", rep.dump(), chart2), 200);
  EXPECT_EQ(MustGet(coll + "/web")["metadata"]["description"], "v2 chart");
  EXPECT_TRUE(c().Get(coll + "/web", kAcceptOctet).body == chart2);
  EXPECT_STATUS(c().PutMultipart(coll + "/db", Meta("db").dump(), ChartTgz("db")), 201);
  EXPECT_TRUE(c().Get(coll + "/db", kAcceptOctet).body == ChartTgz("db"));
  EXPECT_ERROR(c().PutMultipart(coll + "/web", Meta("db").dump(), chart), 400);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 2));

  // A rejected PUT leaves the stored app alone.
  EXPECT_ERROR(c().PutMultipart(coll + "/web", Meta("web").dump(), RandomBytes(500)), 422);
  EXPECT_ERROR(c().PutMultipart(coll + "/web", Meta("web").dump(), std::nullopt), 422);
  EXPECT_TRUE(c().Get(coll + "/web", kAcceptOctet).body == chart2);
  EXPECT_EQ(MustGet(coll + "/web")["metadata"]["description"], "v2 chart");

  EXPECT_ERROR(c().Delete(ca), 409);  // has apps
  EXPECT_STATUS(c().Delete(coll + "/db"), 204);
  EXPECT_ERROR(c().Get(coll + "/db", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Get(coll + "/db", kAcceptOctet), 404);
  EXPECT_ERROR(c().Delete(coll + "/db"), 404);
  MustDelete(coll + "/web");
  MustDelete(ca);
}

TEST_P(OrchestratorTest, AppUploadErrors) {
  const std::string proj = MakeProject();
  const std::string ca = MakeCompositeApp(proj);
  ExpectUploadErrors(c(), ca + "/apps", Meta("web"));
  EXPECT_TRUE(IsJsonArray(c().Get(ca + "/apps", kAcceptJson), 0));
  // Missing parent composite app (valid upload otherwise).
  EXPECT_ERROR(c().PostMultipart(proj + "/composite-apps/" + Name("ghost") + "/v1/apps",
                                 Meta("web").dump(), ChartTgz("web")),
               404);
  EXPECT_ERROR(c().PostMultipart(ca.substr(0, ca.size() - 2) + "v9/apps", Meta("web").dump(),
                                 ChartTgz("web")),
               404);
}

TEST_P(OrchestratorTest, LargeChartRoundTrip) {
  // Well under the 64 MiB default body limit, well over any small buffer.
  const std::string ca = MakeCompositeApp(MakeProject());
  const std::string chart = ChartTgzWithBlob("big", 3u << 20);
  ASSERT_GT(chart.size(), 3u << 20);
  ASSERT_STATUS(c().PostMultipart(ca + "/apps", Meta("big").dump(), chart), 201);
  HttpResponse raw = c().Get(ca + "/apps/big", kAcceptOctet);
  EXPECT_STATUS(raw, 200);
  EXPECT_TRUE(raw.body == chart) << raw.body.size() << " vs " << chart.size();
}

TEST_P(OrchestratorTest, AppDependencies) {
  const std::string ca = MakeCompositeApp(MakeProject());
  const std::string web = MakeApp(ca, "web");
  MakeApp(ca, "db");
  const std::string coll = web + "/dependency";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));

  const json spec = {{"app", "db"}, {"opStatus", "Ready"}, {"wait", 10}};
  HttpResponse r = c().PostJson(coll, Meta("on-db", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "on-db"));
  EXPECT_EQ(r.json()["spec"], spec);
  // EMCO answers 500 here; the contract says 409.
  EXPECT_ERROR(c().PostJson(coll, Meta("on-db", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/on-db")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  json deployed = {{"app", "db"}, {"opStatus", "Deployed"}, {"wait", 0}};
  EXPECT_STATUS(c().PutJson(coll + "/on-db", Meta("on-db", deployed)), 200);
  EXPECT_EQ(MustGet(coll + "/on-db")["spec"]["opStatus"], "Deployed");
  EXPECT_STATUS(c().PutJson(coll + "/second", Meta("second", spec)), 201);
  EXPECT_ERROR(c().PutJson(coll + "/on-db", Meta("second", spec)), 400);

  auto bad = [&](json s) { return c().PostJson(coll, Meta(Name("dep"), std::move(s))); };
  json s = spec;
  s["opStatus"] = "Sometime";
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s["wait"] = "10";
  EXPECT_ERROR(bad(s), 400);
  s["wait"] = 4097;
  EXPECT_ERROR(bad(s), 400);
  s["wait"] = -1;
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s.erase("app");
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s["app"] = "-x";
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s.erase("opStatus");
  EXPECT_ERROR(bad(s), 400);
  EXPECT_ERROR(c().PostRaw(coll, ""), 400);

  EXPECT_ERROR(c().PostJson(ca + "/apps/ghost/dependency", Meta(Name("dep"), spec)), 404);
  EXPECT_ERROR(c().Get(ca + "/apps/ghost/dependency", kAcceptJson), 404);

  // An app with dependencies has children.
  EXPECT_ERROR(c().Delete(web), 409);
  MustDelete(coll + "/on-db");
  EXPECT_ERROR(c().Get(coll + "/on-db", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(coll + "/on-db"), 404);
  MustDelete(coll + "/second");
  MustDelete(web);
}

TEST_P(OrchestratorTest, CompositeAndAppProfiles) {
  const std::string ca = MakeCompositeApp(MakeProject());
  const std::string web = MakeApp(ca, "web");
  const std::string db = MakeApp(ca, "db");

  const std::string cps = ca + "/composite-profiles";
  EXPECT_TRUE(IsJsonArray(c().Get(cps, kAcceptJson), 0));
  const std::string cpn = Name("cprof");
  HttpResponse r = c().PostJson(cps, Meta(cpn));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), cpn));
  EXPECT_ERROR(c().PostJson(cps, Meta(cpn)), 409, "already exists");
  const std::string cp = cps + "/" + cpn;
  EXPECT_TRUE(HasFullMetadata(MustGet(cp), cpn));
  EXPECT_TRUE(IsJsonArray(c().Get(cps, kAcceptJson), 1));
  json rep = Meta(cpn);
  rep["metadata"]["userData2"] = "x";
  EXPECT_STATUS(c().PutJson(cp, rep), 200);
  EXPECT_EQ(MustGet(cp)["metadata"]["userData2"], "x");
  const std::string cp2n = Name("cprof");
  EXPECT_STATUS(c().PutJson(cps + "/" + cp2n, Meta(cp2n)), 201);
  EXPECT_ERROR(c().PutJson(cp, Meta(cp2n)), 400);
  EXPECT_ERROR(c().Get(cps + "/ghost", kAcceptJson), 404, "not found");

  const std::string profs = cp + "/profiles";
  EXPECT_TRUE(IsJsonArray(c().Get(profs, kAcceptJson), 0));
  const std::string pbytes = ProfileTgz("web");
  r = c().PostMultipart(profs, Meta("web-profile", {{"app", "web"}}).dump(), pbytes, "p.tgz");
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "web-profile"));
  EXPECT_EQ(r.json()["spec"]["app"], "web");
  EXPECT_ERROR(c().PostMultipart(profs, Meta("web-profile", {{"app", "db"}}).dump(), pbytes), 409,
               "already exists");
  // One profile per app.
  EXPECT_ERROR(c().PostMultipart(profs, Meta("web-profile-2", {{"app", "web"}}).dump(), pbytes),
               409);
  EXPECT_ERROR(c().Get(profs + "/web-profile-2", kAcceptJson), 404);

  ExpectRepresentations(c(), profs + "/web-profile", "web-profile", pbytes);
  // ?app= selects by app, with the same negotiation.
  HttpResponse byapp = c().Get(profs + "?app=web", kAcceptJson);
  EXPECT_STATUS(byapp, 200);
  EXPECT_TRUE(HasFullMetadata(byapp.json(), "web-profile")) << byapp.Describe();
  EXPECT_EQ(byapp.json()["spec"]["app"], "web");
  EXPECT_TRUE(c().Get(profs + "?app=web", kAcceptOctet).body == pbytes);
  EXPECT_ERROR(c().Get(profs + "?app=db", kAcceptJson), 404);

  HttpResponse list = c().Get(profs, kAcceptJson);
  EXPECT_TRUE(IsJsonArray(list, 1));
  if (list.json().is_array() && list.json().size() == 1) {
    EXPECT_EQ(list.json()[0]["spec"]["app"], "web") << list.Describe();
  }

  // PUT: replace (200) with new bytes, create (201), mismatch (400).
  const std::string pbytes2 = ProfileTgz("web-2");
  json prep = Meta("web-profile", {{"app", "web"}});
  prep["metadata"]["description"] = "second";
  EXPECT_STATUS(c().PutMultipart(profs + "/web-profile", prep.dump(), pbytes2), 200);
  EXPECT_TRUE(c().Get(profs + "/web-profile", kAcceptOctet).body == pbytes2);
  EXPECT_EQ(MustGet(profs + "/web-profile")["metadata"]["description"], "second");
  // A PUT must carry the file like a POST; a rejected one changes nothing.
  EXPECT_ERROR(c().PutMultipart(profs + "/web-profile",
                                Meta("web-profile", {{"app", "web"}}).dump(), std::nullopt),
               422);
  EXPECT_ERROR(c().PutMultipart(profs + "/web-profile",
                                Meta("web-profile", {{"app", "web"}}).dump(), TruncatedTgz()),
               422);
  EXPECT_TRUE(c().Get(profs + "/web-profile", kAcceptOctet).body == pbytes2);
  EXPECT_EQ(MustGet(profs + "/web-profile")["metadata"]["description"], "second");
  EXPECT_STATUS(
      c().PutMultipart(profs + "/db-profile", Meta("db-profile", {{"app", "db"}}).dump(), pbytes),
      201);
  EXPECT_EQ(c().Get(profs + "?app=db", kAcceptJson).json()["metadata"]["name"], "db-profile");
  EXPECT_ERROR(
      c().PutMultipart(profs + "/web-profile", Meta("db-profile", {{"app", "db"}}).dump(), pbytes),
      400);
  EXPECT_TRUE(IsJsonArray(c().Get(profs, kAcceptJson), 2));

  // Missing parent composite profile.
  EXPECT_ERROR(
      c().PostMultipart(cps + "/ghost/profiles", Meta("p", {{"app", "web"}}).dump(), pbytes), 404);
  EXPECT_ERROR(c().Get(cps + "/ghost/profiles", kAcceptJson), 404);

  // Referential integrity: apps named by profiles, profile with children.
  EXPECT_ERROR(c().Delete(web), 409);
  EXPECT_ERROR(c().Delete(cp), 409);
  MustDelete(profs + "/web-profile");
  EXPECT_ERROR(c().Delete(profs + "/web-profile"), 404);
  EXPECT_ERROR(c().Get(profs + "/web-profile", kAcceptJson), 404, "not found");
  MustDelete(web);
  MustDelete(profs + "/db-profile");
  MustDelete(db);
  MustDelete(cp);
  MustDelete(cps + "/" + cp2n);
}

TEST_P(OrchestratorTest, AppProfileUploadErrors) {
  const std::string ca = MakeCompositeApp(MakeProject());
  MakeApp(ca, "web");
  const std::string cp = MakeCompositeProfile(ca);
  ExpectUploadErrors(c(), cp + "/profiles", Meta("web-profile", {{"app", "web"}}));
  // spec.app is required and follows the name rule.
  EXPECT_ERROR(c().PostMultipart(cp + "/profiles", Meta("p1").dump(), ProfileTgz()), 400);
  EXPECT_ERROR(
      c().PostMultipart(cp + "/profiles", Meta("p1", {{"app", "-x"}}).dump(), ProfileTgz()), 400);
  EXPECT_TRUE(IsJsonArray(c().Get(cp + "/profiles", kAcceptJson), 0));
}

TEST_P(OrchestratorTest, DeploymentIntentGroups) {
  const std::string proj = MakeProject();
  const std::string ca = MakeCompositeApp(proj);
  const std::string cp = MakeCompositeProfile(ca);
  const std::string lc = Name("lc");
  MustCreate(proj + "/logical-clouds", Meta(lc, {{"level", "0"}}));

  const std::string coll = ca + "/deployment-intent-groups";
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 0));
  const std::string dig = Name("dig");
  const json spec = json::parse(R"({"compositeProfile":"", "version":"r1", "logicalCloud":"",
      "overrideValues":[{"app":"web","values":{"image.tag":"1.2","service.port":"8080"}}]})");
  json s = spec;
  s["compositeProfile"] = LastSegment(cp);
  s["logicalCloud"] = lc;
  HttpResponse r = c().PostJson(coll, Meta(dig, s));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), dig));
  EXPECT_EQ(r.json()["spec"], s);
  EXPECT_ERROR(c().PostJson(coll, Meta(dig, s)), 409, "already exists");
  const std::string item = coll + "/" + dig;
  EXPECT_EQ(MustGet(item)["spec"], s);
  EXPECT_TRUE(IsJsonArray(c().Get(coll, kAcceptJson), 1));

  json s2 = s;
  s2["version"] = "r2";
  s2["overrideValues"] = json::array();
  EXPECT_STATUS(c().PutJson(item, Meta(dig, s2)), 200);
  EXPECT_EQ(MustGet(item)["spec"]["version"], "r2");
  const std::string dig2 = Name("dig");
  EXPECT_STATUS(c().PutJson(coll + "/" + dig2, Meta(dig2, s)), 201);
  EXPECT_ERROR(c().PutJson(item, Meta(dig2, s)), 400);

  auto bad = [&](json sp) { return c().PostJson(coll, Meta(Name("dig"), std::move(sp))); };
  for (const char* field : {"compositeProfile", "version", "logicalCloud"}) {
    json b = s;
    b.erase(field);
    EXPECT_ERROR(bad(b), 400) << "without " << field;
    b[field] = "-bad";
    EXPECT_ERROR(bad(b), 400) << "bad " << field;
    b[field] = 3;
    EXPECT_ERROR(bad(b), 400) << "numeric " << field;
  }
  json b = s;
  b["overrideValues"] = json::parse(R"([{"app":"web","values":{"replicas":3}}])");
  EXPECT_ERROR(bad(b), 400);
  b["overrideValues"] =
      json::parse(R"([{"app":"web","values":{"k":")" + std::string(129, 'v') + R"("}}])");
  EXPECT_ERROR(bad(b), 400);
  b["overrideValues"] = json::parse(R"({"app":"web"})");
  EXPECT_ERROR(bad(b), 400);
  b["overrideValues"] = json::parse(R"([{"values":{"k":"v"}}])");
  EXPECT_ERROR(bad(b), 400);
  EXPECT_ERROR(c().PostJson(coll, Meta(Name("dig"))), 400);

  const std::string ghost =
      proj + "/composite-apps/" + Name("ghost") + "/v1/deployment-intent-groups";
  EXPECT_ERROR(c().PostJson(ghost, Meta(Name("dig"), s)), 404);
  EXPECT_ERROR(c().Get(ghost, kAcceptJson), 404);

  // The DIG names the composite profile and the logical cloud.
  EXPECT_ERROR(c().Delete(cp), 409);
  EXPECT_ERROR(c().Delete(proj + "/logical-clouds/" + lc), 409);

  // Replacing a DIG moves its references: the old logical cloud is free, the
  // new one is held.
  const std::string lc_b = Name("lc");
  MustCreate(proj + "/logical-clouds", Meta(lc_b, {{"level", "0"}}));
  json moved = s2;
  moved["logicalCloud"] = lc_b;
  EXPECT_STATUS(c().PutJson(coll + "/" + dig2, Meta(dig2, moved)), 200);
  EXPECT_STATUS(c().PutJson(item, Meta(dig, moved)), 200);
  EXPECT_ERROR(c().Delete(proj + "/logical-clouds/" + lc_b), 409);
  EXPECT_STATUS(c().Delete(proj + "/logical-clouds/" + lc), 204);
  MustCreate(proj + "/logical-clouds", Meta(lc, {{"level", "0"}}));
  EXPECT_STATUS(c().PutJson(item, Meta(dig, s)), 200);
  EXPECT_STATUS(c().PutJson(coll + "/" + dig2, Meta(dig2, s)), 200);
  EXPECT_STATUS(c().Delete(proj + "/logical-clouds/" + lc_b), 204);
  EXPECT_ERROR(c().Delete(proj + "/logical-clouds/" + lc), 409);
  EXPECT_ERROR(c().Delete(ca), 409);
  MustDelete(item);
  EXPECT_ERROR(c().Get(item, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(item), 404);
  EXPECT_ERROR(c().Delete(cp), 409);  // dig2 still names it
  MustDelete(coll + "/" + dig2);
  MustDelete(cp);
  MustDelete(proj + "/logical-clouds/" + lc);
  MustDelete(ca);
  MustDelete(proj);
}

TEST_P(OrchestratorTest, DigIntentsAndControllerReferences) {
  const std::string proj = MakeProject();
  const std::string ca = MakeCompositeApp(proj);
  const std::string cp = MakeCompositeProfile(ca);
  const std::string lc = Name("lc");
  MustCreate(proj + "/logical-clouds", Meta(lc, {{"level", "0"}}));
  const std::string dig = MakeDig(ca, LastSegment(cp), lc);
  const std::string ctl = Name("gac");
  MustCreate("/v2/controllers",
             Meta(ctl, {{"host", "gac"}, {"port", 9033}, {"type", "action"}, {"priority", 1}}));

  const std::string coll = dig + "/intents";
  // The one list EMCO wraps: {"intent":[<spec.intent map>, ...]} (emco.md
  // 2.1.8); eco keeps that shape for EMCO clients.
  auto expect_intent_maps = [&](const json& maps) {
    HttpResponse l = c().Get(coll, kAcceptJson);
    EXPECT_STATUS(l, 200);
    EXPECT_EQ(l.json(), json({{"intent", maps}})) << l.Describe();
  };
  expect_intent_maps(json::array());
  const json spec = {{"intent", {{"genericPlacementIntent", "gpi"}, {ctl, "gac-intent"}}}};
  HttpResponse r = c().PostJson(coll, Meta("all-intents", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "all-intents"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(coll, Meta("all-intents", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(coll + "/all-intents")["spec"], spec);
  expect_intent_maps(json::array({spec["intent"]}));

  // genericPlacementIntent is not a controller: no such controller needed.
  const json gpi_only = {{"intent", {{"genericPlacementIntent", "gpi"}}}};
  EXPECT_STATUS(c().PutJson(coll + "/placement-only", Meta("placement-only", gpi_only)), 201);
  EXPECT_STATUS(c().PutJson(coll + "/placement-only", Meta("placement-only", gpi_only)), 200);
  EXPECT_ERROR(c().PutJson(coll + "/placement-only", Meta("all-intents", gpi_only)), 400);

  auto bad = [&](json sp) { return c().PostJson(coll, Meta(Name("intents"), std::move(sp))); };
  EXPECT_ERROR(bad(json::object()), 400);
  EXPECT_ERROR(bad({{"intent", {{"genericPlacementIntent", 5}}}}), 400);
  EXPECT_ERROR(bad({{"intent", "gpi"}}), 400);
  EXPECT_ERROR(bad({{"intent", {{"genericPlacementIntent", std::string(129, 'g')}}}}), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects/" + Name("ghost") +
                                "/composite-apps/x/v1/deployment-intent-groups/d/intents",
                            Meta("i", spec)),
               404);
  EXPECT_ERROR(
      c().PostJson(ca + "/deployment-intent-groups/" + Name("ghost") + "/intents", Meta("i", spec)),
      404);

  // The controller is a key of an intents map, so it stays.
  EXPECT_ERROR(c().Delete("/v2/controllers/" + ctl), 409);
  EXPECT_ERROR(c().Delete(dig), 409);  // has intents
  MustDelete(coll + "/all-intents");
  EXPECT_ERROR(c().Get(coll + "/all-intents", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(coll + "/all-intents"), 404);
  MustDelete("/v2/controllers/" + ctl);
  MustDelete(coll + "/placement-only");
  MustDelete(dig);
}

TEST_P(OrchestratorTest, PlacementIntentsAndAppIntents) {
  const std::string proj = MakeProject();
  const std::string ca = MakeCompositeApp(proj);
  const std::string web = MakeApp(ca, "web");
  const std::string cp = MakeCompositeProfile(ca);
  const std::string lc = Name("lc");
  MustCreate(proj + "/logical-clouds", Meta(lc, {{"level", "0"}}));
  const std::string dig = MakeDig(ca, LastSegment(cp), lc);
  const std::string prov = MakeProvider();
  const std::string pn = LastSegment(prov);
  const std::string edge1 = MakeCluster(prov, "edge1");
  const std::string edge2 = MakeCluster(prov, "edge2");
  const std::string edge9 = MakeCluster(prov, "edge9");  // named only inside allOf[].anyOf[]

  const std::string gpis = dig + "/generic-placement-intents";
  EXPECT_TRUE(IsJsonArray(c().Get(gpis, kAcceptJson), 0));
  HttpResponse r = c().PostJson(gpis, Meta("gpi"));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "gpi"));
  EXPECT_ERROR(c().PostJson(gpis, Meta("gpi")), 409, "already exists");
  EXPECT_TRUE(HasFullMetadata(MustGet(gpis + "/gpi"), "gpi"));
  EXPECT_TRUE(IsJsonArray(c().Get(gpis, kAcceptJson), 1));
  json grep = Meta("gpi");
  grep["metadata"]["description"] = "d";
  EXPECT_STATUS(c().PutJson(gpis + "/gpi", grep), 200);
  EXPECT_EQ(MustGet(gpis + "/gpi")["metadata"]["description"], "d");
  EXPECT_STATUS(c().PutJson(gpis + "/gpi2", Meta("gpi2")), 201);
  EXPECT_ERROR(c().PutJson(gpis + "/gpi", Meta("gpi2")), 400);
  EXPECT_ERROR(c().Get(gpis + "/ghost", kAcceptJson), 404, "not found");

  const std::string ais = gpis + "/gpi/app-intents";
  EXPECT_TRUE(IsJsonArray(c().Get(ais, kAcceptJson), 0));
  // JSON with "$P" standing for the provider name.
  auto with_provider = [&](std::string raw) {
    for (size_t at; (at = raw.find("$P")) != std::string::npos;) raw.replace(at, 2, pn);
    return json::parse(raw);
  };
  const json spec = with_provider(R"({"app":"web","intent":{
      "allOf":[{"clusterProvider":"$P","cluster":"edge1"},
               {"anyOf":[{"clusterProvider":"$P","clusterLabel":"east"},
                         {"clusterProvider":"$P","cluster":"edge9"}]}],
      "anyOf":[{"clusterProvider":"$P","clusterLabel":"west"}]}})");
  r = c().PostJson(ais, Meta("web-placement", spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), "web-placement"));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson(ais, Meta("web-placement", spec)), 409, "already exists");
  EXPECT_EQ(MustGet(ais + "/web-placement")["spec"], spec);
  EXPECT_TRUE(IsJsonArray(c().Get(ais, kAcceptJson), 1));

  // A label-only intent: labels are not references.
  const json by_label = with_provider(
      R"({"app":"web","intent":{"allOf":[{"clusterProvider":"$P","clusterLabel":"edge"}]}})");
  EXPECT_STATUS(c().PutJson(ais + "/by-label", Meta("by-label", by_label)), 201);
  EXPECT_STATUS(c().PutJson(ais + "/by-label", Meta("by-label", by_label)), 200);
  EXPECT_ERROR(c().PutJson(ais + "/by-label", Meta("web-placement", by_label)), 400);

  // Schema errors with EMCO's messages.
  auto bad = [&](const std::string& intent) {
    return c().PostJson(
        ais, Meta(Name("ai"), with_provider(R"({"app":"web","intent":)" + intent + "}")));
  };
  EXPECT_ERROR(bad(R"({"allOf":[{"cluster":"edge1"}]})"), 400, "Missing clusterProvider");
  EXPECT_ERROR(bad(R"({"anyOf":[{"clusterLabel":"east"}]})"), 400, "Missing clusterProvider");
  EXPECT_ERROR(bad(R"({"allOf":[{"clusterProvider":"$P"}]})"), 400,
               "Missing cluster or clusterLabel");
  EXPECT_ERROR(bad(R"({"anyOf":[{"clusterProvider":"$P"}]})"), 400,
               "Missing cluster or clusterLabel");
  EXPECT_ERROR(bad(R"({"allOf":[{"clusterProvider":"$P","cluster":"edge1","clusterLabel":"l"}]})"),
               400, "Only one of cluster name or cluster label allowed");
  EXPECT_ERROR(bad(R"({"allOf":[{"anyOf":[{"clusterProvider":"$P"}]}]})"), 400,
               "Missing cluster or clusterLabel");
  EXPECT_ERROR(bad(R"({"allOf":5})"), 400);
  EXPECT_ERROR(c().PostJson(ais, Meta(Name("ai"), {{"intent", spec["intent"]}})), 400,
               "Missing app");
  EXPECT_ERROR(c().PostJson(gpis + "/ghost/app-intents", Meta(Name("ai"), spec)), 404);

  // References: the app and every explicitly named cluster.
  EXPECT_ERROR(c().Delete(web), 409);
  EXPECT_ERROR(c().Delete(edge1), 409);
  EXPECT_ERROR(c().Delete(gpis + "/gpi"), 409);  // has app intents
  EXPECT_STATUS(c().Get(edge1, kAcceptJson), 200);
  // edge2 is only matched by label: deletable.
  EXPECT_STATUS(c().Delete(edge2), 204);

  EXPECT_ERROR(c().Delete(edge9), 409);

  // Replacing the intent moves its references: edge9 is no longer named.
  json moved = spec;
  moved["intent"]["allOf"].erase(1);
  EXPECT_STATUS(c().PutJson(ais + "/web-placement", Meta("web-placement", moved)), 200);
  EXPECT_STATUS(c().Delete(edge9), 204);
  EXPECT_ERROR(c().Delete(edge1), 409);

  MustDelete(ais + "/web-placement");
  EXPECT_ERROR(c().Get(ais + "/web-placement", kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(ais + "/web-placement"), 404);
  EXPECT_ERROR(c().Delete(web), 409);  // still named by by-label
  MustDelete(ais + "/by-label");
  MustDelete(edge1);
  MustDelete(web);
  MustDelete(gpis + "/gpi");
  MustDelete(gpis + "/gpi2");
  MustDelete(prov);
}

ECO_INSTANTIATE_FOR_STORES(OrchestratorTest);

}  // namespace
}  // namespace eco::testing
