#include "helm/helmignore.h"

#include <gtest/gtest.h>

namespace eco::helm {
namespace {

bool Match(std::string_view pattern, std::string_view name) {
  Result<bool> r = FilepathMatch(pattern, name);
  EXPECT_TRUE(r.ok()) << pattern << ": " << r.status().ToString();
  return r.ok() && *r;
}

TEST(FilepathMatch, GoSemantics) {
  EXPECT_TRUE(Match("abc", "abc"));
  EXPECT_TRUE(Match("*", "abc"));
  EXPECT_TRUE(Match("*c", "abc"));
  EXPECT_FALSE(Match("a*", "ab/c"));  // a star never crosses '/'
  EXPECT_TRUE(Match("a*/b", "abc/b"));
  EXPECT_TRUE(Match("a*b*c*d*e*/f", "axbxcxdxe/f"));
  EXPECT_FALSE(Match("a*b*c*d*e*/f", "axbxcxdxexxx/fff"));
  EXPECT_TRUE(Match("ab[c]", "abc"));
  EXPECT_TRUE(Match("ab[b-d]", "abc"));
  EXPECT_FALSE(Match("ab[e-g]", "abc"));
  EXPECT_TRUE(Match("ab[^e-g]", "abc"));
  EXPECT_TRUE(Match("a?b", "a☺b"));  // '?' is one rune
  EXPECT_FALSE(Match("a?b", "a/b"));
  EXPECT_TRUE(Match("a\\*b", "a*b"));
  EXPECT_FALSE(Match("a\\*b", "ab"));
  EXPECT_TRUE(Match("[\\-]", "-"));
  EXPECT_TRUE(Match("*.yaml", ".yaml"));
  EXPECT_FALSE(Match("", "a"));
  EXPECT_TRUE(Match("", ""));
}

TEST(FilepathMatch, MalformedPatternsAreErrors) {
  for (const char* p : {"[", "[^", "[]a]", "[-]", "[x-]", "a\\", "[a-b-c]", "*x["}) {
    Result<bool> r = FilepathMatch(p, "x");
    EXPECT_FALSE(r.ok()) << p;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message(), "syntax error in pattern");
    }
  }
}

IgnoreRules Rules(std::string_view text) {
  Result<IgnoreRules> r = IgnoreRules::Parse(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : IgnoreRules{};
}

TEST(IgnoreRules, CommentsBlankLinesAndSpaces) {
  IgnoreRules r = Rules("# comment\n\n   *.swp   \r\n  # another\n");
  EXPECT_EQ(r.size(), 1u);
  EXPECT_TRUE(r.Ignore("templates/x.swp", false));
  EXPECT_FALSE(r.Ignore("templates/x.yaml", false));
}

TEST(IgnoreRules, PatternWithoutSlashMatchesBaseName) {
  IgnoreRules r = Rules(".git\n*.tmp\nOWNERS\n");
  EXPECT_TRUE(r.Ignore(".git", true));
  EXPECT_TRUE(r.Ignore("charts/sub/.git", true));
  EXPECT_TRUE(r.Ignore("files/a.tmp", false));
  EXPECT_TRUE(r.Ignore("charts/x/OWNERS", false));
  EXPECT_FALSE(r.Ignore("values.yaml", false));
}

TEST(IgnoreRules, PatternWithSlashMatchesWholePath) {
  IgnoreRules r = Rules("docs/*.md\n/README.md\n");
  EXPECT_TRUE(r.Ignore("docs/a.md", false));
  EXPECT_FALSE(r.Ignore("x/docs/a.md", false));
  EXPECT_FALSE(r.Ignore("docs/sub/a.md", false));  // '*' does not cross '/'
  EXPECT_TRUE(r.Ignore("README.md", false));
  EXPECT_FALSE(r.Ignore("charts/sub/README.md", false));  // anchored to the root
}

TEST(IgnoreRules, TrailingSlashMeansDirectoriesOnly) {
  IgnoreRules r = Rules("tests/\n");
  EXPECT_TRUE(r.Ignore("tests", true));
  EXPECT_TRUE(r.Ignore("charts/sub/tests", true));
  EXPECT_FALSE(r.Ignore("tests", false));
}

TEST(IgnoreRules, FirstMatchWins) {
  IgnoreRules r = Rules("*.txt\n!important.txt\n");
  // Unlike .gitignore, the later `!` cannot re-include an ignored file.
  EXPECT_TRUE(r.Ignore("important.txt", false));
}

TEST(IgnoreRules, NegationIgnoresWhatItDoesNotMatch) {
  // Helm's negation (helm/helm#3622, #8688): reaching `!x` ignores every
  // path that does not match x.
  IgnoreRules r = Rules("*.bak\n!*.yaml\n");
  EXPECT_TRUE(r.Ignore("a.bak", false));
  EXPECT_FALSE(r.Ignore("Chart.yaml", false));
  EXPECT_TRUE(r.Ignore("README.md", false));
  IgnoreRules dir_only = Rules("!keep/\n");
  EXPECT_TRUE(dir_only.Ignore("file.txt", false));  // a file never matches a dir-only rule
  EXPECT_FALSE(dir_only.Ignore("keep", true));
}

TEST(IgnoreRules, DefaultsIgnoreDotFilesInTemplates) {
  IgnoreRules r;
  r.AddDefaults();
  EXPECT_TRUE(r.Ignore("templates/.gitkeep", false));
  EXPECT_TRUE(r.Ignore("templates/.hidden", true));
  EXPECT_FALSE(r.Ignore("templates/a.yaml", false));
  EXPECT_FALSE(r.Ignore("templates/sub/.x", false));  // only direct children
  EXPECT_FALSE(r.Ignore(".helmignore", false));
}

TEST(IgnoreRules, RootIsNeverIgnored) {
  IgnoreRules r = Rules("*\n.*\n");
  EXPECT_FALSE(r.Ignore("", true));
  EXPECT_FALSE(r.Ignore(".", true));
  EXPECT_TRUE(r.Ignore("a", false));
}

TEST(IgnoreRules, DoubleStarAndBadPatternsAreRejected) {
  Result<IgnoreRules> r = IgnoreRules::Parse("ok\n**/x\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
  EXPECT_EQ(r.status().message(), ".helmignore line 2: double-star (**) syntax is not supported");
  r = IgnoreRules::Parse("[abc\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), ".helmignore line 1: syntax error in pattern");
}

}  // namespace
}  // namespace eco::helm
