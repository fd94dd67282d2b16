// On the etcd store, eco keeps the file system off its deployment path: from
// the instantiate call until the clusters report every resource Ready, no
// thread of `eco serve` opens, creates, renames, deletes or even looks up a
// path (kubeconfig certificates, charts and manifests stay in memory). strace
// watches every thread of the running process over that stretch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "context_builders.h"
#include "eco_fixture.h"
#include "etcd_fixture.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

// One path-touching system call in an strace log.
struct FileOp {
  pid_t tid = 0;
  std::string syscall;
  std::string path;  // every path argument, " -> " between two
  std::string line;  // as strace wrote it
};

// The quoted strings of `args` (strace's C-style escapes kept as written).
std::vector<std::string> QuotedStrings(std::string_view args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != '"') continue;
    std::string s;
    for (++i; i < args.size() && args[i] != '"'; ++i) {
      if (args[i] == '\\' && i + 1 < args.size()) s += args[i++];
      s += args[i];
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Reads what `strace -f -o FILE -e trace=%file,connect,bind` wrote: lines
// "TID name(args) = result" (or "[pid TID] ..." when written to stderr). A
// call interrupted by another thread's is split into "... <unfinished ...>"
// and "<... name resumed> ..."; the first half carries the arguments. Not
// counted: fstat done as newfstatat/statx(fd, "", AT_EMPTY_PATH), which names
// no path, and sockets other than file-system AF_UNIX ones.
std::vector<FileOp> ParseFileOps(const std::string& log) {
  std::vector<FileOp> ops;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::string_view rest = line;
    pid_t tid = 0;
    if (rest.rfind("[pid ", 0) == 0) rest.remove_prefix(5);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits > 0) {
      tid = static_cast<pid_t>(std::stol(std::string(rest.substr(0, digits))));
      rest.remove_prefix(digits);
      if (!rest.empty() && rest.front() == ']') rest.remove_prefix(1);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    }
    // Resumed halves, signals, exits and strace's own notes.
    if (rest.empty() || rest.front() == '<' || rest.front() == '-' || rest.front() == '+' ||
        rest.rfind("strace:", 0) == 0) {
      continue;
    }
    size_t paren = rest.find('(');
    if (paren == std::string_view::npos || paren == 0) continue;
    FileOp op;
    op.tid = tid;
    op.syscall = std::string(rest.substr(0, paren));
    if (op.syscall.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
      continue;
    std::string_view args = rest.substr(paren + 1);
    std::vector<std::string> paths = QuotedStrings(args);
    if (op.syscall == "connect" || op.syscall == "bind") {
      // File-system sockets only; "@..." is the abstract namespace.
      if (args.find("sa_family=AF_UNIX") == std::string_view::npos ||
          args.find("sun_path=@") != std::string_view::npos) {
        continue;
      }
    }
    const bool empty_path_at_fd = args.find("AT_EMPTY_PATH") != std::string_view::npos &&
                                  !paths.empty() && paths.front().empty();
    if (empty_path_at_fd) continue;
    for (const std::string& p : paths) op.path += (op.path.empty() ? "" : " -> ") + p;
    op.line = line;
    ops.push_back(std::move(op));
  }
  return ops;
}

std::string ThreadName(pid_t pid, pid_t tid) {
  std::string n =
      ReadFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  while (!n.empty() && n.back() == '\n') n.pop_back();
  return n.empty() ? "?" : n;
}

std::string Describe(const std::vector<FileOp>& ops, pid_t pid) {
  std::string out;
  for (const FileOp& op : ops) {
    out += "  " + op.syscall + " \"" + op.path + "\" on thread " + std::to_string(op.tid) + " (" +
           ThreadName(pid, op.tid) + "): " + op.line + "\n";
  }
  return out;
}

// strace on the executable search path, or "".
std::string FindStrace() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/strace";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Every thread of `pid` has `tracer` as its tracer.
bool AllThreadsTracedBy(pid_t pid, pid_t tracer) {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec);
  if (ec) return false;
  int seen = 0;
  for (const auto& task : it) {
    std::string status = ReadFile(task.path().string() + "/status");
    size_t at = status.find("TracerPid:");
    if (at == std::string::npos) return false;
    if (std::atoi(status.c_str() + at + 10) != tracer) return false;
    ++seen;
  }
  return seen > 0;
}

// strace attached to a running process and all its threads, present and
// future, recording the calls that take a path.
class Tracer {
 public:
  Tracer() = default;
  // SIGINT, not the SIGKILL Process would send: strace then detaches cleanly.
  ~Tracer() { Stop(); }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Empty on success, else why tracing is impossible.
  std::string Attach(pid_t pid) {
    const std::string strace = FindStrace();
    if (strace.empty()) {
      return "strace is not installed (Debian package strace; scripts/deps.sh installs it)";
    }
    trace_path_ = dir_.path() + "/trace.txt";
    proc_ = std::make_unique<Process>(
        std::vector<std::string>{strace, "-f", "-o", trace_path_, "-e", "trace=%file,connect,bind",
                                 "-p", std::to_string(pid)},
        dir_.path() + "/strace.log");
    bool attached =
        WaitUntil([&] { return !proc_->running() || AllThreadsTracedBy(pid, proc_->pid()); },
                  std::chrono::seconds(30));
    if (!attached || !proc_->running()) {
      return "strace did not attach to every thread of process " + std::to_string(pid) +
             " (is ptrace permitted? see /proc/sys/kernel/yama/ptrace_scope and CAP_SYS_PTRACE); "
             "strace said:\n" +
             proc_->ReadLog();
    }
    return "";
  }

  // Detaches (strace leaves the process running) and returns the path calls seen.
  std::vector<FileOp> Stop() {
    if (proc_ && proc_->running()) proc_->Kill(SIGINT);
    return ParseFileOps(ReadFile(trace_path_));
  }

  std::string Log() const { return proc_ ? proc_->ReadLog() : ""; }
  std::string Trace() const { return ReadFile(trace_path_); }

 private:
  TempDir dir_;
  std::string trace_path_;
  std::unique_ptr<Process> proc_;
};

TEST(StraceParser, ReadsPathCallsAndSkipsTheRest) {
  const std::string log =
      "101 openat(AT_FDCWD, \"/etc/ssl/openssl.cnf\", O_RDONLY) = 3\n"
      "102 newfstatat(7, \"\", {st_mode=S_IFREG|0644, st_size=12, ...}, AT_EMPTY_PATH) = 0\n"
      "103 renameat2(AT_FDCWD, \"/tmp/a b\", AT_FDCWD, \"/tmp/\\\"c\\\"\", 0 <unfinished ...>\n"
      "101 <... openat resumed>) = 3\n"
      "104 connect(9, {sa_family=AF_INET, sin_port=htons(2379), "
      "sin_addr=inet_addr(\"127.0.0.1\")}, 16) = 0\n"
      "104 connect(9, {sa_family=AF_UNIX, sun_path=\"/var/run/nscd/socket\"}, 110) = -1 ENOENT\n"
      "104 connect(9, {sa_family=AF_UNIX, sun_path=@\"abstract\"}, 12) = 0\n"
      "[pid   105] stat(\"/etc/localtime\", 0x7ffd) = 0\n"
      "105 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL} ---\n"
      "105 +++ exited with 0 +++\n";
  std::vector<FileOp> ops = ParseFileOps(log);
  ASSERT_EQ(ops.size(), 4u) << Describe(ops, 0);
  EXPECT_EQ(ops[0].syscall, "openat");
  EXPECT_EQ(ops[0].path, "/etc/ssl/openssl.cnf");
  EXPECT_EQ(ops[0].tid, 101);
  EXPECT_EQ(ops[1].syscall, "renameat2");
  EXPECT_EQ(ops[1].path, "/tmp/a b -> /tmp/\\\"c\\\"");
  EXPECT_EQ(ops[2].path, "/var/run/nscd/socket");
  EXPECT_EQ(ops[3].syscall, "stat");
  EXPECT_EQ(ops[3].tid, 105);
}

// The same attach and parse catch a file operation of a traced process that
// happens on a thread started after strace attached.
TEST(StraceSelfCheck, CatchesFileOperationsOnANewThread) {
  TempDir dir;
  const std::string made = dir.path() + "/made-by-child";
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(2);
    std::thread t([&] {
      int fd = open(made.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) close(fd);
      rename(made.c_str(), (made + ".renamed").c_str());
      unlink((made + ".renamed").c_str());
    });
    t.join();
    _exit(0);
  }
  close(go[0]);
  Tracer tracer;
  const std::string why = tracer.Attach(child);
  if (!why.empty()) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(go[1]);
    FAIL() << why;
  }
  ASSERT_EQ(write(go[1], "x", 1), 1);
  close(go[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::vector<FileOp> ops = tracer.Stop();
  bool opened = false, renamed = false, unlinked = false;
  for (const FileOp& op : ops) {
    EXPECT_GT(op.tid, 0) << "no thread id: " << op.line;
    EXPECT_NE(op.tid, child) << "only the new thread touches files: " << op.line;
    if (op.path == made && op.syscall.rfind("open", 0) == 0) opened = true;
    if (op.syscall.rfind("rename", 0) == 0 && op.path == made + " -> " + made + ".renamed")
      renamed = true;
    if (op.syscall.rfind("unlink", 0) == 0 && op.path == made + ".renamed") unlinked = true;
  }
  EXPECT_TRUE(opened && renamed && unlinked) << "parsed:\n"
                                             << Describe(ops, child) << "raw trace:\n"
                                             << tracer.Trace() << "strace:\n"
                                             << tracer.Log();
}

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";
const std::vector<std::string> kClusters = {"edge-1", "edge-2", "edge-3"};

// Drops the certificate-authority-data line of a kube-sim kubeconfig; its CA
// PEM goes to `ca_pem`.
std::string WithoutCa(const std::string& kubeconfig, std::string& ca_pem) {
  const std::string key = "certificate-authority-data: \"";
  size_t at = kubeconfig.find(key);
  if (at == std::string::npos) return kubeconfig;
  size_t start = kubeconfig.rfind('\n', at) + 1;
  size_t end = kubeconfig.find('\n', at);
  size_t quote = kubeconfig.find('"', at + key.size());
  auto pem = k8s::DecodeBase64(kubeconfig.substr(at + key.size(), quote - at - key.size()));
  if (pem.ok()) ca_pem = *pem;
  return kubeconfig.substr(0, start) + kubeconfig.substr(end + 1);
}

// Sets an environment variable for the life of this object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// Two clusters trust kube-sim's CA through their kubeconfig; the third's
// kubeconfig names no CA, and eco trusts it through the system's CA file
// (here $SSL_CERT_FILE), which it reads at start.
TEST(NoFiles, EtcdStoreInstantiateUntilReadyTouchesNoFile) {
  EtcdProcess* etcd = SharedEtcd();
  ASSERT_NE(etcd, nullptr) << "etcd could not start";
  KubeSimOptions ko;
  ko.clusters = static_cast<int>(kClusters.size());
  ko.name_prefix = "edge-";
  ko.tls = true;
  KubeSim sim(ko);
  ASSERT_TRUE(sim.ok()) << sim.error();
  std::map<std::string, std::string> kubeconfigs;
  for (const std::string& n : kClusters) kubeconfigs[n] = ReadFile(sim.kubeconfig(n));
  std::string ca_pem;
  kubeconfigs[kClusters.back()] = WithoutCa(kubeconfigs[kClusters.back()], ca_pem);
  ASSERT_NE(ca_pem.find("BEGIN CERTIFICATE"), std::string::npos) << kubeconfigs[kClusters.back()];
  TempDir system_roots;
  const std::string roots_file = system_roots.path() + "/roots.pem";
  {
    std::ofstream out(roots_file, std::ios::binary);
    out << ca_pem;
    ASSERT_TRUE(out.good());
  }
  ScopedEnv roots_env("SSL_CERT_FILE", roots_file);  // inherited by eco

  EcoOptions eo;
  eo.store = EcoOptions::Store::kEtcd;
  eo.etcd_endpoint = etcd->endpoint();
  EcoServer eco(eo);
  ASSERT_TRUE(eco.ready()) << eco.error();
  EcoClient c = eco.client();
  auto ok = [](const HttpResponse& r, int code = 201) {
    return r.status == code ? "" : r.Describe();
  };

  // Everything but the instantiate call, before strace looks.
  ASSERT_EQ(ok(c.PostJson("/v2/cluster-providers", Named("prov"))), "");
  for (const std::string& n : kClusters) {
    ASSERT_EQ(ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(),
                                 kubeconfigs[n], "kubeconfig")),
              "");
    ASSERT_EQ(ok(c.PostJson("/v2/cluster-providers/prov/clusters/" + n + "/labels",
                            json{{"clusterLabel", "edge"}})),
              "");
  }
  ASSERT_EQ(ok(c.PostJson("/v2/projects", Named("p"))), "");
  ASSERT_EQ(ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}}))), "");
  for (const std::string& n : kClusters) {
    ASSERT_EQ(ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                            Doc("r-" + n, {{"clusterProvider", "prov"}, {"cluster", n}}))),
              "");
  }
  ASSERT_EQ(ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202),
            "");
  ASSERT_EQ(
      ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}}))),
      "");
  ASSERT_EQ(ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), ChartTgz("web"))), "");
  ASSERT_EQ(ok(c.PostJson(kCA + "/composite-profiles", Named("cp"))), "");
  ASSERT_EQ(ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles",
                               Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz())),
            "");
  ASSERT_EQ(
      ok(c.PostJson(
          kCA + "/deployment-intent-groups",
          Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}}))),
      "");
  ASSERT_EQ(ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi"))), "");
  ASSERT_EQ(
      ok(c.PostJson(
          kDIG + "/generic-placement-intents/gpi/app-intents",
          Doc("web", {{"app", "web"},
                      {"intent",
                       {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}}))),
      "");
  ASSERT_EQ(ok(c.PostJson(kDIG + "/intents",
                          Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}}))),
            "");
  ASSERT_EQ(ok(c.PostJson(kDIG + "/approve", json::object()), 202), "");
  // A fresh process, so that nothing the onboarding did first (and a library
  // then kept) hides what the deployment alone would read.
  ASSERT_TRUE(eco.Restart()) << eco.error();

  const pid_t pid = eco.pid();
  ASSERT_GT(pid, 0);
  Tracer tracer;
  const std::string why = tracer.Attach(pid);
  ASSERT_EQ(why, "");

  ASSERT_EQ(ok(c.PostJson(kDIG + "/instantiate", json::object()), 202), "");
  json last;
  const bool ready = WaitUntil(
      [&] {
        last = c.Get(kDIG + "/status?status=ready").json();
        return last.is_object() && last.value("readyStatus", "") == "Ready";
      },
      std::chrono::seconds(60));
  // Thread names are read while eco still runs.
  std::vector<FileOp> ops = tracer.Stop();
  const std::string found = Describe(ops, pid);
  EXPECT_TRUE(ready) << last.dump() << "\neco log:\n" << eco.LogTail();
  // The Deployment is Ready on every cluster, the one trusted from the system's roots too.
  std::set<std::string> deployed;
  const json apps = last.is_object() ? last.value("apps", json::array()) : json::array();
  for (const json& app : apps) {
    for (const json& cl : app.value("clusters", json::array())) {
      for (const json& r : cl.value("resources", json::array())) {
        if (r.value("name", "") == "r1-web" && r.value("readyStatus", "") == "Ready" &&
            r.value("GVK", json::object()).value("Kind", "") == "Deployment") {
          deployed.insert(cl.value("cluster", ""));
        }
      }
    }
  }
  EXPECT_EQ(deployed, std::set<std::string>(kClusters.begin(), kClusters.end())) << last.dump();
  EXPECT_TRUE(ops.empty()) << ops.size() << " file system calls between instantiate and Ready"
                           << " (`strace -k` shows where they come from):\n"
                           << found;
  // strace saw the deployment at all: eco connected to the clusters.
  EXPECT_NE(tracer.Trace().find("connect("), std::string::npos) << tracer.Log();
}

}  // namespace
}  // namespace eco::testing
