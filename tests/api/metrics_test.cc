// The Prometheus metrics (common/metrics.h) as the HTTP server serves them on
// /metrics: request counts and latencies by route template, store operations,
// the process_* series; over a real embedded store and real HTTP.
#include "common/metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "served_api.h"
#include "store/instrumented.h"

namespace eco {
namespace {

// The value of the sample `name{...}` whose labels include all of `labels`
// (text format); nullopt when there is none.
std::optional<double> Sample(const std::string& text, const std::string& name,
                             const std::map<std::string, std::string>& labels = {}) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    const std::string metric = line.substr(0, std::min(brace, space));
    if (metric != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      if (line.find(k + "=\"" + v + "\"") == std::string::npos) all = false;
    }
    if (all) return std::stod(line.substr(space + 1));
  }
  return std::nullopt;
}

class MetricsTest : public testing::ServedApiTest {
 protected:
  MetricsTest() {
    wrap_store_ = [](std::unique_ptr<store::Store> s) { return store::Instrument(std::move(s)); };
  }
  std::string Scrape() {
    auto r = client_->Get("/metrics");
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), metrics::kContentType);
    return r->body;
  }
  // The counter after the logger ran (it counts once the answer is sent).
  double WaitCount(const std::string& name, const std::map<std::string, std::string>& labels,
                   double want) {
    double v = 0;
    testing::WaitUntil(
        [&] {
          v = Sample(Scrape(), name, labels).value_or(0);
          return v >= want;
        },
        std::chrono::seconds(10));
    return v;
  }

};

TEST_F(MetricsTest, CountsRequestsByRouteTemplateMethodAndCode) {
  const std::map<std::string, std::string> created = {
      {"route", "/v2/projects"}, {"method", "POST"}, {"code", "201"}};
  const std::map<std::string, std::string> missing = {
      {"route", "/v2/projects/{project}"}, {"method", "GET"}, {"code", "404"}};
  const std::string before = Scrape();
  const double created0 = Sample(before, "eco_http_requests_total", created).value_or(0);
  const double missing0 = Sample(before, "eco_http_requests_total", missing).value_or(0);
  for (int i = 0; i < 3; ++i) {
    auto r =
        client_->Post("/v2/projects", R"({"metadata":{"name":"m)" + std::to_string(i) + R"("}})",
                      "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
  }
  auto r = client_->Get("/v2/projects/no-such-project");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 404);

  EXPECT_EQ(WaitCount("eco_http_requests_total", created, created0 + 3), created0 + 3);
  EXPECT_EQ(WaitCount("eco_http_requests_total", missing, missing0 + 1), missing0 + 1);
  const std::string text = Scrape();
  // Paths never become labels: the project's name appears nowhere.
  EXPECT_EQ(text.find("no-such-project"), std::string::npos);
  EXPECT_GE(Sample(text, "eco_http_request_duration_seconds_count",
                   {{"route", "/v2/projects"}, {"method", "POST"}})
                .value_or(0),
            3);
}

TEST_F(MetricsTest, CountsStoreOperations) {
  const std::map<std::string, std::string> puts = {
      {"backend", "sqlite"}, {"op", "put"}, {"result", "OK"}};
  const double before = Sample(Scrape(), "eco_store_operations_total", puts).value_or(0);
  ASSERT_TRUE(store_->Put("/metrics-test/a", "1").ok());
  ASSERT_TRUE(store_->Put("/metrics-test/b", "2").ok());
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "eco_store_operations_total", puts).value_or(0), before + 2);
  EXPECT_GE(Sample(text, "eco_store_operation_duration_seconds_count",
                   {{"backend", "sqlite"}, {"op", "put"}})
                .value_or(0),
            before + 2);
}

TEST_F(MetricsTest, ExportsTheProcessSeries) {
  const std::string text = Scrape();
  EXPECT_GT(Sample(text, "process_resident_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GT(Sample(text, "process_open_fds").value_or(0), 2);
  EXPECT_GE(Sample(text, "process_threads").value_or(0), 2);
  EXPECT_GT(Sample(text, "process_max_fds").value_or(0), 0);
  const double start = Sample(text, "process_start_time_seconds").value_or(0);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_GT(start, now - 3600);
  EXPECT_LE(start, now + 1);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
}

TEST_F(MetricsTest, OnlyGetIsAllowed) {
  auto r = client_->Post("/metrics", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

TEST(MetricsServer, ARoleWithoutApiServesHealthMetricsAndNothingElse) {
  api::ServerOptions so;
  so.bind = "127.0.0.1";
  so.port = 0;
  api::HttpServer server(so);
  ASSERT_TRUE(server.Bind().ok());
  std::thread serving([&] { (void)server.Serve(); });
  httplib::Client c("127.0.0.1", server.port());
  auto health = c.Get("/healthz");
  auto metrics = c.Get("/metrics");
  auto other = c.Get("/v2/projects");
  server.Stop();
  serving.join();
  ASSERT_TRUE(health && metrics && other);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("process_resident_memory_bytes"), std::string::npos);
  EXPECT_EQ(other->status, 404);
}

}  // namespace
}  // namespace eco
