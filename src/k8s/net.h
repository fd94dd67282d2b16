// Internal to src/k8s: what the direct transport and the watch streams share
// to reach a cluster without libcurl — the server URL taken apart, literal
// addresses, TLS contexts shared by clusters with the same material, and a
// TLS session set up to check the server's name.
#pragma once

#include <netdb.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "k8s/client.h"

namespace eco::k8s {

// Where the server is, parsed once from RestConfig::server.
struct Endpoint {
  bool tls = false;
  std::string host;       // without brackets
  std::string port;       // "443" when the URL names none
  std::string authority;  // the Host header: host[:port] as in the URL
  std::string prefix;     // path prefix, "" or "/clusters/x"
};

// kInvalid unless `server` is an http(s) URL without user info.
Result<Endpoint> ParseServer(std::string_view server);

// OpenSSL's last error as text (clears the queue); "" when none.
std::string OpenSslError();

bool IsIpAddress(const std::string& host);

// A literal IP address and numeric port need no resolver, which would read
// /etc/hosts, /etc/resolv.conf and the like at every connect. Fills `out`
// (pointing into `storage`) and returns true for those.
bool NumericAddress(const std::string& host, const std::string& port_text,
                    sockaddr_storage& storage, addrinfo& out);

using SslCtx = std::shared_ptr<SSL_CTX>;

// The TLS context for the config's CA, client certificate and key: clients
// of clusters that share TLS material share one (parsed certificates), so
// ten thousand clients do not hold ten thousand copies.
Result<SslCtx> SharedContext(const RestConfig& cfg);

// SNI for a DNS name and, unless `insecure`, the name or IP address the
// server's certificate must carry.
Status PrepareSession(SSL* ssl, const std::string& verify_name, bool insecure);

// A gzip body (Content-Encoding: gzip) decoded.
Result<std::string> Gunzip(const std::string& in);

}  // namespace eco::k8s
