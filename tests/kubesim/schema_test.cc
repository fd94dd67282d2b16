// The built-in kinds' schemas (src/kubesim/schemas.inc): which fields are
// undeclared, and the paths the API server's errors give them.
#include "kubesim/schema.h"

#include <gtest/gtest.h>

namespace eco::kubesim {
namespace {

std::vector<std::string> ApplyPaths(const std::vector<UnknownField>& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.apply_path);
  return out;
}

std::vector<std::string> DecodePaths(const std::vector<UnknownField>& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.decode_path);
  return out;
}

TEST(SchemaTest, TableLoadsAndKnowsTheServedKinds) {
  ASSERT_TRUE(LoadSchemas());
  for (auto [gv, kind] : std::vector<std::pair<const char*, const char*>>{
           {"v1", "ConfigMap"},
           {"v1", "Service"},
           {"v1", "Namespace"},
           {"apps/v1", "Deployment"},
           {"batch/v1", "Job"},
           {"autoscaling/v1", "HorizontalPodAutoscaler"},
           {"autoscaling/v2", "HorizontalPodAutoscaler"},
           {"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
           {"networking.k8s.io/v1", "Ingress"},
           {"rbac.authorization.k8s.io/v1", "ClusterRole"}}) {
    EXPECT_NE(FindKindSchema(gv, kind), nullptr) << gv << " " << kind;
  }
  EXPECT_EQ(FindKindSchema("example.com/v1", "Widget"), nullptr);
  EXPECT_EQ(FindKindSchema("apps/v1beta1", "Deployment"), nullptr);
}

TEST(SchemaTest, ReportsOutermostUndeclaredFieldsWithBothPathForms) {
  const KindSchema* d = FindKindSchema("apps/v1", "Deployment");
  ASSERT_NE(d, nullptr);
  Json obj = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "x", "labelz": {"a": "b"}, "labels": {"any": "thing"}},
    "spec": {
      "replica": {"deep": {"er": 1}},
      "template": {"spec": {
        "containers": [{"name": "c", "image": "i", "imagee": "j",
                        "ports": [{"containerPort": 80, "hostPorts": 1}],
                        "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}],
        "volumes": [{"name": "v", "emptyDir": {}, "bogus": true}]
      }}
    },
    "status": {"replicas": 1, "nope": 2}
  })");
  auto fields = UnknownFields(*d, obj);
  EXPECT_EQ(ApplyPaths(fields), (std::vector<std::string>{
                                    ".metadata.labelz",
                                    ".spec.replica",
                                    ".spec.template.spec.containers[name=\"c\"].imagee",
                                    ".spec.template.spec.containers[name=\"c\"].ports["
                                    "containerPort=80,protocol=\"TCP\"].hostPorts",
                                    ".spec.template.spec.volumes[name=\"v\"].bogus",
                                    ".status.nope",
                                }));
  EXPECT_EQ(DecodePaths(fields), (std::vector<std::string>{
                                     "metadata.labelz",
                                     "spec.replica",
                                     "spec.template.spec.containers[0].imagee",
                                     "spec.template.spec.containers[0].ports[0].hostPorts",
                                     "spec.template.spec.volumes[0].bogus",
                                     "status.nope",
                                 }));
  DropUnknownFields(*d, obj);
  EXPECT_TRUE(UnknownFields(*d, obj).empty());
  EXPECT_FALSE(obj["spec"].contains("replica"));
  EXPECT_EQ(obj["spec"]["template"]["spec"]["containers"][0]["image"], "i");
  EXPECT_EQ(obj["metadata"]["labels"]["any"], "thing");
}

TEST(SchemaTest, OpaqueAndAnyScalarTypesAcceptWhatTheyHold) {
  const KindSchema* rev = FindKindSchema("apps/v1", "ControllerRevision");
  ASSERT_NE(rev, nullptr);
  EXPECT_TRUE(
      UnknownFields(*rev, Json::parse(R"({"data": {"any": {"thing": [1, 2]}}, "revision": 1})"))
          .empty());
  const KindSchema* crd = FindKindSchema("apiextensions.k8s.io/v1", "CustomResourceDefinition");
  ASSERT_NE(crd, nullptr);
  Json c = Json::parse(
      R"({"spec": {"group": "g", "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
      "type": "object", "x-kubernetes-preserve-unknown-fields": true,
      "properties": {"spec": {"type": "object", "default": {"a": 1}, "items": {"type": "string"},
                              "additionalProperties": true, "x-kubernetes-int-or-string": true}}}}}]}})");
  EXPECT_TRUE(UnknownFields(*crd, c).empty()) << ApplyPaths(UnknownFields(*crd, c))[0];
  c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-unknown"] = 1;
  EXPECT_EQ(DecodePaths(UnknownFields(*crd, c)),
            std::vector<std::string>{
                "spec.versions[0].schema.openAPIV3Schema.properties.spec.x-unknown"});
  const KindSchema* svc = FindKindSchema("v1", "Service");
  ASSERT_NE(svc, nullptr);
  EXPECT_TRUE(
      UnknownFields(*svc, Json::parse(R"({"spec": {"ports": [{"port": 80, "targetPort": "http"}],
      "selector": {"app": "x"}, "clusterIPs": ["None"]}})"))
          .empty());
  // A value of another shape than declared is not this check's business.
  EXPECT_TRUE(UnknownFields(*svc, Json::parse(R"({"spec": "oops"})")).empty());
}

TEST(SchemaTest, CrdSchemaDeclaresItsPropertiesAndTheResourceFields) {
  auto schema = CrdKindSchema(Json::parse(R"({"type": "object", "properties": {"spec": {
      "type": "object", "properties": {
        "size": {"type": "integer"},
        "port": {"x-kubernetes-int-or-string": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "tuned": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                     "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "empty": {"type": "object"}}}}})"));
  ASSERT_NE(schema, nullptr);
  Json obj = Json::parse(R"({"apiVersion": "example.eco.io/v1", "kind": "Gadget",
      "metadata": {"name": "g", "labels": {"a": "b"}, "bogus": 1},
      "spec": {"size": 1, "colour": "red", "port": "http", "labels": {"x": "y"},
               "extra": {"any": {"thing": [1]}}, "tuned": {"free": 1, "known": {"a": "1", "b": 2}},
               "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                            "spec": {"anything": 1}, "other": 1},
               "ports": [{"name": "web", "proto": "TCP"}], "empty": {"gone": 1}},
      "status": {"ready": true}})");
  std::vector<UnknownField> unknown = UnknownFields(*schema, obj);
  EXPECT_EQ(ApplyPaths(unknown), (std::vector<std::string>{".metadata.bogus", ".spec.colour", ".spec.empty.gone",
                                                           ".spec.ports[name=\"web\"].proto", ".spec.template.other",
                                                           ".spec.tuned.known.b", ".status"}));
  EXPECT_EQ(DecodePaths(unknown), (std::vector<std::string>{"metadata.bogus", "spec.colour", "spec.empty.gone",
                                                            "spec.ports[0].proto", "spec.template.other",
                                                            "spec.tuned.known.b", "status"}));
  DropUnknownFields(*schema, obj);
  EXPECT_TRUE(UnknownFields(*schema, obj).empty());
  EXPECT_EQ(obj["spec"]["extra"], Json::parse(R"({"any": {"thing": [1]}})"));
  EXPECT_EQ(obj["spec"]["tuned"], Json::parse(R"({"free": 1, "known": {"a": "1"}})"));
  EXPECT_EQ(obj["spec"]["empty"], Json::object());
  EXPECT_FALSE(obj.contains("status"));

  // Preserving at the root keeps anything but undeclared metadata.
  auto open = CrdKindSchema(Json::parse(R"({"type": "object", "x-kubernetes-preserve-unknown-fields": true})"));
  EXPECT_EQ(DecodePaths(UnknownFields(*open, Json::parse(R"({"top": 1, "metadata": {"nam": "x"}})"))),
            std::vector<std::string>{"metadata.nam"});
  // A CRD is stored unvalidated: extensions of the wrong type count as absent.
  auto odd = CrdKindSchema(Json::parse(R"({"type": 5, "properties": {"a": {"type": "array",
      "x-kubernetes-list-type": 1, "x-kubernetes-list-map-keys": "name", "x-kubernetes-preserve-unknown-fields": "yes"}}})"));
  EXPECT_EQ(DecodePaths(UnknownFields(*odd, Json::parse(R"({"a": [1], "b": 2})"))), std::vector<std::string>{"b"});
}

}  // namespace
}  // namespace eco::kubesim
