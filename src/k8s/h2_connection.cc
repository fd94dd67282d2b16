#include "k8s/h2_connection.h"

#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "k8s/conn_count.h"
#include "k8s/errors.h"
#include "k8s/io_loop.h"

namespace eco::k8s {

struct H2Connection::Stream {
  uint64_t handle = 0;
  int32_t id = -1;  // assigned when submitted to nghttp2
  H2Request request;
  size_t body_sent = 0;
  std::shared_ptr<H2StreamSink> sink;  // null once stopped or cancelled
  bool headers_sent = false;           // the server may have seen it
  int status = 0;                      // of the final response head
  H2Headers headers;
  bool responded = false;
};

namespace {

// Frames nghttp2 has encoded but the socket has not taken yet are held in
// out_; past this much, encoding waits for the socket.
constexpr size_t kMaxBuffered = 64 * 1024;
// Per-stream and connection receive windows (as Go's HTTP/2 client): a
// watch's burst of events does not wait for window updates.
constexpr int32_t kStreamWindow = 4 << 20;
constexpr int32_t kConnectionWindow = 32 << 20;

std::string H2Error(uint32_t code) { return nghttp2_http2_strerror(code); }

}  // namespace

// nghttp2's callbacks, with access to the connection's privates.
struct H2Callbacks {
  static H2Connection::Stream* StreamOf(nghttp2_session* s, int32_t id) {
    return static_cast<H2Connection::Stream*>(nghttp2_session_get_stream_user_data(s, id));
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame*, void*) { return 0; }

  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    H2Connection::Stream* s = StreamOf(session, frame->hd.stream_id);
    if (s == nullptr || s->responded) return 0;  // trailers are not read
    std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
      s->status = 0;
      for (char c : v) s->status = s->status * 10 + (c - '0');
      s->headers.clear();
    } else {
      s->headers.emplace_back(n, v);
    }
    return 0;
  }

  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    auto* c = static_cast<H2Connection*>(user);
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK)) {
      c->ping_seq_ = 0;
      if (c->ping_timer_ != 0) c->target_.clock->Cancel(c->ping_timer_);
      c->ping_timer_ = 0;
      return 0;
    }
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      // Streams above last_stream_id end as refused (kUnprocessed); new
      // ones go to another connection.
      c->accepting_.store(false, std::memory_order_release);
      return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    H2Connection::Stream* s = StreamOf(session, frame->hd.stream_id);
    if (s == nullptr || s->responded || s->status < 200) return 0;
    s->responded = true;
    if (s->sink) s->sink->OnResponse(s->status, s->headers);
    return 0;
  }

  static int OnData(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void*) {
    H2Connection::Stream* s = StreamOf(session, id);
    if (s == nullptr || !s->sink) return 0;
    if (!s->sink->OnData(std::string_view(reinterpret_cast<const char*>(data), len))) {
      s->sink.reset();
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    }
    return 0;
  }

  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (H2Connection::Stream* s = StreamOf(session, frame->hd.stream_id)) s->headers_sent = true;
    return 0;
  }

  // A request that never left (a GOAWAY came first): the server never saw
  // it, so it can go again on a new connection.
  static int OnFrameNotSend(nghttp2_session* session, const nghttp2_frame* frame, int lib_error,
                            void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    auto* c = static_cast<H2Connection*>(user);
    for (auto it = c->streams_.begin(); it != c->streams_.end(); ++it) {
      if (it->second->id != frame->hd.stream_id) continue;
      nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, nullptr);
      std::shared_ptr<H2Connection::Stream> st = it->second;
      c->streams_.erase(it);
      c->EndStream(*st, H2End{H2End::kUnprocessed,
                              Unavailable(std::string("HTTP/2: the request was not sent: ") +
                                          nghttp2_strerror(lib_error))});
      break;
    }
    return 0;
  }

  static int OnStreamClose(nghttp2_session* session, int32_t id, uint32_t code, void* user) {
    auto* c = static_cast<H2Connection*>(user);
    H2Connection::Stream* s = StreamOf(session, id);
    if (s == nullptr) return 0;
    H2End end;
    if (code == NGHTTP2_NO_ERROR && s->responded) {
      end.kind = H2End::kComplete;
    } else if (code == NGHTTP2_REFUSED_STREAM) {
      end.kind = H2End::kUnprocessed;
      end.status = Unavailable("the server refused the stream (it was not processed)");
    } else {
      end.kind = H2End::kFailed;
      end.status = StatusFromLink(
          LinkFailure::kLink,
          "HTTP/2 stream reset: " +
              H2Error(code == 0 ? static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR) : code));
    }
    const uint64_t handle = s->handle;
    c->EndStream(*s, end);
    c->streams_.erase(handle);
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* s = static_cast<H2Connection::Stream*>(source->ptr);
    size_t n = std::min(length, s->request.body.size() - s->body_sent);
    std::memcpy(buf, s->request.body.data() + s->body_sent, n);
    s->body_sent += n;
    if (s->body_sent == s->request.body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
};

H2Connection::H2Connection(IoLoop& loop, H2Target target, OnProtocol on_protocol)
    : loop_(loop), target_(std::move(target)), on_protocol_(std::move(on_protocol)) {}

H2Connection::~H2Connection() {
  // The loop held a reference until Close(); this is only a backstop.
  if (session_ != nullptr) nghttp2_session_del(session_);
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) {
    close(fd_);
    CountConnection(ConnProtocol::kH2, -1);
  }
}

std::shared_ptr<H2Connection> H2Connection::Start(IoLoop& loop, H2Target target,
                                                  OnProtocol on_protocol) {
  std::shared_ptr<H2Connection> c(
      new H2Connection(loop, std::move(target), std::move(on_protocol)));
  std::weak_ptr<H2Connection> weak = c;
  Clock& clock = *c->target_.clock;
  auto deadline = clock.Now() + c->target_.connect_timeout;
  // Arms before posting, so the id is set when the loop looks at it.
  c->connect_timer_ = clock.At(deadline, [weak] {
    if (auto self = weak.lock()) self->loop_.Post([self] { self->OnConnectDeadline(); });
  });
  if (IsIpAddress(c->target_.ep.host)) {
    loop.Post([c] { c->Connect(ResolveEndpoint(c->target_.ep)); });
  } else {
    // getaddrinfo may block on DNS: not on the loop thread.
    RunBlocking([c] {
      auto found =
          std::make_shared<Result<std::vector<SocketAddress>>>(ResolveEndpoint(c->target_.ep));
      c->loop_.Post([c, found] { c->Connect(std::move(*found)); });
    });
  }
  return c;
}

uint64_t H2Connection::Submit(H2Request request, std::shared_ptr<H2StreamSink> sink) {
  auto s = std::make_unique<Stream>();
  s->handle = next_handle_.fetch_add(1, std::memory_order_relaxed);
  s->request = std::move(request);
  s->sink = std::move(sink);
  const uint64_t handle = s->handle;
  loop_.Post([self = shared_from_this(), st = std::shared_ptr<Stream>(std::move(s))] {
    Stream& ref = *st;
    if (self->phase_ == Phase::kClosed) {
      // As if it had been there when the connection closed.
      H2End end{self->closed_kind_, self->closed_status_};
      self->EndStream(ref, end);
      return;
    }
    self->streams_[ref.handle] = st;
    if (self->phase_ == Phase::kOpen) {
      self->SubmitOne(ref);
      self->Flush();
    }
  });
  return handle;
}

void H2Connection::Cancel(uint64_t handle) {
  loop_.Post([self = shared_from_this(), handle] { self->DoCancel(handle); });
}

void H2Connection::Abort(const std::string& why) {
  accepting_.store(false, std::memory_order_release);
  loop_.Post([self = shared_from_this(), why] {
    if (self->phase_ != Phase::kClosed) self->Fail(why);
  });
}

void H2Connection::CheckAlive() {
  loop_.Post([self = shared_from_this()] { self->Ping(); });
}

void H2Connection::Ping() {
  if (phase_ != Phase::kOpen || ping_seq_ != 0) return;
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  ping_seq_ = next_handle_.fetch_add(1, std::memory_order_relaxed);
  std::weak_ptr<H2Connection> weak = weak_from_this();
  const uint64_t seq = ping_seq_;
  ping_timer_ = target_.clock->After(target_.ping_timeout, [weak, seq] {
    if (auto self = weak.lock()) self->loop_.Post([self, seq] { self->OnPingDeadline(seq); });
  });
  Flush();
}

void H2Connection::OnPingDeadline(uint64_t seq) {
  if (phase_ != Phase::kOpen || ping_seq_ != seq) return;
  ping_timer_ = 0;
  Fail("no answer to an HTTP/2 PING within " + std::to_string(target_.ping_timeout.count()) +
       " ms");
}

void H2Connection::ArmIdleCheck() {
  std::weak_ptr<H2Connection> weak = weak_from_this();
  idle_timer_ = target_.clock->After(target_.read_idle, [weak] {
    if (auto self = weak.lock()) self->loop_.Post([self] { self->OnIdleCheck(); });
  });
}

void H2Connection::OnIdleCheck() {
  idle_timer_ = 0;
  if (phase_ != Phase::kOpen) return;
  if (!streams_.empty() && target_.clock->Now() - last_read_ >= target_.read_idle) Ping();
  ArmIdleCheck();
}

void H2Connection::DoCancel(uint64_t handle) {
  auto it = streams_.find(handle);
  if (it == streams_.end()) return;
  Stream& s = *it->second;
  s.sink.reset();
  if (s.id > 0 && session_ != nullptr) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
    Flush();  // OnStreamClose erases it
  } else {
    streams_.erase(it);
  }
}

void H2Connection::Connect(Result<std::vector<SocketAddress>> addresses) {
  if (phase_ != Phase::kResolving) return;
  if (!addresses.ok()) return Close(addresses.status());
  addresses_ = std::move(*addresses);
  phase_ = Phase::kConnecting;
  connect_failure_ = "no address";
  ConnectNext();
}

void H2Connection::ConnectNext() {
  const std::string where = target_.ep.host + ":" + target_.ep.port;
  while (next_address_ < addresses_.size()) {
    const SocketAddress& a = addresses_[next_address_++];
    if (fd_ >= 0) {
      loop_.Unwatch(fd_);
      close(fd_);
      CountConnection(ConnProtocol::kH2, -1);
    }
    fd_ = socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) {
      connect_failure_ = strerror(errno);
      continue;
    }
    CountConnection(ConnProtocol::kH2, +1);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A cluster that vanishes without closing the connection is noticed.
    int idle = 60;
    setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0 ||
        errno == EINPROGRESS) {
      loop_.Watch(fd_, EPOLLOUT | EPOLLRDHUP,
                  [self = shared_from_this()](uint32_t ev) { self->OnIo(ev); });
      return;
    }
    connect_failure_ = strerror(errno);
  }
  Close(StatusFromLink(LinkFailure::kLink, "connect to " + where + ": " + connect_failure_));
}

void H2Connection::OnConnectDeadline() {
  if (phase_ == Phase::kOpen || phase_ == Phase::kClosed) return;
  connect_timer_ = 0;
  Close(StatusFromLink(LinkFailure::kLink, "connect to " + target_.ep.host + ":" + target_.ep.port +
                                               ": timed out after " +
                                               std::to_string(target_.connect_timeout.count()) +
                                               " ms"));
}

void H2Connection::OnIo(uint32_t events) {
  switch (phase_) {
    case Phase::kConnecting: {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        connect_failure_ = strerror(err);
        ConnectNext();
        return;
      }
      ssl_ = SSL_new(target_.tls.get());
      BIO* bio = ssl_ != nullptr ? BIO_new(StreamBio()) : nullptr;
      if (bio == nullptr) return Close(Internal("cannot create a TLS session: " + OpenSslError()));
      BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd_)));
      BIO_set_init(bio, 1);
      SSL_set_bio(ssl_, bio, bio);
      SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      static const unsigned char kAlpn[] = "\x02h2\x08http/1.1";
      SSL_set_alpn_protos(ssl_, kAlpn, sizeof(kAlpn) - 1);
      if (Status st = PrepareSession(ssl_, target_.verify_name, target_.insecure); !st.ok()) {
        return Close(st);
      }
      phase_ = Phase::kHandshake;
      Handshake();
      return;
    }
    case Phase::kHandshake:
      Handshake();
      return;
    case Phase::kOpen:
      if (events & (EPOLLOUT)) write_blocked_ = false;
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP) || read_wants_write_) Read();
      if (phase_ == Phase::kOpen) Flush();
      return;
    default:
      return;
  }
}

void H2Connection::Handshake() {
  ERR_clear_error();
  int r = SSL_connect(ssl_);
  if (r != 1) {
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      loop_.Watch(fd_, (e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT) | EPOLLRDHUP,
                  [self = shared_from_this()](uint32_t ev) { self->OnIo(ev); });
      return;
    }
    const std::string where = "TLS handshake with " + target_.ep.host + ":" + target_.ep.port;
    long verify = SSL_get_verify_result(ssl_);
    if (!target_.insecure && verify != X509_V_OK) {
      ERR_clear_error();
      return Close(StatusFromLink(LinkFailure::kUntrustedServer,
                                  where + ": the server's certificate is not trusted for \"" +
                                      target_.verify_name +
                                      "\": " + X509_verify_cert_error_string(verify)));
    }
    std::string why = OpenSslError();
    if (why.empty())
      why = e == SSL_ERROR_SYSCALL && errno != 0 ? strerror(errno) : "connection closed";
    return Close(StatusFromLink(LinkFailure::kLink, where + " failed: " + why));
  }
  const unsigned char* proto = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &proto, &len);
  const bool h2 = len == 2 && std::memcmp(proto, "h2", 2) == 0;
  if (on_protocol_) on_protocol_(h2);
  if (!h2) return Close(Unavailable("the server does not speak HTTP/2"), /*no_h2=*/true);
  if (Status st = StartSession(); !st.ok()) return Close(st);
  if (connect_timer_ != 0) target_.clock->Cancel(connect_timer_);
  connect_timer_ = 0;
  phase_ = Phase::kOpen;
  open_.store(true, std::memory_order_release);
  last_read_ = target_.clock->Now();
  ArmIdleCheck();
  SubmitPending();
  Flush();
}

Status H2Connection::StartSession() {
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return Internal("nghttp2: out of memory");
  nghttp2_session_callbacks_set_on_header_callback(cbs, &H2Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &H2Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &H2Callbacks::OnData);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &H2Callbacks::OnFrameSend);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &H2Callbacks::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, &H2Callbacks::OnFrameNotSend);
  int rc = nghttp2_session_client_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);
  if (rc != 0) return Internal(std::string("nghttp2: ") + nghttp2_strerror(rc));
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
  return Status::Ok();
}

void H2Connection::SubmitPending() {
  for (auto& [handle, s] : streams_) {
    if (s->id < 0) SubmitOne(*s);
  }
}

void H2Connection::SubmitOne(Stream& s) {
  std::string scheme = "https";
  std::vector<nghttp2_nv> nv;
  auto add = [&nv](const std::string& n, const std::string& v) {
    nv.push_back(nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                            reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(),
                            v.size(), NGHTTP2_NV_FLAG_NONE});
  };
  static const std::string kMethod = ":method", kScheme = ":scheme", kAuthority = ":authority",
                           kPath = ":path";
  add(kMethod, s.request.method);
  add(kScheme, scheme);
  add(kAuthority, target_.ep.authority);
  add(kPath, s.request.path);
  for (const auto& [n, v] : s.request.headers) add(n, v);
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = &H2Callbacks::ReadBody;
  const bool has_body = !s.request.body.empty();
  int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                      has_body ? &body : nullptr, &s);
  if (id < 0) {
    H2End end{H2End::kUnprocessed,
              Unavailable(std::string("HTTP/2: cannot submit: ") + nghttp2_strerror(id))};
    const uint64_t handle = s.handle;
    EndStream(s, end);
    streams_.erase(handle);
    return;
  }
  s.id = id;
  if (s.sink) s.sink->OnSubmitted();
}

void H2Connection::Read() {
  read_wants_write_ = false;
  thread_local char buf[16 * 1024];
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(ssl_, buf, sizeof(buf));
    if (n <= 0) {
      int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ) return;
      if (e == SSL_ERROR_WANT_WRITE) {
        read_wants_write_ = true;
        return;
      }
      std::string why = e == SSL_ERROR_ZERO_RETURN ? "the server closed the connection"
                        : e == SSL_ERROR_SSL       ? "TLS: " + OpenSslError()
                        : errno != 0               ? std::string(strerror(errno))
                                                   : "the server closed the connection";
      return Fail(why);
    }
    last_read_ = target_.clock->Now();
    ssize_t used =
        nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), static_cast<size_t>(n));
    if (used < 0) {
      return Close(
          StatusFromLink(LinkFailure::kMalformedAnswer,
                         std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used))));
    }
    if (phase_ != Phase::kOpen) return;
  }
}

void H2Connection::Flush() {
  if (phase_ != Phase::kOpen) return;
  for (;;) {
    while (out_.size() < kMaxBuffered) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        return Close(Internal(std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n))));
      }
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_.empty() || write_blocked_) break;
    ERR_clear_error();
    int n = SSL_write(ssl_, out_.data(), static_cast<int>(std::min<size_t>(out_.size(), INT_MAX)));
    if (n <= 0) {
      int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
        write_blocked_ = true;
        break;
      }
      return Fail(e == SSL_ERROR_SSL
                      ? "TLS: " + OpenSslError()
                      : "send: " + std::string(errno != 0 ? strerror(errno) : "failed"));
    }
    out_.erase(0, static_cast<size_t>(n));
    // Ten thousand idle connections must not each keep a large buffer.
    if (out_.empty() && out_.capacity() > 16 * 1024) std::string().swap(out_);
  }
  if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_) &&
      out_.empty()) {
    // A GOAWAY was exchanged and every stream is done.
    return Close(Unavailable("the HTTP/2 connection was closed"));
  }
  Arm();
}

void H2Connection::Arm() {
  uint32_t ev = EPOLLIN | EPOLLRDHUP;
  if (write_blocked_ || read_wants_write_) ev |= EPOLLOUT;
  if (ev == armed_) return;
  armed_ = ev;
  loop_.Watch(fd_, ev, [self = shared_from_this()](uint32_t e) { self->OnIo(e); });
}

void H2Connection::EndStream(Stream& s, const H2End& end) {
  std::shared_ptr<H2StreamSink> sink = std::move(s.sink);
  if (sink) sink->OnEnd(end);
}

Status H2Connection::StatusFromLinkFailure(const std::string& why) {
  return StatusFromLink(LinkFailure::kLink, why);
}

void H2Connection::Close(Status why, bool no_h2) {
  if (phase_ == Phase::kClosed) return;
  const bool was_open = phase_ == Phase::kOpen;
  phase_ = Phase::kClosed;
  accepting_.store(false, std::memory_order_release);
  open_.store(false, std::memory_order_release);
  for (Clock::TimerId* t : {&connect_timer_, &idle_timer_, &ping_timer_}) {
    if (*t != 0) target_.clock->Cancel(*t);
    *t = 0;
  }
  if (fd_ >= 0) {
    loop_.Unwatch(fd_);
    close(fd_);
    CountConnection(ConnProtocol::kH2, -1);
    fd_ = -1;
  }
  // Streams the server may have seen failed; the others can be resent.
  closed_kind_ = no_h2 ? H2End::kNoH2 : was_open ? H2End::kUnprocessed : H2End::kFailed;
  closed_status_ = why.ok() ? Unavailable("the HTTP/2 connection was closed") : why;
  std::map<uint64_t, std::shared_ptr<Stream>> streams = std::move(streams_);
  streams_.clear();
  for (auto& [handle, s] : streams) {
    H2End end;
    // Before the connection was up nothing can be resent usefully: the
    // connect failed, and a new one would too.
    end.kind = no_h2                            ? H2End::kNoH2
               : (was_open && !s->headers_sent) ? H2End::kUnprocessed
                                                : H2End::kFailed;
    end.status = why.ok() ? Unavailable("the HTTP/2 connection was closed") : why;
    EndStream(*s, end);
  }
  if (session_ != nullptr) nghttp2_session_del(session_);
  session_ = nullptr;
  if (ssl_ != nullptr) SSL_free(ssl_);
  ssl_ = nullptr;
  out_.clear();
}

}  // namespace eco::k8s
