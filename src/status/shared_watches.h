// Watches shared by every status context: one watch per cluster x kind.
//
// The ready monitor follows the objects of many deployments on the same
// clusters. Watching per deployment would open one stream per deployment x
// cluster x kind; here there is ONE per (cluster, apiVersion, kind), with
// the label selector `app.eco.io/context` (the key exists: eco labels every
// object it applies with it), and its events are handed to the subscribers
// of the context the object's label names. Kinds matched by name (v1
// Namespace, which a deployment may share and eco does not label) are
// watched without a selector and every subscriber gets all of them.
//
// One object set is kept per watch (slim objects, as WatchSpec::slim
// parses them, CBOR-encoded), not per context, so that a subscriber that joins a watch
// that has listed gets its context's current objects at once, as a kResync
// of its own. The watch starts with its first subscriber and is cancelled
// with its last.
//
// No threads and no clock: events arrive on the watch source's threads
// (WatchHub's in production, a test's own hand through WatchSource).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "k8s/client.h"
#include "k8s/watch.h"

namespace eco::status {

// Whoever runs the streams.
class WatchSource {
 public:
  virtual ~WatchSource() = default;
  // Starts a watch: kNotFound when the cluster does not serve the kind,
  // kUnavailable when it does not answer. Events of one watch come one at
  // a time, in order; they may come before Start returns.
  virtual Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient> client,
                                     const k8s::WatchSpec& spec, k8s::WatchCallback callback) = 0;
  // When it returns, the watch's callback is not running and will not run again.
  virtual void Cancel(k8s::WatchId id) = 0;
};

// The production source: a WatchHub (which must outlive it).
class HubWatchSource final : public WatchSource {
 public:
  explicit HubWatchSource(k8s::WatchHub& hub) : hub_(hub) {}
  Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient> client, const k8s::WatchSpec& spec,
                             k8s::WatchCallback callback) override {
    return hub_.Watch(std::move(client), spec, std::move(callback));
  }
  void Cancel(k8s::WatchId id) override { hub_.Cancel(id); }

 private:
  k8s::WatchHub& hub_;
};

// Which watch: the cluster ("provider+cluster") and the kind.
struct WatchKey {
  std::string cluster, api_version, kind;
  bool operator<(const WatchKey& o) const;
};

using SubscriptionId = uint64_t;

class SharedWatches {
 public:
  // `source` must outlive this.
  explicit SharedWatches(WatchSource& source) : source_(source) {}
  ~SharedWatches();  // cancels every watch
  SharedWatches(const SharedWatches&) = delete;
  SharedWatches& operator=(const SharedWatches&) = delete;

  // Kinds matched by name and watched without a selector: v1 Namespace.
  static bool ByName(const std::string& api_version, const std::string& kind);
  // The spec every shared watch of `key` runs with.
  static k8s::WatchSpec SpecFor(const WatchKey& key);

  // Subscribes to the objects of `key` labelled for `context` (all of
  // them for a kind matched by name). Starts the watch with `client` when
  // it is the first subscriber (a concurrent subscriber to a watch being
  // started waits for that start and gets its result); joins it otherwise,
  // and when it has listed, `callback` gets the context's current objects
  // as a kResync before Subscribe returns. Afterwards the callback gets:
  // kResync with the context's objects at each relist (an empty list
  // too), kAdded/kModified/kDeleted of its objects (kDeleted also when an
  // object's label moves to another context), and every kError,
  // kConnected and kBookmark of the watch. The start's error (kNotFound,
  // kUnavailable) leaves nothing subscribed.
  //
  // The callback runs under this layer's lock: it must be quick and must
  // not call the layer.
  Result<SubscriptionId> Subscribe(const std::string& context, const WatchKey& key,
                                   std::shared_ptr<k8s::ClusterClient> client,
                                   k8s::WatchCallback callback);
  // When it returns the callback is not running and will not run again;
  // the last subscriber of a watch cancels it. Unknown ids are ignored.
  // Not from a callback.
  void Unsubscribe(SubscriptionId id);

  // Watches running (or being started).
  size_t active_watches() const;
  // Objects held, over every watch.
  size_t objects() const;
  // Subscribers of `key`'s watch (0: none, no watch).
  size_t subscribers(const WatchKey& key) const;

 private:
  struct Watch;
  struct Sub {
    std::shared_ptr<Watch> watch;
    std::string context;
    k8s::WatchCallback callback;
  };
  void OnEvent(const std::shared_ptr<Watch>& w, const k8s::WatchEvent& e);
  void Deliver(Watch& w, const std::string& context, const k8s::WatchEvent& e);
  void DeliverAll(Watch& w, const k8s::WatchEvent& e);
  void Relisted(Watch& w, const k8s::WatchEvent& e);
  void Changed(Watch& w, const k8s::WatchEvent& e);
  std::vector<nlohmann::json> ObjectsOf(const Watch& w, const std::string& context) const;

  WatchSource& source_;
  mutable std::mutex mu_;
  std::condition_variable started_cv_;                  // a Watch left kStarting
  std::map<WatchKey, std::shared_ptr<Watch>> watches_;  // guarded by mu_
  std::unordered_map<SubscriptionId, Sub> subs_;        // guarded by mu_
  SubscriptionId next_id_ = 0;                          // guarded by mu_
};

}  // namespace eco::status
