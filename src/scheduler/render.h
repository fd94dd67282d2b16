// Rendering one app of a composite app for an AppContext: the app's chart,
// its app profile (override values and files replacing chart files, EMCO's
// manifest.yaml) and the DIG's override values, through eco's Helm engine,
// into ordered Kubernetes objects. Everything stays in memory.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/clock.h"
#include "common/status.h"

namespace eco::scheduler {

struct RenderInput {
  std::string app;
  std::string chart_tgz;    // as uploaded
  std::string profile_tgz;  // "" = no profile
  // DIG overrideValues for the app, applied as Helm --set key=value.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string release;     // Helm release name (DIG spec.version)
  std::string namespace_;  // .Release.Namespace
  // Added to every object and to the pod templates of workloads, so rsync
  // and the status module find what they deployed.
  std::map<std::string, std::string> labels;
  // Wall time for executing the chart's templates (zero: none).
  std::chrono::milliseconds time_limit{0};
  // Times the render for the metrics.
  const Clock* clock = &RealClock();
};

// Main resources in Helm's install order, CRDs (crds/ and CRD kinds) apart,
// hooks by weight then name (test-only hooks dropped). Errors name the app.
Result<appcontext::ResourceSet> RenderApp(const RenderInput& in);

// Adds `labels` to the object's metadata and, for workloads, to its pod
// template (selectors are left alone).
void AddLabels(nlohmann::json& object, const std::map<std::string, std::string>& labels);

// A YAML manifest document as the JSON object Kubernetes would decode
// (YAML 1.1 scalars as sigs.k8s.io/yaml reads them; integers stay integers).
Result<nlohmann::json> ManifestToJson(const std::string& yaml);

}  // namespace eco::scheduler
