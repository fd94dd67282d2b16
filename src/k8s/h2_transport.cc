#include "k8s/h2_transport.h"

#include <strings.h>

#include <condition_variable>

#include "k8s/errors.h"
#include "k8s/io_loop.h"

namespace eco::k8s {

H2Session::H2Session(RestConfig config, ClientOptions options, Endpoint ep, IoLoop& loop)
    : config_(std::move(config)),
      options_(std::move(options)),
      ep_(std::move(ep)),
      loop_(loop),
      tokens_(config_.token, config_.token_file) {}

H2Session::~H2Session() {
  std::lock_guard<std::mutex> lock(mu_);
  // The loop holds an open connection until it closes: close it.
  if (conn_) conn_->Abort("the client was closed");
}

Result<std::shared_ptr<H2Connection>> H2Session::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn_ && conn_->accepting()) return conn_;
  if (!tls_) {
    ECO_ASSIGN_OR_RETURN(SslCtx ctx, SharedContext(config_));
    tls_ = std::move(ctx);
  }
  // A draining connection (GOAWAY) closes by itself once its streams end.
  H2Target target;
  target.ep = ep_;
  target.tls = tls_;
  target.verify_name = config_.tls_server_name.empty() ? ep_.host : config_.tls_server_name;
  target.insecure = config_.insecure_skip_tls_verify;
  target.connect_timeout = options_.connect_timeout;
  target.clock = options_.clock;
  opened_.fetch_add(1, std::memory_order_relaxed);
  conn_ = H2Connection::Start(loop_, std::move(target), [protocol = protocol_](bool h2) {
    if (protocol->load(std::memory_order_acquire) != Protocol::kHttp1) {
      protocol->store(h2 ? Protocol::kH2 : Protocol::kHttp1, std::memory_order_release);
    }
  });
  return conn_;
}

std::pair<std::shared_ptr<H2Connection>, uint64_t> H2Session::Open(
    H2Request request, std::shared_ptr<H2StreamSink> sink) {
  Result<std::shared_ptr<H2Connection>> conn = Current();
  if (!conn.ok()) {
    sink->OnEnd(H2End{H2End::kFailed, conn.status()});
    return {nullptr, 0};
  }
  uint64_t handle = (*conn)->Submit(std::move(request), std::move(sink));
  return {*conn, handle};
}

void H2Session::DropConnection() {
  std::lock_guard<std::mutex> lock(mu_);
  if (conn_) conn_->Abort("the connection was dropped");
}

Result<H2Request> H2Session::MakeRequest(std::string_view method, const std::string& path_and_query,
                                         std::string_view body, std::string_view content_type,
                                         bool gzip, std::string_view accept) {
  ECO_ASSIGN_OR_RETURN(std::string token, tokens_.Get());
  H2Request r;
  r.method = std::string(method);
  r.path = ep_.prefix + path_and_query;
  r.headers.reserve(6);
  r.headers.emplace_back("user-agent", options_.user_agent);
  r.headers.emplace_back("accept", accept.empty() ? "application/json" : std::string(accept));
  if (gzip) r.headers.emplace_back("accept-encoding", "gzip");
  if (!content_type.empty()) r.headers.emplace_back("content-type", std::string(content_type));
  if (!token.empty()) r.headers.emplace_back("authorization", "Bearer " + token);
  if (!body.empty() || (method != "GET" && method != "DELETE")) {
    r.headers.emplace_back("content-length", std::to_string(body.size()));
  }
  r.body = std::string(body);
  return r;
}

namespace {

// Collects one answer for a caller that waits for it.
class Waiter final : public H2StreamSink {
 public:
  void OnResponse(int status, const H2Headers& headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    result_.code = status;
    for (const auto& [n, v] : headers) {
      if (n == "retry-after") result_.retry_after = v;
      if (n == "content-encoding") gzip_ = strcasecmp(v.c_str(), "gzip") == 0;
    }
  }
  bool OnData(std::string_view bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    result_.body.append(bytes);
    return true;
  }
  void OnEnd(const H2End& end) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      end_ = end;
      done_ = true;
    }
    cv_.notify_all();
  }

  void OnSubmitted() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      submitted_ = true;
    }
    cv_.notify_all();
  }

  // Waits for the connection (its own connect timeout fails the stream),
  // then `timeout` for the answer. False when that passed first.
  bool Wait(Clock& clock, std::chrono::milliseconds connect_timeout,
            std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    // A backstop only: the connection ends its streams at its connect timeout.
    if (!clock.WaitFor(cv_, lock, connect_timeout + timeout, [&] { return done_ || submitted_; })) {
      return false;
    }
    return clock.WaitFor(cv_, lock, timeout, [&] { return done_; });
  }
  // After Wait returned true.
  const H2End& end() const { return end_; }
  HttpResult& result() { return result_; }
  bool gzip() const { return gzip_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;       // guarded by mu_
  bool submitted_ = false;  // guarded by mu_
  H2End end_;               // guarded by mu_
  HttpResult result_;       // guarded by mu_
  bool gzip_ = false;       // guarded by mu_
};

class H2Transport final : public Transport {
 public:
  H2Transport(RestConfig config, ClientOptions options, Endpoint ep,
              std::unique_ptr<Transport> http1)
      : Transport(config, options),
        session_(std::make_shared<H2Session>(std::move(config), std::move(options), std::move(ep),
                                             IoLoop::Shared())),
        http1_(std::move(http1)) {}

  std::shared_ptr<H2Session> h2_session() const override { return session_; }

  Result<HttpResult> Do(std::string_view method, const std::string& path_and_query,
                        std::string_view body, std::string_view content_type,
                        std::string_view accept) override {
    if (session_->protocol() == H2Session::Protocol::kHttp1) {
      return http1_->Do(method, path_and_query, body, content_type, accept);
    }
    const std::string what = std::string(method) + " " + path_and_query;
    ECO_ASSIGN_OR_RETURN(H2Request request,
                         session_->MakeRequest(method, path_and_query, body, content_type,
                                               options_.accept_gzip, accept));
    Clock& clock = *options_.clock;
    for (int attempt = 0;; ++attempt) {
      auto waiter = std::make_shared<Waiter>();
      auto [conn, handle] = session_->Open(request, waiter);
      if (!waiter->Wait(clock, options_.connect_timeout, options_.request_timeout)) {
        if (conn) {
          conn->Cancel(handle);
          conn->CheckAlive();  // a dead link fails its other streams too
        }
        return StatusFromLink(
                   LinkFailure::kLink,
                   "timed out after " + std::to_string(options_.request_timeout.count()) + " ms")
            .Annotate(what);
      }
      const H2End& end = waiter->end();
      switch (end.kind) {
        case H2End::kComplete: {
          HttpResult out = std::move(waiter->result());
          if (options_.accept_gzip && waiter->gzip() && !out.body.empty()) {
            ECO_ASSIGN_OR_RETURN(std::string plain, Gunzip(out.body));
            out.body = std::move(plain);
          }
          return out;
        }
        case H2End::kNoH2:
          return http1_->Do(method, path_and_query, body, content_type, accept);
        case H2End::kUnprocessed:
          if (attempt == 0) continue;  // never reached the server: once more, on a new connection
          [[fallthrough]];
        case H2End::kFailed:
          return end.status.Annotate(what);
      }
    }
  }

 private:
  const std::shared_ptr<H2Session> session_;
  const std::unique_ptr<Transport> http1_;
};

}  // namespace

Result<std::unique_ptr<Transport>> NewH2Transport(RestConfig config, ClientOptions options,
                                                  std::unique_ptr<Transport> http1) {
  ECO_ASSIGN_OR_RETURN(Endpoint ep, ParseServer(config.server));
  if (!ep.tls) return http1;
  return std::unique_ptr<Transport>(std::make_unique<H2Transport>(
      std::move(config), std::move(options), std::move(ep), std::move(http1)));
}

}  // namespace eco::k8s
