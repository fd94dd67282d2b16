// Focused tests of the chart renderer and of Helm's output steps. Expected
// values come from Go's path/filepath match tests, Helm's engine/files tests
// and the install order and split rule the conformance README documents.
#include <gtest/gtest.h>

#include "helm/manifests.h"
#include "helm/render.h"

namespace eco::helm {
namespace {

TEST(SplitManifests, SeparatorsAndTrimming) {
  // (?:^|\s*\n)---\s* with pieces trimmed and empty ones dropped.
  EXPECT_EQ(SplitManifests("a: 1\n---\nb: 2\n"), (std::vector<std::string>{"a: 1", "b: 2"}));
  EXPECT_EQ(SplitManifests("---\na: 1\n---\n---\nb: 2"), (std::vector<std::string>{"a: 1", "---\nb: 2"}));
  EXPECT_EQ(SplitManifests("\n\n  ---  \na: 1   \n  \n---\n\nb: 2\n\n"),
            (std::vector<std::string>{"a: 1", "b: 2"}));
  // "---" not at a line start does not split.
  EXPECT_EQ(SplitManifests("a: x---y\n"), (std::vector<std::string>{"a: x---y"}));
  // A separator line with trailing text splits right after the dashes.
  EXPECT_EQ(SplitManifests("a: 1\n--- # doc\nb: 2"), (std::vector<std::string>{"a: 1", "# doc\nb: 2"}));
  EXPECT_TRUE(SplitManifests(" \n\t").empty());
}

TEST(KindOrder, InstallOrderThenUnknownByName) {
  EXPECT_TRUE(KindLess("Namespace", "ServiceAccount"));
  EXPECT_TRUE(KindLess("ConfigMap", "Deployment"));
  EXPECT_TRUE(KindLess("CustomResourceDefinition", "ClusterRole"));
  EXPECT_TRUE(KindLess("Ingress", "APIService"));
  EXPECT_FALSE(KindLess("Deployment", "Service"));
  // Unknown kinds come last, among themselves by name; "" (comment-only) first.
  EXPECT_TRUE(KindLess("APIService", "Alloy"));
  EXPECT_TRUE(KindLess("", "Alloy"));
  EXPECT_TRUE(KindLess("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"));
  EXPECT_FALSE(KindLess("ValidatingWebhookConfiguration", "Pod"));
}

TEST(SortManifests, HooksAndStableKindOrder) {
  std::map<std::string, std::string> files = {
      {"c/templates/b.yaml", "kind: Deployment\nmetadata:\n  name: d1\n---\nkind: Service\nmetadata:\n  name: s1\n"},
      {"c/templates/a.yaml", "kind: Deployment\nmetadata:\n  name: d0\n"},
      {"c/templates/_helpers.tpl", "kind: Pod\n"},
      {"c/templates/blank.yaml", "  \n\n"},
      {"c/templates/hooks.yaml",
       "kind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: \" Test-Success \"\n---\n"
       "kind: Job\nmetadata:\n  name: unknown\n  annotations:\n    helm.sh/hook: pre-install,bogus\n---\n"
       "kind: ConfigMap\nmetadata:\n  name: pre\n  annotations:\n    helm.sh/hook: pre-install, post-upgrade\n"},
      {"c/templates/z.yaml", "# only a comment\n---\nkind: Zeta\n"},
  };
  auto r = SortManifests(files);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> names;
  for (const auto& m : r->manifests) names.push_back(m.kind + ":" + m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"Service:s1", "Deployment:d0", "Deployment:d1", ":", "Zeta:"}));
  ASSERT_EQ(r->hooks.size(), 2u);  // the hook with an unknown event is dropped
  EXPECT_EQ(r->hooks[0].name, "pre");
  EXPECT_EQ(r->hooks[0].hook_events, (std::vector<std::string>{"pre-install", "post-upgrade"}));
  EXPECT_FALSE(r->hooks[0].IsTestHook());
  EXPECT_EQ(r->hooks[1].name, "t");
  EXPECT_TRUE(r->hooks[1].IsTestHook());
}

TEST(SortManifests, ParseErrorsNameTheTemplate) {
  auto r = SortManifests({{"c/templates/bad.yaml", "apiVersion: v1\nkind: Pod: x\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("YAML parse error on c/templates/bad.yaml: ", 0), 0u) << r.status().message();
  r = SortManifests({{"c/templates/str.yaml", "just a string\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot unmarshal string into Go value of type releaseutil.SimpleHead"),
            std::string::npos);
  r = SortManifests({{"c/templates/ann.yaml", "kind: Pod\nmetadata:\n  annotations:\n    weight: 5\n"}});
  EXPECT_FALSE(r.ok());
}

TEST(GoPathMatch, GoMatchVectors) {
  struct Case {
    const char* pattern;
    const char* name;
    bool match;
  };
  // From Go's path/filepath match tests (ASCII cases).
  const Case cases[] = {
      {"abc", "abc", true},          {"*", "abc", true},
      {"*c", "abc", true},           {"a*", "a", true},
      {"a*", "abc", true},           {"a*", "ab/c", false},
      {"a*/b", "abc/b", true},       {"a*/b", "a/c/b", false},
      {"a*b*c*d*e*/f", "axbxcxdxe/f", true},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/f", true},
      {"a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false},
      {"a*b*c*d*e*/f", "axbxcxdxexxx/fff", false},
      {"a*b?c*x", "abxbbxdbxebxczzx", true},
      {"a*b?c*x", "abxbbxdbxebxczzy", false},
      {"ab[c]", "abc", true},        {"ab[b-d]", "abc", true},
      {"ab[e-g]", "abc", false},     {"ab[^c]", "abc", false},
      {"ab[^b-d]", "abc", false},    {"ab[^e-g]", "abc", true},
      {"a\\*b", "a*b", true},        {"a\\*b", "ab", false},
      {"a?b", "a/b", false},         {"a*b", "a/b", false},
      {"[\\]a]", "]", true},         {"[\\-]", "-", true},
      {"[x\\-]", "x", true},         {"[x\\-]", "-", true},
      {"[x\\-]", "z", false},        {"[\\-x]", "x", true},
      {"[]a]", "]", false},          {"[-]", "-", false},
      {"[x-]", "x", false},          {"[a-b-c]", "a", false},
      {"[", "a", false},             {"*x", "xxx", true},
  };
  for (const Case& c : cases) EXPECT_EQ(GoPathMatch(c.pattern, c.name), c.match) << c.pattern << " " << c.name;
}

TEST(ShowOnly, GlobSelectsInOutputOrderAndMissingFails) {
  std::string text =
      "---\n# Source: ch/templates/subdir/rolebinding.yaml\nkind: RoleBinding\n"
      "---\n# Source: ch/templates/subdir/role.yaml\nkind: Role\n"
      "---\n# Source: ch/templates/service.yaml\nkind: Service\n";
  auto r = ShowOnly(text, {"templates/subdir/role*"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r,
            "---\n# Source: ch/templates/subdir/rolebinding.yaml\nkind: RoleBinding\n"
            "---\n# Source: ch/templates/subdir/role.yaml\nkind: Role\n");
  r = ShowOnly(text, {"templates/service.yaml", "templates/subdir/role.yaml"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "---\n# Source: ch/templates/service.yaml\nkind: Service\n---\n# Source: ch/templates/subdir/role.yaml\nkind: Role\n");
  r = ShowOnly(text, {"templates/*.yml"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "could not find template templates/*.yml in chart");
}

// A chart held in memory: templates and other files.
Chart MakeChart(std::string name, std::vector<ChartFile> templates, std::vector<ChartFile> files = {}) {
  Chart c;
  c.metadata.api_version = "v2";
  c.metadata.name = std::move(name);
  c.metadata.version = "0.1.0";
  c.templates = std::move(templates);
  c.files = std::move(files);
  return c;
}

std::string RenderOne(const Chart& c, const std::string& tpl_name, ReleaseOptions opts = {}) {
  auto r = RenderTemplates(c, Value::Map({}), opts);
  if (!r.ok()) return "ERROR: " + r.status().message();
  auto it = r->files.find(c.name() + "/" + tpl_name);
  return it == r->files.end() ? "MISSING" : it->second;
}

TEST(Files, GlobAsConfigAsSecretsLines) {
  // Helm's pkg/engine files tests.
  Chart c = MakeChart("f",
                      {{"templates/a.yaml", "{{ (.Files.Glob \"**/captain.txt\").AsConfig }}\n"
                                            "{{ (.Files.Glob \"ship/**\").AsConfig }}\n"
                                            "{{ (.Files.Glob \"ship/**\").AsSecrets }}\n"
                                            "{{ len (.Files.Lines \"multiline/test.txt\") }} "
                                            "{{ index (.Files.Lines \"multiline/test.txt\") 0 }} "
                                            "{{ len (.Files.Lines \"multiline/test_with_blank_lines.txt\") }}\n"
                                            "{{ .Files.Get \"story/author.txt\" }}|{{ .Files.Get \"nope\" }}|"
                                            "{{ len (.Files.Glob \"*.txt\") }}|{{ range $k, $_ := .Files.Glob \"story/*\" }}{{ $k }},{{ end }}"}},
                      {{"ship/captain.txt", "The Captain"},
                       {"ship/stowaway.txt", "Legatt"},
                       {"story/name.txt", "The Secret Sharer"},
                       {"story/author.txt", "Joseph Conrad"},
                       {"multiline/test.txt", "bar\nfoo\n"},
                       {"multiline/test_with_blank_lines.txt", "bar\nfoo\n\n\n"}});
  EXPECT_EQ(RenderOne(c, "templates/a.yaml"),
            "captain.txt: The Captain\n"
            "captain.txt: The Captain\nstowaway.txt: Legatt\n"
            "captain.txt: VGhlIENhcHRhaW4=\nstowaway.txt: TGVnYXR0\n"
            "2 bar 4\n"
            "Joseph Conrad||0|story/author.txt,story/name.txt,");
}

TEST(Files, GlobBracesAndClasses) {
  Chart c = MakeChart("g", {{"templates/a.yaml", "{{ range $k, $_ := .Files.Glob \"{conf,data}/[a-b]?.{yaml,json}\" }}{{ $k }} {{ end }}"}},
                      {{"conf/a1.yaml", ""}, {"conf/c1.yaml", ""}, {"data/b2.json", ""}, {"data/x/b2.json", ""}, {"other/a1.yaml", ""}});
  EXPECT_EQ(RenderOne(c, "templates/a.yaml"), "conf/a1.yaml data/b2.json ");
}

TEST(Capabilities, KubeVersionAndApiVersions) {
  auto caps = MakeCapabilities("1.29", {"monitoring.coreos.com/v1"});
  ASSERT_TRUE(caps.ok());
  EXPECT_EQ(caps->kube_version, "v1.29.0");
  ReleaseOptions opts;
  opts.capabilities = *caps;
  Chart c = MakeChart("k", {{"templates/a.yaml",
                             "{{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }} "
                             "{{ .Capabilities.KubeVersion.GitVersion }} "
                             "{{ .Capabilities.APIVersions.Has \"apps/v1\" }} {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" }} "
                             "{{ .Capabilities.APIVersions.Has \"policy/v1\" }} {{ .Capabilities.APIVersions.Has \"batch/v1alpha1\" }} "
                             "{{ .Capabilities.APIVersions.Has \"monitoring.coreos.com/v1\" }} "
                             "{{ .Capabilities.APIVersions.Has \"autoscaling.k8s.io/v1\" }} "
                             "{{ .Capabilities.APIVersions.Has \"apiextensions.k8s.io/v1\" }}"}});
  EXPECT_EQ(RenderOne(c, "templates/a.yaml", opts), "v1.29.0 1.29 v1.29.0 true true true false true false true");
  EXPECT_FALSE(MakeCapabilities("banana", {}).ok());
  EXPECT_EQ(MakeCapabilities("v1.20.0", {})->kube_minor, "20");
}

TEST(Render, BuiltInObjectsAndParentDefinesWin) {
  Chart sub = MakeChart("sub", {{"templates/_h.tpl", "{{ define \"who\" }}sub{{ end }}"},
                                {"templates/s.yaml", "{{ include \"who\" . }} {{ .Values.x }} {{ .Chart.Name }} {{ .Template.Name }} {{ .Template.BasePath }}"}});
  Chart top = MakeChart("top", {{"templates/_h.tpl", "{{ define \"who\" }}top{{ end }}"},
                                {"templates/t.yaml", "{{ include \"who\" . }} {{ .Release.Name }} {{ .Release.Namespace }} "
                                                     "{{ .Release.IsInstall }} {{ .Release.Revision }} {{ .Release.Service }} "
                                                     "{{ .Chart.Version }} {{ .Subcharts.sub.Chart.Name }} {{ .Values.missing }}"},
                                {"templates/NOTES.txt", "notes for {{ .Release.Name }}"}});
  top.subcharts.push_back(sub);
  ReleaseOptions opts;
  opts.name = "rel";
  opts.namespace_ = "ns";
  Value values = Value::Map({{"sub", Value::Map({{"x", Value::String("sx")}})}});
  auto r = RenderTemplates(top, values, opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files.at("top/templates/t.yaml"), "top rel ns true 1 Helm 0.1.0 sub ");
  EXPECT_EQ(r->files.at("top/charts/sub/templates/s.yaml"),
            "top sx sub top/charts/sub/templates/s.yaml top/charts/sub/templates");
  EXPECT_EQ(r->files.count("top/templates/NOTES.txt"), 0u);
  EXPECT_EQ(r->notes, "notes for rel");
  EXPECT_EQ(r->files.count("top/templates/_h.tpl"), 0u);
}

TEST(Render, LibraryChartContributesOnlyDefines) {
  Chart lib = MakeChart("lib", {{"templates/_d.tpl", "{{ define \"lib.x\" }}from-lib{{ end }}"},
                                {"templates/cm.yaml", "kind: ConfigMap"}});
  lib.metadata.type = "library";
  Chart top = MakeChart("app", {{"templates/a.yaml", "{{ include \"lib.x\" . }}"}});
  top.subcharts.push_back(lib);
  auto r = RenderTemplates(top, Value::Map({}), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files.size(), 1u);
  EXPECT_EQ(r->files.at("app/templates/a.yaml"), "from-lib");
}

TEST(Render, ErrorsNameTheTemplate) {
  Chart c = MakeChart("e", {{"templates/a.yaml", "{{ required \"need x\" .Values.x }}"}});
  auto r = RenderTemplates(c, Value::Map({}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "execution error at (e/templates/a.yaml:1:3): need x");
  Chart p = MakeChart("p", {{"templates/a.yaml", "{{ if }}"}});
  r = RenderTemplates(p, Value::Map({}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("parse error at (p/templates/a.yaml:1): ", 0), 0u) << r.status().message();
}

TEST(ReleaseName, HelmRule) {
  EXPECT_TRUE(ValidateReleaseName("release-name").ok());
  EXPECT_TRUE(ValidateReleaseName("a.b-c").ok());
  EXPECT_FALSE(ValidateReleaseName("Upper").ok());
  EXPECT_FALSE(ValidateReleaseName("-x").ok());
  EXPECT_FALSE(ValidateReleaseName(std::string(54, 'a')).ok());
  EXPECT_FALSE(ValidateReleaseName("").ok());
}

TEST(ChartFileOverrides, ReplaceTemplateByPath) {
  Chart c = MakeChart("c", {{"templates/a.yaml", "old"}});
  Chart sub = MakeChart("s", {{"templates/b.yaml", "old-sub"}});
  sub.origin = "charts/sdir";
  c.subcharts.push_back(sub);
  ASSERT_TRUE(ApplyChartFileOverrides(&c, {{"cdir/templates/a.yaml", "new"}, {"cdir/charts/sdir/templates/b.yaml", "new-sub"},
                                           {"cdir/files/x.txt", "x"}})
                  .ok());
  EXPECT_EQ(c.templates[0].data, "new");
  EXPECT_EQ(c.subcharts[0].templates[0].data, "new-sub");
  ASSERT_EQ(c.files.size(), 1u);
  EXPECT_EQ(c.files[0].name, "files/x.txt");
}

TEST(NameTemplate, SprigFunctions) {
  // The corpus's helm-template-name-template: b64enc "abc" is YWJj.
  auto n = RenderNameTemplate("foobar-{{ b64enc \"abc\" | lower }}-baz");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, "foobar-ywjj-baz");
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

TEST(RenderRelease, ChartChecks) {
  ReleaseOptions opts;
  opts.capabilities = *MakeCapabilities("v1.20.0", {});
  Chart c = MakeChart("kv", {{"templates/a.yaml", "kind: ConfigMap\nmetadata:\n  name: x\n"}});
  c.metadata.kube_version = ">=1.30.0-0";
  auto r = RenderRelease(c, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "chart requires kubeVersion: >=1.30.0-0 which is incompatible with Kubernetes v1.20.0");
  c.metadata.kube_version = ">=1.16.0-0";
  r = RenderRelease(c, opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->manifests.size(), 1u);
  EXPECT_EQ(r->manifests[0].kind, "ConfigMap");

  Chart dep = MakeChart("dep", {});
  dep.metadata.dependencies.push_back(Dependency{});
  dep.metadata.dependencies.back().name = "missing-one";
  r = RenderRelease(dep, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("found in Chart.yaml, but missing in charts/ directory: missing-one"),
            std::string::npos);

  Chart lib = MakeChart("lib", {});
  lib.metadata.type = "library";
  r = RenderRelease(lib, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "library charts are not installable");
}

TEST(HelmTemplateText, AssemblyHooksCrdsAndNoManifests) {
  TemplateOptions opts;
  opts.release.capabilities = *MakeCapabilities("v1.20.0", {});
  Chart c = MakeChart("a", {{"templates/cm.yaml", "kind: ConfigMap\nmetadata:\n  name: x\n"},
                            {"templates/t.yaml", "kind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n"}},
                      {{"crds/crd.yaml", "kind: CustomResourceDefinition\n"}});
  TemplateOutput out = HelmTemplateText(c, opts);
  ASSERT_TRUE(out.error.ok()) << out.error.ToString();
  EXPECT_EQ(out.out, "---\n# Source: a/templates/cm.yaml\nkind: ConfigMap\nmetadata:\n  name: x\n"
                     "---\n# Source: a/templates/t.yaml\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n");
  opts.skip_tests = true;
  opts.include_crds = true;
  out = HelmTemplateText(c, opts);
  EXPECT_EQ(out.out, "---\n# Source: a/crds/crd.yaml\nkind: CustomResourceDefinition\n\n"
                     "---\n# Source: a/templates/cm.yaml\nkind: ConfigMap\nmetadata:\n  name: x\n");
  Chart empty = MakeChart("e", {{"templates/blank.yaml", "\n"}});
  out = HelmTemplateText(empty, opts);
  EXPECT_EQ(out.out, "\n");
  // Template errors carry Helm's hint, and nothing is printed.
  Chart bad = MakeChart("b", {{"templates/x.yaml", "{{ fail \"boom\" }}"}});
  out = HelmTemplateText(bad, opts);
  EXPECT_EQ(out.error.message(), "execution error at (b/templates/x.yaml:1:3): boom\n\nUse --debug flag to render out invalid YAML");
  EXPECT_EQ(out.out, "");
}

}  // namespace
}  // namespace eco::helm
