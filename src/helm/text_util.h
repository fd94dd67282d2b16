// Small text helpers that several eco_helm sources share; not a public
// interface. One inline definition each, so that a unity build (sources
// concatenated into one translation unit) has no same-named file-local copies.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eco::helm {

// strings.TrimSpace over ASCII whitespace: space, \t, \n, \v, \f, \r.
inline std::string_view TrimSpace(std::string_view s) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// strings.Split(s, "."): no escaping, "" gives {""}, empty parts are kept.
inline std::vector<std::string> SplitDots(std::string_view s) {
  std::vector<std::string> parts;
  for (;;) {
    size_t dot = s.find('.');
    parts.emplace_back(s.substr(0, dot));
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts;
}

// Removes every occurrence of `what` (non-empty), left to right; text that
// the removals join is not searched again.
inline void EraseAll(std::string* s, std::string_view what) {
  size_t p = s->find(what);
  if (p == std::string::npos) return;
  std::string out;
  out.reserve(s->size());
  size_t from = 0;
  while (p != std::string::npos) {
    out.append(*s, from, p - from);
    from = p + what.size();
    p = s->find(what, from);
  }
  out.append(*s, from, std::string::npos);
  *s = std::move(out);
}

}  // namespace eco::helm
