#include "kubesim/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace eco::kubesim {
namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

// The first queued OpenSSL error, for messages.
std::string OpensslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "kube-sim TLS: " + what;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return "kube-sim TLS: " + what + ": " + buf;
}

Result<PkeyPtr> NewKey() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return Internal(OpensslError("generating an EC key"));
  return key;
}

bool AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A v3 certificate for `key` named CN=`common_name`, not yet extended or signed.
Result<X509Ptr> NewCertificate(EVP_PKEY* key, const std::string& common_name) {
  X509Ptr cert(X509_new());
  if (!cert) return Internal(OpensslError("X509_new"));
  // A random positive serial of at most 20 bytes (RFC 5280; Go rejects others).
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Internal(OpensslError("random serial"));
  serial[0] = static_cast<unsigned char>((serial[0] & 0x7f) | 0x40);  // positive, 16 bytes
  BnPtr bn(BN_bin2bn(serial, sizeof serial, nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) ||
      X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600) ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return Internal(OpensslError("filling a certificate"));
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("kube-sim"), -1, -1,
                                 0) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1) {
    return Internal(OpensslError("naming a certificate"));
  }
  return cert;
}

Result<std::string> ToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return Internal(OpensslError("PEM"));
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

Result<std::string> ToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Internal(OpensslError("PEM key"));
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

Result<TlsMaterial> GenerateTlsMaterial(const std::string& host) {
  ECO_ASSIGN_OR_RETURN(auto ca_key, NewKey());
  ECO_ASSIGN_OR_RETURN(auto ca, NewCertificate(ca_key.get(), "kube-sim-ca"));
  X509* ca_cert = ca.get();
  if (X509_set_issuer_name(ca_cert, X509_get_subject_name(ca_cert)) != 1) {
    return Internal(OpensslError("CA issuer"));
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca_cert, ca_cert, nullptr, nullptr, 0);
  if (!AddExtension(ca_cert, &ctx, NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExtension(ca_cert, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(ca_cert, &ctx, NID_subject_key_identifier, "hash")) {
    return Internal(OpensslError("CA extensions"));
  }
  if (X509_sign(ca_cert, ca_key.get(), EVP_sha256()) == 0) {
    return Internal(OpensslError("signing the CA"));
  }

  ECO_ASSIGN_OR_RETURN(auto key, NewKey());
  ECO_ASSIGN_OR_RETURN(auto server, NewCertificate(key.get(), "kube-sim"));
  X509* cert = server.get();
  if (X509_set_issuer_name(cert, X509_get_subject_name(ca_cert)) != 1) {
    return Internal(OpensslError("server issuer"));
  }
  std::string san = "IP:127.0.0.1,DNS:localhost";
  if (!host.empty() && host != "127.0.0.1" && host != "localhost") {
    san += (IsIp(host) ? ",IP:" : ",DNS:") + host;
  }
  X509V3_set_ctx(&ctx, ca_cert, cert, nullptr, nullptr, 0);
  if (!AddExtension(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert, &ctx, NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(cert, &ctx, NID_ext_key_usage, "serverAuth") ||
      !AddExtension(cert, &ctx, NID_subject_key_identifier, "hash") ||
      !AddExtension(cert, &ctx, NID_authority_key_identifier, "keyid:always") ||
      !AddExtension(cert, &ctx, NID_subject_alt_name, san)) {
    return Internal(OpensslError("server certificate extensions (SAN " + san + ")"));
  }
  if (X509_sign(cert, ca_key.get(), EVP_sha256()) == 0) {
    return Internal(OpensslError("signing the server certificate"));
  }

  TlsMaterial out;
  ECO_ASSIGN_OR_RETURN(auto ca_pem, ToPem(ca_cert));
  ECO_ASSIGN_OR_RETURN(auto cert_pem, ToPem(cert));
  ECO_ASSIGN_OR_RETURN(auto key_pem, ToPem(key.get()));
  out.ca_cert_pem = std::move(ca_pem);
  out.server_cert_pem = std::move(cert_pem);
  out.server_key_pem = std::move(key_pem);
  return out;
}

}  // namespace eco::kubesim
