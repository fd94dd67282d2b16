// Name checks shared by the agent kit's parts (internal to src/agent).
#pragma once

#include <string_view>

namespace eco::agent {

// RFC 1123 label, as Kubernetes requires of namespaces: 1..63 characters,
// lower-case alphanumerics and '-', alphanumeric at both ends.
inline bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (c != '-' || i == 0 || i + 1 == s.size())) return false;
  }
  return true;
}

}  // namespace eco::agent
