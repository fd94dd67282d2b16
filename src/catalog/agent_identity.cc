#include "catalog/agent_identity.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "catalog/catalog.h"
#include "common/hex.h"

namespace eco::catalog {

using store::Compare;
using store::Op;

namespace {

// Every key of agent identities, spelled here only.
constexpr std::string_view kBoot = "/eco/agent/boot/";  // <token hash>
constexpr std::string_view kBootOf =
    "/eco/agent/bootof/";                           // <provider+cluster>/<token hash>: expires
constexpr std::string_view kId = "/eco/agent/id/";  // <provider+cluster>

// Compare-and-swap rounds before giving up on a key under constant change.
constexpr int kAttempts = 16;

std::string BootKey(const std::string& hash) { return std::string(kBoot) + hash; }
std::string BootOfPrefix(const std::string& cluster_key) {
  return std::string(kBootOf) + cluster_key + "/";
}
std::string BootOfKey(const std::string& cluster_key, const std::string& hash) {
  return BootOfPrefix(cluster_key) + hash;
}
std::string ClusterKey(const std::string& provider, const std::string& cluster) {
  return provider + "+" + cluster;
}
std::string ClusterObjectKey(const std::string& provider, const std::string& cluster) {
  return ObjectKey("cluster", {provider, cluster});
}

std::string Sha256Hex(std::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(d), sizeof d));
}

// 32 bytes of OpenSSL's cryptographic generator, as 64 hex digits.
Result<std::string> Secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Internal("no random bytes for a secret (OpenSSL RAND_bytes failed)");
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Reads back what Rfc3339 writes ("2026-01-01T00:00:00.000Z"); nullopt otherwise.
std::optional<Clock::WallTime> ParseStamp(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &y, &mo, &d, &h, &mi, &sec, &ms,
                  &n) != 7 ||
      static_cast<size_t>(n) != s.size()) {
    return std::nullopt;
  }
  using namespace std::chrono;
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  return Clock::WallTime(sys_days(ymd).time_since_epoch() + hours(h) + minutes(mi) + seconds(sec) +
                         milliseconds(ms));
}

bool Expired(const std::string& expires, const Clock& clock) {
  auto t = ParseStamp(expires);
  return !t || clock.WallNow() >= *t;  // unreadable counts as expired
}

Result<nlohmann::json> ParseJson(const store::KeyValue& kv) {
  auto j = nlohmann::json::parse(kv.value, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Internal("stored " + kv.key + " is not a JSON object");
  return j;
}

int64_t Generation(const nlohmann::json& id) {
  auto g = id.find("generation");
  return g != id.end() && g->is_number_integer() ? g->get<int64_t>() : 0;
}

std::string AgentClusterOnly(const std::string& provider, const std::string& cluster) {
  return "cluster " + ClusterKey(provider, cluster) +
         " delivers by push (spec.delivery \"push\"): eco dials it with its kubeconfig and it has "
         "no agent; "
         "register it with spec.delivery \"agent\" to use one";
}

}  // namespace

std::string_view DeliveryName(Delivery d) { return d == Delivery::kAgent ? "agent" : "push"; }

Result<Delivery> DeliveryOf(const nlohmann::json& cluster_object) {
  if (!cluster_object.is_object()) return Delivery::kPush;
  auto spec = cluster_object.find("spec");
  if (spec == cluster_object.end() || !spec->is_object()) return Delivery::kPush;
  auto d = spec->find("delivery");
  if (d == spec->end() || d->is_null()) return Delivery::kPush;
  if (d->is_string()) {
    const std::string& v = d->get_ref<const std::string&>();
    if (v == "push") return Delivery::kPush;
    if (v == "agent") return Delivery::kAgent;
  }
  return Invalid(
      "Invalid Input: spec.delivery must be \"push\" (eco dials the cluster with its kubeconfig) "
      "or "
      "\"agent\" (an eco agent in the cluster dials eco), not " +
      d->dump());
}

Result<Delivery> ClusterDelivery(store::Store& st, const std::string& provider,
                                 const std::string& cluster) {
  auto c = Get(st, "cluster", {provider, cluster});
  if (!c.ok()) return c.status();
  if (!c->has_value()) return NotFound("Cluster " + ClusterKey(provider, cluster) + " not found");
  auto d = DeliveryOf(**c);
  if (!d.ok())
    return Internal("stored cluster " + ClusterKey(provider, cluster) + ": " +
                    d.status().message());
  return *d;
}

Result<Bootstrap> IssueBootstrap(store::Store& st, const Clock& clock,
                                 const std::string& provider, const std::string& cluster,
                                 Clock::Duration ttl) {
  if (ttl <= Clock::Duration::zero())
    return Invalid("a bootstrap token's lifetime must be positive");
  const std::string ckey = ClusterKey(provider, cluster);
  const std::string object_key = ClusterObjectKey(provider, cluster);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto obj = st.Get(object_key);
    if (!obj.ok()) return obj.status();
    if (!obj->has_value()) return NotFound("Cluster " + ckey + " not found");
    ECO_ASSIGN_OR_RETURN(auto body, ParseJson(**obj));
    auto delivery = DeliveryOf(body);
    if (!delivery.ok())
      return Internal("stored cluster " + ckey + ": " + delivery.status().message());
    if (*delivery != Delivery::kAgent) return Conflict(AgentClusterOnly(provider, cluster));

    store::Txn txn;
    // Expired tokens of the cluster go now: nothing else removes them.
    auto old = st.Range(BootOfPrefix(ckey));
    if (!old.ok()) return old.status();
    int live = 0;
    for (const auto& kv : old->kvs) {
      if (Expired(kv.value, clock)) {
        const std::string hash = kv.key.substr(BootOfPrefix(ckey).size());
        txn.success.push_back(Op::Delete(BootKey(hash)));
        txn.success.push_back(Op::Delete(kv.key));
      } else {
        ++live;
      }
    }
    if (live >= kMaxBootstrapTokens) {
      return Conflict("cluster " + ckey + " has " + std::to_string(live) +
                      " unused bootstrap tokens, the most it may have: use one, let them expire, "
                      "or revoke them "
                      "(agent-revoke)");
    }

    Bootstrap out;
    ECO_ASSIGN_OR_RETURN(out.token, Secret());
    out.expires = Rfc3339(clock.WallNow() + ttl);
    const std::string hash = Sha256Hex(out.token);
    txn.compares.push_back(Compare::ModRevisionIs(object_key, (*obj)->mod_revision));
    txn.compares.push_back(Compare::Missing(BootKey(hash)));
    txn.success.push_back(Op::Put(
        BootKey(hash),
        nlohmann::json{{"provider", provider}, {"cluster", cluster}, {"expires", out.expires}}
            .dump()));
    txn.success.push_back(Op::Put(BootOfKey(ckey, hash), out.expires));
    // A delete of the cluster racing with this sees its guard move and
    // reads the new token before it commits (it removes them all).
    txn.success.push_back(Op::Put(GuardKey("cluster", {provider, cluster}), ""));
    auto res = st.Commit(txn);
    if (!res.ok()) return res.status();
    if (res->succeeded) return out;
  }
  return Unavailable("cluster " + ckey + " changed too often to issue a bootstrap token; retry");
}

Result<AgentIdentity> Enroll(store::Store& st, const Clock& clock,
                             std::string_view token) {
  const std::string refused = "bootstrap token refused: ";
  if (token.empty()) return PermissionDenied(refused + "it is empty");
  if (token.size() > 1024) return PermissionDenied(refused + "eco did not issue it");
  const std::string hash = Sha256Hex(token);
  const std::string boot_key = BootKey(hash);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto boot = st.Get(boot_key);
    if (!boot.ok()) return boot.status();
    if (!boot->has_value()) {
      return PermissionDenied(
          refused + "eco did not issue it, or it was used already, expired or was revoked");
    }
    ECO_ASSIGN_OR_RETURN(auto rec, ParseJson(**boot));
    const std::string provider = StringField(rec, "provider"),
                      cluster = StringField(rec, "cluster");
    const std::string expires = StringField(rec, "expires");
    const std::string ckey = ClusterKey(provider, cluster);

    // A token that can no longer be used goes (a lost race changes nothing).
    auto drop = [&](std::string why) -> Status {
      store::Txn txn;
      txn.compares.push_back(Compare::ModRevisionIs(boot_key, (*boot)->mod_revision));
      txn.success.push_back(Op::Delete(boot_key));
      txn.success.push_back(Op::Delete(BootOfKey(ckey, hash)));
      auto res = st.Commit(txn);
      if (!res.ok()) return res.status();
      return PermissionDenied(refused + why);
    };
    if (Expired(expires, clock)) return drop("it expired at " + expires);
    auto obj = st.Get(ClusterObjectKey(provider, cluster));
    if (!obj.ok()) return obj.status();
    if (!obj->has_value()) return drop("its cluster " + ckey + " no longer exists");
    ECO_ASSIGN_OR_RETURN(auto body, ParseJson(**obj));
    auto delivery = DeliveryOf(body);
    if (!delivery.ok() || *delivery != Delivery::kAgent) {
      return drop("its cluster " + ckey + " is no longer an agent cluster");
    }
    auto id = st.Get(AgentIdentityKey(ckey));
    if (!id.ok()) return id.status();
    int64_t generation = 1;
    if (id->has_value()) {
      ECO_ASSIGN_OR_RETURN(auto old, ParseJson(**id));
      generation = Generation(old) + 1;
    }

    ECO_ASSIGN_OR_RETURN(std::string secret, Secret());
    AgentIdentity out{provider, cluster, provider + "/" + cluster + "/" + secret};
    store::Txn txn;
    // The token unchanged since it was read: of two enrollments with it,
    // only the first to commit finds it there.
    txn.compares.push_back(Compare::ModRevisionIs(boot_key, (*boot)->mod_revision));
    txn.compares.push_back(
        Compare::ModRevisionIs(ClusterObjectKey(provider, cluster), (*obj)->mod_revision));
    txn.compares.push_back(id->has_value()
                               ? Compare::ModRevisionIs(AgentIdentityKey(ckey), (*id)->mod_revision)
                               : Compare::Missing(AgentIdentityKey(ckey)));
    txn.success.push_back(Op::Delete(boot_key));
    txn.success.push_back(Op::Delete(BootOfKey(ckey, hash)));
    txn.success.push_back(
        Op::Put(AgentIdentityKey(ckey), nlohmann::json{{"hash", Sha256Hex(out.credential)},
                                                       {"issued", NowRfc3339(clock)},
                                                       {"generation", generation}}
                                            .dump()));
    auto res = st.Commit(txn);
    if (!res.ok()) return res.status();
    if (res->succeeded) return out;
    // Lost a race: the token used meanwhile, or the cluster or its
    // identity changed; read again.
  }
  return Unavailable("the bootstrap token's cluster changed too often to enroll; retry");
}

Result<AgentIdentity> Authenticate(store::Store& st, std::string_view credential) {
  const std::string refused = "agent credential refused: ";
  const size_t first = credential.find('/');
  const size_t last = credential.rfind('/');
  if (first == std::string_view::npos || first == 0 || last == first + 1 || last == first ||
      !IsHex64(credential.substr(last + 1))) {
    return PermissionDenied(refused + "eco did not issue it");
  }
  AgentIdentity out;
  out.provider = std::string(credential.substr(0, first));
  out.cluster = std::string(credential.substr(first + 1, last - first - 1));
  if (out.cluster.find('/') != std::string::npos || out.provider.find('+') != std::string::npos ||
      out.cluster.find('+') != std::string::npos) {
    return PermissionDenied(refused + "eco did not issue it");
  }
  auto id = st.Get(AgentIdentityKey(out.key()));
  if (!id.ok()) return id.status();
  if (!id->has_value()) {
    return PermissionDenied(refused + "cluster " + out.key() +
                            " is not enrolled (revoked, deleted, or never enrolled)");
  }
  ECO_ASSIGN_OR_RETURN(auto rec, ParseJson(**id));
  const std::string want = StringField(rec, "hash");
  const std::string got = Sha256Hex(credential);
  if (want.size() != got.size() || CRYPTO_memcmp(want.data(), got.data(), got.size()) != 0) {
    return PermissionDenied(
        refused + "it is not cluster " + out.key() +
        "'s current credential (replaced by a later enrollment, or not issued by eco)");
  }
  return out;
}

Result<std::vector<store::Op>> AgentRevokeOps(store::Store& st, const std::string& provider,
                                              const std::string& cluster) {
  const std::string ckey = ClusterKey(provider, cluster);
  store::RangeOptions keys;
  keys.keys_only = true;
  auto tokens = st.Range(BootOfPrefix(ckey), keys);
  if (!tokens.ok()) return tokens.status();
  std::vector<store::Op> ops;
  ops.push_back(Op::Delete(AgentIdentityKey(ckey)));
  for (const auto& kv : tokens->kvs) {
    ops.push_back(Op::Delete(BootKey(kv.key.substr(BootOfPrefix(ckey).size()))));
    ops.push_back(Op::Delete(kv.key));
  }
  return ops;
}

Status RevokeAgent(store::Store& st, const std::string& provider, const std::string& cluster) {
  ECO_ASSIGN_OR_RETURN(auto ops, AgentRevokeOps(st, provider, cluster));
  store::Txn txn;
  txn.success = std::move(ops);
  auto res = st.Commit(txn);
  return res.ok() ? Status::Ok() : res.status();
}

std::string AgentIdentityPrefix() { return std::string(kId); }
std::string AgentIdentityKey(const std::string& cluster_key) {
  return std::string(kId) + cluster_key;
}

}  // namespace eco::catalog
