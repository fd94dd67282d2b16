#include "api/resources.h"

namespace eco::api {

void AddHpaResources(const AddFn&, const ResourceDef*, const std::vector<std::string>&) {}

}  // namespace eco::api
