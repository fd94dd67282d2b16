// Sprig's hash, encoding, crypto, certificate, random and uuid functions,
// over OpenSSL (hashes, scrypt, AES, keys, X.509), zlib (adler32) and
// libxcrypt (bcrypt), with the output formats and messages Sprig's Go code
// produces.
#include <arpa/inet.h>
#include <crypt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/encoder.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <zlib.h>

#include <cstring>
#include <memory>
#include <optional>

#include "common/base64.h"
#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
namespace {

using A = ArgType;

template <auto Fn>
struct Free {
  template <typename T>
  void operator()(T* p) const { Fn(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, Free<EVP_PKEY_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, Free<BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Free<X509_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Free<X509_NAME_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Free<BN_free>>;
using CipherCtxPtr = std::unique_ptr<EVP_CIPHER_CTX, Free<EVP_CIPHER_CTX_free>>;
using EncoderCtxPtr = std::unique_ptr<OSSL_ENCODER_CTX, Free<OSSL_ENCODER_CTX_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;
using AkidPtr = std::unique_ptr<AUTHORITY_KEYID, Free<AUTHORITY_KEYID_free>>;

// ---------------------------------------------------------------- encodings

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 15];
  }
  return out;
}

std::string DigestHex(const EVP_MD* md, const std::string& in) {
  unsigned char buf[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(in.data(), in.size(), buf, &n, md, nullptr);
  return Hex(buf, n);
}

std::string CorruptInput(const char* what, size_t at) {
  return std::string("illegal ") + what + " data at input byte " + std::to_string(at);
}

constexpr char kBase32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

std::string Base32Encode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += 5) {
    size_t n = std::min<size_t>(5, in.size() - i);
    uint64_t block = 0;
    for (size_t k = 0; k < 5; ++k)
      block = (block << 8) | (k < n ? static_cast<unsigned char>(in[i + k]) : 0);
    static const int kChars[] = {0, 2, 4, 5, 7, 8};  // output characters per input length
    for (int k = 0; k < 8; ++k) {
      if (k < kChars[n]) out += kBase32[(block >> (35 - 5 * k)) & 31];
      else out += '=';
    }
  }
  return out;
}

// Go's base32.StdEncoding.DecodeString (newlines dropped first, then strict
// RFC 4648 padding), by hand: no packaged library speaks base32.
Result<std::string> Base32Decode(std::string_view in) {
  std::string src;
  for (char c : in)
    if (c != '\n' && c != '\r') src += c;
  auto value = [](unsigned char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= '2' && c <= '7') return c - '2' + 26;
    return -1;
  };
  const size_t olen = src.size();
  size_t pos = 0;
  std::string out;
  bool end = false;
  while (pos < olen && !end) {
    int d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int dlen = 8;
    for (int j = 0; j < 8;) {
      if (pos == olen) return Invalid(CorruptInput("base32", olen - j));
      unsigned char c = src[pos++];
      size_t left = olen - pos;
      if (c == '=' && j >= 2 && left < 8) {
        if (left + j < 7) return Invalid(CorruptInput("base32", olen));
        for (int k = 0; k < 7 - j; ++k)
          if (left > static_cast<size_t>(k) && src[pos + k] != '=')
            return Invalid(CorruptInput("base32", pos + k - 1));
        dlen = j;
        end = true;
        if (dlen == 1 || dlen == 3 || dlen == 6) return Invalid(CorruptInput("base32", pos - 1));
        break;
      }
      d[j] = value(c);
      if (d[j] < 0) return Invalid(CorruptInput("base32", pos - 1));
      ++j;
    }
    unsigned char b[5] = {static_cast<unsigned char>(d[0] << 3 | d[1] >> 2),
                          static_cast<unsigned char>(d[1] << 6 | d[2] << 1 | d[3] >> 4),
                          static_cast<unsigned char>(d[3] << 4 | d[4] >> 1),
                          static_cast<unsigned char>(d[4] << 7 | d[5] << 2 | d[6] >> 3),
                          static_cast<unsigned char>(d[6] << 5 | d[7])};
    int bytes = dlen == 8 ? 5 : dlen == 7 ? 4 : dlen == 5 ? 3 : dlen == 4 ? 2 : dlen == 2 ? 1 : 0;
    out.append(reinterpret_cast<const char*>(b), static_cast<size_t>(bytes));
  }
  return out;
}

// ------------------------------------------------------------------ random

// A uniform integer in [0, n), n > 0, from the CSPRNG.
uint64_t RandBelow(uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // reject the biased tail
  for (;;) {
    uint64_t r = 0;
    RAND_bytes(reinterpret_cast<unsigned char*>(&r), sizeof r);
    if (r < limit) return r % n;
  }
}

// Random characters drawn uniformly from `alphabet`, as goutils'
// CryptoRandom* does (a negative count gives "", as Sprig ignores the error).
Result<Value> RandomString(int64_t count, std::string_view alphabet) {
  if (count <= 0) return Value::String("");
  if (count > (int64_t{1} << 26)) return Invalid("random string length " + std::to_string(count) + " too large");
  std::string out(static_cast<size_t>(count), ' ');
  for (char& c : out) c = alphabet[RandBelow(alphabet.size())];
  return Value::String(std::move(out));
}

std::string UuidV4() {
  unsigned char b[16];
  RAND_bytes(b, sizeof b);
  b[6] = (b[6] & 0x0F) | 0x40;
  b[8] = (b[8] & 0x3F) | 0x80;
  std::string h = Hex(b, sizeof b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

// ------------------------------------------------------------- passwords

// Go's bcrypt.GenerateFromPassword at the default cost (10), "$2a$" hashes.
std::string Bcrypt(const std::string& password) {
  if (password.size() > 72)
    return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes";
  unsigned char salt[16];
  RAND_bytes(salt, sizeof salt);
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2a$", 10, reinterpret_cast<const char*>(salt), sizeof salt, setting, sizeof setting))
    return "failed to encrypt string with bcrypt: " + std::string(std::strerror(errno));
  auto data = std::make_unique<crypt_data>();
  const char* hash = crypt_rn(password.c_str(), setting, data.get(), sizeof(crypt_data));
  if (hash == nullptr || hash[0] == '*')
    return "failed to encrypt string with bcrypt: " + std::string(std::strerror(errno));
  return hash;
}

// The Master Password algorithm (v3) as Sprig's derivePassword implements it.
std::string DerivePassword(uint32_t counter, const std::string& type, const std::string& password,
                           const std::string& user, const std::string& site) {
  struct Templates {
    const char* type;
    std::vector<const char*> list;
  };
  static const Templates kTemplates[] = {
      {"maximum", {"anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"}},
      {"long", {"CvcvnoCvcvCvcv", "CvcvCvcvnoCvcv", "CvcvCvcvCvcvno", "CvccnoCvcvCvcv", "CvccCvcvnoCvcv",
                "CvccCvcvCvcvno", "CvcvnoCvccCvcv", "CvcvCvccnoCvcv", "CvcvCvccCvcvno", "CvcvnoCvcvCvcc",
                "CvcvCvcvnoCvcc", "CvcvCvcvCvccno", "CvccnoCvccCvcv", "CvccCvccnoCvcv", "CvccCvccCvcvno",
                "CvcvnoCvccCvcc", "CvcvCvccnoCvcc", "CvcvCvccCvccno", "CvccnoCvcvCvcc", "CvccCvcvnoCvcc",
                "CvccCvcvCvccno"}},
      {"medium", {"CvcnoCvc", "CvcCvcno"}},
      {"short", {"Cvcn"}},
      {"basic", {"aaanaaan", "aannaaan", "aaannaaa"}},
      {"pin", {"nnnn"}},
  };
  const std::vector<const char*>* templates = nullptr;
  for (const auto& t : kTemplates)
    if (type == t.type) templates = &t.list;
  if (templates == nullptr) return "cannot find password template " + type;

  auto be32 = [](std::string* s, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((v >> shift) & 0xFF));
  };
  const std::string scope = "com.lyndir.masterpassword";
  std::string salt = scope;
  be32(&salt, static_cast<uint32_t>(user.size()));
  salt += user;
  unsigned char key[64];
  if (!EVP_PBE_scrypt(password.data(), password.size(), reinterpret_cast<const unsigned char*>(salt.data()),
                      salt.size(), 32768, 8, 2, 64u << 20, key, sizeof key))
    return "failed to derive password: scrypt failed";

  std::string msg = scope;
  be32(&msg, static_cast<uint32_t>(site.size()));
  msg += site;
  be32(&msg, counter);
  unsigned char seed[EVP_MAX_MD_SIZE];
  unsigned int seed_len = 0;
  HMAC(EVP_sha256(), key, sizeof key, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), seed,
       &seed_len);

  auto chars = [](char cls) -> std::string_view {
    switch (cls) {
      case 'V': return "AEIOU";
      case 'C': return "BCDFGHJKLMNPQRSTVWXYZ";
      case 'v': return "aeiou";
      case 'c': return "bcdfghjklmnpqrstvwxyz";
      case 'A': return "AEIOUBCDFGHJKLMNPQRSTVWXYZ";
      case 'a': return "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz";
      case 'n': return "0123456789";
      case 'o': return "@&%?,=[]_:-+*$#!'^~;()/.";
      case 'x': return "AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()";
    }
    return "";
  };
  std::string_view tmpl = (*templates)[seed[0] % templates->size()];
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    std::string_view pass_chars = chars(tmpl[i]);
    out += pass_chars[seed[i + 1] % pass_chars.size()];
  }
  return out;
}

// --------------------------------------------------------------------- AES

std::string AesKey(const std::string& password) {
  std::string key(32, '\0');
  std::memcpy(key.data(), password.data(), std::min<size_t>(32, password.size()));
  return key;
}

Result<std::string> EncryptAes(const std::string& password, const std::string& plaintext) {
  if (plaintext.empty()) return std::string();
  std::string key = AesKey(password);
  std::string content = plaintext;
  size_t pad = 16 - content.size() % 16;
  content.append(pad, static_cast<char>(pad));
  std::string out(16 + content.size(), '\0');
  auto* iv = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(iv, 16) != 1) return Internal("crypto/rand: no entropy");
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int n = 0;
  if (!ctx || !EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr,
                                  reinterpret_cast<const unsigned char*>(key.data()), iv) ||
      !EVP_CIPHER_CTX_set_padding(ctx.get(), 0) ||
      !EVP_EncryptUpdate(ctx.get(), iv + 16, &n, reinterpret_cast<const unsigned char*>(content.data()),
                         static_cast<int>(content.size())))
    return Internal("AES encryption failed");
  return Base64Encode(out);
}

// Go panics (reported as errors) where Sprig's decryptAES slices past the
// input; the messages are Go's.
Result<std::string> DecryptAes(const std::string& password, const std::string& crypt64) {
  if (crypt64.empty()) return std::string();
  std::string key = AesKey(password);
  ECO_ASSIGN_OR_RETURN(auto crypt, Base64Decode(crypt64));
  const std::string& c = crypt;
  if (c.size() < 16)
    return Invalid("runtime error: slice bounds out of range [:16] with capacity " + std::to_string(c.size()));
  size_t body = c.size() - 16;
  if (body % 16 != 0) return Invalid("crypto/cipher: input not full blocks");
  if (body == 0) return Invalid("runtime error: index out of range [-1]");
  std::string plain(body, '\0');
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int n = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(c.data());
  if (!ctx ||
      !EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                          in) ||
      !EVP_CIPHER_CTX_set_padding(ctx.get(), 0) ||
      !EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n, in + 16,
                         static_cast<int>(body)))
    return Internal("AES decryption failed");
  int64_t keep = static_cast<int64_t>(body) - static_cast<unsigned char>(plain.back());
  if (keep < 0) return Invalid("runtime error: slice bounds out of range [:" + std::to_string(keep) + "]");
  plain.resize(static_cast<size_t>(keep));
  return plain;
}

// -------------------------------------------------------------------- keys

std::string BioString(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

// PEM of a private key in the block Sprig's pemBlockForKey picks: PKCS#1
// "RSA PRIVATE KEY", SEC1 "EC PRIVATE KEY", "DSA PRIVATE KEY" (version, p, q,
// g, y, x), else PKCS#8 "PRIVATE KEY".
Result<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  int id = EVP_PKEY_get_base_id(key);
  if (id == EVP_PKEY_RSA || id == EVP_PKEY_EC || id == EVP_PKEY_DSA) {
    EncoderCtxPtr enc(OSSL_ENCODER_CTX_new_for_pkey(key, EVP_PKEY_KEYPAIR, "PEM", "type-specific", nullptr));
    if (!enc || OSSL_ENCODER_CTX_get_num_encoders(enc.get()) == 0 || !OSSL_ENCODER_to_bio(enc.get(), bio.get()))
      return Internal("error pem-encoding key");
  } else if (!PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    return Internal("error pem-encoding key");
  }
  return BioString(bio.get());
}

Result<PkeyPtr> GenerateKey(const std::string& type) {
  PkeyPtr key;
  if (type.empty() || type == "rsa") {
    key.reset(EVP_RSA_gen(4096));
  } else if (type == "dsa") {
    PkeyCtxPtr pctx(EVP_PKEY_CTX_new_from_name(nullptr, "DSA", nullptr));
    EVP_PKEY* params = nullptr;
    if (pctx && EVP_PKEY_paramgen_init(pctx.get()) > 0 && EVP_PKEY_CTX_set_dsa_paramgen_bits(pctx.get(), 2048) > 0 &&
        EVP_PKEY_CTX_set_dsa_paramgen_q_bits(pctx.get(), 256) > 0 && EVP_PKEY_paramgen(pctx.get(), &params) > 0) {
      PkeyPtr owned_params(params);
      PkeyCtxPtr kctx(EVP_PKEY_CTX_new_from_pkey(nullptr, params, nullptr));
      EVP_PKEY* k = nullptr;
      if (kctx && EVP_PKEY_keygen_init(kctx.get()) > 0 && EVP_PKEY_keygen(kctx.get(), &k) > 0) key.reset(k);
    }
  } else if (type == "ecdsa") {
    key.reset(EVP_EC_gen("P-256"));
  } else if (type == "ed25519") {
    key.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  } else {
    return NotFound("Unknown type " + type);
  }
  if (!key) return Internal("failed to generate private key: key generation failed");
  return key;
}

struct PemBlock {
  std::string type;
  std::string der;
};

// The first PEM block of `text` (Go's pem.Decode); nullopt when there is none.
std::optional<PemBlock> DecodePem(const std::string& text) {
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long len = 0;
  if (!PEM_read_bio(bio.get(), &name, &header, &data, &len)) return std::nullopt;
  PemBlock b{name, std::string(reinterpret_cast<char*>(data), static_cast<size_t>(len))};
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  return b;
}

bool SupportedCurve(EVP_PKEY* key) {
  char group[64] = {0};
  size_t n = 0;
  if (!EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &n)) return false;
  std::string_view g(group);
  return g == "P-224" || g == "P-256" || g == "P-384" || g == "P-521" || g == "secp224r1" ||
         g == "prime256v1" || g == "secp384r1" || g == "secp521r1";
}

// Sprig's parsePrivateKeyPEM, with its messages.
Result<PkeyPtr> ParseKeyPem(const std::string& text) {
  auto block = DecodePem(text);
  if (!block) return Invalid("no PEM data in input");
  const auto* p = reinterpret_cast<const unsigned char*>(block->der.data());
  long len = static_cast<long>(block->der.size());
  if (block->type == "PRIVATE KEY") {
    PKCS8_PRIV_KEY_INFO* info = d2i_PKCS8_PRIV_KEY_INFO(nullptr, &p, len);
    PkeyPtr key(info ? EVP_PKCS82PKEY(info) : nullptr);
    PKCS8_PRIV_KEY_INFO_free(info);
    if (!key) return Invalid("decoding PEM as PKCS#8: x509: failed to parse private key");
    int id = EVP_PKEY_get_base_id(key.get());
    if (id != EVP_PKEY_RSA && id != EVP_PKEY_EC && id != EVP_PKEY_ED25519)
      return Invalid("decoding PEM as PKCS#8: x509: PKCS#8 wrapping contained private key with unknown algorithm");
    if (id == EVP_PKEY_EC && !SupportedCurve(key.get()))
      return Invalid("decoding PEM as PKCS#8: x509: failed to parse EC private key embedded in PKCS#8: x509: unknown elliptic curve");
    return key;
  }
  const std::string suffix = " PRIVATE KEY";
  if (block->type.size() < suffix.size() || block->type.compare(block->type.size() - suffix.size(), suffix.size(), suffix) != 0)
    return Invalid("no private key data in PEM block of type " + block->type);
  std::string kind = block->type.substr(0, block->type.size() - suffix.size());
  int id = kind == "RSA" ? EVP_PKEY_RSA : kind == "EC" ? EVP_PKEY_EC : kind == "DSA" ? EVP_PKEY_DSA : 0;
  if (id == 0) return Invalid("invalid private key type " + block->type);
  PkeyPtr key(d2i_PrivateKey(id, nullptr, &p, len));
  if (!key) return Invalid("parsing " + kind + " private key from PEM: x509: malformed private key");
  if (id == EVP_PKEY_EC && !SupportedCurve(key.get()))
    return Invalid("parsing EC private key from PEM: x509: unknown elliptic curve");
  return key;
}

// ------------------------------------------------------------ certificates

// Sprig's `certificate` struct: fields Cert and Key (PEM text).
class Certificate : public Object {
 public:
  Certificate(std::string cert, std::string key) : cert_(std::move(cert)), key_(std::move(key)) {}
  std::string TypeName() const override { return "sprig.certificate"; }
  std::string Format() const override { return "{" + cert_ + " " + key_ + "}"; }
  bool HasMember(std::string_view name) const override { return name == "Cert" || name == "Key"; }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (!HasMember(name)) return Object::Call(name, args);
    if (!args.empty()) return NotFound(std::string(name) + " has arguments but cannot be invoked as function");
    return Value::String(name == "Cert" ? cert_ : key_);
  }
  const std::string& cert() const { return cert_; }
  const std::string& key() const { return key_; }

 private:
  std::string cert_;
  std::string key_;
};

Value CertValue(std::string cert, std::string key) {
  return Value::Obj(std::make_shared<Certificate>(std::move(cert), std::move(key)));
}

// What a certificate template holds besides its keys (Sprig's
// getBaseCertTemplate, and genCA's overrides).
struct CertSpec {
  std::string cn;
  std::vector<std::string> ips;  // raw 4- or 16-byte addresses
  std::vector<std::string> dns;
  int64_t days = 0;
  bool is_ca = false;
};

// Go's net.ParseIP followed by To4 where possible (how x509 stores SANs).
std::optional<std::string> ParseIp(const std::string& s) {
  unsigned char buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return std::string(reinterpret_cast<char*>(buf), 4);
  if (s.find('%') == std::string::npos && inet_pton(AF_INET6, s.c_str(), buf) == 1) {
    static const unsigned char kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (std::memcmp(buf, kV4Prefix, 12) == 0) return std::string(reinterpret_cast<char*>(buf + 12), 4);
    return std::string(reinterpret_cast<char*>(buf), 16);
  }
  return std::nullopt;
}

// Sprig's getNetIPs / getAlternateDNSStrs over the template arguments.
Status FillNames(const Value& ips, const Value& dns, CertSpec* spec) {
  if (ips.kind() == Kind::kSlice) {
    for (const Value& ip : ips.as_list()) {
      if (ip.kind() != Kind::kString) return Invalid("error parsing ip: " + FormatValue(ip) + " is not a string");
      auto raw = ParseIp(ip.as_string());
      if (!raw) return Invalid("error parsing ip: " + ip.as_string());
      spec->ips.push_back(*raw);
    }
  }
  if (dns.kind() == Kind::kSlice) {
    for (const Value& d : dns.as_list()) {
      if (d.kind() != Kind::kString)
        return Invalid("error processing alternate dns name: " + FormatValue(d) + " is not a string");
      spec->dns.push_back(d.as_string());
    }
  }
  return Status::Ok();
}

// encoding/asn1 marshals a string as PrintableString when it can.
bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::strchr(" '()+,-./:=?", c) != nullptr;
    if (!ok || c == 0) return false;
  }
  return true;
}

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

bool AddExt(X509* x, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  return ext && X509_add_ext(x, ext.get(), -1);
}

const EVP_MD* SigningDigest(EVP_PKEY* key) {
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519) return nullptr;
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_EC) {
    int bits = EVP_PKEY_get_bits(key);
    if (bits > 384) return EVP_sha512();
    if (bits > 256) return EVP_sha384();
  }
  return EVP_sha256();
}

// x509.CreateCertificate for the templates Sprig builds: `parent` null means
// self-signed. Returns the certificate and the subject key as PEM.
Result<Value> CreateCert(const CertSpec& spec, EVP_PKEY* subject_key, X509* parent, EVP_PKEY* signer_key) {
  auto fail = [](const std::string& m) { return Invalid("error creating certificate: " + m); };
  int signer_id = EVP_PKEY_get_base_id(signer_key);
  if (signer_id == EVP_PKEY_DSA) return fail("x509: certificate private key does not implement crypto.Signer");
  int subject_id = EVP_PKEY_get_base_id(subject_key);
  if (subject_id == EVP_PKEY_DSA) return fail("x509: unsupported public key type: *dsa.PublicKey");
  if (signer_id != EVP_PKEY_RSA && signer_id != EVP_PKEY_EC && signer_id != EVP_PKEY_ED25519)
    return fail("x509: only RSA, ECDSA and Ed25519 keys supported");
  if (parent != nullptr && X509_check_private_key(parent, signer_key) != 1)
    return fail("x509: provided PrivateKey doesn't match parent's PublicKey");
  for (const std::string& d : spec.dns)
    for (unsigned char c : d)
      if (c >= 0x80) return fail("x509: " + Quote(d) + " cannot be encoded as an IA5String");
  if (!ValidUtf8(spec.cn)) return fail("asn1: string not valid UTF-8");

  X509Ptr x(X509_new());
  if (!x || !X509_set_version(x.get(), X509_VERSION_3)) return fail("out of memory");
  // A random serial below 2^128.
  BnPtr bound(BN_new()), serial(BN_new());
  if (!bound || !serial || !BN_lshift(bound.get(), BN_value_one(), 128) ||
      !BN_rand_range(serial.get(), bound.get()) ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x.get())))
    return fail("serial number generation failed");

  NamePtr subject(X509_NAME_new());
  if (!spec.cn.empty()) {
    int type = Printable(spec.cn) ? V_ASN1_PRINTABLESTRING : V_ASN1_UTF8STRING;
    if (!X509_NAME_add_entry_by_NID(subject.get(), NID_commonName, type,
                                    reinterpret_cast<const unsigned char*>(spec.cn.data()),
                                    static_cast<int>(spec.cn.size()), -1, 0))
      return fail("bad common name");
  }
  X509_set_subject_name(x.get(), subject.get());
  X509_set_issuer_name(x.get(), parent ? X509_get_subject_name(parent) : subject.get());
  if (!X509_gmtime_adj(X509_getm_notBefore(x.get()), 0) ||
      !X509_time_adj_ex(X509_getm_notAfter(x.get()), static_cast<int>(spec.days), 0, nullptr))
    return fail("validity out of range");
  if (!X509_set_pubkey(x.get(), subject_key)) return fail("x509: unsupported public key type");

  // Extensions in the order Go writes them.
  X509* issuer_ctx = parent ? parent : x.get();
  const char* usage = spec.is_ca ? "critical,digitalSignature,keyEncipherment,keyCertSign"
                                 : "critical,digitalSignature,keyEncipherment";
  if (!AddExt(x.get(), issuer_ctx, NID_key_usage, usage) ||
      !AddExt(x.get(), issuer_ctx, NID_ext_key_usage, "serverAuth,clientAuth") ||
      !AddExt(x.get(), issuer_ctx, NID_basic_constraints, spec.is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE"))
    return fail("extension encoding failed");
  if (spec.is_ca && !AddExt(x.get(), issuer_ctx, NID_subject_key_identifier, "hash"))
    return fail("extension encoding failed");
  if (parent != nullptr) {
    const ASN1_OCTET_STRING* parent_ski = X509_get0_subject_key_id(parent);
    bool same_name = X509_NAME_cmp(X509_get_subject_name(parent), subject.get()) == 0;
    if (parent_ski != nullptr && ASN1_STRING_length(parent_ski) > 0 && !same_name) {
      AkidPtr akid(AUTHORITY_KEYID_new());
      akid->keyid = ASN1_OCTET_STRING_dup(parent_ski);
      if (!X509_add1_ext_i2d(x.get(), NID_authority_key_identifier, akid.get(), 0, X509V3_ADD_DEFAULT))
        return fail("extension encoding failed");
    }
  }
  if (!spec.dns.empty() || !spec.ips.empty()) {
    NamesPtr names(sk_GENERAL_NAME_new_null());
    auto push = [&](int type, const std::string& bytes) {
      GENERAL_NAME* gn = GENERAL_NAME_new();
      ASN1_STRING* s = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
      ASN1_STRING_set(s, bytes.data(), static_cast<int>(bytes.size()));
      GENERAL_NAME_set0_value(gn, type, s);
      sk_GENERAL_NAME_push(names.get(), gn);
    };
    for (const std::string& d : spec.dns) push(GEN_DNS, d);
    for (const std::string& ip : spec.ips) push(GEN_IPADD, ip);
    // Go marks the SAN critical when the subject is empty (RFC 5280).
    if (!X509_add1_ext_i2d(x.get(), NID_subject_alt_name, names.get(), spec.cn.empty() ? 1 : 0, X509V3_ADD_DEFAULT))
      return fail("extension encoding failed");
  }
  if (!X509_sign(x.get(), signer_key, SigningDigest(signer_key))) return fail("signing failed");

  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(bio.get(), x.get())) return fail("error pem-encoding certificate");
  ECO_ASSIGN_OR_RETURN(auto key_pem, KeyPem(subject_key));
  return CertValue(BioString(bio.get()), std::move(key_pem));
}

Result<PkeyPtr> CertKey() {
  PkeyPtr key(EVP_RSA_gen(2048));
  if (!key) return Invalid("error generating rsa key: key generation failed");
  return key;
}

Result<PkeyPtr> GivenKey(const Value& pem) {
  auto key = ParseKeyPem(pem.as_string());
  if (!key.ok()) return Invalid("parsing private key: " + key.status().message());
  return key;
}

Result<Value> GenCA(const std::string& cn, int64_t days, Result<PkeyPtr> key) {
  if (!key.ok()) return key.status();
  CertSpec spec{cn, {}, {}, days, true};
  return CreateCert(spec, key->get(), nullptr, key->get());
}

Result<Value> GenSelfSigned(const ValueList& a, Result<PkeyPtr> key) {
  if (!key.ok()) return key.status();
  CertSpec spec{a[0].as_string(), {}, {}, a[3].as_int(), false};
  Status s = FillNames(a[1], a[2], &spec);
  if (!s.ok()) return s;
  return CreateCert(spec, key->get(), nullptr, key->get());
}

const Certificate* AsCertificate(const Value& v) {
  return v.kind() == Kind::kObject ? dynamic_cast<const Certificate*>(v.as_object()) : nullptr;
}

// The CA argument must be a sprig.certificate, as Go's call checks.
Status CheckCa(const Value& v) {
  if (AsCertificate(v)) return Status::Ok();
  if (v.is_nil()) return Invalid("invalid value; expected sprig.certificate");
  return Invalid("wrong type for value; expected sprig.certificate; got " + v.TypeName());
}

Result<Value> GenSigned(const ValueList& a, const Certificate& ca, Result<PkeyPtr> key) {
  if (!key.ok()) return key.status();
  auto block = DecodePem(ca.cert());
  if (!block) return Invalid("unable to decode certificate");
  const auto* p = reinterpret_cast<const unsigned char*>(block->der.data());
  X509Ptr parent(d2i_X509(nullptr, &p, static_cast<long>(block->der.size())));
  if (!parent) return Invalid("error parsing certificate: decodedSignerCert.Bytes: x509: malformed certificate");
  auto signer = ParseKeyPem(ca.key());
  if (!signer.ok()) return Invalid("error parsing private key: " + signer.status().message());
  CertSpec spec{a[0].as_string(), {}, {}, a[3].as_int(), false};
  Status s = FillNames(a[1], a[2], &spec);
  if (!s.ok()) return s;
  return CreateCert(spec, key->get(), parent.get(), signer->get());
}

Result<Value> BuildCustomCert(const std::string& b64cert, const std::string& b64key) {
  auto cert = Base64Decode(b64cert);
  if (!cert.ok()) return Invalid("unable to decode base64 certificate");
  auto key = Base64Decode(b64key);
  if (!key.ok()) return Invalid("unable to decode base64 private key");
  auto block = DecodePem(*cert);
  if (!block) return Invalid("unable to decode certificate");
  const auto* p = reinterpret_cast<const unsigned char*>(block->der.data());
  X509Ptr parsed(d2i_X509(nullptr, &p, static_cast<long>(block->der.size())));
  if (!parsed) return Invalid("error parsing certificate: decodedCert.Bytes: x509: malformed certificate");
  auto pkey = ParseKeyPem(*key);
  if (!pkey.ok()) return Invalid("error parsing private key: " + pkey.status().message());
  return CertValue(std::move(cert).value(), std::move(key).value());
}

Value Str(std::string s) { return Value::String(std::move(s)); }

}  // namespace

void AddCryptoFuncs(FuncMap* f) {
  using funcs_internal::Add;  // block scope: a unity build would carry a file-scope one on
  auto hash = [f](const char* name, const EVP_MD* (*md)()) {
    Add(f, name, {A::kString}, false, [md](CallContext&, const ValueList& a) -> Result<Value> {
      return Str(DigestHex(md(), a[0].as_string()));
    });
  };
  hash("sha1sum", EVP_sha1);
  hash("sha256sum", EVP_sha256);
  hash("sha512sum", EVP_sha512);  // Sprig 3.3, in newer Helm
  Add(f, "adler32sum", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    const std::string& s = a[0].as_string();
    uLong sum = adler32(adler32(0, nullptr, 0), reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()));
    return Str(std::to_string(sum));
  });
  Add(f, "b32enc", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Str(Base32Encode(a[0].as_string()));
  });
  Add(f, "b32dec", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    auto r = Base32Decode(a[0].as_string());
    return Str(r.ok() ? std::move(r).value() : r.status().message());  // Sprig returns the error text
  });

  Add(f, "bcrypt", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Str(Bcrypt(a[0].as_string()));
  });
  Add(f, "htpasswd", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    const std::string& user = a[0].as_string();
    if (user.find(':') != std::string::npos) return Str("invalid username: " + user);
    return Str(user + ":" + Bcrypt(a[1].as_string()));
  });
  Add(f, "derivePassword", {A::kInt, A::kString, A::kString, A::kString, A::kString}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> {
        return Str(DerivePassword(static_cast<uint32_t>(a[0].as_int()), a[1].as_string(), a[2].as_string(),
                                  a[3].as_string(), a[4].as_string()));
      });
  Add(f, "encryptAES", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto r, EncryptAes(a[0].as_string(), a[1].as_string()));
    return Str(std::move(r));
  });
  Add(f, "decryptAES", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto r, DecryptAes(a[0].as_string(), a[1].as_string()));
    return Str(std::move(r));
  });

  Add(f, "genPrivateKey", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    auto key = GenerateKey(a[0].as_string());
    if (!key.ok()) return Str(key.status().message());  // Sprig returns its errors as the text
    auto pem = KeyPem(key->get());
    return Str(pem.ok() ? std::move(pem).value() : pem.status().message());
  });
  Add(f, "buildCustomCert", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return BuildCustomCert(a[0].as_string(), a[1].as_string());
  });
  Add(f, "genCA", {A::kString, A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return GenCA(a[0].as_string(), a[1].as_int(), CertKey());
  });
  Add(f, "genCAWithKey", {A::kString, A::kInt, A::kString}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> {
        return GenCA(a[0].as_string(), a[1].as_int(), GivenKey(a[2]));
      });
  Add(f, "genSelfSignedCert", {A::kString, A::kList, A::kList, A::kInt}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> { return GenSelfSigned(a, CertKey()); });
  Add(f, "genSelfSignedCertWithKey", {A::kString, A::kList, A::kList, A::kInt, A::kString}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> { return GenSelfSigned(a, GivenKey(a[4])); });
  Add(f, "genSignedCert", {A::kString, A::kList, A::kList, A::kInt, A::kAny}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> {
        Status s = CheckCa(a[4]);
        if (!s.ok()) return s;
        return GenSigned(a, *AsCertificate(a[4]), CertKey());
      });
  Add(f, "genSignedCertWithKey", {A::kString, A::kList, A::kList, A::kInt, A::kAny, A::kString}, false,
      [](CallContext&, const ValueList& a) -> Result<Value> {
        Status s = CheckCa(a[4]);
        if (!s.ok()) return s;
        return GenSigned(a, *AsCertificate(a[4]), GivenKey(a[5]));
      });

  static constexpr std::string_view kUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  static constexpr std::string_view kLower = "abcdefghijklmnopqrstuvwxyz";
  static constexpr std::string_view kDigits = "0123456789";
  static const std::string kAlpha = std::string(kUpper) + std::string(kLower);
  static const std::string kAlphaNum = kAlpha + std::string(kDigits);
  static const std::string kAscii = [] {
    std::string s;
    for (char c = 32; c < 127; ++c) s += c;
    return s;
  }();
  auto rand_str = [f](const char* name, const std::string* alphabet) {
    Add(f, name, {A::kInt}, false, [alphabet](CallContext&, const ValueList& a) -> Result<Value> {
      return RandomString(a[0].as_int(), *alphabet);
    });
  };
  static const std::string kNumeric(kDigits);
  rand_str("randAlphaNum", &kAlphaNum);
  rand_str("randAlpha", &kAlpha);
  rand_str("randNumeric", &kNumeric);
  rand_str("randAscii", &kAscii);
  Add(f, "randBytes", {A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    int64_t n = a[0].as_int();
    if (n < 0) return Invalid("runtime error: makeslice: len out of range");
    if (n > (int64_t{1} << 26)) return Invalid("randBytes: " + std::to_string(n) + " bytes is too many");
    std::string buf(static_cast<size_t>(n), '\0');
    RAND_bytes(reinterpret_cast<unsigned char*>(buf.data()), static_cast<int>(n));
    return Str(Base64Encode(buf));
  });
  Add(f, "randInt", {A::kInt, A::kInt}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    int64_t lo = a[0].as_int(), hi = a[1].as_int();
    if (hi <= lo) return Invalid("invalid argument to Intn");
    uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    return Value::Int(static_cast<int64_t>(static_cast<uint64_t>(lo) + RandBelow(span)));
  });
  Add(f, "uuidv4", {}, false, [](CallContext&, const ValueList&) -> Result<Value> { return Str(UuidV4()); });
}

}  // namespace eco::helm
