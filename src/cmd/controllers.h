// The built-in placement and action controllers: in-process for `eco serve`,
// or alone as `eco controller hpa|traffic` (their intents' REST API plus
// EMCO's gRPC services).
#pragma once

#include <memory>

#include "controllers/grpc.h"

#include <string>
#include <vector>

#include "api/server.h"
#include "scheduler/scheduler.h"
#include "store/store.h"

namespace eco::cmd {

// hpa-placement (placement, priority 1), hpa-action (action, priority 1) and
// dtc (action, priority 2), under EMCO's names.
std::vector<scheduler::ControllerRef> BuiltinControllers(store::Store& st);

// Resource types of a controller's REST API ("hpa" or "traffic").
std::vector<std::string> ControllerResourceTypes(const std::string& which);

struct ControllerCommand {
  std::string which;  // "hpa" or "traffic"
  std::string store_url;
  api::ServerOptions http;  // its intents' REST API
  std::string grpc_bind = "0.0.0.0";
  int grpc_port = 0;
  std::shared_ptr<const controllers::GrpcTls> grpc_tls;  // from --grpc-tls-*; null: plaintext
};

// Runs until SIGINT/SIGTERM; the exit code.
int RunController(const ControllerCommand& cmd);

}  // namespace eco::cmd
