// kube-sim's HTTP(S) transport: one port serving every simulated cluster,
// with per-cluster fault injection in front of the handler.
//
// The transport turns each HTTP/1.1 request, and each HTTP/2 stream (TLS
// with ALPN h2, unless ServerOptions::http2 is false), into an HttpRequest
// (http.h) and calls the handler on one of its io threads. Before that it
// applies the faults set through the /sim API it serves itself:
//
//   POST /sim/clusters/NAME/down            requests for NAME: connection reset
//   POST /sim/clusters/NAME/hang            requests read, never answered
//   POST /sim/clusters/NAME/up              clears every fault of NAME
//   POST /sim/clusters/NAME/latency?ms=M    every answer for NAME M ms late
//   POST /sim/clusters/NAME/errors?rate=R   share R (0..1) answered 500
//   GET  /sim/clusters/NAME/faults          the current faults, as JSON
//   GET  /sim/clusters/NAME/connections     {"cluster","connections","h2","streams"}:
//        open connections that have carried a request for NAME, how many of
//        them are HTTP/2, and NAME's requests in progress (HTTP/2: streams)
//
// A request belongs to cluster NAME when its path starts with /clusters/NAME/.
// One port serves every cluster, so "connection refused" cannot be given per
// cluster: a down cluster's requests get a TCP reset (RST, no response)
// instead, which clients see as the same kind of retryable network failure.
// Connections and open streams that last served a cluster are reset when it
// goes down (HTTP/2: every connection that carried a request for it, with
// all its streams, whichever clusters they are for); requests hung on a
// cluster are reset when it comes up (HTTP/2: RST_STREAM, the connection
// stays). hang, latency and errors apply per HTTP/2 stream. /sim/* itself is
// never subject to faults; other /sim paths go to the handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "kubesim/http.h"

namespace eco::kubesim {

struct ServerOptions {
  std::string host = "127.0.0.1";                  // address to bind
  uint16_t port = 0;                               // 0: any free port (see Server::port())
  int threads = 2;                                 // io threads; handlers run on them
  std::size_t body_limit = std::size_t{16} << 20;  // larger bodies: 413
  // A stream whose unsent data passes this is cut off (a peer that does not read).
  std::size_t stream_queue_limit = std::size_t{8} << 20;
  // Both set: serve HTTPS (TLS 1.2+, ALPN h2 and http/1.1). Both empty: plain
  // HTTP, HTTP/1.1 only.
  std::string tls_cert_pem;  // server certificate (chain), PEM
  std::string tls_key_pem;   // its private key, PEM
  // With TLS: offer h2 by ALPN (kube-apiserver does). False: http/1.1 only.
  bool http2 = true;
  // Which cluster names exist (for the /sim fault API). Required.
  std::function<bool(const std::string&)> cluster_exists;
  // Seeds the draw behind errors?rate=R; 0: seeded from std::random_device.
  uint64_t seed = 0;
};

// Counters, for tests and the dashboard. Each is read on its own (not a
// consistent snapshot).
struct ServerStats {
  uint64_t connections = 0;     // open now, HTTP/2 ones included
  uint64_t h2_connections = 0;  // open now that speak HTTP/2
  uint64_t requests = 0;       // read so far, /sim included
  uint64_t hung_requests = 0;  // held by a hang fault now
  uint64_t open_streams = 0;   // streamed responses (watches) open now
  // Connections reset by faults or stream overflow so far, and HTTP/2
  // streams reset for overflow or by `up` releasing a hung request.
  uint64_t resets = 0;
};

class Server {
 public:
  // Binds, listens and starts the io threads; the server is accepting when
  // this returns. Fails with kUnavailable when the address cannot be bound,
  // kInvalid for bad options or TLS material.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, HttpHandler handler);

  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  bool tls() const;
  ServerStats stats() const;

  // Stops accepting, drops every connection and joins the io threads. Open
  // streams report Closed() and ignore writes afterwards. The handler is not
  // called once this returns. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Kubernetes `Status` failure body: {"kind":"Status",...,"reason":R,"code":C}.
std::string StatusBody(int code, const std::string& reason, const std::string& message);

}  // namespace eco::kubesim
