// Lower-case hexadecimal, as trace ids, key files and digests are written.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace eco::hex {

// `bytes` appended to `out` as 2 digits each, a byte's two digits at a
// time through a buffer on the stack: a trace id goes into every log line
// of a traced request.
inline void Append(std::string& out, std::string_view bytes) {
  static constexpr auto kPairs = [] {
    std::array<char, 512> t{};
    constexpr char kDigits[] = "0123456789abcdef";
    for (size_t b = 0; b < 256; ++b) {
      t[2 * b] = kDigits[b >> 4];
      t[2 * b + 1] = kDigits[b & 15];
    }
    return t;
  }();
  char buf[128];
  while (!bytes.empty()) {
    const size_t n = bytes.size() < sizeof buf / 2 ? bytes.size() : sizeof buf / 2;
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(buf + 2 * i, &kPairs[2 * static_cast<unsigned char>(bytes[i])], 2);
    }
    out.append(buf, 2 * n);
    bytes.remove_prefix(n);
  }
}

inline std::string Encode(std::string_view bytes) {
  std::string out;
  Append(out, bytes);
  return out;
}

// The value of one hex digit (either case); -1 for anything else.
inline int Digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace eco::hex
