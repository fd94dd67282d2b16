// The HPA intent API (api/resources_hpa.cc) through Api::Handle over a real
// embedded store: EMCO's routes, validation and messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "process.h"
#include "store/sqlite_store.h"
#include "test_archives.h"

namespace eco::hpa {
namespace {

using nlohmann::json;

const std::string kCa = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDigPath = kCa + "/deployment-intent-groups/dig";
const std::string kH = kDigPath + "/hpa-intents";

json Meta(const std::string& name) { return {{"metadata", {{"name", name}}}}; }
json WithSpec(const std::string& name, json spec) {
  json b = Meta(name);
  b["spec"] = std::move(spec);
  return b;
}

class HpaApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    api_ = std::make_unique<api::Api>(*store_, api::Options{});
    ASSERT_EQ(Post("/v2/projects", Meta("p")).status, 201);
    ASSERT_EQ(Post("/v2/projects/p/composite-apps", WithSpec("ca", {{"compositeAppVersion", "v1"}}))
                  .status,
              201);
    api::Request r;
    r.method = "POST";
    r.path = kCa + "/apps";
    r.multipart = true;
    r.parts.emplace("metadata", api::FormPart{Meta("web").dump(), "", "application/json"});
    r.parts.emplace("file",
                    api::FormPart{eco::testing::ChartTgz("web"), "web.tgz", "application/octet-stream"});
    ASSERT_EQ(api_->Handle(r).status, 201);
    ASSERT_EQ(Post("/v2/projects/p/logical-clouds", Meta("lc")).status, 201);
    ASSERT_EQ(Post(kCa + "/deployment-intent-groups", WithSpec("dig", {{"compositeProfile", "cp"},
                                                                       {"version", "r1"},
                                                                       {"logicalCloud", "lc"}}))
                  .status,
              201);
  }

  api::Response Call(const std::string& method, const std::string& path,
                     const std::string& body = "",
                     std::multimap<std::string, std::string> query = {}) {
    api::Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.query = std::move(query);
    return api_->Handle(r);
  }
  api::Response Post(const std::string& path, const json& b) {
    return Call("POST", path, b.dump());
  }
  api::Response Put(const std::string& path, const json& b) { return Call("PUT", path, b.dump()); }
  api::Response Get(const std::string& path) { return Call("GET", path); }
  api::Response Del(const std::string& path) { return Call("DELETE", path); }

  // intent hpa1 for web, consumer c1 (workload web, container web)
  void MakeConsumer() {
    ASSERT_EQ(Post(kH, WithSpec("hpa1", {{"app", "web"}})).status, 201);
    ASSERT_EQ(Post(kH + "/hpa1/hpa-resource-consumers", WithSpec("c1", {{"apiVersion", "apps/v1"},
                                                                        {"kind", "Deployment"},
                                                                        {"name", "web"},
                                                                        {"container", "web"},
                                                                        {"replicas", 2}}))
                  .status,
              201);
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<api::Api> api_;
};

json Body(const api::Response& r) { return json::parse(r.body, nullptr, false); }
bool Says(const api::Response& r, const std::string& text) {
  return r.body.find(text) != std::string::npos;
}

TEST_F(HpaApiTest, IntentCrudWithEmcoMessages) {
  auto r = Post(kH, WithSpec("hpa1", {{"app", "web"}}));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r)["spec"]["app"], "web");
  EXPECT_EQ(Body(r)["metadata"]["name"], "hpa1");

  auto dup = Post(kH, WithSpec("hpa1", {{"app", "web"}}));
  EXPECT_EQ(dup.status, 409);
  EXPECT_TRUE(Says(dup, "Intent already exists")) << dup.body;

  auto missing = Get(kH + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(Says(missing, "Intent not found")) << missing.body;

  EXPECT_EQ(Body(Get(kH)).size(), 1u);
  auto put = Put(kH + "/hpa1", WithSpec("hpa1", {{"app", "web"}}));
  EXPECT_EQ(put.status, 200) << put.body;
  auto mismatch = Put(kH + "/hpa1", WithSpec("other", {{"app", "web"}}));
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_TRUE(Says(mismatch, "Mismatched name in PUT request")) << mismatch.body;

  EXPECT_EQ(Del(kH + "/hpa1").status, 204);
  EXPECT_EQ(Get(kH + "/hpa1").status, 404);
}

TEST_F(HpaApiTest, IntentNeedsAValidApp) {
  auto none = Post(kH, WithSpec("hpa1", json::object()));
  EXPECT_EQ(none.status, 400);
  EXPECT_TRUE(Says(none, "spec.app")) << none.body;
  auto bad = Post(kH, WithSpec("hpa1", {{"app", "-web"}}));
  EXPECT_EQ(bad.status, 400);
  auto nospec = Post(kH, Meta("hpa1"));
  EXPECT_EQ(nospec.status, 400);
  auto empty = Call("POST", kH, "");
  EXPECT_EQ(empty.status, 400);
  EXPECT_TRUE(Says(empty, "Empty body"));
  auto malformed = Call("POST", kH, "{\"metadata\":");
  EXPECT_EQ(malformed.status, 422);
}

TEST_F(HpaApiTest, IntentUnderMissingDigIs404) {
  auto r =
      Post(kCa + "/deployment-intent-groups/nodig/hpa-intents", WithSpec("hpa1", {{"app", "web"}}));
  EXPECT_EQ(r.status, 404);
}

TEST_F(HpaApiTest, IntentHoldsItsApp) {
  ASSERT_EQ(Post(kH, WithSpec("hpa1", {{"app", "web"}})).status, 201);
  EXPECT_EQ(Del(kCa + "/apps/web").status, 409);
  ASSERT_EQ(Del(kH + "/hpa1").status, 204);
  EXPECT_EQ(Del(kCa + "/apps/web").status, 204);
}

TEST_F(HpaApiTest, ConsumerDefaultsAndValidation) {
  ASSERT_EQ(Post(kH, WithSpec("hpa1", {{"app", "web"}})).status, 201);
  const std::string C = kH + "/hpa1/hpa-resource-consumers";
  auto r = Post(C, WithSpec("c1", {{"name", "web"}, {"container", "web"}}));
  ASSERT_EQ(r.status, 201) << r.body;
  // No replicas given: none answered, as EMCO's omitempty (the EMCO API
  // suite's test_postHPAResourceConsumerHPAIntent and its GET cases).
  EXPECT_FALSE(Body(r)["spec"].contains("replicas")) << r.body;
  EXPECT_FALSE(Body(Get(C + "/c1"))["spec"].contains("replicas"));
  EXPECT_FALSE(Body(Get(C))[0]["spec"].contains("replicas"));

  auto dup = Post(C, WithSpec("c1", {{"name", "web"}}));
  EXPECT_EQ(dup.status, 409);
  EXPECT_TRUE(Says(dup, "Consumer already exists")) << dup.body;
  auto missing = Get(C + "/zz");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(Says(missing, "Consumer not found")) << missing.body;

  EXPECT_EQ(Post(C, WithSpec("c2", {{"container", "web"}})).status, 400);  // name required
  EXPECT_EQ(Post(C, WithSpec("c2", {{"name", "web"}, {"replicas", 0}})).status, 400);
  EXPECT_EQ(Post(C, WithSpec("c2", {{"name", "web"}, {"replicas", "2"}})).status, 400);
  auto kind = Post(C, WithSpec("c2", {{"name", "web"}, {"kind", "CronJob"}}));
  EXPECT_EQ(kind.status, 400);
  EXPECT_TRUE(Says(kind, "not supported")) << kind.body;
  EXPECT_EQ(
      Post(C, WithSpec("c2", {{"name", "db"}, {"kind", "StatefulSet"}, {"replicas", 3}})).status,
      201);
  // null reads as absent, never as a crash
  auto nulls = Post(
      C, WithSpec(
             "c4",
             {{"name", "web"}, {"kind", nullptr}, {"container", nullptr}, {"replicas", nullptr}}));
  ASSERT_EQ(nulls.status, 201) << nulls.body;
  EXPECT_FALSE(Body(nulls)["spec"].contains("replicas"));
  EXPECT_FALSE(Body(nulls)["spec"].contains("kind")) << "omitted when empty, as EMCO";
  EXPECT_EQ(Post(kH + "/nope/hpa-resource-consumers", WithSpec("c3", {{"name", "web"}})).status,
            404);
}

// EMCO's API suite compares whole bodies: a consumer as it sends one
// (test_postHPAResourceConsumerHPAIntent) answers as sent in POST, GET,
// the list and ?consumer= (test_getHPAResourceConsumerHPAIntent, ...ByName).
TEST_F(HpaApiTest, ConsumerBodyIsEmcoApiSuites) {
  ASSERT_EQ(Post(kH, WithSpec("hpa-placement-intent-1", {{"app", "web"}})).status, 201);
  const std::string C = kH + "/hpa-placement-intent-1/hpa-resource-consumers";
  const json consumer = json::parse(R"({"metadata": {"name": "hpa-placement-consumer-1",
      "description": "description of hpa placement_intent", "userData1": "Some data", "userData2": "Some more data"},
    "spec": {"kind": "Deployment", "name": "r1-http-client", "container": "http-client"}})");
  auto r = Post(C, consumer);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r), consumer);
  EXPECT_EQ(Body(Get(C + "/hpa-placement-consumer-1")), consumer);
  EXPECT_EQ(Body(Get(C)), json::array({consumer}));
  EXPECT_EQ(Body(Call("GET", C, "", {{"consumer", "hpa-placement-consumer-1"}})), consumer);
  // Its requirement (test_postResourceHPAIntent) and one without mandatory
  // or weight (test_putResourceHPAIntent's body) answer as sent too.
  const std::string R = C + "/hpa-placement-consumer-1/resource-requirements";
  const json cpu = json::parse(R"({"metadata": {"name": "hpa-placement-allocatable-resource-1",
      "description": "cpu resource", "userData1": "user data 1", "userData2": "user data 2"},
    "spec": {"allocatable": true, "mandatory": true, "weight": 1, "resource": {"name": "cpu", "requests": 1, "limits": 1}}})");
  r = Post(R, cpu);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r), cpu);
  json bare = cpu;
  bare["spec"] = json::parse(R"({"allocatable": true, "resource": {"name": "cpu", "requests": 2, "limits": 2}})");
  r = Put(R + "/hpa-placement-allocatable-resource-1", bare);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r), bare);
  EXPECT_EQ(Body(Get(R + "/hpa-placement-allocatable-resource-1")), bare);
}

TEST_F(HpaApiTest, RequirementAllocatable) {
  MakeConsumer();
  const std::string R = kH + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
  json cpu = WithSpec("cpu", {{"allocatable", true},
                              {"mandatory", true},
                              {"weight", 1},
                              {"resource", {{"name", "cpu"}, {"requests", 1}, {"limits", 1}}}});
  auto r = Post(R, cpu);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r)["spec"]["resource"]["requests"], 1);
  EXPECT_EQ(Body(r)["spec"]["resource"]["limits"], 1);

  auto dup = Post(R, cpu);
  EXPECT_EQ(dup.status, 409);
  EXPECT_TRUE(Says(dup, "Resource already exists")) << dup.body;
  auto missing = Get(R + "/zz");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(Says(missing, "Resource not found")) << missing.body;

  // requests must not exceed limits (EMCO's message)
  json over =
      WithSpec("mem", {{"allocatable", true},
                       {"resource", {{"name", "memory"}, {"requests", 200}, {"limits", 100}}}});
  auto o = Post(R, over);
  EXPECT_EQ(o.status, 400);
  EXPECT_TRUE(Says(o, "requests must be less or equal to limits")) << o.body;
  // requests required, >= 1
  EXPECT_EQ(
      Post(R, WithSpec("m2", {{"allocatable", true}, {"resource", {{"name", "memory"}}}})).status,
      400);
  EXPECT_EQ(Post(R, WithSpec("m2", {{"allocatable", true},
                                    {"resource", {{"name", "memory"}, {"requests", 0}}}}))
                .status,
            400);
  // limits 0 = none
  EXPECT_EQ(
      Post(R, WithSpec("m3", {{"allocatable", true},
                              {"resource", {{"name", "memory"}, {"requests", 64}, {"limits", 0}}}}))
          .status,
      201);
  // unknown units
  auto u = Post(
      R,
      WithSpec("m4", {{"allocatable", true},
                      {"resource", {{"name", "memory"}, {"requests", 1}, {"units", "parsecs"}}}}));
  EXPECT_EQ(u.status, 400);
  EXPECT_TRUE(Says(u, "unknown units")) << u.body;
  EXPECT_EQ(
      Post(R, WithSpec("m5", {{"allocatable", true},
                              {"resource", {{"name", "cpu"}, {"requests", 500}, {"units", "m"}}}}))
          .status,
      201);
  auto nulls = Post(
      R, WithSpec("m6", {{"allocatable", true},
                         {"mandatory", nullptr},
                         {"weight", nullptr},
                         {"resource", {{"name", "cpu"}, {"requests", 1}, {"units", nullptr}}}}));
  ASSERT_EQ(nulls.status, 201) << nulls.body;
  // Neither given: neither answered, as EMCO's omitempty (the API suite's
  // test_putResourceHPAIntent sends neither and expects neither back).
  EXPECT_FALSE(Body(nulls)["spec"].contains("mandatory")) << nulls.body;
  EXPECT_FALSE(Body(nulls)["spec"].contains("weight")) << nulls.body;
  EXPECT_FALSE(Body(Get(R + "/m6"))["spec"].contains("weight"));
  // allocatable is required and must be a boolean
  EXPECT_EQ(Post(R, WithSpec("x", {{"resource", {{"name", "cpu"}, {"requests", 1}}}})).status, 400);
  EXPECT_EQ(Post(R, WithSpec("x", {{"allocatable", "yes"},
                                   {"resource", {{"name", "cpu"}, {"requests", 1}}}}))
                .status,
            400);
  EXPECT_EQ(Post(R, WithSpec("x", {{"allocatable", true},
                                   {"weight", 0},
                                   {"resource", {{"name", "cpu"}, {"requests", 1}}}}))
                .status,
            400);
}

TEST_F(HpaApiTest, RequirementNonAllocatableAndMismatch) {
  MakeConsumer();
  const std::string R = kH + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
  json avx = WithSpec(
      "avx",
      {{"allocatable", false},
       {"mandatory", true},
       {"weight", 1},
       {"resource", {{"key", "feature.node.kubernetes.io/cpu-cpuid.AVX512F"}, {"value", "true"}}}});
  auto r = Post(R, avx);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r)["spec"]["resource"]["key"], "feature.node.kubernetes.io/cpu-cpuid.AVX512F");

  auto m1 = Post(R, WithSpec("m1", {{"allocatable", false},
                                    {"resource", {{"name", "cpu"}, {"requests", 1}}}}));
  EXPECT_EQ(m1.status, 400);
  EXPECT_TRUE(Says(m1, "allocatable and resource field value mismatch")) << m1.body;
  auto m2 = Post(
      R, WithSpec("m2", {{"allocatable", true}, {"resource", {{"key", "k"}, {"value", "v"}}}}));
  EXPECT_EQ(m2.status, 400);
  EXPECT_TRUE(Says(m2, "allocatable and resource field value mismatch")) << m2.body;
}

TEST_F(HpaApiTest, AllocatableNeedsConsumerContainer) {
  ASSERT_EQ(Post(kH, WithSpec("hpa1", {{"app", "web"}})).status, 201);
  ASSERT_EQ(Post(kH + "/hpa1/hpa-resource-consumers", WithSpec("c1", {{"name", "web"}})).status,
            201);
  const std::string R = kH + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
  auto r = Post(R, WithSpec("cpu", {{"allocatable", true},
                                    {"resource", {{"name", "cpu"}, {"requests", 1}}}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Says(r, "container")) << r.body;
  // Labels need no container.
  EXPECT_EQ(Post(R, WithSpec("lbl", {{"allocatable", false},
                                     {"resource", {{"key", "a"}, {"value", "b"}}}}))
                .status,
            201);
}

TEST_F(HpaApiTest, GetByNameQueryAndDeleteAll) {
  MakeConsumer();
  ASSERT_EQ(Post(kH, WithSpec("hpa2", {{"app", "web"}})).status, 201);
  const std::string R = kH + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
  ASSERT_EQ(Post(R, WithSpec("cpu", {{"allocatable", true},
                                     {"resource", {{"name", "cpu"}, {"requests", 1}}}}))
                .status,
            201);

  auto one = Call("GET", kH, "", {{"intent", "hpa2"}});
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(Body(one)["metadata"]["name"], "hpa2");
  auto c = Call("GET", kH + "/hpa1/hpa-resource-consumers", "", {{"consumer", "c1"}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(Body(c)["spec"]["name"], "web");
  auto res = Call("GET", R, "", {{"resource", "cpu"}});
  ASSERT_EQ(res.status, 200) << res.body;
  ASSERT_TRUE(Body(res).is_array()) << "EMCO answers ?resource= with a list: " << res.body;
  ASSERT_EQ(Body(res).size(), 1u) << res.body;
  EXPECT_EQ(Body(res)[0]["spec"]["resource"]["name"], "cpu");
  EXPECT_EQ(Call("GET", R, "", {{"resource", "nope"}}).status, 404);
  EXPECT_EQ(Call("GET", kH, "", {{"intent", "nope"}}).status, 404);

  EXPECT_EQ(Del(R).status, 204);
  EXPECT_EQ(Body(Get(R)).size(), 0u);
  EXPECT_EQ(Del(kH).status, 204);  // every intent, with its consumers
  auto all = Get(kH);
  EXPECT_TRUE(Body(all).is_null() || Body(all).empty()) << all.body;
  EXPECT_EQ(Get(kH + "/hpa1/hpa-resource-consumers/c1").status, 404);
}

// EMCO's structs tag these fields omitempty: a client comparing answers
// with EMCO's sees no empty strings or zero limits.
TEST_F(HpaApiTest, AnswersOmitEmptyOptionalFields) {
  ASSERT_EQ(Post(kH, WithSpec("hpa1", {{"app", "web"}})).status, 201);
  const std::string C = kH + "/hpa1/hpa-resource-consumers";
  auto bare = Post(C, WithSpec("bare", {{"name", "web"}, {"apiVersion", ""}}));
  ASSERT_EQ(bare.status, 201) << bare.body;
  json spec = Body(bare)["spec"];
  for (const char* k : {"apiVersion", "kind", "container"}) {
    EXPECT_FALSE(spec.contains(k)) << k << " in " << bare.body;
  }
  EXPECT_EQ(spec["name"], "web");
  EXPECT_FALSE(Body(Get(C + "/bare"))["spec"].contains("apiVersion"));
  auto full = Post(C, WithSpec("full", {{"name", "web"}, {"apiVersion", "apps/v1"},
                                        {"kind", "Deployment"}, {"container", "web"}}));
  ASSERT_EQ(full.status, 201) << full.body;
  EXPECT_EQ(Body(full)["spec"]["apiVersion"], "apps/v1");
  EXPECT_EQ(Body(full)["spec"]["container"], "web");

  const std::string R = C + "/full/resource-requirements";
  auto cpu = Post(R, WithSpec("cpu", {{"allocatable", true},
                                      {"resource", {{"name", "cpu"}, {"requests", 1}}}}));
  ASSERT_EQ(cpu.status, 201) << cpu.body;
  json res = Body(Get(R + "/cpu"))["spec"]["resource"];
  EXPECT_FALSE(res.contains("units")) << res;
  EXPECT_FALSE(res.contains("limits")) << res;
  EXPECT_EQ(res["requests"], 1);
  auto mem = Post(R, WithSpec("mem", {{"allocatable", true},
                                      {"resource", {{"name", "memory"}, {"requests", 64},
                                                    {"limits", 128}, {"units", "MB"}}}}));
  ASSERT_EQ(mem.status, 201) << mem.body;
  EXPECT_EQ(Body(mem)["spec"]["resource"]["units"], "MB");
  EXPECT_EQ(Body(mem)["spec"]["resource"]["limits"], 128);
  // The list answers the same shapes.
  json list = Body(Get(R));
  ASSERT_EQ(list.size(), 2u) << list;
  EXPECT_FALSE(list[0]["spec"]["resource"].contains("units")) << list;
}

// An empty label value is refused by validation, before the parents are
// looked up: the answer is 400 even under a consumer that does not exist.
TEST_F(HpaApiTest, EmptyNonAllocatableValueIs400BeforeParents) {
  MakeConsumer();
  json empty = WithSpec("lbl", {{"allocatable", false}, {"resource", {{"key", "a"}, {"value", ""}}}});
  const std::string R = kH + "/hpa1/hpa-resource-consumers/c1/resource-requirements";
  auto r = Post(R, empty);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_TRUE(Says(r, "spec.resource.value")) << r.body;
  const std::string ghost = kH + "/hpa1/hpa-resource-consumers/ghost/resource-requirements";
  auto g = Post(ghost, empty);
  EXPECT_EQ(g.status, 400) << g.body;
  json ok = WithSpec("lbl", {{"allocatable", false}, {"resource", {{"key", "a"}, {"value", "b"}}}});
  EXPECT_EQ(Post(ghost, ok).status, 404) << "a valid body under a missing parent is still a 404";
  EXPECT_EQ(Post(R, ok).status, 201);
}

}  // namespace
}  // namespace eco::hpa
