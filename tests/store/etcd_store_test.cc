// What only the etcd backend has to get right: values beyond etcd's request
// limit, its internal key layout staying out of sight, clean-up of blobs,
// surviving etcd restarts and dead endpoints. The shared behaviour is in the
// contract suite.
#include "store/etcd_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>

#include "etcd_fixture.h"

namespace eco::store {
namespace {

using eco::testing::EtcdProcess;
using eco::testing::EtcdRawKeys;
using namespace std::chrono_literals;

constexpr size_t kMiB = 1 << 20;

std::string RandomBytes32(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Collects watch events; waits for a count.
class Collector {
 public:
  WatchCallbacks Callbacks() {
    return {[this](const std::vector<WatchEvent>& evs) {
              std::lock_guard lock(mu_);
              batches_.push_back(evs);
              for (const auto& e : evs) events_.push_back(e);
              cv_.notify_all();
            },
            [this](const Status& s) {
              std::lock_guard lock(mu_);
              error_ = s;
              cv_.notify_all();
            }};
  }
  bool WaitFor(size_t n, std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
  }
  bool WaitForError(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return !error_.ok(); });
  }
  std::vector<WatchEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<std::vector<WatchEvent>> batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }
  Status error() {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WatchEvent> events_;
  std::vector<std::vector<WatchEvent>> batches_;
  Status error_;
};

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = eco::testing::SharedEtcd();
    ASSERT_NE(etcd_, nullptr) << "etcd did not start";
    static int n = 0;
    prefix_ = "etcd-test-" + std::to_string(n++) + "/";
    auto s = EtcdStore::Open(etcd_->StoreOptions(prefix_));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // Raw etcd keys of this store's blob area.
  std::vector<std::string> BlobKeys() { return EtcdRawKeys(etcd_->endpoint(), prefix_ + "b/"); }

  EtcdProcess* etcd_ = nullptr;
  std::string prefix_;
  std::unique_ptr<EtcdStore> store_;
};

TEST_F(EtcdStoreTest, LargeValuesRoundTripThroughEveryPath) {
  for (size_t size : {5 * kMiB, 20 * kMiB}) {
    SCOPED_TRACE(size);
    const std::string big = RandomBytes32(size, static_cast<uint32_t>(size));
    const std::string key = "big/" + std::to_string(size);

    Collector watched;
    auto w = store_->Watch("big/", 0, watched.Callbacks());
    ASSERT_TRUE(w.ok()) << w.status().ToString();

    auto rev = store_->Put(key, big);
    ASSERT_TRUE(rev.ok()) << rev.status().ToString();

    auto got = store_->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->value.size(), big.size());
    EXPECT_TRUE((*got)->value == big);
    EXPECT_EQ((*got)->mod_revision, *rev);
    EXPECT_EQ((*got)->version, 1);

    auto range = store_->Range("big/");
    ASSERT_TRUE(range.ok()) << range.status().ToString();
    ASSERT_EQ(range->kvs.size(), 1u);
    EXPECT_EQ(range->kvs[0].key, key);
    EXPECT_TRUE(range->kvs[0].value == big);

    // In a transaction: a compare against the large value, a large put and a
    // read of it in the same branch.
    const std::string big2 = RandomBytes32(size, 7);
    Txn txn;
    txn.compares.push_back({key, Compare::Target::kValue, Compare::Op::kEqual, 0, big});
    txn.success.push_back(Op::Put(key + "/copy", big2));
    txn.success.push_back(Op::Get(key));
    auto t = store_->Commit(txn);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE(t->succeeded);
    ASSERT_EQ(t->gets.size(), 1u);
    ASSERT_TRUE(t->gets[0].has_value());
    EXPECT_TRUE(t->gets[0]->value == big);
    auto copy = store_->Get(key + "/copy");
    ASSERT_TRUE(copy.ok() && copy->has_value());
    EXPECT_TRUE((*copy)->value == big2);

    ASSERT_TRUE(watched.WaitFor(2)) << watched.error().ToString();
    auto evs = watched.events();
    ASSERT_EQ(evs.size(), 2u);
    EXPECT_EQ(evs[0].kv.key, key);
    EXPECT_TRUE(evs[0].kv.value == big);
    EXPECT_EQ(evs[0].kv.mod_revision, *rev);
    EXPECT_EQ(evs[1].kv.key, key + "/copy");
    EXPECT_TRUE(evs[1].kv.value == big2);
    EXPECT_EQ(evs[1].kv.mod_revision, t->revision);

    // A watch replaying history resolves the value as it was then.
    ASSERT_TRUE(store_->Put(key, "small now").ok());
    Collector replay;
    auto w2 = store_->Watch(key, *rev, replay.Callbacks());
    ASSERT_TRUE(w2.ok());
    ASSERT_TRUE(replay.WaitFor(3)) << replay.error().ToString();
    EXPECT_TRUE(replay.events()[0].kv.value == big);

    ASSERT_TRUE(store_->DeletePrefix("big/").ok());
  }
  EXPECT_TRUE(BlobKeys().empty());
}

TEST_F(EtcdStoreTest, BlobKeysNeverVisible) {
  ASSERT_TRUE(store_->Put("a", "1").ok());
  ASSERT_TRUE(store_->Put("m", RandomBytes32(3 * kMiB, 1)).ok());
  ASSERT_TRUE(store_->Put("z", "3").ok());
  EXPECT_FALSE(BlobKeys().empty());

  auto all = store_->Range("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 3u);
  EXPECT_EQ(all->count, 3);
  EXPECT_EQ(all->kvs[0].key, "a");
  EXPECT_EQ(all->kvs[1].key, "m");
  EXPECT_EQ(all->kvs[2].key, "z");

  auto counted =
      store_->Range("", {.limit = 0, .after = "", .keys_only = false, .count_only = true});
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->count, 3);
  auto paged =
      store_->Range("", {.limit = 1, .after = "a", .keys_only = true, .count_only = false});
  ASSERT_TRUE(paged.ok());
  ASSERT_EQ(paged->kvs.size(), 1u);
  EXPECT_EQ(paged->kvs[0].key, "m");
  EXPECT_TRUE(paged->more);
  EXPECT_EQ(paged->count, 2);

  Collector watched;
  auto w = store_->Watch("", 0, watched.Callbacks());
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(store_->Put("m", RandomBytes32(2 * kMiB, 2)).ok());
  auto deleted = store_->DeletePrefix("");
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 3);
  ASSERT_TRUE(watched.WaitFor(4));
  std::this_thread::sleep_for(200ms);
  for (const auto& e : watched.events()) {
    EXPECT_TRUE(e.kv.key == "a" || e.kv.key == "m" || e.kv.key == "z") << e.kv.key;
  }
  EXPECT_EQ(watched.events().size(), 4u);  // put m, then three deletes
  EXPECT_TRUE(BlobKeys().empty());
  auto left = store_->Range("");
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->count, 0);
}

TEST_F(EtcdStoreTest, OverwriteAndDeleteCollectOldBlobs) {
  const std::string v1 = RandomBytes32(3 * kMiB, 1);
  ASSERT_TRUE(store_->Put("k", v1).ok());
  auto first = BlobKeys();
  EXPECT_EQ(first.size(), 6u);  // 3 MiB in 512 KiB chunks

  ASSERT_TRUE(store_->Put("k", RandomBytes32(3 * kMiB, 2)).ok());
  auto second = BlobKeys();
  EXPECT_EQ(second.size(), 6u);
  for (const auto& k : first) {
    EXPECT_EQ(std::count(second.begin(), second.end(), k), 0) << "old chunk kept: " << k;
  }

  ASSERT_TRUE(store_->Put("k", "small").ok());
  EXPECT_TRUE(BlobKeys().empty());

  ASSERT_TRUE(store_->Put("k", v1).ok());
  auto n = store_->Delete("k");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_TRUE(BlobKeys().empty());

  // The branch that did not run leaves no blob behind; the one that ran
  // replaces (and collects) the old one.
  ASSERT_TRUE(store_->Put("k", v1).ok());
  Txn txn;
  txn.compares.push_back(Compare::Missing("k"));
  txn.success.push_back(Op::Put("k", RandomBytes32(2 * kMiB, 3)));
  txn.failure.push_back(Op::Put("k", RandomBytes32(kMiB + 1, 4)));
  auto t = store_->Commit(txn);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->succeeded);
  EXPECT_EQ(BlobKeys().size(), 3u);  // the failure branch's value only
  auto got = store_->Get("k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->value.size(), kMiB + 1);

  Txn del;
  del.success.push_back(Op::DeletePrefix(""));
  auto d = store_->Commit(del);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->deleted, 1);
  EXPECT_TRUE(BlobKeys().empty());
}

TEST_F(EtcdStoreTest, ValuesThatLookInternalRoundTrip) {
  const std::string tricky = std::string(
                                 "\0\xEC"
                                 "ref",
                                 5) +
                             "R1 not a reference";
  const std::string tricky2 = std::string(
      "\0\xEC"
      "ref",
      5);
  ASSERT_TRUE(store_->Put("t", tricky).ok());
  ASSERT_TRUE(store_->Put("u", tricky2).ok());
  auto got = store_->Get("t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->value, tricky);
  auto r = store_->Range("");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->kvs.size(), 2u);
  EXPECT_EQ(r->kvs[1].value, tricky2);

  Txn txn;
  txn.compares.push_back({"t", Compare::Target::kValue, Compare::Op::kEqual, 0, tricky});
  txn.success.push_back(Op::Get("u"));
  auto t = store_->Commit(txn);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->succeeded);
  ASSERT_TRUE(t->gets[0].has_value());
  EXPECT_EQ(t->gets[0]->value, tricky2);
}

TEST_F(EtcdStoreTest, ValueComparesFollowTheContractNotEtcd) {
  // etcd fails any value compare on a missing key; the contract says a
  // missing key has the value "".
  Txn txn;
  txn.compares.push_back({"missing", Compare::Target::kValue, Compare::Op::kEqual, 0, ""});
  txn.compares.push_back({"missing", Compare::Target::kValue, Compare::Op::kLess, 0, "a"});
  txn.success.push_back(Op::Put("x", "1"));
  auto t = store_->Commit(txn);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->succeeded);

  Txn neq;
  neq.compares.push_back({"missing", Compare::Target::kValue, Compare::Op::kNotEqual, 0, "v"});
  neq.compares.push_back({"x", Compare::Target::kValue, Compare::Op::kGreater, 0, "0"});
  neq.compares.push_back(Compare::Exists("x"));
  neq.success.push_back(Op::Get("x"));
  auto n = store_->Commit(neq);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(n->succeeded);

  Txn fails;
  fails.compares.push_back({"x", Compare::Target::kValue, Compare::Op::kEqual, 0, "2"});
  fails.success.push_back(Op::Put("y", "no"));
  fails.failure.push_back(Op::Put("y", "yes"));
  auto f = store_->Commit(fails);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->succeeded);
  auto y = store_->Get("y");
  ASSERT_TRUE(y.ok() && y->has_value());
  EXPECT_EQ((*y)->value, "yes");
}

TEST_F(EtcdStoreTest, TransactionOverTheRequestLimitSpillsToBlobs) {
  // Each value is inline-sized, together they exceed etcd's 1.5 MiB request limit.
  Txn txn;
  std::vector<std::string> values;
  for (int i = 0; i < 4; ++i) {
    values.push_back(RandomBytes32(700 << 10, 10 + i));
    txn.success.push_back(Op::Put("spill/" + std::to_string(i), values.back()));
  }
  auto t = store_->Commit(txn);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto r = store_->Range("spill/");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->kvs.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(r->kvs[i].value == values[i]) << i;
    EXPECT_EQ(r->kvs[i].mod_revision, t->revision);
  }
}

TEST_F(EtcdStoreTest, CollectGarbageRemovesOrphansOnly) {
  ASSERT_TRUE(store_->Put("keep", RandomBytes32(kMiB + 10, 5)).ok());
  auto kept = BlobKeys();
  ASSERT_EQ(kept.size(), 3u);
  // What a writer that died between its chunks and its reference leaves:
  // blobs of key "o" and of key "keep", written in 1970 (the nonce starts
  // with the time), and one written just now that may be a write in progress.
  const std::string old_nonce = "00000001" + std::string(24, 'a');
  const std::string orphan = prefix_ + "b/" + "6f" + "/" + old_nonce + "/00000000";
  const std::string orphan2 = prefix_ + "b/" + "6b656570" + "/" + old_nonce + "/00000000";
  char now[9];
  std::snprintf(now, sizeof now, "%08llx", static_cast<unsigned long long>(std::time(nullptr)));
  const std::string young = prefix_ + "b/" + "6f" + "/" + now + std::string(24, 'c') + "/00000000";
  ASSERT_TRUE(eco::testing::EtcdRawPut(etcd_->endpoint(), young, "z"));
  kept.push_back(young);
  std::sort(kept.begin(), kept.end());
  ASSERT_TRUE(eco::testing::EtcdRawPut(etcd_->endpoint(), orphan, "x"));
  ASSERT_TRUE(eco::testing::EtcdRawPut(etcd_->endpoint(), orphan2, "y"));
  EXPECT_EQ(BlobKeys().size(), 6u);
  Status s = store_->CollectGarbage();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(BlobKeys(), kept);
  auto got = store_->Get("keep");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->value.size(), kMiB + 10);
}

// Writers of large values race each other and a collector: every write that
// reports success must be readable in full, and in the end only the current
// value's blob may remain.
TEST_F(EtcdStoreTest, ConcurrentLargeWritersAndCollector) {
  std::vector<std::string> values;
  for (int i = 0; i < 3; ++i) values.push_back(RandomBytes32(kMiB + kMiB / 2, 20 + i));
  // No grace period: the collector may hit blobs whose writes are under way.
  auto opts = etcd_->StoreOptions(prefix_);
  opts.blob_gc_grace = 0s;
  auto eager = EtcdStore::Open(opts);
  ASSERT_TRUE(eager.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread collector([&] {
    while (!stop.load()) {
      if (!(*eager)->CollectGarbage().ok()) failures++;
      std::this_thread::sleep_for(20ms);
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 4; ++i) {
        auto r = store_->Put("race", values[w]);
        if (!r.ok()) {
          failures++;
          continue;
        }
        auto got = store_->Get("race");
        if (!got.ok() || !got->has_value() ||
            std::find(values.begin(), values.end(), (*got)->value) == values.end()) {
          failures++;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  collector.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(store_->CollectGarbage().ok());
  EXPECT_EQ(BlobKeys().size(), 3u);  // 1.5 MiB: three chunks of the current value
  auto got = store_->Get("race");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_NE(std::find(values.begin(), values.end(), (*got)->value), values.end());
}

TEST_F(EtcdStoreTest, LargeValueWithLeaseGoesWithTheLease) {
  auto lease = store_->GrantLease(30s);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(store_->Put("leased", RandomBytes32(2 * kMiB, 6), *lease).ok());
  auto got = store_->Get("leased");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->lease, *lease);
  ASSERT_TRUE(store_->RevokeLease(*lease).ok());
  got = store_->Get("leased");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(BlobKeys().empty());
}

TEST_F(EtcdStoreTest, KeeperNoticesARevokedLease) {
  auto keeper = store_->KeepAlive(3s);
  ASSERT_TRUE(keeper.ok()) << keeper.status().ToString();
  std::this_thread::sleep_for(4s);  // longer than the TTL: the keeper must refresh
  EXPECT_TRUE((*keeper)->alive());
  EXPECT_TRUE(store_->KeepAliveOnce((*keeper)->id()).ok());
  ASSERT_TRUE(store_->RevokeLease((*keeper)->id()).ok());
  EXPECT_EQ(store_->KeepAliveOnce((*keeper)->id()).code(), Code::kNotFound);
  for (int i = 0; i < 50 && (*keeper)->alive(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_FALSE((*keeper)->alive());
}

TEST_F(EtcdStoreTest, CompactedWatchReportsAnError) {
  auto r1 = store_->Put("c", "1");
  ASSERT_TRUE(r1.ok());
  auto r2 = store_->Put("c", "2");
  ASSERT_TRUE(r2.ok());
  ASSERT_TRUE(eco::testing::EtcdCompact(etcd_->endpoint(), *r2));
  Collector watched;
  auto w = store_->Watch("c", *r1, watched.Callbacks());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(watched.WaitForError());
  EXPECT_EQ(watched.error().code(), Code::kNotFound);
  EXPECT_NE(watched.error().message().find("compacted"), std::string::npos)
      << watched.error().ToString();
}

TEST_F(EtcdStoreTest, DestroyingAWatchFromItsCallbackIsSafe) {
  std::unique_ptr<WatchHandle> handle;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  WatchCallbacks cb;
  cb.on_events = [&](const std::vector<WatchEvent>&) {
    std::lock_guard lock(mu);
    handle.reset();
    done = true;
    cv.notify_all();
  };
  cb.on_error = [](const Status&) {};
  {
    std::lock_guard lock(mu);
    auto w = store_->Watch("self/", 0, cb);
    ASSERT_TRUE(w.ok());
    handle = std::move(*w);
  }
  ASSERT_TRUE(store_->Put("self/a", "1").ok());
  std::unique_lock lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, 10s, [&] { return done; }));
}

TEST(EtcdStoreEndpoints, FirstEndpointDeadStillWorks) {
  EtcdProcess* etcd = eco::testing::SharedEtcd();
  ASSERT_NE(etcd, nullptr);
  EtcdOptions opts;
  opts.endpoints = {"127.0.0.1:" + std::to_string(eco::testing::FreePort()), etcd->endpoint()};
  opts.key_prefix = "endpoints-test/";
  auto s = EtcdStore::Open(opts);
  ASSERT_TRUE(s.ok());
  auto& store = **s;
  Collector watched;
  auto w = store.Watch("", 0, watched.Callbacks());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto rev = store.Put("k", "v");
  ASSERT_TRUE(rev.ok()) << rev.status().ToString();
  auto got = store.Get("k");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->value, "v");
  ASSERT_TRUE(watched.WaitFor(1));
  EXPECT_EQ(watched.events()[0].kv.mod_revision, *rev);
  ASSERT_TRUE(store.DeletePrefix("").ok());
}

TEST(EtcdStoreEndpoints, AllEndpointsDeadIsUnavailable) {
  EtcdOptions opts;
  opts.endpoints = {"127.0.0.1:" + std::to_string(eco::testing::FreePort())};
  opts.dial_timeout = 300ms;
  opts.call_timeout = 1s;
  auto s = EtcdStore::Open(opts);
  ASSERT_TRUE(s.ok());
  auto got = (*s)->Get("k");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kUnavailable);
  auto put = (*s)->Put("k", "v");
  EXPECT_EQ(put.status().code(), Code::kUnavailable);
  auto w = (*s)->Watch("", 0, {[](const std::vector<WatchEvent>&) {}, nullptr});
  EXPECT_EQ(w.status().code(), Code::kUnavailable);
}

// etcd goes away and comes back (same data dir) under an open store and an
// open watch: later calls work, and the watch resumes where it stopped
// without losing or repeating events, including ones written before it
// reconnected.
void RestartUnderTraffic(bool graceful) {
  EtcdProcess etcd;
  std::string err = etcd.Start();
  ASSERT_EQ(err, "");
  auto opts = etcd.StoreOptions("restart/");
  opts.dial_timeout = 1s;
  auto s = EtcdStore::Open(opts);
  ASSERT_TRUE(s.ok());
  auto& store = **s;

  Collector watched;
  auto w = store.Watch("", 0, watched.Callbacks());
  ASSERT_TRUE(w.ok());
  std::vector<Revision> revs;
  auto put = [&](const std::string& k, const std::string& v) {
    auto r = store.Put(k, v);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    revs.push_back(*r);
  };
  put("a", "1");
  put("big", RandomBytes32(2 * kMiB, 9));
  ASSERT_TRUE(watched.WaitFor(2));

  if (graceful) {
    etcd.Stop();
  } else {
    etcd.Kill();
  }
  EXPECT_EQ(store.Get("a").status().code(), Code::kUnavailable);
  ASSERT_EQ(etcd.Restart(), "");

  // Written before the watch has necessarily reconnected.
  put("b", "2");
  put("big", RandomBytes32(2 * kMiB, 10));
  put("c", "3");
  auto got = store.Get("a");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());

  ASSERT_TRUE(watched.WaitFor(5)) << watched.error().ToString();
  std::this_thread::sleep_for(300ms);
  auto evs = watched.events();
  ASSERT_EQ(evs.size(), 5u);
  std::vector<std::string> keys;
  for (size_t i = 0; i < evs.size(); ++i) {
    keys.push_back(evs[i].kv.key);
    EXPECT_EQ(evs[i].kv.mod_revision, revs[i]);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "big", "b", "big", "c"}));
  EXPECT_TRUE(evs[3].kv.value == RandomBytes32(2 * kMiB, 10));
  EXPECT_TRUE(watched.error().ok()) << watched.error().ToString();
}

TEST(EtcdStoreRestart, GracefulStop) { RestartUnderTraffic(true); }
TEST(EtcdStoreRestart, Kill9) { RestartUnderTraffic(false); }

// The path of an etcd:// URL is a key prefix: two installations on one etcd
// do not see each other's keys.
TEST(EtcdUrlTest, PathIsAKeyPrefix) {
  EtcdProcess* etcd = eco::testing::SharedEtcd();
  ASSERT_NE(etcd, nullptr);
  auto a = Open("etcd://" + etcd->endpoint() + "/url-test-a");
  auto b = Open("etcd://" + etcd->endpoint() + "/url-test-b/");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE((*a)->Put("/k", "in-a").ok());
  auto got = (*b)->Get("/k");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  auto mine = (*a)->Get("/k");
  ASSERT_TRUE(mine.ok() && mine->has_value());
  EXPECT_EQ((*mine)->value, "in-a");
  auto raw = eco::testing::EtcdRawKeys(etcd->endpoint(), "url-test-a/");
  EXPECT_FALSE(raw.empty());
  ASSERT_TRUE((*a)->DeletePrefix("").ok());
}

}  // namespace
}  // namespace eco::store
