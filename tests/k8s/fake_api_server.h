// A tiny loopback API server (cpp-httplib) for what kube-sim cannot produce:
// scripted status codes, Retry-After, mTLS, token rotation, watch streams.
#pragma once

#include <httplib.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace eco::k8s::testing {

struct SeenRequest {
  std::string method;
  std::string path;  // without the prefix
  std::multimap<std::string, std::string> params;
  std::string body;
  std::string content_type;
  std::string authorization;
  std::string user_agent;
  std::string accept_encoding;
  int remote_port = 0;

  std::string Param(const std::string& k) const {
    auto it = params.find(k);
    return it == params.end() ? "" : it->second;
  }
};

class FakeApiServer {
 public:
  // Returns true when it answered; otherwise built-in discovery answers.
  using Handler = std::function<bool(const SeenRequest&, httplib::Response&)>;

  // Plain HTTP.
  FakeApiServer();
  // HTTPS; with `client_ca_pem`, clients must present a certificate it signed.
  FakeApiServer(const std::string& cert_pem, const std::string& key_pem,
                const std::string& client_ca_pem);
  ~FakeApiServer();

  // Base URL including the path prefix "/clusters/edge-1".
  std::string url() const;
  void SetHandler(Handler h);
  // Makes the example.com/v1 group serve these kinds (none: group absent).
  void ServeCustomKinds(std::vector<std::string> kinds);
  std::vector<SeenRequest> seen() const;
  int count(const std::string& method, const std::string& path) const;

 private:
  void Start();
  void Dispatch(const httplib::Request& req, httplib::Response& res);

  std::unique_ptr<httplib::Server> server_;
  bool tls_ = false;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  Handler handler_;                        // guarded by mu_
  std::vector<std::string> custom_kinds_;  // guarded by mu_
  std::vector<SeenRequest> seen_;          // guarded by mu_
};

}  // namespace eco::k8s::testing
