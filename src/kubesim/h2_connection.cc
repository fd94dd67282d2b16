// kube-sim's HTTP/2 connections on asio: reads go to the nghttp2 session,
// its output goes out with async_write, one write at a time, all on the
// connection's strand. Faults apply per stream, except `down`, which resets
// the connection as a whole (see server.h).
#include "kubesim/h2_connection.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kubesim/h2_session.h"
#include "kubesim/server_internal.h"

namespace eco::kubesim::internal {

namespace {

namespace asio = boost::asio;
using ErrorCode = boost::system::error_code;

constexpr std::size_t kReadSize = 16 * 1024;
constexpr std::size_t kWriteBatch = 64 * 1024;  // frames gathered into one write

class H2Connection final : public SessionBase, public H2Session::Host {
 public:
  H2Connection(Core* core, TlsSocket stream) : core_(core), stream_(std::move(stream)) {}

  ~H2Connection() override {
    ReleaseAll();
    core_->registry.Remove(id_);
    core_->stats.h2_connections.fetch_sub(1, std::memory_order_relaxed);
    core_->stats.connections.fetch_sub(1, std::memory_order_relaxed);
  }

  void Start() {
    core_->stats.connections.fetch_add(1, std::memory_order_relaxed);
    core_->stats.h2_connections.fetch_add(1, std::memory_order_relaxed);
    id_ = core_->registry.Add(weak_from_this());
    h2_ = H2Session::Create(this, H2Settings{}, core_->options.body_limit);
    if (!h2_) return CloseNow(false);
    DoRead();
    Flush();  // the SETTINGS
  }

  // ---- SessionBase: from streams, fault changes and Stop

  void PostChunk(int32_t stream, std::string data) override {
    asio::post(stream_.get_executor(), [self = Self(), stream, d = std::move(data)]() mutable {
      if (self->closed_) return;
      self->h2_->Append(stream, std::move(d));
      self->Flush();
    });
  }
  void PostEndStream(int32_t stream) override {
    asio::post(stream_.get_executor(), [self = Self(), stream] {
      if (self->closed_) return;
      self->h2_->End(stream);
      self->Flush();
    });
  }
  // Cuts off the one stream whose peer does not read; the others go on.
  void PostReset(int32_t stream) override {
    asio::post(stream_.get_executor(), [self = Self(), stream] {
      if (self->closed_) return;
      self->core_->stats.resets.fetch_add(1, std::memory_order_relaxed);
      self->h2_->Reset(stream, NGHTTP2_INTERNAL_ERROR);
      self->Flush();
    });
  }
  void PostFault(std::string cluster, FaultEvent event) override {
    asio::post(stream_.get_executor(), [self = Self(), c = std::move(cluster), event] {
      if (self->closed_ || self->carried_.count(c) == 0) return;
      // Down: the connection goes, as a real cluster's would, with every
      // other cluster it carried. Up: the streams hung on it are let go.
      if (event == FaultEvent::kDown) return self->CloseNow(true);
      for (auto& [id, st] : self->streams_) {
        if (!st.hung || st.cluster != c) continue;
        self->core_->stats.resets.fetch_add(1, std::memory_order_relaxed);
        self->h2_->Reset(id, NGHTTP2_INTERNAL_ERROR);
      }
      self->Flush();
    });
  }
  void CloseForStop() override { CloseNow(false); }

  // ---- H2Session::Host: from inside Receive/Send

  void OnRequest(int32_t id, HttpRequest raw) override {
    if (closed_) return;
    core_->stats.requests.fetch_add(1, std::memory_order_relaxed);
    HttpRequest req;
    req.method = std::move(raw.method);
    req.headers = std::move(raw.headers);
    req.body = std::move(raw.body);
    if (!SplitTarget(raw.path, &req)) {
      return h2_->Respond(id, JsonResponse(400, StatusBody(400, "BadRequest",
                                                           "malformed percent-encoding in URL")));
    }
    if (auto sim = core_->SimApi(req)) return h2_->Respond(id, *sim);

    std::string cluster(ClusterOf(req.path));
    Verdict v = core_->faults.Judge(cluster);
    if (v.reset) return CloseNow(true);
    StreamState& st = streams_[id];
    st.cluster = cluster;
    if (!cluster.empty()) {
      if (carried_.insert(cluster).second) core_->load.AddConnection(cluster, true);
      core_->load.AddStream(cluster);
    }
    if (v.hang) {
      st.hung = true;
      core_->stats.hung.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (v.delay.count() > 0) {
      st.pending = std::move(req);
      st.delay = std::make_unique<asio::steady_timer>(stream_.get_executor());
      st.delay->expires_after(v.delay);
      st.delay->async_wait([self = Self(), id, error = v.error](ErrorCode ec) {
        if (ec || self->closed_) return;
        auto it = self->streams_.find(id);
        if (it == self->streams_.end() || !it->second.pending) return;
        HttpRequest r = std::move(*it->second.pending);
        it->second.pending.reset();
        self->Dispatch(id, r, error);
        self->Flush();
      });
      return;
    }
    Dispatch(id, req, v.error);
  }

  void OnStreamClosed(int32_t id) override {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    StreamState st = std::move(it->second);
    streams_.erase(it);
    EndStream(st);
  }

  void OnDataTaken(int32_t id, std::size_t bytes) override {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    if (auto body = it->second.body.lock()) body->Sent(bytes);
  }

 private:
  struct StreamState {
    std::string cluster;                 // "" outside any cluster
    bool hung = false;                   // held by a hang fault
    bool watching = false;               // a streamed response
    std::optional<HttpRequest> pending;  // held through a latency delay
    std::unique_ptr<asio::steady_timer> delay;
    std::weak_ptr<StreamImpl> body;
  };

  std::shared_ptr<H2Connection> Self() {
    return std::static_pointer_cast<H2Connection>(shared_from_this());
  }

  void Dispatch(int32_t id, const HttpRequest& req, bool inject_error) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    HttpReply reply = core_->Call(req, inject_error, it->second.cluster);
    if (!reply.on_stream) return h2_->Respond(id, reply.response);
    core_->stats.streams.fetch_add(1, std::memory_order_relaxed);
    it->second.watching = true;
    h2_->StartStream(id, reply.response);
    auto stream =
        std::make_shared<StreamImpl>(shared_from_this(), &core_->faults, it->second.cluster,
                                     core_->options.stream_queue_limit, id);
    it->second.body = stream;
    reply.on_stream(std::move(stream));
  }

  void EndStream(StreamState& st) {
    if (st.hung) core_->stats.hung.fetch_sub(1, std::memory_order_relaxed);
    if (st.watching) core_->stats.streams.fetch_sub(1, std::memory_order_relaxed);
    if (!st.cluster.empty()) core_->load.RemoveStream(st.cluster);
    if (auto body = st.body.lock()) body->MarkClosed();
  }

  void DoRead() {
    stream_.async_read_some(asio::buffer(rbuf_), [self = Self()](ErrorCode ec, std::size_t n) {
      if (self->closed_) return;
      if (ec) return self->CloseNow(false);
      if (!self->h2_->Receive(self->rbuf_.data(), n)) self->failed_ = true;
      if (self->closed_) return;  // a fault reset it while reading
      self->Flush();
      if (!self->closed_ && !self->failed_ && self->h2_->WantRead()) self->DoRead();
    });
  }

  // Writes what nghttp2 has ready; once nothing is left and the session is
  // over (GOAWAY, a protocol error), closes.
  void Flush() {
    if (closed_ || writing_) return;
    wbuf_.clear();
    if (!h2_->Send(&wbuf_, kWriteBatch)) return CloseNow(false);
    if (wbuf_.empty()) {
      if (failed_ || (!h2_->WantRead() && !h2_->WantWrite())) CloseNow(false);
      return;
    }
    writing_ = true;
    // One buffer: Beast's ssl_stream stalls on some multi-buffer sequences (server.cc).
    asio::async_write(stream_, asio::buffer(wbuf_), [self = Self()](ErrorCode ec, std::size_t) {
      self->writing_ = false;
      if (self->closed_) return;
      if (ec) return self->CloseNow(false);
      self->Flush();
    });
  }

  // reset: SO_LINGER 0, so the peer gets RST rather than FIN.
  void CloseNow(bool reset) {
    if (closed_) return;
    closed_ = true;
    if (reset) core_->stats.resets.fetch_add(1, std::memory_order_relaxed);
    ErrorCode ec;
    auto& sock = boost::beast::get_lowest_layer(stream_);
    if (reset) sock.set_option(asio::socket_base::linger(true, 0), ec);
    sock.close(ec);
    // Last: it may drop the streams' references to this connection.
    ReleaseAll();
  }

  void ReleaseAll() {
    auto streams = std::move(streams_);
    streams_.clear();
    for (auto& [id, st] : streams) EndStream(st);
    for (const auto& c : carried_) core_->load.RemoveConnection(c, true);
    carried_.clear();
  }

  Core* const core_;
  TlsSocket stream_;
  uint64_t id_ = 0;

  // All below: only on the strand.
  std::unique_ptr<H2Session> h2_;
  std::array<uint8_t, kReadSize> rbuf_{};
  std::string wbuf_;  // being written
  bool writing_ = false;
  bool failed_ = false;  // protocol error: flush the GOAWAY, then close
  bool closed_ = false;
  std::unordered_map<int32_t, StreamState> streams_;  // requests being answered
  std::unordered_set<std::string> carried_;           // clusters this connection has carried
};

}  // namespace

bool NegotiatedH2(TlsSocket& stream) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(stream.native_handle(), &proto, &len);
  return len == 2 && proto[0] == 'h' && proto[1] == '2';
}

void ServeH2(Core* core, TlsSocket stream) {
  std::make_shared<H2Connection>(core, std::move(stream))->Start();
}

}  // namespace eco::kubesim::internal
