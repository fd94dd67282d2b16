// eco_rollout_bench: staged rollouts and fleet plans at fleet scale
// (docs/performance.md, "Staged rollouts and plans").
//
//   1. kube-sim with --clusters N and `eco serve` (embedded store) as child
//      processes, the fleet onboarded through the REST API in parallel (as
//      eco_rsync_bench does), one composite app of --apps charts (each a
//      Deployment and --resources - 1 ConfigMaps), one DIG placed by label on
//      every cluster, its spec.rollout in percent waves (--waves, the rest a
//      last wave of its own; none: all at once).
//   2. instantiate, waited for until the rollout is Complete (every wave
//      approved at once under --approval).
//   3. Every app PUT with a changed chart (a new version value: every object
//      changes, each Deployment rolls out new Pods), then POST DIG/plan, full
//      and ?output=summary, --plan-runs times each.
//   4. POST update, polled with GET DIG/status?status=deployed&output=summary
//      until the rollout is Complete. Meanwhile the driver watches every
//      cluster's Deployments in kube-sim itself (one watch per cluster on its
//      own epoll loop) and records when each cluster's Deployments were all
//      rolled out at the new version: the moment the cluster was Ready. For
//      each wave boundary, the next wave's startedAt (eco's clock) minus the
//      last of the wave's clusters Ready (the driver's clock, same machine) is
//      the time eco added between a wave being done and the next starting.
//   5. eco's RSS at rest before the update and while the update's rollout
//      waits for approval after its first wave (--approval, held
//      --hold-seconds), and its peak per phase (sampled every 100 ms).
//   6. With --drift-samples K: app0's Deployment deleted through kube-sim's
//      API in K clusters, one at a time; how soon the deployed status of
//      that app and cluster says Drifted (and, under --drift-policy
//      enforce, how soon kube-sim has the Deployment again).
//
// With --plan-only the DIG is instantiated (without waiting for readiness)
// and only the plans are measured: for fleets too large for the ready
// monitor here. Progress on stderr, one JSON line of results on stdout.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
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
using Wall = std::chrono::system_clock;
using eco::testing::Process;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double WallSeconds(Wall::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

void Note(const std::string& m) {
  std::fprintf(stderr, "[rollout-bench] %s\n", m.c_str());
  std::fflush(stderr);
}

std::string Fixed(double v, int digits = 3) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// "2026-12-07T11:43:15.086Z" -> seconds since the epoch; NaN when malformed.
double ParseRfc3339(const std::string& s) {
  std::tm tm{};
  int ms = 0;
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return std::nan("");
  if (*rest == '.') {
    double frac = std::atof(rest);
    ms = static_cast<int>(std::lround(frac * 1000));
  }
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

// ---------------------------------------------------------------- /proc

struct ProcStatus {
  long rss_kib = 0, hwm_kib = 0, anon_kib = 0, file_kib = 0, threads = 0;
};

ProcStatus ReadProc(pid_t pid) {
  ProcStatus s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    const long v = std::atol(line.c_str() + line.find(':') + 1);
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = v;
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kib = v;
    if (line.rfind("RssAnon:", 0) == 0) s.anon_kib = v;
    if (line.rfind("RssFile:", 0) == 0) s.file_kib = v;  // mapped files: the embedded store's mmap
    if (line.rfind("Threads:", 0) == 0) s.threads = v;
  }
  return s;
}

long Sockets(pid_t pid) {
  long n = 0;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code ec2;
    auto target = std::filesystem::read_symlink(e.path(), ec2);
    if (!ec2 && target.native().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

// eco's peak open sockets (once a second: 10,000 links are not free) and
// its peak RSS per phase of the run (every 100 ms), in the background.
class Sampler {
 public:
  explicit Sampler(pid_t pid) : pid_(pid), thread_([this] { Run(); }) {}
  ~Sampler() {
    stop_ = true;
    thread_.join();
  }
  long peak_sockets() const { return peak_sockets_; }
  void Phase(const std::string& name) {
    std::lock_guard<std::mutex> g(mu_);
    phase_ = name;
  }
  std::map<std::string, long> PeakRssKib() {
    std::lock_guard<std::mutex> g(mu_);
    return peak_rss_;
  }

 private:
  void Run() {
    for (int tick = 0; !stop_; ++tick) {
      if (tick % 10 == 0) peak_sockets_ = std::max(peak_sockets_.load(), Sockets(pid_));
      const long rss = ReadProc(pid_).rss_kib;
      {
        std::lock_guard<std::mutex> g(mu_);
        long& peak = peak_rss_[phase_];
        peak = std::max(peak, rss);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_sockets_{0};
  std::mutex mu_;
  std::string phase_ = "setup";           // guarded by mu_
  std::map<std::string, long> peak_rss_;  // guarded by mu_
  std::thread thread_;
};

// ---------------------------------------------------------------- charts

// One app: a Deployment whose Pod template carries the version (a change
// rolls out new Pods), and `resources - 1` ConfigMaps that carry it too.
std::string Chart(const std::string& app, int resources, int replicas, const std::string& version) {
  std::vector<eco::testing::TarEntry> files = {
      {app + "/Chart.yaml",
       "apiVersion: v2\nname: " + app + "\nversion: 0.1.0\nappVersion: \"1.0\"\n"},
      {app + "/values.yaml", "replicas: " + std::to_string(replicas) + "\nversion: \"" + version +
                                 "\"\nimage: registry.example/web\n"}};
  files.push_back(
      {app + "/templates/deployment.yaml",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + app +
           "-web\n  labels:\n    app.kubernetes.io/part-of: " + app +
           "\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n    matchLabels:\n      "
           "app.kubernetes.io/name: " +
           app +
           "-web\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: " +
           app +
           "-web\n      annotations:\n        bench.eco.io/version: \"{{ .Values.version }}\"\n    "
           "spec:\n"
           "      containers:\n        - name: main\n          image: \"{{ .Values.image }}:{{ "
           ".Values.version }}\"\n"
           "          resources:\n            requests:\n              cpu: 10m\n              "
           "memory: 16Mi\n"});
  for (int i = 1; i < resources; ++i) {
    files.push_back({app + "/templates/config-" + std::to_string(i) + ".yaml",
                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + app + "-config-" +
                         std::to_string(i) +
                         "\ndata:\n  version: \"{{ .Values.version }}\"\n  setting: \"value-" +
                         std::to_string(i) + "\"\n"});
  }
  return eco::testing::TgzOf(files);
}

// ---------------------------------------------------------------- eco's API

class Api {
 public:
  explicit Api(int port) : cli_("127.0.0.1", port) {
    cli_.set_keep_alive(true);
    cli_.set_tcp_nodelay(true);  // else Nagle holds a multipart body back ~40 ms
    cli_.set_connection_timeout(std::chrono::seconds(10));
    cli_.set_read_timeout(std::chrono::seconds(600));
    cli_.set_write_timeout(std::chrono::seconds(60));
  }
  int PostJson(const std::string& path, const json& body, std::string* out = nullptr) {
    return Take(cli_.Post(path.c_str(), body.dump(), "application/json"), out);
  }
  int Parts(bool put, const std::string& path, const json& metadata, const std::string& file,
            const std::string& filename, std::string* out = nullptr) {
    httplib::MultipartFormDataItems items = {{"metadata", metadata.dump(), "", "application/json"},
                                             {"file", file, filename, "application/octet-stream"}};
    return Take(put ? cli_.Put(path.c_str(), items) : cli_.Post(path.c_str(), items), out);
  }
  json GetJson(const std::string& path, int* status) {
    std::string body;
    *status = Take(cli_.Get(path.c_str()), &body);
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
json Doc(const std::string& n, json spec) {
  return {{"metadata", {{"name", n}}}, {"spec", std::move(spec)}};
}

// ---------------------------------------------------------------- kube-sim watches

// One watch on Deployments (all namespaces) per cluster, straight to
// kube-sim, on one epoll thread: when was each cluster's last Deployment
// rolled out at `version` (observedGeneration caught up, every replica
// updated, ready and available)? The time is this process's wall clock when
// the event arrived: kube-sim's own timestamps have a resolution of 1 s.
class ReadyWatch {
 public:
  struct Target {
    std::string cluster;
    std::string path;  // "/clusters/NAME"
    std::string auth;  // "Authorization: Bearer ...\r\n" or ""
  };
  ReadyWatch(int port, std::vector<Target> targets, int deployments, std::string version)
      : port_(port), deployments_(deployments), version_(std::move(version)) {
    streams_.resize(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) streams_[i].t = std::move(targets[i]);
  }
  ~ReadyWatch() { Stop(); }
  ReadyWatch(const ReadyWatch&) = delete;
  ReadyWatch& operator=(const ReadyWatch&) = delete;

  // Opens every watch; true once each has answered 200 (its list of
  // existing objects follows as ADDED events).
  bool Start(std::string* error) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) return Err(error, "epoll_create1");
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (!Open(i)) return Err(error, "watch of " + streams_[i].t.cluster + " did not connect");
    }
    thread_ = std::thread([this] { Loop(); });
    for (auto t = Clock::now(); Since(t) < 60;) {
      if (answered_ == static_cast<long>(streams_.size())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Err(error, std::to_string(answered_.load()) + " of " + std::to_string(streams_.size()) +
                          " watches answered");
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto& s : streams_) {
      if (s.fd >= 0) ::close(s.fd);
      s.fd = -1;
    }
    if (epfd_ >= 0) ::close(epfd_);
    epfd_ = -1;
  }
  // Seconds since the epoch each cluster was Ready at the version (0: not yet).
  std::map<std::string, double> ReadyAt() {
    std::lock_guard<std::mutex> g(mu_);
    std::map<std::string, double> out;
    for (const auto& s : streams_) out[s.t.cluster] = s.ready_at;
    return out;
  }
  long reconnects() const { return reconnects_; }
  long events() const { return events_; }

 private:
  struct Stream {
    Target t;
    int fd = -1;
    bool head_done = false;
    std::string buf;   // bytes not yet decoded
    std::string line;  // the event being assembled
    size_t chunk_left = 0;
    bool in_chunk = false;
    std::map<std::string, bool> rolled;  // namespace/name -> rolled out at the version
    double ready_at = 0;
  };

  static bool Err(std::string* error, const std::string& m) {
    if (error) *error = m;
    return false;
  }

  bool Open(size_t i) {
    Stream& s = streams_[i];
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.fd < 0) return false;
    int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    const std::string req =
        "GET " + s.t.path + "/apis/apps/v1/deployments?watch=true HTTP/1.1\r\nHost: 127.0.0.1:" +
        std::to_string(port_) + "\r\nAccept: application/json\r\n" + s.t.auth + "\r\n";
    if (::send(s.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
      return false;
    fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
    s.head_done = false;
    s.in_chunk = false;
    s.buf.clear();
    s.line.clear();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    return epoll_ctl(epfd_, EPOLL_CTL_ADD, s.fd, &ev) == 0;
  }

  void Loop() {
    std::vector<epoll_event> evs(256);
    char tmp[65536];
    while (!stop_) {
      const int n = epoll_wait(epfd_, evs.data(), static_cast<int>(evs.size()), 100);
      for (int k = 0; k < n; ++k) {
        const size_t i = evs[static_cast<size_t>(k)].data.u64;
        Stream& s = streams_[i];
        for (;;) {
          const ssize_t got = ::recv(s.fd, tmp, sizeof tmp, 0);
          if (got > 0) {
            s.buf.append(tmp, static_cast<size_t>(got));
            continue;
          }
          if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
          // Closed (a watch timeout, or kube-sim cut it): watch again; the
          // existing objects come again as ADDED.
          epoll_ctl(epfd_, EPOLL_CTL_DEL, s.fd, nullptr);
          ::close(s.fd);
          s.fd = -1;
          ++reconnects_;
          if (!stop_) Open(i);
          break;
        }
        Decode(s);
      }
    }
  }

  // HTTP head, then chunked framing; each event is one line of JSON.
  void Decode(Stream& s) {
    if (!s.head_done) {
      const size_t end = s.buf.find("\r\n\r\n");
      if (end == std::string::npos) return;
      s.head_done = true;
      if (s.buf.compare(0, 12, "HTTP/1.1 200") == 0) ++answered_;
      s.buf.erase(0, end + 4);
    }
    size_t pos = 0;
    for (;;) {
      if (!s.in_chunk) {
        const size_t eol = s.buf.find("\r\n", pos);
        if (eol == std::string::npos) break;
        s.chunk_left = std::strtoul(s.buf.c_str() + pos, nullptr, 16);
        pos = eol + 2;
        s.in_chunk = true;
      }
      if (s.buf.size() - pos < s.chunk_left + 2) {
        // Take what there is of the chunk; its CRLF comes later.
        const size_t take = std::min(s.chunk_left, s.buf.size() - pos);
        s.line.append(s.buf, pos, take);
        s.chunk_left -= take;
        pos += take;
        break;
      }
      s.line.append(s.buf, pos, s.chunk_left);
      pos += s.chunk_left + 2;
      s.in_chunk = false;
      for (size_t nl; (nl = s.line.find('\n')) != std::string::npos;) {
        Event(s, s.line.substr(0, nl));
        s.line.erase(0, nl + 1);
      }
    }
    s.buf.erase(0, pos);
  }

  void Event(Stream& s, const std::string& text) {
    ++events_;
    json e = json::parse(text, nullptr, false);
    if (!e.is_object() || !e.contains("object") || !e["object"].is_object()) return;
    const json& o = e["object"];
    const json& meta = o.value("metadata", json::object());
    const std::string key = meta.value("namespace", "") + "/" + meta.value("name", "");
    bool done = false;
    if (e.value("type", "") != "DELETED") {
      const json spec = o.value("spec", json::object());
      const json status = o.value("status", json::object());
      const json ann = spec.value("template", json::object())
                           .value("metadata", json::object())
                           .value("annotations", json::object());
      const long want = spec.value("replicas", 1L);
      done = ann.value("bench.eco.io/version", "") == version_ &&
             status.value("observedGeneration", 0L) >= meta.value("generation", 0L) &&
             status.value("updatedReplicas", 0L) == want &&
             status.value("readyReplicas", 0L) == want &&
             status.value("availableReplicas", 0L) == want && status.value("replicas", 0L) == want;
    }
    const double now = WallSeconds(Wall::now());
    std::lock_guard<std::mutex> g(mu_);
    s.rolled[key] = done;
    if (s.ready_at > 0) return;  // the first moment counts
    long n = 0;
    for (const auto& [k, v] : s.rolled) n += v;
    if (n >= deployments_) s.ready_at = now;
  }

  int port_;
  int deployments_;
  std::string version_;
  std::vector<Stream> streams_;  // fixed size after construction; `rolled` and `ready_at` under mu_
  std::mutex mu_;
  int epfd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<long> answered_{0}, reconnects_{0}, events_{0};
};

// ---------------------------------------------------------------- the run

struct Args {
  int clusters = 100;
  int apps = 1;
  int resources = 5;
  int replicas = 1;
  std::vector<int> waves = {1, 10, 20, 30};  // percent; the rest form wave "rest"
  bool no_rollout = false;
  bool approval = false;
  int hold_s = 20;
  int plan_runs = 3;
  bool plan_only = false;
  int drift_samples = 0;     // Deployments deleted one at a time after the update
  std::string drift_policy;  // spec.driftPolicy ("": unset, i.e. report)
  int workers = 16;
  int sim_threads = 2;
  int onboard_threads = 8;
  int timeout_s = 1800;
  std::string work_dir, eco_bin, sim_bin, row_file;
  std::vector<std::string> eco_args;
};

class Bench {
 public:
  explicit Bench(Args a) : a_(std::move(a)) {}
  int Run();

 private:
  bool Fail(const std::string& m) {
    Note("FAILED: " + m);
    if (eco_) Note("eco log tail: " + Tail(eco_->ReadLog()));
    out_["error"] = m;
    return false;
  }
  static std::string Tail(const std::string& s) {
    return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
  }
  json RolloutSpec() const;
  void RaiseFileLimit();
  bool StartSim();
  bool StartEco();
  bool Onboard();
  bool CreateApp();
  bool Instantiate();
  bool ChangeApps();
  bool Plans();
  bool Update();
  bool Drift();
  // Polls the DIG's summary status until its rollout of `revision` is
  // Complete; every status seen is passed to `seen`. Approves waiting waves
  // (the first one only after `hold`, when given).
  bool WaitRollout(int revision, double t0_wall, const std::function<void(const json&)>& hold,
                   json* last);
  void WaveResults(const json& rollout, double t0_wall, const std::map<std::string, double>& ready);
  void AppendRow();
  // eco's RSS now, whole and split (heap and stacks / mapped files).
  void Memory(const std::string& when) {
    const ProcStatus p = ReadProc(eco_->pid());
    out_["eco_rss_" + when + "_mib"] = p.rss_kib / 1024.0;
    out_["eco_anon_" + when + "_mib"] = p.anon_kib / 1024.0;
    out_["eco_file_" + when + "_mib"] = p.file_kib / 1024.0;
  }

  Args a_;
  std::unique_ptr<eco::testing::TempDir> tmp_;
  std::string dir_;
  std::unique_ptr<Process> sim_, eco_;
  std::unique_ptr<Sampler> sampler_;
  int sim_port_ = 0, eco_port_ = 0;
  std::vector<std::string> names_;  // natural order: cluster-1, cluster-2, ...
  std::map<std::string, std::string> config_;
  json out_ = json::object();
  const std::string kCa_ = "/v2/projects/p/composite-apps/ca/v1";
  const std::string kDig_ = "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig";
};

json Bench::RolloutSpec() const {
  json waves = json::array();
  for (size_t i = 0; i < a_.waves.size(); ++i)
    waves.push_back({{"name", "w" + std::to_string(i + 1)}, {"percent", a_.waves[i]}});
  json r = {{"waves", waves}, {"readyTimeoutSeconds", 1800}};
  if (a_.approval) r["approval"] = "between-waves";
  return r;
}

void Bench::RaiseFileLimit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;  // children inherit it
  setrlimit(RLIMIT_NOFILE, &lim);
  out_["nofile"] = static_cast<long long>(lim.rlim_cur);
}

bool Bench::StartSim() {
  const std::string kc = dir_ + "/kubeconfigs";
  std::filesystem::create_directories(kc);
  auto t = Clock::now();
  sim_ = std::make_unique<Process>(
      std::vector<std::string>{a_.sim_bin, "--port", "0", "--clusters", std::to_string(a_.clusters),
                               "--threads", std::to_string(a_.sim_threads), "--kubeconfig-dir", kc},
      dir_ + "/kube-sim.log");
  static const std::regex kReady(R"(kube-sim: serving \d+ clusters on https?://[^:]+:(\d+))");
  while (Since(t) < 300 && sim_port_ == 0) {
    std::smatch m;
    const std::string log = sim_->ReadLog();
    if (std::regex_search(log, m, kReady)) sim_port_ = std::stoi(m[1]);
    if (sim_port_ == 0 && !sim_->running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (sim_port_ == 0) return Fail("kube-sim did not start: " + Tail(sim_->ReadLog()));
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(kc, ec)) {
    if (f.path().extension() != ".yaml") continue;
    names_.push_back(f.path().stem().string());
    config_[names_.back()] = f.path().string();
  }
  // eco's percent waves take clusters in natural order (cluster-2 before cluster-10).
  auto number = [](const std::string& n) {
    return std::atol(n.c_str() + n.find_last_not_of("0123456789") + 1);
  };
  std::sort(names_.begin(), names_.end(),
            [&](const auto& x, const auto& y) { return number(x) < number(y); });
  if (static_cast<int>(names_.size()) != a_.clusters)
    return Fail("kube-sim wrote " + std::to_string(names_.size()) + " kubeconfigs");
  out_["sim_start_s"] = Since(t);
  return true;
}

bool Bench::StartEco() {
  eco_port_ = eco::testing::FreePort();
  std::vector<std::string> argv = {a_.eco_bin,        "serve",
                                   "--bind",          "127.0.0.1",
                                   "--port",          std::to_string(eco_port_),
                                   "--rsync-workers", std::to_string(a_.workers),
                                   "--data-dir",      dir_ + "/eco-data"};
  argv.insert(argv.end(), a_.eco_args.begin(), a_.eco_args.end());
  eco_ = std::make_unique<Process>(argv, dir_ + "/eco.log");
  for (auto t = Clock::now(); Since(t) < 60;) {
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
  if (api.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})) != 201)
    return Fail("logical cloud");
  std::atomic<int> next{0};
  std::mutex mu;
  std::string error;
  auto work = [&] {
    Api c(eco_port_);
    for (int i; (i = next.fetch_add(1)) < a_.clusters;) {
      const std::string& name = names_[static_cast<size_t>(i)];
      std::string body;
      int s = c.Parts(false, "/v2/cluster-providers/prov/clusters", Named(name),
                      eco::testing::ReadFile(config_[name]), "kubeconfig", &body);
      if (s == 201)
        s = c.PostJson("/v2/cluster-providers/prov/clusters/" + name + "/labels",
                       {{"clusterLabel", "edge"}}, &body);
      if (s == 201)
        s = c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                       Doc("r-" + name, {{"clusterProvider", "prov"}, {"cluster", name}}), &body);
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
  for (auto w = Clock::now(); Since(w) < 120;) {
    int st = 0;
    json j =
        api.GetJson("/v2/projects/p/logical-clouds/lc/status?status=deployed&output=summary", &st);
    if (st == 200 && j.value("deployedStatus", "") == "Instantiated") {
      out_["onboard_s"] = Since(t);
      Note("onboarded " + std::to_string(a_.clusters) + " clusters in " + Fixed(Since(t), 1) +
           " s");
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Fail("logical cloud not instantiated");
}

bool Bench::CreateApp() {
  Api api(eco_port_);
  std::string body;
  if (api.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}}),
                   &body) != 201)
    return Fail("composite app: " + body);
  for (int i = 0; i < a_.apps; ++i) {
    const std::string app = "app" + std::to_string(i);
    if (api.Parts(false, kCa_ + "/apps", Named(app), Chart(app, a_.resources, a_.replicas, "1"),
                  app + ".tgz", &body) != 201)
      return Fail("app " + app + ": " + body);
  }
  if (api.PostJson(kCa_ + "/composite-profiles", Named("cp"), &body) != 201)
    return Fail("profile: " + body);
  json spec = {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}};
  if (!a_.no_rollout) spec["rollout"] = RolloutSpec();
  if (!a_.drift_policy.empty()) spec["driftPolicy"] = a_.drift_policy;
  if (api.PostJson(kCa_ + "/deployment-intent-groups", Doc("dig", spec), &body) != 201)
    return Fail("dig: " + body);
  if (api.PostJson(kDig_ + "/generic-placement-intents", Named("gpi"), &body) != 201)
    return Fail("gpi: " + body);
  for (int i = 0; i < a_.apps; ++i) {
    const std::string app = "app" + std::to_string(i);
    json intent = {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}};
    if (api.PostJson(kDig_ + "/generic-placement-intents/gpi/app-intents",
                     Doc(app, {{"app", app}, {"intent", intent}}), &body) != 201)
      return Fail("app intent: " + body);
  }
  if (api.PostJson(kDig_ + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}}),
                   &body) != 201)
    return Fail("intents: " + body);
  if (api.PostJson(kDig_ + "/approve", json::object(), &body) != 202)
    return Fail("approve: " + body);
  return true;
}

bool Bench::WaitRollout(int revision, double t0_wall, const std::function<void(const json&)>& hold,
                        json* last) {
  Api api(eco_port_);
  auto t = Clock::now();
  bool held = !hold;
  long polls = 0;
  double poll_sum = 0, poll_max = 0;
  while (Since(t) < a_.timeout_s) {
    auto q = Clock::now();
    int st = 0;
    json j = api.GetJson(kDig_ + "/status?status=deployed&output=summary", &st);
    const double took = Since(q);
    ++polls;
    poll_sum += took;
    poll_max = std::max(poll_max, took);
    if (st == 200 && j.is_object() && j.contains("rollout")) {
      const json& r = j["rollout"];
      const std::string state = r.value("state", "");
      if (r.value("revision", 0) == revision) {
        *last = j;
        if (state == "Complete") {
          out_["status_polls"] = polls;
          out_["status_poll_mean_s"] = poll_sum / static_cast<double>(polls);
          out_["status_poll_max_s"] = poll_max;
          out_["seen_complete_s"] = WallSeconds(Wall::now()) - t0_wall;
          return true;
        }
        if (state == "Failed" || state == "RolledBack" || state == "Paused")
          return Fail("rollout " + state + ": " + r.dump().substr(0, 2000));
        if (state == "WaitingApproval") {
          if (!held) {
            held = true;
            hold(j);
          }
          std::string body;
          const int s = api.PostJson(kDig_ + "/rollout/approve", json::object(), &body);
          if (s != 202 && s != 409) return Fail("approve: " + std::to_string(s) + " " + body);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.2, 2 * took)));
  }
  return Fail("rollout of revision " + std::to_string(revision) + " not Complete within " +
              std::to_string(a_.timeout_s) + " s: " + last->dump().substr(0, 2000));
}

bool Bench::Instantiate() {
  Api api(eco_port_);
  std::string body;
  const double t0 = WallSeconds(Wall::now());
  auto t = Clock::now();
  sampler_->Phase("instantiate");
  if (api.PostJson(kDig_ + "/instantiate", json::object(), &body) != 202)
    return Fail("instantiate: " + body);
  out_["instantiate_call_s"] = Since(t);
  if (a_.plan_only) {
    // Without the ready monitor the first wave's gate never passes: let
    // rsync apply it and fall quiet, so that the plans have the machine.
    std::this_thread::sleep_for(std::chrono::seconds(10));
    int st = 0;
    json j = api.GetJson(kDig_ + "/status?status=deployed&output=summary", &st);
    out_["plan_only_dig_status"] = j.is_object() ? j.value("deployedStatus", "") : "";
    if (j.is_object() && j.contains("rollout"))
      out_["plan_only_rollout_state"] = j["rollout"].value("state", "");
    return true;
  }
  if (a_.no_rollout) {
    for (;;) {
      int st = 0;
      json j = api.GetJson(kDig_ + "/status?status=ready&output=summary", &st);
      if (st == 200 && j.value("readyStatus", "") == "Ready" &&
          j.value("deployedStatus", "") == "Instantiated")
        break;
      if (Since(t) > a_.timeout_s) return Fail("not Ready: " + j.dump().substr(0, 1000));
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  } else {
    json last;
    if (!WaitRollout(1, t0, nullptr, &last)) return false;
    out_["instantiate_rollout"] = last["rollout"];
  }
  out_["instantiate_s"] = Since(t);
  Note(std::string(a_.no_rollout ? "instantiated (all Ready)" : "instantiated (every wave done)") +
       " in " + Fixed(Since(t), 1) + " s");
  return true;
}

bool Bench::ChangeApps() {
  Api api(eco_port_);
  for (int i = 0; i < a_.apps; ++i) {
    const std::string app = "app" + std::to_string(i);
    std::string body;
    if (api.Parts(true, kCa_ + "/apps/" + app, Named(app),
                  Chart(app, a_.resources, a_.replicas, "2"), app + ".tgz", &body) != 200)
      return Fail("PUT app " + app + ": " + body);
  }
  return true;
}

bool Bench::Plans() {
  sampler_->Phase("plan");
  if (a_.plan_runs == 0) return true;  // a peak RSS of the rollout alone
  Api api(eco_port_);
  for (const bool summary : {false, true}) {
    std::vector<double> times;
    size_t bytes = 0;
    json plan;
    for (int r = 0; r < a_.plan_runs; ++r) {
      std::string body;
      auto t = Clock::now();
      const int s =
          api.PostJson(kDig_ + "/plan" + (summary ? "?output=summary" : ""), json::object(), &body);
      times.push_back(Since(t));
      if (s != 200) return Fail("plan: " + std::to_string(s) + " " + body.substr(0, 2000));
      bytes = body.size();
      if (r == 0) plan = json::parse(body, nullptr, false);
    }
    std::sort(times.begin(), times.end());
    const std::string k = summary ? "plan_summary" : "plan_full";
    out_[k + "_s"] = times;  // sorted: best first
    out_[k + "_bytes"] = bytes;
    if (plan.is_object() && plan.contains("summary")) {
      const json& s = plan["summary"];
      out_[k + "_counts"] = {{"create", s.value("create", 0)},
                             {"change", s.value("change", 0)},
                             {"delete", s.value("delete", 0)},
                             {"clustersChanging", s.value("clustersChanging", 0)},
                             {"waves", plan.value("waves", json::array()).size()}};
    }
    Note(std::string("plan") + (summary ? " (summary)" : " (full)") + ": best " +
         Fixed(times.front()) + " s, median " + Fixed(times[times.size() / 2]) + " s, " +
         std::to_string(bytes) + " bytes");
  }
  return true;
}

bool Bench::Update() {
  // The driver's own view of readiness, before anything changes.
  std::vector<ReadyWatch::Target> targets;
  for (const auto& n : names_) {
    auto rc = eco::k8s::LoadKubeconfigFile(config_[n]);
    if (!rc.ok()) return Fail(rc.status().ToString());
    const auto slash = rc->server.find('/', rc->server.find("://") + 3);
    targets.push_back({n, slash == std::string::npos ? "" : rc->server.substr(slash),
                       rc->token.empty() ? "" : "Authorization: Bearer " + rc->token + "\r\n"});
  }
  ReadyWatch watch(sim_port_, std::move(targets), a_.apps, "2");
  std::string error;
  if (!watch.Start(&error)) return Fail("kube-sim watches: " + error);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the lists of existing objects arrive
  {
    auto ready = watch.ReadyAt();
    long early = 0;
    for (const auto& [c, at] : ready) early += at > 0;
    if (early)
      return Fail(std::to_string(early) + " clusters already at version 2 before the update");
  }

  Api api(eco_port_);
  std::string body;
  Memory("rest");
  sampler_->Phase("update");
  const double t0 = WallSeconds(Wall::now());
  auto t = Clock::now();
  if (api.PostJson(kDig_ + "/update", json::object(), &body) != 202) return Fail("update: " + body);
  out_["update_call_s"] = Since(t);
  json last;
  if (a_.no_rollout) {
    // All at once: done when every cluster is Ready at the new version.
    for (;;) {
      auto r = watch.ReadyAt();
      long n = 0;
      for (const auto& [c, at] : r) n += at > 0;
      if (n == a_.clusters) break;
      if (Since(t) > a_.timeout_s) return Fail("update not rolled out everywhere");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    double last_ready = 0;
    for (const auto& [c, at] : watch.ReadyAt()) last_ready = std::max(last_ready, at);
    out_["update_last_ready_s"] = last_ready - t0;
    out_["update_total_s"] = last_ready - t0;  // the last cluster Ready, as the watches saw it
  } else {
    auto hold = [&](const json&) {
      // The update waits after its first wave: what eco holds for a rollout in progress.
      std::this_thread::sleep_for(std::chrono::seconds(a_.hold_s / 2));
      Memory("waiting");
      std::this_thread::sleep_for(std::chrono::seconds(a_.hold_s - a_.hold_s / 2));
      Memory("waiting_end");
      out_["approval_hold_s"] = a_.hold_s;
    };
    if (!WaitRollout(2, t0, a_.approval ? std::function<void(const json&)>(hold) : nullptr, &last))
      return false;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // late watch events
  out_["watch_events"] = watch.events();
  out_["watch_reconnects"] = watch.reconnects();
  const auto ready = watch.ReadyAt();
  watch.Stop();
  if (!a_.no_rollout) WaveResults(last["rollout"], t0, ready);
  return true;
}

// Drift detection latency: app0's Deployment deleted in one cluster at a
// time, straight through kube-sim's API; how long until the deployed status
// of that app and cluster shows Drifted (polled every 20 ms: the query reads
// one record). Under driftPolicy enforce, also how long until kube-sim has
// the Deployment again (polled every 20 ms).
bool Bench::Drift() {
  Api api(eco_port_);
  sampler_->Phase("drift");
  // Drift is judged only once the latest AppContext is Instantiated.
  for (auto t = Clock::now();;) {
    int st = 0;
    json j = api.GetJson(
        kDig_ + "/status?status=deployed&output=summary&app=app0&cluster=prov%2B" + names_[0], &st);
    if (st == 200 && j.value("deployedStatus", "") == "Instantiated") break;
    if (Since(t) > 120)
      return Fail("not Instantiated for the drift samples: " + j.dump().substr(0, 1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  httplib::Client sim("127.0.0.1", sim_port_);
  sim.set_keep_alive(true);
  json samples = json::array();
  std::vector<double> detect, repair;
  const int n = std::min(a_.drift_samples, a_.clusters);
  for (int k = 0; k < n; ++k) {
    // Spread over the fleet (and so over its waves).
    const std::string& name =
        names_[static_cast<size_t>(k) * names_.size() / static_cast<size_t>(n)];
    auto rc = eco::k8s::LoadKubeconfigFile(config_[name]);
    if (!rc.ok()) return Fail(rc.status().ToString());
    const auto slash = rc->server.find('/', rc->server.find("://") + 3);
    const std::string obj =
        rc->server.substr(slash) + "/apis/apps/v1/namespaces/default/deployments/app0-web";
    httplib::Headers auth;
    if (!rc->token.empty()) auth.emplace("Authorization", "Bearer " + rc->token);
    const std::string probe =
        kDig_ + "/status?status=deployed&output=summary&app=app0&cluster=prov%2B" + name;
    auto t = Clock::now();
    auto del = sim.Delete(obj.c_str(), auth);
    if (!del || del->status != 200)
      return Fail("DELETE " + obj + ": " + (del ? std::to_string(del->status) : "no answer"));
    json sample = {{"cluster", name}};
    bool seen = false, back = a_.drift_policy != "enforce";
    // Under enforce, Drifted lasts only until the repair: it may be missed.
    while (!(back && (seen || a_.drift_policy == "enforce")) && Since(t) < 60) {
      if (!seen) {
        int st = 0;
        json j = api.GetJson(probe, &st);
        if (st == 200 && j.value("deployedCounts", json::object()).contains("Drifted")) {
          seen = true;
          sample["drifted_s"] = Since(t);
          detect.push_back(Since(t));
        }
      }
      if (!back) {
        auto g = sim.Get(obj.c_str(), auth);
        if (g && g->status == 200) {
          back = true;
          sample["repaired_s"] = Since(t);
          repair.push_back(Since(t));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    samples.push_back(sample);
    Note("drift on " + name + ": " + sample.dump());
  }
  out_["drift_samples"] = samples;
  out_["drift_policy"] = a_.drift_policy.empty() ? "report" : a_.drift_policy;
  std::sort(detect.begin(), detect.end());
  std::sort(repair.begin(), repair.end());
  out_["drift_detect_s"] = detect;  // sorted
  out_["drift_repair_s"] = repair;
  if (detect.size() != static_cast<size_t>(n) && a_.drift_policy != "enforce")
    return Fail(std::to_string(n - static_cast<int>(detect.size())) +
                " deletions never showed as Drifted within 60 s");
  return true;
}

// Per wave: eco's startedAt/completedAt, and the last of its clusters Ready
// as the driver's watches saw it; per boundary, what eco added.
void Bench::WaveResults(const json& rollout, double t0,
                        const std::map<std::string, double>& ready) {
  out_["update_rollout"] = rollout;
  const json& waves = rollout["waves"];
  json rows = json::array();
  size_t from = 0;
  double last_completed = 0;
  for (size_t w = 0; w < waves.size(); ++w) {
    const json& wave = waves[w];
    const size_t n = wave.value("clusters", 0UL);
    double first_ready = 0, last_ready = 0;
    long missing = 0;
    for (size_t i = from; i < from + n && i < names_.size(); ++i) {
      const double at = ready.at(names_[i]);
      if (at <= 0) {
        ++missing;
        continue;
      }
      first_ready = first_ready == 0 ? at : std::min(first_ready, at);
      last_ready = std::max(last_ready, at);
    }
    from += n;
    const double started = ParseRfc3339(wave.value("startedAt", "")),
                 completed = ParseRfc3339(wave.value("completedAt", ""));
    last_completed = std::max(last_completed, completed);
    json row = {{"name", wave.value("name", "")},
                {"clusters", n},
                {"done", wave.value("done", 0)},
                {"started_s", started - t0},
                {"completed_s", completed - t0},
                {"duration_s", completed - started},
                {"last_ready_s", last_ready - t0},
                {"first_ready_s", first_ready - t0},
                {"not_seen_ready", missing},
                {"completed_after_last_ready_s", completed - last_ready}};
    if (w + 1 < waves.size()) {
      const double next = ParseRfc3339(waves[w + 1].value("startedAt", ""));
      row["next_started_after_last_ready_s"] = next - last_ready;
    }
    rows.push_back(row);
  }
  out_["waves"] = rows;
  out_["update_total_s"] = last_completed - t0;
  out_["wave_membership_checked"] = from == names_.size();
  double worst = 0;
  for (const auto& r : rows) {
    if (r.contains("next_started_after_last_ready_s"))
      worst = std::max(worst, r["next_started_after_last_ready_s"].get<double>());
  }
  out_["gap_max_s"] = worst;
  for (const auto& r : rows) {
    Note("wave " + r["name"].get<std::string>() + ": " +
         std::to_string(r["clusters"].get<size_t>()) + " clusters, " +
         Fixed(r["started_s"].get<double>(), 2) + " → " + Fixed(r["completed_s"].get<double>(), 2) +
         " s, last Ready at " + Fixed(r["last_ready_s"].get<double>(), 2) + " s" +
         (r.contains("next_started_after_last_ready_s")
              ? ", next wave started " +
                    Fixed(r["next_started_after_last_ready_s"].get<double>(), 3) + " s after it"
              : ""));
  }
}

void Bench::AppendRow() {
  if (a_.row_file.empty()) return;
  auto num = [&](const char* k, const char* fmt) {
    if (!out_.contains(k) || !out_[k].is_number()) return std::string("—");
    char b[64];
    std::snprintf(b, sizeof b, fmt, out_[k].get<double>());
    return std::string(b);
  };
  auto best = [&](const char* k) {
    if (!out_.contains(k) || !out_[k].is_array() || out_[k].empty()) return std::string("—");
    const json& v = out_[k];
    return Fixed(v.front().get<double>(), 2) + " s (" + Fixed(v[v.size() / 2].get<double>(), 2) +
           ")";
  };
  std::string waves = "—", gaps = "—";
  if (out_.contains("waves")) {
    waves.clear();
    gaps.clear();
    for (const auto& r : out_["waves"]) {
      waves += (waves.empty() ? "" : ", ") + Fixed(r["duration_s"].get<double>(), 1);
      if (r.contains("next_started_after_last_ready_s"))
        gaps += (gaps.empty() ? "" : ", ") +
                Fixed(r["next_started_after_last_ready_s"].get<double>(), 2);
    }
  }
  std::ofstream f(a_.row_file, std::ios::app);
  f << "| " << a_.clusters << " | " << a_.apps << "×" << a_.resources << " | "
    << (a_.no_rollout ? std::string("all at once")
                      : "waves " + out_.value("waves_spec", std::string()))
    << " | " << num("onboard_s", "%.1f s") << " | " << num("instantiate_s", "%.1f s") << " | "
    << num("update_total_s", "%.1f s") << " | " << waves << " | " << gaps << " | "
    << best("plan_full_s") << " | " << best("plan_summary_s") << " | "
    << num("eco_rss_rest_mib", "%.0f MiB") << " | " << num("eco_rss_waiting_mib", "%.0f MiB")
    << " | " << num("eco_peak_rss_mib", "%.0f MiB") << " | " << num("eco_peak_sockets", "%.0f")
    << (out_.value("ok", false) ? "" : " (failed)") << " |\n";
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
  out_["replicas"] = a_.replicas;
  std::string spec;
  for (int p : a_.waves) spec += (spec.empty() ? "" : ",") + std::to_string(p) + "%";
  out_["waves_spec"] = a_.no_rollout ? "none" : spec + ",rest";
  out_["approval"] = a_.approval;
  out_["eco_args"] = a_.eco_args;
  bool ok = StartSim() && StartEco() && Onboard() && CreateApp() && Instantiate() && ChangeApps() &&
            Plans() && (a_.plan_only || Update()) &&
            (a_.plan_only || a_.drift_samples == 0 || Drift());
  if (eco_ && eco_->running()) {
    const ProcStatus s = ReadProc(eco_->pid());
    out_["eco_peak_rss_mib"] = s.hwm_kib / 1024.0;
    out_["eco_rss_end_mib"] = s.rss_kib / 1024.0;
    out_["eco_rss_anon_end_mib"] = s.anon_kib / 1024.0;
    out_["eco_rss_file_end_mib"] = s.file_kib / 1024.0;
    out_["eco_threads_end"] = s.threads;
    if (sampler_) {
      out_["eco_peak_sockets"] = sampler_->peak_sockets();
      for (const auto& [phase, kib] : sampler_->PeakRssKib())
        out_["eco_peak_rss_" + phase + "_mib"] = kib / 1024.0;
    }
    if (sim_) out_["sim_peak_rss_mib"] = ReadProc(sim_->pid()).hwm_kib / 1024.0;
  }
  sampler_.reset();
  if (eco_ && eco_->running()) eco_->Kill(SIGTERM);
  if (sim_ && sim_->running()) sim_->Kill(SIGTERM);
  out_["ok"] = ok;
  AppendRow();
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
  CLI::App app{"eco staged rollouts and fleet plans against kube-sim"};
  Args a;
  std::string waves = "1,10,20,30";
  app.add_option("--clusters", a.clusters, "Clusters in kube-sim, all placed")
      ->check(CLI::Range(1, 100000));
  app.add_option("--apps", a.apps, "Apps in the composite app")->check(CLI::Range(1, 100));
  app.add_option("--resources", a.resources, "Objects per app: a Deployment and ConfigMaps")
      ->check(CLI::Range(1, 1000));
  app.add_option("--replicas", a.replicas, "Replicas of each Deployment")->check(CLI::Range(1, 10));
  app.add_option("--waves", waves, "Percent waves, comma-separated (the rest form a last wave)");
  app.add_flag("--no-rollout", a.no_rollout, "No spec.rollout: instantiate and update all at once");
  app.add_flag("--approval", a.approval,
               "approval: between-waves; the update's first wait is held --hold-seconds");
  app.add_option("--hold-seconds", a.hold_s,
                 "How long the update waits for approval after its first wave")
      ->check(CLI::Range(2, 3600));
  app.add_option("--plan-runs", a.plan_runs, "Plans of each kind (full, summary); 0: none")
      ->check(CLI::Range(0, 100));
  app.add_flag("--plan-only", a.plan_only,
               "Instantiate without waiting for readiness; measure the plans only");
  app.add_option("--drift-samples", a.drift_samples,
                 "After the update, delete app0's Deployment in this many clusters, one at a time, "
                 "and time Drifted")
      ->check(CLI::Range(0, 1000));
  app.add_option("--drift-policy", a.drift_policy,
                 "The DIG's spec.driftPolicy (default: unset, i.e. report)")
      ->check(CLI::IsMember({"report", "enforce"}));
  app.add_option("--workers", a.workers, "eco --rsync-workers")->check(CLI::Range(1, 1024));
  app.add_option("--sim-threads", a.sim_threads, "kube-sim io threads")->check(CLI::Range(1, 64));
  app.add_option("--onboard-threads", a.onboard_threads,
                 "Parallel REST clients that onboard the fleet");
  app.add_option("--timeout", a.timeout_s, "Seconds to wait for each rollout");
  app.add_option("--work-dir", a.work_dir,
                 "Directory for logs, kubeconfigs, eco's data (wiped; default: a temp dir)");
  app.add_option("--eco", a.eco_bin, "eco binary (default: beside this one)");
  app.add_option("--kube-sim", a.sim_bin, "kube-sim binary (default: beside this one)");
  app.add_option("--eco-arg", a.eco_args,
                 "Extra argument for eco serve (repeatable; --eco-arg=--flag=value)");
  app.add_option("--row-file", a.row_file,
                 "Append a Markdown table row of the results to this file");
  CLI11_PARSE(app, argc, argv);
  a.waves.clear();
  std::stringstream ss(waves);
  for (std::string p; std::getline(ss, p, ',');) {
    if (!p.empty()) a.waves.push_back(std::atoi(p.c_str()));
  }
  if (!a.no_rollout && a.waves.empty()) {
    std::fprintf(stderr, "--waves: at least one percent wave (or --no-rollout)\n");
    return 2;
  }
  if (a.eco_bin.empty()) a.eco_bin = SelfDir() + "/eco";
  if (a.sim_bin.empty()) a.sim_bin = SelfDir() + "/kube-sim";
  return Bench(std::move(a)).Run();
}
