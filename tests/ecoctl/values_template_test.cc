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
  // Without the space "-" is not a trim marker, and "{{-3}}" is not a field.
  auto r = RenderValuesTemplate("{{-3}}", kValues);
  EXPECT_FALSE(r.ok());
}

TEST(ValuesTemplate, UnsupportedActionsAreRejectedWithLine) {
  for (const char* t : {"{{ if .On }}x{{ end }}", "{{ range .List }}{{ end }}",
                        "{{ .Project | upper }}", "{{ printf \"%d\" .Port }}", "{{ . }}",
                        "{{/* comment */}}", "{{ $x := 1 }}", "{{ .Project.}}", "{{ }}"}) {
    auto r = RenderValuesTemplate(std::string("a\nb ") + t, kValues);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_NE(r.status().message().find("template action not supported yet: {{"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("(line 2)"), std::string::npos) << r.status().message();
  }
}

TEST(ValuesTemplate, MissingAndNonScalarValuesAreErrors) {
  auto missing = RenderValuesTemplate("\n\n{{ .Nope }}", kValues);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no value for .Nope (line 3)"), std::string::npos)
      << missing.status().message();

  auto deep = RenderValuesTemplate("{{ .Cluster.Nope.X }}", kValues);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("no value for .Cluster.Nope"), std::string::npos);

  auto through_scalar = RenderValuesTemplate("{{ .Project.Name }}", kValues);
  ASSERT_FALSE(through_scalar.ok());
  EXPECT_NE(through_scalar.status().message().find(".Project is not a map"), std::string::npos)
      << through_scalar.status().message();

  EXPECT_FALSE(RenderValuesTemplate("{{ .Cluster }}", kValues).ok());
  EXPECT_FALSE(RenderValuesTemplate("{{ .List }}", kValues).ok());
  EXPECT_FALSE(RenderValuesTemplate("{{ .Null }}", kValues).ok());
}

TEST(ValuesTemplate, UnclosedAction) {
  auto r = RenderValuesTemplate("a: b\nc: {{ .Project", kValues);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unclosed action (line 2)"), std::string::npos);
}

}  // namespace
}  // namespace eco::ecoctl
