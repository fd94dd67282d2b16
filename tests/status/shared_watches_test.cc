// The shared watches fed by hand: a fake source records the watches started
// and cancelled, and the test plays the cluster's events into them.
#include "status/shared_watches.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace eco::status {
namespace {

using k8s::WatchEvent;
using k8s::WatchEventType;
using nlohmann::json;

class FakeSource : public WatchSource {
 public:
  struct Started {
    k8s::WatchSpec spec;
    k8s::WatchCallback callback;
    bool cancelled = false;
  };
  Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient>, const k8s::WatchSpec& spec,
                             k8s::WatchCallback callback) override {
    if (!fail.ok()) return fail;
    started.push_back({spec, std::move(callback), false});
    return static_cast<k8s::WatchId>(started.size());
  }
  void Cancel(k8s::WatchId id) override { started.at(id - 1).cancelled = true; }
  size_t running() const {
    size_t n = 0;
    for (const auto& s : started) n += s.cancelled ? 0 : 1;
    return n;
  }
  // Plays an event into watch `id` (1-based, in start order).
  void Send(k8s::WatchId id, const WatchEvent& e) {
    ASSERT_FALSE(started.at(id - 1).cancelled);
    started.at(id - 1).callback(e);
  }

  Status fail;
  std::vector<Started> started;
};

json Obj(const std::string& name, const std::string& ctx, int generation = 1) {
  json o = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", "default"}, {"generation", generation}}}};
  if (!ctx.empty()) o["metadata"]["labels"] = {{"app.eco.io/context", ctx}};
  return o;
}

WatchEvent Resync(std::vector<json> items) {
  WatchEvent e;
  e.type = WatchEventType::kResync;
  e.items = std::move(items);
  return e;
}
WatchEvent Change(WatchEventType t, json obj) {
  WatchEvent e;
  e.type = t;
  e.object = std::move(obj);
  return e;
}

// What one subscriber received.
struct Seen {
  std::vector<std::string> log;  // "resync a,b", "added x", "error", ...
  k8s::WatchCallback Callback() {
    return [this](const WatchEvent& e) {
      std::string line(k8s::WatchEventTypeName(e.type));
      if (e.type == WatchEventType::kResync) {
        std::set<std::string> names;
        for (const auto& o : e.items) names.insert(o["metadata"]["name"].get<std::string>());
        line += " ";
        for (const auto& n : names) line += (line.back() == ' ' ? "" : ",") + n;
      } else if (e.object.is_object() && e.object.contains("metadata")) {
        line += " " + e.object["metadata"]["name"].get<std::string>();
      }
      log.push_back(line);
    };
  }
};

const WatchKey kCm{"p+c1", "v1", "ConfigMap"};
const WatchKey kNs{"p+c1", "v1", "Namespace"};

TEST(SharedWatchesTest, OneWatchPerClusterAndKindFansOutByContextLabel) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b;
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, b.Callback()).ok());
  ASSERT_EQ(src.started.size(), 1u);  // shared
  EXPECT_EQ(sw.active_watches(), 1u);
  EXPECT_EQ(src.started[0].spec.label_selector, "app.eco.io/context");
  EXPECT_TRUE(src.started[0].spec.slim);
  EXPECT_TRUE(src.started[0].spec.report_connected);

  src.Send(1, Resync({Obj("a1", "ctxA"), Obj("b1", "ctxB"), Obj("x1", "ctxX")}));
  src.Send(1, Change(WatchEventType::kAdded, Obj("a2", "ctxA")));
  src.Send(1, Change(WatchEventType::kModified, Obj("b1", "ctxB", 2)));
  src.Send(1, Change(WatchEventType::kDeleted, Obj("a1", "ctxA")));
  src.Send(1, Change(WatchEventType::kAdded, Obj("x2", "ctxX")));  // nobody's
  EXPECT_EQ(a.log, (std::vector<std::string>{"RESYNC a1", "ADDED a2", "DELETED a1"}));
  EXPECT_EQ(b.log, (std::vector<std::string>{"RESYNC b1", "MODIFIED b1"}));
  // One set per watch, every context's objects in it.
  EXPECT_EQ(sw.objects(), 4u);  // a2, b1, x1, x2
}

TEST(SharedWatchesTest, ARelabelledObjectLeavesItsFormerContext) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b;
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, b.Callback()).ok());
  src.Send(1, Resync({Obj("m", "ctxA")}));
  src.Send(1, Change(WatchEventType::kModified, Obj("m", "ctxB")));
  EXPECT_EQ(a.log, (std::vector<std::string>{"RESYNC m", "DELETED m"}));
  EXPECT_EQ(b.log, (std::vector<std::string>{"RESYNC ", "MODIFIED m"}));
}

TEST(SharedWatchesTest, ALateSubscriberGetsItsContextsCurrentObjectsAtOnce) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b, early;
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  // Before the first list a joiner waits for it with the others.
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, early.Callback()).ok());
  EXPECT_TRUE(early.log.empty());
  src.Send(1, Resync({Obj("a1", "ctxA"), Obj("b1", "ctxB")}));
  src.Send(1, Change(WatchEventType::kAdded, Obj("b2", "ctxB")));
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, b.Callback()).ok());
  EXPECT_EQ(src.started.size(), 1u);
  EXPECT_EQ(b.log, (std::vector<std::string>{"RESYNC b1,b2"}));
  EXPECT_EQ(early.log, (std::vector<std::string>{"RESYNC b1", "ADDED b2"}));
  // From then on it gets its changes like the others.
  src.Send(1, Change(WatchEventType::kDeleted, Obj("b1", "ctxB")));
  EXPECT_EQ(b.log.back(), "DELETED b1");
  EXPECT_EQ(early.log.back(), "DELETED b1");
  EXPECT_EQ(a.log, (std::vector<std::string>{"RESYNC a1"}));
}

TEST(SharedWatchesTest, TheLastUnsubscribeCancelsTheWatch) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b;
  auto ia = sw.Subscribe("ctxA", kCm, nullptr, a.Callback());
  auto ib = sw.Subscribe("ctxB", kCm, nullptr, b.Callback());
  ASSERT_TRUE(ia.ok() && ib.ok());
  src.Send(1, Resync({Obj("a1", "ctxA"), Obj("b1", "ctxB")}));
  sw.Unsubscribe(*ia);
  EXPECT_EQ(src.running(), 1u);  // b still reads it
  EXPECT_EQ(sw.subscribers(kCm), 1u);
  src.Send(1, Change(WatchEventType::kAdded, Obj("a2", "ctxA")));
  EXPECT_EQ(a.log.size(), 1u);  // unsubscribed: nothing more
  sw.Unsubscribe(*ib);
  EXPECT_EQ(src.running(), 0u);
  EXPECT_EQ(sw.active_watches(), 0u);
  EXPECT_EQ(sw.objects(), 0u);
  sw.Unsubscribe(*ib);  // unknown now: ignored
  // A new subscriber starts a new watch.
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  EXPECT_EQ(src.started.size(), 2u);
  EXPECT_EQ(src.running(), 1u);
}

TEST(SharedWatchesTest, ARelistReplacesEachContextsObjects) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b;
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, b.Callback()).ok());
  src.Send(1, Resync({Obj("a1", "ctxA"), Obj("b1", "ctxB")}));
  // Expired: listed again; b1 went meanwhile, a3 came.
  src.Send(1, Resync({Obj("a1", "ctxA"), Obj("a3", "ctxA")}));
  EXPECT_EQ(a.log, (std::vector<std::string>{"RESYNC a1", "RESYNC a1,a3"}));
  EXPECT_EQ(b.log, (std::vector<std::string>{"RESYNC b1", "RESYNC "}));  // empty: all gone
  EXPECT_EQ(sw.objects(), 2u);
  Seen late;
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, late.Callback()).ok());
  EXPECT_EQ(late.log, (std::vector<std::string>{"RESYNC "}));
}

TEST(SharedWatchesTest, KindsMatchedByNameAreWatchedWithoutSelectorForEverySubscriber) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b;
  ASSERT_TRUE(sw.Subscribe("ctxA", kNs, nullptr, a.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxB", kNs, nullptr, b.Callback()).ok());
  ASSERT_EQ(src.started.size(), 1u);
  EXPECT_EQ(src.started[0].spec.label_selector, "");
  json shared = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}};
  json other = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kube-system"}}}};
  src.Send(1, Resync({shared, other}));
  src.Send(1, Change(WatchEventType::kDeleted, shared));
  for (const auto* s : {&a, &b})
    EXPECT_EQ(s->log, (std::vector<std::string>{"RESYNC kube-system,team", "DELETED team"}));
  Seen late;
  ASSERT_TRUE(sw.Subscribe("ctxC", kNs, nullptr, late.Callback()).ok());
  EXPECT_EQ(late.log, (std::vector<std::string>{"RESYNC kube-system"}));
}

TEST(SharedWatchesTest, ConnectionEventsGoToEverySubscriberOfTheWatch) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a, b, other;
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxB", kCm, nullptr, b.Callback()).ok());
  ASSERT_TRUE(sw.Subscribe("ctxA", {"p+c2", "v1", "ConfigMap"}, nullptr, other.Callback()).ok());
  WatchEvent err;
  err.type = WatchEventType::kError;
  err.error = Unavailable("connection refused");
  src.Send(1, err);
  WatchEvent up;
  up.type = WatchEventType::kConnected;
  src.Send(1, up);
  WatchEvent bm;
  bm.type = WatchEventType::kBookmark;
  bm.resource_version = "42";
  src.Send(1, bm);
  for (const auto* s : {&a, &b})
    EXPECT_EQ(s->log, (std::vector<std::string>{"ERROR", "CONNECTED", "BOOKMARK"}));
  EXPECT_TRUE(other.log.empty());  // another cluster's watch
}

TEST(SharedWatchesTest, AFailedStartLeavesNothingSubscribed) {
  FakeSource src;
  SharedWatches sw(src);
  Seen a;
  src.fail = NotFound("the server could not find the requested resource");
  auto id = sw.Subscribe("ctxA", kCm, nullptr, a.Callback());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kNotFound);
  EXPECT_EQ(sw.active_watches(), 0u);
  src.fail = Status::Ok();
  ASSERT_TRUE(sw.Subscribe("ctxA", kCm, nullptr, a.Callback()).ok());
  EXPECT_EQ(sw.active_watches(), 1u);
}

// A source whose Start waits until the test lets it go.
class GatedSource : public FakeSource {
 public:
  Result<k8s::WatchId> Start(std::shared_ptr<k8s::ClusterClient> c, const k8s::WatchSpec& spec,
                             k8s::WatchCallback callback) override {
    {
      std::unique_lock<std::mutex> l(mu);
      ++starting;
      cv.notify_all();
      cv.wait(l, [&] { return open; });
    }
    return FakeSource::Start(std::move(c), spec, std::move(callback));
  }
  void Open(Status result) {
    std::lock_guard<std::mutex> l(mu);
    fail = std::move(result);
    open = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int starting = 0;
  bool open = false;
};

// A subscriber that comes while the watch is being started waits for that
// start and shares its outcome; it never starts a second watch.
TEST(SharedWatchesTest, ASubscriberDuringTheStartSharesItsOutcome) {
  for (bool ok : {false, true}) {
    GatedSource src;
    SharedWatches sw(src);
    Seen a, b;
    Result<SubscriptionId> ia = Internal("not yet"), ib = Internal("not yet");
    std::thread first([&] { ia = sw.Subscribe("ctxA", kCm, nullptr, a.Callback()); });
    {
      std::unique_lock<std::mutex> l(src.mu);
      src.cv.wait(l, [&] { return src.starting == 1; });
    }
    std::thread second([&] { ib = sw.Subscribe("ctxB", kCm, nullptr, b.Callback()); });
    // Joined (and waiting): two subscribers of the one watch being started.
    while (sw.subscribers(kCm) < 2) std::this_thread::yield();
    src.Open(ok ? Status::Ok() : Unavailable("connection refused"));
    first.join();
    second.join();
    EXPECT_EQ(src.starting, 1);
    EXPECT_EQ(ia.ok(), ok);
    EXPECT_EQ(ib.ok(), ok);
    EXPECT_EQ(sw.active_watches(), ok ? 1u : 0u);
    if (!ok) {
      EXPECT_EQ(ib.status().code(), Code::kUnavailable);
      continue;
    }
    src.Send(1, Resync({Obj("a1", "ctxA"), Obj("b1", "ctxB")}));
    EXPECT_EQ(a.log, (std::vector<std::string>{"RESYNC a1"}));
    EXPECT_EQ(b.log, (std::vector<std::string>{"RESYNC b1"}));
  }
}

}  // namespace
}  // namespace eco::status
