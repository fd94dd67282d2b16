#include "controllers/hpa/schedulable.h"

#include "common/json_fields.h"

namespace eco::hpa {

using nlohmann::json;

namespace {

const json* Member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The pod spec of a Pod, or of the pod template of any other workload.
const json* PodSpecOf(const json& workload) {
  const json* spec = Member(workload, "spec");
  if (spec == nullptr) return nullptr;
  if (StringField(workload, "kind") == "Pod") return spec;
  const json* tmpl = Member(*spec, "template");
  return tmpl == nullptr ? nullptr : Member(*tmpl, "spec");
}

bool IsTrue(const json* v) { return v != nullptr && v->is_boolean() && v->get<bool>(); }

}  // namespace

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op == "Exists") return true;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return false;
}

bool ToleratesAny(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const auto& t : tolerations) {
    if (Tolerates(t, taint)) return true;
  }
  return false;
}

std::vector<Toleration> PodTolerations(const json& workload) {
  std::vector<Toleration> out;
  const json* pod = PodSpecOf(workload);
  if (pod != nullptr) {
    if (const json* ts = Member(*pod, "tolerations"); ts != nullptr && ts->is_array()) {
      for (const auto& t : *ts) {
        if (!t.is_object()) continue;
        out.push_back({StringField(t, "key"), StringField(t, "operator"), StringField(t, "value"),
                       StringField(t, "effect")});
      }
    }
  }
  if (StringField(workload, "kind") == "DaemonSet") {
    // The DaemonSet controller adds these to every pod it creates, so its
    // pods land on cordoned and pressured nodes too.
    for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
      out.push_back({key, "Exists", "", "NoExecute"});
    }
    for (const char* key :
         {"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
          "node.kubernetes.io/pid-pressure", kUnschedulableTaint}) {
      out.push_back({key, "Exists", "", "NoSchedule"});
    }
    if (pod != nullptr && IsTrue(Member(*pod, "hostNetwork"))) {
      out.push_back({"node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule"});
    }
  }
  return out;
}

std::string DescribeTaint(const Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
}

std::string NodeExclusion(const NodeState& node, const std::vector<Toleration>& tolerations) {
  if (!node.ready) return "not Ready";
  if (node.unschedulable && !ToleratesAny(tolerations, {kUnschedulableTaint, "", "NoSchedule"})) {
    return "cordoned";
  }
  for (const Taint& t : node.taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    if (!ToleratesAny(tolerations, t)) return "has taint " + DescribeTaint(t) + " not tolerated";
  }
  return "";
}

}  // namespace eco::hpa
