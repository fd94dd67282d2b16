// Renders share parsed template sets and manifest heads by text; a render
// must still see only its own chart, values and documents.
#include <gtest/gtest.h>

#include "helm/render.h"

namespace eco::helm {
namespace {

Chart OneTemplate(const std::string& text) {
  Chart c;
  c.metadata.api_version = "v2";
  c.metadata.name = "cache";
  c.metadata.version = "0.1.0";
  c.templates = {{"templates/a.yaml", text}};
  return c;
}

std::string Render(const Chart& c, const std::string& set_line = "") {
  TemplateOptions opts;
  if (!set_line.empty()) opts.release.values.set.push_back(set_line);
  TemplateOutput o = HelmTemplateText(c, opts);
  if (!o.error.ok()) return "ERROR: " + o.error.message();
  return o.out;
}

TEST(RenderCache, SameNamesOtherTextOtherValues) {
  Chart a = OneTemplate("kind: ConfigMap\nmetadata:\n  name: {{ .Values.n | default \"a\" }}\n");
  Chart b = OneTemplate("kind: Secret\nmetadata:\n  name: b\n");
  std::string first = Render(a);
  EXPECT_EQ(first, "---\n# Source: cache/templates/a.yaml\nkind: ConfigMap\nmetadata:\n  name: a\n");
  // Same template name, other text: the other text's output.
  EXPECT_EQ(Render(b), "---\n# Source: cache/templates/a.yaml\nkind: Secret\nmetadata:\n  name: b\n");
  // Same chart, other values: the new values are seen.
  EXPECT_EQ(Render(a, "n=z"), "---\n# Source: cache/templates/a.yaml\nkind: ConfigMap\nmetadata:\n  name: z\n");
  EXPECT_EQ(Render(a), first);
}

TEST(RenderCache, InvalidDocumentFailsEveryTime) {
  // Golden helm-template-invalid-yaml-error's wording, on every render.
  Chart c = OneTemplate("kind: Pod\nspec:\n  x: 1\ninvalid");
  for (int i = 0; i < 2; ++i) {
    std::string out = Render(c);
    EXPECT_EQ(out.rfind("ERROR: YAML parse error on cache/templates/a.yaml: error converting YAML to JSON: yaml: line 5: "
                        "could not find expected ':'",
                        0),
              0u)
        << out;
  }
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

TEST(RenderCache, TemplatesChangingValuesDoNotLeakIntoTheNextRender) {
  // Sprig's set writes through Go maps, but each Helm render reads values.yaml
  // afresh: the counter starts from the file's value every time.
  Chart c = OneTemplate("{{ $f := .Values.foo }}{{ $_ := set $f \"count\" (add1 $f.count) }}count: {{ .Values.foo.count }}\n");
  c.values_yaml = "foo:\n  count: 1\n";
  EXPECT_EQ(Render(c), "---\n# Source: cache/templates/a.yaml\ncount: 2\n");
  EXPECT_EQ(Render(c), "---\n# Source: cache/templates/a.yaml\ncount: 2\n");
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

TEST(RenderCache, ImportValuesFollowTheSubchartsValues) {
  // Helm's import-values, exports form: the child's exports.data is merged
  // into the parent's values (helm.sh docs, "Importing Child Values").
  Chart sub;
  sub.metadata.api_version = "v2";
  sub.metadata.name = "sub";
  sub.metadata.version = "0.1.0";
  sub.values_yaml = "exports:\n  data:\n    x: one\n";
  Chart top = OneTemplate("x: {{ .Values.x }}\n");
  Dependency d;
  d.name = "sub";
  d.enabled = true;
  ImportValue iv;
  iv.is_string = true;
  iv.value = "data";
  d.import_values.push_back(iv);
  top.metadata.dependencies.push_back(d);
  top.subcharts.push_back(sub);
  EXPECT_EQ(Render(top), "---\n# Source: cache/templates/a.yaml\nx: one\n");
  EXPECT_EQ(Render(top), "---\n# Source: cache/templates/a.yaml\nx: one\n");
  top.subcharts[0].values_yaml = "exports:\n  data:\n    x: two\n";
  EXPECT_EQ(Render(top), "---\n# Source: cache/templates/a.yaml\nx: two\n");
}

}  // namespace
}  // namespace eco::helm
