// The gac intent API (api/resources_gac.cc) through Api::Handle over a real
// embedded store: every route, EMCO's status codes, validation and the
// multipart bodies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api_test_fixture.h"
#include "gac_test_world.h"
#include "test_archives.h"

namespace eco::api {
namespace {

const std::string kCa = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDig = kCa + "/deployment-intent-groups/dig";
const std::string kG = kDig + "/generic-k8s-intents";
const std::string kR = kG + "/gi/resources";
const std::string kC = kR + "/scale/customizations";

json Spec(const std::string& name, json spec) {
  json b = {{"metadata", {{"name", name}}}};
  b["spec"] = std::move(spec);
  return b;
}

json ResourceBody(const std::string& name, const std::string& new_object, const std::string& kind,
                  const std::string& obj, const std::string& app = "web") {
  return Spec(name, {{"app", app},
                     {"newObject", new_object},
                     {"resourceGVK", {{"apiVersion", kind == "Deployment" ? "apps/v1" : "v1"}, {"kind", kind}, {"name", obj}}}});
}

json CustomizationBody(const std::string& name, json extra = json::object()) {
  json spec = {{"clusterSpecific", "true"},
               {"clusterInfo",
                {{"scope", "label"}, {"clusterProvider", "prov"}, {"clusterLabel", "core"}, {"mode", "allow"}}},
               {"patchType", "json"},
               {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 3}}})}};
  spec.update(extra);
  return Spec(name, spec);
}

class GacApiTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    MakeProjectAndApp("p", "ca");
    Request r = eco::testing::GacMultipart("POST", kCa + "/apps", Meta("web"),
                                           {{"web.tgz", eco::testing::ChartTgz("web")}}, "file");
    ASSERT_EQ(api_->Handle(r).status, 201);
    ASSERT_EQ(Post("/v2/projects/p/logical-clouds", Meta("lc")).status, 201);
    ASSERT_EQ(Post(kCa + "/deployment-intent-groups",
                   Spec("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}}))
                  .status,
              201);
    ASSERT_EQ(Post("/v2/cluster-providers", Meta("prov")).status, 201);
  }

  Response Multi(const std::string& method, const std::string& path, const json& meta,
                 const std::vector<std::pair<std::string, std::string>>& files = {},
                 const std::string& field = "files") {
    return api_->Handle(eco::testing::GacMultipart(method, path, meta, files, field));
  }

  void MakeScale() {
    ASSERT_EQ(Post(kG, Meta("gi")).status, 201);
    ASSERT_EQ(Multi("POST", kR, ResourceBody("scale", "false", "Deployment", "web")).status, 201);
  }
};

TEST_F(GacApiTest, IntentsCreateGetListReplaceDelete) {
  auto r = Post(kG, Meta("gi"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["metadata"]["name"], "gi");
  r = Post(kG, Meta("gi"));
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("GenericK8sIntent already exists"), std::string::npos) << r.body;
  ASSERT_EQ(Post(kG, Meta("gi2")).status, 201);
  r = Get(kG);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body).size(), 2u);
  r = Get(kG + "/gi");
  ASSERT_EQ(r.status, 200);
  json m = Meta("gi");
  m["metadata"]["description"] = "new";
  r = Put(kG + "/gi", m);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(Get(kG + "/gi").body)["metadata"]["description"], "new");
  EXPECT_EQ(Put(kG + "/gi", Meta("other")).status, 400);  // name mismatch
  EXPECT_EQ(Get(kG + "/nosuch").status, 404);
  EXPECT_NE(Get(kG + "/nosuch").body.find("GenericK8sIntent not found"), std::string::npos);
  EXPECT_EQ(Del(kG + "/gi2").status, 204);
  EXPECT_EQ(Del(kG + "/gi2").status, 404);
  // The DIG must exist.
  r = Post(kCa + "/deployment-intent-groups/nodig/generic-k8s-intents", Meta("gi"));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("DeploymentIntentGroup not found"), std::string::npos) << r.body;
  EXPECT_EQ(Post(kG, Meta("bad name!")).status, 400);
}

TEST_F(GacApiTest, ResourcesTakeTheirManifestAsAFilePart) {
  ASSERT_EQ(Post(kG, Meta("gi")).status, 201);
  const std::string np =
      "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny\nspec:\n  podSelector: {}\n";
  json body = ResourceBody("np", "true", "networkpolicy", "deny");
  body["spec"]["resourceGVK"]["apiVersion"] = "networking.k8s.io/v1";
  auto r = Multi("POST", kR, body, {{"np.yaml", np}}, "file");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["spec"]["newObject"], "true");
  // The manifest comes back as it was uploaded.
  r = Call("GET", kR + "/np", "", {}, "application/octet-stream");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, np);
  r = Call("GET", kR + "/np", "", {}, "multipart/form-data");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("kind: NetworkPolicy"), std::string::npos);
  EXPECT_NE(r.body.find("name=\"metadata\""), std::string::npos);

  // A new object other than a ConfigMap/Secret needs its manifest.
  json nofile = body;
  nofile["metadata"]["name"] = "np2";
  r = Multi("POST", kR, nofile);
  EXPECT_EQ(r.status, 422) << r.body;
  // The manifest must be the object resourceGVK names.
  r = Multi("POST", kR, nofile, {{"np.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deny\n"}}, "file");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("resourceGVK names"), std::string::npos) << r.body;
  r = Multi("POST", kR, nofile, {{"np.yaml", "kind: [unclosed"}}, "file");
  EXPECT_EQ(r.status, 400) << r.body;
  // ConfigMaps and Secrets may come without one; existing objects need none.
  EXPECT_EQ(Multi("POST", kR, ResourceBody("cm", "true", "ConfigMap", "settings")).status, 201);
  EXPECT_EQ(Multi("POST", kR, ResourceBody("sec", "true", "Secret", "creds")).status, 201);
  EXPECT_EQ(Multi("POST", kR, ResourceBody("scale", "false", "Deployment", "web")).status, 201);
  r = Call("GET", kR + "/scale", "", {}, "application/octet-stream");
  EXPECT_EQ(r.status, 404);  // no file

  // Validation, as gac's schema.
  for (json bad : {ResourceBody("b1", "yes", "ConfigMap", "x"), Spec("b2", {{"app", "web"}, {"newObject", "true"}}),
                   ResourceBody("b3", "true", "ConfigMap", ""), ResourceBody("b4", "true", "ConfigMap", "x", "")}) {
    r = Multi("POST", kR, bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
  }
  // As in EMCO, the app is looked up at instantiation (the controller's
  // error then names it), not here.
  r = Multi("POST", kR, ResourceBody("b5", "true", "ConfigMap", "x", "noapp"));
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Del(kR + "/b5").status, 204);
  EXPECT_EQ(Get(kR).status, 200);
  EXPECT_EQ(json::parse(Get(kR).body).size(), 4u);
  EXPECT_EQ(Get(kR + "/nosuch").status, 404);
  EXPECT_NE(Get(kR + "/nosuch").body.find("Resource not found"), std::string::npos);
  // Replacing without the file drops it.
  json cm = ResourceBody("np", "false", "NetworkPolicy", "deny");
  EXPECT_EQ(Multi("PUT", kR + "/np", cm).status, 200);
  EXPECT_EQ(Call("GET", kR + "/np", "", {}, "application/octet-stream").status, 404);
  EXPECT_EQ(Del(kR + "/np").status, 204);
  EXPECT_EQ(Get(kR + "/np").status, 404);
}

TEST_F(GacApiTest, CustomizationsTakeZeroOrMoreFiles) {
  MakeScale();
  auto r = Multi("POST", kC, CustomizationBody("c1"), {{"game.properties", "lives=3\n"}, {"ui.yaml", "x: 1\n"}});
  ASSERT_EQ(r.status, 201) << r.body;
  json stored = json::parse(r.body);
  EXPECT_EQ(stored["spec"]["clusterInfo"]["scope"], "label");
  EXPECT_EQ(stored["spec"]["patchJson"][0]["value"], 3);
  r = Call("GET", kC + "/c1", "", {}, "multipart/form-data");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("filename=\"game.properties\""), std::string::npos);
  EXPECT_NE(r.body.find("filename=\"ui.yaml\""), std::string::npos);
  EXPECT_NE(r.body.find("lives=3"), std::string::npos);
  EXPECT_EQ(Call("GET", kC + "/c1", "", {}, "application/octet-stream").status, 406);
  EXPECT_EQ(Post(kC, CustomizationBody("c2")).status, 201);  // plain JSON, no files
  r = Multi("POST", kC, CustomizationBody("c1"));
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("Customization already exists"), std::string::npos) << r.body;
  EXPECT_EQ(json::parse(Get(kC).body).size(), 2u);
  // Replacing without files drops them.
  EXPECT_EQ(Multi("PUT", kC + "/c1", CustomizationBody("c1")).status, 200);
  r = Call("GET", kC + "/c1", "", {}, "multipart/form-data");
  EXPECT_EQ(r.body.find("game.properties"), std::string::npos);
  // A resource with customizations is not deleted under them.
  EXPECT_EQ(Del(kR + "/scale").status, 409);
  EXPECT_EQ(Del(kC + "/c1").status, 204);
  EXPECT_EQ(Del(kC + "/c2").status, 204);
  EXPECT_EQ(Del(kR + "/scale").status, 204);
}

TEST_F(GacApiTest, CustomizationValidation) {
  MakeScale();
  struct Case {
    json extra;
    std::string says;
  } cases[] = {
      {{{"clusterSpecific", "maybe"}}, "clusterSpecific"},
      {{{"clusterInfo", nullptr}}, "clusterInfo is required"},
      {{{"clusterInfo", {{"scope", "zone"}, {"clusterProvider", "prov"}, {"mode", "allow"}}}}, "scope"},
      {{{"clusterInfo", {{"scope", "name"}, {"clusterProvider", "prov"}, {"mode", "allow"}}}}, "cluster is required"},
      {{{"clusterInfo", {{"scope", "label"}, {"clusterProvider", "prov"}, {"mode", "allow"}}}}, "clusterLabel is required"},
      {{{"clusterInfo", {{"scope", "label"}, {"clusterProvider", "prov"}, {"clusterLabel", "a"}, {"mode", "maybe"}}}},
       "mode"},
      {{{"patchType", "strategic"}}, "patchType"},
      {{{"patchJson", json::array({{{"op", "frobnicate"}, {"path", "/a"}, {"value", 1}}})}}, "op"},
      {{{"patchJson", json::array({{{"op", "add"}, {"path", "a"}, {"value", 1}}})}}, "JSON pointer"},
      {{{"patchJson", json::array({{{"op", "add"}, {"path", "/a"}}})}}, "value is required"},
      {{{"patchJson", json::array({{{"op", "copy"}, {"path", "/a"}, {"value", 1}}})}}, "needs from"},
      {{{"patchJson", json::array({{{"op", "add"}, {"path", "/data/x"}, {"value", "$(http://1.2.3.4/v2/x)$"}}})}},
       "not supported"},
      {{{"configMapOptions", {{"dataKeyOptions", json::array({{{"fileName", "a"}}})}}}}, "keyName"},
      {{{"secretOptions", {{"dataKeyOptions", json::array({{{"fileName", "a"}, {"keyName", "bad key"}}})}}}},
       "not a valid"},
  };
  for (const auto& c : cases) {
    auto r = Multi("POST", kC, CustomizationBody("bad", c.extra));
    EXPECT_EQ(r.status, 400) << c.extra.dump() << " " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.says << " in " << r.body;
  }
  auto r = Multi("POST", kC, CustomizationBody("bad"), {{"has space", "x"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("has space"), std::string::npos) << r.body;
  r = Multi("POST", kC, CustomizationBody("bad"), {{"a", "x"}, {"a", "y"}});
  EXPECT_EQ(r.status, 400);
  r = Multi("POST", kC, CustomizationBody("bad"), {{"big", std::string((1u << 20) + 1, 'x')}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(Get(kC).body).size(), 0u);
  // Not cluster-specific: clusterInfo is still required (schema) but not checked further.
  r = Multi("POST", kC,
            CustomizationBody("all", {{"clusterSpecific", "false"},
                                      {"clusterInfo", {{"scope", "label"}, {"clusterProvider", ""}, {"mode", "allow"}}}}));
  EXPECT_EQ(r.status, 201) << r.body;
}

TEST_F(GacApiTest, ACustomizationNamingAClusterKeepsIt) {
  Request r;
  r.method = "POST";
  r.path = "/v2/cluster-providers/prov/clusters";
  r.multipart = true;
  r.parts.emplace("metadata", FormPart{Meta("edge1").dump(), "", "application/json"});
  r.parts.emplace("file", FormPart{"kubeconfig", "kubeconfig", "application/octet-stream"});
  ASSERT_EQ(api_->Handle(r).status, 201);
  MakeScale();
  json named = CustomizationBody(
      "one", {{"clusterInfo", {{"scope", "name"}, {"clusterProvider", "prov"}, {"cluster", "edge1"}, {"mode", "allow"}}}});
  ASSERT_EQ(Multi("POST", kC, named).status, 201);
  auto d = Del("/v2/cluster-providers/prov/clusters/edge1");
  EXPECT_EQ(d.status, 409) << d.body;
  ASSERT_EQ(Del(kC + "/one").status, 204);
  EXPECT_EQ(Del("/v2/cluster-providers/prov/clusters/edge1").status, 204);
}

}  // namespace
}  // namespace eco::api
