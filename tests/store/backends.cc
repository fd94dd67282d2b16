#include "backends.h"

#include <cstdio>

#include "etcd_fixture.h"
#include "forwarding_store.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::testing {
namespace {

// A store that owns the environment it lives in: the environment is
// destroyed after the store.
class OwningStore final : public ForwardingStore {
 public:
  OwningStore(std::shared_ptr<void> env, std::unique_ptr<store::Store> inner)
      : ForwardingStore(std::move(inner)), env_(std::move(env)) {}
  ~OwningStore() override { inner_.reset(); }  // the store first, then its environment

 private:
  std::shared_ptr<void> env_;
};

std::unique_ptr<store::Store> MakeSqlite() {
  auto dir = std::make_shared<TempDir>();
  if (dir->path().empty()) {
    std::fprintf(stderr, "sqlite backend: cannot create a temp dir\n");
    return nullptr;
  }
  auto s = store::OpenSqliteStore({.dir = dir->path()});
  if (!s.ok()) {
    std::fprintf(stderr, "sqlite backend: %s\n", s.status().ToString().c_str());
    return nullptr;
  }
  return std::make_unique<OwningStore>(std::move(dir), std::move(*s));
}

}  // namespace

std::vector<StoreBackend> AllStoreBackends() {
  std::vector<StoreBackend> backends;
  backends.push_back({"sqlite", MakeSqlite});
  // etcd backend registered below
  // One etcd per test binary; each store gets its own key prefix, so it starts empty.
  backends.push_back({"etcd", [] { return std::unique_ptr<store::Store>(NewSharedEtcdStore()); }});
  return backends;
}

}  // namespace eco::testing
