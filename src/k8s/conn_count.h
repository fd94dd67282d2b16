// Internal to src/k8s: the process's open connections to clusters, by
// protocol, as the gauge eco_k8s_connections{protocol} and for tests.
#pragma once

#include <cstdint>

namespace eco::k8s {

enum class ConnProtocol { kHttp1, kH2 };

// A TCP connection (socket) opened (+1) or closed (-1).
void CountConnection(ConnProtocol protocol, int delta);

// Sockets open now, of the direct HTTP/1.1 paths (requests and watch
// streams) and of HTTP/2 connections. libcurl's are not counted.
int64_t OpenConnections(ConnProtocol protocol);

}  // namespace eco::k8s
