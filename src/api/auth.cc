#include "api/auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/base64.h"

namespace eco::api {
namespace {

using Digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

Digest Sha256(std::string_view s) {
  Digest d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

struct DigestHash {
  size_t operator()(const Digest& d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof h);  // already uniformly distributed
    return h;
  }
};

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The path's segments after "/v2/".
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool IsRead(std::string_view method) { return method == "GET" || method == "HEAD"; }

// base64url without padding (RFC 7515), as JWTs and JWKs write binary;
// nothing skipped, unused bits zero.
std::optional<std::string> Base64Url(std::string_view in) {
  auto decoded = Base64Decode(
      in, {.url_alphabet = true, .padded = false, .strict = true, .skip = Base64Decoding::Skip::kNone});
  if (!decoded.ok()) return std::nullopt;
  return std::move(*decoded);
}

// One verification key of a JWKS.
struct Jwk {
  std::string kid;
  std::string alg;  // "RS256" or "ES256"
  std::shared_ptr<EVP_PKEY> key;
};

Result<std::shared_ptr<EVP_PKEY>> FromParams(const char* type, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)> params(OSSL_PARAM_BLD_to_param(bld),
                                                                 OSSL_PARAM_free);
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr), EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return Invalid(std::string("not a usable ") + type + " public key");
  }
  return std::shared_ptr<EVP_PKEY>(raw, EVP_PKEY_free);
}

Result<Jwk> ParseJwk(const nlohmann::json& k) {
  auto str = [&](const char* f) { return k.contains(f) && k[f].is_string() ? k[f].get<std::string>() : ""; };
  Jwk out;
  out.kid = str("kid");
  const std::string kty = str("kty");
  std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)> bld(OSSL_PARAM_BLD_new(),
                                                                      OSSL_PARAM_BLD_free);
  if (kty == "RSA") {
    auto n = Base64Url(str("n")), e = Base64Url(str("e"));
    if (!n || !e || n->empty() || e->empty()) return Invalid("RSA key without n and e");
    std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), static_cast<int>(n->size()), nullptr),
        BN_free);
    std::unique_ptr<BIGNUM, decltype(&BN_free)> be(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), static_cast<int>(e->size()), nullptr),
        BN_free);
    if (!bn || !be || BN_num_bits(bn.get()) < 2048) return Invalid("RSA keys must have at least 2048 bits");
    OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn.get());
    OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, be.get());
    ECO_ASSIGN_OR_RETURN(auto key, FromParams("RSA", bld.get()));
    out.alg = "RS256";
    out.key = key;
  } else if (kty == "EC") {
    if (str("crv") != "P-256") return Invalid("EC keys must be on curve P-256 (ES256)");
    auto x = Base64Url(str("x")), y = Base64Url(str("y"));
    if (!x || !y || x->size() != 32 || y->size() != 32) return Invalid("EC key without 32-byte x and y");
    std::string pub = "\x04" + *x + *y;
    OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
    OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, pub.data(), pub.size());
    ECO_ASSIGN_OR_RETURN(auto key, FromParams("EC", bld.get()));
    out.alg = "ES256";
    out.key = key;
  } else {
    return Invalid("key type \"" + kty + "\" is not supported (RSA or EC)");
  }
  if (const std::string alg = str("alg"); !alg.empty() && alg != out.alg) {
    return Invalid("key alg " + alg + " does not match its type (" + out.alg + ")");
  }
  return out;
}

// JWS signature check of `input` with SHA-256.
bool VerifySignature(const Jwk& k, std::string_view input, std::string sig) {
  if (k.alg == "ES256") {
    // JWS carries r||s (32 bytes each); OpenSSL verifies DER.
    if (sig.size() != 64) return false;
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> es(ECDSA_SIG_new(), ECDSA_SIG_free);
    BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()), 32, nullptr);
    BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()) + 32, 32, nullptr);
    if (!es || !r || !s || ECDSA_SIG_set0(es.get(), r, s) != 1) {
      BN_free(r);
      BN_free(s);
      return false;
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(es.get(), &der);
    if (len <= 0) return false;
    sig.assign(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, k.key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
}

}  // namespace

struct Authenticator::Impl {
  std::unordered_map<Digest, Principal, DigestHash> by_token;
  std::vector<Jwk> jwks;
  std::string issuer, audience;

  Result<Principal> FromJwt(std::string_view token) const;
};

Result<Principal> Authenticator::Impl::FromJwt(std::string_view token) const {
  const size_t d1 = token.find('.'), d2 = token.find('.', d1 + 1);
  if (d2 == std::string_view::npos || token.find('.', d2 + 1) != std::string_view::npos)
    return PermissionDenied("malformed bearer token");
  auto head = Base64Url(token.substr(0, d1));
  auto body = Base64Url(token.substr(d1 + 1, d2 - d1 - 1));
  auto sig = Base64Url(token.substr(d2 + 1));
  if (!head || !body || !sig) return PermissionDenied("malformed JWT (not base64url)");
  auto h = nlohmann::json::parse(*head, nullptr, false);
  auto c = nlohmann::json::parse(*body, nullptr, false);
  if (!h.is_object() || !c.is_object()) return PermissionDenied("malformed JWT (header or claims not JSON)");
  const std::string alg = h.value("alg", "");
  if (alg != "RS256" && alg != "ES256") {
    return PermissionDenied("JWT algorithm \"" + alg + "\" is not accepted (RS256 or ES256)");
  }
  const std::string kid = h.contains("kid") && h["kid"].is_string() ? h["kid"].get<std::string>() : "";
  bool verified = false, candidate = false;
  for (const Jwk& k : jwks) {
    if (k.alg != alg || (!kid.empty() && k.kid != kid)) continue;
    candidate = true;
    if (VerifySignature(k, token.substr(0, d2), *sig)) {
      verified = true;
      break;
    }
  }
  if (!candidate) return PermissionDenied("no key in the JWKS for this JWT (kid \"" + kid + "\", " + alg + ")");
  if (!verified) return PermissionDenied("JWT signature does not verify");
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  constexpr int64_t kSkew = 60;
  if (!c.contains("exp") || !c["exp"].is_number()) return PermissionDenied("JWT without exp");
  if (c["exp"].get<double>() + kSkew < static_cast<double>(now)) return PermissionDenied("JWT expired");
  if (c.contains("nbf") && c["nbf"].is_number() && c["nbf"].get<double>() - kSkew > static_cast<double>(now))
    return PermissionDenied("JWT not valid yet (nbf)");
  if (c.value("iss", "") != issuer) return PermissionDenied("JWT issuer is not " + issuer);
  bool aud_ok = false;
  if (c.contains("aud") && c["aud"].is_string()) aud_ok = c["aud"] == audience;
  if (c.contains("aud") && c["aud"].is_array()) {
    for (const auto& a : c["aud"]) aud_ok = aud_ok || (a.is_string() && a == audience);
  }
  if (!aud_ok) return PermissionDenied("JWT audience does not include " + audience);
  Principal p;
  p.user = c.contains("sub") && c["sub"].is_string() ? c["sub"].get<std::string>() : "";
  if (p.user.empty()) return PermissionDenied("JWT without sub");
  if (c.contains("projects") && c["projects"].is_array()) {
    for (const auto& pr : c["projects"]) {
      if (!pr.is_string()) continue;
      if (pr == "*") {
        p.admin = true;
      } else {
        p.projects.insert(pr.get<std::string>());
      }
    }
  }
  if (p.admin) p.projects.clear();
  return p;
}

Authenticator::Authenticator() : impl_(std::make_unique<Impl>()) {}
Authenticator::~Authenticator() = default;

size_t Authenticator::size() const { return impl_->by_token.size(); }
size_t Authenticator::jwt_keys() const { return impl_->jwks.size(); }

Result<std::shared_ptr<const Authenticator>> Authenticator::Create(const Config& config) {
  std::shared_ptr<Authenticator> a(new Authenticator());
  if (!config.tokens_file.empty()) {
    ECO_ASSIGN_OR_RETURN(auto t, FromTokenFile(config.tokens_file));
    a->impl_->by_token = t->impl_->by_token;
  }
  std::string jwks_text = config.jwks_text;
  std::string where = "JWKS";
  if (!config.jwks_file.empty()) {
    std::ifstream in(config.jwks_file, std::ios::binary);
    if (!in) return Invalid("cannot read JWKS file " + config.jwks_file);
    std::ostringstream ss;
    ss << in.rdbuf();
    jwks_text = ss.str();
    where = config.jwks_file;
  }
  if (!jwks_text.empty()) {
    if (config.issuer.empty() || config.audience.empty()) {
      return Invalid("JWTs need --auth-jwt-issuer and --auth-jwt-audience");
    }
    auto j = nlohmann::json::parse(jwks_text, nullptr, false);
    if (!j.is_object() || !j.contains("keys") || !j["keys"].is_array()) {
      return Invalid(where + ": not a JWKS (a JSON object with a \"keys\" array)");
    }
    for (size_t i = 0; i < j["keys"].size(); ++i) {
      auto k = ParseJwk(j["keys"][i]);
      if (!k.ok()) return Invalid(where + ": key " + std::to_string(i) + ": " + k.status().message());
      a->impl_->jwks.push_back(std::move(*k));
    }
    if (a->impl_->jwks.empty()) return Invalid(where + " holds no key");
    a->impl_->issuer = config.issuer;
    a->impl_->audience = config.audience;
  }
  if (a->impl_->by_token.empty() && a->impl_->jwks.empty()) return Invalid("no tokens and no JWT keys");
  return std::shared_ptr<const Authenticator>(std::move(a));
}

Result<std::shared_ptr<const Authenticator>> Authenticator::FromTokens(std::string_view text) {
  std::shared_ptr<Authenticator> a(new Authenticator());
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto f = Fields(line);
    if (f.empty() || f[0].front() == '#') {
      if (end == text.size()) break;
      continue;
    }
    const std::string where = "token file line " + std::to_string(line_no) + ": ";
    if (f.size() != 3) {
      return Invalid(where + "expected \"TOKEN USER PROJECT[,PROJECT...]\" or \"TOKEN USER *\", got " +
                     std::to_string(f.size()) + " fields");
    }
    if (f[0].size() < 16) return Invalid(where + "token shorter than 16 characters");
    Principal p;
    p.user = std::string(f[1]);
    if (f[2] == "*") {
      p.admin = true;
    } else {
      size_t i = 0;
      const std::string_view list = f[2];
      while (i <= list.size()) {
        size_t j = list.find(',', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view name = list.substr(i, j - i);
        if (name.empty() || name == "*") {
          return Invalid(where + "project list \"" + std::string(list) +
                         "\" has an empty name or a '*' among names");
        }
        p.projects.emplace(name);
        i = j + 1;
      }
    }
    if (!a->impl_->by_token.emplace(Sha256(f[0]), std::move(p)).second) {
      return Invalid(where + "the same token appears twice");
    }
    if (end == text.size()) break;
  }
  if (a->impl_->by_token.empty()) return Invalid("token file holds no token");
  return std::shared_ptr<const Authenticator>(std::move(a));
}

Result<std::shared_ptr<const Authenticator>> Authenticator::FromTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid("cannot read token file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  auto r = FromTokens(ss.str());
  if (!r.ok()) return Invalid(path + ": " + r.status().message());
  return r;
}

Result<Principal> Authenticator::Authenticate(std::string_view authorization) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) return PermissionDenied("this API needs a bearer token (Authorization: Bearer TOKEN)");
  if (authorization.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                  [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                              std::tolower(static_cast<unsigned char>(b)); })) {
    return PermissionDenied("the Authorization header must be \"Bearer TOKEN\"");
  }
  std::string_view token = authorization.substr(kBearer.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  if (!impl_->jwks.empty() && std::count(token.begin(), token.end(), '.') == 2) return impl_->FromJwt(token);
  // Looked up by digest: the time taken does not depend on how much of a
  // guessed token matches a real one.
  auto it = impl_->by_token.find(Sha256(token));
  if (it == impl_->by_token.end()) {
    return PermissionDenied(impl_->by_token.empty() ? "the bearer token is not a JWT" : "unknown bearer token");
  }
  return it->second;
}

AuthSource::AuthSource(Authenticator::Config config, std::shared_ptr<const Authenticator> current)
    : config_(std::move(config)), current_(std::move(current)) {}

AuthSource::AuthSource(std::shared_ptr<const Authenticator> fixed) : current_(std::move(fixed)) {}

std::shared_ptr<const Authenticator> AuthSource::Get() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

Result<std::shared_ptr<const Authenticator>> AuthSource::Reload() {
  if (!config_) return Get();
  // Outside the lock: it reads files.
  ECO_ASSIGN_OR_RETURN(auto fresh, Authenticator::Create(*config_));
  std::lock_guard<std::mutex> l(mu_);
  current_ = fresh;
  return current_;
}

Status Authorize(const Principal& who, std::string_view method, std::string_view path,
                 std::string_view accept) {
  if (who.admin) return Status::Ok();
  const auto seg = Segments(path);
  const std::string user = "user " + who.user;
  if (seg.size() < 2 || seg[0] != "v2") {
    return PermissionDenied(user + " is not an administrator: " + std::string(path) +
                            " is for administrators");
  }
  if (seg.size() == 2 && (seg[1] == "openapi.json" || seg[1] == "unreachable-clusters") && IsRead(method))
    return Status::Ok();
  // Who they are, and the fleet as far as their projects go (the API filters it).
  if (seg.size() == 2 && (seg[1] == "whoami" || seg[1] == "fleet") && IsRead(method)) return Status::Ok();
  if (seg.size() == 3 && seg[1] == "fleet" && seg[2] == "clusters") {
    return PermissionDenied(user + " is not an administrator: the fleet's clusters show every project's "
                                   "deployments; they are for administrators");
  }
  if (seg[1] == "projects") {
    if (seg.size() == 2) {
      if (IsRead(method)) return Status::Ok();  // the list shows their projects only
      return PermissionDenied(user + " is not an administrator: only administrators create projects");
    }
    if (!who.CanUseProject(seg[2])) {
      return PermissionDenied(user + " may not use project " + std::string(seg[2]));
    }
    if (seg.size() == 3 && !IsRead(method)) {
      return PermissionDenied(user + " is not an administrator: only administrators change or delete "
                              "project " + std::string(seg[2]) + " itself");
    }
    if (seg.size() >= 4 && seg[3] == "logical-clouds" && !IsRead(method)) {
      return PermissionDenied(user + " is not an administrator: only administrators change logical clouds");
    }
    return Status::Ok();
  }
  if (seg[1] == "cluster-providers" && seg.size() == 6 && seg[3] == "clusters" &&
      (seg[5] == "agent-bootstrap" || seg[5] == "agent-revoke")) {
    // A bootstrap token makes its holder the cluster, as a kubeconfig would.
    return PermissionDenied(user + " is not an administrator: agent bootstrap tokens and their revocation are "
                                   "for administrators");
  }
  if (seg[1] == "cluster-providers" && IsRead(method)) {
    // Clusters' names and labels are needed to write placement intents;
    // their kubeconfigs and what every project deployed on them are not.
    if (seg.size() >= 6 && seg[3] == "clusters" && seg[5] == "status") {
      return PermissionDenied(user + " is not an administrator: a cluster's status shows every project");
    }
    if (seg.size() == 5 && seg[3] == "clusters" &&
        (accept.find("multipart") != std::string_view::npos ||
         accept.find("octet-stream") != std::string_view::npos)) {
      return PermissionDenied(user + " is not an administrator: kubeconfigs are for administrators");
    }
    return Status::Ok();
  }
  return PermissionDenied(user + " is not an administrator: " + std::string(method) + " " +
                          std::string(path) + " is for administrators");
}

}  // namespace eco::api
