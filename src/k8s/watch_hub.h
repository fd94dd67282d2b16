// Internal to src/k8s: WatchHub's implementation, shared by watch.cc (the
// hub: registry, thread, timers, relists) and the files of its three kinds
// of stream: watch_curl.cc (libcurl, for proxied clusters), watch_lean.cc
// (HTTP/1.1 on a socket of its own, watch_stream.h) and watch_h2.cc (a
// stream of the client's HTTP/2 connection, h2_transport.h).
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "k8s/h2_transport.h"
#include "k8s/transport.h"
#include "k8s/watch.h"
#include "k8s/watch_stream.h"

namespace eco::k8s {

class WatchHub::Impl {
 public:
  explicit Impl(WatchHubOptions options);

  ~Impl();

  Result<WatchId> Watch(std::shared_ptr<ClusterClient> client, WatchSpec spec,
                        WatchCallback callback);

  void Cancel(WatchId id);

  void Shutdown();

  size_t active_watches() const;

 private:
  struct CurlMultiFree {
    void operator()(CURLM* m) const { curl_multi_cleanup(m); }
  };

  // A stream that lasted this long ended normally (server timeout), so the
  // next connect needs no backoff.
  static constexpr auto kHealthyStream = std::chrono::seconds(1);

  // epoll's data: libcurl's sockets by descriptor (tag 0), lean streams by
  // watch id (tag 1), so a stream's events reach it without a lookup by fd.
  static uint64_t CurlTag(int fd) { return static_cast<uint64_t>(fd) << 1; }
  static uint64_t StreamTag(uint64_t id) { return (id << 1) | 1; }

  struct State {
    explicit State(const RestConfig& c) : tokens(c.token, c.token_file) {}

    // Constant after Watch() returns.
    WatchId id = 0;
    std::shared_ptr<ClusterClient> client;
    ResourceInfo info;
    WatchSpec spec;
    WatchCallback cb;
    TokenSource tokens;

    std::recursive_mutex cb_mu;  // held while the callback runs
    bool cancelled = false;      // guarded by cb_mu
    std::atomic<bool> cancel_flag{false};

    // Hub thread only.
    ResourceVersionTracker rv;
    CurlEasy easy;
    CurlSlist headers;
    std::string url;
    LineSplitter lines;
    std::string error_body;
    Status stream_error;  // an ERROR event other than 410
    long http_code = 0;
    bool in_multi = false;
    // Lean streams (no proxy; watch_stream.h). Hub thread only, but `ep`
    // and `verify_name`, constant after Watch() returns.
    bool lean = false;
    bool lean_active = false;  // a lean stream is resolving, connecting or open
    Endpoint ep;
    std::string verify_name;
    SslCtx tls;  // made at the first TLS connect
    std::unique_ptr<WatchStream> stream;
    // HTTP/2 streams: `h2` constant after Watch() returns (null: the client
    // is not on HTTP/2); the others hub thread only.
    std::shared_ptr<H2Session> h2;
    bool h2_active = false;                 // a stream is open or opening
    std::shared_ptr<H2Connection> h2_conn;  // where it is, for Cancel
    uint64_t h2_handle = 0;
    uint32_t stream_events = 0;  // what epoll waits for on stream->fd()
    uint64_t stream_seq = 0;     // deadline timers name the stream they guard
    bool got_headers = false;
    bool relist_needed = false;
    bool saw_event = false;
    Clock::Time started;
    int failures = 0;
    uint64_t timer_seq = 0;
  };

  // Work for the relist threads: lists, and name lookups for lean streams
  // (getaddrinfo blocks).
  enum class JobKind { kRelist, kResolve };
  struct Job {
    std::shared_ptr<State> state;
    JobKind kind = JobKind::kRelist;
    uint64_t seq = 0;  // kResolve: the stream it is for
  };

  enum class TimerKind { kStream, kRelist, kHeaderDeadline, kStreamDeadline };
  struct Timer {
    Clock::Time at;
    WatchId id;
    uint64_t seq;
    TimerKind kind;
    bool operator>(const Timer& o) const { return at > o.at; }
  };

  // --- any thread ---

  Clock::Time Now() const { return options_.clock->Now(); }

  void Post(std::function<void()> fn);

  void WakeHub();

  static void ReportConnected(State& s);

  static void Deliver(State& s, const WatchEvent& e);

  // --- relist workers ---

  void RelistWorker();

  // --- hub thread ---

  void Run();

  // Finished transfers (a stream ended or failed).
  void DrainDone();

  // libcurl's socket callback (hub thread): what to wait for on `s`.
  static int OnSocket(CURL*, curl_socket_t s, int what, void* user, void*);

  // libcurl's timer callback (hub thread): when to call it back without I/O.
  static int OnCurlTimer(CURLM*, long timeout_ms, void* user);

  void Start(const std::shared_ptr<State>& s);

  void Remove(const std::shared_ptr<State>& s);

  void Relist(State& s);

  void OnRelisted(const std::shared_ptr<State>& s, bool ok, const std::string& rv);

  std::chrono::milliseconds Backoff(int failures);

  void Schedule(State& s, std::chrono::milliseconds delay, TimerKind kind);

  void FireTimers();

  // The watch request's path and query.
  std::string WatchPath(const State& s) const;

  void ResetStreamState(State& s);

  void StartStream(State& s);

  // --- libcurl streams (proxied clusters) ---

  void StartCurl(State& s);

  // --- HTTP/2 streams (h2_transport.h) ---

  // The sinks run on the connection's loop thread and post to the hub, as
  // long as it runs.
  struct HubRef {
    std::mutex mu;
    Impl* hub = nullptr;  // guarded by mu; null once shut down
  };

  class H2WatchSink final : public H2StreamSink {
   public:
    H2WatchSink(std::shared_ptr<HubRef> ref, WatchId id, uint64_t seq)
        : ref_(std::move(ref)), id_(id), seq_(seq) {}
    void OnResponse(int status, const H2Headers&) override {
      Send([id = id_, seq = seq_, status](Impl& hub) { hub.OnH2Response(id, seq, status); });
    }
    bool OnData(std::string_view bytes) override {
      Send([id = id_, seq = seq_, data = std::string(bytes)](Impl& hub) {
        hub.OnH2Data(id, seq, data);
      });
      return true;
    }
    void OnEnd(const H2End& end) override {
      Send([id = id_, seq = seq_, end](Impl& hub) { hub.OnH2End(id, seq, end); });
    }

   private:
    void Send(std::function<void(Impl&)> fn) {
      std::lock_guard<std::mutex> lock(ref_->mu);
      if (ref_->hub == nullptr) return;
      Impl* hub = ref_->hub;
      hub->Post([hub, fn = std::move(fn)] { fn(*hub); });
    }
    const std::shared_ptr<HubRef> ref_;
    const WatchId id_;
    const uint64_t seq_;
  };

  void StartH2(State& s);

  void CloseH2(State& s);

  // The open HTTP/2 stream `seq` of watch `id`, or null (ended, replaced).
  State* H2Stream(WatchId id, uint64_t seq);

  void OnH2Response(WatchId id, uint64_t seq, int status);

  void OnH2Data(WatchId id, uint64_t seq, const std::string& data);

  void OnH2End(WatchId id, uint64_t seq, const H2End& end);

  // --- lean streams (watch_stream.h) ---

  void StartLean(State& s);

  void ConnectLean(State& s, Result<std::vector<SocketAddress>> addresses);

  // Waits for what the stream wants next, or finishes it.
  void Arm(State& s, WatchStream::Want want);

  void OnStreamReady(WatchId id);

  class LeanSink final : public WatchStream::Sink {
   public:
    LeanSink(Impl& hub, State& s) : hub_(hub), s_(s) {}
    void OnStatus(int code) override {
      s_.http_code = code;
      s_.got_headers = true;
      if (code == 200) ReportConnected(s_);
    }
    bool OnBody(std::string_view bytes) override { return hub_.FeedBody(s_, bytes); }

   private:
    Impl& hub_;
    State& s_;
  };

  void CloseLean(State& s);

  void LeanFailed(State& s, const Status& why);

  void OnLeanDone(State& s);

  // A 200 stream ended as it should: again at once if it was healthy.
  void StreamEnded(State& s);

  // A stream failed: tell the receiver, reconnect after backoff.
  void Failed(State& s, const Status& why);

  void OnDone(State& s, CURLcode rc);

  static size_t OnHeader(char* data, size_t size, size_t n, void* user);

  static size_t OnData(char* data, size_t size, size_t n, void* user);

  // A piece of a 200 stream: events to the callback. False stops the stream
  // (cancelled, a line that is no event, or the version expired).
  static bool FeedBody(State& s, std::string_view bytes);

  const WatchHubOptions options_;
  std::mt19937_64 rng_;  // hub thread only
  std::unique_ptr<CURLM, CurlMultiFree> multi_;

  mutable std::mutex reg_mu_;
  std::map<WatchId, std::shared_ptr<State>> registry_;  // guarded by reg_mu_
  WatchId next_id_ = 1;                                 // guarded by reg_mu_
  bool shut_down_ = false;                              // guarded by reg_mu_

  std::mutex cmd_mu_;
  std::deque<std::function<void()>> commands_;  // guarded by cmd_mu_

  std::vector<char> scratch_ = std::vector<char>(16 * 1024);  // lean streams read into it
  const std::shared_ptr<HubRef> hub_ref_ = [this] {
    auto ref = std::make_shared<HubRef>();
    ref->hub = this;
    return ref;
  }();
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // Post() and Shutdown() wake the hub through it

  // Hub thread only.
  bool curl_timer_set_ = false;
  Clock::Time curl_deadline_;
  std::map<WatchId, std::shared_ptr<State>> active_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;

  std::mutex work_mu_;
  std::condition_variable work_cv_;
  std::deque<Job> jobs_;       // guarded by work_mu_
  bool workers_stop_ = false;  // guarded by work_mu_

  std::atomic<bool> stop_{false};
  std::thread hub_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace eco::k8s
