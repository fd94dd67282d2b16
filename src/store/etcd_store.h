// etcd v3 backend of the Store interface, over gRPC.
//
// Layout inside etcd (P = EtcdOptions::key_prefix):
//   P "k/" <key>                                   a caller's key and its value
//   P "b/" <hex(key)> "/" <nonce> "/" <chunk#>     chunks of one large value
// Every caller key lives under P "k/", so ranges, counts, deletes and watches
// on any caller prefix (even "") never see the blob area.
//
// The value stored at P "k/" <key> is the caller's value as is, unless it is
// large (then a small reference record naming the blob) or happens to start
// with the reference marker (then it is escaped). Readers resolve references
// at the revision they read the key at, so they see a consistent value even
// while a writer replaces it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

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
};

// The etcd store with the operations only this backend has.
class EtcdStore : public Store {
 public:
  // Connects lazily: fails only on bad options, never because etcd is down.
  static Result<std::unique_ptr<EtcdStore>> Open(const EtcdOptions& opts);

  // Deletes blob chunks that no key references any more. The store removes
  // a value's blob itself when the key is overwritten, deleted or its
  // transaction branch did not run; orphans remain only when a process dies
  // between the two steps or etcd became unreachable in between. Call this at
  // start-up or from time to time; it is safe while other processes write.
  virtual Status CollectGarbage() = 0;
};

Result<std::unique_ptr<Store>> OpenEtcdStore(const EtcdOptions& opts);

}  // namespace eco::store
