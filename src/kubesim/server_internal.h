// kube-sim's transport internals shared by the HTTP/1.1 sessions (server.cc)
// and the HTTP/2 connections (h2_connection.cc): faults, the registry of open
// connections, watch streams, and the request routing both protocols share.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kubesim/http.h"
#include "kubesim/server.h"

namespace eco::kubesim::internal {

// ---------------------------------------------------------------- decoding

// Splits a request target into req->path (percent-decoded) and req->query.
// False on a malformed escape.
bool SplitTarget(std::string_view target, HttpRequest* req);

// "/clusters/NAME/..." -> NAME; "" for paths outside any cluster.
std::string_view ClusterOf(std::string_view path);

HttpResponse JsonResponse(int status, std::string body);

// ---------------------------------------------------------------- faults

struct Faults {
  bool down = false;
  bool hang = false;
  int latency_ms = 0;
  double error_rate = 0;
  bool clear() const { return !down && !hang && latency_ms == 0 && error_rate == 0; }
};

// What a request for a cluster meets.
struct Verdict {
  bool reset = false;
  bool hang = false;
  std::chrono::milliseconds delay{0};
  bool error = false;
};

// Only clusters with a fault have an entry, so with no faults anywhere a
// request costs one atomic load here.
class FaultTable {
 public:
  explicit FaultTable(uint64_t seed) : rng_(seed) {}

  Verdict Judge(std::string_view cluster) {
    Verdict v;
    if (cluster.empty() || active_.load(std::memory_order_acquire) == 0) return v;
    std::lock_guard lock(mu_);
    auto it = faults_.find(std::string(cluster));
    if (it == faults_.end()) return v;
    const Faults& f = it->second;
    v.reset = f.down;
    v.hang = f.hang;
    v.delay = std::chrono::milliseconds(f.latency_ms);
    v.error = f.error_rate >= 1 || (f.error_rate > 0 && std::uniform_real_distribution<double>(
                                                            0, 1)(rng_) < f.error_rate);
    return v;
  }

  // Stream data for the cluster is dropped (hung, or down until reset).
  bool Muted(std::string_view cluster) {
    if (cluster.empty() || active_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard lock(mu_);
    auto it = faults_.find(std::string(cluster));
    return it != faults_.end() && (it->second.hang || it->second.down);
  }

  Faults Get(const std::string& cluster) {
    std::lock_guard lock(mu_);
    auto it = faults_.find(cluster);
    return it == faults_.end() ? Faults{} : it->second;
  }

  // Applies `change` and returns the faults now in force.
  template <typename F>
  Faults Update(const std::string& cluster, F change) {
    std::lock_guard lock(mu_);
    Faults f = Get(cluster, lock);
    change(f);
    if (f.clear()) {
      faults_.erase(cluster);
    } else {
      faults_[cluster] = f;
    }
    active_.store(faults_.size(), std::memory_order_release);
    return f;
  }

 private:
  Faults Get(const std::string& cluster, const std::lock_guard<std::mutex>&) {
    auto it = faults_.find(cluster);
    return it == faults_.end() ? Faults{} : it->second;
  }

  std::atomic<std::size_t> active_{0};  // faults_.size()
  std::mutex mu_;
  std::unordered_map<std::string, Faults> faults_;  // guarded by mu_
  std::mt19937_64 rng_;                             // guarded by mu_
};

// ---------------------------------------------------------------- sessions

enum class FaultEvent { kDown, kUp };

// The non-template face of a connection, for streams, fault changes and Stop.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  // Callable from any thread; run on the session's strand. `stream` is the
  // HTTP/2 stream id; 0 on HTTP/1.1 (one response at a time).
  virtual void PostChunk(int32_t stream, std::string data) = 0;
  virtual void PostEndStream(int32_t stream) = 0;
  // The stream's peer does not read: cut it off (HTTP/1.1: the connection).
  virtual void PostReset(int32_t stream) = 0;
  virtual void PostFault(std::string cluster, FaultEvent event) = 0;
  // Only while no io thread runs: drops the connection at once.
  virtual void CloseForStop() = 0;
};

// Open sessions, so that fault changes and Stop can reach them.
class Registry {
 public:
  uint64_t Add(std::weak_ptr<SessionBase> s) {
    std::lock_guard lock(mu_);
    uint64_t id = next_++;
    sessions_.emplace(id, std::move(s));
    return id;
  }
  void Remove(uint64_t id) {
    std::lock_guard lock(mu_);
    sessions_.erase(id);
  }
  std::vector<std::shared_ptr<SessionBase>> Snapshot() {
    std::vector<std::shared_ptr<SessionBase>> out;
    std::lock_guard lock(mu_);
    out.reserve(sessions_.size());
    for (auto& [id, w] : sessions_) {
      if (auto s = w.lock()) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::mutex mu_;
  uint64_t next_ = 0;                                                  // guarded by mu_
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions_;  // guarded by mu_
};

// A watch response body. Holds its session alive until closed, so a session
// streaming to a quiet peer needs no pending operation of its own.
class StreamImpl final : public Stream {
 public:
  // stream_id 0: HTTP/1.1, chunked framing; else the HTTP/2 stream (DATA frames).
  StreamImpl(std::shared_ptr<SessionBase> session, FaultTable* faults, std::string cluster,
             std::size_t limit, int32_t stream_id = 0)
      : session_(std::move(session)),
        faults_(faults),
        cluster_(std::move(cluster)),
        limit_(limit),
        id_(stream_id) {}

  ~StreamImpl() override { Close(); }  // a dropped stream ends its response

  bool Write(std::string chunk) override {
    if (closed_.load(std::memory_order_acquire)) return false;
    if (chunk.empty()) return true;  // an empty chunk would end the body
    std::string framed;
    if (id_ != 0) {
      framed = std::move(chunk);
    } else {
      char size_line[24];
      int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
      framed.reserve(static_cast<std::size_t>(n) + chunk.size() + 2);
      framed.append(size_line, static_cast<std::size_t>(n)).append(chunk).append("\r\n");
    }

    std::shared_ptr<SessionBase> to_reset;
    {
      std::lock_guard lock(mu_);
      if (!session_) return false;
      // faults_ is only touched while open: Stop closes every stream first.
      if (faults_->Muted(cluster_)) return true;
      std::size_t queued = queued_.fetch_add(framed.size()) + framed.size();
      if (queued <= limit_) {
        session_->PostChunk(id_, std::move(framed));
        return true;
      }
      // The peer does not read: cut it off rather than buffer without bound.
      closed_.store(true, std::memory_order_release);
      to_reset = std::move(session_);
    }
    to_reset->PostReset(id_);
    return false;
  }

  void Close() override {
    std::shared_ptr<SessionBase> s;
    {
      std::lock_guard lock(mu_);
      if (!session_) return;
      closed_.store(true, std::memory_order_release);
      s = std::move(session_);
    }
    s->PostEndStream(id_);
  }

  bool Closed() const override { return closed_.load(std::memory_order_acquire); }

  // From the session: the connection is gone. Releases the session.
  void MarkClosed() {
    std::shared_ptr<SessionBase> s;  // released after the lock (declared first)
    std::lock_guard lock(mu_);
    closed_.store(true, std::memory_order_release);
    s = std::move(session_);
  }

  void Sent(std::size_t bytes) { queued_.fetch_sub(bytes); }

 private:
  std::mutex mu_;
  std::shared_ptr<SessionBase> session_;  // guarded by mu_; null once closed
  std::atomic<bool> closed_{false};
  std::atomic<std::size_t> queued_{0};  // framed bytes posted and not yet written
  FaultTable* const faults_;
  const std::string cluster_;
  const std::size_t limit_;
  const int32_t id_;
};

// Per cluster: the open connections that have carried a request for it (of
// them HTTP/2) and its requests in progress (HTTP/2: open streams).
class ClusterLoad {
 public:
  struct Counts {
    uint64_t connections = 0, h2 = 0, streams = 0;
  };
  void AddConnection(const std::string& cluster, bool h2) {
    std::lock_guard lock(mu_);
    Counts& c = counts_[cluster];
    ++c.connections;
    if (h2) ++c.h2;
  }
  void RemoveConnection(const std::string& cluster, bool h2) {
    std::lock_guard lock(mu_);
    auto it = counts_.find(cluster);
    if (it == counts_.end()) return;
    --it->second.connections;
    if (h2) --it->second.h2;
    if (it->second.connections == 0 && it->second.streams == 0) counts_.erase(it);
  }
  void AddStream(const std::string& cluster) {
    std::lock_guard lock(mu_);
    ++counts_[cluster].streams;
  }
  void RemoveStream(const std::string& cluster) {
    std::lock_guard lock(mu_);
    auto it = counts_.find(cluster);
    if (it == counts_.end()) return;
    --it->second.streams;
    if (it->second.connections == 0 && it->second.streams == 0) counts_.erase(it);
  }
  Counts Get(const std::string& cluster) {
    std::lock_guard lock(mu_);
    auto it = counts_.find(cluster);
    return it == counts_.end() ? Counts{} : it->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Counts> counts_;  // guarded by mu_; no all-zero entries
};

struct Core {
  Core(ServerOptions o, HttpHandler h, uint64_t seed)
      : options(std::move(o)), handler(std::move(h)), faults(seed) {}

  const ServerOptions options;
  const HttpHandler handler;
  Registry registry;
  FaultTable faults;
  ClusterLoad load;
  struct {
    std::atomic<uint64_t> connections{0}, h2_connections{0}, requests{0}, hung{0}, streams{0},
        resets{0};
  } stats;

  // The /sim API kube-sim answers itself (faults, connections): its response,
  // or nullopt when `req` is for something else.
  std::optional<HttpResponse> SimApi(const HttpRequest& req);

  // The handler's reply to `req`, or the injected 500 when `inject_error`.
  HttpReply Call(const HttpRequest& req, bool inject_error, std::string_view cluster);

 private:
  // The /sim fault API; changes reach affected sessions through the registry.
  HttpResponse HandleFaultApi(const std::string& method, const std::string& cluster,
                              const std::string& action, const HttpRequest& req);
};

}  // namespace eco::kubesim::internal
