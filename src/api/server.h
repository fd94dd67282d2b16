// Serves the Api over HTTP/1.1 (cpp-httplib), every route on one port, with
// /healthz, /metrics and /log-level beside it; without an Api (the roles
// that have no REST API, such as `eco rsync`) only those three.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "api/api.h"
#include "api/auth.h"
#include "api/tls.h"
#include "common/status.h"

namespace eco::api {

struct ServerOptions {
  std::string bind = "0.0.0.0";
  int port = 9015;
  size_t max_body_bytes = 64u << 20;  // larger bodies get 413
  size_t threads = 32;                // worker threads (one per open connection)
  bool ui = true;                     // the dashboard's files under /ui/
  // HTTPS with this certificate chain and key (PEM files), when both are
  // set. With a client CA too, every client must present a certificate it
  // signed (mutual TLS).
  std::string tls_cert, tls_key, tls_client_ca;
  // The same files, re-read on SIGHUP (tls.h); null: read at start only.
  std::shared_ptr<TlsIdentity> tls;
  // Bearer tokens and per-project authorisation (auth.h); null: none.
  std::shared_ptr<AuthSource> auth;
  // Where agents of agent clusters dial (catalog/agent_identity.h), as the
  // bootstrap answer tells them: `agent_url` when set, else this host (as
  // the request's Host header names it) on `agent_port`, over https when
  // this server serves TLS. This server does not listen on agent_port.
  int agent_port = 9070;
  std::string agent_url;
};

// The `hub` of a bootstrap answer to a request with this Host header.
std::string AgentHubUrl(const ServerOptions& opts, std::string_view host_header);

class HttpServer {
 public:
  HttpServer(Api& api, ServerOptions opts);
  explicit HttpServer(ServerOptions opts);  // /healthz, /metrics, /log-level only
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the port (0 = any free port). Does not serve yet.
  Status Bind();
  int port() const;
  // Serves until Stop() is called from another thread.
  Status Serve();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::api
