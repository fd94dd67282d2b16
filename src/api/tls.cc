#include "api/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace eco::api {

struct TlsIdentity::Material {
  std::unique_ptr<X509, decltype(&X509_free)> leaf{nullptr, X509_free};
  std::unique_ptr<STACK_OF(X509), void (*)(STACK_OF(X509)*)> chain{
      nullptr, [](STACK_OF(X509)* s) { sk_X509_pop_free(s, X509_free); }};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, EVP_PKEY_free};
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> client_cas{nullptr, X509_STORE_free};
  std::unique_ptr<STACK_OF(X509_NAME), void (*)(STACK_OF(X509_NAME)*)> client_ca_names{
      nullptr, [](STACK_OF(X509_NAME)* s) { sk_X509_NAME_pop_free(s, X509_NAME_free); }};
};

namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

Result<std::shared_ptr<const TlsIdentity::Material>> Read(const std::string& cert, const std::string& key,
                                                         const std::string& client_ca) {
  // OpenSSL's error queue is per thread: nothing left behind for later calls
  // (reading to the end of a chain leaves an error too).
  struct ClearErrors {
    ~ClearErrors() { ERR_clear_error(); }
  } clear_errors;
  auto m = std::make_shared<TlsIdentity::Material>();
  Bio in(BIO_new_file(cert.c_str(), "r"), BIO_free);
  if (!in) return Invalid("TLS certificate " + cert + " cannot be read");
  m->leaf.reset(PEM_read_bio_X509_AUX(in.get(), nullptr, nullptr, nullptr));
  if (!m->leaf) return Invalid("TLS certificate " + cert + " holds no PEM certificate");
  m->chain.reset(sk_X509_new_null());
  while (X509* next = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)) sk_X509_push(m->chain.get(), next);

  Bio k(BIO_new_file(key.c_str(), "r"), BIO_free);
  if (!k) return Invalid("TLS key " + key + " cannot be read");
  m->key.reset(PEM_read_bio_PrivateKey(k.get(), nullptr, nullptr, nullptr));
  if (!m->key) return Invalid("TLS key " + key + " holds no PEM private key");
  if (X509_check_private_key(m->leaf.get(), m->key.get()) != 1)
    return Invalid("TLS key " + key + " does not match the certificate in " + cert);

  if (!client_ca.empty()) {
    m->client_cas.reset(X509_STORE_new());
    m->client_ca_names.reset(SSL_load_client_CA_file(client_ca.c_str()));
    if (!m->client_ca_names || sk_X509_NAME_num(m->client_ca_names.get()) == 0 ||
        X509_STORE_load_file(m->client_cas.get(), client_ca.c_str()) != 1) {
      return Invalid("TLS client CA " + client_ca + " cannot be read or holds no PEM certificate");
    }
  }
  return std::shared_ptr<const TlsIdentity::Material>(std::move(m));
}

}  // namespace

TlsIdentity::TlsIdentity(std::string cert, std::string key, std::string client_ca,
                         std::shared_ptr<const Material> m)
    : cert_(std::move(cert)), key_(std::move(key)), client_ca_(std::move(client_ca)), current_(std::move(m)) {}

TlsIdentity::~TlsIdentity() = default;

Result<std::shared_ptr<TlsIdentity>> TlsIdentity::Load(std::string cert, std::string key,
                                                       std::string client_ca) {
  ECO_ASSIGN_OR_RETURN(auto m, Read(cert, key, client_ca));
  return std::shared_ptr<TlsIdentity>(
      new TlsIdentity(std::move(cert), std::move(key), std::move(client_ca), std::move(m)));
}

Status TlsIdentity::Reload() {
  ECO_ASSIGN_OR_RETURN(auto m, Read(cert_, key_, client_ca_));
  std::lock_guard<std::mutex> g(mu_);
  current_ = std::move(m);
  return Status::Ok();
}

std::shared_ptr<const TlsIdentity::Material> TlsIdentity::Current() const {
  std::lock_guard<std::mutex> g(mu_);
  return current_;
}

std::string TlsIdentity::Describe() const {
  auto m = Current();
  Bio out(BIO_new(BIO_s_mem()), BIO_free);
  X509_NAME_print_ex(out.get(), X509_get_subject_name(m->leaf.get()), 0, XN_FLAG_RFC2253);
  BIO_puts(out.get(), ", valid until ");
  ASN1_TIME_print(out.get(), X509_get0_notAfter(m->leaf.get()));
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

int TlsIdentity::OnHandshake(SSL* ssl, void* self) {
  auto m = static_cast<TlsIdentity*>(self)->Current();
  if (SSL_use_certificate(ssl, m->leaf.get()) != 1 || SSL_use_PrivateKey(ssl, m->key.get()) != 1 ||
      SSL_set1_chain(ssl, m->chain.get()) != 1) {
    return 0;
  }
  if (m->client_cas) {
    if (SSL_set1_verify_cert_store(ssl, m->client_cas.get()) != 1) return 0;
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(m->client_ca_names.get()));
  }
  return 1;
}

void TlsIdentity::Install(SSL_CTX* ctx) { SSL_CTX_set_cert_cb(ctx, &TlsIdentity::OnHandshake, this); }

}  // namespace eco::api
