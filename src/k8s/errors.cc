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

Status StatusFromHttp(long http_code, std::string_view body, std::string_view retry_after_header) {
  std::string reason;
  std::string detail;
  auto doc = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.value("kind", "") == "Status") {
    if (auto r = doc.find("reason"); r != doc.end() && r->is_string())
      reason = r->get<std::string>();
    if (auto m = doc.find("message"); m != doc.end() && m->is_string())
      detail = m->get<std::string>();
  } else {
    constexpr size_t kMaxBody = 200;  // enough to recognise an HTML error page
    detail.assign(body.substr(0, kMaxBody));
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  }
  std::string message = "HTTP " + std::to_string(http_code);
  if (!reason.empty()) message += " " + reason;
  if (!detail.empty()) message += ": " + detail;

  Code code;
  if (http_code == 401 || http_code == 403) {
    code = Code::kPermissionDenied;
  } else if (http_code == 404) {
    code = Code::kNotFound;
  } else if (http_code == 409) {
    code = reason == "AlreadyExists" ? Code::kAlreadyExists : Code::kConflict;
  } else if (http_code == 410) {
    code = Code::kConflict;
  } else if (http_code == 413) {
    code = Code::kTooLarge;
  } else if (http_code == 429 || (http_code >= 500 && http_code <= 599)) {
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
