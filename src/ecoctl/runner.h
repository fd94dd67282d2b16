// Executes a plan against an HttpClient, one document at a time, and
// classifies each answer. Knows nothing about terminals or flags.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ecoctl/http_client.h"
#include "ecoctl/plan.h"

namespace eco::ecoctl {

enum class Outcome {
  kOk,        // 2xx (created, updated, unchanged, deleted, accepted, ok)
  kNotFound,  // delete of something already gone: fine unless --strict
  kSkipped,   // not sent (action document under get/delete)
  kFailed,    // error answer, unreadable file, or no answer at all
};

struct DocResult {
  std::string label;
  std::string method;  // of the last request sent for the document
  std::string path;
  int status = 0;       // HTTP status; 0 when there was no answer
  std::string word;     // "created", "updated", "unchanged", "not found", "conflict", ...
  std::string message;  // failure detail: the server's message or the transport error
  Outcome outcome = Outcome::kOk;
  std::string body;  // response body of queries
  bool transport_error = false;
};

struct RunOptions {
  Verb verb = Verb::kApply;
  bool strict = false;                     // delete: 404 is a failure
  bool stop_on_failure = false;            // emcoctl's --stop
  int wait_after_accepted = 0;             // seconds to wait after a 202 (emcoctl's --waitTime)
  std::function<void(int)> sleep_seconds;  // injected for tests
  std::function<void(const DocResult&)> on_result;  // called as each document finishes
};

struct RunSummary {
  int ok = 0, failed = 0, skipped = 0, not_run = 0;
  bool aborted = false;  // stopped early (transport error or --stop)
  std::vector<DocResult> results;
  bool success() const { return failed == 0 && !aborted; }
};

RunSummary RunPlan(const std::vector<PlanStep>& steps, HttpClient& client,
                   const RunOptions& options);

// The server's error text: `message` of a {"code":N,"message":"..."} body,
// else the raw body, trimmed.
std::string ErrorMessage(std::string_view body);

// True when every field of `want` has an equal value in `have`; missing,
// null, "" , {} and [] count as equal, since servers omit empty fields.
bool JsonContains(const nlohmann::json& have, const nlohmann::json& want);

// A short word for an HTTP status given the method ("created" for POST 201).
std::string StatusWord(std::string_view method, int status);

}  // namespace eco::ecoctl
