// EMCO's controller gRPC services (PlacementController, contextupdate) on
// both sides: RemoteController calls a controller process the way EMCO's
// orchestrator does; ControllerServer serves in-process Controller objects
// the way EMCO's controllers answer. Either side interoperates with EMCO's
// Go code (proto/contextupdate, proto/placementcontroller).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "controllers/controller.h"

namespace eco::controllers {

// TLS of the gRPC between eco and controllers (PEM text). A server with a
// certificate serves TLS, and with a CA also requires client certificates
// it signed; a client with a CA speaks TLS and checks the server's
// certificate against it, presenting its own certificate when it has one.
struct GrpcTls {
  std::string cert_pem, key_pem, ca_pem;
};
// The TLS of every RemoteController that has none of its own (set at start).
void SetClientTls(std::shared_ptr<const GrpcTls> tls);

struct RemoteOptions {
  std::string name;  // the controller's registered name, for messages
  std::string host;
  int port = 0;
  // Deadline of every call (EMCO's grpc-call-timeout).
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  std::shared_ptr<const GrpcTls> tls{};  // null: SetClientTls's, else plaintext
  // Times calls for the metrics. Deadlines are gRPC's, on the machine's
  // clock: a fake one cannot make a network call time out.
  Clock* clock = &RealClock();
};

// A controller in another process. Error mapping:
//   unreachable, transport failure, deadline  -> Unavailable("controller N at H:P: ...")
//   status=false / *_updated=false / success=false -> Invalid("controller N: <its message>")
//   UNIMPLEMENTED (or "not implemented") on TerminateAppContext / PostEvent -> Ok
//   any other gRPC error                      -> Internal
// Thread-safe: one channel, created on first use, shared by concurrent calls.
class RemoteController : public Controller {
 public:
  explicit RemoteController(RemoteOptions options);
  ~RemoteController() override;

  Status FilterClusters(const std::string& context_id) override;
  Status UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                          const std::string& update_from) override;
  Status TerminateAppContext(const std::string& context_id) override;
  Status PostEvent(const std::string& context_id, Event event) override;

  const RemoteOptions& options() const { return options_; }
  // "host:port" as dialled (IPv6 hosts in brackets).
  const std::string& target() const { return target_; }

 private:
  struct Stubs;
  std::shared_ptr<Stubs> GetStubs();

  const RemoteOptions options_;
  const std::string target_;
  std::mutex mu_;
  std::shared_ptr<Stubs> stubs_;  // guarded by mu_; created lazily
};

struct ControllerServerOptions {
  std::string bind_address = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port, see ControllerServer::port()
  std::shared_ptr<const GrpcTls> tls{};  // with a certificate: TLS only
  Clock* clock = &RealClock();           // times served calls for the metrics
};

// Serves a placement controller (PlacementController) and/or an action
// controller (contextupdate) on one port. A service without a controller
// answers UNIMPLEMENTED, as a Go server without it would. Errors returned by
// a controller become status=false / *_updated=false answers carrying the
// message, never gRPC errors, as EMCO's controllers answer.
class ControllerServer {
 public:
  explicit ControllerServer(ControllerServerOptions options = {});
  ~ControllerServer();  // shuts down
  ControllerServer(const ControllerServer&) = delete;
  ControllerServer& operator=(const ControllerServer&) = delete;

  // Before Start().
  void SetPlacement(std::shared_ptr<Controller> controller);
  void SetAction(std::shared_ptr<Controller> controller);

  // Binds and starts serving; Unavailable if the address cannot be bound,
  // Invalid if no controller was set or the server already started.
  Status Start();
  // The bound port (after a successful Start), 0 before.
  int port() const;
  // Stops accepting calls and waits for running calls to finish (calls still
  // running after a grace period are cancelled). Idempotent.
  void Shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::controllers
