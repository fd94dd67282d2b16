// The API over a fresh embedded store, served on a free loopback port, for
// tests that talk to it over real HTTP (access log, metrics, TLS and tokens).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <memory>
#include <thread>

#include "api/api.h"
#include "api/server.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::testing {

class ServedApiTest : public ::testing::Test {
 protected:
  // Set by a test fixture before SetUp runs.
  size_t max_body_bytes_ = 64u << 20;
  std::function<std::unique_ptr<store::Store>(std::unique_ptr<store::Store>)> wrap_store_;
  std::function<void(api::ServerOptions&)> configure_;  // TLS, tokens
  api::Options api_options_;

  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = wrap_store_ ? wrap_store_(std::move(*s)) : std::move(*s);
    api_ = std::make_unique<api::Api>(*store_, api_options_);
    api::ServerOptions so;
    so.bind = "127.0.0.1";
    so.port = 0;
    so.max_body_bytes = max_body_bytes_;
    if (configure_) configure_(so);
    server_ = std::make_unique<api::HttpServer>(*api_, so);
    ASSERT_TRUE(server_->Bind().ok());
    serving_ = std::thread([this] { (void)server_->Serve(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (!server_) return;
    server_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  TempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<api::Api> api_;
  std::unique_ptr<api::HttpServer> server_;
  std::thread serving_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace eco::testing
