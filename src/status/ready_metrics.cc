#include "status/ready_metrics.h"

#include "common/metrics.h"

namespace eco::status {

ReadyGauges& ReadyGauges::Get() {
  static ReadyGauges g = [] {
    auto& fam = prometheus::BuildGauge()
                    .Name("eco_ready_resources")
                    .Help(
                        "Resources of deployed apps by ready status (Ready, NotReady, NotPresent), "
                        "cluster-only Pods included.")
                    .Register(metrics::Registry());
    ReadyGauges made;
    made.by_status = {&fam.Add({{"status", "Ready"}}), &fam.Add({{"status", "NotReady"}}),
                      &fam.Add({{"status", "NotPresent"}})};
    return made;
  }();
  return g;
}

DriftMetrics& DriftMetrics::Get() {
  static DriftMetrics m = [] {
    DriftMetrics made;
    made.resources =
        &prometheus::BuildGauge()
             .Name("eco_drift_resources")
             .Help("Resources of push clusters drifted now: deleted or changed out of band.")
             .Register(metrics::Registry())
             .Add({});
    made.detected =
        &prometheus::BuildCounter()
             .Name("eco_drift_detected_total")
             .Help("Resources of push clusters found drifted (each time one starts to drift).")
             .Register(metrics::Registry())
             .Add({});
    made.repaired =
        &prometheus::BuildCounter()
             .Name("eco_drift_repaired_total")
             .Help("Drifted resources of push clusters applied again (spec.driftPolicy enforce).")
             .Register(metrics::Registry())
             .Add({});
    return made;
  }();
  return m;
}

}  // namespace eco::status
