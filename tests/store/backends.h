// The store backends the contract suite runs against, each behind a factory
// that yields a fresh, empty store.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "store/store.h"

namespace eco::testing {

struct StoreBackend {
  std::string name;  // "sqlite", "etcd"
  // Returns a fresh empty store; the backend's environment (temp dir, etcd
  // process) lives as long as the test binary or is cleaned up by the factory.
  std::function<std::unique_ptr<store::Store>()> make;
};

std::vector<StoreBackend> AllStoreBackends();

// Names the backend in gtest output instead of dumping its bytes.
inline void PrintTo(const StoreBackend& b, std::ostream* os) { *os << b.name; }

}  // namespace eco::testing
