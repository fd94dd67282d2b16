#include "ecoctl/values_template.h"

#include <gtest/gtest.h>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

const json kValues = json::parse(R"({
  "Project": "p1", "Port": 9031, "Ratio": 1.5, "On": true, "Empty": "",
  "Cluster": {"Provider": "cp", "Names": {"First": "edge1"}},
  "List": [1, 2], "Null": null, "snake_case": "s"
})");

std::string Render(const std::string& t) {
  auto r = RenderValuesTemplate(t, kValues);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(ValuesTemplate, PlainTextPassesThrough) {
  EXPECT_EQ(Render(""), "");
  EXPECT_EQ(Render("a: b\n{ x }\n"), "a: b\n{ x }\n");
}

TEST(ValuesTemplate, SubstitutesFields) {
  EXPECT_EQ(Render("name: {{ .Project }}"), "name: p1");
  EXPECT_EQ(Render("name: {{.Project}}-x"), "name: p1-x");
  EXPECT_EQ(Render("{{ .Cluster.Provider }}/{{ .Cluster.Names.First }}"), "cp/edge1");
  EXPECT_EQ(Render("{{ .snake_case }}"), "s");
  EXPECT_EQ(Render("[{{ .Empty }}]"), "[]");
}

TEST(ValuesTemplate, ScalarsPrintLikeGo) {
  EXPECT_EQ(Render("{{ .Port }} {{ .Ratio }} {{ .On }}"), "9031 1.5 true");
}

TEST(ValuesTemplate, TrimMarkers) {
  EXPECT_EQ(Render("a:   {{- .Project }}"), "a:p1");
  EXPECT_EQ(Render("{{ .Project -}}   \n\n b"), "p1b");
  EXPECT_EQ(Render("x \n {{- .Project -}} \n y"), "xp1y");
  // Without the space "-" is not a trim marker: "{{-3}}" is the number -3, as in Go.
  EXPECT_EQ(Render("{{-3}}"), "-3");
}

// The whole language, as emcoctl's Go templates have it: one document per
// cluster of a list, conditions, pipelines, Sprig functions, variables.
TEST(ValuesTemplate, GoTemplateActionsWork) {
  EXPECT_EQ(Render("{{ if .On }}yes{{ else }}no{{ end }}"), "yes");
  EXPECT_EQ(Render("{{ range .List }}[{{ . }}]{{ end }}"), "[1][2]");
  EXPECT_EQ(Render("{{ .Project | upper }}"), "P1");
  EXPECT_EQ(Render("{{ printf \"%s-%d\" .Project .Port }}"), "p1-9031");
  EXPECT_EQ(Render("{{/* comment */}}x"), "x");
  EXPECT_EQ(Render("{{ $x := .Cluster.Provider }}{{ $x }}"), "cp");
  EXPECT_EQ(Render("{{ range $i, $n := .List }}---\nname: c{{ $n }}\n{{ end }}"),
            "---\nname: c1\n---\nname: c2\n");
  EXPECT_EQ(Render("{{ default \"d\" .Empty }}"), "d");
}

TEST(ValuesTemplate, MissingKeysAndBadTemplatesAreErrorsNamingTheLine) {
  auto missing = RenderValuesTemplate("\n\n{{ .Nope }}", kValues);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("values:3"), std::string::npos) << missing.status().message();
  EXPECT_NE(missing.status().message().find("Nope"), std::string::npos) << missing.status().message();

  auto deep = RenderValuesTemplate("{{ .Cluster.Nope.X }}", kValues);
  EXPECT_FALSE(deep.ok());

  auto unclosed = RenderValuesTemplate("a: b\nc: {{ .Project", kValues);
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("values:2"), std::string::npos) << unclosed.status().message();

  auto unknown = RenderValuesTemplate("{{ nosuchfunction 1 }}", kValues);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("\"nosuchfunction\" not defined"), std::string::npos)
      << unknown.status().message();
}

}  // namespace
}  // namespace eco::ecoctl
