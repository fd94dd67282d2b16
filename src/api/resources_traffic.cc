// Intent resources of the traffic (dtc) controller (reference §2.5, §10.1):
//   DIG/traffic-group-intents/{trafficGroupIntent}
//     /inbound-intents/{inboundServerIntent}
//       /clients/{inboundClientsIntent}
//         /access-points/{inboundClientsAccessIntent}
// and the sub-controller registry /v2/dtc-controllers.
#include <arpa/inet.h>

#include <string>

#include "api/resources.h"
#include "api/validate.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace eco::api {
namespace {

// A pod label selector term "key=value" (EMCO's appLabel).
Status CheckAppLabel(const json& s, const char* where) {
  ECO_RETURN_IF_ERROR(CheckString(s, "appLabel", where, {true, 256, false}));
  const auto& v = s["appLabel"].get_ref<const std::string&>();
  auto eq = v.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == v.size() ||
      v.find('=', eq + 1) != std::string::npos) {
    return Invalid(std::string("Invalid Input: ") + where + " '" + v + "' must be key=value");
  }
  return Status::Ok();
}

// A required array of strings; absent or null is normalized to [].
Status CheckArray(json& s, const char* field, const std::string& where) {
  auto it = s.find(field);
  if (it == s.end() || it->is_null()) {
    s[field] = json::array();
    return Status::Ok();
  }
  return CheckStringArray(s, field, where);
}

bool ValidCidr(const std::string& c) {
  auto slash = c.find('/');
  if (slash == std::string::npos || slash + 1 == c.size() || c.size() - slash > 4) return false;
  std::string ip = c.substr(0, slash), bits = c.substr(slash + 1);
  for (char ch : bits) {
    if (ch < '0' || ch > '9') return false;
  }
  int n = std::stoi(bits);
  unsigned char buf[16];
  if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return n <= 32;
  if (inet_pton(AF_INET6, ip.c_str(), buf) == 1) return n <= 128;
  return false;
}

// EMCO's url pattern: an absolute path, '*' allowed only at the end.
bool ValidUrlPath(const std::string& u) {
  if (u.empty() || u[0] != '/') return false;
  auto star = u.find('*');
  return star == std::string::npos || star == u.size() - 1;
}

Status ValidateServer(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
  ECO_RETURN_IF_ERROR(CheckAppLabel(s, "spec.appLabel"));
  ECO_RETURN_IF_ERROR(CheckString(s, "serviceName", "spec.serviceName", kName));
  ECO_RETURN_IF_ERROR(CheckString(s, "externalName", "spec.externalName", {false, 128, false}));
  ECO_RETURN_IF_ERROR(CheckInt(s, "port", "spec.port", true, 1, 65535));
  ECO_RETURN_IF_ERROR(CheckString(s, "protocol", "spec.protocol", {true, 5, false}));
  ECO_RETURN_IF_ERROR(CheckBool(s, "externalSupport", "spec.externalSupport"));
  if (!s.contains("externalSupport") || s["externalSupport"].is_null()) s["externalSupport"] = false;
  ECO_RETURN_IF_ERROR(CheckString(s, "serviceMesh", "spec.serviceMesh", {false, 128, false}));
  ECO_RETURN_IF_ERROR(CheckString(s, "edgeCNF", "spec.edgeCNF", {false, 128, false}));
  auto m = s.find("management");
  if (m != s.end() && !m->is_null()) {
    if (!m->is_object()) return Invalid("Invalid Input: spec.management must be an object");
    ECO_RETURN_IF_ERROR(
        CheckString(*m, "sidecarProxy", "spec.management.sidecarProxy", {true, 3, false}));
    std::string sp = (*m)["sidecarProxy"].get<std::string>();
    if (sp != "yes" && sp != "no") {
      return Invalid("Invalid Input: spec.management.sidecarProxy must be yes or no");
    }
    ECO_RETURN_IF_ERROR(CheckString(*m, "tlsType", "spec.management.tlsType", {false, 6, false}));
    std::string tls = m->value("tlsType", "");
    if (!tls.empty() && tls != "MUTUAL" && tls != "SIMPLE" && tls != "NONE") {
      return Invalid("Invalid Input: spec.management.tlsType must be MUTUAL, SIMPLE or NONE");
    }
  }
  auto e = s.find("external");
  if (e != s.end() && !e->is_null()) {
    if (!e->is_object()) return Invalid("Invalid Input: spec.external must be an object");
    // EMCO's schema puts the certificates directly under `external`, its
    // code reads them under `external.externalCerts`: both are accepted.
    auto check_certs = [](const json& o, const std::string& where) {
      if (!o.is_object()) return Invalid("Invalid Input: " + where + " must be an object");
      for (const char* k : {"serviceCertificate", "servicePrivateKey", "caCertificate"}) {
        ECO_RETURN_IF_ERROR(CheckString(o, k, where + "." + k, {false, 0, false}));
      }
      return Status::Ok();
    };
    ECO_RETURN_IF_ERROR(check_certs(*e, "spec.external"));
    auto c = e->find("externalCerts");
    if (c != e->end() && !c->is_null()) {
      ECO_RETURN_IF_ERROR(check_certs(*c, "spec.external.externalCerts"));
    }
  }
  return Status::Ok();
}

Status ValidateClients(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
  ECO_RETURN_IF_ERROR(CheckAppLabel(s, "spec.appLabel"));
  ECO_RETURN_IF_ERROR(CheckString(s, "serviceName", "spec.serviceName", kName));
  ECO_RETURN_IF_ERROR(CheckArray(s, "namespaces", "spec.namespaces"));
  for (const auto& ns : s["namespaces"]) {
    if (!ValidName(ns.get<std::string>())) {
      return Invalid("Invalid Input: spec.namespaces entry '" + ns.get<std::string>() +
                     "' is not a valid namespace name");
    }
  }
  ECO_RETURN_IF_ERROR(CheckArray(s, "cidrs", "spec.cidrs"));
  for (const auto& c : s["cidrs"]) {
    if (!ValidCidr(c.get<std::string>())) {
      return Invalid("Invalid Input: spec.cidrs entry '" + c.get<std::string>() +
                     "' is not a CIDR (address/prefix-length)");
    }
  }
  return Status::Ok();
}

Status ValidateAccess(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "action", "spec.action", {true, 16, false}));
  if (s["action"] != "ALLOW") return Invalid("Invalid Input: spec.action must be ALLOW");
  ECO_RETURN_IF_ERROR(CheckArray(s, "url", "spec.url"));
  for (const auto& u : s["url"]) {
    if (!ValidUrlPath(u.get<std::string>())) {
      return Invalid("Invalid Input: spec.url entry '" + u.get<std::string>() +
                     "' must be a path starting with '/' ('*' allowed only at the end)");
    }
  }
  ECO_RETURN_IF_ERROR(CheckArray(s, "access", "spec.access"));
  for (const auto& a : s["access"]) {
    const auto& m = a.get_ref<const std::string&>();
    if (m != "GET" && m != "PUT" && m != "POST" && m != "DELETE") {
      return Invalid("Invalid Input: spec.access entry '" + m + "' must be GET, PUT, POST or DELETE");
    }
  }
  return Status::Ok();
}

Status ValidateDtcController(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "host", "spec.host", {true, 128, false}));
  ECO_RETURN_IF_ERROR(CheckInt(s, "port", "spec.port", true, 1, 65535));
  ECO_RETURN_IF_ERROR(CheckString(s, "type", "spec.type", {false, 48, false}));
  std::string t = s.value("type", "");
  if (t.empty()) t = "action";
  if (t != "action") return Invalid("Invalid Input: spec.type must be action");
  s["type"] = t;
  return CheckInt(s, "priority", "spec.priority", true, 1, 100);
}

}  // namespace

void AddTrafficResources(const AddFn& add, const ResourceDef* dig,
                         const std::vector<std::string>& dig_item) {
  // The app definition (a sibling of the DIG under the composite app): the
  // registry is being built, so it is found through the parent, not FindResource.
  const ResourceDef* app = nullptr;
  for (const ResourceDef* c : dig->parent->children) {
    if (c->type == "app") app = c;
  }
  // Server and client intents refer to their app: deleting it is refused.
  auto app_ref = [app](const json& b, const KeyValues& k, std::vector<Ref>& out) {
    if (!app) return;
    KeyValues t(k.begin(), k.begin() + 3);  // project, composite app, version
    t.push_back(b["spec"]["app"].get<std::string>());
    out.push_back({app, std::move(t)});
  };

  auto T = Under(dig_item, {"traffic-group-intents"});
  auto* group = add({.type = "trafficGroupIntent", .display = "Traffic group intent",
                     .exists_message = "TrafficGroupIntent already exists",
                     .parent = dig, .collection = T, .own_keys = {"trafficGroupIntent"}});

  auto S = Under(T, {"{trafficGroupIntent}", "inbound-intents"});
  auto* server = add({.type = "inboundServerIntent", .display = "Inbound server intent",
                      .exists_message = "ServerInboundIntent already exists",
                      .parent = group, .collection = S, .own_keys = {"inboundServerIntent"},
                      .validate = ValidateServer, .refs = app_ref});

  auto C = Under(S, {"{inboundServerIntent}", "clients"});
  auto* clients = add({.type = "inboundClientsIntent", .display = "Inbound clients intent",
                       .exists_message = "InboundClientsIntent already exists",
                       .parent = server, .collection = C, .own_keys = {"inboundClientsIntent"},
                       .validate = ValidateClients, .refs = app_ref});

  add({.type = "inboundClientsAccessIntent", .display = "Inbound clients access intent",
       .parent = clients, .collection = Under(C, {"{inboundClientsIntent}", "access-points"}),
       .own_keys = {"inboundClientsAccessIntent"}, .validate = ValidateAccess});

  add({.type = "dtcController", .display = "Controller", .collection = {"dtc-controllers"},
       .own_keys = {"dtcController"}, .validate = ValidateDtcController});
}

}  // namespace eco::api
