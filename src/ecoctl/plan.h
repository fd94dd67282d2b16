// Turns documents into HTTP requests. Pure: no I/O, so every URL and body
// ecoctl would send can be checked without a server.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ecoctl/document.h"

namespace eco::ecoctl {

enum class Verb { kApply, kGet, kDelete };
std::string_view VerbName(Verb v);

struct FormPart {
  std::string name;          // form field name: "metadata", "file" or "files"
  std::string content;       // inline value; for file parts filled in just before sending
  std::string file_path;     // non-empty: content comes from this file
  std::string filename;      // Content-Disposition filename; empty for plain values
  std::string content_type;  // empty: none sent
};

struct HttpRequest {
  std::string method;
  std::string path;          // "/v2/...", with any query string
  std::string accept;        // empty: no Accept header
  std::string content_type;  // of `body`
  std::string body;
  std::vector<FormPart> parts;  // non-empty: multipart/form-data instead of `body`

  bool multipart() const { return !parts.empty(); }
};

struct PlanStep {
  std::string label;  // document label for output ("#3")
  bool skip = false;
  std::string skip_reason;
  HttpRequest request;
  // Apply only: the PUT that replaces the resource when POST answers
  // "already exists", and what is compared to tell "unchanged".
  std::optional<HttpRequest> replace;
  std::string resource_path;  // where the resource lives; "" when it cannot be addressed
  nlohmann::json body;        // the document body (apply comparison)
  std::string file;           // the `file:` upload (apply comparison)
  bool has_files = false;     // `files:` uploads: never reported "unchanged"
  bool query = false;         // a read (get, status): the response body is shown
};

// Path of the resource a document describes: /v2/<anchor>/<name>, with
// <clusterLabel> for labels and <name>/<compositeAppVersion> for composite
// apps. Fails (explaining why) for action documents and nameless bodies.
Result<std::string> ResourcePath(const Document& doc);

// Plans `verb` over `docs`: document order for apply/get, reverse for
// delete. Documents that cannot be planned are all reported, one per line.
Result<std::vector<PlanStep>> Plan(const std::vector<Document>& docs, Verb verb,
                                   bool label_with_source = false);

// Percent-encodes everything outside RFC 3986's unreserved set.
std::string EscapePathSegment(std::string_view s);

}  // namespace eco::ecoctl
