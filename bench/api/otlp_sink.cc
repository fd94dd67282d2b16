// An OTLP/HTTP endpoint that accepts spans and discards them, for measuring
// eco's tracing overhead without a Jaeger (bench/api/overhead.sh). Answers
// 200 to every POST /v1/traces; on SIGINT/SIGTERM prints the requests and
// bytes received. It shares the machine with eco and the load generator, so
// it decodes nothing: eco's eco_trace_spans_{exported,dropped}_total say how
// many spans went out.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>

namespace {

httplib::Server* g_server = nullptr;

void Stop(int) {
  if (g_server) g_server->stop();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OTLP/HTTP sink for benchmarks"};
  int port = 4318;
  app.add_option("--port", port, "Port on 127.0.0.1")->default_val(4318);
  CLI11_PARSE(app, argc, argv);

  std::atomic<long long> requests{0}, bytes{0};
  httplib::Server server;
  server.Post("/v1/traces", [&](const httplib::Request& req, httplib::Response& res) {
    ++requests;
    bytes += static_cast<long long>(req.body.size());
    res.set_content("{}", "application/json");
  });
  g_server = &server;
  std::signal(SIGINT, Stop);
  std::signal(SIGTERM, Stop);
  if (!server.listen("127.0.0.1", port)) {
    std::fprintf(stderr, "otlp_sink: cannot listen on 127.0.0.1:%d\n", port);
    return 1;
  }
  std::printf("otlp_sink: %lld requests, %lld bytes\n", requests.load(), bytes.load());
  return 0;
}
