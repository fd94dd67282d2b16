#include "api/resources.h"

namespace eco::api {

void AddTrafficResources(const AddFn&, const ResourceDef*, const std::vector<std::string>&) {}

}  // namespace eco::api
