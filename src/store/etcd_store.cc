// etcd v3 backend. See etcd_store.h for the key layout; the notes here are
// about how the operations keep that layout consistent.
//
// Large values. A value above inline_value_max (or one a transaction spills
// to stay under etcd's request limit) is written as chunks under a fresh
// random nonce first, one request per chunk, and only then is the small
// reference record written at the key, in the caller's own operation. The
// nonce is never reused, so exactly one key version ever points at a blob.
// That makes clean-up simple: when a put or delete returns a previous value
// that was a reference (prev_kv), that blob is deleted. A collector running
// concurrently (DeletePrefix's sweep, CollectGarbage) may delete a blob that a
// writer has not referenced yet; the writer's transaction guards against
// that by comparing the first chunk's create_revision with the one it wrote,
// and starts over with a new blob if it changed. Blob chunks carry the
// value's lease, so an expiring lease takes the blob with the key.
//
// Value comparisons. etcd compares stored bytes and fails every value compare
// on a missing key, while the Store contract compares the caller's value and
// treats a missing key as "". So transactions with value compares read those
// keys first, evaluate the compares here on the resolved values, and commit
// guarded by "these keys still have the mod_revision I read" (a nested etcd
// transaction, so a lost guard is told apart from the caller's compares
// failing, and the whole thing is retried).
#include "store/etcd_store.h"

#include "store/txn_rules.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "etcd/rpc.grpc.pb.h"

namespace eco::store {
namespace {

namespace pb = etcdserverpb;
// RPC deadlines: gRPC measures them on the machine's clock.
using RpcClock = std::chrono::steady_clock;
using TimePoint = RpcClock::time_point;
using std::chrono::milliseconds;

// A transaction is retried at most this often when its guards lose to
// concurrent writers.
constexpr int kMaxTxnAttempts = 8;
// Reads are redone at the newest revision when the revision they resolved a
// blob at has been compacted away meanwhile.
constexpr int kMaxReadAttempts = 4;
// Keys listed per request by the garbage sweep.
constexpr int64_t kSweepPageSize = 1000;

// ---- Value encoding ---------------------------------------------------------

// Stored values starting with this marker are ours: the next byte says what
// follows. NUL first, so it is rare in text and never a valid protobuf.
constexpr char kMarkerBytes[] = {'\0', '\xEC', 'r', 'e', 'f'};
constexpr std::string_view kMarker(kMarkerBytes, sizeof kMarkerBytes);
constexpr char kTagEscaped = 'E';    // marker, tag, then the caller's value verbatim
constexpr char kTagReference = 'R';  // marker, tag, then a BlobRef in text

struct BlobRef {
  std::string nonce;  // 32 hex digits, unique per written value
  uint64_t size = 0;
  uint64_t chunk_size = 0;
  uint64_t chunks = 0;
};

std::string EncodeInline(std::string_view v) {
  if (!v.starts_with(kMarker)) return std::string(v);
  std::string s(kMarker);
  s += kTagEscaped;
  s += v;
  return s;
}

std::string EncodeRef(const BlobRef& r) {
  std::string s(kMarker);
  s += kTagReference;
  // Versioned, so the format can evolve.
  s += "1 " + r.nonce + " " + std::to_string(r.size) + " " + std::to_string(r.chunk_size) + " " +
       std::to_string(r.chunks);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<BlobRef> ParseRef(std::string_view s) {
  std::vector<std::string_view> parts;
  while (!s.empty()) {
    auto sp = s.find(' ');
    parts.push_back(s.substr(0, sp));
    if (sp == std::string_view::npos) break;
    s.remove_prefix(sp + 1);
  }
  if (parts.size() != 5 || parts[0] != "1" || parts[1].size() != 32) return std::nullopt;
  BlobRef r;
  r.nonce = std::string(parts[1]);
  if (!ParseU64(parts[2], &r.size) || !ParseU64(parts[3], &r.chunk_size) ||
      !ParseU64(parts[4], &r.chunks) || r.chunk_size == 0) {
    return std::nullopt;
  }
  return r;
}

// A stored value, decoded: either the caller's bytes or a blob reference.
struct Stored {
  std::optional<BlobRef> ref;
  std::string value;  // when !ref
};

Result<Stored> Decode(const std::string& key, std::string stored) {
  if (!std::string_view(stored).starts_with(kMarker)) {
    return Stored{std::nullopt, std::move(stored)};
  }
  if (stored.size() > kMarker.size()) {
    char tag = stored[kMarker.size()];
    std::string_view body = std::string_view(stored).substr(kMarker.size() + 1);
    if (tag == kTagEscaped) return Stored{std::nullopt, std::string(body)};
    if (tag == kTagReference) {
      if (auto r = ParseRef(body)) return Stored{std::move(r), {}};
    }
  }
  return Internal("etcd store: value of key '" + key + "' has a malformed internal record");
}

std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view s) {
  if (s.size() % 2) return std::nullopt;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); i += 2) {
    int hi = nib(s[i]), lo = nib(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// gRPC takes deadlines on the system clock only.
std::chrono::system_clock::time_point ToSystem(TimePoint t) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(t - RpcClock::now());
}

// ---- Cancellation -----------------------------------------------------------

// Lets a handle's destructor interrupt whatever its background thread is
// doing: the RPCs in flight and any back-off sleep.
class Canceller {
 public:
  // False when already cancelled; the caller must not start the RPC.
  bool Register(grpc::ClientContext* ctx) {
    std::lock_guard lock(mu_);
    if (cancelled_) return false;
    active_.insert(ctx);
    return true;
  }
  void Unregister(grpc::ClientContext* ctx) {
    std::lock_guard lock(mu_);
    active_.erase(ctx);
  }
  void Cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    for (auto* ctx : active_) ctx->TryCancel();
    cv_.notify_all();
  }
  bool cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  // Sleeps on `clock` unless cancelled first; returns false when cancelled.
  bool SleepFor(Clock& clock, milliseconds d) {
    std::unique_lock lock(mu_);
    return !clock.WaitFor(cv_, lock, d, [&] { return cancelled_; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;                 // guarded by mu_
  std::set<grpc::ClientContext*> active_;  // guarded by mu_
};

// Sleeps on `c` when there is one, else plainly. False when cancelled.
// A back-off between RPCs, measured against an RPC deadline: real time.
bool Sleep(Canceller* c, milliseconds d) {
  if (c) return c->SleepFor(RealClock(), d);
  RealClock().SleepFor(d);
  return true;
}

// ---- Connection -------------------------------------------------------------

struct Endpoint {
  std::string target;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Watch::Stub> watch;
  std::unique_ptr<pb::Lease::Stub> lease;
};

bool IsCompacted(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::OUT_OF_RANGE &&
         s.error_message().find("compacted") != std::string::npos;
}

// Transient: the request can be sent again, to this or another member.
bool IsTransient(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return true;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return s.error_message().find("too many requests") != std::string::npos;
    default:
      return false;
  }
}

Status FromGrpc(const grpc::Status& s, std::string_view what, const std::string& target) {
  std::string m = "etcd " + std::string(what) + " (" + target + "): " + s.error_message();
  const std::string& msg = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return {};
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::ABORTED:
      return Unavailable(std::move(m));
    case grpc::StatusCode::NOT_FOUND:
      return NotFound(std::move(m));
    case grpc::StatusCode::INVALID_ARGUMENT:
      if (msg.find("too large") != std::string::npos) return TooLarge(std::move(m));
      return Invalid(std::move(m));
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      if (msg.find("too many requests") != std::string::npos) return Unavailable(std::move(m));
      return TooLarge(std::move(m));  // e.g. the backend quota ("database space exceeded")
    case grpc::StatusCode::OUT_OF_RANGE:
      return NotFound(std::move(m));  // compacted or future revision: that history is not there
    default:
      return Internal(std::move(m));
  }
}

// Everything a store, its watches and its lease keepers share; those may
// outlive the store object, so they hold it by shared_ptr. Thread-safe.
class Core {
 public:
  explicit Core(EtcdOptions opts)
      : opts_(std::move(opts)),
        data_root_(opts_.key_prefix + "k/"),
        blob_root_(opts_.key_prefix + "b/") {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);  // ranges over large values
    args.SetMaxSendMessageSize(-1);     // etcd enforces its own limit
    // Reconnect fast after an etcd restart rather than gRPC's default 1 s..120 s.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // gRPC's name for the connect timeout of one attempt.
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(opts_.dial_timeout.count()));
    // Detect half-open connections under long watches; etcd allows pings >= 5 s.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (!opts_.ca_pem.empty()) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = opts_.ca_pem;
      ssl.pem_cert_chain = opts_.cert_pem;
      ssl.pem_private_key = opts_.key_pem;
      creds = grpc::SslCredentials(ssl);
    }
    for (const auto& t : opts_.endpoints) {
      Endpoint ep;
      ep.target = t;
      ep.channel = grpc::CreateCustomChannel(t, creds, args);
      ep.kv = pb::KV::NewStub(ep.channel);
      ep.watch = pb::Watch::NewStub(ep.channel);
      ep.lease = pb::Lease::NewStub(ep.channel);
      eps_.push_back(std::move(ep));
    }
    for (size_t i = 0; i < eps_.size(); ++i) endpoint_list_ += (i ? "," : "") + eps_[i].target;
  }

  const EtcdOptions& opts() const { return opts_; }
  Clock& clock() const { return *opts_.clock; }
  const std::string& endpoint_list() const { return endpoint_list_; }

  // ---- layout ----
  std::string DataKey(std::string_view k) const { return data_root_ + std::string(k); }
  std::string CallerKey(const std::string& data_key) const {
    return data_key.substr(std::min(data_key.size(), data_root_.size()));
  }
  const std::string& data_root() const { return data_root_; }
  const std::string& blob_root() const { return blob_root_; }
  std::string BlobOwnerPrefix(std::string_view caller_key_prefix) const {
    return blob_root_ + Hex(caller_key_prefix);
  }
  std::string BlobPrefix(std::string_view key, std::string_view nonce) const {
    return BlobOwnerPrefix(key) + "/" + std::string(nonce) + "/";
  }
  std::string ChunkKey(std::string_view key, std::string_view nonce, uint64_t i) const {
    char idx[17];
    std::snprintf(idx, sizeof idx, "%08llx", static_cast<unsigned long long>(i));
    return BlobPrefix(key, nonce) + idx;
  }
  // Splits a chunk key into (caller key, nonce); nullopt when not ours.
  std::optional<std::pair<std::string, std::string>> ParseChunkKey(std::string_view k) const {
    if (!k.starts_with(blob_root_)) return std::nullopt;
    k.remove_prefix(blob_root_.size());
    // <hex key> "/" <32 hex nonce> "/" <8 hex index>
    if (k.size() < 1 + 32 + 1 + 8 || k[k.size() - 9] != '/' || k[k.size() - 42] != '/') {
      return std::nullopt;
    }
    auto owner = Unhex(k.substr(0, k.size() - 42));
    std::string_view nonce = k.substr(k.size() - 41, 32);
    if (!owner || !Unhex(nonce)) return std::nullopt;
    return std::make_pair(std::move(*owner), std::string(nonce));
  }

  // 8 hex digits of Unix seconds (the blob's age, for the collector's grace
  // period), then 24 random ones.
  std::string Nonce() {
    auto secs =
        std::chrono::duration_cast<std::chrono::seconds>(opts_.clock->WallNow().time_since_epoch())
            .count();
    const uint64_t r1 = opts_.random->Next(), r2 = opts_.random->Next();
    char buf[33];
    std::snprintf(buf, sizeof buf, "%08llx%016llx%08llx",
                  static_cast<unsigned long long>(secs) & 0xffffffffULL,
                  static_cast<unsigned long long>(r1),
                  static_cast<unsigned long long>(r2) & 0xffffffffULL);
    return buf;
  }
  // When a blob was written, from its nonce.
  static std::optional<int64_t> NonceSeconds(std::string_view nonce) {
    uint64_t secs = 0;
    auto [p, ec] = std::from_chars(nonce.data(), nonce.data() + 8, secs, 16);
    if (ec != std::errc() || p != nonce.data() + 8) return std::nullopt;
    return static_cast<int64_t>(secs);
  }

  TimePoint CallDeadline() const { return RpcClock::now() + opts_.call_timeout; }

  // A connected endpoint, preferring the one that worked last; waits up to
  // dial_timeout (and `deadline`) for one to connect. Null when none did.
  Endpoint* Pick(TimePoint deadline, Canceller* c) {
    const TimePoint limit = std::min(deadline, RpcClock::now() + opts_.dial_timeout);
    for (;;) {
      const size_t start = current_.load();
      for (size_t i = 0; i < eps_.size(); ++i) {
        size_t idx = (start + i) % eps_.size();
        // `true` makes an idle channel start connecting.
        if (eps_[idx].channel->GetState(true) == GRPC_CHANNEL_READY) {
          current_.store(idx);
          return &eps_[idx];
        }
      }
      if (RpcClock::now() >= limit || (c && c->cancelled())) return nullptr;
      // A channel with no call in flight is not polled, so its connection
      // attempt would stall: waiting on its state polls it.
      for (size_t i = 0; i < eps_.size(); ++i) {
        auto& ch = eps_[(start + i) % eps_.size()].channel;
        TimePoint until = std::min(limit, RpcClock::now() + milliseconds(20));
        ch->WaitForStateChange(ch->GetState(false), ToSystem(until));
      }
    }
  }

  // Moves the preference away from an endpoint that just failed.
  void Failed(const Endpoint* ep) {
    size_t idx = static_cast<size_t>(ep - eps_.data());
    size_t expected = idx;
    current_.compare_exchange_strong(expected, (idx + 1) % eps_.size());
  }

  // Runs `fn(endpoint, context)` against a connected member. Idempotent calls
  // are retried on transient errors, on the next member, until the deadline;
  // others are not, since a lost reply may hide an applied write.
  template <typename Fn>
  Status Call(std::string_view what, bool idempotent, Fn&& fn, Canceller* c = nullptr,
              TimePoint deadline = TimePoint::min(), grpc::Status* raw = nullptr) {
    if (deadline == TimePoint::min()) deadline = CallDeadline();
    milliseconds backoff(25);
    for (;;) {
      Endpoint* ep = Pick(deadline, c);
      if (!ep) {
        if (c && c->cancelled()) return Unavailable("etcd " + std::string(what) + ": cancelled");
        return Unavailable("etcd " + std::string(what) + ": no endpoint reachable among " +
                           endpoint_list_);
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(ToSystem(deadline));
      if (c && !c->Register(&ctx)) return Unavailable("etcd " + std::string(what) + ": cancelled");
      grpc::Status s = fn(*ep, &ctx);
      if (c) c->Unregister(&ctx);
      if (raw) *raw = s;
      if (s.ok()) return {};
      bool transient = IsTransient(s);
      if (transient) Failed(ep);
      if (!transient || !idempotent || RpcClock::now() + backoff >= deadline ||
          !Sleep(c, backoff)) {
        return FromGrpc(s, what, ep->target);
      }
      backoff = std::min(backoff * 2, milliseconds(500));
    }
  }

  Result<pb::RangeResponse> Range(const pb::RangeRequest& req, Canceller* c = nullptr,
                                  bool* compacted = nullptr) {
    pb::RangeResponse resp;
    grpc::Status raw;
    Status s = Call(
        "range", true,
        [&](Endpoint& ep, grpc::ClientContext* ctx) { return ep.kv->Range(ctx, req, &resp); }, c,
        TimePoint::min(), &raw);
    if (compacted) *compacted = IsCompacted(raw);
    if (!s.ok()) return s;
    return resp;
  }

  Result<pb::PutResponse> Put(const pb::PutRequest& req, bool idempotent) {
    pb::PutResponse resp;
    Status s = Call("put", idempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
      return ep.kv->Put(ctx, req, &resp);
    });
    if (!s.ok()) return s;
    return resp;
  }

  Result<pb::DeleteRangeResponse> DeleteRange(const pb::DeleteRangeRequest& req, bool idempotent) {
    pb::DeleteRangeResponse resp;
    Status s = Call("delete", idempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
      return ep.kv->DeleteRange(ctx, req, &resp);
    });
    if (!s.ok()) return s;
    return resp;
  }

  Result<pb::TxnResponse> Txn(const pb::TxnRequest& req, bool idempotent) {
    pb::TxnResponse resp;
    Status s = Call("txn", idempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
      return ep.kv->Txn(ctx, req, &resp);
    });
    if (!s.ok()) return s;
    return resp;
  }

  // One keep-alive round trip; NotFound once etcd reports the lease gone.
  Status KeepAliveOnce(LeaseId id, Canceller* c = nullptr) {
    int64_t ttl = 0;
    Status s = Call(
        "lease keep-alive", true,
        [&](Endpoint& ep, grpc::ClientContext* ctx) {
          auto stream = ep.lease->LeaseKeepAlive(ctx);
          pb::LeaseKeepAliveRequest req;
          req.set_id(id);
          pb::LeaseKeepAliveResponse resp;
          if (!stream->Write(req) || !stream->Read(&resp)) {
            ctx->TryCancel();
            grpc::Status st = stream->Finish();
            return st.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream closed")
                           : st;
          }
          ttl = resp.ttl();
          stream->WritesDone();
          (void)stream->Finish();  // the answer is in; how the stream ends does not matter
          return grpc::Status::OK;
        },
        c);
    if (!s.ok()) return s;
    if (ttl <= 0) return NotFound("etcd lease " + std::to_string(id) + " expired or revoked");
    return {};
  }

  Status RevokeLease(LeaseId id, TimePoint deadline) {
    pb::LeaseRevokeRequest req;
    req.set_id(id);
    pb::LeaseRevokeResponse resp;
    return Call(
        "lease revoke", false,
        [&](Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.lease->LeaseRevoke(ctx, req, &resp);
        },
        nullptr, deadline);
  }

  // ---- blobs ----

  struct WrittenBlob {
    std::string key;  // caller key
    BlobRef ref;
    std::string first_chunk;      // etcd key of chunk 0
    Revision first_chunk_create;  // its create_revision right after we wrote it
  };

  Result<WrittenBlob> WriteBlob(const std::string& key, std::string_view value, LeaseId lease) {
    WrittenBlob b;
    b.key = key;
    b.ref.nonce = Nonce();
    b.ref.size = value.size();
    b.ref.chunk_size = opts_.blob_chunk_size;
    b.ref.chunks = std::max<uint64_t>(1, (value.size() + b.ref.chunk_size - 1) / b.ref.chunk_size);
    for (uint64_t i = 0; i < b.ref.chunks; ++i) {
      pb::PutRequest req;
      req.set_key(ChunkKey(key, b.ref.nonce, i));
      req.set_value(std::string(value.substr(i * b.ref.chunk_size, b.ref.chunk_size)));
      req.set_lease(lease);
      req.set_prev_kv(i == 0);  // only needed when a retried first put had landed
      // Chunk writes are idempotent: nobody else writes under a fresh nonce.
      auto r = Put(req, true);
      if (!r.ok()) {
        DropBlob(key, b.ref.nonce);
        return r.status().Annotate("writing a large value for key '" + key + "'");
      }
      if (i == 0) {
        b.first_chunk = req.key();
        b.first_chunk_create = r->has_prev_kv() && r->prev_kv().create_revision() > 0
                                   ? r->prev_kv().create_revision()
                                   : r->header().revision();
      }
    }
    return b;
  }

  // True while no collector deleted the blob since it was written: chunks
  // are written in order and always deleted all at once.
  static pb::Compare BlobGuard(const WrittenBlob& b) {
    pb::Compare c;
    c.set_key(b.first_chunk);
    c.set_target(pb::Compare::CREATE);
    c.set_result(pb::Compare::EQUAL);
    c.set_create_revision(b.first_chunk_create);
    return c;
  }

  // Deletes one blob. Best effort: a failure leaves an orphan for the sweep.
  void DropBlob(const std::string& key, const std::string& nonce) {
    pb::DeleteRangeRequest req;
    req.set_key(BlobPrefix(key, nonce));
    req.set_range_end(PrefixEnd(req.key()));
    (void)DeleteRange(req, true);
  }

  // Drops the blob a replaced or deleted stored value pointed to, if any.
  void DropReplaced(const mvccpb::KeyValue& prev) {
    if (!std::string_view(prev.value()).starts_with(kMarker)) return;
    std::string key = CallerKey(prev.key());
    auto d = Decode(key, prev.value());
    if (d.ok() && d->ref) DropBlob(key, d->ref->nonce);
  }

  // Reads a blob as of `rev`. `compacted` tells that history is gone.
  Result<std::string> ReadBlob(const std::string& key, const BlobRef& ref, Revision rev,
                               Canceller* c, bool* compacted) {
    *compacted = false;
    std::string out;
    out.reserve(ref.size);
    for (uint64_t i = 0; i < ref.chunks; ++i) {
      pb::RangeRequest req;
      req.set_key(ChunkKey(key, ref.nonce, i));
      req.set_revision(rev);
      auto r = Range(req, c, compacted);
      if (!r.ok()) return r.status().Annotate("reading the large value of key '" + key + "'");
      if (r->kvs_size() != 1) {
        return Internal("etcd store: chunk " + std::to_string(i) + " of the value of key '" + key +
                        "' at revision " + std::to_string(rev) + " is missing");
      }
      out += r->kvs(0).value();
    }
    if (out.size() != ref.size) {
      return Internal("etcd store: value of key '" + key + "' has " + std::to_string(out.size()) +
                      " bytes, its record says " + std::to_string(ref.size));
    }
    return out;
  }

  // Converts an etcd KeyValue read at `rev` into ours, resolving a blob
  // reference. When `rev` has been compacted, falls back to the newest
  // revision if the key still holds the same value there; otherwise sets
  // `*compacted` and fails.
  Result<KeyValue> Resolve(const mvccpb::KeyValue& kv, Revision rev, Canceller* c,
                           bool* compacted) {
    *compacted = false;
    KeyValue out;
    out.key = CallerKey(kv.key());
    out.create_revision = kv.create_revision();
    out.mod_revision = kv.mod_revision();
    out.version = kv.version();
    out.lease = kv.lease();
    auto d = Decode(out.key, kv.value());
    if (!d.ok()) return d.status();
    if (!d->ref) {
      out.value = std::move(d->value);
      return out;
    }
    auto v = ReadBlob(out.key, *d->ref, rev, c, compacted);
    if (!v.ok() && *compacted) {
      pb::RangeRequest req;
      req.set_key(kv.key());
      auto now = Range(req, c);
      if (!now.ok()) return now.status();
      if (now->kvs_size() == 1 && now->kvs(0).mod_revision() == kv.mod_revision()) {
        v = ReadBlob(out.key, *d->ref, now->header().revision(), c, compacted);
      }
    }
    if (!v.ok()) return v.status();
    out.value = std::move(*v);
    return out;
  }

  // Which blobs a sweep may take, besides being unreferenced.
  struct SweepFilter {
    // Only blobs whose chunks were all written before this revision (0: any).
    Revision written_before = 0;
    // Only blobs at least this old: younger ones may be a write in progress.
    std::optional<std::chrono::seconds> min_age;
  };

  // Deletes the blobs under `owner_prefix` (a BlobOwnerPrefix) that their
  // owner key does not reference. A blob whose owner changes meanwhile is
  // left for a later sweep; a writer whose not yet referenced blob is
  // deleted notices through its guard and writes it again.
  Status Sweep(const std::string& owner_prefix, SweepFilter filter) {
    // owner key -> nonce -> newest create_revision among its chunks
    std::map<std::string, std::map<std::string, Revision>> blobs;
    pb::RangeRequest list;
    list.set_key(owner_prefix);
    list.set_range_end(PrefixEnd(owner_prefix));
    list.set_keys_only(true);
    list.set_limit(kSweepPageSize);
    for (;;) {
      auto r = Range(list);
      if (!r.ok()) return r.status().Annotate("blob sweep");
      for (const auto& kv : r->kvs()) {
        if (auto p = ParseChunkKey(kv.key())) {
          Revision& newest = blobs[p->first][p->second];
          newest = std::max(newest, kv.create_revision());
        }
      }
      if (!r->more() || r->kvs_size() == 0) break;
      list.set_key(r->kvs(r->kvs_size() - 1).key() + '\0');
    }
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(opts_.clock->WallNow().time_since_epoch())
            .count();
    for (auto& [owner, nonces] : blobs) {
      std::erase_if(nonces, [&](const auto& n) {
        if (filter.written_before > 0 && n.second >= filter.written_before) return true;
        if (!filter.min_age) return false;
        auto born = NonceSeconds(n.first);
        return !born || now - *born < filter.min_age->count();
      });
    }
    Status first_error;
    for (const auto& [owner, nonces] : blobs) {
      if (nonces.empty()) continue;
      pb::RangeRequest get;
      get.set_key(DataKey(owner));
      auto r = Range(get);
      if (!r.ok()) {
        if (first_error.ok()) first_error = r.status();
        continue;
      }
      std::string live;
      Revision mod = 0;
      if (r->kvs_size() == 1) {
        mod = r->kvs(0).mod_revision();
        auto d = Decode(owner, r->kvs(0).value());
        if (d.ok() && d->ref) live = d->ref->nonce;
      }
      for (const auto& [nonce, newest] : nonces) {
        if (nonce == live) continue;
        pb::TxnRequest txn;
        auto* cmp = txn.add_compare();
        cmp->set_key(DataKey(owner));
        cmp->set_target(pb::Compare::MOD);
        cmp->set_result(pb::Compare::EQUAL);
        cmp->set_mod_revision(mod);
        auto* del = txn.add_success()->mutable_request_delete_range();
        del->set_key(BlobPrefix(owner, nonce));
        del->set_range_end(PrefixEnd(del->key()));
        auto t = Txn(txn, true);
        if (!t.ok() && first_error.ok()) first_error = t.status();
      }
    }
    return first_error;
  }

 private:
  const EtcdOptions opts_;
  const std::string data_root_;
  const std::string blob_root_;
  std::vector<Endpoint> eps_;  // constant after construction
  std::string endpoint_list_;
  std::atomic<size_t> current_{0};
};

// ---- Watch ------------------------------------------------------------------

class EtcdWatch final : public WatchHandle {
 public:
  struct State {
    std::shared_ptr<Core> core;
    std::string key, range_end;  // etcd range watched
    Revision from_revision = 0;
    WatchCallbacks cb;
    Canceller cancel;
    std::mutex mu;
    std::condition_variable cv;
    bool started = false;  // guarded by mu: the first watch was created
    Status start_error;    // guarded by mu: set when it cannot be created
  };

  explicit EtcdWatch(std::shared_ptr<State> st)
      : st_(std::move(st)), thread_([s = st_] { Run(*s); }) {}

  ~EtcdWatch() override { Stop(); }

  void Stop() {
    st_->cancel.Cancel();
    if (!thread_.joinable()) return;
    // A callback destroying its own handle cannot join itself; the thread
    // owns a reference to the state and exits on its own.
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  // Waits until the watch runs on the server (so that "from now" means now).
  Status WaitStarted(TimePoint deadline) {
    std::unique_lock lock(st_->mu);
    st_->cv.wait_until(lock, deadline, [&] { return st_->started || !st_->start_error.ok(); });
    if (st_->started) return {};
    if (!st_->start_error.ok()) return st_->start_error;
    return Unavailable("etcd watch: not created within the call timeout (endpoints " +
                       st_->core->endpoint_list() + ")");
  }

 private:
  static void SignalStart(State& st, Status err) {
    std::lock_guard lock(st.mu);
    if (err.ok()) {
      st.started = true;
    } else {
      st.start_error = std::move(err);
    }
    st.cv.notify_all();
  }

  static bool Fatal(const grpc::Status& s) {
    switch (s.error_code()) {
      case grpc::StatusCode::INVALID_ARGUMENT:
      case grpc::StatusCode::PERMISSION_DENIED:
      case grpc::StatusCode::UNAUTHENTICATED:
      case grpc::StatusCode::UNIMPLEMENTED:
        return true;
      default:
        return false;
    }
  }

  // Outcome of handling one response.
  enum class Step { kContinue, kReconnect, kEnd };

  // Delivers a response's events one revision at a time, advancing `next`.
  static Step Deliver(State& st, const pb::WatchResponse& resp, Revision* next) {
    int n = resp.events_size();
    for (int i = 0; i < n;) {
      Revision rev = resp.events(i).kv().mod_revision();
      std::vector<WatchEvent> batch;
      for (; i < n && resp.events(i).kv().mod_revision() == rev; ++i) {
        const auto& e = resp.events(i);
        WatchEvent ev;
        if (e.type() == mvccpb::Event::DELETE) {
          ev.type = WatchEvent::Type::kDelete;
          ev.kv.key = st.core->CallerKey(e.kv().key());
          ev.kv.mod_revision = e.kv().mod_revision();
        } else {
          bool compacted = false;
          auto kv = st.core->Resolve(e.kv(), rev, &st.cancel, &compacted);
          if (!kv.ok()) {
            if (st.cancel.cancelled()) return Step::kEnd;
            if (compacted || !kv.status().retryable()) {
              st.cb.on_error(kv.status().Annotate("etcd watch: value at revision " +
                                                  std::to_string(rev) + " is gone"));
              return Step::kEnd;
            }
            return Step::kReconnect;  // resume from this revision
          }
          ev.kv = std::move(*kv);
        }
        batch.push_back(std::move(ev));
      }
      if (st.cancel.cancelled()) return Step::kEnd;
      st.cb.on_events(batch);
      *next = rev + 1;
    }
    return Step::kContinue;
  }

  static void Run(State& st) {
    Core& core = *st.core;
    // Revision to (re)start from; 0 until the first watch tells "now".
    Revision next = st.from_revision;
    bool started = false;
    milliseconds backoff(50);
    while (!st.cancel.cancelled()) {
      Endpoint* ep = core.Pick(TimePoint::max(), &st.cancel);
      if (!ep) continue;  // none reachable yet (or cancelled: the loop ends)
      grpc::ClientContext ctx;
      if (!st.cancel.Register(&ctx)) break;
      auto stream = ep->watch->Watch(&ctx);
      pb::WatchRequest req;
      auto* create = req.mutable_create_request();
      create->set_key(st.key);
      create->set_range_end(st.range_end);
      create->set_start_revision(next);
      Step step = Step::kReconnect;
      if (stream->Write(req)) {
        pb::WatchResponse resp;
        while (stream->Read(&resp)) {
          if (resp.created() && !started) {
            if (next == 0) next = resp.header().revision() + 1;
            started = true;
            backoff = milliseconds(50);
            SignalStart(st, {});
          }
          if (resp.canceled()) {
            if (!st.cancel.cancelled()) {
              Status err;
              if (resp.compact_revision() != 0) {
                err = NotFound("etcd watch: revision " + std::to_string(next) +
                               " has been compacted (oldest available: " +
                               std::to_string(resp.compact_revision()) + ")");
              } else {
                err = Internal("etcd watch canceled by the server: " + resp.cancel_reason());
              }
              if (started) {
                st.cb.on_error(err);
              } else {
                SignalStart(st, err);
              }
            }
            step = Step::kEnd;
            break;
          }
          step = Deliver(st, resp, &next);
          if (step != Step::kContinue) break;
          step = Step::kReconnect;
        }
      }
      ctx.TryCancel();
      pb::WatchResponse drain;
      while (stream->Read(&drain)) {
      }
      grpc::Status s = stream->Finish();
      st.cancel.Unregister(&ctx);
      if (step == Step::kEnd || st.cancel.cancelled()) break;
      if (Fatal(s)) {
        Status err = FromGrpc(s, "watch", ep->target);
        if (started) {
          st.cb.on_error(err);
        } else {
          SignalStart(st, err);
        }
        break;
      }
      core.Failed(ep);
      // Reconnecting is I/O: paced on the machine's clock.
      if (!st.cancel.SleepFor(RealClock(), backoff)) break;
      backoff = std::min(backoff * 2, milliseconds(2000));
    }
  }

  std::shared_ptr<State> st_;
  std::thread thread_;
};

// ---- Leases -----------------------------------------------------------------

class EtcdLeaseKeeper final : public LeaseKeeper {
 public:
  struct State {
    std::shared_ptr<Core> core;
    LeaseId id = 0;
    milliseconds ttl{0};
    std::atomic<bool> alive{true};
    Canceller cancel;
  };

  explicit EtcdLeaseKeeper(std::shared_ptr<State> st)
      : st_(std::move(st)), thread_([s = st_] { Run(*s); }) {}

  ~EtcdLeaseKeeper() override {
    st_->cancel.Cancel();
    thread_.join();
    if (st_->alive.load()) {
      // Best effort and brief: whatever the lease guarded is released either
      // way when its TTL runs out.
      auto wait = std::min<milliseconds>(st_->core->opts().call_timeout, milliseconds(2000));
      (void)st_->core->RevokeLease(st_->id, RpcClock::now() + wait);
    }
  }

  LeaseId id() const override { return st_->id; }
  bool alive() const override { return st_->alive.load(); }

 private:
  static void Run(State& st) {
    const milliseconds period = std::max(st.ttl / 3, milliseconds(100));
    Clock& clock = st.core->clock();
    Clock::Time last_ok = clock.Now();
    milliseconds wait = period;
    while (st.cancel.SleepFor(clock, wait)) {
      Status s = st.core->KeepAliveOnce(st.id, &st.cancel);
      if (st.cancel.cancelled()) return;
      if (s.ok()) {
        last_ok = clock.Now();
        wait = period;
        continue;
      }
      // Gone, or unreachable for a whole TTL: it cannot be ours any more.
      if (s.code() == Code::kNotFound || clock.Now() - last_ok >= st.ttl) {
        st.alive.store(false);
        return;
      }
      wait = std::min(period, milliseconds(500));
    }
  }

  std::shared_ptr<State> st_;
  std::thread thread_;
};

// ---- Store ------------------------------------------------------------------

bool Holds(std::string_view actual, Compare::Op op, std::string_view want) {
  int c = actual.compare(want);
  return CompareHolds(op, c);
}

pb::Compare::CompareResult ToPb(Compare::Op op) {
  switch (op) {
    case Compare::Op::kEqual:
      return pb::Compare::EQUAL;
    case Compare::Op::kNotEqual:
      return pb::Compare::NOT_EQUAL;
    case Compare::Op::kLess:
      return pb::Compare::LESS;
    case Compare::Op::kGreater:
      return pb::Compare::GREATER;
  }
  return pb::Compare::EQUAL;
}

class EtcdStoreImpl final : public EtcdStore {
 public:
  explicit EtcdStoreImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  Result<std::optional<KeyValue>> Get(const std::string& key) override {
    if (key.empty()) return Invalid("get: key must not be empty");
    pb::RangeRequest req;
    req.set_key(core_->DataKey(key));
    for (int attempt = 0;; ++attempt) {
      auto r = core_->Range(req);
      if (!r.ok()) return r.status();
      if (r->kvs_size() == 0) return std::optional<KeyValue>();
      bool compacted = false;
      auto kv = core_->Resolve(r->kvs(0), r->header().revision(), nullptr, &compacted);
      if (kv.ok()) return std::optional<KeyValue>(std::move(*kv));
      if (!compacted || attempt + 1 >= kMaxReadAttempts) return kv.status();
    }
  }

  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease) override {
    if (key.empty()) return Invalid("put: key must not be empty");
    if (value.size() > core_->opts().inline_value_max) {
      Txn txn;
      txn.success.push_back(Op::Put(key, value, lease));
      auto r = Commit(txn);
      if (!r.ok()) return r.status();
      return r->revision;
    }
    pb::PutRequest req;
    req.set_key(core_->DataKey(key));
    req.set_value(EncodeInline(value));
    req.set_lease(lease);
    req.set_prev_kv(true);
    auto r = core_->Put(req, false);
    if (!r.ok()) return r.status();
    if (r->has_prev_kv()) core_->DropReplaced(r->prev_kv());
    return r->header().revision();
  }

  Result<int64_t> Delete(const std::string& key) override {
    if (key.empty()) return Invalid("delete: key must not be empty");
    pb::DeleteRangeRequest req;
    req.set_key(core_->DataKey(key));
    req.set_prev_kv(true);
    auto r = core_->DeleteRange(req, false);
    if (!r.ok()) return r.status();
    for (const auto& prev : r->prev_kvs()) core_->DropReplaced(prev);
    return r->deleted();
  }

  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    // No prev_kv: the reply would carry every deleted value. The blobs of the
    // deleted keys are found by a sweep of their owners' blob area instead.
    pb::DeleteRangeRequest req;
    req.set_key(core_->DataKey(prefix));
    req.set_range_end(PrefixEnd(req.key()));
    auto r = core_->DeleteRange(req, false);
    if (!r.ok()) return r.status();
    if (r->deleted() > 0) {
      (void)core_->Sweep(core_->BlobOwnerPrefix(prefix), {r->header().revision(), std::nullopt});
    }
    return r->deleted();
  }

  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts) override {
    if (opts.limit < 0) return Invalid("range: limit must not be negative");
    pb::RangeRequest req;
    std::string start = core_->DataKey(prefix);
    std::string end = PrefixEnd(start);
    if (!opts.after.empty()) {
      std::string after = core_->DataKey(opts.after);
      after.push_back('\0');
      start = std::max(start, after);
    }
    if (start >= end) {  // nothing can match; still report the revision
      auto rev = CurrentRevision();
      if (!rev.ok()) return rev.status();
      RangeResult out;
      out.revision = *rev;
      return out;
    }
    req.set_key(start);
    req.set_range_end(end);
    if (opts.limit > 0) req.set_limit(opts.limit);
    req.set_keys_only(opts.keys_only);
    req.set_count_only(opts.count_only);
    for (int attempt = 0;; ++attempt) {
      auto r = core_->Range(req);
      if (!r.ok()) return r.status();
      RangeResult out;
      out.more = r->more();
      out.count = r->count();
      out.revision = r->header().revision();
      Status err;
      bool compacted = false;
      for (const auto& kv : r->kvs()) {
        if (opts.keys_only) {
          KeyValue k;
          k.key = core_->CallerKey(kv.key());
          k.create_revision = kv.create_revision();
          k.mod_revision = kv.mod_revision();
          k.version = kv.version();
          k.lease = kv.lease();
          out.kvs.push_back(std::move(k));
          continue;
        }
        auto k = core_->Resolve(kv, out.revision, nullptr, &compacted);
        if (!k.ok()) {
          err = k.status();
          break;
        }
        out.kvs.push_back(std::move(*k));
      }
      if (err.ok()) return out;
      if (!compacted || attempt + 1 >= kMaxReadAttempts) return err;
    }
  }

  Result<TxnResult> Commit(const Txn& txn) override {
    // Our namespace would accept an empty key; etcd and the contract do not.
    for (const auto& c : txn.compares) {
      if (c.key.empty()) return Invalid("txn: compare key must not be empty");
    }
    // Checked here too, not only by etcd: a value compare decided here may
    // keep a branch from ever reaching etcd, and blobs are written first.
    for (const auto* ops : {&txn.success, &txn.failure}) ECO_RETURN_IF_ERROR(ValidateTxnBranch(*ops));
    for (int attempt = 0; attempt < kMaxTxnAttempts; ++attempt) {
      auto r = CommitOnce(txn);
      if (!r.ok()) return r.status();
      if (*r) return std::move(**r);
    }
    return Unavailable(
        "etcd txn: concurrent writers kept changing the keys it compares; gave up after " +
        std::to_string(kMaxTxnAttempts) + " attempts");
  }

  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision from_revision,
                                             WatchCallbacks callbacks) override {
    if (!callbacks.on_events) return Invalid("watch: on_events callback is required");
    if (from_revision < 0) return Invalid("watch: negative start revision");
    auto st = std::make_shared<EtcdWatch::State>();
    st->core = core_;
    st->key = core_->DataKey(prefix);
    st->range_end = PrefixEnd(st->key);
    st->from_revision = from_revision;
    st->cb = std::move(callbacks);
    if (!st->cb.on_error) st->cb.on_error = [](const Status&) {};
    auto w = std::make_unique<EtcdWatch>(st);
    Status s = w->WaitStarted(core_->CallDeadline());
    if (!s.ok()) return s;  // the handle's destructor stops the thread
    return std::unique_ptr<WatchHandle>(std::move(w));
  }

  Result<LeaseId> GrantLease(std::chrono::seconds ttl) override {
    if (ttl.count() <= 0) return Invalid("etcd lease: TTL must be positive");
    pb::LeaseGrantRequest req;
    req.set_ttl(ttl.count());
    pb::LeaseGrantResponse resp;
    Status s = core_->Call("lease grant", false, [&](Endpoint& ep, grpc::ClientContext* ctx) {
      return ep.lease->LeaseGrant(ctx, req, &resp);
    });
    if (!s.ok()) return s;
    if (!resp.error().empty()) return Internal("etcd lease grant: " + resp.error());
    return resp.id();
  }

  Status KeepAliveOnce(LeaseId id) override { return core_->KeepAliveOnce(id); }

  Status RevokeLease(LeaseId id) override { return core_->RevokeLease(id, core_->CallDeadline()); }

  Result<std::unique_ptr<LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override {
    auto id = GrantLease(ttl);
    if (!id.ok()) return id.status();
    auto st = std::make_shared<EtcdLeaseKeeper::State>();
    st->core = core_;
    st->id = *id;
    st->ttl = ttl;
    return std::unique_ptr<LeaseKeeper>(std::make_unique<EtcdLeaseKeeper>(std::move(st)));
  }

  Result<Revision> CurrentRevision() override {
    pb::RangeRequest req;
    req.set_key(core_->data_root());
    req.set_count_only(true);
    auto r = core_->Range(req);
    if (!r.ok()) return r.status();
    return r->header().revision();
  }

  std::string Backend() const override { return "etcd"; }

  Status CollectGarbage() override {
    return core_->Sweep(core_->blob_root(), {0, core_->opts().blob_gc_grace});
  }

 private:
  using Blob = Core::WrittenBlob;

  // Where a put of the caller's txn went: inline, or a blob written ahead.
  struct PutPlan {
    bool blob = false;
    std::optional<Blob> written;
  };

  void DropAll(const std::vector<std::vector<PutPlan>>& plans) {
    for (const auto& branch : plans) {
      for (const auto& p : branch) {
        if (p.written) core_->DropBlob(p.written->key, p.written->ref.nonce);
      }
    }
  }

  void AddOp(const Op& op, const PutPlan& plan,
             google::protobuf::RepeatedPtrField<pb::RequestOp>* out) {
    auto* r = out->Add();
    switch (op.type) {
      case Op::Type::kPut: {
        auto* p = r->mutable_request_put();
        p->set_key(core_->DataKey(op.key));
        p->set_value(plan.written ? EncodeRef(plan.written->ref) : EncodeInline(op.value));
        p->set_lease(op.lease);
        p->set_prev_kv(true);
        break;
      }
      case Op::Type::kDelete: {
        auto* d = r->mutable_request_delete_range();
        d->set_key(core_->DataKey(op.key));
        d->set_prev_kv(true);
        break;
      }
      case Op::Type::kDeletePrefix: {
        auto* d = r->mutable_request_delete_range();
        d->set_key(core_->DataKey(op.key));
        d->set_range_end(PrefixEnd(d->key()));
        break;
      }
      case Op::Type::kGet:
        r->mutable_request_range()->set_key(core_->DataKey(op.key));
        break;
    }
  }

  // One attempt; nullopt when a guard lost to a concurrent writer.
  Result<std::optional<TxnResult>> CommitOnce(const Txn& txn) {
    const std::vector<Op>* branches[2] = {&txn.success, &txn.failure};
    const size_t inline_max = core_->opts().inline_value_max;

    // 1. Decide which puts go to blobs: every large value, then the largest
    //    of the rest until the inline values fit in one request.
    std::vector<std::vector<PutPlan>> plans(2);
    std::vector<std::pair<size_t, std::pair<int, size_t>>> inline_puts;  // size, (branch, index)
    size_t inline_total = 0;
    bool writes = false;
    for (int b = 0; b < 2; ++b) {
      plans[b].resize(branches[b]->size());
      for (size_t i = 0; i < branches[b]->size(); ++i) {
        const Op& op = (*branches[b])[i];
        if (op.type != Op::Type::kGet) writes = true;
        if (op.type != Op::Type::kPut) continue;
        if (op.value.size() > inline_max) {
          plans[b][i].blob = true;
        } else {
          inline_total += op.value.size();
          inline_puts.push_back({op.value.size(), {b, i}});
        }
      }
    }
    std::sort(inline_puts.begin(), inline_puts.end(), std::greater<>());
    for (const auto& [size, where] : inline_puts) {
      if (inline_total <= inline_max) break;
      plans[where.first][where.second].blob = true;
      inline_total -= size;
    }

    // 2. Evaluate value compares here, on a snapshot of their keys.
    std::vector<pb::Compare> guards;
    bool values_hold = true;
    std::vector<std::string> value_keys;
    for (const auto& c : txn.compares) {
      if (c.target == Compare::Target::kValue) value_keys.push_back(c.key);
    }
    std::sort(value_keys.begin(), value_keys.end());
    value_keys.erase(std::unique(value_keys.begin(), value_keys.end()), value_keys.end());
    if (!value_keys.empty()) {
      pb::TxnRequest read;
      for (const auto& k : value_keys) {
        read.add_success()->mutable_request_range()->set_key(core_->DataKey(k));
      }
      auto r = core_->Txn(read, true);
      if (!r.ok() || r->responses_size() != static_cast<int>(value_keys.size())) {
        return r.ok() ? Internal("etcd txn: short reply to a read") : r.status();
      }
      std::map<std::string, std::string> current;
      for (size_t i = 0; i < value_keys.size(); ++i) {
        const auto& rr = r->responses(static_cast<int>(i)).response_range();
        Revision mod = 0;
        if (rr.kvs_size() == 1) {
          mod = rr.kvs(0).mod_revision();
          bool compacted = false;
          auto kv = core_->Resolve(rr.kvs(0), r->header().revision(), nullptr, &compacted);
          if (!kv.ok()) {
            if (compacted) return std::optional<TxnResult>();
            return kv.status();
          }
          current[value_keys[i]] = std::move(kv->value);
        }
        pb::Compare g;
        g.set_key(core_->DataKey(value_keys[i]));
        g.set_target(pb::Compare::MOD);
        g.set_result(pb::Compare::EQUAL);
        g.set_mod_revision(mod);
        guards.push_back(std::move(g));
      }
      for (const auto& c : txn.compares) {
        if (c.target == Compare::Target::kValue && !Holds(current[c.key], c.op, c.value)) {
          values_hold = false;
        }
      }
    }

    // 3. Write the blobs of the branches that may run.
    for (int b = values_hold ? 0 : 1; b < 2; ++b) {
      for (size_t i = 0; i < plans[b].size(); ++i) {
        if (!plans[b][i].blob) continue;
        const Op& op = (*branches[b])[i];
        auto w = core_->WriteBlob(op.key, op.value, op.lease);
        if (!w.ok()) {
          DropAll(plans);
          return w.status();
        }
        plans[b][i].written = std::move(*w);
      }
    }
    for (const auto& p : plans) {
      for (const auto& plan : p) {
        if (plan.written) guards.push_back(Core::BlobGuard(*plan.written));
      }
    }

    // 4. The caller's transaction; nested under the guards when there are any.
    pb::TxnRequest user;
    if (values_hold) {
      for (const auto& c : txn.compares) {
        if (c.target == Compare::Target::kValue) continue;
        auto* pc = user.add_compare();
        pc->set_key(core_->DataKey(c.key));
        pc->set_result(ToPb(c.op));
        switch (c.target) {
          case Compare::Target::kModRevision:
            pc->set_target(pb::Compare::MOD);
            pc->set_mod_revision(c.number);
            break;
          case Compare::Target::kCreateRevision:
            pc->set_target(pb::Compare::CREATE);
            pc->set_create_revision(c.number);
            break;
          case Compare::Target::kVersion:
            pc->set_target(pb::Compare::VERSION);
            pc->set_version(c.number);
            break;
          case Compare::Target::kValue:
            break;
        }
      }
      for (size_t i = 0; i < txn.success.size(); ++i)
        AddOp(txn.success[i], plans[0][i], user.mutable_success());
      for (size_t i = 0; i < txn.failure.size(); ++i)
        AddOp(txn.failure[i], plans[1][i], user.mutable_failure());
    } else {
      // A value compare failed: the failure branch runs unconditionally.
      for (size_t i = 0; i < txn.failure.size(); ++i)
        AddOp(txn.failure[i], plans[1][i], user.mutable_success());
    }
    pb::TxnRequest outer;
    const pb::TxnRequest* send = &user;
    if (!guards.empty()) {
      for (auto& g : guards) *outer.add_compare() = std::move(g);
      *outer.add_success()->mutable_request_txn() = user;
      send = &outer;
    }

    // 5. Send. After an unclear failure the blobs may be referenced: keep them.
    auto resp = core_->Txn(*send, !writes);
    if (!resp.ok()) {
      if (!resp.status().retryable()) DropAll(plans);
      return resp.status();
    }
    const pb::TxnResponse* in = &*resp;
    if (send == &outer) {
      if (!resp->succeeded()) {
        DropAll(plans);
        return std::optional<TxnResult>();
      }
      if (resp->responses_size() != 1) return Internal("etcd txn: malformed nested reply");
      in = &resp->responses(0).response_txn();
    }
    const bool ran_success = values_hold && in->succeeded();
    const int ran = ran_success ? 0 : 1;
    const std::vector<Op>& ops = *branches[ran];

    // 6. Results, and clean-up of what the transaction made unreachable.
    TxnResult out;
    out.succeeded = ran_success;
    out.revision = resp->header().revision();
    if (in->responses_size() != static_cast<int>(ops.size())) {
      return Internal("etcd txn: " + std::to_string(in->responses_size()) + " replies for " +
                      std::to_string(ops.size()) + " operations");
    }
    for (const auto& plan : plans[1 - ran]) {
      if (plan.written) core_->DropBlob(plan.written->key, plan.written->ref.nonce);
    }
    std::vector<std::string> swept;
    Status get_error;
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto& r = in->responses(static_cast<int>(i));
      switch (ops[i].type) {
        case Op::Type::kPut:
          if (r.response_put().has_prev_kv()) core_->DropReplaced(r.response_put().prev_kv());
          break;
        case Op::Type::kDelete:
          out.deleted += r.response_delete_range().deleted();
          for (const auto& prev : r.response_delete_range().prev_kvs()) core_->DropReplaced(prev);
          break;
        case Op::Type::kDeletePrefix:
          out.deleted += r.response_delete_range().deleted();
          if (r.response_delete_range().deleted() > 0) swept.push_back(ops[i].key);
          break;
        case Op::Type::kGet: {
          const auto& rr = r.response_range();
          if (rr.kvs_size() == 0) {
            out.gets.emplace_back();
            break;
          }
          bool compacted = false;
          auto kv = core_->Resolve(rr.kvs(0), out.revision, nullptr, &compacted);
          if (!kv.ok()) {
            if (get_error.ok()) get_error = kv.status();
            out.gets.emplace_back();
          } else {
            out.gets.emplace_back(std::move(*kv));
          }
          break;
        }
      }
    }
    for (const auto& p : swept) {
      (void)core_->Sweep(core_->BlobOwnerPrefix(p), {out.revision, std::nullopt});
    }
    // The writes are in; only a blob read failed. Unavailable: the caller
    // re-reads rather than assuming the transaction did not happen.
    if (!get_error.ok()) {
      return Unavailable("etcd txn committed at revision " + std::to_string(out.revision) +
                         " but a read in it failed: " + get_error.message());
    }
    return std::optional<TxnResult>(std::move(out));
  }

  std::shared_ptr<Core> core_;
};

}  // namespace

Result<std::unique_ptr<EtcdStore>> EtcdStore::Open(const EtcdOptions& opts) {
  if (opts.endpoints.empty()) return Invalid("etcd store: no endpoints");
  for (const auto& e : opts.endpoints) {
    if (e.empty()) return Invalid("etcd store: empty endpoint");
  }
  if (opts.blob_chunk_size == 0 || opts.inline_value_max == 0) {
    return Invalid("etcd store: inline_value_max and blob_chunk_size must be positive");
  }
  if (opts.dial_timeout.count() <= 0 || opts.call_timeout.count() <= 0) {
    return Invalid("etcd store: timeouts must be positive");
  }
  if (!opts.clock || !opts.random)
    return Invalid("etcd store: a clock and a random source are required");
  return std::unique_ptr<EtcdStore>(std::make_unique<EtcdStoreImpl>(std::make_shared<Core>(opts)));
}

Result<std::unique_ptr<Store>> OpenEtcdStore(const EtcdOptions& opts) {
  auto s = EtcdStore::Open(opts);
  if (!s.ok()) return s.status();
  return std::unique_ptr<Store>(std::move(*s));
}

}  // namespace eco::store
