// kube-sim's TLS material, generated in memory at start: a CA and a server
// certificate it signed. Only the CA certificate leaves the process (in the
// kubeconfigs); nothing is written to disk here.
#pragma once

#include <string>

#include "common/status.h"

namespace eco::kubesim {

struct TlsMaterial {
  std::string ca_cert_pem;      // self-signed CA: what clients trust
  std::string server_cert_pem;  // signed by the CA
  std::string server_key_pem;   // PKCS#8
};

// ECDSA P-256 keys, SHA-256 signatures, valid from an hour ago for ten years.
// The CA: basicConstraints CA:TRUE (critical), keyUsage keyCertSign/cRLSign
// (critical), subjectKeyIdentifier. The server certificate: subjectAltName
// IP:127.0.0.1, DNS:localhost and `host` (as an IP or DNS name),
// extKeyUsage serverAuth, authorityKeyIdentifier, basicConstraints CA:FALSE.
// This is what Go's crypto/x509 (kubectl) insists on.
Result<TlsMaterial> GenerateTlsMaterial(const std::string& host);

}  // namespace eco::kubesim
