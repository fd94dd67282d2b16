#include "api/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <zlib.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/trace.h"
#include "ui/ui.h"

namespace eco::api {
namespace {

using Clock = std::chrono::steady_clock;

// The request the calling HTTP thread serves (httplib serves the requests
// of a connection one after another on one thread).
struct InFlight {
  Clock::time_point start{};
  std::string route;
  bool logged = true;  // the access-log decision, taken when the request arrived
  std::string user;    // the authenticated caller, when the API needs tokens
  trace::Span span;                   // the server span, when traced
  std::optional<trace::Scope> scope;  // the span is the thread's current one meanwhile
};
thread_local InFlight t_request;

// eco_http_requests_total and eco_http_request_duration_seconds, by route
// template (never the path: names would make the series unbounded).
class HttpMetrics {
 public:
  static HttpMetrics& Get() {
    static HttpMetrics m;
    return m;
  }
  void Observe(std::string_view route, const std::string& method, int code, double seconds) {
    // The series of each (route, method, code) are looked up once per
    // thread: Family::Add builds a label map and takes a lock.
    struct Series {
      prometheus::Counter* requests;
      prometheus::Histogram* duration;
    };
    thread_local std::unordered_map<std::string, Series> cache;
    thread_local std::string key;  // reused: no allocation per request
    char digits[12];
    key.assign(route).append(1, '\n').append(method).append(1, '\n');
    key.append(digits, std::to_chars(digits, digits + sizeof digits, code).ptr);
    auto it = cache.find(key);
    if (it == cache.end()) {
      const std::string m = KnownMethod(method) ? method : "other";
      const std::string r(route);
      Series s{&requests_.Add({{"route", r}, {"method", m}, {"code", std::to_string(code)}}),
               &durations_.Add({{"route", r}, {"method", m}}, metrics::LatencyBuckets())};
      it = cache.emplace(key, s).first;
    }
    it->second.requests->Increment();
    if (seconds >= 0) it->second.duration->Observe(seconds);
  }

 private:
  HttpMetrics()
      : requests_(prometheus::BuildCounter()
                      .Name("eco_http_requests_total")
                      .Help("HTTP requests served, by route template, method and status code.")
                      .Register(metrics::Registry())),
        durations_(prometheus::BuildHistogram()
                       .Name("eco_http_request_duration_seconds")
                       .Help("Time from a request's arrival to the end of its answer, by route "
                             "template and method.")
                       .Register(metrics::Registry())) {}
  static bool KnownMethod(const std::string& m) {
    return m == "GET" || m == "POST" || m == "PUT" || m == "DELETE" || m == "PATCH" ||
           m == "HEAD" || m == "OPTIONS";
  }
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
};

// gzip at zlib's fastest level, or nothing when zlib fails.
std::optional<std::string> Gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

// Bytes sent as they are. cpp-httplib compresses a plain body itself and
// picks brotli at its slowest quality for any browser (seconds for the
// console's 2 MB fleet views, 10-20 ms per script); a body handed over by a
// provider with its length is sent untouched.
void SendAsIs(httplib::Response& hr, std::shared_ptr<const std::string> body, const std::string& type) {
  const size_t n = body->size();
  hr.set_content_provider(n, type, [body = std::move(body)](size_t offset, size_t length, httplib::DataSink& sink) {
    return sink.write(body->data() + offset, length);
  });
}

bool AcceptsGzip(const httplib::Request& req) {
  return req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos;
}

// JSON answers from this size on are gzipped here, at zlib's fastest level.
constexpr size_t kCompressFrom = 16 * 1024;

void Send(const Response& ar, httplib::Response& hr, httplib::Server* srv = nullptr,
          const httplib::Request* req = nullptr) {
  if (req && !ar.stream && ar.status != 204 && ar.body.size() >= kCompressFrom) {
    hr.status = ar.status;
    hr.set_header("Vary", "Accept-Encoding");
    if (AcceptsGzip(*req)) {
      if (auto z = Gzip(ar.body)) {
        hr.set_header("Content-Encoding", "gzip");
        SendAsIs(hr, std::make_shared<const std::string>(std::move(*z)), ar.content_type);
        return;
      }
    }
    SendAsIs(hr, std::make_shared<const std::string>(ar.body), ar.content_type);
    return;
  }
  hr.status = ar.status;
  if (ar.status == 204) return;
  if (ar.stream && srv) {
    hr.set_chunked_content_provider(
        ar.content_type, [stream = ar.stream, srv](size_t, httplib::DataSink& sink) {
          auto open = [&] { return srv->is_running() && sink.is_writable(); };
          stream(
              [&](const std::string& piece) {
                return open() && sink.write(piece.data(), piece.size());
              },
              open);
          sink.done();
          return true;
        });
    return;
  }
  hr.set_content(ar.body, ar.content_type.c_str());
}

// GET /metrics: the process's metrics in Prometheus' text format.
bool MetricsRoute(const httplib::Request& req, httplib::Response& res) {
  if (req.path != "/metrics") return false;
  t_request.route = "/metrics";
  if (req.method != "GET") {
    Send(ErrorResponse(405, "Method " + req.method + " not allowed on /metrics"), res);
    return true;
  }
  res.status = 200;
  res.set_content(metrics::Render(), metrics::kContentType);
  return true;
}

// The dashboard's files (/ui/...), served without a token: they hold no
// data; the API calls the page makes carry the user's token.
bool UiRoute(const httplib::Request& req, httplib::Response& res) {
  if (req.path != "/" && req.path != "/ui" && !req.path.starts_with("/ui/")) return false;
  t_request.route = "/ui";
  if (req.method != "GET" && req.method != "HEAD") {
    Send(ErrorResponse(405, "Method " + req.method + " not allowed on the dashboard"), res);
    return true;
  }
  if (req.path == "/" || req.path == "/ui") {
    res.status = 302;
    res.set_header("Location", "/ui/");
    return true;
  }
  const ui::Asset* a = ui::Find(req.path);
  if (!a) {
    Send(ErrorResponse(404, "Not found: the dashboard has no file " + req.path), res);
    return true;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", std::string(a->etag));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                 "img-src 'self' data:; frame-ancestors 'none'");
  if (req.get_header_value("If-None-Match") == a->etag) {
    res.status = 304;
    return true;
  }
  res.status = 200;
  res.set_header("Vary", "Accept-Encoding");
  // Each file gzipped once, on its first request.
  static std::mutex mu;
  static std::map<std::string_view, std::shared_ptr<const std::string>> zipped;
  std::shared_ptr<const std::string> body;
  if (AcceptsGzip(req)) {
    std::lock_guard<std::mutex> l(mu);
    auto& z = zipped[a->etag];
    if (!z) {
      if (auto g = Gzip(std::string(a->body))) z = std::make_shared<const std::string>(std::move(*g));
    }
    body = z;
  }
  if (body) {
    res.set_header("Content-Encoding", "gzip");
  } else {
    body = std::make_shared<const std::string>(a->body);
  }
  SendAsIs(res, std::move(body), std::string(a->content_type));
  return true;
}

// GET /log-level: {"level":"info"}; PUT with that body sets it. Beside the
// API's /v2 routes, on every role.
bool LogLevelRoute(const httplib::Request& req, httplib::Response& res) {
  if (req.path != "/log-level") return false;
  t_request.route = "/log-level";
  if (req.method == "PUT") {
    nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    std::optional<log::Level> level;
    if (body.is_object() && body.contains("level") && body["level"].is_string())
      level = log::ParseLevel(body["level"].get<std::string>());
    if (!level) {
      Send(ErrorResponse(400, "body must be {\"level\": \"debug|info|warn|error\"}"), res);
      return true;
    }
    log::SetLevel(*level);
    log::Write(log::Level::kWarn, "api", "log level set", {{"level", log::LevelName(*level)}});
  } else if (req.method != "GET") {
    Send(ErrorResponse(405, "Method " + req.method + " not allowed on /log-level"), res);
    return true;
  }
  res.status = 200;
  res.set_content(nlohmann::json{{"level", log::LevelName(log::GetLevel())}}.dump(),
                  "application/json");
  return true;
}

// The host part of a Host header ("name", "1.2.3.4", "[::1]"), or ""
// when it is missing or holds anything a host name does not.
std::string HostPart(std::string_view host) {
  std::string_view h = host;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return "";
    h = h.substr(0, close + 1);
    if (h.find_first_not_of("[]:.0123456789abcdefABCDEF") != std::string_view::npos) return "";
    return std::string(h);
  }
  h = h.substr(0, h.find(':'));
  if (h.empty() || h.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
                       std::string_view::npos) {
    return "";
  }
  return std::string(h);
}

Request ToApiRequest(const httplib::Request& hr, const ServerOptions& opts) {
  Request r;
  // Only the bootstrap answer needs it.
  if (hr.path.ends_with("/agent-bootstrap")) r.agent_hub = AgentHubUrl(opts, hr.get_header_value("Host"));
  r.method = hr.method;
  r.path = hr.path;
  for (auto& [k, v] : hr.params) r.query.emplace(k, v);
  r.accept = hr.get_header_value("Accept");
  r.content_type = hr.get_header_value("Content-Type");
  r.multipart = hr.is_multipart_form_data();
  if (r.multipart) {
    for (auto& [name, part] : hr.files) {
      r.parts.emplace(name, FormPart{part.content, part.filename, part.content_type});
    }
  } else {
    r.body = hr.body;
  }
  return r;
}


// The server: HTTPS when a certificate is configured (with client
// certificates required when a client CA is). `error` says why it cannot run.
std::unique_ptr<httplib::Server> MakeServer(const ServerOptions& o, std::string* error) {
  if (o.tls_cert.empty() && o.tls_key.empty()) {
    if (!o.tls_client_ca.empty()) *error = "--tls-client-ca needs --tls-cert and --tls-key";
    return std::make_unique<httplib::Server>();
  }
  if (o.tls_cert.empty() || o.tls_key.empty()) {
    *error = "TLS needs both --tls-cert and --tls-key";
    return std::make_unique<httplib::Server>();
  }
  auto s = std::make_unique<httplib::SSLServer>(
      o.tls_cert.c_str(), o.tls_key.c_str(),
      o.tls_client_ca.empty() ? nullptr : o.tls_client_ca.c_str());
  if (!s->is_valid()) {
    *error = "cannot use TLS certificate " + o.tls_cert + " with key " + o.tls_key +
             (o.tls_client_ca.empty() ? "" : " and client CA " + o.tls_client_ca) +
             ": a file is unreadable or not PEM, or the key does not match the certificate";
  } else {
    SSL_CTX_set_min_proto_version(s->ssl_context(), TLS1_2_VERSION);
    if (o.tls) o.tls->Install(s->ssl_context());
  }
  return s;
}

// GET /v2/projects for a caller who is not an administrator: their projects only.
void OwnProjectsOnly(const Principal& who, Response& r) {
  nlohmann::json list = nlohmann::json::parse(r.body, nullptr, false);
  if (!list.is_array()) return;
  nlohmann::json mine = nlohmann::json::array();
  for (auto& p : list) {
    const nlohmann::json* md = p.is_object() && p.contains("metadata") ? &p["metadata"] : nullptr;
    if (md && md->is_object() && md->contains("name") && (*md)["name"].is_string() &&
        who.CanUseProject((*md)["name"].get<std::string>())) {
      mine.push_back(std::move(p));
    }
  }
  r.body = mine.dump();
}

}  // namespace

std::string AgentHubUrl(const ServerOptions& opts, std::string_view host_header) {
  if (!opts.agent_url.empty()) return opts.agent_url;
  std::string host = HostPart(host_header);
  if (host.empty()) host = "localhost";  // an HTTP/1.0 client: set --agent-url
  const bool tls = !opts.tls_cert.empty() && !opts.tls_key.empty();
  return std::string(tls ? "https" : "http") + "://" + host + ":" + std::to_string(opts.agent_port);
}

struct HttpServer::Impl {
  Api* api;  // null: only the routes every role has
  ServerOptions opts;
  std::string setup_error;  // why the server cannot start (a TLS file), reported by Bind
  std::unique_ptr<httplib::Server> server;  // an SSLServer with TLS; set after setup_error
  httplib::Server& srv;
  int port = -1;
  int listen_fd = -1;  // the listening socket, seen through the options hook

  Impl(Api* a, ServerOptions o)
      : api(a), opts(std::move(o)), server(MakeServer(opts, &setup_error)), srv(*server) {
    size_t threads = std::max<size_t>(opts.threads, 2);
    // httplib owns the queue it is handed and deletes it on shutdown.
    srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    srv.set_payload_max_length(opts.max_body_bytes);
    srv.set_keep_alive_max_count(100000);
    srv.set_tcp_nodelay(true);
    // httplib's default also sets SO_REUSEPORT, which lets a second eco bind
    // the same port silently and steal half the connections.
    srv.set_socket_options([this](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    srv.set_read_timeout(60, 0);
    srv.set_write_timeout(60, 0);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      if (MetricsRoute(req, res)) return;  // scraped without a token
      if (api && opts.ui && UiRoute(req, res)) return;
      std::optional<Principal> who;
      if (opts.auth && req.path != "/healthz") {
        auto p = opts.auth->Get()->Authenticate(req.get_header_value("Authorization"));
        if (!p.ok()) {
          res.set_header("WWW-Authenticate", "Bearer realm=\"eco\"");
          Send(ErrorResponse(401, p.status().message()), res);
          return;
        }
        t_request.user = p->user;
        if (Status a = Authorize(*p, req.method, req.path, req.get_header_value("Accept")); !a.ok()) {
          Send(ErrorResponse(403, a.message()), res);
          return;
        }
        who = std::move(*p);
      }
      if (LogLevelRoute(req, res)) return;
      Response r;
      if (api) {
        Request areq = ToApiRequest(req, opts);
        areq.who = who;
        r = api->Handle(areq);
        if (who && !who->admin && r.route == "/v2/projects" && req.method == "GET" && r.status == 200)
          OwnProjectsOnly(*who, r);
      } else if (req.path == "/healthz") {
        r.status = 200;
        r.body = nlohmann::json{{"status", "ok"}}.dump();
        r.route = "/healthz";
      } else {
        r = ErrorResponse(404,
                          "Not found: this role serves only /healthz, /metrics and /log-level");
      }
      t_request.route = r.route;
      Send(r, res, &srv, &req);
    };
    srv.set_pre_routing_handler([handler](const httplib::Request& req, httplib::Response& res) {
      t_request.start = Clock::now();
      t_request.route.clear();
      // The level in force when the request arrived decides its access line.
      t_request.logged = log::Enabled(log::Level::kInfo);
      // The caller's trace (W3C, Jaeger or B3 headers) continues here.
      if constexpr (ECO_TELEMETRY) {
        std::optional<trace::SpanContext> parent;
        if (std::any_of(req.headers.begin(), req.headers.end(),
                        [](const auto& h) { return trace::IsPropagationHeader(h.first); })) {
          parent = trace::Extract([&req](std::string_view name) {
            auto it = req.headers.find(std::string(name));  // httplib compares names without case
            return it == req.headers.end() ? std::nullopt : std::optional<std::string>(it->second);
          });
        }
        // Named when the route is known, at the end.
        t_request.span = trace::Span::Start({}, trace::Kind::kServer, parent ? &*parent : nullptr);
        t_request.scope.emplace(t_request.span);
      }
      // A request without Content-Length or chunked encoding has no body
      // (RFC 9112 6.3), but httplib refuses such a POST with 400 before any
      // handler runs; `curl -X POST URL` sends exactly that. Served here.
      if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
          !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
        handler(req, res);
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // One access-log line per request, once its answer is sent (a stream's
    // when it ends). Requests refused before routing (413, bad request
    // line) have no route and no duration.
    srv.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      const std::string_view route =
          t_request.route.empty() ? std::string_view("-") : t_request.route;
      const bool timed = t_request.start != Clock::time_point{};
      const double seconds = timed ? metrics::SecondsSince(t_request.start) : -1;
      if constexpr (ECO_TELEMETRY) {  // off only in the overhead benchmark's base build
        HttpMetrics::Get().Observe(route, req.method, res.status, seconds);
        if (trace::Span& span = t_request.span; span.recording()) {
          span.SetName({req.method, " ", route});
          span.SetAttribute("http.request.method", req.method);
          span.SetAttribute("http.route", route);
          span.SetAttribute("url.path", req.path);
          span.SetAttribute("http.response.status_code", static_cast<int64_t>(res.status));
          if (res.status >= 500) span.SetError("HTTP " + std::to_string(res.status));
        }
      }
      if (timed ? t_request.logged : log::Enabled(log::Level::kInfo)) {
        // Requests refused before routing (413, bad request line) have no
        // duration; the user only when the API needs tokens.
        std::array<log::Field, 8> fields{
            log::Field("method", req.method),       log::Field("route", route),
            log::Field("path", req.path),           log::Field("status", res.status),
            log::Field("remote_addr", req.remote_addr), log::Field("", ""),
            log::Field("", ""),                     log::Field("", "")};
        size_t n = 5;
        if (timed) fields[n++] = log::Field("duration_ms", seconds * 1000);
        if (!t_request.user.empty()) fields[n++] = log::Field("user", t_request.user);
        log::Write(log::Level::kInfo, "api", "request", std::span<const log::Field>(fields.data(), n));
      }
      t_request.user.clear();
      t_request.scope.reset();
      t_request.span.End();
      t_request.start = {};
      t_request.route.clear();
      t_request.logged = true;
    });
    srv.Get(".*", handler);
    srv.Post(".*", handler);
    srv.Put(".*", handler);
    srv.Delete(".*", handler);
    srv.Patch(".*", handler);
    // Errors httplib produces itself (413 body too large, 400 bad request
    // line, ...) get the same JSON shape as the API's.
    srv.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string msg = res.status == 413 ? "Request body larger than the limit of " +
                                                    std::to_string(opts.max_body_bytes) + " bytes"
                                              : "Request rejected by the HTTP layer (status " +
                                                    std::to_string(res.status) + ")";
          Send(ErrorResponse(res.status, msg), res);
          return httplib::Server::HandlerResponse::Handled;
        }));
  }
};

HttpServer::HttpServer(Api& api, ServerOptions opts)
    : impl_(std::make_unique<Impl>(&api, std::move(opts))) {}
HttpServer::HttpServer(ServerOptions opts)
    : impl_(std::make_unique<Impl>(nullptr, std::move(opts))) {}
HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Bind() {
  if (!impl_->setup_error.empty()) return Invalid(impl_->setup_error);
  if (impl_->opts.port == 0) {
    impl_->port = impl_->srv.bind_to_any_port(impl_->opts.bind);
  } else if (impl_->srv.bind_to_port(impl_->opts.bind, impl_->opts.port)) {
    impl_->port = impl_->opts.port;
  }
  // httplib listens with a backlog of 5: bursts of connections overflow it
  // and get reset. Listening again on the bound socket raises the backlog.
  if (impl_->port > 0 && impl_->listen_fd >= 0) ::listen(impl_->listen_fd, SOMAXCONN);
  if (impl_->port <= 0) {
    return Unavailable("cannot listen on " + impl_->opts.bind + ":" +
                       std::to_string(impl_->opts.port) + " (address in use or not permitted)");
  }
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::Serve() {
  if (!impl_->srv.listen_after_bind()) return Internal("HTTP server stopped with an error");
  return Status::Ok();
}

void HttpServer::Stop() { impl_->srv.stop(); }

}  // namespace eco::api
