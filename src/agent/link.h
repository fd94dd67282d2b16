// The agent's connection to the hub (proto/agent/agent.proto): enrols once
// with its bootstrap token, then keeps one stream open, reconnecting with
// jittered backoff. Down the stream come publications, which the runner
// takes in; each is persisted in the cluster before it is acknowledged.
// Up go the runner's records and outcomes, resent until the hub
// acknowledges them. Nothing here blocks the runner: while the hub is away
// the cluster keeps converging on what it has.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "agent/runner.h"
#include "common/clock.h"
#include "common/status.h"

namespace eco::agent {

// Where the agent keeps what must survive it (the cluster's Secrets; tests
// may keep it in memory).
struct StateStorage {
  std::function<Status(std::string_view)> save_identity, save_state;
  std::function<Result<std::optional<std::string>>()> load_identity, load_state;
};

struct Identity {
  std::string provider, cluster, credential;
  std::string key() const { return provider + "+" + cluster; }
};

struct LinkOptions {
  std::string hub;     // http://host:port, https://host:port or host:port (port default 9070)
  std::string token;   // the bootstrap token: used only when no identity is kept
  std::string ca_pem;  // trust for an https hub (empty: the system's roots)
  std::string version;
  std::chrono::milliseconds retry_base{1000}, retry_cap{60000};
  std::chrono::milliseconds ping_every{15000};
  std::chrono::milliseconds report_every{500};
  Clock* clock = nullptr;
  Random* random = nullptr;
  std::function<void(const std::string&)> log;  // one line per notable happening
};

// The kept identity, or a new one from the token (kept before it is returned).
Result<Identity> ObtainIdentity(const LinkOptions& opt, const StateStorage& storage);

class Link {
 public:
  Link(LinkOptions opt, Identity id, Runner& runner, StateStorage storage);
  // Connects and serves until `stop` turns true (checked at least every
  // second); returns then. Refusals (a revoked cluster) are returned.
  Status Run(const std::atomic<bool>& stop);

  // Counters for tests and logs.
  uint64_t connects() const { return connects_.load(); }
  uint64_t publications() const { return publications_.load(); }
  uint64_t publication_bytes() const { return publication_bytes_.load(); }

 private:
  class Session;
  void Log(const std::string& s) const;

  LinkOptions opt_;
  Identity id_;
  Runner& runner_;
  StateStorage storage_;
  Clock& clock_;
  Random& random_;
  std::atomic<uint64_t> connects_{0}, publications_{0}, publication_bytes_{0};
};

}  // namespace eco::agent
