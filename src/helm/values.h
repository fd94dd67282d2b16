// Chart values as Helm computes them: user values from files and --set
// flags (pkg/cli/values, pkg/strvals), dependency processing (conditions,
// tags, aliases, import-values) and coalescing with the charts' defaults
// (pkg/chartutil), with Helm's typing of numbers.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "helm/chart.h"
#include "helm/value.h"

namespace eco::helm {

// YAML text → Value as Helm reads values (sigs.k8s.io/yaml: YAML 1.1 via
// yaml.v2, then JSON, so every number is a float64). An empty document is an
// empty map; a document that is not a map is an error naming `source`, in
// the wording of `-f` files: "failed to parse <source>: error ...".
Result<Value> ParseYamlValues(std::string_view yaml, std::string_view source);

// The user's values, lowest precedence first within each list.
struct ValueOptions {
  std::vector<std::pair<std::string, std::string>> value_files;  // (name, contents) of -f
  std::vector<std::string> set_json;     // --set-json
  std::vector<std::string> set;          // --set
  std::vector<std::string> set_string;   // --set-string
  std::vector<std::string> set_file;     // --set-file key=path
  std::vector<std::string> set_literal;  // --set-literal
  // Reads a --set-file path; the caller decides where files come from.
  std::function<Result<std::string>(const std::string& path)> read_file;
};

// Helm's MergeValues: -f files, then --set-json, --set, --set-string,
// --set-file, --set-literal; errors read as Helm's.
Result<Value> MergeValues(const ValueOptions& opts);

// One line of a --set flag parsed into `dest` (a map, or made one) as
// pkg/strvals does; the error is strvals' own message, without the
// "failed parsing --set data: " that MergeValues adds.
enum class SetKind { kSet, kSetString, kSetJson, kSetFile, kSetLiteral };
Status ParseSetInto(std::string_view line, SetKind kind, Value* dest,
                    const std::function<Result<std::string>(const std::string& path)>& read_file = {});

// Helm's ProcessDependenciesWithMerge: decides which subcharts are enabled
// (condition, tags; read from `values` coalesced with the defaults), renames
// aliased ones, removes the disabled ones from `chart`, and applies
// import-values. As in Helm, imported values become part of the importing
// chart's defaults (its values_yaml is rewritten; the parent's own values
// win over imported ones), so `values` itself is left as it is.
// Chart.yaml entries match charts/ by name and semver range (Masterminds).
Status ProcessDependencies(Chart* chart, Value* values);

// Helm's CoalesceValues: the chart's (and subcharts') defaults under the
// user's values, subchart values scoped under their names, `global` passed
// down, a null deleting a key.
Result<Value> CoalesceValues(const Chart& chart, const Value& user_values);

// values.schema.json of the chart and of each subchart, against the values
// that chart sees. The error lists every violation as Helm does:
// "values don't meet the specifications of the schema(s) in the following
// chart(s):\n<chart>:\n- at '<pointer>': <message>\n".
Status ValidateValuesSchema(const Chart& chart, const Value& coalesced_values);

// The chart's own values.yaml as a map (empty when absent).
Result<Value> ChartDefaultValues(const Chart& chart);

// Helm's chartutil.MergeValues: like CoalesceValues but a null never
// deletes a key (nulls are kept).
Result<Value> MergeChartValues(const Chart& chart, const Value& user_values);

// Masterminds semver's constraint check as Helm's IsCompatibleRange uses it
// (false when either side does not parse).
bool SemverRangeMatches(std::string_view constraint, std::string_view version);

}  // namespace eco::helm
