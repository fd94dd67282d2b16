// DecodeYaml on libyaml: go-yaml v2's order of errors and the head-only
// decoding used for rendered manifests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "helm/funcs.h"
#include "helm/manifests.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

const std::vector<std::string_view> kHead = {"apiVersion", "kind", "metadata"};

std::string Outcome(const Result<Value>& r) {
  if (!r.ok()) return "error: " + r.status().message();
  return ToYaml(*r);
}

// The top-level keys in kHead of a decoded document, as YAML.
std::string HeadOutcome(const Result<Value>& r) {
  if (!r.ok() || r->kind() != Kind::kMap) return Outcome(r);
  ValueMap kept;
  for (std::string_view k : kHead) {
    auto it = r->as_map().find(k);
    if (it != r->as_map().end()) kept.emplace(std::string(k), it->second);
  }
  return ToYaml(Value::Map(std::move(kept)));
}

TEST(YamlIn, SyntaxErrorWinsOverDecodeErrors) {
  // go-yaml parses the whole document before decoding it, so a syntax error
  // later in the text is reported instead of an earlier bad !!int.
  auto bad_tag_then_syntax = DecodeYaml("a: !!int x\nb: [");
  auto syntax_only = DecodeYaml("a: 1\nb: [");
  ASSERT_FALSE(syntax_only.ok());
  EXPECT_EQ(Outcome(bad_tag_then_syntax), Outcome(syntax_only));
  // Without the syntax error the decode error shows.
  auto bad_tag = DecodeYaml("a: !!int x\n");
  ASSERT_FALSE(bad_tag.ok());
  EXPECT_EQ(bad_tag.status().message(), "error converting YAML to JSON: yaml: cannot decode !!str `x` as a !!int");
}

TEST(YamlIn, UnknownAnchorIsNamed) {
  // go-yaml v2 decode.go: failf("unknown anchor '%s' referenced", ...).
  auto r = DecodeYaml("a: *nope\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "error converting YAML to JSON: yaml: unknown anchor 'nope' referenced");
}

TEST(YamlIn, AliasesAndMergeKeys) {
  auto r = DecodeYaml("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nl: [*b]\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(ToYaml(*r), ToYaml(*DecodeYaml("base: {x: 1, y: 2}\nm: {x: 1, y: 3}\nl: [{x: 1, y: 2}]\n")));
  auto bad = DecodeYaml("a: &s 1\nb:\n  <<: *s\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "error converting YAML to JSON: yaml: map merge requires map or sequence of maps as the value");
}

TEST(YamlIn, ErrorsAsSigsK8sYaml) {
  // Expected texts: what Go (sigs.k8s.io/yaml 1.3.0 on gopkg.in/yaml.v2
  // 2.4.0) returns for these documents, via shared/tools/gotmpl-ref.
  const std::pair<std::string, std::string> cases[] = {
      {"a: [", "yaml: line 1: did not find expected node content"},
      {"a: \"x", "yaml: found unexpected end of stream"},
      {"a:\n\tb: 1", "yaml: line 2: found character that cannot start any token"},
      {"a: b: c", "yaml: mapping values are not allowed in this context"},
      {"key: value\ninvalid", "yaml: line 3: could not find expected ':'"},
      {"? [1, 2]\n: a", "yaml: invalid map key: []interface {}{1, 2}"},
      {"{a: 1}: x", "yaml: invalid map key: map[interface {}]interface {}{\"a\":1}"},
      {"? {a: [1, ~]}\n: x",
       "yaml: invalid map key: map[interface {}]interface {}{\"a\":[]interface {}{1, interface {}(nil)}}"},
      {"18446744073709551615: 1.5", "Unsupported map key of type: uint64, key: 0xffffffffffffffff, value: 1.5"},
      {"a: 1\n~: 2\nb: !!int x", "yaml: cannot decode !!str `x` as a !!int"},
      {"[1]: a\nb: !!int x", "yaml: invalid map key: []interface {}{1}"},
      {"b: !!int x\n[1]: a", "yaml: cannot decode !!str `x` as a !!int"},
      {"~: a\nb: .nan", "Unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\""},
      {"a: !!null x", "yaml: cannot decode !!str `x` as a !!null"},
  };
  for (const auto& [doc, want] : cases) {
    auto r = DecodeYaml(doc);
    ASSERT_FALSE(r.ok()) << doc;
    EXPECT_EQ(r.status().message(), "error converting YAML to JSON: " + want) << doc;
    // Head-only decoding reports the same.
    EXPECT_EQ(Outcome(DecodeYamlTopKeys(doc, kHead)), Outcome(r)) << doc;
  }
  // Only the first document counts, even when a later one is broken.
  auto first = DecodeYaml("---\na: 1\n---\nb: [");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ToYaml(*first), "a: 1");
}

TEST(YamlIn, TopKeysDecodingMatchesFullDecoding) {
  std::vector<std::string> docs = {
      "apiVersion: v1\nkind: Pod\nmetadata: {name: a, annotations: {x: y}}\nspec: {a: [1, 2]}\n",
      "kind: A\nspec: {<<: {k: 1}}\n",
      "<<: {kind: Merged}\napiVersion: v1\n",
      "m: &m {name: n}\nmetadata: *m\n",
      "kind: A\nspec: .nan\n",
      "kind: A\nspec: {? [1]: 2}\n",
      "kind: A\nspec: !!float x\n",
      "kind: A\nspec: [\n",
      "- a\n",
      "# only a comment\n",
  };
  // Plus every document of Helm's outputs in the golden corpus.
  std::filesystem::path dir = std::filesystem::path(ECO_CONFORMANCE_DIR) / "helm" / "expected";
  if (std::filesystem::exists(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      for (std::string& d : SplitManifests(ss.str())) docs.push_back(std::move(d));
    }
  }
  ASSERT_GT(docs.size(), 10u);
  for (const std::string& d : docs) {
    EXPECT_EQ(HeadOutcome(DecodeYamlTopKeys(d, kHead)), HeadOutcome(DecodeYaml(d))) << d.substr(0, 200);
  }
}

}  // namespace
}  // namespace eco::helm
