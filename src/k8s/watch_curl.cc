// WatchHub's libcurl streams: clusters behind a proxy (libcurl speaks it).
#include <sys/epoll.h>

#include <cerrno>

#include "k8s/errors.h"
#include "k8s/watch_hub.h"

namespace eco::k8s {

void WatchHub::Impl::DrainDone() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_.get(), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    State* raw = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &raw);
    CURLcode rc = msg->data.result;
    if (raw != nullptr) OnDone(*raw, rc);
  }
}

int WatchHub::Impl::OnSocket(CURL*, curl_socket_t s, int what, void* user, void*) {
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

int WatchHub::Impl::OnCurlTimer(CURLM*, long timeout_ms, void* user) {
  auto* self = static_cast<Impl*>(user);
  self->curl_timer_set_ = timeout_ms >= 0;
  if (timeout_ms >= 0) self->curl_deadline_ = self->Now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

void WatchHub::Impl::StartCurl(State& s) {
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
  timers_.push(
      Timer{Now() + copts.request_timeout, s.id, s.stream_seq, TimerKind::kHeaderDeadline});
}

void WatchHub::Impl::OnDone(State& s, CURLcode rc) {
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

size_t WatchHub::Impl::OnHeader(char* data, size_t size, size_t n, void* user) {
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

size_t WatchHub::Impl::OnData(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<State*>(user);
  const size_t len = size * n;
  if (s->cancel_flag) return 0;  // aborts the transfer
  if (s->http_code != 200) {
    if (s->error_body.size() < kMaxWatchErrorBody) s->error_body.append(data, len);
    return len;
  }
  return FeedBody(*s, std::string_view(data, len)) ? len : 0;
}

}  // namespace eco::k8s
