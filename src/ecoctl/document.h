// EMCO-style resource documents, as read by emcoctl:
//
//   version: emco/v2
//   resourceContext:
//     anchor: projects/p1/composite-apps      # relative to /v2/
//   metadata: {name: ca, description: ...}
//   spec: {compositeAppVersion: v1}
//   file: charts/web.tgz                        # optional: multipart upload
//
// Parsing is pure apart from looking up `file:` paths on disk.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::ecoctl {

struct Document {
  std::string source;              // file it came from ("-" = stdin, "" = command line)
  int index = 0;                   // 1-based position in that file
  std::string anchor;              // relative to /v2/, no leading '/', may carry "?query"
  nlohmann::json body;             // the document minus version/resourceContext/file/files
  std::string file;                // resolved `file:` path; empty if none
  std::vector<std::string> files;  // resolved `files:` paths (each sent as form file "files")
  std::string action;              // lifecycle verb the anchor ends in; empty if none
  bool raw = false;                // anchor given on the command line: it names the resource itself

  bool is_action() const { return !action.empty(); }
  // "#3", or "name.yaml#3" when `with_source`.
  std::string Label(bool with_source = false) const;
};

struct ParseOptions {
  std::string source;         // used in messages and Document::source
  std::string base_dir;       // directory of the YAML file: second place `file:` is looked up
  std::string cwd;            // first place `file:` is looked up; empty = process cwd
  bool require_files = true;  // apply needs the files; get/delete do not
};

// Parses a multi-document YAML text. Empty documents are skipped (but still
// counted for the index). Every bad document is reported, one per line.
Result<std::vector<Document>> ParseDocuments(std::string_view yaml_text, const ParseOptions& opts);

struct LoadOptions {
  std::vector<std::string> files;         // "-" reads `stdin_text`
  std::vector<std::string> values_files;  // merged in order; non-empty → render templates
  std::string stdin_text;
  std::string cwd;  // empty = process cwd
  bool require_files = true;
};

// Reads every file, renders it over the values (if any), parses it.
Result<std::vector<Document>> LoadDocuments(const LoadOptions& opts);

// Lifecycle verb `anchor` ends in (approve, instantiate, terminate, stop,
// update, rollback, migrate, status, apply), or "" if none.
std::string ActionVerb(std::string_view anchor);

// Strips a leading "/" or "/v2/", rejects empty and ".." segments.
Result<std::string> NormalizeAnchor(std::string_view anchor);

// A document for an anchor given on the command line (`ecoctl get projects/p1`).
Result<Document> CommandLineDocument(std::string_view anchor);

Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace eco::ecoctl
