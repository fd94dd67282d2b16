// The generic action controller (EMCO's gac). For the generic K8s intent
// named in the DIG's intents it edits the AppContext per cluster:
//   * a resource with newObject "true" adds its object (the uploaded
//     manifest, or an empty ConfigMap/Secret) to its app, on every cluster
//     of the app, or only where one of its cluster-specific customizations
//     applies when all of them are cluster-specific;
//   * a resource with newObject "false" names an object the app already
//     has (the chart's, or one another resource added);
//   * each customization of a resource, on the clusters its scope selects
//     (label or name, allow or deny), applies in creation order: data keys
//     from its files (ConfigMap/Secret), merge patches, its JSON patch.
// Clusters that end up with the same objects share one stored variant, so
// the cost follows the number of distinct outcomes, not of clusters. Any
// failure (a patch that does not apply, a missing object) fails the
// instantiation with an Invalid status naming the intent, the resource,
// the customization, the object and a cluster; nothing is written then.
#pragma once

#include <string>

#include "controllers/controller.h"
#include "store/store.h"

namespace eco::gac {

class GenericActionController : public controllers::Controller {
 public:
  explicit GenericActionController(store::Store& st) : st_(st) {}

  // `intent_name` is the generic K8s intent's name.
  Status UpdateAppContext(const std::string& context_id, const std::string& intent_name,
                          const std::string& update_from) override;

 private:
  store::Store& st_;
};

}  // namespace eco::gac
