// Durability of the embedded store: every write acknowledged before a
// kill -9 is there after reopening, and the store carries on consistently.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>

#include "process.h"
#include "status_matchers.h"
#include "store/sqlite_store.h"

namespace eco::store {
namespace {

using ::eco::testing::TempDir;

// Write i is a plain put of key(i) for most i, and a two-key txn for every
// third i, so a torn transaction would show up as half a pair.
std::string Key(int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "k/%08lld", static_cast<long long>(i));
  return buf;
}
std::string PairKey(int64_t i, char side) { return Key(i) + "/" + side; }
bool IsTxn(int64_t i) { return i % 3 == 2; }
std::string ValueOf(int64_t i) { return "value-" + std::to_string(i) + std::string(i % 97, 'x'); }

struct Ack {
  int64_t i;
  Revision rev;
};

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Runs in the forked child: writes forever, acknowledging each committed
// write on `fd`, until the parent kills it.
[[noreturn]] void WriterChild(const std::string& dir, int fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto s = OpenSqliteStore({.dir = dir});
  if (!s.ok()) ::_exit(2);
  for (int64_t i = 0;; ++i) {
    Revision rev = 0;
    if (IsTxn(i)) {
      Txn t;
      t.success = {Op::Put(PairKey(i, 'a'), ValueOf(i)), Op::Put(PairKey(i, 'b'), ValueOf(i))};
      auto r = (*s)->Commit(t);
      if (!r.ok()) ::_exit(3);
      rev = r->revision;
    } else {
      auto r = (*s)->Put(Key(i), ValueOf(i));
      if (!r.ok()) ::_exit(3);
      rev = *r;
    }
    Ack a{i, rev};
    if (!WriteAll(fd, &a, sizeof a)) ::_exit(4);
  }
}

TEST(SqliteDurability, AcknowledgedWritesSurviveKill9) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  Revision start = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = dir.path()}));
    ASSERT_OK_AND_ASSIGN(start, s->CurrentRevision());
  }

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    WriterChild(dir.path(), fds[1]);
  }
  ::close(fds[1]);

  // Read acks until enough writes are in, then kill mid-stream; acks already
  // in the pipe are acknowledged writes too.
  constexpr int64_t kKillAfter = 3000;
  std::vector<Ack> acks;
  bool killed = false;
  while (true) {
    Ack a;
    ssize_t n = ::read(fds[0], &a, sizeof a);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) break;
    ASSERT_EQ(n, static_cast<ssize_t>(sizeof a));
    acks.push_back(a);
    if (!killed && a.i + 1 >= kKillAfter) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "child ended on its own, status " << status;
  ASSERT_GE(static_cast<int64_t>(acks.size()), kKillAfter);

  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = dir.path()}));
  ASSERT_OK_AND_ASSIGN(Revision now, s->CurrentRevision());
  Revision prev = start;
  for (const Ack& a : acks) {
    ASSERT_EQ(a.rev, prev + 1) << "each write is exactly one revision";
    prev = a.rev;
    const std::string key = IsTxn(a.i) ? PairKey(a.i, 'a') : Key(a.i);
    ASSERT_OK_AND_ASSIGN(auto kv, s->Get(key));
    ASSERT_TRUE(kv.has_value()) << "acknowledged write " << a.i << " lost";
    EXPECT_EQ(kv->value, ValueOf(a.i));
    EXPECT_EQ(kv->mod_revision, a.rev);
  }
  EXPECT_GE(now, acks.back().rev);
  EXPECT_LE(now, acks.back().rev + 1) << "at most the one unacknowledged write in flight";

  // No torn transaction; keys match the revision counter.
  ASSERT_OK_AND_ASSIGN(RangeResult all, s->Range("k/"));
  std::map<int64_t, int> pair_halves;
  Revision last_mod = 0;
  int64_t last_i = -1;
  for (const auto& kv : all.kvs) {
    int64_t i = std::stoll(kv.key.substr(2, 8));
    if (IsTxn(i)) pair_halves[i]++;
    if (i != last_i) {
      EXPECT_GT(kv.mod_revision, last_mod) << "revisions grow with write order";
      last_mod = kv.mod_revision;
      last_i = i;
    }
    EXPECT_LE(kv.mod_revision, now);
  }
  for (auto [i, halves] : pair_halves) EXPECT_EQ(halves, 2) << "torn txn " << i;

  // And it keeps working from where it was.
  ASSERT_OK_AND_ASSIGN(Revision next, s->Put("after/crash", "ok"));
  EXPECT_EQ(next, now + 1);
}

TEST(SqliteDurability, CleanReopenContinuesRevisions) {
  TempDir dir;
  Revision last = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = dir.path(), .sync_full = true}));
    for (int i = 0; i < 50; ++i) ASSERT_OK(s->Put(Key(i), ValueOf(i)).status());
    ASSERT_OK(s->Put(Key(0), "rewritten").status());
    ASSERT_OK(s->Delete(Key(1)).status());
    ASSERT_OK_AND_ASSIGN(last, s->CurrentRevision());
  }
  ASSERT_OK_AND_ASSIGN(auto s, OpenSqliteStore({.dir = dir.path()}));
  ASSERT_OK_AND_ASSIGN(Revision now, s->CurrentRevision());
  EXPECT_EQ(now, last);
  ASSERT_OK_AND_ASSIGN(auto kv, s->Get(Key(0)));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->value, "rewritten");
  EXPECT_EQ(kv->version, 2);
  ASSERT_OK_AND_ASSIGN(kv, s->Get(Key(1)));
  EXPECT_FALSE(kv);
  RangeOptions count_only;
  count_only.count_only = true;
  ASSERT_OK_AND_ASSIGN(RangeResult r, s->Range("k/", count_only));
  EXPECT_EQ(r.count, 49);
  ASSERT_OK_AND_ASSIGN(Revision next, s->Put("more", "x"));
  EXPECT_EQ(next, last + 1);
  ASSERT_OK_AND_ASSIGN(kv, s->Get(Key(0)));
  ASSERT_TRUE(kv);
  ASSERT_OK(s->Put(Key(0), "again").status());
  ASSERT_OK_AND_ASSIGN(kv, s->Get(Key(0)));
  EXPECT_EQ(kv->version, 3) << "versions continue across a reopen";
}

}  // namespace
}  // namespace eco::store
