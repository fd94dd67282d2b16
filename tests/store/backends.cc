#include "backends.h"

#include <cstdio>

#include "etcd_fixture.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::testing {
namespace {

// A store that owns the environment it lives in: the environment is
// destroyed after the store (members go in reverse order).
class OwningStore final : public store::Store {
 public:
  OwningStore(std::shared_ptr<void> env, std::unique_ptr<store::Store> inner)
      : env_(std::move(env)), inner_(std::move(inner)) {}

  Result<std::optional<store::KeyValue>> Get(const std::string& key) override {
    return inner_->Get(key);
  }
  Result<store::Revision> Put(const std::string& key, const std::string& value,
                              store::LeaseId lease) override {
    return inner_->Put(key, value, lease);
  }
  Result<int64_t> Delete(const std::string& key) override { return inner_->Delete(key); }
  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    return inner_->DeletePrefix(prefix);
  }
  Result<store::RangeResult> Range(const std::string& prefix,
                                   const store::RangeOptions& opts) override {
    return inner_->Range(prefix, opts);
  }
  Result<store::TxnResult> Commit(const store::Txn& txn) override { return inner_->Commit(txn); }
  Result<std::unique_ptr<store::WatchHandle>> Watch(const std::string& prefix,
                                                    store::Revision from_revision,
                                                    store::WatchCallbacks callbacks) override {
    return inner_->Watch(prefix, from_revision, std::move(callbacks));
  }
  Result<store::LeaseId> GrantLease(std::chrono::seconds ttl) override {
    return inner_->GrantLease(ttl);
  }
  Status KeepAliveOnce(store::LeaseId id) override { return inner_->KeepAliveOnce(id); }
  Status RevokeLease(store::LeaseId id) override { return inner_->RevokeLease(id); }
  Result<std::unique_ptr<store::LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override {
    return inner_->KeepAlive(ttl);
  }
  Result<store::Revision> CurrentRevision() override { return inner_->CurrentRevision(); }
  std::string Backend() const override { return inner_->Backend(); }

 private:
  std::shared_ptr<void> env_;
  std::unique_ptr<store::Store> inner_;
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
