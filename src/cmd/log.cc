#include "cmd/log.h"

#include "common/log.h"
#include "common/secrets.h"
#include "common/trace.h"

#include <grpc/support/log.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace eco::cmd {

namespace {

std::function<void()>* g_stop = nullptr;

void OnSignal(int) {
  if (g_stop && *g_stop) (*g_stop)();
}

// SIGHUP: the handler only writes a byte to a pipe (all a signal handler
// may safely do); a thread of its own runs the reloads.
int g_hangup_pipe[2] = {-1, -1};

void OnHangup(int) {
  const char c = 1;
  ssize_t n = ::write(g_hangup_pipe[1], &c, 1);
  (void)n;  // a full pipe: a reload is pending already
}

struct Reloads {
  std::mutex mu;
  std::vector<std::function<void()>> fns;  // guarded by mu
  std::once_flag started;
};
Reloads& TheReloads() {
  static Reloads r;
  return r;
}

// Installs the SIGHUP handler and its thread, once.
void StartHangupThread() {
  std::call_once(TheReloads().started, [] {
    if (::pipe2(g_hangup_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    // Reads block: only the write end needs O_NONBLOCK.
    ::fcntl(g_hangup_pipe[0], F_SETFL, 0);
    std::thread([] {
      char c;
      while (true) {
        ssize_t n = ::read(g_hangup_pipe[0], &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        std::vector<std::function<void()>> fns;
        {
          std::lock_guard<std::mutex> l(TheReloads().mu);
          fns = TheReloads().fns;
        }
        if (fns.empty()) Log("info", "SIGHUP: nothing to reload (no --auth-tokens, --auth-jwks or --tls-cert)");
        for (auto& fn : fns) fn();
      }
    }).detach();
    std::signal(SIGHUP, OnHangup);
  });
}

void OnReload(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> l(TheReloads().mu);
    TheReloads().fns.push_back(std::move(fn));
  }
  StartHangupThread();
}

}  // namespace

void Log(const char* level, const std::string& msg) {
  eco::log::Write(eco::log::ParseLevel(level).value_or(eco::log::Level::kInfo), "eco", msg);
}

namespace {

void GrpcLine(gpr_log_func_args* a) {
  using eco::log::Level;
  const Level level = a->severity == GPR_LOG_SEVERITY_ERROR  ? Level::kError
                      : a->severity == GPR_LOG_SEVERITY_INFO ? Level::kInfo
                                                             : Level::kDebug;
  if (!eco::log::Enabled(level)) return;
  eco::log::Write(level, "grpc", a->message != nullptr ? a->message : "",
                  {{"file", a->file != nullptr ? a->file : ""}, {"line", a->line}});
}

}  // namespace

void RouteGrpcLog() { gpr_set_log_function(&GrpcLine); }

void AddLogLevelFlag(CLI::App* cmd, std::string* level) {
  cmd->add_option("--log-level", *level, "debug, info, warn or error (PUT /log-level changes it while running)")
      ->default_val("info")
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error"}));
}

void ApplyLogLevel(const std::string& level) {
  if (auto l = eco::log::ParseLevel(level)) eco::log::SetLevel(*l);
}

void AddTraceFlags(CLI::App* cmd, TraceFlags* flags) {
  cmd->add_option("--otlp-endpoint", flags->endpoint,
                  "Send spans as OTLP/HTTP to this URL (http://host:4318, as Jaeger and the OpenTelemetry "
                  "Collector listen); empty: no tracing");
  cmd->add_option("--otlp-protocol", flags->protocol,
                  "OTLP/HTTP encoding: http/protobuf (OTLP's default) or http/json")
      ->default_val("http/protobuf")
      ->check(CLI::IsMember({"http/protobuf", "http/json"}));
  cmd->add_option("--trace-sample-ratio", flags->sample_ratio,
                  "Share of new traces recorded, 0 to 1 (a caller's sampling decision is followed)")
      ->default_val(1.0)
      ->check(CLI::Range(0.0, 1.0));
}

bool ApplyTrace(const TraceFlags& flags, const std::string& service_name) {
  if (flags.endpoint.empty()) return true;
  trace::Options o;
  o.endpoint = flags.endpoint;
  o.sample_ratio = flags.sample_ratio;
  o.protocol = flags.protocol == "http/json" ? trace::Protocol::kJson : trace::Protocol::kProtobuf;
  o.service_name = service_name;
  if (Status s = trace::Configure(o); !s.ok()) {
    Log("error", s.message());
    return false;
  }
  Log("info", "sending spans to " + flags.endpoint + " as " + flags.protocol + " (sampling " +
                  std::to_string(flags.sample_ratio) + ")");
  return true;
}

void AddHttpSecurityFlags(CLI::App* cmd, HttpSecurityFlags* flags) {
  cmd->add_option("--tls-cert", flags->cert, "Serve HTTPS with this certificate chain (PEM)");
  cmd->add_option("--tls-key", flags->key, "Private key of --tls-cert (PEM)");
  cmd->add_option("--tls-client-ca", flags->client_ca,
                  "Require client certificates signed by this CA (PEM): mutual TLS");
  cmd->add_option("--auth-tokens", flags->tokens,
                  "Require bearer tokens listed in this file: \"TOKEN USER PROJECT[,PROJECT...]\" or "
                  "\"TOKEN USER *\" (administrator) per line");
  cmd->add_option("--auth-jwks", flags->jwks,
                  "Accept JWTs (RS256, ES256) signed by a key of this JWKS file; claims: sub, projects");
  cmd->add_option("--auth-jwt-issuer", flags->issuer, "The iss every JWT must carry");
  cmd->add_option("--auth-jwt-audience", flags->audience, "A value the aud of every JWT must hold");
}

bool ApplyHttpSecurity(const HttpSecurityFlags& flags, api::ServerOptions* options) {
  options->tls_cert = flags.cert;
  options->tls_key = flags.key;
  options->tls_client_ca = flags.client_ca;
  if (!flags.cert.empty() && !flags.key.empty()) {
    // Unusable files are reported when the server starts, as before.
    if (auto id = api::TlsIdentity::Load(flags.cert, flags.key, flags.client_ca); id.ok()) {
      std::shared_ptr<api::TlsIdentity> tls = *id;
      options->tls = tls;
      OnReload([tls] {
        Status st = tls->Reload();
        if (!st.ok()) {
          Log("error", "SIGHUP: TLS certificate not reloaded, the previous one stays in force: " + st.message());
        } else {
          Log("info", "SIGHUP: TLS certificate reloaded: " + tls->Describe());
        }
      });
    }
  }
  if (flags.tokens.empty() && flags.jwks.empty()) {
    if (!flags.issuer.empty() || !flags.audience.empty()) {
      Log("error", "--auth-jwt-issuer and --auth-jwt-audience need --auth-jwks");
      return false;
    }
    return true;
  }
  api::Authenticator::Config config;
  config.tokens_file = flags.tokens;
  config.jwks_file = flags.jwks;
  config.issuer = flags.issuer;
  config.audience = flags.audience;
  auto a = api::Authenticator::Create(config);
  if (!a.ok()) {
    Log("error", a.status().message());
    return false;
  }
  auto source = std::make_shared<api::AuthSource>(config, *a);
  options->auth = source;
  auto describe = [flags](const api::Authenticator& auth) {
    return std::to_string(auth.size()) + " static tokens" +
           (flags.jwks.empty() ? "" : ", JWTs from " + flags.issuer + " (" + std::to_string(auth.jwt_keys()) +
                                          " keys in " + flags.jwks + ")");
  };
  Log("info", "bearer tokens required: " + describe(**a));
  OnReload([source, describe] {
    auto fresh = source->Reload();
    if (!fresh.ok()) {
      Log("error", "SIGHUP: tokens not reloaded, the previous ones stay in force: " + fresh.status().message());
    } else {
      Log("info", "SIGHUP: tokens reloaded: " + describe(**fresh));
    }
  });
  return true;
}

void AddGrpcTlsFlags(CLI::App* cmd, GrpcTlsFlags* flags) {
  cmd->add_option("--grpc-tls-cert", flags->cert,
                  "Certificate (PEM) of this side of the gRPC with controllers: served by a controller, "
                  "presented as a client certificate by eco");
  cmd->add_option("--grpc-tls-key", flags->key, "Private key of --grpc-tls-cert (PEM)");
  cmd->add_option("--grpc-tls-ca", flags->ca,
                  "CA (PEM) that signs the other side: eco checks controllers against it; a controller "
                  "requires client certificates it signed");
}

bool ApplyGrpcTls(const GrpcTlsFlags& flags, std::shared_ptr<const controllers::GrpcTls>* tls) {
  if (flags.cert.empty() && flags.key.empty() && flags.ca.empty()) return true;
  if (flags.cert.empty() != flags.key.empty()) {
    Log("error", "--grpc-tls-cert and --grpc-tls-key go together");
    return false;
  }
  auto read = [](const std::string& path, std::string* out) {
    if (path.empty()) return true;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
    if (!in || out->find("-----BEGIN") == std::string::npos) {
      Log("error", "cannot read a PEM certificate or key from " + path);
      return false;
    }
    return true;
  };
  auto t = std::make_shared<controllers::GrpcTls>();
  if (!read(flags.cert, &t->cert_pem) || !read(flags.key, &t->key_pem) || !read(flags.ca, &t->ca_pem))
    return false;
  *tls = t;
  controllers::SetClientTls(t);
  Log("info", std::string("gRPC with controllers over TLS") +
                  (flags.ca.empty() ? "" : ", peers checked against " + flags.ca));
  return true;
}

void AddSecretsFlags(CLI::App* cmd, SecretsFlags* flags) {
  cmd->add_option("--encryption-key-file", flags->key_file,
                  "Keys (64 hex digits per line, the first one encrypts) that encrypt kubeconfigs in "
                  "the store; or set ECO_ENCRYPTION_KEY");
  cmd->add_flag("--allow-plaintext-kubeconfigs", flags->allow_plaintext,
                "Start on etcd without an encryption key: kubeconfigs are then stored in plain text");
}

bool ApplySecrets(const SecretsFlags& flags, const std::string& generated_path) {
  Status s;
  std::string where;
  if (!flags.key_file.empty()) {
    s = secrets::Configure(flags.key_file, false);
    where = flags.key_file;
  } else if (const char* env = std::getenv("ECO_ENCRYPTION_KEY"); env && *env) {
    std::string text = env;
    std::replace(text.begin(), text.end(), ',', '\n');
    s = secrets::ConfigureFromText(text, "ECO_ENCRYPTION_KEY");
    where = "ECO_ENCRYPTION_KEY";
  } else if (!generated_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(generated_path).parent_path(), ec);
    const bool existed = std::filesystem::exists(generated_path, ec);
    s = secrets::Configure(generated_path, true);
    where = generated_path + (existed ? "" : " (generated now: back it up with the store)");
  } else if (!flags.allow_plaintext) {
    // Only the embedded store generates its own key; on etcd a missing key
    // would silently leave every cluster credential readable in the store.
    Log("error",
        "no encryption key for the etcd store: give --encryption-key-file (or ECO_ENCRYPTION_KEY), "
        "or --allow-plaintext-kubeconfigs to store kubeconfigs in plain text");
    return false;
  } else {
    Log("warn",
        "no encryption key (--encryption-key-file or ECO_ENCRYPTION_KEY) and "
        "--allow-plaintext-kubeconfigs: kubeconfigs are stored in plain text");
    return true;
  }
  if (!s.ok()) {
    Log("error", s.message());
    return false;
  }
  Log("info", "kubeconfigs are encrypted in the store with the key in " + where);
  return true;
}

void StopOnSignal(std::function<void()> stop) {
  static std::function<void()> holder;
  holder = std::move(stop);
  g_stop = &holder;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  StartHangupThread();  // SIGHUP reloads; it never stops eco
}

}  // namespace eco::cmd
