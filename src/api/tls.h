// The HTTPS identity of a running server (certificate chain, key and the
// CA that signs client certificates), replaced while it serves: SIGHUP
// makes eco read the files again, so certificates rotate without a restart
// (cert-manager and the like rewrite them in place). Each handshake uses
// the identity current when it starts; open connections keep theirs.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace eco::api {

class TlsIdentity {
 public:
  // Reads and checks the PEM files; `client_ca` may be empty (no mutual TLS).
  static Result<std::shared_ptr<TlsIdentity>> Load(std::string cert, std::string key,
                                                   std::string client_ca);
  ~TlsIdentity();

  // Reads the files again; on an error keeps the current identity and says
  // which file is wrong.
  Status Reload();
  // The certificate in words: subject and end of validity.
  std::string Describe() const;
  // Makes every handshake on `ctx` take the identity current at its start.
  // The identity must outlive `ctx`.
  void Install(ssl_ctx_st* ctx);

  struct Material;

 private:
  TlsIdentity(std::string cert, std::string key, std::string client_ca,
              std::shared_ptr<const Material> m);
  std::shared_ptr<const Material> Current() const;
  static int OnHandshake(ssl_st* ssl, void* self);

  const std::string cert_, key_, client_ca_;
  mutable std::mutex mu_;
  std::shared_ptr<const Material> current_;  // guarded by mu_
};

}  // namespace eco::api
