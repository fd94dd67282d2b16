// How a cluster task performs each kind of step on its cluster, through
// the delivery seam: ownership checks, applies (shared objects, discovered
// Endpoints), deletes of what is its own, waits for readiness.
#include "catalog/catalog.h"
#include "common/log.h"
#include "k8s/readiness.h"
#include "rsync/cluster_task.h"
#include "rsync/logic.h"
#include "rsync/metrics.h"

namespace eco::rsync {

using appcontext::ClusterRef;
using nlohmann::json;

namespace {

// The object has a deletionTimestamp: it is going away.
bool BeingDeleted(const json& live) {
  auto md = live.find("metadata");
  if (md == live.end() || !md->is_object()) return false;
  auto ts = md->find("deletionTimestamp");
  return ts != md->end() && !ts->is_null();
}

// Who owns `live` if not the deployment `ev` is of: "" when it is its own
// (its owner annotation, or, from before owners were written, its context
// label), else a description for a message.
// `unmarked_is_own`: an object without any eco mark counts as its own (a
// delete of what the record says it applied: logical clouds' objects had
// no marks before owners were written).
std::string OtherOwner(const EventData& ev, const json& live, bool unmarked_is_own = false) {
  const json empty = json::object();
  const json& md = live.contains("metadata") && live["metadata"].is_object() ? live["metadata"] : empty;
  const std::string owner = md.contains("annotations") ? Str(md["annotations"], appcontext::kOwnerAnnotation) : "";
  const std::string ctx = md.contains("labels") ? Str(md["labels"], appcontext::kContextLabel) : "";
  if (owner == ev.owner || (owner.empty() && !ctx.empty() && ctx == ev.status_ctx)) return "";
  if (!owner.empty() && owner == ev.replaced_owner) return "";
  if (unmarked_is_own && owner.empty() && ctx.empty()) return "";
  if (!owner.empty()) return owner;
  if (!ctx.empty()) return "eco's AppContext " + ctx;
  return "nothing eco deployed (it has no " + std::string(appcontext::kOwnerAnnotation) + " annotation)";
}

// Whether this deployment may apply over `live`, an object already on the
// cluster: its own, a Namespace or CRD it shares (recorded so: it is never
// deleted, and is applied without eco's marks), or anything with the DIG's
// spec.adopt. Otherwise a conflict naming the object, cluster and owner.
Status ClaimObject(const EventData& ev, Task* t, const Step& s, const json& live, const std::string& ns) {
  const std::string other = OtherOwner(ev, live);
  if (other.empty()) return Status::Ok();
  const std::string kind = Str(s.res->object, "kind"), av = Str(s.res->object, "apiVersion");
  // Going away: what is applied next is made anew, and is this deployment's.
  if (BeingDeleted(live)) return Status::Ok();
  if ((kind == "Namespace" && av == "v1") || kind == "CustomResourceDefinition") {
    t->rec.resources[s.res->name].shared = true;
    t->dirty = true;
    return Status::Ok();
  }
  if (ev.meta.adopt) return Status::Ok();
  return Conflict(kind + " " + (ns.empty() ? "" : ns + "/") + MetaName(s.res->object) + " on cluster " +
                  t->cluster.key() + " belongs to " + other +
                  "; a DIG takes over objects that are not its own only with spec.adopt: true");
}

std::string Namespace(const EventData& ev, const k8s::ResourceInfo& info, const json& obj) {
  if (!info.namespaced) return "";
  std::string ns = obj.contains("metadata") ? Str(obj["metadata"], "namespace") : "";
  return ns.empty() ? ev.meta.namespace_ : ns;
}

OwnerListings::Marks MarksOf(const json& md) {
  OwnerListings::Marks m;
  if (!md.is_object()) return m;
  if (auto a = md.find("annotations"); a != md.end() && a->is_object()) m.owner = Str(*a, appcontext::kOwnerAnnotation);
  if (auto l = md.find("labels"); l != md.end() && l->is_object()) m.context = Str(*l, appcontext::kContextLabel);
  if (auto d = md.find("deletionTimestamp"); d != md.end() && !d->is_null()) m.deleting = true;
  return m;
}

// An object as ClaimObject reads it: only the marks.
json WithMarks(const OwnerListings::Marks& m) {
  json md = json::object();
  if (!m.owner.empty()) md["annotations"][appcontext::kOwnerAnnotation] = m.owner;
  if (!m.context.empty()) md["labels"][appcontext::kContextLabel] = m.context;
  if (m.deleting) md["deletionTimestamp"] = "set";
  return json{{"metadata", std::move(md)}};
}

// The object of that name already on the cluster (nullopt: none), as far as
// ownership goes: from the event's listing of its kind and namespace, or
// read alone when that listing is not complete.
Result<std::optional<json>> Existing(EventData& ev, Task* t, Clock::Time now, const k8s::ResourceInfo& info,
                                     const std::string& av, const std::string& kind, const std::string& ns,
                                     const std::string& name) {
  // A namespaced kind without a namespace means the client's default one
  // to a read, all of them to a list: read it alone.
  if (!info.namespaced || !ns.empty()) {
    const std::string key = t->cluster.key() + "\n" + av + "\n" + kind + "\n" + ns;
    auto listing = ev.owners.Get(key, now, [&]() -> Result<OwnerListings::Listing> {
      bool truncated = false;
      ECO_ASSIGN_OR_RETURN(auto items,
                           t->target->ListMetadata(av, kind, ns, OwnerListings::kMaxListed, &truncated));
      OwnerListings::Listing l;
      l.complete = !truncated;
      if (truncated) return l;
      for (const auto& item : items) {
        const json& md = item.contains("metadata") ? item["metadata"] : json::object();
        const std::string n = Str(md, "name");
        if (!n.empty()) l.objects.emplace(n, MarksOf(md));
      }
      return l;
    });
    if (!listing.ok()) return listing.status();
    if ((*listing)->complete) {
      auto it = (*listing)->objects.find(name);
      if (it == (*listing)->objects.end()) return std::optional<json>();
      return std::optional<json>(WithMarks(it->second));
    }
  }
  auto live = t->target->Get(av, kind, ns, name);
  if (!live.ok()) {
    if (live.status().code() == Code::kNotFound) return std::optional<json>();
    return live.status();
  }
  return std::optional<json>(std::move(*live));
}

bool Discovering(const std::string& kind, const std::string& av, const json& o) {
  return kind == "Endpoints" && av == "v1" && o.contains("metadata") && o["metadata"].contains("annotations") &&
         o["metadata"]["annotations"].is_object() &&
         o["metadata"]["annotations"].contains(appcontext::kDiscoverAnnotation);
}

}  // namespace

Result<std::shared_ptr<const OwnerListings::Listing>> OwnerListings::Get(const std::string& key, Clock::Time now,
                                                                         const Lister& list) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& s = slots_[key];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard<std::mutex> g(slot->mu);
  if (slot->listing && now - slot->at < kFresh) return slot->listing;
  ECO_ASSIGN_OR_RETURN(Listing l, list());
  slot->listing = std::make_shared<const Listing>(std::move(l));
  slot->at = now;
  return slot->listing;
}

Status TaskRunner::DoStep(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, bool* not_ready) {
  const json& o = s.res->object;
  if (!o.is_object() || (o.contains("metadata") && !o["metadata"].is_object())) {
    if (s.kind == Step::Kind::kCheck) return Status::Ok();  // its apply says so, in order
    return Invalid("resource " + s.res->name + " is not a Kubernetes object");
  }
  const std::string av = Str(o, "apiVersion"), kind = Str(o, "kind");
  auto info = t->target->Resolve(av, kind);
  if (!info.ok()) {
    if (info.status().code() != Code::kNotFound) return info.status();
    // The kind is gone, so is the object; or it is not there yet, nor the object.
    if (s.kind == Step::Kind::kDelete || s.kind == Step::Kind::kCheck) return Status::Ok();
    // A kind of the app's own CRDs is served a moment after the CRD is
    // Established (the API server installs its handler then).
    if (s.kind == Step::Kind::kApply && !DefiningCrd(t->set->rs, av, kind).empty()) {
      *not_ready = true;
      return Status::Ok();
    }
    return Invalid("the cluster does not serve " + av + " " + kind);
  }
  const std::string ns = Namespace(*ev, *info, o);
  const auto rec = t->rec.resources.find(s.res->name);
  const bool shared = rec != t->rec.resources.end() && rec->second.shared;
  switch (s.kind) {
    case Step::Kind::kCheck: {
      auto live = Existing(*ev, t, clock_.Now(), *info, av, kind, ns, MetaName(o));
      if (!live.ok()) return live.status();
      return *live ? ClaimObject(*ev, t, s, **live, ns) : Status::Ok();
    }
    case Step::Kind::kApply:
      return Apply(ev, t, s, ns, shared, not_ready);
    case Step::Kind::kDelete:
      return Delete(ev, t, s, ns, shared);
    case Step::Kind::kGone: {
      if (shared) return Status::Ok();  // not deleted: it stays
      auto live = t->target->Get(av, kind, ns, MetaName(o));
      if (!live.ok()) return live.status().code() == Code::kNotFound ? Status::Ok() : live.status();
      // Still there and being deleted; one left in place is not waited for.
      *not_ready = BeingDeleted(*live);
      return Status::Ok();
    }
    case Step::Kind::kWait:
      return Wait(t, s, ns, not_ready);
  }
  return Internal("unknown step");
}

Status TaskRunner::Apply(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, const std::string& ns,
                         bool shared, bool* not_ready) {
  const json& o = s.res->object;
  const std::string av = Str(o, "apiVersion"), kind = Str(o, "kind");
  ApplyRequest req;
  if (Discovering(kind, av, o)) {
    auto filled = Discovered(t, o);
    if (!filled.ok()) {
      if (!filled.status().waiting()) return filled.status();
      // Not a fault of this cluster: it waits, bounded, without applying
      // its list again.
      t->wait_why = filled.status().message();
      *not_ready = true;
      return Status::Ok();
    }
    json obj = Owned(*filled, ev->owner);
    if (Str(obj["metadata"], "namespace").empty() && !ns.empty()) obj["metadata"]["namespace"] = ns;
    return ApplyObject(*ev, t, obj, req);
  }
  if (shared) {
    // Another's CRD is left as its owner keeps it (Helm leaves an existing
    // CRD alone too). A shared Namespace gets the chart's labels and
    // annotations, not eco's marks, under a field manager of this
    // deployment's own, so that no one else's fields go.
    if (kind == "CustomResourceDefinition") return Status::Ok();
    json obj = o;
    if (auto& md = obj["metadata"]; md.is_object()) {
      if (md.contains("labels") && md["labels"].is_object()) {
        md["labels"].erase(appcontext::kContextLabel);
        md["labels"].erase(appcontext::kAppLabel);
      }
    }
    req.field_manager = "eco-share-" + ShortHash(ev->owner);
    return ApplyObject(*ev, t, obj, req);
  }
  std::string rv;
  if (opt_.on_applied) req.resource_version = &rv;
  t->generation = 0;
  req.generation = &t->generation;
  auto told = [&](Status st) {
    if (st.ok() && !rv.empty()) opt_.on_applied(av, kind, ns, MetaName(o), rv);
    return st;
  };
  const std::string own_ns = o.contains("metadata") ? Str(o["metadata"], "namespace") : "";
  if (ns.empty() || own_ns == ns) {
    req.serialized = &s.bodies->as_is;
    return told(ApplyObject(*ev, t, o, req));
  }
  json obj = Owned(o, ev->owner);
  obj["metadata"]["namespace"] = ns;
  // The event's namespace is the only one filled in (Namespace()).
  if (own_ns.empty() && !s.bodies->in_namespace.empty()) req.serialized = &s.bodies->in_namespace;
  return told(ApplyObject(*ev, t, obj, req));
}

Status TaskRunner::ApplyObject(const EventData& ev, Task* t, const json& obj, const ApplyRequest& req) {
  t->warnings.clear();
  Status st = t->target->Apply(obj, req);
  // Server-side apply types the object against the kind's schema and
  // refuses what it does not declare, where EMCO's client-side apply (and
  // a create) drops it with a warning. The fields dropped are read from the
  // cluster's own schema, not from the error text.
  if (st.ok() || ev.meta.field_validation == "Strict" || st.code() != Code::kInvalid ||
      st.message().find("field not declared in schema") == std::string::npos)
    return st;
  auto doc = t->target->Schemas(Str(obj, "apiVersion"));
  if (!doc.ok()) {
    if (doc.status().retryable()) return doc.status();
    return Invalid(st.message() + " (fields not dropped: " + doc.status().message() + ")");
  }
  // What was sent: the stored body carries more metadata than `obj`.
  json pruned = req.serialized ? json::parse(*req.serialized, nullptr, false) : obj;
  if (pruned.is_discarded()) return st;
  auto dropped = k8s::DropUndeclaredFields(**doc, pruned);
  if (!dropped.ok() || dropped->empty()) return st;  // not what the schema says: the cluster's answer stands
  ApplyRequest again = req;
  again.serialized = nullptr;  // the stored bodies still carry the fields
  ECO_RETURN_IF_ERROR(t->target->Apply(pruned, again));
  const json meta = pruned.value("metadata", json::object());
  const std::string ns = Str(meta, "namespace");
  const std::string object = Str(pruned, "kind") + " " + (ns.empty() ? "" : ns + "/") + Str(meta, "name");
  std::string fields;
  for (const auto& path : *dropped) {
    t->warnings.push_back(path + ": field not declared in schema, not applied");
    fields += (fields.empty() ? "" : ", ") + path;
  }
  log::Write(log::Level::kWarn, "rsync", "fields not declared in the cluster's schema; applied without them",
             {log::Field("owner", ev.owner), log::Field("app", t->app), log::Field("cluster", t->cluster.key()),
              log::Field("object", object), log::Field("fields", fields)});
  RsyncMetrics::Get().fields_dropped.Increment(static_cast<double>(dropped->size()));
  return Status::Ok();
}

Status TaskRunner::Delete(const std::shared_ptr<EventData>& ev, Task* t, const Step& s, const std::string& ns,
                          bool shared) {
  const json& o = s.res->object;
  const std::string av = Str(o, "apiVersion"), kind = Str(o, "kind"), name = MetaName(o);
  if (shared) {
    t->note = "left in place: it was on the cluster before this deployment";
    return Status::Ok();
  }
  if (s.recorded || kind == "CustomResourceDefinition") {
    // Only what this deployment owns goes: another may have taken the
    // object over (spec.adopt) since it was applied.
    auto live = t->target->Get(av, kind, ns, name);
    if (!live.ok()) return live.status().code() == Code::kNotFound ? Status::Ok() : live.status();
    if (const std::string other = OtherOwner(*ev, *live, /*unmarked_is_own=*/true); !other.empty()) {
      t->note = "left in place: now owned by " + other;
      return Status::Ok();
    }
  }
  Status d = t->target->Delete(av, kind, ns, name);
  return d.code() == Code::kNotFound ? Status::Ok() : d;
}

Status TaskRunner::Wait(Task* t, const Step& s, const std::string& ns, bool* not_ready) {
  const json& o = s.res->object;
  const std::string kind = Str(o, "kind"), name = MetaName(o);
  auto live = t->target->Get(Str(o, "apiVersion"), kind, ns, name);
  if (!live.ok()) {
    if (live.status().code() != Code::kNotFound) return live.status();
    *not_ready = true;
    return Status::Ok();
  }
  const json& st = live->contains("status") ? (*live)["status"] : json();
  if (kind == "Pod" && Str(st, "phase") == "Failed") return Invalid("hook Pod " + name + " failed");
  if (kind == "Job" && st.is_object() && st.contains("conditions") && st["conditions"].is_array()) {
    for (const auto& c : st["conditions"]) {
      if (Str(c, "type") == "Failed" && Str(c, "status") == "True") return Invalid("hook Job " + name + " failed");
    }
  }
  *not_ready = !k8s::CheckReady(*live).ready;
  return Status::Ok();
}

Result<json> TaskRunner::Discovered(Task* t, const json& endpoints) {
  const json wanted =
      json::parse(Str(endpoints["metadata"]["annotations"], appcontext::kDiscoverAnnotation), nullptr, false);
  if (!wanted.is_array()) {
    return Invalid("annotation " + std::string(appcontext::kDiscoverAnnotation) + " is not a JSON array");
  }
  json out = endpoints;
  for (const auto& w : wanted) {
    const std::string key = Str(w, "cluster"), ns = Str(w, "namespace"), name = Str(w, "service");
    const size_t plus = key.find('+');
    const int port = w.is_object() && w.contains("port") && w["port"].is_number_integer() ? w["port"].get<int>() : 0;
    if (plus == std::string::npos || name.empty() || port <= 0) {
      return Invalid("annotation " + std::string(appcontext::kDiscoverAnnotation) +
                     ": an entry needs cluster, service and port");
    }
    const std::string where = "Service " + (ns.empty() ? name : ns + "/" + name) + " on server cluster " + key;
    ClusterRef c;
    c.provider = key.substr(0, plus);
    c.name = key.substr(plus + 1);
    // The server cluster is another task's: its trouble is waited out here
    // (bounded), not counted against the client cluster's connectivity.
    auto target = c.key() == t->cluster.key() && t->target ? Result<std::shared_ptr<ClusterTarget>>(t->target)
                                                           : delivery_.Target(c);
    if (!target.ok()) {
      if (target.status().retryable()) return Waiting(where + ": " + target.status().message());
      return target.status().Annotate(where);
    }
    auto svc = (*target)->Get("v1", "Service", ns, name);
    if (!svc.ok()) {
      if (svc.status().code() == Code::kNotFound) return Waiting(where + ": not deployed yet");
      if (svc.status().retryable()) return Waiting(where + ": " + svc.status().message());
      return svc.status().Annotate(where);
    }
    std::vector<json> nodes;
    if (NeedsNodes(*svc)) {
      auto list = (*target)->List("v1", "Node", "");
      if (!list.ok()) {
        if (list.status().retryable()) return Waiting(where + ": listing its nodes: " + list.status().message());
        return list.status().Annotate(where + ": listing its nodes");
      }
      nodes = std::move(*list);
    }
    auto addr = ReachableAddress(*svc, nodes, port);
    if (!addr.ok()) return Status(addr.status().code(), where + ": " + addr.status().message());
    out = WithAddresses(std::move(out), *addr, Str(w, "portName"), Str(w, "protocol"));
  }
  return out;
}

}  // namespace eco::rsync
