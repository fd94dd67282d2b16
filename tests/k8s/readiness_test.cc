#include "k8s/readiness.h"

#include <gtest/gtest.h>

namespace eco::k8s {
namespace {

using nlohmann::json;

struct Case {
  std::string name;
  std::string object;  // JSON
  bool ready;
  std::string reason_part;
};

void RunTable(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Readiness r = CheckReady(json::parse(c.object));
    EXPECT_EQ(r.ready, c.ready) << r.reason;
    EXPECT_NE(r.reason.find(c.reason_part), std::string::npos) << r.reason;
  }
}

std::string Deploy(const std::string& spec, const std::string& status, int generation = 2) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","generation":)" +
         std::to_string(generation) + R"(},"spec":)" + spec + R"(,"status":)" + status + "}";
}

TEST(Readiness, Deployment) {
  const std::string available = R"("conditions":[{"type":"Available","status":"True"}])";
  RunTable({
      {"all ready",
       Deploy(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,)" +
               available + "}"),
       true, "3/3 replicas ready"},
      {"replicas default to 1",
       Deploy(
           "{}",
           R"({"observedGeneration":2,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,)" +
               available + "}"),
       true, "1/1"},
      {"not observed",
       Deploy(
           R"({"replicas":3})",
           R"({"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,)" +
               available + "}"),
       false, "observed"},
      {"partly ready",
       Deploy(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":2,"availableReplicas":2,)" +
               available + "}"),
       false, "2/3 replicas ready"},
      {"rolling",
       Deploy(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"replicas":4,"updatedReplicas":1,"readyReplicas":3,"availableReplicas":3,)" +
               available + "}"),
       false, "1/3 replicas updated"},
      {"old replicas left",
       Deploy(
           R"({"replicas":3})",
           R"({"observedGeneration":2,"replicas":4,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,)" +
               available + "}"),
       false, "old replicas"},
      {"not Available",
       Deploy(
           R"({"replicas":1})",
           R"({"observedGeneration":2,"replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,"conditions":[{"type":"Available","status":"False"}]})"),
       false, "Available"},
      {"no status", Deploy(R"({"replicas":1})", "{}"), false, "observed"},
      {"scaled to zero",
       Deploy(R"({"replicas":0})", R"({"observedGeneration":2,)" + available + "}"), true, "0/0"},
  });
}

TEST(Readiness, StatefulSetDaemonSetReplicaSet) {
  RunTable({
      {"sts ready",
       R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1,"readyReplicas":2,"currentRevision":"r1","updateRevision":"r1"}})",
       true, "2/2"},
      {"sts revision rolling",
       R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1,"readyReplicas":2,"currentRevision":"r1","updateRevision":"r2"}})",
       false, "r2"},
      {"sts not ready",
       R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1,"readyReplicas":1}})",
       false, "1/2 replicas ready"},
      {"ds ready",
       R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":3,"numberReady":3,"updatedNumberScheduled":3}})",
       true, "3/3 pods ready"},
      {"ds not ready",
       R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":3,"numberReady":1,"updatedNumberScheduled":3}})",
       false, "1/3 pods ready"},
      {"ds not updated",
       R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":3,"numberReady":3,"updatedNumberScheduled":2}})",
       false, "2/3 pods updated"},
      {"rs ready",
       R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1,"readyReplicas":2}})",
       true, "2/2"},
      {"rs not ready",
       R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1}})",
       false, "0/2"},
  });
}

TEST(Readiness, JobPodServicePhaseKinds) {
  RunTable({
      {"job complete",
       R"({"apiVersion":"batch/v1","kind":"Job","status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}})",
       true, "complete"},
      {"job running", R"({"apiVersion":"batch/v1","kind":"Job","status":{"active":1}})", false,
       "0/1 pods succeeded"},
      {"job failed",
       R"({"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}})",
       false, "job failed: BackoffLimitExceeded"},
      {"pod running ready",
       R"({"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})",
       true, "ready"},
      {"pod running not ready",
       R"({"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}})",
       false, "Ready is not True"},
      {"pod pending", R"({"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending"}})", false,
       "phase Pending"},
      {"pod succeeded", R"({"apiVersion":"v1","kind":"Pod","status":{"phase":"Succeeded"}})", true,
       "succeeded"},
      {"svc cluster ip", R"({"apiVersion":"v1","kind":"Service","spec":{"type":"ClusterIP"}})",
       true, "ClusterIP"},
      {"svc default type", R"({"apiVersion":"v1","kind":"Service","spec":{}})", true, "ClusterIP"},
      {"lb pending",
       R"({"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer"},"status":{"loadBalancer":{}}})",
       false, "ingress"},
      {"lb ready",
       R"({"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer"},"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.7"}]}}})",
       true, "10.0.0.7"},
      {"pvc bound",
       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","status":{"phase":"Bound"}})", true,
       "Bound"},
      {"pvc pending",
       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","status":{"phase":"Pending"}})", false,
       "Pending"},
      {"ns active", R"({"apiVersion":"v1","kind":"Namespace","status":{"phase":"Active"}})", true,
       "Active"},
      {"ns terminating",
       R"({"apiVersion":"v1","kind":"Namespace","status":{"phase":"Terminating"}})", false,
       "Terminating"},
      {"crd established",
       R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True"}]}})",
       true, "established"},
      {"crd not established",
       R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"NamesAccepted","status":"True"}]}})",
       false, "Established"},
      {"configmap exists", R"({"apiVersion":"v1","kind":"ConfigMap","data":{}})", true, "exists"},
      {"custom kind named Deployment",
       R"({"apiVersion":"example.com/v1","kind":"Deployment","status":{}})", true, "exists"},
      {"not an object", R"([1,2])", false, "not an object"},
  });
}

}  // namespace
}  // namespace eco::k8s
