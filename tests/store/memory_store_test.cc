// The in-memory store the agent keeps its working copy in: etcd's
// revision and transaction rules, ranges, and a restore that keeps
// revisions (what the agent's reports are ordered by).
#include <gtest/gtest.h>

#include "store/memory_store.h"

namespace eco::store {
namespace {

TEST(MemoryStore, RevisionsVersionsAndDeletesFollowEtcd) {
  auto s = NewMemoryStore();
  EXPECT_EQ(*s->CurrentRevision(), 1);
  EXPECT_EQ(*s->Put("a", "1"), 2);
  EXPECT_EQ(*s->Put("a", "2"), 3);
  auto kv = s->Get("a");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->create_revision, 2);
  EXPECT_EQ((*kv)->mod_revision, 3);
  EXPECT_EQ((*kv)->version, 2);
  EXPECT_EQ(*s->Delete("missing"), 0);
  EXPECT_EQ(*s->CurrentRevision(), 3);  // nothing changed, no revision
  EXPECT_EQ(*s->Delete("a"), 1);
  EXPECT_EQ(*s->CurrentRevision(), 4);
  EXPECT_FALSE(s->Put("", "x").ok());
  EXPECT_FALSE(s->Watch("p/", 0, {}).ok());
}

TEST(MemoryStore, TransactionsCompareAndApplyOneBranch) {
  auto s = NewMemoryStore();
  ASSERT_TRUE(s->Put("k", "v").ok());
  Txn t;
  t.compares.push_back(Compare::Missing("k"));
  t.success.push_back(Op::Put("x", "won"));
  t.failure.push_back(Op::Get("k"));
  auto r = s->Commit(t);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->succeeded);
  ASSERT_EQ(r->gets.size(), 1u);
  EXPECT_EQ(r->gets[0]->value, "v");
  EXPECT_FALSE(s->Get("x")->has_value());

  Txn t2;
  t2.compares.push_back(Compare::Exists("k"));
  t2.compares.push_back({"k", Compare::Target::kValue, Compare::Op::kEqual, 0, "v"});
  t2.success.push_back(Op::Put("x", "1"));
  t2.success.push_back(Op::Put("y", "2"));
  auto r2 = s->Commit(t2);
  ASSERT_TRUE(r2.ok() && r2->succeeded);
  // One transaction, one revision for all its writes.
  EXPECT_EQ((*s->Get("x"))->mod_revision, (*s->Get("y"))->mod_revision);
  Txn bad;
  bad.success.push_back(Op::Put("z", "1"));
  bad.success.push_back(Op::Put("z", "2"));
  EXPECT_FALSE(s->Commit(bad).ok());
}

TEST(MemoryStore, RangesPaginateAndPrefixDeletesCount) {
  auto s = NewMemoryStore();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->Put("p/" + std::to_string(i), "v").ok());
  ASSERT_TRUE(s->Put("q/0", "v").ok());
  RangeOptions ro;
  ro.limit = 4;
  auto r = s->Range("p/", ro);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kvs.size(), 4u);
  EXPECT_TRUE(r->more);
  EXPECT_EQ(r->count, 10);
  ro.after = r->kvs.back().key;
  auto r2 = s->Range("p/", ro);
  EXPECT_EQ(r2->kvs.front().key, "p/4");
  EXPECT_EQ(*s->DeletePrefix("p/"), 10);
  EXPECT_EQ(s->Range("")->kvs.size(), 1u);
}

TEST(MemoryStore, RestoreKeepsRevisions) {
  auto s = NewMemoryStore();
  ASSERT_TRUE(s->Put("a", "1").ok());
  ASSERT_TRUE(s->Put("b", "2").ok());
  ASSERT_TRUE(s->Put("a", "3").ok());
  auto all = s->Range("");
  auto back = NewMemoryStore(all->kvs, all->revision);
  EXPECT_EQ(*back->CurrentRevision(), *s->CurrentRevision());
  auto a = back->Get("a");
  EXPECT_EQ((*a)->value, "3");
  EXPECT_EQ((*a)->mod_revision, (*s->Get("a"))->mod_revision);
  EXPECT_EQ((*a)->version, 2);
  // The next write lands after every restored one.
  EXPECT_GT(*back->Put("c", "x"), (*a)->mod_revision);
}

// The owner hears of every write that moved the revision, after the
// store's lock is released (it may read the store from the callback), and
// of nothing else.
TEST(MemoryStore, WritesAreToldReadsAndNoOpsAreNot) {
  int told = 0;
  Revision seen = 0;
  std::unique_ptr<Store> s;
  s = NewMemoryStore([&] {
    ++told;
    seen = *s->CurrentRevision();
  });
  ASSERT_TRUE(s->Put("a", "1").ok());
  EXPECT_EQ(told, 1);
  EXPECT_EQ(seen, 2);
  (void)s->Get("a");
  (void)s->Range("");
  EXPECT_EQ(*s->Delete("missing"), 0);
  EXPECT_EQ(*s->DeletePrefix("zz/"), 0);
  Txn reads;
  reads.success.push_back(Op::Get("a"));
  ASSERT_TRUE(s->Commit(reads).ok());
  EXPECT_EQ(told, 1);
  Txn two;
  two.success.push_back(Op::Put("b", "2"));
  two.success.push_back(Op::Put("c", "3"));
  ASSERT_TRUE(s->Commit(two).ok());
  EXPECT_EQ(told, 2);
  EXPECT_EQ(*s->DeletePrefix("b"), 1);
  EXPECT_EQ(*s->Delete("c"), 1);
  EXPECT_EQ(told, 4);
  EXPECT_EQ(seen, *s->CurrentRevision());
  auto all = s->Range("");
  int restored_told = 0;
  auto back = NewMemoryStore(all->kvs, all->revision, [&] { ++restored_told; });
  EXPECT_EQ(restored_told, 0);  // restoring is not a write
  ASSERT_TRUE(back->Put("d", "4").ok());
  EXPECT_EQ(restored_told, 1);
}

}  // namespace
}  // namespace eco::store
