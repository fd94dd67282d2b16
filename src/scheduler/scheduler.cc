#include "scheduler/scheduler.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "appcontext/event_record.h"
#include "appcontext/rollout.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/trace.h"
#include "helm/render.h"
#include "scheduler/fleet_plan.h"
#include "scheduler/logical_cloud.h"
#include "scheduler/placement.h"
#include "scheduler/render.h"
#include "store/lock.h"
#include "store/overlay_store.h"

namespace eco::scheduler {

using appcontext::ClusterRef;
using appcontext::Meta;
using store::Compare;
using store::Op;

namespace {

// The DIG's spec.rollout as its events carry it (null: all clusters at
// once). A stored DIG predating the API's check may hold a bad one: the
// operation is refused with the same message the API gives.
Result<json> RolloutOf(const json& dig) {
  static const json kNone = json::object();
  auto spec = dig.find("spec");
  auto r = appcontext::ParseRollout(spec != dig.end() && spec->is_object() ? *spec : kNone);
  if (!r.ok()) return r.status();
  if (!r->has_value()) return json(nullptr);
  return appcontext::ToJson(**r);
}

const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// eco_instantiations_total{outcome} and the time an instantiate call takes
// (placement, rendering, controllers, the AppContext written and handed to
// rsync).
void RecordInstantiation(const Status& st, const Clock& clock, Clock::Time start) {
  static auto& outcomes = prometheus::BuildCounter()
                              .Name("eco_instantiations_total")
                              .Help("Instantiate calls of deployment intent groups, by outcome (OK or the error class).")
                              .Register(metrics::Registry());
  static auto& duration = prometheus::BuildHistogram()
                              .Name("eco_instantiation_duration_seconds")
                              .Help("Time of an instantiate call, until its AppContext is handed to rsync.")
                              .Register(metrics::Registry())
                              .Add({}, metrics::LatencyBuckets());
  outcomes.Add({{"outcome", std::string(CodeName(st.code()))}}).Increment();
  duration.Observe(metrics::SecondsSince(clock, start));
}

catalog::Keys DigKeys(const DigKey& k) { return {k.project, k.composite_app, k.version, k.dig}; }

// A lifecycle state record as read, for the compare-and-swap that writes it.
using StateRec = catalog::StoredLifecycleState;

// An action stamped with the current time.
void Append(const Clock& clock, StateRec& s, const std::string& state, const std::string& instance,
            int64_t revision) {
  s.state.Append(state, instance, revision, catalog::NowRfc3339(clock));
}

bool In(const std::string& s, std::initializer_list<const char*> set) {
  for (const char* x : set) {
    if (s == x) return true;
  }
  return false;
}

}  // namespace

struct Scheduler::Impl {
  store::Store& st;
  Options opts;
  appcontext::Contexts contexts;

  std::mutex lease_mu;
  std::unique_ptr<store::LeaseKeeper> keeper;

  struct Remote {
    std::string host;
    int port = 0;
    std::shared_ptr<controllers::Controller> client;
  };
  std::mutex remote_mu;
  std::map<std::string, Remote> remotes;

  Impl(store::Store& s, Options o)
      : st(s), opts(std::move(o)), contexts(s, *opts.clock, *opts.random) {}

  Result<store::LeaseId> Lease() {
    std::lock_guard<std::mutex> g(lease_mu);
    if (keeper && keeper->alive()) return keeper->id();
    auto k = st.KeepAlive(opts.lease_ttl);
    if (!k.ok()) return k.status();
    keeper = std::move(*k);
    return keeper->id();
  }

  Result<std::unique_ptr<store::LockGuard>> LockFor(const std::string& name, const std::string& what) {
    auto lease = Lease();
    if (!lease.ok()) return lease.status();
    Result<std::unique_ptr<store::LockGuard>> g =
        opts.lock_wait.count() > 0 ? store::Lock(st, name, *lease, opts.lock_wait, *opts.clock)
                                   : store::TryLock(st, name, *lease, *opts.clock);
    if (g.ok()) return g;
    if (g.status().code() == Code::kConflict || g.status().code() == Code::kAlreadyExists ||
        (opts.lock_wait.count() > 0 && g.status().code() == Code::kUnavailable)) {
      return Conflict("another lifecycle operation on " + what + " is in progress; retry when it is done");
    }
    return g.status();
  }

  // An empty record (never written) when none is stored.
  Result<StateRec> ReadState(const std::string& type, const catalog::Keys& keys) {
    return catalog::ReadLifecycleStateOrEmpty(st, type, keys);
  }

  // Commits `ops` if the state record is unchanged; Conflict otherwise.
  Status CommitState(const StateRec& s, std::vector<Compare> compares, std::vector<Op> ops) {
    store::Txn txn;
    txn.compares = std::move(compares);
    txn.compares.push_back(s.Unchanged());
    txn.success = std::move(ops);
    txn.success.push_back(s.Put());
    auto r = st.Commit(txn);
    if (!r.ok()) return r.status();
    if (!r->succeeded) return Conflict("the state changed while the operation ran; retry");
    return Status::Ok();
  }

  // Where a build writes its context: the store itself, or a plan's
  // overlay of it (nothing reaches the store).
  struct Space {
    store::Store& st;
    appcontext::Contexts& contexts;
    bool overlay = false;
  };
  Space Real() { return Space{st, contexts, false}; }

  // True when no cluster of any app of the context gets any resource:
  // there is nothing for rsync to do.
  Result<bool> Empty(const std::string& id) { return EmptyIn(contexts, id); }
  Result<bool> EmptyIn(appcontext::Contexts& contexts, const std::string& id) {
    auto meta = contexts.GetMeta(id);
    if (!meta.ok()) return meta.status();
    for (const auto& app : meta->app_order) {
      auto cs = contexts.Clusters(id, app);
      if (!cs.ok()) return cs.status();
      if (cs->empty()) continue;
      auto rs = contexts.Resources(id, app, "");
      if (!rs.ok()) return rs.status();
      if (rs->size() > 0) return false;
      for (const auto& c : *cs) {
        if (c.variant == 0) continue;
        auto v = contexts.Resources(id, app, c.key());
        if (!v.ok()) return v.status();
        if (v->size() > 0) return false;
      }
    }
    return true;
  }

  // ---- controllers ----

  Result<std::vector<ControllerRef>> Resolve(const std::map<std::string, std::string>& intents) {
    std::vector<ControllerRef> out;
    for (const auto& [name, intent] : intents) {
      if (name == "genericPlacementIntent") continue;
      auto rec = catalog::Get(st, "controller", {name});
      if (!rec.ok()) return rec.status();
      if (rec->has_value()) {
        const json& spec = (**rec)["spec"];
        std::string host = catalog::StringField(spec, "host");
        int port = spec.value("port", 0);
        ControllerRef ref{name, catalog::StringField(spec, "type"), spec.value("priority", 0), nullptr};
        if (ref.type != "placement" && ref.type != "action") continue;  // as EMCO: skipped
        if (!opts.remote) return Unavailable("controller " + name + " is registered but eco cannot call remote controllers");
        std::lock_guard<std::mutex> g(remote_mu);
        auto& r = remotes[name];
        if (!r.client || r.host != host || r.port != port) r = {host, port, opts.remote(name, host, port)};
        ref.controller = r.client;
        out.push_back(std::move(ref));
        continue;
      }
      auto b = std::find_if(opts.builtins.begin(), opts.builtins.end(),
                            [&want = name](const ControllerRef& c) { return c.name == want; });
      if (b == opts.builtins.end()) {
        return Invalid("the DIG's intents name controller " + name +
                       ", which is neither registered at /v2/controllers nor built in");
      }
      out.push_back(*b);
    }
    std::stable_sort(out.begin(), out.end(), [](const ControllerRef& a, const ControllerRef& b) {
      if (a.type != b.type) return a.type == "placement";
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.name < b.name;
    });
    return out;
  }

  // For a plan: a controller resolved for the store, made again over the
  // plan's overlay (built-ins only; others are listed as not run).
  std::vector<ControllerRef> OnOverlay(const std::vector<ControllerRef>& ctrls, store::Store& overlay,
                                       BuildTrace& trace) {
    std::vector<ControllerRef> made = opts.builtins_on ? opts.builtins_on(overlay) : std::vector<ControllerRef>{};
    std::vector<ControllerRef> out;
    for (const auto& c : ctrls) {
      const bool builtin = std::any_of(opts.builtins.begin(), opts.builtins.end(), [&](const ControllerRef& b) {
        return b.controller == c.controller;
      });
      auto m = std::find_if(made.begin(), made.end(), [&](const ControllerRef& b) { return b.name == c.name; });
      if (!builtin) {
        trace.not_run.push_back(c.name + ": registered at /v2/controllers; a plan cannot run a controller outside eco");
      } else if (m == made.end()) {
        trace.not_run.push_back(c.name + ": built in, but this eco cannot run it on a plan");
      } else {
        ControllerRef r = c;
        r.controller = m->controller;
        out.push_back(std::move(r));
      }
    }
    return out;
  }

  // Each app's clusters in a context being built (for a plan's reasons).
  Result<std::map<std::string, std::vector<ClusterRef>>> ClusterSets(appcontext::Contexts& ctx, const std::string& id) {
    auto meta = ctx.GetMeta(id);
    if (!meta.ok()) return meta.status();
    std::map<std::string, std::vector<ClusterRef>> out;
    for (const auto& app : meta->app_order) {
      auto cs = ctx.Clusters(id, app);
      if (!cs.ok()) return cs.status();
      out[app] = std::move(*cs);
    }
    return out;
  }

  // Each app's clusters with the JSON of the objects they get.
  using Contents = std::map<std::string, std::map<std::string, std::shared_ptr<const std::string>>>;
  Result<Contents> ContentsOf(appcontext::Contexts& ctx, const std::string& id) {
    auto meta = ctx.GetMeta(id);
    if (!meta.ok()) return meta.status();
    Contents out;
    for (const auto& app : meta->app_order) {
      auto plan = ctx.ReadApp(id, app);
      if (!plan.ok()) return plan.status();
      std::map<int, std::shared_ptr<const std::string>> by_variant;
      for (const auto& c : plan->clusters) {
        auto& v = by_variant[c.variant];
        if (!v) {
          auto rs = plan->For(c);
          if (!rs.ok()) return rs.status();
          v = std::make_shared<const std::string>(appcontext::ToJson(*rs).dump());
        }
        out[app][c.key()] = v;
      }
    }
    return out;
  }

  Status RunControllers(appcontext::Contexts& ctx, const std::string& id,
                        const std::map<std::string, std::string>& intents, const std::vector<ControllerRef>& ctrls,
                        const std::string& update_from, BuildTrace* trace) {
    // Clusters of `before` gone now, each with why, into the trace.
    auto note_dropped = [&](const std::map<std::string, std::vector<ClusterRef>>& before,
                            const std::function<std::string(const std::string& app, const ClusterRef&)>& why) -> Status {
      auto after = ClusterSets(ctx, id);
      if (!after.ok()) return after.status();
      for (const auto& [app, cs] : before) {
        std::set<std::string> kept;
        for (const auto& c : (*after)[app]) kept.insert(c.key());
        for (const auto& c : cs) {
          if (!kept.count(c.key())) trace->dropped[app][c.key()] = why(app, c);
        }
      }
      return Status::Ok();
    };
    for (const auto& c : ctrls) {
      if (c.type != "placement") continue;
      std::map<std::string, std::vector<ClusterRef>> before;
      if (trace) {
        ECO_ASSIGN_OR_RETURN(before, ClusterSets(ctx, id));
      }
      Status s = c.controller->FilterClusters(id);
      if (!s.ok()) return s.Annotate("placement controller " + c.name);
      if (trace) {
        ECO_RETURN_IF_ERROR(note_dropped(before, [&](const std::string& app, const ClusterRef& cl) {
          // The controller's own reason when it noted one (the HPA: which requirement failed).
          auto note = ctx.ClusterNote(id, "placement", app, cl.key());
          std::string why = "filtered out by placement controller " + c.name;
          if (note.ok() && note->has_value()) why += ": " + **note;
          return why;
        }));
      }
    }
    std::map<std::string, std::vector<ClusterRef>> open;
    if (trace) {
      ECO_ASSIGN_OR_RETURN(open, ClusterSets(ctx, id));
    }
    ECO_RETURN_IF_ERROR(ctx.ResolveGroups(id));
    if (trace) {
      auto after = ClusterSets(ctx, id);
      if (!after.ok()) return after.status();
      ECO_RETURN_IF_ERROR(note_dropped(open, [&](const std::string& app, const ClusterRef& c) {
        std::string kept;
        for (const auto& k : (*after)[app]) {
          if (!k.mandatory && k.group == c.group) kept = k.key();
        }
        return "anyOf group " + std::to_string(c.group) + ": " + kept + " was kept (the first of the group by name)";
      }));
    }
    for (const auto& c : ctrls) {
      if (c.type != "action") continue;
      Contents before;
      if (trace) {
        ECO_ASSIGN_OR_RETURN(before, ContentsOf(ctx, id));
      }
      Status s = c.controller->UpdateAppContext(id, intents.at(c.name), update_from);
      if (!s.ok()) return s.Annotate("action controller " + c.name);
      if (trace) {
        auto after = ContentsOf(ctx, id);
        if (!after.ok()) return after.status();
        for (const auto& [app, cs] : *after) {
          for (const auto& [key, content] : cs) {
            auto b = before[app].find(key);
            if (b == before[app].end() || *b->second != *content) {
              // The controller's own account when it noted one (gac: which customizations).
              std::string by = c.name + " (intent " + intents.at(c.name) + ")";
              auto note = ctx.ClusterNote(id, "action/" + intents.at(c.name), app, key);
              if (note.ok() && note->has_value()) by += ": " + **note;
              trace->customized[app][key].push_back(std::move(by));
            }
          }
        }
      }
    }
    return Status::Ok();
  }

  void PostEvent(const std::vector<ControllerRef>& ctrls, const std::string& id, controllers::Event e) {
    // Notifications: a controller that fails to take one changes nothing.
    for (const auto& c : ctrls) (void)c.controller->PostEvent(id, e);
  }

  Result<std::map<std::string, std::string>> MergedIntents(const DigKey& k) {
    auto docs = catalog::List(st, "groupIntent", DigKeys(k));
    if (!docs.ok()) return docs.status();
    std::map<std::string, std::string> m;
    for (const auto& d : *docs) {
      const json& in = d.object["spec"]["intent"];
      if (!in.is_object()) continue;
      for (auto& [key, v] : in.items()) {
        if (v.is_string()) m[key] = v.get<std::string>();
      }
    }
    return m;
  }

  // ---- logical cloud context for DIGs ----

  struct LcInfo {
    std::string level;
    std::string namespace_;
    std::set<std::string> clusters;  // "provider+name"
  };

  Result<LcInfo> LogicalCloudFor(const std::string& project, const std::string& lc, bool require_instantiated) {
    auto obj = catalog::Get(st, "logicalCloud", {project, lc});
    if (!obj.ok()) return obj.status();
    // EMCO's words first (scripts match them), then eco's detail.
    if (!obj->has_value()) {
      return Invalid("Failed to obtain Logical Cloud specified: logical cloud " + lc + " named by the DIG does not exist");
    }
    LcInfo info;
    const json& spec = (**obj)["spec"];
    info.level = catalog::StringField(spec, "level");
    if (info.level.empty()) info.level = "1";
    info.namespace_ = catalog::StringField(spec, "namespace");
    if (info.namespace_.empty()) info.namespace_ = "default";
    if (require_instantiated) {
      auto s = ReadState("logicalCloud", {project, lc});
      if (!s.ok()) return s.status();
      std::string cur = s->state.CurrentState();
      if (cur != "Instantiated") {
        return Conflict((cur.empty() ? std::string("Logical Cloud has never been applied: ")
                                     : std::string("Logical Cloud is not currently applied: ")) +
                        "logical cloud " + lc + " is not instantiated" +
                        (cur.empty() ? std::string(" (it has never been instantiated)") : " (it is " + cur + ")"));
      }
      auto cst = contexts.GetStatus(s->state.LastInstance());
      if (!cst.ok()) return cst.status();
      if (*cst != "Instantiated") {
        return Conflict("Logical Cloud is not currently applied: logical cloud " + lc +
                        " is still being instantiated (its AppContext is " +
                        (cst->empty() ? std::string("pending") : *cst) + ")");
      }
    }
    auto refs = catalog::List(st, "clusterReference", {project, lc});
    if (!refs.ok()) return refs.status();
    for (const auto& r : *refs) {
      const json& s = r.object["spec"];
      info.clusters.insert(catalog::StringField(s, "clusterProvider") + "+" + catalog::StringField(s, "cluster"));
    }
    return info;
  }

  // ---- building a DIG's AppContext ----

  struct BuildPlan {
    std::string release;
    std::string composite_profile;
    LcInfo lc;
    std::string lc_name;
    bool adopt = false;  // spec.adopt
    std::string field_validation;  // spec.fieldValidation, else the default
    std::string drift_policy = "report";  // spec.driftPolicy
    std::vector<std::string> apps;
    std::map<std::string, std::vector<appcontext::Dependency>> deps;
    std::map<std::string, std::vector<ClusterRef>> placement;
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> overrides;
    std::map<std::string, catalog::Keys> profile_keys;  // app -> app profile keys
  };

  // Step 1 (validate everything) and 3 (generic placement), before any write.
  Result<BuildPlan> Plan(const DigKey& k, const json& dig, const std::map<std::string, std::string>& intents,
                         BuildTrace* trace) {
    BuildPlan p;
    const json& spec = dig["spec"];
    p.release = catalog::StringField(spec, "version");
    if (auto a = spec.find("adopt"); a != spec.end() && a->is_boolean()) p.adopt = a->get<bool>();
    p.field_validation = catalog::StringField(spec, "fieldValidation");
    if (p.field_validation.empty()) p.field_validation = opts.field_validation;
    if (std::string dp = catalog::StringField(spec, "driftPolicy"); !dp.empty()) p.drift_policy = dp;
    if (Status s = helm::ValidateReleaseName(p.release); !s.ok()) {
      return Invalid("DIG spec.version '" + p.release + "' is used as the Helm release name: " + s.message());
    }
    p.lc_name = catalog::StringField(spec, "logicalCloud");
    auto lc = LogicalCloudFor(k.project, p.lc_name, true);
    if (!lc.ok()) return lc.status();
    p.lc = std::move(*lc);

    auto gpi = intents.find("genericPlacementIntent");
    if (gpi == intents.end()) {
      return Invalid("GenericPlacementIntent not found: no intents document of the DIG names one");
    }
    catalog::Keys gk = DigKeys(k);
    gk.push_back(gpi->second);
    auto gobj = catalog::Get(st, "genericPlacementIntent", gk);
    if (!gobj.ok()) return gobj.status();
    if (!gobj->has_value()) return Invalid("GenericPlacementIntent " + gpi->second + " not found");

    catalog::Keys ca = {k.project, k.composite_app, k.version};
    auto apps = catalog::List(st, "app", ca);
    if (!apps.ok()) return apps.status();
    if (apps->empty()) return Invalid("Composite app " + k.composite_app + " has no apps");
    for (const auto& a : *apps) p.apps.push_back(a.keys.back());
    std::set<std::string> app_set(p.apps.begin(), p.apps.end());

    for (const auto& app : p.apps) {
      catalog::Keys ak = ca;
      ak.push_back(app);
      auto deps = catalog::List(st, "appDependency", ak);
      if (!deps.ok()) return deps.status();
      for (const auto& d : *deps) {
        const json& s = d.object["spec"];
        std::string on = catalog::StringField(s, "app");
        if (!app_set.count(on)) {
          return Invalid("App " + app + " depends on app " + on + ", which is not in the composite app");
        }
        std::string op = catalog::StringField(s, "opStatus");
        op = (op == "ready" || op == "Ready" || op == "READY") ? "Ready" : (op.empty() ? "Ready" : "Deployed");
        p.deps[app].push_back({on, op, s.value("wait", 0)});
      }
    }
    // Dependency cycles would make rsync wait forever.
    std::map<std::string, int> mark;
    std::function<Status(const std::string&, std::vector<std::string>&)> visit =
        [&](const std::string& a, std::vector<std::string>& path) -> Status {
      if (mark[a] == 2) return Status::Ok();
      path.push_back(a);
      if (mark[a] == 1) {
        std::string cyc;
        for (auto& x : path) cyc += (cyc.empty() ? "" : " -> ") + x;
        return Invalid("Cyclic Dependency between apps found: " + cyc);
      }
      mark[a] = 1;
      for (const auto& d : p.deps[a]) ECO_RETURN_IF_ERROR(visit(d.app, path));
      mark[a] = 2;
      path.pop_back();
      return Status::Ok();
    };
    for (const auto& a : p.apps) {
      std::vector<std::string> path;
      ECO_RETURN_IF_ERROR(visit(a, path));
    }

    p.composite_profile = catalog::StringField(spec, "compositeProfile");
    catalog::Keys cpk = ca;
    cpk.push_back(p.composite_profile);
    auto cp = catalog::Get(st, "compositeProfile", cpk);
    if (!cp.ok()) return cp.status();
    if (!cp->has_value()) return Invalid("Composite profile " + p.composite_profile + " named by the DIG does not exist");
    auto profiles = catalog::List(st, "appProfile", cpk);
    if (!profiles.ok()) return profiles.status();
    for (const auto& pr : *profiles) p.profile_keys[catalog::StringField(pr.object["spec"], "app")] = pr.keys;

    if (spec.contains("overrideValues") && spec["overrideValues"].is_array()) {
      for (const auto& ov : spec["overrideValues"]) {
        std::string app = catalog::StringField(ov, "app");
        if (!app_set.count(app)) {
          return Invalid("overrideValues name app " + app + ", which is not in the composite app");
        }
        if (ov.contains("values") && ov["values"].is_object()) {
          for (auto& [key, v] : ov["values"].items()) {
            p.overrides[app].emplace_back(key, v.is_string() ? v.get<std::string>() : v.dump());
          }
        }
      }
    }

    auto aintents = catalog::List(st, "genericAppPlacementIntent", gk);
    if (!aintents.ok()) return aintents.status();
    std::map<std::string, json> by_app;
    for (const auto& ai : *aintents) by_app[catalog::StringField(ai.object["spec"], "app")] = ai.object["spec"]["intent"];
    // One read of each provider's clusters for all apps.
    auto cache = std::make_shared<std::map<std::string, std::vector<catalog::ClusterInfo>>>();
    ClustersOf clusters_of = [this, cache](const std::string& provider) -> Result<std::vector<catalog::ClusterInfo>> {
      auto it = cache->find(provider);
      if (it == cache->end()) {
        auto cs = catalog::ProviderClusters(st, provider);
        if (!cs.ok()) return cs.status();
        it = cache->emplace(provider, std::move(*cs)).first;
      }
      return it->second;
    };
    for (const auto& app : p.apps) {
      auto it = by_app.find(app);
      if (it == by_app.end()) {
        return Invalid("No compatible clusters have been provided to the Deployment Intent Group: "
                       "No placement intent for app " + app + " in generic placement intent " + gpi->second);
      }
      auto placed = ResolvePlacement(app, it->second, p.lc.clusters, clusters_of, trace ? &trace->placed[app] : nullptr);
      if (!placed.ok()) return placed.status();
      p.placement[app] = std::move(*placed);
    }
    return p;
  }

  // Creates the context and writes every app (step 2 and 4).
  Result<std::string> Build(appcontext::Contexts& contexts, const DigKey& k, const BuildPlan& p,
                            const std::string& status_context, const std::string& update_from, int64_t revision,
                            store::LeaseId lease) {
    Meta m;
    m.kind = "dig";
    m.project = k.project;
    m.composite_app = k.composite_app;
    m.composite_app_version = k.version;
    m.dig = k.dig;
    m.composite_profile = p.composite_profile;
    m.release = p.release;
    m.adopt = p.adopt;
    m.field_validation = p.field_validation;
    m.drift_policy = p.drift_policy;
    m.logical_cloud = p.lc_name;
    m.level = p.lc.level;
    m.namespace_ = p.lc.namespace_;
    m.status_context = status_context;
    m.update_from = update_from;
    m.revision = revision;
    m.app_order = p.apps;
    m.dependencies = p.deps;
    auto id = contexts.Create(m, lease);
    if (!id.ok()) return id.status();
    Status s = RenderAll(contexts, k, p, status_context.empty() ? *id : status_context, *id);
    if (!s.ok()) {
      (void)contexts.Delete(*id);
      return s;
    }
    return id;
  }

  Status RenderAll(appcontext::Contexts& contexts, const DigKey& k, const BuildPlan& p, const std::string& label_ctx,
                   const std::string& id) {
    std::vector<Status> results(p.apps.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < p.apps.size(); i = next++) {
        const std::string& app = p.apps[i];
        RenderInput in;
        in.app = app;
        auto chart = catalog::GetFile(st, "app", {k.project, k.composite_app, k.version, app});
        if (!chart.ok() || !chart->has_value()) {
          results[i] = chart.ok() ? Invalid("App " + app + " has no chart") : chart.status();
          continue;
        }
        in.chart_tgz = std::move(**chart);
        if (auto pk = p.profile_keys.find(app); pk != p.profile_keys.end()) {
          auto prof = catalog::GetFile(st, "appProfile", pk->second);
          if (!prof.ok()) {
            results[i] = prof.status();
            continue;
          }
          if (prof->has_value()) in.profile_tgz = std::move(**prof);
        }
        if (auto ov = p.overrides.find(app); ov != p.overrides.end()) in.overrides = ov->second;
        in.release = p.release;
        in.namespace_ = p.lc.namespace_;
        in.time_limit = opts.render_time_limit;
        in.clock = opts.clock;
        in.labels = {{appcontext::kContextLabel, label_ctx}, {appcontext::kAppLabel, appcontext::LabelValue(app)}};
        auto rs = RenderApp(in);
        if (!rs.ok()) {
          results[i] = rs.status();
          continue;
        }
        results[i] = contexts.PutApp(id, app, *rs, p.placement.at(app));
      }
    };
    int n = std::max(1, std::min<int>(opts.render_threads, static_cast<int>(p.apps.size())));
    std::vector<std::thread> threads;
    for (int t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    for (auto& r : results) {
      if (!r.ok()) return r;
    }
    return Status::Ok();
  }

  Result<json> LoadDig(const DigKey& k) {
    auto d = catalog::Get(st, "deploymentIntentGroup", DigKeys(k));
    if (!d.ok()) return d.status();
    if (!d->has_value()) return NotFound("DeploymentIntentGroup not found");
    return std::move(**d);
  }

  std::string DigLock(const DigKey& k) { return catalog::DigLockKey(DigKeys(k)); }
  std::string LcLock(const std::string& p, const std::string& lc) { return catalog::LcLockKey(p, lc); }

  // Builds, runs the controllers and seals a new DIG context.
  struct Built {
    std::string id;
    std::vector<ControllerRef> controllers;
    bool empty = false;
  };
  // The one pipeline of instantiate, update, migrate and the fleet plan:
  // into `space` (the store, or a plan's overlay), recording what it saw
  // in `trace` when one is given.
  Result<Built> BuildAndRun(const DigKey& k, const json& dig, const std::string& status_context,
                            const std::string& update_from, int64_t revision, Space space,
                            BuildTrace* trace = nullptr) {
    // Contexts left half-built by a process that died (its lease has
    // expired since) go first; the index is empty in the normal case.
    if (!space.overlay) (void)contexts.CollectAbandoned();
    // One span per stage, children of the request's span when traced.
    auto staged = [](const char* name, auto&& fn) {
      trace::Span span = trace::Span::Child(name);
      trace::Scope scope(span);
      auto r = fn();
      if (!r.ok()) span.SetError(StatusOf(r).ToString());
      return r;
    };
    auto intents = MergedIntents(k);
    if (!intents.ok()) return intents.status();
    auto ctrls = Resolve(*intents);
    if (!ctrls.ok()) return ctrls.status();
    if (space.overlay) {
      BuildTrace none;
      *ctrls = OnOverlay(*ctrls, space.st, trace ? *trace : none);
    }
    auto plan = staged("placement and rendering", [&] { return Plan(k, dig, *intents, trace); });
    if (!plan.ok()) return plan.status();
    auto lease = space.overlay ? space.st.GrantLease(opts.lease_ttl) : Lease();
    if (!lease.ok()) return lease.status();
    auto id = staged("appcontext write", [&] {
      return Build(space.contexts, k, *plan, status_context, update_from, revision, *lease);
    });
    if (!id.ok()) return id.status();
    Status s = staged("controllers", [&] {
      return RunControllers(space.contexts, *id, *intents, *ctrls, update_from, trace);
    });
    Result<bool> empty = s.ok() ? EmptyIn(space.contexts, *id) : Result<bool>(s);
    if (!empty.ok()) {
      (void)space.contexts.Delete(*id);
      return empty.status();
    }
    return Built{*id, std::move(*ctrls), *empty};
  }

  // Where every lifecycle call starts: the object's lock, the object and
  // its state record.
  struct Begun {
    std::unique_ptr<store::LockGuard> lock;
    json object;
    StateRec state;
  };

  Result<Begun> BeginDig(const DigKey& k) {
    auto lock = LockFor(DigLock(k), "DeploymentIntentGroup " + k.dig);
    if (!lock.ok()) return lock.status();
    auto dig = LoadDig(k);
    if (!dig.ok()) return dig.status();
    auto s = ReadState("deploymentIntentGroup", DigKeys(k));
    if (!s.ok()) return s.status();
    return Begun{std::move(*lock), std::move(*dig), std::move(*s)};
  }

  Result<Begun> BeginLc(const std::string& project, const std::string& lc) {
    auto lock = LockFor(LcLock(project, lc), "Logical Cloud " + lc);
    if (!lock.ok()) return lock.status();
    auto obj = catalog::Get(st, "logicalCloud", {project, lc});
    if (!obj.ok()) return obj.status();
    if (!obj->has_value()) return NotFound("Logical Cloud not found");
    auto s = ReadState("logicalCloud", {project, lc});
    if (!s.ok()) return s.status();
    return Begun{std::move(*lock), std::move(**obj), std::move(*s)};
  }

  // The previous instantiation must have finished terminating.
  Status TerminatedOrConflict(const StateRec& s, const std::string& what, const std::string& action) {
    auto st = contexts.GetStatus(s.state.LastInstance());
    if (!st.ok()) return st.status();
    if (!st->empty() && !In(*st, {"Terminated", "TerminateFailed"})) {
      return Conflict(what + " " + action + " (its AppContext is " + *st + ")");
    }
    return Status::Ok();
  }

  // What a terminate writes: rsync's terminate event, or the final status
  // at once when there is nothing to delete; a stop flag is cleared.
  Result<std::vector<Op>> TerminateOps(const std::string& id, const std::string& cur) {
    std::vector<Op> ops;
    auto empty = Empty(id);
    if (!empty.ok()) return empty.status();
    if (*empty) {
      ops.push_back(Op::Put(
          appcontext::StatusKey(id),
          json{{"status", "Terminated"}, {"time", catalog::NowRfc3339(*opts.clock)}}.dump()));
    } else {
      auto seq = contexts.NextEventSeq(id);
      if (!seq.ok()) return seq.status();
      ops = contexts.EnqueueOps(id, *seq, {"terminate", ""});
    }
    if (cur == "InstantiateStopped") ops.push_back(Op::Delete(appcontext::StopKey(id)));
    return ops;
  }

  // Resync: an event on the deployed context, for clusters it deploys to.
  Status ResyncIt(StateRec& s, const std::string& what, const std::vector<std::string>& clusters) {
    if (s.state.CurrentState() != "Instantiated") {
      return Conflict(what + " is not instantiated" + (s.state.CurrentState().empty() ? std::string() : " (it is " + s.state.CurrentState() + ")"));
    }
    const std::string id = s.state.LastInstance();
    auto st = contexts.GetStatus(id);
    if (!st.ok()) return st.status();
    if (!In(*st, {"Instantiated", "InstantiateFailed"})) {
      return Conflict(what + " is still being deployed (its AppContext is " + *st + "); resync once it is done");
    }
    if (!clusters.empty() && *st == "InstantiateFailed") {
      // Success on some clusters must not make a failed deployment read Instantiated.
      return Conflict(what + " failed to deploy; resync all of its clusters (no clusters in the body)");
    }
    if (!clusters.empty()) {
      auto meta = contexts.GetMeta(id);
      if (!meta.ok()) return meta.status();
      std::set<std::string> known;
      for (const auto& app : meta->app_order) {
        auto plan = contexts.ReadApp(id, app);
        if (!plan.ok()) return plan.status();
        for (const auto& c : plan->clusters) known.insert(c.key());
      }
      for (const auto& c : clusters) {
        if (!known.count(c)) return Invalid("cluster " + c + " has nothing of this " + what + " deployed");
      }
    }
    auto seq = contexts.NextEventSeq(id);
    if (!seq.ok()) return seq.status();
    appcontext::Event ev{"resync", "", clusters};
    return CommitState(s, {}, contexts.EnqueueOps(id, *seq, ev));
  }

  // Stop: only while rsync still works on the context.
  Status StopIt(StateRec& s, const std::string& what) {
    std::string cur = s.state.CurrentState();
    std::string next = cur == "Instantiated" ? "InstantiateStopped" : cur == "Terminated" ? "TerminateStopped" : "";
    if (next.empty()) return Conflict(what + " is " + (cur.empty() ? std::string("Created") : cur) + ": there is nothing to stop");
    const std::string id = s.state.LastInstance();
    auto st = contexts.GetStatus(id);
    if (!st.ok()) return st.status();
    if (!In(*st, {"Created", "Instantiating", "Terminating", "Updating"})) {
      return Conflict(what + " has nothing in progress to stop (its AppContext is " + *st + ")");
    }
    Append(*opts.clock, s, next, id, s.state.LastRevision());
    return CommitState(s, {}, {Op::Put(appcontext::StopKey(id), "true")});
  }

  // A logical cloud's context, filled but not sealed.
  Result<std::string> BuildLc(const std::string& project, const std::string& lc, const LogicalCloudContent& plan,
                              const std::string& status_context, const std::string& update_from, int64_t revision) {
    auto lease = Lease();
    if (!lease.ok()) return lease.status();
    Meta m;
    m.kind = "logicalCloud";
    m.project = project;
    m.logical_cloud = lc;
    m.level = plan.level;
    m.namespace_ = plan.namespace_;
    m.status_context = status_context;
    m.update_from = update_from;
    m.revision = revision;
    m.app_order = {kLogicalCloudApp};
    auto id = contexts.Create(m, *lease);
    if (!id.ok()) return id.status();
    // Labelled as a DIG's objects are, so that the ready monitor finds them.
    appcontext::ResourceSet rs = plan.resources;
    const std::map<std::string, std::string> labels = {
        {appcontext::kContextLabel, status_context.empty() ? *id : status_context},
        {appcontext::kAppLabel, appcontext::LabelValue(kLogicalCloudApp)}};
    for (auto& r : rs.resources) AddLabels(r.object, labels);
    Status put = contexts.PutApp(*id, kLogicalCloudApp, rs, plan.clusters);
    if (!put.ok()) {
      (void)contexts.Delete(*id);
      return put;
    }
    return id;
  }

  // A DIG migrated away (Updated): its context is read by the target's
  // update until that is done, then emptied by an update-delete.
  Status MigratedAwayOrConflict(const StateRec& s, const std::string& what) {
    const std::string id = s.state.LastInstance();
    auto by = st.Get(appcontext::SupersededKey(id));
    if (!by.ok()) return by.status();
    if (by->has_value()) {
      auto target = contexts.GetStatus((*by)->value);
      if (!target.ok()) return target.status();
      if (In(*target, {"Created", "Instantiating"})) {
        return Conflict(what + " is still being migrated (the target's AppContext is " + *target + ")");
      }
    }
    auto active = st.Get(appcontext::ActiveKey(id));
    if (!active.ok()) return active.status();
    if (active->has_value()) {
      return Conflict(what + " is still being migrated: its objects that the target does not have are being deleted");
    }
    return Status::Ok();
  }

  // Before deleting a DIG or logical cloud: terminated (and done
  // terminating); then its AppContexts go.
  Status PrepareDelete(const StateRec& s, const std::string& what) {
    std::string cur = s.state.CurrentState();
    if (In(cur, {"Instantiated", "InstantiateStopped"})) {
      return Conflict(what + " must be terminated before it can be deleted");
    }
    if (In(cur, {"Terminated", "TerminateStopped"})) {
      ECO_RETURN_IF_ERROR(TerminatedOrConflict(s, what, "has not completed terminating"));
    }
    if (cur == "Updated") ECO_RETURN_IF_ERROR(MigratedAwayOrConflict(s, what));
    for (const auto& id : s.state.Instances()) ECO_RETURN_IF_ERROR(contexts.Delete(id));
    return Status::Ok();
  }

  Result<std::string> RollbackTarget(const StateRec& s, int64_t revision);

  // The plan of a context built in `space` against the deployed `from`.
  Result<json> Describe(Space space, const std::string& operation, int64_t revision, const std::string& id,
                        const std::string& from, const BuildTrace& trace, const json& dig, bool summary_only) {
    PlanInput in;
    in.operation = operation;
    in.revision = revision;
    in.next = &space.contexts;
    in.next_id = id;
    in.current = &contexts;
    in.current_id = from;
    in.trace = &trace;
    in.dig_spec = dig.value("spec", json::object());
    in.clusters_of = [this](const std::string& provider) { return catalog::ProviderClusters(st, provider); };
    in.summary_only = summary_only;
    return DescribePlan(in);
  }

  // update?plan= and instantiate?plan=: what is applied is what was
  // reviewed. The context built is removed when the plan differs.
  Status CheckPlan(const std::string& plan_id, const std::string& operation, int64_t revision, const std::string& id,
                   const std::string& from, const BuildTrace& trace, const json& dig) {
    if (plan_id.empty()) return Status::Ok();
    auto plan = Describe(Real(), operation, revision, id, from, trace, dig, true);
    if (!plan.ok() || (*plan)["planId"] != plan_id) {
      (void)contexts.Delete(id);
      if (!plan.ok()) return plan.status();
      return Conflict("the plan changed since plan " + plan_id + " was made: the " + operation +
                      " would now do what plan " + (*plan)["planId"].get<std::string>() +
                      " says; review the plan again and " + operation + " with its id");
    }
    return Status::Ok();
  }

  // Seals a context and records the state change in one transaction; the
  // context is removed if that fails.
  Status SealAndRecord(StateRec& s, const std::string& id, const std::string& status, const appcontext::Event& ev,
                       std::vector<Compare> compares = {}, std::vector<Op> extra = {}) {
    compares.push_back(contexts.NotSealed(id));
    std::vector<Op> ops = contexts.SealOps(id, status, ev);
    for (auto& o : extra) ops.push_back(std::move(o));
    Status c = CommitState(s, std::move(compares), std::move(ops));
    if (!c.ok()) (void)contexts.Delete(id);
    return c;
  }
};

Scheduler::Scheduler(store::Store& st, Options opts) : impl_(std::make_unique<Impl>(st, std::move(opts))) {}
Scheduler::~Scheduler() = default;

Result<int> Scheduler::CollectAbandoned() { return impl_->contexts.CollectAbandoned(); }

Result<std::vector<ControllerRef>> Scheduler::ResolveControllers(const std::map<std::string, std::string>& intents) {
  return impl_->Resolve(intents);
}

Status Scheduler::Approve(const DigKey& k) {
  auto b = impl_->BeginDig(k);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (cur == "Approved") return Status::Ok();
  if (!In(cur, {"Created", "Terminated", "Updated"})) {
    return Conflict("DeploymentIntentGroup is " + cur + ": only a Created, Terminated or Updated one can be approved");
  }
  Append(*impl_->opts.clock, s, "Approved", "", 0);
  return impl_->CommitState(s, {}, {});
}

Result<std::string> Scheduler::Instantiate(const DigKey& k, const std::string& plan_id) {
  const Clock& clock = *impl_->opts.clock;
  const Clock::Time start = clock.Now();
  trace::Span span = trace::Span::Child("instantiate");
  trace::Scope scope(span);
  span.SetAttribute("eco.project", k.project);
  span.SetAttribute("eco.deployment_intent_group", k.dig);
  Result<std::string> r = InstantiateDig(k, plan_id);
  RecordInstantiation(r.status(), clock, start);
  if (r.ok()) span.SetAttribute("eco.appcontext", *r);
  if (!r.ok()) span.SetError(r.status().ToString());
  return r;
}

Result<std::string> Scheduler::InstantiateDig(const DigKey& k, const std::string& plan_id) {
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (cur == "Created") return Conflict("DeploymentIntentGroup must be Approved before instantiating");
  if (In(cur, {"Instantiated", "InstantiateStopped"})) return Conflict("DeploymentIntentGroup is already instantiated");
  if (!In(cur, {"Approved", "Terminated", "TerminateStopped"})) {
    return Conflict("DeploymentIntentGroup is " + cur + " and cannot be instantiated");
  }
  if (cur == "Terminated") {
    ECO_RETURN_IF_ERROR(I.TerminatedOrConflict(s, "DeploymentIntentGroup", "is still terminating; instantiate again once it is Terminated"));
  }
  int64_t revision = s.state.MaxRevision() + 1;
  auto rollout = RolloutOf(b->object);
  if (!rollout.ok()) return rollout.status();
  BuildTrace trace;
  auto built = I.BuildAndRun(k, b->object, "", "", revision, I.Real(), plan_id.empty() ? nullptr : &trace);
  if (!built.ok()) return built.status();
  const std::string& id = built->id;
  ECO_RETURN_IF_ERROR(I.CheckPlan(plan_id, "instantiate", revision, id, "", trace, b->object));
  s.state.status_context = id;
  Append(*I.opts.clock, s, "Instantiated", id, revision);
  ECO_RETURN_IF_ERROR(I.SealAndRecord(s, id, built->empty ? "Instantiated" : "Created",
                                      {built->empty ? "" : "instantiate", "", {}, *rollout}));
  I.PostEvent(built->controllers, id, controllers::Event::kInstantiate);
  return id;
}

Result<json> Scheduler::FleetPlan(const DigKey& k, bool summary_only) {
  auto& I = *impl_;
  // No lock: a plan writes nothing, not even a lock key.
  auto dig = I.LoadDig(k);
  if (!dig.ok()) return dig.status();
  auto rec = I.ReadState("deploymentIntentGroup", DigKeys(k));
  if (!rec.ok()) return rec.status();
  const StateRec& s = *rec;
  const std::string cur = s.state.CurrentState();
  std::string operation, status_ctx, from;
  if (In(cur, {"Instantiated", "InstantiateStopped"})) {
    operation = "update";
    from = s.state.LastInstance();
    status_ctx = s.state.status_context.empty() ? from : s.state.status_context;
  } else if (cur.empty() || In(cur, {"Created", "Approved", "Terminated", "TerminateStopped", "Updated"})) {
    // Approve (where needed), then instantiate.
    operation = "instantiate";
    if (cur == "Terminated") {
      ECO_RETURN_IF_ERROR(I.TerminatedOrConflict(s, "DeploymentIntentGroup",
                                                 "is still terminating; it can be planned once it is Terminated"));
    }
  } else {
    return Conflict("DeploymentIntentGroup is " + cur + ": it can be neither instantiated nor updated");
  }
  const int64_t revision = s.state.MaxRevision() + 1;
  auto overlay = store::NewOverlayStore(I.st);
  if (!overlay.ok()) return overlay.status();
  // Ids of the throwaway context: not drawn from the scheduler's source,
  // so that a plan leaves a seeded run's ids as they were.
  Random ids(0x5eed);
  appcontext::Contexts scratch(**overlay, *I.opts.clock, ids);
  Impl::Space space{**overlay, scratch, true};
  BuildTrace trace;
  auto built = I.BuildAndRun(k, *dig, status_ctx, from, revision, space, &trace);
  if (!built.ok()) return built.status();
  return I.Describe(space, operation, revision, built->id, from, trace, *dig, summary_only);
}

Status Scheduler::Terminate(const DigKey& k) {
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (!In(cur, {"Instantiated", "InstantiateStopped"})) {
    return Conflict("DeploymentIntentGroup is not instantiated (it is " + cur + ")");
  }
  const std::string id = s.state.LastInstance();
  auto intents = I.MergedIntents(k);
  if (!intents.ok()) return intents.status();
  auto ctrls = I.Resolve(*intents);
  if (!ctrls.ok()) return ctrls.status();
  for (const auto& c : *ctrls) {
    if (c.type != "action") continue;
    Status t = c.controller->TerminateAppContext(id);
    if (!t.ok()) return t.Annotate("action controller " + c.name);
  }
  auto ops = I.TerminateOps(id, cur);
  if (!ops.ok()) return ops.status();
  Append(*I.opts.clock, s, "Terminated", id, s.state.LastRevision());
  ECO_RETURN_IF_ERROR(I.CommitState(s, {}, std::move(*ops)));
  I.PostEvent(*ctrls, id, controllers::Event::kTerminate);
  return Status::Ok();
}

Status Scheduler::Resync(const DigKey& k, const std::vector<std::string>& clusters) {
  auto b = impl_->BeginDig(k);
  if (!b.ok()) return b.status();
  return impl_->ResyncIt(b->state, "DeploymentIntentGroup", clusters);
}

Status Scheduler::ResyncLogicalCloud(const std::string& project, const std::string& lc,
                                     const std::vector<std::string>& clusters) {
  auto b = impl_->BeginLc(project, lc);
  if (!b.ok()) return b.status();
  return impl_->ResyncIt(b->state, "Logical Cloud", clusters);
}

Status Scheduler::RolloutAction(const DigKey& k, const std::string& action) {
  if (!In(action, {"pause", "resume", "approve", "abort"})) {
    return Invalid("unknown rollout action " + action + " (pause, resume, approve or abort)");
  }
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  const std::string id = b->state.state.LastInstance();
  if (id.empty()) return Conflict("DeploymentIntentGroup has not been instantiated; there is no rollout to " + action);
  auto kv = I.st.Get(appcontext::RolloutKey(id));
  if (!kv.ok()) return kv.status();
  if (!kv->has_value()) {
    return Conflict("no staged rollout runs for the current revision (its DIG had no spec.rollout); nothing to " +
                    action);
  }
  auto p = appcontext::RolloutProgressFromJson(json::parse((*kv)->value, nullptr, false));
  if (!p.ok()) return p.status();
  auto ev = I.st.Get(appcontext::EventKey(id, p->event));
  if (!ev.ok()) return ev.status();
  bool running = false;
  if (ev->has_value()) {
    auto e = appcontext::ParseEvent(**ev);
    running = e.ok() && e->pending();
  }
  if (!running || In(p->state, {"Complete", "Failed", "RolledBack"})) {
    return Conflict("the rollout of revision " + std::to_string(p->revision) + " is over (" + p->state +
                    "); nothing to " + action);
  }
  const std::string ckey = appcontext::RolloutControlKey(id);
  auto cur = I.st.Get(ckey);
  if (!cur.ok()) return cur.status();
  appcontext::RolloutControl c;
  if (cur->has_value()) c = appcontext::RolloutControlFromJson(json::parse((*cur)->value, nullptr, false));
  if (c.event != p->event) c = appcontext::RolloutControl{p->event};
  if (action == "pause") {
    c.paused = true;
  } else if (action == "resume") {
    if (!c.paused && p->state != "Paused") {
      return Conflict("the rollout is not paused (it is " + p->state + "); nothing to resume");
    }
    c.paused = false;
    ++c.resumes;
  } else if (action == "approve") {
    if (p->state != "WaitingApproval") {
      return Conflict("the rollout is not waiting for approval (it is " + p->state + ")");
    }
    // Approved already, not yet taken up by rsync: one approval per wave.
    if (c.approved > static_cast<int64_t>(p->wave)) {
      return Conflict("the next wave of the rollout is approved already; it starts shortly");
    }
    c.approved = std::max<int64_t>(c.approved, static_cast<int64_t>(p->wave) + 1);
  } else {
    c.abort = true;
  }
  store::Txn txn;
  txn.compares.push_back(cur->has_value() ? Compare::ModRevisionIs(ckey, (*cur)->mod_revision) : Compare::Missing(ckey));
  txn.success.push_back(Op::Put(ckey, appcontext::ToJson(c).dump()));
  auto r = I.st.Commit(txn);
  if (!r.ok()) return r.status();
  if (!r->succeeded) return Conflict("the rollout was steered by another request at the same time; retry");
  log::Write(log::Level::kInfo, "scheduler", "rollout " + action + " requested",
             {log::Field("dig", k.dig), log::Field("project", k.project), log::Field("context", id)});
  return Status::Ok();
}

Status Scheduler::Stop(const DigKey& k) {
  auto b = impl_->BeginDig(k);
  if (!b.ok()) return b.status();
  return impl_->StopIt(b->state, "DeploymentIntentGroup");
}

Result<int64_t> Scheduler::Update(const DigKey& k, const std::string& plan_id) {
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (!In(cur, {"Instantiated", "InstantiateStopped"})) {
    return Conflict("DeploymentIntentGroup is not instantiated (it is " + cur + "); nothing to update");
  }
  const std::string from = s.state.LastInstance();
  std::string status_ctx = s.state.status_context;
  if (status_ctx.empty()) status_ctx = from;
  int64_t last = s.state.LastRevision();
  int64_t revision = s.state.MaxRevision() + 1;
  auto rollout = RolloutOf(b->object);
  if (!rollout.ok()) return rollout.status();
  BuildTrace trace;
  auto built = I.BuildAndRun(k, b->object, status_ctx, from, revision, I.Real(), plan_id.empty() ? nullptr : &trace);
  if (!built.ok()) return built.status();
  const std::string& id = built->id;
  ECO_RETURN_IF_ERROR(I.CheckPlan(plan_id, "update", revision, id, from, trace, b->object));
  Append(*I.opts.clock, s, "Updated", from, last);
  Append(*I.opts.clock, s, "Instantiated", id, revision);
  ECO_RETURN_IF_ERROR(I.SealAndRecord(s, id, "Created", {"update", from, {}, *rollout}));
  I.PostEvent(built->controllers, id, controllers::Event::kUpdate);
  return revision;
}

// The AppContext a rollback to `revision` deploys again, or why it cannot.
Result<std::string> Scheduler::Impl::RollbackTarget(const StateRec& s, int64_t revision) {
  std::string cur = s.state.CurrentState();
  if (!In(cur, {"Instantiated", "InstantiateStopped"})) {
    return Conflict("DeploymentIntentGroup is not instantiated (it is " + cur + "); nothing to roll back");
  }
  std::string target = s.state.InstanceOfRevision(revision).value_or("");
  if (target.empty()) return Invalid("DeploymentIntentGroup has no revision " + std::to_string(revision));
  if (target == s.state.LastInstance()) return Invalid("revision " + std::to_string(revision) + " is the one deployed now");
  auto exists = contexts.Exists(target);
  if (!exists.ok()) return exists.status();
  if (!*exists) return Conflict("the AppContext of revision " + std::to_string(revision) + " no longer exists");
  return target;
}

Result<json> Scheduler::RollbackPlan(const DigKey& k, int64_t revision, bool summary_only) {
  auto& I = *impl_;
  auto dig = I.LoadDig(k);
  if (!dig.ok()) return dig.status();
  auto rec = I.ReadState("deploymentIntentGroup", DigKeys(k));
  if (!rec.ok()) return rec.status();
  auto target = I.RollbackTarget(*rec, revision);
  if (!target.ok()) return target.status();
  const BuildTrace none;
  return I.Describe(I.Real(), "rollback", rec->state.MaxRevision() + 1, *target, rec->state.LastInstance(), none,
                    *dig, summary_only);
}

Status Scheduler::Rollback(const DigKey& k, int64_t revision, const std::string& plan_id) {
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  auto target_or = I.RollbackTarget(s, revision);
  if (!target_or.ok()) return target_or.status();
  const std::string target = *target_or;
  const std::string from = s.state.LastInstance();
  if (!plan_id.empty()) {
    auto plan = I.Describe(I.Real(), "rollback", s.state.MaxRevision() + 1, target, from, BuildTrace{}, b->object, true);
    if (!plan.ok()) return plan.status();
    if ((*plan)["planId"] != plan_id) {
      return Conflict("the plan changed since plan " + plan_id + " was made: the rollback would now do what plan " +
                      (*plan)["planId"].get<std::string>() + " says; review the plan again and roll back with its id");
    }
  }
  auto seq = I.contexts.NextEventSeq(target);
  if (!seq.ok()) return seq.status();
  auto rollout = RolloutOf(b->object);
  if (!rollout.ok()) return rollout.status();
  int64_t last = s.state.LastRevision();
  Append(*I.opts.clock, s, "Updated", from, last);
  Append(*I.opts.clock, s, "Instantiated", target, s.state.MaxRevision() + 1);
  std::vector<Op> ops = I.contexts.EnqueueOps(target, *seq, {"update", from, {}, *rollout});
  ops.push_back(
      Op::Put(appcontext::StatusKey(target),
              json{{"status", "Created"}, {"time", catalog::NowRfc3339(*I.opts.clock)}}.dump()));
  ECO_RETURN_IF_ERROR(I.CommitState(s, {}, std::move(ops)));
  auto intents = I.MergedIntents(k);
  if (intents.ok()) {
    auto ctrls = I.Resolve(*intents);
    if (ctrls.ok()) I.PostEvent(*ctrls, target, controllers::Event::kUpdate);
  }
  return Status::Ok();
}

Status Scheduler::Migrate(const DigKey& k, const std::string& target_version, const std::string& target_dig) {
  auto& I = *impl_;
  const DigKey t{k.project, k.composite_app, target_version, target_dig};
  if (t.version == k.version && t.dig == k.dig) {
    return Invalid("Invalid Input: a DeploymentIntentGroup cannot be migrated to itself");
  }
  // Both DIGs' locks, taken in one order whichever way the migration goes.
  const bool source_first = I.DigLock(k) < I.DigLock(t);
  auto first = I.BeginDig(source_first ? k : t);
  if (!first.ok() && !source_first && first.status().code() == Code::kNotFound) {
    return NotFound("target DeploymentIntentGroup " + t.dig + " of composite app version " + t.version + " not found");
  }
  if (!first.ok()) return first.status();
  auto second = I.BeginDig(source_first ? t : k);
  if (!second.ok() && source_first && second.status().code() == Code::kNotFound) {
    return NotFound("target DeploymentIntentGroup " + t.dig + " of composite app version " + t.version + " not found");
  }
  if (!second.ok()) return second.status();
  Impl::Begun& src = source_first ? *first : *second;
  Impl::Begun& dst = source_first ? *second : *first;
  StateRec& s = src.state;
  StateRec& ts = dst.state;
  const std::string cur = s.state.CurrentState();
  if (!In(cur, {"Instantiated", "InstantiateStopped"})) {
    return Conflict("DeploymentIntentGroup is not instantiated (it is " + (cur.empty() ? std::string("Created") : cur) +
                    "); nothing to migrate");
  }
  const std::string tcur = ts.state.CurrentState();
  if (tcur != "Approved") {
    return Conflict("target DeploymentIntentGroup " + t.dig + " is " + (tcur.empty() ? std::string("Created") : tcur) +
                    ": it must be Approved to be migrated to");
  }
  // rsync replaces objects in place: the same clusters' namespaces.
  const std::string lc = catalog::StringField(src.object["spec"], "logicalCloud");
  const std::string tlc = catalog::StringField(dst.object["spec"], "logicalCloud");
  if (lc != tlc) {
    return Invalid("Invalid Input: target DeploymentIntentGroup " + t.dig + " deploys into logical cloud " + tlc +
                   ", not " + lc + " as the migrated one does");
  }
  const std::string from = s.state.LastInstance();
  const int64_t revision = ts.state.MaxRevision() + 1;
  // Its own status context (not the source's, as EMCO copies): deleting the
  // source DIG afterwards deletes the source's contexts and their records.
  auto rollout = RolloutOf(dst.object);
  if (!rollout.ok()) return rollout.status();
  auto built = I.BuildAndRun(t, dst.object, "", from, revision, I.Real());
  if (!built.ok()) return built.status();
  const std::string& id = built->id;
  ts.state.status_context = id;
  Append(*I.opts.clock, ts, "Instantiated", id, revision);
  Append(*I.opts.clock, s, "Updated", from, s.state.LastRevision());
  // Both records and the hand-off in one transaction: all or nothing.
  store::Txn txn;
  txn.compares = {I.contexts.NotSealed(id), s.Unchanged(), ts.Unchanged()};
  txn.success = I.contexts.SealOps(id, "Created", {"update", from, {}, *rollout});
  txn.success.push_back(s.Put());
  txn.success.push_back(ts.Put());
  auto r = I.st.Commit(txn);
  if (!r.ok() || !r->succeeded) {
    (void)I.contexts.Delete(id);
    return r.ok() ? Conflict("the state changed while the operation ran; retry") : r.status();
  }
  I.PostEvent(built->controllers, id, controllers::Event::kUpdate);
  return Status::Ok();
}

Status Scheduler::PrepareDigDelete(const DigKey& k) {
  auto& I = *impl_;
  auto b = I.BeginDig(k);
  if (!b.ok()) return b.status();
  return I.PrepareDelete(b->state, "DeploymentIntentGroup");
}

// ---- logical clouds ----

Status Scheduler::InstantiateLogicalCloud(const std::string& project, const std::string& lc) {
  auto& I = *impl_;
  auto b = I.BeginLc(project, lc);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (In(cur, {"Instantiated", "InstantiateStopped"})) return Conflict("Logical Cloud is already instantiated");
  if (In(cur, {"Terminated", "TerminateStopped"})) {
    ECO_RETURN_IF_ERROR(I.TerminatedOrConflict(s, "Logical Cloud", "can't be re-instantiated yet: it is still terminating"));
  }
  auto plan = LogicalCloudPlan(I.st, project, lc, b->object);
  if (!plan.ok()) return plan.status();
  int64_t revision = s.state.MaxRevision() + 1;
  auto id = I.BuildLc(project, lc, *plan, "", "", revision);
  if (!id.ok()) return id.status();
  auto empty = I.Empty(*id);
  if (!empty.ok()) {
    (void)I.contexts.Delete(*id);
    return empty.status();
  }
  // As dcm does, a level-0 cloud gets its clusters' namespace stored at
  // instantiate (eco keeps one the user gave), so GET shows it from now on.
  std::vector<Compare> compares;
  std::vector<Op> ops;
  if (plan->level == "0" && catalog::StringField(b->object["spec"], "namespace").empty()) {
    const std::string key = catalog::ObjectKey("logicalCloud", {project, lc});
    auto kv = I.st.Get(key);
    if (!kv.ok() || !kv->has_value()) {
      (void)I.contexts.Delete(*id);
      return kv.ok() ? NotFound("Logical Cloud not found") : kv.status();
    }
    json object = json::parse((*kv)->value, nullptr, false);
    if (object != b->object) {
      (void)I.contexts.Delete(*id);
      return Conflict("the Logical Cloud changed while the operation ran; retry");
    }
    object["spec"]["namespace"] = plan->namespace_;
    compares.push_back(Compare::ModRevisionIs(key, (*kv)->mod_revision));
    ops.push_back(Op::Put(key, object.dump()));
  }
  s.state.status_context = *id;
  Append(*I.opts.clock, s, "Instantiated", *id, revision);
  return I.SealAndRecord(s, *id, *empty ? "Instantiated" : "Created", {*empty ? "" : "instantiate", ""},
                         std::move(compares), std::move(ops));
}

Status Scheduler::TerminateLogicalCloud(const std::string& project, const std::string& lc) {
  auto& I = *impl_;
  auto b = I.BeginLc(project, lc);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  std::string cur = s.state.CurrentState();
  if (!In(cur, {"Instantiated", "InstantiateStopped"})) {
    return Conflict("Logical Cloud is not instantiated" + (cur.empty() ? std::string() : " (it is " + cur + ")"));
  }
  // A DIG still deployed in the logical cloud would lose its namespace.
  auto digs = catalog::List(I.st, "deploymentIntentGroup", {project});
  if (!digs.ok()) return digs.status();
  for (const auto& d : *digs) {
    if (catalog::StringField(d.object["spec"], "logicalCloud") != lc) continue;
    auto ds = I.ReadState("deploymentIntentGroup", d.keys);
    if (!ds.ok()) return ds.status();
    if (In(ds->state.CurrentState(), {"Instantiated", "InstantiateStopped"})) {
      return Conflict("Found at least one DIG associated with Logical Cloud " + lc +
                      " that is instantiated: " + d.keys[1] + "/" + d.keys[2] + "/" + d.keys[3]);
    }
  }
  const std::string id = s.state.LastInstance();
  auto ops = I.TerminateOps(id, cur);
  if (!ops.ok()) return ops.status();
  Append(*I.opts.clock, s, "Terminated", id, s.state.LastRevision());
  return I.CommitState(s, {}, std::move(*ops));
}

Status Scheduler::StopLogicalCloud(const std::string& project, const std::string& lc) {
  auto b = impl_->BeginLc(project, lc);
  if (!b.ok()) return b.status();
  std::string cur = b->state.state.CurrentState();
  if (cur.empty() || cur == "Created") return Conflict("Logical Cloud has not been asked to instantiate");
  if (In(cur, {"InstantiateStopped", "TerminateStopped"})) return Conflict("Logical Cloud is already stopped");
  return impl_->StopIt(b->state, "Logical Cloud");
}

Status Scheduler::UpdateLogicalCloud(const std::string& project, const std::string& lc) {
  auto& I = *impl_;
  auto b = I.BeginLc(project, lc);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  if (s.state.CurrentState() != "Instantiated") return Conflict("Logical Cloud is not instantiated; nothing to update");
  auto plan = LogicalCloudPlan(I.st, project, lc, b->object);
  if (!plan.ok()) return plan.status();
  const std::string from = s.state.LastInstance();
  int64_t revision = s.state.MaxRevision() + 1;
  const std::string status_ctx = s.state.status_context.empty() ? from : s.state.status_context;
  auto id = I.BuildLc(project, lc, *plan, status_ctx, from, revision);
  if (!id.ok()) return id.status();
  Append(*I.opts.clock, s, "Updated", from, s.state.LastRevision());
  Append(*I.opts.clock, s, "Instantiated", *id, revision);
  return I.SealAndRecord(s, *id, "Created", {"update", from});
}

Status Scheduler::PrepareLogicalCloudDelete(const std::string& project, const std::string& lc) {
  auto& I = *impl_;
  auto b = I.BeginLc(project, lc);
  if (!b.ok()) return b.status();
  StateRec& s = b->state;
  ECO_RETURN_IF_ERROR(I.PrepareDelete(s, "Logical Cloud"));
  if (s.mod_revision != 0) {
    auto d = I.st.Delete(s.key);
    if (!d.ok()) return d.status();
  }
  return Status::Ok();
}

}  // namespace eco::scheduler
