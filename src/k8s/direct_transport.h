// Internal to src/k8s: HTTP/1.1 to one cluster on blocking sockets, without
// libcurl. A request on an open connection is one send and, for a response
// that fits in 16 KiB, one receive: no poll, no URL parsing per request.
#pragma once

#include <memory>

#include "common/status.h"
#include "k8s/transport.h"

namespace eco::k8s {

// A pool of at most options.max_connections persistent connections, plain
// TCP or TLS (OpenSSL: CA, client certificate and key from memory; the
// server's certificate checked against tls_server_name or the URL's host,
// DNS name or IP address; SNI for DNS names; insecure_skip_tls_verify).
// connect_timeout bounds connecting and the TLS handshake; request_timeout
// bounds each wait for the server while sending or receiving a request
// (checked again between reads, so a trickling answer also times out).
// A reused connection that fails before any byte of the answer arrived (the
// server closed it while idle) is replaced and the request sent once more.
// No proxies: NewTransport picks libcurl when one is configured.
// Errors: an unusable server URL is kInvalid here; a bad client
// certificate or CA is kInvalid at the first request.
Result<std::unique_ptr<Transport>> NewDirectTransport(RestConfig config, ClientOptions options);

}  // namespace eco::k8s
