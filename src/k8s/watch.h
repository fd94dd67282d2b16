// Watching resources on many clusters from one thread.
//
// A WatchHub multiplexes any number of watch streams (thousands of clusters)
// on one thread: a client on HTTP/2 (ClientOptions::http2) carries its
// watches as streams of its one connection; otherwise each watch is an
// HTTP/1.1 stream of its own (libcurl's multi handle when proxied). Per
// watch it keeps the last resourceVersion seen (objects and bookmarks),
// reconnects after a dropped stream or a server-side timeout and resumes
// from that version, and when the version has expired (410 Gone, or an
// ERROR event with code 410) it lists again and hands the complete current
// set to the callback as one kResync.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/client.h"

namespace eco::k8s {

enum class WatchEventType {
  kAdded,
  kModified,
  kDeleted,
  kBookmark,  // only resource_version is meaningful
  // The complete current set (`items`), after the initial list or a relist:
  // anything the receiver holds that is not in `items` is gone.
  kResync,
  // The stream or a relist failed (`error`); the hub keeps retrying with
  // backoff. Receivers may use it to mark the cluster unreachable.
  kError,
  // The server answered a watch request with 200 (a connect or reconnect
  // succeeded); carries nothing. Only with WatchSpec::report_connected.
  kConnected,
};

std::string_view WatchEventTypeName(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::kError;
  nlohmann::json object;              // kAdded, kModified, kDeleted, kBookmark
  std::vector<nlohmann::json> items;  // kResync
  std::string resource_version;       // the version this event brings the watch to
  Status error;                       // kError
  bool expired = false;               // kError from the server: code 410, relist needed
};

// Parses one line of a watch stream ({"type": ..., "object": ...}). An ERROR
// line becomes kError with the Status object classified like an HTTP error
// (code 410 sets `expired`). A line that is not a watch event is kInvalid.
// slim: the object parsed with ParseSlim (readiness fields only).
Result<WatchEvent> ParseWatchLine(std::string_view line, bool slim = false);

// Splits a byte stream into lines; a partial line waits for the next Feed.
class LineSplitter {
 public:
  // Calls on_line for every complete line (without "\n"; empty lines skipped).
  void Feed(std::string_view bytes, const std::function<void(std::string_view)>& on_line);
  size_t buffered() const { return partial_.size(); }

 private:
  std::string partial_;
};

// The resourceVersion a watch resumes from: the newest one seen in an
// object, a bookmark or a list. Errors do not move it.
class ResourceVersionTracker {
 public:
  explicit ResourceVersionTracker(std::string initial = "") : rv_(std::move(initial)) {}
  void Observe(const WatchEvent& e);
  const std::string& resource_version() const { return rv_; }

 private:
  std::string rv_;
};

struct WatchSpec {
  std::string api_version;  // "apps/v1"
  std::string kind;         // "Deployment"
  std::string ns;           // empty: all namespaces (or cluster-scoped)
  std::string label_selector;
  std::string field_selector;
  // Where to start. Empty: list first (delivered as kResync), then watch
  // from the list's version.
  std::string resource_version;
  // Asked of the server (timeoutSeconds); the hub reconnects when it ends.
  std::chrono::seconds server_timeout{300};
  // Objects delivered without what readiness never reads (ParseSlim):
  // for watchers that only judge readiness.
  bool slim = false;
  // Also deliver kConnected whenever a stream is established, so that a
  // receiver tracking reachability learns that a reconnect worked even when
  // nothing changed on the cluster.
  bool report_connected = false;
};

// Called on the hub's threads. Events of one watch arrive one at a time and
// in order; events of different watches may arrive concurrently. Must be
// quick and must not block (it holds up the hub); it may call Cancel.
using WatchCallback = std::function<void(const WatchEvent&)>;

struct WatchHubOptions {
  size_t relist_threads = 2;  // lists run here, never on the stream thread
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
  uint64_t seed = 1;  // backoff jitter
  // Backoff, reconnect and deadline timers are measured on this clock.
  Clock* clock = &RealClock();
};

using WatchId = uint64_t;

class WatchHub {
 public:
  explicit WatchHub(WatchHubOptions options = {});
  ~WatchHub();  // Shutdown()
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Starts a watch. The kind is resolved now (kNotFound if the cluster does
  // not serve it); everything after that is reported through the callback.
  // The hub keeps `client` alive while the watch lasts.
  Result<WatchId> Watch(std::shared_ptr<ClusterClient> client, WatchSpec spec,
                        WatchCallback callback);

  // Stops a watch. When Cancel returns, its callback is not running (unless
  // Cancel was called from that callback) and will not be called again.
  // Unknown ids are ignored.
  void Cancel(WatchId id);

  // Stops every watch and the threads; waits for a relist in flight.
  // Idempotent.
  void Shutdown();

  size_t active_watches() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::k8s
