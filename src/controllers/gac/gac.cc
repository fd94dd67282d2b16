#include "controllers/gac/gac.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "controllers/gac/customize.h"
#include "scheduler/render.h"

namespace eco::gac {

namespace {

struct Loaded {
  GenericResource resource;
  std::vector<Customization> customizations;
};

// Cluster labels, read once per provider.
class Labels {
 public:
  explicit Labels(store::Store& st) : st_(st) {}
  Result<const std::set<std::string>*> Of(const std::string& provider, const std::string& name) {
    auto [it, fresh] = by_provider_.try_emplace(provider);
    if (fresh) {
      auto cs = catalog::ProviderClusters(st_, provider);
      if (!cs.ok()) {
        by_provider_.erase(it);
        return cs.status();
      }
      for (auto& c : *cs) it->second[c.name] = std::set<std::string>(c.labels.begin(), c.labels.end());
    }
    auto c = it->second.find(name);
    return c == it->second.end() ? &none_ : &c->second;
  }

 private:
  store::Store& st_;
  std::map<std::string, std::map<std::string, std::set<std::string>>> by_provider_;
  const std::set<std::string> none_;
};

// Which customizations of each resource apply to one cluster, and whether
// each new object goes there: clusters with the same selection and variant
// get the same result.
using Selection = std::vector<std::vector<bool>>;

bool Present(const Loaded& l, const std::vector<bool>& selected) {
  if (!l.resource.new_object) return false;
  bool all_specific = !l.customizations.empty();
  for (const auto& c : l.customizations) all_specific = all_specific && c.scope.specific;
  if (!all_specific) return true;
  return std::find(selected.begin(), selected.end(), true) != selected.end();
}

bool ChangesAnything(const std::vector<Loaded>& loaded, const Selection& sel) {
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (Present(loaded[i], sel[i])) return true;
    if (std::find(sel[i].begin(), sel[i].end(), true) != sel[i].end()) return true;
  }
  return false;
}

appcontext::Resource* FindNamed(appcontext::ResourceSet& rs, const GenericResource& r) {
  for (auto* list : {&rs.crds, &rs.resources, &rs.hooks}) {
    for (auto& res : *list) {
      if (Names(r, res.object)) return &res;
    }
  }
  return nullptr;
}

std::string ObjectText(const json& o) {
  std::string kind = o.value("kind", "");
  std::string name;
  if (auto m = o.find("metadata"); m != o.end() && m->is_object()) name = m->value("name", "");
  return kind + " " + name;
}

class Run {
 public:
  Run(store::Store& st, std::string intent, std::string id, const appcontext::Meta& meta)
      : st_(st), labels_(st), intent_(std::move(intent)), id_(std::move(id)), meta_(meta) {
    label_ctx_ = appcontext::LabelValue(meta_.status_context.empty() ? id_ : meta_.status_context);
  }

  Status Load() {
    const catalog::Keys ik = {meta_.project, meta_.composite_app, meta_.composite_app_version, meta_.dig,
                              intent_};
    auto in = catalog::Get(st_, "gacIntent", ik);
    if (!in.ok()) return in.status();
    if (!in->has_value()) {
      return Invalid("generic K8s intent '" + intent_ + "' named by the DIG's intents does not exist");
    }
    auto docs = catalog::List(st_, "gacResource", ik);
    if (!docs.ok()) return docs.status();
    // An item's uploaded file(s), "" when none.
    auto file_of = [this](const char* type, const catalog::Keys& k) -> Result<std::string> {
      auto f = catalog::GetFile(st_, type, k);
      if (!f.ok()) return f.status();
      return f->value_or("");
    };
    for (const auto& d : *docs) {
      auto file = file_of("gacResource", d.keys);
      if (!file.ok()) return file.status();
      auto r = ResourceFromStored(d.object, *file);
      if (!r.ok()) return r.status();
      if (std::find(meta_.app_order.begin(), meta_.app_order.end(), r->app) == meta_.app_order.end()) {
        return Invalid(Where(r->name, "") + "its app '" + r->app + "' is not an app of composite app " +
                       meta_.composite_app + "/" + meta_.composite_app_version);
      }
      Loaded l{std::move(*r), {}};
      auto cs = catalog::List(st_, "gacCustomization", d.keys);
      if (!cs.ok()) return cs.status();
      for (const auto& c : *cs) {
        auto files = file_of("gacCustomization", c.keys);
        if (!files.ok()) return files.status();
        auto cust = CustomizationFromStored(c.object, *files);
        if (!cust.ok()) return cust.status();
        l.customizations.push_back(std::move(*cust));
      }
      by_app_[l.resource.app].push_back(std::move(l));
    }
    return Status::Ok();
  }

  // Computes every app's edits before writing any, so that a failure
  // leaves the context as it was.
  Status Plan() {
    appcontext::Contexts ctx(st_);
    for (const auto& [app, loaded] : by_app_) {
      auto plan = ctx.ReadApp(id_, app);
      if (!plan.ok()) {
        if (plan.status().code() == Code::kNotFound) continue;  // not placed anywhere
        return plan.status();
      }
      std::map<std::pair<int, Selection>, std::vector<const appcontext::ClusterRef*>> groups;
      for (const auto& c : plan->clusters) {
        auto labels = labels_.Of(c.provider, c.name);
        if (!labels.ok()) return labels.status();
        Selection sel;
        for (const auto& l : loaded) {
          std::vector<bool> s;
          for (const auto& cu : l.customizations) s.push_back(Selects(cu.scope, c.provider, c.name, **labels));
          sel.push_back(std::move(s));
        }
        groups[{c.variant, std::move(sel)}].push_back(&c);
      }
      std::vector<appcontext::ClusterEdit> edits;
      for (const auto& [key, members] : groups) {
        if (!ChangesAnything(loaded, key.second)) continue;
        auto rs = plan->For(*members.front());
        if (!rs.ok()) return rs.status();
        ECO_RETURN_IF_ERROR(Customize(app, loaded, key.second, *members.front(), members.size(), *rs));
        appcontext::ClusterEdit e;
        const std::string applied = Applied(loaded, key.second);
        for (const auto* m : members) {
          e.cluster_keys.push_back(m->key());
          notes_[app][m->key()] = applied;
        }
        e.resources = std::move(*rs);
        edits.push_back(std::move(e));
      }
      if (!edits.empty()) writes_.push_back({app, std::move(edits), plan->clusters.size()});
    }
    return Status::Ok();
  }

  Status Write() {
    appcontext::Contexts ctx(st_);
    for (const auto& [app, notes] : notes_) ECO_RETURN_IF_ERROR(ctx.NoteClusters(id_, "action/" + intent_, app, notes));
    for (auto& w : writes_) {
      if (w.edits.size() == 1 && w.edits[0].cluster_keys.size() == w.clusters) {
        ECO_RETURN_IF_ERROR(ctx.SetResources(id_, w.app, {}, w.edits[0].resources));
      } else {
        ECO_RETURN_IF_ERROR(ctx.SetResourcesBatch(id_, w.app, w.edits));
      }
    }
    return Status::Ok();
  }

 private:
  struct AppWrite {
    std::string app;
    std::vector<appcontext::ClusterEdit> edits;
    size_t clusters = 0;
  };

  // What a selection applies, for the fleet plan: "resource cm-extra (new);
  // resource web: customizations scale, tolerate".
  static std::string Applied(const std::vector<Loaded>& loaded, const Selection& sel) {
    std::string out;
    for (size_t i = 0; i < loaded.size(); ++i) {
      std::string names;
      for (size_t k = 0; k < loaded[i].customizations.size(); ++k) {
        if (sel[i][k]) names += (names.empty() ? "" : ", ") + loaded[i].customizations[k].name;
      }
      const bool made = Present(loaded[i], sel[i]);
      if (names.empty() && !made) continue;
      out += (out.empty() ? "" : "; ") + std::string("resource ") + loaded[i].resource.name +
             (made && loaded[i].resource.new_object ? " (new)" : "") +
             (names.empty() ? "" : ": customization" + std::string(names.find(',') == std::string::npos ? " " : "s ") + names);
    }
    return out;
  }

  std::string Where(const std::string& resource, const std::string& customization) const {
    std::string s = "generic K8s intent '" + intent_ + "', resource '" + resource + "'";
    if (!customization.empty()) s += ", customization '" + customization + "'";
    return s + ": ";
  }

  static std::string ClusterText(const appcontext::ClusterRef& c, size_t members) {
    std::string s = "cluster " + c.provider + "/" + c.name;
    if (members > 1) s += " (and " + std::to_string(members - 1) + " more with the same customizations)";
    return s;
  }

  void Label(const std::string& app, json& object) const {
    scheduler::AddLabels(object, {{appcontext::kContextLabel, label_ctx_},
                                  {appcontext::kAppLabel, appcontext::LabelValue(app)}});
  }

  Status Customize(const std::string& app, const std::vector<Loaded>& loaded, const Selection& sel,
                   const appcontext::ClusterRef& cluster, size_t members, appcontext::ResourceSet& rs) {
    for (size_t i = 0; i < loaded.size(); ++i) {
      const Loaded& l = loaded[i];
      const GenericResource& r = l.resource;
      json object;
      appcontext::Resource* existing = nullptr;
      if (r.new_object) {
        if (!Present(l, sel[i])) continue;
        auto o = NewObject(r);
        if (!o.ok()) return Invalid(Where(r.name, "") + o.status().message());
        object = std::move(*o);
        // Labelled before the customizations as a chart's objects are, so
        // that patches see the same metadata on both (and after, below).
        Label(app, object);
      } else {
        if (std::find(sel[i].begin(), sel[i].end(), true) == sel[i].end()) continue;
        existing = FindNamed(rs, r);
        if (existing == nullptr) {
          return Invalid(Where(r.name, "") + "app " + app + " has no " + r.kind + " " + r.object_name +
                         " on " + ClusterText(cluster, members) + " to customize");
        }
        object = existing->object;
      }
      for (size_t k = 0; k < l.customizations.size(); ++k) {
        if (!sel[i][k]) continue;
        const Customization& c = l.customizations[k];
        Status s = Apply(c, object);
        if (!s.ok()) {
          return Invalid(Where(r.name, c.name) + "cannot customize " + ObjectText(object) + " for " +
                         ClusterText(cluster, members) + ": " + s.message());
        }
      }
      if (existing != nullptr) {
        existing->object = std::move(object);
        continue;
      }
      Label(app, object);
      appcontext::Resource res{appcontext::ResourceName(object), std::move(object)};
      if (appcontext::Resource* same = rs.Find(res.name)) {
        same->object = std::move(res.object);  // a chart object of that name is replaced in place
      } else if (res.object.value("kind", "") == "CustomResourceDefinition") {
        rs.crds.push_back(std::move(res));
      } else {
        rs.resources.push_back(std::move(res));
      }
    }
    return Status::Ok();
  }

  store::Store& st_;
  Labels labels_;
  const std::string intent_;
  const std::string id_;
  const appcontext::Meta& meta_;
  std::string label_ctx_;
  std::map<std::string, std::vector<Loaded>> by_app_;
  std::vector<AppWrite> writes_;
  std::map<std::string, std::map<std::string, std::string>> notes_;  // app -> cluster -> what applied
};

}  // namespace

Status GenericActionController::UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                                                 const std::string& /*update_from*/) {
  // An update builds a new context from the intents as they are now, so the
  // context being replaced is not needed: rollback reuses an old context.
  appcontext::Contexts ctx(st_);
  auto meta = ctx.GetMeta(context_id);
  if (!meta.ok()) return meta.status();
  Run run(st_, intent_name, context_id, *meta);
  ECO_RETURN_IF_ERROR(run.Load());
  ECO_RETURN_IF_ERROR(run.Plan());
  return run.Write();
}

}  // namespace eco::gac
