// Tracing (common/trace.h): reading and writing W3C, Jaeger and B3 context,
// parent/child spans, trace ids in log lines, and the OTLP/HTTP exporter
// against a receiver on loopback.
#include "common/trace.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/log.h"
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

// The exporter is configured once per process: everything that needs it
// runs in this one test, against a receiver on loopback.
TEST(TraceExport, SpansReachTheOtlpEndpointWithTheirParentsAndLogLinesCarryTheirIds) {
  httplib::Server receiver;
  std::mutex mu;
  std::vector<json> spans;
  receiver.Post("/v1/traces", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    std::lock_guard<std::mutex> g(mu);
    for (const auto& rs : body["resourceSpans"]) {
      EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "eco-test");
      for (const auto& ss : rs["scopeSpans"]) {
        for (const auto& s : ss["spans"]) spans.push_back(s);
      }
    }
    res.set_content("{}", "application/json");
  });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { receiver.listen_after_bind(); });

  // Before Configure: no parent, nothing recorded, no ids.
  EXPECT_FALSE(Span::Start("off").context().valid());
  EXPECT_EQ(Configure({.endpoint = "https://127.0.0.1:1"}).code(), Code::kInvalid);
  EXPECT_EQ(Configure({.endpoint = "127.0.0.1:4318"}).code(), Code::kInvalid);
  Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.service_name = "eco-test";
  o.flush_interval = std::chrono::milliseconds(50);
  ASSERT_TRUE(Configure(o).ok());

  std::vector<std::string> lines;
  log::SetSinkForTest([&](const std::string& l) {
    std::lock_guard<std::mutex> g(mu);
    lines.push_back(l);
  });
  std::string root_id, child_id, trace_id;
  {
    Span root = Span::Start("root", Kind::kServer);
    ASSERT_TRUE(root.recording());
    trace_id = root.context().TraceIdHex();
    root_id = root.context().SpanIdHex();
    Scope scope(root);
    EXPECT_EQ(Current()->SpanIdHex(), root_id);
    Span child = Span::Child("child", Kind::kClient);
    child.SetAttribute("n", int64_t{7});
    child.SetError("it failed");
    child_id = child.context().SpanIdHex();
    log::Write(log::Level::kWarn, "test", "inside");
  }
  EXPECT_EQ(Current(), nullptr);
  EXPECT_FALSE(Span::Child("no parent").context().valid());  // Child makes no root
  log::Write(log::Level::kWarn, "test", "outside");
  log::Flush();
  log::SetSinkForTest(nullptr);

  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> g(mu);
        return spans.size() >= 2;
      },
      std::chrono::seconds(10)));
  Shutdown();
  receiver.stop();
  serving.join();

  std::map<std::string, json> by_name;
  for (const auto& s : spans) by_name[s["name"]] = s;
  ASSERT_TRUE(by_name.count("root") && by_name.count("child"));
  EXPECT_EQ(by_name["root"]["traceId"], trace_id);
  EXPECT_EQ(by_name["root"]["spanId"], root_id);
  EXPECT_FALSE(by_name["root"].contains("parentSpanId"));
  EXPECT_EQ(by_name["root"]["kind"], 2);
  EXPECT_EQ(by_name["child"]["traceId"], trace_id);
  EXPECT_EQ(by_name["child"]["parentSpanId"], root_id);
  EXPECT_EQ(by_name["child"]["status"]["code"], 2);
  EXPECT_EQ(by_name["child"]["attributes"][0]["value"]["intValue"], "7");
  EXPECT_LE(std::stoull(by_name["child"]["startTimeUnixNano"].get<std::string>()),
            std::stoull(by_name["child"]["endTimeUnixNano"].get<std::string>()));

  ASSERT_EQ(lines.size(), 2u);
  json inside = json::parse(lines[0]);
  EXPECT_EQ(inside["trace_id"], trace_id);
  EXPECT_EQ(inside["span_id"], root_id);
  EXPECT_FALSE(json::parse(lines[1]).contains("trace_id"));
}

}  // namespace
}  // namespace eco::trace
