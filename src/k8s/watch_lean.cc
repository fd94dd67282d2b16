// WatchHub's lean streams: HTTP/1.1 on a socket of their own (watch_stream.h).
#include <sys/epoll.h>

#include <cerrno>

#include "k8s/errors.h"
#include "k8s/watch_hub.h"

namespace eco::k8s {

void WatchHub::Impl::StartLean(State& s) {
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

void WatchHub::Impl::ConnectLean(State& s, Result<std::vector<SocketAddress>> addresses) {
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
  std::string request =
      "GET " + s.ep.prefix + WatchPath(s) + " HTTP/1.1\r\nHost: " + s.ep.authority;
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

void WatchHub::Impl::Arm(State& s, WatchStream::Want want) {
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

void WatchHub::Impl::OnStreamReady(WatchId id) {
  auto it = active_.find(id);
  if (it == active_.end() || !it->second->stream) return;
  State& s = *it->second;
  LeanSink sink(*this, s);
  Arm(s, s.stream->OnReady(sink, scratch_));
}

void WatchHub::Impl::CloseLean(State& s) {
  s.stream.reset();
  s.lean_active = false;
}

void WatchHub::Impl::LeanFailed(State& s, const Status& why) {
  CloseLean(s);
  Failed(s, why);
}

void WatchHub::Impl::OnLeanDone(State& s) {
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

}  // namespace eco::k8s
