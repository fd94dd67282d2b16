// eco's client for one Kubernetes cluster: server-side apply, get, list,
// delete and discovery over HTTP(S). Thread-safe: many threads may share one
// client. Watches are multiplexed by WatchHub (watch.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/kubeconfig.h"

namespace eco::k8s {

class H2Session;

// How requests travel.
enum class HttpTransport {
  // kDirect, unless https_proxy / http_proxy / all_proxy (or the upper-case
  // forms) name a proxy for the server and no_proxy / NO_PROXY does not
  // exclude it: then kCurl, which speaks proxies.
  kAuto,
  // Blocking sockets and OpenSSL, HTTP/1.1 parsed by Boost.Beast: a request
  // on an open connection costs one write and usually one read. No proxies.
  kDirect,
  // libcurl's easy interface.
  kCurl,
};

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // Whole-request limit (connect + send + receive) for non-streaming calls.
  std::chrono::milliseconds request_timeout{30000};
  std::string user_agent = "eco/0.1";
  // At most this many requests to the cluster are in flight at once; further
  // callers wait for a connection. Each connection is kept open for reuse.
  size_t max_connections = 8;
  // Ask the server for gzip-compressed responses (Accept-Encoding).
  bool accept_gzip = true;
  HttpTransport transport = HttpTransport::kAuto;
  // https servers without a proxy (kAuto or kDirect): one HTTP/2 connection
  // carries every request and watch of the client when the server offers
  // h2 in ALPN; otherwise (or false here) HTTP/1.1 as above. Plain http://
  // stays HTTP/1.1 (no h2c).
  bool http2 = true;
  // Deadlines (connect, request) are measured on this clock.
  Clock* clock = &RealClock();
};

// A served resource type, from discovery.
struct ResourceInfo {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string kind;      // "Deployment"
  std::string resource;  // plural, lower case: "deployments"
  bool namespaced = false;
  std::vector<std::string> verbs;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};

struct ApplyOptions {
  std::string field_manager = "eco";
  bool force = true;     // take ownership of conflicting fields
  bool dry_run = false;  // dryRun=All: validate and return, persist nothing
  // false: the server's answer is checked but not parsed, and Apply returns
  // an empty object — for callers that learn live state from watches (rsync),
  // it saves parsing every applied object a second time.
  bool want_object = true;
  // The object already serialized (`obj` with at most more metadata: the
  // path comes from `obj`): rsync applies one object to many clusters and
  // serializes it once, with its owner annotation.
  const std::string* serialized = nullptr;
  // Set (with want_object false): receives the answer's
  // metadata.resourceVersion, read without parsing the whole object.
  std::string* resource_version = nullptr;
  // Likewise its metadata.generation (0: the kind has none).
  int64_t* generation = nullptr;
};

struct ListOptions {
  std::string label_selector;  // e.g. "app=web,tier!=db"
  std::string field_selector;  // e.g. "metadata.name=x"
  int64_t page_size = 500;     // `limit` per request; pages are followed
  bool slim = false;           // items parsed with ParseSlim (readiness fields only)
  // Only each object's metadata (the server's PartialObjectMetadataList:
  // items of kind PartialObjectMetadata, apiVersion meta.k8s.io/v1).
  bool metadata_only = false;
  // At most this many pages (0: all); ObjectList::truncated says more were left.
  int max_pages = 0;
};

struct ObjectList {
  // Every item carries apiVersion and kind (filled in when the server omits
  // them, as it does in lists).
  std::vector<nlohmann::json> items;
  // The list's resourceVersion: a watch started from it misses nothing.
  std::string resource_version;
  bool truncated = false;  // ListOptions::max_pages stopped it with more to list
};

enum class Propagation { kBackground, kForeground, kOrphan };

// One cluster. Abstract so tests can wrap a real client in a forwarding,
// fault-injecting decorator.
//
// Namespaces: for a namespaced kind, an empty `ns` in Get/Delete (and an
// object without metadata.namespace in Apply) means the kubeconfig context's
// namespace; in List it means all namespaces. For cluster-scoped kinds `ns`
// is ignored.
//
// Errors: kNotFound (404, or a kind the cluster does not serve),
// kAlreadyExists / kConflict (409), kInvalid (400, 422, malformed object),
// kPermissionDenied (401, 403, untrusted server certificate), kTooLarge (413),
// kUnavailable (refused, reset, timeout, 5xx, 429; retry_after() carries
// Retry-After). Messages carry the HTTP code and the server's Status message.
class ClusterClient {
 public:
  virtual ~ClusterClient() = default;

  // Server-side apply: PATCH with application/apply-patch+yaml. Returns the
  // live object. `obj` needs apiVersion, kind and metadata.name.
  virtual Result<nlohmann::json> Apply(const nlohmann::json& obj, const ApplyOptions& opts) = 0;
  Result<nlohmann::json> Apply(const nlohmann::json& obj) { return Apply(obj, ApplyOptions{}); }

  virtual Result<nlohmann::json> Get(std::string_view api_version, std::string_view kind,
                                     std::string_view ns, std::string_view name) = 0;

  // Lists all pages (following `continue`) into one list.
  virtual Result<ObjectList> List(std::string_view api_version, std::string_view kind,
                                  std::string_view ns, const ListOptions& opts) = 0;

  // Deletes with the given propagation policy. An object already gone is
  // kNotFound, which callers may treat as done.
  virtual Status Delete(std::string_view api_version, std::string_view kind, std::string_view ns,
                        std::string_view name, Propagation propagation) = 0;

  // Kind → resource via discovery, cached per client. A kind missing from
  // the cache triggers one refresh of its group-version (a CRD applied
  // moments ago) before kNotFound; concurrent misses share that refresh.
  virtual Result<ResourceInfo> ResolveKind(std::string_view api_version, std::string_view kind) = 0;

  // Full discovery (/api, /apis and every served group-version); refreshes
  // the cache and returns every top-level resource.
  virtual Result<std::vector<ResourceInfo>> Discover() = 0;

  // A GET of a path of the server ("/openapi/v3", "/version"; a query may
  // follow), its body as it came. Errors as above.
  virtual Result<std::string> GetRaw(std::string_view path) = 0;

  // How this client reaches its cluster (WatchHub opens its streams with it).
  virtual const RestConfig& rest_config() const = 0;
  virtual const ClientOptions& options() const = 0;

  // Internal to src/k8s: the client's HTTP/2 connection manager, where
  // WatchHub opens its streams; null when the client does not use HTTP/2.
  virtual std::shared_ptr<H2Session> h2_session() const { return nullptr; }
};

// Forwards every call to another client. Tests derive from it and override
// the one method they want to fail or slow down. (A class that overrides
// Apply(obj, opts) should add `using ForwardingClusterClient::Apply;` to keep
// the one-argument form callable on the derived type.)
class ForwardingClusterClient : public ClusterClient {
 public:
  explicit ForwardingClusterClient(std::shared_ptr<ClusterClient> inner)
      : inner_(std::move(inner)) {}

  using ClusterClient::Apply;
  Result<nlohmann::json> Apply(const nlohmann::json& obj, const ApplyOptions& opts) override {
    return inner_->Apply(obj, opts);
  }
  Result<nlohmann::json> Get(std::string_view api_version, std::string_view kind,
                             std::string_view ns, std::string_view name) override {
    return inner_->Get(api_version, kind, ns, name);
  }
  Result<ObjectList> List(std::string_view api_version, std::string_view kind, std::string_view ns,
                          const ListOptions& opts) override {
    return inner_->List(api_version, kind, ns, opts);
  }
  Status Delete(std::string_view api_version, std::string_view kind, std::string_view ns,
                std::string_view name, Propagation propagation) override {
    return inner_->Delete(api_version, kind, ns, name, propagation);
  }
  Result<ResourceInfo> ResolveKind(std::string_view api_version, std::string_view kind) override {
    return inner_->ResolveKind(api_version, kind);
  }
  Result<std::vector<ResourceInfo>> Discover() override { return inner_->Discover(); }
  Result<std::string> GetRaw(std::string_view path) override { return inner_->GetRaw(path); }
  const RestConfig& rest_config() const override { return inner_->rest_config(); }
  const ClientOptions& options() const override { return inner_->options(); }
  std::shared_ptr<H2Session> h2_session() const override { return inner_->h2_session(); }

 protected:
  ClusterClient& inner() { return *inner_; }

 private:
  std::shared_ptr<ClusterClient> inner_;
};

// A client over HTTP(S) (options.transport chooses how): connections reused
// from a bounded per-client pool, bearer token (tokenFile re-read when it
// changes) or client certificate, certificates passed to TLS from memory.
Result<std::unique_ptr<ClusterClient>> NewClusterClient(const RestConfig& config,
                                                        const ClientOptions& options = {});

// Does at start what the first TLS connection would otherwise do from files:
// loads OpenSSL's configuration and the system's trusted CA certificates
// (OpenSSL's default CA file, or $SSL_CERT_FILE) into memory, where clusters
// whose kubeconfig names no CA are verified from. Afterwards connecting reads
// no file. Without it this happens at the first connection. Thread-safe.
void PreloadTls();

}  // namespace eco::k8s
