// .helmignore rules with Helm v3's semantics, and Go's filepath.Match.
//
// Helm's rules differ from .gitignore: patterns use filepath.Match (no `**`,
// `*` never crosses `/`), they are evaluated in order and the first decision
// wins, and a `!pattern` that does NOT match a path ignores it (so `!` rarely
// does what .gitignore users expect; helm/helm#3622, #8688). eco copies that
// behaviour because charts are written against it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::helm {

// Go's path/filepath.Match on '/'-separated names: `*` (no `/`), `?`,
// `[...]`/`[^...]` classes with ranges, `\` escapes. Invalid when the pattern
// is malformed ("syntax error in pattern", as Go says).
Result<bool> FilepathMatch(std::string_view pattern, std::string_view name);

class IgnoreRules {
 public:
  // Parses the text of a .helmignore: one pattern a line, `#` comments,
  // blank lines skipped, surrounding spaces trimmed. Invalid on `**` or a
  // malformed pattern, naming the line.
  static Result<IgnoreRules> Parse(std::string_view text);

  // Adds Helm's built-in rule `templates/.?*` (dot files in templates/).
  void AddDefaults();

  // Whether `path` (relative to the chart root, '/'-separated, no trailing
  // '/') is ignored. `is_dir` matters for patterns ending in '/'.
  bool Ignore(std::string_view path, bool is_dir) const;

  size_t size() const { return patterns_.size(); }

 private:
  enum class Anchor { kBaseName, kFullPath };
  struct Pattern {
    std::string glob;  // without `!`, leading `/` and trailing `/`
    bool negate = false;
    bool must_dir = false;
    Anchor anchor = Anchor::kBaseName;
  };
  Status AddRule(std::string_view line);
  bool Matches(const Pattern& p, std::string_view path) const;

  std::vector<Pattern> patterns_;
};

}  // namespace eco::helm
