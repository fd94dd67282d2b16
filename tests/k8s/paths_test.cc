#include "k8s/paths.h"

#include <gtest/gtest.h>

namespace eco::k8s {
namespace {

TEST(ParseApiVersion, Table) {
  struct Case {
    std::string in;
    bool ok;
    std::string group, version;
  };
  std::vector<Case> cases = {
      {"v1", true, "", "v1"},
      {"apps/v1", true, "apps", "v1"},
      {"stable.example.com/v1beta2", true, "stable.example.com", "v1beta2"},
      {"", false, "", ""},
      {"/v1", false, "", ""},
      {"apps/", false, "", ""},
      {"a/b/c", false, "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    Result<GroupVersion> gv = ParseApiVersion(c.in);
    ASSERT_EQ(gv.ok(), c.ok);
    if (!c.ok) {
      EXPECT_EQ(gv.status().code(), Code::kInvalid);
      continue;
    }
    EXPECT_EQ(gv->group, c.group);
    EXPECT_EQ(gv->version, c.version);
  }
}

TEST(ResourcePath, Table) {
  ResourceInfo pods{"", "v1", "Pod", "pods", true, {}};
  ResourceInfo nodes{"", "v1", "Node", "nodes", false, {}};
  ResourceInfo deploys{"apps", "v1", "Deployment", "deployments", true, {}};
  ResourceInfo crds{"apiextensions.k8s.io",      "v1",  "CustomResourceDefinition",
                    "customresourcedefinitions", false, {}};
  struct Case {
    const ResourceInfo* r;
    std::string ns, name, want;
  };
  std::vector<Case> cases = {
      {&pods, "default", "web-0", "/api/v1/namespaces/default/pods/web-0"},
      {&pods, "kube-system", "", "/api/v1/namespaces/kube-system/pods"},
      {&pods, "", "", "/api/v1/pods"},                // all namespaces
      {&nodes, "default", "n1", "/api/v1/nodes/n1"},  // cluster-scoped ignores ns
      {&deploys, "team-a", "web", "/apis/apps/v1/namespaces/team-a/deployments/web"},
      {&deploys, "", "", "/apis/apps/v1/deployments"},
      {&crds, "x", "widgets.example.com",
       "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"},
      {&nodes, "", "a b/c", "/api/v1/nodes/a%20b%2Fc"},  // names cannot escape the path
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(ResourcePath(*c.r, c.ns, c.name), c.want);
  }
}

TEST(AddQuery, EncodesSelectors) {
  std::string url = "/api/v1/pods";
  AddQuery(url, "labelSelector", "app in (a,b),tier!=db");
  AddQuery(url, "limit", "500");
  EXPECT_EQ(url, "/api/v1/pods?labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Ddb&limit=500");
}

TEST(ParseResourceList, SkipsSubresourcesAndKeepsScope) {
  auto doc = nlohmann::json::parse(R"({
    "kind": "APIResourceList", "groupVersion": "apps/v1",
    "resources": [
      {"name": "deployments", "singularName": "deployment", "namespaced": true,
       "kind": "Deployment", "verbs": ["create", "get", "patch"]},
      {"name": "deployments/status", "namespaced": true, "kind": "Deployment"},
      {"name": "controllerrevisions", "namespaced": true, "kind": "ControllerRevision"}
    ]})");
  Result<std::vector<ResourceInfo>> r = ParseResourceList(doc, {"apps", "v1"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].resource, "deployments");
  EXPECT_EQ((*r)[0].kind, "Deployment");
  EXPECT_TRUE((*r)[0].namespaced);
  EXPECT_EQ((*r)[0].api_version(), "apps/v1");
  EXPECT_EQ((*r)[0].verbs, (std::vector<std::string>{"create", "get", "patch"}));
  EXPECT_EQ((*r)[1].kind, "ControllerRevision");

  EXPECT_FALSE(ParseResourceList(nlohmann::json::object(), {"", "v1"}).ok());
}

TEST(BuiltinKind, KnownKindsOnlyAtTheirStableVersion) {
  std::optional<ResourceInfo> d = BuiltinKind({"apps", "v1"}, "Deployment");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->resource, "deployments");
  EXPECT_TRUE(d->namespaced);
  EXPECT_EQ(d->api_version(), "apps/v1");
  std::optional<ResourceInfo> ns = BuiltinKind({"", "v1"}, "Namespace");
  ASSERT_TRUE(ns);
  EXPECT_FALSE(ns->namespaced);
  EXPECT_EQ(ResourcePath(*ns, "x", "a"), "/api/v1/namespaces/a");
  EXPECT_FALSE(BuiltinKind({"apps", "v1beta1"}, "Deployment"));
  EXPECT_FALSE(BuiltinKind({"", "v1"}, "Deployment"));  // wrong group
  EXPECT_FALSE(BuiltinKind({"autoscaling", "v2"}, "HorizontalPodAutoscaler"));
  EXPECT_FALSE(BuiltinKind({"example.com", "v1"}, "Widget"));
  EXPECT_FALSE(BuiltinKind({"", "v1"}, "configmap"));  // kinds are case-sensitive
}

TEST(ResourceVersionIn, ReadsMetadataOnly) {
  EXPECT_EQ(ResourceVersionIn(R"({"kind":"ConfigMap","metadata":{"managedFields":[{"resourceVersion":"1"}],)"
                              R"("name":"c","resourceVersion":"42"},"data":{"resourceVersion":"9"}})"),
            "42");
  EXPECT_EQ(ResourceVersionIn(R"({"metadata":{"name":"c"},"resourceVersion":"7"})"), "");
  EXPECT_EQ(ResourceVersionIn(R"({"metadata":{"resourceVersion":42}})"), "");
  EXPECT_EQ(ResourceVersionIn(R"({"metadata":{"resourceVersion":"4)"), "");
  EXPECT_EQ(ResourceVersionIn(""), "");
}

TEST(ParseSlim, DropsWhatReadinessNeverReads) {
  const std::string obj =
      R"({"apiVersion":"apps/v1","kind":"Deployment","data":{"k":"v"},)"
      R"("metadata":{"name":"web","generation":2,"labels":{"app":"x"},"annotations":{"a":"b"},)"
      R"("managedFields":[{"manager":"eco"}]},)"
      R"("spec":{"replicas":3,"template":{"metadata":{"labels":{"app":"x"}}}},)"
      R"("status":{"observedGeneration":2,"readyReplicas":3,"template":"kept: not under spec"}})";
  auto check = [](const nlohmann::json& o) {
    EXPECT_FALSE(o.contains("data"));
    EXPECT_FALSE(o["metadata"].contains("managedFields"));
    EXPECT_FALSE(o["metadata"].contains("annotations"));
    EXPECT_FALSE(o["spec"].contains("template"));
    EXPECT_EQ(o["metadata"]["name"], "web");
    EXPECT_EQ(o["metadata"]["generation"], 2);
    EXPECT_EQ(o["metadata"]["labels"]["app"], "x");
    EXPECT_EQ(o["spec"]["replicas"], 3);
    EXPECT_EQ(o["status"]["readyReplicas"], 3);
  };
  nlohmann::json event = ParseSlim(R"({"type":"ADDED","object":)" + obj + "}", 2);
  ASSERT_TRUE(event.is_object());
  EXPECT_EQ(event["type"], "ADDED");
  check(event["object"]);
  nlohmann::json list = ParseSlim(R"({"kind":"DeploymentList","metadata":{"resourceVersion":"7"},"items":[)" + obj +
                                      "," + obj + "]}",
                                  3);
  ASSERT_TRUE(list.is_object());
  EXPECT_EQ(list["metadata"]["resourceVersion"], "7");
  ASSERT_EQ(list["items"].size(), 2u);
  for (const auto& item : list["items"]) check(item);
  EXPECT_TRUE(ParseSlim(R"({"type":"ADDED","object":{)", 2).is_discarded());
}

TEST(ParseGroupList, PreferredVersionFirst) {
  auto doc = nlohmann::json::parse(R"({
    "kind": "APIGroupList",
    "groups": [
      {"name": "autoscaling",
       "versions": [{"groupVersion": "autoscaling/v1", "version": "v1"},
                    {"groupVersion": "autoscaling/v2", "version": "v2"}],
       "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}},
      {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
       "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}
    ]})");
  Result<std::vector<GroupVersion>> r = ParseGroupList(doc);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].group + "/" + (*r)[0].version, "autoscaling/v2");
  EXPECT_EQ((*r)[1].group + "/" + (*r)[1].version, "autoscaling/v1");
  EXPECT_EQ((*r)[2].group + "/" + (*r)[2].version, "apps/v1");
}

}  // namespace
}  // namespace eco::k8s
