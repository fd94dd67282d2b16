#include "cmd/agent.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "agent/link.h"
#include "agent/manifest.h"
#include "agent/runner.h"
#include "agent/state_secret.h"
#include "cmd/log.h"
#include "common/log.h"
#include "common/version.h"
#include "k8s/in_cluster.h"
#include "k8s/kubeconfig.h"
#include "k8s/watch.h"
#include "rsync/executor.h"

namespace eco::cmd {

namespace {

Result<std::string> ReadAgentFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// One agent: its cluster's client, state, runner and link.
struct OneAgent {
  std::string label;  // for logs: the kubeconfig or "in-cluster"
  std::shared_ptr<k8s::ClusterClient> client;
  std::unique_ptr<agent::StateSecrets> identity, state;
  std::unique_ptr<agent::Runner> runner;
  std::unique_ptr<agent::Link> link;

  agent::StateStorage Storage() {
    agent::StateStorage s;
    s.save_identity = [this](std::string_view b) { return identity->Save(b).status(); };
    s.load_identity = [this] { return identity->Load(); };
    s.save_state = [this](std::string_view b) { return state->Save(b).status(); };
    s.load_state = [this] { return state->Load(); };
    return s;
  }
};

// The namespace the state lives in exists (outside a pod nobody made it).
// Its own user agent: the cluster's audit log tells the agent from eco.
k8s::ClientOptions AgentClientOptions() {
  k8s::ClientOptions o;
  o.user_agent = std::string("eco-agent/") + eco::kVersion;
  return o;
}

Status EnsureNamespace(k8s::ClusterClient& c, const std::string& ns) {
  nlohmann::json obj = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  k8s::ApplyOptions o;
  o.field_manager = "eco-agent";
  o.want_object = false;
  return c.Apply(obj, o).status();
}

// Sets up one agent up to a running runner; its link is made, not run.
Status Prepare(OneAgent& a, const AgentCommand& cmd, const std::string& token, const std::string& ns,
               rsync::Executor* exec, const std::string& ca_pem, k8s::WatchHub* hub) {
  ECO_RETURN_IF_ERROR(EnsureNamespace(*a.client, ns).Annotate("namespace " + ns));
  a.identity = std::make_unique<agent::StateSecrets>(a.client, ns, cmd.name + "-identity");
  a.state = std::make_unique<agent::StateSecrets>(a.client, ns, cmd.name + "-state");
  agent::LinkOptions lo;
  lo.hub = cmd.hub;
  lo.token = token;
  lo.ca_pem = ca_pem;
  lo.version = eco::kVersion;
  lo.retry_cap = std::chrono::seconds(cmd.reconnect_max_seconds);
  lo.executor = exec;  // null: the link's own thread
  lo.log = [label = a.label](const std::string& m) {
    eco::log::Write(eco::log::Level::kInfo, "agent", m, {{"cluster", label}});
  };
  const agent::StateStorage storage = a.Storage();
  // The hub may not be up yet: enrolment is retried; a refusal is final.
  Result<agent::Identity> id = Unavailable("not tried");
  for (int attempt = 1;; ++attempt) {
    id = agent::ObtainIdentity(lo, storage);
    if (id.ok() || !id.status().retryable()) break;
    eco::log::Write(eco::log::Level::kWarn, "agent", "enrolment failed, retrying: " + id.status().ToString(),
                    {{"cluster", a.label}});
    std::this_thread::sleep_for(std::chrono::seconds(std::min(attempt, 10)));
  }
  if (!id.ok()) return id.status();
  agent::RunnerOptions ro;
  ro.provider = id->provider;
  ro.cluster = id->cluster;
  ro.rsync.workers = cmd.workers;
  ro.drift_interval = std::chrono::seconds(cmd.drift_seconds);
  ro.drift_sweep = std::chrono::seconds(cmd.drift_sweep_seconds);
  ro.executor = exec;
  ro.watch_hub = hub;
  a.runner = std::make_unique<agent::Runner>(ro, a.client);
  ECO_ASSIGN_OR_RETURN(auto kept, storage.load_state());
  if (kept) ECO_RETURN_IF_ERROR(a.runner->Restore(*kept).Annotate("restoring the kept state"));
  ECO_RETURN_IF_ERROR(a.runner->Start());
  a.link = std::make_unique<agent::Link>(lo, *id, *a.runner, storage);
  return Status::Ok();
}

int RunManifest(const AgentCommand& cmd) {
  agent::ManifestOptions o;
  o.hub = cmd.hub;
  o.token = cmd.token;
  if (o.token.empty() && !cmd.token_file.empty()) {
    auto t = ReadAgentFile(cmd.token_file);
    if (!t.ok()) {
      std::cerr << "eco agent manifest: " << t.status().message() << "\n";
      return 2;
    }
    o.token = Trim(*t);
  }
  if (!cmd.ns.empty()) o.ns = cmd.ns;
  o.name = cmd.name;
  o.image = cmd.image;
  o.image_pull_policy = cmd.pull_policy;
  auto y = agent::AgentManifest(o);
  if (!y.ok()) {
    std::cerr << "eco agent manifest: " << y.status().message() << "\n";
    return 2;
  }
  std::cout << *y;
  return 0;
}

}  // namespace

void AddAgentCommand(CLI::App& app, AgentCommand* c) {
  c->cmd = app.add_subcommand("agent", "Run in (or beside) a member cluster: pull its desired state from the hub");
  c->cmd->add_option("--hub", c->hub, "The hub's agent address: http(s)://host:port or host:port (default port 9070)");
  c->cmd->add_option("--token", c->token, "Bootstrap token (used once; the identity it buys is kept in the cluster)");
  c->cmd->add_option("--token-file", c->token_file, "File holding the bootstrap token");
  c->cmd->add_option("--kubeconfig", c->kubeconfig, "Kubeconfig of the cluster (default: in-cluster configuration)");
  c->cmd->add_option("--namespace", c->ns, "Namespace of the agent's Secrets (default: the pod's, else eco-system)");
  c->cmd->add_option("--name", c->name, "Name the agent's objects start with")->default_val("eco-agent");
  c->cmd->add_option("--hub-ca", c->hub_ca_file, "CA certificate (PEM) to trust an https hub by");
  c->cmd->add_option("--workers", c->workers, "Threads that apply to the cluster")->default_val(8);
  c->cmd->add_option("--drift-seconds", c->drift_seconds,
                     "How often applied objects the watches saw change are compared with what eco applied, and "
                     "re-applied when they differ (0: never)")
      ->default_val(10)
      ->check(CLI::Range(0, 86400));
  c->cmd->add_option("--drift-sweep-seconds", c->drift_sweep_seconds,
                     "How often every applied object is read and compared, whatever the watches saw (jittered)")
      ->default_val(600)
      ->check(CLI::Range(1, 7 * 86400));
  c->cmd->add_option("--reconnect-max-seconds", c->reconnect_max_seconds,
                     "Longest pause between attempts to reach the hub (doubling from 1 s, jittered)")
      ->default_val(60)
      ->check(CLI::Range(1, 3600));
  c->cmd->add_option("--fleet", c->fleet_dir,
                     "Run one agent per NAME.yaml (kubeconfig) + NAME.token in this directory, in one process");
  c->cmd->add_option("--fleet-start-threads", c->fleet_start_threads,
                     "Fleet mode: agents started at once (each a few round trips to its cluster and the hub)")
      ->default_val(16)
      ->check(CLI::Range(1, 256));
  c->manifest = c->cmd->add_subcommand("manifest", "Print the YAML that installs the agent in a cluster");
  c->manifest->add_option("--hub", c->hub, "The hub's agent address (the bootstrap answer's hub)")->required();
  c->manifest->add_option("--token", c->token, "Bootstrap token");
  c->manifest->add_option("--token-file", c->token_file, "File holding the bootstrap token");
  c->manifest->add_option("--namespace", c->ns, "Namespace to install into (default eco-system)");
  c->manifest->add_option("--name", c->name, "Name of the agent's objects")->default_val("eco-agent");
  c->manifest->add_option("--image", c->image, "eco's container image")->default_val("eco:latest");
  c->manifest->add_option("--image-pull-policy", c->pull_policy, "Always, IfNotPresent or Never")
      ->default_val("IfNotPresent");
}

int RunAgent(const AgentCommand& cmd) {
  if (cmd.manifest->parsed()) return RunManifest(cmd);
  if (cmd.hub.empty()) {
    std::cerr << "eco agent: --hub is required\n";
    return 2;
  }
  std::string ca_pem;
  if (!cmd.hub_ca_file.empty()) {
    auto ca = ReadAgentFile(cmd.hub_ca_file);
    if (!ca.ok()) {
      Log("error", ca.status().message());
      return 2;
    }
    ca_pem = *ca;
  }
  std::vector<std::unique_ptr<OneAgent>> agents;
  std::unique_ptr<rsync::Executor> shared;
  std::vector<std::unique_ptr<k8s::WatchHub>> hubs;  // fleet mode; outlive the runners
  if (!cmd.fleet_dir.empty()) {
    // Fleet mode: one executor for every simulated agent's applies, and
    // one watch hub per 1,000 agents for their ready watches.
    shared = std::make_unique<rsync::Executor>(cmd.workers);
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cmd.fleet_dir, ec)) {
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    }
    if (ec || names.empty()) {
      Log("error", "--fleet " + cmd.fleet_dir + ": no NAME.yaml there");
      return 2;
    }
    std::sort(names.begin(), names.end());
    for (size_t i = 0; i < names.size(); i += 1000) hubs.push_back(std::make_unique<k8s::WatchHub>());
    std::vector<std::unique_ptr<OneAgent>> slots(names.size());
    std::atomic<size_t> next{0}, failed{0};
    // Agents start in parallel (each is a few round trips to its cluster
    // and one to the hub); one that cannot start is left out, not fatal.
    auto start = [&] {
      for (size_t i; (i = next.fetch_add(1)) < names.size();) {
        const std::string& n = names[i];
        const std::string base = cmd.fleet_dir + "/" + n;
        auto a = std::make_unique<OneAgent>();
        a->label = n;
        auto cfg = k8s::LoadKubeconfigFile(base + ".yaml");
        auto tok = ReadAgentFile(base + ".token");
        Status s = cfg.status();
        if (s.ok()) {
          auto cl = k8s::NewClusterClient(*cfg, AgentClientOptions());
          s = cl.status();
          if (cl.ok()) a->client = std::move(*cl);
        }
        if (s.ok()) {
          const std::string ns = cmd.ns.empty() ? "eco-system" : cmd.ns;
          s = Prepare(*a, cmd, tok.ok() ? Trim(*tok) : "", ns, shared.get(), ca_pem, hubs[i / 1000].get());
        }
        if (!s.ok()) {
          ++failed;
          Log("error", n + ": not started: " + s.ToString());
          continue;
        }
        slots[i] = std::move(a);
      }
    };
    std::vector<std::thread> starters;
    const size_t n_start = std::min<size_t>(static_cast<size_t>(std::max(cmd.fleet_start_threads, 1)), names.size());
    for (size_t t = 0; t < n_start; ++t) starters.emplace_back(start);
    for (auto& t : starters) t.join();
    for (auto& a : slots) {
      if (a) agents.push_back(std::move(a));
    }
    if (agents.empty()) {
      Log("error", "--fleet " + cmd.fleet_dir + ": no agent could start");
      if (shared) shared->Shutdown();
      return 1;
    }
    if (failed.load() > 0)
      Log("warn", std::to_string(failed.load()) + " of " + std::to_string(names.size()) +
                      " agents of the fleet could not start (see above); the others run");
  } else {
    auto a = std::make_unique<OneAgent>();
    Result<k8s::RestConfig> cfg = NotFound("");
    std::string ns = cmd.ns;
    if (!cmd.kubeconfig.empty()) {
      a->label = cmd.kubeconfig;
      cfg = k8s::LoadKubeconfigFile(cmd.kubeconfig);
    } else {
      a->label = "in-cluster";
      cfg = k8s::InClusterConfig();
      if (cfg.ok() && ns.empty()) ns = cfg->default_namespace;
    }
    if (!cfg.ok()) {
      Log("error", "cluster configuration: " + cfg.status().message());
      return 2;
    }
    if (ns.empty()) ns = "eco-system";
    auto cl = k8s::NewClusterClient(*cfg, AgentClientOptions());
    if (!cl.ok()) {
      Log("error", cl.status().message());
      return 2;
    }
    a->client = std::move(*cl);
    std::string token = cmd.token;
    if (token.empty() && !cmd.token_file.empty()) {
      auto t = ReadAgentFile(cmd.token_file);
      if (t.ok()) token = Trim(*t);  // a missing file is fine once an identity is kept
    }
    Status s = Prepare(*a, cmd, token, ns, nullptr, ca_pem, nullptr);
    if (!s.ok()) {
      Log("error", s.ToString());
      return s.code() == Code::kPermissionDenied ? 3 : 1;
    }
    agents.push_back(std::move(a));
  }
  std::atomic<bool> stop{false};
  StopOnSignal([&stop] { stop = true; });
  Log("info", "eco agent running for " + std::to_string(agents.size()) + " cluster(s), hub " + cmd.hub);
  // The links hold no thread: their streams complete on gRPC's threads and
  // their work runs on the executor (fleet mode's shared one).
  std::mutex mu;
  std::condition_variable cv;
  size_t running = agents.size();
  int refused = 0;
  for (auto& a : agents) {
    a->link->Start([&](Status s) {
      std::lock_guard<std::mutex> g(mu);
      if (!s.ok()) ++refused;
      --running;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lk(mu);
    while (running > 0 && !stop.load()) cv.wait_for(lk, std::chrono::milliseconds(100));
  }
  for (auto& a : agents) a->link->Stop();
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return running == 0; });
  }
  for (auto& a : agents) {
    a->runner->Stop();
    // What came since the last save is kept too (a kill -9 would only
    // have it sent again).
    if (Status s = a->state->Save(a->runner->Snapshot()).status(); !s.ok())
      Log("warn", a->label + ": the last state was not saved: " + s.ToString());
  }
  // The shared pool first: its timers name the runners.
  if (shared) shared->Shutdown();
  agents.clear();
  hubs.clear();
  Log("info", "eco agent stopped");
  return refused > 0 ? 3 : 0;
}

std::unique_ptr<agenthub::Server> StartAgentServer(store::Store& st, const std::string& bind, int port,
                                                   const std::string& tls_cert_file, const std::string& tls_key_file,
                                                   bool required, bool* failed) {
  *failed = false;
  agenthub::ServerOptions o;
  o.bind = bind;
  o.port = port;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) o.replica = host;
  if (!tls_cert_file.empty() && !tls_key_file.empty()) {
    auto c = ReadAgentFile(tls_cert_file);
    auto k = ReadAgentFile(tls_key_file);
    if (!c.ok() || !k.ok()) {
      Log("error", "agent server TLS: " + (c.ok() ? k.status() : c.status()).message());
      *failed = true;
      return nullptr;
    }
    o.cert_pem = *c;
    o.key_pem = *k;
  }
  auto s = std::make_unique<agenthub::Server>(st, o);
  if (auto r = s->Start(); !r.ok()) {
    if (required) {
      Log("error", r.message());
      *failed = true;
    } else {
      Log("warn", r.message() + ": no agents are served by this process (--agent-port chooses another port)");
    }
    return nullptr;
  }
  Log("info", "serving agents on " + bind + ":" + std::to_string(s->port()) + (o.cert_pem.empty() ? "" : " (TLS)"));
  return s;
}

}  // namespace eco::cmd
