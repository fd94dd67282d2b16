// nghttp2 glue for kube-sim's HTTP/2 connections (see h2_session.h).
#include "kubesim/h2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kubesim/server.h"

namespace eco::kubesim::internal {

struct H2Session::Impl {
  Host* host = nullptr;  // null once the session is being destroyed
  std::size_t body_limit = 0;
  nghttp2_session* session = nullptr;

  // A request still arriving.
  struct In {
    HttpRequest req;
    bool too_large = false;
  };
  // A response body not yet taken by nghttp2 (held until the peer's window allows).
  struct Out {
    std::string data;
    std::size_t offset = 0;
    bool ended = false;     // no more data comes
    bool deferred = false;  // nghttp2 waits for a resume
  };
  std::unordered_map<int32_t, In> in;
  std::unordered_map<int32_t, Out> out;

  ~Impl() {
    host = nullptr;
    if (session != nullptr) nghttp2_session_del(session);
  }

  void Resume(int32_t stream, Out& o) {
    if (!o.deferred) return;
    o.deferred = false;
    nghttp2_session_resume_data(session, stream);
  }

  bool Submit(int32_t stream, const HttpResponse& r, const std::string* content_length,
              bool with_body);
};

namespace {

using Impl = H2Session::Impl;

Impl* Of(void* user_data) { return static_cast<Impl*>(user_data); }

// Connection-specific fields have no place in HTTP/2 (RFC 9113 8.2.2).
bool ConnectionSpecific(std::string_view lower) {
  return lower == "connection" || lower == "transfer-encoding" || lower == "keep-alive" ||
         lower == "upgrade" || lower == "proxy-connection";
}

nghttp2_nv Nv(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* s = Of(user_data);
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    s->in[frame->hd.stream_id];
  }
  return 0;
}

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
  auto* s = Of(user_data);
  auto it = s->in.find(frame->hd.stream_id);
  if (it == s->in.end()) return 0;  // trailers, or a stream already refused
  HttpRequest& req = it->second.req;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":method") {
    req.method.assign(v);
  } else if (n == ":path") {
    req.path.assign(v);
  } else if (n == ":authority") {
    req.headers["host"].assign(v);  // what HTTP/1.1's Host carried
  } else if (!n.empty() && n.front() != ':') {
    // nghttp2 has checked that names are lower-case.
    auto [h, inserted] = req.headers.try_emplace(std::string(n), v);
    if (!inserted) h->second.append(n == "cookie" ? "; " : ", ").append(v);
  }
  return 0;
}

int OnDataChunk(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                void* user_data) {
  auto* s = Of(user_data);
  auto it = s->in.find(stream);
  if (it == s->in.end() || it->second.too_large) return 0;
  std::string& body = it->second.req.body;
  if (body.size() + len > s->body_limit) {
    it->second.too_large = true;
    std::string().swap(body);
    return 0;
  }
  body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  auto* s = Of(user_data);
  if (s->host == nullptr) return 0;
  if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
    return 0;
  }
  int32_t id = frame->hd.stream_id;
  auto it = s->in.find(id);
  if (it == s->in.end()) return 0;
  Impl::In in = std::move(it->second);
  s->in.erase(it);
  if (in.too_large) {
    HttpResponse r;
    r.status = 413;
    r.body =
        StatusBody(413, "RequestEntityTooLarge",
                   "request body too large: limit is " + std::to_string(s->body_limit) + " bytes");
    const std::string length = std::to_string(r.body.size());
    s->out[id] = Impl::Out{r.body, 0, true, false};
    s->Submit(id, r, &length, true);
    return 0;
  }
  s->host->OnRequest(id, std::move(in.req));
  return 0;
}

int OnStreamClose(nghttp2_session*, int32_t stream, uint32_t, void* user_data) {
  auto* s = Of(user_data);
  s->in.erase(stream);
  s->out.erase(stream);
  if (s->host != nullptr) s->host->OnStreamClosed(stream);
  return 0;
}

ssize_t ReadBody(nghttp2_session*, int32_t stream, uint8_t* buf, size_t length,
                 uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
  auto* s = Of(user_data);
  auto it = s->out.find(stream);
  if (it == s->out.end()) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  Impl::Out& o = it->second;
  std::size_t n = std::min(length, o.data.size() - o.offset);
  std::memcpy(buf, o.data.data() + o.offset, n);
  o.offset += n;
  if (o.offset == o.data.size()) {
    o.data.clear();
    o.offset = 0;
  } else if (o.offset > o.data.size() / 2) {
    o.data.erase(0, o.offset);  // keeps the copy work linear
    o.offset = 0;
  }
  if (n > 0 && s->host != nullptr) s->host->OnDataTaken(stream, n);
  if (o.data.empty()) {
    if (o.ended) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
      o.deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return static_cast<ssize_t>(n);
}

}  // namespace

bool H2Session::Impl::Submit(int32_t stream, const HttpResponse& r,
                             const std::string* content_length, bool with_body) {
  static const std::string kStatus = ":status", kType = "content-type", kLength = "content-length";
  const std::string status = std::to_string(r.status);
  std::vector<std::string> names;  // lower-cased extra header names
  names.reserve(r.headers.size());
  std::vector<nghttp2_nv> nva;
  nva.reserve(r.headers.size() + 3);
  nva.push_back(Nv(kStatus, status));
  if (!r.content_type.empty()) nva.push_back(Nv(kType, r.content_type));
  if (content_length != nullptr) nva.push_back(Nv(kLength, *content_length));
  for (const auto& [k, v] : r.headers) {
    std::string& name = names.emplace_back(k);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ConnectionSpecific(name) || name == kLength || name == kType) continue;
    nva.push_back(Nv(name, v));
  }
  nghttp2_data_provider provider{};
  provider.read_callback = ReadBody;
  // nghttp2 copies the header block; the strings need only outlive this call.
  return nghttp2_submit_response(session, stream, nva.data(), nva.size(),
                                 with_body ? &provider : nullptr) == 0;
}

std::unique_ptr<H2Session> H2Session::Create(Host* host, const H2Settings& settings,
                                             std::size_t body_limit) {
  auto impl = std::make_unique<Impl>();
  impl->host = host;
  impl->body_limit = body_limit;
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return nullptr;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, OnFrameRecv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, OnStreamClose);
  int rv = nghttp2_session_server_new(&impl->session, cbs, impl.get());
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return nullptr;

  const nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.initial_window_size},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, settings.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.max_header_list_size},
  };
  if (nghttp2_submit_settings(impl->session, NGHTTP2_FLAG_NONE, iv, std::size(iv)) != 0) {
    return nullptr;
  }
  if (nghttp2_session_set_local_window_size(impl->session, NGHTTP2_FLAG_NONE, 0,
                                            settings.connection_window) != 0) {
    return nullptr;
  }
  return std::unique_ptr<H2Session>(new H2Session(std::move(impl)));
}

H2Session::H2Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
H2Session::~H2Session() = default;

bool H2Session::Receive(const uint8_t* data, std::size_t n) {
  return nghttp2_session_mem_recv(impl_->session, data, n) >= 0;
}

bool H2Session::Send(std::string* out, std::size_t max) {
  while (out->size() < max) {
    const uint8_t* p = nullptr;
    ssize_t n = nghttp2_session_mem_send(impl_->session, &p);
    if (n < 0) return false;
    if (n == 0) break;
    out->append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  return true;
}

bool H2Session::WantRead() const { return nghttp2_session_want_read(impl_->session) != 0; }
bool H2Session::WantWrite() const { return nghttp2_session_want_write(impl_->session) != 0; }

void H2Session::Respond(int32_t stream, const HttpResponse& response) {
  const std::string length = std::to_string(response.body.size());
  bool with_body = !response.body.empty();
  if (with_body) impl_->out[stream] = Impl::Out{response.body, 0, true, false};
  if (!impl_->Submit(stream, response, &length, with_body)) impl_->out.erase(stream);
}

void H2Session::StartStream(int32_t stream, const HttpResponse& head) {
  impl_->out[stream] = Impl::Out{};
  if (!impl_->Submit(stream, head, nullptr, true)) impl_->out.erase(stream);
}

void H2Session::Append(int32_t stream, std::string data) {
  auto it = impl_->out.find(stream);
  if (it == impl_->out.end() || it->second.ended) return;
  Impl::Out& o = it->second;
  if (o.data.empty()) {
    o.data = std::move(data);
    o.offset = 0;
  } else {
    o.data.append(data);
  }
  impl_->Resume(stream, o);
}

void H2Session::End(int32_t stream) {
  auto it = impl_->out.find(stream);
  if (it == impl_->out.end() || it->second.ended) return;
  it->second.ended = true;
  impl_->Resume(stream, it->second);
}

void H2Session::Reset(int32_t stream, uint32_t error_code) {
  nghttp2_submit_rst_stream(impl_->session, NGHTTP2_FLAG_NONE, stream, error_code);
}

}  // namespace eco::kubesim::internal
