#include "catalog/agent_identity.h"
#include "catalog/catalog.h"

namespace eco::catalog {

std::string_view DeliveryName(Delivery d) { return d == Delivery::kAgent ? "agent" : "push"; }

Result<Delivery> DeliveryOf(const nlohmann::json& obj) {
  auto s = obj.find("spec");
  if (s == obj.end() || !s->is_object()) return Delivery::kPush;
  auto d = s->find("delivery");
  if (d == s->end() || d->is_null()) return Delivery::kPush;
  if (d->is_string() && *d == "push") return Delivery::kPush;
  if (d->is_string() && *d == "agent") return Delivery::kAgent;
  return Invalid("Invalid Input: spec.delivery must be \"push\" or \"agent\"");
}

Result<Delivery> ClusterDelivery(store::Store& st, const std::string& provider, const std::string& cluster) {
  ECO_ASSIGN_OR_RETURN(auto obj, Get(st, "cluster", {provider, cluster}));
  if (!obj) return NotFound("cluster " + provider + "+" + cluster + " not found");
  return DeliveryOf(*obj);
}

}  // namespace eco::catalog
