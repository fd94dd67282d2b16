// The Store contract: every backend in AllStoreBackends() must pass all of
// it. Expectations are relative to CurrentRevision(), so a backend need not
// start at a particular revision.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "backends.h"
#include "forwarding_store.h"
#include "status_matchers.h"
#include "store/lock.h"
#include "store/store.h"

namespace eco::store {
namespace {

using namespace std::chrono_literals;
using ::eco::testing::AllStoreBackends;
using ::eco::testing::StoreBackend;

// Records watch callbacks; waits for them without sleeping blindly.
class Recorder {
 public:
  WatchCallbacks Callbacks() {
    auto st = st_;
    WatchCallbacks cb;
    cb.on_events = [st](const std::vector<WatchEvent>& evs) {
      std::lock_guard lk(st->mu);
      if (st->closed) st->late_calls++;
      st->batches.push_back(evs);
      st->cv.notify_all();
    };
    cb.on_error = [st](const Status& s) {
      std::lock_guard lk(st->mu);
      if (st->closed) st->late_calls++;
      st->error = s;
      st->cv.notify_all();
    };
    return cb;
  }
  // Marks the point after which any callback is a contract violation.
  void Close() {
    std::lock_guard lk(st_->mu);
    st_->closed = true;
  }
  bool WaitForEvents(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lk(st_->mu);
    return st_->cv.wait_for(lk, timeout, [&] { return CountLocked() >= n; });
  }
  bool WaitForError(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lk(st_->mu);
    return st_->cv.wait_for(lk, timeout, [&] { return st_->error.has_value(); });
  }
  std::vector<WatchEvent> Events() {
    std::lock_guard lk(st_->mu);
    std::vector<WatchEvent> out;
    for (auto& b : st_->batches) out.insert(out.end(), b.begin(), b.end());
    return out;
  }
  std::vector<std::vector<WatchEvent>> Batches() {
    std::lock_guard lk(st_->mu);
    return st_->batches;
  }
  std::optional<Status> Error() {
    std::lock_guard lk(st_->mu);
    return st_->error;
  }
  int LateCalls() {
    std::lock_guard lk(st_->mu);
    return st_->late_calls;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::vector<WatchEvent>> batches;
    std::optional<Status> error;
    bool closed = false;
    int late_calls = 0;
  };
  size_t CountLocked() {
    size_t n = 0;
    for (auto& b : st_->batches) n += b.size();
    return n;
  }
  std::shared_ptr<State> st_ = std::make_shared<State>();
};

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

class StoreContract : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override {
    store_ = GetParam().make();
    ASSERT_NE(store_, nullptr) << "backend " << GetParam().name << " did not start";
  }
  Store& s() { return *store_; }
  Revision Current() {
    auto r = store_->CurrentRevision();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : -1;
  }

  std::unique_ptr<Store> store_;
};

// --- get / put / delete and revisions ---------------------------------------

TEST_P(StoreContract, BackendNameMatches) { EXPECT_EQ(s().Backend(), GetParam().name); }

TEST_P(StoreContract, GetOfMissingKeyIsEmpty) {
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("nope"));
  EXPECT_FALSE(kv.has_value());
}

TEST_P(StoreContract, PutThenGet) {
  const Revision before = Current();
  ASSERT_OK_AND_ASSIGN(Revision r, s().Put("a", "1"));
  EXPECT_EQ(r, before + 1);
  EXPECT_EQ(Current(), r);
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("a"));
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->key, "a");
  EXPECT_EQ(kv->value, "1");
  EXPECT_EQ(kv->create_revision, r);
  EXPECT_EQ(kv->mod_revision, r);
  EXPECT_EQ(kv->version, 1);
  EXPECT_EQ(kv->lease, 0);
}

TEST_P(StoreContract, RevisionsFollowEtcd) {
  ASSERT_OK_AND_ASSIGN(Revision r1, s().Put("a", "1"));
  ASSERT_OK_AND_ASSIGN(Revision r2, s().Put("a", "2"));
  EXPECT_EQ(r2, r1 + 1);
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("a"));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->create_revision, r1);
  EXPECT_EQ(kv->mod_revision, r2);
  EXPECT_EQ(kv->version, 2);

  ASSERT_OK_AND_ASSIGN(Revision r3, s().Put("b", "x"));
  EXPECT_EQ(r3, r2 + 1);

  ASSERT_OK_AND_ASSIGN(int64_t n, s().Delete("a"));
  EXPECT_EQ(n, 1);
  const Revision r4 = Current();
  EXPECT_EQ(r4, r3 + 1) << "a delete is one revision";

  // Deleting nothing is not a write.
  ASSERT_OK_AND_ASSIGN(n, s().Delete("a"));
  EXPECT_EQ(n, 0);
  ASSERT_OK_AND_ASSIGN(n, s().DeletePrefix("zzz/"));
  EXPECT_EQ(n, 0);
  EXPECT_EQ(Current(), r4);

  // A re-created key starts a new life: new create revision, version 1.
  ASSERT_OK_AND_ASSIGN(Revision r5, s().Put("a", "3"));
  EXPECT_EQ(r5, r4 + 1);
  ASSERT_OK_AND_ASSIGN(kv, s().Get("a"));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->create_revision, r5);
  EXPECT_EQ(kv->version, 1);

  ASSERT_OK_AND_ASSIGN(auto b, s().Get("b"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->mod_revision, r3) << "untouched keys keep their revisions";
}

TEST_P(StoreContract, EmptyValueIsAValue) {
  ASSERT_OK(s().Put("empty", "").status());
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("empty"));
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->value, "");
}

TEST_P(StoreContract, EmptyKeyIsRejected) { EXPECT_FALSE(s().Put("", "v").ok()); }

// --- range --------------------------------------------------------------------

// The API lists items in creation order by sorting a range on
// create_revision: every backend must keep it through replaces, large
// values included, and give a re-created key a new one.
TEST_P(StoreContract, RangeCreateRevisionsKeepCreationOrder) {
  const std::string big = RandomBytes(2u << 20, 7);  // above etcd's inline limit
  ASSERT_OK(s().Put("o/z", "1").status());
  ASSERT_OK(s().Put("o/a", big).status());
  ASSERT_OK(s().Put("o/m", "1").status());
  ASSERT_OK(s().Put("o/x", "1").status());
  ASSERT_OK(s().Put("o/a", "2").status());
  ASSERT_OK(s().Put("o/z", big).status());
  ASSERT_OK(s().Delete("o/m").status());
  ASSERT_OK(s().Put("o/m", "again").status());
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("o/"));
  std::sort(r.kvs.begin(), r.kvs.end(),
            [](const KeyValue& x, const KeyValue& y) { return x.create_revision < y.create_revision; });
  std::vector<std::string> keys;
  for (const auto& kv : r.kvs) keys.push_back(kv.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"o/z", "o/a", "o/x", "o/m"}));
  for (const auto& kv : r.kvs) {
    ASSERT_OK_AND_ASSIGN(auto one, s().Get(kv.key));
    ASSERT_TRUE(one);
    EXPECT_EQ(one->create_revision, kv.create_revision) << kv.key;
  }
  RangeOptions keys_only;
  keys_only.keys_only = true;
  ASSERT_OK_AND_ASSIGN(RangeResult k, s().Range("o/", keys_only));
  ASSERT_EQ(k.kvs.size(), r.kvs.size());
  for (const auto& kv : k.kvs) {
    auto same = std::find_if(r.kvs.begin(), r.kvs.end(), [&](const KeyValue& x) { return x.key == kv.key; });
    ASSERT_NE(same, r.kvs.end());
    EXPECT_EQ(kv.create_revision, same->create_revision) << kv.key << " keys_only";
  }
}

TEST_P(StoreContract, RangeByPrefix) {
  for (const char* k : {"a/2", "a/1", "ab", "b", "a/", "a/1/x"}) ASSERT_OK(s().Put(k, k).status());
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("a/"));
  std::vector<std::string> keys;
  for (auto& kv : r.kvs) {
    keys.push_back(kv.key);
    EXPECT_EQ(kv.value, kv.key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a/", "a/1", "a/1/x", "a/2"}));
  EXPECT_EQ(r.count, 4);
  EXPECT_FALSE(r.more);
  EXPECT_EQ(r.revision, Current());

  ASSERT_OK_AND_ASSIGN(RangeResult all, s().Range(""));
  EXPECT_EQ(all.kvs.size(), 6u);
  EXPECT_TRUE(std::is_sorted(all.kvs.begin(), all.kvs.end(),
                             [](auto& x, auto& y) { return x.key < y.key; }));

  ASSERT_OK_AND_ASSIGN(RangeResult none, s().Range("c"));
  EXPECT_TRUE(none.kvs.empty());
  EXPECT_EQ(none.count, 0);
}

TEST_P(StoreContract, RangePaginatesOverManyKeys) {
  constexpr int kKeys = 1234;
  for (int base = 0; base < kKeys; base += 100) {
    Txn t;
    for (int i = base; i < std::min(kKeys, base + 100); ++i) {
      char k[32];
      std::snprintf(k, sizeof k, "page/%05d", i);
      t.success.push_back(Op::Put(k, std::to_string(i)));
    }
    ASSERT_OK(s().Commit(t).status());
  }
  ASSERT_OK(s().Put("pagf", "outside").status());
  ASSERT_OK(s().Put("pag", "outside").status());

  std::vector<std::string> seen;
  RangeOptions opts;
  opts.limit = 100;
  int pages = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("page/", opts));
    ++pages;
    ASSERT_LE(r.kvs.size(), 100u);
    EXPECT_EQ(r.count, kKeys - static_cast<int64_t>(seen.size()))
        << "count ignores the limit but honours `after`";
    for (auto& kv : r.kvs) {
      EXPECT_EQ(kv.value, std::to_string(std::stoi(kv.key.substr(5))));
      seen.push_back(kv.key);
    }
    if (!r.more) break;
    EXPECT_EQ(r.kvs.size(), 100u);
    opts.after = r.kvs.back().key;
  }
  EXPECT_EQ(pages, (kKeys + 99) / 100);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) {
    char k[32];
    std::snprintf(k, sizeof k, "page/%05d", i);
    ASSERT_EQ(seen[i], k);
  }
}

TEST_P(StoreContract, RangeAfterOutsideThePrefix) {
  for (const char* k : {"p/a", "p/b", "p/c"}) ASSERT_OK(s().Put(k, "v").status());
  RangeOptions before;
  before.after = "a";  // sorts before the prefix: no effect
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("p/", before));
  EXPECT_EQ(r.kvs.size(), 3u);
  RangeOptions past;
  past.after = "q";
  ASSERT_OK_AND_ASSIGN(r, s().Range("p/", past));
  EXPECT_TRUE(r.kvs.empty());
  EXPECT_EQ(r.count, 0);
  RangeOptions mid;
  mid.after = "p/a";
  ASSERT_OK_AND_ASSIGN(r, s().Range("p/", mid));
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, "p/b");
}

TEST_P(StoreContract, RangeKeysOnlyAndCountOnly) {
  ASSERT_OK_AND_ASSIGN(Revision r1, s().Put("k/1", "one"));
  ASSERT_OK(s().Put("k/2", "two").status());
  ASSERT_OK(s().Put("k/3", "three").status());

  RangeOptions ko;
  ko.keys_only = true;
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("k/", ko));
  ASSERT_EQ(r.kvs.size(), 3u);
  EXPECT_EQ(r.kvs[0].key, "k/1");
  EXPECT_EQ(r.kvs[0].value, "");
  EXPECT_EQ(r.kvs[0].mod_revision, r1) << "keys_only keeps the metadata";
  EXPECT_EQ(r.kvs[0].version, 1);

  RangeOptions co;
  co.count_only = true;
  ASSERT_OK_AND_ASSIGN(r, s().Range("k/", co));
  EXPECT_TRUE(r.kvs.empty());
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.revision, Current());

  co.after = "k/1";
  ASSERT_OK_AND_ASSIGN(r, s().Range("k/", co));
  EXPECT_EQ(r.count, 2);

  RangeOptions lim;
  lim.limit = 2;
  ASSERT_OK_AND_ASSIGN(r, s().Range("k/", lim));
  EXPECT_EQ(r.kvs.size(), 2u);
  EXPECT_TRUE(r.more);
  EXPECT_EQ(r.count, 3);
  lim.limit = 3;
  ASSERT_OK_AND_ASSIGN(r, s().Range("k/", lim));
  EXPECT_EQ(r.kvs.size(), 3u);
  EXPECT_FALSE(r.more) << "a limit equal to the count cuts nothing";
}

// --- transactions ---------------------------------------------------------------

TEST_P(StoreContract, TxnComparesEveryTargetAndOp) {
  ASSERT_OK_AND_ASSIGN(Revision created, s().Put("c", "m"));
  ASSERT_OK(s().Put("other", "x").status());
  ASSERT_OK_AND_ASSIGN(Revision modified, s().Put("c", "m"));
  // Now c: create=created, mod=modified, version=2, value "m".
  using T = Compare::Target;
  using O = Compare::Op;
  struct Case {
    T target;
    O op;
    int64_t number;
    std::string value;
    bool want;
  };
  const std::vector<Case> cases = {
      {T::kModRevision, O::kEqual, modified, "", true},
      {T::kModRevision, O::kEqual, modified - 1, "", false},
      {T::kModRevision, O::kNotEqual, modified, "", false},
      {T::kModRevision, O::kNotEqual, created, "", true},
      {T::kModRevision, O::kLess, modified + 1, "", true},
      {T::kModRevision, O::kLess, modified, "", false},
      {T::kModRevision, O::kGreater, modified - 1, "", true},
      {T::kModRevision, O::kGreater, modified, "", false},
      {T::kCreateRevision, O::kEqual, created, "", true},
      {T::kCreateRevision, O::kEqual, modified, "", false},
      {T::kCreateRevision, O::kNotEqual, modified, "", true},
      {T::kCreateRevision, O::kLess, created, "", false},
      {T::kCreateRevision, O::kLess, created + 1, "", true},
      {T::kCreateRevision, O::kGreater, 0, "", true},
      {T::kVersion, O::kEqual, 2, "", true},
      {T::kVersion, O::kEqual, 1, "", false},
      {T::kVersion, O::kNotEqual, 2, "", false},
      {T::kVersion, O::kLess, 3, "", true},
      {T::kVersion, O::kLess, 2, "", false},
      {T::kVersion, O::kGreater, 1, "", true},
      {T::kVersion, O::kGreater, 2, "", false},
      {T::kValue, O::kEqual, 0, "m", true},
      {T::kValue, O::kEqual, 0, "n", false},
      {T::kValue, O::kNotEqual, 0, "m", false},
      {T::kValue, O::kNotEqual, 0, "mm", true},
      {T::kValue, O::kLess, 0, "n", true},
      {T::kValue, O::kLess, 0, "m", false},
      {T::kValue, O::kLess, 0, "ma", true},  // byte order: "m" < "ma"
      {T::kValue, O::kGreater, 0, "l", true},
      {T::kValue, O::kGreater, 0, "m", false},
      {T::kValue, O::kGreater, 0, std::string(1, '\0'), true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    Txn t;
    t.compares.push_back({"c", c.target, c.op, c.number, c.value});
    t.success.push_back(Op::Get("c"));
    t.failure.push_back(Op::Get("other"));
    ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
    EXPECT_EQ(r.succeeded, c.want) << "case " << i;
    ASSERT_EQ(r.gets.size(), 1u);
    ASSERT_TRUE(r.gets[0].has_value());
    EXPECT_EQ(r.gets[0]->key, c.want ? "c" : "other") << "case " << i;
  }
  // Several compares: all must hold.
  Txn both;
  both.compares = {Compare::ModRevisionIs("c", modified), Compare::Exists("other")};
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(both));
  EXPECT_TRUE(r.succeeded);
  both.compares.push_back(Compare::Missing("other"));
  ASSERT_OK_AND_ASSIGN(r, s().Commit(both));
  EXPECT_FALSE(r.succeeded);
}

TEST_P(StoreContract, TxnMissingKeyComparesAsZeros) {
  using T = Compare::Target;
  using O = Compare::Op;
  for (T target : {T::kModRevision, T::kCreateRevision, T::kVersion}) {
    Txn t;
    t.compares.push_back({"ghost", target, O::kEqual, 0, {}});
    ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
    EXPECT_TRUE(r.succeeded) << static_cast<int>(target);
  }
  Txn missing;
  missing.compares.push_back(Compare::Missing("ghost"));
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(missing));
  EXPECT_TRUE(r.succeeded);
  Txn exists;
  exists.compares.push_back(Compare::Exists("ghost"));
  ASSERT_OK_AND_ASSIGN(r, s().Commit(exists));
  EXPECT_FALSE(r.succeeded);
}

// store.h: a missing key has an empty value. (etcd itself fails every value
// compare on a missing key; a backend over etcd must bridge the difference.)
TEST_P(StoreContract, TxnMissingKeyHasEmptyValue) {
  Txn eq;
  eq.compares.push_back({"ghost", Compare::Target::kValue, Compare::Op::kEqual, 0, ""});
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(eq));
  EXPECT_TRUE(r.succeeded);
  Txn ne;
  ne.compares.push_back({"ghost", Compare::Target::kValue, Compare::Op::kNotEqual, 0, "x"});
  ASSERT_OK_AND_ASSIGN(r, s().Commit(ne));
  EXPECT_TRUE(r.succeeded);
}

TEST_P(StoreContract, TxnBranchesRunAndReport) {
  ASSERT_OK_AND_ASSIGN(Revision r0, s().Put("acct", "100"));
  ASSERT_OK(s().Put("gone", "x").status());

  Txn t;
  t.compares.push_back(Compare::ModRevisionIs("acct", r0));
  t.success = {Op::Put("acct", "90"), Op::Put("log/1", "debit"), Op::Delete("gone"),
               Op::Get("acct"), Op::Get("missing")};
  t.failure = {Op::Get("acct")};
  const Revision before = Current();
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
  EXPECT_TRUE(r.succeeded);
  EXPECT_EQ(r.revision, before + 1) << "a txn is one revision however many writes";
  EXPECT_EQ(r.deleted, 1);
  ASSERT_EQ(r.gets.size(), 2u);
  ASSERT_TRUE(r.gets[0].has_value());
  EXPECT_EQ(r.gets[0]->value, "90") << "a get sees the txn's own earlier put";
  EXPECT_EQ(r.gets[0]->mod_revision, r.revision);
  EXPECT_EQ(r.gets[0]->version, 2);
  EXPECT_FALSE(r.gets[1].has_value());
  ASSERT_OK_AND_ASSIGN(auto log, s().Get("log/1"));
  ASSERT_TRUE(log);
  EXPECT_EQ(log->mod_revision, r.revision);
  ASSERT_OK_AND_ASSIGN(auto gone, s().Get("gone"));
  EXPECT_FALSE(gone);

  // Same txn again: the compare fails, the failure branch runs, nothing written.
  ASSERT_OK_AND_ASSIGN(r, s().Commit(t));
  EXPECT_FALSE(r.succeeded);
  EXPECT_EQ(r.revision, before + 1) << "a read-only branch does not bump the revision";
  EXPECT_EQ(r.deleted, 0);
  ASSERT_EQ(r.gets.size(), 1u);
  ASSERT_TRUE(r.gets[0]);
  EXPECT_EQ(r.gets[0]->value, "90");
  EXPECT_EQ(Current(), before + 1);

  // The failure branch may write too.
  Txn f;
  f.compares.push_back(Compare::Missing("acct"));
  f.failure = {Op::Put("acct", "80"), Op::DeletePrefix("log/")};
  ASSERT_OK_AND_ASSIGN(r, s().Commit(f));
  EXPECT_FALSE(r.succeeded);
  EXPECT_EQ(r.revision, before + 2);
  EXPECT_EQ(r.deleted, 1);
  ASSERT_OK_AND_ASSIGN(auto acct, s().Get("acct"));
  ASSERT_TRUE(acct);
  EXPECT_EQ(acct->value, "80");
}

TEST_P(StoreContract, TxnDeleteOfMissingKeyIsNotAWrite) {
  const Revision before = Current();
  Txn t;
  t.success = {Op::Delete("nothing"), Op::DeletePrefix("nothing/"), Op::Get("nothing")};
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
  EXPECT_TRUE(r.succeeded);
  EXPECT_EQ(r.deleted, 0);
  EXPECT_EQ(r.revision, before);
  EXPECT_EQ(Current(), before);
}

TEST_P(StoreContract, TxnWithTheSameKeyPutTwiceIsRejected) {
  Txn t;
  t.success = {Op::Put("dup", "1"), Op::Put("dup", "2")};
  const Revision before = Current();
  EXPECT_FALSE(s().Commit(t).ok());
  Txn u;
  u.success = {Op::DeletePrefix("dup"), Op::Put("dup/x", "2")};
  EXPECT_FALSE(s().Commit(u).ok());
  EXPECT_EQ(Current(), before);
}

TEST_P(StoreContract, TxnIsAtomicWhenAnOpFails) {
  // A put on an unknown lease fails the whole txn: the first put must vanish.
  Txn t;
  t.success = {Op::Put("atomic/a", "1"), Op::Put("atomic/b", "2", /*lease=*/0x7eadbeef)};
  const Revision before = Current();
  EXPECT_FALSE(s().Commit(t).ok());
  ASSERT_OK_AND_ASSIGN(auto a, s().Get("atomic/a"));
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(Current(), before);
}

TEST_P(StoreContract, DeletePrefix) {
  for (const char* k : {"d/1", "d/2", "d/3/x", "d", "e/1"}) ASSERT_OK(s().Put(k, "v").status());
  const Revision before = Current();
  ASSERT_OK_AND_ASSIGN(int64_t n, s().DeletePrefix("d/"));
  EXPECT_EQ(n, 3);
  EXPECT_EQ(Current(), before + 1);
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range(""));
  std::vector<std::string> keys;
  for (auto& kv : r.kvs) keys.push_back(kv.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"d", "e/1"}));
}

// --- watch ----------------------------------------------------------------------

TEST_P(StoreContract, WatchReplaysFromAPastRevisionThenGoesLive) {
  ASSERT_OK_AND_ASSIGN(Revision r1, s().Put("w/a", "1"));
  ASSERT_OK(s().Put("w/b", "2").status());
  ASSERT_OK(s().Delete("w/a").status());
  Recorder rec;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("w/", r1, rec.Callbacks()));
  ASSERT_TRUE(rec.WaitForEvents(3)) << "replay of three past events";
  ASSERT_OK_AND_ASSIGN(Revision r4, s().Put("w/c", "3"));
  ASSERT_TRUE(rec.WaitForEvents(4)) << "the live event";
  auto ev = rec.Events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(ev[0].kv.key, "w/a");
  EXPECT_EQ(ev[0].kv.value, "1");
  EXPECT_EQ(ev[0].kv.mod_revision, r1);
  EXPECT_EQ(ev[0].kv.create_revision, r1);
  EXPECT_EQ(ev[0].kv.version, 1);
  EXPECT_EQ(ev[1].kv.key, "w/b");
  EXPECT_EQ(ev[1].kv.mod_revision, r1 + 1);
  EXPECT_EQ(ev[2].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(ev[2].kv.key, "w/a");
  EXPECT_EQ(ev[2].kv.mod_revision, r1 + 2);
  EXPECT_EQ(ev[3].kv.key, "w/c");
  EXPECT_EQ(ev[3].kv.mod_revision, r4);
  EXPECT_FALSE(rec.Error().has_value());
}

TEST_P(StoreContract, WatchFromZeroSeesOnlyLaterChanges) {
  ASSERT_OK(s().Put("z/old", "1").status());
  Recorder rec;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("z/", 0, rec.Callbacks()));
  ASSERT_OK_AND_ASSIGN(Revision r, s().Put("z/new", "2"));
  ASSERT_TRUE(rec.WaitForEvents(1));
  auto ev = rec.Events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kv.key, "z/new");
  EXPECT_EQ(ev[0].kv.mod_revision, r);
}

TEST_P(StoreContract, WatchOfAPrefixSeesOnlyThatPrefix) {
  Recorder rec, all;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("p/", 0, rec.Callbacks()));
  ASSERT_OK_AND_ASSIGN(auto h2, s().Watch("", 0, all.Callbacks()));
  ASSERT_OK(s().Put("q/1", "x").status());
  ASSERT_OK(s().Put("p", "x").status());
  ASSERT_OK(s().Put("p2", "x").status());
  ASSERT_OK(s().Put("p/1", "x").status());
  // Mixed txn: the watcher gets only its key of the revision.
  Txn t;
  t.success = {Op::Put("q/2", "y"), Op::Put("p/2", "y")};
  ASSERT_OK(s().Commit(t).status());
  ASSERT_TRUE(all.WaitForEvents(6));
  ASSERT_TRUE(rec.WaitForEvents(2));
  auto ev = rec.Events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kv.key, "p/1");
  EXPECT_EQ(ev[1].kv.key, "p/2");
}

TEST_P(StoreContract, WatchBatchesByRevision) {
  Recorder rec;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("b/", 0, rec.Callbacks()));
  Txn t;
  t.success = {Op::Put("b/1", "a"), Op::Put("b/2", "b"), Op::Put("b/3", "c")};
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
  ASSERT_OK_AND_ASSIGN(int64_t n, s().DeletePrefix("b/"));
  ASSERT_EQ(n, 3);
  ASSERT_TRUE(rec.WaitForEvents(6));
  auto batches = rec.Batches();
  ASSERT_EQ(batches.size(), 2u);
  ASSERT_EQ(batches[0].size(), 3u);
  for (auto& e : batches[0]) {
    EXPECT_EQ(e.type, WatchEvent::Type::kPut);
    EXPECT_EQ(e.kv.mod_revision, r.revision);
  }
  ASSERT_EQ(batches[1].size(), 3u);
  for (auto& e : batches[1]) {
    EXPECT_EQ(e.type, WatchEvent::Type::kDelete);
    EXPECT_EQ(e.kv.mod_revision, r.revision + 1);
  }
  EXPECT_EQ(batches[1][0].kv.key, "b/1");
}

TEST_P(StoreContract, CancelledWatchGetsNoMoreCallbacks) {
  Recorder rec, witness;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("c/", 0, rec.Callbacks()));
  ASSERT_OK(s().Put("c/1", "x").status());
  ASSERT_TRUE(rec.WaitForEvents(1));
  h.reset();
  rec.Close();
  ASSERT_OK_AND_ASSIGN(auto w, s().Watch("c/", 0, witness.Callbacks()));
  for (int i = 0; i < 20; ++i) ASSERT_OK(s().Put("c/" + std::to_string(i), "y").status());
  ASSERT_TRUE(witness.WaitForEvents(20));
  EXPECT_EQ(rec.LateCalls(), 0);
  EXPECT_EQ(rec.Events().size(), 1u);
}

TEST_P(StoreContract, CancelWaitsForTheCallbackInFlight) {
  // Cancels race with deliveries: once the handle is gone, no callback may be
  // running or start. Each callback lingers a little to widen the window.
  for (int round = 0; round < 10; ++round) {
    auto hits = std::make_shared<std::atomic<int>>(0);
    auto active = std::make_shared<std::atomic<int>>(0);
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    auto late = std::make_shared<std::atomic<int>>(0);
    WatchCallbacks cb;
    cb.on_events = [=](const std::vector<WatchEvent>&) {
      if (cancelled->load()) late->fetch_add(1);
      active->fetch_add(1);
      hits->fetch_add(1);
      std::this_thread::sleep_for(2ms);
      active->fetch_sub(1);
    };
    ASSERT_OK_AND_ASSIGN(auto h, s().Watch("race/", 0, cb));
    std::thread writer([&] {
      for (int i = 0; i < 20; ++i) (void)s().Put("race/k", std::to_string(i));
    });
    while (hits->load() < 1 + round % 3) std::this_thread::yield();
    h.reset();
    const int in_flight = active->load();
    cancelled->store(true);
    writer.join();
    EXPECT_EQ(in_flight, 0) << "round " << round << ": the handle died under a running callback";
    EXPECT_EQ(late->load(), 0) << "round " << round;
  }
}

TEST_P(StoreContract, WatchCallbackMayUseTheStoreAndCancelItself) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::unique_ptr<WatchHandle> handle;
    std::optional<KeyValue> read;
    int calls = 0;
  };
  auto sh = std::make_shared<Shared>();
  Store* store = &s();
  WatchCallbacks cb;
  cb.on_events = [sh, store](const std::vector<WatchEvent>& evs) {
    auto kv = store->Get(evs[0].kv.key);    // reentrant read
    (void)store->Put("self/echo", "seen");  // reentrant write
    std::unique_ptr<WatchHandle> mine;
    {
      std::lock_guard lk(sh->mu);
      sh->calls++;
      if (kv.ok()) sh->read = *kv;
      mine = std::move(sh->handle);
    }
    mine.reset();  // cancel from inside the callback
    sh->cv.notify_all();
  };
  {
    std::lock_guard lk(sh->mu);
    ASSERT_OK_AND_ASSIGN(sh->handle, s().Watch("self/in", 0, cb));
  }
  ASSERT_OK(s().Put("self/in", "1").status());
  std::unique_lock lk(sh->mu);
  ASSERT_TRUE(sh->cv.wait_for(lk, 10s, [&] { return sh->calls > 0; }));
  ASSERT_TRUE(sh->read.has_value());
  EXPECT_EQ(sh->read->value, "1");
  lk.unlock();
  ASSERT_OK(s().Put("self/in", "2").status());
  // A later watcher seeing the put proves the dispatcher moved past it.
  Recorder witness;
  ASSERT_OK_AND_ASSIGN(auto w, s().Watch("self/in", 0, witness.Callbacks()));
  ASSERT_OK(s().Put("self/in", "3").status());
  ASSERT_TRUE(witness.WaitForEvents(1));
  lk.lock();
  EXPECT_EQ(sh->calls, 1);
  ASSERT_OK_AND_ASSIGN(auto echo, s().Get("self/echo"));
  EXPECT_TRUE(echo.has_value());
}

// --- leases ---------------------------------------------------------------------

TEST_P(StoreContract, LeaseGrantKeepAliveRevoke) {
  ASSERT_OK_AND_ASSIGN(LeaseId id, s().GrantLease(30s));
  EXPECT_GT(id, 0);
  ASSERT_OK(s().Put("l/1", "a", id).status());
  ASSERT_OK(s().Put("l/2", "b", id).status());
  ASSERT_OK(s().Put("l/3", "c").status());
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("l/1"));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->lease, id);
  ASSERT_OK(s().KeepAliveOnce(id));

  Recorder rec;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("l/", 0, rec.Callbacks()));
  const Revision before = Current();
  ASSERT_OK(s().RevokeLease(id));
  EXPECT_EQ(Current(), before + 1) << "a revoke deletes its keys in one revision";
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("l/"));
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].key, "l/3");
  ASSERT_TRUE(rec.WaitForEvents(2));
  auto batches = rec.Batches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].size(), 2u);
  for (auto& e : batches[0]) EXPECT_EQ(e.type, WatchEvent::Type::kDelete);

  EXPECT_EQ(s().KeepAliveOnce(id).code(), Code::kNotFound);
  EXPECT_EQ(s().RevokeLease(id).code(), Code::kNotFound);
  EXPECT_FALSE(s().Put("l/4", "d", id).ok()) << "a put on a revoked lease fails";
}

TEST_P(StoreContract, RevokeOfALeaseWithoutKeysIsNotAWrite) {
  ASSERT_OK_AND_ASSIGN(LeaseId id, s().GrantLease(30s));
  const Revision before = Current();
  ASSERT_OK(s().RevokeLease(id));
  EXPECT_EQ(Current(), before);
}

TEST_P(StoreContract, OverwriteDetachesFromLease) {
  ASSERT_OK_AND_ASSIGN(LeaseId id, s().GrantLease(30s));
  ASSERT_OK(s().Put("detach", "a", id).status());
  ASSERT_OK(s().Put("detach", "b").status());
  ASSERT_OK(s().RevokeLease(id));
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("detach"));
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->value, "b");
  EXPECT_EQ(kv->lease, 0);
}

TEST_P(StoreContract, LeaseExpires) {
  ASSERT_OK_AND_ASSIGN(LeaseId id, s().GrantLease(1s));
  ASSERT_OK(s().Put("exp/k", "v", id).status());
  Recorder rec;
  ASSERT_OK_AND_ASSIGN(auto h, s().Watch("exp/", 0, rec.Callbacks()));
  // Expiry needs real time to pass; backends may round a TTL up (etcd's minimum).
  ASSERT_TRUE(rec.WaitForEvents(1, 15s)) << "lease did not expire";
  auto ev = rec.Events();
  EXPECT_EQ(ev[0].type, WatchEvent::Type::kDelete);
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("exp/k"));
  EXPECT_FALSE(kv.has_value());
  EXPECT_EQ(s().KeepAliveOnce(id).code(), Code::kNotFound);
}

TEST_P(StoreContract, KeepAliveKeeperHoldsThenRevokes) {
  std::unique_ptr<LeaseKeeper> keeper;
  ASSERT_OK_AND_ASSIGN(keeper, s().KeepAlive(1s));
  const LeaseId id = keeper->id();
  ASSERT_OK(s().Put("keep/k", "v", id).status());
  std::this_thread::sleep_for(2500ms);  // well past the TTL: only refreshes keep it
  EXPECT_TRUE(keeper->alive());
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("keep/k"));
  EXPECT_TRUE(kv.has_value()) << "the keeper let the lease lapse";
  keeper.reset();
  ASSERT_OK_AND_ASSIGN(kv, s().Get("keep/k"));
  EXPECT_FALSE(kv.has_value()) << "destroying the keeper revokes the lease";
}

TEST_P(StoreContract, KeeperNoticesARevokedLease) {
  std::unique_ptr<LeaseKeeper> keeper;
  ASSERT_OK_AND_ASSIGN(keeper, s().KeepAlive(1s));
  ASSERT_OK(s().RevokeLease(keeper->id()));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (keeper->alive() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(keeper->alive());
}

// --- payloads -------------------------------------------------------------------

TEST_P(StoreContract, LargeValuesRoundTrip) {
  const std::string big = RandomBytes(8u << 20, 42);
  ASSERT_OK(s().Put("big/1", big).status());
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("big/1"));
  ASSERT_TRUE(kv);
  EXPECT_TRUE(kv->value == big) << "8 MiB value corrupted, size " << kv->value.size();

  const std::string big2 = RandomBytes(8u << 20, 43);
  Txn t;
  t.compares.push_back(Compare::Exists("big/1"));
  t.success = {Op::Put("big/2", big2), Op::Get("big/1"), Op::Get("big/2")};
  ASSERT_OK_AND_ASSIGN(TxnResult r, s().Commit(t));
  ASSERT_TRUE(r.succeeded);
  ASSERT_EQ(r.gets.size(), 2u);
  ASSERT_TRUE(r.gets[0] && r.gets[1]);
  EXPECT_TRUE(r.gets[0]->value == big);
  EXPECT_TRUE(r.gets[1]->value == big2);

  ASSERT_OK_AND_ASSIGN(RangeResult rr, s().Range("big/"));
  ASSERT_EQ(rr.kvs.size(), 2u);
  EXPECT_TRUE(rr.kvs[1].value == big2);

  Txn cmp;
  cmp.compares.push_back({"big/2", Compare::Target::kValue, Compare::Op::kEqual, 0, big2});
  ASSERT_OK_AND_ASSIGN(r, s().Commit(cmp));
  EXPECT_TRUE(r.succeeded) << "value compare on a large value";
}

TEST_P(StoreContract, BinaryKeysAndValues) {
  const std::string k1("bin/\0a", 6), k2("bin/\0b", 6), k3("bin/\xff\x00", 6),
      k4("bin/\xff\xff", 6);
  const std::string v("\0\x01\xff\0tail", 8);
  for (const auto& k : {k1, k2, k3, k4}) ASSERT_OK(s().Put(k, v).status());
  ASSERT_OK(s().Put("bin0", "after the prefix").status());
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get(k1));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->value, v);
  EXPECT_EQ(kv->key, k1);

  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range(std::string("bin/\0", 5)));
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, k1);
  EXPECT_EQ(r.kvs[1].key, k2);

  // Prefix ending in 0xff: PrefixEnd must carry.
  ASSERT_OK_AND_ASSIGN(r, s().Range("bin/\xff"));
  ASSERT_EQ(r.kvs.size(), 2u);
  EXPECT_EQ(r.kvs[0].key, k3);
  EXPECT_EQ(r.kvs[1].key, k4);

  ASSERT_OK_AND_ASSIGN(r, s().Range("bin/"));
  ASSERT_EQ(r.kvs.size(), 4u);
  EXPECT_EQ(r.kvs[3].key, k4) << "bytes sort unsigned";

  Txn t;
  t.compares.push_back({k1, Compare::Target::kValue, Compare::Op::kEqual, 0, v});
  t.success.push_back(Op::Delete(k1));
  ASSERT_OK_AND_ASSIGN(TxnResult tr, s().Commit(t));
  EXPECT_TRUE(tr.succeeded);
  EXPECT_EQ(tr.deleted, 1);
}

// --- concurrency ----------------------------------------------------------------

void RaceCas(Store& s, int threads, int rounds) {
  const std::string key = "cas/" + std::to_string(threads);
  ASSERT_OK(s.Put(key, "start").status());
  std::vector<std::atomic<int>> wins(rounds);
  std::atomic<int> errors{0};
  std::barrier sync(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int round = 0; round < rounds; ++round) {
        sync.arrive_and_wait();
        auto kv = s.Get(key);
        sync.arrive_and_wait();  // everyone read the same revision
        if (!kv.ok() || !kv->has_value()) {
          errors++;
          continue;
        }
        Txn txn;
        txn.compares.push_back(Compare::ModRevisionIs(key, (*kv)->mod_revision));
        txn.success.push_back(Op::Put(key, std::to_string(t)));
        auto r = s.Commit(txn);
        if (!r.ok()) {
          errors++;
        } else if (r->succeeded) {
          wins[round]++;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  for (int round = 0; round < rounds; ++round) {
    EXPECT_EQ(wins[round].load(), 1) << "round " << round << " with " << threads << " threads";
  }
}

TEST_P(StoreContract, CompareAndSwapRaceTwoThreads) { RaceCas(s(), 2, 50); }
TEST_P(StoreContract, CompareAndSwapRaceEightThreads) { RaceCas(s(), 8, 30); }

TEST_P(StoreContract, CasCounterReachesExactTotal) {
  constexpr int kThreads = 8, kIncrements = 40;
  std::atomic<int> errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        while (true) {
          auto kv = s().Get("counter");
          if (!kv.ok()) {
            errors++;
            break;
          }
          Txn txn;
          int64_t n = 0;
          if (kv->has_value()) {
            n = std::stoll((*kv)->value);
            txn.compares.push_back(Compare::ModRevisionIs("counter", (*kv)->mod_revision));
          } else {
            txn.compares.push_back(Compare::Missing("counter"));
          }
          txn.success.push_back(Op::Put("counter", std::to_string(n + 1)));
          auto r = s().Commit(txn);
          if (!r.ok()) {
            errors++;
            break;
          }
          if (r->succeeded) break;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_OK_AND_ASSIGN(auto kv, s().Get("counter"));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->value, std::to_string(kThreads * kIncrements));
  EXPECT_EQ(kv->version, kThreads * kIncrements);
}

TEST_P(StoreContract, ConcurrentReadersSeeConsistentSnapshots) {
  // A txn writes two keys with equal values; readers must never see them differ.
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, errors{0};
  ASSERT_OK(s().Put("snap/a", "0").status());
  ASSERT_OK(s().Put("snap/b", "0").status());
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto r = s().Range("snap/");
        if (!r.ok() || r->kvs.size() != 2) {
          errors++;
          continue;
        }
        if (r->kvs[0].value != r->kvs[1].value) torn++;
        if (r->kvs[0].mod_revision > r->revision) torn++;
      }
    });
  }
  for (int i = 1; i <= 200; ++i) {
    Txn t;
    t.success = {Op::Put("snap/a", std::to_string(i)), Op::Put("snap/b", std::to_string(i))};
    ASSERT_OK(s().Commit(t).status());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

// --- the lock -------------------------------------------------------------------

TEST_P(StoreContract, LockGivesMutualExclusion) {
  constexpr int kThreads = 4, kRounds = 15;
  int shared = 0;  // deliberately unsynchronised: the lock is the only guard
  std::atomic<int> inside{0}, overlaps{0}, errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      auto lease = s().GrantLease(60s);
      if (!lease.ok()) {
        errors++;
        return;
      }
      for (int i = 0; i < kRounds; ++i) {
        auto g = Lock(s(), "locks/mx", *lease, 30s);
        if (!g.ok()) {
          ADD_FAILURE() << g.status().ToString();
          errors++;
          return;
        }
        if (inside.fetch_add(1) != 0) overlaps++;
        int v = shared;
        std::this_thread::yield();
        shared = v + 1;
        inside.fetch_sub(1);
        if (!(*g)->Unlock().ok()) errors++;
      }
      (void)s().RevokeLease(*lease);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(shared, kThreads * kRounds);
}

// The store refuses a release for a moment (etcd restarting): the key is
// deleted once it answers again, instead of holding the lock for as long as
// the holder's lease lives.
TEST_P(StoreContract, AReleaseTheStoreRefusesForAMomentIsTriedAgain) {
  class RefusesDeletes : public testing::ForwardingStore {
   public:
    using ForwardingStore::ForwardingStore;
    Result<TxnResult> Commit(const Txn& txn) override {
      for (const auto& op : txn.success) {
        if (op.type == Op::Type::kDelete && refusals_ > 0) {
          --refusals_;
          return Unavailable("store restarting (test)");
        }
      }
      return inner_->Commit(txn);
    }
    std::atomic<int> refusals_{3};
  };
  RefusesDeletes flaky(s());
  ASSERT_OK_AND_ASSIGN(LeaseId a, s().GrantLease(60s));
  ASSERT_OK_AND_ASSIGN(LeaseId b, s().GrantLease(60s));
  {
    std::unique_ptr<LockGuard> held;
    ASSERT_OK_AND_ASSIGN(held, TryLock(flaky, "locks/refused", a));
    ASSERT_OK(held->Unlock());
  }
  EXPECT_EQ(flaky.refusals_, 0);
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("locks/refused/"));
  EXPECT_EQ(r.kvs.size(), 0u) << "the key outlived its release";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LockGuard> next, TryLock(s(), "locks/refused", b));
}

TEST_P(StoreContract, TryLockAndTimeout) {
  ASSERT_OK_AND_ASSIGN(LeaseId a, s().GrantLease(60s));
  ASSERT_OK_AND_ASSIGN(LeaseId b, s().GrantLease(60s));
  std::unique_ptr<LockGuard> held;
  ASSERT_OK_AND_ASSIGN(held, TryLock(s(), "locks/try", a));
  EXPECT_EQ(TryLock(s(), "locks/try", b).status().code(), Code::kConflict);
  EXPECT_EQ(TryLock(s(), "locks/try", a).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(Lock(s(), "locks/try", b, 200ms).status().code(), Code::kUnavailable);
  // A failed attempt leaves no key behind.
  ASSERT_OK_AND_ASSIGN(RangeResult r, s().Range("locks/try/"));
  EXPECT_EQ(r.kvs.size(), 1u);
  const Revision first = held->revision();
  ASSERT_OK(held->Unlock());
  ASSERT_OK_AND_ASSIGN(held, TryLock(s(), "locks/try", b));
  EXPECT_GT(held->revision(), first) << "revision() is a growing fencing token";
  held.reset();
  ASSERT_OK_AND_ASSIGN(r, s().Range("locks/try/"));
  EXPECT_TRUE(r.kvs.empty()) << "the guard's destructor releases";
}

TEST_P(StoreContract, LockIsReleasedWhenTheHoldersLeaseEnds) {
  ASSERT_OK_AND_ASSIGN(LeaseId holder, s().GrantLease(60s));
  ASSERT_OK_AND_ASSIGN(LeaseId waiter, s().GrantLease(60s));
  std::unique_ptr<LockGuard> held;
  ASSERT_OK_AND_ASSIGN(held, Lock(s(), "locks/lease", holder, 5s));

  std::atomic<bool> acquired{false};
  Status waiter_status;
  std::thread t([&] {
    auto g = Lock(s(), "locks/lease", waiter, 30s);
    waiter_status = g.status();
    if (g.ok()) acquired = true;
  });
  // The waiter must be queued (its key present) before the holder goes away.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = s().Range("locks/lease/");
    if (r.ok() && r->kvs.size() == 2) break;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_FALSE(acquired.load());
  ASSERT_OK(s().RevokeLease(holder));
  t.join();
  EXPECT_TRUE(acquired.load()) << waiter_status.ToString();
  EXPECT_EQ(held->Unlock().code(), Code::kNotFound) << "the old holder learns it lost the lock";
}

TEST_P(StoreContract, LockWithExpiringLeaseIsReleased) {
  ASSERT_OK_AND_ASSIGN(LeaseId holder, s().GrantLease(1s));
  ASSERT_OK_AND_ASSIGN(LeaseId waiter, s().GrantLease(60s));
  std::unique_ptr<LockGuard> held;
  ASSERT_OK_AND_ASSIGN(held, Lock(s(), "locks/exp", holder, 5s));
  // Nobody keeps `holder` alive: the waiter gets the lock once it expires.
  auto g = Lock(s(), "locks/exp", waiter, 20s);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(held->Unlock().code(), Code::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract, ::testing::ValuesIn(AllStoreBackends()),
                         [](const ::testing::TestParamInfo<StoreBackend>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace eco::store
