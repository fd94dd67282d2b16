#include "helm/helmignore.h"

#include <cstdint>
#include <tuple>
#include <utility>

#include "helm/text_util.h"

namespace eco::helm {
namespace {

constexpr char32_t kRuneError = 0xFFFD;

// Decodes one UTF-8 sequence like Go does: an invalid byte is (RuneError, 1).
std::pair<char32_t, size_t> DecodeRuneInString(std::string_view s) {
  if (s.empty()) return {kRuneError, 0};
  auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return {b0, 1};
  size_t n = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (n == 0 || b0 > 0xF4 || s.size() < n) return {kRuneError, 1};
  char32_t r = b0 & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) != 0x80) return {kRuneError, 1};
    r = (r << 6) | (b & 0x3F);
  }
  // Overlong forms and surrogates are invalid in Go too.
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (r < kMin[n] || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) return {kRuneError, 1};
  return {r, n};
}

struct GlobChunk {
  bool star = false;
  std::string_view text;
};

// Splits off the leading stars and the literal chunk up to the next star
// outside a class.
GlobChunk ScanChunk(std::string_view& pattern) {
  GlobChunk c;
  while (!pattern.empty() && pattern[0] == '*') {
    pattern.remove_prefix(1);
    c.star = true;
  }
  bool in_range = false;
  size_t i = 0;
  for (; i < pattern.size(); ++i) {
    char ch = pattern[i];
    if (ch == '\\') {
      if (i + 1 < pattern.size()) ++i;
    } else if (ch == '[') {
      in_range = true;
    } else if (ch == ']') {
      in_range = false;
    } else if (ch == '*' && !in_range) {
      break;
    }
  }
  c.text = pattern.substr(0, i);
  pattern.remove_prefix(i);
  return c;
}

// One (possibly escaped) character of a class; false on a malformed class.
bool ClassChar(std::string_view& chunk, char32_t* r) {
  if (chunk.empty() || chunk[0] == '-' || chunk[0] == ']') return false;
  if (chunk[0] == '\\') {
    chunk.remove_prefix(1);
    if (chunk.empty()) return false;
  }
  auto [rune, n] = DecodeRuneInString(chunk);
  if (rune == kRuneError && n == 1) return false;
  chunk.remove_prefix(n);
  if (chunk.empty()) return false;  // a class must be closed
  *r = rune;
  return true;
}

enum class ChunkResult { kMatch, kNoMatch, kBadPattern };

// Matches `chunk` (no stars) at the start of `s`; on a match `*rest` is the
// unmatched tail. Keeps scanning after a mismatch so that a malformed
// pattern is always reported, as Go does.
ChunkResult MatchChunk(std::string_view chunk, std::string_view s, std::string_view* rest) {
  bool failed = false;
  while (!chunk.empty()) {
    if (!failed && s.empty()) failed = true;
    char c = chunk[0];
    if (c == '[') {
      char32_t r = 0;
      size_t n = 0;
      if (!failed) std::tie(r, n) = DecodeRuneInString(s);
      chunk.remove_prefix(1);
      bool negated = !chunk.empty() && chunk[0] == '^';
      if (negated) chunk.remove_prefix(1);
      bool match = false;
      int nrange = 0;
      for (;;) {
        if (!chunk.empty() && chunk[0] == ']' && nrange > 0) {
          chunk.remove_prefix(1);
          break;
        }
        char32_t lo = 0;
        if (!ClassChar(chunk, &lo)) return ChunkResult::kBadPattern;
        char32_t hi = lo;
        if (chunk[0] == '-') {
          chunk.remove_prefix(1);
          if (!ClassChar(chunk, &hi)) return ChunkResult::kBadPattern;
        }
        if (lo <= r && r <= hi) match = true;
        ++nrange;
      }
      if (match == negated) failed = true;
      if (!failed) s.remove_prefix(n);
      continue;
    }
    if (c == '?') {
      if (!failed) {
        if (s[0] == '/') failed = true;
        s.remove_prefix(DecodeRuneInString(s).second);
      }
      chunk.remove_prefix(1);
      continue;
    }
    if (c == '\\') {
      chunk.remove_prefix(1);
      if (chunk.empty()) return ChunkResult::kBadPattern;
    }
    if (!failed) {
      if (chunk[0] != s[0]) failed = true;
      s.remove_prefix(1);
    }
    chunk.remove_prefix(1);
  }
  if (failed) return ChunkResult::kNoMatch;
  *rest = s;
  return ChunkResult::kMatch;
}

Status BadPattern() { return Invalid("syntax error in pattern"); }

// Go's path.Base: trailing slashes dropped, "" gives ".".
std::string_view GoPathBase(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash != std::string_view::npos && path.size() > 1) path.remove_prefix(slash + 1);
  return path.empty() ? std::string_view(".") : path;
}

}  // namespace

Result<bool> FilepathMatch(std::string_view pattern, std::string_view name) {
  while (!pattern.empty()) {
    GlobChunk c = ScanChunk(pattern);
    if (c.star && c.text.empty()) return name.find('/') == std::string_view::npos;
    std::string_view rest;
    ChunkResult r = MatchChunk(c.text, name, &rest);
    if (r == ChunkResult::kMatch && (rest.empty() || !pattern.empty())) {
      name = rest;
      continue;
    }
    if (r == ChunkResult::kBadPattern) return BadPattern();
    bool advanced = false;
    if (c.star) {
      // The star takes 0..k characters of the current segment; the first
      // placement that lets the chunk match wins (Go's algorithm).
      for (size_t i = 0; i < name.size() && name[i] != '/'; ++i) {
        r = MatchChunk(c.text, name.substr(i + 1), &rest);
        if (r == ChunkResult::kMatch) {
          if (pattern.empty() && !rest.empty()) continue;
          name = rest;
          advanced = true;
          break;
        }
        if (r == ChunkResult::kBadPattern) return BadPattern();
      }
    }
    if (advanced) continue;
    // No match: still report a malformed remainder.
    while (!pattern.empty()) {
      GlobChunk tail = ScanChunk(pattern);
      std::string_view ignored;
      if (MatchChunk(tail.text, "", &ignored) == ChunkResult::kBadPattern) return BadPattern();
    }
    return false;
  }
  return name.empty();
}

Result<IgnoreRules> IgnoreRules::Parse(std::string_view text) {
  IgnoreRules rules;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    Status s = rules.AddRule(line);
    if (!s.ok()) {
      return Invalid(".helmignore line " + std::to_string(line_no) + ": " + s.message());
    }
  }
  return rules;
}

void IgnoreRules::AddDefaults() {
  Status s = AddRule("templates/.?*");
  (void)s;  // a constant, valid pattern
}

Status IgnoreRules::AddRule(std::string_view line) {
  std::string_view rule = TrimSpace(line);
  if (rule.empty() || rule.front() == '#') return Status::Ok();
  if (rule.find("**") != std::string_view::npos) {
    return Invalid("double-star (**) syntax is not supported");
  }
  // Helm checks the whole rule (with any `!` or `/`) against a non-empty name.
  ECO_RETURN_IF_ERROR(FilepathMatch(rule, "abc").status());

  Pattern p;
  if (rule.front() == '!') {
    p.negate = true;
    rule.remove_prefix(1);
  }
  if (!rule.empty() && rule.back() == '/') {
    p.must_dir = true;
    rule.remove_suffix(1);
  }
  if (!rule.empty() && rule.front() == '/') {
    p.anchor = Anchor::kFullPath;
    rule.remove_prefix(1);
  } else if (rule.find('/') != std::string_view::npos) {
    p.anchor = Anchor::kFullPath;
  }
  p.glob = std::string(rule);
  patterns_.push_back(std::move(p));
  return Status::Ok();
}

bool IgnoreRules::Matches(const Pattern& p, std::string_view path) const {
  std::string_view subject = p.anchor == Anchor::kFullPath ? path : GoPathBase(path);
  Result<bool> m = FilepathMatch(p.glob, subject);
  return m.ok() && *m;
}

bool IgnoreRules::Ignore(std::string_view path, bool is_dir) const {
  if (path.empty() || path == "." || path == "./") return false;
  for (const Pattern& p : patterns_) {
    if (p.negate) {
      // Helm's rule: a negated pattern ignores what it does not match.
      if (p.must_dir && !is_dir) return true;
      if (!Matches(p, path)) return true;
      continue;
    }
    if (p.must_dir && !is_dir) continue;
    if (Matches(p, path)) return true;
  }
  return false;
}

}  // namespace eco::helm
