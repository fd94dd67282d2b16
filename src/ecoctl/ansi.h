// Terminal colours and column padding for ecoctl's tables and lines.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eco::ecoctl {

inline constexpr char kGreen[] = "\033[32m";
inline constexpr char kYellow[] = "\033[33m";
inline constexpr char kRed[] = "\033[31m";
inline constexpr char kReset[] = "\033[0m";

// `s` followed by spaces up to `width`; longer text is left as it is.
inline std::string Pad(std::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

}  // namespace eco::ecoctl
