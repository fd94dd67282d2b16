// Sprig's crypto, encoding, certificate and random functions: published
// vectors where the output is deterministic, and for random output the
// properties a consumer relies on, checked with OpenSSL and libxcrypt.
#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <re2/re2.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/base64.h"
#include "helm/funcs.h"
#include "helm/template.h"

namespace eco::helm {
namespace {

Result<std::string> Render(const std::string& text) {
  TemplateSet set(HelmFuncs());
  Status s = set.Parse("main", text);
  if (!s.ok()) return s;
  return set.Execute("main", Value::Map({}));
}

std::string Must(const std::string& text) {
  auto r = Render(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : std::string();
}

std::string ErrorOf(const std::string& text) {
  auto r = Render(text);
  EXPECT_FALSE(r.ok()) << text << " rendered " << (r.ok() ? *r : "");
  return r.ok() ? std::string() : r.status().message();
}

// Calls a registered function directly, for arguments a template cannot spell.
Result<Value> Call(const std::string& name, const ValueList& args) {
  CallContext ctx;
  return HelmFuncs()->at(name).fn(ctx, args);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t p = 0;
  for (;;) {
    size_t q = s.find(sep, p);
    out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) return out;
    p = q + 1;
  }
}

std::string Unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

X509Ptr ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return X509Ptr(x);
}

PkeyPtr ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return PkeyPtr(k);
}

// Seconds between notBefore and notAfter.
long ValiditySeconds(X509* x) {
  int days = 0, secs = 0;
  EXPECT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
  return days * 86400L + secs;
}

std::string CommonName(X509* x) {
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, sizeof buf);
  return buf;
}

// ------------------------------------------------------------ hashes

TEST(CryptoFuncs, ShaVectorsFromFips180) {
  EXPECT_EQ(Must(R"({{ "abc" | sha1sum }})"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Must(R"({{ "abc" | sha256sum }})"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Must(R"({{ "abc" | sha512sum }})"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(Must(R"({{ "" | sha256sum }})"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CryptoFuncs, Adler32PrintsTheChecksumInDecimal) {
  // "Wikipedia" is the worked example of the Adler-32 article: 0x11E60398.
  EXPECT_EQ(Must(R"({{ adler32sum "Wikipedia" }})"), "300286872");
  EXPECT_EQ(Must(R"({{ adler32sum "" }})"), "1");
}

// ------------------------------------------------------------ base32

TEST(CryptoFuncs, Base32Rfc4648Vectors) {
  const std::pair<const char*, const char*> kVectors[] = {
      {"", ""},          {"f", "MY======"},       {"fo", "MZXQ===="},         {"foo", "MZXW6==="},
      {"foob", "MZXW6YQ="}, {"fooba", "MZXW6YTB"}, {"foobar", "MZXW6YTBOI======"}};
  for (const auto& [plain, enc] : kVectors) {
    EXPECT_EQ(Must(std::string("{{ b32enc \"") + plain + "\" }}"), enc) << plain;
    EXPECT_EQ(Must(std::string("{{ b32dec \"") + enc + "\" }}"), plain) << enc;
  }
}

TEST(CryptoFuncs, Base32DecodeErrorsReportGoOffsets) {
  // Go's encoding/base32 TestDecodeCorrupt table (offset -1: valid).
  const std::pair<const char*, int> kCases[] = {
      {"!!!!", 0},      {"x===", 0},      {"AA=A====", 2}, {"AAA=AAAA", 3}, {"MMMMMMMMM", 8}, {"MMMMMM", 0},
      {"A=", 1},        {"AA=", 3},       {"AA==", 4},     {"AA===", 5},    {"AAAA=", 5},     {"AAAA==", 6},
      {"AAAAA=", 6},    {"AAAAA==", 7},   {"A=======", 1}, {"AA======", -1}, {"AAA=====", 3},  {"AAAA====", -1},
      {"AAAAA===", -1}, {"AAAAAA==", 6},  {"AAAAAAA=", -1}, {"AAAAAAAA", -1}};
  for (const auto& [in, offset] : kCases) {
    std::string out = Must(std::string("{{ b32dec \"") + in + "\" }}");
    if (offset < 0) {
      EXPECT_EQ(out.find("illegal"), std::string::npos) << in << " -> " << out;
    } else {
      EXPECT_EQ(out, "illegal base32 data at input byte " + std::to_string(offset)) << in;
    }
  }
}

TEST(CryptoFuncs, Base64DecodeErrorsReportGoOffsets) {
  // Go's encoding/base64 TestDecodeCorrupt table, seen through decryptAES,
  // which decodes its input with base64.StdEncoding.
  const std::pair<const char*, int> kCases[] = {
      {"!!!!", 0}, {"====", 0}, {"x===", 1}, {"=AAA", 0},    {"A=AA", 1},     {"AA=A", 2},
      {"AA==A", 4}, {"AAA=AAAA", 4}, {"AAAAA", 4}, {"AAAAAA", 4}, {"A=", 1}, {"A==", 1},
      {"AA=", 3},  {"AAAAAA=", 7}, {"YWJjZA=====", 8}, {"A!\\n", 1}, {"A=\\n", 1}};
  for (const auto& [in, offset] : kCases) {
    std::string err = ErrorOf(std::string("{{ decryptAES \"k\" \"") + in + "\" }}");
    EXPECT_NE(err.find("illegal base64 data at input byte " + std::to_string(offset)), std::string::npos)
        << in << ": " << err;
  }
}

TEST(CryptoFuncs, Base64DecodeSkipsNewlinesAsGoDoes) {
  // The valid entries of Go's TestDecodeCorrupt table.
  for (const char* in : {"", "\n", "AAA=\n", "AAAA\n", "AA==", "AAA=", "AAAA"})
    EXPECT_TRUE(::eco::Base64Decode(in).ok()) << in;
  auto r = ::eco::Base64Decode("YWJj\r\nZA==");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "abcd");
  auto bad = ::eco::Base64Decode("YWJjZA=====");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "illegal base64 data at input byte 8");
}

// ------------------------------------------------------- derivePassword

TEST(CryptoFuncs, DerivePasswordMatchesMasterPasswordV3Vectors) {
  // The reference vector of the Master Password (Spectre) project.
  EXPECT_EQ(Must(R"({{ derivePassword 1 "long" "banana colored duckling" "Robert Lee Mitchell" "masterpasswordapp.com" }})"),
            "Jejr5[RepuSosp");
  // Published test/test/example.com vectors.
  EXPECT_EQ(Must(R"({{ derivePassword 1 "long" "test" "test" "example.com" }})"), "JivrYeloQasg8[");
  EXPECT_EQ(Must(R"({{ derivePassword 1 "medium" "test" "test" "example.com" }})"), "JivRah9(");
  EXPECT_EQ(Must(R"({{ derivePassword 1 "nope" "p" "u" "s" }})"), "cannot find password template nope");
}

// --------------------------------------------------------------- bcrypt

TEST(CryptoFuncs, HtpasswdIsAVerifiableBcryptHash) {
  std::string line = Must(R"({{ htpasswd "admin" "s3cret" }})");
  ASSERT_EQ(line.rfind("admin:", 0), 0u) << line;
  std::string hash = line.substr(6);
  EXPECT_TRUE(RE2::FullMatch(hash, R"(\$2a\$10\$[./A-Za-z0-9]{53})")) << hash;
  crypt_data data{};
  const char* again = crypt_rn("s3cret", hash.c_str(), &data, sizeof data);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(hash, again);
  crypt_data other{};
  const char* wrong = crypt_rn("s3cres", hash.c_str(), &other, sizeof other);
  EXPECT_TRUE(wrong == nullptr || hash != wrong);
  // Two hashes of one password differ by their salt.
  EXPECT_NE(Must(R"({{ bcrypt "x" }})"), Must(R"({{ bcrypt "x" }})"));
}

TEST(CryptoFuncs, HtpasswdRejectsColonAndLongPasswords) {
  EXPECT_EQ(Must(R"({{ htpasswd "a:b" "pw" }})"), "invalid username: a:b");
  EXPECT_EQ(Must("{{ bcrypt (repeat 73 \"x\") }}"),
            "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes");
  EXPECT_EQ(Must("{{ bcrypt (repeat 72 \"x\") | len }}"), "60");
}

// ------------------------------------------------------------------ AES

TEST(CryptoFuncs, DecryptAesNistSp80038aVector) {
  // SP 800-38A F.2.5 (CBC-AES256): the fourth plaintext block ends in 0x10,
  // which decryptAES takes for a whole block of PKCS#7 padding.
  std::string key = Unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
  std::string iv = Unhex("000102030405060708090a0b0c0d0e0f");
  std::string ct = Unhex(
      "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
      "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b");
  auto b64 = Call("b64enc", {Value::String(iv + ct)});
  ASSERT_TRUE(b64.ok());
  auto plain = Call("decryptAES", {Value::String(key), *b64});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->as_string(),
            Unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                  "30c81c46a35ce411e5fbc1191a0a52ef"));
}

TEST(CryptoFuncs, EncryptAesIsIvThenPkcs7CbcUnderAZeroPaddedKey) {
  const std::string password = "secretkey";
  const std::string plain = "sixteen bytes!!!";  // a full block: padding adds a block
  auto enc = Call("encryptAES", {Value::String(password), Value::String(plain)});
  ASSERT_TRUE(enc.ok());
  auto raw = Call("b64dec", {*enc});
  ASSERT_TRUE(raw.ok());
  const std::string& bytes = raw->as_string();
  ASSERT_EQ(bytes.size(), 16u + 32u);
  std::string key = password + std::string(32 - password.size(), '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  std::string out(bytes.size(), '\0');
  int n1 = 0, n2 = 0;
  ASSERT_EQ(EVP_DecryptInit_ex(ctx, EVP_aes_256_cbc(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                               reinterpret_cast<const unsigned char*>(bytes.data())),
            1);
  ASSERT_EQ(EVP_DecryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &n1,
                              reinterpret_cast<const unsigned char*>(bytes.data()) + 16, 32),
            1);
  ASSERT_EQ(EVP_DecryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + n1, &n2), 1);
  EVP_CIPHER_CTX_free(ctx);
  EXPECT_EQ(out.substr(0, static_cast<size_t>(n1 + n2)), plain);
}

TEST(CryptoFuncs, AesRoundTripsAndEdgeCases) {
  for (const char* text : {"plaintext", "x", "exactly16bytes!!", "longer than one block, with ünïcödé"}) {
    EXPECT_EQ(Must(std::string("{{ encryptAES \"pw\" \"") + text + "\" | decryptAES \"pw\" }}"), text);
  }
  // Keys longer than 32 bytes are cut to 32.
  EXPECT_EQ(Must(R"({{ encryptAES (repeat 40 "k") "v" | decryptAES (repeat 32 "k") }})"), "v");
  EXPECT_EQ(Must(R"({{ encryptAES "pw" "" }}|{{ decryptAES "pw" "" }})"), "|");
  // A fresh IV each time.
  EXPECT_NE(Must(R"({{ encryptAES "pw" "same" }})"), Must(R"({{ encryptAES "pw" "same" }})"));
  EXPECT_NE(ErrorOf(R"({{ decryptAES "pw" "AAAA" }})").find("slice bounds out of range [:16] with capacity 3"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ decryptAES "pw" (repeat 24 "A") }})").find("crypto/cipher: input not full blocks"),
            std::string::npos);
}

// ---------------------------------------------------------------- random

TEST(CryptoFuncs, RandomStringsHaveTheirLengthAndAlphabet) {
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(RE2::FullMatch(Must("{{ randAlphaNum 40 }}"), "[A-Za-z0-9]{40}"));
    EXPECT_TRUE(RE2::FullMatch(Must("{{ randAlpha 40 }}"), "[A-Za-z]{40}"));
    EXPECT_TRUE(RE2::FullMatch(Must("{{ randNumeric 40 }}"), "[0-9]{40}"));
    EXPECT_TRUE(RE2::FullMatch(Must("{{ randAscii 40 }}"), "[\\x20-\\x7e]{40}"));
  }
  EXPECT_EQ(Must("{{ randAlphaNum 0 }}|{{ randAlpha -3 }}"), "|");
  // Over many draws every digit shows up (a stuck generator would not).
  std::set<char> seen;
  for (char c : Must("{{ randNumeric 2000 }}")) seen.insert(c);
  EXPECT_EQ(seen.size(), 10u);
}

TEST(CryptoFuncs, RandBytesIsBase64OfThatManyBytes) {
  auto raw = Call("b64dec", {Value::String(Must("{{ randBytes 33 }}"))});
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->as_string().size(), 33u);
  EXPECT_EQ(Must("{{ randBytes 0 }}"), "");
  EXPECT_NE(ErrorOf("{{ randBytes -1 }}").find("makeslice: len out of range"), std::string::npos);
}

TEST(CryptoFuncs, RandIntStaysInHalfOpenRange) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string v = Must("{{ randInt -2 3 }}");
    seen.insert(v);
    EXPECT_TRUE(v == "-2" || v == "-1" || v == "0" || v == "1" || v == "2") << v;
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(Must("{{ randInt 7 8 | kindOf }}"), "int");
  EXPECT_NE(ErrorOf("{{ randInt 5 5 }}").find("invalid argument to Intn"), std::string::npos);
}

TEST(CryptoFuncs, Uuidv4IsVersion4Rfc4122) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string u = Must("{{ uuidv4 }}");
    EXPECT_TRUE(RE2::FullMatch(u, "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")) << u;
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 50u);
}

// ------------------------------------------------------------------ keys

TEST(CryptoFuncs, GenPrivateKeyWritesGoPemBlocks) {
  struct Case {
    const char* type;
    const char* block;
    int id;
    int bits;
  };
  const Case kCases[] = {{"rsa", "RSA PRIVATE KEY", EVP_PKEY_RSA, 4096},
                         {"ecdsa", "EC PRIVATE KEY", EVP_PKEY_EC, 256},
                         {"ed25519", "PRIVATE KEY", EVP_PKEY_ED25519, 256},
                         {"dsa", "DSA PRIVATE KEY", EVP_PKEY_DSA, 2048}};
  for (const Case& c : kCases) {
    std::string pem = Must(std::string("{{ genPrivateKey \"") + c.type + "\" }}");
    EXPECT_EQ(pem.rfind(std::string("-----BEGIN ") + c.block + "-----\n", 0), 0u) << pem;
    EXPECT_TRUE(pem.size() > 30 && pem.substr(pem.size() - 30).find(std::string("-----END ") + c.block + "-----\n") !=
                                       std::string::npos)
        << pem;
    PkeyPtr key = ParseKey(pem);
    ASSERT_TRUE(key) << c.type;
    EXPECT_EQ(EVP_PKEY_get_base_id(key.get()), c.id) << c.type;
    EXPECT_EQ(EVP_PKEY_get_bits(key.get()), c.bits) << c.type;
  }
  EXPECT_EQ(Must(R"({{ genPrivateKey "rsa1" }})"), "Unknown type rsa1");
}

// ---------------------------------------------------------- certificates

TEST(CryptoFuncs, GenCAIsASelfSignedCertificateAuthority) {
  std::string out = Must(R"({{ $ca := genCA "my-ca" 365 }}{{ $ca.Cert }}|{{ $ca.Key }}|{{ typeOf $ca }})");
  auto parts = Split(out, '|');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2], "sprig.certificate");
  X509Ptr ca = ParseCert(parts[0]);
  ASSERT_TRUE(ca);
  PkeyPtr key = ParseKey(parts[1]);
  ASSERT_TRUE(key);
  EXPECT_EQ(parts[1].rfind("-----BEGIN RSA PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(EVP_PKEY_get_bits(key.get()), 2048);
  EXPECT_EQ(X509_check_private_key(ca.get(), key.get()), 1);
  EXPECT_EQ(X509_verify(ca.get(), key.get()), 1);
  EXPECT_EQ(CommonName(ca.get()), "my-ca");
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_get_version(ca.get()), X509_VERSION_3);
  uint32_t ku = X509_get_key_usage(ca.get());
  EXPECT_TRUE(ku & KU_KEY_CERT_SIGN);
  EXPECT_TRUE(ku & KU_DIGITAL_SIGNATURE);
  EXPECT_TRUE(ku & KU_KEY_ENCIPHERMENT);
  EXPECT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
  long secs = ValiditySeconds(ca.get());
  EXPECT_GE(secs, 365L * 86400 - 2);
  EXPECT_LE(secs, 365L * 86400 + 2);
  // The serial is random: two CAs differ.
  X509Ptr other = ParseCert(Split(Must(R"({{ (genCA "my-ca" 365).Cert }})"), '|')[0]);
  ASSERT_TRUE(other);
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca.get()), X509_get0_serialNumber(other.get())), 0);
}

TEST(CryptoFuncs, GenSignedCertIsSignedByTheCAWithSans) {
  std::string out = Must(
      R"({{ $ca := genCA "ca" 30 }}{{ $c := genSignedCert "svc" (list "10.0.0.1" "::1") (list "svc.ns.svc" "svc") 7 $ca }})"
      R"({{ $ca.Cert }}|{{ $c.Cert }}|{{ $c.Key }})");
  auto parts = Split(out, '|');
  ASSERT_EQ(parts.size(), 3u);
  X509Ptr ca = ParseCert(parts[0]);
  X509Ptr leaf = ParseCert(parts[1]);
  PkeyPtr key = ParseKey(parts[2]);
  ASSERT_TRUE(ca && leaf && key);
  EXPECT_EQ(X509_check_private_key(leaf.get(), key.get()), 1);
  EXPECT_EQ(X509_check_issued(ca.get(), leaf.get()), X509_V_OK);
  EXPECT_EQ(X509_verify(leaf.get(), X509_get0_pubkey(ca.get())), 1);
  EXPECT_EQ(X509_check_ca(leaf.get()), 0);
  EXPECT_EQ(CommonName(leaf.get()), "svc");
  EXPECT_EQ(X509_check_host(leaf.get(), "svc.ns.svc", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(leaf.get(), "svc", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf.get(), "10.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf.get(), "10.0.0.2", 0), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(leaf.get()) & XKU_SSL_SERVER);
  EXPECT_TRUE(X509_get_extended_key_usage(leaf.get()) & XKU_SSL_CLIENT);
  // The authority key id names the CA's subject key id.
  const ASN1_OCTET_STRING* akid = X509_get0_authority_key_id(leaf.get());
  ASSERT_NE(akid, nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(akid, X509_get0_subject_key_id(ca.get())), 0);
  long secs = ValiditySeconds(leaf.get());
  EXPECT_GE(secs, 7L * 86400 - 2);
  EXPECT_LE(secs, 7L * 86400 + 2);

  // A full chain verification through an X509_STORE.
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf.get(), nullptr);
  EXPECT_EQ(X509_verify_cert(ctx), 1) << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
}

TEST(CryptoFuncs, GenSelfSignedCertCarriesNamesAndVerifiesItself) {
  std::string out =
      Must(R"({{ $c := genSelfSignedCert "foo.com" (list "10.0.0.1") (list "foo.com" "www.foo.com") 365 }})"
           R"({{ $c.Cert }}|{{ $c.Key }})");
  auto parts = Split(out, '|');
  ASSERT_EQ(parts.size(), 2u);
  X509Ptr cert = ParseCert(parts[0]);
  PkeyPtr key = ParseKey(parts[1]);
  ASSERT_TRUE(cert && key);
  EXPECT_EQ(X509_verify(cert.get(), key.get()), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_check_host(cert.get(), "www.foo.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.1", 0), 1);
  EXPECT_EQ(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN, 0u);
  // nil lists give a certificate without SANs.
  X509Ptr bare = ParseCert(Must(R"({{ (genSelfSignedCert "bare" nil nil 1).Cert }})"));
  ASSERT_TRUE(bare);
  EXPECT_EQ(X509_get_ext_by_NID(bare.get(), NID_subject_alt_name, -1), -1);
}

TEST(CryptoFuncs, WithKeyVariantsUseTheGivenKey) {
  for (const char* type : {"rsa", "ecdsa", "ed25519"}) {
    std::string t = std::string("{{ $k := genPrivateKey \"") + type +
                    "\" }}{{ $ca := genCAWithKey \"ca\" 5 $k }}"
                    "{{ $s := genSelfSignedCertWithKey \"s\" nil (list \"s.local\") 5 $k }}"
                    "{{ $l := genSignedCertWithKey \"l\" nil nil 5 $ca $k }}"
                    "{{ $k }}|{{ $ca.Key }}|{{ $ca.Cert }}|{{ $s.Cert }}|{{ $l.Cert }}|{{ $l.Key }}";
    auto parts = Split(Must(t), '|');
    ASSERT_EQ(parts.size(), 6u) << type;
    EXPECT_EQ(parts[1], parts[0]) << type;
    EXPECT_EQ(parts[5], parts[0]) << type;
    PkeyPtr key = ParseKey(parts[0]);
    ASSERT_TRUE(key) << type;
    for (int i : {2, 3, 4}) {
      X509Ptr c = ParseCert(parts[i]);
      ASSERT_TRUE(c) << type << " " << i;
      EXPECT_EQ(X509_check_private_key(c.get(), key.get()), 1) << type << " " << i;
    }
    X509Ptr ca = ParseCert(parts[2]);
    X509Ptr leaf = ParseCert(parts[4]);
    EXPECT_EQ(X509_verify(leaf.get(), X509_get0_pubkey(ca.get())), 1) << type;
  }
}

TEST(CryptoFuncs, CertificateErrorsReadAsSprigs) {
  EXPECT_NE(ErrorOf(R"({{ genCAWithKey "ca" 5 "nope" }})").find("parsing private key: no PEM data in input"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ genCAWithKey "ca" 5 (genPrivateKey "dsa") }})")
                .find("error creating certificate: x509: certificate private key does not implement crypto.Signer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ genSelfSignedCert "x" (list "300.1.2.3") nil 5 }})").find("error parsing ip: 300.1.2.3"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ genSelfSignedCert "x" (list 1) nil 5 }})").find("error parsing ip: 1 is not a string"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ genSignedCert "x" nil nil 5 (dict) }})")
                .find("wrong type for value; expected sprig.certificate; got map[string]interface {}"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({{ buildCustomCert "!!" "" }})").find("unable to decode base64 certificate"),
            std::string::npos);
}

TEST(CryptoFuncs, BuildCustomCertKeepsTheGivenPem) {
  std::string out = Must(
      R"({{ $ca := genCA "ca" 5 }}{{ $c := buildCustomCert ($ca.Cert | b64enc) ($ca.Key | b64enc) }})"
      R"({{ eq $c.Cert $ca.Cert }}|{{ eq $c.Key $ca.Key }}|{{ $s := genSignedCert "x" nil nil 5 $c }}{{ $s.Cert | len | lt 100 }})");
  EXPECT_EQ(out, "true|true|true");
  EXPECT_NE(ErrorOf(R"({{ buildCustomCert ("x" | b64enc) ("y" | b64enc) }})").find("unable to decode certificate"),
            std::string::npos);
}

TEST(CryptoFuncs, GetHostByNameIsEmptyOffline) {
  EXPECT_EQ(Must(R"({{ getHostByName "example.com" }})"), "");
}

}  // namespace
}  // namespace eco::helm
