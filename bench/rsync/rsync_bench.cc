// eco_rsync_bench: deployment throughput of `eco serve` against one kube-sim
// fleet, and kube-sim's own apply capacity measured beside it in the same run.
//
//   1. kube-sim with --clusters N, then `eco serve` (embedded store, or
//      --store etcd://...), both child processes on 127.0.0.1.
//   2. The fleet onboarded through the REST API, in parallel: per cluster a
//      multipart POST with its kubeconfig, a label and a reference in a
//      level-0 logical cloud.
//   3. One composite app of --apps generated charts of --resources objects
//      each (ServiceAccount, Secrets, ConfigMaps, Service, Deployment), one
//      DIG placed by label on every cluster; approve.
//   4. POST instantiate; time until the DIG's AppContext is Instantiated
//      (rsync finished: every resource Applied, checked with a full summary
//      query) and until the ready status is Ready on every app.
//   5. eco is stopped, and a plain multi-threaded server-side-apply client
//      (its own sockets, one keep-alive connection per thread, as many
//      threads as rsync has workers) applies the same objects, in the same
//      order, to the same clusters (another namespace): kube-sim's raw rate.
//
// With --delivery agent (bench/agent/run.sh) the clusters are agent
// clusters instead: --sims kube-sim processes hold them, each registered
// with a bootstrap token, and --agent-procs `eco agent --fleet` processes
// run their agents; the driver waits until every agent's stream is open
// (eco's eco_agent_streams), then instantiates and waits as above. No raw
// client runs. With --partition-seconds S it then stops every agent
// process (SIGSTOP: their streams fall silent, as behind a cut link) for S
// seconds, continues them, and compares the protocol bytes the resumption
// moved (eco_agent_*_bytes_total) with those the deployment moved.
//
// eco's peak RSS is VmHWM from /proc; the thread count is sampled every
// 50 ms, its open sockets every second. Prints progress on stderr and one
// JSON line of results on stdout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <httplib.h>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "k8s/kubeconfig.h"
#include "process.h"
#include "test_archives.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using eco::testing::Process;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void Note(const std::string& m) {
  std::fprintf(stderr, "[rsync-bench] %s\n", m.c_str());
  std::fflush(stderr);
}

// ---------------------------------------------------------------- /proc

struct ProcSample {
  long rss_kib = 0;
  long hwm_kib = 0;
  long anon_kib = 0;  // RssAnon: the heap and stacks
  long file_kib = 0;  // RssFile: mapped files (the embedded store's mmap)
  long threads = 0;
};

ProcSample ReadProcStatus(pid_t pid) {
  ProcSample s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&] { return std::atol(line.c_str() + line.find(':') + 1); };
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = value();
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kib = value();
    if (line.rfind("RssAnon:", 0) == 0) s.anon_kib = value();
    if (line.rfind("RssFile:", 0) == 0) s.file_kib = value();
    if (line.rfind("Threads:", 0) == 0) s.threads = value();
  }
  return s;
}

// User + system CPU seconds of a process so far.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Open sockets of a process (entries of /proc/PID/fd that link to socket:).
long Sockets(pid_t pid) {
  long n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code ec2;
    auto target = std::filesystem::read_symlink(e.path(), ec2);
    if (!ec2 && target.native().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

// Peak RSS and thread count of one process, sampled in the background.
class Sampler {
 public:
  explicit Sampler(pid_t pid) : pid_(pid), thread_([this] { Run(); }) {}
  ~Sampler() {
    stop_ = true;
    thread_.join();
  }
  long max_threads() const { return max_threads_; }
  long max_rss_kib() const { return max_rss_; }
  long max_sockets() const { return max_sockets_; }

 private:
  void Run() {
    for (int tick = 0; !stop_; ++tick) {
      ProcSample s = ReadProcStatus(pid_);
      max_threads_ = std::max(max_threads_.load(), s.threads);
      max_rss_ = std::max(max_rss_.load(), s.rss_kib);
      // Reading 10,000 links is not free: once a second.
      if (tick % 20 == 0) max_sockets_ = std::max(max_sockets_.load(), Sockets(pid_));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<long> max_threads_{0}, max_rss_{0}, max_sockets_{0};
  std::thread thread_;
};

// ---------------------------------------------------------------- charts

// The resources of one app, in a mix a typical chart has. With 10 per app:
// 1 ServiceAccount, 2 Secrets, 5 ConfigMaps, 1 Service, 1 Deployment.
enum class Kind { kServiceAccount, kSecret, kConfigMap, kService, kDeployment };
constexpr Kind kMix[10] = {Kind::kServiceAccount, Kind::kSecret,    Kind::kSecret,
                           Kind::kConfigMap,      Kind::kConfigMap, Kind::kConfigMap,
                           Kind::kConfigMap,      Kind::kConfigMap, Kind::kService,
                           Kind::kDeployment};

std::string ResourceName(const std::string& app, Kind k, int i) {
  switch (k) {
    case Kind::kServiceAccount:
      return app + "-sa-" + std::to_string(i);
    case Kind::kSecret:
      return app + "-secret-" + std::to_string(i);
    case Kind::kConfigMap:
      return app + "-config-" + std::to_string(i);
    case Kind::kService:
      return app + "-svc-" + std::to_string(i);
    case Kind::kDeployment:
      return app + "-web-" + std::to_string(i);
  }
  return app;
}

std::string Template(const std::string& app, int n, int i) {
  const Kind k = kMix[i % 10];
  const std::string name = ResourceName(app, k, i);
  const std::string labels =
      "  labels:\n    app.kubernetes.io/name: " + name +
      "\n    app.kubernetes.io/instance: {{ .Release.Name }}\n    app.kubernetes.io/part-of: " + app + "\n";
  std::string t;
  switch (k) {
    case Kind::kServiceAccount:
      t = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + name + "\n" + labels +
          "automountServiceAccountToken: false\n";
      break;
    case Kind::kSecret:
      t = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n" + labels + "type: Opaque\ndata:\n";
      for (int j = 0; j < 4; ++j) {
        t += "  key-" + std::to_string(j) + ": {{ printf \"%s-secret-" + std::to_string(j) +
             "-0123456789abcdef\" .Release.Name | b64enc }}\n";
      }
      break;
    case Kind::kConfigMap:
      t = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" + labels + "data:\n";
      for (int j = 0; j < 8; ++j) {
        t += "  setting-" + std::to_string(j) + ": \"{{ .Values.setting }}-" + std::to_string(j) + "\"\n";
      }
      t += "  app.properties: |\n    log.level={{ .Values.logLevel }}\n    cache.size=256\n"
           "    pool.max=32\n    endpoint=http://" + app + ":{{ .Values.port }}/api\n";
      break;
    case Kind::kService:
      t = "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\n" + labels +
          "spec:\n  type: ClusterIP\n  selector:\n    app.kubernetes.io/part-of: " + app +
          "\n  ports:\n    - name: http\n      port: 80\n      targetPort: {{ .Values.port }}\n"
          "      protocol: TCP\n";
      break;
    case Kind::kDeployment: {
      std::string sa, cm;
      for (int j = 0; j < n; ++j) {
        if (kMix[j % 10] == Kind::kServiceAccount && sa.empty()) sa = ResourceName(app, Kind::kServiceAccount, j);
        if (kMix[j % 10] == Kind::kConfigMap && cm.empty()) cm = ResourceName(app, Kind::kConfigMap, j);
      }
      t = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n" + labels +
          "spec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels:\n"
          "      app.kubernetes.io/name: " + name + "\n  template:\n    metadata:\n      labels:\n"
          "        app.kubernetes.io/name: " + name + "\n        app.kubernetes.io/part-of: " + app +
          "\n    spec:\n" + (sa.empty() ? "" : "      serviceAccountName: " + sa + "\n") +
          "      containers:\n        - name: main\n          image: \"{{ .Values.image }}\"\n"
          "          ports:\n            - containerPort: {{ .Values.port }}\n" +
          (cm.empty() ? "" : "          envFrom:\n            - configMapRef:\n                name: " + cm + "\n") +
          "          readinessProbe:\n            httpGet:\n              path: /healthz\n"
          "              port: {{ .Values.port }}\n          resources:\n            requests:\n"
          "              cpu: 50m\n              memory: 64Mi\n            limits:\n"
          "              cpu: 200m\n              memory: 128Mi\n";
      break;
    }
  }
  return t;
}

std::string Chart(const std::string& app, int n, int replicas) {
  std::vector<eco::testing::TarEntry> files = {
      {app + "/Chart.yaml", "apiVersion: v2\nname: " + app + "\nversion: 0.1.0\nappVersion: \"1.0\"\n"},
      {app + "/values.yaml", "replicas: " + std::to_string(replicas) +
                                 "\nimage: registry.example/web:1.25\nport: 8080\nsetting: enabled\nlogLevel: info\n"}};
  for (int i = 0; i < n; ++i) {
    char file[64];
    std::snprintf(file, sizeof file, "/templates/r%03d.yaml", i);
    files.push_back({app + file, Template(app, n, i)});
  }
  return eco::testing::TgzOf(files);
}

// ---------------------------------------------------------------- eco's API

// One keep-alive connection to eco; one per thread.
class Api {
 public:
  explicit Api(int port) : cli_("127.0.0.1", port) {
    cli_.set_keep_alive(true);
    cli_.set_tcp_nodelay(true);  // else Nagle holds a multipart body back ~40 ms per request
    cli_.set_connection_timeout(std::chrono::seconds(10));
    cli_.set_read_timeout(std::chrono::seconds(300));
    cli_.set_write_timeout(std::chrono::seconds(60));
  }

  // The HTTP status, 0 when no answer came; `body` gets the answer.
  int PostJson(const std::string& path, const json& body, std::string* out = nullptr) {
    return Take(cli_.Post(path.c_str(), body.dump(), "application/json"), out);
  }
  int PostParts(const std::string& path, const json& metadata, const std::string& file,
                const std::string& filename, std::string* out = nullptr) {
    httplib::MultipartFormDataItems items = {{"metadata", metadata.dump(), "", "application/json"},
                                             {"file", file, filename, "application/octet-stream"}};
    return Take(cli_.Post(path.c_str(), items), out);
  }
  int Get(const std::string& path, std::string* out) { return Take(cli_.Get(path.c_str()), out); }
  json GetJson(const std::string& path, int* status) {
    std::string body;
    *status = Get(path, &body);
    return json::parse(body, nullptr, false);
  }

 private:
  static int Take(const httplib::Result& r, std::string* out) {
    if (!r) {
      if (out) *out = "no answer: " + httplib::to_string(r.error());
      return 0;
    }
    if (out) *out = r->body;
    return r->status;
  }
  httplib::Client cli_;
};

json Named(const std::string& n) { return {{"metadata", {{"name", n}}}}; }
json Doc(const std::string& n, json spec) { return {{"metadata", {{"name", n}}}, {"spec", std::move(spec)}}; }

// ---------------------------------------------------------------- raw client

// A bare HTTP/1.1 client on one blocking keep-alive socket (TLS when
// `tls` is set, certificates not checked: loopback only): what a minimal
// server-side-apply client costs, with no eco code in the way.
class RawConn {
 public:
  explicit RawConn(int port, SSL_CTX* tls = nullptr) : port_(port), tls_(tls) {}
  ~RawConn() { Close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  // Sends `request` and reads one response; its status, or -1 when the
  // connection failed (one reconnect is tried first).
  int Do(const std::string& request) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fd_ < 0 && !Connect()) return -1;
      if (SendAll(request)) {
        int code = ReadResponse();
        if (code > 0) return code;
      }
      Close();
    }
    return -1;
  }

 private:
  bool Connect() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      Close();
      return false;
    }
    if (tls_ != nullptr) {
      ssl_ = SSL_new(tls_);
      if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1 || SSL_connect(ssl_) != 1) {
        Close();
        return false;
      }
    }
    buf_.clear();
    return true;
  }
  void Close() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ssl_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  ssize_t Send(const char* p, size_t n) {
    if (ssl_ == nullptr) return ::send(fd_, p, n, MSG_NOSIGNAL);
    size_t done = 0;
    return SSL_write_ex(ssl_, p, n, &done) == 1 ? static_cast<ssize_t>(done) : -1;
  }
  ssize_t Recv(char* p, size_t n) {
    if (ssl_ == nullptr) return ::recv(fd_, p, n, 0);
    size_t got = 0;
    return SSL_read_ex(ssl_, p, n, &got) == 1 ? static_cast<ssize_t>(got) : -1;
  }
  bool SendAll(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = Send(s.data() + off, s.size() - off);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  bool Fill() {
    char tmp[16384];
    ssize_t n = Recv(tmp, sizeof tmp);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  // Whole responses carry Content-Length (kube-sim chunks only watches).
  int ReadResponse() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return -1;
    }
    std::string head = buf_.substr(0, end);
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int code = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
    auto cl = head.find("\r\ncontent-length:");
    if (code <= 0 || cl == std::string::npos) return -1;
    size_t len = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
    size_t total = end + 4 + len;
    while (buf_.size() < total) {
      if (!Fill()) return -1;
    }
    buf_.erase(0, total);
    return code;
  }

  int port_;
  SSL_CTX* tls_;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  std::string buf_;
};

// The raw client's TLS: HTTP/1.1 only (ALPN), nothing verified.
struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
std::unique_ptr<SSL_CTX, SslCtxFree> RawTls() {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return ctx;
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn);
  return ctx;
}

struct RawObject {
  std::string path;  // below the cluster's prefix, with the apply query
  std::string body;
};

// The API path of a kind the generated charts use (no discovery: the raw
// client knows them).
std::optional<std::string> CollectionPath(const std::string& api_version, const std::string& kind,
                                          const std::string& ns) {
  static const std::map<std::string, std::string> kPlural = {{"ConfigMap", "configmaps"},
                                                             {"Secret", "secrets"},
                                                             {"Service", "services"},
                                                             {"ServiceAccount", "serviceaccounts"},
                                                             {"Deployment", "deployments"}};
  auto p = kPlural.find(kind);
  if (p == kPlural.end()) return std::nullopt;
  std::string group = api_version == "v1" ? "/api/v1" : "/apis/" + api_version;
  return group + "/namespaces/" + ns + "/" + p->second;
}

struct ClusterTarget {
  std::string prefix;  // "/clusters/NAME"
  std::string auth;    // "Authorization: Bearer ...\r\n" or ""
};

std::string ApplyRequest(const ClusterTarget& c, const RawObject& o, const std::string& host) {
  std::string r;
  r.reserve(o.body.size() + 400);
  r.append("PATCH ").append(c.prefix).append(o.path).append(" HTTP/1.1\r\nHost: ").append(host);
  r.append("\r\nUser-Agent: eco-rsync-bench-raw\r\nAccept: application/json\r\n").append(c.auth);
  r.append("Content-Type: application/apply-patch+yaml\r\nContent-Length: ");
  r.append(std::to_string(o.body.size())).append("\r\n\r\n").append(o.body);
  return r;
}

// ---------------------------------------------------------------- the run

struct Args {
  int clusters = 100;
  int apps = 10;
  int resources = 10;
  int replicas = 1;
  int workers = 16;
  int raw_threads = 0;  // 0: as many as rsync workers
  int sim_threads = 2;
  int http_threads = 32;
  int onboard_threads = 8;
  int timeout_s = 1800;
  bool tls = false;  // kube-sim serves HTTPS (and HTTP/2 where it offers it)
  int digs = 1;      // DIGs deployed to every cluster, each its own composite app
  bool skip_ready = false;
  bool skip_raw = false;
  std::string store;
  std::string work_dir;
  std::string eco_bin, sim_bin;
  std::vector<std::string> eco_args;
  std::string row_file;  // a Markdown table row is appended here
  // CPU lists ("0", "0-1", "0,2"): eco (and the raw client, which stands in
  // for it) on some cores, kube-sim on others, as a fleet of remote
  // clusters would be. Empty: wherever the scheduler puts them.
  std::string eco_cpus, sim_cpus;
  // Agent mode.
  std::string delivery = "push";
  int sims = 1;             // kube-sim processes (push mode: 1)
  int agent_procs = 0;      // eco agent --fleet processes (0: one per 1,250 clusters)
  int agent_workers = 16;   // their --workers
  int partition_s = 0;      // stop the agents this long after Ready (0: no partition)
  int idle_s = 0;           // after Ready, measure the quiet fleet's CPU this long (0: not)
  std::string agent_cpus;   // the agent processes' CPUs (taskset list)
  bool agent() const { return delivery == "agent"; }
};

// "0-2,5" -> {0,1,2,5}; empty on a malformed list.
std::vector<int> ParseCpuList(const std::string& list) {
  std::vector<int> cpus;
  std::stringstream ss(list);
  for (std::string part; std::getline(ss, part, ',');) {
    int lo = 0, hi = 0;
    char dash = 0;
    std::stringstream ps(part);
    if (!(ps >> lo)) return {};
    hi = lo;
    if (ps >> dash && !(dash == '-' && ps >> hi)) return {};
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

void PinThisThread(const std::string& list) {
  if (list.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : ParseCpuList(list)) CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// argv run under `taskset -c LIST` (util-linux) when LIST is set.
std::vector<std::string> Pinned(const std::string& list, std::vector<std::string> argv) {
  if (list.empty()) return argv;
  argv.insert(argv.begin(), {"taskset", "-c", list});
  return argv;
}

class Bench {
 public:
  explicit Bench(Args a) : a_(std::move(a)) {}

  int Run();

 private:
  bool Fail(const std::string& m) {
    Note("FAILED: " + m);
    if (eco_) Note("eco log tail: " + Tail(eco_->ReadLog()));
    return false;
  }
  static std::string Tail(const std::string& s) { return s.size() > 3000 ? s.substr(s.size() - 3000) : s; }
  const std::string& Cluster(int i) const { return names_[static_cast<size_t>(i)]; }
  double SimCpu() const {
    double t = 0;
    for (const auto& p : sims_) t += CpuSeconds(p->pid());
    return t;
  }
  double AgentCpu() const {
    double t = 0;
    for (const auto& p : agents_) t += CpuSeconds(p->pid());
    return t;
  }

  bool StartSim();
  bool StartAgents();
  int AgentProcs() const { return a_.agent_procs > 0 ? a_.agent_procs : std::max(1, (a_.clusters + 1249) / 1250); }
  bool WaitStreams(const std::string& what, double timeout_s);
  bool Partition();
  std::map<std::string, double> Metrics();
  bool StartEco();
  bool Onboard();
  bool CreateApp();
  bool CreateDig(int k);
  bool Deploy();
  bool WaitApplied();
  bool WaitReady();
  void Idle();
  bool FetchObjects();
  bool RawApply();
  void RaiseFileLimit();
  void AppendRow();

  Args a_;
  std::unique_ptr<eco::testing::TempDir> tmp_;
  std::string dir_;
  std::vector<std::unique_ptr<Process>> sims_, agents_;
  std::unique_ptr<Process> eco_;
  std::unique_ptr<Sampler> sampler_;
  int sim_port_ = 0, eco_port_ = 0, agent_port_ = 0;
  std::vector<std::string> names_;             // the clusters, sorted
  std::map<std::string, std::string> config_;  // cluster -> its kubeconfig file
  std::map<std::string, double> bytes0_;       // protocol counters before instantiate
  json out_ = json::object();
  const std::string kDig_ = Dig(0);
  // DIG k's composite app ("ca", "ca2", ...) and its apps ("app0", "d2app0", ...):
  // names of their own, so that DIGs deploy different objects to one cluster.
  static std::string CompositeApp(int k) { return k == 0 ? "ca" : "ca" + std::to_string(k + 1); }
  static std::string Dig(int k) {
    return "/v2/projects/p/composite-apps/" + CompositeApp(k) + "/v1/deployment-intent-groups/dig";
  }
  static std::string AppName(int k, int i) {
    return (k == 0 ? "app" : "d" + std::to_string(k + 1) + "app") + std::to_string(i);
  }
  Clock::time_point t_instantiate_;
  double eco_cpu0_ = 0, sim_cpu0_ = 0, agent_cpu0_ = 0;
  std::vector<std::vector<RawObject>> objects_;  // per app, in apply order
};

void Bench::RaiseFileLimit() {
  // 10,000 clusters mean tens of thousands of sockets in eco and kube-sim
  // (children inherit the limit). Root may raise the hard limit too.
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  rlimit want{1 << 20, 1 << 20};
  if (setrlimit(RLIMIT_NOFILE, &want) != 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  out_["nofile"] = static_cast<long long>(lim.rlim_cur);
}

bool Bench::StartSim() {
  auto t = Clock::now();
  const int n = std::max(1, a_.sims);
  for (int k = 0; k < n; ++k) {
    const std::string kc = dir_ + "/kubeconfigs" + (n > 1 ? "-" + std::to_string(k + 1) : "");
    std::filesystem::create_directories(kc);
    const int share = a_.clusters / n + (k < a_.clusters % n ? 1 : 0);
    std::vector<std::string> argv = {a_.sim_bin, "--port", "0", "--clusters", std::to_string(share), "--threads",
                                     std::to_string(a_.sim_threads), "--kubeconfig-dir", kc};
    if (n > 1) argv.insert(argv.end(), {"--name-prefix", "s" + std::to_string(k + 1) + "-c"});
    if (a_.tls) argv.push_back("--tls");
    sims_.push_back(std::make_unique<Process>(Pinned(a_.sim_cpus, argv),
                                              dir_ + "/kube-sim" + (n > 1 ? "-" + std::to_string(k + 1) : "") + ".log"));
  }
  static const std::regex kReady(R"(kube-sim: serving \d+ clusters on https?://[^:]+:(\d+))");
  for (auto& sim : sims_) {
    bool up = false;
    while (!up && Since(t) < 300) {
      std::smatch m;
      std::string log = sim->ReadLog();
      if (std::regex_search(log, m, kReady)) {
        if (sim_port_ == 0) sim_port_ = std::stoi(m[1]);
        up = true;
        break;
      }
      if (!sim->running()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!up) return Fail("kube-sim did not start: " + Tail(sim->ReadLog()));
  }
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(dir_, ec)) {
    if (!d.is_directory() || d.path().filename().string().rfind("kubeconfigs", 0) != 0) continue;
    for (const auto& f : std::filesystem::directory_iterator(d.path(), ec)) {
      if (f.path().extension() != ".yaml") continue;
      names_.push_back(f.path().stem().string());
      config_[names_.back()] = f.path().string();
    }
  }
  std::sort(names_.begin(), names_.end());
  if (static_cast<int>(names_.size()) != a_.clusters)
    return Fail("kube-sim wrote " + std::to_string(names_.size()) + " kubeconfigs, not " + std::to_string(a_.clusters));
  out_["sim_start_s"] = Since(t);
  return true;
}

bool Bench::StartEco() {
  eco_port_ = eco::testing::FreePort();
  std::vector<std::string> argv = {a_.eco_bin, "serve", "--bind", "127.0.0.1", "--port", std::to_string(eco_port_),
                                   "--rsync-workers", std::to_string(a_.workers), "--http-threads",
                                   std::to_string(a_.http_threads)};
  if (a_.store.empty()) {
    argv.insert(argv.end(), {"--data-dir", dir_ + "/eco-data"});
  } else {
    // A fresh key prefix per run: earlier runs on the same etcd stay apart.
    std::string url = a_.store;
    if (url.rfind("etcd://", 0) == 0 && url.find('/', 7) == std::string::npos) {
      url += "/rsync-bench-" + std::to_string(getpid()) + "-" +
             std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
    }
    argv.insert(argv.end(), {"--store", url});
    // eco refuses etcd without a key unless told; --eco-arg may still give one.
    if (url.rfind("etcd://", 0) == 0) argv.push_back("--allow-plaintext-kubeconfigs");
  }
  if (a_.agent()) {
    agent_port_ = eco::testing::FreePort();
    argv.insert(argv.end(), {"--agent-port", std::to_string(agent_port_)});
  }
  argv.insert(argv.end(), a_.eco_args.begin(), a_.eco_args.end());
  eco_ = std::make_unique<Process>(Pinned(a_.eco_cpus, argv), dir_ + "/eco.log");
  auto t = Clock::now();
  while (Since(t) < 60) {
    httplib::Client c("127.0.0.1", eco_port_);
    c.set_connection_timeout(std::chrono::milliseconds(200));
    if (auto r = c.Get("/healthz"); r && r->status == 200) {
      sampler_ = std::make_unique<Sampler>(eco_->pid());
      return true;
    }
    if (!eco_->running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Fail("eco did not become healthy");
}

bool Bench::Onboard() {
  Api api(eco_port_);
  auto t = Clock::now();
  if (api.PostJson("/v2/cluster-providers", Named("prov")) != 201) return Fail("cluster provider");
  if (api.PostJson("/v2/projects", Named("p")) != 201) return Fail("project");
  if (api.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})) != 201) return Fail("logical cloud");
  std::atomic<int> next{0};
  std::mutex mu;
  std::string error;
  auto work = [&] {
    Api c(eco_port_);
    for (int i; (i = next.fetch_add(1)) < a_.clusters;) {
      const std::string name = Cluster(i);
      std::string body;
      int s = a_.agent() ? c.PostJson("/v2/cluster-providers/prov/clusters",
                                      Doc(name, {{"delivery", "agent"}}), &body)
                         : c.PostParts("/v2/cluster-providers/prov/clusters", Named(name),
                                       eco::testing::ReadFile(config_[name]), "kubeconfig", &body);
      if (s == 201)
        s = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/labels", {{"clusterLabel", "edge"}}, &body);
      if (s == 201)
        s = c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                       Doc("r-" + name, {{"clusterProvider", "prov"}, {"cluster", name}}), &body);
      if (s == 201 && a_.agent()) {
        // Its fleet process: clusters dealt round-robin.
        const std::string fleet = dir_ + "/agents-" + std::to_string(i % AgentProcs() + 1);
        s = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/agent-bootstrap", json::object(), &body);
        json boot = json::parse(body, nullptr, false);
        if (s == 201 && boot.is_object() && boot.value("token", json()).is_string()) {
          std::filesystem::create_directories(fleet);
          std::filesystem::copy_file(config_[name], fleet + "/" + name + ".yaml",
                                     std::filesystem::copy_options::overwrite_existing);
          std::ofstream(fleet + "/" + name + ".token") << boot["token"].get<std::string>() << "\n";
        } else if (s == 201) {
          s = 0;
        }
      }
      if (s != 201) {
        std::lock_guard<std::mutex> g(mu);
        if (error.empty()) error = name + ": " + std::to_string(s) + " " + body;
        next = a_.clusters;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < a_.onboard_threads; ++i) pool.emplace_back(work);
  for (auto& th : pool) th.join();
  if (!error.empty()) return Fail("onboarding " + error);
  if (api.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()) != 202)
    return Fail("logical cloud instantiate");
  // A level-0 cloud deploys nothing; it only has to be recorded as instantiated.
  bool ready = false;
  for (auto w = Clock::now(); !ready && Since(w) < 60;) {
    int st = 0;
    json j = api.GetJson("/v2/projects/p/logical-clouds/lc/status?status=deployed&output=summary", &st);
    ready = st == 200 && j.value("deployedStatus", "") == "Instantiated";
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready) return Fail("logical cloud not instantiated");
  out_["onboard_s"] = Since(t);
  Note("onboarded " + std::to_string(a_.clusters) + " clusters in " + std::to_string(Since(t)) + " s");
  return true;
}

bool Bench::CreateApp() {
  for (int k = 0; k < a_.digs; ++k) {
    if (!CreateDig(k)) return false;
  }
  return true;
}

bool Bench::CreateDig(int k) {
  Api api(eco_port_);
  const std::string ca = "/v2/projects/p/composite-apps/" + CompositeApp(k) + "/v1";
  const std::string dig = Dig(k);
  std::string body;
  if (api.PostJson("/v2/projects/p/composite-apps", Doc(CompositeApp(k), {{"compositeAppVersion", "v1"}}), &body) != 201)
    return Fail("composite app: " + body);
  for (int i = 0; i < a_.apps; ++i) {
    const std::string app = AppName(k, i);
    if (api.PostParts(ca + "/apps", Named(app), Chart(app, a_.resources, a_.replicas), app + ".tgz", &body) != 201)
      return Fail("app " + app + ": " + body);
  }
  if (api.PostJson(ca + "/composite-profiles", Named("cp"), &body) != 201) return Fail("profile: " + body);
  if (api.PostJson(ca + "/deployment-intent-groups",
                   Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}}), &body) != 201)
    return Fail("dig: " + body);
  if (api.PostJson(dig + "/generic-placement-intents", Named("gpi"), &body) != 201) return Fail("gpi: " + body);
  for (int i = 0; i < a_.apps; ++i) {
    const std::string app = AppName(k, i);
    json intent = {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}};
    if (api.PostJson(dig + "/generic-placement-intents/gpi/app-intents", Doc(app, {{"app", app}, {"intent", intent}}),
                     &body) != 201)
      return Fail("app intent: " + body);
  }
  if (api.PostJson(dig + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}}), &body) != 201)
    return Fail("intents: " + body);
  if (api.PostJson(dig + "/approve", json::object(), &body) != 202) return Fail("approve: " + body);
  return true;
}

bool Bench::Deploy() {
  Api api(eco_port_);
  std::string body;
  out_["eco_rss_before_mib"] = ReadProcStatus(eco_->pid()).rss_kib / 1024.0;
  eco_cpu0_ = CpuSeconds(eco_->pid());
  sim_cpu0_ = SimCpu();
  agent_cpu0_ = AgentCpu();
  if (a_.agent()) bytes0_ = Metrics();
  t_instantiate_ = Clock::now();
  for (int k = 0; k < a_.digs; ++k) {
    if (api.PostJson(Dig(k) + "/instantiate", json::object(), &body) != 202) return Fail("instantiate: " + body);
  }
  out_["instantiate_call_s"] = Since(t_instantiate_);
  Note("instantiate answered in " + std::to_string(Since(t_instantiate_)) + " s");
  return true;
}

bool Bench::WaitApplied() {
  Api api(eco_port_);
  // Cheap to ask: one app, one cluster. Its AppContext status turns
  // Instantiated only once rsync has finished every app on every cluster.
  const long long per_dig = 1LL * a_.clusters * a_.apps * a_.resources;
  const long long expected = per_dig * a_.digs;
  double poll = 0.1;
  int done = 0;  // DIGs Instantiated so far, in order
  while (Since(t_instantiate_) < a_.timeout_s) {
    const std::string probe = Dig(done) + "/status?status=deployed&output=summary&app=" + AppName(done, 0) +
                              "&cluster=prov%2B" + Cluster(0);
    auto q = Clock::now();
    int st = 0;
    json j = api.GetJson(probe, &st);
    double took = Since(q);
    std::string state = st == 200 && j.is_object() ? j.value("deployedStatus", "") : "";
    if (state == "Instantiated" && ++done < a_.digs) continue;
    if (state == "Instantiated") {
      double t = Since(t_instantiate_);
      out_["applied_s"] = t;
      out_["eco_cpu_s_applied"] = CpuSeconds(eco_->pid()) - eco_cpu0_;
      out_["sim_cpu_s_applied"] = SimCpu() - sim_cpu0_;
      if (a_.agent()) out_["agent_cpu_s_applied"] = AgentCpu() - agent_cpu0_;
      out_["applied_per_s"] = static_cast<double>(expected) / t;
      out_["eco_rss_applied_mib"] = ReadProcStatus(eco_->pid()).rss_kib / 1024.0;
      for (int k = 0; k < a_.digs; ++k) {
        auto v = Clock::now();
        json all = api.GetJson(Dig(k) + "/status?status=deployed&output=summary", &st);
        if (k == 0) out_["full_status_query_s"] = Since(v);
        long long applied =
            all.is_object() && all.contains("deployedCounts") ? all["deployedCounts"].value("Applied", 0LL) : -1;
        if (applied != per_dig || all["deployedCounts"].size() != 1)
          return Fail("Instantiated, but the counts are " +
                      (all.is_object() ? all.value("deployedCounts", json()).dump() : std::string("?")) +
                      " (expected " + std::to_string(per_dig) + " Applied)");
      }
      Note("all " + std::to_string(expected) + " resources Applied after " + std::to_string(t) + " s (" +
           std::to_string(static_cast<long long>(expected / t)) + "/s)");
      return true;
    }
    if (state == "InstantiateFailed") return Fail("instantiate failed: " + j.dump().substr(0, 2000));
    poll = std::max(0.1, 3 * took);
    std::this_thread::sleep_for(std::chrono::duration<double>(poll));
  }
  return Fail("not Applied within " + std::to_string(a_.timeout_s) + " s");
}

bool Bench::WaitReady() {
  Api api(eco_port_);
  // App by app (a tenth of the records per query), then once more in full;
  // DIG after DIG.
  int app = 0, k = 0;
  while (Since(t_instantiate_) < a_.timeout_s) {
    std::string path = Dig(k) + "/status?status=ready&output=summary";
    if (app < a_.apps) path += "&app=" + AppName(k, app);
    auto q = Clock::now();
    int st = 0;
    json j = api.GetJson(path, &st);
    double took = Since(q);
    bool ready = st == 200 && j.is_object() && j.value("readyStatus", "") == "Ready";
    if (ready && app < a_.apps) {
      if (++app == a_.apps && k + 1 < a_.digs) {
        ++k;
        app = 0;
      } else if (app == a_.apps) {
        double t = Since(t_instantiate_);
        out_["ready_s"] = t;
        out_["eco_cpu_s_ready"] = CpuSeconds(eco_->pid()) - eco_cpu0_;
        out_["sim_cpu_s_ready"] = SimCpu() - sim_cpu0_;
        if (a_.agent()) out_["agent_cpu_s_ready"] = AgentCpu() - agent_cpu0_;
      }
      continue;
    }
    if (ready) {
      const json& c = j["readyCounts"];
      // Every resource, plus the Pods of the Deployments.
      out_["ready_counts"] = c;
      Note("all Ready after " + std::to_string(out_["ready_s"].get<double>()) + " s: " + c.dump());
      return true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.1, 3 * took)));
  }
  return Fail("not Ready within " + std::to_string(a_.timeout_s) + " s");
}

// A deployed, Ready fleet left alone: what it costs to keep watching it
// (keep-alives, drift rounds, ready scans), in cores of each kind of process.
void Bench::Idle() {
  Note("idle for " + std::to_string(a_.idle_s) + " s");
  const double eco0 = CpuSeconds(eco_->pid()), sim0 = SimCpu(), agent0 = a_.agent() ? AgentCpu() : 0;
  const auto t = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(a_.idle_s));
  const double s = Since(t);
  out_["idle_s"] = s;
  out_["eco_idle_cores"] = (CpuSeconds(eco_->pid()) - eco0) / s;
  out_["sim_idle_cores"] = (SimCpu() - sim0) / s;
  if (a_.agent()) out_["agent_idle_cores"] = (AgentCpu() - agent0) / s;
  Note("idle: eco " + std::to_string(out_["eco_idle_cores"].get<double>()) + " cores, kube-sim " +
       std::to_string(out_["sim_idle_cores"].get<double>()) + " cores" +
       (a_.agent() ? ", agents " + std::to_string(out_["agent_idle_cores"].get<double>()) + " cores" : ""));
}

bool Bench::FetchObjects() {
  Api api(eco_port_);
  int st = 0;
  json j = api.GetJson(kDig_ + "/status?status=deployed&output=detail&cluster=prov%2B" + Cluster(0), &st);
  if (st != 200 || !j.is_object() || !j.contains("apps")) return Fail("detail query: " + std::to_string(st));
  for (const auto& app : j["apps"]) {
    std::vector<RawObject> list;
    for (const auto& r : app["clusters"][0]["resources"]) {
      json obj = r["detail"];
      const std::string av = obj.value("apiVersion", ""), kind = obj.value("kind", "");
      obj["metadata"]["namespace"] = "eco-bench-raw";
      auto coll = CollectionPath(av, kind, "eco-bench-raw");
      if (!coll) return Fail("no path known for kind " + kind);
      list.push_back({*coll + "/" + obj["metadata"].value("name", "") + "?fieldManager=eco&force=true", obj.dump()});
    }
    objects_.push_back(std::move(list));
  }
  size_t n = 0;
  for (const auto& l : objects_) n += l.size();
  if (static_cast<int>(n) != a_.apps * a_.resources) return Fail("detail query: " + std::to_string(n) + " objects");
  return true;
}

bool Bench::RawApply() {
  std::vector<ClusterTarget> targets;
  for (int i = 0; i < a_.clusters; ++i) {
    auto rc = eco::k8s::LoadKubeconfigFile(config_[Cluster(i)]);
    if (!rc.ok()) return Fail(rc.status().ToString());
    auto slash = rc->server.find('/', rc->server.find("://") + 3);
    ClusterTarget t;
    t.prefix = slash == std::string::npos ? "" : rc->server.substr(slash);
    // (one kube-sim: --sims 1 in push mode)
    if (!rc->token.empty()) t.auth = "Authorization: Bearer " + rc->token + "\r\n";
    targets.push_back(std::move(t));
  }
  const std::string host = "127.0.0.1:" + std::to_string(sim_port_);
  const int threads = a_.raw_threads > 0 ? a_.raw_threads : a_.workers;
  auto tls = a_.tls ? RawTls() : nullptr;
  if (a_.tls && !tls) return Fail("no TLS context for the raw client");
  std::atomic<long long> failed{0};
  std::mutex mu;
  std::string first_error;
  auto error = [&](const std::string& m) {
    if (failed.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> g(mu);
      first_error = m;
    }
  };
  // The namespace first, untimed.
  {
    std::atomic<int> next{0};
    const RawObject ns{"/api/v1/namespaces/eco-bench-raw?fieldManager=eco&force=true",
                       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"eco-bench-raw"}})"};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        RawConn c(sim_port_, tls.get());
        for (int i; (i = next.fetch_add(1)) < a_.clusters;) {
          int code = c.Do(ApplyRequest(targets[i], ns, host));
          if (code < 200 || code > 299) error("namespace on " + Cluster(i) + ": " + std::to_string(code));
        }
      });
    }
    for (auto& th : pool) th.join();
    if (failed) return Fail(first_error);
  }
  // rsync's order: app by app, each app's cluster tasks in turn, every
  // task its resources one after the other.
  const long long tasks = 1LL * a_.apps * a_.clusters;
  std::atomic<long long> next{0}, applied{0};
  double cpu0 = SimCpu();
  auto t = Clock::now();
  std::vector<std::thread> pool;
  for (int th = 0; th < threads; ++th) {
    pool.emplace_back([&] {
      PinThisThread(a_.eco_cpus);
      RawConn c(sim_port_, tls.get());
      for (long long k; (k = next.fetch_add(1)) < tasks;) {
        const int app = static_cast<int>(k / a_.clusters), cl = static_cast<int>(k % a_.clusters);
        for (const auto& o : objects_[app]) {
          int code = c.Do(ApplyRequest(targets[cl], o, host));
          if (code >= 200 && code <= 299) {
            applied.fetch_add(1, std::memory_order_relaxed);
          } else {
            error(Cluster(cl) + " " + o.path + ": " + std::to_string(code));
          }
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  double secs = Since(t);
  out_["raw_threads"] = threads;
  out_["raw_applies"] = applied.load();
  out_["raw_s"] = secs;
  out_["raw_per_s"] = static_cast<double>(applied.load()) / secs;
  out_["raw_sim_cpu_s"] = SimCpu() - cpu0;
  if (failed) return Fail(std::to_string(failed.load()) + " raw applies failed; first: " + first_error);
  Note("raw: " + std::to_string(applied.load()) + " applies in " + std::to_string(secs) + " s (" +
       std::to_string(static_cast<long long>(applied.load() / secs)) + "/s, " + std::to_string(threads) + " threads)");
  return true;
}

// eco's /metrics, the agent protocol's series only.
std::map<std::string, double> Bench::Metrics() {
  std::map<std::string, double> m;
  httplib::Client c("127.0.0.1", eco_port_);
  c.set_read_timeout(std::chrono::seconds(30));
  auto r = c.Get("/metrics");
  if (!r || r->status != 200) return m;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("eco_agent_", 0) != 0) continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    m[line.substr(0, sp)] = std::atof(line.c_str() + sp + 1);
  }
  return m;
}

bool Bench::StartAgents() {
  auto t = Clock::now();
  for (int k = 0; k < AgentProcs(); ++k) {
    const std::string fleet = dir_ + "/agents-" + std::to_string(k + 1);
    if (!std::filesystem::exists(fleet)) continue;
    agents_.push_back(std::make_unique<Process>(
        Pinned(a_.agent_cpus, {a_.eco_bin, "agent", "--fleet", fleet, "--hub", "127.0.0.1:" + std::to_string(agent_port_),
                               "--workers", std::to_string(a_.agent_workers)}),
        fleet + ".log"));
  }
  if (!WaitStreams("every agent connected", 600)) return false;
  out_["agents_connect_s"] = Since(t);
  out_["agent_procs"] = static_cast<int>(agents_.size());
  Note(std::to_string(a_.clusters) + " agents in " + std::to_string(agents_.size()) + " processes connected in " +
       std::to_string(Since(t)) + " s");
  return true;
}

bool Bench::WaitStreams(const std::string& what, double timeout_s) {
  auto t = Clock::now();
  double open = 0;
  while (Since(t) < timeout_s) {
    auto m = Metrics();
    open = m.count("eco_agent_streams") ? m["eco_agent_streams"] : 0;
    if (open >= a_.clusters) return true;
    for (auto& p : agents_) {
      if (!p->running()) return Fail("an agent process exited: " + Tail(p->ReadLog()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return Fail(what + ": only " + std::to_string(static_cast<long>(open)) + " streams open after " +
              std::to_string(timeout_s) + " s");
}

namespace {
// Protocol bytes in both directions between two readings of the counters.
double ProtocolBytes(std::map<std::string, double> a, std::map<std::string, double> b) {
  double t = 0;
  for (const auto& [k, v] : b) {
    if (k.rfind("eco_agent_sent_bytes_total", 0) == 0 || k.rfind("eco_agent_received_bytes_total", 0) == 0)
      t += v - a[k];
  }
  return t;
}
}  // namespace

// SIGSTOP every agent process for the partition, then SIGCONT: what the
// streams carry until every agent is back and has reported is the
// resumption's cost; the deployment's own traffic is the full resync's.
bool Bench::Partition() {
  auto deployed = Metrics();
  out_["deploy_protocol_bytes"] = ProtocolBytes(bytes0_, deployed);
  out_["deploy_publication_bytes"] = deployed[R"(eco_agent_sent_bytes_total{kind="publication"})"] -
                                     bytes0_[R"(eco_agent_sent_bytes_total{kind="publication"})"];
  std::this_thread::sleep_for(std::chrono::seconds(5));  // reports in flight settle
  auto before = Metrics();
  Note("partition: stopping " + std::to_string(agents_.size()) + " agent processes for " +
       std::to_string(a_.partition_s) + " s");
  for (auto& p : agents_) kill(p->pid(), SIGSTOP);
  auto t = Clock::now();
  bool streams_dropped = false;
  while (Since(t) < a_.partition_s) {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    auto m = Metrics();
    if (!streams_dropped && m["eco_agent_streams"] == 0) {
      streams_dropped = true;
      out_["partition_streams_closed_s"] = Since(t);
    }
  }
  auto mid = Metrics();
  for (auto& p : agents_) kill(p->pid(), SIGCONT);
  auto back = Clock::now();
  if (!WaitStreams("every agent reconnected after the partition", 600)) return false;
  out_["resume_reconnect_s"] = Since(back);
  // Ready again: the status of a cluster silent past the grace was Stale.
  Api api(eco_port_);
  bool ready = false;
  while (!ready && Since(back) < 600) {
    int st = 0;
    json j = api.GetJson(kDig_ + "/status?status=ready&output=summary", &st);
    ready = st == 200 && j.is_object() && j.value("readyStatus", "") == "Ready";
    if (!ready) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (!ready) return Fail("not Ready again within 600 s of the partition's end");
  out_["resume_ready_s"] = Since(back);
  std::this_thread::sleep_for(std::chrono::seconds(10));  // what the resumption still sends
  auto after = Metrics();
  out_["partition_s"] = a_.partition_s;
  out_["partition_protocol_bytes"] = ProtocolBytes(before, mid);  // keep-alives before the streams closed
  out_["resume_protocol_bytes"] = ProtocolBytes(mid, after);
  out_["resume_publications"] = after["eco_agent_publications_sent_total"] - mid["eco_agent_publications_sent_total"];
  out_["resume_vs_full"] = out_["resume_protocol_bytes"].get<double>() / out_["deploy_protocol_bytes"].get<double>();
  Note("resumption moved " + std::to_string(static_cast<long long>(out_["resume_protocol_bytes"].get<double>())) +
       " protocol bytes, the deployment " +
       std::to_string(static_cast<long long>(out_["deploy_protocol_bytes"].get<double>())) + " (" +
       std::to_string(100 * out_["resume_vs_full"].get<double>()) + "%)");
  return true;
}

// | clusters | resources | onboard | Applied | applied/s | Ready | eco CPU | kube-sim CPU |
// eco peak RSS | eco peak threads | raw applies/s | eco/raw |
void Bench::AppendRow() {
  auto num = [&](const char* k, const char* fmt, double scale = 1) {
    if (!out_.contains(k) || !out_[k].is_number()) return std::string("—");
    char b[64];
    std::snprintf(b, sizeof b, fmt, out_[k].get<double>() * scale);
    return std::string(b);
  };
  auto cores = [&](const char* cpu, const char* secs) {
    if (!out_.contains(cpu) || !out_.contains(secs)) return std::string("—");
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", out_[cpu].get<double>() / out_[secs].get<double>());
    return std::string(b);
  };
  std::ofstream f(a_.row_file, std::ios::app);
  if (a_.agent()) {
    // | clusters | resources | delivery | Applied | Ready | eco CPU per resource | eco peak RSS |
    // eco peak sockets | sockets per cluster | agents' RSS | kube-sim RSS | resume bytes / full |
    char per[32] = "—";
    if (out_.contains("eco_peak_sockets"))
      std::snprintf(per, sizeof per, "%.2f", out_["eco_peak_sockets"].get<double>() / a_.clusters);
    f << "| " << a_.clusters << " | " << out_["resources_total"].get<long long>() << " | agent ("
      << agents_.size() << " fleet procs, " << sims_.size() << " kube-sims) | " << num("applied_s", "%.1f s")
      << " | " << num("ready_s", "%.1f s") << " | " << num("eco_cpu_ms_per_resource", "%.3f ms") << " | "
      << num("eco_peak_rss_mib", "%.0f MiB") << " | " << num("eco_peak_sockets", "%.0f") << " | " << per
      << " | " << num("agents_peak_rss_mib", "%.0f MiB") << " | " << num("sim_peak_rss_mib", "%.0f MiB") << " | "
      << num("resume_vs_full", "%.2f %%", 100) << (out_["ok"].get<bool>() ? "" : " (failed)") << " |\n";
    return;
  }
  f << "| " << a_.clusters << " | " << out_["resources_total"].get<long long>() << " | " << num("onboard_s", "%.1f s")
    << " | " << num("applied_s", "%.1f s") << " | " << num("applied_per_s", "%.0f") << " | "
    << num("ready_s", "%.1f s") << " | " << cores("eco_cpu_s_applied", "applied_s") << " | "
    << cores("sim_cpu_s_applied", "applied_s") << " | " << num("eco_peak_rss_mib", "%.0f MiB") << " | "
    << num("eco_peak_threads", "%.0f") << " | " << num("raw_per_s", "%.0f") << " | " << num("eco_vs_raw", "%.2f")
    << " | " << num("eco_sockets_per_cluster", "%.2f") << (out_["ok"].get<bool>() ? "" : " (failed)") << " |\n";
}

int Bench::Run() {
  if (a_.work_dir.empty()) {
    tmp_ = std::make_unique<eco::testing::TempDir>();
    dir_ = tmp_->path();
  } else {
    dir_ = a_.work_dir;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  RaiseFileLimit();
  out_["clusters"] = a_.clusters;
  out_["apps"] = a_.apps;
  out_["resources_per_app"] = a_.resources;
  out_["resources_total"] = 1LL * a_.clusters * a_.apps * a_.resources * a_.digs;
  out_["digs"] = a_.digs;
  out_["tls"] = a_.tls;
  out_["rsync_workers"] = a_.workers;
  out_["sim_threads"] = a_.sim_threads;
  out_["store"] = a_.store.empty() ? "embedded" : a_.store;
  out_["delivery"] = a_.delivery;
  out_["sims"] = std::max(1, a_.sims);
  // The raw client measures one kube-sim, and stands in for eco's applies.
  if (a_.agent() || a_.sims > 1) a_.skip_raw = true;
  bool ok = StartSim() && StartEco() && Onboard() && (!a_.agent() || StartAgents()) && CreateApp() && Deploy() &&
            WaitApplied() && (a_.skip_ready || WaitReady());
  if (ok && a_.agent()) {
    long peak = 0, threads = 0;
    for (auto& p : agents_) {
      ProcSample s = ReadProcStatus(p->pid());
      peak += s.hwm_kib;
      threads += s.threads;
    }
    out_["agents_peak_rss_mib"] = peak / 1024.0;
    out_["agents_threads"] = threads;
  }
  if (ok && a_.idle_s > 0) Idle();
  if (ok && a_.agent() && a_.partition_s > 0) ok = Partition();
  if (eco_ && eco_->running()) {
    ProcSample s = ReadProcStatus(eco_->pid());
    out_["eco_peak_rss_mib"] = s.hwm_kib / 1024.0;
    out_["eco_rss_end_mib"] = s.rss_kib / 1024.0;
    out_["eco_rss_anon_end_mib"] = s.anon_kib / 1024.0;
    out_["eco_rss_file_end_mib"] = s.file_kib / 1024.0;
    out_["eco_threads_end"] = s.threads;
    if (sampler_) out_["eco_peak_threads"] = sampler_->max_threads();
    // Sampled every second: a short run is measured at its end too.
    const long sockets_end = Sockets(eco_->pid());
    const long peak_sockets = std::max(sampler_ ? sampler_->max_sockets() : 0L, sockets_end);
    out_["eco_peak_sockets"] = peak_sockets;
    out_["eco_sockets_per_cluster"] = static_cast<double>(peak_sockets) / a_.clusters;
    out_["eco_sockets_end"] = sockets_end;
    long sim_peak = 0;
    for (auto& p : sims_) sim_peak += ReadProcStatus(p->pid()).hwm_kib;
    out_["sim_peak_rss_mib"] = sim_peak / 1024.0;
  }
  if (ok && !a_.skip_raw) ok = FetchObjects();
  sampler_.reset();
  if (eco_ && eco_->running()) eco_->Kill(SIGTERM);
  if (ok && !a_.skip_raw) {
    ok = RawApply();
    if (ok && out_.contains("applied_per_s"))
      out_["eco_vs_raw"] = out_["applied_per_s"].get<double>() / out_["raw_per_s"].get<double>();
  }
  for (auto& p : agents_) {
    if (p->running()) p->Kill(SIGTERM);
  }
  for (auto& p : sims_) {
    if (p->running()) p->Kill(SIGTERM);
  }
  if (out_.contains("eco_cpu_s_ready"))
    out_["eco_cpu_ms_per_resource"] =
        1000 * out_["eco_cpu_s_ready"].get<double>() / out_["resources_total"].get<double>();
  out_["ok"] = ok;
  if (!a_.row_file.empty()) AppendRow();
  std::printf("%s\n", out_.dump().c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}

std::string SelfDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eco deployment (rsync) throughput against kube-sim"};
  Args a;
  app.add_option("--clusters", a.clusters, "Clusters in kube-sim, all placed")->check(CLI::Range(1, 100000));
  app.add_option("--apps", a.apps, "Apps in the composite app")->check(CLI::Range(1, 100));
  app.add_option("--resources", a.resources, "Resources per app")->check(CLI::Range(1, 1000));
  app.add_option("--replicas", a.replicas, "Replicas of each Deployment")->check(CLI::Range(0, 10));
  app.add_option("--workers", a.workers, "eco --rsync-workers")->check(CLI::Range(1, 1024));
  app.add_option("--raw-threads", a.raw_threads, "Raw client threads (0: as many as --workers)");
  app.add_option("--sim-threads", a.sim_threads, "kube-sim io threads")->check(CLI::Range(1, 64));
  app.add_option("--http-threads", a.http_threads, "eco --http-threads");
  app.add_option("--onboard-threads", a.onboard_threads, "Parallel REST clients that onboard the fleet");
  app.add_option("--timeout", a.timeout_s, "Seconds to wait for Applied and for Ready");
  app.add_flag("--skip-ready", a.skip_ready, "Do not wait for the ready status");
  app.add_flag("--tls", a.tls, "kube-sim serves HTTPS (eco speaks HTTP/2 where kube-sim offers it)");
  app.add_option("--digs", a.digs, "DIGs deployed to every cluster, each of its own composite app")
      ->check(CLI::Range(1, 10));
  app.add_flag("--skip-raw", a.skip_raw, "Do not measure kube-sim's raw apply rate");
  app.add_option("--store", a.store, "eco's store URL (default: the embedded store)");
  app.add_option("--work-dir", a.work_dir, "Directory for logs, kubeconfigs, eco's data (wiped; default: a temp dir)");
  app.add_option("--eco", a.eco_bin, "eco binary (default: beside this one)");
  app.add_option("--kube-sim", a.sim_bin, "kube-sim binary (default: beside this one)");
  app.add_option("--eco-arg", a.eco_args, "Extra argument for eco serve (repeatable; --eco-arg=--flag=value)");
  app.add_option("--eco-cpus", a.eco_cpus, "Run eco and the raw client on these CPUs (taskset list, e.g. 0)");
  app.add_option("--sim-cpus", a.sim_cpus, "Run kube-sim on these CPUs (taskset list, e.g. 1)");
  app.add_option("--row-file", a.row_file, "Append a Markdown table row of the results to this file");
  app.add_option("--delivery", a.delivery, "push: eco applies; agent: agent clusters, agents in fleet mode")
      ->check(CLI::IsMember({"push", "agent"}));
  app.add_option("--sims", a.sims, "kube-sim processes the clusters are spread over (agent mode)")
      ->check(CLI::Range(1, 64));
  app.add_option("--agent-procs", a.agent_procs, "eco agent --fleet processes (0: one per 1,250 clusters)")
      ->check(CLI::Range(0, 64));
  app.add_option("--agent-workers", a.agent_workers, "--workers of each fleet process")->check(CLI::Range(1, 256));
  app.add_option("--partition-seconds", a.partition_s,
                 "After Ready, stop every agent process this long, then measure the resumption (agent mode)");
  app.add_option("--idle-seconds", a.idle_s,
                 "After Ready, measure this long what a quiet fleet costs in CPU (eco, agents, kube-sim)")
      ->check(CLI::Range(0, 3600));
  app.add_option("--agent-cpus", a.agent_cpus, "Run the agent processes on these CPUs (taskset list)");
  CLI11_PARSE(app, argc, argv);
  if (a.eco_bin.empty()) a.eco_bin = SelfDir() + "/eco";
  if (a.sim_bin.empty()) a.sim_bin = SelfDir() + "/kube-sim";
  return Bench(std::move(a)).Run();
}
