#include "common/trace.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "common/hex.h"
#include "common/log.h"
#include "common/metrics.h"

namespace eco::trace {
namespace {

template <size_t N>
std::string_view IdBytes(const std::array<uint8_t, N>& a) {
  return {reinterpret_cast<const char*>(a.data()), N};
}

template <size_t N>
void AppendHex(std::string& out, const std::array<uint8_t, N>& bytes) {
  hex::Append(out, IdBytes(bytes));
}

template <size_t N>
std::string ToHex(const std::array<uint8_t, N>& bytes) {
  return hex::Encode(IdBytes(bytes));
}

// Hex text of at most 2N digits into N bytes, right-aligned (Jaeger and B3
// allow shorter ids: 64-bit trace ids, no leading zeros).
template <size_t N>
bool FromHex(std::string_view text, std::array<uint8_t, N>& out, bool exact) {
  if (text.empty() || text.size() > 2 * N || (exact && text.size() != 2 * N)) return false;
  out.fill(0);
  size_t pos = 2 * N - text.size();  // digit position of text[0]
  for (char c : text) {
    int d = hex::Digit(c);
    if (d < 0) return false;
    out[pos / 2] |= static_cast<uint8_t>(pos % 2 == 0 ? d << 4 : d);
    ++pos;
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& a) {
  return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(
        s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) return out;
    start = p + 1;
  }
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::optional<SpanContext> FromW3c(const std::string& tp, const std::optional<std::string>& ts) {
  // version-traceid-parentid-flags; versions after 00 may append fields.
  auto f = Split(tp, '-');
  if (f.size() < 4 || f[0].size() != 2 || f[0] == "ff" || (f[0] == "00" && f.size() != 4))
    return std::nullopt;
  SpanContext c;
  std::array<uint8_t, 1> flags{};
  if (!FromHex(f[1], c.trace_id, true) || !FromHex(f[2], c.span_id, true) ||
      !FromHex(f[3], flags, true)) {
    return std::nullopt;
  }
  c.sampled = flags[0] & 1;
  if (ts) c.tracestate = *ts;
  return c.valid() ? std::optional<SpanContext>(c) : std::nullopt;
}

std::optional<SpanContext> FromJaeger(std::string v) {
  // trace-id:span-id:parent-span-id:flags, ':' possibly URL-encoded.
  for (size_t p;
       (p = v.find("%3A")) != std::string::npos || (p = v.find("%3a")) != std::string::npos;) {
    v.replace(p, 3, ":");
  }
  auto f = Split(v, ':');
  if (f.size() != 4) return std::nullopt;
  SpanContext c;
  if (!FromHex(f[0], c.trace_id, false) || !FromHex(f[1], c.span_id, false)) return std::nullopt;
  std::array<uint8_t, 1> flags{};
  if (!FromHex(f[3], flags, false)) return std::nullopt;
  c.sampled = flags[0] & 1;
  return c.valid() ? std::optional<SpanContext>(c) : std::nullopt;
}

std::optional<SpanContext> FromB3(const HeaderLookup& header) {
  SpanContext c;
  if (auto single = header("b3")) {
    // {TraceId}-{SpanId}[-{SamplingState}[-{ParentSpanId}]]; "0" alone: deny.
    auto f = Split(*single, '-');
    if (f.size() < 2) return std::nullopt;
    if (!FromHex(f[0], c.trace_id, false) || (f[0].size() != 16 && f[0].size() != 32) ||
        !FromHex(f[1], c.span_id, true)) {
      return std::nullopt;
    }
    c.sampled = f.size() < 3 || f[2] == "1" || f[2] == "d";
    return c.valid() ? std::optional<SpanContext>(c) : std::nullopt;
  }
  auto tid = header("x-b3-traceid");
  auto sid = header("x-b3-spanid");
  if (!tid || !sid) return std::nullopt;
  if (!FromHex(*tid, c.trace_id, false) || (tid->size() != 16 && tid->size() != 32) ||
      !FromHex(*sid, c.span_id, true)) {
    return std::nullopt;
  }
  auto sampled = header("x-b3-sampled");
  auto flags = header("x-b3-flags");
  c.sampled = (flags && *flags == "1") || !sampled || *sampled == "1" || *sampled == "true";
  return c.valid() ? std::optional<SpanContext>(c) : std::nullopt;
}

// ---- recording and export ----------------------------------------------
//
// A span is encoded in the configured protocol when it ends, on the thread
// that ends it, into that thread's buffer (its attributes as they are set).
// Full buffers of `chunk` spans go to the exporter's queue; senders join
// queued chunks into requests of up to `max_batch` spans, and at each flush
// interval also take what the threads' buffers hold. A request thread thus
// takes its own, uncontended lock per span and the shared one per chunk:
// with many threads on few cores, a shared lock per span made threads wait
// for one another (a holder preempted mid-section), which cost more than
// the instructions.

uint64_t UnixNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Ids need to be unpredictable enough not to collide, not secret:
// splitmix64, seeded per thread from the system's entropy, costs a few
// instructions where mt19937_64 cost tens.
uint64_t NextRandom() {
  thread_local uint64_t state = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <size_t N>
void RandomId(std::array<uint8_t, N>& out) {
  static_assert(N % 8 == 0);
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t r = NextRandom();
      std::memcpy(out.data() + i, &r, 8);
    }
  } while (AllZero(out));
}

// Protobuf wire format: the few shapes OTLP's span messages need. Sizes
// are computed first, so that a message is written front to back.
namespace pb {
constexpr int kVarint = 0, kFixed64 = 1, kLen = 2;

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
char* Varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
// Every field number here is below 16: its tag is one byte.
char* Tag(char* p, int field, int wire) {
  *p = static_cast<char>(field << 3 | wire);
  return p + 1;
}
// A length-delimited field's size (tag, length, body).
size_t Sized(size_t len) { return 1 + VarintSize(len) + len; }
// A length-delimited field's tag and length; its body follows.
char* Len(char* p, int field, size_t len) { return Varint(Tag(p, field, kLen), len); }
char* Bytes(char* p, int field, std::string_view b) {
  p = Len(p, field, b.size());
  std::memcpy(p, b.data(), b.size());
  return p + b.size();
}
char* Fixed64(char* p, int field, uint64_t v) {
  p = Tag(p, field, kFixed64);
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, 8);  // the wire's byte order
    return p + 8;
  }
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
  return p;
}
// `n` more bytes at the end of `out`, to be written through the pointer.
char* Grow(std::string& out, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  return out.data() + at;
}

// A KeyValue{key = 1, value = 2: AnyValue{string_value = 1 | int_value = 3}}
// as field `field` of its message. Most attributes are short: they are
// written on the stack and appended at once.
template <typename WriteValue>
void AppendKeyValue(std::string& out, int field, std::string_view key, size_t value,
                    WriteValue write_value) {
  const size_t kv = Sized(key.size()) + Sized(value);
  char buf[128];
  const bool small = Sized(kv) <= sizeof buf;
  char* start = small ? buf : Grow(out, Sized(kv));
  char* p = Len(start, field, kv);
  p = Bytes(p, 1, key);
  write_value(Len(p, 2, value));
  if (small) out.append(buf, Sized(kv));
}
void AppendAttribute(std::string& out, int field, std::string_view key, std::string_view str) {
  AppendKeyValue(out, field, key, Sized(str.size()), [str](char* p) { Bytes(p, 1, str); });
}
void AppendAttribute(std::string& out, int field, std::string_view key, int64_t num) {
  const auto u = static_cast<uint64_t>(num);
  AppendKeyValue(out, field, key, 1 + VarintSize(u), [u](char* p) { Varint(Tag(p, 3, kVarint), u); });
}
}  // namespace pb

namespace js {
void AppendAttribute(std::string& out, std::string_view key, std::string_view str) {
  if (!out.empty()) out.push_back(',');
  out.append(R"({"key":)");
  log::AppendJsonString(out, key);
  out.append(R"(,"value":{"stringValue":)");
  log::AppendJsonString(out, str);
  out.append("}}");
}
void AppendAttribute(std::string& out, std::string_view key, int64_t num) {
  if (!out.empty()) out.push_back(',');
  out.append(R"({"key":)");
  log::AppendJsonString(out, key);
  char buf[24];
  out.append(R"(,"value":{"intValue":")")
      .append(buf, std::to_chars(buf, buf + sizeof buf, num).ptr)
      .append("\"}}");
}
void AppendNumber(std::string& out, uint64_t n) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, n).ptr);
}
}  // namespace js

thread_local std::optional<SpanContext> t_current;

}  // namespace

struct Span::Data {
  static constexpr size_t kMaxAttributes = 8;  // eco's spans carry at most 5; more are ignored
  Protocol protocol = Protocol::kProtobuf;     // of `attrs`, as configured when the span began
  std::string name;
  Kind kind = Kind::kInternal;
  bool has_parent = false;
  std::array<uint8_t, 8> parent{};
  uint64_t start_ns = 0;
  std::string attrs;  // encoded as they are set: protobuf fields 9, or JSON objects
  size_t n_attrs = 0;
  bool has_error = false;
  std::string error;

  void Reset() {
    name.clear();
    has_parent = false;
    attrs.clear();
    n_attrs = 0;
    has_error = false;
    error.clear();
  }
};

namespace {

// Span data is reused per thread (a span's data goes back to the thread
// that ends it), so recording allocates nothing in a steady state.
class DataPool {
 public:
  static std::unique_ptr<Span::Data> Take() {
    auto& free = List();
    if (free.empty()) return std::make_unique<Span::Data>();
    std::unique_ptr<Span::Data> d = std::move(free.back());
    free.pop_back();
    return d;
  }
  static void Give(std::unique_ptr<Span::Data> d) {
    auto& free = List();
    // A span with a huge attribute or error keeps no huge buffer.
    constexpr size_t kMaxFree = 64, kMaxKept = 64 * 1024;
    if (free.size() >= kMaxFree || d->attrs.capacity() > kMaxKept ||
        d->error.capacity() > kMaxKept || d->name.capacity() > kMaxKept) {
      return;
    }
    d->Reset();
    free.push_back(std::move(d));
  }

 private:
  static std::vector<std::unique_ptr<Span::Data>>& List() {
    thread_local std::vector<std::unique_ptr<Span::Data>> free;
    return free;
  }
};

// Encoded spans: a ScopeSpans.spans field each (protobuf) or
// comma-separated span objects (JSON).
struct Chunk {
  std::string bytes;
  size_t spans = 0;
};

// The spans one thread ended and has not handed over yet.
struct ThreadSpans {
  std::mutex mu;
  Chunk chunk;  // guarded by mu
};

void EncodeProtobuf(const SpanContext& ctx, const Span::Data& d, uint64_t end_ns, std::string& out) {
  using namespace pb;
  size_t n = Sized(16) + Sized(8) + Sized(d.name.size()) + 2 + 9 + 9 + d.attrs.size();  // ids, name, kind, times
  if (!ctx.tracestate.empty()) n += Sized(ctx.tracestate.size());
  if (d.has_parent) n += Sized(8);
  const size_t status = d.has_error ? Sized(d.error.size()) + 2 : 0;
  if (d.has_error) n += Sized(status);
  char* p = Len(Grow(out, Sized(n)), 2, n);  // ScopeSpans.spans
  p = Bytes(p, 1, IdBytes(ctx.trace_id));
  p = Bytes(p, 2, IdBytes(ctx.span_id));
  if (!ctx.tracestate.empty()) p = Bytes(p, 3, ctx.tracestate);
  if (d.has_parent) p = Bytes(p, 4, IdBytes(d.parent));
  p = Bytes(p, 5, d.name);
  p = Varint(Tag(p, 6, kVarint), static_cast<uint64_t>(d.kind));
  p = Fixed64(p, 7, d.start_ns);
  p = Fixed64(p, 8, end_ns);
  std::memcpy(p, d.attrs.data(), d.attrs.size());  // fields 9
  p += d.attrs.size();
  if (d.has_error) {  // Status{message = 2, code = 3: 2 (ERROR)}
    p = Bytes(Len(p, 15, status), 2, d.error);
    Varint(Tag(p, 3, kVarint), 2);
  }
}

// OTLP/JSON written directly: a JSON value per span field would cost more
// than the span itself.
void EncodeJson(const SpanContext& ctx, const Span::Data& d, uint64_t end_ns, std::string& out) {
  if (!out.empty()) out.push_back(',');
  out.append(R"({"traceId":")");
  ctx.AppendTraceIdHex(out);
  out.append(R"(","spanId":")");
  ctx.AppendSpanIdHex(out);
  out.push_back('"');
  if (d.has_parent) {
    out.append(R"(,"parentSpanId":")");
    AppendHex(out, d.parent);
    out.push_back('"');
  }
  if (!ctx.tracestate.empty()) {
    out.append(R"(,"traceState":)");
    log::AppendJsonString(out, ctx.tracestate);
  }
  out.append(R"(,"name":)");
  log::AppendJsonString(out, d.name);
  out.append(R"(,"kind":)").push_back(static_cast<char>('0' + static_cast<int>(d.kind)));
  out.append(R"(,"startTimeUnixNano":")");
  js::AppendNumber(out, d.start_ns);
  out.append(R"(","endTimeUnixNano":")");
  js::AppendNumber(out, end_ns);
  out.append(R"(","attributes":[)").append(d.attrs).push_back(']');
  if (d.has_error) {
    out.append(R"(,"status":{"code":2,"message":)");
    log::AppendJsonString(out, d.error);
    out.push_back('}');
  }
  out.push_back('}');
}

// Whether the exporter object exists: a thread ending after it was destroyed
// at exit has nowhere to hand its spans.
std::atomic<bool> g_exporter_alive{false};

// The exporter: chunks of finished spans queue here and sender threads send
// them.
class Exporter {
 public:
  static Exporter& Get() {
    static Exporter e;
    return e;
  }
  Exporter() { g_exporter_alive = true; }
  ~Exporter() {
    Stop();
    g_exporter_alive = false;
  }

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  double ratio() const { return ratio_.load(std::memory_order_relaxed); }
  Protocol protocol() const { return protocol_.load(std::memory_order_relaxed); }

  Status Start(const Options& o) {
    std::string ep = o.endpoint;
    if (ep.rfind("https://", 0) == 0) {
      return Invalid(
          "--otlp-endpoint: https is not supported; send to a local OpenTelemetry Collector or "
          "Jaeger over http");
    }
    if (ep.rfind("http://", 0) != 0)
      return Invalid("--otlp-endpoint must be an http:// URL, got \"" + ep + "\"");
    if (!(o.sample_ratio >= 0 && o.sample_ratio <= 1))
      return Invalid("trace sample ratio must be within [0, 1]");
    // http://host:port[/path]: the path defaults to OTLP's /v1/traces.
    const size_t slash = ep.find('/', 7);
    const std::string base = slash == std::string::npos ? ep : ep.substr(0, slash);
    if (base.size() <= 7) return Invalid("--otlp-endpoint has no host: \"" + ep + "\"");
    size_t stale = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!threads_.empty()) return Invalid("tracing is configured already");
      base_ = base;
      path_ = slash == std::string::npos || ep.substr(slash) == "/" ? "/v1/traces" : ep.substr(slash);
      options_ = o;
      options_.senders = std::max<size_t>(options_.senders, 1);
      options_.max_batch = std::max<size_t>(options_.max_batch, 1);
      chunk_spans_ = std::min<size_t>(options_.max_batch, kChunkSpans);
      resource_.clear();
      if (o.protocol == Protocol::kJson) {
        js::AppendAttribute(resource_, "service.name", o.service_name);
      } else {
        pb::AppendAttribute(resource_, 1, "service.name", o.service_name);  // Resource.attributes
      }
      // Spans recorded under an earlier configuration are not sent (a span
      // that ended while the exporter stopped can still be in a thread's
      // buffer).
      for (const Chunk& c : queue_) stale += c.spans;
      queue_.clear();
      queued_ = 0;
      for (const auto& ts : registry_) {
        std::lock_guard<std::mutex> t(ts->mu);
        stale += ts->chunk.spans;
        ts->chunk.bytes.clear();
        ts->chunk.spans = 0;
      }
      protocol_ = o.protocol;
      ratio_ = o.sample_ratio;
      stop_ = false;
      accepting_ = true;
      enabled_ = true;
      deadline_ = std::chrono::steady_clock::now() + options_.flush_interval;
      for (size_t i = 0; i < options_.senders; ++i) threads_.emplace_back([this] { Run(); });
    }
    if (stale > 0) Counters().dropped.Increment(static_cast<double>(stale));
    return Status::Ok();
  }

  void Stop() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (threads_.empty()) return;
      stop_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
    std::lock_guard<std::mutex> g(mu_);
    enabled_ = false;
    accepting_ = false;
  }

  // Encodes a finished span into the calling thread's buffer.
  void Record(const SpanContext& ctx, const Span::Data& d, uint64_t end_ns) {
    if (d.protocol != protocol()) {  // begun under another configuration
      Counters().dropped.Increment();
      return;
    }
    ThreadSpans& ts = Local();
    Chunk full;
    {
      std::lock_guard<std::mutex> g(ts.mu);
      if (d.protocol == Protocol::kJson) {
        EncodeJson(ctx, d, end_ns, ts.chunk.bytes);
      } else {
        EncodeProtobuf(ctx, d, end_ns, ts.chunk.bytes);
      }
      if (++ts.chunk.spans < chunk_spans_.load(std::memory_order_relaxed)) return;
      full = std::move(ts.chunk);
      ts.chunk = Chunk{};
    }
    std::string spare = Enqueue(std::move(full));
    std::lock_guard<std::mutex> g(ts.mu);
    if (ts.chunk.spans == 0 && ts.chunk.bytes.capacity() < spare.capacity()) ts.chunk.bytes.swap(spare);
  }

 private:
  // Spans a thread hands over at once (fewer when max_batch is smaller).
  static constexpr size_t kChunkSpans = 64;
  // Empty chunk buffers kept for reuse.
  static constexpr size_t kMaxSpare = 64;

  // A thread's buffer, registered with the exporter while the thread lives;
  // what it holds when the thread ends is handed over.
  struct LocalSpans {
    std::shared_ptr<ThreadSpans> spans = std::make_shared<ThreadSpans>();
    LocalSpans() { Get().Register(spans); }
    ~LocalSpans() {
      if (g_exporter_alive) Get().Retire(spans);
    }
  };
  static ThreadSpans& Local() {
    thread_local LocalSpans local;
    return *local.spans;
  }
  void Register(const std::shared_ptr<ThreadSpans>& ts) {
    std::lock_guard<std::mutex> g(mu_);
    registry_.push_back(ts);
  }
  void Retire(const std::shared_ptr<ThreadSpans>& ts) {
    Chunk left;
    {
      std::lock_guard<std::mutex> g(ts->mu);
      left = std::move(ts->chunk);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      registry_.erase(std::remove(registry_.begin(), registry_.end(), ts), registry_.end());
    }
    if (left.spans > 0) Enqueue(std::move(left));
  }

  // Queues `c`; returns an empty buffer a sent chunk left, for the next
  // chunk (buffers go round between the threads instead of through the
  // allocator).
  std::string Enqueue(Chunk c) {
    const size_t n = c.spans;
    bool accepted = false, wake = false;
    std::string spare;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (accepting_ && queued_ + n <= options_.max_queue) {
        accepted = true;
        queued_ += n;
        queue_.push_back(std::move(c));
        wake = queued_ >= options_.max_batch;
      }
      if (!spare_.empty()) {
        spare = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    if (!accepted) {
      Counters().dropped.Increment(static_cast<double>(n));
    } else if (wake) {
      cv_.notify_one();  // one sender per full batch
    }
    return spare;
  }

  // What the threads' buffers hold, to the queue (at each flush).
  void CollectPartial() {
    std::vector<std::shared_ptr<ThreadSpans>> threads;
    {
      std::lock_guard<std::mutex> g(mu_);
      threads = registry_;
    }
    for (const auto& ts : threads) {
      Chunk c;
      {
        std::lock_guard<std::mutex> g(ts->mu);
        if (ts->chunk.spans == 0) continue;
        c = std::move(ts->chunk);
        ts->chunk = Chunk{};
      }
      Enqueue(std::move(c));
    }
  }

  struct CounterSet {
    prometheus::Counter& exported;
    prometheus::Counter& dropped;
    prometheus::Counter& failures;
  };
  static CounterSet& Counters() {
    static CounterSet c{prometheus::BuildCounter()
                            .Name("eco_trace_spans_exported_total")
                            .Help("Spans sent to the OTLP endpoint.")
                            .Register(metrics::Registry())
                            .Add({}),
                        prometheus::BuildCounter()
                            .Name("eco_trace_spans_dropped_total")
                            .Help("Spans dropped: the export queue was full or the endpoint "
                                  "refused or did not answer.")
                            .Register(metrics::Registry())
                            .Add({}),
                        prometheus::BuildCounter()
                            .Name("eco_trace_export_failures_total")
                            .Help("Batches the OTLP endpoint did not accept.")
                            .Register(metrics::Registry())
                            .Add({})};
    return c;
  }

  // One sender: the senders share the queue and the flush deadline.
  void Run() {
    Counters();
    httplib::Client client(base_);
    client.set_keep_alive(true);  // one connection per sender, not one per batch
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(5, 0);
    client.set_write_timeout(5, 0);
    client.set_tcp_nodelay(true);
    std::string body;  // reused: a batch is written into it whole
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lk(mu_);
    while (true) {
      cv_.wait_until(lk, deadline_, [&] { return stop_ || queued_ >= options_.max_batch; });
      // Full batches go at once; what is left waits for the interval (or
      // the stop). Sending the remainder after every batch would, under
      // load, send a stream of small batches: more requests, less batching.
      const bool due = stop_ || Clock::now() >= deadline_;
      if (due) {
        if (!stop_) deadline_ = Clock::now() + options_.flush_interval;
        lk.unlock();
        CollectPartial();
        lk.lock();
      }
      while (queued_ >= options_.max_batch || (due && queued_ > 0)) {
        std::vector<Chunk> batch;
        size_t n = 0;
        while (!queue_.empty() &&
               (batch.empty() || n + queue_.front().spans <= options_.max_batch)) {
          n += queue_.front().spans;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        queued_ -= n;
        lk.unlock();
        Send(client, batch, n, body);
        for (Chunk& c : batch) c.bytes.clear();
        lk.lock();
        for (Chunk& c : batch) {
          if (spare_.size() >= kMaxSpare) break;
          spare_.push_back(std::move(c.bytes));
        }
        if (queued_ >= options_.max_batch) cv_.notify_one();  // another sender may help
      }
      if (stop_) return;
    }
  }

  // OTLP's ExportTraceServiceRequest around the batch's spans. Field
  // numbers are those of opentelemetry/proto/{collector/,}trace/v1,
  // common/v1 and resource/v1; the protobuf library would need a message
  // object per span and per attribute, and OTLP uses only a handful of
  // field shapes.
  void Envelop(const std::vector<Chunk>& batch, std::string& out) const {
    out.clear();
    if (options_.protocol == Protocol::kJson) {
      out.append(R"({"resourceSpans":[{"resource":{"attributes":[)").append(resource_);
      out.append(R"(]},"scopeSpans":[{"scope":{"name":"eco"},"spans":[)");
      for (size_t i = 0; i < batch.size(); ++i) {
        if (i > 0) out.push_back(',');
        out.append(batch[i].bytes);
      }
      out.append("]}]}]}");
      return;
    }
    using namespace pb;
    size_t spans = 0;
    for (const Chunk& c : batch) spans += c.bytes.size();
    const size_t scope = Sized(3);  // InstrumentationScope{name: "eco"}
    const size_t scope_spans = Sized(scope) + spans;
    const size_t resource_spans = Sized(resource_.size()) + Sized(scope_spans);
    out.reserve(Sized(resource_spans));
    char* p = Grow(out, Sized(resource_spans) - spans);
    p = Len(p, 1, resource_spans);                      // resource_spans
    p = Len(p, 1, resource_.size());                    //   resource
    std::memcpy(p, resource_.data(), resource_.size());  //     attributes
    p += resource_.size();
    p = Len(p, 2, scope_spans);  //   scope_spans
    p = Len(p, 1, scope);        //     scope
    Bytes(p, 1, "eco");          //       name
    for (const Chunk& c : batch) out.append(c.bytes);  // spans
  }

  void Send(httplib::Client& client, const std::vector<Chunk>& batch, size_t n, std::string& body) {
    const bool json = options_.protocol == Protocol::kJson;
    Envelop(batch, body);
    // Through a provider: Post(path, body, ...) would copy the body again.
    auto r = client.Post(
        path_, body.size(),
        [&body](size_t offset, size_t length, httplib::DataSink& sink) {
          return sink.write(body.data() + offset, length);
        },
        json ? "application/json" : "application/x-protobuf");
    if (r && r->status >= 200 && r->status < 300) {
      Counters().exported.Increment(static_cast<double>(n));
    } else {
      Counters().failures.Increment();
      Counters().dropped.Increment(static_cast<double>(n));
    }
    // A burst's buffer is not kept for ever.
    if (body.capacity() > (size_t{8} << 20)) std::string().swap(body);
  }

  std::atomic<bool> enabled_{false};
  std::atomic<double> ratio_{1.0};
  std::atomic<Protocol> protocol_{Protocol::kProtobuf};
  std::atomic<size_t> chunk_spans_{kChunkSpans};
  Options options_;       // set by Start while no sender runs
  std::string base_, path_;
  std::string resource_;  // the Resource's attributes, encoded
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> queue_;  // guarded by mu_
  std::vector<std::string> spare_;  // guarded by mu_
  size_t queued_ = 0;        // spans in queue_; guarded by mu_
  bool stop_ = false;        // guarded by mu_
  bool accepting_ = false;   // guarded by mu_: between Start and the end of Stop
  std::chrono::steady_clock::time_point deadline_;  // guarded by mu_: the next flush of partial chunks
  std::vector<std::thread> threads_;                // guarded by mu_
  std::vector<std::shared_ptr<ThreadSpans>> registry_;  // guarded by mu_: every thread's buffer
};

}  // namespace

bool SpanContext::valid() const { return !AllZero(trace_id) && !AllZero(span_id); }
std::string SpanContext::TraceIdHex() const { return ToHex(trace_id); }
std::string SpanContext::SpanIdHex() const { return ToHex(span_id); }
void SpanContext::AppendTraceIdHex(std::string& out) const { AppendHex(out, trace_id); }
void SpanContext::AppendSpanIdHex(std::string& out) const { AppendHex(out, span_id); }

std::optional<SpanContext> Extract(const HeaderLookup& header) {
  if (auto tp = header("traceparent")) {
    if (auto c = FromW3c(Trim(*tp), header("tracestate"))) return c;
  }
  if (auto u = header("uber-trace-id")) {
    if (auto c = FromJaeger(Trim(*u))) return c;
  }
  return FromB3(header);
}

bool IsPropagationHeader(std::string_view name) {
  // Extract needs one of these (x-b3-sampled/-flags mean nothing alone).
  // Called for every header of every request: the length sorts out most.
  // ASCII case folding by one bit; a control character it lets through
  // only costs a needless Extract.
  auto is = [name](std::string_view want) {
    return std::equal(name.begin(), name.end(), want.begin(),
                      [](char a, char b) { return (a | 0x20) == b; });
  };
  switch (name.size()) {
    case 2: return is("b3");
    case 11: return is("traceparent") || is("x-b3-spanid");
    case 12: return is("x-b3-traceid");
    case 13: return is("uber-trace-id");
    default: return false;
  }
}

std::vector<std::pair<std::string, std::string>> Inject(const SpanContext& ctx) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!ctx.valid()) return out;
  const std::string tid = ctx.TraceIdHex(), sid = ctx.SpanIdHex();
  out.emplace_back("traceparent", "00-" + tid + "-" + sid + (ctx.sampled ? "-01" : "-00"));
  if (!ctx.tracestate.empty()) out.emplace_back("tracestate", ctx.tracestate);
  out.emplace_back("uber-trace-id", tid + ":" + sid + ":0:" + (ctx.sampled ? "1" : "0"));
  return out;
}

Span Span::Start(std::string_view name, Kind kind, const SpanContext* parent) {
  if (parent == nullptr && t_current) parent = &*t_current;
  Exporter& ex = Exporter::Get();
  const bool has_parent = parent != nullptr && parent->valid();
  if (!has_parent && !ex.enabled()) return Span();  // nothing to record or pass on
  Span s;
  if (has_parent) {
    s.ctx_.trace_id = parent->trace_id;
    s.ctx_.sampled = parent->sampled;
    s.ctx_.tracestate = parent->tracestate;
  } else {
    RandomId(s.ctx_.trace_id);
    // 53 random bits as a double in [0, 1).
    const double ratio = ex.ratio();
    s.ctx_.sampled = ratio >= 1 || static_cast<double>(NextRandom() >> 11) * 0x1.0p-53 < ratio;
  }
  RandomId(s.ctx_.span_id);
  s.recording_ = ex.enabled() && s.ctx_.sampled;
  if (s.recording_) {
    s.data_ = DataPool::Take();
    s.data_->protocol = ex.protocol();
    s.data_->name.assign(name);
    s.data_->kind = kind;
    if (has_parent) {
      s.data_->has_parent = true;
      s.data_->parent = parent->span_id;
    }
    s.data_->start_ns = UnixNanos();
  }
  return s;
}

Span Span::Child(std::string_view name, Kind kind) {
  if (!t_current) return Span();
  return Start(name, kind, &*t_current);
}

Span::Span(Span&& o) noexcept
    : ctx_(std::move(o.ctx_)), recording_(o.recording_), data_(std::move(o.data_)) {
  o.recording_ = false;
}

Span& Span::operator=(Span&& o) noexcept {
  if (this != &o) {
    End();
    ctx_ = std::move(o.ctx_);
    recording_ = o.recording_;
    data_ = std::move(o.data_);
    o.recording_ = false;
  }
  return *this;
}

Span::Span() = default;
Span::~Span() { End(); }

void Span::SetName(std::string_view name) {
  if (data_) data_->name.assign(name);
}
void Span::SetName(std::initializer_list<std::string_view> parts) {
  if (!data_) return;
  data_->name.clear();
  for (std::string_view p : parts) data_->name.append(p);
}
void Span::SetAttribute(std::string_view key, std::string_view value) {
  if (!data_ || data_->n_attrs == Data::kMaxAttributes) return;
  ++data_->n_attrs;
  if (data_->protocol == Protocol::kJson) {
    js::AppendAttribute(data_->attrs, key, value);
  } else {
    pb::AppendAttribute(data_->attrs, 9, key, value);  // Span.attributes
  }
}
void Span::SetAttribute(std::string_view key, int64_t value) {
  if (!data_ || data_->n_attrs == Data::kMaxAttributes) return;
  ++data_->n_attrs;
  if (data_->protocol == Protocol::kJson) {
    js::AppendAttribute(data_->attrs, key, value);
  } else {
    pb::AppendAttribute(data_->attrs, 9, key, value);
  }
}
void Span::SetError(std::string_view message) {
  if (!data_) return;
  data_->has_error = true;
  data_->error.assign(message);
}

void Span::End() {
  if (!data_) return;
  Exporter::Get().Record(ctx_, *data_, UnixNanos());
  DataPool::Give(std::move(data_));
  recording_ = false;
}

Scope::Scope(const Span& span) : Scope(span.context()) {}

Scope::Scope(const SpanContext& ctx) : previous_(t_current) {
  if (ctx.valid()) {
    t_current = ctx;
  } else {
    t_current.reset();
  }
}

Scope::~Scope() { t_current = previous_; }

const SpanContext* Current() { return t_current ? &*t_current : nullptr; }

Status Configure(const Options& options) {
  if (options.endpoint.empty()) return Status::Ok();
  return Exporter::Get().Start(options);
}

void Shutdown() { Exporter::Get().Stop(); }

}  // namespace eco::trace
