#include "status/ready_plan.h"

#include <algorithm>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"

namespace eco::status {

std::optional<appcontext::ReadyRecord> AppCluster::Judge() const {
  std::vector<const KindObjects*> kinds;
  kinds.reserve(watch.size());
  for (const KindWatch* w : watch) kinds.push_back(&w->seen);
  return JudgeReady(*shape, kinds);
}

namespace {

// The app x clusters of one app, and the watches they need.
Status AddApp(Plan& p, appcontext::Contexts& contexts, const std::string& app,
              const WatchedFn& watched, bool drift) {
  auto plan = contexts.ReadApp(p.plan_ctx, app);
  if (!plan.ok()) return plan.status();
  std::map<int, std::shared_ptr<const Shape>> shapes;  // by variant
  const std::string label = appcontext::LabelValue(app);
  for (const auto& cl : plan->clusters) {
    if (!watched(cl.provider, cl.name)) continue;
    auto& shape = shapes[cl.variant];
    if (!shape) {
      auto rs = plan->For(cl);
      if (!rs.ok()) return rs.status();
      shape = MakeShape(*rs, label, drift);
    }
    auto [ac_it, added] = p.acs.try_emplace(app + "\n" + cl.key());
    const std::string* ac_key = &ac_it->first;
    AppCluster& ac = ac_it->second;
    ac.app = app;
    ac.cluster = cl.key();
    ac.provider = cl.provider;
    ac.cluster_name = cl.name;
    ac.shape = shape;
    for (const auto& [av, kind] : shape->kinds) {
      KindWatch& w = p.watches[cl.key() + "\n" + av + "\n" + kind];
      if (w.cluster.empty()) {
        w.provider = cl.provider;
        w.cluster = cl.name;
        w.api_version = av;
        w.kind = kind;
        if (av == "v1" && kind == "Pod") w.seen.objects = ObjectStates(/*keep_names=*/true);
      }
      w.by_label.emplace_back(shape->label, ac_key);
      if (w.by_name()) {
        const size_t k = ac.watch.size();
        for (const auto& item : shape->items) {
          if (item.kind == k) w.names.insert(item.object_key);
        }
      }
      ac.watch.push_back(&w);
    }
  }
  return Status::Ok();
}

// What is stored already, so that a restart rewrites nothing that has not
// changed. In pages: after a restart at ten thousand clusters the records
// are ~150 MB, which one read would hold at once.
Status ReadWritten(store::Store& st, Plan& p) {
  const std::string prefix = appcontext::ReadyPrefix(p.status_ctx);
  store::RangeOptions page;
  page.limit = 2000;
  while (true) {
    auto stored = st.Range(prefix, page);
    if (!stored.ok()) return stored.status();
    for (const auto& kv : stored->kvs) {
      std::string rest = kv.key.substr(prefix.size());  // "<app>/<provider+cluster>"
      auto slash = rest.find('/');
      if (slash == std::string::npos) continue;
      auto ac = p.acs.find(rest.substr(0, slash) + "\n" + rest.substr(slash + 1));
      if (ac == p.acs.end()) continue;
      auto rec = appcontext::ParseReady(kv.value);
      if (rec.ok()) ac->second.written = RecordHash(*rec);
    }
    if (!stored->more || stored->kvs.empty()) break;
    page.after = stored->kvs.back().key;
  }
  return Status::Ok();
}

Status ReadStoredDrift(store::Store& st, Plan& p) {
  const std::string dprefix = appcontext::DriftPrefix(p.status_ctx);
  auto drifts = st.Range(dprefix);
  if (!drifts.ok()) return drifts.status();
  for (const auto& kv : drifts->kvs) {
    std::string rest = kv.key.substr(dprefix.size());
    auto slash = rest.find('/');
    auto rec = appcontext::ParseDrift(kv.value);
    if (slash == std::string::npos || !rec.ok()) continue;
    std::string ac_key = rest.substr(0, slash) + "\n" + rest.substr(slash + 1);
    for (const auto& [res, d] : rec->resources) {
      if (d.drifted) p.stored_drift.emplace_back(ac_key, res);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Plan>> BuildPlan(store::Store& st, const std::string& sctx,
                                        const std::string& plan_id, const WatchedFn& watched,
                                        bool drift) {
  appcontext::Contexts contexts(st);
  auto meta = contexts.GetMeta(plan_id);
  if (!meta.ok()) return meta.status();
  auto p = std::make_unique<Plan>();
  p->status_ctx = sctx;
  p->plan_ctx = plan_id;
  for (const auto& app : meta->app_order) {
    if (Status s = AddApp(*p, contexts, app, watched, drift); !s.ok()) return s;
  }
  for (auto& [key, w] : p->watches) std::sort(w.by_label.begin(), w.by_label.end());
  if (Status s = ReadWritten(st, *p); !s.ok()) return s;
  if (drift) {
    if (Status s = ReadStoredDrift(st, *p); !s.ok()) return s;
  }
  return p;
}

}  // namespace eco::status
