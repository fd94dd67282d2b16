// Helpers shared by ecoctl's tests: temp files and an in-memory EMCO-like
// server behind the HttpClient interface.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ecoctl/http_client.h"
#include "process.h"

namespace eco::ecoctl::testutil {

inline std::string WriteFile(const std::string& dir, const std::string& name,
                             const std::string& content) {
  std::filesystem::path p = std::filesystem::path(dir) / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

// Keeps resources at "<collection>/<name>" like EMCO: POST creates (409
// "... already exists" when present), PUT replaces, GET reads (JSON, or the
// uploaded bytes for Accept: application/octet-stream), DELETE removes.
class FakeEmco : public HttpClient {
 public:
  struct Stored {
    nlohmann::json body;
    std::string file;
  };

  Result<HttpResponse> Send(const HttpRequest& req) override {
    sent.push_back(req);
    if (refuse) return Unavailable("cannot connect to http://127.0.0.1:1 (connection refused)");
    if (auto it = canned.find(req.method + " " + req.path); it != canned.end()) return it->second;

    if (req.method == "GET") {
      auto it = store.find(req.path);
      if (it == store.end()) return Error(404, "resource not found");
      if (req.accept == "application/octet-stream") return HttpResponse{200, it->second.file, ""};
      return HttpResponse{200, it->second.body.dump(), "application/json"};
    }
    if (req.method == "DELETE") {
      if (store.erase(req.path) == 0) return Error(404, "resource not found");
      return HttpResponse{204, "", ""};
    }
    auto [body, file] = Decode(req);
    if (body.is_discarded()) return Error(422, "bad JSON");
    if (req.method == "POST") {
      if (req.path.ends_with("/approve") || req.path.ends_with("/instantiate")) {
        return HttpResponse{202, "", ""};
      }
      std::string key = body.contains("clusterLabel") ? body["clusterLabel"].get<std::string>()
                                                      : body["metadata"]["name"].get<std::string>();
      if (req.path.ends_with("/composite-apps")) {
        key += "/" + body["spec"]["compositeAppVersion"].get<std::string>();
      }
      std::string path = req.path + "/" + key;
      if (store.count(path)) return Error(409, "Resource already exists");
      store[path] = {body, file};
      return HttpResponse{201, body.dump(), "application/json"};
    }
    if (req.method == "PUT") {
      if (no_put) return Error(405, "method not allowed");
      store[req.path] = {body, file};
      return HttpResponse{200, body.dump(), "application/json"};
    }
    return Error(405, "method not allowed");
  }

  static HttpResponse Error(int code, const std::string& message) {
    return HttpResponse{code, nlohmann::json{{"code", code}, {"message", message}}.dump(),
                        "application/json"};
  }

  std::vector<std::string> Calls() const {
    std::vector<std::string> out;
    for (const auto& r : sent) out.push_back(r.method + " " + r.path);
    return out;
  }

  std::map<std::string, Stored> store;
  std::map<std::string, HttpResponse> canned;  // "METHOD /path" → fixed answer
  std::vector<HttpRequest> sent;
  bool refuse = false;
  bool no_put = false;

 private:
  static std::pair<nlohmann::json, std::string> Decode(const HttpRequest& req) {
    if (!req.multipart()) {
      if (req.body.empty()) return {nlohmann::json::object(), ""};
      return {nlohmann::json::parse(req.body, nullptr, false), ""};
    }
    nlohmann::json body = nlohmann::json::object();
    std::string file;
    for (const auto& p : req.parts) {
      if (p.name == "metadata") body = nlohmann::json::parse(p.content, nullptr, false);
      if (p.name == "file") file = p.content;
    }
    return {body, file};
  }
};

}  // namespace eco::ecoctl::testutil
