// Builds gzip-compressed tar archives in memory (libarchive), for chart and
// profile uploads in API tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace eco::testing {

struct TarEntry {
  std::string path;     // relative; a trailing '/' makes a directory
  std::string content;  // ignored for directories
};

// A .tgz holding `entries` in order. Aborts the test binary on a libarchive
// failure (it cannot happen with sane input).
std::string TgzOf(const std::vector<TarEntry>& entries);

// A minimal Helm chart for app `app`: top directory `app/` with Chart.yaml,
// values.yaml and templates/. `marker` lands in values.yaml so that two
// charts built with different markers differ.
std::string ChartTgz(const std::string& app, const std::string& marker = "v1");

// A chart carrying `blob_bytes` of incompressible data in files/blob.bin, so
// that the .tgz is at least that large (body-limit tests).
std::string ChartTgzWithBlob(const std::string& app, size_t blob_bytes);

// A profile: manifest.yaml + override_values.yaml at the archive root.
std::string ProfileTgz(const std::string& marker = "p1");

// Bytes that are not an archive, and a gzip stream cut short.
std::string RandomBytes(size_t n, unsigned seed = 7);
std::string TruncatedTgz();
// Valid gzip whose payload is not a tar archive.
std::string GzipOfText(const std::string& text);

}  // namespace eco::testing
