// The traffic (dtc) action controller. For the traffic group intent named in
// the DIG's intents it adds to the AppContext, per inbound server intent:
//   * a NetworkPolicy on the server app's clusters labelled
//     `networkpolicy-supported`;
//   * service discovery on client clusters that do not host the server: a
//     headless Service and an Endpoints listing the server clusters' addresses;
//   * with `serviceMesh: istio`, the Istio resources of EMCO's `its`.
// Then it calls the registered /v2/dtc-controllers, highest priority first;
// their errors are logged and ignored, as EMCO's dtc does.
//
// Edits are grouped: clusters of an app that share their current resource
// variant and receive the same additions get one SetResources call, so the
// cost follows the number of distinct edits, not the number of clusters.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "controllers/controller.h"
#include "store/store.h"

namespace eco::controllers {

// Makes a client for a registered dtc sub-controller; nullptr = cannot.
using SubControllerFactory = std::function<std::unique_ptr<Controller>(
    const std::string& name, const std::string& host, int port)>;

class TrafficController : public Controller {
 public:
  // `factory` may be empty: registered sub-controllers are then skipped
  // (with a log line).
  explicit TrafficController(store::Store& st, SubControllerFactory factory = {});

  // `intent_name` is the traffic group intent's name.
  Status UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                          const std::string& update_from) override;

 private:
  Status AddResources(const std::string& context_id, const std::string& intent_name);
  void CallSubControllers(const std::string& context_id, const std::string& intent_name);

  store::Store& st_;
  const SubControllerFactory factory_;
};

}  // namespace eco::controllers
