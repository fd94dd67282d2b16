#include "k8s/watch.h"

#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <thread>

#include "k8s/errors.h"
#include "k8s/h2_transport.h"
#include "k8s/paths.h"
#include "k8s/transport.h"
#include "k8s/watch_stream.h"

namespace eco::k8s {

using nlohmann::json;

// ---------------------------------------------------------------------------

namespace {

struct CurlMultiFree {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};

// A stream that lasted this long ended normally (server timeout), so the
// next connect needs no backoff.
constexpr auto kHealthyStream = std::chrono::seconds(1);

// epoll's data: libcurl's sockets by descriptor (tag 0), lean streams by
// watch id (tag 1), so a stream's events reach it without a lookup by fd.
uint64_t CurlTag(int fd) { return static_cast<uint64_t>(fd) << 1; }
uint64_t StreamTag(uint64_t id) { return (id << 1) | 1; }

}  // namespace

class WatchHub::Impl {
 public:
  explicit Impl(WatchHubOptions options) : options_(options), rng_(options.seed) {
    EnsureCurlGlobalInit();
    multi_.reset(curl_multi_init());
    // Event-driven: libcurl names the sockets to wait on and the hub waits
    // with epoll, so a wake-up costs the streams that have data, not all
    // of them (curl_multi_perform visits every transfer each time).
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = CurlTag(wake_fd_);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
    curl_multi_setopt(multi_.get(), CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_.get(), CURLMOPT_TIMERFUNCTION, &Impl::OnCurlTimer);
    curl_multi_setopt(multi_.get(), CURLMOPT_TIMERDATA, this);
    hub_thread_ = std::thread([this] { Run(); });
    size_t workers = options_.relist_threads == 0 ? 1 : options_.relist_threads;
    for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { RelistWorker(); });
  }

  ~Impl() {
    Shutdown();
    multi_.reset();  // its cleanup may still report sockets to epoll
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  Result<WatchId> Watch(std::shared_ptr<ClusterClient> client, WatchSpec spec,
                        WatchCallback callback) {
    if (!client) return Invalid("watch: no client");
    if (!callback) return Invalid("watch: no callback");
    ECO_ASSIGN_OR_RETURN(ResourceInfo info, client->ResolveKind(spec.api_version, spec.kind));
    auto s = std::make_shared<State>(client->rest_config());
    // Proxied clusters keep libcurl, which speaks proxies.
    const HttpTransport transport = client->options().transport;
    // A client on HTTP/2 carries the watch on its connection.
    s->h2 = client->h2_session();
    s->lean = transport == HttpTransport::kDirect ||
              (transport == HttpTransport::kAuto &&
               !ProxyApplies(client->rest_config().server, [](const char* n) { return getenv(n); }));
    if (s->lean) {
      ECO_ASSIGN_OR_RETURN(Endpoint ep, ParseServer(client->rest_config().server));
      s->ep = std::move(ep);
      s->verify_name = client->rest_config().tls_server_name.empty()
                           ? s->ep.host
                           : client->rest_config().tls_server_name;
    }
    s->client = std::move(client);
    s->info = std::move(info);
    s->spec = std::move(spec);
    s->cb = std::move(callback);
    s->rv = ResourceVersionTracker(s->spec.resource_version);
    {
      std::lock_guard<std::mutex> lock(reg_mu_);
      if (shut_down_) return Unavailable("watch hub is shut down");
      s->id = next_id_++;
      registry_[s->id] = s;
    }
    Post([this, s] { Start(s); });
    return s->id;
  }

  void Cancel(WatchId id) {
    std::shared_ptr<State> s;
    {
      std::lock_guard<std::mutex> lock(reg_mu_);
      auto it = registry_.find(id);
      if (it == registry_.end()) return;
      s = std::move(it->second);
      registry_.erase(it);
    }
    s->cancel_flag = true;
    {
      // Waits for a callback in flight on another thread.
      std::lock_guard<std::recursive_mutex> lock(s->cb_mu);
      s->cancelled = true;
    }
    Post([this, s] { Remove(s); });
  }

  void Shutdown() {
    std::map<WatchId, std::shared_ptr<State>> all;
    {
      std::lock_guard<std::mutex> lock(reg_mu_);
      if (shut_down_) return;
      shut_down_ = true;
      all.swap(registry_);
    }
    {
      std::lock_guard<std::mutex> lock(hub_ref_->mu);
      hub_ref_->hub = nullptr;  // HTTP/2 sinks post nothing more
    }
    for (auto& [id, s] : all) {
      s->cancel_flag = true;
      std::lock_guard<std::recursive_mutex> lock(s->cb_mu);
      s->cancelled = true;
    }
    stop_ = true;
    WakeHub();
    if (hub_thread_.joinable()) hub_thread_.join();
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      workers_stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  size_t active_watches() const {
    std::lock_guard<std::mutex> lock(reg_mu_);
    return registry_.size();
  }

 private:
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

  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(cmd_mu_);
      commands_.push_back(std::move(fn));
    }
    WakeHub();
  }

  void WakeHub() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof one);
    (void)n;  // EAGAIN: a wake-up is pending already
  }

  static void ReportConnected(State& s) {
    if (!s.spec.report_connected) return;
    WatchEvent e;
    e.type = WatchEventType::kConnected;
    Deliver(s, e);
  }

  static void Deliver(State& s, const WatchEvent& e) {
    std::lock_guard<std::recursive_mutex> lock(s.cb_mu);
    if (s.cancelled) return;
    s.cb(e);
  }

  // --- relist workers ---

  void RelistWorker() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(work_mu_);
        work_cv_.wait(lock, [&] { return workers_stop_ || !jobs_.empty(); });
        if (workers_stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::shared_ptr<State> s = std::move(job.state);
      if (s->cancel_flag) continue;
      if (job.kind == JobKind::kResolve) {
        auto addresses = std::make_shared<Result<std::vector<SocketAddress>>>(ResolveEndpoint(s->ep));
        const uint64_t seq = job.seq;
        Post([this, s, seq, addresses] {
          if (s->stream_seq == seq && s->lean_active) ConnectLean(*s, std::move(*addresses));
        });
        continue;
      }
      ListOptions lo;
      lo.label_selector = s->spec.label_selector;
      lo.field_selector = s->spec.field_selector;
      lo.slim = s->spec.slim;
      Result<ObjectList> list =
          s->client->List(s->info.api_version(), s->info.kind, s->spec.ns, lo);
      WatchEvent e;
      if (list.ok()) {
        e.type = WatchEventType::kResync;
        e.items = std::move(list->items);
        e.resource_version = list->resource_version;
      } else {
        e.type = WatchEventType::kError;
        e.error = list.status().Annotate("relist " + s->info.kind);
      }
      Deliver(*s, e);
      bool ok = list.ok();
      std::string rv = e.resource_version;
      Post([this, s, ok, rv] { OnRelisted(s, ok, rv); });
    }
  }

  // --- hub thread ---

  void Run() {
    std::vector<epoll_event> events(512);
    while (!stop_) {
      std::deque<std::function<void()>> cmds;
      {
        std::lock_guard<std::mutex> lock(cmd_mu_);
        cmds.swap(commands_);
      }
      for (auto& fn : cmds) fn();
      FireTimers();
      if (curl_timer_set_ && Now() >= curl_deadline_) {
        curl_timer_set_ = false;
        int running = 0;
        curl_multi_socket_action(multi_.get(), CURL_SOCKET_TIMEOUT, 0, &running);
      }
      DrainDone();
      long timeout_ms = 1000;
      auto until = [this](Clock::Time at) {
        auto d = std::chrono::duration_cast<std::chrono::milliseconds>(at - Now()).count();
        return d < 0 ? 0L : static_cast<long>(d);
      };
      if (curl_timer_set_) timeout_ms = std::min(timeout_ms, until(curl_deadline_));
      if (!timers_.empty()) timeout_ms = std::min(timeout_ms, until(timers_.top().at));
      {
        std::lock_guard<std::mutex> lock(cmd_mu_);
        if (!commands_.empty()) timeout_ms = 0;
      }
      int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                         static_cast<int>(timeout_ms));
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag & 1) {
          OnStreamReady(tag >> 1);
          continue;
        }
        const int fd = static_cast<int>(tag >> 1);
        if (fd == wake_fd_) {
          uint64_t count = 0;
          ssize_t r = read(wake_fd_, &count, sizeof count);
          (void)r;
          continue;
        }
        int flags = 0;
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) flags |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
        if (events[i].events & EPOLLERR) flags |= CURL_CSELECT_ERR;
        int running = 0;
        curl_multi_socket_action(multi_.get(), fd, flags, &running);
      }
      DrainDone();
    }
    // Handles leave the multi before it is destroyed.
    for (auto& [id, s] : active_) {
      if (s->in_multi) curl_multi_remove_handle(multi_.get(), s->easy.get());
      s->in_multi = false;
      CloseH2(*s);
    }
    active_.clear();
  }

  // Finished transfers (a stream ended or failed).
  void DrainDone() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_.get(), &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      State* raw = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &raw);
      CURLcode rc = msg->data.result;
      if (raw != nullptr) OnDone(*raw, rc);
    }
  }

  // libcurl's socket callback (hub thread): what to wait for on `s`.
  static int OnSocket(CURL*, curl_socket_t s, int what, void* user, void*) {
    auto* self = static_cast<Impl*>(user);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, s, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.data.u64 = CurlTag(s);
    if (what & CURL_POLL_IN) ev.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) ev.events |= EPOLLOUT;
    // A descriptor number libcurl reuses after a close is new to epoll.
    if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, s, &ev);
    }
    return 0;
  }

  // libcurl's timer callback (hub thread): when to call it back without I/O.
  static int OnCurlTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<Impl*>(user);
    self->curl_timer_set_ = timeout_ms >= 0;
    if (timeout_ms >= 0) self->curl_deadline_ = self->Now() + std::chrono::milliseconds(timeout_ms);
    return 0;
  }

  void Start(const std::shared_ptr<State>& s) {
    if (s->cancel_flag) return;
    active_[s->id] = s;
    if (s->rv.resource_version().empty()) {
      Relist(*s);
    } else {
      StartStream(*s);
    }
  }

  void Remove(const std::shared_ptr<State>& s) {
    if (s->in_multi) curl_multi_remove_handle(multi_.get(), s->easy.get());
    s->in_multi = false;
    s->stream.reset();
    s->lean_active = false;
    CloseH2(*s);
    active_.erase(s->id);
  }

  void Relist(State& s) {
    ++s.timer_seq;  // any pending timer is stale now
    auto it = active_.find(s.id);
    if (it == active_.end()) return;
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      jobs_.push_back(Job{it->second, JobKind::kRelist, 0});
    }
    work_cv_.notify_one();
  }

  void OnRelisted(const std::shared_ptr<State>& s, bool ok, const std::string& rv) {
    if (s->cancel_flag || active_.find(s->id) == active_.end()) return;
    if (ok) {
      s->failures = 0;
      WatchEvent marker;
      marker.type = WatchEventType::kResync;
      marker.resource_version = rv;
      s->rv.Observe(marker);
      StartStream(*s);
    } else {
      ++s->failures;
      Schedule(*s, Backoff(s->failures), TimerKind::kRelist);
    }
  }

  std::chrono::milliseconds Backoff(int failures) {
    auto d = options_.min_backoff;
    for (int i = 1; i < failures && d < options_.max_backoff; ++i) d *= 2;
    if (d > options_.max_backoff) d = options_.max_backoff;
    // Jitter in [d/2, d] so thousands of watches do not reconnect in step.
    std::uniform_int_distribution<int64_t> dist(d.count() / 2, d.count());
    return std::chrono::milliseconds(dist(rng_));
  }

  void Schedule(State& s, std::chrono::milliseconds delay, TimerKind kind) {
    timers_.push(Timer{Now() + delay, s.id, ++s.timer_seq, kind});
  }

  void FireTimers() {
    const auto now = Now();
    while (!timers_.empty() && timers_.top().at <= now) {
      Timer t = timers_.top();
      timers_.pop();
      auto it = active_.find(t.id);
      if (it == active_.end()) continue;
      State& s = *it->second;
      const bool guards_stream =
          t.kind == TimerKind::kHeaderDeadline || t.kind == TimerKind::kStreamDeadline;
      if (t.seq != (guards_stream ? s.stream_seq : s.timer_seq)) continue;
      switch (t.kind) {
        case TimerKind::kStream:
          StartStream(s);
          break;
        case TimerKind::kRelist:
          Relist(s);
          break;
        case TimerKind::kHeaderDeadline:
          if (s.h2_active && !s.got_headers) {
            if (s.h2_conn) s.h2_conn->CheckAlive();  // a dead link fails every stream on it
            CloseH2(s);
            Failed(s, Unavailable("watch: no response within " +
                                  std::to_string(s.client->options().request_timeout.count()) + "ms"));
          } else if (s.lean_active && !s.got_headers) {
            CloseLean(s);
            Failed(s, Unavailable("watch: no response within " +
                                  std::to_string(s.client->options().request_timeout.count()) + "ms"));
          } else if (s.in_multi && !s.got_headers) {
            curl_multi_remove_handle(multi_.get(), s.easy.get());
            s.in_multi = false;
            Failed(s,
                   Unavailable("watch: no response within " +
                               std::to_string(s.client->options().request_timeout.count()) + "ms"));
          }
          break;
        case TimerKind::kStreamDeadline:
          if (s.h2_active || s.lean_active) {
            CloseLean(s);
            CloseH2(s);
            Failed(s, Unavailable("watch " + s.info.kind + ": the server did not end the stream within " +
                                  std::to_string(s.spec.server_timeout.count()) + "s"));
          }
          break;
      }
    }
  }

  // The watch request's path and query.
  std::string WatchPath(const State& s) const {
    std::string path = ResourcePath(s.info, s.spec.ns, "");
    AddQuery(path, "watch", "1");
    AddQuery(path, "allowWatchBookmarks", "true");
    AddQuery(path, "timeoutSeconds", std::to_string(s.spec.server_timeout.count()));
    if (!s.rv.resource_version().empty()) {
      AddQuery(path, "resourceVersion", s.rv.resource_version());
    }
    if (!s.spec.label_selector.empty()) AddQuery(path, "labelSelector", s.spec.label_selector);
    if (!s.spec.field_selector.empty()) AddQuery(path, "fieldSelector", s.spec.field_selector);
    return path;
  }

  void ResetStreamState(State& s) {
    s.lines = LineSplitter();
    s.error_body.clear();
    s.stream_error = Status::Ok();
    s.http_code = 0;
    s.got_headers = false;
    s.relist_needed = false;
    s.saw_event = false;
    s.started = Now();
    ++s.stream_seq;
  }

  void StartStream(State& s) {
    if (s.cancel_flag) return;
    if (s.h2 && s.h2->protocol() != H2Session::Protocol::kHttp1) {
      StartH2(s);
      return;
    }
    if (s.lean) {
      StartLean(s);
      return;
    }
    const RestConfig& config = s.client->rest_config();
    const ClientOptions& copts = s.client->options();
    if (!s.easy) {
      s.easy.reset(curl_easy_init());
      Status st =
          s.easy ? ConfigureHandle(s.easy.get(), config, copts) : Internal("curl_easy_init failed");
      if (!st.ok()) {
        s.easy.reset();
        Failed(s, st);
        return;
      }
    }
    Result<CurlSlist> headers = RequestHeaders(s.tokens, "", "application/json");
    if (!headers.ok()) {
      Failed(s, headers.status());
      return;
    }
    s.headers = std::move(*headers);
    s.url = config.server + WatchPath(s);

    CURL* h = s.easy.get();
    curl_easy_setopt(h, CURLOPT_URL, s.url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, s.headers.get());
    // A stream per cluster and kind: at ten thousand clusters libcurl's
    // default 16 KB receive buffer per stream is most of eco's memory.
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 4096L);
    // Uncompressed: a compressing server may hold events back in its buffer.
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, nullptr);
    // A stream holds its connection for minutes; looking for an idle one to
    // reuse walks every connection to the same server (all clusters of a
    // kube-sim, for one), once per stream start.
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(h, CURLOPT_PRIVATE, &s);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Impl::OnData);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Impl::OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
    // The server ends the stream at timeoutSeconds; this is the backstop
    // for a server that never does.
    auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(s.spec.server_timeout) +
                 copts.request_timeout;
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(limit.count()));

    ResetStreamState(s);
    if (curl_multi_add_handle(multi_.get(), h) != CURLM_OK) {
      Failed(s, Internal("watch: cannot add a stream to the hub"));
      return;
    }
    s.in_multi = true;
    timers_.push(Timer{Now() + copts.request_timeout, s.id, s.stream_seq,
                       TimerKind::kHeaderDeadline});
  }

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
      Send([id = id_, seq = seq_, data = std::string(bytes)](Impl& hub) { hub.OnH2Data(id, seq, data); });
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

  void StartH2(State& s) {
    ResetStreamState(s);
    s.h2_active = true;
    const ClientOptions& copts = s.client->options();
    const auto now = Now();
    timers_.push(Timer{now + copts.request_timeout, s.id, s.stream_seq, TimerKind::kHeaderDeadline});
    timers_.push(Timer{now + s.spec.server_timeout + copts.request_timeout, s.id, s.stream_seq,
                       TimerKind::kStreamDeadline});
    // Uncompressed: a compressing server may hold events back in its buffer.
    Result<H2Request> request = s.h2->MakeRequest("GET", WatchPath(s), "", "", /*gzip=*/false);
    if (!request.ok()) {
      s.h2_active = false;
      Failed(s, request.status().Annotate("watch " + s.info.kind));
      return;
    }
    auto sink = std::make_shared<H2WatchSink>(hub_ref_, s.id, s.stream_seq);
    auto [conn, handle] = s.h2->Open(std::move(*request), std::move(sink));
    s.h2_conn = std::move(conn);
    s.h2_handle = handle;
  }

  void CloseH2(State& s) {
    if (s.h2_active && s.h2_conn) s.h2_conn->Cancel(s.h2_handle);
    s.h2_conn.reset();
    s.h2_active = false;
  }

  // The open HTTP/2 stream `seq` of watch `id`, or null (ended, replaced).
  State* H2Stream(WatchId id, uint64_t seq) {
    auto it = active_.find(id);
    if (it == active_.end()) return nullptr;
    State& s = *it->second;
    return s.h2_active && s.stream_seq == seq && !s.cancel_flag ? &s : nullptr;
  }

  void OnH2Response(WatchId id, uint64_t seq, int status) {
    State* s = H2Stream(id, seq);
    if (s == nullptr) return;
    s->http_code = status;
    s->got_headers = true;
    if (status == 200) ReportConnected(*s);
  }

  void OnH2Data(WatchId id, uint64_t seq, const std::string& data) {
    State* s = H2Stream(id, seq);
    if (s == nullptr) return;
    if (s->http_code != 200) {
      size_t room = kMaxWatchErrorBody - std::min(kMaxWatchErrorBody, s->error_body.size());
      s->error_body.append(data, 0, std::min(room, data.size()));
      return;
    }
    if (FeedBody(*s, data)) return;
    // Expired (relist), a line that is no event, or cancelled.
    CloseH2(*s);
    if (s->cancel_flag) return;
    if (s->relist_needed) {
      s->relist_needed = false;
      Relist(*s);
      return;
    }
    const std::string what = "watch " + s->info.kind;
    Failed(*s, s->stream_error.ok() ? Internal(what + ": stopped") : s->stream_error.Annotate(what));
  }

  void OnH2End(WatchId id, uint64_t seq, const H2End& end) {
    State* s = H2Stream(id, seq);
    if (s == nullptr) return;
    s->h2_active = false;
    s->h2_conn.reset();
    if (end.kind == H2End::kNoH2) {  // the session is on HTTP/1.1 now
      StartStream(*s);
      return;
    }
    if (end.kind == H2End::kUnprocessed) {
      // The server never saw it (GOAWAY, a refused stream): again on a new
      // connection, not an error; backoff only if it keeps happening.
      StreamEnded(*s);
      return;
    }
    if (s->relist_needed || s->http_code == 410) {
      s->relist_needed = false;
      Relist(*s);
      return;
    }
    const std::string what = "watch " + s->info.kind;
    if (end.kind == H2End::kComplete && s->http_code == 200) {
      StreamEnded(*s);
    } else if (end.kind == H2End::kComplete) {
      Failed(*s, StatusFromHttp(s->http_code, s->error_body, "").Annotate(what));
    } else {
      Failed(*s, end.status.Annotate(what));
    }
  }

  // --- lean streams (watch_stream.h) ---

  void StartLean(State& s) {
    ResetStreamState(s);
    s.lean_active = true;
    const ClientOptions& copts = s.client->options();
    const auto now = Now();
    timers_.push(Timer{now + copts.request_timeout, s.id, s.stream_seq, TimerKind::kHeaderDeadline});
    // The server ends the stream at timeoutSeconds; this is the backstop
    // for a server that never does.
    timers_.push(Timer{now + s.spec.server_timeout + copts.request_timeout, s.id, s.stream_seq,
                       TimerKind::kStreamDeadline});
    if (IsIpAddress(s.ep.host)) {
      ConnectLean(s, ResolveEndpoint(s.ep));
      return;
    }
    auto it = active_.find(s.id);
    if (it == active_.end()) return;
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      jobs_.push_back(Job{it->second, JobKind::kResolve, s.stream_seq});
    }
    work_cv_.notify_one();
  }

  void ConnectLean(State& s, Result<std::vector<SocketAddress>> addresses) {
    const std::string what = "watch " + s.info.kind;
    if (!addresses.ok()) return LeanFailed(s, addresses.status().Annotate(what));
    const RestConfig& config = s.client->rest_config();
    if (s.ep.tls && !s.tls) {
      Result<SslCtx> ctx = SharedContext(config);
      if (!ctx.ok()) return LeanFailed(s, ctx.status().Annotate(what));
      s.tls = std::move(*ctx);
    }
    Result<std::string> token = s.tokens.Get();
    if (!token.ok()) return LeanFailed(s, token.status().Annotate(what));
    if (token->find_first_of("\r\n") != std::string::npos) {
      return LeanFailed(s, Invalid("the bearer token contains a line break"));
    }
    std::string request = "GET " + s.ep.prefix + WatchPath(s) + " HTTP/1.1\r\nHost: " + s.ep.authority;
    request.append("\r\nUser-Agent: ").append(s.client->options().user_agent);
    request.append("\r\nAccept: application/json");
    if (!token->empty()) request.append("\r\nAuthorization: Bearer ").append(*token);
    request.append("\r\n\r\n");
    WatchStream::Target target;
    target.addresses = std::move(*addresses);
    target.where = s.ep.host + ":" + s.ep.port;
    if (s.ep.tls) {
      target.tls = s.tls;
      target.verify_name = s.verify_name;
      target.insecure = config.insecure_skip_tls_verify;
    }
    s.stream = std::make_unique<WatchStream>(std::move(target), std::move(request));
    Arm(s, s.stream->Start());
  }

  // Waits for what the stream wants next, or finishes it.
  void Arm(State& s, WatchStream::Want want) {
    if (want == WatchStream::Want::kDone) {
      OnLeanDone(s);
      return;
    }
    epoll_event ev{};
    ev.events = (want == WatchStream::Want::kRead ? EPOLLIN : EPOLLOUT) | EPOLLRDHUP;
    ev.data.u64 = StreamTag(s.id);
    const int fd = s.stream->fd();
    // A stream's socket is closed when it ends, which takes it out of epoll;
    // a new one (another address, the next stream) is added.
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void OnStreamReady(WatchId id) {
    auto it = active_.find(id);
    if (it == active_.end() || !it->second->stream) return;
    State& s = *it->second;
    LeanSink sink(*this, s);
    Arm(s, s.stream->OnReady(sink, scratch_));
  }

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

  void CloseLean(State& s) {
    s.stream.reset();
    s.lean_active = false;
  }

  void LeanFailed(State& s, const Status& why) {
    CloseLean(s);
    Failed(s, why);
  }

  void OnLeanDone(State& s) {
    std::unique_ptr<WatchStream> done = std::move(s.stream);
    s.lean_active = false;
    if (s.cancel_flag) return;
    if (s.relist_needed || done->code() == 410) {
      s.relist_needed = false;
      Relist(s);
      return;
    }
    const std::string what = "watch " + s.info.kind;
    if (done->aborted()) {  // the body did not parse
      Failed(s, s.stream_error.ok() ? Internal(what + ": stopped") : s.stream_error.Annotate(what));
      return;
    }
    if (done->complete() && done->code() == 200) {
      StreamEnded(s);
      return;
    }
    Failed(s, done->complete() ? StatusFromHttp(done->code(), done->error_body(), "").Annotate(what)
                               : done->failure().Annotate(what));
  }

  // A 200 stream ended as it should: again at once if it was healthy.
  void StreamEnded(State& s) {
    if (!s.stream_error.ok()) {
      Failed(s, s.stream_error);
    } else if (s.saw_event || Now() - s.started >= kHealthyStream) {
      s.failures = 0;
      StartStream(s);
    } else {
      ++s.failures;
      Schedule(s, Backoff(s.failures), TimerKind::kStream);
    }
  }

  // A stream failed: tell the receiver, reconnect after backoff.
  void Failed(State& s, const Status& why) {
    WatchEvent e;
    e.type = WatchEventType::kError;
    e.error = why;
    Deliver(s, e);
    ++s.failures;
    Schedule(s, Backoff(s.failures), TimerKind::kStream);
  }

  void OnDone(State& s, CURLcode rc) {
    curl_multi_remove_handle(multi_.get(), s.easy.get());
    s.in_multi = false;
    if (s.cancel_flag) return;
    long code = 0;
    curl_easy_getinfo(s.easy.get(), CURLINFO_RESPONSE_CODE, &code);
    if (s.relist_needed || code == 410) {
      s.relist_needed = false;
      Relist(s);
      return;
    }
    if (rc == CURLE_OK && code == 200) {
      StreamEnded(s);
      return;
    }
    Status why = rc != CURLE_OK
                     ? StatusFromCurl(rc, "watch " + s.info.kind)
                     : StatusFromHttp(code, s.error_body, "").Annotate("watch " + s.info.kind);
    Failed(s, why);
  }

  static size_t OnHeader(char* data, size_t size, size_t n, void* user) {
    auto* s = static_cast<State*>(user);
    std::string_view line(data, size * n);
    if (line == "\r\n" || line == "\n") {
      curl_easy_getinfo(s->easy.get(), CURLINFO_RESPONSE_CODE, &s->http_code);
      // An interim 1xx is followed by the real head.
      if (s->http_code >= 200) s->got_headers = true;
      if (s->http_code == 200) ReportConnected(*s);
    }
    return size * n;
  }

  static size_t OnData(char* data, size_t size, size_t n, void* user) {
    auto* s = static_cast<State*>(user);
    const size_t len = size * n;
    if (s->cancel_flag) return 0;  // aborts the transfer
    if (s->http_code != 200) {
      if (s->error_body.size() < kMaxWatchErrorBody) s->error_body.append(data, len);
      return len;
    }
    return FeedBody(*s, std::string_view(data, len)) ? len : 0;
  }

  // A piece of a 200 stream: events to the callback. False stops the stream
  // (cancelled, a line that is no event, or the version expired).
  static bool FeedBody(State& s, std::string_view bytes) {
    if (s.cancel_flag) return false;
    bool abort = false;
    s.lines.Feed(bytes, [&s, &abort](std::string_view line) {
      if (abort) return;
      Result<WatchEvent> e = ParseWatchLine(line, s.spec.slim);
      if (!e.ok()) {
        s.stream_error = e.status();
        abort = true;
        return;
      }
      if (e->type == WatchEventType::kError) {
        if (e->expired) {
          s.relist_needed = true;
          abort = true;
        } else {
          s.stream_error = e->error;
        }
        return;
      }
      s.rv.Observe(*e);
      s.saw_event = true;
      Deliver(s, *e);
    });
    return !abort;
  }

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
  std::deque<Job> jobs_;  // guarded by work_mu_
  bool workers_stop_ = false;                   // guarded by work_mu_

  std::atomic<bool> stop_{false};
  std::thread hub_thread_;
  std::vector<std::thread> workers_;
};

WatchHub::WatchHub(WatchHubOptions options) : impl_(std::make_unique<Impl>(options)) {}
WatchHub::~WatchHub() { impl_->Shutdown(); }

Result<WatchId> WatchHub::Watch(std::shared_ptr<ClusterClient> client, WatchSpec spec,
                                WatchCallback callback) {
  return impl_->Watch(std::move(client), std::move(spec), std::move(callback));
}
void WatchHub::Cancel(WatchId id) { impl_->Cancel(id); }
void WatchHub::Shutdown() { impl_->Shutdown(); }
size_t WatchHub::active_watches() const { return impl_->active_watches(); }

}  // namespace eco::k8s
