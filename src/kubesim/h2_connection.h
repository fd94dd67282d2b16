// kube-sim's HTTP/2 connections: a TLS connection whose handshake chose h2
// is handed over here from server.cc and served by an nghttp2 session
// (h2_session.h) on the connection's strand.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace eco::kubesim::internal {

struct Core;

// Concrete executor types: no type-erased executor on the per-request path.
using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Strand>;
using TlsSocket = boost::beast::ssl_stream<Socket>;

// Whether the finished handshake on `stream` chose h2 by ALPN.
bool NegotiatedH2(TlsSocket& stream);

// Serves `stream` (handshake done, h2 chosen) until the peer or a fault ends it.
void ServeH2(Core* core, TlsSocket stream);

}  // namespace eco::kubesim::internal
