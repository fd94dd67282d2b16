#include "cmd/controllers.h"

#include <memory>
#include <thread>

#include "api/api.h"
#include "cmd/log.h"
#include "common/clock.h"
#include "store/instrumented.h"
#include "controllers/gac/gac.h"
#include "controllers/grpc.h"
#include "controllers/hpa/hpa.h"
#include "controllers/traffic/traffic.h"

namespace eco::cmd {

namespace {

// dtc calls registered sub-controllers over EMCO's contextupdate service.
controllers::SubControllerFactory RemoteSubControllers() {
  return [](const std::string& name, const std::string& host,
            int port) -> std::unique_ptr<controllers::Controller> {
    controllers::RemoteOptions ro{name, host, port};
    ro.clock = &RealClock();
    return std::make_unique<controllers::RemoteController>(std::move(ro));
  };
}

}  // namespace

std::vector<scheduler::ControllerRef> BuiltinControllers(store::Store& st) {
  return {
      {"hpa-placement", "placement", 1, std::make_shared<hpa::HpaPlacement>(st)},
      {"hpa-action", "action", 1, std::make_shared<hpa::HpaAction>(st)},
      {"gac", "action", 1, std::make_shared<gac::GenericActionController>(st)},
      {"dtc", "action", 2, std::make_shared<controllers::TrafficController>(st, RemoteSubControllers())},
  };
}

std::vector<std::string> ControllerResourceTypes(const std::string& which) {
  if (which == "hpa") return {"hpaIntent", "hpaConsumer", "hpaResource"};
  if (which == "gac") return {"gacIntent", "gacResource", "gacCustomization"};
  if (which == "traffic") {
    return {"trafficGroupIntent", "inboundServerIntent", "inboundClientsIntent", "inboundClientsAccessIntent",
            "dtcController"};
  }
  return {};
}

int RunController(const ControllerCommand& cmd) {
  auto st = store::Open(cmd.store_url, RealClock(), ProcessRandom());
  if (!st.ok()) {
    Log("error", "cannot open store " + cmd.store_url + ": " + st.status().message());
    return 1;
  }
  *st = store::Instrument(std::move(*st));
  controllers::ControllerServer grpc({cmd.grpc_bind, cmd.grpc_port, cmd.grpc_tls, &RealClock()});
  if (cmd.which == "hpa") {
    grpc.SetPlacement(std::make_shared<hpa::HpaPlacement>(**st));
    grpc.SetAction(std::make_shared<hpa::HpaAction>(**st));
  } else if (cmd.which == "traffic") {
    grpc.SetAction(std::make_shared<controllers::TrafficController>(**st, RemoteSubControllers()));
  } else if (cmd.which == "gac") {
    grpc.SetAction(std::make_shared<gac::GenericActionController>(**st));
  } else {
    Log("error", "unknown controller " + cmd.which + " (hpa, traffic or gac)");
    return 2;
  }
  if (auto s = grpc.Start(); !s.ok()) {
    Log("error", "controller gRPC: " + s.message());
    return 1;
  }
  api::Options ao;
  ao.only_types = ControllerResourceTypes(cmd.which);
  api::Api api(**st, ao);
  api::HttpServer http(api, cmd.http);
  if (auto s = http.Bind(); !s.ok()) {
    Log("error", s.message());
    return 1;
  }
  StopOnSignal([&http] { http.Stop(); });
  Log("info", "eco controller " + cmd.which + " serving its intents on " + cmd.http.bind + ":" +
                  std::to_string(http.port()) + " and gRPC on " + cmd.grpc_bind + ":" + std::to_string(grpc.port()) +
                  " with the " + (*st)->Backend() + " store");
  auto s = http.Serve();
  grpc.Shutdown();
  Log("info", "eco controller " + cmd.which + " stopped");
  return s.ok() ? 0 : 1;
}

}  // namespace eco::cmd
