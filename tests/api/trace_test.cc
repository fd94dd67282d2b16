// Tracing (common/trace.h): reading and writing W3C, Jaeger and B3 context,
// parent/child spans, trace ids in log lines, and the OTLP/HTTP exporter
// against a receiver on loopback.
#include "common/trace.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/hex.h"
#include "common/log.h"
#include "common/metrics.h"
#include "otlp_receiver.h"
#include "process.h"

namespace eco::trace {
namespace {

using nlohmann::json;

HeaderLookup Headers(std::map<std::string, std::string> h) {
  return [h = std::move(h)](std::string_view name) -> std::optional<std::string> {
    auto it = h.find(std::string(name));
    return it == h.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// Trace ids are written four bytes at a time: every byte value, at every
// position and length, reads back as printf writes it.
TEST(Hex, EveryByteAtEveryOffsetMatchesPrintf) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (int i = 255; i >= 0; --i) bytes.push_back(static_cast<char>(i * 7));
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{16}, size_t{63},
                       size_t{64}, size_t{65}, bytes.size() - start}) {
      const std::string_view in = std::string_view(bytes).substr(start, len);
      std::string want;
      for (char c : in) {
        char d[3];
        std::snprintf(d, sizeof d, "%02x", static_cast<unsigned char>(c));
        want += d;
      }
      std::string got = "x";
      hex::Append(got, in);
      ASSERT_EQ(got, "x" + want) << start << "+" << len;
    }
  }
}

TEST(TraceContext, ReadsW3cTraceparentAndTracestate) {
  auto c =
      Extract(Headers({{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                       {"tracestate", "vendor=x"}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->TraceIdHex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->SpanIdHex(), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(c->tracestate, "vendor=x");
  auto unsampled = Extract(
      Headers({{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}}));
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled);
}

TEST(TraceContext, RefusesMalformedW3c) {
  for (const char* bad :
       {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",           // no flags
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",        // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",        // zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",         // short id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // 00 has 4 fields
        "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01"}) {     // not hex
    EXPECT_FALSE(Extract(Headers({{"traceparent", bad}}))) << bad;
  }
  // A later version may add fields.
  EXPECT_TRUE(Extract(
      Headers({{"traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"}})));
}

TEST(TraceContext, ReadsJaegerUberTraceId) {
  auto c = Extract(Headers({{"uber-trace-id", "a3ce929d0e0e4736:f067aa0ba902b7:0:1"}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->TraceIdHex(), "0000000000000000a3ce929d0e0e4736");  // 64-bit ids widen
  EXPECT_EQ(c->SpanIdHex(), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  auto encoded = Extract(
      Headers({{"uber-trace-id", "4bf92f3577b34da6a3ce929d0e0e4736%3A00f067aa0ba902b7%3A0%3A0"}}));
  ASSERT_TRUE(encoded);
  EXPECT_FALSE(encoded->sampled);
  EXPECT_FALSE(Extract(Headers({{"uber-trace-id", "a3ce929d0e0e4736:f067aa0ba902b7:1"}})));
}

TEST(TraceContext, ReadsB3SingleAndMultipleHeaders) {
  auto single = Extract(
      Headers({{"b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90"}}));
  ASSERT_TRUE(single);
  EXPECT_EQ(single->TraceIdHex(), "80f198ee56343ba864fe8b2a57d3eff7");
  EXPECT_EQ(single->SpanIdHex(), "e457b5a2e4d86bd1");
  EXPECT_TRUE(single->sampled);
  auto denied = Extract(Headers({{"b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-0"}}));
  ASSERT_TRUE(denied);
  EXPECT_FALSE(denied->sampled);
  auto multi = Extract(Headers({{"x-b3-traceid", "64fe8b2a57d3eff7"},
                                {"x-b3-spanid", "e457b5a2e4d86bd1"},
                                {"x-b3-sampled", "0"}}));
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->TraceIdHex(), "000000000000000064fe8b2a57d3eff7");
  EXPECT_FALSE(multi->sampled);
  EXPECT_FALSE(Extract(Headers({{"x-b3-traceid", "64fe8b2a57d3eff7"}})));  // no span id
  // W3C wins when both are there.
  auto both =
      Extract(Headers({{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                       {"b3", "80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1"}}));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->TraceIdHex(), "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST(TraceContext, WritesW3cAndJaegerHeadersThatReadBack) {
  auto c =
      Extract(Headers({{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                       {"tracestate", "k=v"}}));
  ASSERT_TRUE(c);
  std::map<std::string, std::string> out;
  for (auto& [k, v] : Inject(*c)) out[k] = v;
  EXPECT_EQ(out["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(out["tracestate"], "k=v");
  EXPECT_EQ(out["uber-trace-id"], "4bf92f3577b34da6a3ce929d0e0e4736:00f067aa0ba902b7:0:1");
  auto back = Extract(Headers({{"uber-trace-id", out["uber-trace-id"]}}));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->TraceIdHex(), c->TraceIdHex());
  EXPECT_TRUE(Inject(SpanContext{}).empty());
}

// The exporter runs once at a time in a process: each case configures it,
// records, and shuts it down, against a receiver on loopback that decodes
// protobuf with the protobuf library (tests/fixtures/otlp_trace.proto).
class TraceExport : public ::testing::TestWithParam<Protocol> {};

TEST_P(TraceExport, SpansReachTheOtlpEndpointWithTheirParentsAndLogLinesCarryTheirIds) {
  eco::testing::OtlpReceiver receiver;

  // Before Configure: no parent, nothing recorded, no ids.
  EXPECT_FALSE(Span::Start("off").context().valid());
  EXPECT_EQ(Configure({.endpoint = "https://127.0.0.1:1"}).code(), Code::kInvalid);
  EXPECT_EQ(Configure({.endpoint = "127.0.0.1:4318"}).code(), Code::kInvalid);
  Options o;
  o.endpoint = receiver.url();
  o.protocol = GetParam();
  o.service_name = "eco-test";
  o.flush_interval = std::chrono::milliseconds(50);
  ASSERT_TRUE(Configure(o).ok());

  std::mutex mu;
  std::vector<std::string> lines;
  log::SetSinkForTest([&](const std::string& l) {
    std::lock_guard<std::mutex> g(mu);
    lines.push_back(l);
  });
  // A caller's context with a tracestate, as an inbound request brings it.
  SpanContext caller = *Extract(Headers(
      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
       {"tracestate", "vendor=a\"b"}}));
  const std::string odd = "/v2/p\"q\\r\n\u00e9\u4e2d\U0001F600";  // escapes and UTF-8
  std::string root_id, child_id;
  {
    Span root = Span::Start("root", Kind::kServer, &caller);
    ASSERT_TRUE(root.recording());
    root.SetAttribute("url.path", odd);
    root.SetAttribute("http.response.status_code", int64_t{200});
    root_id = root.context().SpanIdHex();
    Scope scope(root);
    EXPECT_EQ(Current()->SpanIdHex(), root_id);
    Span child = Span::Child("child " + odd, Kind::kClient);
    child.SetAttribute("n", int64_t{-7});
    child.SetAttribute("big", int64_t{1} << 40);
    child.SetError("it failed: " + odd);
    child_id = child.context().SpanIdHex();
    log::Write(log::Level::kWarn, "test", "inside");
  }
  EXPECT_EQ(Current(), nullptr);
  EXPECT_FALSE(Span::Child("no parent").context().valid());  // Child makes no root
  log::Write(log::Level::kWarn, "test", "outside");
  log::Flush();
  log::SetSinkForTest(nullptr);

  ASSERT_TRUE(testing::WaitUntil([&] { return receiver.spans().size() >= 2; },
                                 std::chrono::seconds(10)));
  Shutdown();
  EXPECT_EQ(receiver.bad_requests(), 0);
  for (const std::string& type : receiver.content_types()) {
    EXPECT_EQ(type, GetParam() == Protocol::kJson ? "application/json" : "application/x-protobuf");
  }

  std::map<std::string, json> by_name;
  for (const auto& s : receiver.spans()) by_name[s["name"]] = s;
  ASSERT_EQ(by_name.size(), 2u);
  ASSERT_TRUE(by_name.count("root") && by_name.count("child " + odd));
  json root = by_name["root"], child = by_name["child " + odd];
  EXPECT_EQ(root["service"], "eco-test");
  EXPECT_EQ(root["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(root["spanId"], root_id);
  EXPECT_EQ(root["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(root["traceState"], "vendor=a\"b");
  EXPECT_EQ(root["kind"], 2);
  EXPECT_FALSE(root.contains("status"));
  ASSERT_EQ(root["attributes"].size(), 2u);
  EXPECT_EQ(root["attributes"][0]["key"], "url.path");
  EXPECT_EQ(root["attributes"][0]["value"]["stringValue"], odd);
  EXPECT_EQ(root["attributes"][1]["value"]["intValue"], "200");
  EXPECT_EQ(child["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(child["spanId"], child_id);
  EXPECT_EQ(child["parentSpanId"], root_id);
  EXPECT_EQ(child["kind"], 3);
  EXPECT_EQ(child["status"]["code"], 2);
  EXPECT_EQ(child["status"]["message"], "it failed: " + odd);
  ASSERT_EQ(child["attributes"].size(), 2u);
  EXPECT_EQ(child["attributes"][0]["value"]["intValue"], "-7");
  EXPECT_EQ(child["attributes"][1]["value"]["intValue"], std::to_string(int64_t{1} << 40));
  EXPECT_LE(std::stoull(child["startTimeUnixNano"].get<std::string>()),
            std::stoull(child["endTimeUnixNano"].get<std::string>()));
  EXPECT_GT(std::stoull(child["startTimeUnixNano"].get<std::string>()), 1'600'000'000'000'000'000ull);

  ASSERT_EQ(lines.size(), 2u);
  json inside = json::parse(lines[0]);
  EXPECT_EQ(inside["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(inside["span_id"], root_id);
  EXPECT_FALSE(json::parse(lines[1]).contains("trace_id"));
}

// A slow collector: with several senders, batches are in flight at once
// (one sender would export one batch per round trip); nothing is lost.
TEST(TraceExportSenders, BatchesGoInParallelToASlowCollector) {
  for (size_t senders : {size_t{1}, size_t{4}}) {
    eco::testing::OtlpReceiver receiver;
    receiver.set_delay(std::chrono::milliseconds(300));
    Options o;
    o.endpoint = receiver.url();
    o.max_batch = 10;
    o.senders = senders;
    o.flush_interval = std::chrono::milliseconds(50);
    ASSERT_TRUE(Configure(o).ok());
    for (int i = 0; i < 80; ++i) Span::Start("s" + std::to_string(i), Kind::kServer).End();
    ASSERT_TRUE(testing::WaitUntil([&] { return receiver.spans().size() == 80; }, std::chrono::seconds(30)))
        << senders << " senders: " << receiver.spans().size() << " spans";
    Shutdown();
    if (senders == 1) {
      EXPECT_EQ(receiver.max_in_flight(), 1);
    } else {
      EXPECT_GE(receiver.max_in_flight(), 2) << "batches waited for each other";
      EXPECT_LE(receiver.max_in_flight(), 4);
    }
  }
}

// The value of a counter without labels in the process's metrics.
double CounterValue(const std::string& name) {
  const std::string text = metrics::Render();
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + name.size() + 2));
}

// A collector slower than the spans come: what the queue cannot hold is
// dropped and counted, and every span is either exported or counted.
TEST(TraceExportQueue, WhatDoesNotFitIsDroppedAndCounted) {
  eco::testing::OtlpReceiver receiver;
  receiver.set_delay(std::chrono::milliseconds(500));
  Options o;
  o.endpoint = receiver.url();
  o.max_batch = 5;
  o.max_queue = 10;
  o.senders = 1;
  o.flush_interval = std::chrono::milliseconds(50);
  ASSERT_TRUE(Configure(o).ok());
  const double exported0 = CounterValue("eco_trace_spans_exported_total");
  const double dropped0 = CounterValue("eco_trace_spans_dropped_total");
  for (int i = 0; i < 100; ++i) Span::Start("s" + std::to_string(i), Kind::kServer).End();
  Shutdown();  // sends what the queue and the thread's buffer hold
  const double exported = CounterValue("eco_trace_spans_exported_total") - exported0;
  const double dropped = CounterValue("eco_trace_spans_dropped_total") - dropped0;
  EXPECT_GT(dropped, 0);
  EXPECT_GE(exported, 10);
  EXPECT_EQ(exported + dropped, 100);
  EXPECT_EQ(static_cast<double>(receiver.spans().size()), exported);
}

// Spans ended on threads that then exit are handed over when the threads
// end, and sent with the next flush.
TEST(TraceExportQueue, SpansOfThreadsThatEndAreSent) {
  eco::testing::OtlpReceiver receiver;
  Options o;
  o.endpoint = receiver.url();
  o.flush_interval = std::chrono::milliseconds(50);
  ASSERT_TRUE(Configure(o).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 7; ++i) Span::Start("t" + std::to_string(t) + "." + std::to_string(i)).End();
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(testing::WaitUntil([&] { return receiver.spans().size() >= 28; }, std::chrono::seconds(10)))
      << receiver.spans().size();
  Shutdown();
  std::set<std::string> names, ids;
  for (const auto& s : receiver.spans()) {
    names.insert(s["name"].get<std::string>());
    ids.insert(s["spanId"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 28u);
  EXPECT_EQ(ids.size(), 28u);
}

INSTANTIATE_TEST_SUITE_P(Protocols, TraceExport,
                         ::testing::Values(Protocol::kProtobuf, Protocol::kJson),
                         [](const auto& info) {
                           return info.param == Protocol::kJson ? "Json" : "Protobuf";
                         });

TEST(TraceContext, PropagationHeadersAreKnownInAnyCase) {
  for (const char* h : {"traceparent", "TraceParent", "uber-trace-id", "B3", "X-B3-TraceId",
                        "x-b3-spanid"}) {
    EXPECT_TRUE(IsPropagationHeader(h)) << h;
  }
  for (const char* h : {"tracestate", "x-b3-sampled", "host", "", "traceparent2", "b"}) {
    EXPECT_FALSE(IsPropagationHeader(h)) << h;
  }
}

}  // namespace
}  // namespace eco::trace
