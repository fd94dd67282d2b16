// The agent's state kept in its own cluster (docs/agent.md, "State kept in
// the cluster"): one opaque blob (the last desired state and the progress
// on it), compressed and split over Secrets in the agent's namespace, so
// that a restarted agent resumes without any local file system.
//
// Layout, for base name B in namespace NS:
//   B          the index: {generation, chunks, compressed and raw sizes,
//              sha-256 of the blob and of every chunk}
//   B-<G>-<i>  chunk i (0-based) of generation G: a slice of the
//              zlib-compressed blob
// Every one of them is labelled app.eco.io/agent-state=B; chunks also carry
// their role and generation, so that leftovers can be listed.
//
// Crash safety: Save writes the new generation's chunks first, then the
// index (one object: the switch is atomic), and only then deletes the
// previous generation. Whatever point a Save stops at, the index names one
// complete generation: Load returns either the old state or the new one,
// never a mix. Chunks an interrupted Save left behind are deleted by the
// next Save.
//
// One writer at a time is assumed (the agent's Deployment uses the
// Recreate strategy). A second writer is noticed, not prevented: the index
// is written on the resourceVersion Save read (Conflict otherwise), and a
// mixed generation fails Load's checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "k8s/client.h"

namespace eco::agent {

// Labels on the state's Secrets.
inline constexpr char kStateLabel[] = "app.eco.io/agent-state";           // = base name
inline constexpr char kStateRoleLabel[] = "app.eco.io/agent-state-role";  // "index" | "chunk"
inline constexpr char kStateGenerationLabel[] = "app.eco.io/agent-state-generation";  // chunks: G

struct StateSecretsOptions {
  // Compressed bytes per chunk Secret. Secret data travels as base64 in
  // JSON (4/3 larger) and an object may hold about 1.5 MiB in etcd: 700 KiB
  // leaves room.
  size_t chunk_bytes = 700 * 1024;
  // Larger blobs are refused by Save (kTooLarge) and an index claiming more
  // by Load (kInternal): the bound on what Load inflates.
  size_t max_blob_bytes = size_t{256} << 20;
  int compression_level = 6;  // zlib's 0..9; 6 is its default trade-off
};

// What one Save wrote (for tests and metrics).
struct SavedState {
  uint64_t generation = 0;
  size_t chunks = 0;
  size_t compressed_bytes = 0;
};

// Not thread-safe: one agent owns its state and saves it from one place.
class StateSecrets {
 public:
  // `base_name` must be a DNS-1123 label of at most 40 characters (room for
  // the "-<generation>-<chunk>" suffix); `ns` a DNS-1123 label. Bad names
  // are reported by every call (kInvalid).
  StateSecrets(std::shared_ptr<k8s::ClusterClient> client, std::string ns, std::string base_name,
               StateSecretsOptions options = {});

  // Replaces the stored state with `blob`. On error the previous state (or
  // the new one, when only the clean-up after the switch failed) is still
  // the one Load returns. kConflict: the index changed since this Save read
  // it (another writer). Client errors otherwise, annotated.
  Result<SavedState> Save(std::string_view blob);

  // The stored state; nullopt when none was saved (no index). kInternal,
  // naming the Secret, when the index is unreadable or a chunk is missing or
  // fails its checksum: a broken state is never taken for an empty one.
  Result<std::optional<std::string>> Load();

  // Deletes the index, then every chunk (Ok when there was nothing).
  Status Clear();

  const std::string& ns() const { return ns_; }
  const std::string& base_name() const { return base_; }

 private:
  struct Index;

  Status CheckNames() const;
  // The index as stored; nullopt when there is none.
  Result<std::optional<Index>> ReadIndex(std::string* resource_version);
  Result<std::string> ReadChunk(const Index& index, size_t i);
  Status DeleteChunksExcept(std::optional<uint64_t> keep_generation);
  Status DeleteSecret(const std::string& name);
  std::string ChunkName(uint64_t generation, size_t i) const;
  std::string Where(const std::string& name) const;  // "Secret NS/NAME"

  const std::shared_ptr<k8s::ClusterClient> client_;
  const std::string ns_;
  const std::string base_;
  const StateSecretsOptions options_;
};

}  // namespace eco::agent
