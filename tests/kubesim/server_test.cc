// kube-sim's transport, in process on loopback, driven by libcurl.
#include "kubesim/server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/base64.h"
#include "kubesim/kubeconfig_out.h"
#include "kubesim/tls.h"

namespace eco::kubesim {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Waits (without asserting anything about time) until `pred` holds; false
// after a generous deadline so a broken server fails instead of hanging.
template <typename Pred>
bool Eventually(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Streams the handler opened, handed to the test in order.
class StreamBox {
 public:
  void Put(std::shared_ptr<Stream> s) {
    std::lock_guard lock(mu_);
    streams_.push_back(std::move(s));
    cv_.notify_all();
  }
  std::shared_ptr<Stream> Take() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 20s, [&] { return !streams_.empty(); })) return nullptr;
    auto s = streams_.front();
    streams_.erase(streams_.begin());
    return s;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Stream>> streams_;
};

struct Reply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  long new_connections = 0;
  long http_version = 0;
  double seconds = 0;
};

// One curl easy handle: requests through it reuse its connection.
class Client {
 public:
  Client() : h_(curl_easy_init()) {}
  ~Client() { curl_easy_cleanup(h_); }
  CURL* handle() { return h_; }

  void TrustCa(const std::string& pem) { ca_ = pem; }

  Reply Do(const std::string& method, const std::string& url, const std::string& body = "",
           long timeout_ms = 20000, const std::vector<std::string>& headers = {}) {
    Reply r;
    curl_easy_setopt(h_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h_, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (method == "GET") {
      curl_easy_setopt(h_, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(h_, CURLOPT_CUSTOMREQUEST, nullptr);
    } else {
      curl_easy_setopt(h_, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
    curl_slist* list = nullptr;
    for (const auto& hd : headers) list = curl_slist_append(list, hd.c_str());
    curl_easy_setopt(h_, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h_, CURLOPT_WRITEFUNCTION, &Client::Collect);
    curl_easy_setopt(h_, CURLOPT_WRITEDATA, &r.body);
    curl_blob blob{};
    if (!ca_.empty()) {
      blob.data = ca_.data();
      blob.len = ca_.size();
      blob.flags = CURL_BLOB_COPY;
      curl_easy_setopt(h_, CURLOPT_CAINFO_BLOB, &blob);
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(h_, CURLOPT_SSL_VERIFYHOST, 2L);
      curl_easy_setopt(h_, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    }
    auto start = std::chrono::steady_clock::now();
    r.code = curl_easy_perform(h_);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    curl_easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_getinfo(h_, CURLINFO_NUM_CONNECTS, &r.new_connections);
    curl_easy_getinfo(h_, CURLINFO_HTTP_VERSION, &r.http_version);
    curl_easy_setopt(h_, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(list);
    return r;
  }

 private:
  static size_t Collect(char* p, size_t size, size_t n, void* out) {
    static_cast<std::string*>(out)->append(p, size * n);
    return size * n;
  }
  CURL* h_;
  std::string ca_;
};

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_ALL); }

  void Start(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    o.cluster_exists = [](const std::string& n) { return n == "c1" || n == "c2"; };
    if (o.seed == 0) o.seed = 42;
    auto s = Server::Start(std::move(o), [this](const HttpRequest& r) { return Handle(r); });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    base_ = std::string(server_->tls() ? "https" : "http") +
            "://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  HttpReply Handle(const HttpRequest& r) {
    calls_.fetch_add(1);
    if (r.path.size() >= 6 && r.path.compare(r.path.size() - 6, 6, "/watch") == 0) {
      HttpReply reply;
      reply.response.content_type = "application/json";
      reply.on_stream = [this](std::shared_ptr<Stream> s) { streams_.Put(std::move(s)); };
      return reply;
    }
    json j = {{"method", r.method},
              {"path", r.path},
              {"query", r.query},
              {"headers", r.headers},
              {"body", r.body}};
    HttpResponse resp;
    resp.body = j.dump();
    resp.headers.emplace_back("X-Handled", "yes");
    return HttpReply::Whole(std::move(resp));
  }

  Reply Fault(const std::string& cluster, const std::string& what) {
    Client c;
    return c.Do("POST", base_ + "/sim/clusters/" + cluster + "/" + what);
  }

  std::unique_ptr<Server> server_;
  std::string base_;
  std::atomic<int> calls_{0};
  StreamBox streams_;
};

TEST_F(ServerTest, KeepAliveReusesOneConnection) {
  Start();
  Client c;
  Reply a = c.Do("GET", base_ + "/clusters/c1/api");
  Reply b = c.Do("GET", base_ + "/clusters/c1/api");
  ASSERT_EQ(a.code, CURLE_OK);
  ASSERT_EQ(b.code, CURLE_OK);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(a.new_connections, 1);
  EXPECT_EQ(b.new_connections, 0);
  EXPECT_EQ(server_->stats().connections, 1u);
}

TEST_F(ServerTest, DecodesPathQueryHeadersAndBody) {
  Start();
  Client c;
  Reply r = c.Do("PATCH", base_ + "/clusters/c1/a%20b%2Fc+d?x=1&y=first&y=a%2Bb+c&flag&e=%C3%A9",
                 "{\"k\":1}", 20000,
                 {"X-Mixed-Case: Value", "Content-Type: application/apply-patch+yaml"});
  ASSERT_EQ(r.code, CURLE_OK);
  ASSERT_EQ(r.status, 200);
  json j = json::parse(r.body);
  EXPECT_EQ(j["method"], "PATCH");
  EXPECT_EQ(j["path"], "/clusters/c1/a b/c+d");  // '+' is literal in a path
  EXPECT_EQ(j["query"]["x"], "1");
  EXPECT_EQ(j["query"]["y"], "a+b c");  // the last of a repeated key; '+' is a space
  EXPECT_EQ(j["query"]["flag"], "");
  EXPECT_EQ(j["query"]["e"], "\xC3\xA9");
  EXPECT_EQ(j["headers"]["x-mixed-case"], "Value");
  EXPECT_EQ(j["headers"]["content-type"], "application/apply-patch+yaml");
  EXPECT_EQ(j["body"], "{\"k\":1}");
}

TEST_F(ServerTest, MalformedPercentEncodingIs400) {
  Start();
  Client c;
  Reply r = c.Do("GET", base_ + "/clusters/c1/bad%zz");
  ASSERT_EQ(r.code, CURLE_OK);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["reason"], "BadRequest");
  EXPECT_EQ(calls_.load(), 0);
}

// A watch body: each Write arrives as it is written, and the connection
// serves the next request once the stream is closed.
TEST_F(ServerTest, StreamDeliversChunkByChunk) {
  Start();
  std::mutex mu;
  std::condition_variable cv;
  std::string got;
  struct Ctx {
    std::mutex* mu;
    std::condition_variable* cv;
    std::string* got;
  } ctx{&mu, &cv, &got};
  Client c;
  CURL* h = c.handle();
  curl_easy_setopt(h, CURLOPT_URL, (base_ + "/clusters/c1/api/v1/pods/watch").c_str());
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
  curl_easy_setopt(
      h, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* d) {
        auto* x = static_cast<Ctx*>(d);
        std::lock_guard lock(*x->mu);
        x->got->append(p, s * n);
        x->cv->notify_all();
        return s * n;
      });
  CURLcode code = CURLE_OK;
  std::thread t([&] { code = curl_easy_perform(h); });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  auto wait_for = [&](const std::string& want) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 20s, [&] { return got == want; });
  };
  EXPECT_TRUE(stream->Write("{\"type\":\"ADDED\"}\n"));
  EXPECT_TRUE(wait_for("{\"type\":\"ADDED\"}\n"));
  EXPECT_TRUE(stream->Write("{\"type\":\"MODIFIED\"}\n"));
  EXPECT_TRUE(wait_for("{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n"));
  EXPECT_EQ(server_->stats().open_streams, 1u);
  stream->Close();
  t.join();
  EXPECT_EQ(code, CURLE_OK);
  EXPECT_TRUE(stream->Closed());
  EXPECT_FALSE(stream->Write("late"));
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  EXPECT_EQ(status, 200);
  // Same connection, next request.
  Reply next = c.Do("GET", base_ + "/clusters/c1/api");
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.new_connections, 0);
  EXPECT_EQ(server_->stats().open_streams, 0u);
}

TEST_F(ServerTest, StreamClosedAfterClientLeaves) {
  Start();
  std::atomic<bool> stop{false};
  std::thread t([&] {
    Client c;
    CURL* h = c.handle();
    curl_easy_setopt(h, CURLOPT_URL, (base_ + "/clusters/c1/watch").c_str());
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
    // Returning 0 makes curl abort the transfer and drop the connection.
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &stop);
    curl_easy_setopt(
        h, CURLOPT_WRITEFUNCTION, +[](char*, size_t s, size_t n, void* d) {
          return static_cast<std::atomic<bool>*>(d)->load() ? size_t{0} : s * n;
        });
    curl_easy_perform(h);
  });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  EXPECT_FALSE(stream->Closed());
  stop = true;
  EXPECT_TRUE(stream->Write("bye\n"));  // the client aborts on this one
  t.join();
  EXPECT_TRUE(Eventually([&] { return stream->Closed(); }));
  EXPECT_FALSE(stream->Write("more\n"));
}

// A client that stops reading is cut off once its queue passes the limit,
// instead of growing the server's memory without bound.
TEST_F(ServerTest, StreamToNonReadingPeerIsCutOff) {
  ServerOptions o;
  o.stream_queue_limit = 1 << 20;
  Start(o);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server_->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string req = "GET /clusters/c1/watch HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  std::string chunk(64 * 1024, 'x');
  int writes = 0;
  while (writes < 10000 && stream->Write(chunk)) ++writes;
  EXPECT_LT(writes, 10000);
  EXPECT_TRUE(stream->Closed());
  EXPECT_TRUE(Eventually([&] { return server_->stats().resets == 1; }));
  ::close(fd);
}

// A stream the simulator keeps past Stop() is closed and safe to use.
TEST_F(ServerTest, StreamOutlivesServer) {
  Start();
  std::thread t([&] {
    Client c;
    c.Do("GET", base_ + "/clusters/c1/watch");
  });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  server_->Stop();
  t.join();
  EXPECT_TRUE(stream->Closed());
  EXPECT_FALSE(stream->Write("x"));
  server_.reset();
  EXPECT_FALSE(stream->Write("x"));
  stream->Close();
}

TEST_F(ServerTest, DownResetsAndUpRestores) {
  Start();
  Client idle;  // a pooled connection that last served c1
  ASSERT_EQ(idle.Do("GET", base_ + "/clusters/c1/api").status, 200);
  std::thread watcher;
  CURLcode watch_code = CURLE_OK;
  watcher = std::thread([&] {
    Client c;
    watch_code = c.Do("GET", base_ + "/clusters/c1/watch").code;
  });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  int before = calls_.load();

  Reply down = Fault("c1", "down");
  ASSERT_EQ(down.status, 200);
  EXPECT_EQ(json::parse(down.body)["down"], true);
  watcher.join();
  EXPECT_NE(watch_code, CURLE_OK);  // the open stream was reset
  EXPECT_TRUE(Eventually([&] { return stream->Closed(); }));

  Client c;
  Reply r = c.Do("GET", base_ + "/clusters/c1/api");
  EXPECT_TRUE(r.code == CURLE_RECV_ERROR || r.code == CURLE_GOT_NOTHING)
      << curl_easy_strerror(r.code);
  EXPECT_EQ(r.status, 0);  // no response at all
  Reply again = idle.Do("GET", base_ + "/clusters/c1/api");
  EXPECT_NE(again.code, CURLE_OK);
  EXPECT_EQ(calls_.load(), before);
  // Other clusters and /sim are untouched.
  EXPECT_EQ(c.Do("GET", base_ + "/clusters/c2/api").status, 200);
  Reply faults = c.Do("GET", base_ + "/sim/clusters/c1/faults");
  ASSERT_EQ(faults.status, 200);
  EXPECT_EQ(json::parse(faults.body)["down"], true);

  ASSERT_EQ(Fault("c1", "up").status, 200);
  EXPECT_EQ(c.Do("GET", base_ + "/clusters/c1/api").status, 200);
  EXPECT_EQ(json::parse(c.Do("GET", base_ + "/sim/clusters/c1/faults").body)["down"], false);
}

TEST_F(ServerTest, HangNeverAnswersUntilUpResets) {
  Start();
  ASSERT_EQ(Fault("c1", "hang").status, 200);
  Client c;
  Reply r = c.Do("GET", base_ + "/clusters/c1/api", "", 300);
  EXPECT_EQ(r.code, CURLE_OPERATION_TIMEDOUT);
  EXPECT_EQ(calls_.load(), 0);
  // The client gave up: its hung request is dropped.
  EXPECT_TRUE(Eventually([&] { return server_->stats().hung_requests == 0; }));

  Reply held;
  std::thread t([&] {
    Client h;
    held = h.Do("GET", base_ + "/clusters/c1/api");
  });
  ASSERT_TRUE(Eventually([&] { return server_->stats().hung_requests == 1; }));
  ASSERT_EQ(Fault("c1", "up").status, 200);
  t.join();
  EXPECT_TRUE(held.code == CURLE_RECV_ERROR || held.code == CURLE_GOT_NOTHING)
      << curl_easy_strerror(held.code);
  EXPECT_EQ(calls_.load(), 0);
  EXPECT_EQ(c.Do("GET", base_ + "/clusters/c1/api").status, 200);
}

TEST_F(ServerTest, HangMutesOpenStreams) {
  Start();
  Reply watch;
  std::thread t([&] {
    Client c;
    watch = c.Do("GET", base_ + "/clusters/c1/watch");
  });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  EXPECT_TRUE(stream->Write("a"));
  ASSERT_EQ(Fault("c1", "hang").status, 200);
  EXPECT_TRUE(stream->Write("dropped"));
  EXPECT_FALSE(stream->Closed());
  ASSERT_EQ(Fault("c1", "up").status, 200);
  EXPECT_TRUE(stream->Write("b"));
  stream->Close();
  t.join();
  EXPECT_EQ(watch.code, CURLE_OK);
  EXPECT_EQ(watch.body, "ab");
}

TEST_F(ServerTest, LatencyDelaysAnswers) {
  Start();
  Reply set = Fault("c1", "latency?ms=200");
  ASSERT_EQ(set.status, 200);
  EXPECT_EQ(json::parse(set.body)["latencyMs"], 200);
  Client c;
  Reply r = c.Do("GET", base_ + "/clusters/c1/api");
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(r.seconds, 0.2);
  EXPECT_EQ(Fault("c1", "latency?ms=0").status, 200);
  EXPECT_EQ(Fault("c1", "latency?ms=-3").status, 400);
  EXPECT_EQ(Fault("c1", "latency").status, 400);
}

TEST_F(ServerTest, ErrorsRateAnswers500Status) {
  Start();
  ASSERT_EQ(Fault("c1", "errors?rate=1").status, 200);
  Client c;
  Reply r = c.Do("GET", base_ + "/clusters/c1/api");
  ASSERT_EQ(r.status, 500);
  json j = json::parse(r.body);
  EXPECT_EQ(j["kind"], "Status");
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["status"], "Failure");
  EXPECT_EQ(j["reason"], "InternalError");
  EXPECT_EQ(j["code"], 500);
  EXPECT_TRUE(j["metadata"].is_object());
  EXPECT_EQ(calls_.load(), 0);
  // /sim is never faulted; the connection stays usable after a 500.
  Reply f = c.Do("GET", base_ + "/sim/clusters/c1/faults");
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(json::parse(f.body)["errorRate"], 1.0);
  EXPECT_EQ(f.new_connections, 0);

  ASSERT_EQ(Fault("c1", "errors?rate=0.5").status, 200);
  int errors = 0;
  for (int i = 0; i < 200; ++i) errors += c.Do("GET", base_ + "/clusters/c1/api").status == 500;
  EXPECT_GT(errors, 40);
  EXPECT_LT(errors, 160);
  EXPECT_EQ(Fault("c1", "errors?rate=2").status, 400);

  ASSERT_EQ(Fault("c1", "up").status, 200);
  EXPECT_EQ(c.Do("GET", base_ + "/clusters/c1/api").status, 200);
}

TEST_F(ServerTest, FaultApiErrors) {
  Start();
  Reply r = Fault("nope", "down");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["reason"], "NotFound");
  // Regression: a name that is not UTF-8 once decoded made the JSON writer throw.
  Reply odd = Fault("%FF%FE", "down");
  EXPECT_EQ(odd.status, 404);
  EXPECT_EQ(json::parse(odd.body)["reason"], "NotFound");
  Client c;
  EXPECT_EQ(c.Do("GET", base_ + "/sim/clusters/c1/down").status, 405);
  // Other /sim paths belong to the handler.
  Reply other = c.Do("GET", base_ + "/sim/clusters/c1/objects");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(json::parse(other.body)["path"], "/sim/clusters/c1/objects");
}

TEST_F(ServerTest, BodyOverLimitIs413) {
  ServerOptions o;
  o.body_limit = 1 << 20;
  Start(o);
  Client c;
  Reply big = c.Do("POST", base_ + "/clusters/c1/x", std::string((1 << 20) + 1, 'a'));
  ASSERT_EQ(big.code, CURLE_OK) << curl_easy_strerror(big.code);
  EXPECT_EQ(big.status, 413);
  json j = json::parse(big.body);
  EXPECT_EQ(j["reason"], "RequestEntityTooLarge");
  EXPECT_EQ(j["code"], 413);
  EXPECT_EQ(calls_.load(), 0);
  // At the limit is fine (curl sends Expect: 100-continue for this size).
  Reply ok = c.Do("POST", base_ + "/clusters/c1/x", std::string(1 << 20, 'a'));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(json::parse(ok.body)["body"].get<std::string>().size(), size_t{1} << 20);
}

TEST_F(ServerTest, DefaultBodyLimitIs16MiB) {
  Start();
  Client c;
  Reply big = c.Do("PUT", base_ + "/clusters/c1/x", std::string((16 << 20) + 1, 'a'));
  EXPECT_EQ(big.status, 413);
}

std::unique_ptr<X509, void (*)(X509*)> ParsePem(const std::string& pem) {
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                          BIO_free);
  return {PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free};
}

TEST(TlsMaterialTest, CertificatesCarryWhatGoRequires) {
  auto m = GenerateTlsMaterial("kube.example");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto ca = ParsePem(m->ca_cert_pem);
  auto cert = ParsePem(m->server_cert_pem);
  ASSERT_TRUE(ca && cert);
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_TRUE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
  int crit = 0;
  void* bc = X509_get_ext_d2i(ca.get(), NID_basic_constraints, &crit, nullptr);
  EXPECT_NE(bc, nullptr);
  EXPECT_EQ(crit, 1);
  BASIC_CONSTRAINTS_free(static_cast<BASIC_CONSTRAINTS*>(bc));

  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "kube.example", 0, 0, nullptr), 1);
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_SERVER);
  EXPECT_NE(X509_get0_authority_key_id(cert.get()), nullptr);
  EXPECT_EQ(X509_check_issued(ca.get(), cert.get()), X509_V_OK);
}

TEST_F(ServerTest, TlsVerifiedAgainstGeneratedCa) {
  auto m = GenerateTlsMaterial("127.0.0.1");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ServerOptions o;
  o.tls_cert_pem = m->server_cert_pem;
  o.tls_key_pem = m->server_key_pem;
  Start(o);
  ASSERT_TRUE(server_->tls());
  Client c;
  c.TrustCa(m->ca_cert_pem);
  Reply r = c.Do("GET", base_ + "/clusters/c1/api");
  ASSERT_EQ(r.code, CURLE_OK) << curl_easy_strerror(r.code);
  EXPECT_EQ(r.status, 200);
  // Offered h2 and http/1.1, the server picks h2, as kube-apiserver does.
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
  Reply again = c.Do("GET", base_ + "/clusters/c1/api");
  EXPECT_EQ(again.new_connections, 0);
  // An answer larger than a TLS record (an OpenAPI document, a long list)
  // arrives whole: the handler echoes the 100 KB body.
  const std::string big(100000, 'x');
  Reply large = c.Do("POST", base_ + "/clusters/c1/api", big, 10000);
  ASSERT_EQ(large.code, CURLE_OK) << curl_easy_strerror(large.code);
  EXPECT_EQ(json::parse(large.body)["body"], big);

  // A stream over TLS, while the server also reads to notice the peer leaving.
  Reply watch;
  std::thread t([&] {
    Client w;
    w.TrustCa(m->ca_cert_pem);
    watch = w.Do("GET", base_ + "/clusters/c1/watch");
  });
  auto stream = streams_.Take();
  ASSERT_NE(stream, nullptr);
  const std::string event(40000, 'e');  // larger than a TLS record, after small ones
  EXPECT_TRUE(stream->Write("one"));
  EXPECT_TRUE(stream->Write("two"));
  EXPECT_TRUE(stream->Write(event));
  EXPECT_TRUE(stream->Write("three"));
  stream->Close();
  t.join();
  EXPECT_EQ(watch.code, CURLE_OK) << curl_easy_strerror(watch.code);
  EXPECT_EQ(watch.body, "onetwo" + event + "three");

  // A client that does not trust the CA is refused.
  auto other = GenerateTlsMaterial("127.0.0.1");
  ASSERT_TRUE(other.ok());
  Client stranger;
  stranger.TrustCa(other->ca_cert_pem);
  EXPECT_NE(stranger.Do("GET", base_ + "/clusters/c1/api").code, CURLE_OK);
}

TEST(KubeconfigTest, WritesOneFilePerClusterReadableOnlyByOwner) {
  auto dir = std::filesystem::temp_directory_path() / ("kubesim-kc-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto m = GenerateTlsMaterial("127.0.0.1");
  ASSERT_TRUE(m.ok());
  KubeconfigSpec spec{"edge-7", "https://127.0.0.1:6443", "tok-123", m->ca_cert_pem};
  ASSERT_TRUE(WriteKubeconfig((dir / "sub").string(), spec).ok());
  auto path = dir / "sub" / "edge-7.yaml";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  YAML::Node kc = YAML::LoadFile(path.string());
  EXPECT_EQ(kc["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(kc["kind"].as<std::string>(), "Config");
  EXPECT_EQ(kc["current-context"].as<std::string>(), "edge-7");
  ASSERT_EQ(kc["clusters"].size(), 1u);
  EXPECT_EQ(kc["clusters"][0]["name"].as<std::string>(), "edge-7");
  EXPECT_EQ(kc["clusters"][0]["cluster"]["server"].as<std::string>(),
            "https://127.0.0.1:6443/clusters/edge-7");
  EXPECT_EQ(
      Base64Decode(kc["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>()).value(),
      m->ca_cert_pem);
  ASSERT_EQ(kc["users"].size(), 1u);
  EXPECT_EQ(kc["users"][0]["user"]["token"].as<std::string>(), "tok-123");
  ASSERT_EQ(kc["contexts"].size(), 1u);
  EXPECT_EQ(kc["contexts"][0]["context"]["cluster"].as<std::string>(), "edge-7");
  EXPECT_EQ(kc["contexts"][0]["context"]["user"].as<std::string>(),
            kc["users"][0]["name"].as<std::string>());

  // Rewritten in place (plain HTTP now): no CA, no temporary left behind.
  spec.server_base = "http://127.0.0.1:8080";
  spec.ca_pem.clear();
  ASSERT_TRUE(WriteKubeconfig((dir / "sub").string(), spec).ok());
  kc = YAML::LoadFile(path.string());
  EXPECT_FALSE(kc["clusters"][0]["cluster"]["certificate-authority-data"]);
  EXPECT_EQ(kc["clusters"][0]["cluster"]["server"].as<std::string>(),
            "http://127.0.0.1:8080/clusters/edge-7");
  int files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir / "sub")) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_FALSE(WriteKubeconfig(dir.string(), {"../x", "http://h", "t", ""}).ok());
  std::filesystem::remove_all(dir);
}

// Names from a fleet file are data, never YAML syntax.
TEST(KubeconfigTest, OddNamesStayIntact) {
  const std::string name = "we: ird #\"name' - [x]\n\\";
  YAML::Node kc = YAML::Load(KubeconfigYaml({name, "http://h:1", "t: k", ""}));
  EXPECT_EQ(kc["current-context"].as<std::string>(), name);
  EXPECT_EQ(kc["clusters"][0]["name"].as<std::string>(), name);
  EXPECT_EQ(kc["clusters"][0]["cluster"]["server"].as<std::string>(),
            "http://h:1/clusters/" + name);
  EXPECT_EQ(kc["users"][0]["user"]["token"].as<std::string>(), "t: k");
}

}  // namespace
}  // namespace eco::kubesim
