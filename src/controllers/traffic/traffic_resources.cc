#include "controllers/traffic/traffic_resources.h"

#include <cctype>
#include <cstdint>

namespace eco::controllers::traffic {
namespace {

const char kIstioNs[] = "istio-system";
const char kNetworking[] = "networking.istio.io/v1beta1";

json Object(const char* api_version, const char* kind, const std::string& name,
            const std::string& ns) {
  return {{"apiVersion", api_version},
          {"kind", kind},
          {"metadata", {{"name", name}, {"namespace", ns}}}};
}

// "k=v" -> {"k": "v"} (validated by the API; tolerate anything here).
json MatchLabels(const std::string& label) {
  auto eq = label.find('=');
  if (eq == std::string::npos) return {{label, ""}};
  return {{label.substr(0, eq), label.substr(eq + 1)}};
}

// Kubernetes ports speak TCP, UDP or SCTP; HTTP, GRPC... ride on TCP.
std::string L4Protocol(const std::string& p) {
  std::string u;
  for (char c : p) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u == "UDP" || u == "SCTP" ? u : "TCP";
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<std::vector<std::string>> Strings(const json& spec, const char* field,
                                         const std::string& where) {
  std::vector<std::string> out;
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return out;
  if (!it->is_array()) return Invalid(where + "." + field + " must be an array");
  for (const auto& v : *it) {
    if (!v.is_string()) return Invalid(where + "." + field + " must hold strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::string> Str(const json& o, const char* field, const std::string& where) {
  auto it = o.find(field);
  if (it == o.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(where + "." + field + " must be a string");
  return it->get<std::string>();
}

Result<const json*> Spec(const json& doc, const char* what) {
  if (!doc.is_object()) return Invalid(std::string(what) + " is not an object");
  auto it = doc.find("spec");
  if (it == doc.end() || !it->is_object()) return Invalid(std::string(what) + " has no spec");
  return &*it;
}

std::string Name(const json& doc) {
  auto m = doc.find("metadata");
  if (m == doc.end() || !m->is_object()) return "";
  return m->value("name", "");
}

#define TRY_ASSIGN(lhs, expr)                  \
  do {                                         \
    auto tr_ = (expr);                         \
    if (!tr_.ok()) return tr_.status();        \
    lhs = std::move(tr_.value());              \
  } while (0)

}  // namespace

Result<ServerIntent> ServerFromJson(const json& doc) {
  ServerIntent s;
  s.name = Name(doc);
  const std::string where = "inbound server intent '" + s.name + "' spec";
  const json* spec = nullptr;
  TRY_ASSIGN(spec, Spec(doc, "inbound server intent"));
  TRY_ASSIGN(s.app, Str(*spec, "app", where));
  TRY_ASSIGN(s.app_label, Str(*spec, "appLabel", where));
  TRY_ASSIGN(s.service_name, Str(*spec, "serviceName", where));
  TRY_ASSIGN(s.external_name, Str(*spec, "externalName", where));
  TRY_ASSIGN(s.protocol, Str(*spec, "protocol", where));
  TRY_ASSIGN(s.service_mesh, Str(*spec, "serviceMesh", where));
  auto port = spec->find("port");
  if (port == spec->end() || !port->is_number_integer()) return Invalid(where + ".port must be an integer");
  int64_t p = port->get<int64_t>();
  if (p < 1 || p > 65535) return Invalid(where + ".port must be between 1 and 65535");
  s.port = static_cast<int>(p);
  auto ext = spec->find("externalSupport");
  s.external_support = ext != spec->end() && ext->is_boolean() && ext->get<bool>();
  auto m = spec->find("management");
  if (m != spec->end() && m->is_object()) {
    TRY_ASSIGN(s.sidecar_proxy, Str(*m, "sidecarProxy", where + ".management"));
    TRY_ASSIGN(s.tls_type, Str(*m, "tlsType", where + ".management"));
  }
  auto e = spec->find("external");
  if (e != spec->end() && e->is_object()) {
    // externalCerts (what EMCO's code reads) wins over the schema's place.
    for (const json* o : {&*e, e->contains("externalCerts") ? &(*e)["externalCerts"] : nullptr}) {
      if (!o || !o->is_object()) continue;
      auto take = [&](const char* k, std::string& dst) {
        auto it = o->find(k);
        if (it != o->end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
          dst = it->get<std::string>();
        }
      };
      take("serviceCertificate", s.service_certificate);
      take("servicePrivateKey", s.service_private_key);
      take("caCertificate", s.ca_certificate);
    }
  }
  if (s.app.empty() || s.app_label.empty() || s.service_name.empty()) {
    return Invalid(where + " needs app, appLabel and serviceName");
  }
  return s;
}

Result<ClientIntent> ClientFromJson(const json& doc) {
  ClientIntent c;
  c.name = Name(doc);
  const std::string where = "inbound clients intent '" + c.name + "' spec";
  const json* spec = nullptr;
  TRY_ASSIGN(spec, Spec(doc, "inbound clients intent"));
  TRY_ASSIGN(c.app, Str(*spec, "app", where));
  TRY_ASSIGN(c.app_label, Str(*spec, "appLabel", where));
  TRY_ASSIGN(c.service_name, Str(*spec, "serviceName", where));
  TRY_ASSIGN(c.namespaces, Strings(*spec, "namespaces", where));
  TRY_ASSIGN(c.cidrs, Strings(*spec, "cidrs", where));
  if (c.app.empty()) return Invalid(where + " needs app");
  return c;
}

Result<AccessIntent> AccessFromJson(const json& doc) {
  AccessIntent a;
  a.name = Name(doc);
  const std::string where = "inbound clients access intent '" + a.name + "' spec";
  const json* spec = nullptr;
  TRY_ASSIGN(spec, Spec(doc, "inbound clients access intent"));
  TRY_ASSIGN(a.urls, Strings(*spec, "url", where));
  TRY_ASSIGN(a.methods, Strings(*spec, "access", where));
  return a;
}

json NetworkPolicy(const std::string& group, const ServerIntent& s, const std::string& ns) {
  json np = Object("networking.k8s.io/v1", "NetworkPolicy", group + "-" + s.name, ns);
  json from = json::array();
  for (const auto& c : s.clients) {
    json peer = {{"podSelector", {{"matchLabels", MatchLabels(c.app_label)}}}};
    // A bare podSelector matches the policy's namespace only.
    if (!c.namespaces.empty()) {
      peer["namespaceSelector"] = {
          {"matchExpressions",
           json::array({{{"key", "kubernetes.io/metadata.name"},
                         {"operator", "In"},
                         {"values", c.namespaces}}})}};
    }
    from.push_back(std::move(peer));
  }
  for (const auto& c : s.clients) {
    for (const auto& cidr : c.cidrs) from.push_back({{"ipBlock", {{"cidr", cidr}}}});
  }
  np["spec"] = {
      {"podSelector", {{"matchLabels", MatchLabels(s.app_label)}}},
      {"policyTypes", json::array({"Ingress"})},
      {"ingress", json::array({{{"from", std::move(from)},
                                {"ports", json::array({{{"protocol", L4Protocol(s.protocol)},
                                                        {"port", s.port}}})}}})}};
  return np;
}

json HeadlessService(const ServerIntent& s, const std::string& ns) {
  json svc = Object("v1", "Service", s.service_name, ns);
  svc["spec"] = {{"clusterIP", "None"},
                 {"ports", json::array({{{"name", Lower(L4Protocol(s.protocol))},
                                         {"port", s.port},
                                         {"targetPort", s.port},
                                         {"protocol", L4Protocol(s.protocol)}}})}};
  return svc;
}

json DiscoveryEndpoints(const ServerIntent& s, const std::string& ns,
                        const std::vector<std::string>& addresses) {
  json ep = Object("v1", "Endpoints", s.service_name, ns);
  // A subset needs an address; discovered ones are added by rsync.
  if (addresses.empty()) {
    ep["subsets"] = json::array();
    return ep;
  }
  json addrs = json::array();
  for (const auto& a : addresses) addrs.push_back({{"ip", a}});
  ep["subsets"] = json::array({{{"addresses", std::move(addrs)},
                                {"ports", json::array({{{"name", Lower(L4Protocol(s.protocol))},
                                                        {"port", s.port},
                                                        {"protocol", L4Protocol(s.protocol)}}})}}});
  return ep;
}

json DiscoveryTarget(const ServerIntent& s, const std::string& cluster_key, const std::string& service_ns) {
  return {{"cluster", cluster_key},
          {"namespace", service_ns},
          {"service", s.service_name},
          {"port", s.port},
          {"portName", Lower(L4Protocol(s.protocol))},
          {"protocol", L4Protocol(s.protocol)}};
}

std::string ClusterHost(const ServerIntent& s, const std::string& ns, const std::string& provider,
                        const std::string& cluster) {
  return s.service_name + "." + ns + "." + provider + "." + cluster;
}

json ServerGateway(const ServerIntent& s, const std::string& ns, const GatewayCluster& c) {
  json gw = Object(kNetworking, "Gateway", s.service_name + "-gateway", kIstioNs);
  gw["spec"] = {
      {"selector", {{"istio", "ingressgateway"}}},
      {"servers", json::array({{{"port", {{"number", c.internal_port}, {"name", "tls"}, {"protocol", "TLS"}}},
                                {"tls", {{"mode", "AUTO_PASSTHROUGH"}}},
                                {"hosts", json::array({ClusterHost(s, ns, c.provider, c.name)})}}})}};
  return gw;
}

json ServerServiceEntry(const ServerIntent& s, const std::string& ns, const GatewayCluster& c) {
  json se = Object(kNetworking, "ServiceEntry", s.service_name + "-se-server", kIstioNs);
  se["spec"] = {{"hosts", json::array({ClusterHost(s, ns, c.provider, c.name)})},
                {"endpoints", json::array({{{"address", s.service_name + "." + ns}}})},
                {"ports", json::array({{{"name", "tcp"}, {"number", s.port}, {"protocol", s.protocol}}})},
                {"location", "MESH_INTERNAL"},
                {"resolution", "DNS"},
                {"exportTo", json::array({"."})}};
  return se;
}

json ServerDestinationRule(const ServerIntent& s, const std::string& ns, const GatewayCluster& c) {
  json dr = Object(kNetworking, "DestinationRule", s.service_name + "-se-server-dr-dr", kIstioNs);
  dr["spec"] = {{"host", ClusterHost(s, ns, c.provider, c.name)},
                {"trafficPolicy", {{"tls", {{"mode", "ISTIO_MUTUAL"}}}}}};
  return dr;
}

std::string ServiceEntryAddress(const std::string& seed) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : seed) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  // 240.0.0.1 .. 255.255.255.254: the whole class E block minus its ends.
  uint32_t ip = 0xF0000000u + 1u + static_cast<uint32_t>(h % ((1u << 28) - 2u));
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

std::vector<json> ClientIstio(const ServerIntent& s, const std::string& ns,
                              const std::vector<GatewayCluster>& servers, const std::string& salt) {
  json hosts = json::array();
  json endpoints = json::array();
  for (const auto& c : servers) {
    hosts.push_back(ClusterHost(s, ns, c.provider, c.name));
    endpoints.push_back({{"address", c.address}, {"ports", {{"tcp", c.port}}}});
  }
  auto entry = [&](const std::string& suffix, json h) {
    json se = Object(kNetworking, "ServiceEntry", s.service_name + "-se-" + suffix, ns);
    se["spec"] = {{"hosts", std::move(h)},
                  {"addresses", json::array({ServiceEntryAddress(salt + "/" + suffix)})},
                  {"endpoints", endpoints},
                  {"ports", json::array({{{"name", "tcp"}, {"number", s.port}, {"protocol", s.protocol}}})},
                  {"location", "MESH_INTERNAL"},
                  {"resolution", "DNS"}};
    return se;
  };
  auto rule = [&](const std::string& name, const std::string& host) {
    json dr = Object(kNetworking, "DestinationRule", name, ns);
    dr["spec"] = {{"host", host}, {"trafficPolicy", {{"tls", {{"mode", "ISTIO_MUTUAL"}}}}}};
    return dr;
  };
  std::vector<json> out;
  out.push_back(entry("client0", hosts));
  out.push_back(entry("client1", json::array({s.service_name})));
  for (size_t i = 0; i < servers.size(); ++i) {
    out.push_back(rule(s.service_name + "-dr-client" + std::to_string(i) + "-dr",
                       ClusterHost(s, ns, servers[i].provider, servers[i].name)));
  }
  out.push_back(rule(s.service_name + "-dr-client-svcname-dr", s.service_name));
  return out;
}

std::string ExternalMode(const ServerIntent& s) {
  if (s.tls_type == "MUTUAL") return "mutual";
  if (s.tls_type == "SIMPLE") return "simple";
  return "http";
}

Result<std::vector<json>> ExternalAccess(const ServerIntent& s, const std::string& ns,
                                         int gateway_port) {
  const std::string mode = ExternalMode(s);
  const std::string where = "inbound server intent '" + s.name + "'";
  if (s.external_name.empty()) {
    return Invalid(where + ": externalSupport with a sidecar proxy needs spec.externalName");
  }
  const bool tls = mode != "http";
  if (tls && (s.service_certificate.empty() || s.service_private_key.empty())) {
    return Invalid(where + ": tlsType " + s.tls_type +
                   " needs spec.external.externalCerts.serviceCertificate and servicePrivateKey");
  }
  if (mode == "mutual" && s.ca_certificate.empty()) {
    return Invalid(where + ": tlsType MUTUAL needs spec.external.externalCerts.caCertificate");
  }
  const std::string gw_name = s.service_name + "-ext-" + mode + "-gateway";
  const std::string credential = s.service_name + "-credential";
  json server = {{"hosts", json::array({s.external_name})}};
  if (tls) {
    server["port"] = {{"number", gateway_port}, {"name", "https"}, {"protocol", "HTTPS"}};
    server["tls"] = {{"mode", s.tls_type}, {"credentialName", credential}};
  } else {
    server["port"] = {{"number", gateway_port}, {"name", "http"}, {"protocol", "HTTP"}};
  }
  json gw = Object(kNetworking, "Gateway", gw_name, ns);
  gw["spec"] = {{"selector", {{"istio", "ingressgateway"}}}, {"servers", json::array({server})}};

  json vs = Object(kNetworking, "VirtualService", s.service_name + "-vs-" + gw_name, ns);
  vs["spec"] = {{"hosts", json::array({s.external_name})},
                {"gateways", json::array({gw_name})},
                {"http", json::array({{{"route", json::array({{{"destination",
                                                                {{"host", s.service_name},
                                                                 {"port", {{"number", s.port}}}}}}})}}})}};
  std::vector<json> out = {std::move(gw), std::move(vs)};
  if (tls) {
    // The intent carries base64 PEM, which is what Secret.data holds.
    json secret = Object("v1", "Secret", credential, kIstioNs);
    secret["type"] = "Opaque";
    secret["data"] = {{"tls.crt", s.service_certificate}, {"tls.key", s.service_private_key}};
    if (mode == "mutual") secret["data"]["ca.crt"] = s.ca_certificate;
    out.push_back(std::move(secret));
  }
  return out;
}

std::vector<json> AuthorizationPolicies(const ServerIntent& s, const std::string& ns) {
  json hosts = json::array({s.service_name + "." + ns, s.service_name + "." + ns + ".svc.cluster.local",
                            s.service_name});
  if (s.external_support && !s.external_name.empty()) hosts.push_back(s.external_name);
  std::vector<json> out;
  for (size_t k = 0; k < s.clients.size(); ++k) {
    const ClientIntent& c = s.clients[k];
    for (size_t m = 0; m < c.access.size(); ++m) {
      const AccessIntent& a = c.access[m];
      json ap = Object("security.istio.io/v1beta1", "AuthorizationPolicy",
                       s.service_name + "-auth-" + std::to_string(k) + "-" + std::to_string(m), ns);
      json operation = {{"hosts", hosts}};
      if (!a.methods.empty()) operation["methods"] = a.methods;
      if (!a.urls.empty()) operation["paths"] = a.urls;
      json rule = {{"to", json::array({{{"operation", std::move(operation)}}})}};
      if (!c.namespaces.empty()) {
        rule["from"] = json::array({{{"source", {{"namespaces", c.namespaces}}}}});
      }
      ap["spec"] = {{"selector", {{"matchLabels", MatchLabels(s.app_label)}}},
                    {"action", "ALLOW"},
                    {"rules", json::array({std::move(rule)})}};
      out.push_back(std::move(ap));
    }
  }
  return out;
}

}  // namespace eco::controllers::traffic
