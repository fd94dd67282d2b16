// The cpp-httplib client against an in-process httplib server on loopback:
// what actually goes over the wire (multipart layout, headers, methods).
#include "ecoctl/http_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "process.h"

namespace eco::ecoctl {
namespace {

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto record = [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      last_ = req;
      res.status = status_;
      res.set_content(reply_, "application/json");
    };
    server_.Get(".*", record);
    server_.Post(".*", record);
    server_.Put(".*", record);
    server_.Delete(".*", record);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ClientConfig c;
    c.endpoint = *ParseEndpoint("http://127.0.0.1:" + std::to_string(port_) + "/prefix");
    c.timeout_seconds = 5;
    c.token = "tok";
    client_ = NewHttplibClient(c);
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Request Last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  httplib::Request last_;  // guarded by mu_
  int status_ = 201;
  std::string reply_ = R"({"ok":true})";
  std::unique_ptr<HttpClient> client_;
};

TEST_F(HttpClientTest, JsonPost) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/v2/projects";
  r.accept = "application/json";
  r.content_type = "application/json";
  r.body = R"({"metadata":{"name":"p"}})";
  auto resp = client_->Send(r);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->status, 201);
  EXPECT_EQ(resp->body, reply_);
  httplib::Request got = Last();
  EXPECT_EQ(got.method, "POST");
  EXPECT_EQ(got.path, "/prefix/v2/projects");
  EXPECT_EQ(got.body, r.body);
  EXPECT_EQ(got.get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(got.get_header_value("Accept"), "application/json");
  EXPECT_EQ(got.get_header_value("Authorization"), "Bearer tok");
}

TEST_F(HttpClientTest, MultipartPutHasMetadataValueAndFile) {
  HttpRequest r;
  r.method = "PUT";
  r.path = "/v2/projects/p/composite-apps/ca/v1/apps/web";
  r.parts = {{"metadata", R"({"metadata":{"name":"web"}})", "", "", ""},
             {"file", std::string("\x1f\x8b\0bin", 6), "/x/web.tgz", "web.tgz",
              "application/octet-stream"}};
  auto resp = client_->Send(r);
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  httplib::Request got = Last();
  EXPECT_EQ(got.method, "PUT");
  ASSERT_TRUE(got.is_multipart_form_data());
  ASSERT_TRUE(got.has_file("metadata"));
  ASSERT_TRUE(got.has_file("file"));
  auto meta = got.get_file_value("metadata");
  EXPECT_EQ(meta.content, R"({"metadata":{"name":"web"}})");
  EXPECT_EQ(meta.filename, "");  // a plain value part
  auto file = got.get_file_value("file");
  EXPECT_EQ(file.content, std::string("\x1f\x8b\0bin", 6));
  EXPECT_EQ(file.filename, "web.tgz");
}

TEST_F(HttpClientTest, PostWithoutBodyGetAndDelete) {
  status_ = 202;
  reply_ = "";
  HttpRequest post;
  post.method = "POST";
  post.path = "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/d/approve";
  auto resp = client_->Send(post);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 202);
  EXPECT_EQ(Last().body, "");

  status_ = 200;
  HttpRequest get;
  get.method = "GET";
  get.path = "/v2/projects/p/composite-apps/ca/v1/apps/web";
  get.accept = "application/octet-stream";
  ASSERT_TRUE(client_->Send(get).ok());
  EXPECT_EQ(Last().get_header_value("Accept"), "application/octet-stream");

  status_ = 204;
  HttpRequest del;
  del.method = "DELETE";
  del.path = "/v2/projects/p";
  resp = client_->Send(del);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->status, 204);
  EXPECT_EQ(Last().method, "DELETE");
}

TEST(HttpClient, ConnectionRefusedNamesTheEndpoint) {
  int port = eco::testing::FreePort();  // nothing listens there any more
  ClientConfig c;
  c.endpoint = *ParseEndpoint("http://127.0.0.1:" + std::to_string(port));
  c.timeout_seconds = 2;
  auto client = NewHttplibClient(c);
  HttpRequest r;
  r.method = "GET";
  r.path = "/v2/projects";
  auto resp = client->Send(r);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), Code::kUnavailable);
  EXPECT_NE(
      resp.status().message().find("cannot connect to http://127.0.0.1:" + std::to_string(port)),
      std::string::npos)
      << resp.status().message();
}

TEST(ParseEndpoint, Forms) {
  auto a = ParseEndpoint("127.0.0.1:9015");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ToString(), "http://127.0.0.1:9015");
  auto b = ParseEndpoint("HTTPS://eco.example/base/v2/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->scheme, "https");
  EXPECT_EQ(b->host_port, "eco.example");
  EXPECT_EQ(b->prefix, "/base");
  EXPECT_FALSE(ParseEndpoint("ftp://x").ok());
  EXPECT_FALSE(ParseEndpoint("http://").ok());
}

}  // namespace
}  // namespace eco::ecoctl
