// Drift repair (docs/agent.md, "Autonomy"): what the deployed records say
// is Applied on this cluster is compared with the live objects, and an
// object deleted out of band, or whose fields as eco applies them were
// changed, is applied again exactly as its event applied it. This runs on
// the agent alone, so it goes on while the hub is unreachable. The ready
// monitor's watches say which objects changed, so a quiet cluster costs
// nothing but a slow sweep that reads every object (a change a watch
// missed): between sweeps its rounds do not even parse the records.
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/local_keys.h"
#include "agent/runner.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "k8s/drift.h"
#include "k8s/openapi_schema.h"
#include "rsync/steps.h"

namespace eco::agent {

using nlohmann::json;

namespace {

std::string DriftId(const std::string& av, const std::string& kind, const std::string& ns, const std::string& name) {
  return av + "/" + kind + "/" + ns + "/" + name;
}

std::string MetaField(const json& obj, const char* key) {
  auto md = obj.find("metadata");
  return md != obj.end() && md->is_object() ? rsync::Str(*md, key) : "";
}

// An object as deployed records name it ("<name>+<Kind>"), from its DriftId.
std::string RecordName(const std::string& id, const std::string& kind) {
  return id.substr(id.rfind('/') + 1) + "+" + kind;
}

}  // namespace

// A change the watches saw of an object already found right (or never
// looked at) makes it a suspect; its own re-apply, seen again, does not.
// An object a watch reported once is watched: between sweeps it is looked
// at only when a watch says it changed.
void Runner::Watched(const std::string& av, const std::string& kind, const json& object, bool gone) {
  const std::string name = MetaField(object, "name");
  if (name.empty()) return;
  const std::string id = DriftId(av, kind, MetaField(object, "namespace"), name);
  const std::string rec = name + "+" + kind;
  const std::string rv = gone ? "" : MetaField(object, "resourceVersion");
  std::lock_guard<std::mutex> g(drift_mu_);
  drift_watched_.insert(rec);
  if (!gone) {
    auto it = drift_seen_.find(id);
    if (it != drift_seen_.end() && it->second == rv) return;
  }
  drift_suspects_.insert(rec);
  drift_suspect_rv_[rec] = rv;
}

// The watch may report an apply before its answer is back here: the
// answer then clears the suspect its own write made.
void Runner::Applied(const std::string& av, const std::string& kind, const std::string& ns, const std::string& name,
                     const std::string& rv) {
  const std::string rec = name + "+" + kind;
  std::lock_guard<std::mutex> g(drift_mu_);
  drift_seen_[DriftId(av, kind, ns, name)] = rv;
  auto it = drift_suspect_rv_.find(rec);
  if (it != drift_suspect_rv_.end() && it->second == rv) {
    drift_suspects_.erase(rec);
    drift_suspect_rv_.erase(it);
  }
}

// Whether resourceVersion `a` is newer than `b`: both decimal (as etcd's
// revisions are) and a > b. Unknown (false) otherwise: versions are
// opaque to clients, and then the caller assumes nothing.
static bool NewerVersion(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty() || a.size() > 19 || b.size() > 19) return false;
  if (a.find_first_not_of("0123456789") != std::string::npos || b.find_first_not_of("0123456789") != std::string::npos)
    return false;
  return std::stoull(a) > std::stoull(b);
}

// After a relist (the watch was down a while) what changed meanwhile is
// not known one by one: anything listed at another version, and anything
// found right before but not listed, is a suspect — unless this agent
// applied it after the list was taken (the list may reach here after the
// apply's answer did).
void Runner::Relisted(const std::string& av, const std::string& kind, const std::vector<json>& items,
                      const std::string& list_rv) {
  std::map<std::string, std::string> listed;
  for (const auto& o : items) {
    const std::string name = MetaField(o, "name");
    if (!name.empty()) listed[DriftId(av, kind, MetaField(o, "namespace"), name)] = MetaField(o, "resourceVersion");
  }
  const std::string prefix = av + "/" + kind + "/";
  std::lock_guard<std::mutex> g(drift_mu_);
  for (const auto& [id, rv] : listed) {
    const std::string rec = RecordName(id, kind);
    drift_watched_.insert(rec);
    auto it = drift_seen_.find(id);
    if (it == drift_seen_.end() || (it->second != rv && !NewerVersion(it->second, rv))) {
      drift_suspects_.insert(rec);
      drift_suspect_rv_[rec] = rv;
    }
  }
  for (auto it = drift_seen_.lower_bound(prefix); it != drift_seen_.end() && it->first.starts_with(prefix); ++it) {
    if (!listed.count(it->first) && !NewerVersion(it->second, list_rv)) {
      const std::string rec = RecordName(it->first, kind);
      drift_suspects_.insert(rec);
      drift_suspect_rv_[rec] = "";  // gone: no answer clears it
    }
  }
}

size_t Runner::DriftSuspects() {
  std::lock_guard<std::mutex> g(drift_mu_);
  return drift_suspects_.size();
}

Result<uint64_t> Runner::CheckDrift(bool sweep) {
  std::lock_guard<std::mutex> one(drift_run_mu_);
  std::set<std::string> suspects, watched;
  {
    std::lock_guard<std::mutex> g(drift_mu_);
    suspects.swap(drift_suspects_);
    drift_suspect_rv_.clear();
    if (!sweep) watched = drift_watched_;
  }
  // Suspects not settled this time (the cluster did not answer, the apply
  // failed) are looked at again next time.
  std::set<std::string> again;
  // What a sweep found applied; the rest of drift_seen_ and drift_watched_ is forgotten.
  std::set<std::string> applied, applied_names;
  auto settle = [&](bool complete) {
    std::lock_guard<std::mutex> g(drift_mu_);
    drift_suspects_.insert(again.begin(), again.end());
    if (!complete) {  // nothing was settled: all of it next time
      drift_suspects_.insert(suspects.begin(), suspects.end());
      return;
    }
    if (!sweep) return;
    for (auto it = drift_seen_.begin(); it != drift_seen_.end();) {
      it = applied.count(it->first) ? std::next(it) : drift_seen_.erase(it);
    }
    for (auto it = drift_watched_.begin(); it != drift_watched_.end();) {
      it = applied_names.count(*it) ? std::next(it) : drift_watched_.erase(it);
    }
    const double jitter = 0.75 + 0.5 * random_.Uniform();
    next_sweep_ = clock_.Now() + std::chrono::duration_cast<Clock::Duration>(opt_.drift_sweep * jitter);
  };
  // An apply that left fields out (Warn field validation) is compared and
  // repeated without them, or the object would look drifted for ever.
  auto Declared = [this](json body, const appcontext::ResourceDeployed& rd) {
    if (body.is_discarded() || rd.warnings.empty()) return body;
    if (auto doc = k8s::FetchOpenApiDoc(*cluster_, rsync::Str(body, "apiVersion")); doc.ok())
      (void)k8s::DropUndeclaredFields(**doc, body);
    return body;
  };
  appcontext::Contexts contexts(*st_, clock_, random_);
  const std::string me = opt_.provider + "+" + opt_.cluster;
  uint64_t repaired = 0;
  store::RangeOptions keys;
  keys.keys_only = true;
  auto scs = st_->Range(local::StatusContextPrefix(), keys);
  if (!scs.ok()) {
    settle(false);
    return scs.status();
  }
  // Nothing written and no watch saw a change since a round that had
  // nothing to look at: this one has nothing either (no record parsed).
  if (!sweep && suspects.empty() && scs->revision == drift_quiet_rev_) {
    settle(true);
    return 0;
  }
  ++drift_rounds_read_;
  for (const auto& s : scs->kvs) {
    const std::string sc = s.key.substr(std::string(local::StatusContextPrefix()).size());
    const std::string prefix = appcontext::DeployedPrefix(sc);
    auto recs = st_->Range(prefix);
    if (!recs.ok()) {
      settle(false);
      return recs.status();
    }
    for (const auto& kv : recs->kvs) {
      const std::string rest = kv.key.substr(prefix.size());
      const size_t slash = rest.find('/');
      if (slash == std::string::npos || rest.substr(slash + 1) != me) continue;
      const std::string app = rest.substr(0, slash);
      auto rec = appcontext::ParseDeployed(kv.value);
      if (!rec.ok()) continue;
      // Per context that applied something looked at: its prepared objects, once.
      std::map<std::string, std::shared_ptr<const rsync::PreparedSet>> sets;
      std::map<std::string, std::string> namespaces;
      std::map<std::string, bool> enforce;  // its DIG's spec.driftPolicy is "enforce"
      // What is recorded as drifted here (reported to the hub), written when it changes.
      auto stored = appcontext::ReadDrift(*st_, sc, app, me);
      appcontext::DriftRecord drift = stored.ok() && *stored ? **stored : appcontext::DriftRecord{};
      const nlohmann::json drift_before = appcontext::ToJson(drift);
      auto right_again = [&](const std::string& name) {
        auto it = drift.resources.find(name);
        if (it != drift.resources.end() && it->second.drifted) {
          it->second = {false, false, {}, "", it->second.repairs, it->second.last_repair};
        }
      };
      for (const auto& [name, rd] : rec->resources) {
        if (rd.status != "Applied" || rd.shared || rd.ref.empty()) continue;
        // Between sweeps: what a watch saw change, and what no watch covers.
        if (!sweep && !suspects.count(name) && watched.count(name)) continue;
        applied_names.insert(name);
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
          enforce[rd.ref] = meta->drift_policy == "enforce";
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
        if (!info.ok()) {
          again.insert(name);
          continue;
        }
        const auto& bodies = set->bodies.at(res);
        const std::string own_ns = res->object.contains("metadata") ? rsync::Str(res->object["metadata"], "namespace") : "";
        const std::string ns = info->namespaced ? (own_ns.empty() ? namespaces[rd.ref] : own_ns) : "";
        const std::string& text = !info->namespaced || own_ns == ns || bodies.in_namespace.empty() ? bodies.as_is
                                                                                                   : bodies.in_namespace;
        const std::string id = DriftId(av, kind, ns, rsync::MetaName(res->object));
        applied.insert(id);
        ++drift_reads_;
        auto live = cluster_->Get(av, kind, ns, rsync::MetaName(res->object));
        bool drifted = false;
        if (!live.ok()) {
          if (live.status().code() != Code::kNotFound) {  // unreachable now: later
            again.insert(name);
            continue;
          }
          drifted = true;
        } else {
          const std::string rv = MetaField(*live, "resourceVersion");
          {
            std::lock_guard<std::mutex> g(drift_mu_);
            auto seen = drift_seen_.find(id);
            if (!rv.empty() && seen != drift_seen_.end() && seen->second == rv) continue;  // unchanged since found right
          }
          json body = Declared(json::parse(text, nullptr, false), rd);
          drifted = !body.is_discarded() && !k8s::Covers(*live, k8s::ComparedPart(std::move(body)));
          if (!drifted) {
            std::lock_guard<std::mutex> g(drift_mu_);
            drift_seen_[id] = rv;
          }
        }
        if (!drifted) {
          right_again(name);
          continue;
        }
        json body = Declared(json::parse(text, nullptr, false), rd);
        if (body.is_discarded()) continue;
        appcontext::ResourceDrift& entry = drift.resources[name];
        if (!enforce[rd.ref]) {  // "report": recorded for the hub, left as it is
          appcontext::ResourceDrift now;
          now.drifted = true;
          now.deleted = !live.ok();
          if (live.ok()) {
            for (auto& f : k8s::DriftedFields(*live, body)) {
              now.fields.push_back({std::move(f.path), std::move(f.desired), std::move(f.live), std::move(f.manager)});
            }
          }
          now.since = entry.drifted ? entry.since : catalog::NowRfc3339(clock_);
          now.repairs = entry.repairs;
          now.last_repair = entry.last_repair;
          entry = std::move(now);
          continue;
        }
        k8s::ApplyOptions ao;  // eco's field manager, forced: as the event applied it
        auto re = cluster_->Apply(body, ao);
        if (!re.ok()) {
          again.insert(name);
          continue;
        }
        ++repaired;
        ++drift_repaired_;
        entry = {false, false, {}, "", entry.repairs + 1, catalog::NowRfc3339(clock_)};
        std::lock_guard<std::mutex> g(drift_mu_);
        drift_seen_[id] = MetaField(*re, "resourceVersion");
      }
      std::erase_if(drift.resources, [](const auto& e) { return !e.second.drifted && e.second.repairs == 0; });
      if (appcontext::ToJson(drift) != drift_before) {
        const std::string key = appcontext::DriftKey(sc, app, me);
        (void)(drift.resources.empty() ? st_->Delete(key).status() : st_->Put(key, appcontext::ToJson(drift).dump()).status());
      }
    }
  }
  drift_quiet_rev_ = !sweep && applied_names.empty() && again.empty() ? scs->revision : -1;
  settle(true);
  return repaired;
}

}  // namespace eco::agent
