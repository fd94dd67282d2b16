#include "status/shared_watches.h"

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/json_fields.h"

namespace eco::status {

using k8s::WatchEvent;
using k8s::WatchEventType;
using nlohmann::json;

namespace {

const json& Metadata(const json& obj) {
  static const json kEmpty = json::object();
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() ? *m : kEmpty;
}

// An object's identity within its kind on one cluster.
std::string ObjectId(const json& obj) {
  const json& md = Metadata(obj);
  return StringField(md, "namespace") + "/" + StringField(md, "name");
}

// The status context an object belongs to (its app.eco.io/context label).
std::string ContextOf(const json& obj) {
  const json& md = Metadata(obj);
  auto l = md.find("labels");
  return l != md.end() && l->is_object() ? StringField(*l, appcontext::kContextLabel)
                                         : std::string();
}

// Objects are held as CBOR: a slim object as a JSON tree costs ten times
// its encoded size, and only a late subscriber's first list decodes them.
using Packed = std::vector<std::uint8_t>;
Packed Pack(const json& obj) {
  Packed p = json::to_cbor(obj);
  p.shrink_to_fit();
  return p;
}
json Unpack(const Packed& p) {
  return json::from_cbor(p, /*strict=*/true, /*allow_exceptions=*/false);
}

}  // namespace

bool WatchKey::operator<(const WatchKey& o) const {
  return std::tie(cluster, api_version, kind) < std::tie(o.cluster, o.api_version, o.kind);
}

struct SharedWatches::Watch {
  enum class State { kStarting, kRunning, kGone };
  WatchKey key;
  bool by_name = false;
  State state = State::kStarting;
  Status start_error;   // kGone after a failed start
  k8s::WatchId id = 0;  // kRunning
  bool listed = false;  // `objects` is the cluster's current set
  // Context ("" for a kind matched by name) -> object id -> slim object.
  // (Ordered: a relist hands them out in the same order every time.)
  std::map<std::string, std::map<std::string, Packed>> objects;
  std::unordered_map<std::string, std::string> context_of;  // object id -> context
  std::multimap<std::string, SubscriptionId> subs;          // by context
};

SharedWatches::~SharedWatches() {
  std::vector<k8s::WatchId> ids;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [key, w] : watches_) {
      if (w->state == Watch::State::kRunning) ids.push_back(w->id);
      w->state = Watch::State::kGone;
    }
    watches_.clear();
    subs_.clear();
  }
  for (auto id : ids) source_.Cancel(id);
}

bool SharedWatches::ByName(const std::string& api_version, const std::string& kind) {
  return api_version == "v1" && kind == "Namespace";
}

k8s::WatchSpec SharedWatches::SpecFor(const WatchKey& key) {
  k8s::WatchSpec spec;
  spec.api_version = key.api_version;
  spec.kind = key.kind;
  if (!ByName(key.api_version, key.kind))
    spec.label_selector = appcontext::kContextLabel;  // the key exists
  spec.slim = true;              // names, labels, generation and readiness are all that is read
  spec.report_connected = true;  // a reconnect clears "unreachable"
  return spec;
}

Result<SubscriptionId> SharedWatches::Subscribe(const std::string& context, const WatchKey& key,
                                                std::shared_ptr<k8s::ClusterClient> client,
                                                k8s::WatchCallback callback) {
  std::unique_lock<std::mutex> l(mu_);
  std::shared_ptr<Watch>& slot = watches_[key];
  const bool first = slot == nullptr;
  if (first) {
    slot = std::make_shared<Watch>();
    slot->key = key;
    slot->by_name = ByName(key.api_version, key.kind);
  }
  std::shared_ptr<Watch> w = slot;
  const SubscriptionId id = ++next_id_;
  subs_.emplace(id, Sub{w, context, std::move(callback)});
  w->subs.emplace(context, id);
  if (first) {
    // Not under the lock: starting resolves the kind on the cluster.
    l.unlock();
    auto started = source_.Start(std::move(client), SpecFor(key),
                                 [this, w](const WatchEvent& e) { OnEvent(w, e); });
    l.lock();
    if (!started.ok()) {
      w->state = Watch::State::kGone;
      w->start_error = started.status();
      for (const auto& [c, sid] : w->subs) subs_.erase(sid);
      w->subs.clear();
      if (auto it = watches_.find(key); it != watches_.end() && it->second == w) watches_.erase(it);
      started_cv_.notify_all();
      return started.status();
    }
    w->state = Watch::State::kRunning;
    w->id = *started;
    started_cv_.notify_all();
    return id;
  }
  if (w->state == Watch::State::kStarting) {
    // Its first list reaches this subscriber with the others'.
    started_cv_.wait(l, [&] { return w->state != Watch::State::kStarting; });
    if (w->state == Watch::State::kGone)
      return w->start_error;  // the starter dropped every subscriber
    return id;
  }
  if (w->listed) {
    WatchEvent now;
    now.type = WatchEventType::kResync;
    now.items = ObjectsOf(*w, context);
    subs_.at(id).callback(now);
  }
  return id;
}

void SharedWatches::Unsubscribe(SubscriptionId id) {
  std::optional<k8s::WatchId> cancel;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return;
    std::shared_ptr<Watch> w = it->second.watch;
    auto [first, last] = w->subs.equal_range(it->second.context);
    for (auto s = first; s != last; ++s) {
      if (s->second == id) {
        w->subs.erase(s);
        break;
      }
    }
    subs_.erase(it);
    if (w->subs.empty() && w->state == Watch::State::kRunning) {
      w->state = Watch::State::kGone;
      cancel = w->id;
      if (auto e = watches_.find(w->key); e != watches_.end() && e->second == w) watches_.erase(e);
      w->objects.clear();
      w->context_of.clear();
    }
  }
  // Outside the lock: a callback of the watch may be waiting for it.
  if (cancel) source_.Cancel(*cancel);
}

size_t SharedWatches::active_watches() const {
  std::lock_guard<std::mutex> l(mu_);
  return watches_.size();
}

size_t SharedWatches::objects() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& [key, w] : watches_) {
    for (const auto& [c, objs] : w->objects) n += objs.size();
  }
  return n;
}

size_t SharedWatches::subscribers(const WatchKey& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = watches_.find(key);
  return it == watches_.end() ? 0 : it->second->subs.size();
}

void SharedWatches::OnEvent(const std::shared_ptr<Watch>& w, const WatchEvent& e) {
  std::lock_guard<std::mutex> l(mu_);
  if (w->state == Watch::State::kGone) return;
  switch (e.type) {
    case WatchEventType::kError:
    case WatchEventType::kConnected:
    case WatchEventType::kBookmark:
      DeliverAll(*w, e);  // about the cluster's stream: every context's concern
      return;
    case WatchEventType::kResync:
      Relisted(*w, e);
      return;
    case WatchEventType::kAdded:
    case WatchEventType::kModified:
    case WatchEventType::kDeleted:
      Changed(*w, e);
      return;
  }
}

// mu_ held.
void SharedWatches::Deliver(Watch& w, const std::string& context, const WatchEvent& e) {
  if (w.by_name) return DeliverAll(w, e);
  auto [first, last] = w.subs.equal_range(context);
  for (auto s = first; s != last; ++s) subs_.at(s->second).callback(e);
}

// mu_ held.
void SharedWatches::DeliverAll(Watch& w, const WatchEvent& e) {
  for (const auto& [c, sid] : w.subs) subs_.at(sid).callback(e);
}

// mu_ held. The complete set replaces the one held; each subscribed
// context gets its own part of it (an empty one too: its objects are gone).
void SharedWatches::Relisted(Watch& w, const WatchEvent& e) {
  w.objects.clear();
  w.context_of.clear();
  std::map<std::string, std::vector<const json*>> listed;  // by context, subscribed ones only
  for (const auto& obj : e.items) {
    const std::string id = ObjectId(obj);
    const std::string context = w.by_name ? std::string() : ContextOf(obj);
    w.objects[context][id] = Pack(obj);
    if (w.by_name) continue;
    w.context_of[id] = context;
    if (w.subs.count(context)) listed[context].push_back(&obj);
  }
  w.listed = true;
  if (w.by_name) return DeliverAll(w, e);
  for (auto s = w.subs.begin(); s != w.subs.end(); s = w.subs.upper_bound(s->first)) {
    WatchEvent part;
    part.type = WatchEventType::kResync;
    part.resource_version = e.resource_version;
    if (auto l = listed.find(s->first); l != listed.end()) {
      part.items.reserve(l->second.size());
      for (const json* obj : l->second) part.items.push_back(*obj);
    }
    Deliver(w, s->first, part);
  }
}

// mu_ held. One object added, changed or deleted.
void SharedWatches::Changed(Watch& w, const WatchEvent& e) {
  const std::string id = ObjectId(e.object);
  if (w.by_name) {
    auto& objs = w.objects[""];
    if (e.type == WatchEventType::kDeleted) {
      objs.erase(id);
    } else {
      objs[id] = Pack(e.object);
    }
    return DeliverAll(w, e);
  }
  auto held = w.context_of.find(id);
  if (e.type == WatchEventType::kDeleted) {
    const std::string context = held != w.context_of.end() ? held->second : ContextOf(e.object);
    if (held != w.context_of.end()) w.context_of.erase(held);
    if (auto objs = w.objects.find(context); objs != w.objects.end()) {
      objs->second.erase(id);
      if (objs->second.empty()) w.objects.erase(objs);
    }
    return Deliver(w, context, e);
  }
  const std::string context = ContextOf(e.object);
  if (held != w.context_of.end() && held->second != context) {
    // Relabelled: gone from its former context.
    auto objs = w.objects.find(held->second);
    WatchEvent gone;
    gone.type = WatchEventType::kDeleted;
    gone.resource_version = e.resource_version;
    gone.object = e.object;
    if (objs != w.objects.end()) {
      if (auto o = objs->second.find(id); o != objs->second.end()) gone.object = Unpack(o->second);
      objs->second.erase(id);
      if (objs->second.empty()) w.objects.erase(objs);
    }
    const std::string former = held->second;
    held->second = context;
    Deliver(w, former, gone);
  }
  w.objects[context][id] = Pack(e.object);
  w.context_of[id] = context;
  Deliver(w, context, e);
}

// mu_ held.
std::vector<json> SharedWatches::ObjectsOf(const Watch& w, const std::string& context) const {
  std::vector<json> out;
  auto objs = w.objects.find(w.by_name ? std::string() : context);
  if (objs == w.objects.end()) return out;
  out.reserve(objs->second.size());
  for (const auto& [id, obj] : objs->second) {
    json o = Unpack(obj);
    if (!o.is_discarded()) out.push_back(std::move(o));
  }
  return out;
}

}  // namespace eco::status
