// Where the client decides what a failure means. Every HTTP status and every
// transport failure becomes one eco::Status here and nowhere else.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::k8s {

// A non-2xx response → Status. `body` is the response body (a Kubernetes
// Status object when the server is an API server); its message, or the start
// of a non-JSON body, goes into the message with the HTTP code:
//   400, 422, 405, other 4xx → kInvalid        401, 403 → kPermissionDenied
//   403 with a NamespaceTerminating cause → kWaiting (the namespace is being
//   deleted: creating in it works once it is gone)
//   404 → kNotFound      409 AlreadyExists → kAlreadyExists, other 409 → kConflict
//   410 (expired resourceVersion / continue token) → kConflict
//   413 → kTooLarge
//   500 "failed to create typed patch/live object ..." → kInvalid (server-side
//   apply refused the object itself, e.g. an undeclared field)
//   408, 429, other 5xx → kUnavailable with retry_after from
//   `retry_after_header` (delay-seconds)       anything else → kInternal
Status StatusFromHttp(long http_code, std::string_view body, std::string_view retry_after_header);

// A libcurl failure (the CURLcode as an int) → Status:
//   refused, reset, timeout, nothing received, send/receive errors, DNS,
//   TLS handshake failure → kUnavailable;
//   the server's certificate not trusted → kPermissionDenied (permanent: the
//   trust configuration is wrong, retrying cannot help);
//   our own certificate/key unusable, malformed URL → kInvalid;
//   anything else → kInternal.
Status StatusFromCurl(int curl_code, std::string_view detail);

// A failure of the direct transport's own network work → Status, in the
// classes of StatusFromCurl: the link failed (resolve, connect, send,
// receive, timeout, TLS handshake) → kUnavailable; the server's certificate
// is not trusted → kPermissionDenied; the answer is not HTTP → kInternal.
enum class LinkFailure { kLink, kUntrustedServer, kMalformedAnswer };
Status StatusFromLink(LinkFailure failure, std::string detail);

// Retry-After as delay-seconds; HTTP-dates and garbage give 0.
std::chrono::milliseconds ParseRetryAfter(std::string_view value);

}  // namespace eco::k8s
