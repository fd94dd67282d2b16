#include "k8s/readiness.h"

#include <cstdint>
#include <string_view>

namespace eco::k8s {
namespace {

using nlohmann::json;

const json& Field(const json& obj, std::string_view key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

int64_t Int(const json& obj, std::string_view key, int64_t fallback = 0) {
  const json& v = Field(obj, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

std::string Str(const json& obj, std::string_view key) {
  const json& v = Field(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// The condition of `type` in status.conditions, or null.
const json& Condition(const json& status, std::string_view type) {
  static const json kNull;
  const json& conds = Field(status, "conditions");
  if (!conds.is_array()) return kNull;
  for (const json& c : conds) {
    if (Str(c, "type") == type) return c;
  }
  return kNull;
}

bool ConditionTrue(const json& status, std::string_view type) {
  return Str(Condition(status, type), "status") == "True";
}

std::string Ratio(int64_t have, int64_t want, std::string_view what) {
  return std::to_string(have) + "/" + std::to_string(want) + " " + std::string(what);
}

Readiness Ready(std::string reason) { return {true, std::move(reason)}; }
Readiness NotReady(std::string reason) { return {false, std::move(reason)}; }

// Shared by the workload kinds: has the controller seen the latest spec?
bool Observed(const json& obj, const json& status) {
  int64_t generation = Int(Field(obj, "metadata"), "generation");
  return Int(status, "observedGeneration", -1) >= generation;
}

Readiness Deployment(const json& obj, const json& spec, const json& status) {
  if (!Observed(obj, status)) return NotReady("the controller has not observed the latest spec");
  int64_t want = Int(spec, "replicas", 1);
  int64_t updated = Int(status, "updatedReplicas");
  int64_t available = Int(status, "availableReplicas");
  int64_t ready = Int(status, "readyReplicas");
  if (updated < want) return NotReady(Ratio(updated, want, "replicas updated"));
  if (ready < want) return NotReady(Ratio(ready, want, "replicas ready"));
  if (available < want) return NotReady(Ratio(available, want, "replicas available"));
  if (int64_t total = Int(status, "replicas"); total > want) {
    return NotReady(std::to_string(total - want) + " old replicas pending termination");
  }
  if (!ConditionTrue(status, "Available")) return NotReady("condition Available is not True");
  return Ready(Ratio(ready, want, "replicas ready"));
}

Readiness StatefulSet(const json& obj, const json& spec, const json& status) {
  if (!Observed(obj, status)) return NotReady("the controller has not observed the latest spec");
  int64_t want = Int(spec, "replicas", 1);
  int64_t ready = Int(status, "readyReplicas");
  if (ready < want) return NotReady(Ratio(ready, want, "replicas ready"));
  std::string current = Str(status, "currentRevision");
  std::string update = Str(status, "updateRevision");
  if (!update.empty() && current != update) {
    return NotReady("rolling out revision " + update + " (current " + current + ")");
  }
  return Ready(Ratio(ready, want, "replicas ready"));
}

Readiness DaemonSet(const json& obj, const json& status) {
  if (!Observed(obj, status)) return NotReady("the controller has not observed the latest spec");
  int64_t desired = Int(status, "desiredNumberScheduled");
  int64_t ready = Int(status, "numberReady");
  int64_t updated = Int(status, "updatedNumberScheduled");
  if (updated < desired) return NotReady(Ratio(updated, desired, "pods updated"));
  if (ready < desired) return NotReady(Ratio(ready, desired, "pods ready"));
  return Ready(Ratio(ready, desired, "pods ready"));
}

Readiness ReplicaSet(const json& obj, const json& spec, const json& status) {
  if (!Observed(obj, status)) return NotReady("the controller has not observed the latest spec");
  int64_t want = Int(spec, "replicas", 1);
  int64_t ready = Int(status, "readyReplicas");
  if (ready < want) return NotReady(Ratio(ready, want, "replicas ready"));
  return Ready(Ratio(ready, want, "replicas ready"));
}

Readiness Job(const json& status) {
  const json& failed = Condition(status, "Failed");
  if (Str(failed, "status") == "True") {
    std::string why = Str(failed, "reason");
    std::string msg = Str(failed, "message");
    std::string reason = "job failed";
    if (!why.empty()) reason += ": " + why;
    if (!msg.empty()) reason += " (" + msg + ")";
    return NotReady(reason);
  }
  if (ConditionTrue(status, "Complete")) return Ready("job complete");
  return NotReady(Ratio(Int(status, "succeeded"), Int(status, "active") + Int(status, "succeeded"),
                        "pods succeeded"));
}

Readiness Pod(const json& status) {
  std::string phase = Str(status, "phase");
  if (phase == "Succeeded") return Ready("pod succeeded");
  if (phase != "Running") return NotReady("phase " + (phase.empty() ? "unknown" : phase));
  if (!ConditionTrue(status, "Ready")) return NotReady("running, condition Ready is not True");
  return Ready("running and ready");
}

Readiness Service(const json& spec, const json& status) {
  std::string type = Str(spec, "type");
  if (type != "LoadBalancer") return Ready("type " + (type.empty() ? "ClusterIP" : type));
  const json& ingress = Field(Field(status, "loadBalancer"), "ingress");
  if (!ingress.is_array() || ingress.empty()) return NotReady("no load balancer ingress yet");
  const json& first = ingress[0];
  std::string where = Str(first, "ip");
  if (where.empty()) where = Str(first, "hostname");
  return Ready("load balancer at " + (where.empty() ? std::string("an address") : where));
}

Readiness Phase(const json& status, std::string_view want) {
  std::string phase = Str(status, "phase");
  if (phase == want) return Ready("phase " + phase);
  return NotReady("phase " + (phase.empty() ? "unknown" : phase));
}

}  // namespace

Readiness CheckReady(const json& obj) {
  if (!obj.is_object()) return NotReady("not an object");
  const std::string kind = Str(obj, "kind");
  const std::string api_version = Str(obj, "apiVersion");
  const std::string group = api_version.find('/') == std::string::npos
                                ? std::string()
                                : api_version.substr(0, api_version.find('/'));
  const json& spec = Field(obj, "spec");
  const json& status = Field(obj, "status");
  // Kinds are matched with their group so a custom resource that happens to
  // be called "Deployment" falls to the default rule.
  if (group == "apps") {
    if (kind == "Deployment") return Deployment(obj, spec, status);
    if (kind == "StatefulSet") return StatefulSet(obj, spec, status);
    if (kind == "DaemonSet") return DaemonSet(obj, status);
    if (kind == "ReplicaSet") return ReplicaSet(obj, spec, status);
  } else if (group == "batch" && kind == "Job") {
    return Job(status);
  } else if (group.empty()) {
    if (kind == "Pod") return Pod(status);
    if (kind == "Service") return Service(spec, status);
    if (kind == "PersistentVolumeClaim") return Phase(status, "Bound");
    if (kind == "Namespace") return Phase(status, "Active");
  } else if (group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition") {
    if (ConditionTrue(status, "Established")) return Ready("established");
    return NotReady("condition Established is not True");
  }
  return Ready("exists");
}

}  // namespace eco::k8s
