// SQLite backend of the Store interface.
//
// Layout of dir/eco.db:
//   meta(k, v)       "revision": last committed revision (starts at 1, like a
//                    fresh etcd); "compacted": highest revision dropped from
//                    the event log.
//   kv               current value of every key with its revisions; the value
//                    is the last column so that scans that skip it never touch
//                    its overflow pages.
//   leases(id, ttl, deadline)  deadline is the wall-clock ms at grant (for
//                    people reading the file; expiry runs on the monotonic
//                    time of SqliteOptions::clock).
//   events           one row per changed key per revision, (rev, seq) ordered,
//                    so a watch can replay from any revision not yet compacted.
//
// Concurrency: one writer connection behind `write_mu_` (every write is one
// SQLite transaction and at most one revision), a small pool of reader
// connections (WAL lets them read a consistent snapshot while the writer
// writes), a dispatcher thread for watches and a reaper thread for leases.
// Lock order: write_mu_ -> lease_mu_ -> hub_.mu -> Watcher::mu.
#include "store/sqlite_store.h"

#include "store/txn_rules.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

namespace eco::store {
namespace {

using std::chrono::milliseconds;

// Recent revisions kept in memory so live watchers never touch the database.
constexpr size_t kRingMaxBatches = 10000;
constexpr size_t kRingMaxBytes = 64u << 20;
// A watcher replaying from the log reads at most this much per turn, so one
// far-behind watcher neither hogs memory nor starves the others.
constexpr Revision kReplayMaxRevisions = 512;
constexpr size_t kReplayMaxBytes = 32u << 20;
// Ring batches handed to one watcher per dispatcher turn.
constexpr size_t kMaxBatchesPerTurn = 256;
constexpr int kMaxReaders = 8;
constexpr Revision kMaxCompactStep = 10000;
// WAL size (pages) that wakes the background checkpointer; SQLite's own
// auto-checkpoint would make an unlucky writer pay for it (copy + fsyncs).
constexpr int kCheckpointPages = 1000;

// ---------------------------------------------------------------------------
// SQL

enum Sql : int {
  kBegin,
  kBeginImmediate,
  kCommit,
  kRollback,
  kMetaGet,
  kMetaSet,
  kKvGet,
  kKvHead,
  kKvUpsert,
  kKvDelete,
  kKvRangeFull,
  kKvRangeFullOpen,
  kKvRangeKeys,
  kKvRangeKeysOpen,
  kKvCount,
  kKvCountOpen,
  kKvDeleteRange,
  kKvDeleteRangeOpen,
  kKvByLease,
  kEventInsert,
  kEventRead,
  kEventCompact,
  kLeaseInsert,
  kLeaseDelete,
  kLeaseAll,
  kNumSql,
};

// Indexed by Sql. Keys are always bound as BLOBs so they compare like memcmp,
// which is etcd's key order.
constexpr std::array<const char*, kNumSql> kSqlText = {
    "BEGIN",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "SELECT v FROM meta WHERE k = ?1",
    "UPDATE meta SET v = ?2 WHERE k = ?1",
    "SELECT create_rev, mod_rev, version, lease, value FROM kv WHERE key = ?1",
    "SELECT create_rev, mod_rev, version, lease FROM kv WHERE key = ?1",
    "INSERT INTO kv(key, create_rev, mod_rev, version, lease, value) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT(key) DO UPDATE SET mod_rev = excluded.mod_rev, version = excluded.version, "
    "lease = excluded.lease, value = excluded.value",
    "DELETE FROM kv WHERE key = ?1",
    "SELECT key, create_rev, mod_rev, version, lease, value FROM kv "
    "WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
    "SELECT key, create_rev, mod_rev, version, lease, value FROM kv "
    "WHERE key >= ?1 ORDER BY key LIMIT ?3",
    "SELECT key, create_rev, mod_rev, version, lease FROM kv "
    "WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3",
    "SELECT key, create_rev, mod_rev, version, lease FROM kv "
    "WHERE key >= ?1 ORDER BY key LIMIT ?3",
    "SELECT count(*) FROM kv WHERE key >= ?1 AND key < ?2",
    "SELECT count(*) FROM kv WHERE key >= ?1",
    "DELETE FROM kv WHERE key >= ?1 AND key < ?2",
    "DELETE FROM kv WHERE key >= ?1",
    // The `lease != 0` term lets the planner use the partial index.
    "SELECT key FROM kv WHERE lease = ?1 AND lease != 0 ORDER BY key",
    "INSERT INTO events(rev, seq, type, key, create_rev, mod_rev, version, lease, value) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    "SELECT rev, type, key, create_rev, mod_rev, version, lease, value FROM events "
    "WHERE rev >= ?1 AND rev < ?2 ORDER BY rev, seq",
    "DELETE FROM events WHERE rev <= ?1",
    "INSERT INTO leases(id, ttl, deadline) VALUES(?1, ?2, ?3)",
    "DELETE FROM leases WHERE id = ?1",
    "SELECT id, ttl FROM leases",
};
static_assert(kSqlText[kNumSql - 1] != nullptr, "kSqlText must have one entry per Sql id");

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(k, v) VALUES('revision', 1), ('compacted', 0);
CREATE TABLE IF NOT EXISTS kv(
  key BLOB NOT NULL PRIMARY KEY,
  create_rev INTEGER NOT NULL,
  mod_rev INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  value BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS kv_lease ON kv(lease) WHERE lease != 0;
CREATE TABLE IF NOT EXISTS leases(
  id INTEGER PRIMARY KEY,
  ttl INTEGER NOT NULL,
  deadline INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events(
  rev INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type INTEGER NOT NULL,
  key BLOB NOT NULL,
  create_rev INTEGER NOT NULL,
  mod_rev INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY(rev, seq));
PRAGMA user_version = 1;
)sql";

Status SqlError(sqlite3* db, int rc, std::string_view what) {
  std::string m = "sqlite: ";
  m += what;
  m += ": ";
  m += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return Unavailable(std::move(m));
    default:
      return Internal(std::move(m));
  }
}

// One SQLite connection with every statement prepared once.
class Conn {
 public:
  explicit Conn(sqlite3* db) : db_(db) {}
  ~Conn() {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  enum class Role { kWriter, kReader, kCheckpointer };

  static Result<std::unique_ptr<Conn>> Open(const std::string& path, Role role, bool sync_full) {
    sqlite3* raw = nullptr;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    auto conn = std::make_unique<Conn>(raw);  // owns `raw` even when open failed
    if (rc != SQLITE_OK) return SqlError(raw, rc, "open " + path);
    sqlite3_extended_result_codes(raw, 1);
    // The writer holds the process-wide write mutex, so waiting on SQLite
    // locks only happens against checkpoints; keep it bounded anyway.
    ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA busy_timeout = 10000"));
    ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA temp_store = MEMORY"));
    ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA mmap_size = 268435456"));
    if (role == Role::kWriter) {
      ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA journal_mode = WAL"));
      // Readers beside the writer need WAL; some file systems cannot do it.
      std::string mode;
      ECO_RETURN_IF_ERROR(conn->Query("PRAGMA journal_mode", &mode));
      if (mode != "wal")
        return Unavailable("sqlite: WAL mode unavailable (journal_mode=" + mode + ")");
      // NORMAL in WAL mode: a commit is a write() to the WAL, so it survives
      // the process dying; FULL adds an fsync per commit for power loss.
      ECO_RETURN_IF_ERROR(
          conn->Exec(sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
      // Chart-sized values can balloon the WAL; shrink it back after checkpoints.
      ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA journal_size_limit = 67108864"));
      ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA wal_autocheckpoint = 0"));
      ECO_RETURN_IF_ERROR(conn->Exec(kSchema));
    } else if (role == Role::kReader) {
      ECO_RETURN_IF_ERROR(conn->Exec("PRAGMA query_only = 1"));
    } else {
      // The checkpointer syncs like the writer would have.
      ECO_RETURN_IF_ERROR(
          conn->Exec(sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"));
    }
    for (int i = 0; i < kNumSql; ++i) {
      rc = sqlite3_prepare_v3(raw, kSqlText[i], -1, SQLITE_PREPARE_PERSISTENT, &conn->stmts_[i],
                              nullptr);
      if (rc != SQLITE_OK) return SqlError(raw, rc, std::string("prepare ") + kSqlText[i]);
    }
    return conn;
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) return SqlError(db_, rc, sql);
    return Status::Ok();
  }

  // First column of the first row of `sql`, as text.
  Status Query(const char* sql, std::string* out) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    if (rc != SQLITE_OK) return SqlError(db_, rc, sql);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      *out = t != nullptr ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqlError(db_, rc, sql);
    return Status::Ok();
  }

  sqlite3_stmt* stmt(Sql id) const { return stmts_[id]; }
  sqlite3* raw() const { return db_; }
  bool in_txn() const { return sqlite3_get_autocommit(db_) == 0; }

 private:
  sqlite3* db_;
  std::array<sqlite3_stmt*, kNumSql> stmts_{};
};

// Binds, steps and reads one cached statement; resets it when done so the
// next user finds it clean (and no binding points at freed memory).
class Stmt {
 public:
  Stmt(const Conn& c, Sql id) : s_(c.stmt(id)), id_(id) {}
  ~Stmt() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // The bytes must outlive the statement (SQLITE_STATIC avoids a copy of
  // multi-MiB values).
  Stmt& Blob(int i, std::string_view v) {
    // A zero-length bind with a null pointer would be NULL, not an empty blob.
    Note(v.empty() ? sqlite3_bind_zeroblob(s_, i, 0)
                   : sqlite3_bind_blob64(s_, i, v.data(), v.size(), SQLITE_STATIC));
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    Note(sqlite3_bind_int64(s_, i, v));
    return *this;
  }
  Stmt& Text(int i, const char* v) {
    Note(sqlite3_bind_text(s_, i, v, -1, SQLITE_STATIC));
    return *this;
  }

  // true = a row is ready, false = done.
  Result<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return SqlError(nullptr, bind_rc_, Where());
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqlError(sqlite3_db_handle(s_), rc, Where());
  }
  Status Run() {
    auto r = Step();
    return r.ok() ? Status::Ok() : r.status();
  }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::string_view View(int col) const {
    const void* p = sqlite3_column_blob(s_, col);
    int n = sqlite3_column_bytes(s_, col);
    if (p == nullptr || n <= 0) return {};
    return {static_cast<const char*>(p), static_cast<size_t>(n)};
  }
  std::string Blob(int col) const { return std::string(View(col)); }

 private:
  void Note(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }
  std::string Where() const { return std::string("step ") + kSqlText[id_]; }

  sqlite3_stmt* s_;
  Sql id_;
  int bind_rc_ = SQLITE_OK;
};

Result<int64_t> ReadMeta(const Conn& c, const char* key) {
  Stmt q(c, kMetaGet);
  q.Text(1, key);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Internal(std::string("meta row missing: ") + key);
  return q.Int(0);
}

Status WriteMeta(const Conn& c, const char* key, int64_t v) {
  Stmt q(c, kMetaSet);
  q.Text(1, key).Int(2, v);
  return q.Run();
}

// A transaction on one connection, rolled back unless committed.
class SqlTxn {
 public:
  explicit SqlTxn(const Conn& c) : c_(c) {}
  ~SqlTxn() {
    if (c_.in_txn()) (void)Stmt(c_, kRollback).Run();
  }
  SqlTxn(const SqlTxn&) = delete;
  SqlTxn& operator=(const SqlTxn&) = delete;

  Status Begin(bool immediate) { return Stmt(c_, immediate ? kBeginImmediate : kBegin).Run(); }
  Status Commit() { return Stmt(c_, kCommit).Run(); }

 private:
  const Conn& c_;
};

// Reader connections, opened on demand up to a cap and reused.
class ReaderPool {
 public:
  class Handle {
   public:
    Handle(ReaderPool* pool, std::unique_ptr<Conn> c) : pool_(pool), c_(std::move(c)) {}
    Handle(Handle&& o) noexcept : pool_(o.pool_), c_(std::move(o.c_)) {}
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (c_) pool_->Release(std::move(c_));
    }
    const Conn& operator*() const { return *c_; }

   private:
    ReaderPool* pool_;
    std::unique_ptr<Conn> c_;
  };

  explicit ReaderPool(std::string path) : path_(std::move(path)) {}

  Result<Handle> Acquire() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !idle_.empty() || open_ < kMaxReaders; });
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Handle(this, std::move(c));
    }
    ++open_;
    lk.unlock();
    auto c = Conn::Open(path_, Conn::Role::kReader, /*sync_full=*/false);
    if (!c.ok()) {
      lk.lock();
      --open_;
      cv_.notify_one();
      return c.status();
    }
    return Handle(this, std::move(*c));
  }

 private:
  void Release(std::unique_ptr<Conn> c) {
    {
      std::lock_guard lk(mu_);
      idle_.push_back(std::move(c));
    }
    cv_.notify_one();
  }

  const std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;  // guarded by mu_
  int open_ = 0;                             // guarded by mu_; idle + lent
};

// ---------------------------------------------------------------------------
// Small helpers

struct Head {  // the numeric part of a key's row; zeros when missing
  Revision create_revision = 0;
  Revision mod_revision = 0;
  int64_t version = 0;
  LeaseId lease = 0;
};

Result<std::optional<Head>> ReadHead(const Conn& c, const std::string& key) {
  Stmt q(c, kKvHead);
  q.Blob(1, key);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<Head>();
  return std::optional<Head>(Head{q.Int(0), q.Int(1), q.Int(2), q.Int(3)});
}

Result<std::optional<KeyValue>> ReadKv(const Conn& c, const std::string& key) {
  Stmt q(c, kKvGet);
  q.Blob(1, key);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<KeyValue>();
  KeyValue kv;
  kv.key = key;
  kv.create_revision = q.Int(0);
  kv.mod_revision = q.Int(1);
  kv.version = q.Int(2);
  kv.lease = q.Int(3);
  kv.value = q.Blob(4);
  return std::optional<KeyValue>(std::move(kv));
}

int Sign(int64_t a, int64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

Status CompactedError(Revision from, Revision compacted) {
  return NotFound("watch from revision " + std::to_string(from) +
                  ": revision has been compacted (oldest available is " +
                  std::to_string(compacted + 1) + ")");
}

int64_t WallMs(const Clock& clock) {
  return std::chrono::duration_cast<milliseconds>(clock.WallNow().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------
// Watch plumbing

// All events of one revision.
struct Batch {
  Revision rev = 0;
  std::vector<WatchEvent> events;
  size_t bytes = 0;
};

struct Watcher {
  Watcher(std::string p, WatchCallbacks c, std::thread::id d)
      : prefix(std::move(p)), cb(std::move(c)), dispatcher(d) {}

  const std::string prefix;
  const WatchCallbacks cb;
  const std::thread::id dispatcher;

  // Guarded by Engine::hub_.mu (and only advanced by the dispatcher).
  Revision next = 0;
  std::optional<Status> pending_error;
  bool finished = false;

  // The cancel handshake: no callback starts once `cancelled` is set, and
  // the handle waits for one in flight to return.
  std::mutex mu;
  std::condition_variable cv;
  bool cancelled = false;    // guarded by mu
  bool in_callback = false;  // guarded by mu

  bool Cancelled() {
    std::lock_guard lk(mu);
    return cancelled;
  }
  template <typename F>
  bool Call(F&& f) {
    {
      std::lock_guard lk(mu);
      if (cancelled) return false;
      in_callback = true;
    }
    f();
    {
      std::lock_guard lk(mu);
      in_callback = false;
    }
    cv.notify_all();
    return true;
  }
};

// An exclusive flock on a file, held for the object's life.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  Status Acquire(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Unavailable("open " + path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      return Unavailable(path + " is held by another store");
    return Status::Ok();
  }

 private:
  int fd_ = -1;
};

struct LeaseState {
  std::chrono::seconds ttl;
  Clock::Time deadline;
};

// Collected by one write; becomes the revision's batch on commit.
struct WriteCtx {
  Revision rev = 0;  // the revision this write gets if it changes a key
  std::vector<WatchEvent> events;
  bool dirty = false;  // a non-key table changed (leases): commit, no new revision
  std::vector<std::function<void()>> on_commit;  // run under write_mu_ after COMMIT
};

// ---------------------------------------------------------------------------
// The engine: everything behind the Store facade. Shared so that watch
// handles and lease keepers can outlive the Store safely.

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  explicit Engine(SqliteOptions opts, std::string db_path)
      : opts_(std::move(opts)), clock_(*opts_.clock), readers_(std::move(db_path)) {}
  ~Engine() { Shutdown(); }

  Status Init(const std::string& db_path);
  void Start();
  void Shutdown();

  Result<std::optional<KeyValue>> Get(const std::string& key);
  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease);
  Result<int64_t> Delete(const std::string& key);
  Result<int64_t> DeletePrefix(const std::string& prefix);
  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts);
  Result<TxnResult> Commit(const Txn& txn);
  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision from,
                                             WatchCallbacks cb);
  Result<LeaseId> GrantLease(std::chrono::seconds ttl);
  Status KeepAliveOnce(LeaseId id);
  Status RevokeLease(LeaseId id) { return Revoke(id, /*only_if_expired=*/false); }
  Revision CurrentRevision() const { return current_.load(std::memory_order_acquire); }
  Clock& clock() const { return clock_; }

  void NudgeDispatcher() { hub_.cv.notify_all(); }

 private:
  template <typename Body>
  Status RunWrite(Body&& body, Revision* rev_out);
  Status DoPut(WriteCtx& ctx, const std::string& key, const std::string& value, LeaseId lease);
  Status DoDelete(WriteCtx& ctx, const std::string& key, int64_t* deleted);
  Status DoDeletePrefix(WriteCtx& ctx, const std::string& prefix, int64_t* deleted);
  Status LogEvent(WriteCtx& ctx, const WatchEvent& ev);
  Result<bool> Evaluate(const Compare& c);
  Status Revoke(LeaseId id, bool only_if_expired);
  void MaybeCompact();
  void Publish(Revision rev, std::vector<WatchEvent> events);

  void DispatchLoop();
  void Deliver(Watcher& w, const Batch& b);
  // Replays one chunk of the event log; returns the next revision to read.
  Result<Revision> Replay(Watcher& w, Revision from);
  void ReapLoop();
  void CheckpointLoop();
  // Runs on the writer after each commit, with write_mu_ held.
  static int WalHook(void* self, sqlite3* db, const char* name, int pages);

  const SqliteOptions opts_;
  Clock& clock_;
  // One store per directory, across processes too: the in-memory revision
  // and leases assume nobody else writes. Declared first so it is released
  // only after every connection has closed.
  FileLock dir_lock_;

  std::mutex write_mu_;
  std::unique_ptr<Conn> writer_;      // guarded by write_mu_
  Revision rev_ = 0;                  // guarded by write_mu_; last committed revision
  Revision compacted_ = 0;            // guarded by write_mu_
  std::atomic<bool> closed_{false};   // set under write_mu_
  std::atomic<Revision> current_{0};  // rev_, readable without the mutex

  ReaderPool readers_;

  std::mutex lease_mu_;
  std::condition_variable lease_cv_;
  std::unordered_map<LeaseId, LeaseState> leases_;  // guarded by lease_mu_
  bool reaper_stop_ = false;                        // guarded by lease_mu_
  uint64_t lease_grants_ = 0;                       // guarded by lease_mu_; wakes the reaper

  struct Hub {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<const Batch>> ring;  // consecutive revisions
    size_t ring_bytes = 0;
    Revision published = 0;  // every revision <= this is in the log and was offered to the ring
    Revision compacted = 0;
    std::vector<std::shared_ptr<Watcher>> watchers;
    bool stop = false;
  } hub_;

  std::mutex ckpt_mu_;
  std::condition_variable ckpt_cv_;
  int wal_pages_ = 0;                        // guarded by ckpt_mu_
  bool ckpt_stop_ = false;                   // guarded by ckpt_mu_
  std::unique_ptr<Conn> checkpointer_conn_;  // used only by checkpointer_

  std::thread dispatcher_;
  std::thread::id dispatcher_id_;  // constant after Start()
  std::thread reaper_;
  std::thread checkpointer_;
};

Status Engine::Init(const std::string& db_path) {
  std::error_code ec;
  std::filesystem::create_directories(opts_.dir, ec);
  if (ec) return Unavailable("create store directory " + opts_.dir + ": " + ec.message());
  ECO_RETURN_IF_ERROR(dir_lock_.Acquire(opts_.dir + "/LOCK"));

  auto w = Conn::Open(db_path, Conn::Role::kWriter, opts_.sync_full);
  if (!w.ok()) return w.status();
  writer_ = std::move(*w);
  auto ck = Conn::Open(db_path, Conn::Role::kCheckpointer, opts_.sync_full);
  if (!ck.ok()) return ck.status();
  checkpointer_conn_ = std::move(*ck);
  sqlite3_wal_hook(writer_->raw(), &Engine::WalHook, this);

  auto rev = ReadMeta(*writer_, "revision");
  if (!rev.ok()) return rev.status();
  auto compacted = ReadMeta(*writer_, "compacted");
  if (!compacted.ok()) return compacted.status();
  rev_ = *rev;
  compacted_ = *compacted;
  current_.store(rev_);
  hub_.published = rev_;
  hub_.compacted = compacted_;

  // Leases restart their full TTL: nobody could keep them alive while the
  // process was down (etcd likewise refreshes leases on a leader change).
  Stmt q(*writer_, kLeaseAll);
  auto now = clock_.Now();
  while (true) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    std::chrono::seconds ttl(q.Int(1));
    leases_[q.Int(0)] = LeaseState{ttl, now + ttl};
  }
  return Status::Ok();
}

void Engine::Start() {
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  dispatcher_id_ = dispatcher_.get_id();
  reaper_ = std::thread([this] { ReapLoop(); });
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
}

void Engine::Shutdown() {
  {
    std::lock_guard lk(lease_mu_);
    reaper_stop_ = true;
  }
  lease_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard lk(ckpt_mu_);
    ckpt_stop_ = true;
  }
  ckpt_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  {
    std::lock_guard lk(hub_.mu);
    hub_.stop = true;
  }
  hub_.cv.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
  std::lock_guard lk(write_mu_);
  closed_ = true;
}

// --- writes ----------------------------------------------------------------

// Runs `body` in one SQLite transaction under the write mutex; a body that
// changed keys makes exactly one new revision.
template <typename Body>
Status Engine::RunWrite(Body&& body, Revision* rev_out) {
  std::lock_guard lk(write_mu_);
  if (closed_.load()) return Unavailable("store is closed");
  SqlTxn txn(*writer_);
  ECO_RETURN_IF_ERROR(txn.Begin(/*immediate=*/true));
  WriteCtx ctx;
  ctx.rev = rev_ + 1;
  ECO_RETURN_IF_ERROR(body(ctx));
  if (ctx.events.empty() && !ctx.dirty) {
    if (rev_out != nullptr) *rev_out = rev_;
    return Status::Ok();  // nothing changed; SqlTxn rolls back the read-only txn
  }
  const bool bump = !ctx.events.empty();
  if (bump) ECO_RETURN_IF_ERROR(WriteMeta(*writer_, "revision", ctx.rev));
  ECO_RETURN_IF_ERROR(txn.Commit());
  for (auto& f : ctx.on_commit) f();
  if (bump) {
    rev_ = ctx.rev;
    current_.store(rev_, std::memory_order_release);
    Publish(rev_, std::move(ctx.events));
    MaybeCompact();
  }
  if (rev_out != nullptr) *rev_out = rev_;
  return Status::Ok();
}

Status Engine::LogEvent(WriteCtx& ctx, const WatchEvent& ev) {
  Stmt q(*writer_, kEventInsert);
  q.Int(1, ctx.rev)
      .Int(2, static_cast<int64_t>(ctx.events.size()))
      .Int(3, ev.type == WatchEvent::Type::kPut ? 0 : 1)
      .Blob(4, ev.kv.key)
      .Int(5, ev.kv.create_revision)
      .Int(6, ev.kv.mod_revision)
      .Int(7, ev.kv.version)
      .Int(8, ev.kv.lease)
      .Blob(9, ev.kv.value);
  return q.Run();
}

Status Engine::DoPut(WriteCtx& ctx, const std::string& key, const std::string& value,
                     LeaseId lease) {
  if (key.empty()) return Invalid("put: key must not be empty");
  if (lease != 0) {
    std::lock_guard lk(lease_mu_);
    if (leases_.count(lease) == 0)
      return NotFound("put: lease " + std::to_string(lease) + " not found");
  }
  auto head = ReadHead(*writer_, key);
  if (!head.ok()) return head.status();
  WatchEvent ev;
  ev.type = WatchEvent::Type::kPut;
  ev.kv.key = key;
  ev.kv.create_revision = *head ? (*head)->create_revision : ctx.rev;
  ev.kv.mod_revision = ctx.rev;
  ev.kv.version = *head ? (*head)->version + 1 : 1;
  ev.kv.lease = lease;
  {
    Stmt q(*writer_, kKvUpsert);
    q.Blob(1, key)
        .Int(2, ev.kv.create_revision)
        .Int(3, ev.kv.mod_revision)
        .Int(4, ev.kv.version)
        .Int(5, lease)
        .Blob(6, value);
    ECO_RETURN_IF_ERROR(q.Run());
  }
  ev.kv.value = value;
  ECO_RETURN_IF_ERROR(LogEvent(ctx, ev));
  ctx.events.push_back(std::move(ev));
  return Status::Ok();
}

Status Engine::DoDelete(WriteCtx& ctx, const std::string& key, int64_t* deleted) {
  if (key.empty()) return Invalid("delete: key must not be empty");
  auto head = ReadHead(*writer_, key);
  if (!head.ok()) return head.status();
  if (!*head) return Status::Ok();  // deleting nothing is not a write
  {
    Stmt q(*writer_, kKvDelete);
    q.Blob(1, key);
    ECO_RETURN_IF_ERROR(q.Run());
  }
  WatchEvent ev;
  ev.type = WatchEvent::Type::kDelete;
  ev.kv.key = key;
  ev.kv.mod_revision = ctx.rev;
  ECO_RETURN_IF_ERROR(LogEvent(ctx, ev));
  ctx.events.push_back(std::move(ev));
  ++*deleted;
  return Status::Ok();
}

Status Engine::DoDeletePrefix(WriteCtx& ctx, const std::string& prefix, int64_t* deleted) {
  const std::string end = PrefixEnd(prefix);
  std::vector<std::string> keys;
  {
    Stmt q(*writer_, end.empty() ? kKvRangeKeysOpen : kKvRangeKeys);
    q.Blob(1, prefix).Int(3, -1);
    if (!end.empty()) q.Blob(2, end);
    while (true) {
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      keys.push_back(q.Blob(0));
    }
  }
  if (keys.empty()) return Status::Ok();
  {
    Stmt q(*writer_, end.empty() ? kKvDeleteRangeOpen : kKvDeleteRange);
    q.Blob(1, prefix);
    if (!end.empty()) q.Blob(2, end);
    ECO_RETURN_IF_ERROR(q.Run());
  }
  for (auto& k : keys) {
    WatchEvent ev;
    ev.type = WatchEvent::Type::kDelete;
    ev.kv.key = std::move(k);
    ev.kv.mod_revision = ctx.rev;
    ECO_RETURN_IF_ERROR(LogEvent(ctx, ev));
    ctx.events.push_back(std::move(ev));
  }
  *deleted += static_cast<int64_t>(keys.size());
  return Status::Ok();
}

Result<Revision> Engine::Put(const std::string& key, const std::string& value, LeaseId lease) {
  Revision rev = 0;
  ECO_RETURN_IF_ERROR(RunWrite([&](WriteCtx& ctx) { return DoPut(ctx, key, value, lease); }, &rev));
  return rev;
}

Result<int64_t> Engine::Delete(const std::string& key) {
  int64_t deleted = 0;
  ECO_RETURN_IF_ERROR(
      RunWrite([&](WriteCtx& ctx) { return DoDelete(ctx, key, &deleted); }, nullptr));
  return deleted;
}

Result<int64_t> Engine::DeletePrefix(const std::string& prefix) {
  int64_t deleted = 0;
  ECO_RETURN_IF_ERROR(
      RunWrite([&](WriteCtx& ctx) { return DoDeletePrefix(ctx, prefix, &deleted); }, nullptr));
  return deleted;
}

// Evaluated inside the write transaction, so it sees the committed state
// plus nothing else (compares run before any op of the txn).
Result<bool> Engine::Evaluate(const Compare& c) {
  if (c.key.empty()) return Invalid("txn: compare key must not be empty");
  if (c.target == Compare::Target::kValue) {
    auto kv = ReadKv(*writer_, c.key);
    if (!kv.ok()) return kv.status();
    // A missing key compares as an empty value (store.h).
    static const std::string kEmpty;
    const std::string& v = *kv ? (*kv)->value : kEmpty;
    int cmp = v.compare(c.value);
    return CompareHolds(c.op, cmp < 0 ? -1 : (cmp > 0 ? 1 : 0));
  }
  auto head = ReadHead(*writer_, c.key);
  if (!head.ok()) return head.status();
  Head h = head->value_or(Head{});
  int64_t lhs = 0;
  switch (c.target) {
    case Compare::Target::kModRevision:
      lhs = h.mod_revision;
      break;
    case Compare::Target::kCreateRevision:
      lhs = h.create_revision;
      break;
    case Compare::Target::kVersion:
      lhs = h.version;
      break;
    case Compare::Target::kValue:
      break;
  }
  return CompareHolds(c.op, Sign(lhs, c.number));
}

Result<TxnResult> Engine::Commit(const Txn& txn) {
  ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.success));
  ECO_RETURN_IF_ERROR(ValidateTxnBranch(txn.failure));
  TxnResult res;
  auto body = [&](WriteCtx& ctx) -> Status {
    res.succeeded = true;
    for (const Compare& c : txn.compares) {
      auto holds = Evaluate(c);
      if (!holds.ok()) return holds.status();
      if (!*holds) {
        res.succeeded = false;
        break;
      }
    }
    for (const Op& op : res.succeeded ? txn.success : txn.failure) {
      switch (op.type) {
        case Op::Type::kPut:
          ECO_RETURN_IF_ERROR(DoPut(ctx, op.key, op.value, op.lease));
          break;
        case Op::Type::kDelete:
          ECO_RETURN_IF_ERROR(DoDelete(ctx, op.key, &res.deleted));
          break;
        case Op::Type::kDeletePrefix:
          ECO_RETURN_IF_ERROR(DoDeletePrefix(ctx, op.key, &res.deleted));
          break;
        case Op::Type::kGet: {
          auto kv = ReadKv(*writer_, op.key);
          if (!kv.ok()) return kv.status();
          res.gets.push_back(std::move(*kv));
          break;
        }
      }
    }
    return Status::Ok();
  };
  ECO_RETURN_IF_ERROR(RunWrite(body, &res.revision));
  return res;
}

// Keeps the log at `keep_revisions`, trimming in steps after a commit so no
// single write pays for a large delete.
void Engine::MaybeCompact() {
  const Revision keep = opts_.keep_revisions;
  if (keep <= 0) return;
  const Revision slack = std::clamp<Revision>(keep / 10, 1, 1000);
  if (rev_ - keep < compacted_ + slack) return;
  const Revision target = std::min(rev_ - keep, compacted_ + kMaxCompactStep);
  SqlTxn txn(*writer_);
  if (!txn.Begin(/*immediate=*/true).ok()) return;
  {
    Stmt q(*writer_, kEventCompact);
    q.Int(1, target);
    if (!q.Run().ok()) return;
  }
  if (!WriteMeta(*writer_, "compacted", target).ok()) return;
  if (!txn.Commit().ok()) return;  // retried after the next write
  compacted_ = target;
  std::lock_guard lk(hub_.mu);
  hub_.compacted = target;
}

// --- reads -----------------------------------------------------------------

Result<std::optional<KeyValue>> Engine::Get(const std::string& key) {
  if (key.empty()) return Invalid("get: key must not be empty");
  auto conn = readers_.Acquire();
  if (!conn.ok()) return conn.status();
  return ReadKv(**conn, key);
}

Result<RangeResult> Engine::Range(const std::string& prefix, const RangeOptions& opts) {
  if (opts.limit < 0) return Invalid("range: limit must not be negative");
  // key > after  <=>  key >= after + "\0"
  std::string lo = prefix;
  if (!opts.after.empty()) {
    std::string next = opts.after;
    next.push_back('\0');
    if (next > lo) lo = std::move(next);
  }
  const std::string hi = PrefixEnd(prefix);
  const bool open = hi.empty();

  auto conn = readers_.Acquire();
  if (!conn.ok()) return conn.status();
  const Conn& c = **conn;
  SqlTxn txn(c);  // one snapshot for the rows, the count and the revision
  ECO_RETURN_IF_ERROR(txn.Begin(/*immediate=*/false));

  RangeResult out;
  auto rev = ReadMeta(c, "revision");
  if (!rev.ok()) return rev.status();
  out.revision = *rev;

  auto count = [&]() -> Result<int64_t> {
    Stmt q(c, open ? kKvCountOpen : kKvCount);
    q.Blob(1, lo);
    if (!open) q.Blob(2, hi);
    auto row = q.Step();
    if (!row.ok()) return row.status();
    return *row ? q.Int(0) : 0;
  };

  if (opts.count_only) {
    auto n = count();
    if (!n.ok()) return n.status();
    out.count = *n;
    return out;
  }

  Sql id = opts.keys_only ? (open ? kKvRangeKeysOpen : kKvRangeKeys)
                          : (open ? kKvRangeFullOpen : kKvRangeFull);
  {
    Stmt q(c, id);
    q.Blob(1, lo).Int(3, opts.limit > 0 ? opts.limit + 1 : -1);
    if (!open) q.Blob(2, hi);
    while (true) {
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      if (opts.limit > 0 && static_cast<int64_t>(out.kvs.size()) == opts.limit) {
        out.more = true;
        break;
      }
      KeyValue kv;
      kv.key = q.Blob(0);
      kv.create_revision = q.Int(1);
      kv.mod_revision = q.Int(2);
      kv.version = q.Int(3);
      kv.lease = q.Int(4);
      if (!opts.keys_only) kv.value = q.Blob(5);
      out.kvs.push_back(std::move(kv));
    }
  }
  if (out.more) {
    auto n = count();
    if (!n.ok()) return n.status();
    out.count = *n;
  } else {
    out.count = static_cast<int64_t>(out.kvs.size());
  }
  return out;
}

// --- leases ----------------------------------------------------------------

Result<LeaseId> Engine::GrantLease(std::chrono::seconds ttl) {
  if (ttl.count() <= 0) return Invalid("lease TTL must be positive");
  LeaseId id = 0;
  {
    std::lock_guard lk(lease_mu_);
    do {
      id = static_cast<LeaseId>(opts_.random->Next() & 0x7fffffffffffffffULL);
    } while (id == 0 || leases_.count(id) != 0);
  }
  auto body = [&](WriteCtx& ctx) -> Status {
    Stmt q(*writer_, kLeaseInsert);
    q.Int(1, id).Int(2, ttl.count()).Int(3, WallMs(clock_) + ttl.count() * 1000);
    ECO_RETURN_IF_ERROR(q.Run());
    ctx.dirty = true;
    ctx.on_commit.emplace_back([this, id, ttl] {
      std::lock_guard lk(lease_mu_);
      leases_[id] = LeaseState{ttl, clock_.Now() + ttl};
      ++lease_grants_;
    });
    return Status::Ok();
  };
  ECO_RETURN_IF_ERROR(RunWrite(body, nullptr));
  lease_cv_.notify_all();
  return id;
}

Status Engine::KeepAliveOnce(LeaseId id) {
  if (closed_.load()) return Unavailable("store is closed");
  std::lock_guard lk(lease_mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) return NotFound("lease " + std::to_string(id) + " not found");
  const auto now = clock_.Now();
  // Like etcd, a lease past its deadline stays dead even before the reaper
  // gets to it: whatever it guarded may already be someone else's.
  if (it->second.deadline <= now) return NotFound("lease " + std::to_string(id) + " expired");
  it->second.deadline = now + it->second.ttl;
  return Status::Ok();
}

Status Engine::Revoke(LeaseId id, bool only_if_expired) {
  auto body = [&](WriteCtx& ctx) -> Status {
    {
      std::lock_guard lk(lease_mu_);
      auto it = leases_.find(id);
      if (it == leases_.end()) return NotFound("lease " + std::to_string(id) + " not found");
      // The reaper decided without the write lock; a keep-alive may have won.
      if (only_if_expired && it->second.deadline > clock_.Now()) return Status::Ok();
    }
    std::vector<std::string> keys;
    {
      Stmt q(*writer_, kKvByLease);
      q.Int(1, id);
      while (true) {
        auto row = q.Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        keys.push_back(q.Blob(0));
      }
    }
    int64_t deleted = 0;
    for (const auto& k : keys) ECO_RETURN_IF_ERROR(DoDelete(ctx, k, &deleted));
    {
      Stmt q(*writer_, kLeaseDelete);
      q.Int(1, id);
      ECO_RETURN_IF_ERROR(q.Run());
    }
    ctx.dirty = true;
    ctx.on_commit.emplace_back([this, id] {
      std::lock_guard lk(lease_mu_);
      leases_.erase(id);
    });
    return Status::Ok();
  };
  return RunWrite(body, nullptr);
}

void Engine::ReapLoop() {
  std::unique_lock lk(lease_mu_);
  while (!reaper_stop_) {
    const auto now = clock_.Now();
    auto wake = now + std::chrono::seconds(1);
    std::vector<LeaseId> expired;
    for (const auto& [id, l] : leases_) {
      if (l.deadline <= now) {
        expired.push_back(id);
      } else {
        wake = std::min(wake, l.deadline);
      }
    }
    if (expired.empty()) {
      // A new lease may expire before `wake`: its grant ends the wait.
      const uint64_t grants = lease_grants_;
      clock_.WaitUntil(lease_cv_, lk, wake,
                       [&] { return reaper_stop_ || lease_grants_ != grants; });
      continue;
    }
    lk.unlock();
    bool failed = false;
    for (LeaseId id : expired) {
      Status st = Revoke(id, /*only_if_expired=*/true);
      if (!st.ok() && st.code() != Code::kNotFound) failed = true;
    }
    lk.lock();
    // Don't spin on a store that keeps failing; the next pass retries.
    if (failed) clock_.WaitFor(lease_cv_, lk, milliseconds(200), [&] { return reaper_stop_; });
  }
}

int Engine::WalHook(void* self, sqlite3*, const char*, int pages) {
  if (pages >= kCheckpointPages) {
    auto* e = static_cast<Engine*>(self);
    {
      std::lock_guard lk(e->ckpt_mu_);
      e->wal_pages_ = pages;
    }
    e->ckpt_cv_.notify_one();
  }
  return SQLITE_OK;
}

// PASSIVE checkpoints never block the writer or readers; the writer restarts
// the WAL from the top once a checkpoint has caught up.
void Engine::CheckpointLoop() {
  std::unique_lock lk(ckpt_mu_);
  while (true) {
    ckpt_cv_.wait(lk, [&] { return ckpt_stop_ || wal_pages_ >= kCheckpointPages; });
    if (ckpt_stop_) return;
    wal_pages_ = 0;
    lk.unlock();
    (void)sqlite3_wal_checkpoint_v2(checkpointer_conn_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                    nullptr, nullptr);
    lk.lock();
    // A checkpoint held back by a long reader must not turn into a spin.
    ckpt_cv_.wait_for(lk, milliseconds(20), [&] { return ckpt_stop_; });
  }
}

// --- watches ---------------------------------------------------------------

class SqliteWatchHandle final : public WatchHandle {
 public:
  SqliteWatchHandle(std::shared_ptr<Watcher> w, std::weak_ptr<Engine> e)
      : w_(std::move(w)), engine_(std::move(e)) {}
  ~SqliteWatchHandle() override {
    {
      std::unique_lock lk(w_->mu);
      w_->cancelled = true;
      // From inside its own callback the call in flight is ours: don't wait.
      if (std::this_thread::get_id() != w_->dispatcher) {
        w_->cv.wait(lk, [&] { return !w_->in_callback; });
      }
    }
    if (auto e = engine_.lock()) e->NudgeDispatcher();  // drop it from the list soon
  }

 private:
  std::shared_ptr<Watcher> w_;
  std::weak_ptr<Engine> engine_;
};

void Engine::Publish(Revision rev, std::vector<WatchEvent> events) {
  auto b = std::make_shared<Batch>();
  b->rev = rev;
  for (const auto& e : events) b->bytes += e.kv.key.size() + e.kv.value.size() + 64;
  b->events = std::move(events);
  {
    std::lock_guard lk(hub_.mu);
    hub_.ring_bytes += b->bytes;
    hub_.ring.push_back(std::move(b));
    hub_.published = rev;
    // Watchers that fall behind the ring catch up from the log.
    while (hub_.ring.size() > 1 &&
           (hub_.ring.size() > kRingMaxBatches || hub_.ring_bytes > kRingMaxBytes)) {
      hub_.ring_bytes -= hub_.ring.front()->bytes;
      hub_.ring.pop_front();
    }
  }
  hub_.cv.notify_all();
}

Result<std::unique_ptr<WatchHandle>> Engine::Watch(const std::string& prefix, Revision from,
                                                   WatchCallbacks cb) {
  if (!cb.on_events) return Invalid("watch: on_events callback is required");
  if (from < 0) return Invalid("watch: negative start revision");
  auto w = std::make_shared<Watcher>(prefix, std::move(cb), dispatcher_id_);
  {
    std::lock_guard lk(hub_.mu);
    if (hub_.stop) return Unavailable("store is closed");
    if (from == 0) {
      w->next = hub_.published + 1;
    } else {
      w->next = from;
      if (from <= hub_.compacted) w->pending_error = CompactedError(from, hub_.compacted);
    }
    hub_.watchers.push_back(w);
  }
  hub_.cv.notify_all();
  return std::unique_ptr<WatchHandle>(
      std::make_unique<SqliteWatchHandle>(std::move(w), weak_from_this()));
}

void Engine::Deliver(Watcher& w, const Batch& b) {
  bool all = true;
  for (const auto& e : b.events) {
    if (!e.kv.key.starts_with(w.prefix)) {
      all = false;
      break;
    }
  }
  if (all) {
    w.Call([&] { w.cb.on_events(b.events); });
    return;
  }
  std::vector<WatchEvent> mine;
  for (const auto& e : b.events) {
    if (e.kv.key.starts_with(w.prefix)) mine.push_back(e);
  }
  if (!mine.empty()) w.Call([&] { w.cb.on_events(mine); });
}

Result<Revision> Engine::Replay(Watcher& w, Revision from) {
  std::vector<Batch> batches;
  Revision next = from;
  {
    auto conn = readers_.Acquire();
    if (!conn.ok()) return conn.status();
    const Conn& c = **conn;
    SqlTxn txn(c);
    ECO_RETURN_IF_ERROR(txn.Begin(/*immediate=*/false));
    auto compacted = ReadMeta(c, "compacted");
    if (!compacted.ok()) return compacted.status();
    if (from <= *compacted) return CompactedError(from, *compacted);
    auto rev = ReadMeta(c, "revision");
    if (!rev.ok()) return rev.status();
    const Revision end = std::min(from + kReplayMaxRevisions, *rev + 1);
    next = end;
    Stmt q(c, kEventRead);
    q.Int(1, from).Int(2, end);
    size_t bytes = 0;
    Revision cur = 0;
    while (true) {
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      const Revision r = q.Int(0);
      if (r != cur) {
        // Stop at a revision boundary once the chunk is big enough.
        if (bytes > kReplayMaxBytes) {
          next = r;
          break;
        }
        cur = r;
      }
      std::string_view key = q.View(2);
      if (!key.starts_with(w.prefix)) continue;
      if (batches.empty() || batches.back().rev != r) batches.push_back(Batch{r, {}, 0});
      WatchEvent ev;
      ev.type = q.Int(1) == 0 ? WatchEvent::Type::kPut : WatchEvent::Type::kDelete;
      ev.kv.key = std::string(key);
      ev.kv.create_revision = q.Int(3);
      ev.kv.mod_revision = q.Int(4);
      ev.kv.version = q.Int(5);
      ev.kv.lease = q.Int(6);
      ev.kv.value = q.Blob(7);
      bytes += ev.kv.key.size() + ev.kv.value.size();
      batches.back().events.push_back(std::move(ev));
    }
  }
  // Callbacks run with no connection held: they may read the store.
  for (const auto& b : batches) Deliver(w, b);
  return next;
}

void Engine::DispatchLoop() {
  struct Job {
    std::shared_ptr<Watcher> w;
    std::vector<std::shared_ptr<const Batch>> batches;
    Revision replay_from = 0;  // > 0: read from the log instead
    std::optional<Status> error;
  };
  std::unique_lock lk(hub_.mu);
  while (!hub_.stop) {
    std::erase_if(hub_.watchers, [](const auto& w) { return w->finished || w->Cancelled(); });
    const Revision ring_first = hub_.ring.empty() ? hub_.published + 1 : hub_.ring.front()->rev;
    std::vector<Job> jobs;
    for (const auto& w : hub_.watchers) {
      if (w->pending_error) {
        w->finished = true;
        jobs.push_back(Job{w, {}, 0, std::move(w->pending_error)});
        w->pending_error.reset();
        continue;
      }
      if (w->next > hub_.published) continue;
      if (w->next < ring_first) {
        jobs.push_back(Job{w, {}, w->next, std::nullopt});
        continue;
      }
      Job j{w, {}, 0, std::nullopt};
      for (size_t i = static_cast<size_t>(w->next - ring_first);
           i < hub_.ring.size() && j.batches.size() < kMaxBatchesPerTurn; ++i) {
        j.batches.push_back(hub_.ring[i]);
      }
      w->next = j.batches.back()->rev + 1;
      jobs.push_back(std::move(j));
    }
    if (jobs.empty()) {
      hub_.cv.wait_for(lk, std::chrono::seconds(1));
      continue;
    }
    lk.unlock();
    for (auto& j : jobs) {
      if (j.error) {
        j.w->Call([&] {
          if (j.w->cb.on_error) j.w->cb.on_error(*j.error);
        });
      } else if (j.replay_from > 0) {
        auto next = Replay(*j.w, j.replay_from);
        std::lock_guard g(hub_.mu);
        if (next.ok()) {
          j.w->next = std::max(j.w->next, *next);
        } else {
          j.w->pending_error = next.status();
        }
      } else {
        for (const auto& b : j.batches) {
          if (j.w->Cancelled()) break;
          Deliver(*j.w, *b);
        }
      }
    }
    lk.lock();
  }
  // Closing: tell every live watcher that no more events will come.
  auto watchers = std::move(hub_.watchers);
  lk.unlock();
  for (const auto& w : watchers) {
    if (w->finished) continue;
    w->Call([&] {
      if (w->cb.on_error) w->cb.on_error(Unavailable("store is closed"));
    });
  }
}

// --- the Store facade --------------------------------------------------------

class SqliteLeaseKeeper final : public LeaseKeeper {
 public:
  SqliteLeaseKeeper(std::weak_ptr<Engine> e, Clock& clock, LeaseId id, std::chrono::seconds ttl)
      : engine_(std::move(e)), clock_(clock), id_(id), ttl_(ttl) {
    thread_ = std::thread([this] { Run(); });
  }
  ~SqliteLeaseKeeper() override {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (auto e = engine_.lock()) (void)e->RevokeLease(id_);
  }
  LeaseId id() const override { return id_; }
  bool alive() const override { return alive_.load(); }

 private:
  void Run() {
    // A third of the TTL leaves two more tries before the lease can lapse.
    const auto interval = std::max<milliseconds>(std::chrono::duration_cast<milliseconds>(ttl_) / 3,
                                                 milliseconds(50));
    std::unique_lock lk(mu_);
    while (!clock_.WaitFor(cv_, lk, interval, [&] { return stop_; })) {
      auto e = engine_.lock();
      if (!e) {
        alive_ = false;
        return;
      }
      if (e->KeepAliveOnce(id_).code() == Code::kNotFound) {
        alive_ = false;
        return;
      }
    }
  }

  const std::weak_ptr<Engine> engine_;
  Clock& clock_;
  const LeaseId id_;
  const std::chrono::seconds ttl_;
  std::atomic<bool> alive_{true};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::shared_ptr<Engine> e) : e_(std::move(e)) {}
  ~SqliteStore() override { e_->Shutdown(); }

  Result<std::optional<KeyValue>> Get(const std::string& key) override { return e_->Get(key); }
  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease) override {
    return e_->Put(key, value, lease);
  }
  Result<int64_t> Delete(const std::string& key) override { return e_->Delete(key); }
  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    return e_->DeletePrefix(prefix);
  }
  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts) override {
    return e_->Range(prefix, opts);
  }
  Result<TxnResult> Commit(const Txn& txn) override { return e_->Commit(txn); }
  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision from_revision,
                                             WatchCallbacks callbacks) override {
    return e_->Watch(prefix, from_revision, std::move(callbacks));
  }
  Result<LeaseId> GrantLease(std::chrono::seconds ttl) override { return e_->GrantLease(ttl); }
  Status KeepAliveOnce(LeaseId id) override { return e_->KeepAliveOnce(id); }
  Status RevokeLease(LeaseId id) override { return e_->RevokeLease(id); }
  Result<std::unique_ptr<LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override {
    auto id = e_->GrantLease(ttl);
    if (!id.ok()) return id.status();
    return std::unique_ptr<LeaseKeeper>(
        std::make_unique<SqliteLeaseKeeper>(e_, e_->clock(), *id, ttl));
  }
  Result<Revision> CurrentRevision() override { return e_->CurrentRevision(); }
  std::string Backend() const override { return "sqlite"; }

 private:
  std::shared_ptr<Engine> e_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const SqliteOptions& opts) {
  if (opts.dir.empty()) return Invalid("sqlite store: empty directory");
  if (opts.keep_revisions < 0) return Invalid("sqlite store: keep_revisions must be >= 0");
  if (!opts.clock || !opts.random)
    return Invalid("sqlite store: a clock and a random source are required");
  std::string db_path = opts.dir + "/eco.db";
  auto engine = std::make_shared<Engine>(opts, db_path);
  Status st = engine->Init(db_path);
  if (!st.ok()) return st.Annotate("open sqlite store in " + opts.dir);
  engine->Start();
  return std::unique_ptr<Store>(std::make_unique<SqliteStore>(std::move(engine)));
}

}  // namespace eco::store
