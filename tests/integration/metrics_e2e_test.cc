// /metrics of every eco role as real processes on loopback: promtool (from
// Debian's prometheus package) accepts each, and a real Prometheus server
// scrapes `eco serve` and sees a metric move after traffic.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "eco_fixture.h"
#include "etcd_fixture.h"

namespace eco::testing {
namespace {

using nlohmann::json;

// One role of eco (`eco api|rsync|controller ...`) with its HTTP port.
class Role {
 public:
  explicit Role(std::vector<std::string> args) {
    port_ = FreePort();
    std::vector<std::string> argv = {BinaryPath("eco")};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--port", std::to_string(port_), "--bind", "127.0.0.1"});
    proc_ = std::make_unique<Process>(argv, dir_.path() + "/log");
    ready_ = WaitUntil(
        [&] {
          httplib::Client c("127.0.0.1", port_);
          auto r = c.Get("/healthz");
          return r && r->status == 200;
        },
        std::chrono::seconds(20));
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }
  std::string Log() const { return ReadFile(dir_.path() + "/log"); }

 private:
  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Process> proc_;
  bool ready_ = false;
};

std::string Scrape(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/metrics");
  if (!r) return "";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  return r->body;
}

// promtool's verdict on a scrape: "" when it accepts it, else its output.
std::string PromtoolProblems(const std::string& text) {
  TempDir dir;
  const std::string in = dir.path() + "/metrics.txt";
  std::ofstream(in) << text;
  Process p({"/bin/sh", "-c", "promtool check metrics < " + in}, dir.path() + "/out");
  int status = -1;
  if (!p.Wait(std::chrono::seconds(60), &status)) return "promtool did not finish";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return "promtool exit " + std::to_string(WEXITSTATUS(status)) + ": " + p.ReadLog();
}

void ExpectFamilies(const std::string& text, const std::vector<std::string>& names,
                    const std::string& role) {
  for (const auto& n : names) {
    EXPECT_NE(text.find("# TYPE " + n + " "), std::string::npos) << role << " lacks " << n;
  }
}

TEST(MetricsE2E, EveryRoleServesMetricsPromtoolAccepts) {
  EtcdProcess etcd;
  ASSERT_EQ(etcd.Start(), "");
  const std::string store = "etcd://" + etcd.endpoint();

  EcoServer serve(EcoOptions{});
  ASSERT_TRUE(serve.ready()) << serve.error();
  auto c = serve.client();
  ASSERT_EQ(c.PostJson("/v2/projects", {{"metadata", {{"name", "p"}}}}).status, 201);
  Role api({"api", "--store", store, "--allow-plaintext-kubeconfigs"});
  Role rsync({"rsync", "--store", store, "--allow-plaintext-kubeconfigs"});
  Role hpa({"controller", "hpa", "--store", store, "--allow-plaintext-kubeconfigs", "--grpc-port", std::to_string(FreePort()),
            "--grpc-bind", "127.0.0.1"});
  ASSERT_TRUE(api.ready()) << api.Log();
  ASSERT_TRUE(rsync.ready()) << rsync.Log();
  ASSERT_TRUE(hpa.ready()) << hpa.Log();

  const std::vector<std::string> process = {
      "process_cpu_seconds_total", "process_resident_memory_bytes",
      "process_open_fds",          "process_max_fds",
      "process_threads",           "process_start_time_seconds"};
  struct Case {
    std::string role;
    int port;
    std::vector<std::string> families;
  };
  const std::vector<Case> cases = {
      {"serve",
       serve.port(),
       {"eco_http_requests_total", "eco_http_request_duration_seconds",
        "eco_store_operations_total", "eco_rsync_resources_total", "eco_rsync_queue_depth",
        "eco_rsync_clusters", "eco_ready_resources"}},
      {"api", api.port(), {"eco_store_operations_total"}},
      {"rsync",
       rsync.port(),
       {"eco_store_operations_total", "eco_rsync_retries_total",
        "eco_rsync_request_duration_seconds", "eco_rsync_waiting_tasks", "eco_ready_resources"}},
      {"controller hpa", hpa.port(), {"eco_store_operations_total"}},
  };
  for (const auto& k : cases) {
    // Scraped twice: the first scrape's own request shows in the second.
    Scrape(k.port);
    const std::string text = Scrape(k.port);
    ASSERT_FALSE(text.empty()) << k.role;
    ExpectFamilies(text, process, k.role);
    ExpectFamilies(text, k.families, k.role);
    ExpectFamilies(text, {"eco_http_requests_total"}, k.role);
    EXPECT_EQ(PromtoolProblems(text), "") << k.role;
  }
}

// The value of a Prometheus instant query's first sample; nullopt when the
// answer holds none.
std::optional<double> Query(int port, const std::string& promql) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!r || r->status != 200) return std::nullopt;
  json j = json::parse(r->body, nullptr, false);
  if (!j.is_object() || j.value("status", "") != "success") return std::nullopt;
  const json& result = j["data"]["result"];
  if (!result.is_array() || result.empty()) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(MetricsE2E, PrometheusScrapesEco) {
  EcoServer eco(EcoOptions{});
  ASSERT_TRUE(eco.ready()) << eco.error();
  TempDir dir;
  const int prom_port = FreePort();
  std::ofstream(dir.path() + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
      << "scrape_configs:\n  - job_name: eco\n    static_configs:\n      - targets: ['127.0.0.1:"
      << eco.port() << "']\n";
  Process prom({"prometheus", "--config.file=" + dir.path() + "/prometheus.yml",
                "--storage.tsdb.path=" + dir.path() + "/data",
                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
               dir.path() + "/prometheus.log");

  // Prometheus has scraped eco successfully.
  ASSERT_TRUE(WaitUntil([&] { return Query(prom_port, "up{job=\"eco\"}") == 1.0; },
                        std::chrono::seconds(60)))
      << ReadFile(dir.path() + "/prometheus.log");

  const std::string promql =
      "sum(eco_http_requests_total{job=\"eco\",route=\"/v2/projects\",method=\"POST\"})";
  const double before = Query(prom_port, promql).value_or(0);
  auto c = eco.client();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(
        c.PostJson("/v2/projects", {{"metadata", {{"name", "p" + std::to_string(i)}}}}).status,
        201);
  }
  // The counter Prometheus stored moved by the three requests.
  double after = before;
  EXPECT_TRUE(WaitUntil(
      [&] {
        after = Query(prom_port, promql).value_or(before);
        return after >= before + 3;
      },
      std::chrono::seconds(60)))
      << "before " << before << ", after " << after;
  EXPECT_EQ(after, before + 3);
}

}  // namespace
}  // namespace eco::testing
