#include "rsync/steps.h"

#include <cstdio>
#include <functional>
#include <set>

#include "common/json_fields.h"
#include "rsync/logic.h"

namespace eco::rsync {

using appcontext::Resource;
using appcontext::ResourceSet;
using nlohmann::json;

std::string Str(const json& j, const char* k) { return StringField(j, k); }

std::string MetaName(const json& o) {
  return o.is_object() && o.contains("metadata") ? Str(o["metadata"], "name") : "";
}

json Owned(const json& o, const std::string& owner) {
  json copy = o;
  json& md = copy["metadata"];
  if (!md.is_object()) md = json::object();
  json& ann = md["annotations"];
  if (!ann.is_object()) ann = json::object();
  ann[appcontext::kOwnerAnnotation] = owner;
  return copy;
}

std::shared_ptr<const PreparedSet> Prepare(ResourceSet rs, const std::string& ns, bool serialize,
                                           const std::string& owner) {
  auto p = std::make_shared<PreparedSet>();
  p->rs = std::move(rs);
  if (!serialize) return p;
  for (const auto* list : {&p->rs.crds, &p->rs.resources, &p->rs.hooks}) {
    for (const Resource& r : *list) {
      PreparedSet::Bodies& b = p->bodies[&r];
      const json& o = r.object;
      // Objects the task refuses (no object, metadata not an object) are
      // sent as they are, and get no namespaced copy.
      const bool shaped = o.is_object() && (!o.contains("metadata") || o["metadata"].is_object());
      if (!shaped) {
        b.as_is = o.dump();
        continue;
      }
      json owned = Owned(o, owner);
      b.as_is = owned.dump();
      const bool has_ns = o.contains("metadata") && !Str(o["metadata"], "namespace").empty();
      if (!has_ns && !ns.empty()) {
        owned["metadata"]["namespace"] = ns;
        b.in_namespace = owned.dump();
      }
    }
  }
  return p;
}

std::string ShortHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char out[9];
  std::snprintf(out, sizeof out, "%08x", static_cast<unsigned>(h ^ (h >> 32)));
  return out;
}

std::string DefiningCrd(const ResourceSet& rs, const std::string& api_version, const std::string& kind) {
  const size_t slash = api_version.find('/');
  if (slash == std::string::npos) return "";
  const std::string group = api_version.substr(0, slash), version = api_version.substr(slash + 1);
  for (const Resource& c : rs.crds) {
    const json& o = c.object;
    if (!o.is_object() || !o.contains("spec") || !o["spec"].is_object()) continue;
    const json& spec = o["spec"];
    if (Str(spec, "group") != group || !spec.contains("names") || Str(spec["names"], "kind") != kind) continue;
    bool served = !spec.contains("versions") && Str(spec, "version") == version;  // v1beta1's single version
    if (spec.contains("versions") && spec["versions"].is_array()) {
      for (const auto& v : spec["versions"]) served = served || Str(v, "name") == version;
    }
    if (served) return o.contains("metadata") ? Str(o["metadata"], "name") : "";
  }
  return "";
}

namespace {

// Hooks of these kinds are waited for until ready (Job and Pod: succeeded).
bool Waitable(const std::string& kind) {
  return kind == "Job" || kind == "Pod" || kind == "Deployment" || kind == "StatefulSet" ||
         kind == "DaemonSet";
}

std::vector<const Resource*> All(const std::vector<Resource>& v) {
  std::vector<const Resource*> out;
  for (const Resource& r : v) out.push_back(&r);
  return out;
}

// Builds one task's plan, list by list.
class Planner {
 public:
  explicit Planner(const PlanInput& in) : in_(in), rs_(in.set->rs), other_(in.other ? &in.other->rs : nullptr) {}

  std::vector<Step> Plan() {
    if (in_.type == "instantiate") {
      Instantiate();
    } else if (in_.type == "resync") {
      Resync();
    } else if (in_.type == "terminate") {
      Terminate();
    } else if (in_.type == "update") {
      Update();
    } else if (in_.type == "update-delete") {
      UpdateDelete();
    }
    return std::move(steps_);
  }

 private:
  size_t Begin() const { return steps_.size(); }
  void Add(Step::Kind k, const Resource& r, bool recorded, bool lenient, size_t list) {
    // Every step is one of this event's own resources (Changed and Removed
    // point into `rs`); the replaced revision's are only compared with.
    steps_.push_back(Step{k, &r, &in_.set->bodies.at(&r), recorded, lenient, false, list});
  }
  // Objects this deployment does not know to be its own on the cluster are
  // looked at first, all of them before anything is applied: one that
  // belongs to another deployment, or that eco did not create, fails the
  // app there with nothing changed.
  void Checks(const std::vector<const Resource*>& v) {
    const size_t list = Begin();
    for (const Resource* r : v) {
      auto it = in_.rec->resources.find(r->name);
      if (it != in_.rec->resources.end() && (it->second.shared || it->second.status == "Applied")) continue;
      Add(Step::Kind::kCheck, *r, false, false, list);
    }
  }
  // CRDs first, then a wait until each is Established: its kinds are served
  // only after that, and a custom resource applied sooner is refused.
  void Crds(const std::vector<const Resource*>& v) {
    const size_t list = Begin();
    for (const Resource* c : v) Add(Step::Kind::kApply, *c, true, false, list);
    for (const Resource* c : v) {
      Add(Step::Kind::kWait, *c, false, false, list);
      steps_.back().bounded = true;
    }
  }
  void Hooks(const char* event) {
    const size_t list = Begin();
    auto it = rs_.hook_events.find(event);
    if (it == rs_.hook_events.end()) return;
    for (const auto& name : it->second) {
      for (const auto& h : rs_.hooks) {
        if (h.name != name) continue;
        Add(Step::Kind::kApply, h, false, false, list);
        if (Waitable(Str(h.object, "kind"))) Add(Step::Kind::kWait, h, false, false, list);
      }
    }
  }
  // A deleted Namespace terminates while its content goes: the event ends
  // when it is gone, so that what comes next (an instantiate) can create it.
  void Gone(const Resource& r, size_t list) {
    if (Str(r.object, "kind") != "Namespace" || Str(r.object, "apiVersion") != "v1") return;
    Add(Step::Kind::kGone, r, false, false, list);
    steps_.back().bounded = true;
  }
  void Cleanup(const std::vector<const Resource*>& hs, const std::vector<const Resource*>& crds) {
    const size_t list = Begin();
    for (const Resource* h : hs) Add(Step::Kind::kDelete, *h, false, true, list);
    for (const Resource* c : crds) Add(Step::Kind::kDelete, *c, true, true, list);
  }
  void ApplyAll(const std::vector<const Resource*>& v) {
    const size_t list = Begin();
    for (const Resource* r : v) Add(Step::Kind::kApply, *r, true, false, list);
  }
  void DeleteAll(const std::vector<const Resource*>& v) {
    const size_t list = Begin();
    for (auto it = v.rbegin(); it != v.rend(); ++it) {
      Add(Step::Kind::kDelete, **it, true, false, list);
      Gone(**it, list);
    }
  }
  std::vector<const Resource*> CrdsAndResources() const {
    std::vector<const Resource*> applied = All(rs_.crds), main = All(rs_.resources);
    applied.insert(applied.end(), main.begin(), main.end());
    return applied;
  }

  void Instantiate() {
    Checks(CrdsAndResources());
    Crds(All(rs_.crds));
    Hooks("pre-install");
    ApplyAll(All(rs_.resources));
    Hooks("post-install");
  }
  // Everything of this revision again, as an update that finds nothing on
  // the cluster would: no hooks.
  void Resync() {
    Checks(CrdsAndResources());
    Crds(All(rs_.crds));
    ApplyAll(All(rs_.resources));
  }
  void Terminate() {
    Hooks("pre-delete");
    DeleteAll(All(rs_.resources));
    Hooks("post-delete");
    Cleanup(All(rs_.hooks), All(rs_.crds));
  }
  // Identical objects are skipped only where the record says they are on
  // the cluster with the replaced revision's content: an earlier revision
  // that failed or was cut short there (a cluster down, a stop, a newer
  // update) left them out or older, and this revision must not.
  void Update() {
    const std::set<std::string> on_cluster = KnownOnCluster(*in_.rec, in_.other_ctx, in_.other_complete);
    bool complete = in_.other_complete;
    for (const auto& r : rs_.resources) complete = complete && on_cluster.count(r.name) > 0;
    // CRDs recorded by releases before their records existed have none: all
    // of them again unless the earlier revision got everything there.
    const auto changed_crds = Changed(rs_.crds, other_ && complete ? &other_->crds : nullptr);
    const auto changed = Changed(rs_.resources, other_ ? &other_->resources : nullptr, &on_cluster);
    std::vector<const Resource*> applied = changed_crds;
    applied.insert(applied.end(), changed.begin(), changed.end());
    Checks(applied);
    Crds(changed_crds);
    ApplyAll(changed);
  }
  void UpdateDelete() {
    DeleteAll(Removed(rs_.resources, other_ ? &other_->resources : nullptr));
    Cleanup(Removed(rs_.hooks, other_ ? &other_->hooks : nullptr),
            Removed(rs_.crds, other_ ? &other_->crds : nullptr));
  }

  const PlanInput& in_;
  const ResourceSet& rs_;
  const ResourceSet* other_;
  std::vector<Step> steps_;
};

}  // namespace

std::vector<Step> PlanSteps(const PlanInput& in, std::vector<PlannedStep>* planned) {
  std::vector<Step> steps = Planner(in).Plan();
  const ResourceSet& rs = in.set->rs;
  const std::vector<Resource>* lists[] = {&rs.crds, &rs.resources, &rs.hooks};
  planned->clear();
  planned->reserve(steps.size());
  const std::less<const Resource*> before;
  for (const Step& st : steps) {
    uint8_t where = 0;
    auto in_list = [&](const std::vector<Resource>* v) {
      return !before(st.res, v->data()) && before(st.res, v->data() + v->size());
    };
    while (where < 2 && !in_list(lists[where])) ++where;
    planned->push_back({st.kind, where, static_cast<size_t>(st.res - lists[where]->data()), st.recorded,
                        st.lenient, st.bounded, st.list});
  }
  return steps;
}

std::vector<Step> StepsOf(const PreparedSet& set, const std::vector<PlannedStep>& planned) {
  const std::vector<Resource>* lists[] = {&set.rs.crds, &set.rs.resources, &set.rs.hooks};
  std::vector<Step> steps;
  steps.reserve(planned.size());
  for (const PlannedStep& p : planned) {
    const Resource& r = (*lists[p.where])[p.pos];
    steps.push_back(Step{p.kind, &r, &set.bodies.at(&r), p.recorded, p.lenient, p.bounded, p.list});
  }
  return steps;
}

}  // namespace eco::rsync
