// Internal to src/k8s: the HTTP/1.1 GET of one watch on a non-blocking
// socket, driven by WatchHub's epoll loop.
//
// Written here rather than left to libcurl because a watch lasts minutes and
// eco holds one per cluster and watched kind: libcurl keeps ~15 KB per
// transfer (handle, connection, buffers), most of eco's memory at ten
// thousand clusters. A WatchStream owns no receive buffer (the hub reads into
// one scratch buffer for all streams) and keeps only bytes it could not parse
// yet; HTTP framing (status line, chunked encoding) is Beast's parser.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/net.h"

namespace eco::k8s {

// At most this much of a failed watch's answer is kept for its error.
inline constexpr size_t kMaxWatchErrorBody = 64 * 1024;

// A resolved address of the server.
struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// OpenSSL over a non-blocking socket (BIO data: the descriptor): sends
// with MSG_NOSIGNAL, so a closed peer cannot raise SIGPIPE; EAGAIN becomes
// SSL_ERROR_WANT_READ / WANT_WRITE. Shared with the HTTP/2 connections.
BIO_METHOD* StreamBio();

// Literal addresses without a resolver; otherwise getaddrinfo (blocking:
// call it off the hub thread). kUnavailable when the name does not resolve.
Result<std::vector<SocketAddress>> ResolveEndpoint(const Endpoint& ep);

class WatchStream {
 public:
  // What the stream waits for next.
  enum class Want { kRead, kWrite, kDone };

  // Receives the answer.
  class Sink {
   public:
    virtual ~Sink() = default;
    // The status line arrived (1xx interim answers are skipped).
    virtual void OnStatus(int code) = 0;
    // A piece of a 200 answer's body; returning false stops the stream.
    virtual bool OnBody(std::string_view bytes) = 0;
  };

  struct Target {
    std::vector<SocketAddress> addresses;  // tried in order
    std::string where;                     // "host:port", for messages
    SslCtx tls;                            // null: plain TCP
    std::string verify_name;               // TLS: the name the certificate must carry
    bool insecure = false;                 // TLS: no verification
  };

  // `request`: the complete request head.
  WatchStream(Target target, std::string request);
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  // Opens a socket and starts connecting. kDone: failed (failure()).
  Want Start();
  // The socket is ready (or hung up): does all that can be done now. Reads
  // go through `scratch`, shared by every stream of the thread.
  Want OnReady(Sink& sink, std::span<char> scratch);

  int fd() const { return fd_; }
  bool got_status() const { return code_ != 0; }
  // After kDone: the server ended the answer properly.
  bool complete() const { return complete_; }
  // After kDone: the sink stopped the stream.
  bool aborted() const { return aborted_; }
  int code() const { return code_; }
  // A non-200 answer's body (at most 64 KB of it).
  const std::string& error_body() const { return error_body_; }
  // After kDone, neither complete nor aborted: why (a link failure).
  const Status& failure() const { return failure_; }

 private:
  class Parser;
  enum class Phase { kConnecting, kHandshake, kSending, kReceiving, kDone };

  Want Connect();    // to addresses[next_address_ ...]
  Want Connected();  // TLS handshake or the request next
  Want Handshake();
  Want Send();
  Want Receive(Sink& sink, std::span<char> scratch);
  // Hands bytes to the parser; false when the stream is over.
  bool Parse(Sink& sink, std::string_view bytes);
  Want Fail(std::string why);
  void CloseSocket();

  Target target_;
  std::string request_;
  size_t sent_ = 0;
  size_t next_address_ = 0;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::unique_ptr<Parser> parser_;
  std::string unparsed_;  // a partial status line, header or chunk header
  std::string error_body_;
  Phase phase_ = Phase::kConnecting;
  int code_ = 0;
  bool complete_ = false;
  bool aborted_ = false;
  Status failure_;
  std::string connect_failure_;
};

}  // namespace eco::k8s
