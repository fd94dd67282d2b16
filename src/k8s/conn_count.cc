#include "k8s/conn_count.h"

#include <atomic>

#include "common/metrics.h"

namespace eco::k8s {
namespace {

struct Counts {
  std::atomic<int64_t> open[2] = {0, 0};
  prometheus::Gauge* gauge[2] = {nullptr, nullptr};
};

Counts& Get() {
  static Counts* c = [] {
    auto* made = new Counts();
    auto& fam =
        prometheus::BuildGauge()
            .Name("eco_k8s_connections")
            .Help(
                "TCP connections open from this process's Kubernetes clients to clusters, "
                "by protocol (h2: one per cluster carrying every request and watch; "
                "http1: the HTTP/1.1 paths). Proxied (libcurl) connections are not counted.")
            .Register(metrics::Registry());
    made->gauge[0] = &fam.Add({{"protocol", "http1"}});
    made->gauge[1] = &fam.Add({{"protocol", "h2"}});
    return made;
  }();
  return *c;
}

}  // namespace

void CountConnection(ConnProtocol protocol, int delta) {
  const int i = protocol == ConnProtocol::kH2 ? 1 : 0;
  Counts& c = Get();
  c.open[i].fetch_add(delta, std::memory_order_relaxed);
  c.gauge[i]->Increment(delta);
}

int64_t OpenConnections(ConnProtocol protocol) {
  return Get().open[protocol == ConnProtocol::kH2 ? 1 : 0].load(std::memory_order_relaxed);
}

}  // namespace eco::k8s
