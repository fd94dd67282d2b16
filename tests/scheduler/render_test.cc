// Rendering an app for an AppContext: chart + profile + DIG overrides through
// the Helm engine, install order, CRDs and hooks apart, eco's labels.
#include "scheduler/render.h"

#include <gtest/gtest.h>

#include "test_archives.h"

namespace eco::scheduler {
namespace {

using eco::testing::TgzOf;
using nlohmann::json;

std::string Chart() {
  const std::string d = "shop/";
  return TgzOf({
      {d + "Chart.yaml", "apiVersion: v2\nname: shop\ntype: application\nversion: 0.1.0\n"},
      {d + "values.yaml", "replicaCount: 1\ncolor: blue\nport: 80\n"},
      {d + "crds/foo.yaml",
       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: "
       "foos.example.com\n"},
      {d + "templates/deploy.yaml",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\n  namespace: "
       "{{ .Release.Namespace }}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector:\n    "
       "matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    "
       "spec:\n      containers:\n        - name: web\n          image: nginx\n"},
      {d + "templates/svc.yaml",
       "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - port: {{ .Values.port "
       "}}\n"},
      {d + "templates/cm.yaml",
       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  color: {{ .Values.color | quote "
       "}}\n  enabled: \"yes\"\n"},
      {d + "templates/hooks.yaml",
       "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: b-migrate\n  annotations:\n    helm.sh/hook: "
       "pre-install,post-delete\n    helm.sh/hook-weight: \"5\"\n---\napiVersion: batch/v1\nkind: "
       "Job\nmetadata:\n  name: a-prepare\n  annotations:\n    helm.sh/hook: pre-install\n    "
       "helm.sh/hook-weight: \"-1\"\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  "
       "annotations:\n    helm.sh/hook: test\n"},
      {d + "templates/empty.yaml", "# nothing here\n"},
  });
}

RenderInput Input() {
  RenderInput in;
  in.app = "shop";
  in.chart_tgz = Chart();
  in.release = "r1";
  in.namespace_ = "tenant";
  in.labels = {{"app.eco.io/context", "42"}, {"app.eco.io/app", "shop"}};
  return in;
}

std::vector<std::string> Names(const std::vector<appcontext::Resource>& v) {
  std::vector<std::string> out;
  for (const auto& r : v) out.push_back(r.name);
  return out;
}

TEST(RenderTest, InstallOrderCrdsAndHooks) {
  auto rs = RenderApp(Input());
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  EXPECT_EQ(Names(rs->resources),
            (std::vector<std::string>{"cfg+ConfigMap", "web+Service", "r1-web+Deployment"}));
  EXPECT_EQ(Names(rs->crds), (std::vector<std::string>{"foos.example.com+CustomResourceDefinition"}));
  // By weight then name; the test-only hook is dropped.
  EXPECT_EQ(Names(rs->hooks), (std::vector<std::string>{"a-prepare+Job", "b-migrate+Job"}));
  EXPECT_EQ(rs->hook_events["pre-install"], (std::vector<std::string>{"a-prepare+Job", "b-migrate+Job"}));
  EXPECT_EQ(rs->hook_events["post-delete"], (std::vector<std::string>{"b-migrate+Job"}));
  EXPECT_EQ(rs->hook_events.count("test"), 0u);
}

TEST(RenderTest, ObjectsAreJsonWithIntegersAndEcoLabels) {
  auto rs = RenderApp(Input());
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  const json& d = rs->Find("r1-web+Deployment")->object;
  EXPECT_TRUE(d["spec"]["replicas"].is_number_integer());
  EXPECT_EQ(d["metadata"]["namespace"], "tenant");
  EXPECT_EQ(d["metadata"]["labels"]["app.eco.io/context"], "42");
  EXPECT_EQ(d["spec"]["template"]["metadata"]["labels"]["app.eco.io/app"], "shop");
  EXPECT_EQ(d["spec"]["template"]["metadata"]["labels"]["app"], "web");
  // Selectors are not touched: they are immutable on a live Deployment.
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"].size(), 1u);
  const json& cm = rs->Find("cfg+ConfigMap")->object;
  EXPECT_EQ(cm["data"]["enabled"], "yes");
  EXPECT_EQ(rs->Find("web+Service")->object["spec"]["ports"][0]["port"], 80);
}

TEST(RenderTest, ProfileValuesAndFilesThenDigOverrides) {
  RenderInput in = Input();
  in.profile_tgz = TgzOf({
      {"manifest.yaml",
       "version: v1\ntype:\n  values: override_values.yaml\n  configresource:\n    - filepath: "
       "cm-new.yaml\n      chartpath: shop/templates/cm.yaml\n"},
      {"override_values.yaml", "replicaCount: 2\ncolor: red\n"},
      {"cm-new.yaml",
       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  profile: \"{{ .Values.color "
       "}}\"\n"},
  });
  in.overrides = {{"replicaCount", "3"}};
  auto rs = RenderApp(in);
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  EXPECT_EQ(rs->Find("r1-web+Deployment")->object["spec"]["replicas"], 3);
  const json& cm = rs->Find("cfg+ConfigMap")->object;
  EXPECT_EQ(cm["data"]["profile"], "red");
  EXPECT_FALSE(cm["data"].contains("color"));
}

TEST(RenderTest, ProfileErrorsNameTheApp) {
  RenderInput in = Input();
  in.profile_tgz = TgzOf({{"values.yaml", "a: 1\n"}});
  auto rs = RenderApp(in);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.status().message().find("manifest.yaml"), std::string::npos);
  EXPECT_NE(rs.status().message().find("shop"), std::string::npos);

  in.profile_tgz = TgzOf({{"manifest.yaml", "version: v1\ntype:\n  values: missing.yaml\n"}});
  rs = RenderApp(in);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.status().message().find("missing.yaml"), std::string::npos);
}

TEST(RenderTest, TemplateErrorsAndDuplicatesAreReported) {
  RenderInput in = Input();
  in.chart_tgz = TgzOf({
      {"bad/Chart.yaml", "apiVersion: v2\nname: bad\nversion: 0.1.0\n"},
      {"bad/templates/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
      {"bad/templates/b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
  });
  auto rs = RenderApp(in);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.status().message().find("two objects named x+ConfigMap"), std::string::npos)
      << rs.status().message();

  in.chart_tgz = TgzOf({
      {"bad/Chart.yaml", "apiVersion: v2\nname: bad\nversion: 0.1.0\n"},
      {"bad/templates/a.yaml", "{{ .Values.nope.deeper }}\n"},
  });
  rs = RenderApp(in);
  ASSERT_FALSE(rs.ok());
  EXPECT_NE(rs.status().message().find("rendering app shop"), std::string::npos) << rs.status().message();
}

}  // namespace
}  // namespace eco::scheduler
