// Whether a live object is ready, by the rules kubectl users expect per kind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace eco::k8s {

struct Readiness {
  bool ready = false;
  std::string reason;  // a short sentence: "2/3 replicas ready", "phase Bound"
};

// Pure: reads apiVersion, kind, metadata, spec and status of `obj`.
//   Deployment   observedGeneration >= generation, updated/available/ready
//                replicas == spec.replicas (default 1), no surplus old replicas,
//                condition Available True
//   StatefulSet  observedGeneration, readyReplicas == replicas, currentRevision
//                == updateRevision when set
//   DaemonSet    observedGeneration, desiredNumberScheduled == numberReady ==
//                updatedNumberScheduled
//   ReplicaSet   observedGeneration, readyReplicas == spec.replicas
//   Job          condition Complete True; condition Failed True is not ready
//   Pod          phase Running with condition Ready True, or phase Succeeded
//   Service      type LoadBalancer: status.loadBalancer.ingress non-empty;
//                other types ready
//   PersistentVolumeClaim  phase Bound
//   CustomResourceDefinition  condition Established True
//   Namespace    phase Active
//   anything else  ready once it exists
Readiness CheckReady(const nlohmann::json& obj);

}  // namespace eco::k8s
