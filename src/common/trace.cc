#include "common/trace.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
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
  do {
    for (size_t i = 0; i < N; i += 8) {
      uint64_t r = NextRandom();
      for (size_t j = 0; j < 8 && i + j < N; ++j) out[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (AllZero(out));
}

// A span attribute: a string or an integer. Kept in reused slots, so that
// recording a span allocates nothing once the pool of span data is warm.
struct Attr {
  const char* key = "";
  bool is_int = false;
  int64_t num = 0;
  std::string str;
};

// Protobuf wire format: the few shapes OTLP's span messages need. Sizes
// are computed first so that a batch is written in one buffer, front to back.
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
char* Tag(char* p, int field, int wire) { return Varint(p, static_cast<uint64_t>(field << 3 | wire)); }
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
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
  return p;
}

// KeyValue{key = 1, value = 2: AnyValue{string_value = 1 | int_value = 3}}.
size_t AnyValueSize(const Attr& a) {
  return a.is_int ? 1 + VarintSize(static_cast<uint64_t>(a.num)) : Sized(a.str.size());
}
size_t AttributeSize(const Attr& a) {
  return Sized(std::strlen(a.key)) + Sized(AnyValueSize(a));
}
char* Attribute(char* p, int field, const Attr& a) {
  p = Len(p, field, AttributeSize(a));
  p = Bytes(p, 1, a.key);
  p = Len(p, 2, AnyValueSize(a));
  if (!a.is_int) return Bytes(p, 1, a.str);
  return Varint(Tag(p, 3, kVarint), static_cast<uint64_t>(a.num));
}
}  // namespace pb

thread_local std::optional<SpanContext> t_current;

}  // namespace

struct Span::Data {
  static constexpr size_t kMaxAttributes = 8;  // eco's spans carry at most 5; more are ignored
  std::string name;
  Kind kind = Kind::kInternal;
  std::optional<std::array<uint8_t, 8>> parent;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::array<Attr, kMaxAttributes> attrs;
  size_t n_attrs = 0;
  bool has_error = false;
  std::string error;

  // Ready for another span; the strings keep their buffers.
  void Reset() {
    name.clear();
    parent.reset();
    n_attrs = 0;
    has_error = false;
    error.clear();
  }
  Attr* NewAttribute(const char* key) {
    if (n_attrs == attrs.size()) return nullptr;
    Attr& a = attrs[n_attrs++];
    a.key = key;
    return &a;
  }
};

namespace {

// Span data is reused: the exporter hands sent spans back here, and new
// spans take them, so recording allocates nothing in a steady state (and
// no memory moves from the exporter's thread to the request threads
// through the allocator, which costs far more than its instructions when
// many threads share few cores). Each thread takes them in handfuls.
class DataPool {
 public:
  static DataPool& Get() {
    static DataPool p;
    return p;
  }
  std::unique_ptr<Span::Data> Take() {
    thread_local std::vector<std::unique_ptr<Span::Data>> local;
    if (local.empty()) {
      std::lock_guard<std::mutex> g(mu_);
      const size_t n = std::min(free_.size(), kHandful);
      for (size_t i = 0; i < n; ++i) {
        local.push_back(std::move(free_.back()));
        free_.pop_back();
      }
    }
    if (local.empty()) return std::make_unique<Span::Data>();
    std::unique_ptr<Span::Data> d = std::move(local.back());
    local.pop_back();
    return d;
  }
  // `spans` are reset outside the lock; beyond the bound they are freed.
  void Give(std::vector<std::unique_ptr<Span::Data>>& spans) {
    for (auto& d : spans) d->Reset();
    std::lock_guard<std::mutex> g(mu_);
    for (auto& d : spans) {
      if (free_.size() >= kMaxFree) break;
      free_.push_back(std::move(d));
    }
  }

 private:
  static constexpr size_t kHandful = 32;
  // Kept for reuse after a burst; a steady load needs about a batch.
  static constexpr size_t kMaxFree = 8192;
  std::mutex mu_;
  std::vector<std::unique_ptr<Span::Data>> free_;  // guarded by mu_
};

// The exporter: finished spans queue here and a thread sends them.
class Exporter {
 public:
  static Exporter& Get() {
    static Exporter e;
    return e;
  }
  Exporter() { DataPool::Get(); }  // built first, so it outlives the exporter's thread at exit
  ~Exporter() { Stop(); }

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  double ratio() const { return options_.sample_ratio; }

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
    base_ = slash == std::string::npos ? ep : ep.substr(0, slash);
    path_ = slash == std::string::npos || ep.substr(slash) == "/" ? "/v1/traces" : ep.substr(slash);
    if (base_.size() <= 7) return Invalid("--otlp-endpoint has no host: \"" + ep + "\"");
    std::lock_guard<std::mutex> g(mu_);
    if (!threads_.empty()) return Invalid("tracing is configured already");
    options_ = o;
    if (options_.senders == 0) options_.senders = 1;
    stop_ = false;
    enabled_ = true;
    deadline_ = std::chrono::steady_clock::now() + options_.flush_interval;
    for (size_t i = 0; i < options_.senders; ++i) threads_.emplace_back([this] { Run(); });
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
    enabled_ = false;
  }

  void Add(const SpanContext& ctx, std::unique_ptr<Span::Data> d) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (queue_.size() >= options_.max_queue) {
        Counters().dropped.Increment();
        return;
      }
      queue_.push_back(Finished{ctx, std::move(d)});
      if (queue_.size() < options_.max_batch) return;
    }
    cv_.notify_one();  // one sender per full batch
  }

 private:
  struct Finished {
    SpanContext ctx;
    std::unique_ptr<Span::Data> data;
  };
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
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lk(mu_);
    while (true) {
      cv_.wait_until(lk, deadline_, [&] { return stop_ || queue_.size() >= options_.max_batch; });
      // Full batches go at once; what is left waits for the interval (or
      // the stop). Sending the remainder after every batch would, under
      // load, send a stream of small batches: more requests, less batching.
      const bool due = stop_ || Clock::now() >= deadline_;
      if (due && !stop_) deadline_ = Clock::now() + options_.flush_interval;
      while (queue_.size() >= options_.max_batch || (due && !queue_.empty())) {
        std::vector<Finished> batch;
        batch.reserve(std::min(queue_.size(), options_.max_batch));
        while (!queue_.empty() && batch.size() < options_.max_batch) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
        lk.unlock();
        Send(client, batch);
        std::vector<std::unique_ptr<Span::Data>> used;
        used.reserve(batch.size());
        for (auto& f : batch) used.push_back(std::move(f.data));
        DataPool::Get().Give(used);  // outside the lock too
        lk.lock();
        if (queue_.size() >= options_.max_batch) cv_.notify_one();  // another sender may help
      }
      if (stop_) return;
    }
  }

  // OTLP/JSON written directly: a JSON value per span field would cost more
  // than the span itself.
  std::string EncodeJson(const std::vector<Finished>& batch) const {
    std::string out;
    out.reserve(256 + batch.size() * 400);
    out.append(R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":)");
    log::AppendJsonString(out, options_.service_name);
    out.append(R"(}}]},"scopeSpans":[{"scope":{"name":"eco"},"spans":[)");
    bool first = true;
    for (const auto& f : batch) {
      const Span::Data& d = *f.data;
      if (!first) out.push_back(',');
      first = false;
      out.append(R"({"traceId":")").append(f.ctx.TraceIdHex());
      out.append(R"(","spanId":")").append(f.ctx.SpanIdHex()).push_back('"');
      if (d.parent) out.append(R"(,"parentSpanId":")").append(ToHex(*d.parent)).push_back('"');
      if (!f.ctx.tracestate.empty()) {
        out.append(R"(,"traceState":)");
        log::AppendJsonString(out, f.ctx.tracestate);
      }
      out.append(R"(,"name":)");
      log::AppendJsonString(out, d.name);
      out.append(R"(,"kind":)").append(std::to_string(static_cast<int>(d.kind)));
      out.append(R"(,"startTimeUnixNano":")").append(std::to_string(d.start_ns));
      out.append(R"(","endTimeUnixNano":")").append(std::to_string(d.end_ns)).append(R"(","attributes":[)");
      for (size_t i = 0; i < d.n_attrs; ++i) {
        const Attr& a = d.attrs[i];
        if (i > 0) out.push_back(',');
        out.append(R"({"key":)");
        log::AppendJsonString(out, a.key);
        if (!a.is_int) {
          out.append(R"(,"value":{"stringValue":)");
          log::AppendJsonString(out, a.str);
          out.append("}}");
        } else {
          out.append(R"(,"value":{"intValue":")").append(std::to_string(a.num)).append("\"}}");
        }
      }
      out.push_back(']');
      if (d.has_error) {
        out.append(R"(,"status":{"code":2,"message":)");
        log::AppendJsonString(out, d.error);
        out.push_back('}');
      }
      out.push_back('}');
    }
    out.append("]}]}]}");
    return out;
  }

  // OTLP's ExportTraceServiceRequest in protobuf wire format, written
  // directly: the protobuf library would need a message object per span and
  // per attribute, and OTLP uses only a handful of field shapes. Field
  // numbers are those of opentelemetry/proto/{collector/,}trace/v1,
  // common/v1 and resource/v1.
  std::string EncodeProtobuf(const std::vector<Finished>& batch) const {
    using namespace pb;
    auto span_size = [](const Finished& f) {
      const Span::Data& d = *f.data;
      size_t n = Sized(16) + Sized(8) + Sized(d.name.size()) + 2 + 9 + 9;  // ids, name, kind, times
      if (!f.ctx.tracestate.empty()) n += Sized(f.ctx.tracestate.size());
      if (d.parent) n += Sized(8);
      for (size_t i = 0; i < d.n_attrs; ++i) n += Sized(AttributeSize(d.attrs[i]));
      if (d.has_error) n += Sized(Sized(d.error.size()) + 2);
      return n;
    };
    std::vector<size_t> sizes;
    sizes.reserve(batch.size());
    const size_t scope = Sized(Sized(3));  // InstrumentationScope{name: "eco"}
    size_t scope_spans = scope;
    for (const auto& f : batch) {
      sizes.push_back(span_size(f));
      scope_spans += Sized(sizes.back());
    }
    Attr service;
    service.key = "service.name";
    service.str = options_.service_name;
    const size_t resource = Sized(AttributeSize(service));
    const size_t resource_spans = Sized(resource) + Sized(scope_spans);
    std::string out(Sized(resource_spans), '\0');
    char* p = out.data();
    p = Len(p, 1, resource_spans);                     // resource_spans
    p = Len(p, 1, resource);                           //   resource
    p = Attribute(p, 1, service);                      //     attributes
    p = Len(p, 2, scope_spans);                        //   scope_spans
    p = Len(p, 1, Sized(3));                           //     scope
    p = Bytes(p, 1, "eco");                            //       name
    for (size_t i = 0; i < batch.size(); ++i) {        //     spans
      const Finished& f = batch[i];
      const Span::Data& d = *f.data;
      p = Len(p, 2, sizes[i]);
      p = Bytes(p, 1, IdBytes(f.ctx.trace_id));
      p = Bytes(p, 2, IdBytes(f.ctx.span_id));
      if (!f.ctx.tracestate.empty()) p = Bytes(p, 3, f.ctx.tracestate);
      if (d.parent) p = Bytes(p, 4, IdBytes(*d.parent));
      p = Bytes(p, 5, d.name);
      p = Varint(Tag(p, 6, kVarint), static_cast<uint64_t>(d.kind));
      p = Fixed64(p, 7, d.start_ns);
      p = Fixed64(p, 8, d.end_ns);
      for (size_t a = 0; a < d.n_attrs; ++a) p = Attribute(p, 9, d.attrs[a]);
      if (d.has_error) {  // Status{message = 2, code = 3: 2 (ERROR)}
        p = Len(p, 15, Sized(d.error.size()) + 2);
        p = Bytes(p, 2, d.error);
        p = Varint(Tag(p, 3, kVarint), 2);
      }
    }
    if (p != out.data() + out.size()) return {};  // a size above is wrong: send nothing
    return out;
  }

  void Send(httplib::Client& client, const std::vector<Finished>& batch) {
    const bool json = options_.protocol == Protocol::kJson;
    const std::string body = json ? EncodeJson(batch) : EncodeProtobuf(batch);
    if (body.empty()) {
      Counters().failures.Increment();
      Counters().dropped.Increment(static_cast<double>(batch.size()));
      return;
    }
    auto r = client.Post(path_, body, json ? "application/json" : "application/x-protobuf");
    if (r && r->status >= 200 && r->status < 300) {
      Counters().exported.Increment(static_cast<double>(batch.size()));
    } else {
      Counters().failures.Increment();
      Counters().dropped.Increment(static_cast<double>(batch.size()));
    }
  }

  std::atomic<bool> enabled_{false};
  Options options_;
  std::string base_, path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Finished> queue_;  // guarded by mu_
  bool stop_ = false;           // guarded by mu_
  std::chrono::steady_clock::time_point deadline_;  // guarded by mu_: the next flush of a partial batch
  std::vector<std::thread> threads_;  // guarded by mu_
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
  auto is = [name](std::string_view want) {
    return std::equal(name.begin(), name.end(), want.begin(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) == b;
    });
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
    s.ctx_.sampled = static_cast<double>(NextRandom() >> 11) * 0x1.0p-53 < ex.ratio();
  }
  RandomId(s.ctx_.span_id);
  s.recording_ = ex.enabled() && s.ctx_.sampled;
  if (s.recording_) {
    s.data_ = DataPool::Get().Take();
    s.data_->name.assign(name);
    s.data_->kind = kind;
    if (has_parent) s.data_->parent = parent->span_id;
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
void Span::SetAttribute(const char* key, std::string_view value) {
  if (!data_) return;
  if (Attr* a = data_->NewAttribute(key)) {
    a->is_int = false;
    a->str.assign(value);
  }
}
void Span::SetAttribute(const char* key, int64_t value) {
  if (!data_) return;
  if (Attr* a = data_->NewAttribute(key)) {
    a->is_int = true;
    a->num = value;
  }
}
void Span::SetError(std::string_view message) {
  if (!data_) return;
  data_->has_error = true;
  data_->error.assign(message);
}

void Span::End() {
  if (!data_) return;
  data_->end_ns = UnixNanos();
  Exporter::Get().Add(ctx_, std::move(data_));
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
