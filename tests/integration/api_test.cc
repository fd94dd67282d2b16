// North API basics: health, projects, request validation shared by every
// resource (empty body, malformed JSON, name and length rules, the error
// body), and the two controller registries.
#include <string>
#include <vector>

#include "api_env.h"

namespace eco::testing {
namespace {

using ApiBasicsTest = ApiTest;

TEST_P(ApiBasicsTest, HealthzIsOkJson) {
  HttpResponse r = c().Get("/healthz");
  ASSERT_STATUS(r, 200);
  EXPECT_EQ(r.json().value("status", ""), "ok") << r.Describe();
}

TEST_P(ApiBasicsTest, ProjectLifecycle) {
  const std::string name = Name("proj");
  const std::string item = "/v2/projects/" + name;

  json body = Meta(name);
  body["metadata"]["description"] = "first";
  HttpResponse r = c().PostJson("/v2/projects", body);
  ASSERT_STATUS(r, 201);
  json echo = r.json();
  EXPECT_TRUE(HasFullMetadata(echo, name));
  EXPECT_EQ(echo["metadata"]["description"], "first");
  EXPECT_EQ(echo["metadata"]["userData1"], "");
  EXPECT_EQ(echo["metadata"]["userData2"], "");
  EXPECT_FALSE(echo.contains("spec")) << echo.dump();

  EXPECT_ERROR(c().PostJson("/v2/projects", Meta(name)), 409, "already exists");

  json got = MustGet(item);
  EXPECT_EQ(got, echo);

  HttpResponse list = c().Get("/v2/projects", kAcceptJson);
  ASSERT_STATUS(list, 200);
  ASSERT_TRUE(list.json().is_array()) << list.Describe();
  bool found = false;
  for (const auto& p : list.json()) found |= p["metadata"]["name"] == name;
  EXPECT_TRUE(found) << list.Describe();

  // PUT replaces an existing project (200) ...
  json replaced = Meta(name);
  replaced["metadata"]["description"] = "second";
  replaced["metadata"]["userData1"] = "u1";
  r = c().PutJson(item, replaced);
  EXPECT_STATUS(r, 200);
  EXPECT_TRUE(HasFullMetadata(r.json(), name));
  got = MustGet(item);
  EXPECT_EQ(got["metadata"]["description"], "second");
  EXPECT_EQ(got["metadata"]["userData1"], "u1");

  // ... creates a missing one (201) ...
  const std::string other = Name("proj");
  r = c().PutJson("/v2/projects/" + other, Meta(other));
  EXPECT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), other));
  EXPECT_STATUS(c().Get("/v2/projects/" + other, kAcceptJson), 200);

  // ... and refuses a body naming another project.
  EXPECT_ERROR(c().PutJson(item, Meta(other)), 400);
  EXPECT_ERROR(c().PutJson(item, Meta(Name("proj"))), 400);
  EXPECT_EQ(MustGet(item)["metadata"]["description"], "second");

  EXPECT_STATUS(c().Delete(item), 204);
  EXPECT_ERROR(c().Get(item, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(item), 404, "not found");
  MustDelete("/v2/projects/" + other);
}

TEST_P(ApiBasicsTest, MissingResourcesAre404WithJsonError) {
  const std::string ghost = Name("ghost");
  EXPECT_ERROR(c().Get("/v2/projects/" + ghost, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete("/v2/projects/" + ghost), 404);
  EXPECT_ERROR(c().Get("/v2/controllers/" + ghost, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Get("/v2/clm-controllers/" + ghost, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Get("/v2/cluster-providers/" + ghost, kAcceptJson), 404, "not found");
  // A missing parent anywhere up the path is 404 as well (EMCO says 409).
  const std::string ca = "/v2/projects/" + ghost + "/composite-apps/ca/v1";
  EXPECT_ERROR(c().Get(ca, kAcceptJson), 404);
  EXPECT_ERROR(c().Get(ca + "/apps", kAcceptJson), 404);
  EXPECT_ERROR(c().Get(ca + "/deployment-intent-groups", kAcceptJson), 404);
  EXPECT_ERROR(c().Get("/v2/cluster-providers/" + ghost + "/clusters", kAcceptJson), 404);
  EXPECT_ERROR(c().Get("/v2/projects/" + ghost + "/logical-clouds", kAcceptJson), 404);
  // PUT under a missing parent creates nothing.
  EXPECT_ERROR(c().PutJson(ca, Meta("ca", {{"compositeAppVersion", "v1"}})), 404);
  EXPECT_ERROR(c().PutJson("/v2/projects/" + ghost + "/logical-clouds/lc", Meta("lc")), 404);
  EXPECT_ERROR(c().PutJson("/v2/cluster-providers/" + ghost + "/clusters/c/labels/l",
                           {{"clusterLabel", "l"}}),
               404);
  EXPECT_ERROR(c().PutMultipart("/v2/cluster-providers/" + ghost + "/clusters/c", Meta("c").dump(),
                                Kubeconfig("c")),
               404);
  EXPECT_ERROR(c().Get("/v2/projects/" + ghost, kAcceptJson), 404);
}

TEST_P(ApiBasicsTest, EmptyAndMalformedBodies) {
  const std::string name = Name("proj");
  EXPECT_ERROR(c().PostRaw("/v2/projects", ""), 400);
  EXPECT_ERROR(c().PostRaw("/v2/projects", "{\"metadata\":"), 422);
  EXPECT_ERROR(c().PostRaw("/v2/projects", "{\"metadata\":{\"name\":\"" + name + "\"}"), 422);
  EXPECT_ERROR(c().PostRaw("/v2/projects", "not json at all"), 422);
  EXPECT_ERROR(c().PostRaw("/v2/projects", "{\"metadata\":{\"name\":'x'}}"), 422);
  EXPECT_ERROR(c().PutRaw("/v2/projects/" + name, ""), 400);
  EXPECT_ERROR(c().PutRaw("/v2/projects/" + name, "{\"metadata\":{"), 422);
  // Bad input changes nothing.
  EXPECT_ERROR(c().Get("/v2/projects/" + name, kAcceptJson), 404);
}

TEST_P(ApiBasicsTest, NameRule) {
  const std::vector<std::string> bad = {
      "-lead",  "trail-", "_lead", "trail_", ".lead", "trail.", "has space",
      "sl/ash", "col:on", "ünï",   "a*",     "",      "-",      std::string(129, 'n')};
  for (const auto& n : bad) {
    EXPECT_ERROR(c().PostJson("/v2/projects", Meta(n)), 400) << "name \"" << n << "\"";
  }
  // Each store has its own server, so these fixed names are unique there.
  const std::vector<std::string> good = {"a", "Z9", "a-b_c.d", "0--__..9",
                                         "A" + std::string(126, '-') + "z"};
  for (const auto& n : good) {
    EXPECT_STATUS(c().PostJson("/v2/projects", Meta(n)), 201) << "name \"" << n << "\"";
    EXPECT_STATUS(c().Get("/v2/projects/" + n, kAcceptJson), 200) << "name \"" << n << "\"";
  }
  // Exactly 128 characters is allowed.
  std::string n128 = Name("max");
  n128 += std::string(128 - n128.size() - 1, 'm') + "x";
  ASSERT_EQ(n128.size(), 128u);
  EXPECT_STATUS(c().PostJson("/v2/projects", Meta(n128)), 201);
  EXPECT_STATUS(c().Get("/v2/projects/" + n128, kAcceptJson), 200);
}

TEST_P(ApiBasicsTest, MetadataLengthsAndTypes) {
  auto with = [](const std::string& name, const char* key, json value) {
    json b = Meta(name);
    b["metadata"][key] = std::move(value);
    return b;
  };
  const std::string ok = Name("proj");
  EXPECT_STATUS(c().PostJson("/v2/projects", with(ok, "description", std::string(1024, 'd'))), 201);
  EXPECT_EQ(MustGet("/v2/projects/" + ok)["metadata"]["description"], std::string(1024, 'd'));
  const std::string ok2 = Name("proj");
  json b = Meta(ok2);
  b["metadata"]["userData1"] = std::string(512, '1');
  b["metadata"]["userData2"] = std::string(512, '2');
  EXPECT_STATUS(c().PostJson("/v2/projects", b), 201);

  const std::string bad = Name("proj");
  EXPECT_ERROR(c().PostJson("/v2/projects", with(bad, "description", std::string(1025, 'd'))), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", with(bad, "userData1", std::string(513, 'u'))), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", with(bad, "userData2", std::string(513, 'u'))), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", with(bad, "description", 5)), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", with(bad, "userData1", json::object())), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", json{{"metadata", {{"name", 5}}}}), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", json{{"metadata", "str"}}), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", json{{"metadata", json::array()}}), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", json::object()), 400);
  EXPECT_ERROR(c().PostJson("/v2/projects", json{{"metadata", json::object()}}), 400);
  EXPECT_ERROR(c().PutJson("/v2/projects/" + bad, with(bad, "description", std::string(1025, 'd'))),
               400);
  EXPECT_ERROR(c().Get("/v2/projects/" + bad, kAcceptJson), 404);
}

TEST_P(ApiBasicsTest, Controllers) {
  const std::string name = Name("ctl");
  const std::string item = "/v2/controllers/" + name;
  const json spec = {{"host", "10.0.0.4"}, {"port", 9033}, {"type", "action"}, {"priority", 1}};
  HttpResponse r = c().PostJson("/v2/controllers", Meta(name, spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), name));
  EXPECT_EQ(r.json()["spec"], spec);
  EXPECT_ERROR(c().PostJson("/v2/controllers", Meta(name, spec)), 409, "already exists");

  json got = MustGet(item);
  EXPECT_EQ(got["spec"], spec);
  HttpResponse list = c().Get("/v2/controllers", kAcceptJson);
  ASSERT_STATUS(list, 200);
  ASSERT_TRUE(list.json().is_array());

  // rsync registers with host and port only (EMCO Appendix C).
  const std::string rsync = Name("rsync");
  EXPECT_STATUS(c().PostJson("/v2/controllers", Meta(rsync, {{"host", "rsync"}, {"port", 9031}})),
                201);
  // Placement type, extreme but valid numbers.
  EXPECT_STATUS(
      c().PostJson(
          "/v2/controllers",
          Meta(Name("plc"),
               {{"host", "h"}, {"port", 50000}, {"type", "placement"}, {"priority", 100}})),
      201);
  EXPECT_STATUS(
      c().PostJson(
          "/v2/controllers",
          Meta(Name("plc"), {{"host", "h"}, {"port", 0}, {"type", "placement"}, {"priority", 0}})),
      201);

  // Schema: port 0..65535 (EMCO: 0..50000; eco accepts every TCP port),
  // priority 0..100, host <= 128, integers.
  auto bad = [&](json s) {
    return c().PostJson("/v2/controllers", Meta(Name("badctl"), std::move(s)));
  };
  json s = spec;
  s["port"] = 65536;
  EXPECT_ERROR(bad(s), 400);
  s["port"] = -1;
  EXPECT_ERROR(bad(s), 400);
  s["port"] = "9033";
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s["priority"] = 101;
  EXPECT_ERROR(bad(s), 400);
  s["priority"] = -1;
  EXPECT_ERROR(bad(s), 400);
  s = spec;
  s["host"] = std::string(129, 'h');
  EXPECT_ERROR(bad(s), 400);
  s["host"] = 17;
  EXPECT_ERROR(bad(s), 400);
  EXPECT_ERROR(c().PostJson("/v2/controllers", Meta("-bad", spec)), 400);

  // PUT: replace 200, create 201, mismatch 400.
  json s2 = spec;
  s2["priority"] = 7;
  EXPECT_STATUS(c().PutJson(item, Meta(name, s2)), 200);
  EXPECT_EQ(MustGet(item)["spec"]["priority"], 7);
  const std::string fresh = Name("ctl");
  EXPECT_STATUS(c().PutJson("/v2/controllers/" + fresh, Meta(fresh, spec)), 201);
  EXPECT_ERROR(c().PutJson(item, Meta(fresh, spec)), 400);

  EXPECT_STATUS(c().Delete(item), 204);
  EXPECT_ERROR(c().Get(item, kAcceptJson), 404, "not found");
  EXPECT_ERROR(c().Delete(item), 404);
  MustDelete("/v2/controllers/" + fresh);
  MustDelete("/v2/controllers/" + rsync);
}

TEST_P(ApiBasicsTest, ClmControllers) {
  const std::string name = Name("clmctl");
  const std::string item = "/v2/clm-controllers/" + name;
  const json spec = {{"host", "hpa-plc"}, {"port", 9099}, {"priority", 1}};
  HttpResponse r = c().PostJson("/v2/clm-controllers", Meta(name, spec));
  ASSERT_STATUS(r, 201);
  EXPECT_TRUE(HasFullMetadata(r.json(), name));
  EXPECT_EQ(r.json()["spec"]["host"], "hpa-plc");
  EXPECT_EQ(r.json()["spec"]["port"], 9099);
  EXPECT_EQ(r.json()["spec"]["priority"], 1);
  EXPECT_ERROR(c().PostJson("/v2/clm-controllers", Meta(name, spec)), 409, "already exists");
  EXPECT_EQ(MustGet(item)["spec"]["port"], 9099);
  HttpResponse list = c().Get("/v2/clm-controllers", kAcceptJson);
  ASSERT_STATUS(list, 200);
  EXPECT_TRUE(list.json().is_array());

  json s = spec;
  s["port"] = 65536;
  EXPECT_ERROR(c().PostJson("/v2/clm-controllers", Meta(Name("clmctl"), s)), 400);
  s = spec;
  s["priority"] = 101;
  EXPECT_ERROR(c().PostJson("/v2/clm-controllers", Meta(Name("clmctl"), s)), 400);
  s["priority"] = "high";
  EXPECT_ERROR(c().PostJson("/v2/clm-controllers", Meta(Name("clmctl"), s)), 400);

  json s2 = spec;
  s2["port"] = 9100;
  EXPECT_STATUS(c().PutJson(item, Meta(name, s2)), 200);
  EXPECT_EQ(MustGet(item)["spec"]["port"], 9100);
  const std::string fresh = Name("clmctl");
  EXPECT_STATUS(c().PutJson("/v2/clm-controllers/" + fresh, Meta(fresh, spec)), 201);
  EXPECT_ERROR(c().PutJson(item, Meta(fresh, spec)), 400);

  EXPECT_STATUS(c().Delete(item), 204);
  EXPECT_ERROR(c().Get(item, kAcceptJson), 404);
  EXPECT_ERROR(c().Delete(item), 404);
  MustDelete("/v2/clm-controllers/" + fresh);
}

ECO_INSTANTIATE_FOR_STORES(ApiBasicsTest);

}  // namespace
}  // namespace eco::testing
