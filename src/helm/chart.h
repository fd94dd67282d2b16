// Helm charts loaded into memory, from a .tgz held in memory or from a
// directory, with Helm v3's rules (pkg/chart/loader): which file is what,
// .helmignore, subcharts in charts/ (directories and .tgz), Chart.yaml
// validation. Loading never writes to disk and is bounded by LoadLimits.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace eco::helm {

// A file of a chart; `name` is relative to the chart root, '/'-separated
// (e.g. "templates/deployment.yaml"). A leading UTF-8 BOM is stripped.
struct ChartFile {
  std::string name;
  std::string data;
};

struct Maintainer {
  std::string name;
  std::string email;
  std::string url;
};

// One entry of `import-values`: either a string (`- data`, meaning the
// child's `exports.data`) or a map `{child: ..., parent: ...}`.
struct ImportValue {
  bool is_string = false;
  std::string value;   // string form
  std::string child;   // map form
  std::string parent;  // map form
};

struct Dependency {
  std::string name;
  std::string version;  // a semver range
  std::string repository;
  std::string condition;  // comma-separated value paths; first one that resolves wins
  std::vector<std::string> tags;
  bool enabled = false;  // as read; the renderer recomputes it
  std::vector<ImportValue> import_values;
  std::string alias;
};

// Chart.yaml (plus requirements.yaml's fields, which Helm merges in). String
// fields hold what Go would: a YAML number or bool becomes its Go spelling
// (`version: 1.10` is "1.1", as in Helm).
struct ChartMetadata {
  std::string api_version;  // "v1" or "v2"; "v1" when Chart.yaml has none
  std::string name;
  std::string home;
  std::vector<std::string> sources;
  std::string version;
  std::string description;
  std::vector<std::string> keywords;
  std::vector<Maintainer> maintainers;
  std::string icon;
  std::string app_version;
  bool deprecated = false;
  std::map<std::string, std::string> annotations;
  std::string kube_version;
  std::vector<Dependency> dependencies;
  std::string type;  // "", "application" or "library"
};

struct Chart {
  ChartMetadata metadata;
  std::string chart_yaml;                         // raw Chart.yaml, for `.Chart` maps
  std::string values_yaml;                        // raw values.yaml ("" if absent)
  std::optional<std::string> values_schema_json;  // raw values.schema.json
  // Everything under templates/ (partials `_*.tpl` and NOTES.txt included),
  // in Helm's load order.
  std::vector<ChartFile> templates;
  // What `.Files` sees: every other file not excluded by .helmignore,
  // including crds/ and, for apiVersion v1, requirements.yaml/.lock.
  // Not included: Chart.yaml, values.yaml, values.schema.json, Chart.lock,
  // subcharts (except charts/*.prov).
  std::vector<ChartFile> files;
  // Subcharts from charts/ (directories and .tgz), sorted by their entry
  // name in charts/. Entries starting with '_' or '.' are skipped, as Helm does.
  std::vector<Chart> subcharts;
  // Where the chart came from, for messages: "" for the top chart, else
  // e.g. "charts/mysql" or "charts/mysql-1.2.3.tgz" relative to the parent.
  std::string origin;

  const std::string& name() const { return metadata.name; }
  bool IsLibrary() const { return metadata.type == "library"; }
  // The CRD files: crds/** ending in .yaml/.yml/.json (any case), as Helm's
  // Chart.CRDObjects. They are also in `files`.
  std::vector<const ChartFile*> CrdFiles() const;
};

// Every limit applies to one whole load: a subchart (directory or a .tgz
// nested in a .tgz) draws on the same budget as its parent.
struct LoadLimits {
  size_t max_archive_bytes = 100u << 20;  // compressed size of the top .tgz; a nested
                                          // .tgz is a file, bounded by max_file_bytes
  size_t max_total_bytes = 100u << 20;    // all file contents (Helm: 100 MiB)
  size_t max_file_bytes = 5u << 20;       // one file (Helm: 5 MiB)
  size_t max_entries = 20000;             // files and directories, all charts
  int max_depth = 16;                     // subchart nesting below the top chart
};

// Loads a gzip-compressed tar held in memory. The archive's first path
// element is the chart directory and is stripped; every entry must share
// it. Rejected (Invalid, naming the entry): absolute paths, `..`
// components, drive letters, symlinks, hard links, devices, fifos,
// duplicates, and anything over a limit. .helmignore is not applied to
// archives, as in Helm (it was applied when the chart was packaged).
Result<Chart> LoadChartArchive(const std::string& tgz_bytes, const LoadLimits& limits = {});

// libarchive converts entry names with iconv, and glibc reads iconv's tables
// from files at the first conversion in the process. Call at start so that
// loading a chart later touches no file. Thread-safe; later calls do nothing.
void PreloadArchiveCharsets();

// Every regular file of a gzip-compressed tar held in memory, with its
// whole relative path (no top directory stripped: EMCO profile archives
// keep manifest.yaml at their root), under the same checks and limits.
Result<std::vector<ChartFile>> ReadTgzFiles(const std::string& tgz_bytes, const LoadLimits& limits = {});

// Loads a chart directory: the chart's .helmignore (plus Helm's default
// `templates/.?*`) is applied to the whole tree including charts/; files
// are read in Go's filepath.Walk order. Symbolic links are followed, as
// Helm does (loops are an error); other irregular files are an error
// unless ignored.
Result<Chart> LoadChartDirectory(const std::string& path, const LoadLimits& limits = {});

}  // namespace eco::helm
