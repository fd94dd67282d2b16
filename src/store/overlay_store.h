// A Store that reads through to another one and keeps its own writes in
// memory: the base is never written. The fleet plan builds an AppContext
// in one, runs the controllers on it and throws it away, so that a plan is
// the real operation's code with nothing changed.
//
// Reads see the overlay's writes over the base as it is at the moment of
// the read; revisions of the overlay's writes continue from the base's
// revision when the overlay was made. Leases never expire; watches are
// refused.
#pragma once

#include <memory>

#include "store/store.h"

namespace eco::store {

// `base` must outlive the overlay.
Result<std::unique_ptr<Store>> NewOverlayStore(Store& base);

}  // namespace eco::store
