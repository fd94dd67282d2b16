// Whole-server behaviour: an EMCO-style setup and teardown on a fresh
// server, state across kill -9, concurrent creates, the body limit, and a
// request without an Accept header.
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api_env.h"

namespace eco::testing {
namespace {

// Cases that need a server of their own (fresh state, kill -9, options).
class SystemTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  std::unique_ptr<Deployment> Start(const std::function<void(EcoOptions&)>& tweak = nullptr) {
    auto d = std::make_unique<Deployment>(GetParam(), tweak);
    EXPECT_TRUE(d->ready()) << d->error();
    return d;
  }
};

void ExpectTopLevelListsEmpty(EcoClient& c) {
  for (const char* coll :
       {"/v2/projects", "/v2/controllers", "/v2/clm-controllers", "/v2/cluster-providers"}) {
    HttpResponse r = c.Get(coll, kAcceptJson);
    EXPECT_STATUS(r, 200) << coll;
    // [] rather than EMCO's null.
    EXPECT_EQ(r.body.find("null"), std::string::npos) << coll << ": " << r.Describe();
    EXPECT_EQ(r.json(), json::array()) << coll << ": " << r.Describe();
  }
}

// emco.md Appendix C steps 1-9 (no lifecycle calls), then the teardown of
// section 3.4, with out-of-order deletes refused on the way.
TEST_P(SystemTest, EmcoSetupSequenceAndTeardown) {
  auto d = Start();
  ASSERT_TRUE(d->ready());
  EcoClient c = d->server().client();
  ExpectTopLevelListsEmpty(c);

  auto post = [&](const std::string& path, const std::string& body) {
    HttpResponse r = c.PostRaw(path, body);
    EXPECT_STATUS(r, 201) << "POST " << path << " " << body;
    return r;
  };
  auto upload = [&](const std::string& path, const std::string& md, const std::string& file) {
    HttpResponse r = c.PostMultipart(path, md, file);
    EXPECT_STATUS(r, 201) << "POST multipart " << path << " " << md;
    return r;
  };

  // 1. controllers: rsync (host/port only) plus an action controller.
  post("/v2/controllers", R"({"metadata":{"name":"rsync"},"spec":{"host":"rsync","port":9031}})");
  post("/v2/controllers",
       R"({"metadata":{"name":"gac","description":"","userData1":"","userData2":""},
           "spec":{"host":"gac","port":9033,"type":"action","priority":1}})");
  // 2. provider, cluster with kubeconfig, label.
  post("/v2/cluster-providers", R"({"metadata":{"name":"prov"}})");
  const std::string kc = Kubeconfig("edge1");
  upload("/v2/cluster-providers/prov/clusters", R"({"metadata":{"name":"edge1"}})", kc);
  post("/v2/cluster-providers/prov/clusters/edge1/labels", R"({"clusterLabel":"edge"})");
  // 3. project.
  post("/v2/projects", R"({"metadata":{"name":"proj"}})");
  // 4. level-0 logical cloud with one cluster reference.
  post("/v2/projects/proj/logical-clouds", R"({"metadata":{"name":"lc0"},"spec":{"level":"0"}})");
  post("/v2/projects/proj/logical-clouds/lc0/cluster-references",
       R"({"metadata":{"name":"r1"},"spec":{"clusterProvider":"prov","cluster":"edge1"}})");
  // 5. composite app and its app.
  const std::string ca = "/v2/projects/proj/composite-apps/ca/v1";
  post("/v2/projects/proj/composite-apps",
       R"({"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}})");
  const std::string chart = ChartTgz("web");
  upload(ca + "/apps", R"({"metadata":{"name":"web"}})", chart);
  // 6. composite profile and the app's profile.
  post(ca + "/composite-profiles", R"({"metadata":{"name":"cp"}})");
  const std::string profile = ProfileTgz();
  upload(ca + "/composite-profiles/cp/profiles",
         R"({"metadata":{"name":"web-profile"},"spec":{"app":"web"}})", profile);
  // 7. deployment intent group.
  const std::string dig = ca + "/deployment-intent-groups/dig";
  post(ca + "/deployment-intent-groups",
       R"({"metadata":{"name":"dig"},"spec":{"compositeProfile":"cp","version":"r1",
           "logicalCloud":"lc0","overrideValues":[]}})");
  // 8. placement intent and the app's placement.
  post(dig + "/generic-placement-intents", R"({"metadata":{"name":"gpi"}})");
  post(dig + "/generic-placement-intents/gpi/app-intents",
       R"({"metadata":{"name":"web-pl"},"spec":{"app":"web","intent":{"allOf":[
           {"clusterProvider":"prov","clusterLabel":"edge"}]}}})");
  // 9. intents map (gac named as a controller key).
  post(dig + "/intents",
       R"({"metadata":{"name":"intents"},"spec":{"intent":{"genericPlacementIntent":"gpi",
           "gac":"gac-intent"}}})");
  if (HasFailure()) return;

  // Everything reads back.
  EXPECT_EQ(c.Get("/v2/cluster-providers/prov/clusters?label=edge", kAcceptJson).json(),
            json({"edge1"}));
  EXPECT_EQ(c.Get("/v2/cluster-providers/prov/clusters/edge1", kAcceptOctet).body, kc);
  EXPECT_TRUE(c.Get(ca + "/apps/web", kAcceptOctet).body == chart);
  EXPECT_TRUE(c.Get(ca + "/composite-profiles/cp/profiles?app=web", kAcceptOctet).body == profile);
  HttpResponse digr = c.Get(dig, kAcceptJson);
  EXPECT_STATUS(digr, 200);
  EXPECT_EQ(digr.json()["spec"]["logicalCloud"], "lc0");
  EXPECT_EQ(digr.json()["spec"]["overrideValues"], json::array());
  EXPECT_EQ(c.Get(dig + "/intents/intents", kAcceptJson).json()["spec"]["intent"]["gac"],
            "gac-intent");
  EXPECT_EQ(c.Get(dig + "/generic-placement-intents/gpi/app-intents/web-pl", kAcceptJson)
                .json()["spec"]["app"],
            "web");

  // Out of order: each refused with 409 and nothing changes.
  const std::vector<std::string> refused = {
      "/v2/projects/proj",
      "/v2/projects/proj/logical-clouds/lc0",
      ca,
      ca + "/apps/web",
      ca + "/composite-profiles/cp",
      dig,
      dig + "/generic-placement-intents/gpi",
      "/v2/controllers/gac",
      "/v2/cluster-providers/prov",
      "/v2/cluster-providers/prov/clusters/edge1",
  };
  for (const auto& path : refused) {
    EXPECT_ERROR(c.Delete(path), 409) << "DELETE " << path;
    EXPECT_STATUS(c.Get(path, kAcceptJson), 200) << "after refused DELETE " << path;
  }

  // Teardown in the order of emco.md 3.4.
  const std::vector<std::string> order = {
      dig + "/generic-placement-intents/gpi/app-intents/web-pl",
      dig + "/generic-placement-intents/gpi",
      dig + "/intents/intents",
      dig,
      ca + "/composite-profiles/cp/profiles/web-profile",
      ca + "/composite-profiles/cp",
      ca + "/apps/web",
      ca,
      "/v2/projects/proj/logical-clouds/lc0/cluster-references/r1",
      "/v2/projects/proj/logical-clouds/lc0",
      "/v2/projects/proj",
      "/v2/cluster-providers/prov/clusters/edge1/labels/edge",
      "/v2/cluster-providers/prov/clusters/edge1",
      "/v2/cluster-providers/prov",
      "/v2/controllers/gac",
      "/v2/controllers/rsync",
  };
  for (const auto& path : order) {
    EXPECT_STATUS(c.Delete(path), 204) << "DELETE " << path;
    EXPECT_ERROR(c.Get(path, kAcceptJson), 404) << "after DELETE " << path;
  }
  ExpectTopLevelListsEmpty(c);
}

// Acknowledged writes survive kill -9; integrity rules still hold afterwards.
TEST_P(SystemTest, StateSurvivesKill9) {
  auto d = Start();
  ASSERT_TRUE(d->ready());
  EcoServer& s = d->server();
  {
    EcoClient c = s.client();
    auto must = [&](const HttpResponse& r) { ASSERT_STATUS(r, 201); };
    must(c.PostJson(
        "/v2/controllers",
        Meta("gac", {{"host", "gac"}, {"port", 9033}, {"type", "action"}, {"priority", 1}})));
    must(c.PostJson("/v2/clm-controllers",
                    Meta("hpa", {{"host", "hpa"}, {"port", 9099}, {"priority", 2}})));
    must(c.PostJson("/v2/cluster-providers", Meta("prov")));
    must(c.PostMultipart("/v2/cluster-providers/prov/clusters", Meta("edge1").dump(),
                         Kubeconfig("edge1")));
    must(
        c.PostJson("/v2/cluster-providers/prov/clusters/edge1/labels", {{"clusterLabel", "edge"}}));
    must(c.PostJson("/v2/cluster-providers/prov/clusters/edge1/kv-pairs",
                    Meta("kv", {{"kv", {{{"k", "v"}}}}})));
    json p = Meta("proj");
    p["metadata"]["description"] = "survivor";
    must(c.PostJson("/v2/projects", p));
    must(c.PostJson("/v2/projects/proj/logical-clouds",
                    Meta("lc1", {{"namespace", "ns1"},
                                 {"level", "1"},
                                 {"labels", json::object()},
                                 {"user", {{"userName", "u"}, {"type", "certificate"}}}})));
    must(c.PostJson("/v2/projects/proj/logical-clouds/lc1/cluster-references",
                    Meta("r1", {{"clusterProvider", "prov"}, {"cluster", "edge1"}})));
    must(c.PostJson("/v2/projects/proj/logical-clouds/lc1/cluster-quotas",
                    Meta("q", {{"pods", "5"}})));
    must(c.PostJson("/v2/projects/proj/composite-apps",
                    Meta("ca", {{"compositeAppVersion", "v1"}})));
    const std::string ca = "/v2/projects/proj/composite-apps/ca/v1";
    must(c.PostMultipart(ca + "/apps", Meta("web").dump(), ChartTgz("web")));
    must(c.PostJson(ca + "/composite-profiles", Meta("cp")));
    must(c.PostMultipart(ca + "/composite-profiles/cp/profiles",
                         Meta("wp", {{"app", "web"}}).dump(), ProfileTgz()));
    must(c.PostJson(ca + "/deployment-intent-groups",
                    Meta("dig", {{"compositeProfile", "cp"},
                                 {"version", "r1"},
                                 {"logicalCloud", "lc1"},
                                 {"overrideValues", json::array()}})));
    must(c.PostJson(ca + "/deployment-intent-groups/dig/intents",
                    Meta("i", {{"intent", {{"genericPlacementIntent", "gpi"}, {"gac", "x"}}}})));
    // A burst right before the crash: every 201 must be durable.
    for (int i = 0; i < 20; ++i)
      must(c.PostJson("/v2/projects", Meta("burst-" + std::to_string(i))));
  }
  if (HasFailure()) return;

  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("after kill -9 #" + std::to_string(round + 1));
    ASSERT_TRUE(s.Restart()) << s.error();
    EcoClient c = s.client();
    EXPECT_EQ(c.Get("/v2/projects/proj", kAcceptJson).json()["metadata"]["description"],
              "survivor");
    for (int i = 0; i < 20; ++i) {
      EXPECT_STATUS(c.Get("/v2/projects/burst-" + std::to_string(i), kAcceptJson), 200) << i;
    }
    EXPECT_EQ(c.Get("/v2/controllers/gac", kAcceptJson).json()["spec"]["port"], 9033);
    EXPECT_EQ(c.Get("/v2/clm-controllers/hpa", kAcceptJson).json()["spec"]["port"], 9099);
    EXPECT_EQ(c.Get("/v2/cluster-providers/prov/clusters/edge1", kAcceptOctet).body,
              Kubeconfig("edge1"));
    EXPECT_EQ(c.Get("/v2/cluster-providers/prov/clusters?label=edge", kAcceptJson).json(),
              json({"edge1"}));
    EXPECT_EQ(
        c.Get("/v2/cluster-providers/prov/clusters/edge1/kv-pairs/kv?key=k", kAcceptJson).json(),
        json({{"value", "v"}}));
    const std::string ca = "/v2/projects/proj/composite-apps/ca/v1";
    EXPECT_TRUE(c.Get(ca + "/apps/web", kAcceptOctet).body == ChartTgz("web"));
    EXPECT_TRUE(c.Get(ca + "/composite-profiles/cp/profiles/wp", kAcceptOctet).body ==
                ProfileTgz());
    EXPECT_EQ(
        c.Get(ca + "/deployment-intent-groups/dig", kAcceptJson).json()["spec"]["logicalCloud"],
        "lc1");
    EXPECT_EQ(c.Get("/v2/projects/proj/logical-clouds/lc1/cluster-quotas/q", kAcceptJson)
                  .json()["spec"]["pods"],
              "5");
    // Integrity survives too.
    EXPECT_ERROR(c.PostJson("/v2/projects", Meta("proj")), 409);
    EXPECT_ERROR(c.Delete("/v2/cluster-providers/prov/clusters/edge1"), 409);
    EXPECT_ERROR(c.Delete("/v2/controllers/gac"), 409);
    EXPECT_ERROR(c.Delete("/v2/projects/proj/logical-clouds/lc1"), 409);
    EXPECT_ERROR(c.Delete(ca + "/apps/web"), 409);
    // Writes after the restart persist into the next round.
    EXPECT_STATUS(c.PostJson("/v2/projects", Meta("after-" + std::to_string(round))), 201);
    if (round == 1) {
      EXPECT_STATUS(c.Get("/v2/projects/after-0", kAcceptJson), 200);
    }
  }
}

// The body limit: larger JSON and multipart bodies are refused with 413,
// smaller ones pass, and the server keeps serving.
TEST_P(SystemTest, BodyLimit) {
  constexpr size_t kLimit = 256 * 1024;
  auto d = Start([&](EcoOptions& o) { o.max_body_bytes = kLimit; });
  ASSERT_TRUE(d->ready());
  EcoClient c = d->server().client();
  ASSERT_STATUS(c.PostJson("/v2/projects", Meta("p")), 201);
  ASSERT_STATUS(
      c.PostJson("/v2/projects/p/composite-apps", Meta("ca", {{"compositeAppVersion", "v1"}})),
      201);
  const std::string apps = "/v2/projects/p/composite-apps/ca/v1/apps";

  json big = Meta("big");
  big["metadata"]["description"] = std::string(kLimit + 1024, 'd');
  EXPECT_ERROR(c.PostJson("/v2/projects", big), 413);
  EXPECT_ERROR(c.PutJson("/v2/projects/big", big), 413);
  EXPECT_ERROR(c.PostMultipart(apps, Meta("huge").dump(), ChartTgzWithBlob("huge", kLimit + 4096)),
               413);
  EXPECT_ERROR(c.PostMultipart(apps, Meta("huge").dump(), ChartTgzWithBlob("huge", 4 * kLimit)),
               413);
  EXPECT_ERROR(c.Get(apps + "/huge", kAcceptJson), 404);

  const std::string fits = ChartTgzWithBlob("fits", kLimit / 2);
  EXPECT_STATUS(c.PostMultipart(apps, Meta("fits").dump(), fits), 201);
  EXPECT_TRUE(c.Get(apps + "/fits", kAcceptOctet).body == fits);
  EXPECT_STATUS(c.Get("/healthz"), 200);
}

ECO_INSTANTIATE_FOR_STORES(SystemTest);

// Cases that are fine on the shared server.
using SharedServerTest = ApiTest;

// Transport errors here have come from the listen backlog: cpp-httplib 0.11.4
// listens with a backlog of 5, the kernel overflows it under 16 simultaneous
// connects, falls back to SYN cookies, and now and then resets a connection.
constexpr const char* kNoResponseHint =
    " (a \"no response\" here usually means the server's listen backlog "
    "overflowed: see TcpExtListenOverflows in nstat)";

// Answers of one race: status -> count, the index of the (last) thread that
// got `winner_status`, and the answers that were neither expected code.
struct Tally {
  std::map<int, int> codes;
  int winner = -1;
  std::vector<std::string> odd;
};

// Runs `call` on `n` threads released at once, each with its own client.
Tally Race(int port, int n, int winner_status, int loser_status,
           const std::function<HttpResponse(EcoClient&, int)>& call) {
  Tally t;
  std::mutex mu;
  std::latch go(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      EcoClient cl(port);
      go.arrive_and_wait();
      HttpResponse r = call(cl, i);
      std::lock_guard<std::mutex> lock(mu);
      ++t.codes[r.status];
      if (r.status == winner_status) {
        t.winner = i;
      } else if (r.status != loser_status || (r.status >= 400 && !IsError(r, loser_status))) {
        t.odd.push_back(r.Describe());
      }
    });
  }
  for (auto& th : threads) th.join();
  return t;
}

::testing::AssertionResult OneWinner(const Tally& t, int n, int winner_status, int loser_status) {
  auto count = [&](int code) {
    auto it = t.codes.find(code);
    return it == t.codes.end() ? 0 : it->second;
  };
  if (count(winner_status) == 1 && count(loser_status) == n - 1 && t.odd.empty()) {
    return ::testing::AssertionSuccess();
  }
  auto f = ::testing::AssertionFailure();
  f << "expected one " << winner_status << " and " << n - 1 << " x " << loser_status << ", got";
  for (const auto& [code, k] : t.codes) f << " " << k << " x " << code;
  if (!t.odd.empty()) f << "; first odd answer: " << t.odd.front() << kNoResponseHint;
  return f;
}

constexpr int kRacers = 16;

// 16 simultaneous creates of one name: exactly one wins.
TEST_P(SharedServerTest, ConcurrentCreatesOfOneName) {
  const std::string proj = Name("race");
  Tally pt = Race(server().port(), kRacers, 201, 409, [&](EcoClient& cl, int i) {
    json b = Meta(proj);
    b["metadata"]["description"] = "thread " + std::to_string(i);
    return cl.PostJson("/v2/projects", b);
  });
  EXPECT_TRUE(OneWinner(pt, kRacers, 201, 409)) << "POST /v2/projects";
  if (pt.winner >= 0) {
    EXPECT_EQ(MustGet("/v2/projects/" + proj)["metadata"]["description"],
              "thread " + std::to_string(pt.winner));
  }

  const std::string prov = MakeProvider();
  Tally ct = Race(server().port(), kRacers, 201, 409, [&](EcoClient& cl, int i) {
    return cl.PostMultipart(prov + "/clusters", Meta("edge").dump(),
                            Kubeconfig("edge-" + std::to_string(i)));
  });
  EXPECT_TRUE(OneWinner(ct, kRacers, 201, 409)) << "POST clusters (multipart)";
  if (ct.winner >= 0) {
    EXPECT_EQ(c().Get(prov + "/clusters/edge", kAcceptOctet).body,
              Kubeconfig("edge-" + std::to_string(ct.winner)));
  }
  EXPECT_TRUE(IsJsonArray(c().Get(prov + "/clusters", kAcceptJson), 1));
}

// PUT of a new name from 16 threads: one creates (201), the rest replace (200).
TEST_P(SharedServerTest, ConcurrentPutsOfOneNewName) {
  const std::string proj = Name("putrace");
  Tally t = Race(server().port(), kRacers, 201, 200, [&](EcoClient& cl, int) {
    return cl.PutJson("/v2/projects/" + proj, Meta(proj));
  });
  EXPECT_TRUE(OneWinner(t, kRacers, 201, 200));
  EXPECT_STATUS(c().Get("/v2/projects/" + proj, kAcceptJson), 200);
}

// DELETE from 16 threads: one 204, the rest 404.
TEST_P(SharedServerTest, ConcurrentDeletesOfOneName) {
  const std::string proj = MakeProject();
  Tally t =
      Race(server().port(), kRacers, 204, 404, [&](EcoClient& cl, int) { return cl.Delete(proj); });
  EXPECT_TRUE(OneWinner(t, kRacers, 204, 404));
  EXPECT_ERROR(c().Get(proj, kAcceptJson), 404);
}

// Deleting a parent while a child is being created must never leave an
// orphan: either the delete wins (child 404) or the child does (delete 409).
TEST_P(SharedServerTest, ParentDeleteRacingChildCreateLeavesNoOrphan) {
  int deleted = 0, created = 0;
  for (int round = 0; round < 25; ++round) {
    const std::string proj = MakeProject();
    Tally t = Race(server().port(), 2, -1, -1, [&](EcoClient& cl, int i) {
      return i == 0 ? cl.Delete(proj)
                    : cl.PostJson(proj + "/composite-apps",
                                  Meta("ca", {{"compositeAppVersion", "v1"}}));
    });
    const int del = t.codes.count(204) ? 204 : t.codes.count(409) ? 409 : 0;
    const int add = t.codes.count(201) ? 201 : t.codes.count(404) ? 404 : 0;
    ASSERT_TRUE((del == 204 && add == 404) || (del == 409 && add == 201))
        << "round " << round << ": delete " << del << ", create " << add
        << "; all answers:" << ::testing::PrintToString(t.codes) << " "
        << ::testing::PrintToString(t.odd);
    if (del == 204) {
      ++deleted;
      EXPECT_ERROR(c().Get(proj + "/composite-apps/ca/v1", kAcceptJson), 404);
    } else {
      ++created;
      EXPECT_STATUS(c().Get(proj + "/composite-apps/ca/v1", kAcceptJson), 200);
    }
  }
  RecordProperty("parent_deleted_first", deleted);
  RecordProperty("child_created_first", created);
}

// Distinct names created concurrently all land (no lost writes).
TEST_P(SharedServerTest, ConcurrentCreatesOfDistinctNames) {
  constexpr int kThreads = 8, kEach = 10;
  const std::string proj = MakeProject();
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> failures;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      EcoClient cl(server().port());
      for (int i = 0; i < kEach; ++i) {
        std::string n = "lc-" + std::to_string(t) + "-" + std::to_string(i);
        HttpResponse r = cl.PostJson(proj + "/logical-clouds", Meta(n, {{"level", "0"}}));
        if (r.status != 201) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(n + ": " + r.Describe());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
  EXPECT_TRUE(IsJsonArray(c().Get(proj + "/logical-clouds", kAcceptJson), kThreads * kEach));
}

// httplib always sends an Accept header, so this request is written by hand:
// no Accept means JSON (EMCO answers 406 here).
TEST_P(SharedServerTest, UploadedObjectWithoutAcceptHeaderIsJson) {
  const std::string ca = MakeCompositeApp(MakeProject());
  MakeApp(ca, "web");
  const std::string req = "GET " + ca +
                          "/apps/web HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Connection: close\r\n\r\n";
  HttpResponse r = RawHttp(server().port(), req);
  EXPECT_STATUS(r, 200);
  EXPECT_EQ(r.header("Content-Type").rfind("application/json", 0), 0u) << r.Describe();
  // The body may be chunked; the name must be in it either way.
  EXPECT_NE(r.body.find("\"web\""), std::string::npos) << r.Describe();
}

ECO_INSTANTIATE_FOR_STORES(SharedServerTest);

}  // namespace
}  // namespace eco::testing
