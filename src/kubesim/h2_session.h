// The HTTP/2 side of one kube-sim connection: nghttp2 does the framing,
// HPACK and flow control; this glue turns streams into HttpRequests and
// responses into frames. It knows no sockets: the connection (h2_connection.cc)
// feeds it the bytes it reads and writes out what it produces, all on the
// connection's strand (nothing here is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kubesim/http.h"

namespace eco::kubesim::internal {

// SETTINGS kube-sim sends; the defaults are kube-apiserver's (docs/kube-sim.md).
struct H2Settings {
  uint32_t max_concurrent_streams = 100;
  uint32_t initial_window_size = 256 * 1024;  // per stream, client → server
  uint32_t max_frame_size = 256 * 1024;
  uint32_t max_header_list_size = (1u << 20) + 10 * 32;
  int32_t connection_window = 100 * 256 * 1024;  // raised by WINDOW_UPDATE
};

class H2Session {
 public:
  // What the connection does with the session's events. Called from inside
  // Receive() and Send(); must not call back into the session's Receive/Send.
  class Host {
   public:
    virtual ~Host() = default;
    // A complete request. `req.path` holds the raw :path (with the query);
    // the host splits and decodes it.
    virtual void OnRequest(int32_t stream, HttpRequest req) = 0;
    // The stream is gone: answered, reset by either side, or the session ended.
    virtual void OnStreamClosed(int32_t stream) = 0;
    // `bytes` of a stream's queued data went into DATA frames.
    virtual void OnDataTaken(int32_t stream, std::size_t bytes) = 0;
  };

  // Sends the SETTINGS (queued for the first Send). Null when nghttp2 fails.
  static std::unique_ptr<H2Session> Create(Host* host, const H2Settings& settings,
                                           std::size_t body_limit);
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // Bytes read from the peer. False: a connection error; send what Send
  // gives (a GOAWAY) and close.
  bool Receive(const uint8_t* data, std::size_t n);
  // Appends the frames ready to go to *out, up to about `max` bytes. False on
  // a fatal error.
  bool Send(std::string* out, std::size_t max);
  // False for both: the session is over (GOAWAY exchanged, or a fatal error).
  bool WantRead() const;
  bool WantWrite() const;

  // A whole response: HEADERS, then the body as DATA, END_STREAM.
  void Respond(int32_t stream, const HttpResponse& response);
  // The head of a streamed response; Append adds body data, End ends it.
  void StartStream(int32_t stream, const HttpResponse& head);
  void Append(int32_t stream, std::string data);
  void End(int32_t stream);
  // RST_STREAM with `error_code` (an HTTP/2 error code).
  void Reset(int32_t stream, uint32_t error_code);

  // Callbacks from nghttp2 (C), public for the trampolines in h2_session.cc.
  struct Impl;

 private:
  explicit H2Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::kubesim::internal
