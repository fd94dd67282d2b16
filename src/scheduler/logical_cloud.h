// What instantiating a logical cloud deploys (reference §2.3). Admin
// (level 0): nothing, its clusters are used as they are. Standard (level 1):
// on every cluster its Namespace (with the cloud's labels), one
// ResourceQuota per cluster quota, the user as a ServiceAccount with a token
// Secret, and a Role + RoleBinding per user permission (a ClusterRole +
// ClusterRoleBinding when the permission has no namespace), bound to both the
// user name and the ServiceAccount.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "appcontext/appcontext.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::scheduler {

inline constexpr const char* kLogicalCloudApp = "logical-cloud";

struct LogicalCloudContent {
  std::string level;       // "0" or "1"
  std::string namespace_;  // level 0: "default" unless the cloud names one
  std::vector<appcontext::ClusterRef> clusters;  // every cluster reference
  appcontext::ResourceSet resources;             // empty for level 0
};

// Validates the cloud (cluster references present; level 1: a user
// permission on its namespace) and lists what it deploys.
Result<LogicalCloudContent> LogicalCloudPlan(store::Store& st, const std::string& project,
                                             const std::string& lc, const nlohmann::json& object);

}  // namespace eco::scheduler
