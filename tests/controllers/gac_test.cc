// The generic action controller: patch semantics and scopes on plain
// objects (customize.h), then the controller against a real embedded store,
// with intents written under catalog keys and the AppContext read back per
// cluster.
#include "controllers/gac/gac.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "context_builders.h"
#include "controllers/gac/customize.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::gac {
namespace {

using appcontext::Contexts;
using appcontext::ResourceSet;
using eco::testing::Doc;
using nlohmann::json;

json Deployment(const std::string& name, int replicas = 1) {
  json containers = json::array({{{"name", "app"}, {"image", "nginx"}}});
  json pod = {{"spec", {{"containers", containers}}}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec", {{"replicas", replicas}, {"template", pod}}}};
}

Customization JsonPatch(json ops) {
  Customization c;
  c.name = "c";
  c.patch_type = "json";
  c.patch_json = std::move(ops);
  return c;
}

// ---- customize.h ----

TEST(GacPatch, JsonPatchOperationsFollowRfc6902) {
  json d = Deployment("web");
  ASSERT_TRUE(Apply(JsonPatch({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 3}},
                               {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"tier", "edge"}}}},
                               {{"op", "add"}, {"path", "/spec/template/spec/containers/-"},
                                {"value", {{"name", "side"}, {"image", "busybox"}}}},
                               {{"op", "copy"}, {"from", "/metadata/labels"}, {"path", "/metadata/annotations"}},
                               {{"op", "test"}, {"path", "/spec/replicas"}, {"value", 3}}}),
                    d)
                  .ok());
  EXPECT_EQ(d["spec"]["replicas"], 3);
  EXPECT_EQ(d["metadata"]["labels"]["tier"], "edge");
  EXPECT_EQ(d["metadata"]["annotations"]["tier"], "edge");
  ASSERT_EQ(d["spec"]["template"]["spec"]["containers"].size(), 2u);
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"][1]["name"], "side");

  ASSERT_TRUE(Apply(JsonPatch({{{"op", "remove"}, {"path", "/metadata/annotations"}},
                               {{"op", "move"}, {"from", "/metadata/labels"}, {"path", "/metadata/moved"}}}),
                    d)
                  .ok());
  EXPECT_FALSE(d["metadata"].contains("annotations"));
  EXPECT_FALSE(d["metadata"].contains("labels"));
  EXPECT_EQ(d["metadata"]["moved"]["tier"], "edge");
}

TEST(GacPatch, FailingPatchLeavesTheObjectAsItWasAndSaysWhy) {
  const json before = Deployment("web");
  struct Case {
    json ops;
    std::string why;
  } cases[] = {
      {{{{"op", "replace"}, {"path", "/spec/nothere"}, {"value", 1}}}, "nothere"},
      {{{{"op", "add"}, {"path", "/spec/a/b"}, {"value", 1}}}, "a"},
      {{{{"op", "remove"}, {"path", "/status"}}}, "status"},
      {{{{"op", "add"}, {"path", "/spec/replicas/x"}, {"value", 1}}}, "replicas"},  // a number has no members
      {{{{"op", "test"}, {"path", "/spec/replicas"}, {"value", 5}}}, "test"},
      // a later operation failing undoes the earlier ones
      {{{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 9}}, {{"op", "remove"}, {"path", "/x"}}}, "x"},
  };
  for (const auto& c : cases) {
    json d = before;
    Status s = Apply(JsonPatch(c.ops), d);
    ASSERT_FALSE(s.ok()) << c.ops.dump();
    EXPECT_EQ(s.code(), Code::kInvalid);
    EXPECT_NE(s.message().find("JSON patch failed"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.why), std::string::npos) << s.message();
    EXPECT_EQ(d, before) << c.ops.dump();
  }
}

TEST(GacPatch, APatchMayNotRenameOrRekindTheObject) {
  json d = Deployment("web");
  Status s = Apply(JsonPatch({{{"op", "replace"}, {"path", "/metadata/name"}, {"value", "other"}}}), d);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(d["metadata"]["name"], "web");
}

TEST(GacPatch, MergePatchFilesFollowRfc7386) {
  json d = Deployment("web");
  d["metadata"]["labels"] = {{"a", "1"}, {"b", "2"}};
  Customization c;
  c.patch_type = "merge";
  c.files = {{"patch.yaml", "metadata:\n  labels:\n    a: null\n    c: \"3\"\nspec:\n  replicas: 4\n"}};
  ASSERT_TRUE(Apply(c, d).ok());
  EXPECT_EQ(d["metadata"]["labels"], json({{"b", "2"}, {"c", "3"}}));  // null removes a key
  EXPECT_EQ(d["spec"]["replicas"], 4);
  // A merge patch replaces lists whole (RFC 7386; not Kubernetes' strategic merge).
  c.files = {{"p.json", R"({"spec":{"template":{"spec":{"containers":[{"name":"only"}]}}}})"}};
  ASSERT_TRUE(Apply(c, d).ok());
  EXPECT_EQ(d["spec"]["template"]["spec"]["containers"], json::array({{{"name", "only"}}}));

  c.files = {{"bad.yaml", "- a list\n"}};
  json before = d;
  Status s = Apply(c, d);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.yaml"), std::string::npos) << s.message();
  EXPECT_EQ(d, before);
}

TEST(GacPatch, FilesBecomeConfigMapAndSecretData) {
  GenericResource cm{"r", "app", true, "v1", "ConfigMap", "settings", ""};
  auto obj = NewObject(cm);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  Customization c;
  c.files = {{"game.properties", "lives=3\n"}, {"ui.yaml", "color: blue\n"}};
  c.configmap_keys = {{{"fileName", "ui.yaml"}, {"keyName", "user-interface.properties"}}};
  ASSERT_TRUE(Apply(c, *obj).ok());
  EXPECT_EQ((*obj)["data"], json({{"game.properties", "lives=3\n"}, {"user-interface.properties", "color: blue\n"}}));

  GenericResource sec{"r", "app", true, "v1", "secret", "creds", ""};
  auto s = NewObject(sec);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)["kind"], "Secret");
  EXPECT_EQ((*s)["type"], "Opaque");
  Customization sc;
  sc.files = {{"token", "s3cret"}};
  ASSERT_TRUE(Apply(sc, *s).ok());
  EXPECT_EQ((*s)["data"]["token"], "czNjcmV0");  // base64, as Secret data is

  // A file marked mergePatch patches the object instead of becoming a key.
  Customization mp;
  mp.files = {{"labels.yaml", "metadata:\n  labels:\n    edge: \"yes\"\n"}};
  mp.configmap_keys = {{{"fileName", "labels.yaml"}, {"keyName", "x"}, {"mergePatch", "true"}}};
  ASSERT_TRUE(Apply(mp, *obj).ok());
  EXPECT_EQ((*obj)["metadata"]["labels"]["edge"], "yes");
  EXPECT_FALSE((*obj)["data"].contains("x"));
  EXPECT_FALSE((*obj)["data"].contains("labels.yaml"));

  // Files of other kinds are ignored unless the patch type is merge.
  json d = Deployment("web");
  const json before = d;
  ASSERT_TRUE(Apply(c, d).ok());
  EXPECT_EQ(d, before);
}

TEST(GacPatch, NewObjectNeedsAManifestExceptConfigMapAndSecret) {
  GenericResource np{"r", "app", true, "networking.k8s.io/v1", "NetworkPolicy", "np", ""};
  EXPECT_FALSE(NewObject(np).ok());
  np.manifest = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np\nspec:\n  podSelector: {}\n";
  auto o = NewObject(np);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ((*o)["spec"]["podSelector"], json::object());
  EXPECT_TRUE(Names(np, *o));
  GenericResource other = np;
  other.kind = "networkpolicy";  // EMCO's examples spell kinds in lower case
  EXPECT_TRUE(Names(other, *o));
  other.object_name = "np2";
  EXPECT_FALSE(Names(other, *o));
}

TEST(GacScope, LabelAndNameWithAllowAndDeny) {
  const std::set<std::string> edge = {"edge"}, none;
  ClusterScope all;
  EXPECT_TRUE(Selects(all, "p", "c1", none));
  ClusterScope label{true, true, false, "p", "", "edge"};
  EXPECT_TRUE(Selects(label, "p", "c1", edge));
  EXPECT_FALSE(Selects(label, "p", "c2", none));
  EXPECT_FALSE(Selects(label, "q", "c1", edge));  // the label is the provider's
  ClusterScope deny_label = label;
  deny_label.deny = true;
  EXPECT_FALSE(Selects(deny_label, "p", "c1", edge));
  EXPECT_TRUE(Selects(deny_label, "p", "c2", none));
  EXPECT_TRUE(Selects(deny_label, "q", "c1", edge));
  ClusterScope name{true, false, false, "p", "c1", ""};
  EXPECT_TRUE(Selects(name, "p", "c1", none));
  EXPECT_FALSE(Selects(name, "p", "c2", none));
  ClusterScope deny_name = name;
  deny_name.deny = true;
  EXPECT_FALSE(Selects(deny_name, "p", "c1", none));
  EXPECT_TRUE(Selects(deny_name, "p", "c2", none));
}

TEST(GacFiles, StoredFormRoundTripsBinaryContent) {
  std::vector<File> files = {{"a.bin", std::string("\0\x01\xff\n", 4)}, {"b.txt", ""}};
  auto back = FilesFromStored(FilesToStored(files));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].content, files[0].content);
  EXPECT_EQ((*back)[1].name, "b.txt");
  EXPECT_TRUE(FilesFromStored("").ok());
  EXPECT_FALSE(FilesFromStored("{").ok());
}

// ---- the controller ----

const catalog::Keys kIntent = {"p", "ca", "v1", "dig", "gi"};

catalog::Keys K(std::initializer_list<std::string> more) {
  catalog::Keys k = kIntent;
  k.insert(k.end(), more);
  return k;
}

class GacControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
    Put("gacIntent", kIntent, {{"metadata", {{"name", "gi"}}}});
    for (auto [name, labels] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"c1", {"core"}}, {"c2", {}}, {"c3", {"core"}}, {"c4", {}}}) {
      Put("cluster", {"prov", name}, Doc(name, json::object()));
      for (const auto& l : labels) Put("clusterLabel", {"prov", name, l}, {{"clusterLabel", l}});
    }
  }

  void Put(const std::string& type, const catalog::Keys& k, const json& body) {
    ASSERT_TRUE(st_->Put(catalog::ObjectKey(type, k), body.dump()).ok());
  }
  void PutFile(const std::string& type, const catalog::Keys& k, const std::string& f) {
    ASSERT_TRUE(st_->Put(catalog::FileKey(type, k), f).ok());
  }

  void Resource(const std::string& name, bool new_object, const std::string& kind, const std::string& obj,
                const std::string& manifest = "") {
    Put("gacResource", K({name}),
        Doc(name, {{"app", "web"},
                   {"newObject", new_object ? "true" : "false"},
                   {"resourceGVK", {{"apiVersion", kind == "Deployment" ? "apps/v1" : "v1"}, {"kind", kind}, {"name", obj}}}}));
    if (!manifest.empty()) PutFile("gacResource", K({name}), manifest);
  }

  static json Scope(const std::string& scope, const std::string& what, const std::string& mode = "allow") {
    return {{"scope", scope},
            {"clusterProvider", "prov"},
            {"cluster", scope == "name" ? what : ""},
            {"clusterLabel", scope == "label" ? what : ""},
            {"mode", mode}};
  }

  void Customize(const std::string& resource, const std::string& name, json spec,
                 const std::vector<File>& files = {}) {
    Put("gacCustomization", K({resource, name}), Doc(name, std::move(spec)));
    PutFile("gacCustomization", K({resource, name}), FilesToStored(files));
  }

  std::string Context() {
    appcontext::Meta m = eco::testing::DigMeta("ns1", {"web"});
    auto id = ctx_->Create(m, 0);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    ResourceSet s;
    s.resources.push_back({"web+Deployment", Deployment("web", 1)});
    EXPECT_TRUE(ctx_->PutApp(*id, "web", s, eco::testing::MandatoryClusters({"c1", "c2", "c3", "c4"})).ok());
    return *id;
  }

  ResourceSet Res(const std::string& id, const std::string& cluster) {
    auto rs = ctx_->Resources(id, "web", "prov+" + cluster);
    EXPECT_TRUE(rs.ok()) << rs.status().ToString();
    return rs.ok() ? *rs : ResourceSet{};
  }

  int Replicas(const std::string& id, const std::string& cluster) {
    ResourceSet rs = Res(id, cluster);
    const appcontext::Resource* d = rs.Find("web+Deployment");
    return d ? d->object["spec"]["replicas"].get<int>() : -1;
  }

  ::eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
};

TEST_F(GacControllerTest, ScalesOnLabelledClustersAddsAConfigMapEverywhereAndASecretOnOneCluster) {
  Resource("scale", false, "Deployment", "web");
  Customize("scale", "core-replicas",
            {{"clusterSpecific", "true"},
             {"clusterInfo", Scope("label", "core")},
             {"patchType", "json"},
             {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 3}}})}});
  Resource("settings", true, "ConfigMap", "settings");
  Customize("settings", "from-file",
            {{"clusterSpecific", "false"}, {"clusterInfo", Scope("label", "")}},
            {{"app.properties", "mode=edge\n"}});
  Resource("creds", true, "Secret", "creds");
  Customize("creds", "only-c2", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("name", "c2")}},
            {{"token", "abc"}});

  std::string id = Context();
  GenericActionController gac(*st_);
  Status s = gac.UpdateAppContext(id, "gi", "");
  ASSERT_TRUE(s.ok()) << s.ToString();

  EXPECT_EQ(Replicas(id, "c1"), 3);
  EXPECT_EQ(Replicas(id, "c2"), 1);
  EXPECT_EQ(Replicas(id, "c3"), 3);
  EXPECT_EQ(Replicas(id, "c4"), 1);
  for (std::string c : {"c1", "c2", "c3", "c4"}) {
    ResourceSet rs = Res(id, c);
    const appcontext::Resource* cm = rs.Find("settings+ConfigMap");
    ASSERT_NE(cm, nullptr) << c;
    EXPECT_EQ(cm->object["data"]["app.properties"], "mode=edge\n");
    // Labelled as the scheduler labels a chart's objects, so status finds them.
    EXPECT_EQ(cm->object["metadata"]["labels"][appcontext::kAppLabel], "web");
    EXPECT_EQ(cm->object["metadata"]["labels"][appcontext::kContextLabel], appcontext::LabelValue(id));
    EXPECT_EQ(rs.Find("creds+Secret") != nullptr, c == "c2") << c;
  }
  EXPECT_EQ(Res(id, "c2").Find("creds+Secret")->object["data"]["token"], "YWJj");
  // What applied where, noted for the fleet plan.
  auto note = [&](const std::string& c) {
    auto n = ctx_->ClusterNote(id, "action/gi", "web", "prov+" + c);
    return n.ok() && n->has_value() ? **n : std::string("(none)");
  };
  EXPECT_EQ(note("c1"), "resource scale: customization core-replicas; resource settings (new): customization from-file");
  EXPECT_EQ(note("c2"),
            "resource creds (new): customization only-c2; resource settings (new): customization from-file");
  EXPECT_EQ(note("c4"), "resource settings (new): customization from-file");
}

TEST_F(GacControllerTest, ClustersWithTheSameOutcomeShareOneVariant) {
  Resource("scale", false, "Deployment", "web");
  Customize("scale", "not-core",
            {{"clusterSpecific", "true"},
             {"clusterInfo", Scope("label", "core", "deny")},
             {"patchType", "json"},
             {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 5}}})}});
  std::string id = Context();
  Status s = GenericActionController(*st_).UpdateAppContext(id, "gi", "");
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto refs = ctx_->Clusters(id, "web");
  ASSERT_TRUE(refs.ok());
  std::map<std::string, int> variant;
  for (const auto& r : *refs) variant[r.name] = r.variant;
  EXPECT_EQ(variant["c1"], 0);  // core: unchanged, the shared set
  EXPECT_EQ(variant["c3"], 0);
  EXPECT_NE(variant["c2"], 0);
  EXPECT_EQ(variant["c2"], variant["c4"]);
  EXPECT_EQ(Replicas(id, "c2"), 5);
  EXPECT_EQ(Replicas(id, "c1"), 1);
}

TEST_F(GacControllerTest, CustomizationsApplyInOrderAndNewObjectsCanBeCustomizedPerCluster) {
  Resource("np", true, "NetworkPolicy", "deny-all",
           "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: deny-all\nspec:\n  podSelector: {}\n");
  // Only cluster-specific customizations: the object goes where one applies.
  Customize("np", "a", {{"clusterSpecific", "true"}, {"clusterInfo", Scope("name", "c1")}});
  Customize("np", "b",
            {{"clusterSpecific", "true"},
             {"clusterInfo", Scope("label", "core")},
             {"patchType", "json"},
             {"patchJson", json::array({{{"op", "add"}, {"path", "/metadata/labels/zone"}, {"value", "core"}}})}});
  std::string id = Context();
  Status s = GenericActionController(*st_).UpdateAppContext(id, "gi", "");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(Res(id, "c1").Find("deny-all+NetworkPolicy"), nullptr);
  EXPECT_NE(Res(id, "c3").Find("deny-all+NetworkPolicy"), nullptr);
  EXPECT_EQ(Res(id, "c2").Find("deny-all+NetworkPolicy"), nullptr);
  EXPECT_EQ(Res(id, "c4").Find("deny-all+NetworkPolicy"), nullptr);
  EXPECT_EQ(Res(id, "c3").Find("deny-all+NetworkPolicy")->object["metadata"]["labels"]["zone"], "core");
}

TEST_F(GacControllerTest, APatchThatDoesNotApplyFailsNamingEverythingAndWritesNothing) {
  Resource("settings", true, "ConfigMap", "settings");
  Customize("settings", "ok", {{"clusterSpecific", "false"}, {"clusterInfo", Scope("label", "")}}, {{"k", "v"}});
  Resource("scale", false, "Deployment", "web");
  Customize("scale", "broken",
            {{"clusterSpecific", "true"},
             {"clusterInfo", Scope("name", "c4")},
             {"patchType", "json"},
             {"patchJson", json::array({{{"op", "replace"}, {"path", "/spec/nosuchfield"}, {"value", 2}}})}});
  std::string id = Context();
  auto before = ctx_->ReadApp(id, "web");
  ASSERT_TRUE(before.ok());
  Status s = GenericActionController(*st_).UpdateAppContext(id, "gi", "");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalid);
  for (std::string part : {"'gi'", "'scale'", "'broken'", "Deployment web", "prov/c4", "nosuchfield"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in " << s.message();
  }
  // Nothing written, not even the ConfigMap of the resource that worked.
  for (std::string c : {"c1", "c2", "c3", "c4"}) {
    EXPECT_EQ(Res(id, c).Find("settings+ConfigMap"), nullptr) << c;
  }
}

TEST_F(GacControllerTest, AMissingObjectOrAppOrIntentIsAClearError) {
  std::string id = Context();
  Status s = GenericActionController(*st_).UpdateAppContext(id, "nosuch", "");
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("nosuch"), std::string::npos);

  Resource("scale", false, "Deployment", "api");
  Customize("scale", "c", {{"clusterSpecific", "false"}, {"clusterInfo", Scope("label", "")}});
  s = GenericActionController(*st_).UpdateAppContext(id, "gi", "");
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("has no Deployment api"), std::string::npos) << s.message();

  Put("gacResource", K({"other"}),
      Doc("other", {{"app", "db"}, {"newObject", "true"}, {"resourceGVK", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "x"}}}}));
  s = GenericActionController(*st_).UpdateAppContext(id, "gi", "");
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("app 'db'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace eco::gac
