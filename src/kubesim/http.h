// The contract between kube-sim's HTTP transport (server.cc, Boost.Beast) and
// the simulated clusters (sim.cc). The transport knows nothing of Kubernetes;
// the simulator knows nothing of sockets.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace eco::kubesim {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // percent-decoded path, no query: "/clusters/c1/api/v1/namespaces"
  // Decoded query parameters; a repeated key keeps the last value.
  std::map<std::string, std::string> query;
  // Header names are lower-case.
  std::map<std::string, std::string> headers;
  std::string body;

  const std::string& Header(const std::string& lower_name) const {
    static const std::string kEmpty;
    auto it = headers.find(lower_name);
    return it == headers.end() ? kEmpty : it->second;
  }
  const std::string& Query(const std::string& name) const {
    static const std::string kEmpty;
    auto it = query.find(name);
    return it == query.end() ? kEmpty : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// A response whose body is written over time (a watch). The transport sends
// the head with chunked transfer encoding, then each Write as one chunk
// (HTTP/2: HEADERS, then each Write as DATA).
// Thread-safe; Write after the peer went away returns false and does nothing.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual bool Write(std::string chunk) = 0;
  // Ends the response (terminating chunk; HTTP/2: END_STREAM); the
  // connection may be reused.
  virtual void Close() = 0;
  virtual bool Closed() const = 0;
};

// What a handler returns: a whole response, or the head of a stream plus a
// callback the transport calls once the head is on its way.
struct HttpReply {
  HttpResponse response;  // for a stream: status, content type, headers only
  std::function<void(std::shared_ptr<Stream>)> on_stream;  // set = streaming

  static HttpReply Whole(HttpResponse r) { return HttpReply{std::move(r), nullptr}; }
};

// Called on transport threads, possibly concurrently; must not block for long.
using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

}  // namespace eco::kubesim
