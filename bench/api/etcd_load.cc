// eco_etcd_load: the raw etcd baseline of bench/api. N threads each issue
// synchronous etcd v3 gRPC calls for a fixed time and the tool reports ops/s
// and latency percentiles, so eco's own cost can be read as a ratio.
//
// Operations (each mirrors one eco API case):
//   get           Range of one existing key             (GET one)
//   range         Range of a prefix holding --keys keys (list)
//   put-new       Put of a key never written before     (POST, store part only)
//   put-existing  Put over an existing key              (PUT, store part only)
//   create        Range + Txn(create_revision == 0 → put) on a new key:
//                 the two calls eco's POST makes on etcd
//   update        Range + Txn(mod_revision == read → put) on an existing key:
//                 the two calls eco's PUT makes on etcd
//   txn-create    the Txn of `create` alone, without the read before it
//
// Output: a human-readable summary, then one machine-readable line starting
// with "RESULT" (key=value pairs) for bench/api/run.sh.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcd/rpc.grpc.pb.h"

namespace {

namespace pb = etcdserverpb;
using Clock = std::chrono::steady_clock;

struct Config {
  std::string endpoint = "127.0.0.1:2379";
  std::string op = "get";
  int threads = 16;
  int channels = 1;
  double duration_s = 10;
  double warmup_s = 1;
  int keys = 1000;
  size_t value_size = 128;
  std::string prefix = "/bench/raw/";
  bool serializable = false;
};

// Per-thread results; merged after the run.
struct ThreadStats {
  std::vector<uint32_t> lat_us;  // measured calls only (warm-up excluded)
  uint64_t errors = 0;           // gRPC failures and failed guards
  std::string first_error;
};

std::string ItemKey(const Config& c, int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "item/%06d", i);
  return c.prefix + buf;
}

// The end of the range covering every key starting with `p`.
std::string PrefixEnd(std::string p) {
  while (!p.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(p.back());
    if (last < 0xff) {
      ++last;
      return p;
    }
    p.pop_back();
  }
  return std::string(1, '\0');
}

std::shared_ptr<grpc::Channel> MakeChannel(const Config& c, int index) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  // A distinct argument per channel keeps gRPC from sharing one TCP
  // connection between the channels.
  args.SetInt("eco.bench.channel", index);
  return grpc::CreateCustomChannel(c.endpoint, grpc::InsecureChannelCredentials(), args);
}

// Writes the --keys items in batched transactions (etcd allows 128 ops each).
bool Seed(const Config& c, pb::KV::Stub& kv, const std::string& value) {
  for (int i = 0; i < c.keys; i += 100) {
    pb::TxnRequest req;
    for (int j = i; j < std::min(c.keys, i + 100); ++j) {
      auto* put = req.add_success()->mutable_request_put();
      put->set_key(ItemKey(c, j));
      put->set_value(value);
    }
    pb::TxnResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto s = kv.Txn(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "eco_etcd_load: seeding %s failed: %s\n", c.endpoint.c_str(),
                   s.error_message().c_str());
      return false;
    }
  }
  return true;
}

class Worker {
 public:
  Worker(const Config& c, int id, pb::KV::Stub& kv, const std::string& value)
      : c_(c), id_(id), kv_(kv), value_(value) {}

  // One operation; false on failure (recorded in `st`).
  bool Once(ThreadStats& st) {
    switch (kind_) {
      case Kind::kGet:
        return Range(ItemKey(c_, NextExisting()), "", st);
      case Kind::kRange:
        return Range(c_.prefix + "item/", PrefixEnd(c_.prefix + "item/"), st);
      case Kind::kPutNew:
        return Put(NewKey(), st);
      case Kind::kPutExisting:
        return Put(ItemKey(c_, NextExisting()), st);
      case Kind::kCreate:
        return Guarded(NewKey(), true, st);
      case Kind::kUpdate:
        return Guarded(ItemKey(c_, NextExisting()), false, st);
      case Kind::kTxnCreate:
        return Guarded(NewKey(), true, st, /*read_first=*/false);
    }
    return false;
  }

  bool SetOp(const std::string& op) {
    if (op == "get") kind_ = Kind::kGet;
    else if (op == "range") kind_ = Kind::kRange;
    else if (op == "put-new") kind_ = Kind::kPutNew;
    else if (op == "put-existing") kind_ = Kind::kPutExisting;
    else if (op == "create") kind_ = Kind::kCreate;
    else if (op == "update") kind_ = Kind::kUpdate;
    else if (op == "txn-create") kind_ = Kind::kTxnCreate;
    else return false;
    return true;
  }

 private:
  enum class Kind { kGet, kRange, kPutNew, kPutExisting, kCreate, kUpdate, kTxnCreate };

  // Existing keys are split between threads (thread t takes i % threads == t),
  // so guarded updates of two threads never race on one key.
  int NextExisting() {
    int per = std::max(1, c_.keys / c_.threads);
    int i = (n_++ % per) * c_.threads + id_;
    return i % c_.keys;
  }
  std::string NewKey() {
    return c_.prefix + "new/" + std::to_string(id_) + "/" + std::to_string(n_++);
  }

  static void Fail(ThreadStats& st, const std::string& what) {
    if (st.errors++ == 0) st.first_error = what;
  }

  bool Range(const std::string& key, const std::string& end, ThreadStats& st,
             pb::RangeResponse* out = nullptr) {
    pb::RangeRequest req;
    req.set_key(key);
    if (!end.empty()) req.set_range_end(end);
    req.set_serializable(c_.serializable);
    pb::RangeResponse resp;
    grpc::ClientContext ctx;
    auto s = kv_.Range(&ctx, req, &resp);
    if (!s.ok()) return Fail(st, "range: " + s.error_message()), false;
    int64_t want = end.empty() ? 1 : c_.keys;
    if (!out && resp.count() != want) {
      return Fail(st, "range: " + std::to_string(resp.count()) + " keys, expected " +
                          std::to_string(want)),
             false;
    }
    if (out) *out = std::move(resp);
    return true;
  }

  bool Put(const std::string& key, ThreadStats& st) {
    pb::PutRequest req;
    req.set_key(key);
    req.set_value(value_);
    pb::PutResponse resp;
    grpc::ClientContext ctx;
    auto s = kv_.Put(&ctx, req, &resp);
    if (!s.ok()) return Fail(st, "put: " + s.error_message()), false;
    return true;
  }

  // Read, then write guarded by what was read: eco's write path on etcd.
  bool Guarded(const std::string& key, bool create, ThreadStats& st, bool read_first = true) {
    pb::RangeResponse cur;
    if (read_first && !Range(key, "", st, &cur)) return false;
    if (read_first && create != (cur.kvs_size() == 0)) {
      return Fail(st, create ? "create: key exists" : "update: key missing"), false;
    }
    pb::TxnRequest req;
    auto* cmp = req.add_compare();
    cmp->set_key(key);
    cmp->set_result(pb::Compare::EQUAL);
    if (create) {
      cmp->set_target(pb::Compare::CREATE);
      cmp->set_create_revision(0);
    } else {
      cmp->set_target(pb::Compare::MOD);
      cmp->set_mod_revision(cur.kvs(0).mod_revision());
    }
    auto* put = req.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value_);
    put->set_prev_kv(true);  // as eco's store asks for it
    pb::TxnResponse resp;
    grpc::ClientContext ctx;
    auto s = kv_.Txn(&ctx, req, &resp);
    if (!s.ok()) return Fail(st, "txn: " + s.error_message()), false;
    if (!resp.succeeded()) return Fail(st, "txn: guard failed"), false;
    return true;
  }

  const Config& c_;
  const int id_;
  pb::KV::Stub& kv_;
  const std::string& value_;
  Kind kind_ = Kind::kGet;
  uint64_t n_ = 0;
};

double Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)] / 1000.0;  // ms
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"Raw etcd v3 load generator (baseline for bench/api)"};
  app.add_option("--endpoint", c.endpoint, "etcd client address host:port");
  app.add_option("--op", c.op, "get | range | put-new | put-existing | create | update | txn-create");
  app.add_option("--threads", c.threads, "Concurrent synchronous callers")->check(CLI::Range(1, 1024));
  app.add_option("--channels", c.channels, "gRPC connections shared by the threads")
      ->check(CLI::Range(1, 1024));
  app.add_option("--duration", c.duration_s, "Measured seconds")->check(CLI::PositiveNumber);
  app.add_option("--warmup", c.warmup_s, "Unmeasured seconds before that")->check(CLI::NonNegativeNumber);
  app.add_option("--keys", c.keys, "Existing keys (seeded before the run)")->check(CLI::Range(1, 100000));
  app.add_option("--value-size", c.value_size, "Bytes per value written/seeded");
  app.add_option("--prefix", c.prefix, "Key prefix (seeded keys live under PREFIX item/)");
  app.add_flag("--serializable", c.serializable, "Serializable reads (default: linearizable, as eco)");
  CLI11_PARSE(app, argc, argv);

  const std::string value(c.value_size, 'v');
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<pb::KV::Stub>> stubs;
  for (int i = 0; i < c.channels; ++i) {
    channels.push_back(MakeChannel(c, i));
    if (!channels.back()->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) {
      std::fprintf(stderr, "eco_etcd_load: cannot connect to %s\n", c.endpoint.c_str());
      return 1;
    }
    stubs.push_back(pb::KV::NewStub(channels.back()));
  }
  {
    Worker probe(c, 0, *stubs[0], value);
    if (!probe.SetOp(c.op)) {
      std::fprintf(stderr, "eco_etcd_load: unknown --op %s\n", c.op.c_str());
      return 2;
    }
  }
  if (!Seed(c, *stubs[0], value)) return 1;

  // Threads run until `stop`; only calls started after `measure_from` and
  // finished before `measure_to` count.
  std::atomic<bool> stop{false};
  const auto t0 = Clock::now();
  const auto measure_from = t0 + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(c.warmup_s));
  const auto measure_to = measure_from + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(c.duration_s));
  std::vector<ThreadStats> stats(c.threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < c.threads; ++t) {
    threads.emplace_back([&, t] {
      Worker w(c, t, *stubs[t % c.channels], value);
      w.SetOp(c.op);
      ThreadStats& st = stats[t];
      st.lat_us.reserve(1 << 16);
      ThreadStats warm;
      while (!stop.load(std::memory_order_relaxed)) {
        auto a = Clock::now();
        bool measured = a >= measure_from;
        bool ok = w.Once(measured ? st : warm);
        auto b = Clock::now();
        if (measured && b <= measure_to && ok) {
          st.lat_us.push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(b - a).count()));
        }
      }
    });
  }
  std::this_thread::sleep_until(measure_to);
  stop = true;
  for (auto& th : threads) th.join();

  std::vector<uint32_t> all;
  uint64_t errors = 0;
  std::string first_error;
  for (auto& st : stats) {
    all.insert(all.end(), st.lat_us.begin(), st.lat_us.end());
    errors += st.errors;
    if (first_error.empty()) first_error = st.first_error;
  }
  std::sort(all.begin(), all.end());
  const double rps = static_cast<double>(all.size()) / c.duration_s;
  const double p50 = Percentile(all, 50), p99 = Percentile(all, 99);
  std::printf("etcd %s op=%s threads=%d channels=%d %.1fs: %zu ops, %.1f ops/s, p50 %.3f ms, "
              "p99 %.3f ms, max %.3f ms, errors %llu\n",
              c.endpoint.c_str(), c.op.c_str(), c.threads, c.channels, c.duration_s, all.size(),
              rps, p50, p99, Percentile(all, 100), static_cast<unsigned long long>(errors));
  if (!first_error.empty()) std::printf("first error: %s\n", first_error.c_str());
  std::printf("RESULT op=%s rps=%.1f p50_ms=%.3f p99_ms=%.3f requests=%zu errors=%llu\n",
              c.op.c_str(), rps, p50, p99, all.size(), static_cast<unsigned long long>(errors));
  return 0;
}
