#include "controllers/controller.h"

namespace eco::controllers {

Status Controller::FilterClusters(const std::string&) {
  return Invalid("this controller is not a placement controller (FilterClusters not implemented)");
}
Status Controller::UpdateAppContext(const std::string&, const std::string&, const std::string&) {
  return Invalid("this controller is not an action controller (UpdateAppContext not implemented)");
}
Status Controller::TerminateAppContext(const std::string&) { return Status::Ok(); }
Status Controller::PostEvent(const std::string&, Event) { return Status::Ok(); }

}  // namespace eco::controllers
