#include "helm/chart.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>

#include "helm/helmignore.h"

namespace eco::helm {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Archives built in memory, including the entry types charts must not hold.

struct Entry {
  Entry(std::string p, std::string c = "", unsigned t = AE_IFREG, std::string l = "",
        bool h = false, size_t z = 0)
      : path(std::move(p)),
        content(std::move(c)),
        type(t),
        link(std::move(l)),
        hardlink(h),
        zeros(z) {}
  std::string path;
  std::string content;
  unsigned type = AE_IFREG;  // AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFIFO, AE_IFCHR
  std::string link;          // symlink target
  bool hardlink = false;     // `link` is a hard link target
  size_t zeros = 0;          // extra zero bytes appended (compressible bulk)
};

struct WriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

la_ssize_t AppendTo(archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

std::string Tgz(const std::vector<Entry>& entries) {
  std::string out;
  std::unique_ptr<archive, WriteFree> a(archive_write_new());
  archive_write_add_filter_gzip(a.get());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  EXPECT_EQ(archive_write_open(a.get(), &out, nullptr, AppendTo, nullptr), ARCHIVE_OK);
  for (const auto& en : entries) {
    std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
    archive_entry_set_pathname(e.get(), en.path.c_str());
    bool dir = en.type == AE_IFDIR || (!en.path.empty() && en.path.back() == '/');
    archive_entry_set_filetype(e.get(), dir ? AE_IFDIR : en.type);
    archive_entry_set_perm(e.get(), 0644);
    if (en.type == AE_IFLNK) archive_entry_set_symlink(e.get(), en.link.c_str());
    if (en.hardlink) archive_entry_set_hardlink(e.get(), en.link.c_str());
    size_t size = en.type == AE_IFREG && !dir && !en.hardlink ? en.content.size() + en.zeros : 0;
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
    EXPECT_EQ(archive_write_header(a.get(), e.get()), ARCHIVE_OK) << archive_error_string(a.get());
    if (size == 0) continue;
    if (!en.content.empty()) archive_write_data(a.get(), en.content.data(), en.content.size());
    std::string chunk(1 << 20, '\0');
    for (size_t left = en.zeros; left > 0;) {
      size_t n = std::min(left, chunk.size());
      archive_write_data(a.get(), chunk.data(), n);
      left -= n;
    }
  }
  EXPECT_EQ(archive_write_close(a.get()), ARCHIVE_OK);
  return out;
}

const char* kChartYaml = "apiVersion: v2\nname: demo\nversion: 0.1.0\n";

std::vector<Entry> MinimalChart(const std::string& top = "demo",
                                const std::string& chart_yaml = kChartYaml) {
  return {{top + "/Chart.yaml", chart_yaml},
          {top + "/values.yaml", "replicaCount: 1\n"},
          {top + "/templates/deployment.yaml", "kind: Deployment\n"}};
}

std::vector<std::string> Names(const std::vector<ChartFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.name);
  return out;
}

const ChartFile* Find(const std::vector<ChartFile>& files, std::string_view name) {
  for (const auto& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

::testing::AssertionResult FailsWith(const Result<Chart>& r, std::string_view needle) {
  if (r.ok()) return ::testing::AssertionFailure() << "loaded fine, expected \"" << needle << "\"";
  if (r.status().message().find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "error is \"" << r.status().message() << "\", expected \"" << needle << "\"";
  }
  if (r.status().code() != Code::kInvalid) {
    return ::testing::AssertionFailure() << "code " << CodeName(r.status().code());
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// Archive basics and metadata.

TEST(LoadChartArchive, MinimalChart) {
  auto entries = MinimalChart();
  entries.insert(entries.begin(), {"demo/", "", AE_IFDIR});
  entries.push_back({"demo/templates/_helpers.tpl", "{{ define \"x\" }}{{ end }}"});
  entries.push_back({"demo/templates/NOTES.txt", "hi"});
  entries.push_back({"demo/files/a.txt", "A"});
  entries.push_back({"demo/.helmignore", "files/\n"});    // not applied to archives
  entries.push_back({"demo/Chart.lock", "not: [valid"});  // ignored
  entries.push_back({"demo/values.schema.json", "{}"});
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Chart& c = *r;
  EXPECT_EQ(c.name(), "demo");
  EXPECT_EQ(c.metadata.version, "0.1.0");
  EXPECT_EQ(c.metadata.api_version, "v2");
  EXPECT_EQ(c.chart_yaml, kChartYaml);
  EXPECT_EQ(c.values_yaml, "replicaCount: 1\n");
  ASSERT_TRUE(c.values_schema_json.has_value());
  EXPECT_EQ(*c.values_schema_json, "{}");
  EXPECT_EQ(Names(c.templates),
            (std::vector<std::string>{"templates/deployment.yaml", "templates/_helpers.tpl",
                                      "templates/NOTES.txt"}));
  EXPECT_EQ(Names(c.files), (std::vector<std::string>{"files/a.txt", ".helmignore"}));
  EXPECT_TRUE(c.subcharts.empty());
  EXPECT_FALSE(c.IsLibrary());
}

TEST(LoadChartArchive, FullMetadata) {
  const std::string yaml = R"(apiVersion: v2
name: full
version: 1.10
appVersion: 1.0
description: |
  two
  lines
type: library
kubeVersion: ">=1.20.0-0"
keywords: [a, 1, true]
home: https://example.com
sources:
  - https://src
maintainers:
  - name: me
    email: me@example.com
    url: https://me
icon: https://icon
deprecated: true
annotations:
  category: Test
  number: 42
Dependencies:
  - name: sub
    version: ~1.2.0
    repository: https://charts
    condition: sub.enabled,global.sub.enabled
    tags: [front, back]
    enabled: true
    alias: mysub
    import-values:
      - data
      - child: exports.x
        parent: yy
  - name: other
    version: "*"
unknownField: ignored
)";
  auto entries = MinimalChart("full", yaml);
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ChartMetadata& m = r->metadata;
  EXPECT_EQ(m.version, "1.1");  // a YAML float, spelled as Go does
  EXPECT_EQ(m.app_version, "1");
  EXPECT_EQ(m.description, "two lines ");  // Helm turns whitespace into spaces
  EXPECT_EQ(m.type, "library");
  EXPECT_TRUE(r->IsLibrary());
  EXPECT_EQ(m.kube_version, ">=1.20.0-0");
  EXPECT_EQ(m.keywords, (std::vector<std::string>{"a", "1", "true"}));
  EXPECT_EQ(m.home, "https://example.com");
  EXPECT_EQ(m.sources, (std::vector<std::string>{"https://src"}));
  ASSERT_EQ(m.maintainers.size(), 1u);
  EXPECT_EQ(m.maintainers[0].name, "me");
  EXPECT_EQ(m.maintainers[0].email, "me@example.com");
  EXPECT_EQ(m.maintainers[0].url, "https://me");
  EXPECT_EQ(m.icon, "https://icon");
  EXPECT_TRUE(m.deprecated);
  EXPECT_EQ(m.annotations.at("category"), "Test");
  EXPECT_EQ(m.annotations.at("number"), "42");
  ASSERT_EQ(m.dependencies.size(), 2u);  // key matched case-insensitively, as Go's json does
  const Dependency& d = m.dependencies[0];
  EXPECT_EQ(d.name, "sub");
  EXPECT_EQ(d.version, "~1.2.0");
  EXPECT_EQ(d.repository, "https://charts");
  EXPECT_EQ(d.condition, "sub.enabled,global.sub.enabled");
  EXPECT_EQ(d.tags, (std::vector<std::string>{"front", "back"}));
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.alias, "mysub");
  ASSERT_EQ(d.import_values.size(), 2u);
  EXPECT_TRUE(d.import_values[0].is_string);
  EXPECT_EQ(d.import_values[0].value, "data");
  EXPECT_FALSE(d.import_values[1].is_string);
  EXPECT_EQ(d.import_values[1].child, "exports.x");
  EXPECT_EQ(d.import_values[1].parent, "yy");
  EXPECT_EQ(m.dependencies[1].version, "*");
}

TEST(LoadChartArchive, GoSpellingOfScalars) {
  struct Case {
    std::string yaml_version;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{{"1", "1"},
                                         {"0x10", "16"},
                                         {"1e3", "1000"},
                                         {"1000000.0", "1e+06"},
                                         {"0.0001", "0.0001"},
                                         {"1_000", "1000"},
                                         {"\"1.10\"", "1.10"},
                                         {"1.2.3", "1.2.3"}}) {
    std::string yaml =
        "apiVersion: v2\nname: n\nversion: 1.0.0\nappVersion: " + c.yaml_version + "\n";
    Result<Chart> r = LoadChartArchive(Tgz(MinimalChart("n", yaml)), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->metadata.app_version, c.want) << c.yaml_version;
  }
}

TEST(LoadChartArchive, ApiVersionDefaultsToV1AndRequirementsYaml) {
  std::vector<Entry> entries = {
      {"old/Chart.yaml", "name: old\nversion: 1.0.0\n"},
      {"old/requirements.yaml",
       "dependencies:\n- name: db\n  version: 1.x\n  condition: db.enabled\n"},
      {"old/requirements.lock", "dependencies: []\n"},
  };
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metadata.api_version, "v1");
  ASSERT_EQ(r->metadata.dependencies.size(), 1u);
  EXPECT_EQ(r->metadata.dependencies[0].condition, "db.enabled");
  // v1 charts keep requirements.* visible to .Files, as Helm does.
  EXPECT_EQ(Names(r->files), (std::vector<std::string>{"requirements.yaml", "requirements.lock"}));
}

TEST(LoadChartArchive, CrdsAreFilesAndCrdObjects) {
  auto entries = MinimalChart();
  entries.push_back({"demo/crds/a.yaml", "kind: CustomResourceDefinition\n"});
  entries.push_back({"demo/crds/sub/b.JSON", "{}"});
  entries.push_back({"demo/crds/README.md", "doc"});
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::string> crds;
  for (const ChartFile* f : r->CrdFiles()) crds.push_back(f->name);
  EXPECT_EQ(crds, (std::vector<std::string>{"crds/a.yaml", "crds/sub/b.JSON"}));
  EXPECT_NE(Find(r->files, "crds/README.md"), nullptr);
}

TEST(LoadChartArchive, StripsUtf8Bom) {
  auto entries = MinimalChart();
  entries[0].content = "\xEF\xBB\xBF" + entries[0].content;
  entries.push_back({"demo/files/bom.txt", "\xEF\xBB\xBFtext"});
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Find(r->files, "files/bom.txt")->data, "text");
}

TEST(LoadChartArchive, Utf8Names) {
  auto entries = MinimalChart();
  entries.push_back({"demo/files/\u00fcn\u00efc\u00f6de-\u2603.txt", "snow"});
  // Written as a UTF-8 pax archive, read back in the C locale eco runs in.
  std::string saved = std::setlocale(LC_CTYPE, nullptr);
  ASSERT_NE(std::setlocale(LC_CTYPE, "C.UTF-8"), nullptr);
  std::string tgz = Tgz(entries);
  std::setlocale(LC_CTYPE, saved.c_str());
  Result<Chart> r = LoadChartArchive(tgz, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE(Find(r->files, "files/\u00fcn\u00efc\u00f6de-\u2603.txt"), nullptr);
}

TEST(LoadChartArchive, WindowsSeparatorsAndDotPrefix) {
  std::vector<Entry> entries = {
      {"./win\\Chart.yaml", "apiVersion: v2\nname: win\nversion: 1.0.0\n"},
      {"./win\\templates\\a.yaml", "a"}};
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Names(r->templates), (std::vector<std::string>{"templates/a.yaml"}));
}

// ---------------------------------------------------------------------------
// Subcharts.

TEST(LoadChartArchive, SubchartDirectoriesAndNestedTgz) {
  std::string inner = Tgz(MinimalChart("inner", "apiVersion: v2\nname: inner\nversion: 2.0.0\n"));
  std::string mid = Tgz({{"mid/Chart.yaml", "apiVersion: v2\nname: mid\nversion: 1.0.0\n"},
                         {"mid/charts/inner-2.0.0.tgz", inner}});
  auto entries = MinimalChart();
  entries.push_back({"demo/charts/mid-1.0.0.tgz", mid});
  entries.push_back(
      {"demo/charts/adir/Chart.yaml", "apiVersion: v2\nname: a-name\nversion: 0.0.1\n"});
  entries.push_back({"demo/charts/adir/templates/t.yaml", "t"});
  entries.push_back({"demo/charts/adir/values.yaml", "x: 1\n"});
  entries.push_back({"demo/charts/_skipped/Chart.yaml", "garbage"});
  entries.push_back({"demo/charts/.hidden/Chart.yaml", "garbage"});
  entries.push_back({"demo/charts/mid-1.0.0.tgz.prov", "signature"});
  Result<Chart> r = LoadChartArchive(Tgz(entries), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->subcharts.size(), 2u);
  const Chart& a = r->subcharts[0];
  EXPECT_EQ(a.name(), "a-name");
  EXPECT_EQ(a.origin, "charts/adir");
  EXPECT_EQ(Names(a.templates), (std::vector<std::string>{"templates/t.yaml"}));
  EXPECT_EQ(a.values_yaml, "x: 1\n");
  const Chart& m = r->subcharts[1];
  EXPECT_EQ(m.name(), "mid");
  EXPECT_EQ(m.origin, "charts/mid-1.0.0.tgz");
  ASSERT_EQ(m.subcharts.size(), 1u);
  EXPECT_EQ(m.subcharts[0].name(), "inner");
  EXPECT_EQ(m.subcharts[0].metadata.version, "2.0.0");
  EXPECT_EQ(Names(m.subcharts[0].templates),
            (std::vector<std::string>{"templates/deployment.yaml"}));
  EXPECT_NE(Find(r->files, "charts/mid-1.0.0.tgz.prov"), nullptr);
}

TEST(LoadChartArchive, BadSubchartNamesParentAndSubchart) {
  auto entries = MinimalChart();
  entries.push_back({"demo/charts/broken/values.yaml", "a: 1\n"});
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(entries), {}),
                        "error unpacking subchart broken in demo: Chart.yaml file is missing"));
  entries = MinimalChart();
  entries.push_back({"demo/charts/README.md", "a stray file is not a chart, as in Helm"});
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(entries), {}),
                        "error unpacking subchart README.md in demo: Chart.yaml file is missing"));
  entries = MinimalChart();
  entries.push_back({"demo/charts/bad.tgz", "not gzip"});
  EXPECT_TRUE(
      FailsWith(LoadChartArchive(Tgz(entries), {}), "error unpacking subchart bad.tgz in demo"));
}

TEST(LoadChartArchive, NestingDepthLimit) {
  std::string chart = Tgz(MinimalChart("c0", "apiVersion: v2\nname: c0\nversion: 1.0.0\n"));
  for (int i = 1; i <= 4; ++i) {
    std::string n = "c" + std::to_string(i);
    chart = Tgz({{n + "/Chart.yaml", "apiVersion: v2\nname: " + n + "\nversion: 1.0.0\n"},
                 {n + "/charts/sub.tgz", chart}});
  }
  LoadLimits lim;
  lim.max_depth = 4;
  EXPECT_TRUE(LoadChartArchive(chart, lim).ok());
  lim.max_depth = 3;
  EXPECT_TRUE(FailsWith(LoadChartArchive(chart, lim), "nested deeper than the limit of 3 levels"));
}

// ---------------------------------------------------------------------------
// Validation, with Helm's messages.

TEST(Validation, HelmMessages) {
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz({{"x/values.yaml", "a: 1\n"}}), {}),
                        "Chart.yaml file is missing"));
  auto load = [](const std::string& chart_yaml) {
    return LoadChartArchive(Tgz(MinimalChart("x", chart_yaml)), {});
  };
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nversion: 1.0.0\n"),
                        "validation: chart.metadata.name is required"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\n"),
                        "validation: chart.metadata.version is required"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v3\nname: x\nversion: 1.0.0\n"),
                        "validation: chart.metadata.apiVersion \"v3\" is not supported"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\nversion: 1.0.0\ntype: Library\n"),
                        "validation: chart.metadata.type must be application or library"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\nversion: one\n"),
                        "validation: chart.metadata.version \"one\" is invalid"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: a/b\nversion: 1.0.0\n"),
                        "validation: chart.metadata.name \"a/b\" is invalid"));
  EXPECT_TRUE(FailsWith(
      load("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n  alias: b!\n"),
      "validation: dependency \"a\" has disallowed characters in the alias"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n- "
                             "name: b\n  alias: a\n"),
                        "validation: more than one dependency with name or alias \"a\""));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- null\n"),
                        "validation: dependencies must not contain empty or null nodes"));
  EXPECT_TRUE(FailsWith(
      load("apiVersion: v2\nname: [x]\nversion: 1.0.0\n"),
      "cannot load Chart.yaml: error unmarshaling JSON: json: cannot unmarshal array into Go "
      "struct field Metadata.name of type string"));
  EXPECT_TRUE(FailsWith(load("apiVersion: v2\nname: x\nversion: 1.0.0\ndeprecated: \"yes\"\n"),
                        "of type bool"));
  EXPECT_TRUE(FailsWith(load("name: [unclosed\n"), "cannot load Chart.yaml: yaml: line"));
  EXPECT_TRUE(FailsWith(load("- a\n- b\n"), "cannot load Chart.yaml"));
  auto entries = MinimalChart();
  entries[1].content = "- a list\n";
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(entries), {}), "cannot load values.yaml"));
  // Versions Masterminds semver accepts.
  for (const char* v : {"1", "1.2", "v1.2.3", "0.13.1-dev.37+5412f53", "1.0.0-rc.1"}) {
    EXPECT_TRUE(load("apiVersion: v2\nname: x\nversion: " + std::string(v) + "\n").ok()) << v;
  }
}

// ---------------------------------------------------------------------------
// Guards: every violation is an Invalid error that names what is wrong.

TEST(Guards, ZipBombStoppedByFileLimit) {
  auto entries = MinimalChart();
  entries.push_back({"demo/files/bomb.bin", "", AE_IFREG, "", false, 120u << 20});
  std::string tgz = Tgz(entries);
  ASSERT_LT(tgz.size(), 1u << 20);  // highly compressible
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(
      FailsWith(LoadChartArchive(tgz, {}),
                "file \"demo/files/bomb.bin\" is larger than the maximum file size 5242880"));
  // Larger per-file limit: the total budget stops it.
  LoadLimits lim;
  lim.max_file_bytes = 1u << 30;
  lim.max_total_bytes = 64u << 20;
  EXPECT_TRUE(FailsWith(LoadChartArchive(tgz, lim),
                        "decompressed chart is larger than the maximum size 67108864"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Guards, NestedTgzSharesTheBudget) {
  // Each archive alone fits in 8 MiB; together they do not.
  std::string inner = Tgz({{"inner/Chart.yaml", "apiVersion: v2\nname: inner\nversion: 1.0.0\n"},
                           {"inner/files/big", "", AE_IFREG, "", false, 3u << 20},
                           {"inner/files/big2", "", AE_IFREG, "", false, 3u << 20}});
  auto entries = MinimalChart();
  entries.push_back({"demo/files/big", "", AE_IFREG, "", false, 3u << 20});
  entries.push_back({"demo/charts/inner.tgz", inner});
  LoadLimits lim;
  lim.max_total_bytes = 8u << 20;
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(entries), lim),
                        "decompressed chart is larger than the maximum size"));
  lim.max_total_bytes = 16u << 20;
  EXPECT_TRUE(LoadChartArchive(Tgz(entries), lim).ok());
}

TEST(Guards, TooManyEntries) {
  auto entries = MinimalChart();
  for (int i = 0; i < 50; ++i) entries.push_back({"demo/files/f" + std::to_string(i), "x"});
  LoadLimits lim;
  lim.max_entries = 20;
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(entries), lim), "too many files (limit 20)"));
}

TEST(Guards, ArchiveSizeLimit) {
  LoadLimits lim;
  lim.max_archive_bytes = 100;
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz(MinimalChart()), lim), "more than the maximum 100"));
}

TEST(Guards, PathTraversalAndAbsolutePaths) {
  auto with = [](Entry e) {
    auto entries = MinimalChart();
    entries.push_back(std::move(e));
    return LoadChartArchive(Tgz(entries), {});
  };
  EXPECT_TRUE(FailsWith(with({"demo/../../etc/passwd", "x"}),
                        "chart illegally references parent directory"));
  EXPECT_TRUE(FailsWith(with({"demo/templates/../../x", "x"}),
                        "chart illegally references parent directory"));
  EXPECT_TRUE(FailsWith(with({"/etc/passwd", "x"}), "chart illegally contains absolute paths"));
  EXPECT_TRUE(FailsWith(with({"other/x.yaml", "x"}), "is outside the chart directory \"demo\""));
  EXPECT_TRUE(FailsWith(with({"stray.yaml", "x"}), "is outside the chart directory \"demo\""));
  EXPECT_TRUE(FailsWith(LoadChartArchive(Tgz({{"Chart.yaml", kChartYaml}}), {}),
                        "outside the base directory"));
  EXPECT_TRUE(FailsWith(with({"demo/c:/x", "x"}), "illegally named files"));
  EXPECT_TRUE(FailsWith(with({"demo/templates/deployment.yaml", "again"}), "appears twice"));
}

TEST(Guards, LinksAndSpecialFilesRejected) {
  auto with = [](Entry e) {
    auto entries = MinimalChart();
    entries.push_back(std::move(e));
    return LoadChartArchive(Tgz(entries), {});
  };
  EXPECT_TRUE(FailsWith(with({"demo/templates/link.yaml", "", AE_IFLNK, "/etc/passwd"}),
                        "entry \"demo/templates/link.yaml\" is a symbolic link"));
  EXPECT_TRUE(FailsWith(with({"demo/templates/hard.yaml", "", AE_IFREG, "demo/values.yaml", true}),
                        "entry \"demo/templates/hard.yaml\" is a hard link"));
  EXPECT_TRUE(FailsWith(with({"demo/fifo", "", AE_IFIFO}), "is a special file"));
  EXPECT_TRUE(FailsWith(with({"demo/dev", "", AE_IFCHR}), "is a special file"));
}

TEST(Guards, NotGzipTruncatedAndEmpty) {
  EXPECT_TRUE(FailsWith(LoadChartArchive("PK\3\4 zip file", {}),
                        "does not appear to be a gzipped archive"));
  EXPECT_TRUE(FailsWith(LoadChartArchive("", {}), "does not appear to be a gzipped archive"));
  auto entries = MinimalChart();
  entries.push_back({"demo/files/noise", std::string(200000, 'x') + "tail"});
  std::string full = Tgz(entries);
  for (size_t cut : {full.size() / 2, full.size() - 9, size_t{20}}) {
    Result<Chart> r = LoadChartArchive(full.substr(0, cut), {});
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  std::string garbage = full;
  garbage[garbage.size() / 2] ^= 0x55;
  garbage[garbage.size() / 2 + 1] ^= 0x55;
  EXPECT_FALSE(LoadChartArchive(garbage, {}).ok());
  EXPECT_TRUE(
      FailsWith(LoadChartArchive(Tgz({{"demo/", "", AE_IFDIR}}), {}), "no files in chart archive"));
}

TEST(Guards, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  std::string good = Tgz(MinimalChart());
  for (int i = 0; i < 300; ++i) {
    std::string s = good;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < flips; ++j) s[rng() % s.size()] = static_cast<char>(rng());
    if (rng() % 3 == 0) s.resize(rng() % s.size());
    (void)LoadChartArchive(s, {});  // any result, but no crash or hang
  }
}

// ---------------------------------------------------------------------------
// Directories.

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/eco-chart-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& rel, const std::string& content) const {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }

 private:
  std::string path_;
};

TEST(LoadChartDirectory, HelmignoreWalkOrderAndSubcharts) {
  TempDir d;
  d.Write("Chart.yaml", kChartYaml);
  d.Write("values.yaml", "a: 1\n");
  d.Write(".helmignore", "# docs\n*.md\nci/\n/secret.txt\ncharts/sub/ignored.txt\n");
  d.Write("README.md", "x");
  d.Write("secret.txt", "x");
  d.Write("files/secret.txt", "kept: only the root one is anchored");
  d.Write("ci/values.yaml", "x");
  d.Write("templates/a.yaml", "a");
  d.Write("templates/a/b.yaml", "ab");
  d.Write("templates/a.b.yaml", "a.b");
  d.Write("templates/.gitkeep", "");
  d.Write("templates/docs.md", "ignored too");
  d.Write("charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n");
  d.Write("charts/sub/ignored.txt", "x");
  d.Write("charts/sub/kept.txt", "x");
  d.Write("charts/sub/.helmignore", "kept.txt\n");  // a subchart's own rules are not applied (Helm)
  d.Write("charts/packed.tgz",
          Tgz(MinimalChart("packed", "apiVersion: v2\nname: packed\nversion: 3.0.0\n")));
  Result<Chart> r = LoadChartDirectory(d.path(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // filepath.Walk order: names sorted within each directory ("a" before "a.b.yaml").
  EXPECT_EQ(
      Names(r->templates),
      (std::vector<std::string>{"templates/a/b.yaml", "templates/a.b.yaml", "templates/a.yaml"}));
  EXPECT_EQ(Names(r->files), (std::vector<std::string>{".helmignore", "files/secret.txt"}));
  ASSERT_EQ(r->subcharts.size(), 2u);  // sorted by entry name in charts/
  EXPECT_EQ(r->subcharts[0].name(), "packed");
  EXPECT_EQ(r->subcharts[0].metadata.version, "3.0.0");
  EXPECT_EQ(r->subcharts[1].name(), "sub");
  EXPECT_EQ(Names(r->subcharts[1].files), (std::vector<std::string>{".helmignore", "kept.txt"}));
}

TEST(LoadChartDirectory, SymlinksFollowedLoopsAndFifosRejected) {
  TempDir d;
  d.Write("Chart.yaml", kChartYaml);
  d.Write("real/data.txt", "linked");
  fs::create_symlink(fs::path(d.path()) / "real", fs::path(d.path()) / "files");
  Result<Chart> r = LoadChartDirectory(d.path(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(Find(r->files, "files/data.txt"), nullptr);

  fs::create_symlink(d.path(), fs::path(d.path()) / "real" / "loop");
  EXPECT_TRUE(FailsWith(LoadChartDirectory(d.path(), {}), "symbolic link loop"));
  fs::remove(fs::path(d.path()) / "real" / "loop");

  ASSERT_EQ(mkfifo((d.path() + "/pipe").c_str(), 0600), 0);
  EXPECT_TRUE(FailsWith(LoadChartDirectory(d.path(), {}), "cannot load irregular file \"pipe\""));
  d.Write(".helmignore", "pipe\n");  // ignored irregular files are fine, as in Helm
  EXPECT_TRUE(LoadChartDirectory(d.path(), {}).ok());
}

TEST(LoadChartDirectory, LimitsAndErrors) {
  TempDir d;
  d.Write("Chart.yaml", kChartYaml);
  d.Write("files/big", std::string(2000, 'x'));
  LoadLimits lim;
  lim.max_file_bytes = 1000;
  EXPECT_TRUE(FailsWith(LoadChartDirectory(d.path(), lim),
                        "file \"files/big\" is larger than the maximum file size 1000"));
  lim = {};
  lim.max_total_bytes = 1500;
  EXPECT_TRUE(FailsWith(LoadChartDirectory(d.path(), lim),
                        "decompressed chart is larger than the maximum size 1500"));
  lim = {};
  lim.max_entries = 2;
  EXPECT_TRUE(FailsWith(LoadChartDirectory(d.path(), lim), "too many files"));
  d.Write(".helmignore", "**/x\n");
  EXPECT_TRUE(
      FailsWith(LoadChartDirectory(d.path(), {}), "double-star (**) syntax is not supported"));
  Result<Chart> missing = LoadChartDirectory(d.path() + "/nope", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

// ---------------------------------------------------------------------------
// The conformance corpus: every chart loads, with known facts.

const std::string kCharts = std::string(ECO_CONFORMANCE_DIR) + "/helm/charts";

// Chart directories not inside another chart.
std::vector<std::string> ConformanceCharts() {
  std::vector<std::string> out;
  std::vector<fs::path> stack = {kCharts};
  while (!stack.empty()) {
    fs::path p = stack.back();
    stack.pop_back();
    if (fs::exists(p / "Chart.yaml")) {
      out.push_back(p.string());
      continue;
    }
    for (const auto& e : fs::directory_iterator(p)) {
      if (e.is_directory()) stack.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t CountCharts(const Chart& c) {
  size_t n = 1;
  for (const auto& s : c.subcharts) n += CountCharts(s);
  return n;
}

TEST(Conformance, EveryChartLoads) {
  if (!fs::exists(kCharts)) GTEST_SKIP() << "conformance corpus not found at " << kCharts;
  std::vector<std::string> charts = ConformanceCharts();
  ASSERT_GE(charts.size(), 40u);
  for (const auto& dir : charts) {
    Result<Chart> r = LoadChartDirectory(dir, {});
    if (dir.ends_with("/helm-v3/lib-chart")) {
      // `type: Library`: Helm fails this one with the same message (golden case).
      EXPECT_TRUE(FailsWith(r, "validation: chart.metadata.type must be application or library"));
      continue;
    }
    EXPECT_TRUE(r.ok()) << dir << ": " << r.status().ToString();
    if (r.ok()) {
      EXPECT_FALSE(r->name().empty());
      EXPECT_FALSE(r->metadata.version.empty());
    }
  }
}

TEST(Conformance, KnownFacts) {
  if (!fs::exists(kCharts)) GTEST_SKIP() << "conformance corpus not found at " << kCharts;
  Result<Chart> sub = LoadChartDirectory(kCharts + "/helm-v3/subchart", {});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->name(), "subchart");
  EXPECT_EQ(sub->metadata.api_version, "v1");
  ASSERT_EQ(sub->subcharts.size(), 2u);
  EXPECT_EQ(sub->subcharts[0].name(), "subcharta");  // directory subchartA
  EXPECT_EQ(sub->subcharts[0].origin, "charts/subchartA");
  EXPECT_EQ(sub->subcharts[1].name(), "subchartb");
  ASSERT_FALSE(sub->metadata.dependencies.empty());
  EXPECT_EQ(sub->metadata.dependencies[0].condition, "subcharta.enabled");
  EXPECT_EQ(sub->metadata.dependencies[0].import_values.size(), 3u);
  EXPECT_FALSE(sub->CrdFiles().empty());

  Result<Chart> k8s = LoadChartDirectory(kCharts + "/k8s-monitoring/k8s-monitoring", {});
  ASSERT_TRUE(k8s.ok()) << k8s.status().ToString();
  EXPECT_EQ(k8s->name(), "k8s-monitoring");
  EXPECT_EQ(k8s->metadata.version, "4.4.0");
  EXPECT_TRUE(k8s->values_schema_json.has_value());
  EXPECT_EQ(Find(k8s->files, "Chart.lock"), nullptr);
  std::set<std::string> names;
  for (const auto& s : k8s->subcharts) names.insert(s.name());
  EXPECT_TRUE(names.count("alloy-operator"));  // from alloy-operator-0.6.3.tgz
  EXPECT_TRUE(names.count("telemetry-services"));
  for (const auto& s : k8s->subcharts) {
    if (s.name() != "telemetry-services") continue;
    std::set<std::string> inner;
    for (const auto& t : s.subcharts) inner.insert(t.name());
    EXPECT_TRUE(inner.count("kube-state-metrics"));  // a .tgz two levels down
    EXPECT_TRUE(inner.count("prometheus-node-exporter"));
  }
  EXPECT_GT(CountCharts(*k8s), 25u);

  Result<Chart> op = LoadChartDirectory(kCharts + "/emco/operators-latest/operator", {});
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  EXPECT_EQ(op->name(), "m3db-operator");
  EXPECT_EQ(op->metadata.version, "0.13.1-dev.37+5412f53");

  Result<Chart> po =
      LoadChartDirectory(kCharts + "/emco/prometheus-operator/prometheus-operator", {});
  ASSERT_TRUE(po.ok()) << po.status().ToString();
  EXPECT_FALSE(po->metadata.dependencies.empty());  // from requirements.yaml
}

// Packs a chart directory the way `helm package` does: what the directory
// load keeps (.helmignore applied), under a top directory.
void PackDir(const fs::path& root, const fs::path& dir, const IgnoreRules& rules,
             const std::string& top, std::vector<Entry>* out) {
  std::vector<fs::path> kids;
  for (const auto& e : fs::directory_iterator(dir)) kids.push_back(e.path());
  std::sort(kids.begin(), kids.end());
  for (const auto& k : kids) {
    std::string rel = fs::relative(k, root).generic_string();
    bool is_dir = fs::is_directory(k);
    if (rules.Ignore(rel, is_dir)) continue;
    if (is_dir) {
      PackDir(root, k, rules, top, out);
      continue;
    }
    std::ifstream in(k, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out->push_back({top + "/" + rel, std::move(data)});
  }
}

void ExpectSameChart(const Chart& a, const Chart& b, const std::string& where) {
  EXPECT_EQ(a.name(), b.name()) << where;
  EXPECT_EQ(a.metadata.version, b.metadata.version) << where;
  EXPECT_EQ(a.chart_yaml, b.chart_yaml) << where;
  EXPECT_EQ(a.values_yaml, b.values_yaml) << where;
  EXPECT_EQ(a.values_schema_json, b.values_schema_json) << where;
  auto sorted = [](const std::vector<ChartFile>& v) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : v) out.emplace_back(f.name, f.data);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(sorted(a.templates), sorted(b.templates)) << where;
  EXPECT_EQ(sorted(a.files), sorted(b.files)) << where;
  ASSERT_EQ(a.subcharts.size(), b.subcharts.size()) << where;
  for (size_t i = 0; i < a.subcharts.size(); ++i) {
    ExpectSameChart(a.subcharts[i], b.subcharts[i], where + "/" + a.subcharts[i].origin);
  }
}

TEST(Conformance, ArchiveRoundTripMatchesDirectory) {
  if (!fs::exists(kCharts)) GTEST_SKIP() << "conformance corpus not found at " << kCharts;
  for (const char* rel : {"/helm-v3/subchart", "/k8s-monitoring/k8s-monitoring",
                          "/opentelemetry/opentelemetry-collector",
                          "/emco/kube-prometheus-stack/kube-prometheus-stack"}) {
    const std::string dir = kCharts + rel;
    Result<Chart> from_dir = LoadChartDirectory(dir, {});
    ASSERT_TRUE(from_dir.ok()) << from_dir.status().ToString();
    IgnoreRules rules;
    if (fs::exists(dir + "/.helmignore")) {
      std::ifstream in(dir + "/.helmignore");
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Result<IgnoreRules> parsed = IgnoreRules::Parse(text);
      ASSERT_TRUE(parsed.ok());
      rules = std::move(parsed).value();
    }
    rules.AddDefaults();
    std::vector<Entry> entries;
    PackDir(dir, dir, rules, from_dir->name(), &entries);
    Result<Chart> from_tgz = LoadChartArchive(Tgz(entries), {});
    ASSERT_TRUE(from_tgz.ok()) << rel << ": " << from_tgz.status().ToString();
    ExpectSameChart(*from_dir, *from_tgz, rel);
  }
}

}  // namespace
}  // namespace eco::helm
