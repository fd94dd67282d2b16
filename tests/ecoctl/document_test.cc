#include "ecoctl/document.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace eco::ecoctl {
namespace {

using nlohmann::json;
using testutil::WriteFile;

ParseOptions Opts(const std::string& cwd = "/nonexistent-cwd", bool require_files = true) {
  ParseOptions o;
  o.source = "test.yaml";
  o.cwd = cwd;
  o.require_files = require_files;
  return o;
}

TEST(ParseDocuments, MultiDocumentInOrderWithBodies) {
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext:
  anchor: projects
metadata:
  name: p1
  description: first
---
version: emco/v2
resourceContext:
  anchor: projects/p1/composite-apps
metadata:
  name: ca
spec:
  compositeAppVersion: v1
)",
                             Opts());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].index, 1);
  EXPECT_EQ((*docs)[0].anchor, "projects");
  EXPECT_EQ((*docs)[0].body, json::parse(R"({"metadata":{"name":"p1","description":"first"}})"));
  EXPECT_EQ((*docs)[1].index, 2);
  EXPECT_EQ((*docs)[1].anchor, "projects/p1/composite-apps");
  EXPECT_EQ((*docs)[1].body["spec"]["compositeAppVersion"], "v1");
  EXPECT_FALSE((*docs)[1].is_action());
}

TEST(ParseDocuments, EmptyDocumentsAreSkippedButCounted) {
  auto docs = ParseDocuments(
      "---\n---\nversion: emco/v2\nresourceContext: {anchor: projects}\n"
      "metadata: {name: p}\n---\n",
      Opts());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0].index, 2);
}

TEST(ParseDocuments, ScalarsAreTypedLikeGoYaml) {
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext: {anchor: controllers}
metadata: {name: rsync}
spec:
  host: rsync
  port: 9031
  priority: -1
  ratio: 1.5
  enabled: true
  level: "0"
  hex: 0x1F
  nothing: ~
  version: 1.0.0
  tagged: !!str 12
)",
                             Opts());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  const json& spec = (*docs)[0].body["spec"];
  EXPECT_EQ(spec["port"], 9031);
  EXPECT_TRUE(spec["port"].is_number_integer());
  EXPECT_EQ(spec["priority"], -1);
  EXPECT_DOUBLE_EQ(spec["ratio"].get<double>(), 1.5);
  EXPECT_EQ(spec["enabled"], true);
  EXPECT_EQ(spec["level"], "0");
  EXPECT_EQ(spec["hex"], 31);
  EXPECT_TRUE(spec["nothing"].is_null());
  EXPECT_EQ(spec["version"], "1.0.0");
  EXPECT_EQ(spec["tagged"], "12");
}

TEST(ParseDocuments, BadVersionNamesTheDocument) {
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext: {anchor: projects}
metadata: {name: ok}
---
version: emco/v1
resourceContext: {anchor: projects}
metadata: {name: old}
)",
                             Opts());
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), Code::kInvalid);
  EXPECT_NE(docs.status().message().find("document 2 of test.yaml"), std::string::npos)
      << docs.status().message();
  EXPECT_NE(docs.status().message().find("unsupported version \"emco/v1\""), std::string::npos);
}

TEST(ParseDocuments, MissingVersionAndAnchorAreAllReported) {
  auto docs = ParseDocuments(R"(
resourceContext: {anchor: projects}
metadata: {name: a}
---
version: emco/v2
metadata: {name: b}
---
version: emco/v2
resourceContext: {}
---
- a list
)",
                             Opts());
  ASSERT_FALSE(docs.ok());
  const std::string& m = docs.status().message();
  EXPECT_NE(m.find("document 1 of test.yaml: missing version"), std::string::npos) << m;
  EXPECT_NE(m.find("document 2 of test.yaml: missing resourceContext.anchor"), std::string::npos);
  EXPECT_NE(m.find("document 3 of test.yaml: missing resourceContext.anchor"), std::string::npos);
  EXPECT_NE(m.find("document 4 of test.yaml: not a mapping"), std::string::npos);
}

TEST(ParseDocuments, YamlSyntaxErrorHasLine) {
  auto docs = ParseDocuments("version: emco/v2\nmetadata: [unclosed\n", Opts());
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("test.yaml: YAML line"), std::string::npos)
      << docs.status().message();
}

TEST(ParseDocuments, AnchorIsNormalised) {
  for (const char* a : {"/v2/projects", "v2/projects", "/projects", "projects"}) {
    auto docs = ParseDocuments(std::string("version: emco/v2\nresourceContext: {anchor: \"") + a +
                                   "\"}\nmetadata: {name: p}\n",
                               Opts());
    ASSERT_TRUE(docs.ok()) << a << ": " << docs.status().ToString();
    EXPECT_EQ((*docs)[0].anchor, "projects") << a;
  }
  auto bad = ParseDocuments("version: emco/v2\nresourceContext: {anchor: projects//x}\n", Opts());
  EXPECT_FALSE(bad.ok());
  auto dots =
      ParseDocuments("version: emco/v2\nresourceContext: {anchor: projects/../x}\n", Opts());
  EXPECT_FALSE(dots.ok());
}

TEST(ParseDocuments, BodyDropsControlFieldsAndKeepsOthers) {
  eco::testing::TempDir dir;
  WriteFile(dir.path(), "kubeconfig", "apiVersion: v1\n");
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext:
  anchor: cluster-providers/cp/clusters/c1/labels
clusterLabel: edge
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/cp/clusters
metadata: {name: c1}
file: kubeconfig
)",
                             Opts(dir.path()));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].body, json::parse(R"({"clusterLabel":"edge"})"));
  EXPECT_EQ((*docs)[1].body, json::parse(R"({"metadata":{"name":"c1"}})"));
  EXPECT_EQ((*docs)[1].file, dir.path() + "/kubeconfig");
}

TEST(ParseDocuments, FilePrefersCwdThenYamlDirectory) {
  eco::testing::TempDir cwd, yaml_dir;
  WriteFile(cwd.path(), "both.tgz", "cwd");
  WriteFile(yaml_dir.path(), "both.tgz", "yaml");
  WriteFile(yaml_dir.path(), "charts/only.tgz", "yaml");
  ParseOptions o = Opts(cwd.path());
  o.base_dir = yaml_dir.path();
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: a}
file: both.tgz
---
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: b}
file: charts/only.tgz
)",
                             o);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].file, cwd.path() + "/both.tgz");
  EXPECT_EQ((*docs)[1].file, yaml_dir.path() + "/charts/only.tgz");
}

TEST(ParseDocuments, MissingFileIsAnErrorOnlyWhenRequired) {
  const std::string text = R"(
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: a}
file: missing.tgz
)";
  auto strict = ParseDocuments(text, Opts("/nonexistent-cwd", true));
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(
      strict.status().message().find("document 1 of test.yaml: file \"missing.tgz\" not found"),
      std::string::npos)
      << strict.status().message();
  auto lenient = ParseDocuments(text, Opts("/nonexistent-cwd", false));
  ASSERT_TRUE(lenient.ok()) << lenient.status().ToString();
}

TEST(ParseDocuments, FilesListIsResolved) {
  eco::testing::TempDir dir;
  WriteFile(dir.path(), "a.json", "{}");
  WriteFile(dir.path(), "b.json", "{}");
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/d/generic-k8s-intents/g/resources/r/customizations}
metadata: {name: c}
files: [a.json, b.json]
)",
                             Opts(dir.path()));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].files,
            (std::vector<std::string>{dir.path() + "/a.json", dir.path() + "/b.json"}));
  EXPECT_FALSE((*docs)[0].body.contains("files"));
}

TEST(ParseDocuments, ActionDocuments) {
  auto docs = ParseDocuments(R"(
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/approve}
---
version: emco/v2
resourceContext: {anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/rollback}
metadata: {description: back}
spec: {revision: "1"}
---
version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/status?output=summary
)",
                             Opts());
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].action, "approve");
  EXPECT_TRUE((*docs)[0].body.empty());
  EXPECT_EQ((*docs)[1].action, "rollback");
  EXPECT_EQ((*docs)[1].body["spec"]["revision"], "1");
  EXPECT_EQ((*docs)[2].action, "status");
}

TEST(ActionVerb, OnlyTheLastSegmentCounts) {
  EXPECT_EQ(ActionVerb("projects/p/composite-apps/ca/v1/deployment-intent-groups/d/instantiate"),
            "instantiate");
  EXPECT_EQ(ActionVerb("projects/p/logical-clouds/lc/terminate"), "terminate");
  EXPECT_EQ(ActionVerb("projects/p/composite-apps/ca/v1/deployment-intent-groups/d/status?x=1"),
            "status");
  EXPECT_EQ(ActionVerb("projects"), "");
  EXPECT_EQ(ActionVerb("projects/p/composite-apps"), "");
  EXPECT_EQ(ActionVerb("projects/approve-things/composite-apps"), "");
}

TEST(LoadDocuments, RendersValuesAndMergesFilesInOrder) {
  eco::testing::TempDir dir;
  std::string yaml = WriteFile(dir.path(), "r.yaml", R"(
version: emco/v2
resourceContext: {anchor: projects}
metadata:
  name: {{ .Project.Name }}
  description: "{{ .Desc }}"
)");
  std::string v1 = WriteFile(dir.path(), "v1.yaml", "Project: {Name: p1}\nDesc: one\n");
  std::string v2 = WriteFile(dir.path(), "v2.yaml", "Desc: two\n");
  LoadOptions lo;
  lo.files = {yaml};
  lo.values_files = {v1, v2};
  lo.cwd = dir.path();
  auto docs = LoadDocuments(lo);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].body["metadata"]["name"], "p1");
  EXPECT_EQ((*docs)[0].body["metadata"]["description"], "two");
}

TEST(LoadDocuments, TemplateWithoutValuesGetsAHint) {
  eco::testing::TempDir dir;
  std::string yaml = WriteFile(dir.path(), "r.yaml",
                               "version: emco/v2\nresourceContext: {anchor: projects}\n"
                               "metadata:\n  name: {{ .Project }}\n");
  LoadOptions lo;
  lo.files = {yaml};
  auto docs = LoadDocuments(lo);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("give the values with -v"), std::string::npos);
}

TEST(LoadDocuments, StdinAndMissingFile) {
  LoadOptions lo;
  lo.files = {"-"};
  lo.stdin_text = "version: emco/v2\nresourceContext: {anchor: projects}\nmetadata: {name: s}\n";
  auto docs = LoadDocuments(lo);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].source, "<stdin>");

  lo.files = {"/nonexistent/r.yaml"};
  auto missing = LoadDocuments(lo);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/r.yaml"), std::string::npos);
}

TEST(CommandLineDocument, IsRaw) {
  auto d = CommandLineDocument(
      "/v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d/approve");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->raw);
  EXPECT_EQ(d->action, "approve");
  EXPECT_EQ(d->anchor, "projects/p1/composite-apps/ca/v1/deployment-intent-groups/d/approve");
  EXPECT_FALSE(CommandLineDocument("").ok());
}

}  // namespace
}  // namespace eco::ecoctl
