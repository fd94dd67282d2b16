// HPA (hardware-platform-aware) placement intents, EMCO's hpa-plc API:
//   DIG/hpa-intents/{hpaIntent}
//     /hpa-resource-consumers/{hpaConsumer}
//       /resource-requirements/{hpaResource}
#include "api/resources.h"
#include "api/validate.h"
#include "common/json_fields.h"
#include "controllers/hpa/amount.h"

#include <string_view>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace eco::api {
namespace {

// EMCO's wording for a requirement whose `resource` does not match `allocatable`.
const char kMismatch[] =
    "Invalid Input: resource-spec allocatable and resource field value mismatch";

Status ValidateIntent(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "app", "spec.app", kName));
  b["spec"] = json{{"app", s["app"]}};
  return Status::Ok();
}

Status ValidateConsumer(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  ECO_RETURN_IF_ERROR(CheckString(s, "apiVersion", "spec.apiVersion", {false, 253, false}));
  ECO_RETURN_IF_ERROR(CheckString(s, "kind", "spec.kind", {false, 63, false}));
  ECO_RETURN_IF_ERROR(CheckString(s, "name", "spec.name", {true, 253, false}));
  ECO_RETURN_IF_ERROR(CheckString(s, "container", "spec.container", {false, 253, false}));
  ECO_RETURN_IF_ERROR(CheckInt(s, "replicas", "spec.replicas", false, 1, 1000000));
  // The action controller edits these kinds (see docs/controllers.md).
  std::string kind = StringField(s, "kind", "");
  if (!kind.empty() && kind != "Deployment" && kind != "StatefulSet" && kind != "DaemonSet") {
    return Invalid("Invalid Input: spec.kind '" + kind +
                   "' is not supported (Deployment, StatefulSet or DaemonSet)");
  }
  // Empty optional fields are left out, as EMCO's omitempty does.
  json out = json::object();
  for (const char* k : {"apiVersion", "kind", "name", "container"}) {
    std::string v = StringField(s, k, "");
    if (!v.empty() || std::string_view(k) == "name") out[k] = v;
  }
  // The controller counts a consumer without replicas as one.
  if (s.contains("replicas") && !s["replicas"].is_null())
    out["replicas"] = static_cast<int64_t>(s["replicas"].get<double>());
  b["spec"] = std::move(out);
  return Status::Ok();
}

Status ValidateRequirement(json& b) {
  ECO_RETURN_IF_ERROR(RequireSpec(b, true));
  json& s = b["spec"];
  auto alloc = s.find("allocatable");
  if (alloc == s.end() || alloc->is_null()) {
    return Invalid("Invalid Input: spec.allocatable is required");
  }
  ECO_RETURN_IF_ERROR(CheckBool(s, "allocatable", "spec.allocatable"));
  ECO_RETURN_IF_ERROR(CheckBool(s, "mandatory", "spec.mandatory"));
  ECO_RETURN_IF_ERROR(CheckInt(s, "weight", "spec.weight", false, 1, 1000000));
  auto res = s.find("resource");
  if (res == s.end() || res->is_null()) return Invalid("Invalid Input: spec.resource is required");
  if (!res->is_object()) return Invalid("Invalid Input: spec.resource must be an object");
  const json& r = *res;
  json out_res = json::object();
  if (alloc->get<bool>()) {
    if (!r.contains("name") && r.contains("key")) return Invalid(kMismatch);
    ECO_RETURN_IF_ERROR(CheckString(r, "name", "spec.resource.name", {true, 253, false}));
    ECO_RETURN_IF_ERROR(CheckInt(r, "requests", "spec.resource.requests", true, 1, INT64_MAX));
    ECO_RETURN_IF_ERROR(CheckInt(r, "limits", "spec.resource.limits", false, 0, INT64_MAX));
    ECO_RETURN_IF_ERROR(CheckString(r, "units", "spec.resource.units", {false, 16, false}));
    std::string name = r["name"].get<std::string>();
    auto requests = static_cast<int64_t>(r["requests"].get<double>());
    if (r["requests"].is_number_integer()) requests = r["requests"].get<int64_t>();
    int64_t limits = 0;
    if (r.contains("limits") && !r["limits"].is_null()) {
      limits = r["limits"].is_number_integer() ? r["limits"].get<int64_t>()
                                               : static_cast<int64_t>(r["limits"].get<double>());
    }
    std::string units = StringField(r, "units", "");
    auto amount = hpa::RequirementAmount(name, requests, units);
    if (!amount.ok()) return Invalid("Invalid Input: spec.resource: " + amount.status().message());
    if (limits > 0) {
      auto lim = hpa::RequirementAmount(name, limits, units);
      if (!lim.ok()) return Invalid("Invalid Input: spec.resource: " + lim.status().message());
      if (requests > limits) {
        return Invalid(
            "Invalid Input: resource-spec requests must be less or equal to limits");
      }
    }
    out_res = {{"name", name}, {"requests", requests}};
    if (limits > 0) out_res["limits"] = limits;
    if (!units.empty()) out_res["units"] = units;
  } else {
    if (!r.contains("key") && r.contains("name")) return Invalid(kMismatch);
    ECO_RETURN_IF_ERROR(CheckString(r, "key", "spec.resource.key", {true, 317, false}));
    // A node label value to match; an empty one would match nothing useful.
    ECO_RETURN_IF_ERROR(CheckString(r, "value", "spec.resource.value", {true, 63, false}));
    out_res = {{"key", r["key"]}, {"value", r["value"]}};
  }
  // mandatory false and weight not given are left out, as EMCO's omitempty
  // does; nothing reads them.
  json out = {{"allocatable", alloc->get<bool>()}, {"resource", std::move(out_res)}};
  if (s.contains("mandatory") && s["mandatory"].is_boolean() && s["mandatory"].get<bool>())
    out["mandatory"] = true;
  if (s.contains("weight") && !s["weight"].is_null()) out["weight"] = s["weight"];
  b["spec"] = std::move(out);
  return Status::Ok();
}

}  // namespace

void AddHpaResources(const AddFn& add, const ResourceDef* dig,
                     const std::vector<std::string>& dig_item) {
  // The registry is still being built: find the app definition among the
  // composite app's children rather than through FindResource.
  const ResourceDef* app = nullptr;
  if (dig->parent) {
    for (const ResourceDef* c : dig->parent->children) {
      if (c->type == "app") app = c;
    }
  }
  auto H = Under(dig_item, {"hpa-intents"});
  auto* intent = add({
      .type = "hpaIntent", .display = "Intent", .parent = dig, .collection = H,
      .own_keys = {"hpaIntent"}, .validate = ValidateIntent,
      .refs = [app](const json& b, const KeyValues& k, std::vector<Ref>& out) {
        // The app must outlive the intents that name it.
        if (app == nullptr) return;
        KeyValues t(k.begin(), k.begin() + 3);
        t.push_back(b["spec"]["app"].get<std::string>());
        out.push_back({app, std::move(t)});
      },
      .name_query = "intent", .delete_all = true});

  auto C = Under(H, {"{hpaIntent}", "hpa-resource-consumers"});
  auto* consumer = add({.type = "hpaConsumer", .display = "Consumer", .parent = intent,
                        .collection = C, .own_keys = {"hpaConsumer"},
                        .validate = ValidateConsumer, .name_query = "consumer",
                        .delete_all = true});

  add({.type = "hpaResource", .display = "Resource", .parent = consumer,
       .collection = Under(C, {"{hpaConsumer}", "resource-requirements"}),
       .own_keys = {"hpaResource"}, .validate = ValidateRequirement,
       .parent_check = [](const json& b, const json& parent) {
         // Allocatable resources are requested by one container of the workload.
         if (!b["spec"]["allocatable"].get<bool>()) return Status::Ok();
         const json* spec = parent.is_object() && parent.contains("spec") ? &parent["spec"] : nullptr;
         if (spec == nullptr || !spec->is_object() || StringField(*spec, "container", "").empty()) {
           return Invalid(
               "Invalid Input: allocatable resources need the consumer's spec.container");
         }
         return Status::Ok();
       },
       .name_query = "resource", .name_query_list = true, .delete_all = true});
}

}  // namespace eco::api
