#include "controllers/grpc.h"

#include <grpcpp/grpcpp.h>

#include <exception>
#include <iterator>
#include <string_view>
#include <utility>

#include "common/metrics.h"
#include "common/trace.h"
#include "contextupdate/contextupdate.grpc.pb.h"
#include "placementcontroller/placementcontroller.grpc.pb.h"

namespace eco::controllers {
namespace {

std::string_view GrpcCodeName(grpc::StatusCode code) {
  // Indexed by the code's value (0..16, fixed by the gRPC protocol).
  static constexpr std::string_view kNames[] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  auto i = static_cast<size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

std::string Target(const std::string& host, int port) {
  // An IPv6 literal needs brackets before the port.
  bool v6 = host.find(':') != std::string::npos && !host.starts_with('[');
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

namespace {

std::mutex g_client_tls_mu;
std::shared_ptr<const GrpcTls> g_client_tls;  // guarded by g_client_tls_mu

std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const std::shared_ptr<const GrpcTls>& own) {
  std::shared_ptr<const GrpcTls> tls = own;
  if (!tls) {
    std::lock_guard<std::mutex> g(g_client_tls_mu);
    tls = g_client_tls;
  }
  if (!tls || tls->ca_pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = tls->ca_pem;
  o.pem_private_key = tls->key_pem;
  o.pem_cert_chain = tls->cert_pem;
  return grpc::SslCredentials(o);
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const std::shared_ptr<const GrpcTls>& tls) {
  if (!tls || tls->cert_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(tls->ca_pem.empty()
                                          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = tls->ca_pem;
  o.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(o);
}

}  // namespace

void SetClientTls(std::shared_ptr<const GrpcTls> tls) {
  std::lock_guard<std::mutex> g(g_client_tls_mu);
  g_client_tls = std::move(tls);
}

struct RemoteController::Stubs {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<::PlacementController::Stub> placement;
  std::unique_ptr<::contextupdate::Stub> action;
};

RemoteController::RemoteController(RemoteOptions options)
    : options_(std::move(options)), target_(Target(options_.host, options_.port)) {}

RemoteController::~RemoteController() = default;

std::shared_ptr<RemoteController::Stubs> RemoteController::GetStubs() {
  std::lock_guard lock(mu_);
  if (!stubs_) {
    // Creating a channel does not connect; the first call does, and later
    // calls reuse (or transparently re-establish) the connection.
    auto s = std::make_shared<Stubs>();
    s->channel = grpc::CreateChannel(target_, ClientCredentials(options_.tls));
    s->placement = ::PlacementController::NewStub(s->channel);
    s->action = ::contextupdate::NewStub(s->channel);
    stubs_ = std::move(s);
  }
  return stubs_;
}

namespace {

// What the orchestrator makes of a failed call. `tolerate_unimplemented`:
// EMCO ignores controllers that do not implement Terminate/PostEvent.
Status FromGrpc(const grpc::Status& s, const RemoteOptions& o, const std::string& target,
                std::string_view rpc, bool tolerate_unimplemented) {
  if (s.ok()) return Status::Ok();
  const std::string& msg = s.error_message();
  if (tolerate_unimplemented && (s.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
                                 msg.find("not implemented") != std::string::npos)) {
    return Status::Ok();
  }
  std::string where = "controller " + o.name + " at " + target + ": " + std::string(rpc) + ": ";
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Unavailable(where + "deadline exceeded after " + std::to_string(o.timeout.count()) +
                         "ms");
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
      return Unavailable(where + msg + " (" + std::string(GrpcCodeName(s.error_code())) + ")");
    default:
      return Internal(where + std::string(GrpcCodeName(s.error_code())) + ": " + msg);
  }
}

// eco_grpc_{client,server}_calls_total and _duration_seconds by method
// (five methods: bounded).
struct GrpcMetrics {
  prometheus::Family<prometheus::Counter>& client_calls;
  prometheus::Family<prometheus::Histogram>& client_time;
  prometheus::Family<prometheus::Counter>& server_calls;
  prometheus::Family<prometheus::Histogram>& server_time;
  static GrpcMetrics& Get() {
    auto& reg = metrics::Registry();
    static GrpcMetrics m{
        prometheus::BuildCounter()
            .Name("eco_grpc_client_calls_total")
            .Help("gRPC calls to controllers, by method and gRPC status code.")
            .Register(reg),
        prometheus::BuildHistogram()
            .Name("eco_grpc_client_call_duration_seconds")
            .Help("gRPC calls to controllers: time until the answer, by method.")
            .Register(reg),
        prometheus::BuildCounter()
            .Name("eco_grpc_server_calls_total")
            .Help("gRPC calls served by this controller, by method and result (OK or the error class).")
            .Register(reg),
        prometheus::BuildHistogram()
            .Name("eco_grpc_server_call_duration_seconds")
            .Help("gRPC calls served by this controller: time to answer, by method.")
            .Register(reg)};
    return m;
  }
};

template <typename Fn>
grpc::Status CallWithDeadline(std::chrono::milliseconds timeout, const Clock& clock,
                              const char* method, Fn&& fn) {
  grpc::ClientContext ctx;
  // gRPC enforces deadlines on the machine's clock, whatever `clock` is.
  ctx.set_deadline(ToSystem(RealClock().WallNow()) + timeout);
  // The caller's trace goes on to the controller in the call's metadata.
  trace::Span span = trace::Span::Child(std::string("controller ") + method, trace::Kind::kClient);
  for (const auto& [k, v] : trace::Inject(span.context())) ctx.AddMetadata(k, v);
  span.SetAttribute("rpc.system", "grpc");
  span.SetAttribute("rpc.method", method);
  const Clock::Time start = clock.Now();
  grpc::Status s = fn(&ctx);
  if (!s.ok()) span.SetError(std::string(GrpcCodeName(s.error_code())) + ": " + s.error_message());
  GrpcMetrics& m = GrpcMetrics::Get();
  m.client_calls.Add({{"method", method}, {"code", std::string(GrpcCodeName(s.error_code()))}}).Increment();
  m.client_time.Add({{"method", method}}, metrics::LatencyBuckets())
      .Observe(metrics::SecondsSince(clock, start));
  return s;
}

Status Refused(const RemoteOptions& o, std::string_view rpc, const std::string& msg) {
  return Invalid("controller " + o.name + ": " + std::string(rpc) + ": " +
                 (msg.empty() ? "refused without a message" : msg));
}

}  // namespace

Status RemoteController::FilterClusters(const std::string& context_id) {
  auto stubs = GetStubs();
  ::ResourceRequest req;
  req.set_appcontext(context_id);
  ::ResourceResponse resp;
  grpc::Status s = CallWithDeadline(
      options_.timeout, *options_.clock, "FilterClusters",
      [&](grpc::ClientContext* ctx) { return stubs->placement->FilterClusters(ctx, req, &resp); });
  if (!s.ok()) return FromGrpc(s, options_, target_, "FilterClusters", false);
  if (!resp.status()) return Refused(options_, "FilterClusters", resp.message());
  return Status::Ok();
}

Status RemoteController::UpdateAppContext(const std::string& context_id,
                                          const std::string& intent_name,
                                          const std::string& update_from) {
  auto stubs = GetStubs();
  ::ContextUpdateRequest req;
  req.set_app_context(context_id);
  req.set_intent_name(intent_name);
  req.set_update_from_appcontext(update_from);
  ::ContextUpdateResponse resp;
  grpc::Status s = CallWithDeadline(
      options_.timeout, *options_.clock, "UpdateAppContext",
      [&](grpc::ClientContext* ctx) { return stubs->action->UpdateAppContext(ctx, req, &resp); });
  if (!s.ok()) return FromGrpc(s, options_, target_, "UpdateAppContext", false);
  if (!resp.app_context_updated()) {
    return Refused(options_, "UpdateAppContext", resp.app_context_update_message());
  }
  return Status::Ok();
}

Status RemoteController::TerminateAppContext(const std::string& context_id) {
  auto stubs = GetStubs();
  ::TerminateRequest req;
  req.set_app_context(context_id);
  ::TerminateResponse resp;
  grpc::Status s = CallWithDeadline(options_.timeout, *options_.clock, "TerminateAppContext",
                                    [&](grpc::ClientContext* ctx) {
                                      return stubs->action->TerminateAppContext(ctx, req, &resp);
                                    });
  if (!s.ok()) return FromGrpc(s, options_, target_, "TerminateAppContext", true);
  if (!resp.app_context_terminated()) {
    return Refused(options_, "TerminateAppContext", resp.app_context_terminated_message());
  }
  return Status::Ok();
}

Status RemoteController::PostEvent(const std::string& context_id, Event event) {
  auto stubs = GetStubs();
  ::PostEventRequest req;
  req.set_app_context(context_id);
  req.set_event_type(static_cast<::EventType>(static_cast<int>(event)));
  ::PostEventResponse resp;
  grpc::Status s = CallWithDeadline(
      options_.timeout, *options_.clock, "PostEvent",
      [&](grpc::ClientContext* ctx) { return stubs->action->PostEvent(ctx, req, &resp); });
  if (!s.ok()) return FromGrpc(s, options_, target_, "PostEvent", true);
  if (!resp.success()) return Refused(options_, "PostEvent", resp.post_event_message());
  return Status::Ok();
}

// ---------------------------------------------------------------- server side

namespace {

// Runs a controller call; a thrown exception (a bug in the controller) becomes
// an error answer instead of taking the server down.
template <typename Fn>
Status Guarded(const Clock& clock, grpc::ServerContext* call, const char* method, Fn&& fn) {
  const Clock::Time start = clock.Now();
  // The caller's trace from the call's metadata (gRPC keys are lower case).
  const auto& md = call->client_metadata();
  std::optional<trace::SpanContext> parent = trace::Extract([&md](std::string_view name) -> std::optional<std::string> {
    auto it = md.find(grpc::string_ref(name.data(), name.size()));
    if (it == md.end()) return std::nullopt;
    return std::string(it->second.data(), it->second.size());
  });
  trace::Span span = trace::Span::Start(method, trace::Kind::kServer, parent ? &*parent : nullptr);
  trace::Scope scope(span);
  span.SetAttribute("rpc.system", "grpc");
  Status s;
  try {
    s = fn();
  } catch (const std::exception& e) {
    s = Internal(std::string("controller threw: ") + e.what());
  } catch (...) {
    s = Internal("controller threw a non-standard exception");
  }
  GrpcMetrics& m = GrpcMetrics::Get();
  m.server_calls.Add({{"method", method}, {"result", std::string(CodeName(s.code()))}}).Increment();
  m.server_time.Add({{"method", method}}, metrics::LatencyBuckets())
      .Observe(metrics::SecondsSince(clock, start));
  if (!s.ok()) span.SetError(s.ToString());
  return s;
}

class PlacementService final : public ::PlacementController::Service {
 public:
  PlacementService(std::shared_ptr<Controller> c, const Clock& clock)
      : c_(std::move(c)), clock_(clock) {}

  grpc::Status FilterClusters(grpc::ServerContext* call, const ::ResourceRequest* req,
                              ::ResourceResponse* resp) override {
    Status s = Guarded(clock_, call, "FilterClusters",
                       [&] { return c_->FilterClusters(req->appcontext()); });
    resp->set_appcontext(req->appcontext());
    resp->set_status(s.ok());
    if (!s.ok()) resp->set_message(s.message());
    return grpc::Status::OK;
  }

 private:
  const std::shared_ptr<Controller> c_;
  const Clock& clock_;
};

class ActionService final : public ::contextupdate::Service {
 public:
  ActionService(std::shared_ptr<Controller> c, const Clock& clock)
      : c_(std::move(c)), clock_(clock) {}

  grpc::Status UpdateAppContext(grpc::ServerContext* call, const ::ContextUpdateRequest* req,
                                ::ContextUpdateResponse* resp) override {
    Status s = Guarded(clock_, call, "UpdateAppContext", [&] {
      return c_->UpdateAppContext(req->app_context(), req->intent_name(),
                                  req->update_from_appcontext());
    });
    resp->set_app_context_updated(s.ok());
    if (!s.ok()) resp->set_app_context_update_message(s.message());
    return grpc::Status::OK;
  }

  grpc::Status TerminateAppContext(grpc::ServerContext* call, const ::TerminateRequest* req,
                                   ::TerminateResponse* resp) override {
    Status s = Guarded(clock_, call, "TerminateAppContext",
                       [&] { return c_->TerminateAppContext(req->app_context()); });
    resp->set_app_context_terminated(s.ok());
    if (!s.ok()) resp->set_app_context_terminated_message(s.message());
    return grpc::Status::OK;
  }

  grpc::Status PostEvent(grpc::ServerContext* call, const ::PostEventRequest* req,
                         ::PostEventResponse* resp) override {
    int type = req->event_type();
    if (type < static_cast<int>(Event::kInstantiate) || type > static_cast<int>(Event::kUpdate)) {
      // proto3 enums are open: a newer client may send a value we do not know.
      resp->set_success(false);
      resp->set_post_event_message("unknown event type " + std::to_string(type));
      return grpc::Status::OK;
    }
    Status s = Guarded(clock_, call, "PostEvent",
                       [&] { return c_->PostEvent(req->app_context(), static_cast<Event>(type)); });
    resp->set_success(s.ok());
    if (!s.ok()) resp->set_post_event_message(s.message());
    return grpc::Status::OK;
  }

 private:
  const std::shared_ptr<Controller> c_;
  const Clock& clock_;
};

}  // namespace

struct ControllerServer::Impl {
  ControllerServerOptions options;
  std::shared_ptr<Controller> placement;
  std::shared_ptr<Controller> action;
  std::unique_ptr<PlacementService> placement_service;
  std::unique_ptr<ActionService> action_service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  bool started = false;
};

ControllerServer::ControllerServer(ControllerServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

ControllerServer::~ControllerServer() { Shutdown(); }

void ControllerServer::SetPlacement(std::shared_ptr<Controller> controller) {
  impl_->placement = std::move(controller);
}

void ControllerServer::SetAction(std::shared_ptr<Controller> controller) {
  impl_->action = std::move(controller);
}

Status ControllerServer::Start() {
  if (impl_->started) return Invalid("controller server already started");
  if (!impl_->placement && !impl_->action) {
    return Invalid("controller server: neither a placement nor an action controller to serve");
  }
  std::string address = Target(impl_->options.bind_address, impl_->options.port);
  grpc::ServerBuilder builder;
  int selected = 0;
  // gRPC sets SO_REUSEPORT by default: a second server on a taken port would
  // silently share its calls instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, ServerCredentials(impl_->options.tls), &selected);
  if (impl_->placement) {
    impl_->placement_service =
        std::make_unique<PlacementService>(impl_->placement, *impl_->options.clock);
    builder.RegisterService(impl_->placement_service.get());
  }
  if (impl_->action) {
    impl_->action_service = std::make_unique<ActionService>(impl_->action, *impl_->options.clock);
    builder.RegisterService(impl_->action_service.get());
  }
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || selected == 0) {
    impl_->server.reset();
    impl_->placement_service.reset();
    impl_->action_service.reset();
    return Unavailable("controller server: cannot listen on " + address);
  }
  impl_->port = selected;
  impl_->started = true;
  return Status::Ok();
}

int ControllerServer::port() const { return impl_->port; }

void ControllerServer::Shutdown() {
  if (!impl_->server) return;
  // Running calls get a grace period, then are cancelled; Shutdown still
  // waits for their handlers to return.
  impl_->server->Shutdown(ToSystem(RealClock().WallNow()) + std::chrono::seconds(5));
  impl_->server->Wait();
  impl_->server.reset();
  impl_->port = 0;
}

}  // namespace eco::controllers
