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
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/runner.h"
#include "common/clock.h"
#include "common/lifeline.h"
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
  // Changes (new records, a publication taken in) are gathered this long
  // before one report carries them (and the state is saved).
  std::chrono::milliseconds report_every{100};
  // Where the link's work runs (taking in publications, saving the state,
  // reporting): null, one thread of its own. Fleet mode shares one pool
  // between its agents, each of which then holds no thread (the stream's
  // reads and writes complete on gRPC's own threads).
  rsync::Executor* executor = nullptr;
  Clock* clock = nullptr;
  Random* random = nullptr;
  std::function<void(const std::string&)> log;  // one line per notable happening
};

// The kept identity, or a new one from the token (kept before it is returned).
Result<Identity> ObtainIdentity(const LinkOptions& opt, const StateStorage& storage);

class Link {
 public:
  Link(LinkOptions opt, Identity id, Runner& runner, StateStorage storage);
  ~Link();  // Stop() and waits for the end
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Connects and serves until Stop(), reconnecting; `done` is called once
  // when it ends, with the refusal that ended it (a revoked cluster) or OK.
  void Start(std::function<void(Status)> done);
  // Ends the stream; `done` follows (from another thread, or at once).
  void Stop();

  // Counters for tests and logs.
  uint64_t connects() const { return connects_.load(); }
  uint64_t publications() const { return publications_.load(); }
  uint64_t publication_bytes() const { return publication_bytes_.load(); }

 private:
  class Session;
  struct Hub;  // the channel and stub
  void Log(const std::string& s) const;
  void Connect();
  void Ended(Session& s, Status why);
  void Finish(Status why);
  bool stopping();

  LinkOptions opt_;
  Identity id_;
  Runner& runner_;
  StateStorage storage_;
  Clock& clock_;
  Random& random_;
  std::unique_ptr<rsync::Executor> own_exec_;
  rsync::Executor* exec_ = nullptr;
  std::unique_ptr<Hub> hub_;  // set by Start
  Lifeline life_;             // the work posted for the link and its streams
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, stopping_ = false, ended_ = false;  // guarded by mu_
  std::shared_ptr<Session> session_;       // guarded by mu_: the stream open or opening
  std::function<void(Status)> done_;       // guarded by mu_
  int attempt_ = 0;                        // guarded by mu_: failed connections in a row
  // The first stream after a start may have to resend what the restored
  // snapshot does not know was reported (UINT64_MAX once the hub stored a
  // report of this process).
  uint64_t report_after_ = 0;  // guarded by mu_
  std::atomic<uint64_t> connects_{0}, publications_{0}, publication_bytes_{0};
};

}  // namespace eco::agent
