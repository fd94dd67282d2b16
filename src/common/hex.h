// Lower-case hexadecimal, as trace ids, key files and digests are written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eco::hex {

// `bytes` appended to `out` as 2 digits each (through a buffer on the
// stack: a trace id goes into every log line of a traced request).
inline void Append(std::string& out, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  char buf[128];
  while (!bytes.empty()) {
    const size_t n = bytes.size() < sizeof buf / 2 ? bytes.size() : sizeof buf / 2;
    for (size_t i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(bytes[i]);
      buf[2 * i] = kDigits[b >> 4];
      buf[2 * i + 1] = kDigits[b & 15];
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
