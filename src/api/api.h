// The north REST API (EMCO /v2 compatible), independent of the HTTP server
// that carries it: a request in, a response out, state in the Store.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/auth.h"
#include "store/store.h"

namespace eco::scheduler {
class Scheduler;
}

namespace eco::api {

// One part of a multipart/form-data body.
struct FormPart {
  std::string content;
  std::string filename;
  std::string content_type;
};

struct Request {
  std::string method;  // GET, POST, PUT, DELETE
  std::string path;    // without query string, percent-decoded
  std::multimap<std::string, std::string> query;
  std::string accept;        // Accept header ("" when absent)
  std::string content_type;  // Content-Type header
  std::string body;          // raw body (JSON requests)
  // Parsed multipart/form-data parts by field name (set when the request is
  // multipart); a name may repeat (gac customizations upload several "files").
  std::multimap<std::string, FormPart> parts;
  bool multipart = false;
  // The URL an agent dials (server.h: ServerOptions::agent_url, or derived
  // from the Host header), for the bootstrap answer; set by HttpServer.
  std::string agent_hub;
  // Who asks, when the server checks tokens (set by HttpServer after
  // Authorize); nullopt: no authentication, every caller administers.
  std::optional<Principal> who;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A streamed answer (chunked transfer) instead of `body`: run once on the
  // HTTP thread, it sends pieces with `write` (false: the client is gone)
  // until it returns; `open` turns false once the client left or the
  // server is stopping.
  using Write = std::function<bool(const std::string&)>;
  std::function<void(const Write& write, const std::function<bool()>& open)> stream;
  // The route template that answered ("/v2/projects/{project}"), for the
  // access log and metrics; empty when no route matched.
  std::string route;
};

struct Options {
  // Uploaded archives may expand to at most this many bytes (decompression bombs).
  size_t max_archive_expanded_bytes = 512u << 20;
  // Carries out DIG and logical cloud lifecycle operations; without one
  // those routes answer 503.
  scheduler::Scheduler* scheduler = nullptr;
  // Serve only these resource types (a controller's own intents, e.g.
  // "hpaIntent"); empty = everything.
  std::vector<std::string> only_types;
  // Time and randomness of agent bootstrap tokens and credentials; null:
  // the machine's clock and ProcessRandom().
  Clock* clock = nullptr;
  Random* random = nullptr;
  // Status queries show an agent cluster silent this long as unreachable
  // and its ready values stale (status::QueryOptions).
  std::chrono::milliseconds agent_grace = std::chrono::minutes(5);
};

class Api {
 public:
  Api(store::Store& store, Options opts);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Thread-safe: called concurrently from the HTTP worker threads.
  Response Handle(const Request& req);

  // Every route the API serves, as "METHOD /v2/path/{var}" (for docs and tests).
  std::vector<std::string> Routes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A JSON error body {"code": status, "message": message}.
Response ErrorResponse(int status, const std::string& message);

}  // namespace eco::api
