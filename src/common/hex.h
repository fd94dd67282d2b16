// Lower-case hexadecimal, as trace ids, key files and digests are written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eco::hex {

// `bytes` appended to `out` as 2 digits each.
inline void Append(std::string& out, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out[at + 2 * i] = kDigits[b >> 4];
    out[at + 2 * i + 1] = kDigits[b & 15];
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
