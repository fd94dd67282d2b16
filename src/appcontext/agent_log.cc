#include "appcontext/agent_log.h"

#include <zlib.h>

#include <cstdio>

#include "catalog/catalog.h"

namespace eco::appcontext {

using nlohmann::json;
using store::Compare;
using store::Op;

namespace {

constexpr size_t kPartBytes = 512 * 1024;  // far below etcd's request limit

std::string Rev20(uint64_t r) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(r));
  return buf;
}
std::string RevKey(const std::string& ck) { return "/eco/agent/rev/" + ck; }
std::string HeadKey(const std::string& ck, uint64_t r) { return LogPrefix(ck) + Rev20(r); }
// Parts are named by their event, not their revision: a publisher that
// loses the race for a revision must not overwrite the winner's parts.
// A cancel is published under keys of its own beside its event's.
std::string EventPart(int64_t ev, bool cancel) { return std::to_string(ev) + (cancel ? ".cancel" : ""); }
std::string BlobOf(const std::string& ctx, int64_t ev, bool cancel) { return ctx + "." + EventPart(ev, cancel); }
std::string PartPrefix(const std::string& ck, const std::string& blob) { return "/eco/agent/part/" + ck + "/" + blob + "/"; }
std::string PubKey(const std::string& ctx, int64_t ev, bool cancel, const std::string& ck) {
  return "/eco/agent/pub/" + ctx + "/" + EventPart(ev, cancel) + "/" + ck;
}
std::string AckedKey(const std::string& ck) { return "/eco/agent/acked/" + ck; }

Result<uint64_t> ReadNumber(store::Store& st, const std::string& key) {
  ECO_ASSIGN_OR_RETURN(auto kv, st.Get(key));
  if (!kv) return uint64_t{0};
  char* end = nullptr;
  const unsigned long long v = std::strtoull(kv->value.c_str(), &end, 10);
  if (kv->value.empty() || *end != '\0') return Internal(key + " holds no number: '" + kv->value + "'");
  return static_cast<uint64_t>(v);
}

json ClusterJson(const ClusterRef& c) {
  return {{"provider", c.provider}, {"name", c.name}, {"group", c.group}, {"mandatory", c.mandatory}};
}

Result<ClusterRef> ClusterFrom(const json& j) {
  if (!j.is_object() || !j.value("provider", json()).is_string() || !j.value("name", json()).is_string())
    return Invalid("publication: a cluster needs provider and name");
  ClusterRef c;
  c.provider = j["provider"].get<std::string>();
  c.name = j["name"].get<std::string>();
  if (j.contains("group") && j["group"].is_number_integer()) c.group = j["group"].get<int>();
  if (j.contains("mandatory") && j["mandatory"].is_boolean()) c.mandatory = j["mandatory"].get<bool>();
  return c;
}

json ContextJson(const ProjectedContext& pc) {
  json apps = json::array();
  for (const auto& a : pc.apps) {
    json e = {{"name", a.name}, {"resources", ToJson(a.resources)}};
    e["cluster"] = a.cluster ? ClusterJson(*a.cluster) : json();
    apps.push_back(std::move(e));
  }
  return {{"meta", ToJson(pc.meta)}, {"apps", std::move(apps)}, {"stopped", pc.stopped},
          {"superseded", pc.superseded}};
}

Result<ProjectedContext> ContextFrom(const json& j) {
  if (!j.is_object() || !j.contains("meta") || !j.contains("apps") || !j["apps"].is_array())
    return Invalid("publication: a context needs meta and apps");
  ProjectedContext pc;
  ECO_ASSIGN_OR_RETURN(pc.meta, MetaFromJson(j["meta"]));
  if (pc.meta.id.empty()) return Invalid("publication: a context without an id");
  for (const auto& a : j["apps"]) {
    if (!a.is_object() || !a.value("name", json()).is_string() || !a.contains("resources"))
      return Invalid("publication: an app needs name and resources");
    ProjectedApp pa;
    pa.name = a["name"].get<std::string>();
    ECO_ASSIGN_OR_RETURN(pa.resources, ResourceSetFromJson(a["resources"]));
    if (a.contains("cluster") && !a["cluster"].is_null()) {
      ECO_ASSIGN_OR_RETURN(auto c, ClusterFrom(a["cluster"]));
      pa.cluster = std::move(c);
    }
    pc.apps.push_back(std::move(pa));
  }
  pc.stopped = j.value("stopped", false);
  pc.superseded = j.value("superseded", "");
  return pc;
}

}  // namespace

std::string LogPrefix(const std::string& cluster_key) { return LogPrefix() + cluster_key + "/"; }
std::string LogPrefix() { return "/eco/agent/log/"; }

json ToJson(const Publication& p) {
  json ctxs = json::array();
  for (const auto& c : p.contexts) ctxs.push_back(ContextJson(c));
  json j = {{"revision", p.revision}, {"context", p.context}, {"event", p.event}, {"record", ToJson(p.record)},
            {"otherComplete", p.other_complete}, {"contexts", std::move(ctxs)}};
  if (!p.state_key.empty()) j["state"] = {{"key", p.state_key}, {"value", p.state_value}};
  if (!p.cancel.empty()) j["cancel"] = {{"why", p.cancel}, {"message", p.cancel_message}};
  return j;
}

Result<Publication> PublicationFromJson(const json& j) {
  if (!j.is_object()) return Invalid("publication: not a JSON object");
  Publication p;
  if (!j.value("revision", json()).is_number_unsigned() || !j.value("context", json()).is_string() ||
      !j.value("event", json()).is_number_integer() || !j.contains("record") ||
      !j.value("contexts", json()).is_array())
    return Invalid("publication: revision, context, event, record and contexts are required");
  p.revision = j["revision"].get<uint64_t>();
  p.context = j["context"].get<std::string>();
  p.event = j["event"].get<int64_t>();
  ECO_ASSIGN_OR_RETURN(p.record, EventFromJson(j["record"]));
  p.other_complete = j.value("otherComplete", false);
  if (j.contains("state")) {
    const json& s = j["state"];
    if (!s.is_object() || !s.value("key", json()).is_string() || !s.value("value", json()).is_string() ||
        !catalog::IsStateKey(s["key"].get<std::string>()))
      return Invalid("publication: state must be a lifecycle record under its catalog key");
    p.state_key = s["key"].get<std::string>();
    p.state_value = s["value"].get<std::string>();
  }
  if (j.contains("cancel")) {
    const json& c = j["cancel"];
    if (!c.is_object() || !c.value("why", json()).is_string() || !c.value("message", json()).is_string())
      return Invalid("publication: cancel needs why and message");
    p.cancel = c["why"].get<std::string>();
    p.cancel_message = c["message"].get<std::string>();
    if (p.cancel != "failed" && p.cancel != "stopped")
      return Invalid("publication: cancel.why must be failed or stopped, not '" + p.cancel + "'");
    if (!j["contexts"].empty()) return Invalid("publication: a cancel carries no contexts");
  }
  for (const auto& c : j["contexts"]) {
    ECO_ASSIGN_OR_RETURN(auto pc, ContextFrom(c));
    p.contexts.push_back(std::move(pc));
  }
  return p;
}

std::string EncodePublication(const Publication& p) {
  const std::string text = ToJson(p).dump();
  uLongf n = compressBound(static_cast<uLong>(text.size()));
  std::string out(n + 8, '\0');
  // The uncompressed size first: decoding allocates exactly once.
  const uint64_t size = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  compress2(reinterpret_cast<Bytef*>(out.data() + 8), &n, reinterpret_cast<const Bytef*>(text.data()),
            static_cast<uLong>(text.size()), Z_BEST_SPEED);
  out.resize(n + 8);
  return out;
}

Result<Publication> DecodePublication(std::string_view bytes) {
  // A bound on what a publication may expand to: a cluster's whole desired
  // state, far beyond the largest chart.
  constexpr uint64_t kMaxText = 1ull << 30;
  if (bytes.size() < 8) return Invalid("publication: truncated");
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  // zlib expands at most ~1032:1: a larger claim is a lie, refused before
  // anything is allocated for it.
  if (size > kMaxText || size > (bytes.size() - 8) * 1040 + 1024)
    return Invalid("publication: claims " + std::to_string(size) + " bytes");
  std::string text(size, '\0');
  uLongf n = static_cast<uLongf>(size);
  const int rc = uncompress(reinterpret_cast<Bytef*>(text.data()), &n,
                            reinterpret_cast<const Bytef*>(bytes.data() + 8), static_cast<uLong>(bytes.size() - 8));
  if (rc != Z_OK || n != size) return Invalid("publication: not valid compressed data");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Invalid("publication: not JSON");
  return PublicationFromJson(j);
}

Result<ProjectedContext> Project(store::Store& st, const std::string& id, const std::string& cluster_key) {
  Contexts ctx(st);
  ECO_ASSIGN_OR_RETURN(auto meta, ctx.GetMeta(id));
  std::vector<AppPlan> plans;
  plans.reserve(meta.app_order.size());
  std::vector<PlannedApp> apps;
  for (const auto& app : meta.app_order) {
    ECO_ASSIGN_OR_RETURN(auto plan, ctx.ReadApp(id, app));
    plans.push_back(std::move(plan));
  }
  for (const auto& plan : plans) {
    PlannedApp pa{&plan, nullptr};
    for (const auto& c : plan.clusters) {
      if (c.key() == cluster_key) {
        pa.cluster = &c;
        break;
      }
    }
    apps.push_back(pa);
  }
  return Project(st, id, meta, apps);
}

Result<ProjectedContext> Project(store::Store& st, const std::string& id, const Meta& meta,
                                 const std::vector<PlannedApp>& apps) {
  if (apps.size() != meta.app_order.size())
    return Internal("projection of " + id + ": " + std::to_string(apps.size()) + " plans for " +
                    std::to_string(meta.app_order.size()) + " apps");
  ProjectedContext pc;
  pc.meta = meta;
  for (size_t i = 0; i < apps.size(); ++i) {
    ProjectedApp pa;
    pa.name = meta.app_order[i];
    if (apps[i].plan != nullptr && apps[i].cluster != nullptr) {
      ECO_ASSIGN_OR_RETURN(pa.resources, apps[i].plan->For(*apps[i].cluster));
      pa.cluster = *apps[i].cluster;
    }
    pc.apps.push_back(std::move(pa));
  }
  ECO_ASSIGN_OR_RETURN(auto stop, st.Get(StopKey(id)));
  pc.stopped = stop && stop->value == "true";
  ECO_ASSIGN_OR_RETURN(auto sup, st.Get(SupersededKey(id)));
  if (sup) pc.superseded = sup->value;
  return pc;
}

Result<uint64_t> Publish(store::Store& st, const std::string& ck, Publication pub, const std::string& fence) {
  const bool cancel = !pub.cancel.empty();
  const std::string pub_key = PubKey(pub.context, pub.event, cancel, ck);
  for (int attempt = 0; attempt < 100; ++attempt) {
    ECO_ASSIGN_OR_RETURN(auto done, st.Get(pub_key));
    if (done) return ReadNumber(st, pub_key);
    ECO_ASSIGN_OR_RETURN(auto cur, st.Get(RevKey(ck)));
    uint64_t last = 0;
    if (cur) {
      ECO_ASSIGN_OR_RETURN(last, ReadNumber(st, RevKey(ck)));
    }
    pub.revision = last + 1;
    const std::string bytes = EncodePublication(pub);
    // Parts first, each its own write (a whole chart may exceed one
    // request); the head, written with the counter, makes them visible.
    const size_t parts = (bytes.size() + kPartBytes - 1) / kPartBytes;
    const std::string blob = BlobOf(pub.context, pub.event, cancel);
    for (size_t i = 0; i < parts; ++i) {
      ECO_RETURN_IF_ERROR(
          st.Put(PartPrefix(ck, blob) + std::to_string(i), bytes.substr(i * kPartBytes, kPartBytes)).status());
    }
    store::Txn txn;
    txn.compares.push_back(cur ? Compare::ModRevisionIs(RevKey(ck), cur->mod_revision) : Compare::Missing(RevKey(ck)));
    txn.compares.push_back(Compare::Missing(pub_key));
    if (!fence.empty()) txn.compares.push_back(Compare::Exists(fence));
    txn.success.push_back(Op::Put(RevKey(ck), std::to_string(pub.revision)));
    txn.success.push_back(Op::Put(HeadKey(ck, pub.revision),
                                  json{{"parts", parts}, {"bytes", bytes.size()}, {"blob", blob}}.dump()));
    txn.success.push_back(Op::Put(pub_key, std::to_string(pub.revision)));
    if (!fence.empty()) txn.failure.push_back(Op::Get(fence));
    ECO_ASSIGN_OR_RETURN(auto r, st.Commit(txn));
    if (r.succeeded) return pub.revision;
    if (!fence.empty() && !r.gets.empty() && !r.gets[0].has_value())
      return Conflict("lost the lock " + fence + " while publishing to " + ck);
    // Another event took this revision: try the next one.
  }
  return Unavailable("could not publish to cluster " + ck + ": too many concurrent publications");
}

Result<std::vector<LoggedPublication>> ReadLog(store::Store& st, const std::string& ck, uint64_t after,
                                               size_t max_bytes) {
  store::RangeOptions ro;
  ro.after = HeadKey(ck, after);
  ECO_ASSIGN_OR_RETURN(auto heads, st.Range(LogPrefix(ck), ro));
  std::vector<LoggedPublication> out;
  size_t total = 0;
  for (const auto& kv : heads.kvs) {
    const std::string tail = kv.key.substr(LogPrefix(ck).size());
    LoggedPublication lp;
    lp.revision = std::strtoull(tail.c_str(), nullptr, 10);
    if (lp.revision <= after) continue;
    json head = json::parse(kv.value, nullptr, false);
    if (!head.is_object() || !head.value("parts", json()).is_number_unsigned() ||
        !head.value("blob", json()).is_string())
      return Internal("agent log head " + kv.key + " is malformed");
    const size_t parts = head["parts"].get<size_t>();
    const std::string blob = head["blob"].get<std::string>();
    for (size_t i = 0; i < parts; ++i) {
      ECO_ASSIGN_OR_RETURN(auto part, st.Get(PartPrefix(ck, blob) + std::to_string(i)));
      if (!part) return Internal("agent log " + kv.key + ": part " + std::to_string(i) + " is missing");
      lp.bytes += part->value;
    }
    total += lp.bytes.size();
    out.push_back(std::move(lp));
    if (total >= max_bytes) break;
  }
  return out;
}

Result<uint64_t> LastRevision(store::Store& st, const std::string& ck) { return ReadNumber(st, RevKey(ck)); }

Status Acknowledge(store::Store& st, const std::string& ck, uint64_t revision) {
  ECO_ASSIGN_OR_RETURN(uint64_t acked, ReadNumber(st, AckedKey(ck)));
  if (revision <= acked) return Status::Ok();
  ECO_ASSIGN_OR_RETURN(uint64_t last, LastRevision(st, ck));
  if (revision > last)
    return Invalid("acknowledged revision " + std::to_string(revision) + " was never published (newest " +
                   std::to_string(last) + ")");
  // The records first, then the mark: a stop in between leaves the mark
  // where the next acknowledgement starts deleting again, not records
  // after it that nothing would ever delete.
  store::RangeOptions ro;
  ro.after = HeadKey(ck, acked);
  ECO_ASSIGN_OR_RETURN(auto heads, st.Range(LogPrefix(ck), ro));
  for (const auto& kv : heads.kvs) {
    if (kv.key > HeadKey(ck, revision)) break;
    json head = json::parse(kv.value, nullptr, false);
    store::Txn txn;
    txn.success.push_back(Op::Delete(kv.key));
    if (head.is_object() && head.value("blob", json()).is_string())
      txn.success.push_back(Op::DeletePrefix(PartPrefix(ck, head["blob"].get<std::string>())));
    ECO_RETURN_IF_ERROR(st.Commit(txn).status());
  }
  return st.Put(AckedKey(ck), std::to_string(revision)).status();
}

Result<uint64_t> Acknowledged(store::Store& st, const std::string& ck) { return ReadNumber(st, AckedKey(ck)); }

std::string OutcomeKey(const std::string& context, int64_t event, const std::string& ck, const std::string& app) {
  return OutcomePrefix() + context + "/" + std::to_string(event) + "/" + ck + "/" + app;
}
std::string OutcomePrefix() { return "/eco/agent/out/"; }

json ToJson(const Outcome& o) { return {{"ok", o.ok}, {"message", o.message}, {"own", o.own_failure}}; }

Result<Outcome> ParseOutcome(std::string_view value) {
  json j = json::parse(value, nullptr, false);
  if (!j.is_object() || !j.value("ok", json()).is_boolean()) return Internal("agent outcome is malformed");
  Outcome o;
  o.ok = j["ok"].get<bool>();
  o.message = j.value("message", "");
  o.own_failure = j.value("own", false);
  return o;
}

std::string SeenKey(const std::string& ck) { return SeenPrefix() + ck; }
std::string SeenPrefix() { return "/eco/agent/seen/"; }
json ToJson(const Seen& s) {
  json j = {{"time", s.time}, {"replica", s.replica}};
  if (s.drift_repaired > 0) j["driftRepaired"] = s.drift_repaired;
  if (!s.agent_version.empty()) j["agentVersion"] = s.agent_version;
  return j;
}
Result<Seen> ParseSeen(std::string_view value) {
  json j = json::parse(value, nullptr, false);
  if (!j.is_object() || !j.value("time", json()).is_string()) return Internal("agent seen record is malformed");
  Seen s{j["time"].get<std::string>(), j.value("replica", ""), 0};
  if (j.contains("driftRepaired") && j["driftRepaired"].is_number_unsigned())
    s.drift_repaired = j["driftRepaired"].get<uint64_t>();
  if (j.contains("agentVersion") && j["agentVersion"].is_string()) s.agent_version = j["agentVersion"].get<std::string>();
  return s;
}

void WriteSeen(store::Store& st, std::map<std::string, std::string>& records) {
  constexpr size_t kPerTxn = 256;
  auto it = records.begin();
  while (it != records.end()) {
    store::Txn txn;
    auto end = it;
    for (size_t n = 0; end != records.end() && n < kPerTxn; ++end, ++n)
      txn.success.push_back(store::Op::Put(SeenKey(end->first), end->second));
    it = st.Commit(txn).ok() ? records.erase(it, end) : end;
  }
}

std::string ReportSeqKey(const std::string& ck) { return "/eco/agent/rseq/" + ck; }

std::vector<store::Op> ForgetContextOps(const std::string& ctx) {
  return {Op::DeletePrefix("/eco/agent/pub/" + ctx + "/"), Op::DeletePrefix(OutcomePrefix() + ctx + "/")};
}

std::vector<store::Op> ForgetClusterOps(const std::string& ck) {
  return {Op::Delete(RevKey(ck)),           Op::DeletePrefix(LogPrefix(ck)),
          Op::DeletePrefix("/eco/agent/part/" + ck + "/"), Op::Delete(AckedKey(ck)),
          Op::Delete(SeenKey(ck)),          Op::Delete(ReportSeqKey(ck))};
}

}  // namespace eco::appcontext
