#include "ecoctl/runner.h"

#include <algorithm>
#include <cctype>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

bool Is2xx(int status) { return status >= 200 && status <= 299; }

bool IsEmptyish(const json& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_object() && v.empty()) || (v.is_array() && v.empty());
}

bool ContainsIgnoreCase(std::string_view hay, std::string_view needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

// Reads the file parts so the client sends bytes, not paths.
Status LoadParts(HttpRequest& req) {
  for (auto& p : req.parts) {
    if (p.file_path.empty()) continue;
    ECO_ASSIGN_OR_RETURN(auto bytes, ReadFileBytes(p.file_path));
    p.content = std::move(bytes);
  }
  return Status::Ok();
}

DocResult FromResponse(const PlanStep& step, const HttpRequest& req, const HttpResponse& resp) {
  DocResult r;
  r.label = step.label;
  r.method = req.method;
  r.path = req.path;
  r.status = resp.status;
  r.word = StatusWord(req.method, resp.status);
  r.outcome = Is2xx(resp.status) ? Outcome::kOk : Outcome::kFailed;
  if (!Is2xx(resp.status)) r.message = ErrorMessage(resp.body);
  return r;
}

class StepRunner {
 public:
  StepRunner(HttpClient& client, const RunOptions& options) : client_(client), options_(options) {}

  DocResult RunStep(const PlanStep& step) {
    if (step.skip) {
      DocResult r;
      r.label = step.label;
      r.method = "-";
      r.path = step.request.path;
      r.word = "skipped";
      r.message = step.skip_reason;
      r.outcome = Outcome::kSkipped;
      return r;
    }
    HttpRequest req = step.request;
    if (Status s = LoadParts(req); !s.ok()) return LocalFailure(step, req, s);
    auto resp = client_.Send(req);
    if (!resp.ok()) return TransportFailure(step, req, resp.status());

    if (options_.verb == Verb::kApply && resp->status == 409 && step.replace &&
        ContainsIgnoreCase(ErrorMessage(resp->body), "already exists")) {
      return Reapply(step);
    }
    DocResult r = FromResponse(step, req, *resp);
    if (options_.verb == Verb::kDelete && resp->status == 404) {
      r.word = "not found";
      r.outcome = options_.strict ? Outcome::kFailed : Outcome::kNotFound;
      if (!options_.strict) r.message.clear();
    }
    if (step.query && Is2xx(resp->status)) r.body = resp->body;
    if (resp->status == 202 && options_.wait_after_accepted > 0 && options_.sleep_seconds) {
      options_.sleep_seconds(options_.wait_after_accepted);
    }
    return r;
  }

 private:
  // The resource exists: leave it alone if it already matches, else PUT.
  DocResult Reapply(const PlanStep& step) {
    HttpRequest get;
    get.method = "GET";
    get.path = step.resource_path;
    get.accept = "application/json";
    auto current = client_.Send(get);
    if (!current.ok()) return TransportFailure(step, get, current.status());
    if (current->status == 200 && Matches(step, *current)) {
      DocResult r = FromResponse(step, get, *current);
      r.word = "unchanged";
      return r;
    }
    HttpRequest put = *step.replace;
    if (Status s = LoadParts(put); !s.ok()) return LocalFailure(step, put, s);
    auto resp = client_.Send(put);
    if (!resp.ok()) return TransportFailure(step, put, resp.status());
    DocResult r = FromResponse(step, put, *resp);
    if (Is2xx(resp->status)) r.word = "updated";
    return r;
  }

  bool Matches(const PlanStep& step, const HttpResponse& current) {
    if (step.has_files) return false;
    json have = json::parse(current.body, nullptr, /*allow_exceptions=*/false);
    if (have.is_discarded() || !JsonContains(have, step.body)) return false;
    if (step.file.empty()) return true;
    // Compare the uploaded bytes too (EMCO serves them for Accept: octet-stream).
    auto want = ReadFileBytes(step.file);
    if (!want.ok()) return false;
    HttpRequest get;
    get.method = "GET";
    get.path = step.resource_path;
    get.accept = "application/octet-stream";
    auto bytes = client_.Send(get);
    return bytes.ok() && bytes->status == 200 && bytes->body == *want;
  }

  DocResult LocalFailure(const PlanStep& step, const HttpRequest& req, const Status& s) {
    DocResult r;
    r.label = step.label;
    r.method = req.method;
    r.path = req.path;
    r.word = "error";
    r.message = s.message();
    r.outcome = Outcome::kFailed;
    return r;
  }

  DocResult TransportFailure(const PlanStep& step, const HttpRequest& req, const Status& s) {
    DocResult r = LocalFailure(step, req, s);
    r.transport_error = true;
    return r;
  }

  HttpClient& client_;
  const RunOptions& options_;
};

}  // namespace

std::string StatusWord(std::string_view method, int status) {
  if (Is2xx(status)) {
    if (status == 202) return "accepted";
    if (method == "POST" && status == 201) return "created";
    if (method == "PUT") return "updated";
    if (method == "DELETE") return "deleted";
    return "ok";
  }
  switch (status) {
    case 300:
      return "multiple choices";
    case 400:
      return "bad request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 406:
      return "not acceptable";
    case 409:
      return "conflict";
    case 413:
      return "too large";
    case 415:
      return "unsupported media type";
    case 422:
      return "unprocessable entity";
    case 500:
      return "internal server error";
    case 501:
      return "not implemented";
    case 502:
      return "bad gateway";
    case 503:
      return "unavailable";
    case 504:
      return "gateway timeout";
    default:
      return "error";
  }
}

std::string ErrorMessage(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto it = j.find("message");
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  std::string_view s = body;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  constexpr size_t kMax = 1000;
  if (s.size() > kMax) return std::string(s.substr(0, kMax)) + "...";
  return std::string(s);
}

bool JsonContains(const json& have, const json& want) {
  if (IsEmptyish(want)) return IsEmptyish(have);
  if (want.is_object()) {
    if (!have.is_object()) return false;
    for (const auto& [k, v] : want.items()) {
      auto it = have.find(k);
      if (!JsonContains(it == have.end() ? json() : *it, v)) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!JsonContains(have[i], want[i])) return false;
    }
    return true;
  }
  return have == want;
}

RunSummary RunPlan(const std::vector<PlanStep>& steps, HttpClient& client,
                   const RunOptions& options) {
  RunSummary sum;
  StepRunner runner(client, options);
  for (size_t i = 0; i < steps.size(); ++i) {
    DocResult r = runner.RunStep(steps[i]);
    switch (r.outcome) {
      case Outcome::kOk:
      case Outcome::kNotFound:
        ++sum.ok;
        break;
      case Outcome::kSkipped:
        ++sum.skipped;
        break;
      case Outcome::kFailed:
        ++sum.failed;
        break;
    }
    if (options.on_result) options.on_result(r);
    const bool stop =
        r.transport_error || (r.outcome == Outcome::kFailed && options.stop_on_failure);
    sum.results.push_back(std::move(r));
    if (stop) {
      // After a refused connection every later call would fail the same way.
      sum.aborted = true;
      sum.not_run = static_cast<int>(steps.size() - i - 1);
      break;
    }
  }
  return sum;
}

}  // namespace eco::ecoctl
