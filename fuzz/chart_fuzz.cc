// Fuzzes the chart loader with arbitrary bytes as a .tgz: malformed gzip,
// tar headers, paths, sizes and nested archives must end in an error or a
// chart, never in a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "helm/chart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  eco::helm::LoadLimits limits;
  limits.max_archive_bytes = 1u << 20;
  limits.max_total_bytes = 8u << 20;
  limits.max_file_bytes = 1u << 20;
  limits.max_entries = 2000;
  auto chart = eco::helm::LoadChartArchive(std::string(reinterpret_cast<const char*>(data), size), limits);
  if (chart.ok()) (void)chart->CrdFiles();
  return 0;
}
