// The HTTP/2 client against a small in-process HTTP/2 server (nghttp2 on a
// blocking TLS socket): what kube-sim does not do, a GOAWAY that refuses a
// request the client already sent.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "k8s/client.h"
#include "k8s/h2_transport.h"
#include "test_certs.h"

namespace eco::k8s {
namespace {

// Serves one connection at a time. Every request gets 200 "{}", except the
// `goaway_at`th (counted over all connections): the server answers it with
// GOAWAY naming the stream before it as the last it processed, and closes.
class FakeH2Server {
 public:
  FakeH2Server(const testing::CertKey& cert, int goaway_at) : goaway_at_(goaway_at) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cb = BIO_new_mem_buf(cert.cert_pem.data(), static_cast<int>(cert.cert_pem.size()));
    X509* x = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(cert.key_pem.data(), static_cast<int>(cert.key_pem.size()));
    EVP_PKEY* k = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    SSL_CTX_use_certificate(ctx_, x);
    SSL_CTX_use_PrivateKey(ctx_, k);
    X509_free(x);
    EVP_PKEY_free(k);
    SSL_CTX_set_alpn_select_cb(
        ctx_,
        [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
           unsigned inlen, void*) {
          for (unsigned i = 0; i + 1 < inlen; i += in[i] + 1) {
            if (in[i] == 2 && std::memcmp(in + i + 1, "h2", 2) == 0) {
              *out = in + i + 1;
              *outlen = 2;
              return SSL_TLSEXT_ERR_OK;
            }
          }
          return SSL_TLSEXT_ERR_NOACK;
        },
        nullptr);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(listen_fd_, 8);
    socklen_t len = sizeof(a);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }

  ~FakeH2Server() {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
    SSL_CTX_free(ctx_);
  }

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  int requests() const { return requests_; }

 private:
  struct Conn {
    FakeH2Server* server;
    SSL* ssl;
    nghttp2_session* session = nullptr;
    bool close = false;
  };

  void Serve() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      ++connections_;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) ServeConnection(ssl);
      SSL_free(ssl);
      close(fd);
    }
  }

  static ssize_t Send(nghttp2_session*, const uint8_t* data, size_t len, int, void* user) {
    auto* c = static_cast<Conn*>(user);
    int n = SSL_write(c->ssl, data, static_cast<int>(len));
    return n <= 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
  }

  static ssize_t Body(nghttp2_session*, int32_t, uint8_t* buf, size_t, uint32_t* flags,
                      nghttp2_data_source*, void*) {
    std::memcpy(buf, "{}", 2);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 2;
  }

  static int OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    auto* c = static_cast<Conn*>(user);
    const bool request_done =
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (!request_done) return 0;
    const int n = ++c->server->requests_;
    if (n == c->server->goaway_at_) {
      nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id - 2, NGHTTP2_NO_ERROR,
                            nullptr, 0);
      c->close = true;
      return 0;
    }
    nghttp2_nv nv[] = {{(uint8_t*)":status", (uint8_t*)"200", 7, 3, NGHTTP2_NV_FLAG_NONE}};
    nghttp2_data_provider body{};
    body.read_callback = &Body;
    nghttp2_submit_response(session, frame->hd.stream_id, nv, 1, &body);
    return 0;
  }

  void ServeConnection(SSL* ssl) {
    Conn c{this, ssl};
    nghttp2_session_callbacks* cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, &Send);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &OnFrame);
    nghttp2_session_server_new(&c.session, cbs, &c);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, nullptr, 0);
    char buf[16384];
    while (nghttp2_session_send(c.session) == 0 && !c.close) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) break;
      if (nghttp2_session_mem_recv(c.session, reinterpret_cast<uint8_t*>(buf), n) < 0) break;
    }
    nghttp2_session_send(c.session);  // the GOAWAY
    SSL_shutdown(ssl);
    nghttp2_session_del(c.session);
  }

  const int goaway_at_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// The second request is refused by a GOAWAY (the server never processed
// it): the client sends it again on a new connection, and the caller sees
// only the answer.
TEST(H2Transport, ARequestRefusedByGoawayIsSentAgainOnANewConnection) {
  testing::CertKey ca = testing::MakeCa("h2-ca");
  testing::CertKey leaf = testing::MakeLeaf(ca, "apiserver", {}, {"127.0.0.1"});
  FakeH2Server server(leaf, /*goaway_at=*/2);
  RestConfig cfg;
  cfg.server = server.url();
  cfg.ca_pem = ca.cert_pem;
  Result<std::unique_ptr<ClusterClient>> client = NewClusterClient(cfg);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<std::string> first = (*client)->GetRaw("/version");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, "{}");
  Result<std::string> second = (*client)->GetRaw("/version");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, "{}");
  EXPECT_EQ((*client)->h2_session()->protocol(), H2Session::Protocol::kH2);
  EXPECT_EQ((*client)->h2_session()->connections_opened(), 2u);
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(server.requests(), 3);  // answered, refused, answered
}

}  // namespace
}  // namespace eco::k8s
