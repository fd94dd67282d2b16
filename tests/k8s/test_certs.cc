#include "test_certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>

#include "common/base64.h"

namespace eco::k8s::testing {
namespace {

struct Free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(BIO* b) const { BIO_free(b); }
};

std::unique_ptr<EVP_PKEY, Free> NewKey() {
  return std::unique_ptr<EVP_PKEY, Free>(EVP_EC_gen("P-256"));
}

std::string ToPem(X509* x) {
  std::unique_ptr<BIO, Free> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), x);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string ToPem(EVP_PKEY* k) {
  std::unique_ptr<BIO, Free> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

void AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) throw std::runtime_error("bad extension " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::unique_ptr<X509, Free> NewCert(EVP_PKEY* key, const std::string& cn, long serial) {
  std::unique_ptr<X509, Free> cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

std::unique_ptr<X509, Free> ReadCert(const std::string& pem) {
  std::unique_ptr<BIO, Free> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<X509, Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::unique_ptr<EVP_PKEY, Free> ReadKey(const std::string& pem) {
  std::unique_ptr<BIO, Free> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<EVP_PKEY, Free>(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

CertKey MakeCa(const std::string& common_name) {
  auto key = NewKey();
  auto cert = NewCert(key.get(), common_name, 1);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  AddExt(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  AddExt(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExt(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  X509_sign(cert.get(), key.get(), EVP_sha256());
  return {ToPem(cert.get()), ToPem(key.get())};
}

CertKey MakeLeaf(const CertKey& ca, const std::string& common_name,
                 const std::vector<std::string>& dns_names, const std::vector<std::string>& ips) {
  static long serial = 100;
  auto ca_cert = ReadCert(ca.cert_pem);
  auto ca_key = ReadKey(ca.key_pem);
  auto key = NewKey();
  auto cert = NewCert(key.get(), common_name, ++serial);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  AddExt(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  AddExt(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  std::string san;
  for (const auto& d : dns_names) san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
  for (const auto& ip : ips) san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  if (!san.empty()) AddExt(cert.get(), ca_cert.get(), NID_subject_alt_name, san);
  X509_sign(cert.get(), ca_key.get(), EVP_sha256());
  return {ToPem(cert.get()), ToPem(key.get())};
}

std::string Base64(const std::string& bytes) { return Base64Encode(bytes); }

}  // namespace eco::k8s::testing
