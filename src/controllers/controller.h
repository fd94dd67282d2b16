// Placement and action controllers as the orchestrator sees them. A built-in
// controller implements this in-process; RemoteController (grpc.h) forwards
// the same calls to a controller process over EMCO's gRPC services.
//
// Controllers read and edit the AppContext directly in the store through
// appcontext::Contexts, as EMCO's controllers do in etcd: they need the store
// anyway for their own intents, every edit is a compare-and-swap, and the
// same code runs built in and out of process. An out-of-process controller
// therefore needs the etcd store; with the embedded store controllers run
// built into `eco serve`.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace eco::controllers {

// contextupdate's EventType.
enum class Event { kInstantiate = 0, kTerminate = 1, kUpdate = 2 };

class Controller {
 public:
  virtual ~Controller() = default;
  // Placement: drop clusters from the AppContext being built.
  virtual Status FilterClusters(const std::string& context_id);
  // Action: edit the AppContext's resources for the intent `intent_name`;
  // `update_from` is the deployed context an update replaces ("" otherwise).
  virtual Status UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                                  const std::string& update_from);
  // Before rsync deletes the context's resources. Default: nothing to do.
  virtual Status TerminateAppContext(const std::string& context_id);
  // After instantiate/terminate/update completed. Default: nothing to do.
  virtual Status PostEvent(const std::string& context_id, Event event);
};

}  // namespace eco::controllers
