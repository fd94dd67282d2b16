// Distributed tracing: spans, context propagation and an OTLP/HTTP exporter.
//
// No OpenTelemetry library for C++ is packaged in Debian, so this is a small
// one written here: spans are recorded when sampled and sent in batches,
// off the request path, as OTLP/HTTP (`POST <endpoint>/v1/traces`, binary
// protobuf by default, or JSON), which Jaeger and the OpenTelemetry
// Collector ingest natively.
//
// Propagation: W3C `traceparent`/`tracestate` and Jaeger's `uber-trace-id`
// are read and written; B3 (`b3`, `X-B3-TraceId`/`-SpanId`/`-Sampled`) is
// read. Header names are matched case-insensitively (gRPC metadata is lower
// case).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace eco::trace {

struct SpanContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  bool sampled = false;
  std::string tracestate;  // W3C, passed on as received

  bool valid() const;
  std::string TraceIdHex() const;
  std::string SpanIdHex() const;
  void AppendTraceIdHex(std::string& out) const;
  void AppendSpanIdHex(std::string& out) const;
};

// Looks a header up by lower-case name; nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view)>;

// The caller's context from W3C, Jaeger or B3 headers (in that order of
// preference); nullopt when none is present and valid.
std::optional<SpanContext> Extract(const HeaderLookup& header);

// Whether a header of this name (any case) can carry a context: a request
// with none needs no Extract.
bool IsPropagationHeader(std::string_view name);

// Headers that carry `ctx` to the next hop: traceparent, tracestate (when
// set) and uber-trace-id. Names are lower case.
std::vector<std::pair<std::string, std::string>> Inject(const SpanContext& ctx);

enum class Kind { kInternal = 1, kServer = 2, kClient = 3 };

// One operation. Records nothing unless tracing is configured and the span
// is sampled; ends when End() is called or it is destroyed.
class Span {
 public:
  Span();  // a span that records nothing
  // A child of `parent`, of the calling thread's current span when null,
  // or a new trace (sampled by the configured ratio) when there is none.
  static Span Start(std::string_view name, Kind kind = Kind::kInternal,
                    const SpanContext* parent = nullptr);
  // Only as the child of a span in progress: nothing when there is none
  // (calls made outside any request, such as rsync's, make no root traces).
  static Span Child(std::string_view name, Kind kind = Kind::kInternal);

  Span(Span&& o) noexcept;
  Span& operator=(Span&& o) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span();

  bool recording() const { return recording_; }
  // Valid whenever a trace is known, recording or not (it is propagated).
  const SpanContext& context() const { return ctx_; }
  void SetName(std::string_view name);
  void SetName(std::initializer_list<std::string_view> parts);  // joined
  // At most 8 per span; more are ignored.
  void SetAttribute(std::string_view key, std::string_view value);
  void SetAttribute(std::string_view key, int64_t value);
  void SetError(std::string_view message);
  void End();

  struct Data;  // what a recording span keeps (trace.cc)

 private:
  SpanContext ctx_;
  bool recording_ = false;
  std::unique_ptr<Data> data_;
};

// Makes `span` the calling thread's current span until destroyed.
class Scope {
 public:
  explicit Scope(const Span& span);
  explicit Scope(const SpanContext& ctx);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::optional<SpanContext> previous_;
};

// The calling thread's current span context, if any.
const SpanContext* Current();

enum class Protocol {
  kProtobuf,  // OTLP/HTTP binary protobuf (application/x-protobuf), OTLP's default
  kJson,      // OTLP/HTTP JSON (application/json)
};

struct Options {
  std::string endpoint;       // "http://host:4318"; empty: tracing off
  Protocol protocol = Protocol::kProtobuf;
  double sample_ratio = 1.0;  // of new traces; a caller's decision is followed
  std::string service_name = "eco";
  size_t max_queue = 16384;  // finished spans waiting; more are dropped (counted)
  size_t max_batch = 512;
  // Batches sent at once, each on its own connection: one sender waiting
  // for a slow or distant collector's answer would cap the export rate at
  // max_batch spans per round trip.
  size_t senders = 4;
  std::chrono::milliseconds flush_interval{1000};
};

// Starts the exporter (kInvalid for a bad endpoint or ratio). Call once, at
// start; without it spans record nothing.
Status Configure(const Options& options);
// Sends what is queued and stops the exporter (at exit).
void Shutdown();

}  // namespace eco::trace
