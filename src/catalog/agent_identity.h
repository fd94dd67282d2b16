// Agent clusters (docs/agent.md): a cluster registered with spec.delivery
// "agent" has no kubeconfig; an `eco agent` in it dials the hub. It proves
// who it is first with a single-use, expiring bootstrap token, which it
// exchanges once for the cluster's own credential; from then on it presents
// that credential. Revoking the cluster (or deleting it) removes the
// credential: every replica refuses it at once.
//
// Layout (under /eco/agent/; values are JSON):
//   boot/<sha-256 of the token, hex>   {"provider", "cluster", "expires"}: until used or expired
//   id/<provider+cluster>              {"hash", "issued", "generation"}: the credential's
//                                      sha-256, while the cluster is enrolled
//   bootof/<provider+cluster>/<hash>   the token's "expires": finds a cluster's tokens
//                                      (revocation, removal once expired)
// Only hashes are stored: a store dump yields no usable token or credential.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::catalog {

enum class Delivery { kPush, kAgent };
std::string_view DeliveryName(Delivery d);  // "push", "agent"
// A cluster object's spec.delivery (push when absent); Invalid for another value.
Result<Delivery> DeliveryOf(const nlohmann::json& cluster_object);
// The stored cluster's delivery; NotFound when there is no such cluster.
Result<Delivery> ClusterDelivery(store::Store& st, const std::string& provider, const std::string& cluster);

struct Bootstrap {
  std::string token;    // shown once, never stored
  std::string expires;  // RFC 3339
};
// Unused tokens a cluster may hold at once: each is a way in, and
// revocation removes them all in one transaction.
inline constexpr int kMaxBootstrapTokens = 16;
// A new bootstrap token for an agent cluster, valid for `ttl`. NotFound:
// no such cluster; Conflict: the cluster's delivery is push. Earlier
// unused tokens of the cluster stay valid until they expire (expired ones
// are removed here); Conflict too when kMaxBootstrapTokens are unused.
// Tokens and credentials are drawn from OpenSSL's generator, never from a
// seeded eco::Random: a seed would make them guessable.
Result<Bootstrap> IssueBootstrap(store::Store& st, const Clock& clock, const std::string& provider,
                                 const std::string& cluster, Clock::Duration ttl);

struct AgentIdentity {
  std::string provider;
  std::string cluster;
  std::string credential;  // secret: the agent keeps it in its cluster
  std::string key() const { return provider + "+" + cluster; }
};
// Exchanges a bootstrap token for its cluster's credential, in one store
// transaction that consumes the token (a second use, by anyone, fails).
// A new credential replaces the cluster's earlier one. PermissionDenied
// with a clear message when the token is unknown, used, expired, or its
// cluster is gone or no longer an agent cluster.
Result<AgentIdentity> Enroll(store::Store& st, const Clock& clock, std::string_view token);

// The cluster a credential belongs to (credential left empty).
// PermissionDenied when eco did not issue it or the cluster was revoked.
Result<AgentIdentity> Authenticate(store::Store& st, std::string_view credential);

// Removes the cluster's credential and its unused bootstrap tokens (Ok
// when there were none). Deleting a cluster does the same.
Status RevokeAgent(store::Store& st, const std::string& provider, const std::string& cluster);
// The deletions RevokeAgent commits, for a caller that removes the cluster
// in the same transaction (the API's cluster delete, which also compares
// the cluster's guard: IssueBootstrap touches it, so no token issued
// meanwhile is left behind).
Result<std::vector<store::Op>> AgentRevokeOps(store::Store& st, const std::string& provider,
                                              const std::string& cluster);

// Watched by the hub's agent server: a delete under it closes that
// cluster's stream.
std::string AgentIdentityPrefix();
std::string AgentIdentityKey(const std::string& cluster_key);

}  // namespace eco::catalog
