// What eco's long-running commands share: one JSON object per log line on
// stdout (common/log.h), and a clean stop on SIGINT/SIGTERM.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "api/server.h"
#include "controllers/grpc.h"

namespace eco::cmd {

// A line of component "eco" (see common/log.h).
void Log(const char* level, const std::string& msg);

// gRPC's own messages (a port it cannot bind, a peer it gives up on) as
// eco's log lines, component "grpc", instead of its plain text on stderr:
// every line eco writes stays one JSON object.
void RouteGrpcLog();

// --log-level on a long-running command, and applying its value.
void AddLogLevelFlag(CLI::App* cmd, std::string* level);
void ApplyLogLevel(const std::string& level);

// --otlp-endpoint, --otlp-protocol and --trace-sample-ratio on a
// long-running command, and starting the span exporter with them
// (common/trace.h). False (logged) when the values are unusable.
struct TraceFlags {
  std::string endpoint;
  std::string protocol = "http/protobuf";
  double sample_ratio = 1.0;
};
void AddTraceFlags(CLI::App* cmd, TraceFlags* flags);
bool ApplyTrace(const TraceFlags& flags, const std::string& service_name);

// --tls-cert, --tls-key, --tls-client-ca, --auth-tokens and --auth-jwks
// (with --auth-jwt-issuer and --auth-jwt-audience) of a role's HTTP port,
// and putting them into its options. False (logged) when a token or key
// file is unusable.
struct HttpSecurityFlags {
  std::string cert, key, client_ca, tokens, jwks, issuer, audience;
};
void AddHttpSecurityFlags(CLI::App* cmd, HttpSecurityFlags* flags);
bool ApplyHttpSecurity(const HttpSecurityFlags& flags, api::ServerOptions* options);

// --grpc-tls-cert, --grpc-tls-key and --grpc-tls-ca: TLS of the gRPC
// between eco and controllers (controllers/grpc.h). Loaded into `tls`
// (null when none is given) and made the TLS of every controller eco
// calls. False (logged) when a file cannot be read or the set is incomplete.
struct GrpcTlsFlags {
  std::string cert, key, ca;
};
void AddGrpcTlsFlags(CLI::App* cmd, GrpcTlsFlags* flags);
bool ApplyGrpcTls(const GrpcTlsFlags& flags, std::shared_ptr<const controllers::GrpcTls>* tls);

// --encryption-key-file (or ECO_ENCRYPTION_KEY) of the roles that read or
// write kubeconfigs, and loading the keys (common/secrets.h). Without
// either, a key is generated at `generated_path` when one is given (the
// embedded store's data directory); otherwise (etcd) kubeconfigs would be
// stored in plain text, which is refused unless --allow-plaintext-kubeconfigs
// says so. False (logged) when the keys are unusable or missing.
struct SecretsFlags {
  std::string key_file;
  bool allow_plaintext = false;
};
void AddSecretsFlags(CLI::App* cmd, SecretsFlags* flags);
bool ApplySecrets(const SecretsFlags& flags, const std::string& generated_path);

// Runs `stop` (once) on SIGINT or SIGTERM; ignores SIGPIPE; SIGHUP reloads
// the token and JWKS files (ApplyHttpSecurity) and never stops eco. `stop`
// must only flip flags or shut sockets down: it runs in a signal handler.
void StopOnSignal(std::function<void()> stop);

}  // namespace eco::cmd
