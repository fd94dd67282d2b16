#include "k8s/watch_stream.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>

#include "k8s/conn_count.h"
#include "k8s/errors.h"

namespace eco::k8s {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;


// OpenSSL reads and writes the non-blocking socket through this BIO:
// send(MSG_NOSIGNAL), so a closed peer cannot raise SIGPIPE; EAGAIN becomes
// a retry (SSL_ERROR_WANT_READ / WANT_WRITE).
int StreamBioWrite(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  for (;;) {
    ssize_t n = send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
    return -1;
  }
}

int StreamBioRead(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  for (;;) {
    ssize_t n = recv(fd, data, static_cast<size_t>(len), 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
    return -1;
  }
}

long StreamBioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

}  // namespace

BIO_METHOD* StreamBio() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "eco watch socket");
    BIO_meth_set_write(m, StreamBioWrite);
    BIO_meth_set_read(m, StreamBioRead);
    BIO_meth_set_ctrl(m, StreamBioCtrl);
    return m;
  }();
  return method;
}


Result<std::vector<SocketAddress>> ResolveEndpoint(const Endpoint& ep) {
  std::vector<SocketAddress> out;
  sockaddr_storage numeric{};
  addrinfo literal{};
  if (NumericAddress(ep.host, ep.port, numeric, literal)) {
    out.push_back(SocketAddress{numeric, literal.ai_addrlen});
    return out;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(ep.host.c_str(), ep.port.c_str(), &hints, &found); rc != 0) {
    return StatusFromLink(LinkFailure::kLink,
                          "cannot resolve " + ep.host + ": " + gai_strerror(rc));
  }
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    out.push_back(a);
  }
  freeaddrinfo(found);
  if (out.empty())
    return StatusFromLink(LinkFailure::kLink, "cannot resolve " + ep.host + ": no address");
  return out;
}

// Beast's parser with the body handed on as it arrives: a watch answer is
// endless, so nothing of it is kept but what the sink keeps.
class WatchStream::Parser final : public http::basic_parser<false> {
 public:
  explicit Parser(WatchStream& owner) : owner_(owner) {
    header_limit(64 * 1024);
    body_limit(std::numeric_limits<std::uint64_t>::max());
    eager(true);
  }

  Sink* sink = nullptr;  // set for each put()
  bool stopped = false;  // the sink said stop

 private:
  void on_request_impl(http::verb, boost::beast::string_view, boost::beast::string_view, int,
                       error_code& ec) override {
    ec = http::error::bad_version;  // a response parser: never called
  }
  void on_response_impl(int code, boost::beast::string_view, int, error_code&) override {
    owner_.code_ = code;
  }
  void on_field_impl(http::field, boost::beast::string_view, boost::beast::string_view,
                     error_code&) override {}
  void on_header_impl(error_code&) override {
    if (owner_.code_ >= 200) sink->OnStatus(owner_.code_);
  }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, error_code& ec) override {
    return Deliver(body, ec);
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                 error_code& ec) override {
    return Deliver(body, ec);
  }
  void on_finish_impl(error_code&) override {}

  size_t Deliver(boost::beast::string_view body, error_code& ec) {
    if (owner_.code_ != 200) {
      size_t room = kMaxWatchErrorBody - std::min(kMaxWatchErrorBody, owner_.error_body_.size());
      owner_.error_body_.append(body.data(), std::min(room, body.size()));
      return body.size();
    }
    if (!sink->OnBody(std::string_view(body.data(), body.size()))) {
      stopped = true;
      ec = http::error::end_of_stream;  // any error ends put()
    }
    return body.size();
  }

  WatchStream& owner_;
};

WatchStream::WatchStream(Target target, std::string request)
    : target_(std::move(target)), request_(std::move(request)) {}

WatchStream::~WatchStream() { CloseSocket(); }

void WatchStream::CloseSocket() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees its BIO too
  ssl_ = nullptr;
  if (fd_ >= 0) {
    close(fd_);
    CountConnection(ConnProtocol::kHttp1, -1);
  }
  fd_ = -1;
}

WatchStream::Want WatchStream::Fail(std::string why) {
  CloseSocket();
  phase_ = Phase::kDone;
  failure_ = StatusFromLink(LinkFailure::kLink, std::move(why));
  return Want::kDone;
}

WatchStream::Want WatchStream::Start() {
  phase_ = Phase::kConnecting;
  next_address_ = 0;
  connect_failure_ = "no address";
  return Connect();
}

WatchStream::Want WatchStream::Connect() {
  while (next_address_ < target_.addresses.size()) {
    const SocketAddress& a = target_.addresses[next_address_++];
    CloseSocket();
    fd_ = socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) {
      connect_failure_ = strerror(errno);
      continue;
    }
    CountConnection(ConnProtocol::kHttp1, +1);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A cluster that vanishes without closing the connection is noticed
    // (as libcurl's TCP keep-alive does: 60 s idle, probes every 60 s).
    int idle = 60;
    setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0) {
      return Connected();
    }
    if (errno == EINPROGRESS) return Want::kWrite;
    connect_failure_ = strerror(errno);
  }
  return Fail("connect to " + target_.where + ": " + connect_failure_);
}

WatchStream::Want WatchStream::Connected() {
  if (!target_.tls) {
    phase_ = Phase::kSending;
    return Send();
  }
  ssl_ = SSL_new(target_.tls.get());
  if (ssl_ == nullptr) return Fail("cannot create a TLS session: " + OpenSslError());
  BIO* bio = BIO_new(StreamBio());
  if (bio == nullptr) return Fail("cannot create a TLS session: " + OpenSslError());
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd_)));
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);
  if (Status st = PrepareSession(ssl_, target_.verify_name, target_.insecure); !st.ok()) {
    return Fail(st.message());
  }
  phase_ = Phase::kHandshake;
  return Handshake();
}

WatchStream::Want WatchStream::Handshake() {
  ERR_clear_error();
  int r = SSL_connect(ssl_);
  if (r == 1) {
    phase_ = Phase::kSending;
    return Send();
  }
  int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ) return Want::kRead;
  if (e == SSL_ERROR_WANT_WRITE) return Want::kWrite;
  const std::string where = "TLS handshake with " + target_.where;
  long verify = SSL_get_verify_result(ssl_);
  if (!target_.insecure && verify != X509_V_OK) {
    ERR_clear_error();
    std::string why = where + ": the server's certificate is not trusted for \"" +
                      target_.verify_name + "\": " + X509_verify_cert_error_string(verify);
    CloseSocket();
    phase_ = Phase::kDone;
    failure_ = StatusFromLink(LinkFailure::kUntrustedServer, std::move(why));
    return Want::kDone;
  }
  std::string why = OpenSslError();
  if (why.empty())
    why = e == SSL_ERROR_SYSCALL && errno != 0 ? strerror(errno) : "connection closed";
  return Fail(where + " failed: " + why);
}

WatchStream::Want WatchStream::Send() {
  while (sent_ < request_.size()) {
    const char* p = request_.data() + sent_;
    const size_t left = request_.size() - sent_;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int r = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(left, INT_MAX)));
      if (r <= 0) {
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_WRITE) return Want::kWrite;
        if (e == SSL_ERROR_WANT_READ) return Want::kRead;
        std::string why = OpenSslError();
        return Fail("send to " + target_.where + ": " + (why.empty() ? strerror(errno) : why));
      }
      sent_ += static_cast<size_t>(r);
    } else {
      ssize_t r = send(fd_, p, left, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Want::kWrite;
      if (r < 0) return Fail("send to " + target_.where + ": " + strerror(errno));
      sent_ += static_cast<size_t>(r);
    }
  }
  // The request is not needed again (a new stream builds its own).
  std::string().swap(request_);
  parser_ = std::make_unique<Parser>(*this);
  phase_ = Phase::kReceiving;
  return Want::kRead;
}

WatchStream::Want WatchStream::OnReady(Sink& sink, std::span<char> scratch) {
  switch (phase_) {
    case Phase::kConnecting: {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) return Connected();
      connect_failure_ = strerror(err);
      return Connect();
    }
    case Phase::kHandshake:
      return Handshake();
    case Phase::kSending:
      return Send();
    case Phase::kReceiving:
      return Receive(sink, scratch);
    case Phase::kDone:
      break;
  }
  return Want::kDone;
}

WatchStream::Want WatchStream::Receive(Sink& sink, std::span<char> scratch) {
  // Until the socket (and OpenSSL's buffer: epoll cannot see it) is empty.
  for (;;) {
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      errno = 0;
      int r = SSL_read(ssl_, scratch.data(),
                       static_cast<int>(std::min<size_t>(scratch.size(), INT_MAX)));
      if (r <= 0) {
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_READ) return Want::kRead;
        if (e == SSL_ERROR_WANT_WRITE) return Want::kWrite;
        // Closed with close_notify (ZERO_RETURN) or without (SYSCALL, no error).
        const bool closed = e == SSL_ERROR_ZERO_RETURN ||
                            (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0);
        if (!closed) {
          std::string why = e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                                ? strerror(errno)
                                : "TLS: " + OpenSslError();
          return Fail("receive from " + target_.where + ": " + why);
        }
        n = 0;  // closed (with or without close_notify)
      } else {
        n = r;
      }
    } else {
      n = recv(fd_, scratch.data(), scratch.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Want::kRead;
      if (n < 0) return Fail("receive from " + target_.where + ": " + strerror(errno));
    }
    if (n == 0) {
      // The server closed: the end of an answer without a length, else cut short.
      error_code ec;
      if (unparsed_.empty() && parser_->got_some()) parser_->put_eof(ec);
      if (parser_->is_done() && !ec) {
        complete_ = true;
        CloseSocket();
        phase_ = Phase::kDone;
        return Want::kDone;
      }
      return Fail(code_ == 0 ? "the server at " + target_.where +
                                   " closed the connection without answering"
                             : "the server at " + target_.where + " cut the answer short");
    }
    if (!Parse(sink, std::string_view(scratch.data(), static_cast<size_t>(n)))) return Want::kDone;
  }
}

bool WatchStream::Parse(Sink& sink, std::string_view bytes) {
  // Bytes left over from the last read come first (the parser needs a
  // status line, header or chunk header in one piece).
  if (!unparsed_.empty()) {
    unparsed_.append(bytes);
    bytes = unparsed_;
  }
  size_t used = 0;
  while (used < bytes.size()) {
    error_code ec;
    parser_->sink = &sink;
    size_t n = parser_->put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (parser_->stopped) {
      aborted_ = true;
      CloseSocket();
      phase_ = Phase::kDone;
      return false;
    }
    if (ec == http::error::need_more) break;
    if (ec) {
      Fail("the answer from " + target_.where + " is not valid HTTP: " + ec.message());
      return false;
    }
    if (parser_->is_done()) {
      if (code_ >= 100 && code_ < 200) {  // an interim answer; the real one follows
        code_ = 0;
        parser_ = std::make_unique<Parser>(*this);
        continue;
      }
      complete_ = true;  // anything after the answer is ignored: no pipelining
      CloseSocket();
      phase_ = Phase::kDone;
      return false;
    }
  }
  // What is left is a few bytes (a chunk header cut by the read) or
  // nothing; the buffer is let go when empty, as ten thousands of idle
  // streams would otherwise each keep the size of a whole read.
  if (bytes.data() == unparsed_.data()) {
    std::string rest(bytes.substr(used));
    unparsed_.swap(rest);
  } else {
    unparsed_.assign(bytes.substr(used));
  }
  return true;
}

}  // namespace eco::k8s
