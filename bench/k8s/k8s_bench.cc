// eco_k8s_bench: server-side applies through eco's k8s client, spread over
// many clusters by a bounded pool of threads — the rsync access pattern.
// Prints "applies/s N"; bench/k8s/run.sh compares it with wrk's rate.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "k8s/client.h"
#include "k8s/kubeconfig.h"

int main(int argc, char** argv) {
  CLI::App app{"apply load through eco's k8s client"};
  std::string dir, prefix = "cluster-";
  int clusters = 1000, threads = 32, seconds = 10, names = 10;
  app.add_option("--kubeconfig-dir", dir, "kube-sim's kubeconfig directory")->required();
  app.add_option("--clusters", clusters, "clusters to spread over (PREFIX1..PREFIXN)");
  app.add_option("--name-prefix", prefix, "cluster name prefix");
  app.add_option("--threads", threads, "worker threads");
  app.add_option("--seconds", seconds, "duration");
  app.add_option("--names", names, "ConfigMaps per cluster");
  std::string transport = "auto";
  app.add_option("--transport", transport, "HTTP transport of the client")
      ->check(CLI::IsMember({"auto", "direct", "curl"}));
  bool no_echo = false;
  app.add_flag("--no-echo", no_echo, "do not parse the applied objects the server returns (ApplyOptions::want_object)");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::shared_ptr<eco::k8s::ClusterClient>> clients;
  for (int i = 1; i <= clusters; ++i) {
    auto rc = eco::k8s::LoadKubeconfigFile(dir + "/" + prefix + std::to_string(i) + ".yaml");
    if (!rc.ok()) {
      std::fprintf(stderr, "%s\n", rc.status().ToString().c_str());
      return 1;
    }
    eco::k8s::ClientOptions opts;
    opts.max_connections = 2;
    opts.transport = transport == "curl"     ? eco::k8s::HttpTransport::kCurl
                     : transport == "direct" ? eco::k8s::HttpTransport::kDirect
                                             : eco::k8s::HttpTransport::kAuto;
    auto c = eco::k8s::NewClusterClient(*rc, opts);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 1;
    }
    clients.push_back(std::move(c.value()));
  }
  // Discovery once per cluster, as rsync's first apply would do.
  for (auto& c : clients) (void)c->ResolveKind("v1", "ConfigMap");

  std::atomic<uint64_t> next{0}, ok{0}, failed{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      uint64_t n = next.fetch_add(1, std::memory_order_relaxed);
      size_t c = n % clients.size();
      uint64_t k = (n / clients.size()) % static_cast<uint64_t>(names) + 1;
      nlohmann::json cm = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", "cm-" + std::to_string(k)}, {"namespace", "default"},
                                         {"labels", {{"app", "bench"}}}}},
                           {"data", {{"seq", std::to_string(n)}}}};
      eco::k8s::ApplyOptions ao;
      ao.want_object = !no_echo;
      auto r = clients[c]->Apply(cm, ao);
      if (r.ok()) {
        ok.fetch_add(1, std::memory_order_relaxed);
      } else if (failed.fetch_add(1) < 5) {
        std::fprintf(stderr, "apply failed: %s\n", r.status().ToString().c_str());
      }
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : pool) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("clusters %d threads %d seconds %.1f\n", clusters, threads, secs);
  std::printf("applies/s %.0f\n", static_cast<double>(ok.load()) / secs);
  std::printf("failed %llu\n", static_cast<unsigned long long>(failed.load()));
  return failed.load() == 0 ? 0 : 1;
}
