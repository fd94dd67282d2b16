#include "k8s/direct_transport.h"
#include "k8s/net.h"
#include "k8s/conn_count.h"
#include "k8s/errors.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace eco::k8s {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;
using Time = eco::Clock::Time;

}  // namespace

Result<Endpoint> ParseServer(std::string_view server) {
  Endpoint ep;
  const std::string bad = "server must be an http(s) URL, got \"" + std::string(server) + "\"";
  if (server.rfind("https://", 0) == 0) {
    ep.tls = true;
    server.remove_prefix(8);
  } else if (server.rfind("http://", 0) == 0) {
    server.remove_prefix(7);
  } else {
    return Invalid(bad);
  }
  size_t slash = server.find('/');
  std::string_view auth = server.substr(0, slash);
  if (slash != std::string_view::npos) ep.prefix = std::string(server.substr(slash));
  if (auth.find('@') != std::string_view::npos ||
      ep.prefix.find_first_of("?#") != std::string::npos) {
    return Invalid(bad);
  }
  ep.authority = std::string(auth);
  std::string_view port;
  if (!auth.empty() && auth.front() == '[') {
    size_t close = auth.find(']');
    if (close == std::string_view::npos) return Invalid(bad);
    ep.host = std::string(auth.substr(1, close - 1));
    std::string_view rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Invalid(bad);
      port = rest.substr(1);
    }
  } else {
    size_t colon = auth.rfind(':');
    ep.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) port = auth.substr(colon + 1);
  }
  if (ep.host.empty()) return Invalid(bad);
  ep.port = port.empty() ? (ep.tls ? "443" : "80") : std::string(port);
  return ep;
}

std::string OpenSslError() {
  unsigned long e = ERR_peek_last_error();
  char buf[256] = "";
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

bool NumericAddress(const std::string& host, const std::string& port_text,
                    sockaddr_storage& storage, addrinfo& out) {
  unsigned port = 0;
  const char* last = port_text.data() + port_text.size();
  auto [end, ec] = std::from_chars(port_text.data(), last, port);
  if (ec != std::errc() || end != last || port > 65535) return false;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  storage = {};
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    out.ai_addrlen = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    out.ai_addrlen = sizeof(sockaddr_in6);
  } else {
    return false;
  }
  out.ai_family = storage.ss_family;
  out.ai_socktype = SOCK_STREAM;
  out.ai_addr = reinterpret_cast<sockaddr*>(&storage);
  out.ai_next = nullptr;
  return true;
}

namespace {

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Bounds every blocking send and receive on the socket: a wait that
// reaches it fails with EAGAIN.
void SetIoTimeout(int fd, std::chrono::milliseconds ms) {
  timeval tv = ToTimeval(ms);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// ---- TLS contexts -------------------------------------------------------

Status AddCas(SSL_CTX* ctx, const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);  // takes its own reference
    X509_free(cert);
    ++added;
  }
  ERR_clear_error();  // the loop ends on "no start line"
  if (added == 0) return Invalid("certificate-authority holds no PEM certificate");
  return Status::Ok();
}

Status UseClientCertificate(SSL_CTX* ctx, const RestConfig& cfg) {
  std::unique_ptr<BIO, decltype(&BIO_free)> cb(
      BIO_new_mem_buf(cfg.client_cert_pem.data(), static_cast<int>(cfg.client_cert_pem.size())),
      BIO_free);
  X509* leaf = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) return Invalid("client certificate is not PEM: " + OpenSslError());
  int ok = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (ok != 1) return Invalid("client certificate unusable: " + OpenSslError());
  while (X509* extra = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add_extra_chain_cert(ctx, extra) != 1) {  // takes ownership on success
      X509_free(extra);
      return Invalid("client certificate chain unusable: " + OpenSslError());
    }
  }
  ERR_clear_error();
  std::unique_ptr<BIO, decltype(&BIO_free)> kb(
      BIO_new_mem_buf(cfg.client_key_pem.data(), static_cast<int>(cfg.client_key_pem.size())),
      BIO_free);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr);
  if (key == nullptr) return Invalid("client key is not PEM: " + OpenSslError());
  ok = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (ok != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return Invalid("client key unusable or not the certificate's: " + OpenSslError());
  }
  return Status::Ok();
}

Result<SslCtx> MakeContext(const RestConfig& cfg) {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (!ctx) return Internal("cannot create a TLS context: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // No SSL_MODE_RELEASE_BUFFERS: with OpenSSL 3 and 2,000 connections it
  // saved no measurable RSS and cost ~10% CPU per request in malloc.
  if (cfg.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (cfg.ca_pem.empty()) {
      // The system's roots from memory (read at start), shared by every
      // context; OpenSSL's default paths would read files per handshake.
      if (const SystemRoots& roots = LoadSystemRoots(); roots.store) {
        SSL_CTX_set1_cert_store(ctx.get(), roots.store.get());
      } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
        return Internal("cannot load the system's CA certificates: " + OpenSslError());
      }
    } else {
      ECO_RETURN_IF_ERROR(AddCas(ctx.get(), cfg.ca_pem));
    }
  }
  if (!cfg.client_cert_pem.empty() || !cfg.client_key_pem.empty()) {
    ECO_RETURN_IF_ERROR(UseClientCertificate(ctx.get(), cfg));
  }
  return ctx;
}

}  // namespace

Result<SslCtx> SharedContext(const RestConfig& cfg) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<SSL_CTX>> cache;  // guarded by mu
  std::string key;
  key.reserve(cfg.ca_pem.size() + cfg.client_cert_pem.size() + cfg.client_key_pem.size() + 3);
  key.append(cfg.insecure_skip_tls_verify ? "1" : "0").append(cfg.ca_pem).append(1, '\0');
  key.append(cfg.client_cert_pem).append(1, '\0').append(cfg.client_key_pem);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) {
    if (SslCtx live = it->second.lock()) return live;
  }
  ECO_ASSIGN_OR_RETURN(SslCtx made, MakeContext(cfg));
  cache[key] = made;
  if ((cache.size() & (cache.size() - 1)) == 0) {  // now and then, forget dead contexts
    std::erase_if(cache, [](const auto& e) { return e.second.expired(); });
  }
  return made;
}

Status PrepareSession(SSL* ssl, const std::string& verify_name, bool insecure) {
  const bool ip = IsIpAddress(verify_name);
  if (!ip) SSL_set_tlsext_host_name(ssl, verify_name.c_str());
  if (insecure) return Status::Ok();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, verify_name.c_str())
               : SSL_set1_host(ssl, verify_name.c_str());
  if (set != 1) return Invalid("cannot verify the server as \"" + verify_name + "\"");
  return Status::Ok();
}

namespace {

// ---- connections --------------------------------------------------------

// One open connection. Also Beast's SyncReadStream (read_some), so the
// response is parsed straight from the socket.
class Connection {
 public:
  Connection(int fd, eco::Clock& clock) : fd_(fd), clock_(clock) { CountConnection(ConnProtocol::kHttp1, +1); }
  ~Connection() {
    ssl_.reset();
    close(fd_);
    CountConnection(ConnProtocol::kHttp1, -1);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  void set_ssl(SSL* ssl) { ssl_.reset(ssl); }
  SSL* ssl() const { return ssl_.get(); }

  // Starts a request: failure state cleared, the answer due by `deadline`.
  void Begin(Time deadline) {
    deadline_ = deadline;
    received_ = 0;
    Clear();
  }
  void Clear() {
    errno_ = 0;
    eof_ = false;
    tls_error_.clear();
  }

  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      size_t chunk = std::min<size_t>(data.size(), INT_MAX);
      ssize_t n;
      if (ssl_) {
        ERR_clear_error();
        int r = SSL_write(ssl_.get(), data.data(), static_cast<int>(chunk));
        if (r <= 0) {
          NoteTlsError(r);
          return false;
        }
        n = r;
      } else {
        n = RawSend(data.data(), chunk);
        if (n < 0) return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b = *it;
      if (b.size() != 0) return ReadInto(static_cast<char*>(b.data()), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  // Declared for Beast's stream concept check only; never called.
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers);

  // Raw socket I/O, also used by the TLS layer (SocketBio).
  ssize_t RawRecv(char* p, size_t n) {
    for (;;) {
      ssize_t r = recv(fd_, p, n, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) errno_ = errno;
      if (r == 0) eof_ = true;
      return r;
    }
  }
  ssize_t RawSend(const char* p, size_t n) {
    for (;;) {
      ssize_t r = send(fd_, p, n, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) errno_ = errno;
      return r;
    }
  }

  size_t received() const { return received_; }
  bool timed_out() const {
    return errno_ == EAGAIN || errno_ == EWOULDBLOCK || errno_ == ETIMEDOUT;
  }
  // The server closed or reset the connection before a byte of the answer
  // came back: an idle keep-alive connection it had given up on.
  bool closed_before_answer() const {
    return received_ == 0 && (eof_ || errno_ == ECONNRESET || errno_ == EPIPE);
  }

  // What went wrong in the last failed operation, for messages.
  std::string Describe(const error_code& ec, std::chrono::milliseconds timeout) const {
    if (timed_out()) return "timed out after " + std::to_string(timeout.count()) + " ms";
    if (errno_ != 0) return strerror(errno_);
    if (eof_ || ec == http::error::end_of_stream || ec == boost::asio::error::eof) {
      return received_ == 0 ? "the server closed the connection without answering"
                            : "the server closed the connection before the answer was complete";
    }
    if (ec == http::error::partial_message) return "the answer was cut short";
    if (!tls_error_.empty()) return "TLS: " + tls_error_;
    return ec ? ec.message() : "unknown failure";
  }
  bool protocol_error(const error_code& ec) const {
    return errno_ == 0 && !eof_ && tls_error_.empty() && ec && ec != http::error::partial_message &&
           ec != http::error::end_of_stream && ec != boost::asio::error::eof;
  }

 private:
  size_t ReadInto(char* p, size_t n, error_code& ec) {
    if (clock_.Now() >= deadline_) {
      errno_ = ETIMEDOUT;
      ec = boost::asio::error::timed_out;
      return 0;
    }
    ssize_t r;
    if (ssl_) {
      ERR_clear_error();
      int got = SSL_read(ssl_.get(), p, static_cast<int>(std::min<size_t>(n, INT_MAX)));
      if (got <= 0) {
        int e = SSL_get_error(ssl_.get(), got);
        if (e == SSL_ERROR_ZERO_RETURN) eof_ = true;
        NoteTlsError(got);
      }
      r = got;
    } else {
      r = RawRecv(p, n);
    }
    if (r > 0) {
      received_ += static_cast<size_t>(r);
      ec = {};
      return static_cast<size_t>(r);
    }
    if (timed_out()) {
      ec = boost::asio::error::timed_out;
    } else if (errno_ != 0) {
      ec = error_code(errno_, boost::system::system_category());
    } else if (eof_) {
      ec = boost::asio::error::eof;
    } else {
      ec = boost::asio::error::connection_aborted;  // a TLS failure; tls_error_ says which
    }
    return 0;
  }

  void NoteTlsError(int ret) {
    int e = SSL_get_error(ssl_.get(), ret);
    // Socket errors and EOF were recorded by RawRecv/RawSend underneath.
    if (e == SSL_ERROR_SSL) tls_error_ = OpenSslError();
    ERR_clear_error();
  }

  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };

  const int fd_;
  eco::Clock& clock_;
  std::unique_ptr<SSL, SslFree> ssl_;
  Time deadline_ = Time::max();
  size_t received_ = 0;    // bytes of the current answer
  int errno_ = 0;          // of the last failed socket call
  bool eof_ = false;       // the server closed its side
  std::string tls_error_;  // OpenSSL's reason for the last TLS failure
};

// OpenSSL reads and writes through the Connection: send(MSG_NOSIGNAL), so a
// closed peer cannot raise SIGPIPE, and errno/EOF land where Describe looks.
int BioWrite(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  ssize_t n = static_cast<Connection*>(BIO_get_data(b))->RawSend(data, static_cast<size_t>(len));
  return n < 0 ? -1 : static_cast<int>(n);
}

int BioRead(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  ssize_t n = static_cast<Connection*>(BIO_get_data(b))->RawRecv(data, static_cast<size_t>(len));
  return n < 0 ? -1 : static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

BIO_METHOD* SocketBio() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "eco socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    return m;
  }();
  return method;
}

}  // namespace

Result<std::string> Gunzip(const std::string& in) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Internal("zlib: cannot start inflating");
  std::string out(std::max<size_t>(in.size() * 4, 4096), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  size_t have = 0;
  int rc;
  do {
    if (have == out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - have, UINT_MAX));
    size_t room = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    have += room - zs.avail_out;
  } while (rc == Z_OK);
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return Internal("the server sent a gzip body that does not decode");
  out.resize(have);
  return out;
}

namespace {

// ---- the transport ------------------------------------------------------

class DirectTransport final : public Transport {
 public:
  DirectTransport(RestConfig config, ClientOptions options, Endpoint ep)
      : Transport(std::move(config), std::move(options)),
        ep_(std::move(ep)),
        verify_name_(config_.tls_server_name.empty() ? ep_.host : config_.tls_server_name) {}

  Result<HttpResult> Do(std::string_view method, const std::string& path_and_query,
                        std::string_view body, std::string_view content_type,
                        std::string_view accept) override {
    ECO_ASSIGN_OR_RETURN(std::string token, tokens_.Get());
    if (token.find_first_of("\r\n") != std::string::npos) {
      return Invalid("the bearer token contains a line break");
    }
    const std::string request = BuildRequest(method, path_and_query, body, content_type, accept, token);

    std::unique_ptr<Connection> conn = Acquire();
    bool reused = conn != nullptr;
    for (int attempt = 0;; ++attempt) {
      if (!conn) {
        Result<std::unique_ptr<Connection>> fresh = Connect();
        if (!fresh.ok()) {
          Release(nullptr);
          return fresh.status().Annotate(std::string(method) + " " + path_and_query);
        }
        conn = std::move(*fresh);
        reused = false;
      }
      bool reusable = false;
      error_code ec;
      Result<HttpResult> out = RoundTrip(*conn, request, reusable, ec);
      if (out.ok()) {
        Release(reusable ? std::move(conn) : nullptr);
        return out;
      }
      // The server dropped an idle connection: say it again on a new one.
      // Every request the client sends is safe to repeat.
      const bool stale = reused && attempt == 0 && conn->closed_before_answer();
      conn.reset();
      if (!stale) {
        Release(nullptr);
        return out.status().Annotate(std::string(method) + " " + path_and_query);
      }
    }
  }

 private:
  std::string BuildRequest(std::string_view method, const std::string& path_and_query,
                           std::string_view body, std::string_view content_type, std::string_view accept,
                           const std::string& token) const {
    std::string r;
    r.reserve(192 + ep_.prefix.size() + path_and_query.size() + token.size() + body.size());
    r.append(method).append(" ").append(ep_.prefix).append(path_and_query);
    r.append(" HTTP/1.1\r\nHost: ").append(ep_.authority);
    r.append("\r\nUser-Agent: ").append(options_.user_agent);
    r.append("\r\nAccept: ").append(accept.empty() ? std::string_view("application/json") : accept);
    if (options_.accept_gzip) r.append("\r\nAccept-Encoding: gzip");
    if (!content_type.empty()) r.append("\r\nContent-Type: ").append(content_type);
    if (!token.empty()) r.append("\r\nAuthorization: Bearer ").append(token);
    if (!body.empty() || (method != "GET" && method != "DELETE")) {
      r.append("\r\nContent-Length: ").append(std::to_string(body.size()));
    }
    r.append("\r\n\r\n").append(body);
    return r;
  }

  Result<HttpResult> RoundTrip(Connection& c, const std::string& request, bool& reusable,
                               error_code& ec) {
    c.Begin(options_.clock->Now() + options_.request_timeout);
    if (!c.WriteAll(request))
      return StatusFromLink(LinkFailure::kLink, "send: " + c.Describe(ec, options_.request_timeout));

    // One buffer per thread, not per connection: idle connections hold none.
    thread_local boost::beast::flat_buffer buffer;
    constexpr size_t kBufferSize = 16 * 1024;
    if (buffer.capacity() > 64 * kBufferSize) buffer = boost::beast::flat_buffer();
    if (buffer.capacity() < kBufferSize) buffer.reserve(kBufferSize);
    buffer.consume(buffer.size());

    http::response_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    http::read(c, buffer, parser, ec);
    if (ec) {
      std::string why = "receive: " + c.Describe(ec, options_.request_timeout);
      return StatusFromLink(c.protocol_error(ec) ? LinkFailure::kMalformedAnswer : LinkFailure::kLink,
                            std::move(why));
    }
    auto& res = parser.get();
    HttpResult out;
    out.code = static_cast<long>(res.result_int());
    if (auto it = res.find(http::field::retry_after); it != res.end()) {
      out.retry_after = std::string(it->value());
    }
    // Nothing may be left over: this client never pipelines.
    reusable = res.keep_alive() && !parser.need_eof() && buffer.size() == 0;
    out.body = std::move(res.body());
    if (options_.accept_gzip && !out.body.empty()) {
      if (auto it = res.find(http::field::content_encoding); it != res.end()) {
        if (strncasecmp(it->value().data(), "gzip", 4) == 0 && it->value().size() == 4) {
          ECO_ASSIGN_OR_RETURN(std::string plain, Gunzip(out.body));
          out.body = std::move(plain);
        }
      }
    }
    return out;
  }

  Result<std::unique_ptr<Connection>> Connect() {
    const auto deadline = options_.clock->Now() + options_.connect_timeout;
    const std::string where = ep_.host + ":" + ep_.port;
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addrs(nullptr, freeaddrinfo);
    sockaddr_storage numeric{};
    addrinfo literal{};
    addrinfo* first = &literal;
    if (!NumericAddress(ep_.host, ep_.port, numeric, literal)) {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_family = AF_UNSPEC;
      addrinfo* found = nullptr;
      if (int rc = getaddrinfo(ep_.host.c_str(), ep_.port.c_str(), &hints, &found); rc != 0) {
        return StatusFromLink(LinkFailure::kLink,
                              "cannot resolve " + ep_.host + ": " + gai_strerror(rc));
      }
      addrs.reset(found);
      first = found;
    }
    std::string failure = "no address";
    for (addrinfo* ai = first; ai != nullptr; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        failure = strerror(errno);
        continue;
      }
      auto conn = std::make_unique<Connection>(fd, *options_.clock);  // closes fd on every path
      int err = 0;
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) err = WaitConnected(fd, deadline, *options_.clock);
      }
      if (err != 0) {
        failure = err == ETIMEDOUT ? "timed out after " +
                                         std::to_string(options_.connect_timeout.count()) + " ms"
                                   : strerror(err);
        continue;
      }
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
      if (ep_.tls) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - options_.clock->Now());
        SetIoTimeout(fd, std::max(left, std::chrono::milliseconds(1)));
        ECO_RETURN_IF_ERROR(Handshake(*conn));
      }
      SetIoTimeout(fd, options_.request_timeout);
      return conn;
    }
    return StatusFromLink(LinkFailure::kLink, "connect to " + where + ": " + failure);
  }

  // errno of a non-blocking connect once it is done; ETIMEDOUT at the deadline.
  static int WaitConnected(int fd, Time deadline, eco::Clock& clock) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now());
      if (left.count() <= 0) return ETIMEDOUT;
      pollfd p{fd, POLLOUT, 0};
      int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return errno;
      if (r == 0) return ETIMEDOUT;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      return err;
    }
  }

  Status Handshake(Connection& c) {
    ECO_ASSIGN_OR_RETURN(SslCtx ctx, TlsContext());
    SSL* ssl = SSL_new(ctx.get());
    if (ssl == nullptr) return Internal("cannot create a TLS session: " + OpenSslError());
    c.set_ssl(ssl);
    BIO* bio = BIO_new(SocketBio());
    if (bio == nullptr) return Internal("cannot create a TLS session: " + OpenSslError());
    BIO_set_data(bio, &c);
    BIO_set_init(bio, 1);
    SSL_set_bio(ssl, bio, bio);  // the session owns the BIO now
    ECO_RETURN_IF_ERROR(PrepareSession(ssl, verify_name_, config_.insecure_skip_tls_verify));
    c.Begin(Time::max());
    ERR_clear_error();
    int r = SSL_connect(ssl);
    if (r == 1) return Status::Ok();
    const std::string where = "TLS handshake with " + ep_.host + ":" + ep_.port;
    long verify = SSL_get_verify_result(ssl);
    if (!config_.insecure_skip_tls_verify && verify != X509_V_OK) {
      ERR_clear_error();
      return StatusFromLink(LinkFailure::kUntrustedServer,
                            where + ": the server's certificate is not trusted for \"" + verify_name_ +
                                "\": " + X509_verify_cert_error_string(verify));
    }
    std::string why = OpenSslError();
    error_code none;
    if (why.empty()) why = c.Describe(none, options_.connect_timeout);
    return StatusFromLink(LinkFailure::kLink, where + " failed: " + why);
  }

  Result<SslCtx> TlsContext() {
    std::lock_guard<std::mutex> lock(mu_);
    if (ctx_) return ctx_;
    Result<SslCtx> ctx = SharedContext(config_);
    if (ctx.ok()) ctx_ = *ctx;
    return ctx;
  }

  // Waits for a free slot; returns an idle connection or null (connect one).
  std::unique_ptr<Connection> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    const size_t limit = options_.max_connections == 0 ? 1 : options_.max_connections;
    cv_.wait(lock, [&] { return in_use_ < limit; });
    ++in_use_;
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }

  // Frees the slot; a non-null connection is kept for reuse.
  void Release(std::unique_ptr<Connection> c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --in_use_;
      if (c) idle_.push_back(std::move(c));
    }
    cv_.notify_one();
  }

  const Endpoint ep_;
  const std::string verify_name_;  // the name the server's certificate must carry

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  size_t in_use_ = 0;                              // guarded by mu_
  SslCtx ctx_;                                     // guarded by mu_; made at first TLS connect
};

}  // namespace

Result<std::unique_ptr<Transport>> NewDirectTransport(RestConfig config, ClientOptions options) {
  ECO_ASSIGN_OR_RETURN(Endpoint ep, ParseServer(config.server));
  return std::unique_ptr<Transport>(
      std::make_unique<DirectTransport>(std::move(config), std::move(options), std::move(ep)));
}

}  // namespace eco::k8s
