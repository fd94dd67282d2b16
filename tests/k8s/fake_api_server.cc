#include "fake_api_server.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <nlohmann/json.hpp>

namespace eco::k8s::testing {
namespace {

constexpr std::string_view kPrefix = "/clusters/edge-1";

nlohmann::json Resource(const std::string& name, const std::string& kind, bool namespaced) {
  return {{"name", name},
          {"singularName", ""},
          {"namespaced", namespaced},
          {"kind", kind},
          {"verbs", {"create", "delete", "get", "list", "patch", "update", "watch"}}};
}

nlohmann::json ResourceList(const std::string& gv, nlohmann::json resources) {
  return {{"kind", "APIResourceList"}, {"groupVersion", gv}, {"resources", std::move(resources)}};
}

}  // namespace

FakeApiServer::FakeApiServer() : server_(std::make_unique<httplib::Server>()) { Start(); }

FakeApiServer::FakeApiServer(const std::string& cert_pem, const std::string& key_pem,
                             const std::string& client_ca_pem)
    : tls_(true) {
  BIO* cb = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  X509_STORE* store = nullptr;
  if (!client_ca_pem.empty()) {
    store = X509_STORE_new();
    BIO* ab = BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size()));
    X509* ca = PEM_read_bio_X509(ab, nullptr, nullptr, nullptr);
    BIO_free(ab);
    X509_STORE_add_cert(store, ca);
    X509_free(ca);
  }
  // httplib takes the store; cert and key are copied into its context.
  server_ = std::make_unique<httplib::SSLServer>(cert, key, store);
  X509_free(cert);
  EVP_PKEY_free(key);
  Start();
}

FakeApiServer::~FakeApiServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void FakeApiServer::Start() {
  server_->set_keep_alive_max_count(1000);
  server_->set_tcp_nodelay(true);      // else Nagle adds 40 ms to each response
  server_->set_keep_alive_timeout(1);  // stop() waits this long for idle connections
  auto dispatch = [this](const httplib::Request& req, httplib::Response& res) {
    Dispatch(req, res);
  };
  server_->Get(".*", dispatch);
  server_->Patch(".*", dispatch);
  server_->Delete(".*", dispatch);
  server_->Post(".*", dispatch);
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() before the loop runs would be lost, so wait for it to run.
  while (!server_->is_running()) std::this_thread::yield();
}

std::string FakeApiServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) +
         std::string(kPrefix);
}

void FakeApiServer::SetHandler(Handler h) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(h);
}

void FakeApiServer::ServeCustomKinds(std::vector<std::string> kinds) {
  std::lock_guard<std::mutex> lock(mu_);
  custom_kinds_ = std::move(kinds);
}

std::vector<SeenRequest> FakeApiServer::seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

int FakeApiServer::count(const std::string& method, const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const SeenRequest& r : seen_) n += r.method == method && r.path == path;
  return n;
}

void FakeApiServer::Dispatch(const httplib::Request& req, httplib::Response& res) {
  SeenRequest s;
  s.method = req.method;
  s.path = req.path;
  if (s.path.rfind(kPrefix, 0) == 0) {
    s.path = s.path.substr(kPrefix.size());
  } else {
    res.status = 404;
    return;
  }
  for (const auto& [k, v] : req.params) s.params.emplace(k, v);
  s.body = req.body;
  s.content_type = req.get_header_value("Content-Type");
  s.authorization = req.get_header_value("Authorization");
  s.user_agent = req.get_header_value("User-Agent");
  s.accept_encoding = req.get_header_value("Accept-Encoding");
  s.remote_port = req.remote_port;
  Handler handler;
  std::vector<std::string> custom;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(s);
    handler = handler_;
    custom = custom_kinds_;
  }
  if (handler && handler(s, res)) return;

  nlohmann::json doc;
  if (s.method == "GET" && s.path == "/api") {
    doc = {{"kind", "APIVersions"}, {"versions", {"v1"}}};
  } else if (s.method == "GET" && s.path == "/api/v1") {
    doc = ResourceList("v1", {Resource("namespaces", "Namespace", false),
                              Resource("configmaps", "ConfigMap", true),
                              Resource("pods", "Pod", true), Resource("pods/status", "Pod", true)});
  } else if (s.method == "GET" && s.path == "/apis") {
    nlohmann::json groups = nlohmann::json::array();
    groups.push_back({{"name", "apps"},
                      {"versions", {{{"groupVersion", "apps/v1"}, {"version", "v1"}}}},
                      {"preferredVersion", {{"groupVersion", "apps/v1"}, {"version", "v1"}}}});
    if (!custom.empty()) {
      groups.push_back(
          {{"name", "example.com"},
           {"versions", {{{"groupVersion", "example.com/v1"}, {"version", "v1"}}}},
           {"preferredVersion", {{"groupVersion", "example.com/v1"}, {"version", "v1"}}}});
    }
    doc = {{"kind", "APIGroupList"}, {"groups", groups}};
  } else if (s.method == "GET" && s.path == "/apis/apps/v1") {
    doc = ResourceList("apps/v1", nlohmann::json::array({Resource("deployments", "Deployment", true)}));
  } else if (s.method == "GET" && s.path == "/apis/example.com/v1" && !custom.empty()) {
    nlohmann::json resources = nlohmann::json::array();
    for (const std::string& k : custom) {
      std::string plural = k;
      for (char& c : plural) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      resources.push_back(Resource(plural + "s", k, true));
    }
    doc = ResourceList("example.com/v1", resources);
  } else {
    res.status = 404;
    doc = {{"kind", "Status"},    {"apiVersion", "v1"},
           {"status", "Failure"}, {"reason", "NotFound"},
           {"code", 404},         {"message", "the server could not find the requested resource"}};
  }
  res.set_content(doc.dump(), "application/json");
}

}  // namespace eco::k8s::testing
