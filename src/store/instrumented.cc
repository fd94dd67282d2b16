#include "store/instrumented.h"

#include <array>
#include <chrono>

#include "common/metrics.h"
#include "common/trace.h"

namespace eco::store {
namespace {

enum Op {
  kGet,
  kPut,
  kDelete,
  kDeletePrefix,
  kRange,
  kTxn,
  kWatch,
  kLeaseGrant,
  kLeaseKeepAlive,
  kLeaseRevoke,
  kRevision,
  kOpCount
};
constexpr std::array<const char*, kOpCount> kOpNames = {
    "get",   "put",         "delete",          "delete_prefix", "range",   "txn",
    "watch", "lease_grant", "lease_keepalive", "lease_revoke",  "revision"};

// The series of one store, looked up once (Family::Add takes a lock).
class StoreMetrics {
 public:
  explicit StoreMetrics(const std::string& backend) {
    auto& ops =
        prometheus::BuildCounter()
            .Name("eco_store_operations_total")
            .Help("Store operations, by backend, operation and result (OK or the error class).")
            .Register(metrics::Registry());
    auto& durations = prometheus::BuildHistogram()
                          .Name("eco_store_operation_duration_seconds")
                          .Help("Store operation latency, by backend and operation.")
                          .Register(metrics::Registry());
    for (size_t i = 0; i < kOpCount; ++i) {
      ok_[i] = &ops.Add({{"backend", backend}, {"op", kOpNames[i]}, {"result", "OK"}});
      failed_[i] = &ops;
      latency_[i] =
          &durations.Add({{"backend", backend}, {"op", kOpNames[i]}}, metrics::LatencyBuckets());
    }
    backend_ = backend;
  }
  void Record(Op op, std::chrono::steady_clock::time_point start, const Status& st) {
    latency_[op]->Observe(metrics::SecondsSince(start));
    if (st.ok()) {
      ok_[op]->Increment();
    } else {
      failed_[op]
          ->Add({{"backend", backend_},
                 {"op", kOpNames[op]},
                 {"result", std::string(CodeName(st.code()))}})
          .Increment();
    }
  }

 private:
  std::string backend_;
  std::array<prometheus::Counter*, kOpCount> ok_{};
  std::array<prometheus::Family<prometheus::Counter>*, kOpCount> failed_{};
  std::array<prometheus::Histogram*, kOpCount> latency_{};
};

class InstrumentedStore final : public Store {
 public:
  explicit InstrumentedStore(std::unique_ptr<Store> inner)
      : inner_(std::move(inner)), m_(inner_->Backend()), backend_(inner_->Backend()) {}

  template <typename F>
  auto Timed(Op op, F&& f) {
    trace::Span span = StoreSpan(op);
    const auto start = std::chrono::steady_clock::now();
    auto r = f();
    m_.Record(op, start, r.status());
    if (!r.ok()) span.SetError(r.status().ToString());
    return r;
  }
  template <typename F>
  Status TimedStatus(Op op, F&& f) {
    trace::Span span = StoreSpan(op);
    const auto start = std::chrono::steady_clock::now();
    Status s = f();
    m_.Record(op, start, s);
    if (!s.ok()) span.SetError(s.ToString());
    return s;
  }
  // A client span for the operation, inside a traced request only, and
  // only for etcd: the embedded store is no outbound call, and a span per
  // local read would cost more than the read.
  trace::Span StoreSpan(Op op) {
    if (!remote_ || trace::Current() == nullptr) return trace::Span();  // no name built per call
    trace::Span span = trace::Span::Child(std::string("store ") + kOpNames[op], trace::Kind::kClient);
    if (span.recording()) span.SetAttribute("db.system", backend_);
    return span;
  }

  Result<std::optional<KeyValue>> Get(const std::string& key) override {
    return Timed(kGet, [&] { return inner_->Get(key); });
  }
  Result<Revision> Put(const std::string& key, const std::string& value, LeaseId lease) override {
    return Timed(kPut, [&] { return inner_->Put(key, value, lease); });
  }
  Result<int64_t> Delete(const std::string& key) override {
    return Timed(kDelete, [&] { return inner_->Delete(key); });
  }
  Result<int64_t> DeletePrefix(const std::string& prefix) override {
    return Timed(kDeletePrefix, [&] { return inner_->DeletePrefix(prefix); });
  }
  Result<RangeResult> Range(const std::string& prefix, const RangeOptions& opts) override {
    return Timed(kRange, [&] { return inner_->Range(prefix, opts); });
  }
  Result<TxnResult> Commit(const Txn& txn) override {
    return Timed(kTxn, [&] { return inner_->Commit(txn); });
  }
  Result<std::unique_ptr<WatchHandle>> Watch(const std::string& prefix, Revision from,
                                             WatchCallbacks callbacks) override {
    return Timed(kWatch, [&] { return inner_->Watch(prefix, from, std::move(callbacks)); });
  }
  Result<LeaseId> GrantLease(std::chrono::seconds ttl) override {
    return Timed(kLeaseGrant, [&] { return inner_->GrantLease(ttl); });
  }
  Status KeepAliveOnce(LeaseId id) override {
    return TimedStatus(kLeaseKeepAlive, [&] { return inner_->KeepAliveOnce(id); });
  }
  Status RevokeLease(LeaseId id) override {
    return TimedStatus(kLeaseRevoke, [&] { return inner_->RevokeLease(id); });
  }
  Result<std::unique_ptr<LeaseKeeper>> KeepAlive(std::chrono::seconds ttl) override {
    return Timed(kLeaseGrant, [&] { return inner_->KeepAlive(ttl); });
  }
  Result<Revision> CurrentRevision() override {
    return Timed(kRevision, [&] { return inner_->CurrentRevision(); });
  }
  std::string Backend() const override { return inner_->Backend(); }

 private:
  std::unique_ptr<Store> inner_;
  StoreMetrics m_;
  const std::string backend_;
  const bool remote_ = backend_ == "etcd";
};

}  // namespace

std::unique_ptr<Store> Instrument(std::unique_ptr<Store> inner) {
  if constexpr (!ECO_TELEMETRY) return inner;  // the overhead benchmark's base build
  return std::make_unique<InstrumentedStore>(std::move(inner));
}

}  // namespace eco::store
