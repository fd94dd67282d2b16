#include "k8s/watch.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "k8s/errors.h"
#include "k8s/paths.h"
#include "k8s/watch_hub.h"

namespace eco::k8s {

WatchHub::Impl::Impl(WatchHubOptions options) : options_(options), rng_(options.seed) {
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

WatchHub::Impl::~Impl() {
  Shutdown();
  multi_.reset();  // its cleanup may still report sockets to epoll
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Result<WatchId> WatchHub::Impl::Watch(std::shared_ptr<ClusterClient> client, WatchSpec spec,
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

void WatchHub::Impl::Cancel(WatchId id) {
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

void WatchHub::Impl::Shutdown() {
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

size_t WatchHub::Impl::active_watches() const {
  std::lock_guard<std::mutex> lock(reg_mu_);
  return registry_.size();
}

void WatchHub::Impl::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(cmd_mu_);
    commands_.push_back(std::move(fn));
  }
  WakeHub();
}

void WatchHub::Impl::WakeHub() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;  // EAGAIN: a wake-up is pending already
}

void WatchHub::Impl::ReportConnected(State& s) {
  if (!s.spec.report_connected) return;
  WatchEvent e;
  e.type = WatchEventType::kConnected;
  Deliver(s, e);
}

void WatchHub::Impl::Deliver(State& s, const WatchEvent& e) {
  std::lock_guard<std::recursive_mutex> lock(s.cb_mu);
  if (s.cancelled) return;
  s.cb(e);
}

void WatchHub::Impl::RelistWorker() {
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
    Result<ObjectList> list = s->client->List(s->info.api_version(), s->info.kind, s->spec.ns, lo);
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

void WatchHub::Impl::Run() {
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

void WatchHub::Impl::Start(const std::shared_ptr<State>& s) {
  if (s->cancel_flag) return;
  active_[s->id] = s;
  if (s->rv.resource_version().empty()) {
    Relist(*s);
  } else {
    StartStream(*s);
  }
}

void WatchHub::Impl::Remove(const std::shared_ptr<State>& s) {
  if (s->in_multi) curl_multi_remove_handle(multi_.get(), s->easy.get());
  s->in_multi = false;
  s->stream.reset();
  s->lean_active = false;
  CloseH2(*s);
  active_.erase(s->id);
}

void WatchHub::Impl::Relist(State& s) {
  ++s.timer_seq;  // any pending timer is stale now
  auto it = active_.find(s.id);
  if (it == active_.end()) return;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    jobs_.push_back(Job{it->second, JobKind::kRelist, 0});
  }
  work_cv_.notify_one();
}

void WatchHub::Impl::OnRelisted(const std::shared_ptr<State>& s, bool ok, const std::string& rv) {
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

std::chrono::milliseconds WatchHub::Impl::Backoff(int failures) {
  auto d = options_.min_backoff;
  for (int i = 1; i < failures && d < options_.max_backoff; ++i) d *= 2;
  if (d > options_.max_backoff) d = options_.max_backoff;
  // Jitter in [d/2, d] so thousands of watches do not reconnect in step.
  std::uniform_int_distribution<int64_t> dist(d.count() / 2, d.count());
  return std::chrono::milliseconds(dist(rng_));
}

void WatchHub::Impl::Schedule(State& s, std::chrono::milliseconds delay, TimerKind kind) {
  timers_.push(Timer{Now() + delay, s.id, ++s.timer_seq, kind});
}

void WatchHub::Impl::FireTimers() {
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
          Failed(s,
                 Unavailable("watch: no response within " +
                             std::to_string(s.client->options().request_timeout.count()) + "ms"));
        } else if (s.lean_active && !s.got_headers) {
          CloseLean(s);
          Failed(s,
                 Unavailable("watch: no response within " +
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
          Failed(s, Unavailable("watch " + s.info.kind +
                                ": the server did not end the stream within " +
                                std::to_string(s.spec.server_timeout.count()) + "s"));
        }
        break;
    }
  }
}

std::string WatchHub::Impl::WatchPath(const State& s) const {
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

void WatchHub::Impl::ResetStreamState(State& s) {
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

void WatchHub::Impl::StartStream(State& s) {
  if (s.cancel_flag) return;
  if (s.h2 && s.h2->protocol() != H2Session::Protocol::kHttp1) {
    StartH2(s);
    return;
  }
  if (s.lean) {
    StartLean(s);
    return;
  }
  StartCurl(s);
}

void WatchHub::Impl::StreamEnded(State& s) {
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

void WatchHub::Impl::Failed(State& s, const Status& why) {
  WatchEvent e;
  e.type = WatchEventType::kError;
  e.error = why;
  Deliver(s, e);
  ++s.failures;
  Schedule(s, Backoff(s.failures), TimerKind::kStream);
}

bool WatchHub::Impl::FeedBody(State& s, std::string_view bytes) {
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
