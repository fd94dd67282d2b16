#include "k8s/errors.h"

#include <curl/curl.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <string>

namespace eco::k8s {

std::chrono::milliseconds ParseRetryAfter(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  long long seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::chrono::milliseconds(0);
  }
  // A day is plenty; larger values are most likely wrong.
  if (seconds > 86400) seconds = 86400;
  return std::chrono::seconds(seconds);
}

namespace {

// A Status whose details name a cause with this reason.
bool HasCause(const nlohmann::json& status, std::string_view reason) {
  auto d = status.find("details");
  if (d == status.end() || !d->is_object()) return false;
  auto causes = d->find("causes");
  if (causes == d->end() || !causes->is_array()) return false;
  for (const auto& c : *causes) {
    if (c.is_object() && c.value("reason", "") == reason) return true;
  }
  return false;
}

// 500s that name the object, not the server: server-side apply could not
// type the object against its schema (an undeclared field, a wrong type).
// Kubernetes up to 1.26 answers those 500; waiting never changes them.
bool InvalidObject(std::string_view message) {
  for (std::string_view p : {"failed to create typed patch object", "failed to create typed live object"}) {
    if (message.rfind(p, 0) == 0) return true;
  }
  return false;
}

}  // namespace

Status StatusFromHttp(long http_code, std::string_view body, std::string_view retry_after_header) {
  std::string reason;
  std::string detail;
  bool ns_terminating = false;
  auto doc = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.value("kind", "") == "Status") {
    if (auto r = doc.find("reason"); r != doc.end() && r->is_string())
      reason = r->get<std::string>();
    if (auto m = doc.find("message"); m != doc.end() && m->is_string())
      detail = m->get<std::string>();
    ns_terminating = HasCause(doc, "NamespaceTerminating");
  } else {
    constexpr size_t kMaxBody = 200;  // enough to recognise an HTML error page
    detail.assign(body.substr(0, kMaxBody));
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  }
  std::string message = "HTTP " + std::to_string(http_code);
  if (!reason.empty()) message += " " + reason;
  if (!detail.empty()) message += ": " + detail;

  Code code;
  if (http_code == 403 && ns_terminating) {
    code = Code::kWaiting;  // the namespace goes away, then the object can be made
  } else if (http_code == 401 || http_code == 403) {
    code = Code::kPermissionDenied;
  } else if (http_code == 404) {
    code = Code::kNotFound;
  } else if (http_code == 409) {
    code = reason == "AlreadyExists" ? Code::kAlreadyExists : Code::kConflict;
  } else if (http_code == 410) {
    code = Code::kConflict;
  } else if (http_code == 413) {
    code = Code::kTooLarge;
  } else if (http_code == 500 && InvalidObject(detail)) {
    code = Code::kInvalid;
  } else if (http_code == 408 || http_code == 429 || (http_code >= 500 && http_code <= 599)) {
    code = Code::kUnavailable;
  } else if (http_code >= 400 && http_code <= 499) {
    code = Code::kInvalid;
  } else {
    code = Code::kInternal;
  }
  Status s(code, std::move(message));
  if (code == Code::kUnavailable) s.set_retry_after(ParseRetryAfter(retry_after_header));
  return s;
}

Status StatusFromCurl(int curl_code, std::string_view detail) {
  auto cc = static_cast<CURLcode>(curl_code);
  std::string message = curl_easy_strerror(cc);
  if (!detail.empty()) {
    message += ": ";
    message += detail;
  }
  switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_AGAIN:
      return Unavailable(std::move(message));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return PermissionDenied(std::move(message));
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Invalid(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

Status StatusFromLink(LinkFailure failure, std::string detail) {
  switch (failure) {
    case LinkFailure::kLink: return Unavailable(std::move(detail));
    case LinkFailure::kUntrustedServer: return PermissionDenied(std::move(detail));
    case LinkFailure::kMalformedAnswer: return Internal("malformed HTTP answer: " + detail);
  }
  return Internal(std::move(detail));
}

}  // namespace eco::k8s
