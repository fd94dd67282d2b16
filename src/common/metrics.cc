#include "common/metrics.h"

#include <dirent.h>
#include <prometheus/collectable.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <vector>

namespace eco::metrics {
namespace {

// The process_* series Prometheus' client libraries export, read from
// /proc at each scrape (prometheus-cpp has no process collector).
class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');  // the command name may hold spaces
    if (close != std::string::npos && close + 2 < text.size()) {
      // Fields from the 3rd (state); utime is the 14th of /proc/<pid>/stat.
      std::istringstream fields(text.substr(close + 2));
      std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                                 std::istream_iterator<std::string>());
      auto field = [&](size_t n) { return n - 3 < f.size() ? std::stod(f[n - 3]) : 0.0; };
      Add(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
          prometheus::MetricType::Counter, (field(14) + field(15)) / ticks);
      Add(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
          prometheus::MetricType::Gauge, field(23));
      Add(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
          prometheus::MetricType::Gauge, field(24) * page);
      Add(out, "process_threads", "Number of OS threads in the process.",
          prometheus::MetricType::Gauge, field(20));
      Add(out, "process_start_time_seconds",
          "Start time of the process since unix epoch in seconds.", prometheus::MetricType::Gauge,
          BootTime() + field(22) / ticks);
    }
    Add(out, "process_open_fds", "Number of open file descriptors.", prometheus::MetricType::Gauge,
        OpenFds());
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
      Add(out, "process_max_fds", "Maximum number of open file descriptors.",
          prometheus::MetricType::Gauge, static_cast<double>(lim.rlim_cur));
    }
    return out;
  }

 private:
  static void Add(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help,
                  prometheus::MetricType type, double value) {
    prometheus::MetricFamily fam;
    fam.name = name;
    fam.help = help;
    fam.type = type;
    prometheus::ClientMetric m;
    if (type == prometheus::MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    fam.metric.push_back(std::move(m));
    out.push_back(std::move(fam));
  }

  static double OpenFds() {
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr) return 0;
    double n = 0;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(d);
    return n - 1;  // the directory stream's own descriptor
  }

  // When the machine booted, seconds since the epoch (/proc/stat btime).
  static double BootTime() {
    static const double boot = [] {
      std::ifstream in("/proc/stat");
      std::string key;
      double value = 0;
      while (in >> key) {
        if (key == "btime") {
          in >> value;
          break;
        }
        in.ignore(1 << 20, '\n');
      }
      return value;
    }();
    return boot;
  }
};

struct State {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  ProcessCollector process;
};

State& Global() {
  static State state;  // the roles join their threads before main returns
  return state;
}

}  // namespace

prometheus::Registry& Registry() { return *Global().registry; }

std::string Render() {
  std::vector<prometheus::MetricFamily> families = Global().registry->Collect();
  for (auto& f : Global().process.Collect()) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return buckets;
}

}  // namespace eco::metrics
