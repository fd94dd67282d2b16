// eco: the orchestrator. `eco serve` runs every role in one process.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "api/api.h"
#include "api/server.h"
#include "catalog/catalog.h"
#include "cmd/agent.h"
#include "cmd/controllers.h"
#include "cmd/helm_template.h"
#include "cmd/log.h"
#include "cmd/preload.h"
#include "common/clock.h"
#include "common/version.h"
#include "controllers/grpc.h"
#include "helm/eval_cases.h"
#include "rsync/rsync.h"
#include "rsync/drift_repair.h"
#include "rsync/executor.h"
#include "scheduler/scheduler.h"
#include "common/log.h"
#include "common/secrets.h"
#include "common/trace.h"
#include "status/ready_monitor.h"
#include "store/etcd_store.h"
#include "store/instrumented.h"
#include "store/store.h"

namespace {

using eco::cmd::Log;

// Where the ready monitor's rounds run: a pool of its own, whose pauses are
// timers of the clock that hand each round to the pool when due (not the
// pool's own timed queue, which eco_rsync_waiting_tasks counts: the
// monitor's scan interval would show there as an rsync task forever).
class ReadyPool {
 public:
  ReadyPool(size_t threads, eco::Clock& clock) : pool_(threads, clock), clock_(clock) {}
  ~ReadyPool() {
    std::map<uint64_t, eco::Clock::TimerId> timers;
    {
      std::lock_guard<std::mutex> l(mu_);
      stopped_ = true;
      timers.swap(timers_);
    }
    for (const auto& [seq, id] : timers) clock_.Cancel(id);  // waits for one running
    pool_.Shutdown();
  }
  void Post(eco::Clock::Duration after, std::function<void()> fn) {
    if (after <= eco::Clock::Duration::zero()) return pool_.Post(std::move(fn));
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    const uint64_t seq = ++seq_;
    // The clock never runs a timer inside At: it finds its entry set.
    timers_[seq] = clock_.At(clock_.Now() + after, [this, seq, fn = std::move(fn)]() mutable {
      std::lock_guard<std::mutex> g(mu_);
      if (stopped_ || timers_.erase(seq) == 0) return;
      pool_.Post(std::move(fn));
    });
  }

 private:
  eco::rsync::Executor pool_;
  eco::Clock& clock_;
  std::mutex mu_;
  bool stopped_ = false;                              // guarded by mu_
  uint64_t seq_ = 0;                                  // guarded by mu_
  std::map<uint64_t, eco::Clock::TimerId> timers_;  // guarded by mu_: not run yet
};

// rsync takes sealed AppContexts to the clusters; the ready monitor records
// what the clusters report. Both stop when this is destroyed.
struct DeployRoles {
  // The ready monitor's watch starts at once: its pool has a thread more
  // for each of its scan, write and drift rounds, so that a start waiting
  // for a cluster that is down never holds those up.
  static constexpr size_t kReadyStarts = 8;
  ReadyPool ready_pool;  // outlives the monitor
  eco::rsync::Rsync rsync;
  eco::status::ReadyMonitor ready;
  DeployRoles(eco::store::Store& st, const eco::rsync::Options& opts)
      : ready_pool(kReadyStarts + 3, eco::RealClock()), rsync(st, opts), ready(st, SharedClients(st, rsync, ready_pool)) {}

  static eco::status::ReadyMonitorOptions SharedClients(eco::store::Store& st, eco::rsync::Rsync& r,
                                                        ReadyPool& pool) {
    eco::status::ReadyMonitorOptions o;
    o.start_threads = kReadyStarts;
    o.post = [&pool](eco::Clock::Duration after, std::function<void()> round) {
      pool.Post(after, std::move(round));
    };
    // Drift of push clusters is found from the monitor's watches and
    // repaired (spec.driftPolicy enforce) with rsync's apply.
    o.drift = true;
    o.repair = [&st, &r](const std::string& ref, const std::string& app, const std::string& provider,
                         const std::string& cluster, const std::string& res, bool left_out) -> eco::Status {
      auto client = r.ClusterClient(provider, cluster);
      if (!client.ok()) return client.status();
      return eco::rsync::ApplyAgain(st, **client, ref, app, provider + "+" + cluster, res, left_out);
    };
    o.clock = &eco::RealClock();
    // Push clusters' lastSeen in status answers (agent clusters' comes from the agent server).
    o.record_seen = true;
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) o.replica = host;
    o.clients = [&r](const std::string& provider, const std::string& cluster) {
      return r.ClusterClient(provider, cluster);
    };
    return o;
  }
};

// rsync's tunables, shared by `eco serve` and `eco rsync`.
struct DeployFlags {
  size_t workers = 16;
  int retry_base_ms = 1000;
  int retry_cap_ms = 60000;
  int max_retries = 0;
  int lease_seconds = 10;
  int settle_seconds = 300;
  bool ready_monitor = true;
  bool cluster_metrics = false;

  void AddTo(CLI::App* cmd, const std::string& workers_flag) {
    cmd->add_option(workers_flag, workers, "Threads rsync uses to talk to clusters")->default_val(16);
    cmd->add_option("--rsync-retry-base-ms", retry_base_ms,
                    "First retry delay for an unreachable cluster (doubles each time, jittered)")
        ->default_val(1000)
        ->check(CLI::Range(1, 3600000));
    cmd->add_option("--rsync-retry-cap-ms", retry_cap_ms, "Longest retry delay for an unreachable cluster")
        ->default_val(60000)
        ->check(CLI::Range(1, 86400000));
    cmd->add_option("--rsync-max-retries", max_retries,
                    "Retries of an unreachable cluster before its deployment fails (0 = for as long as it takes)")
        ->default_val(0)
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--rsync-lease-seconds", lease_seconds,
                    "Lease under this replica's AppContext locks; another replica takes over this long after it dies")
        ->default_val(10)
        ->check(CLI::Range(2, 3600));
    cmd->add_option("--rsync-settle-seconds", settle_seconds,
                    "How long a cluster may take to establish a CRD or finish deleting a namespace "
                    "before the deployment fails there")
        ->default_val(300)
        ->check(CLI::Range(1, 86400));
    cmd->add_option("--ready-monitor", ready_monitor,
                    "Keep the ready status (one watch per cluster and kind deployed); false leaves it to "
                    "another replica, or off where the fleet needs more sockets than the host allows")
        ->default_val(true);
    cmd->add_flag("--metrics-per-cluster", cluster_metrics,
                  "Also export each cluster's apply latency (eco_rsync_cluster_request_seconds{cluster}): "
                  "one series per cluster");
  }
};

std::unique_ptr<DeployRoles> StartDeployRoles(eco::store::Store& st, const DeployFlags& flags) {
  eco::rsync::Options opts;
  opts.workers = flags.workers;
  opts.retry_base = std::chrono::milliseconds(flags.retry_base_ms);
  opts.retry_cap = std::chrono::milliseconds(std::max(flags.retry_cap_ms, flags.retry_base_ms));
  opts.max_retries = flags.max_retries;
  opts.lease_ttl = std::chrono::seconds(flags.lease_seconds);
  opts.settle_timeout = std::chrono::seconds(flags.settle_seconds);
  opts.cluster_metrics = flags.cluster_metrics;
  opts.log = [](const std::string& m) { eco::log::Write(eco::log::Level::kInfo, "rsync", m); };
  auto roles = std::make_unique<DeployRoles>(st, opts);
  if (auto s = roles->rsync.Start(); !s.ok()) {
    Log("error", "cannot start rsync: " + s.message());
    return nullptr;
  }
  if (!flags.ready_monitor) {
    Log("info", "ready monitor off (--ready-monitor=false): no ready status is recorded");
  } else if (auto s = roles->ready.Start(); !s.ok()) {
    Log("warn", "ready monitor not started: " + s.message());
  }
  return roles;
}

// The embedded store keeps its key file in its directory, whether named by
// --data-dir or by URL ("" on etcd).
std::string EmbeddedDir(const std::string& store_url, const std::string& data_dir) {
  return store_url.empty() ? data_dir : eco::store::EmbeddedDir(store_url);
}

// `deploy` null: the API and the scheduler only (`eco api`); rsync runs elsewhere.
int Serve(const std::string& data_dir, const std::string& store_url, eco::api::ServerOptions sopts,
          const DeployFlags* deploy_flags, int render_seconds, const std::string& field_validation,
          bool agent_port_given, int agent_grace_seconds) {
  std::string url = store_url.empty() ? data_dir : store_url;
  // Production time and randomness: the machine's, handed to each component.
  eco::Clock& clock = eco::RealClock();
  eco::Random& random = eco::ProcessRandom();
  auto st = eco::store::Open(url, clock, random);
  if (!st.ok()) {
    Log("error", "cannot open store " + url + ": " + st.status().message());
    return 1;
  }
  // Blobs orphaned by a process that died mid-write are swept at start.
  if (auto* etcd = dynamic_cast<eco::store::EtcdStore*>(st->get())) {
    if (auto gc = etcd->CollectGarbage(); !gc.ok()) {
      Log("warn", "etcd blob garbage collection failed: " + gc.message());
    }
  }
  *st = eco::store::Instrument(std::move(*st));
  eco::scheduler::Options sched_opts;
  sched_opts.render_time_limit = std::chrono::seconds(render_seconds);
  sched_opts.field_validation = field_validation;
  sched_opts.clock = &clock;
  sched_opts.random = &random;
  sched_opts.builtins = eco::cmd::BuiltinControllers(**st);
  sched_opts.builtins_on = [](eco::store::Store& overlay) { return eco::cmd::BuiltinControllers(overlay); };
  sched_opts.remote = [&clock](const std::string& name, const std::string& host, int port) {
    eco::controllers::RemoteOptions ro{name, host, port};
    ro.clock = &clock;
    return std::make_shared<eco::controllers::RemoteController>(std::move(ro));
  };
  eco::scheduler::Scheduler scheduler(**st, std::move(sched_opts));
  if (auto n = scheduler.CollectAbandoned(); !n.ok()) {
    Log("warn", "could not sweep abandoned AppContexts: " + n.status().message());
  } else if (*n > 0) {
    Log("info", "removed " + std::to_string(*n) + " AppContexts whose build was interrupted");
  }
  std::unique_ptr<DeployRoles> deploy;
  if (deploy_flags) {
    deploy = StartDeployRoles(**st, *deploy_flags);
    if (!deploy) return 1;
  }
  // Agents reach this process here (--agent-port; docs/agent.md).
  std::unique_ptr<eco::agenthub::Server> agents;
  if (sopts.agent_port > 0) {
    bool failed = false;
    agents = eco::cmd::StartAgentServer(**st, sopts.bind, sopts.agent_port, sopts.tls_cert, sopts.tls_key,
                                        agent_port_given, &failed);
    if (failed) return 1;
  }
  eco::api::Options api_opts;
  api_opts.scheduler = &scheduler;
  api_opts.clock = &clock;
  api_opts.random = &random;
  api_opts.agent_grace = std::chrono::seconds(agent_grace_seconds);
  eco::api::Api api(**st, api_opts);
  eco::api::HttpServer server(api, sopts);
  if (auto s = server.Bind(); !s.ok()) {
    Log("error", s.message());
    return 1;
  }
  // httplib's stop() only flips flags and shuts the listening socket down.
  eco::cmd::StopOnSignal([&server] { server.Stop(); });
  Log("info", "eco serving the API on " + sopts.bind + ":" + std::to_string(server.port()) +
                  " with the " + (*st)->Backend() + " store at " + url);
  auto s = server.Serve();
  agents.reset();
  deploy.reset();
  Log("info", "eco stopped");
  return s.ok() ? 0 : 1;
}

// `eco rsync`: rsync and the ready monitor until SIGINT/SIGTERM, with
// /healthz, /metrics and /log-level on `http`.
int RunRsync(const std::string& url, const DeployFlags& flags, eco::api::ServerOptions http, int agent_port,
             bool agent_port_given) {
  auto st = eco::store::Open(url, eco::RealClock(), eco::ProcessRandom());
  if (!st.ok()) {
    Log("error", "cannot open store " + url + ": " + st.status().message());
    return 1;
  }
  *st = eco::store::Instrument(std::move(*st));
  auto deploy = StartDeployRoles(**st, flags);
  if (!deploy) return 1;
  std::unique_ptr<eco::agenthub::Server> agents;
  if (agent_port > 0) {
    bool failed = false;
    agents = eco::cmd::StartAgentServer(**st, http.bind, agent_port, http.tls_cert, http.tls_key, agent_port_given,
                                        &failed);
    if (failed) return 1;
  }
  http.threads = 4;
  eco::api::HttpServer server(http);
  if (auto s = server.Bind(); !s.ok()) {
    Log("error", s.message());
    return 1;
  }
  eco::cmd::StopOnSignal([&server] { server.Stop(); });
  Log("info", "eco rsync running with the " + (*st)->Backend() + " store at " + url +
                  "; metrics on " + http.bind + ":" + std::to_string(server.port()));
  auto served = server.Serve();
  agents.reset();
  deploy.reset();
  Log("info", "eco rsync stopped");
  return served.ok() ? 0 : 1;
}

// Where agent clusters' agents dial (the agent server listens there) and
// what bootstrap answers tell them.
void AddAgentFlags(CLI::App* cmd, eco::api::ServerOptions* o) {
  cmd->add_option("--agent-port", o->agent_port,
                  "Port agents of agent clusters dial (docs/agent.md; 0: serve no agents)")
      ->default_val(9070)
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--agent-url", o->agent_url,
                  "URL agents dial, as bootstrap answers give it (default: the API's host on --agent-port)")
      ->check([](const std::string& url) {
        return url.starts_with("http://") || url.starts_with("https://")
                   ? std::string()
                   : std::string("--agent-url must start with http:// or https://");
      });
}

int EvalCases(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "eco helm eval-cases: cannot read " << path << "\n";
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto out = eco::helm::EvalCases(ss.str());
  if (!out.ok()) {
    std::cerr << "eco helm eval-cases: " << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out << "\n";
  return 0;
}

}  // namespace

// `eco secrets reseal`: every stored kubeconfig sealed with the first key
// of the key file (after a key rotation, or to encrypt what was stored
// before encryption). Each write is guarded by the value's revision, so a
// kubeconfig uploaded meanwhile is left to its uploader.
int Reseal(const std::string& data_dir, const std::string& store_url) {
  std::string url = store_url.empty() ? data_dir : store_url;
  auto st = eco::store::Open(url, eco::RealClock(), eco::ProcessRandom());
  if (!st.ok()) {
    Log("error", "cannot open store " + url + ": " + st.status().message());
    return 1;
  }
  const std::string prefix = eco::catalog::FilePrefix("cluster");
  size_t resealed = 0, current = 0, failed = 0;
  eco::store::RangeOptions ro;
  ro.limit = 200;
  while (true) {
    auto r = (*st)->Range(prefix, ro);
    if (!r.ok()) {
      Log("error", "reading " + prefix + ": " + r.status().message());
      return 1;
    }
    for (const auto& kv : r->kvs) {
      if (eco::secrets::SealedWithCurrentKey(kv.value)) {
        ++current;
        continue;
      }
      auto plain = eco::secrets::Open(kv.value);
      auto sealed = plain.ok() ? eco::secrets::Seal(*plain) : plain;
      eco::store::Txn txn;
      txn.compares.push_back(eco::store::Compare::ModRevisionIs(kv.key, kv.mod_revision));
      txn.success.push_back(eco::store::Op::Put(kv.key, sealed.ok() ? *sealed : ""));
      auto done = sealed.ok() ? (*st)->Commit(txn) : eco::Result<eco::store::TxnResult>(sealed.status());
      if (!done.ok() || !done->succeeded) {
        ++failed;
        Log("warn", kv.key + ": not resealed: " +
                        (done.ok() ? std::string("changed meanwhile") : done.status().message()));
        continue;
      }
      ++resealed;
    }
    if (!r->more || r->kvs.empty()) break;
    ro.after = r->kvs.back().key;
  }
  std::cout << "resealed " << resealed << " kubeconfigs, " << current
            << " already sealed with the current key, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  // `helm template` takes Helm's own flag syntax, parsed by its handler.
  if (argc >= 3 && std::string(argv[1]) == "helm" && std::string(argv[2]) == "template")
    return eco::cmd::HelmTemplateMain(std::vector<std::string>(argv + 3, argv + argc));
  eco::cmd::RouteGrpcLog();
  CLI::App app{"eco — Edge Cluster Orchestrator"};
  app.require_subcommand(1);

  auto* serve = app.add_subcommand("serve", "Run every eco role in one process");
  eco::api::ServerOptions sopts;
  std::string data_dir = "./eco-data";
  std::string store_url;
  serve->add_option("--port", sopts.port, "Port of the north REST API (0 = any free port)")
      ->default_val(9015);
  serve->add_option("--bind", sopts.bind, "Address to listen on")->default_val("0.0.0.0");
  serve->add_option("--data-dir", data_dir, "Directory of the embedded store")
      ->default_val("./eco-data");
  serve->add_option("--store", store_url,
                    "Store URL instead of the embedded store: etcd://host:port[,host:port...][/prefix]");
  serve->add_option("--max-body-bytes", sopts.max_body_bytes,
                    "Largest accepted request body; larger ones get 413")
      ->default_val(64u << 20);
  serve->add_option("--http-threads", sopts.threads, "HTTP worker threads")->default_val(32);
  const char* ui_help = "Serve the dashboard at /ui/ (false: 404 there)";
  serve->add_option("--ui", sopts.ui, ui_help)->default_val(true);
  DeployFlags deploy_flags;
  deploy_flags.AddTo(serve, "--rsync-workers");
  int render_seconds = 10;
  const char* render_help = "Wall time one app's templates may take to render, in seconds (0 = no limit)";
  serve->add_option("--render-time-limit", render_seconds, render_help)->default_val(10)->check(CLI::NonNegativeNumber);
  std::string field_validation = "Warn";
  const char* fv_help =
      "Field validation of DIGs that do not set spec.fieldValidation: Warn (fields a cluster's schema does "
      "not declare are dropped and reported) or Strict (the deployment fails on them)";
  serve->add_option("--field-validation", field_validation, fv_help)
      ->default_val("Warn")
      ->check(CLI::IsMember({"Warn", "Strict"}));
  AddAgentFlags(serve, &sopts);
  int agent_grace_seconds = 300;
  const char* grace_help =
      "Seconds an agent cluster's agent may be silent before status shows the cluster unreachable "
      "and its ready status stale";
  serve->add_option("--agent-grace", agent_grace_seconds, grace_help)
      ->default_val(300)
      ->check(CLI::Range(1, 86400));

  auto* api_cmd = app.add_subcommand(
      "api", "Run the north REST API and the scheduler alone, on a shared etcd store (rsync runs as `eco rsync`)");
  std::string api_store;
  eco::api::ServerOptions api_sopts;
  api_cmd->add_option("--store", api_store, "Store URL: etcd://host:port[,host:port...][/prefix]")->required();
  api_cmd->add_option("--port", api_sopts.port, "Port of the north REST API (0 = any free port)")->default_val(9015);
  api_cmd->add_option("--bind", api_sopts.bind, "Address to listen on")->default_val("0.0.0.0");
  api_cmd->add_option("--max-body-bytes", api_sopts.max_body_bytes,
                      "Largest accepted request body; larger ones get 413")
      ->default_val(64u << 20);
  api_cmd->add_option("--http-threads", api_sopts.threads, "HTTP worker threads")->default_val(32);
  api_cmd->add_option("--ui", api_sopts.ui, ui_help)->default_val(true);
  api_cmd->add_option("--render-time-limit", render_seconds, render_help)->default_val(10)->check(CLI::NonNegativeNumber);
  api_cmd->add_option("--field-validation", field_validation, fv_help)
      ->default_val("Warn")
      ->check(CLI::IsMember({"Warn", "Strict"}));
  AddAgentFlags(api_cmd, &api_sopts);
  api_cmd->add_option("--agent-grace", agent_grace_seconds, grace_help)
      ->default_val(300)
      ->check(CLI::Range(1, 86400));

  auto* rsync_cmd = app.add_subcommand("rsync", "Run rsync and the ready monitor alone, on a shared etcd store");
  std::string rsync_store;
  rsync_cmd->add_option("--store", rsync_store, "Store URL: etcd://host:port[,host:port...][/prefix]")->required();
  deploy_flags.AddTo(rsync_cmd, "--workers");
  eco::api::ServerOptions rsync_http;
  rsync_cmd->add_option("--port", rsync_http.port, "Port of /metrics, /healthz and /log-level (0 = any free port)")
      ->default_val(9017);
  rsync_cmd->add_option("--bind", rsync_http.bind, "Address of that port")->default_val("0.0.0.0");
  int rsync_agent_port = 9070;
  rsync_cmd->add_option("--agent-port", rsync_agent_port, "Port agents of agent clusters dial (0: serve no agents)")
      ->default_val(9070)
      ->check(CLI::Range(0, 65535));

  auto* helm = app.add_subcommand("helm", "The Helm template engine");
  helm->require_subcommand(1);
  auto* eval_cases = helm->add_subcommand(
      "eval-cases", "Render every case of a template conformance file; print [{id, output|error}]");
  std::string cases_file;
  eval_cases->add_option("CASES.json", cases_file, "Case file (conformance/template format)")
      ->required();
  // Listed for --help only: `helm template` is dispatched above, with Helm's flag syntax.
  helm->add_subcommand("template", "Render a chart as `helm template` does (eco helm template --help)");

  auto* controller = app.add_subcommand(
      "controller", "Run a built-in controller alone (its intents' REST API and EMCO's gRPC services)");
  eco::cmd::ControllerCommand ccmd;
  controller->add_option("NAME", ccmd.which, "hpa, traffic or gac")->required()->check(CLI::IsMember({"hpa", "traffic", "gac"}));
  controller->add_option("--store", ccmd.store_url,
                         "Store URL, shared with eco: etcd://host:port[,host:port...][/prefix]")
      ->required();
  controller->add_option("--port", ccmd.http.port, "Port of the intents REST API")->default_val(9091);
  controller->add_option("--bind", ccmd.http.bind, "Address of the REST API")->default_val("0.0.0.0");
  controller->add_option("--grpc-port", ccmd.grpc_port, "Port of the controller gRPC services")->default_val(9099);
  controller->add_option("--grpc-bind", ccmd.grpc_bind, "Address of the gRPC services")->default_val("0.0.0.0");

  std::string log_level = "info";
  eco::cmd::TraceFlags trace_flags;
  eco::cmd::HttpSecurityFlags security;
  eco::cmd::SecretsFlags secrets_flags;
  for (auto* cmd : {serve, api_cmd, rsync_cmd, controller}) {
    eco::cmd::AddLogLevelFlag(cmd, &log_level);
    eco::cmd::AddTraceFlags(cmd, &trace_flags);
    eco::cmd::AddHttpSecurityFlags(cmd, &security);
  }
  for (auto* cmd : {serve, api_cmd, rsync_cmd, controller}) {
    eco::cmd::AddSecretsFlags(cmd, &secrets_flags);
  }
  eco::cmd::GrpcTlsFlags grpc_tls_flags;
  for (auto* cmd : {serve, api_cmd, controller}) eco::cmd::AddGrpcTlsFlags(cmd, &grpc_tls_flags);

  auto* secrets_cmd = app.add_subcommand("secrets", "Encryption of the credentials in the store");
  secrets_cmd->require_subcommand(1);
  auto* reseal = secrets_cmd->add_subcommand(
      "reseal", "Encrypt every stored kubeconfig with the first key of the key file (after a rotation)");
  std::string reseal_dir = "./eco-data", reseal_store;
  reseal->add_option("--data-dir", reseal_dir, "Directory of the embedded store (eco stopped)")
      ->default_val("./eco-data");
  reseal->add_option("--store", reseal_store, "Store URL instead: etcd://host:port[,host:port...][/prefix]");
  eco::cmd::AddSecretsFlags(reseal, &secrets_flags);

  eco::cmd::AgentCommand agent_cmd;
  eco::cmd::AddAgentCommand(app, &agent_cmd);
  eco::cmd::AddLogLevelFlag(agent_cmd.cmd, &log_level);

  auto* version = app.add_subcommand("version", "Print the version");

  CLI11_PARSE(app, argc, argv);
  if (version->parsed()) {
    std::cout << "eco " << eco::kVersion << "\n";
    return 0;
  }
  if (eval_cases->parsed()) return EvalCases(cases_file);
  if (agent_cmd.cmd->parsed()) {
    eco::cmd::ApplyLogLevel(log_level);
    return eco::cmd::RunAgent(agent_cmd);
  }
  if (reseal->parsed()) {
    const std::string key_dir = EmbeddedDir(reseal_store, reseal_dir);
    if (!eco::cmd::ApplySecrets(secrets_flags, key_dir.empty() ? "" : key_dir + "/encryption.key")) return 2;
    if (!eco::secrets::Enabled()) {
      Log("error", "reseal needs a key: --encryption-key-file or ECO_ENCRYPTION_KEY");
      return 2;
    }
    return Reseal(reseal_dir, reseal_store);
  }
  eco::cmd::ApplyLogLevel(log_level);
  const std::string service = controller->parsed() ? "eco-controller-" + ccmd.which
                              : rsync_cmd->parsed() ? "eco-rsync"
                              : api_cmd->parsed()   ? "eco-api"
                                                    : "eco-serve";
  if (!eco::cmd::ApplyTrace(trace_flags, service)) return 2;
  // Spans still queued are sent before the process ends.
  struct FlushSpans {
    ~FlushSpans() { eco::trace::Shutdown(); }
  } flush_spans;
  // The roles below run for long: what libraries read from files lazily, now.
  eco::cmd::PreloadLazyFiles();
  eco::api::ServerOptions* http = controller->parsed()  ? &ccmd.http
                                  : rsync_cmd->parsed() ? &rsync_http
                                  : api_cmd->parsed()   ? &api_sopts
                                                        : &sopts;
  if (!eco::cmd::ApplyHttpSecurity(security, http)) return 2;
  if (!eco::cmd::ApplyGrpcTls(grpc_tls_flags, &ccmd.grpc_tls)) return 2;
  // The embedded store keeps its key beside its data unless told otherwise.
  const std::string key_dir = serve->parsed() ? EmbeddedDir(store_url, data_dir) : "";
  if (!eco::cmd::ApplySecrets(secrets_flags, key_dir.empty() ? "" : key_dir + "/encryption.key")) return 2;
  if (controller->parsed()) return eco::cmd::RunController(ccmd);
  const auto given = [](CLI::App* c) { return c->get_option("--agent-port")->count() > 0; };
  if (rsync_cmd->parsed())
    return RunRsync(rsync_store, deploy_flags, rsync_http, rsync_agent_port, given(rsync_cmd));
  if (api_cmd->parsed())
    return Serve("", api_store, api_sopts, nullptr, render_seconds, field_validation, given(api_cmd),
                 agent_grace_seconds);
  return Serve(data_dir, store_url, sopts, &deploy_flags, render_seconds, field_validation, given(serve),
               agent_grace_seconds);
}
