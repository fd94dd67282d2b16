// The fleet kube-sim serves: --clusters N or a --fleet YAML file.
#include <set>

#include <yaml-cpp/yaml.h>

#include "kubesim/sim.h"

namespace eco::kubesim {

namespace {

std::map<std::string, std::string> StringMap(const YAML::Node& n, const std::string& where) {
  std::map<std::string, std::string> out;
  if (!n) return out;
  if (!n.IsMap()) throw std::runtime_error(where + " must be a map");
  for (const auto& kv : n) {
    if (!kv.second.IsScalar()) throw std::runtime_error(where + "." + kv.first.as<std::string>() + " must be a scalar");
    out[kv.first.as<std::string>()] = kv.second.Scalar();
  }
  return out;
}

}  // namespace

Result<std::vector<ClusterSpec>> ParseFleet(const std::string& yaml_text) {
  std::vector<ClusterSpec> out;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap() || !root["clusters"] || !root["clusters"].IsSequence()) {
      return Invalid("fleet: expected a map with a `clusters` list");
    }
    std::set<std::string> names;
    size_t i = 0;
    for (const auto& c : root["clusters"]) {
      std::string where = "fleet: clusters[" + std::to_string(i++) + "]";
      if (!c.IsMap() || !c["name"] || !c["name"].IsScalar()) return Invalid(where + ": `name` is required");
      ClusterSpec spec;
      spec.name = c["name"].Scalar();
      if (spec.name.empty() || spec.name.find_first_of("/ ?#%") != std::string::npos) {
        return Invalid(where + ": cluster name \"" + spec.name + "\" cannot be used in a URL path");
      }
      if (!names.insert(spec.name).second) return Invalid(where + ": duplicate cluster name " + spec.name);
      if (c["token"]) spec.token = c["token"].Scalar();
      if (c["loadBalancerPool"]) {
        if (!c["loadBalancerPool"].IsSequence()) return Invalid(where + ".loadBalancerPool must be a list");
        for (const auto& a : c["loadBalancerPool"]) {
          if (!a.IsScalar() || a.Scalar().empty()) return Invalid(where + ".loadBalancerPool holds IPs or host names");
          spec.load_balancer_pool.push_back(a.Scalar());
        }
      }
      if (c["nodes"]) {
        if (!c["nodes"].IsSequence()) return Invalid(where + ".nodes must be a list");
        size_t j = 0;
        std::set<std::string> node_names;
        for (const auto& n : c["nodes"]) {
          std::string nwhere = where + ".nodes[" + std::to_string(j++) + "]";
          if (!n.IsMap() || !n["name"] || !n["name"].IsScalar()) return Invalid(nwhere + ": `name` is required");
          NodeSpec node;
          node.name = n["name"].Scalar();
          if (!node_names.insert(node.name).second) return Invalid(nwhere + ": duplicate node name " + node.name);
          node.labels = StringMap(n["labels"], nwhere + ".labels");
          node.allocatable = StringMap(n["allocatable"], nwhere + ".allocatable");
          if (node.allocatable.empty()) {
            node.allocatable = {{"cpu", "4"}, {"memory", "16Gi"}, {"ephemeral-storage", "100Gi"}};
          }
          if (n["addresses"]) {
            if (!n["addresses"].IsSequence()) return Invalid(nwhere + ".addresses must be a list");
            for (const auto& a : n["addresses"]) {
              if (!a.IsMap() || !a["type"] || !a["address"]) {
                return Invalid(nwhere + ".addresses[] needs type and address");
              }
              const std::string type = a["type"].Scalar();
              if (type != "InternalIP" && type != "ExternalIP" && type != "Hostname" && type != "InternalDNS" &&
                  type != "ExternalDNS") {
                return Invalid(nwhere + ".addresses[]: unknown type " + type);
              }
              node.addresses.emplace_back(type, a["address"].Scalar());
            }
          }
          spec.nodes.push_back(std::move(node));
        }
      }
      out.push_back(std::move(spec));
    }
  } catch (const std::exception& e) {
    return Invalid(std::string("fleet: ") + e.what());
  }
  if (out.empty()) return Invalid("fleet: no clusters");
  return out;
}

std::vector<ClusterSpec> DefaultFleet(int n, const std::string& name_prefix) {
  std::vector<ClusterSpec> out;
  out.reserve(n);
  for (int i = 1; i <= n; ++i) {
    ClusterSpec s;
    s.name = name_prefix + std::to_string(i);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace eco::kubesim
