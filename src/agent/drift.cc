// Drift repair (docs/agent.md, "Autonomy"): what the deployed records say
// is Applied on this cluster is compared with the live objects, and an
// object deleted out of band, or whose fields as eco applies them were
// changed, is applied again exactly as its event applied it. This runs on
// the agent alone, so it goes on while the hub is unreachable.
#include <nlohmann/json.hpp>

#include "agent/local_keys.h"
#include "agent/runner.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "rsync/steps.h"

namespace eco::agent {

using nlohmann::json;

namespace {

// Whether `live` holds every field `want` sets, with the same value:
// what the server adds (defaults, status, its metadata) does not count.
bool Covers(const json& live, const json& want) {
  if (want.is_object()) {
    if (!live.is_object()) return false;
    for (auto it = want.begin(); it != want.end(); ++it) {
      auto l = live.find(it.key());
      if (l == live.end() || !Covers(*l, it.value())) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!live.is_array() || live.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Covers(live[i], want[i])) return false;
    }
    return true;
  }
  if (want.is_number() && live.is_number()) return want.get<double>() == live.get<double>();
  return live == want;
}

// The fields of an applied body that the live object must still carry.
json Watched(json body) {
  if (auto md = body.find("metadata"); md != body.end() && md->is_object()) {
    json keep = json::object();
    for (const char* k : {"name", "namespace", "labels", "annotations"}) {
      if (md->contains(k)) keep[k] = (*md)[k];
    }
    *md = std::move(keep);
  }
  body.erase("status");
  return body;
}

}  // namespace

Result<uint64_t> Runner::CheckDrift() {
  appcontext::Contexts contexts(*st_, clock_, random_);
  const std::string me = opt_.provider + "+" + opt_.cluster;
  uint64_t repaired = 0;
  store::RangeOptions keys;
  keys.keys_only = true;
  ECO_ASSIGN_OR_RETURN(auto scs, st_->Range(local::StatusContextPrefix(), keys));
  for (const auto& s : scs.kvs) {
    const std::string sc = s.key.substr(std::string(local::StatusContextPrefix()).size());
    const std::string prefix = appcontext::DeployedPrefix(sc);
    ECO_ASSIGN_OR_RETURN(auto recs, st_->Range(prefix));
    for (const auto& kv : recs.kvs) {
      const std::string rest = kv.key.substr(prefix.size());
      const size_t slash = rest.find('/');
      if (slash == std::string::npos || rest.substr(slash + 1) != me) continue;
      const std::string app = rest.substr(0, slash);
      auto rec = appcontext::ParseDeployed(kv.value);
      if (!rec.ok()) continue;
      // Per context that applied something: its prepared objects, once.
      std::map<std::string, std::shared_ptr<const rsync::PreparedSet>> sets;
      std::map<std::string, std::string> namespaces;
      for (const auto& [name, rd] : rec->resources) {
        if (rd.status != "Applied" || rd.shared || rd.ref.empty()) continue;
        if (!sets.count(rd.ref)) {
          auto meta = contexts.GetMeta(rd.ref);
          auto plan = contexts.ReadApp(rd.ref, app);
          if (!meta.ok() || !plan.ok() || plan->clusters.empty()) {
            sets[rd.ref] = nullptr;
            continue;
          }
          auto rs = plan->For(plan->clusters.front());
          sets[rd.ref] = rs.ok() ? rsync::Prepare(std::move(*rs), meta->namespace_, true, appcontext::OwnerOf(*meta))
                                 : nullptr;
          namespaces[rd.ref] = meta->namespace_;
        }
        const auto& set = sets[rd.ref];
        if (!set) continue;
        // Main resources and CRDs only: a hook ran once and may be gone by design.
        const appcontext::Resource* res = nullptr;
        for (const auto& r : set->rs.resources) {
          if (r.name == name) res = &r;
        }
        for (const auto& r : set->rs.crds) {
          if (r.name == name) res = &r;
        }
        if (res == nullptr) continue;
        const std::string av = rsync::Str(res->object, "apiVersion"), kind = rsync::Str(res->object, "kind");
        auto info = cluster_->ResolveKind(av, kind);
        if (!info.ok()) continue;
        const auto& bodies = set->bodies.at(res);
        const std::string own_ns = res->object.contains("metadata") ? rsync::Str(res->object["metadata"], "namespace") : "";
        const std::string ns = info->namespaced ? (own_ns.empty() ? namespaces[rd.ref] : own_ns) : "";
        const std::string& text = !info->namespaced || own_ns == ns || bodies.in_namespace.empty() ? bodies.as_is
                                                                                                   : bodies.in_namespace;
        const std::string id = av + "/" + kind + "/" + ns + "/" + rsync::MetaName(res->object);
        auto live = cluster_->Get(av, kind, ns, rsync::MetaName(res->object));
        bool drifted = false;
        if (!live.ok()) {
          if (live.status().code() != Code::kNotFound) continue;  // unreachable now: later
          drifted = true;
        } else {
          const std::string rv = live->contains("metadata") ? rsync::Str((*live)["metadata"], "resourceVersion") : "";
          {
            std::lock_guard<std::mutex> g(drift_mu_);
            if (!rv.empty() && drift_seen_[id] == rv) continue;  // unchanged since it was last found right
          }
          json body = json::parse(text, nullptr, false);
          drifted = !body.is_discarded() && !Covers(*live, Watched(std::move(body)));
          if (!drifted) {
            std::lock_guard<std::mutex> g(drift_mu_);
            drift_seen_[id] = rv;
          }
        }
        if (!drifted) continue;
        json body = json::parse(text, nullptr, false);
        if (body.is_discarded()) continue;
        k8s::ApplyOptions ao;  // eco's field manager, forced: as the event applied it
        auto applied = cluster_->Apply(body, ao);
        if (!applied.ok()) continue;
        ++repaired;
        ++drift_repaired_;
        std::lock_guard<std::mutex> g(drift_mu_);
        const json& md = applied->contains("metadata") ? (*applied)["metadata"] : json::object();
        drift_seen_[id] = rsync::Str(md, "resourceVersion");
      }
    }
  }
  return repaired;
}

}  // namespace eco::agent
