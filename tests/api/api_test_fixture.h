// The API over a fresh embedded store, called without HTTP (Api::Handle):
// the fixture of api_test.cc and openapi_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/api.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::api {

using nlohmann::json;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    api_ = std::make_unique<Api>(*store_, Options{});
  }

  Response Call(const std::string& method, const std::string& path, const std::string& body = "",
                std::multimap<std::string, std::string> query = {}, std::string accept = "") {
    Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.query = std::move(query);
    r.accept = std::move(accept);
    return api_->Handle(r);
  }
  Response Post(const std::string& path, const json& body) { return Call("POST", path, body.dump()); }
  Response Put(const std::string& path, const json& body) { return Call("PUT", path, body.dump()); }
  Response Get(const std::string& path) { return Call("GET", path); }
  Response Del(const std::string& path) { return Call("DELETE", path); }

  Response Multipart(const std::string& method, const std::string& path, const json& meta,
                     std::optional<std::string> file) {
    Request r;
    r.method = method;
    r.path = path;
    r.multipart = true;
    r.parts.emplace("metadata", FormPart{meta.dump(), "", "application/json"});
    if (file) r.parts.emplace("file", FormPart{*file, "f.tgz", "application/octet-stream"});
    return api_->Handle(r);
  }

  static json Meta(const std::string& name) { return {{"metadata", {{"name", name}}}}; }

  void MakeProjectAndApp(const std::string& project, const std::string& ca) {
    ASSERT_EQ(Post("/v2/projects", Meta(project)).status, 201);
    json c = Meta(ca);
    c["spec"] = {{"compositeAppVersion", "v1"}};
    ASSERT_EQ(Post("/v2/projects/" + project + "/composite-apps", c).status, 201);
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Api> api_;
};

}  // namespace eco::api
