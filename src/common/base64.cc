#include "common/base64.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <optional>

namespace eco {

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve(4 * ((bytes.size() + 2) / 3));
  // EVP_EncodeBlock takes an int length and writes a NUL: whole groups of 3
  // bytes at a time through a buffer.
  unsigned char buf[4 * 1024 + 1];
  while (!bytes.empty()) {
    const size_t n = bytes.size() < 3 * 1024 ? bytes.size() : 3 * 1024;
    const int w = EVP_EncodeBlock(buf, reinterpret_cast<const unsigned char*>(bytes.data()),
                                  static_cast<int>(n));
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(w));
    bytes.remove_prefix(n);
  }
  return out;
}

namespace {

constexpr std::array<int8_t, 256> Table(const char* alphabet) {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}

constexpr auto kStd = Table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
constexpr auto kUrl = Table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

Status Corrupt(size_t at) {
  return Invalid("illegal base64 data at input byte " + std::to_string(at));
}

}  // namespace

// By hand: OpenSSL's decoders skip any whitespace, do not insist on
// padding, and give no offset; callers need Go's exact acceptance and errors
// (Helm prints them). Offsets follow Go's decodeQuantum.
Result<std::string> Base64Decode(std::string_view src, const Base64Decoding& how) {
  const auto& table = how.url_alphabet ? kUrl : kStd;
  auto skipped = [&how](char c) {
    switch (how.skip) {
      case Base64Decoding::Skip::kNone:
        return false;
      case Base64Decoding::Skip::kNewlines:
        return c == '\n' || c == '\r';
      case Base64Decoding::Skip::kWhitespace:
        return c == '\n' || c == '\r' || c == ' ' || c == '\t';
    }
    return false;
  };
  auto skip = [&](size_t i) {
    while (i < src.size() && skipped(src[i])) ++i;
    return i;
  };
  std::string out;
  out.reserve(src.size() / 4 * 3 + 2);
  size_t si = 0;
  while (si < src.size()) {
    uint32_t quad[4] = {0, 0, 0, 0};
    int have = 0;                    // symbols of this quantum
    std::optional<size_t> trailing;  // input after the padding: an error once the quantum is out
    while (have < 4) {
      if (si == src.size()) {
        if (have == 0) return out;
        if (have == 1 || how.padded) return Corrupt(si - static_cast<size_t>(have));
        break;
      }
      char c = src[si++];
      int v = table[static_cast<unsigned char>(c)];
      if (v >= 0) {
        quad[have++] = static_cast<uint32_t>(v);
        continue;
      }
      if (skipped(c)) continue;
      if (c != '=' || !how.padded || have < 2) return Corrupt(si - 1);
      if (have == 2) {  // "xx=" needs a second '='
        si = skip(si);
        if (si == src.size()) return Corrupt(src.size());
        if (src[si] != '=') return Corrupt(si - 1);
        ++si;
      }
      si = skip(si);
      if (si < src.size()) trailing = si;
      break;
    }
    uint32_t val = quad[0] << 18 | quad[1] << 12 | quad[2] << 6 | quad[3];
    if (how.strict && have < 4 && (val & (have == 2 ? 0xFFFFu : 0xFFu)) != 0) {
      return Corrupt(si - 1);
    }
    out += static_cast<char>(val >> 16);
    if (have >= 3) out += static_cast<char>((val >> 8) & 0xFF);
    if (have == 4) out += static_cast<char>(val & 0xFF);
    if (trailing) return Corrupt(*trailing);
  }
  return out;
}

}  // namespace eco
