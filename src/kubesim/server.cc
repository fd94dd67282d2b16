// kube-sim's transport on Boost.Beast: one strand per connection, N io
// threads, no blocking. Beast stays in this file (compile time).
#include "kubesim/server.h"

#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kubesim/h2_connection.h"
#include "kubesim/server_internal.h"

namespace eco::kubesim {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  nlohmann::json j = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  // Names come from request paths: invalid UTF-8 must not throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using internal::Socket;
using internal::TlsSocket;

using internal::ClusterOf;
using internal::Core;
using internal::FaultEvent;
using internal::JsonResponse;
using internal::SessionBase;
using internal::SplitTarget;
using internal::StreamImpl;
using internal::Verdict;

constexpr std::string_view kTerminator = "0\r\n\r\n";
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr std::size_t kHeaderLimit = 64 * 1024;
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);
constexpr auto kDrainTimeout = std::chrono::seconds(5);

template <typename AsyncStream>
class Session final : public SessionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<AsyncStream, Socket>;

  Session(Core* core, AsyncStream stream)
      : core_(core),
        stream_(std::move(stream)),
        executor_(stream_.get_executor()),
        timer_(executor_) {}

  ~Session() override {
    ReleaseLoad();
    core_->registry.Remove(id_);
    core_->stats.connections.fetch_sub(1, std::memory_order_relaxed);
  }

  void Start() {
    core_->stats.connections.fetch_add(1, std::memory_order_relaxed);
    id_ = core_->registry.Add(weak_from_this());
    if constexpr (kTls) {
      ArmTimeout(kHandshakeTimeout);
      stream_.async_handshake(ssl::stream_base::server, [self = Self()](beast::error_code ec) {
        if (self->state_ == State::kClosed) return;
        self->DisarmTimeout();
        if (ec) return self->CloseNow(false);
        if (internal::NegotiatedH2(self->stream_)) {
          // From here the HTTP/2 connection owns the socket.
          self->state_ = State::kClosed;
          self->timer_.cancel();
          self->core_->registry.Remove(self->id_);
          return internal::ServeH2(self->core_, std::move(self->stream_));
        }
        self->DoRead();
      });
    } else {
      DoRead();
    }
  }

  void PostChunk(int32_t, std::string framed) override {
    net::post(executor_, [self = Self(), f = std::move(framed)]() mutable {
      self->EnqueueChunk(std::move(f));
    });
  }
  void PostEndStream(int32_t) override {
    net::post(executor_, [self = Self()] { self->EndStream(); });
  }
  void PostReset(int32_t) override {
    net::post(executor_, [self = Self()] { self->CloseNow(true); });
  }
  void PostFault(std::string cluster, FaultEvent event) override {
    net::post(executor_, [self = Self(), c = std::move(cluster), event] {
      if (self->state_ == State::kClosed || self->cluster_ != c) return;
      // Down: every connection that last served the cluster goes, like a
      // server that went away. Up: requests hung on it are let go.
      if (event == FaultEvent::kDown || self->state_ == State::kHung) self->CloseNow(true);
    });
  }
  void CloseForStop() override { CloseNow(false); }

 private:
  enum class State {
    kReading,    // reading a request
    kDelayed,    // latency fault: waiting to answer
    kWriting,    // writing a whole response
    kHung,       // hang fault: never answering
    kStreaming,  // writing a stream
    kBetween,    // stream done; waiting for the pending peer read before reading on
    kDraining,   // closing: send side shut, discarding input
    kClosed,
  };

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  // ---- reading

  void DoRead() {
    EndRequestLoad();
    state_ = State::kReading;
    parser_.emplace();
    parser_->body_limit(core_->options.body_limit);
    parser_->header_limit(kHeaderLimit);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = Self()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec) return OnReadError(ec);
    if (parser_->is_done()) return OnRequest();
    auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      // Clients that wait for this (curl, for big bodies) would stall a second.
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = Self()](beast::error_code ec, std::size_t) {
                         if (self->state_ == State::kClosed) return;
                         if (ec) return self->CloseNow(false);
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, std::size_t) {
                       if (self->state_ == State::kClosed) return;
                       if (ec) return self->OnReadError(ec);
                       self->OnRequest();
                     });
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      return WriteWhole(
          JsonResponse(413, StatusBody(413, "RequestEntityTooLarge",
                                       "request body too large: limit is " +
                                           std::to_string(core_->options.body_limit) + " bytes")));
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      keep_alive_ = false;
      return WriteWhole(JsonResponse(
          400, StatusBody(400, "BadRequest", "malformed HTTP request: " + ec.message())));
    }
    CloseNow(false);
  }

  // ---- answering

  void OnRequest() {
    core_->stats.requests.fetch_add(1, std::memory_order_relaxed);
    auto msg = parser_->release();
    parser_.reset();
    keep_alive_ = msg.keep_alive();
    http10_ = msg.version() == 10;

    HttpRequest req;
    req.method = std::string(msg.method_string());
    if (!SplitTarget(std::string_view(msg.target().data(), msg.target().size()), &req)) {
      return WriteWhole(
          JsonResponse(400, StatusBody(400, "BadRequest", "malformed percent-encoding in URL")));
    }
    for (const auto& field : msg) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto [it, inserted] = req.headers.try_emplace(std::move(name), field.value());
      if (!inserted) it->second.append(", ").append(field.value().data(), field.value().size());
    }
    req.body = std::move(msg.body());

    if (auto sim = core_->SimApi(req)) {
      cluster_.clear();
      return WriteWhole(std::move(*sim));
    }

    cluster_ = ClusterOf(req.path);
    Verdict v = core_->faults.Judge(cluster_);
    if (v.reset) return CloseNow(true);
    if (!cluster_.empty()) {
      if (carried_.insert(cluster_).second) core_->load.AddConnection(cluster_, false);
      core_->load.AddStream(cluster_);
      in_progress_ = cluster_;
    }
    if (v.hang) {
      state_ = State::kHung;
      core_->stats.hung.fetch_add(1, std::memory_order_relaxed);
      return WatchPeer();
    }
    if (v.delay.count() > 0) {
      state_ = State::kDelayed;
      pending_ = std::move(req);
      timer_.expires_after(v.delay);
      timer_.async_wait([self = Self(), error = v.error](beast::error_code ec) {
        if (self->state_ != State::kDelayed || ec) return;
        HttpRequest r = std::move(*self->pending_);
        self->pending_.reset();
        self->Dispatch(r, error);
      });
      return;
    }
    Dispatch(req, v.error);
  }

  void Dispatch(const HttpRequest& req, bool inject_error) {
    HttpReply reply = core_->Call(req, inject_error, cluster_);
    if (reply.on_stream) return StartStream(std::move(reply));
    WriteWhole(std::move(reply.response));
  }

  // The status line and headers. Written by hand: Beast's serializer costs
  // more than the rest of a small request together.
  std::string Head(const HttpResponse& r, const std::string* content_length) const {
    std::string h;
    h.reserve(160);
    h.append("HTTP/1.1 ").append(std::to_string(r.status)).push_back(' ');
    auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(r.status)));
    if (reason.front() != '<') h.append(reason.data(), reason.size());  // not "<unknown-status>"
    h.append("\r\n");
    if (!r.content_type.empty()) h.append("Content-Type: ").append(r.content_type).append("\r\n");
    for (const auto& [k, v] : r.headers) h.append(k).append(": ").append(v).append("\r\n");
    if (content_length != nullptr) {
      h.append("Content-Length: ").append(*content_length).append("\r\n");
    } else {
      h.append("Transfer-Encoding: chunked\r\n");
    }
    if (!keep_alive_) {
      h.append("Connection: close\r\n");
    } else if (http10_) {
      h.append("Connection: keep-alive\r\n");
    }
    h.append("\r\n");
    return h;
  }

  void WriteWhole(HttpResponse r) {
    state_ = State::kWriting;
    const std::string length = std::to_string(r.body.size());
    head_ = Head(r, &length);
    body_out_ = std::move(r.body);
    std::vector<net::const_buffer> bufs{net::buffer(head_), net::buffer(body_out_)};
    if constexpr (kTls) {
      // Beast's ssl_stream (Boost 1.74) stalls on a buffer sequence whose
      // later buffer passes 16 KiB after a small first one: one buffer.
      body_out_.insert(0, head_);
      bufs = {net::buffer(body_out_)};
    }
    net::async_write(stream_, bufs, [self = Self()](beast::error_code ec, std::size_t) {
      if (self->state_ == State::kClosed) return;
      if (ec) return self->CloseNow(false);
      if (!self->keep_alive_) return self->Drain();
      self->DoRead();
    });
  }

  // ---- streams

  void StartStream(HttpReply reply) {
    state_ = State::kStreaming;
    core_->stats.streams.fetch_add(1, std::memory_order_relaxed);
    stream_ending_ = false;
    head_ = Head(reply.response, nullptr);
    auto stream = std::make_shared<StreamImpl>(shared_from_this(), &core_->faults, cluster_,
                                               core_->options.stream_queue_limit);
    body_ = stream;
    writing_ = true;  // chunks queue up behind the head
    net::async_write(stream_, net::buffer(head_),
                     [self = Self(), stream, cb = std::move(reply.on_stream)](beast::error_code ec,
                                                                              std::size_t) mutable {
                       self->writing_ = false;
                       if (self->state_ == State::kClosed) return;
                       if (ec) return self->CloseNow(false);
                       self->WatchPeer();
                       cb(std::move(stream));
                       self->Flush();
                     });
  }

  void EnqueueChunk(std::string framed) {
    if (state_ != State::kStreaming || stream_ending_) return;
    queued_bytes_ += framed.size();
    queue_.push_back(std::move(framed));
    if (!writing_) Flush();
  }

  void EndStream() {
    if (state_ != State::kStreaming || stream_ending_) return;
    stream_ending_ = true;
    if (!writing_) Flush();
  }

  // Writes everything queued (and the last chunk once the stream ended) in one go.
  void Flush() {
    if (writing_ || state_ != State::kStreaming) return;
    if (queue_.empty() && !stream_ending_) return;
    inflight_.swap(queue_);
    inflight_bytes_ = queued_bytes_;
    queued_bytes_ = 0;
    std::vector<net::const_buffer> bufs;
    bufs.reserve(inflight_.size() + 1);
    for (const auto& s : inflight_) bufs.emplace_back(s.data(), s.size());
    bool last = stream_ending_;
    if (last) bufs.emplace_back(kTerminator.data(), kTerminator.size());
    if constexpr (kTls) {
      // One buffer, as in WriteWhole: a large event after a small one stalls.
      if (bufs.size() > 1) {
        std::string flat;
        flat.reserve(net::buffer_size(bufs));
        for (const auto& b : bufs) flat.append(static_cast<const char*>(b.data()), b.size());
        inflight_.assign(1, std::move(flat));
        bufs.assign(1, net::buffer(inflight_.front()));
      }
    }
    writing_ = true;
    net::async_write(stream_, bufs, [self = Self(), last](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      self->inflight_.clear();
      if (auto s = self->body_.lock()) s->Sent(self->inflight_bytes_);
      if (self->state_ == State::kClosed) return;
      if (ec) return self->CloseNow(false);
      if (!last) return self->Flush();
      self->body_.reset();
      self->core_->stats.streams.fetch_sub(1, std::memory_order_relaxed);
      self->EndRequestLoad();
      if (!self->keep_alive_) return self->Drain();
      // A read is still out to notice the peer leaving; it leads on to the next request.
      if (self->peer_read_pending_) {
        self->state_ = State::kBetween;
      } else {
        self->DoRead();
      }
    });
  }

  // While hung or streaming nothing else reads; this read notices the peer
  // going away. Data that arrives instead (a pipelined request) is kept for
  // the next parse.
  void WatchPeer() {
    if (peer_read_pending_) return;
    peer_read_pending_ = true;
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = Self()](beast::error_code ec, std::size_t n) {
                              self->peer_read_pending_ = false;
                              if (self->state_ == State::kClosed) return;
                              if (ec) return self->CloseNow(false);
                              if (self->state_ == State::kDraining) return self->DrainSome();
                              self->buffer_.commit(n);
                              if (self->state_ == State::kBetween) self->DoRead();
                            });
  }

  // ---- closing

  // Shuts our side and discards input for a while, so that a reply (a 413)
  // is not destroyed by a reset while the peer is still sending.
  void Drain() {
    state_ = State::kDraining;
    EndRequestLoad();
    MarkStreamClosed();
    beast::error_code ec;
    Sock().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return CloseNow(false);
    ArmTimeout(kDrainTimeout);
    if (!peer_read_pending_) DrainSome();  // else that read leads on to draining
  }

  void DrainSome() {
    Sock().async_read_some(buffer_.prepare(16384),
                           [self = Self()](beast::error_code ec, std::size_t) {
                             if (self->state_ == State::kClosed) return;
                             if (ec) return self->CloseNow(false);
                             self->buffer_.clear();
                             self->DrainSome();
                           });
  }

  // The request in progress is over (its answer written, or the connection gone).
  void EndRequestLoad() {
    if (in_progress_.empty()) return;
    core_->load.RemoveStream(in_progress_);
    in_progress_.clear();
  }
  void ReleaseLoad() {
    EndRequestLoad();
    for (const auto& c : carried_) core_->load.RemoveConnection(c, false);
    carried_.clear();
  }

  void MarkStreamClosed() {
    if (auto s = body_.lock()) s->MarkClosed();
    body_.reset();
  }

  Socket& Sock() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }

  // Closes the connection unless the current step (handshake, draining)
  // ends first. Requests themselves have no time limit: hang means hang.
  void ArmTimeout(std::chrono::seconds d) {
    timer_.expires_after(d);
    timer_.async_wait([self = Self()](beast::error_code ec) {
      // A wait that completed just before being disarmed sees the new expiry.
      if (!ec && self->timer_.expiry() <= std::chrono::steady_clock::now()) self->CloseNow(false);
    });
  }
  void DisarmTimeout() { timer_.expires_at(std::chrono::steady_clock::time_point::max()); }

  // reset: SO_LINGER 0, so the peer gets RST rather than FIN.
  void CloseNow(bool reset) {
    if (state_ == State::kClosed) return;
    if (state_ == State::kHung) core_->stats.hung.fetch_sub(1, std::memory_order_relaxed);
    if (state_ == State::kStreaming) core_->stats.streams.fetch_sub(1, std::memory_order_relaxed);
    if (reset) core_->stats.resets.fetch_add(1, std::memory_order_relaxed);
    state_ = State::kClosed;
    ReleaseLoad();
    pending_.reset();
    beast::error_code ec;
    timer_.cancel();
    if (reset) Sock().set_option(net::socket_base::linger(true, 0), ec);
    Sock().close(ec);
    // Last: it may drop the stream's reference to this session.
    MarkStreamClosed();
  }

  Core* const core_;
  AsyncStream stream_;
  // Kept apart: stream_ is moved out when the connection turns HTTP/2, and
  // a fault or Stop may still reach this session through the registry.
  const typename AsyncStream::executor_type executor_;
  net::steady_timer timer_;  // latency, handshake and drain limits
  uint64_t id_ = 0;

  // All below: only on the strand.
  State state_ = State::kReading;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<HttpRequest> pending_;  // held through a latency delay
  std::string cluster_;                 // cluster of the last request, "" if none
  std::string in_progress_;             // cluster of the request being answered, if any
  std::unordered_set<std::string> carried_;  // clusters this connection has carried
  bool keep_alive_ = true;
  bool http10_ = false;   // the request was HTTP/1.0
  std::string head_;      // status line and headers being written
  std::string body_out_;  // whole body being written

  std::weak_ptr<StreamImpl> body_;     // the open stream, if any
  std::vector<std::string> queue_;     // framed chunks waiting
  std::vector<std::string> inflight_;  // framed chunks being written
  std::size_t queued_bytes_ = 0;
  std::size_t inflight_bytes_ = 0;
  bool writing_ = false;
  bool stream_ending_ = false;
  bool peer_read_pending_ = false;
};

// The server's preference, as Go's: h2 when the client offers it (and
// `http2` is on: arg points to it), else http/1.1.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void* arg) {
  const bool http2 = *static_cast<const bool*>(arg);
  for (std::string_view want : {std::string_view("h2"), std::string_view("http/1.1")}) {
    if (want == "h2" && !http2) continue;
    for (unsigned int i = 0; i < inlen;) {
      unsigned int len = in[i];
      if (i + 1 + len > inlen) break;
      if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == want) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

// ---------------------------------------------------------------- server

struct Server::Impl {
  Impl(ServerOptions o, HttpHandler h, uint64_t seed)
      : core(std::move(o), std::move(h), seed),
        ioc(core.options.threads),
        acceptor(ioc),
        retry_timer(ioc) {}

  ~Impl() { Stop(); }

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, Socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Out of descriptors, most likely: try again shortly rather than spin.
        retry_timer.expires_after(std::chrono::milliseconds(50));
        retry_timer.async_wait([this](beast::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      socket.set_option(tcp::no_delay(true), ec);
      if (ssl_ctx) {
        std::make_shared<Session<TlsSocket>>(&core, TlsSocket(std::move(socket), *ssl_ctx))
            ->Start();
      } else {
        std::make_shared<Session<Socket>>(&core, std::move(socket))->Start();
      }
      Accept();
    });
  }

  void Stop() {
    if (stopped.exchange(true)) return;
    ioc.stop();
    for (auto& t : threads) t.join();
    threads.clear();
    beast::error_code ec;
    acceptor.close(ec);
    // No io thread runs now: sessions may be touched directly.
    for (auto& s : core.registry.Snapshot()) s->CloseForStop();
  }

  // Order matters: sessions die with the io_context and use core and ssl_ctx.
  Core core;
  std::optional<ssl::context> ssl_ctx;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  uint16_t port = 0;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;
uint16_t Server::port() const { return impl_->port; }
bool Server::tls() const { return impl_->ssl_ctx.has_value(); }
void Server::Stop() { impl_->Stop(); }

ServerStats Server::stats() const {
  const auto& c = impl_->core.stats;
  ServerStats s;
  s.connections = c.connections.load(std::memory_order_relaxed);
  s.h2_connections = c.h2_connections.load(std::memory_order_relaxed);
  s.requests = c.requests.load(std::memory_order_relaxed);
  s.hung_requests = c.hung.load(std::memory_order_relaxed);
  s.open_streams = c.streams.load(std::memory_order_relaxed);
  s.resets = c.resets.load(std::memory_order_relaxed);
  return s;
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, HttpHandler handler) {
  if (!handler) return Invalid("kube-sim server: no handler");
  if (!options.cluster_exists) return Invalid("kube-sim server: no cluster_exists function");
  if (options.threads < 1) return Invalid("kube-sim server: threads must be at least 1");
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return Invalid("kube-sim server: TLS needs both a certificate and a key");
  }
  uint64_t seed = options.seed != 0
                      ? options.seed
                      : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler), seed);
  const ServerOptions& o = impl->core.options;
  beast::error_code ec;

  if (!o.tls_cert_pem.empty()) {
    auto& ctx = impl->ssl_ctx.emplace(ssl::context::tls_server);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                        ssl::context::single_dh_use,
                    ec);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    if (!ec) ctx.use_certificate_chain(net::buffer(o.tls_cert_pem), ec);
    if (!ec) ctx.use_private_key(net::buffer(o.tls_key_pem), ssl::context::pem, ec);
    if (ec) return Invalid("kube-sim server: TLS certificate or key: " + ec.message());
    SSL_CTX_set_alpn_select_cb(ctx.native_handle(), SelectAlpn,
                               const_cast<bool*>(&impl->core.options.http2));
  }

  net::ip::address address = net::ip::make_address(o.host, ec);
  if (ec) {
    tcp::resolver resolver(impl->ioc);
    auto results = resolver.resolve(o.host, "", ec);
    if (ec || results.empty()) return Invalid("kube-sim server: cannot resolve host " + o.host);
    address = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, o.port);
  auto& acc = impl->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Unavailable("kube-sim server: cannot listen on " + o.host + ":" +
                       std::to_string(o.port) + ": " + ec.message());
  }
  impl->port = acc.local_endpoint(ec).port();
  impl->Accept();
  for (int i = 0; i < o.threads; ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

}  // namespace eco::kubesim
