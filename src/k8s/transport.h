// Internal to src/k8s: HTTP to one cluster. Not part of the public API
// (client.h and watch.h are). Two implementations of Transport: libcurl
// (CurlTransport, below) and a direct one on blocking sockets
// (direct_transport.h); NewTransport picks one.
#pragma once

#include <curl/curl.h>
#include <openssl/x509.h>
#include <sys/types.h>

#include <condition_variable>
#include <ctime>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"

namespace eco::k8s {

struct CurlEasyFree {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyFree>;

struct CurlSlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistFree>;

// Initialises libcurl once per process (thread-safe).
void EnsureCurlGlobalInit();

struct X509StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};

// The system's trusted CA certificates, read from OpenSSL's default CA file
// ($SSL_CERT_FILE overrides it) once per process and kept in memory. Empty
// (pem "", store null) when that file holds none; verification then falls
// back to OpenSSL's default paths, which read files at each handshake.
struct SystemRoots {
  std::string pem;
  std::unique_ptr<X509_STORE, X509StoreFree> store;
};
const SystemRoots& LoadSystemRoots();

// The bearer token: the kubeconfig's token, or tokenFile re-read whenever the
// file changes (inode, size or mtime), so rotated tokens are picked up at the
// next request. Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file);
  // "" when the config has no token.
  Result<std::string> Get();

 private:
  const std::string static_token_;
  const std::string file_;
  std::mutex mu_;
  std::string cached_;  // guarded by mu_
  ino_t ino_ = 0;       // guarded by mu_
  off_t size_ = -1;     // guarded by mu_
  timespec mtime_{};    // guarded by mu_
};

// Options that stay for the life of a handle: TLS material, timeouts, user
// agent, compression. Per-request options are set by the caller.
Status ConfigureHandle(CURL* h, const RestConfig& config, const ClientOptions& options);

// Request headers: Accept, optional Content-Type, Authorization; no Expect.
Result<CurlSlist> RequestHeaders(TokenSource& tokens, std::string_view content_type,
                                 std::string_view accept);

struct HttpResult {
  long code = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
};

// HTTP to one cluster through a bounded pool of persistent connections
// (ClientOptions::max_connections; callers wait for a free one).
// Thread-safe.
class Transport {
 public:
  Transport(RestConfig config, ClientOptions options);
  virtual ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Sends one request to server + path_and_query with the client's headers
  // (Accept, Content-Type when given, Authorization, User-Agent,
  // Accept-Encoding). Transport failures are classified as errors.h
  // describes; any HTTP code is returned as is. `accept` "" is JSON.
  virtual Result<HttpResult> Do(std::string_view method, const std::string& path_and_query,
                                std::string_view body, std::string_view content_type,
                                std::string_view accept) = 0;

  // Do, then: 2xx → body; otherwise StatusFromHttp, annotated "METHOD path".
  Result<std::string> Call(std::string_view method, const std::string& path_and_query,
                           std::string_view body = {}, std::string_view content_type = {},
                           std::string_view accept = {});

  const RestConfig& config() const { return config_; }
  const ClientOptions& options() const { return options_; }
  TokenSource& tokens() { return tokens_; }
  // The HTTP/2 session of an h2 transport (h2_transport.h), else null.
  virtual std::shared_ptr<H2Session> h2_session() const { return nullptr; }

 protected:
  const RestConfig config_;
  const ClientOptions options_;
  TokenSource tokens_;
};

// libcurl easy handles, each keeping its connection open.
class CurlTransport final : public Transport {
 public:
  CurlTransport(RestConfig config, ClientOptions options);
  ~CurlTransport() override;

  Result<HttpResult> Do(std::string_view method, const std::string& path_and_query,
                        std::string_view body, std::string_view content_type,
                        std::string_view accept) override;

 private:
  Result<CurlEasy> Acquire();
  void Release(CurlEasy h, bool reusable);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CurlEasy> idle_;  // guarded by mu_
  size_t in_use_ = 0;           // guarded by mu_
};

// Whether a proxy is configured for `server` (an http(s) URL): https_proxy /
// HTTPS_PROXY for https, http_proxy / HTTP_PROXY for http, all_proxy /
// ALL_PROXY for both, unless no_proxy / NO_PROXY ("*", or comma-separated
// host names and domain suffixes) excludes the host. Errs towards true: a
// NO_PROXY entry it does not understand (CIDR) leaves the proxy applying,
// and libcurl then decides.
bool ProxyApplies(std::string_view server, const EnvLookup& env);

// The transport ClientOptions::transport asks for; kAuto is the direct one
// unless a proxy applies to the server (the direct one speaks no proxy).
// The direct one to an https server with options.http2 (and the
// environment's ECO_K8S_HTTP2 not "false" or "0") tries HTTP/2 first
// (h2_transport.h) and keeps the HTTP/1.1 one for servers without h2.
Result<std::unique_ptr<Transport>> NewTransport(RestConfig config, ClientOptions options,
                                                const EnvLookup& env);

}  // namespace eco::k8s
