// The HTTP layer: an interface the runner talks to (so tests can fake the
// server) and its implementation on cpp-httplib.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "ecoctl/plan.h"

namespace eco::ecoctl {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string content_type;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Sends one request with its file parts already read. A non-ok Status
  // means no HTTP answer at all (connection refused, timeout, TLS).
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

struct Endpoint {
  std::string scheme;     // "http" or "https"
  std::string host_port;  // "127.0.0.1:9015"
  std::string prefix;     // path in front of /v2 (behind an ingress), no trailing '/'

  std::string ToString() const { return scheme + "://" + host_port + prefix; }
};

// Accepts "http://h:p", "https://h:p/prefix", or "h:p" (http assumed).
Result<Endpoint> ParseEndpoint(std::string_view url);

struct ClientConfig {
  Endpoint endpoint;
  double timeout_seconds = 30;
  std::string token;      // sent as "Authorization: Bearer <token>" when set
  bool insecure = false;  // https: skip server certificate verification
  std::string ca_file;    // https: trust these CAs instead of the system's
};

// A client on cpp-httplib; TLS is available when the library was built with
// OpenSSL (Debian's is).
std::unique_ptr<HttpClient> NewHttplibClient(const ClientConfig& config);

}  // namespace eco::ecoctl
