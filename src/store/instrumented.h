// A Store that counts and times every operation of the store it wraps:
// eco_store_operations_total{backend, op, result} and
// eco_store_operation_duration_seconds{backend, op} (common/metrics.h).
#pragma once

#include <memory>

#include "store/store.h"

namespace eco::store {

std::unique_ptr<Store> Instrument(std::unique_ptr<Store> inner);

}  // namespace eco::store
