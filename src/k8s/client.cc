#include "k8s/client.h"

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>

#include "k8s/paths.h"
#include "k8s/transport.h"

namespace eco::k8s {
namespace {

using nlohmann::json;

constexpr std::string_view kApplyPatch = "application/apply-patch+yaml";

Result<json> ParseJson(const std::string& text, std::string_view what) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Internal("server sent malformed JSON for " + std::string(what));
  return doc;
}

Result<json> ParseSlimJson(const std::string& text, std::string_view what) {
  json doc = ParseSlim(text, 3);
  if (doc.is_discarded()) return Internal("server sent malformed JSON for " + std::string(what));
  return doc;
}

std::string_view PropagationName(Propagation p) {
  switch (p) {
    case Propagation::kForeground:
      return "Foreground";
    case Propagation::kOrphan:
      return "Orphan";
    case Propagation::kBackground:
      break;
  }
  return "Background";
}

// Discovery cache, one entry per group-version. Only the group-version a
// caller asks about is fetched: one request, not one per served group.
class DiscoveryCache {
 public:
  explicit DiscoveryCache(Transport& t) : transport_(t) {}

  Result<ResourceInfo> Resolve(const GroupVersion& gv, std::string_view kind) {
    if (auto builtin = BuiltinKind(gv, kind)) return std::move(*builtin);
    const std::string key = gv.group + "/" + gv.version;
    std::unique_lock<std::mutex> lock(mu_);
    Entry& e = entries_[key];
    if (e.loaded) {
      if (auto it = e.kinds.find(std::string(kind)); it != e.kinds.end()) return it->second;
    }
    // A miss: refresh once. A refresh that completes after this miss was
    // seen answers for every waiter, so concurrent misses share it.
    const uint64_t seen = e.generation;
    while (true) {
      if (e.generation > seen) return Lookup(e, gv, kind);
      if (!e.fetching) break;
      cv_.wait(lock);
    }
    e.fetching = true;
    lock.unlock();
    Result<std::vector<ResourceInfo>> fetched = Fetch(gv);
    lock.lock();
    Store(e, fetched);
    return Lookup(e, gv, kind);
  }

  Result<std::vector<ResourceInfo>> DiscoverAll() {
    std::vector<GroupVersion> gvs;
    ECO_ASSIGN_OR_RETURN(std::string core, transport_.Call("GET", "/api"));
    ECO_ASSIGN_OR_RETURN(json core_doc, ParseJson(core, "/api"));
    if (auto v = core_doc.find("versions"); v != core_doc.end() && v->is_array()) {
      for (const auto& ver : *v) {
        if (ver.is_string()) gvs.push_back({"", ver.get<std::string>()});
      }
    }
    ECO_ASSIGN_OR_RETURN(std::string groups, transport_.Call("GET", "/apis"));
    ECO_ASSIGN_OR_RETURN(json groups_doc, ParseJson(groups, "/apis"));
    ECO_ASSIGN_OR_RETURN(std::vector<GroupVersion> named, ParseGroupList(groups_doc));
    gvs.insert(gvs.end(), named.begin(), named.end());

    std::vector<ResourceInfo> all;
    for (const GroupVersion& gv : gvs) {
      Result<std::vector<ResourceInfo>> fetched = Fetch(gv);
      {
        std::lock_guard<std::mutex> lock(mu_);
        Entry& e = entries_[gv.group + "/" + gv.version];
        if (!e.fetching) Store(e, fetched, /*was_fetching=*/false);
      }
      if (!fetched.ok()) {
        if (fetched.status().code() == Code::kNotFound) continue;  // went away meanwhile
        return fetched.status();
      }
      all.insert(all.end(), fetched->begin(), fetched->end());
    }
    return all;
  }

 private:
  struct Entry {
    bool loaded = false;    // `kinds` holds a fetched list
    bool fetching = false;  // a refresh is in flight
    uint64_t generation = 0;
    Status last_error;  // of the last refresh, when it failed
    std::map<std::string, ResourceInfo, std::less<>> kinds;
  };

  // Called with mu_ held.
  void Store(Entry& e, const Result<std::vector<ResourceInfo>>& fetched, bool was_fetching = true) {
    if (fetched.ok()) {
      e.kinds.clear();
      for (const ResourceInfo& r : *fetched) e.kinds.emplace(r.kind, r);
      e.loaded = true;
      e.last_error = Status::Ok();
    } else if (fetched.status().code() == Code::kNotFound) {
      e.kinds.clear();  // the group-version is not served (yet)
      e.loaded = true;
      e.last_error = Status::Ok();
    } else {
      e.last_error = fetched.status();
    }
    ++e.generation;
    if (was_fetching) e.fetching = false;
    cv_.notify_all();
  }

  // Called with mu_ held.
  static Result<ResourceInfo> Lookup(const Entry& e, const GroupVersion& gv,
                                     std::string_view kind) {
    if (!e.last_error.ok()) return e.last_error;
    if (auto it = e.kinds.find(kind); it != e.kinds.end()) return it->second;
    std::string api_version = gv.group.empty() ? gv.version : gv.group + "/" + gv.version;
    return NotFound("the cluster serves no kind " + std::string(kind) + " in " + api_version);
  }

  Result<std::vector<ResourceInfo>> Fetch(const GroupVersion& gv) {
    Result<std::string> body = transport_.Call("GET", GroupVersionPath(gv));
    if (!body.ok()) return body.status().Annotate("discovery");
    ECO_ASSIGN_OR_RETURN(json doc, ParseJson(*body, GroupVersionPath(gv)));
    return ParseResourceList(doc, gv);
  }

  Transport& transport_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> entries_;  // guarded by mu_; entries are never erased
};

class HttpClusterClient final : public ClusterClient {
 public:
  explicit HttpClusterClient(std::unique_ptr<Transport> transport)
      : transport_(std::move(transport)), discovery_(*transport_) {}

  using ClusterClient::Apply;

  Result<json> Apply(const json& obj, const ApplyOptions& opts) override {
    if (!obj.is_object()) return Invalid("apply: the object is not a JSON object");
    std::string api_version = obj.value("apiVersion", "");
    std::string kind = obj.value("kind", "");
    const json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
    std::string name = meta != nullptr && meta->is_object() ? meta->value("name", "") : "";
    std::string ns = meta != nullptr && meta->is_object() ? meta->value("namespace", "") : "";
    if (api_version.empty() || kind.empty() || name.empty()) {
      return Invalid("apply: the object needs apiVersion, kind and metadata.name");
    }
    ECO_ASSIGN_OR_RETURN(std::string url, ObjectPath(api_version, kind, ns, name));
    AddQuery(url, "fieldManager", opts.field_manager);
    if (opts.force) AddQuery(url, "force", "true");
    if (opts.dry_run) AddQuery(url, "dryRun", "All");
    // JSON is YAML, so the object goes as it is.
    ECO_ASSIGN_OR_RETURN(std::string body,
                         opts.serialized != nullptr
                             ? transport_->Call("PATCH", url, *opts.serialized, kApplyPatch)
                             : transport_->Call("PATCH", url, obj.dump(), kApplyPatch));
    if (!opts.want_object) {
      if (opts.resource_version != nullptr || opts.generation != nullptr) {
        ObjectVersion v = ObjectVersionIn(body);
        if (opts.resource_version != nullptr) *opts.resource_version = std::move(v.resource_version);
        if (opts.generation != nullptr) *opts.generation = v.generation;
      }
      return json::object();
    }
    return ParseJson(body, url);
  }

  Result<json> Get(std::string_view api_version, std::string_view kind, std::string_view ns,
                   std::string_view name) override {
    if (name.empty()) return Invalid("get: empty name");
    ECO_ASSIGN_OR_RETURN(std::string path, ObjectPath(api_version, kind, ns, name));
    ECO_ASSIGN_OR_RETURN(std::string body, transport_->Call("GET", path));
    return ParseJson(body, path);
  }

  Result<ObjectList> List(std::string_view api_version, std::string_view kind, std::string_view ns,
                          const ListOptions& opts) override {
    ECO_ASSIGN_OR_RETURN(ResourceInfo info, ResolveKind(api_version, kind));
    const std::string base = ResourcePath(info, ns, "");
    // An expired continue token (410) restarts the list once from the top.
    for (int attempt = 0;; ++attempt) {
      Result<ObjectList> list = ListPages(info, base, opts);
      if (list.ok() || attempt > 0 || list.status().code() != Code::kConflict ||
          list.status().message().find("HTTP 410") == std::string::npos) {
        return list;
      }
    }
  }

  Status Delete(std::string_view api_version, std::string_view kind, std::string_view ns,
                std::string_view name, Propagation propagation) override {
    if (name.empty()) return Invalid("delete: empty name");
    ECO_ASSIGN_OR_RETURN(std::string url, ObjectPath(api_version, kind, ns, name));
    AddQuery(url, "propagationPolicy", PropagationName(propagation));
    Result<std::string> body = transport_->Call("DELETE", url);
    return body.status();
  }

  Result<ResourceInfo> ResolveKind(std::string_view api_version, std::string_view kind) override {
    if (kind.empty()) return Invalid("empty kind");
    ECO_ASSIGN_OR_RETURN(GroupVersion gv, ParseApiVersion(api_version));
    return discovery_.Resolve(gv, kind);
  }

  Result<std::vector<ResourceInfo>> Discover() override { return discovery_.DiscoverAll(); }

  Result<std::string> GetRaw(std::string_view path) override {
    if (path.empty() || path.front() != '/') return Invalid("get: a server path starts with /");
    return transport_->Call("GET", std::string(path));
  }

  const RestConfig& rest_config() const override { return transport_->config(); }
  const ClientOptions& options() const override { return transport_->options(); }
  std::shared_ptr<H2Session> h2_session() const override { return transport_->h2_session(); }

 private:
  Result<std::string> ObjectPath(std::string_view api_version, std::string_view kind,
                                 std::string_view ns, std::string_view name) {
    ECO_ASSIGN_OR_RETURN(ResourceInfo info, ResolveKind(api_version, kind));
    std::string_view effective_ns = ns.empty() ? transport_->config().default_namespace : ns;
    return ResourcePath(info, effective_ns, name);
  }

  Result<ObjectList> ListPages(const ResourceInfo& info, const std::string& base,
                               const ListOptions& opts) {
    ObjectList out;
    std::string next;
    bool first = true;
    int pages = 0;
    const std::string api_version = info.api_version();
    // What client-go's metadata client asks for, JSON as the fallback.
    constexpr std::string_view kMetadataList =
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    do {
      if (opts.max_pages > 0 && pages++ == opts.max_pages) {
        out.truncated = true;
        break;
      }
      std::string url = base;
      if (opts.page_size > 0) AddQuery(url, "limit", std::to_string(opts.page_size));
      if (!opts.label_selector.empty()) AddQuery(url, "labelSelector", opts.label_selector);
      if (!opts.field_selector.empty()) AddQuery(url, "fieldSelector", opts.field_selector);
      if (!next.empty()) AddQuery(url, "continue", next);
      ECO_ASSIGN_OR_RETURN(std::string body,
                           transport_->Call("GET", url, {}, {}, opts.metadata_only ? kMetadataList : ""));
      ECO_ASSIGN_OR_RETURN(json doc, opts.slim ? ParseSlimJson(body, url) : ParseJson(body, url));
      next.clear();
      if (auto m = doc.find("metadata"); m != doc.end() && m->is_object()) {
        // Every page is served from the first page's snapshot.
        if (first) out.resource_version = m->value("resourceVersion", "");
        next = m->value("continue", "");
      }
      first = false;
      if (auto items = doc.find("items"); items != doc.end() && items->is_array()) {
        for (json& item : *items) {
          if (!item.contains("apiVersion")) item["apiVersion"] = api_version;
          if (!item.contains("kind")) item["kind"] = info.kind;
          out.items.push_back(std::move(item));
        }
      }
    } while (!next.empty());
    return out;
  }

  const std::unique_ptr<Transport> transport_;
  DiscoveryCache discovery_;
};

}  // namespace

Result<std::unique_ptr<ClusterClient>> NewClusterClient(const RestConfig& config,
                                                        const ClientOptions& options) {
  if (config.server.rfind("http://", 0) != 0 && config.server.rfind("https://", 0) != 0) {
    return Invalid("server must be an http(s) URL, got \"" + config.server + "\"");
  }
  RestConfig normalized = config;
  while (normalized.server.size() > 8 && normalized.server.back() == '/') {
    normalized.server.pop_back();
  }
  if (normalized.default_namespace.empty()) normalized.default_namespace = "default";
  ECO_ASSIGN_OR_RETURN(
      std::unique_ptr<Transport> transport,
      NewTransport(std::move(normalized), options, [](const char* name) { return getenv(name); }));
  return std::unique_ptr<ClusterClient>(std::make_unique<HttpClusterClient>(std::move(transport)));
}

}  // namespace eco::k8s
