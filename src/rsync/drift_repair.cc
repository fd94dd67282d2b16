#include "rsync/drift_repair.h"

#include "appcontext/appcontext.h"
#include "k8s/openapi_schema.h"
#include "rsync/steps.h"

namespace eco::rsync {

using nlohmann::json;

Status ApplyAgain(store::Store& st, k8s::ClusterClient& cluster, const std::string& ref, const std::string& app,
                  const std::string& cluster_key, const std::string& res_name, bool left_out) {
  appcontext::Contexts contexts(st);
  ECO_ASSIGN_OR_RETURN(appcontext::Meta meta, contexts.GetMeta(ref));
  ECO_ASSIGN_OR_RETURN(appcontext::AppPlan plan, contexts.ReadApp(ref, app));
  const appcontext::ClusterRef* at = nullptr;
  for (const auto& c : plan.clusters) {
    if (c.key() == cluster_key) at = &c;
  }
  if (at == nullptr) return NotFound("AppContext " + ref + " places app " + app + " nowhere on " + cluster_key);
  ECO_ASSIGN_OR_RETURN(appcontext::ResourceSet rs, plan.For(*at));
  auto set = Prepare(std::move(rs), meta.namespace_, true, appcontext::OwnerOf(meta));
  const appcontext::Resource* res = nullptr;
  for (const auto* list : {&set->rs.crds, &set->rs.resources}) {
    for (const auto& r : *list) {
      if (r.name == res_name) res = &r;
    }
  }
  if (res == nullptr) return NotFound("AppContext " + ref + " has no resource " + res_name + " in app " + app);
  // The body its event sent: in the event's namespace unless it names one.
  const std::string av = Str(res->object, "apiVersion"), kind = Str(res->object, "kind");
  ECO_ASSIGN_OR_RETURN(k8s::ResourceInfo info, cluster.ResolveKind(av, kind));
  const auto& bodies = set->bodies.at(res);
  const std::string own_ns = res->object.contains("metadata") ? Str(res->object["metadata"], "namespace") : "";
  const std::string& text = !info.namespaced || !own_ns.empty() || bodies.in_namespace.empty() ? bodies.as_is
                                                                                                : bodies.in_namespace;
  json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) return Internal("resource " + res_name + " of AppContext " + ref + " is not JSON");
  if (left_out) {
    if (auto doc = k8s::FetchOpenApiDoc(cluster, av); doc.ok()) (void)k8s::DropUndeclaredFields(**doc, body);
  }
  k8s::ApplyOptions ao;  // eco's field manager, forced: as the event applied it
  return cluster.Apply(body, ao).status();
}

}  // namespace eco::rsync
