// Template throughput benchmark: the same measurement as gotmpl-ref's
// `-bench N` (case data decoded once; every case parsed and executed N
// times), so both engines can be compared on one corpus in one run.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "helm/chart.h"
#include "helm/eval_cases.h"
#include "helm/render.h"

namespace {

// Loads a chart once, then renders it ITERATIONS times the way `helm
// template` does (values, dependencies, schema, templates, sorting).
int BenchChart(const char* dir, int iterations) {
  auto chart = eco::helm::LoadChartDirectory(dir);
  if (!chart.ok()) {
    std::fprintf(stderr, "eco_helm_bench: %s\n", chart.status().ToString().c_str());
    return 2;
  }
  eco::helm::TemplateOptions opts;
  opts.release.name = "bench";
  size_t bytes = 0;
  std::vector<double> ms;
  for (int it = 0; it < iterations; ++it) {
    auto start = std::chrono::steady_clock::now();
    auto out = eco::helm::HelmTemplateText(*chart, opts);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!out.error.ok()) {
      std::fprintf(stderr, "eco_helm_bench: %s\n", out.error.ToString().c_str());
      return 1;
    }
    bytes += out.out.size();
  }
  double first = ms.front();
  std::sort(ms.begin(), ms.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(stderr,
               "eco chart bench: %s x %d: first %.2f ms, median %.2f ms, min %.2f ms (%zu bytes out per render, "
               "peak RSS %ld KiB)\n",
               dir, iterations, first, ms[ms.size() / 2], ms.front(), bytes / iterations, ru.ru_maxrss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--chart") return BenchChart(argv[2], std::atoi(argv[3]));
  if (argc < 3) {
    std::fprintf(stderr, "usage: eco_helm_bench CASES.json ITERATIONS | eco_helm_bench --chart DIR ITERATIONS\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "eco_helm_bench: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  int iterations = std::atoi(argv[2]);
  auto cases = eco::helm::PrepareCases(ss.str());
  if (!cases.ok()) {
    std::fprintf(stderr, "eco_helm_bench: %s\n", cases.status().ToString().c_str());
    return 2;
  }
  size_t bytes = 0;  // keeps the optimiser from dropping renders
  auto start = std::chrono::steady_clock::now();
  long renders = 0;
  for (int it = 0; it < iterations; ++it) {
    for (const auto& c : *cases) {
      bytes += eco::helm::RenderCase(c).text.size();
      ++renders;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(stderr,
               "eco bench: %zu cases x %d iterations = %ld renders in %.3fs (%.0f renders/s, %.1f us/render, "
               "%zu bytes out, peak RSS %ld KiB)\n",
               cases->size(), iterations, renders, secs, renders / secs, secs * 1e6 / renders, bytes, ru.ru_maxrss);
  return 0;
}
