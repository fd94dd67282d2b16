// Internal to src/k8s: one HTTP/2 connection to a cluster's API server (TLS,
// ALPN "h2"), carrying many requests and watches as streams. Framing, HPACK
// and flow control are libnghttp2's; the socket is non-blocking and driven
// by an IoLoop thread.
//
// Not libcurl's HTTP/2 multiplexing: a multi handle shares one connection
// per host:port, so clusters behind one address (kube-sim, or a gateway such
// as Rancher's /k8s/clusters/ID) would share or fight over one connection and
// a failure would not stay with its cluster. Here each client owns its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/net.h"
#include "k8s/watch_stream.h"

struct nghttp2_session;

namespace eco::k8s {

class IoLoop;

using H2Headers = std::vector<std::pair<std::string, std::string>>;

struct H2Request {
  std::string method;
  std::string path;   // the server's path prefix included, with the query
  H2Headers headers;  // lower-case names, no pseudo-headers
  std::string body;
};

// How a stream ended.
struct H2End {
  enum Kind {
    kComplete,     // the whole answer arrived
    kFailed,       // the link failed or the stream was reset (status says why)
    kUnprocessed,  // never processed by the server (refused, above a GOAWAY's last
                   // stream, or the connection failed before sending): safe to resend
    kNoH2,         // the server did not negotiate HTTP/2: use HTTP/1.1
  };
  Kind kind = kComplete;
  Status status;
};

// One stream's answer, called on the connection's loop thread.
class H2StreamSink {
 public:
  virtual ~H2StreamSink() = default;
  // The connection is up and the request handed to it (before any answer).
  virtual void OnSubmitted() {}
  // The final (non-1xx) response head.
  virtual void OnResponse(int status, const H2Headers& headers) = 0;
  // A piece of the body; false resets the stream and nothing more is called.
  virtual bool OnData(std::string_view bytes) = 0;
  // Exactly once, unless OnData returned false or the stream was cancelled.
  virtual void OnEnd(const H2End& end) = 0;
};

struct H2Target {
  Endpoint ep;  // https only
  SslCtx tls;
  std::string verify_name;  // the name the server's certificate must carry
  bool insecure = false;
  std::chrono::milliseconds connect_timeout{5000};
  // Nothing heard for read_idle with streams open: PING; no answer within
  // ping_timeout: the connection is dead (client-go's 30 s and 15 s).
  std::chrono::milliseconds read_idle{30000};
  std::chrono::milliseconds ping_timeout{15000};
  Clock* clock = nullptr;
};

class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  // Called on the loop thread once TLS is up: whether the server chose h2.
  using OnProtocol = std::function<void(bool h2)>;

  // Starts resolving and connecting at once; streams submitted meanwhile
  // wait for the connection.
  static std::shared_ptr<H2Connection> Start(IoLoop& loop, H2Target target, OnProtocol on_protocol);
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  // Any thread. Returns a handle for Cancel.
  uint64_t Submit(H2Request request, std::shared_ptr<H2StreamSink> sink);
  // Any thread: resets the stream; its sink is called no more once the
  // loop has seen the cancel.
  void Cancel(uint64_t handle);
  // Any thread: fails every stream as kUnavailable and closes (tests, shutdown).
  void Abort(const std::string& why);

  // Any thread: sends a PING unless one is out; no answer within the
  // ping timeout closes the connection (its streams fail, new ones go to a
  // new connection). For a request that timed out: the link may be dead.
  void CheckAlive();

  // New streams may go here: connecting or open, no GOAWAY received.
  bool accepting() const { return accepting_.load(std::memory_order_acquire); }
  bool open() const { return open_.load(std::memory_order_acquire); }

 private:
  struct Stream;
  enum class Phase { kResolving, kConnecting, kHandshake, kOpen, kClosed };

  H2Connection(IoLoop& loop, H2Target target, OnProtocol on_protocol);

  // Loop thread only, below.
  void Connect(Result<std::vector<SocketAddress>> addresses);
  void ConnectNext();
  void OnIo(uint32_t events);
  void Handshake();
  Status StartSession();
  void SubmitPending();
  void SubmitOne(Stream& s);
  void DoCancel(uint64_t handle);
  void Read();
  void Flush();
  void Arm();
  // Ends every stream: kNoH2, or kUnprocessed for those the server never
  // saw, kFailed for the others.
  void Close(Status why, bool no_h2 = false);
  void Fail(const std::string& why) { Close(StatusFromLinkFailure(why)); }
  static Status StatusFromLinkFailure(const std::string& why);
  void EndStream(Stream& s, const H2End& end);
  void OnConnectDeadline();
  void Ping();
  void OnPingDeadline(uint64_t seq);
  void OnIdleCheck();
  void ArmIdleCheck();

  static int OnHeader(nghttp2_session*, const void* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t flags, void* user);

  IoLoop& loop_;
  const H2Target target_;
  OnProtocol on_protocol_;
  std::atomic<bool> accepting_{true};
  std::atomic<bool> open_{false};
  std::atomic<uint64_t> next_handle_{1};

  // Loop thread only.
  Phase phase_ = Phase::kResolving;
  std::vector<SocketAddress> addresses_;
  size_t next_address_ = 0;
  std::string connect_failure_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  nghttp2_session* session_ = nullptr;
  std::map<uint64_t, std::shared_ptr<Stream>> streams_;  // by handle
  std::string out_;                                      // encoded frames not yet written
  H2End::Kind closed_kind_ = H2End::kUnprocessed;        // for streams that come after Close
  Status closed_status_;
  Clock::TimerId connect_timer_ = 0;
  Clock::TimerId idle_timer_ = 0;
  Clock::Time last_read_{};
  uint64_t ping_seq_ = 0;  // of the PING out, 0: none
  Clock::TimerId ping_timer_ = 0;
  uint32_t armed_ = 0;             // what epoll waits for on fd_
  bool write_blocked_ = false;     // TLS wants the socket writable
  bool read_wants_write_ = false;  // a TLS read needs a write first
  friend struct H2Callbacks;
};

}  // namespace eco::k8s
