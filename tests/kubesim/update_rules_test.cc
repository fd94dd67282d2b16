// The update rules (fields that may not change) and the Go value printing
// their messages use.
#include "kubesim/update_rules.h"

#include <gtest/gtest.h>

namespace eco::kubesim {
namespace {

TEST(UpdateRulesTest, GoQuoteEscapesAsStrconvQuote) {
  EXPECT_EQ(GoQuote("plain"), "\"plain\"");
  EXPECT_EQ(GoQuote("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\x01\"");
  EXPECT_EQ(GoQuote("größe"), "\"größe\"");
}

TEST(UpdateRulesTest, LabelSelectorPrintsAsGoStruct) {
  EXPECT_EQ(GoLabelSelector(Json::parse(R"({"matchLabels": {"b": "2", "a": "1"}})")),
            "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"1\", \"b\":\"2\"}, "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}");
  EXPECT_EQ(GoLabelSelector(Json::parse(
                R"({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]},
                                                                  {"key": "e", "operator": "Exists"}]})")),
            "v1.LabelSelector{MatchLabels:map[string]string(nil), "
            "MatchExpressions:[]v1.LabelSelectorRequirement{"
            "v1.LabelSelectorRequirement{Key:\"k\", Operator:\"In\", Values:[]string{\"x\"}}, "
            "v1.LabelSelectorRequirement{Key:\"e\", Operator:\"Exists\", Values:[]string(nil)}}}");
}

TEST(UpdateRulesTest, PodTemplatePrintsDefaultedWithQuantitiesAndVolumes) {
  std::string v = GoPodTemplateSpec(Json::parse(R"({"metadata": {"labels": {"app": "x"}}, "spec": {
      "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}],
                      "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
      "volumes": [{"name": "data", "emptyDir": {}}]}})"));
  EXPECT_EQ(
      v.rfind("core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:\"\", GenerateName:\"\", "
              "Namespace:\"\", "
              "SelfLink:\"\", UID:\"\", ResourceVersion:\"\", Generation:0, "
              "CreationTimestamp:time.Date(1, "
              "time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:<nil>, "
              "DeletionGracePeriodSeconds:(*int64)(nil), Labels:map[string]string{\"app\":\"x\"}, ",
              0),
      0u)
      << v;
  EXPECT_NE(v.find("Spec:core.PodSpec{Volumes:[]core.Volume{core.Volume{Name:\"data\", "
                   "VolumeSource:core.VolumeSource{HostPath:(*core.HostPathVolumeSource)(nil), "
                   "EmptyDir:(*core.EmptyDirVolumeSource)(0xc"),
            std::string::npos)
      << v;
  EXPECT_NE(
      v.find(
          "Ports:[]core.ContainerPort{core.ContainerPort{Name:\"\", HostPort:0, ContainerPort:80, "
          "Protocol:\"TCP\", HostIP:\"\"}}"),
      std::string::npos)
      << v;
  EXPECT_NE(
      v.find(
          "Requests:core.ResourceList{\"cpu\":resource.Quantity{i:resource.int64Amount{value:100, "
          "scale:-3}, d:resource.infDec{Dec:(*inf.Dec)(nil)}, s:\"100m\", Format:\"DecimalSI\"}, "
          "\"memory\":resource.Quantity{i:resource.int64Amount{value:67108864, scale:0}, "
          "d:resource.infDec{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"BinarySI\"}}"),
      std::string::npos)
      << v;
  // An untagged image is pulled Always; the pod gets the scheduler's defaults.
  EXPECT_NE(v.find("ImagePullPolicy:\"Always\""), std::string::npos) << v;
  EXPECT_NE(v.find("RestartPolicy:\"Always\", TerminationGracePeriodSeconds:(*int64)(0xc"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("SchedulerName:\"default-scheduler\""), std::string::npos) << v;
}

TEST(UpdateRulesTest, ServiceKeepsAndFollowsClusterIPs) {
  Json old_svc = Json::parse(
      R"({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"]}})");
  Json omitted = Json::parse(R"({"spec": {"ports": [{"port": 80}]}})");
  PrepareUpdate("", "Service", old_svc, omitted);
  EXPECT_EQ(omitted["spec"]["clusterIP"], "10.96.0.5");
  EXPECT_EQ(omitted["spec"]["clusterIPs"], Json::array({"10.96.0.5"}));
  EXPECT_EQ(omitted["spec"]["type"], "ClusterIP");
  EXPECT_TRUE(ValidateUpdate("", "Service", old_svc, omitted).empty());

  Json changed = old_svc;
  changed["spec"]["clusterIP"] = "10.0.0.9";
  PrepareUpdate("", "Service", old_svc, changed);
  EXPECT_EQ(changed["spec"]["clusterIPs"], Json::array({"10.0.0.9"}));
  auto errs = ValidateUpdate("", "Service", old_svc, changed);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.clusterIPs[0]");
  EXPECT_EQ(errs[0].body, "Invalid value: []string{\"10.0.0.9\"}: may not change once set");

  // To and from ExternalName the addresses may go.
  Json external =
      Json::parse(R"({"spec": {"type": "ExternalName", "externalName": "x.example.com"}})");
  PrepareUpdate("", "Service", old_svc, external);
  EXPECT_TRUE(ValidateUpdate("", "Service", old_svc, external).empty());
  // Headless stays headless.
  Json headless = Json::parse(R"({"spec": {"clusterIP": "None", "clusterIPs": ["None"]}})");
  EXPECT_TRUE(ValidateUpdate("", "Service", headless, headless).empty());
}

TEST(UpdateRulesTest, SemanticEqualityTakesAbsentForEmpty) {
  Json a = Json::parse(R"({"spec": {"selector": {"matchLabels": {"app": "x"}}}})");
  Json b = Json::parse(
      R"({"spec": {"selector": {"matchLabels": {"app": "x"}, "matchExpressions": []}}})");
  EXPECT_TRUE(ValidateUpdate("apps", "Deployment", a, b).empty());
  // A Job's completions default to 1 when neither it nor parallelism is set.
  Json j1 = Json::parse(R"({"spec": {"template": {}}})");
  Json j2 = Json::parse(R"({"spec": {"template": {}, "completions": 1}})");
  EXPECT_TRUE(ValidateUpdate("batch", "Job", j1, j2).empty());
  Json j3 = Json::parse(R"({"spec": {"template": {}, "completions": 3}})");
  auto errs = ValidateUpdate("batch", "Job", j1, j3);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.completions");
  EXPECT_EQ(errs[0].body, "Invalid value: 3: field is immutable");
  EXPECT_EQ(InvalidMessage("Job.batch", "j", {errs[0], errs[0]}),
            "Job.batch \"j\" is invalid: spec.completions: Invalid value: 3: field is immutable");
  FieldError other{"FieldValueInvalid", "spec.selector",
                   "Invalid value: \"null\": field is immutable"};
  EXPECT_EQ(InvalidMessage("Job.batch", "j", {errs[0], other}),
            "Job.batch \"j\" is invalid: [spec.completions: Invalid value: 3: field is immutable, "
            "spec.selector: "
            "Invalid value: \"null\": field is immutable]");
}

TEST(UpdateRulesTest, ImmutableConfigMapsSecretTypesAndRoleRefs) {
  Json cm = Json::parse(R"({"immutable": true, "data": {"a": "1"}})");
  EXPECT_TRUE(ValidateUpdate("", "ConfigMap", cm, cm).empty());
  Json changed = Json::parse(R"({"data": {"a": "2"}})");
  auto errs = ValidateUpdate("", "ConfigMap", cm, changed);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].field, "immutable");
  EXPECT_EQ(errs[1].field, "data");
  EXPECT_EQ(errs[1].body, "Forbidden: field is immutable when `immutable` is set");
  EXPECT_TRUE(ValidateUpdate("", "ConfigMap", changed, cm).empty())
      << "a mutable one may become immutable";

  Json opaque = Json::parse(R"({"data": {}})");
  Json tls = Json::parse(R"({"type": "kubernetes.io/tls"})");
  EXPECT_TRUE(ValidateUpdate("", "Secret", opaque, Json::parse(R"({"type": "Opaque"})")).empty());
  errs = ValidateUpdate("", "Secret", opaque, tls);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "type");
  EXPECT_EQ(errs[0].body, "Invalid value: \"kubernetes.io/tls\": field is immutable");

  Json rb = Json::parse(
      R"({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}})");
  Json moved = Json::parse(
      R"({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "b"}})");
  errs = ValidateUpdate("rbac.authorization.k8s.io", "RoleBinding", rb, moved);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "roleRef");
  EXPECT_EQ(errs[0].body,
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", "
            "Kind:\"ClusterRole\", Name:\"b\"}: "
            "cannot change roleRef");
  EXPECT_TRUE(ValidateUpdate("rbac.authorization.k8s.io", "ClusterRoleBinding", rb, rb).empty());
}

}  // namespace
}  // namespace eco::kubesim
