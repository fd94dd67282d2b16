// Values as Helm computes them. Expected results come from go-yaml v2's
// resolve table and sigs.k8s.io/yaml's JSON conversion, Helm's pkg/strvals
// and pkg/chartutil behaviour (coalesce, dependencies) and the helm-v3 test
// charts of the conformance corpus with their golden outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "helm/funcs.h"
#include "helm/values.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

Value Yaml(std::string_view text) {
  auto v = ParseYamlValues(text, "test.yaml");
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : Value();
}

// The value at a dotted path of maps, or a nil Value.
Value At(const Value& v, std::string_view path) {
  Value cur = v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string key(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (cur.kind() != Kind::kMap) return Value();
    auto it = cur.as_map().find(key);
    if (it == cur.as_map().end()) return Value();
    cur = it->second;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return cur;
}

bool Has(const Value& v, std::string_view path) {
  size_t dot = path.rfind('.');
  Value parent = dot == std::string_view::npos ? v : At(v, path.substr(0, dot));
  std::string key(dot == std::string_view::npos ? path : path.substr(dot + 1));
  return parent.kind() == Kind::kMap && parent.as_map().count(key) > 0;
}

void ExpectFloat(const Value& v, double want) {
  ASSERT_EQ(v.kind(), Kind::kFloat64) << v.TypeName();
  EXPECT_EQ(v.as_float(), want);
}

void ExpectString(const Value& v, const std::string& want) {
  ASSERT_EQ(v.kind(), Kind::kString) << v.TypeName();
  EXPECT_EQ(v.as_string(), want);
}

void ExpectBool(const Value& v, bool want) {
  ASSERT_EQ(v.kind(), Kind::kBool) << v.TypeName();
  EXPECT_EQ(v.as_bool(), want);
}

// --- YAML 1.1 typing (go-yaml v2 resolve + JSON round trip) -----------------

TEST(YamlValues, BoolsOfYaml11) {
  Value v = Yaml("a: yes\nb: on\nc: y\nd: Y\ne: no\nf: off\ng: n\nh: True\ni: FALSE\nj: 'yes'\nk: \"on\"\nl: yEs\n");
  ExpectBool(At(v, "a"), true);
  ExpectBool(At(v, "b"), true);
  ExpectBool(At(v, "c"), true);
  ExpectBool(At(v, "d"), true);
  ExpectBool(At(v, "e"), false);
  ExpectBool(At(v, "f"), false);
  ExpectBool(At(v, "g"), false);
  ExpectBool(At(v, "h"), true);
  ExpectBool(At(v, "i"), false);
  ExpectString(At(v, "j"), "yes");  // quoted: always a string
  ExpectString(At(v, "k"), "on");
  ExpectString(At(v, "l"), "yEs");  // not in the table
}

TEST(YamlValues, NumbersBecomeFloat64) {
  Value v = Yaml(
      "dec: 42\nneg: -7\nplus: +12\nhex: 0x1F\noct: 017\noct2: 0o17\nbin: 0b101\nund: 1_000\n"
      "flt: 1.5\nexp: 1e3\ndot: .5\nbig: 18446744073709551615\nzero: 0\n");
  ExpectFloat(At(v, "dec"), 42);
  ExpectFloat(At(v, "neg"), -7);
  ExpectFloat(At(v, "plus"), 12);
  ExpectFloat(At(v, "hex"), 31);
  ExpectFloat(At(v, "oct"), 15);
  ExpectFloat(At(v, "oct2"), 15);
  ExpectFloat(At(v, "bin"), 5);
  ExpectFloat(At(v, "und"), 1000);
  ExpectFloat(At(v, "flt"), 1.5);
  ExpectFloat(At(v, "exp"), 1000);
  ExpectFloat(At(v, "dot"), 0.5);
  ExpectFloat(At(v, "big"), 18446744073709551615.0);
  ExpectFloat(At(v, "zero"), 0);
}

TEST(YamlValues, StringsThatLookAlmostLikeNumbers) {
  Value v = Yaml("a: 1e\nb: 1.2.3\nc: 0x\nd: 2001-12-14\ne: 2001-12-14T21:59:43.10-05:00\nf: 12:30\ng: '42'\nh: 09\n");
  ExpectString(At(v, "a"), "1e");
  ExpectString(At(v, "b"), "1.2.3");
  ExpectString(At(v, "c"), "0x");
  ExpectString(At(v, "d"), "2001-12-14");  // timestamps stay strings in interface{}
  ExpectString(At(v, "e"), "2001-12-14T21:59:43.10-05:00");
  ExpectString(At(v, "f"), "12:30");  // no base-60 numbers
  ExpectString(At(v, "g"), "42");
  ExpectFloat(At(v, "h"), 9);  // not octal, but a YAML float: 09 → 9
}

TEST(YamlValues, NullsAreNilInterfaces) {
  Value v = Yaml("a: ~\nb: null\nc:\nd: Null\ne: 'null'\nl: [1, ~]\n");
  for (const char* k : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(Has(v, k)) << k;
    EXPECT_TRUE(At(v, k).is_nil_interface()) << k;
  }
  ExpectString(At(v, "e"), "null");
  ASSERT_EQ(At(v, "l").kind(), Kind::kSlice);
  EXPECT_TRUE(At(v, "l").as_list()[1].is_nil_interface());
}

TEST(YamlValues, NonStringKeysAreFormattedAsGoDoes) {
  Value v = Yaml("1: a\ntrue: b\n1.5: c\nn: d\n0x10: e\n");
  ExpectString(At(v, "1"), "a");
  ExpectString(At(v, "true"), "b");
  ASSERT_EQ(v.as_map().count("1.5"), 1u);
  ExpectString(v.as_map().at("1.5"), "c");
  ExpectString(At(v, "false"), "d");  // `n` is a bool key
  ExpectString(At(v, "16"), "e");
}

TEST(YamlValues, AnchorsAliasesAndMergeKeys) {
  Value v = Yaml(
      "base: &b {x: 1, p: 2}\n"
      "one:\n  <<: *b\n  p: 3\n"
      "two:\n  <<: [{x: 10}, {x: 20, z: 30}]\n"
      "ref: *b\n"
      "quoted:\n  '<<': {x: 1}\n"
      "ykey: {y: 1}\n");
  ExpectFloat(At(v, "one.x"), 1);
  ExpectFloat(At(v, "one.p"), 3);
  ExpectFloat(At(v, "two.x"), 10);  // earlier maps of a merge list win
  ExpectFloat(At(v, "two.z"), 30);
  ExpectFloat(At(v, "ref.p"), 2);
  ExpectFloat(At(v, "ykey.true"), 1);  // `y` is a YAML 1.1 bool, also as a key
  ExpectFloat(At(v, "quoted.<<.x"), 1);  // a quoted << is an ordinary key
}

TEST(YamlValues, BinaryAndExplicitTags) {
  Value v = Yaml("a: !!binary aGVsbG8=\nb: !!str 12\nc: !!float 3\nd: !custom 5\n");
  ExpectString(At(v, "a"), "hello");
  ExpectString(At(v, "b"), "12");
  ExpectFloat(At(v, "c"), 3);
  ExpectString(At(v, "d"), "5");
  auto bad = ParseYamlValues("a: !!int abc\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot decode !!str `abc` as a !!int"), std::string::npos);
}

TEST(YamlValues, DocumentsThatAreNotMaps) {
  auto empty = ParseYamlValues("", "x.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->kind(), Kind::kMap);
  EXPECT_TRUE(empty->as_map().empty());
  auto comment = ParseYamlValues("# nothing\n", "x.yaml");
  ASSERT_TRUE(comment.ok());
  EXPECT_TRUE(comment->as_map().empty());
  auto list = ParseYamlValues("- a\n", "x.yaml");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().message(),
            "failed to parse x.yaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into "
            "Go value of type map[string]interface {}");
  auto inf = ParseYamlValues("a: .inf\n", "x.yaml");
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.status().message().find("json: unsupported value: +Inf"), std::string::npos);
}

TEST(YamlValues, LineWithoutColonInABlockMapping) {
  // Golden helm-template-invalid-yaml-error: a template ending in a bare word.
  std::string pod = "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: w\ninvalid";
  auto r = DecodeYaml(pod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "error converting YAML to JSON: yaml: line 7: could not find expected ':'");
  // Still fine: flow maps with a lone key, keys followed by spaces, folded plain scalars.
  EXPECT_TRUE(DecodeYaml("a: {b, c: 1}\nd   : 2\ne: one\n  two\n").ok());
  EXPECT_TRUE(DecodeYaml("nested:\n  x:\n  y: 1\n").ok());
  EXPECT_TRUE(DecodeYaml("? explicit\n: 1\n").ok());
}

TEST(YamlValues, FromYamlFunctions) {
  auto funcs = HelmFuncs();
  CallContext ctx;
  auto from_yaml = funcs->at("fromYaml").fn;
  auto r = from_yaml(ctx, {Value::String("a: [")});
  ASSERT_TRUE(r.ok());
  // Wording from the template conformance corpus (own.helm-serialization.003).
  ExpectString(At(*r, "Error"), "error converting YAML to JSON: yaml: line 1: did not find expected node content");
  auto arr = funcs->at("fromYamlArray").fn(ctx, {Value::String("a: 1")});
  ASSERT_TRUE(arr.ok());
  ASSERT_EQ(arr->kind(), Kind::kSlice);
  ExpectString(arr->as_list().at(0),
               "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type "
               "[]interface {}");
}

// --- CoalesceValues -----------------------------------------------------------

Chart MakeChart(const std::string& name, const std::string& values) {
  Chart c;
  c.metadata.name = name;
  c.metadata.version = "1.0.0";
  c.values_yaml = values;
  return c;
}

TEST(Coalesce, UserValuesOverDefaultsAndNullDeletes) {
  Chart c = MakeChart("top", "name: def\nkeep: 1\ndrop: 2\nnested:\n  a: 1\n  b: 2\n  c: {d: 3}\nscalar: x\n");
  Value user = Yaml("name: mine\ndrop: null\nnested:\n  b: null\n  e: 5\nscalar: {t: 1}\nnew: true\n");
  auto v = CoalesceValues(c, user);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ExpectString(At(*v, "name"), "mine");
  ExpectFloat(At(*v, "keep"), 1);
  EXPECT_FALSE(Has(*v, "drop"));
  ExpectFloat(At(*v, "nested.a"), 1);
  EXPECT_FALSE(Has(*v, "nested.b"));
  ExpectFloat(At(*v, "nested.c.d"), 3);
  ExpectFloat(At(*v, "nested.e"), 5);
  ExpectFloat(At(*v, "scalar.t"), 1);  // the user's table wins over a default scalar
  ExpectBool(At(*v, "new"), true);
}

TEST(Coalesce, NullsInDefaultsStay) {
  Chart c = MakeChart("top", "a: null\nb:\n  c: null\n");
  auto v = CoalesceValues(c, Value::Map({}));
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(Has(*v, "a"));
  EXPECT_TRUE(At(*v, "a").is_nil());
  ASSERT_TRUE(Has(*v, "b.c"));
}

TEST(Coalesce, SubchartsScopedAndGlobalsCopiedDown) {
  Chart sub = MakeChart("sub", "port: 80\nname: subdef\nglobal:\n  region: sub-default\n  onlysub: 1\n");
  Chart top = MakeChart("top", "sub:\n  name: fromparent\nglobal:\n  region: eu\n  table: {x: 1}\n");
  top.subcharts.push_back(sub);
  Value user = Yaml("sub:\n  port: 8080\nglobal:\n  table: {w: 2}\n");
  auto v = CoalesceValues(top, user);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ExpectFloat(At(*v, "sub.port"), 8080);
  ExpectString(At(*v, "sub.name"), "fromparent");
  ExpectString(At(*v, "global.region"), "eu");
  ExpectString(At(*v, "sub.global.region"), "eu");  // the parent's globals win
  ExpectFloat(At(*v, "sub.global.onlysub"), 1);
  ExpectFloat(At(*v, "sub.global.table.x"), 1);
  ExpectFloat(At(*v, "sub.global.table.w"), 2);
  EXPECT_FALSE(Has(*v, "onlysub"));
}

TEST(Coalesce, NullForSubchartKeyDeletesItsDefault) {
  Chart sub = MakeChart("sub", "a: 1\nb: 2\n");
  Chart top = MakeChart("top", "");
  top.subcharts.push_back(sub);
  auto v = CoalesceValues(top, Yaml("sub:\n  a: null\n"));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(Has(*v, "sub.a"));
  ExpectFloat(At(*v, "sub.b"), 2);
}

TEST(Coalesce, SubchartValueMustBeATable) {
  Chart top = MakeChart("top", "");
  top.subcharts.push_back(MakeChart("sub", "a: 1\n"));
  auto v = CoalesceValues(top, Yaml("sub: str\n"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "type mismatch on sub: %!t(string=str)");
}

// --- Dependencies (helm-v3 test chart `subchart`) ------------------------------

#ifdef ECO_CONFORMANCE_DIR
const std::string kCharts = std::string(ECO_CONFORMANCE_DIR) + "/helm/charts/helm-v3/";
#else
const std::string kCharts;
#endif

// The corpus is optional on a developer machine; once it is there, a chart
// that does not load is a failure, never a skip.
bool CorpusPresent() { return !kCharts.empty() && std::filesystem::is_directory(kCharts); }

Result<Chart> LoadTestChart(const std::string& name) { return LoadChartDirectory(kCharts + name); }

std::vector<std::string> SubchartNames(const Chart& c) {
  std::vector<std::string> out;
  for (const Chart& s : c.subcharts) out.push_back(s.name());
  return out;
}

using Names = std::vector<std::string>;

TEST(Dependencies, ConditionsAndTags) {
  if (!CorpusPresent()) GTEST_SKIP() << "conformance corpus absent: " << kCharts;
  auto loaded = LoadTestChart("subchart");
  ASSERT_TRUE(loaded.ok()) << "corpus chart subchart: " << loaded.status().ToString();
  struct Case {
    const char* values;
    Names want;
  } cases[] = {
      {"", {"subcharta", "subchartb"}},
      {"subcharta:\n  enabled: false\n", {"subchartb"}},
      {"tags:\n  front-end: false\n", {}},
      {"tags:\n  front-end: false\n  subchartb: true\n", {"subchartb"}},  // one true tag is enough
      {"tags:\n  front-end: false\nsubcharta:\n  enabled: true\n", {"subcharta"}},  // condition over tags
      {"subchartb:\n  enabled: 'no'\n", {"subcharta", "subchartb"}},  // not a bool: ignored
  };
  for (const Case& tc : cases) {
    Chart c = *loaded;
    Value user = Yaml(tc.values);
    ASSERT_TRUE(ProcessDependencies(&c, &user).ok());
    EXPECT_EQ(SubchartNames(c), tc.want) << tc.values;
    EXPECT_EQ(c.metadata.dependencies.size(), tc.want.size()) << tc.values;
  }
}

TEST(Dependencies, ImportValuesAndPrecedence) {
  if (!CorpusPresent()) GTEST_SKIP() << "conformance corpus absent: " << kCharts;
  auto loaded = LoadTestChart("subchart");
  ASSERT_TRUE(loaded.ok()) << "corpus chart subchart: " << loaded.status().ToString();
  Chart c = *loaded;
  Value user = Yaml("configmap:\n  enabled: true\n");
  ASSERT_TRUE(ProcessDependencies(&c, &user).ok());
  auto v = CoalesceValues(c, user);
  ASSERT_TRUE(v.ok()) << v.status().message();
  // The parent's own values win over imported ones (golden
  // helm-template-import-values prints the parent's "foo").
  ExpectString(At(*v, "configmap.value"), "foo");
  ExpectBool(At(*v, "configmap.enabled"), true);
  ExpectFloat(At(*v, "imported-chartA.SC1extra2"), 1.337);
  ExpectFloat(At(*v, "imported-chartA.SCAint"), 55);
  ExpectBool(At(*v, "imported-chartA.SCAnested1.SCAnested2"), true);
  ExpectFloat(At(*v, "overridden-chartA.SCAint"), 100);
  ExpectString(At(*v, "overridden-chartA.SCAstring"), "jabbathehut");
  ExpectString(At(*v, "imported-chartA-B.SC1extra5"), "tiller");
  ExpectString(At(*v, "imported-chartA-B.SCAstring"), "jabba");
  ExpectString(At(*v, "imported-chartA-B.SCBstring"), "boba");
  ExpectFloat(At(*v, "imported-chartB.SCBfloat"), 7.77);
  ExpectString(At(*v, "exports.SCBexported2.SCBexported2A"), "blaster");
  ExpectFloat(At(*v, "SCBexported1A.SCBexported1B"), 1965);
  ExpectBool(At(*v, "SCBexported1A.SC1extra7"), true);
  // Subchart defaults under their names, parent globals copied down.
  ExpectString(At(*v, "subcharta.service.name"), "apache");
  ExpectFloat(At(*v, "subchartb.global.kolla.nova.api.all.port"), 8774);
  // import-values are rewritten to the map form.
  ASSERT_EQ(c.metadata.dependencies.size(), 2u);
  const auto& ivs = c.metadata.dependencies[1].import_values;
  ASSERT_EQ(ivs.size(), 5u);
  EXPECT_EQ(ivs[3].child, "exports.configmap");
  EXPECT_EQ(ivs[3].parent, ".");
}

TEST(Dependencies, ValuesFileOverridesImported) {
  if (!CorpusPresent()) GTEST_SKIP() << "conformance corpus absent: " << kCharts;
  auto loaded = LoadTestChart("subchart");
  ASSERT_TRUE(loaded.ok()) << "corpus chart subchart: " << loaded.status().ToString();
  Chart c = *loaded;
  // extra_values.yaml of the chart, as in golden helm-template-import-values-file-override.
  Value user = Yaml("configmap:\n  enabled: true\n  value: \"qux\"\n");
  ASSERT_TRUE(ProcessDependencies(&c, &user).ok());
  auto v = CoalesceValues(c, user);
  ASSERT_TRUE(v.ok());
  ExpectString(At(*v, "configmap.value"), "qux");
}

TEST(Dependencies, AliasRenamesAndDuplicates) {
  if (!CorpusPresent()) GTEST_SKIP() << "conformance corpus absent: " << kCharts;
  auto loaded = LoadTestChart("subchart");
  ASSERT_TRUE(loaded.ok()) << "corpus chart subchart: " << loaded.status().ToString();
  Chart c = *loaded;
  // A second entry for subcharta under an alias, with its own condition.
  Dependency extra = c.metadata.dependencies[0];
  extra.alias = "aliased";
  extra.condition = "aliased.enabled";
  extra.import_values.clear();
  c.metadata.dependencies.push_back(extra);
  Value user = Yaml("aliased:\n  service:\n    name: other\n");
  ASSERT_TRUE(ProcessDependencies(&c, &user).ok());
  EXPECT_EQ(SubchartNames(c), (Names{"subcharta", "subchartb", "aliased"}));
  auto v = CoalesceValues(c, user);
  ASSERT_TRUE(v.ok());
  ExpectString(At(*v, "aliased.service.name"), "other");
  ExpectString(At(*v, "aliased.service.type"), "ClusterIP");
  ExpectString(At(*v, "subcharta.service.name"), "apache");

  Chart d = *loaded;
  d.metadata.dependencies.push_back(extra);
  Value off = Yaml("aliased:\n  enabled: false\n");
  ASSERT_TRUE(ProcessDependencies(&d, &off).ok());
  EXPECT_EQ(SubchartNames(d), (Names{"subcharta", "subchartb"}));
}

TEST(Dependencies, VersionMismatchKeepsChartUnaliased) {
  if (!CorpusPresent()) GTEST_SKIP() << "conformance corpus absent: " << kCharts;
  auto loaded = LoadTestChart("subchart");
  ASSERT_TRUE(loaded.ok()) << "corpus chart subchart: " << loaded.status().ToString();
  Chart c = *loaded;
  c.metadata.dependencies[0].version = "~2.0.0";
  c.metadata.dependencies[0].alias = "renamed";
  Value user = Value::Map({});
  ASSERT_TRUE(ProcessDependencies(&c, &user).ok());
  // Not matched by the constraint: kept under its own name.
  EXPECT_EQ(SubchartNames(c), (Names{"subcharta", "subchartb"}));
}

TEST(Semver, ConstraintsAsMasterminds) {
  struct Case {
    const char* constraint;
    const char* version;
    bool want;
  } cases[] = {
      {"0.1.0", "0.1.0", true},      {"0.1.0", "0.1.1", false},    {"1.x.x", "1.4.2", true},
      {"1.x.x", "2.0.0", false},     {"6.19.*", "6.19.3", true},   {"6.19.*", "6.20.0", false},
      {"~1.2.3", "1.2.9", true},     {"~1.2.3", "1.3.0", false},   {"^1.2.3", "1.9.0", true},
      {"^1.2.3", "2.0.0", false},    {"^0.2.3", "0.3.0", false},   {">=1.0.0 <2.0.0", "1.5.0", true},
      {">=1.0.0, <2.0.0", "2.0.0", false}, {"<1.0.0 || >=3.0.0", "3.1.0", true}, {"*", "9.9.9", true},
      {"1.2 - 1.4.5", "1.4.5", true}, {"1.2 - 1.4.5", "1.4.6", false}, {">=1.0.0", "1.1.0-beta", false},
      {"1.0.0", "not-a-version", false},
  };
  for (const Case& tc : cases) {
    EXPECT_EQ(SemverRangeMatches(tc.constraint, tc.version), tc.want) << tc.constraint << " vs " << tc.version;
  }
}

// --- --set parsing (pkg/strvals; cases after Helm's documented syntax) --------

Result<Value> Set(std::string_view line, SetKind kind = SetKind::kSet) {
  Value v = Value::Map({});
  Status s = ParseSetInto(line, kind, &v);
  if (!s.ok()) return s;
  return v;
}

std::string SetError(std::string_view line, SetKind kind = SetKind::kSet) {
  Value v = Value::Map({});
  Status s = ParseSetInto(line, kind, &v);
  return s.ok() ? "" : s.message();
}

TEST(Strvals, ScalarsAndTyping) {
  auto v = Set("name=value,foo=bar,int=1234567890,neg=-5,zero=0,lead=00009,b=true,B=FALSE,n=null,f=1.5,e=");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ExpectString(At(*v, "name"), "value");
  ExpectString(At(*v, "foo"), "bar");
  ASSERT_EQ(At(*v, "int").kind(), Kind::kInt64);
  EXPECT_EQ(At(*v, "int").as_int(), 1234567890);
  EXPECT_EQ(At(*v, "neg").as_int(), -5);
  ASSERT_EQ(At(*v, "zero").kind(), Kind::kInt64);
  ExpectString(At(*v, "lead"), "00009");  // a leading zero keeps it a string
  ExpectBool(At(*v, "b"), true);
  ExpectBool(At(*v, "B"), false);
  ASSERT_TRUE(Has(*v, "n"));
  EXPECT_TRUE(At(*v, "n").is_nil());
  ExpectString(At(*v, "f"), "1.5");  // only integers are typed
  ExpectString(At(*v, "e"), "");
  auto s = Set("a=1,b=true,c=null", SetKind::kSetString);
  ASSERT_TRUE(s.ok());
  ExpectString(At(*s, "a"), "1");
  ExpectString(At(*s, "b"), "true");
  ExpectString(At(*s, "c"), "null");
}

TEST(Strvals, NestingListsAndEscapes) {
  auto v = Set("outer.inner.leaf=x,list={a,b,1},name[0]=x,items[1].k=v,grid[0][1]=g,"
               "dotted\\.key=d,comma=one\\,two,eq\\=key=e,empty={}");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ExpectString(At(*v, "outer.inner.leaf"), "x");
  const Value& list = At(*v, "list");
  ASSERT_EQ(list.kind(), Kind::kSlice);
  ASSERT_EQ(list.as_list().size(), 3u);
  ExpectString(list.as_list()[1], "b");
  EXPECT_EQ(list.as_list()[2].kind(), Kind::kInt64);
  ExpectString(At(*v, "name").as_list().at(0), "x");
  const Value& items = At(*v, "items");
  ASSERT_EQ(items.as_list().size(), 2u);
  EXPECT_TRUE(items.as_list()[0].is_nil());
  ExpectString(At(items.as_list()[1], "k"), "v");
  const Value& grid = At(*v, "grid");
  ASSERT_EQ(grid.as_list().size(), 1u);
  ExpectString(grid.as_list()[0].as_list().at(1), "g");
  ASSERT_EQ(v->as_map().count("dotted.key"), 1u);
  ExpectString(v->as_map().at("dotted.key"), "d");
  ExpectString(At(*v, "comma"), "one,two");
  ExpectString(v->as_map().at("eq=key"), "e");
  // `{}` is a list holding one empty string.
  ASSERT_EQ(At(*v, "empty").as_list().size(), 1u);
  ExpectString(At(*v, "empty").as_list()[0], "");
}

TEST(Strvals, LaterLinesUpdateEarlierValues) {
  Value v = Value::Map({});
  ASSERT_TRUE(ParseSetInto("a.b=1,list[0]=x", SetKind::kSet, &v).ok());
  ASSERT_TRUE(ParseSetInto("a.c=2,list[2]=z", SetKind::kSet, &v).ok());
  EXPECT_EQ(At(v, "a.b").as_int(), 1);
  EXPECT_EQ(At(v, "a.c").as_int(), 2);
  ASSERT_EQ(At(v, "list").as_list().size(), 3u);
  ExpectString(At(v, "list").as_list()[0], "x");
  EXPECT_TRUE(At(v, "list").as_list()[1].is_nil());
}

TEST(Strvals, Errors) {
  EXPECT_EQ(SetError("name"), "key \"name\" has no value");
  EXPECT_EQ(SetError("name1,name2=x"), "key \"name1\" has no value (cannot end with ,)");
  EXPECT_EQ(SetError("a=1,,,b=2"), "key \"\" has no value (cannot end with ,)");
  EXPECT_EQ(SetError("name1.=name2"), "key map \"name1\" has no value");
  EXPECT_EQ(SetError("list={a,b"), "list must terminate with '}'");
  EXPECT_EQ(SetError("list[-1]=x"), "negative -1 index not allowed");
  EXPECT_EQ(SetError("list[65537]=x"), "index of 65537 is greater than maximum supported index of 65536");
  EXPECT_EQ(SetError("list[x]=1"), "error parsing index: strconv.Atoi: parsing \"x\": invalid syntax");
  EXPECT_EQ(SetError("list[0]x=1"), "unexpected data at end of array index: \"x\"");
  EXPECT_EQ(SetError("a=1,a.b=2"),
            "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}");
  std::string deep;
  for (int i = 0; i < 31; ++i) deep += "a.";
  EXPECT_EQ(SetError(deep + "b=1"), "value name nested level is greater than maximum supported nested level of 30");
  EXPECT_EQ(SetError("a[1"), "");  // an unterminated index is io.EOF: ignored
}

TEST(Strvals, JsonLiteralAndFile) {
  auto j = Set("obj={\"a\":[1,\"x\",null]},num=2,str=\"s,t\",nul=,arr[0]={\"k\":true}", SetKind::kSetJson);
  ASSERT_TRUE(j.ok()) << j.status().message();
  ExpectFloat(At(*j, "obj.a").as_list().at(0), 1);
  EXPECT_TRUE(At(*j, "obj.a").as_list().at(2).is_nil());
  ExpectFloat(At(*j, "num"), 2);
  ExpectString(At(*j, "str"), "s,t");
  ASSERT_TRUE(Has(*j, "nul"));
  EXPECT_TRUE(At(*j, "nul").is_nil());
  ExpectBool(At(At(*j, "arr").as_list().at(0), "k"), true);

  auto lit = Set("a.b=c,d=e\\f", SetKind::kSetLiteral);
  ASSERT_TRUE(lit.ok());
  ExpectString(At(*lit, "a.b"), "c,d=e\\f");  // everything after the first = is the value

  Value f = Value::Map({});
  auto reader = [](const std::string& path) -> Result<std::string> {
    if (path == "cert.pem") return std::string("---PEM---\n");
    return Invalid("open " + path + ": no such file or directory");
  };
  ASSERT_TRUE(ParseSetInto("tls.cert=cert.pem", SetKind::kSetFile, &f, reader).ok());
  ExpectString(At(f, "tls.cert"), "---PEM---\n");
  Status missing = ParseSetInto("x=nope", SetKind::kSetFile, &f, reader);
  EXPECT_EQ(missing.message(), "open nope: no such file or directory");
}

TEST(MergeValuesTest, PrecedenceOfSources) {
  ValueOptions o;
  o.value_files = {{"a.yaml", "a: 1\nm:\n  x: 1\n  q: 1\nl: [1, 2]\n"}, {"b.yaml", "m:\n  q: 2\nl: [3]\n"}};
  o.set_json = {"j={\"k\":1}", "{\"whole\": {\"w\": 1}}"};
  o.set = {"a=2,s=5"};
  o.set_string = {"s=5"};
  o.set_literal = {"lit=a,b"};
  auto v = MergeValues(o);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(At(*v, "a").as_int(), 2);
  ExpectFloat(At(*v, "m.x"), 1);
  ExpectFloat(At(*v, "m.q"), 2);
  ASSERT_EQ(At(*v, "l").as_list().size(), 1u);  // lists are replaced, not merged
  ExpectFloat(At(*v, "j.k"), 1);
  ExpectFloat(At(*v, "whole.w"), 1);
  ExpectString(At(*v, "s"), "5");  // --set-string after --set
  ExpectString(At(*v, "lit"), "a,b");

  ValueOptions bad;
  bad.set = {"x"};
  EXPECT_EQ(MergeValues(bad).status().message(), "failed parsing --set data: key \"x\" has no value");
  ValueOptions badjson;
  badjson.set_json = {"x=[1"};
  EXPECT_EQ(MergeValues(badjson).status().message(), "failed parsing --set-json data x=[1");
  ValueOptions badfile;
  badfile.value_files = {{"v.yaml", "- 1\n"}};
  EXPECT_EQ(MergeValues(badfile).status().message().rfind("failed to parse v.yaml: error unmarshaling JSON", 0), 0u);
}

}  // namespace
}  // namespace eco::helm
