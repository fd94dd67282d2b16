// Internal to src/k8s: a cluster client's HTTP/2 connection (H2Session) and
// the Transport that sends its requests there (NewH2Transport). WatchHub
// opens watch streams on the same session (ClusterClient::h2_session()).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"
#include "k8s/h2_connection.h"
#include "k8s/net.h"
#include "k8s/transport.h"

namespace eco::k8s {

class IoLoop;

// One cluster's connection: opened at the first stream, replaced by a new
// one when it has failed or the server sent GOAWAY (once, however many
// streams want it). Thread-safe.
class H2Session {
 public:
  enum class Protocol { kUnknown, kH2, kHttp1 };

  H2Session(RestConfig config, ClientOptions options, Endpoint ep, IoLoop& loop);
  ~H2Session();  // closes the connection; its streams fail
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // kHttp1 once a server answered ALPN without h2: the client then stays
  // on HTTP/1.1 (a sink sees kNoH2 for streams opened before that).
  Protocol protocol() const { return protocol_->load(std::memory_order_acquire); }

  // A stream on the current connection. The connection is returned for
  // Cancel.
  std::pair<std::shared_ptr<H2Connection>, uint64_t> Open(H2Request request,
                                                          std::shared_ptr<H2StreamSink> sink);

  // The common request headers (user agent, accept: `accept` or JSON,
  // authorization).
  Result<H2Request> MakeRequest(std::string_view method, const std::string& path_and_query,
                                std::string_view body, std::string_view content_type, bool gzip,
                                std::string_view accept = {});

  // TCP connections this session has opened (tests: one per cluster).
  uint64_t connections_opened() const { return opened_.load(std::memory_order_relaxed); }
  // Closes the current connection as if the link had dropped (tests).
  void DropConnection();

  const ClientOptions& options() const { return options_; }

 private:
  Result<std::shared_ptr<H2Connection>> Current();

  const RestConfig config_;
  const ClientOptions options_;
  const Endpoint ep_;
  IoLoop& loop_;
  TokenSource tokens_;
  // Shared with the connections' callbacks, which may outlive the session.
  const std::shared_ptr<std::atomic<Protocol>> protocol_ =
      std::make_shared<std::atomic<Protocol>>(Protocol::kUnknown);
  std::atomic<uint64_t> opened_{0};
  std::mutex mu_;
  std::shared_ptr<H2Connection> conn_;  // guarded by mu_
  SslCtx tls_;                          // guarded by mu_; made at the first connect
};

// HTTP/2 to an https server, HTTP/1.1 (`http1`) when the server does not
// negotiate h2. Do() waits for the connection (connect_timeout bounds
// connecting and the TLS handshake), then up to request_timeout for the
// answer, on options.clock; a timed-out request also PINGs the connection
// (no answer: it is closed). A request the server never processed (GOAWAY,
// refused stream) is sent once more on a new connection.
Result<std::unique_ptr<Transport>> NewH2Transport(RestConfig config, ClientOptions options,
                                                  std::unique_ptr<Transport> http1);

}  // namespace eco::k8s
