// kube-sim: serves many simulated Kubernetes clusters from one process, one
// port, each under /clusters/NAME/, and writes a kubeconfig for each.
#include <signal.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "kubesim/kubeconfig_out.h"
#include "kubesim/server.h"
#include "kubesim/sim.h"
#include "kubesim/tls.h"

namespace {

int Fail(const std::string& message) {
  std::cerr << "kube-sim: " << message << "\n";
  return 1;
}

// Many clusters mean many client connections: take every descriptor allowed.
void RaiseFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// The host clients are told to use: a wildcard bind address is not one.
std::string UrlHost(const std::string& host) {
  if (host == "0.0.0.0" || host.empty()) return "127.0.0.1";
  if (host == "::") return "[::1]";
  if (host.find(':') != std::string::npos) return "[" + host + "]";
  return host;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kube-sim: a Kubernetes API simulator serving many clusters from one process"};
  int port = 0;
  int clusters = 0;
  std::string fleet_file;
  std::string kubeconfig_dir;
  std::string name_prefix = "cluster-";
  bool tls = false;
  bool http2 = true;
  int ready_delay_ms = 0;
  int crd_establish_delay_ms = 300;
  int namespace_terminate_ms = 2000;
  std::string host = "127.0.0.1";
  int threads = 2;
  uint64_t seed = 0;
  app.add_option("--port", port, "port to listen on; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  auto* n_opt = app.add_option("--clusters", clusters, "serve N clusters with default nodes")
                    ->check(CLI::Range(1, 1000000));
  auto* fleet_opt = app.add_option("--fleet", fleet_file, "YAML file describing the clusters")
                        ->check(CLI::ExistingFile);
  n_opt->excludes(fleet_opt);
  app.add_option("--kubeconfig-dir", kubeconfig_dir, "where DIR/NAME.yaml kubeconfigs go")
      ->required();
  app.add_option("--name-prefix", name_prefix, "cluster name prefix with --clusters")
      ->capture_default_str();
  app.add_flag("--tls", tls, "serve HTTPS with a CA generated at start");
  app.add_option("--http2", http2,
                 "with --tls, offer HTTP/2 (ALPN h2) as kube-apiserver does; false: HTTP/1.1 only")
      ->capture_default_str();
  app.add_option("--ready-delay-ms", ready_delay_ms, "delay before workloads report ready")
      ->check(CLI::Range(0, 24 * 3600 * 1000));
  app.add_option("--crd-establish-delay-ms", crd_establish_delay_ms,
                 "how long a new CRD takes to become Established (its kinds are not served before)")
      ->check(CLI::Range(0, 24 * 3600 * 1000))
      ->capture_default_str();
  app.add_option("--namespace-terminate-ms", namespace_terminate_ms,
                 "how long a deleted namespace stays Terminating")
      ->check(CLI::Range(0, 24 * 3600 * 1000))
      ->capture_default_str();
  app.add_option("--host", host, "address to listen on")->capture_default_str();
  app.add_option("--seed", seed,
                 "seeds tokens, uids, generated names and fault draws (same seed, same requests: same names); "
                 "0 = random")
      ->capture_default_str();
  app.add_option("--threads", threads, "io threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (n_opt->count() == 0 && fleet_opt->count() == 0) {
    return Fail("one of --clusters N or --fleet FILE is required");
  }

  std::vector<eco::kubesim::ClusterSpec> specs;
  if (fleet_opt->count() > 0) {
    std::ifstream in(fleet_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return Fail("cannot read " + fleet_file);
    auto parsed = eco::kubesim::ParseFleet(text.str());
    if (!parsed.ok()) return Fail(fleet_file + ": " + parsed.status().ToString());
    specs = std::move(*parsed);
  } else {
    specs = eco::kubesim::DefaultFleet(clusters, name_prefix);
  }

  // Signals are taken by sigwait below; every thread started from here on
  // inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  RaiseFileLimit();

  eco::kubesim::SimOptions sim_options;
  sim_options.ready_delay = std::chrono::milliseconds(ready_delay_ms);
  sim_options.crd_establish_delay = std::chrono::milliseconds(crd_establish_delay_ms);
  sim_options.namespace_terminate = std::chrono::milliseconds(namespace_terminate_ms);
  sim_options.require_auth = tls;
  sim_options.seed = seed;
  auto sim = eco::kubesim::Simulator::Create(std::move(specs), sim_options);
  if (!sim) return Fail("could not create the simulated clusters");

  eco::kubesim::ServerOptions options;
  options.host = host;
  options.port = static_cast<uint16_t>(port);
  options.threads = threads;
  options.seed = seed;
  options.http2 = http2;
  eco::kubesim::Simulator* s = sim.get();
  options.cluster_exists = [s](const std::string& name) { return s->HasCluster(name); };
  std::string ca_pem;
  if (tls) {
    auto material = eco::kubesim::GenerateTlsMaterial(UrlHost(host) == "[::1]" ? "::1" : host);
    if (!material.ok()) return Fail(material.status().ToString());
    options.tls_cert_pem = material->server_cert_pem;
    options.tls_key_pem = material->server_key_pem;
    ca_pem = material->ca_cert_pem;
  }
  auto server = eco::kubesim::Server::Start(
      std::move(options), [s](const eco::kubesim::HttpRequest& r) { return s->Handle(r); });
  if (!server.ok()) return Fail(server.status().ToString());

  const std::string base = std::string(tls ? "https" : "http") + "://" + UrlHost(host) + ":" +
                           std::to_string((*server)->port());
  std::vector<std::string> names = sim->ClusterNames();
  for (const auto& name : names) {
    eco::Status st = eco::kubesim::WriteKubeconfig(
        kubeconfig_dir, eco::kubesim::KubeconfigSpec{name, base, sim->Token(name), ca_pem});
    if (!st.ok()) {
      (*server)->Stop();
      sim->Shutdown();
      return Fail(st.ToString());
    }
  }
  std::printf("kube-sim: serving %zu clusters on %s (kubeconfigs in %s)\n", names.size(),
              base.c_str(), kubeconfig_dir.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "kube-sim: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  sim->Shutdown();
  return 0;
}
