// etcd v3 backend of the Store interface, over gRPC.
//
// Layout inside etcd (P = EtcdOptions::key_prefix):
//   P "k/" <key>                                 a caller's key and its value
//   P "b/" <hex(key)> "/" <nonce> "/" <chunk#>   one chunk of a large value
// Every caller key lives under P "k/", so ranges, counts, deletes and watches
// on any caller prefix (even "") never see the blob area. A nonce is 8 hex
// digits of the write's Unix time and 24 random ones; chunk# is 8 hex digits.
//
// The value stored at P "k/" <key> is the caller's value as is, unless it is
// large (then a small reference record naming the blob, in the caller's own
// put or transaction) or happens to start with the record marker (bytes
// 00 EC 'r' 'e' 'f'; then it is escaped). Readers resolve references at the
// revision they read the key at, so they see a consistent value even while a
// writer replaces it; watch events resolve at the event's revision.
//
// Transactions: value compares are evaluated on the caller's values (large
// ones included, a missing key being ""), not on the stored records.
//
// Watches reconnect by themselves (to any endpoint) and resume right after
// the last revision they delivered; only compaction of that history (an
// on_error with NotFound) or a permanent error ends them.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "store/store.h"

namespace eco::store {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // "host:port"; tried in order, failing over on errors
  std::chrono::milliseconds dial_timeout{5000};
  std::chrono::milliseconds call_timeout{10000};
  // Everything this store writes lives under this prefix, and it is stripped
  // from keys on the way out: stores with different prefixes are independent
  // (tests, several eco installations on one etcd).
  std::string key_prefix;
  // Values above this many bytes are stored as chunked blobs. etcd rejects
  // requests above --max-request-bytes (default 1.5 MiB), so keep this below.
  std::size_t inline_value_max = 1 << 20;
  // Size of one blob chunk, i.e. of one write request for a large value.
  std::size_t blob_chunk_size = 512 << 10;
  // CollectGarbage leaves unreferenced blobs younger than this alone: they
  // may belong to a write still in progress somewhere (judged by the
  // writer's clock, so allow for skew).
  std::chrono::seconds blob_gc_grace{600};
  // TLS to etcd (its --cert-file/--key-file), when `ca_pem` is set: the
  // server is checked against that CA; with `cert_pem` and `key_pem` this
  // client presents its own certificate (etcd's --client-cert-auth).
  std::string ca_pem, cert_pem, key_pem;
  // Lease keepers pace their keep-alives and judge a lease lost on
  // `clock`; blob nonces carry its wall time (the collector's age). RPC
  // deadlines and reconnects stay on the machine's clock: they are I/O.
  // Nonces and nothing else draw from `random`. Both must outlive the store.
  Clock* clock = &RealClock();
  Random* random = &ProcessRandom();
};

// The etcd store with the operations only this backend has.
class EtcdStore : public Store {
 public:
  // Connects lazily: fails only on bad options, never because etcd is down.
  static Result<std::unique_ptr<EtcdStore>> Open(const EtcdOptions& opts);

  // Deletes blobs that no key references and that are older than
  // blob_gc_grace. The store removes a value's blob itself when the key is
  // overwritten, deleted or its transaction branch did not run; orphans
  // remain only when a process dies between writing a blob and its
  // reference (or before cleaning up), or etcd became unreachable in
  // between. Call this at start-up or from time to time; it is safe while
  // other processes write.
  virtual Status CollectGarbage() = 0;
};

Result<std::unique_ptr<Store>> OpenEtcdStore(const EtcdOptions& opts);

}  // namespace eco::store
