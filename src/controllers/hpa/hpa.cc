#include "controllers/hpa/hpa.h"

#include <map>
#include <set>

#include "appcontext/appcontext.h"
#include "controllers/hpa/intents.h"

namespace eco::hpa {

namespace {

// The context's DIG apps that have HPA intents, in the context's app order.
struct Plan {
  appcontext::Meta meta;
  AppConsumers consumers;
  std::vector<std::string> apps;
};

// nullopt-like: an empty `apps` means nothing to do.
Result<Plan> LoadPlan(store::Store& st, const std::string& context_id) {
  appcontext::Contexts ctx(st);
  auto meta = ctx.GetMeta(context_id);
  if (!meta.ok()) return meta.status();
  Plan p;
  p.meta = std::move(*meta);
  if (p.meta.kind == "logicalCloud" || p.meta.dig.empty()) return p;
  auto c = LoadConsumers(st, p.meta.project, p.meta.composite_app, p.meta.composite_app_version,
                         p.meta.dig);
  if (!c.ok()) return c.status().Annotate("reading HPA intents");
  p.consumers = std::move(*c);
  std::set<std::string> seen;
  for (const auto& app : p.meta.app_order) {
    if (p.consumers.count(app) && seen.insert(app).second) p.apps.push_back(app);
  }
  if (p.meta.app_order.empty()) {
    for (const auto& [app, list] : p.consumers) p.apps.push_back(app);
  }
  return p;
}

bool HasRequirements(const std::vector<Consumer>& consumers) {
  for (const auto& c : consumers) {
    if (!c.requirements.empty()) return true;
  }
  return false;
}

}  // namespace

HpaPlacement::HpaPlacement(store::Store& st, PlacementOptions options)
    : st_(st),
      owned_view_(std::make_unique<KubeClusterView>(st)),
      view_(*owned_view_),
      options_(options) {}

HpaPlacement::HpaPlacement(store::Store& st, ClusterView& view, PlacementOptions options)
    : st_(st), view_(view), options_(options) {}

Status HpaPlacement::FilterClusters(const std::string& context_id) {
  auto plan = LoadPlan(st_, context_id);
  if (!plan.ok()) return plan.status();
  appcontext::Contexts ctx(st_);

  // Clusters and rendered resources of every app that has something to check.
  std::map<std::string, appcontext::AppPlan> app_plans;
  std::vector<ClusterId> to_read;
  std::map<std::string, size_t> index;  // cluster key -> to_read position
  for (const auto& app : plan->apps) {
    if (!HasRequirements(plan->consumers[app])) continue;
    auto ap = ctx.ReadApp(context_id, app);
    if (!ap.ok()) {
      if (ap.status().code() == Code::kNotFound) continue;  // app not in this context
      return ap.status();
    }
    for (const auto& c : ap->clusters) {
      if (index.emplace(c.key(), to_read.size()).second) to_read.emplace_back(c.provider, c.name);
    }
    app_plans.emplace(app, std::move(*ap));
  }
  if (to_read.empty()) return Status::Ok();

  // One live read per cluster; apps are then fitted in order against the
  // same state, so an earlier app's pods reduce what a later app finds.
  std::vector<Result<ClusterState>> states = ReadClusters(view_, to_read, options_.read_threads);

  for (const auto& app : plan->apps) {
    auto it = app_plans.find(app);
    if (it == app_plans.end() || it->second.clusters.empty()) continue;
    const appcontext::AppPlan& ap = it->second;
    // The workloads' tolerations can differ between resource sets (another
    // controller's variant), so consumers are completed once per variant.
    std::map<int, std::vector<Consumer>> by_variant;
    std::vector<std::string> rejected;
    std::map<std::string, std::string> why_not;
    std::string reasons;
    for (const auto& c : ap.clusters) {
      auto v = by_variant.find(c.variant);
      if (v == by_variant.end()) {
        auto rs = ap.For(c);
        if (!rs.ok()) return rs.status().Annotate("HPA placement: app " + app);
        std::vector<Consumer> consumers = plan->consumers[app];
        AttachTolerations(consumers, *rs);
        v = by_variant.emplace(c.variant, std::move(consumers)).first;
      }
      auto& state = states[index[c.key()]];
      std::string why;
      if (!state.ok()) {
        why = "cannot be read: " + state.status().message();
      } else {
        why = FitConsumers(*state, v->second);
      }
      if (why.empty()) continue;
      rejected.push_back(c.key());
      why_not[c.key()] = why;
      reasons += (reasons.empty() ? "" : "; ") + c.key() + ": " + why;
    }
    if (rejected.empty()) continue;
    if (rejected.size() == ap.clusters.size()) {
      return Invalid("HPA placement: app " + app + " fits no cluster: " + reasons);
    }
    ECO_RETURN_IF_ERROR(ctx.NoteClusters(context_id, "placement", app, why_not));
    ECO_RETURN_IF_ERROR(ctx.RemoveClusters(context_id, app, rejected));
  }
  return Status::Ok();
}

HpaAction::HpaAction(store::Store& st) : st_(st) {}

Status HpaAction::UpdateAppContext(const std::string& context_id, const std::string&,
                                   const std::string&) {
  // Every HPA intent of the DIG applies; the intent name is not needed (as EMCO).
  auto plan = LoadPlan(st_, context_id);
  if (!plan.ok()) return plan.status();
  appcontext::Contexts ctx(st_);
  for (const auto& app : plan->apps) {
    const auto& consumers = plan->consumers[app];
    if (consumers.empty()) continue;
    auto cs = ctx.Clusters(context_id, app);
    if (!cs.ok()) {
      if (cs.status().code() == Code::kNotFound) continue;
      return cs.status();
    }
    // Clusters sharing a variant share a resource set: edit each set once.
    std::map<int, std::vector<std::string>> by_variant;
    for (const auto& c : *cs) by_variant[c.variant].push_back(c.key());
    std::vector<appcontext::ClusterEdit> edits;
    for (auto& [variant, keys] : by_variant) {
      auto rs = ctx.Resources(context_id, app, keys.front());
      if (!rs.ok()) return rs.status();
      Status s = EditResources(*rs, consumers);
      if (!s.ok()) return s.Annotate("HPA action: app " + app);
      edits.push_back({std::move(keys), std::move(*rs)});
    }
    if (edits.size() == 1) {
      // Every cluster has the same set: the edited one becomes the shared set.
      ECO_RETURN_IF_ERROR(ctx.SetResources(context_id, app, {}, edits.front().resources));
    } else {
      // One read and one compare-and-swap for all the sets.
      ECO_RETURN_IF_ERROR(ctx.SetResourcesBatch(context_id, app, edits));
    }
  }
  return Status::Ok();
}

}  // namespace eco::hpa
