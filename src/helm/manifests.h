// What Helm does with rendered templates before printing them (pkg/releaseutil
// and pkg/action): split each output into YAML documents, tell hooks from
// manifests, sort by kind in install order, assemble the release text, and
// pick documents for --show-only.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::helm {

// One YAML document of a rendered template.
struct Manifest {
  std::string source;   // template name, e.g. "mychart/templates/svc.yaml"
  std::string content;  // the document, trimmed
  std::string api_version;
  std::string kind;
  std::string name;                      // metadata.name
  std::vector<std::string> hook_events;  // lower-cased; empty for a manifest
  bool is_hook = false;
  bool IsTestHook() const;
};

struct SortedManifests {
  std::vector<Manifest> manifests;  // install order
  std::vector<Manifest> hooks;      // same kind order
};

// Helm's SplitManifests: splits on `(?:^|\s*\n)---\s*`, trims each piece
// and drops empty ones.
std::vector<std::string> SplitManifests(std::string_view text);

// Helm's install order of kinds; unknown kinds come after every known one,
// by name. True when a document of kind `a` goes before one of kind `b`.
bool KindLess(std::string_view a, std::string_view b);

// Helm's SortManifests over rendered outputs keyed by template name: files in
// name order, partials and blank outputs skipped, each document's head
// parsed ("YAML parse error on <name>: ..." when it is not a mapping or its
// fields have the wrong type), hooks with an unknown event dropped.
Result<SortedManifests> SortManifests(const std::map<std::string, std::string>& files);

// `---\n# Source: <source>\n<content>\n`, the document format of Helm's output.
std::string FormatDocument(std::string_view source, std::string_view content);
// FormatDocument appended to `out`.
void AppendDocument(std::string* out, std::string_view source, std::string_view content);

// Go's path/filepath.Match on '/'-separated names; a malformed pattern
// matches nothing.
bool GoPathMatch(std::string_view pattern, std::string_view name);

// helm template --show-only over the assembled output text: the documents
// whose `# Source: <chart>/<path>` has a <path> matching each pattern, in
// pattern order, each printed as "---\n<doc>\n".
Result<std::string> ShowOnly(std::string_view text, const std::vector<std::string>& patterns);

}  // namespace eco::helm
