#include "k8s/drift.h"

#include <gtest/gtest.h>

namespace eco::k8s {
namespace {

using nlohmann::json;

json DriftDesired() {
  return json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app.eco.io/app": "web", "tier": "front"},
                 "annotations": {"app.eco.io/owner": "dig:p/ca/v1/dig"}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                                                   "ports": [{"containerPort": 80}]}]}}}})");
}

// What a server holds after eco applied DriftDesired(): defaults, status,
// its own metadata, and the managers of each field.
json DriftLive() {
  json live = DriftDesired();
  live["metadata"]["uid"] = "u1";
  live["metadata"]["resourceVersion"] = "7";
  live["metadata"]["generation"] = 1;
  live["metadata"]["managedFields"] = json::parse(R"([
    {"manager": "eco", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
     "fieldsType": "FieldsV1",
     "fieldsV1": {"f:metadata": {"f:labels": {"f:app.eco.io/app": {}, "f:tier": {}}},
                  "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                     "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}},
    {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
     "time": "2026-01-01T00:00:05Z", "subresource": "status", "fieldsType": "FieldsV1",
     "fieldsV1": {"f:status": {"f:replicas": {}}}}])");
  live["spec"]["strategy"] = {{"type", "RollingUpdate"}};
  live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent";
  live["status"] = {{"replicas", 2}};
  return live;
}

TEST(DriftedFields, ServerDefaultsStatusAndForeignFieldsAreNotDrift) {
  json live = DriftLive();
  live["metadata"]["labels"]["added-by-hand"] = "x";  // a label eco does not set
  live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1";
  EXPECT_TRUE(DriftedFields(live, DriftDesired()).empty());
  // 2 and 2.0 are one number.
  live["spec"]["replicas"] = 2.0;
  EXPECT_TRUE(DriftedFields(live, DriftDesired()).empty());
}

TEST(DriftedFields, ChangedFieldNamesPathValuesAndManager) {
  json live = DriftLive();
  live["spec"]["replicas"] = 5;
  // kubectl scale took the field over (an update takes what it changes).
  live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].erase("f:replicas");
  live["metadata"]["managedFields"].push_back(json::parse(R"(
    {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-02T00:00:00Z",
     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}})"));
  auto d = DriftedFields(live, DriftDesired());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "spec.replicas");
  EXPECT_EQ(d[0].desired, 2);
  EXPECT_EQ(d[0].live, 5);
  EXPECT_EQ(d[0].manager, "kubectl");
}

TEST(DriftedFields, ListElementsByIndexAndKeyedManagers) {
  json live = DriftLive();
  live["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:evil";
  live["metadata"]["managedFields"].push_back(json::parse(R"(
    {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-03T00:00:00Z",
     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        "k:{\"name\":\"web\"}": {"f:image": {}}}}}}}})"));
  auto d = DriftedFields(live, DriftDesired());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "spec.template.spec.containers[0].image");
  EXPECT_EQ(d[0].desired, "nginx:1.25");
  EXPECT_EQ(d[0].live, "nginx:evil");
  EXPECT_EQ(d[0].manager, "kubectl-edit");  // the newer of the two owners
  // A list of another length is one difference, as a whole.
  live = DriftLive();
  live["spec"]["template"]["spec"]["containers"][0]["ports"].push_back({{"containerPort", 81}});
  d = DriftedFields(live, DriftDesired());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "spec.template.spec.containers[0].ports");
  EXPECT_EQ(d[0].live.size(), 2u);
}

TEST(DriftedFields, RemovedLabelAndKeysWithDotsAndSkippedPaths) {
  json live = DriftLive();
  live["metadata"]["labels"].erase("app.eco.io/app");
  live["spec"]["replicas"] = 3;
  auto d = DriftedFields(live, DriftDesired());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path, "metadata.labels[app.eco.io/app]");
  EXPECT_TRUE(d[0].live.is_null());
  EXPECT_EQ(d[0].manager, "");
  EXPECT_EQ(d[1].path, "spec.replicas");
  EXPECT_EQ(d[1].manager, "eco");  // eco's entry still lists it: nobody else claimed it
  // A path an apply left out (Warn field validation) is not compared.
  d = DriftedFields(live, DriftDesired(), {"spec.replicas"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "metadata.labels[app.eco.io/app]");
  EXPECT_EQ(FieldManager(DriftLive(), "metadata.labels[app.eco.io/app]"), "eco");
  EXPECT_EQ(FieldManager(DriftLive(), "status.replicas"), "kube-controller-manager");
  EXPECT_EQ(FieldManager(DriftLive(), "spec.paused"), "");
}

}  // namespace
}  // namespace eco::k8s
