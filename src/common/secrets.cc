#include "common/secrets.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/hex.h"

namespace eco::secrets {
namespace {

constexpr std::string_view kMagic = "ecosec1";
constexpr size_t kIdLen = 8, kNonceLen = 12, kTagLen = 16, kKeyLen = 32;

struct Key {
  std::array<unsigned char, kKeyLen> bytes{};
  std::array<unsigned char, kIdLen> id{};  // SHA-256 prefix: names the key without revealing it
};

std::mutex g_mu;
std::vector<Key> g_keys;  // guarded by g_mu; the first seals

std::vector<Key> Keys() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_keys;
}

Result<std::vector<Key>> Parse(std::string_view text, const std::string& source) {
  std::vector<Key> keys;
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = source + " line " + std::to_string(line_no) + ": ";
    if (line.size() != 2 * kKeyLen) {
      return Invalid(where + "a key is 64 hex digits (256 bits), got " + std::to_string(line.size()) +
                     " characters");
    }
    Key k;
    for (size_t i = 0; i < kKeyLen; ++i) {
      const int hi = hex::Digit(line[2 * i]), lo = hex::Digit(line[2 * i + 1]);
      if (hi < 0 || lo < 0) return Invalid(where + "a key is 64 hex digits; found another character");
      k.bytes[i] = static_cast<unsigned char>(hi << 4 | lo);
    }
    std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
    SHA256(k.bytes.data(), k.bytes.size(), d.data());
    std::memcpy(k.id.data(), d.data(), kIdLen);
    keys.push_back(k);
  }
  if (keys.empty()) return Invalid(source + " holds no key");
  return keys;
}

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

}  // namespace

std::string NewKeyText() {
  std::array<unsigned char, kKeyLen> k{};
  if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) return "";
  return hex::Encode({reinterpret_cast<const char*>(k.data()), k.size()});
}

Status ConfigureFromText(std::string_view text, const std::string& source) {
  auto keys = Parse(text, source);
  if (!keys.ok()) return keys.status();
  std::lock_guard<std::mutex> g(g_mu);
  g_keys = std::move(*keys);
  return Status::Ok();
}

Status Configure(const std::string& path, bool generate) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (!generate || errno != ENOENT) {
      return Invalid("cannot read encryption key file " + path + ": " + std::strerror(errno));
    }
    const std::string key = NewKeyText();
    if (key.empty()) return Internal("no random bytes for a new encryption key");
    // O_EXCL: two processes starting at once do not overwrite each other's key.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) return Configure(path, false);
      return Invalid("cannot create encryption key file " + path + ": " + std::strerror(errno));
    }
    const std::string text =
        "# eco encryption key (AES-256-GCM): back it up with the store; without it the stored "
        "kubeconfigs cannot be read\n" + key + "\n";
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                    ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return Invalid("cannot write encryption key file " + path);
    return ConfigureFromText(text, path);
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return Invalid("encryption key file " + path + " can be read by others (mode " + mode +
                   "): chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid("cannot read encryption key file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ConfigureFromText(ss.str(), path);
}

void Reset() {
  std::lock_guard<std::mutex> g(g_mu);
  g_keys.clear();
}

bool Enabled() {
  std::lock_guard<std::mutex> g(g_mu);
  return !g_keys.empty();
}

bool IsSealed(std::string_view stored) {
  return stored.size() >= kMagic.size() + kIdLen + kNonceLen + kTagLen &&
         stored.substr(0, kMagic.size()) == kMagic;
}

bool SealedWithCurrentKey(std::string_view stored) {
  if (!IsSealed(stored)) return false;
  auto keys = Keys();
  return !keys.empty() && std::memcmp(stored.data() + kMagic.size(), keys[0].id.data(), kIdLen) == 0;
}

Result<std::string> Seal(std::string_view plaintext) {
  auto keys = Keys();
  if (keys.empty()) return std::string(plaintext);
  const Key& k = keys[0];
  std::string out(kMagic.size() + kIdLen + kNonceLen + plaintext.size() + kTagLen, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, kMagic.data(), kMagic.size());
  std::memcpy(p + kMagic.size(), k.id.data(), kIdLen);
  unsigned char* nonce = p + kMagic.size() + kIdLen;
  if (RAND_bytes(nonce, kNonceLen) != 1) return Internal("no random bytes for a nonce");
  unsigned char* ct = nonce + kNonceLen;
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  // The header (magic and key id) is authenticated as associated data.
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k.bytes.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, p, static_cast<int>(kMagic.size() + kIdLen)) != 1 ||
      EVP_EncryptUpdate(ctx.get(), ct, &len, reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), ct + len, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagLen, ct + plaintext.size()) != 1) {
    return Internal("AES-256-GCM encryption failed");
  }
  return out;
}

Result<std::string> Open(std::string_view stored) {
  if (!IsSealed(stored)) return std::string(stored);  // stored before encryption
  auto keys = Keys();
  const auto* p = reinterpret_cast<const unsigned char*>(stored.data());
  const Key* key = nullptr;
  for (const Key& k : keys) {
    if (std::memcmp(p + kMagic.size(), k.id.data(), kIdLen) == 0) key = &k;
  }
  if (key == nullptr) {
    return Invalid(keys.empty() ? "a stored secret is encrypted and no encryption key is configured "
                                  "(--encryption-key-file)"
                                : "a stored secret is encrypted with a key that is not in the key file");
  }
  const unsigned char* nonce = p + kMagic.size() + kIdLen;
  const unsigned char* ct = nonce + kNonceLen;
  const size_t ct_len = stored.size() - kMagic.size() - kIdLen - kNonceLen - kTagLen;
  std::string out(ct_len, '\0');
  std::array<unsigned char, kTagLen> tag{};
  std::memcpy(tag.data(), ct + ct_len, kTagLen);
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key->bytes.data(), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, p, static_cast<int>(kMagic.size() + kIdLen)) != 1 ||
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len, ct,
                        static_cast<int>(ct_len)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagLen, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + len, &len) != 1) {
    return Invalid("a stored secret failed its integrity check (altered, or a different key with "
                   "the same id)");
  }
  return out;
}

}  // namespace eco::secrets
