// WatchHub's HTTP/2 streams: watches on the client's one connection.
#include <algorithm>

#include "k8s/errors.h"
#include "k8s/watch_hub.h"

namespace eco::k8s {

void WatchHub::Impl::StartH2(State& s) {
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

void WatchHub::Impl::CloseH2(State& s) {
  if (s.h2_active && s.h2_conn) s.h2_conn->Cancel(s.h2_handle);
  s.h2_conn.reset();
  s.h2_active = false;
}

WatchHub::Impl::State* WatchHub::Impl::H2Stream(WatchId id, uint64_t seq) {
  auto it = active_.find(id);
  if (it == active_.end()) return nullptr;
  State& s = *it->second;
  return s.h2_active && s.stream_seq == seq && !s.cancel_flag ? &s : nullptr;
}

void WatchHub::Impl::OnH2Response(WatchId id, uint64_t seq, int status) {
  State* s = H2Stream(id, seq);
  if (s == nullptr) return;
  s->http_code = status;
  s->got_headers = true;
  if (status == 200) ReportConnected(*s);
}

void WatchHub::Impl::OnH2Data(WatchId id, uint64_t seq, const std::string& data) {
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

void WatchHub::Impl::OnH2End(WatchId id, uint64_t seq, const H2End& end) {
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

}  // namespace eco::k8s
