#include "cmd/preload.h"

#include <absl/base/internal/sysinfo.h>

#include <ctime>

#include "helm/chart.h"
#include "k8s/client.h"

namespace eco::cmd {

void PreloadLazyFiles() {
  // glibc reads the time zone (/etc/localtime) at its first time conversion.
  tzset();
  // OpenSSL's configuration and the system's CA certificates.
  k8s::PreloadTls();
  // iconv's tables, for the names in chart archives.
  helm::PreloadArchiveCharsets();
  // absl, under gRPC, reads the CPU count and frequency from /sys the first
  // time a mutex is contended; both are kept once read.
  absl::base_internal::NumCPUs();
  absl::base_internal::NominalCPUFrequency();
}

}  // namespace eco::cmd
