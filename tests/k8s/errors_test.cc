#include "k8s/errors.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace eco::k8s {
namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

TEST(StatusFromHttp, Table) {
  struct Case {
    long http;
    std::string body;
    std::string retry_after;
    Code code;
    std::string message_part;
    std::chrono::milliseconds retry{0};
  };
  std::vector<Case> cases = {
      {400, StatusBody(400, "BadRequest", "bad yaml"), "", Code::kInvalid,
       "HTTP 400 BadRequest: bad yaml"},
      {422, StatusBody(422, "Invalid", "spec.replicas: Invalid value: -1"), "", Code::kInvalid,
       "HTTP 422 Invalid: spec.replicas: Invalid value: -1"},
      {401, StatusBody(401, "Unauthorized", "Unauthorized"), "", Code::kPermissionDenied,
       "HTTP 401"},
      {403, StatusBody(403, "Forbidden", "pods is forbidden"), "", Code::kPermissionDenied,
       "pods is forbidden"},
      {404, StatusBody(404, "NotFound", "deployments.apps \"web\" not found"), "", Code::kNotFound,
       "\"web\" not found"},
      {409, StatusBody(409, "AlreadyExists", "namespaces \"a\" already exists"), "",
       Code::kAlreadyExists, "already exists"},
      {409, StatusBody(409, "Conflict", "the object has been modified"), "", Code::kConflict,
       "HTTP 409 Conflict: the object has been modified"},
      {410, StatusBody(410, "Expired", "too old resource version"), "", Code::kConflict,
       "HTTP 410"},
      {413, StatusBody(413, "RequestEntityTooLarge", "too large"), "", Code::kTooLarge,
       "too large"},
      {429, StatusBody(429, "TooManyRequests", "slow down"), "7", Code::kUnavailable, "slow down",
       std::chrono::seconds(7)},
      {500, StatusBody(500, "InternalError", "etcd timeout"), "", Code::kUnavailable,
       "HTTP 500 InternalError: etcd timeout"},
      {503, "<html>Service Unavailable</html>\n", " 2 ", Code::kUnavailable,
       "HTTP 503: <html>Service Unavailable</html>", std::chrono::seconds(2)},
      {503, "", "Wed, 21 Oct 2015 07:28:00 GMT", Code::kUnavailable, "HTTP 503",
       std::chrono::milliseconds(0)},
      {405, StatusBody(405, "MethodNotAllowed", "no"), "", Code::kInvalid, "HTTP 405"},
      {408, StatusBody(408, "Timeout", "request timed out"), "", Code::kUnavailable, "HTTP 408"},
      // Kubernetes 1.26's answer to a server-side apply with an undeclared
      // field: a 500 about the object, which waiting never changes.
      {500,
       R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"failed to create typed patch object (capture/typo; apps/v1, Kind=Deployment): .spec.replica: field not declared in schema","code":500})",
       "", Code::kInvalid, ".spec.replica: field not declared in schema"},
      // Creating in a namespace being deleted: the cluster answered; it passes.
      {403,
       R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"c2\" is forbidden: unable to create new content in namespace capture because it is being terminated","reason":"Forbidden","details":{"name":"c2","kind":"configmaps","causes":[{"reason":"NamespaceTerminating","message":"namespace capture is being terminated","field":"metadata.namespace"}]},"code":403})",
       "", Code::kWaiting, "because it is being terminated"},
      {302, "", "", Code::kInternal, "HTTP 302"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.http) + " " + c.message_part);
    Status s = StatusFromHttp(c.http, c.body, c.retry_after);
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find(c.message_part), std::string::npos) << s.ToString();
    EXPECT_EQ(s.retry_after(), c.retry);
    EXPECT_EQ(s.retryable(), c.code == Code::kUnavailable);
  }
}

TEST(StatusFromCurl, RetryableOrPermanent) {
  struct Case {
    CURLcode curl;
    Code code;
  };
  std::vector<Case> cases = {
      {CURLE_COULDNT_CONNECT, Code::kUnavailable},
      {CURLE_OPERATION_TIMEDOUT, Code::kUnavailable},
      {CURLE_GOT_NOTHING, Code::kUnavailable},
      {CURLE_RECV_ERROR, Code::kUnavailable},
      {CURLE_SEND_ERROR, Code::kUnavailable},
      {CURLE_COULDNT_RESOLVE_HOST, Code::kUnavailable},
      {CURLE_SSL_CONNECT_ERROR, Code::kUnavailable},
      {CURLE_PEER_FAILED_VERIFICATION, Code::kPermissionDenied},
      {CURLE_SSL_CERTPROBLEM, Code::kInvalid},
      {CURLE_URL_MALFORMAT, Code::kInvalid},
      {CURLE_OUT_OF_MEMORY, Code::kInternal},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(curl_easy_strerror(c.curl));
    Status s = StatusFromCurl(c.curl, "GET /api");
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find("GET /api"), std::string::npos);
  }
}

TEST(StatusFromLink, ClassesMatchTheCurlTable) {
  Status link = StatusFromLink(LinkFailure::kLink, "connect to 127.0.0.1:1: refused");
  EXPECT_EQ(link.code(), Code::kUnavailable);
  EXPECT_TRUE(link.retryable());
  EXPECT_EQ(link.code(), StatusFromCurl(CURLE_COULDNT_CONNECT, "").code());
  Status untrusted = StatusFromLink(LinkFailure::kUntrustedServer, "not trusted");
  EXPECT_EQ(untrusted.code(), Code::kPermissionDenied);
  EXPECT_FALSE(untrusted.retryable());
  EXPECT_EQ(untrusted.code(), StatusFromCurl(CURLE_PEER_FAILED_VERIFICATION, "").code());
  Status garbled = StatusFromLink(LinkFailure::kMalformedAnswer, "bad status line");
  EXPECT_EQ(garbled.code(), Code::kInternal);
  EXPECT_NE(garbled.message().find("malformed HTTP answer: bad status line"), std::string::npos);
}

}  // namespace
}  // namespace eco::k8s
