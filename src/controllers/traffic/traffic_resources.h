// Builders of the Kubernetes objects the traffic controller adds: pure
// functions from intents (and cluster facts) to JSON manifests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace eco::controllers::traffic {

using nlohmann::json;

struct AccessIntent {
  std::string name;
  std::vector<std::string> urls;
  std::vector<std::string> methods;
};

struct ClientIntent {
  std::string name;
  std::string app;
  std::string app_label;  // key=value
  std::string service_name;
  std::vector<std::string> namespaces;
  std::vector<std::string> cidrs;
  std::vector<AccessIntent> access;
};

struct ServerIntent {
  std::string name;
  std::string app;
  std::string app_label;  // key=value
  std::string service_name;
  std::string external_name;
  int port = 0;
  std::string protocol;
  bool external_support = false;
  std::string service_mesh;
  std::string sidecar_proxy;  // "yes", "no" or "" (no management block)
  std::string tls_type;       // MUTUAL, SIMPLE, NONE or ""
  std::string service_certificate, service_private_key, ca_certificate;  // base64 PEM
  std::vector<ClientIntent> clients;
};

// Reads an inbound server intent document ({metadata, spec}).
Result<ServerIntent> ServerFromJson(const json& doc);
Result<ClientIntent> ClientFromJson(const json& doc);
Result<AccessIntent> AccessFromJson(const json& doc);

// A server cluster as the Istio resources see it (values from its kv-pairs).
struct GatewayCluster {
  std::string provider, name;
  std::string address;    // istioIngressGatewayAddress
  int port = 0;           // istioIngressGatewayPort (what remote clients dial)
  int internal_port = 0;  // istioIngressGatewayInternalPort (the gateway's TLS port)
};

// Everything below places namespaced objects in `ns` (the AppContext's).

// 1. NetworkPolicy <group>-<server>: server pods accept {protocol, port}
//    from the clients' pods and CIDRs.
json NetworkPolicy(const std::string& group, const ServerIntent& s, const std::string& ns);

// 2. Service discovery on a client cluster: headless Service S and its
//    Endpoints (the server clusters' addresses, on the intent's port).
json HeadlessService(const ServerIntent& s, const std::string& ns);
json DiscoveryEndpoints(const ServerIntent& s, const std::string& ns,
                        const std::vector<std::string>& addresses);
// One entry of the Endpoints' appcontext::kDiscoverAnnotation: the server's
// Service S in `service_ns` on `cluster_key`, whose address rsync reads
// there once it is deployed (no address is configured for that cluster).
json DiscoveryTarget(const ServerIntent& s, const std::string& cluster_key, const std::string& service_ns);

// 3. Istio (EMCO's `its`). Server side, per server cluster with remote clients.
json ServerGateway(const ServerIntent& s, const std::string& ns, const GatewayCluster& c);
json ServerServiceEntry(const ServerIntent& s, const std::string& ns, const GatewayCluster& c);
json ServerDestinationRule(const ServerIntent& s, const std::string& ns, const GatewayCluster& c);
// Client side, on client clusters that do not host the server. `salt`
// makes the virtual addresses differ between intents (see ServiceEntryAddress).
std::vector<json> ClientIstio(const ServerIntent& s, const std::string& ns,
                              const std::vector<GatewayCluster>& servers, const std::string& salt);
// External access through the ingress gateway (externalSupport with a
// sidecar): Gateway, VirtualService and, for MUTUAL/SIMPLE, the credential
// Secret. `gateway_port` is the cluster's istioIngressGatewayHttpsPort
// (MUTUAL/SIMPLE) or istioIngressGatewayHttpPort.
Result<std::vector<json>> ExternalAccess(const ServerIntent& s, const std::string& ns,
                                         int gateway_port);
// "MUTUAL" -> "mutual", "SIMPLE" -> "simple", otherwise "http".
std::string ExternalMode(const ServerIntent& s);
// AuthorizationPolicies S-auth-<client#>-<access#>, one per access intent.
std::vector<json> AuthorizationPolicies(const ServerIntent& s, const std::string& ns);

// An address in Istio's class E range 240.0.0.0/4 derived from `seed`:
// stable across runs, and unlikely to collide between intents (EMCO counts
// up from 240.0.0.1 in every run, so two intents on one cluster collide).
std::string ServiceEntryAddress(const std::string& seed);

// Host name of a service on one server cluster: S.NS.provider.cluster.
std::string ClusterHost(const ServerIntent& s, const std::string& ns, const std::string& provider,
                        const std::string& cluster);

}  // namespace eco::controllers::traffic
