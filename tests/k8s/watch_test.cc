// WatchHub over real loopback streams from a scripted server.
#include "k8s/watch.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "fake_api_server.h"
#include "test_certs.h"

namespace eco::k8s {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::SeenRequest;

constexpr auto kWait = std::chrono::seconds(20);  // a hang guard, not a timing assertion

json Obj(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "prod"}, {"resourceVersion", rv}}}};
}

std::string Line(const std::string& type, const json& obj) {
  return json{{"type", type}, {"object", obj}}.dump() + "\n";
}

// Collects what a watch delivers.
class Recorder {
 public:
  WatchCallback callback() {
    return [this](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      std::string s(WatchEventTypeName(e.type));
      if (e.type == WatchEventType::kResync) s += "[" + std::to_string(e.items.size()) + "]";
      if (!e.resource_version.empty()) s += "@" + e.resource_version;
      if (e.type == WatchEventType::kError) errors_.push_back(e.error.ToString());
      events_.push_back(s);
      cv_.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return events_.size() >= n; });
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
  std::vector<std::string> errors_;
};

// Lets a streaming response stay open until the test ends.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True once open; waits a little otherwise (the provider is polled).
  bool WaitBriefly() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Streams `first`, then holds the stream until `gate` opens (or the client
// leaves), then ends it.
void Stream(httplib::Response& res, std::string first, Gate* gate) {
  res.set_chunked_content_provider(
      "application/json", [first, gate, sent = false](size_t, httplib::DataSink& sink) mutable {
        if (!sent) {
          sent = true;
          if (!first.empty()) sink.write(first.data(), first.size());
          return true;
        }
        if (gate == nullptr || gate->WaitBriefly() || !sink.is_writable()) {
          sink.done();
        }
        return true;
      });
}

WatchHubOptions FastRetry() {
  WatchHubOptions o;
  o.min_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(10);
  return o;
}

std::shared_ptr<ClusterClient> ClientFor(const std::string& url,
                                         HttpTransport transport = HttpTransport::kAuto,
                                         std::chrono::milliseconds request_timeout = std::chrono::seconds(30)) {
  RestConfig cfg;
  cfg.server = url;
  cfg.token = "tok";
  ClientOptions o;
  o.transport = transport;
  o.request_timeout = request_timeout;
  Result<std::unique_ptr<ClusterClient>> c = NewClusterClient(cfg, o);
  EXPECT_TRUE(c.ok());
  return std::shared_ptr<ClusterClient>(std::move(c).value());
}

// Every test runs over both stream implementations: eco's own (kDirect:
// watch_stream.h) and libcurl's (kCurl, used for clusters behind a proxy).
class WatchHubTest : public ::testing::TestWithParam<HttpTransport> {
 protected:
  std::shared_ptr<ClusterClient> ClientFor(const FakeApiServer& server) {
    return k8s::ClientFor(server.url(), GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Transports, WatchHubTest,
                         ::testing::Values(HttpTransport::kDirect, HttpTransport::kCurl),
                         [](const ::testing::TestParamInfo<HttpTransport>& i) {
                           return i.param == HttpTransport::kDirect ? std::string("Lean")
                                                                    : std::string("Curl");
                         });

TEST_P(WatchHubTest, ListsResumesReconnectsAndRelistsAfterExpiry) {
  FakeApiServer server;
  Gate gate;
  std::atomic<int> lists{0};
  std::atomic<int> watches{0};
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/apis/apps/v1/namespaces/prod/deployments") return false;
    if (r.Param("watch") != "1") {
      json items = ++lists == 1 ? json::array({Obj("a", "10")})
                                : json::array({Obj("a", "10"), Obj("b", "11")});
      std::string rv = lists == 1 ? "10" : "20";
      res.set_content(
          json{
              {"kind", "DeploymentList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}}
              .dump(),
          "application/json");
      return true;
    }
    switch (++watches) {
      case 1:  // the server fails: reported, retried
        res.status = 500;
        res.set_content(R"({"kind":"Status","code":500,"message":"etcd is down"})",
                        "application/json");
        break;
      case 2:  // events, then a normal end (server timeout)
        Stream(res, Line("ADDED", Obj("b", "11")) + Line("BOOKMARK", Obj("", "12")), nullptr);
        break;
      case 3:  // the version is too old: relist
        Stream(res,
               Line("ERROR", {{"kind", "Status"},
                              {"code", 410},
                              {"reason", "Expired"},
                              {"message", "too old resource version"}}),
               nullptr);
        break;
      default:
        Stream(res, Line("MODIFIED", Obj("a", "21")), &gate);
        break;
    }
    return true;
  });

  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "apps/v1";
  spec.kind = "Deployment";
  spec.ns = "prod";
  spec.label_selector = "app=web";
  spec.server_timeout = std::chrono::seconds(120);
  Result<WatchId> id = hub.Watch(ClientFor(server), spec, rec.callback());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(rec.WaitFor(6)) << ::testing::PrintToString(rec.events());
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"RESYNC[1]@10", "ERROR", "ADDED@11",
                                                    "BOOKMARK@12", "RESYNC[2]@20", "MODIFIED@21"}));

  std::vector<std::string> resumed_from;
  for (const SeenRequest& r : server.seen()) {
    if (r.Param("watch") != "1") continue;
    resumed_from.push_back(r.Param("resourceVersion"));
    EXPECT_EQ(r.Param("allowWatchBookmarks"), "true");
    EXPECT_EQ(r.Param("timeoutSeconds"), "120");
    EXPECT_EQ(r.Param("labelSelector"), "app=web");
    EXPECT_EQ(r.authorization, "Bearer tok");
  }
  EXPECT_EQ(resumed_from, (std::vector<std::string>{"10", "10", "12", "20"}));
  EXPECT_EQ(hub.active_watches(), 1u);

  hub.Cancel(*id);
  EXPECT_EQ(hub.active_watches(), 0u);
  gate.Open();
  size_t after_cancel = rec.events().size();
  hub.Shutdown();
  EXPECT_EQ(rec.events().size(), after_cancel);
}

TEST_P(WatchHubTest, StartsFromAGivenVersionWithoutListing) {
  FakeApiServer server;
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/configmaps") return false;
    if (r.Param("watch") != "1") {
      ADD_FAILURE() << "listed although a version was given";
      return false;
    }
    Stream(res, Line("DELETED", {{"metadata", {{"name", "x"}, {"resourceVersion", "8"}}}}), &gate);
    return true;
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "ConfigMap";
  spec.resource_version = "7";
  ASSERT_TRUE(hub.Watch(ClientFor(server), spec, rec.callback()).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"DELETED@8"});
  gate.Open();
}

TEST(WatchHub, UnknownKindIsRefusedAtOnce) {
  FakeApiServer server;
  WatchHub hub(FastRetry());
  WatchSpec spec;
  spec.api_version = "example.com/v1";
  spec.kind = "Widget";
  Result<WatchId> id = hub.Watch(ClientFor(server.url()), spec, [](const WatchEvent&) {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kNotFound);
}

TEST_P(WatchHubTest, ShutdownWithOpenStreamsOnManyClusters) {
  FakeApiServer server;
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/pods" || r.Param("watch") != "1") return false;
    Stream(res, Line("ADDED", {{"metadata", {{"name", "p"}, {"resourceVersion", "3"}}}}), &gate);
    return true;
  });
  auto hub = std::make_unique<WatchHub>(FastRetry());
  std::vector<std::unique_ptr<Recorder>> recs;
  for (int i = 0; i < 5; ++i) {
    recs.push_back(std::make_unique<Recorder>());
    WatchSpec spec;
    spec.api_version = "v1";
    spec.kind = "Pod";
    spec.resource_version = "1";
    // A client per "cluster", all multiplexed by one hub thread.
    ASSERT_TRUE(hub->Watch(ClientFor(server), spec, recs.back()->callback()).ok());
  }
  for (auto& r : recs) ASSERT_TRUE(r->WaitFor(1));
  EXPECT_EQ(hub->active_watches(), 5u);
  hub->Shutdown();
  EXPECT_EQ(hub->active_watches(), 0u);
  hub.reset();
  gate.Open();
  for (auto& r : recs) EXPECT_EQ(r->events(), std::vector<std::string>{"ADDED@3"});
}

TEST_P(WatchHubTest, WatchesOverMutualTls) {
  testing::CertKey ca = testing::MakeCa("cluster-ca");
  testing::CertKey server_cert = testing::MakeLeaf(ca, "apiserver", {}, {"127.0.0.1"});
  testing::CertKey client_cert = testing::MakeLeaf(ca, "eco", {}, {});
  FakeApiServer server(server_cert.cert_pem, server_cert.key_pem, ca.cert_pem);
  Gate gate;
  server.SetHandler([&](const SeenRequest& r, httplib::Response& res) {
    if (r.path != "/api/v1/namespaces/default/pods" || r.Param("watch") != "1") return false;
    Stream(res, Line("ADDED", {{"metadata", {{"name", "p"}, {"resourceVersion", "5"}}}}), &gate);
    return true;
  });
  RestConfig cfg;
  cfg.server = server.url();
  cfg.ca_pem = ca.cert_pem;
  cfg.client_cert_pem = client_cert.cert_pem;
  cfg.client_key_pem = client_cert.key_pem;
  ClientOptions o;
  o.transport = GetParam();
  std::shared_ptr<ClusterClient> client = std::move(NewClusterClient(cfg, o)).value();
  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "Pod";
  spec.ns = "default";
  spec.resource_version = "4";
  ASSERT_TRUE(hub.Watch(client, spec, rec.callback()).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"ADDED@5"});
  hub.Shutdown();
  gate.Open();
}

// A loopback server that answers each connection with a script: for the
// framings an HTTP library would not produce (a byte per packet, interim
// answers, bodies ended by closing).
class RawWatchServer {
 public:
  // `n`: the connection's number, from 0.
  using Script = std::function<void(int fd, int n)>;

  explicit RawWatchServer(Script script) : script_(std::move(script)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] {
      for (int n = 0;; ++n) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        connections_.emplace_back([this, c, n] {
          script_(c, n);
          close(c);
        });
      }
    });
  }
  ~RawWatchServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    close(fd_);
    for (std::thread& t : connections_) t.join();
  }
  std::string url(const std::string& host = "127.0.0.1") const {
    return "http://" + host + ":" + std::to_string(port_);
  }

  // The request head (recorded), read up to its blank line.
  std::string ReadRequest(int fd) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) head += c;
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(head);
    return head;
  }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // The requests once `n` have come (fewer if they do not within 20 s).
  std::vector<std::string> WaitRequests(size_t n) {
    for (auto until = std::chrono::steady_clock::now() + kWait;
         requests().size() < n && std::chrono::steady_clock::now() < until;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return requests();
  }

  // One byte per packet: every boundary the parser must survive.
  static void SendByteByByte(int fd, const std::string& data) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (char c : data) {
      if (send(fd, &c, 1, MSG_NOSIGNAL) != 1) return;
    }
  }
  static void Send(int fd, const std::string& data) {
    (void)send(fd, data.data(), data.size(), MSG_NOSIGNAL);
  }
  // Until the client hangs up.
  static void WaitClosed(int fd) {
    char buf[256];
    while (recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }

 private:
  Script script_;
  int fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;  // guarded by mu_
  std::vector<std::string> requests_;     // guarded by mu_
};

std::string Chunk(const std::string& data) {
  char size[32];
  snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n";
}

WatchSpec DeploymentsFrom(const std::string& rv);

// Deployments in "prod" from version 4, over eco's own streams.
Result<WatchId> WatchDeployments(WatchHub& hub, const std::string& url, Recorder& rec,
                                 std::chrono::milliseconds request_timeout = std::chrono::seconds(30)) {
  return hub.Watch(ClientFor(url, HttpTransport::kDirect, request_timeout), DeploymentsFrom("4"),
                   rec.callback());
}

WatchSpec DeploymentsFrom(const std::string& rv) {
  WatchSpec spec;
  spec.api_version = "apps/v1";
  spec.kind = "Deployment";
  spec.ns = "prod";
  spec.resource_version = rv;
  return spec;
}

TEST(WatchHubLean, ParsesAnAnswerSentAByteAtATime) {
  const std::string l1 = Line("ADDED", Obj("a", "5"));
  const std::string l2 = Line("MODIFIED", Obj("a", "6"));
  // Lines split across chunks, a chunk extension, an interim 100 answer.
  std::string with_extension = Chunk(l2.substr(7));
  with_extension.insert(with_extension.find("\r\n"), ";x=y");
  const std::string body = Chunk(l1.substr(0, 10)) + Chunk(l1.substr(10) + l2.substr(0, 7)) +
                           with_extension + "0\r\n\r\n";
  RawWatchServer server([&](int fd, int n) {
    server.ReadRequest(fd);
    if (n == 0) {
      RawWatchServer::SendByteByByte(fd,
                                "HTTP/1.1 100 Continue\r\n\r\n"
                                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n" +
                                    body);
    }
    RawWatchServer::WaitClosed(fd);  // the next stream stays open
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  ASSERT_TRUE(WatchDeployments(hub, server.url(), rec).ok());
  ASSERT_TRUE(rec.WaitFor(2));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"ADDED@5", "MODIFIED@6"}));
  // The answer ended properly: the next stream resumes from the last version.
  std::vector<std::string> reqs = server.WaitRequests(2);
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_NE(reqs[0].find("GET /apis/apps/v1/namespaces/prod/deployments?watch=1&"), std::string::npos)
      << reqs[0];
  EXPECT_NE(reqs[0].find("resourceVersion=4"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find("\r\nAuthorization: Bearer tok\r\n"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[0].find("\r\nHost: 127.0.0.1:"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[1].find("resourceVersion=6"), std::string::npos) << reqs[1];
  EXPECT_EQ(rec.errors(), std::vector<std::string>{});
  hub.Shutdown();
}

TEST(WatchHubLean, AnAnswerWithoutLengthEndsWhenTheServerCloses) {
  RawWatchServer server([&](int fd, int n) {
    server.ReadRequest(fd);
    if (n == 0) {
      RawWatchServer::Send(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + Line("ADDED", Obj("a", "5")));
      return;  // closes
    }
    RawWatchServer::WaitClosed(fd);
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  ASSERT_TRUE(WatchDeployments(hub, server.url(), rec).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  std::vector<std::string> reqs = server.WaitRequests(2);
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_NE(reqs[1].find("resourceVersion=5"), std::string::npos);
  EXPECT_EQ(rec.events(), std::vector<std::string>{"ADDED@5"});  // no error: a normal end
  hub.Shutdown();
}

TEST(WatchHubLean, AnAnswerCutShortIsAnError) {
  RawWatchServer server([&](int fd, int n) {
    server.ReadRequest(fd);
    if (n == 0) {
      RawWatchServer::Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              Chunk(Line("ADDED", Obj("a", "5"))) + "40\r\n{\"type");
      return;  // closes in the middle of a chunk
    }
    RawWatchServer::WaitClosed(fd);
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  ASSERT_TRUE(WatchDeployments(hub, server.url(), rec).ok());
  ASSERT_TRUE(rec.WaitFor(2));
  EXPECT_EQ(rec.events(), (std::vector<std::string>{"ADDED@5", "ERROR"}));
  ASSERT_EQ(rec.errors().size(), 1u);
  EXPECT_NE(rec.errors()[0].find("cut the answer short"), std::string::npos) << rec.errors()[0];
  hub.Shutdown();
}

TEST(WatchHubLean, NoAnswerWithinTheRequestTimeoutIsAnError) {
  RawWatchServer server([&](int fd, int) {
    server.ReadRequest(fd);
    RawWatchServer::WaitClosed(fd);  // never answers
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  ASSERT_TRUE(WatchDeployments(hub, server.url(), rec, std::chrono::milliseconds(200)).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events()[0], "ERROR");
  EXPECT_NE(rec.errors()[0].find("no response within 200ms"), std::string::npos) << rec.errors()[0];
  hub.Shutdown();
}

TEST(WatchHubLean, ConnectsToAServerNamedByHostName) {
  // "localhost" may resolve to ::1 first, where nothing listens: the next
  // address is tried.
  RawWatchServer server([&](int fd, int n) {
    server.ReadRequest(fd);
    if (n == 0) {
      RawWatchServer::Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              Chunk(Line("ADDED", Obj("a", "5"))));
    }
    RawWatchServer::WaitClosed(fd);
  });
  WatchHub hub(FastRetry());
  Recorder rec;
  ASSERT_TRUE(WatchDeployments(hub, server.url("localhost"), rec).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_EQ(rec.events(), std::vector<std::string>{"ADDED@5"});
  EXPECT_NE(server.requests()[0].find("\r\nHost: localhost:"), std::string::npos);
  hub.Shutdown();
}

TEST(WatchHubLean, RefusesAServerWhoseCertificateIsNotTrusted) {
  testing::CertKey ca = testing::MakeCa("cluster-ca");
  testing::CertKey other = testing::MakeCa("someone-else");
  testing::CertKey server_cert = testing::MakeLeaf(other, "apiserver", {}, {"127.0.0.1"});
  FakeApiServer server(server_cert.cert_pem, server_cert.key_pem, "");
  server.SetHandler([&](const SeenRequest&, httplib::Response& res) {
    ADD_FAILURE() << "a request reached an untrusted server";
    res.status = 500;
    return true;
  });
  RestConfig cfg;
  cfg.server = server.url();
  cfg.ca_pem = ca.cert_pem;
  ClientOptions o;
  o.transport = HttpTransport::kDirect;
  std::shared_ptr<ClusterClient> client = std::move(NewClusterClient(cfg, o)).value();
  WatchHub hub(FastRetry());
  Recorder rec;
  WatchSpec spec;
  spec.api_version = "v1";
  spec.kind = "Pod";
  spec.resource_version = "4";
  ASSERT_TRUE(hub.Watch(client, spec, rec.callback()).ok());
  ASSERT_TRUE(rec.WaitFor(1));
  EXPECT_NE(rec.errors()[0].find("not trusted"), std::string::npos) << rec.errors()[0];
  hub.Shutdown();
}

}  // namespace
}  // namespace eco::k8s
