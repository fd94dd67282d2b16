// The hub's end of the agent protocol (proto/agent/agent.proto,
// docs/agent.md): enrolment, and one stream per agent cluster that sends
// the cluster's publications newer than what the agent has, stores what
// the agent reports (its deployed records and how each app of each event
// ended, so that rsync's waiting tasks end and the status reads them as
// it reads push clusters'), and notes when the agent was last seen. Any
// replica on the same store serves any agent: the log and the reports are
// in the store, and a store watch wakes the stream when its log grows.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "store/store.h"

namespace eco::agenthub {

struct ServerOptions {
  std::string bind = "0.0.0.0";
  int port = 9070;  // 0: any free port
  // TLS (PEM contents) when both are set; agents then dial https://.
  std::string cert_pem, key_pem;
  std::string replica;  // this replica's name in lastSeen records
  // lastSeen is written at least this often while an agent talks.
  std::chrono::milliseconds seen_every{10000};
  // An agent silent this long is dropped (it keeps alive every 15 s).
  std::chrono::milliseconds idle_timeout{60000};
  // Bytes of publications read from the store per batch sent.
  size_t batch_bytes = 4u << 20;
  size_t workers = 4;  // threads for the streams' store work
  Clock* clock = nullptr;    // null: the machine's
  Random* random = nullptr;  // credentials drawn at enrolment
};

class Server {
 public:
  Server(store::Store& st, ServerOptions opt);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Status Start();
  // Closes every stream (agents reconnect elsewhere) and stops listening.
  void Stop();
  int port() const;
  // Streams open now (tests, metrics).
  size_t Streams() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::agenthub
