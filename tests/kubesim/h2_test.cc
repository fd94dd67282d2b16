// kube-sim's HTTP/2 transport, in process on loopback, driven by a small
// nghttp2 client over OpenSSL (it controls per-stream flow control, which
// curl does not let a test do).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kubesim/server.h"
#include "process.h"
#include "kubesim/tls.h"

namespace eco::kubesim {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A blocking-free HTTP/2 client on one TLS connection. Single-threaded: the
// test pumps it (Until) while the server runs on its own threads.
class H2Client {
 public:
  struct Response {
    int status = 0;
    std::string body;
    bool closed = false;
    uint32_t error = 0;  // RST_STREAM code, 0 when it ended normally
  };

  ~H2Client() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }

  // Connects and handshakes offering `alpn` (wire format); the stream window
  // the client grants is `window` per stream.
  bool Connect(uint16_t port, const std::string& alpn, int32_t window = 65535) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(alpn.data()),
                            static_cast<unsigned>(alpn.size()));
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) != 1) return false;
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    const unsigned char* p = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(ssl_, &p, &len);
    alpn_.assign(reinterpret_cast<const char*>(p), len);
    if (alpn_ != "h2") return true;

    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(
        cbs, +[](nghttp2_session*, const nghttp2_frame* f, const uint8_t* n, size_t nl,
                 const uint8_t* v, size_t vl, uint8_t, void* self) {
          if (std::string_view(reinterpret_cast<const char*>(n), nl) == ":status") {
            static_cast<H2Client*>(self)->responses[f->hd.stream_id].status =
                std::stoi(std::string(reinterpret_cast<const char*>(v), vl));
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cbs,
        +[](nghttp2_session* s, uint8_t, int32_t id, const uint8_t* d, size_t len, void* self) {
          auto* c = static_cast<H2Client*>(self);
          c->responses[id].body.append(reinterpret_cast<const char*>(d), len);
          // A paused stream's data stays unconsumed: its window is not given back.
          if (c->paused_.count(id) == 0) nghttp2_session_consume(s, id, len);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cbs, +[](nghttp2_session*, int32_t id, uint32_t code, void* self) {
          auto& r = static_cast<H2Client*>(self)->responses[id];
          r.closed = true;
          r.error = code;
          return 0;
        });
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_session_client_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(window)}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, 1);
    // Room on the connection for the streams that read, whatever a paused one holds.
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, 64 << 20);
    return true;
  }

  const std::string& alpn() const { return alpn_; }
  uint32_t RemoteSetting(nghttp2_settings_id id) const {
    return nghttp2_session_get_remote_settings(session_, id);
  }
  bool dead() const { return dead_; }

  int32_t Get(const std::string& path, bool paused = false) { return Request("GET", path, paused); }

  int32_t Request(const std::string& method, const std::string& path, bool paused = false,
                  std::string body = "") {
    const std::string m = ":method", get = method, s = ":scheme", https = "https", a = ":authority",
                      host = "127.0.0.1", p = ":path", ct = "content-type",
                      json = "application/json";
    std::vector<nghttp2_nv> nva = {Nv(m, get), Nv(s, https), Nv(a, host), Nv(p, path)};
    nghttp2_data_provider provider{};
    std::string* source = nullptr;
    if (!body.empty()) {
      nva.push_back(Nv(ct, json));
      source = bodies_.emplace_back(std::make_unique<std::string>(std::move(body))).get();
      provider.source.ptr = source;
      provider.read_callback = +[](nghttp2_session*, int32_t, uint8_t* buf, size_t len,
                                   uint32_t* flags, nghttp2_data_source* src, void*) -> ssize_t {
        auto* rest = static_cast<std::string*>(src->ptr);
        size_t n = std::min(len, rest->size());
        std::memcpy(buf, rest->data(), n);
        rest->erase(0, n);
        if (rest->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
      };
    }
    int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                        source != nullptr ? &provider : nullptr, nullptr);
    if (paused) paused_.insert(id);
    responses[id];
    return id;
  }

  // Exchanges frames until `done` holds; false once 20 s passed or the connection died.
  template <typename Pred>
  bool Until(Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done()) {
      if (dead_ || std::chrono::steady_clock::now() > deadline) return done();
      Pump();
    }
    return true;
  }

  void Reset(int32_t id) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }

  // One round: sends what is queued, reads what has arrived (waits up to 20 ms).
  void Pump() {
    const uint8_t* data = nullptr;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(session_, &data)) > 0) {
      out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    while (!out_.empty()) {
      int w = SSL_write(ssl_, out_.data(), static_cast<int>(out_.size()));
      if (w > 0) {
        out_.erase(0, static_cast<std::size_t>(w));
        continue;
      }
      if (SSL_get_error(ssl_, w) != SSL_ERROR_WANT_WRITE) return Die();
      pollfd pw{fd_, POLLOUT, 0};
      ::poll(&pw, 1, 50);
    }
    pollfd pr{fd_, POLLIN, 0};
    if (SSL_pending(ssl_) == 0 && ::poll(&pr, 1, 20) <= 0) return;
    uint8_t buf[16384];
    for (;;) {
      int r = SSL_read(ssl_, buf, sizeof buf);
      if (r <= 0) {
        if (SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ) return;
        return Die();
      }
      if (nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(r)) < 0) return Die();
    }
  }

  std::map<int32_t, Response> responses;

 private:
  static nghttp2_nv Nv(const std::string& n, const std::string& v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                      NGHTTP2_NV_FLAG_NONE};
  }

  void Die() {
    ERR_clear_error();
    dead_ = true;
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  nghttp2_session* session_ = nullptr;
  std::string alpn_;
  std::string out_;
  std::set<int32_t> paused_;
  std::vector<std::unique_ptr<std::string>> bodies_;  // request bodies being sent
  bool dead_ = false;
};

// Waits for the state `pred` proves (the fixtures' WaitUntil); false after a
// generous deadline, so a broken server fails instead of hanging.
template <typename Pred>
bool Eventually(Pred pred) {
  return eco::testing::WaitUntil(pred, std::chrono::milliseconds(20000));
}

const std::string kOfferBoth = std::string("\x02h2\x08http/1.1", 12);

class H2Test : public ::testing::Test {
 protected:
  void Start(ServerOptions o = {}) {
    auto m = GenerateTlsMaterial("127.0.0.1");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    o.tls_cert_pem = m->server_cert_pem;
    o.tls_key_pem = m->server_key_pem;
    o.host = "127.0.0.1";
    o.seed = 42;
    o.cluster_exists = [](const std::string& n) { return n == "c1" || n == "c2"; };
    auto s = Server::Start(std::move(o), [this](const HttpRequest& r) { return Handle(r); });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  // ".../watch" streams (the test writes); anything else echoes the request.
  HttpReply Handle(const HttpRequest& r) {
    if (r.path.size() >= 6 && r.path.compare(r.path.size() - 6, 6, "/watch") == 0) {
      HttpReply reply;
      reply.on_stream = [this](std::shared_ptr<Stream> s) {
        std::lock_guard lock(mu_);
        streams_.push_back(std::move(s));
        cv_.notify_all();
      };
      return reply;
    }
    json j = {{"method", r.method},
              {"path", r.path},
              {"query", r.query},
              {"headers", r.headers},
              {"body", r.body}};
    HttpResponse resp;
    resp.body = j.dump();
    return HttpReply::Whole(std::move(resp));
  }

  // The n-th stream the handler opened (0-based), once it exists.
  std::shared_ptr<Stream> StreamNo(std::size_t n, H2Client* pump) {
    auto have = [&] {
      std::lock_guard lock(mu_);
      return streams_.size() > n;
    };
    if (!pump->Until(have)) return nullptr;
    std::lock_guard lock(mu_);
    return streams_[n];
  }

  // A /sim call over its own HTTP/2 connection: GET for connections, else POST.
  json Sim(const std::string& path) {
    H2Client c;
    if (!c.Connect(server_->port(), kOfferBoth)) return nullptr;
    bool get = path.size() > 12 && path.compare(path.size() - 12, 12, "/connections") == 0;
    int32_t id = c.Request(get ? "GET" : "POST", path);
    if (!c.Until([&] { return c.responses[id].closed; })) return nullptr;
    return json::parse(c.responses[id].body, nullptr, false);
  }

  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Stream>> streams_;
};

// ALPN picks h2; a watch and whole requests share the one connection, each
// answered while the watch stays open; the connection counts per cluster.
TEST_F(H2Test, WholeRequestsAndWatchShareOneConnection) {
  Start();
  H2Client c;
  ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
  ASSERT_EQ(c.alpn(), "h2");
  int32_t watch = c.Get("/clusters/c1/api/v1/pods/watch");
  auto stream = StreamNo(0, &c);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(stream->Write("{\"type\":\"ADDED\"}\n"));
  int32_t get = c.Get("/clusters/c1/api/v1/namespaces?limit=5&labelSelector=a%3Db");
  ASSERT_TRUE(c.Until([&] { return c.responses[get].closed; }));
  EXPECT_EQ(c.responses[get].status, 200);
  json echoed = json::parse(c.responses[get].body);
  EXPECT_EQ(echoed["path"], "/clusters/c1/api/v1/namespaces");
  EXPECT_EQ(echoed["query"]["labelSelector"], "a=b");
  EXPECT_EQ(echoed["headers"]["host"], "127.0.0.1");
  // kube-apiserver's SETTINGS (docs/kube-sim.md).
  EXPECT_EQ(c.RemoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 100u);
  EXPECT_EQ(c.RemoteSetting(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE), 256u * 1024);
  EXPECT_EQ(c.RemoteSetting(NGHTTP2_SETTINGS_MAX_FRAME_SIZE), 256u * 1024);
  // A body larger than a frame and the client's first window arrives whole.
  const std::string big(300000, 'b');
  int32_t post = c.Request("POST", "/clusters/c1/api/v1/namespaces/x/configmaps", false,
                           "{\"data\":\"" + big + "\"}");
  ASSERT_TRUE(c.Until([&] { return c.responses[post].closed; }));
  json posted = json::parse(c.responses[post].body);
  EXPECT_EQ(posted["method"], "POST");
  EXPECT_EQ(posted["headers"]["content-type"], "application/json");
  EXPECT_EQ(posted["body"], "{\"data\":\"" + big + "\"}");
  ASSERT_TRUE(c.Until([&] { return c.responses[watch].body == "{\"type\":\"ADDED\"}\n"; }));
  EXPECT_FALSE(c.responses[watch].closed);

  EXPECT_EQ(server_->stats().h2_connections, 1u);
  json conns = Sim("/sim/clusters/c1/connections");
  EXPECT_EQ(conns, json({{"cluster", "c1"}, {"connections", 1}, {"h2", 1}, {"streams", 1}}));
  EXPECT_EQ(Sim("/sim/clusters/c2/connections")["connections"], 0);

  ASSERT_TRUE(stream->Write("{\"type\":\"MODIFIED\"}\n"));
  stream->Close();
  ASSERT_TRUE(c.Until([&] { return c.responses[watch].closed; }));
  EXPECT_EQ(c.responses[watch].error, 0u);
  EXPECT_EQ(c.responses[watch].body, "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n");
  EXPECT_FALSE(stream->Write("late"));
  EXPECT_EQ(Sim("/sim/clusters/c1/connections")["streams"], 0);
}

// A watch whose client stops reading is cut off (RST_STREAM) once its unsent
// data passes the limit; the connection and its other streams go on.
TEST_F(H2Test, StreamThatIsNotReadIsCutOffAlone) {
  ServerOptions o;
  o.stream_queue_limit = 1 << 20;
  Start(o);
  H2Client c;
  ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
  int32_t stuck = c.Get("/clusters/c1/a/watch", /*paused=*/true);
  int32_t live = c.Get("/clusters/c1/b/watch");
  // One connection, one strand: the handler sees the streams in order.
  auto stuck_stream = StreamNo(0, &c);
  auto live_stream = StreamNo(1, &c);
  ASSERT_NE(stuck_stream, nullptr);
  ASSERT_NE(live_stream, nullptr);
  ASSERT_TRUE(live_stream->Write("x"));
  ASSERT_TRUE(c.Until([&] { return c.responses[live].body == "x"; }));

  const std::string chunk(64 * 1024, 'y');
  int writes = 0;
  while (writes < 1000 && stuck_stream->Write(chunk)) {
    ++writes;
    c.Pump();  // the client reads what arrives, consuming only `live`
  }
  EXPECT_LT(writes, 1000);
  EXPECT_TRUE(stuck_stream->Closed());
  ASSERT_TRUE(c.Until([&] { return c.responses[stuck].closed; }));
  EXPECT_EQ(c.responses[stuck].error, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));

  ASSERT_TRUE(live_stream->Write("z"));
  EXPECT_TRUE(c.Until([&] { return c.responses[live].body == "xz"; }));
  int32_t get = c.Get("/clusters/c1/api");
  EXPECT_TRUE(c.Until([&] { return c.responses[get].closed; }));
  EXPECT_EQ(c.responses[get].status, 200);
  EXPECT_FALSE(c.dead());
  EXPECT_EQ(server_->stats().h2_connections, 1u);
}

// down resets the connection that carried the cluster (its streams end);
// hang holds one cluster's streams while another's are answered on the same
// connection, and up lets the held ones go with RST_STREAM.
TEST_F(H2Test, FaultsPerClusterOnOneConnection) {
  Start();
  {
    H2Client c;
    ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
    c.Get("/clusters/c1/watch");
    auto stream = StreamNo(0, &c);
    ASSERT_NE(stream, nullptr);
    ASSERT_EQ(Sim("/sim/clusters/c1/hang")["hang"], true);
    int32_t held = c.Get("/clusters/c1/api");
    int32_t other = c.Get("/clusters/c2/api");
    ASSERT_TRUE(c.Until([&] { return c.responses[other].closed; }));
    EXPECT_EQ(c.responses[other].status, 200);
    EXPECT_TRUE(c.Until([&] { return server_->stats().hung_requests == 1; }));
    EXPECT_FALSE(c.responses[held].closed);
    ASSERT_EQ(Sim("/sim/clusters/c1/up")["hang"], false);
    ASSERT_TRUE(c.Until([&] { return c.responses[held].closed; }));
    EXPECT_EQ(c.responses[held].status, 0);
    EXPECT_NE(c.responses[held].error, 0u);
    EXPECT_EQ(server_->stats().hung_requests, 0u);
    EXPECT_FALSE(stream->Closed());

    // errors per stream: c1's answered 500, c2's on the same connection not.
    ASSERT_EQ(Sim("/sim/clusters/c1/errors?rate=1")["errorRate"], 1.0);
    int32_t failed = c.Get("/clusters/c1/api");
    int32_t fine = c.Get("/clusters/c2/api");
    ASSERT_TRUE(c.Until([&] { return c.responses[failed].closed && c.responses[fine].closed; }));
    EXPECT_EQ(c.responses[failed].status, 500);
    EXPECT_EQ(c.responses[fine].status, 200);
    ASSERT_EQ(Sim("/sim/clusters/c1/up")["errorRate"], 0.0);

    // latency per stream: c1's answer waits (an hour), c2's does not; the
    // client giving up on c1's stream ends it.
    ASSERT_EQ(Sim("/sim/clusters/c1/latency?ms=3600000")["latencyMs"], 3600000);
    int32_t slow = c.Get("/clusters/c1/api");
    int32_t quick = c.Get("/clusters/c2/api");
    ASSERT_TRUE(c.Until([&] { return c.responses[quick].closed; }));
    EXPECT_EQ(c.responses[quick].status, 200);
    EXPECT_FALSE(c.responses[slow].closed);
    EXPECT_EQ(Sim("/sim/clusters/c1/connections")["streams"], 2);  // the watch and `slow`
    c.Reset(slow);
    ASSERT_TRUE(c.Until([&] { return c.responses[slow].closed; }));
    EXPECT_TRUE(c.Until([&] { return Sim("/sim/clusters/c1/connections")["streams"] == 1; }));
    ASSERT_EQ(Sim("/sim/clusters/c1/up")["latencyMs"], 0);

    uint64_t resets = server_->stats().resets;
    ASSERT_EQ(Sim("/sim/clusters/c1/down")["down"], true);
    EXPECT_TRUE(c.Until([&] { return c.dead(); }));
    EXPECT_TRUE(Eventually([&] { return stream->Closed(); }));
    EXPECT_FALSE(stream->Write("gone"));
    EXPECT_EQ(server_->stats().resets, resets + 1);
  }
  EXPECT_TRUE(Eventually([&] { return server_->stats().h2_connections == 0; }));
  // Still down: a new connection's request for c1 is reset; c2 is unaffected.
  H2Client again;
  ASSERT_TRUE(again.Connect(server_->port(), kOfferBoth));
  int32_t c2 = again.Get("/clusters/c2/api");
  ASSERT_TRUE(again.Until([&] { return again.responses[c2].closed; }));
  again.Get("/clusters/c1/api");
  EXPECT_TRUE(again.Until([&] { return again.dead(); }));
  EXPECT_EQ(Sim("/sim/clusters/c1/connections")["connections"], 0);
}

// A client's RST_STREAM closes that watch only; Stop closes the rest.
TEST_F(H2Test, ClientResetAndStopCloseStreams) {
  Start();
  H2Client c;
  ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
  int32_t first = c.Get("/clusters/c1/watch");
  auto cancelled = StreamNo(0, &c);
  c.Get("/clusters/c2/watch");
  auto kept = StreamNo(1, &c);
  ASSERT_NE(cancelled, nullptr);
  ASSERT_NE(kept, nullptr);
  c.Reset(first);
  ASSERT_TRUE(c.Until([&] { return cancelled->Closed(); }));
  EXPECT_FALSE(cancelled->Write("late"));
  EXPECT_FALSE(kept->Closed());
  EXPECT_TRUE(Eventually([&] { return server_->stats().open_streams == 1; }));
  EXPECT_EQ(Sim("/sim/clusters/c1/connections")["streams"], 0);
  EXPECT_EQ(Sim("/sim/clusters/c2/connections")["streams"], 1);
  server_->Stop();
  EXPECT_TRUE(kept->Closed());
  EXPECT_FALSE(kept->Write("after stop"));
}

// A request body over the limit is answered 413 on its stream; the
// connection serves on.
TEST_F(H2Test, BodyOverLimitIs413) {
  ServerOptions o;
  o.body_limit = 1000;
  Start(o);
  H2Client c;
  ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
  int32_t big = c.Request("POST", "/clusters/c1/api", false, std::string(5000, 'x'));
  ASSERT_TRUE(c.Until([&] { return c.responses[big].closed; }));
  EXPECT_EQ(c.responses[big].status, 413);
  int32_t small = c.Request("POST", "/clusters/c1/api", false, std::string(1000, 'x'));
  ASSERT_TRUE(c.Until([&] { return c.responses[small].closed; }));
  EXPECT_EQ(c.responses[small].status, 200);
}

// http2 = false: ALPN answers http/1.1 to a client that offers both.
TEST_F(H2Test, Http2OffServesHttp11Only) {
  ServerOptions o;
  o.http2 = false;
  Start(o);
  H2Client c;
  ASSERT_TRUE(c.Connect(server_->port(), kOfferBoth));
  EXPECT_EQ(c.alpn(), "http/1.1");
  EXPECT_EQ(server_->stats().h2_connections, 0u);
}

}  // namespace
}  // namespace eco::kubesim
