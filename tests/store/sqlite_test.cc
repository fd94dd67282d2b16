// What only the embedded backend promises: URL parsing, PrefixEnd, one store
// per directory, log compaction, and replay of watches from the on-disk log.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <thread>

#include "process.h"
#include "status_matchers.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace eco::store {
namespace {

using namespace std::chrono_literals;
using ::eco::testing::TempDir;

TEST(PrefixEnd, IncrementsTheLastByte) {
  EXPECT_EQ(PrefixEnd("a"), "b");
  EXPECT_EQ(PrefixEnd("a/"), "a0");
  EXPECT_EQ(PrefixEnd(std::string("a\0", 2)), std::string("a\x01", 2));
  EXPECT_EQ(PrefixEnd("a\xff"), "b");
  EXPECT_EQ(PrefixEnd("a\xfe"), "a\xff");
  EXPECT_EQ(PrefixEnd("\xff\xff"), "");
  EXPECT_EQ(PrefixEnd(""), "");
}

TEST(OpenUrl, SqliteSchemeAndPlainPath) {
  TempDir d1, d2, d3;
  ASSERT_OK_AND_ASSIGN(auto a, Open("sqlite://" + d1.path()));
  EXPECT_EQ(a->Backend(), "sqlite");
  ASSERT_OK_AND_ASSIGN(auto b, Open(d2.path() + "/nested/dir"));
  EXPECT_EQ(b->Backend(), "sqlite");
  ASSERT_OK(b->Put("k", "v").status());
  ASSERT_OK_AND_ASSIGN(auto c, Open("sqlite://" + d3.path() + "?sync=full"));
  ASSERT_OK(c->Put("k", "v").status());
}

TEST(OpenUrl, BadUrlsAreInvalid) {
  for (const char* url :
       {"", "sqlite://", "etcd://", "etcd://host", "etcd://:2379", "etcd://h:1,h2:x", "etcd://h:1,",
        "etcd://h:99999", "foo://x", "sqlite:///tmp/x?sync=sometimes"}) {
    auto s = Open(url);
    EXPECT_FALSE(s.ok()) << url;
    EXPECT_EQ(s.status().code(), Code::kInvalid) << url << ": " << s.status().ToString();
  }
}

TEST(OpenUrl, EtcdEndpointsReachTheEtcdBackend) {
  // Whatever the etcd backend answers, the URL itself must not be rejected.
  auto s = Open("etcd://127.0.0.1:1,localhost:2");
  if (!s.ok()) {
    EXPECT_NE(s.status().code(), Code::kInvalid) << s.status().ToString();
  }
}

TEST(SqliteStore, OneStorePerDirectory) {
  TempDir d;
  ASSERT_OK_AND_ASSIGN(auto a, OpenSqliteStore({.dir = d.path()}));
  auto b = OpenSqliteStore({.dir = d.path()});
  EXPECT_EQ(b.status().code(), Code::kUnavailable) << b.status().ToString();
  a.reset();
  ASSERT_OK_AND_ASSIGN(auto c, OpenSqliteStore({.dir = d.path()}));
}

struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WatchEvent> events;
  std::optional<Status> error;

  WatchCallbacks Callbacks() {
    WatchCallbacks cb;
    cb.on_events = [this](const std::vector<WatchEvent>& evs) {
      std::lock_guard lk(mu);
      events.insert(events.end(), evs.begin(), evs.end());
      cv.notify_all();
    };
    cb.on_error = [this](const Status& s) {
      std::lock_guard lk(mu);
      error = s;
      cv.notify_all();
    };
    return cb;
  }
  bool WaitFor(size_t n) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, 20s, [&] { return events.size() >= n || error.has_value(); }) &&
           events.size() >= n;
  }
  bool WaitForError() {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, 20s, [&] { return error.has_value(); });
  }
};

TEST(SqliteStore, WatchFromACompactedRevisionFails) {
  TempDir d;
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path(), .keep_revisions = 10}));
  ASSERT_OK_AND_ASSIGN(Revision first, s->Put("k", "0"));
  for (int i = 1; i < 100; ++i) ASSERT_OK(s->Put("k", std::to_string(i)).status());
  ASSERT_OK_AND_ASSIGN(Revision last, s->CurrentRevision());

  Events old;
  ASSERT_OK_AND_ASSIGN(auto h, s->Watch("", first, old.Callbacks()));
  ASSERT_TRUE(old.WaitForError());
  EXPECT_EQ(old.error->code(), Code::kNotFound);
  EXPECT_NE(old.error->message().find("compacted"), std::string::npos) << old.error->ToString();
  EXPECT_TRUE(old.events.empty());

  // The last keep_revisions revisions are still there.
  Events recent;
  ASSERT_OK_AND_ASSIGN(auto h2, s->Watch("", last - 9, recent.Callbacks()));
  ASSERT_TRUE(recent.WaitFor(10));
  EXPECT_EQ(recent.events.front().kv.mod_revision, last - 9);
  EXPECT_FALSE(recent.error.has_value());
}

TEST(SqliteStore, WatchReplaysFromTheOnDiskLogAfterReopen) {
  TempDir d;
  Revision first = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
    ASSERT_OK_AND_ASSIGN(first, s->Put("a/1", "x"));
    ASSERT_OK(s->Put("b/1", "y").status());
    ASSERT_OK(s->Delete("a/1").status());
  }
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
  Events ev;
  ASSERT_OK_AND_ASSIGN(auto h, s->Watch("a/", first, ev.Callbacks()));
  ASSERT_TRUE(ev.WaitFor(2));
  ASSERT_OK(s->Put("a/2", "z").status());
  ASSERT_TRUE(ev.WaitFor(3));
  std::lock_guard lk(ev.mu);
  ASSERT_EQ(ev.events.size(), 3u);
  EXPECT_EQ(ev.events[0].kv.key, "a/1");
  EXPECT_EQ(ev.events[0].kv.value, "x");
  EXPECT_EQ(ev.events[0].kv.mod_revision, first);
  EXPECT_EQ(ev.events[1].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(ev.events[1].kv.mod_revision, first + 2);
  EXPECT_EQ(ev.events[2].kv.key, "a/2");
  EXPECT_EQ(ev.events[2].kv.mod_revision, first + 3);
}

// A watcher stuck in its callback while more revisions commit than the
// in-memory ring holds must catch up from the log without a gap.
TEST(SqliteStore, SlowWatcherCatchesUpFromTheLog) {
  TempDir d;
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
  std::latch release(1);
  std::mutex mu;
  std::vector<Revision> revs;
  std::atomic<bool> blocked_once{false};
  WatchCallbacks cb;
  cb.on_events = [&](const std::vector<WatchEvent>& evs) {
    if (!blocked_once.exchange(true)) release.wait();
    std::lock_guard lk(mu);
    for (auto& e : evs) revs.push_back(e.kv.mod_revision);
  };
  ASSERT_OK_AND_ASSIGN(auto h, s->Watch("slow/", 0, cb));
  constexpr int kWrites = 10500;  // more than the ring's 10,000 revisions
  ASSERT_OK_AND_ASSIGN(Revision first, s->Put("slow/k", "0"));
  for (int i = 1; i < kWrites; ++i) ASSERT_OK(s->Put("slow/k", std::to_string(i)).status());
  release.count_down();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lk(mu);
      if (revs.size() >= static_cast<size_t>(kWrites)) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  h.reset();
  ASSERT_EQ(revs.size(), static_cast<size_t>(kWrites));
  for (int i = 0; i < kWrites; ++i) ASSERT_EQ(revs[i], first + i) << "gap or reorder at " << i;
}

TEST(SqliteStore, LeasesSurviveAReopenWithAFreshTtl) {
  TempDir d;
  LeaseId id = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
    ASSERT_OK_AND_ASSIGN(id, s->GrantLease(60s));
    ASSERT_OK(s->Put("leased", "v", id).status());
  }
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
  ASSERT_OK(s->KeepAliveOnce(id));
  ASSERT_OK_AND_ASSIGN(auto kv, s->Get("leased"));
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->lease, id);
  ASSERT_OK(s->RevokeLease(id));
  ASSERT_OK_AND_ASSIGN(kv, s->Get("leased"));
  EXPECT_FALSE(kv.has_value());
}

TEST(SqliteStore, WatchersGetAnErrorWhenTheStoreCloses) {
  TempDir d;
  Events ev;
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = d.path()}));
  ASSERT_OK_AND_ASSIGN(auto h, s->Watch("", 0, ev.Callbacks()));
  s.reset();
  ASSERT_TRUE(ev.WaitForError());
  EXPECT_EQ(ev.error->code(), Code::kUnavailable);
  h.reset();  // a handle may outlive its store
}

}  // namespace
}  // namespace eco::store
