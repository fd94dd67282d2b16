// Rendering a chart as Helm 3 does (pkg/engine, pkg/action install in
// client-only mode): values, built-in objects, one template set for the chart
// and its enabled subcharts, hooks and install order. `helm template`'s
// output text comes from HelmTemplateText. Nothing here touches the disk.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "helm/chart.h"
#include "helm/manifests.h"
#include "helm/value.h"
#include "helm/values.h"

namespace eco::helm {

// Helm v3.21's defaults for `.Capabilities` when not talking to a cluster.
inline constexpr std::string_view kDefaultKubeVersion = "v1.36.0";
inline constexpr std::string_view kHelmVersion = "v3.21.4";

// What `.Capabilities` reports.
struct Capabilities {
  std::string kube_version = std::string(kDefaultKubeVersion);  // "v1.36.0"
  std::string kube_major = "1";
  std::string kube_minor = "36";
  // "group/version" and "group/version/Kind" ("v1", "v1/Pod" for core).
  std::vector<std::string> api_versions;
  std::string helm_version = std::string(kHelmVersion);
};

// Every group/version and group/version/Kind of the Kubernetes client
// scheme Helm is built with, plus apiextensions.k8s.io v1 and v1beta1.
const std::vector<std::string>& DefaultApiVersions();

// Helm's capabilities for `helm template`: `kube_version` as --kube-version
// takes it ("1.29" → v1.29.0; empty = default), the default API versions
// plus `extra_api_versions`. Error: "invalid kube version '<v>': ...".
Result<Capabilities> MakeCapabilities(std::string_view kube_version,
                                      const std::vector<std::string>& extra_api_versions);

// EMCO profile "configresource": the chart file at `path` (its first element
// is the chart's directory name, e.g. "mychart/templates/cm.yaml" or
// "mychart/charts/sub/values.yaml") is replaced by `data`.
struct ChartFileOverride {
  std::string path;
  std::string data;
};
Status ApplyChartFileOverrides(Chart* chart, const std::vector<ChartFileOverride>& overrides);

struct ReleaseOptions {
  std::string name = "release-name";
  std::string namespace_ = "default";
  int revision = 1;
  bool is_upgrade = false;  // .Release.IsUpgrade (and IsInstall = !is_upgrade)
  ValueOptions values;      // the user's values (-f, --set, ...)
  Capabilities capabilities;
  bool skip_schema_validation = false;
  // Wall time for executing all of the chart's templates; past it the render
  // fails (a template looping forever). Zero: no limit, as Helm.
  std::chrono::milliseconds time_limit{0};
};

// The rendered chart before sorting: template name → output, for every
// non-partial template (NOTES.txt files removed), plus the top chart's notes.
struct RenderedFiles {
  std::map<std::string, std::string> files;
  std::string notes;  // <chart>/templates/NOTES.txt as rendered ("" if none)
};

struct CrdFile {
  std::string source;  // "<chart path>/crds/<file>"
  std::string data;
};

struct RenderedRelease {
  std::vector<Manifest> manifests;  // install order
  std::vector<Manifest> hooks;      // kind order
  std::vector<CrdFile> crds;        // top chart first, then subcharts
  std::string notes;
  std::vector<std::string> warnings;  // for stderr (deprecated chart)
};

// Chart checks, values (merge, dependencies, coalesce, schema) and the
// render of every template. On a YAML error while sorting, `files_on_error`
// (if given) receives the raw rendered files, as `helm template --debug` prints them.
Result<RenderedRelease> RenderRelease(const Chart& chart, const ReleaseOptions& opts,
                                      RenderedFiles* files_on_error = nullptr);

// The engine alone: renders every template of `chart` (already processed:
// enabled subcharts only, aliases applied) with the coalesced `values`.
Result<RenderedFiles> RenderTemplates(const Chart& chart, const Value& values, const ReleaseOptions& opts);

// Helm's `--name-template`: a Go template with Sprig, executed with no data.
Result<std::string> RenderNameTemplate(std::string_view text);

// Helm's release name rule (DNS-1123 subdomain-like, at most 53 bytes).
Status ValidateReleaseName(std::string_view name);

// Helm's cleanupParseError: "parse error at (main:1): <last clause>" from a
// template parse error; an empty `filename` omits " in (<file>)" when the
// message has a single clause.
std::string CleanupParseError(const std::string& filename, const std::string& msg);

// `helm template` in full.
struct TemplateOptions {
  ReleaseOptions release;
  std::vector<std::string> show_only;
  bool include_crds = false;
  bool skip_tests = false;
  bool no_hooks = false;
  bool debug = false;
  std::string output_dir;  // non-empty: documents go to files (see TemplateOutput)
};

struct TemplateOutput {
  std::string out;  // what helm prints on stdout
  // --output-dir: file path ("<dir>/<template name>") → its full content, in
  // the order files were first written.
  std::vector<std::pair<std::string, std::string>> written;
  std::vector<std::string> warnings;  // stderr lines before the result
  Status error;                       // printed as "Error: <message>\n" on stderr
};
TemplateOutput HelmTemplateText(const Chart& chart, const TemplateOptions& opts);

}  // namespace eco::helm
