#include "agent/state_secret.h"

#include <openssl/sha.h>
#include <zlib.h>

#include <array>
#include <utility>
#include <vector>

#include "agent/names.h"
#include "common/base64.h"
#include "common/hex.h"

namespace eco::agent {
namespace {

using nlohmann::json;

constexpr char kIndexKey[] = "index";  // the index Secret's data key
constexpr char kChunkKey[] = "chunk";  // a chunk Secret's data key
constexpr int kFormat = 1;
// Load starts over when a chunk vanished because a Save switched
// generations meanwhile; this many times at most.
constexpr int kLoadAttempts = 3;

std::string Sha256Hex(std::string_view bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

Result<std::string> Compress(std::string_view raw, int level) {
  uLongf out_len = compressBound(static_cast<uLong>(raw.size()));
  std::string out(out_len, '\0');
  const int rc =
      compress2(reinterpret_cast<Bytef*>(out.data()), &out_len,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), level);
  if (rc != Z_OK) return Internal("zlib compress2 failed: " + std::to_string(rc));
  out.resize(out_len);
  return out;
}

// Inflates into exactly `raw_bytes` (the size the index promises), so a
// corrupt or hostile stream cannot make Load allocate more.
Result<std::string> Decompress(std::string_view compressed, size_t raw_bytes) {
  std::string out(raw_bytes, '\0');
  uLongf out_len = static_cast<uLongf>(raw_bytes);
  uLong in_len = static_cast<uLong>(compressed.size());
  const int rc = uncompress2(reinterpret_cast<Bytef*>(out.data()), &out_len,
                             reinterpret_cast<const Bytef*>(compressed.data()), &in_len);
  if (rc != Z_OK) return Internal("zlib uncompress failed: " + std::to_string(rc));
  if (out_len != raw_bytes || in_len != compressed.size()) {
    return Internal("inflated to " + std::to_string(out_len) + " bytes from " +
                    std::to_string(in_len) + " of " + std::to_string(compressed.size()) +
                    ", the index says " + std::to_string(raw_bytes));
  }
  return out;
}

json SecretObject(const std::string& ns, const std::string& name, json labels, const char* key,
                  std::string_view bytes) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", std::move(labels)}}},
          {"type", "Opaque"},
          {"data", {{key, Base64Encode(bytes)}}}};
}

// The decoded bytes of data[key]; kInternal when absent or not base64.
Result<std::string> SecretData(const json& secret, const char* key) {
  const json* data = secret.contains("data") ? &secret["data"] : nullptr;
  if (!data || !data->is_object() || !data->contains(key) || !(*data)[key].is_string()) {
    return Internal(std::string("has no data.") + key);
  }
  Result<std::string> bytes = Base64Decode((*data)[key].get<std::string>());
  if (!bytes.ok()) return Internal(std::string("data.") + key + ": " + bytes.status().message());
  return bytes;
}

std::string LabelOf(const json& obj, const char* label) {
  const json* labels = obj.contains("metadata") && obj["metadata"].contains("labels")
                           ? &obj["metadata"]["labels"]
                           : nullptr;
  if (!labels || !labels->is_object() || !labels->contains(label) || !(*labels)[label].is_string())
    return "";
  return (*labels)[label].get<std::string>();
}

}  // namespace

struct StateSecrets::Index {
  uint64_t generation = 0;
  size_t raw_bytes = 0;
  size_t compressed_bytes = 0;
  std::string sha256;                     // of the raw blob
  std::vector<std::string> chunk_sha256;  // one per chunk, in order

  json ToJson() const {
    return {{"format", kFormat},        {"encoding", "zlib"},
            {"generation", generation}, {"chunks", chunk_sha256.size()},
            {"rawBytes", raw_bytes},    {"compressedBytes", compressed_bytes},
            {"sha256", sha256},         {"chunkSha256", chunk_sha256}};
  }

  static Result<Index> FromJson(std::string_view text, size_t max_raw) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return Internal("the index is not a JSON object");
    if (j.value("format", 0) != kFormat || j.value("encoding", "") != "zlib") {
      return Internal("unknown index format " + j.value("format", json()).dump() + " / encoding " +
                      j.value("encoding", json()).dump());
    }
    Index ix;
    const json& gen = j.value("generation", json());
    const json& raw = j.value("rawBytes", json());
    const json& comp = j.value("compressedBytes", json());
    const json& sums = j.value("chunkSha256", json());
    if (!gen.is_number_unsigned() || !raw.is_number_unsigned() || !comp.is_number_unsigned() ||
        !j.value("sha256", json()).is_string() || !sums.is_array() ||
        j.value("chunks", json()) != json(sums.size())) {
      return Internal(
          "the index lacks or mistypes generation, rawBytes, compressedBytes, sha256, chunks or "
          "chunkSha256");
    }
    ix.generation = gen.get<uint64_t>();
    ix.raw_bytes = raw.get<size_t>();
    ix.compressed_bytes = comp.get<size_t>();
    ix.sha256 = j["sha256"].get<std::string>();
    for (const json& s : sums) {
      if (!s.is_string()) return Internal("the index's chunkSha256 holds a non-string");
      ix.chunk_sha256.push_back(s.get<std::string>());
    }
    if (ix.generation == 0 || ix.chunk_sha256.empty())
      return Internal("the index names no generation or no chunks");
    if (ix.raw_bytes > max_raw) {
      return Internal("the index claims " + std::to_string(ix.raw_bytes) +
                      " bytes, over the limit of " + std::to_string(max_raw));
    }
    return ix;
  }
};

StateSecrets::StateSecrets(std::shared_ptr<k8s::ClusterClient> client, std::string ns,
                           std::string base_name, StateSecretsOptions options)
    : client_(std::move(client)),
      ns_(std::move(ns)),
      base_(std::move(base_name)),
      options_(options) {}

Status StateSecrets::CheckNames() const {
  if (!IsDns1123Label(ns_))
    return Invalid("state namespace \"" + ns_ + "\" is not a DNS-1123 label");
  if (!IsDns1123Label(base_) || base_.size() > 40) {
    return Invalid("state base name \"" + base_ +
                   "\" is not a DNS-1123 label of at most 40 characters");
  }
  if (options_.chunk_bytes == 0) return Invalid("state chunk size is 0");
  if (!client_) return Invalid("state secrets without a cluster client");
  return Status::Ok();
}

std::string StateSecrets::ChunkName(uint64_t generation, size_t i) const {
  return base_ + "-" + std::to_string(generation) + "-" + std::to_string(i);
}

std::string StateSecrets::Where(const std::string& name) const {
  return "Secret " + ns_ + "/" + name;
}

Result<std::optional<StateSecrets::Index>> StateSecrets::ReadIndex(std::string* resource_version) {
  Result<json> obj = client_->Get("v1", "Secret", ns_, base_);
  if (!obj.ok()) {
    if (obj.status().code() == Code::kNotFound) return std::optional<Index>();
    return obj.status().Annotate("reading state index " + Where(base_));
  }
  if (resource_version)
    *resource_version = obj->value("metadata", json::object()).value("resourceVersion", "");
  const std::string where = "state index " + Where(base_);
  Result<std::string> text = SecretData(*obj, kIndexKey);
  if (!text.ok()) return text.status().Annotate(where);
  Result<Index> index = Index::FromJson(*text, options_.max_blob_bytes);
  if (!index.ok()) return index.status().Annotate(where);
  return std::optional<Index>(std::move(*index));
}

Result<std::string> StateSecrets::ReadChunk(const Index& index, size_t i) {
  const std::string name = ChunkName(index.generation, i);
  const std::string where = "state chunk " + Where(name);
  Result<json> obj = client_->Get("v1", "Secret", ns_, name);
  if (!obj.ok()) {
    if (obj.status().code() == Code::kNotFound) {
      return NotFound(where + " of generation " + std::to_string(index.generation) + " is missing");
    }
    return obj.status().Annotate("reading " + where);
  }
  const std::string gen = LabelOf(*obj, kStateGenerationLabel);
  if (gen != std::to_string(index.generation)) {
    return Internal(where + " is labelled generation \"" + gen + "\", the index names " +
                    std::to_string(index.generation));
  }
  Result<std::string> bytes = SecretData(*obj, kChunkKey);
  if (!bytes.ok()) return bytes.status().Annotate(where);
  if (Sha256Hex(*bytes) != index.chunk_sha256[i]) {
    return Internal(where + " is corrupted: its sha-256 differs from the index's");
  }
  return bytes;
}

Status StateSecrets::DeleteSecret(const std::string& name) {
  Status st = client_->Delete("v1", "Secret", ns_, name, k8s::Propagation::kBackground);
  if (st.ok() || st.code() == Code::kNotFound) return Status::Ok();
  return st.Annotate("deleting state " + Where(name));
}

Status StateSecrets::DeleteChunksExcept(std::optional<uint64_t> keep_generation) {
  k8s::ListOptions lo;
  lo.label_selector = std::string(kStateLabel) + "=" + base_ + "," + kStateRoleLabel + "=chunk";
  if (keep_generation) {
    lo.label_selector +=
        std::string(",") + kStateGenerationLabel + "!=" + std::to_string(*keep_generation);
  }
  Result<k8s::ObjectList> list = client_->List("v1", "Secret", ns_, lo);
  if (!list.ok()) return list.status().Annotate("listing state chunks in " + ns_);
  for (const json& item : list->items) {
    const std::string name = item.value("metadata", json::object()).value("name", "");
    if (!name.empty()) ECO_RETURN_IF_ERROR(DeleteSecret(name));
  }
  return Status::Ok();
}

Result<SavedState> StateSecrets::Save(std::string_view blob) {
  ECO_RETURN_IF_ERROR(CheckNames());
  if (blob.size() > options_.max_blob_bytes) {
    return TooLarge("agent state of " + std::to_string(blob.size()) +
                    " bytes is over the limit of " + std::to_string(options_.max_blob_bytes));
  }
  ECO_ASSIGN_OR_RETURN(std::string compressed, Compress(blob, options_.compression_level));

  std::string index_rv;
  Result<std::optional<Index>> old = ReadIndex(&index_rv);
  // An unreadable index is what Save repairs; only a failure to ask is fatal.
  if (!old.ok() && old.status().code() != Code::kInternal) return old.status();
  const std::optional<Index> previous = old.ok() ? *old : std::nullopt;

  // Chunks that belong to no index (an interrupted Save's) go first, so that
  // the generation written next starts clean.
  ECO_RETURN_IF_ERROR(
      DeleteChunksExcept(previous ? std::optional<uint64_t>(previous->generation) : std::nullopt));

  Index next;
  next.generation = previous ? previous->generation + 1 : 1;
  next.raw_bytes = blob.size();
  next.compressed_bytes = compressed.size();
  next.sha256 = Sha256Hex(blob);
  k8s::ApplyOptions ao;
  ao.want_object = false;
  const std::string_view all(compressed);
  // zlib output is never empty, so there is always at least one chunk.
  for (size_t off = 0, i = 0; off < all.size(); off += options_.chunk_bytes, ++i) {
    const std::string_view part = all.substr(off, options_.chunk_bytes);
    const std::string name = ChunkName(next.generation, i);
    json labels = {{kStateLabel, base_},
                   {kStateRoleLabel, "chunk"},
                   {kStateGenerationLabel, std::to_string(next.generation)}};
    Result<json> put =
        client_->Apply(SecretObject(ns_, name, std::move(labels), kChunkKey, part), ao);
    if (!put.ok()) return put.status().Annotate("writing state chunk " + Where(name));
    next.chunk_sha256.push_back(Sha256Hex(part));
  }

  // The switch: from here on Load reads the new generation.
  json index = SecretObject(ns_, base_, {{kStateLabel, base_}, {kStateRoleLabel, "index"}},
                            kIndexKey, next.ToJson().dump());
  if (!index_rv.empty()) index["metadata"]["resourceVersion"] = index_rv;
  Result<json> put = client_->Apply(index, ao);
  if (!put.ok()) {
    if (put.status().code() == Code::kConflict) {
      return Conflict("state index " + Where(base_) +
                      " changed while saving (is another agent writing this state?): " +
                      put.status().message());
    }
    return put.status().Annotate("writing state index " + Where(base_));
  }

  if (previous) {
    for (size_t i = 0; i < previous->chunk_sha256.size(); ++i) {
      ECO_RETURN_IF_ERROR(DeleteSecret(ChunkName(previous->generation, i)));
    }
  }
  return SavedState{next.generation, next.chunk_sha256.size(), next.compressed_bytes};
}

Result<std::optional<std::string>> StateSecrets::Load() {
  ECO_RETURN_IF_ERROR(CheckNames());
  for (int attempt = 1;; ++attempt) {
    ECO_ASSIGN_OR_RETURN(std::optional<Index> index, ReadIndex(nullptr));
    if (!index) return std::optional<std::string>();
    std::string compressed;
    compressed.reserve(index->compressed_bytes);
    Status missing;
    for (size_t i = 0; i < index->chunk_sha256.size() && missing.ok(); ++i) {
      Result<std::string> chunk = ReadChunk(*index, i);
      if (chunk.ok()) {
        compressed += *chunk;
      } else if (chunk.status().code() == Code::kNotFound) {
        missing = chunk.status();
      } else {
        return chunk.status();
      }
    }
    if (!missing.ok()) {
      // A Save may have switched generations under us: look again.
      ECO_ASSIGN_OR_RETURN(std::optional<Index> now, ReadIndex(nullptr));
      if (now && now->generation != index->generation && attempt < kLoadAttempts) continue;
      return Internal(missing.message());
    }
    const std::string where =
        "agent state in " + Where(base_) + " generation " + std::to_string(index->generation);
    if (compressed.size() != index->compressed_bytes) {
      return Internal(where + ": chunks hold " + std::to_string(compressed.size()) +
                      " bytes, the index says " + std::to_string(index->compressed_bytes));
    }
    Result<std::string> raw = Decompress(compressed, index->raw_bytes);
    if (!raw.ok()) return raw.status().Annotate(where);
    if (Sha256Hex(*raw) != index->sha256)
      return Internal(where + ": sha-256 of the whole state differs from the index's");
    return std::optional<std::string>(std::move(*raw));
  }
}

Status StateSecrets::Clear() {
  ECO_RETURN_IF_ERROR(CheckNames());
  // Index first: from then on Load answers "no state", whatever is left.
  ECO_RETURN_IF_ERROR(DeleteSecret(base_));
  return DeleteChunksExcept(std::nullopt);
}

}  // namespace eco::agent
