#include <gtest/gtest.h>

#include <chrono>

#include "helm/funcs.h"
#include "helm/template.h"

namespace eco::helm {
namespace {

std::string Render(std::string_view text, const Value& data = Value(), ExecOptions opts = {}) {
  TemplateSet set;
  Status s = set.Parse("main", text);
  if (!s.ok()) return "PARSE: " + s.message();
  auto r = set.Execute("main", data, opts);
  if (!r.ok()) return "EXEC: " + r.status().message();
  return *r;
}

Value Data() {
  ValueMap m;
  m.emplace("name", Value::String("eco"));
  m.emplace("n", Value::Int64(3));
  m.emplace("list", Value::Slice({Value::String("a"), Value::String("b")}));
  m.emplace("null", Value());
  return Value::Map(std::move(m));
}

TEST(Template, TextTrimAndComments) {
  EXPECT_EQ(Render("a  {{- /* c */ -}}  b"), "ab");
  EXPECT_EQ(Render("{{23 -}} < {{- 45}}"), "23<45");
}

TEST(Template, FieldsVariablesRange) {
  EXPECT_EQ(Render("{{.name}} {{$x := .n}}{{$x}}", Data()), "eco 3");
  EXPECT_EQ(Render("{{range $i, $v := .list}}{{$i}}={{$v}};{{end}}", Data()), "0=a;1=b;");
  EXPECT_EQ(Render("{{range .missing}}x{{else}}empty{{end}}", Data()), "empty");
  EXPECT_EQ(Render("{{.missing}}", Data()), "<no value>");
  EXPECT_EQ(Render("{{range .list}}{{if eq . \"b\"}}{{break}}{{end}}{{.}}{{end}}", Data()), "a");
}

TEST(Template, ControlAndDefine) {
  EXPECT_EQ(Render("{{if 0}}a{{else if 1}}b{{else}}c{{end}}"), "b");
  EXPECT_EQ(Render("{{with .name}}{{.}}{{end}}", Data()), "eco");
  EXPECT_EQ(Render("{{define \"t\"}}[{{.}}]{{end}}{{template \"t\" 5}}"), "[5]");
  EXPECT_EQ(Render("{{block \"b\" .name}}<{{.}}>{{end}}", Data()), "<eco>");
}

TEST(Template, ParseErrorsReadAsGo) {
  EXPECT_EQ(Render("{{$a}}"), "PARSE: template: main:1: undefined variable \"$a\"");
  EXPECT_EQ(Render("{{foo}}"), "PARSE: template: main:1: function \"foo\" not defined");
  EXPECT_EQ(Render("x\n{{if 1}}"), "PARSE: template: main:2: unexpected EOF");
}

TEST(Template, ExecErrorsReadAsGo) {
  EXPECT_EQ(Render("{{eq 1 \"a\"}}"),
            "EXEC: template: main:1:2: executing \"main\" at <eq 1 \"a\">: error calling eq: "
            "incompatible types for comparison");
  ExecOptions opts;
  opts.missing_key = MissingKey::kError;
  EXPECT_NE(Render("{{.missing}}", Data(), opts).find("map has no entry for key \"missing\""),
            std::string::npos);
}

TEST(Template, RecursionIsBounded) {
  std::string out = Render("{{define \"r\"}}{{template \"r\" .}}{{end}}{{template \"r\" .}}");
  EXPECT_NE(out.find("exceeded maximum template depth (100000)"), std::string::npos);
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

std::string RenderHelm(std::string_view text, const Value& data = Value()) {
  TemplateSet set(HelmFuncs());
  Status s = set.Parse("main", text);
  if (!s.ok()) return "PARSE: " + s.message();
  ExecOptions opts;
  opts.missing_key = MissingKey::kZero;
  auto r = set.Execute("main", data, opts);
  if (!r.ok()) return "EXEC: " + r.status().message();
  return *r;
}

// Loops that print nothing and never end are bounded by the deadline only;
// growing strings and lists by the output limit.
TEST(HelmFuncs, DeadlineAndSizeLimitsStopRunawayTemplates) {
  TemplateSet set(HelmFuncs());
  ASSERT_TRUE(set.Parse("main", "{{range until 1000000}}{{range until 1000000}}{{end}}{{end}}").ok());
  ExecOptions opts;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  auto r = set.Execute("main", Value(), opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("time limit"), std::string::npos) << r.status().message();
  // Without the deadline this is 10^12 steps; with it, a fraction of a second.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));

  // tpl runs under the caller's deadline too.
  TemplateSet tpl(HelmFuncs());
  ASSERT_TRUE(tpl.Parse("main", "{{tpl \"{{range until 1000000}}{{range until 1000000}}{{end}}{{end}}\" .}}").ok());
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  r = tpl.Execute("main", Value::Map({}), opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("time limit"), std::string::npos) << r.status().message();

  EXPECT_NE(RenderHelm("{{$s := \"ab\"}}{{range until 40}}{{$s = print $s $s}}{{end}}{{len $s}}")
                .find("exceeds the output limit"),
            std::string::npos);
  EXPECT_NE(RenderHelm("{{$l := list 1}}{{range until 40}}{{$l = concat $l $l}}{{end}}{{len $l}}")
                .find("exceeds the limit"),
            std::string::npos);
  // Without a deadline nothing changes for templates that end.
  EXPECT_EQ(RenderHelm("{{range until 3}}{{.}}{{end}}"), "012");
}

// One function call whose work outgrows its input stops at the deadline
// too: the executor checks it only between steps, and a single call (uniq of
// a long list, regexReplaceAll building 64 MiB) can outlast it. A deadline
// already past makes this independent of the machine's speed: each call
// below ends normally without one (checked first).
TEST(HelmFuncs, DeadlineHoldsInsideOneFunctionCall) {
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"{{len (uniq (until 3000))}}", "3000"},
      {"{{len (without (until 3000) 1 2 3)}}", "2997"},
      {"{{len (regexReplaceAll \"\" (repeat 3000 \"a\") \"b\")}}", "6001"},
      {"{{len (regexReplaceAllLiteral \"a\" (repeat 3000 \"a\") \"bb\")}}", "6000"},
      {"{{len (mustRegexReplaceAll \"(a)\" (repeat 3000 \"a\") \"$1$1\")}}", "6000"},
      {"{{len (regexFindAll \"a\" (repeat 3000 \"a\") -1)}}", "3000"},
      // The plain form's fallback is for a bad pattern only, not for a limit.
      {"{{len (regexFindAll \"\" (repeat 3000 \"a\") -1)}}", "3001"},
      {"{{len (regexSplit \"a\" (repeat 3000 \"a\") -1)}}", "3001"},
  };
  for (const auto& [text, want] : calls) {
    SCOPED_TRACE(text);
    TemplateSet set(HelmFuncs());
    ASSERT_TRUE(set.Parse("main", text).ok());
    auto free_run = set.Execute("main", Value(), ExecOptions{});
    ASSERT_TRUE(free_run.ok()) << free_run.status().message();
    EXPECT_EQ(*free_run, want);
    ExecOptions late;
    late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    auto r = set.Execute("main", Value(), late);
    ASSERT_FALSE(r.ok()) << "ran past the deadline to " << *r;
    EXPECT_NE(r.status().message().find("execution exceeded its time limit"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("error calling "), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(RenderHelm("{{regexFindAll \"[\" \"a\" -1}}"), "[]");  // the bad pattern still falls back
}

// Splits and matches that would make more elements than a list may hold are
// refused before they are built (a 64 MiB string of commas is 64 million
// parts, gigabytes of memory).
TEST(HelmFuncs, SplitsAndMatchesBeyondTheListLimitAreRefused) {
  ExecOptions small;
  small.max_output = 1600;  // at most 100 elements per list
  auto run = [&](const std::string& text) {
    TemplateSet set(HelmFuncs());
    Status s = set.Parse("main", text);
    if (!s.ok()) return "PARSE: " + s.message();
    auto r = set.Execute("main", Value(), small);
    return r.ok() ? *r : "EXEC: " + r.status().message();
  };
  EXPECT_EQ(run("{{len (splitList \",\" (repeat 99 \",\"))}}"), "100");
  EXPECT_NE(run("{{len (splitList \",\" (repeat 100 \",\"))}}").find("splitList: more than 100 elements exceed the limit"),
            std::string::npos);
  EXPECT_NE(run("{{len (splitList \"\" (repeat 101 \"a\"))}}").find("splitList: more than 100"), std::string::npos);
  EXPECT_EQ(run("{{len (split \",\" (repeat 99 \",\"))}}"), "100");
  EXPECT_NE(run("{{len (split \",\" (repeat 100 \",\"))}}").find("split: more than 100 elements"), std::string::npos);
  EXPECT_EQ(run("{{len (splitn \",\" -1 (repeat 99 \",\"))}}"), "100");
  EXPECT_NE(run("{{len (splitn \",\" -1 (repeat 100 \",\"))}}").find("splitn: more than 100 elements"), std::string::npos);
  EXPECT_EQ(run("{{len (regexFindAll \"a\" (repeat 100 \"a\") -1)}}"), "100");
  EXPECT_NE(run("{{len (regexFindAll \"a\" (repeat 200 \"a\") -1)}}").find("more than 100 matches exceed the limit"),
            std::string::npos);
  EXPECT_NE(run("{{len (regexSplit \"a\" (repeat 200 \"a\") -1)}}").find("more than 100 matches"), std::string::npos);
}

// Integer ranges as Sprig makes them, up to eco's limit of 2^20 elements;
// beyond it an error, never a shorter list (nor a shorter indent).
TEST(HelmFuncs, IntegerRangesAreWholeOrRefused) {
  EXPECT_EQ(RenderHelm("{{until 5}}|{{until -3}}|{{until 0}}"), "[0 1 2 3 4]|[0 -1 -2]|[]");
  EXPECT_EQ(RenderHelm("{{untilStep 0 10 3}}|{{untilStep 10 0 -4}}|{{untilStep 0 10 -1}}|{{untilStep 1 5 0}}"),
            "[0 3 6 9]|[10 6 2]|[]|[]");
  // Near the ends of int64: no overflow, the last element below the bound.
  EXPECT_EQ(RenderHelm("{{untilStep 9223372036854775800 9223372036854775807 3}}"),
            "[9223372036854775800 9223372036854775803 9223372036854775806]");
  EXPECT_EQ(RenderHelm("{{untilStep -9223372036854775808 9223372036854775807 4611686018427387904}}"),
            "[-9223372036854775808 -4611686018427387904 0 4611686018427387904]");
  EXPECT_EQ(RenderHelm("{{seq 5}}|{{seq 3 1}}|{{seq 1 2 7}}"), "1 2 3 4 5|3 2 1|1 3 5 7");
  EXPECT_EQ(RenderHelm("{{len (until 1048576)}}"), "1048576");
  EXPECT_EQ(RenderHelm("{{until 1048577}}"),
            "EXEC: template: main:1:2: executing \"main\" at <until 1048577>: error calling until: "
            "until: 1048577 elements exceed eco's limit of 1048576");
  EXPECT_NE(RenderHelm("{{untilStep 0 1000000000 1}}").find("untilStep: 1000000000 elements exceed"),
            std::string::npos);
  EXPECT_NE(RenderHelm("{{seq 2000000}}").find("seq: 2000000 elements exceed"), std::string::npos);
  EXPECT_EQ(RenderHelm("{{indent 2 \"a\\nb\"}}|{{nindent 1 \"a\"}}|{{indent -1 \"a\"}}"), "  a\n  b|\n a|a");
  EXPECT_NE(RenderHelm("{{indent 2000000 \"a\"}}").find("indent: 2000000 spaces exceed eco's limit"),
            std::string::npos);
}

TEST(HelmFuncs, DefaultsListsDicts) {
  EXPECT_EQ(RenderHelm("{{ default \"d\" \"\" }}|{{ default \"d\" \"x\" }}"), "d|x");
  EXPECT_EQ(RenderHelm("{{ list 1 \"a\" | toJson }}"), "[1,\"a\"]");
  EXPECT_EQ(RenderHelm("{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }}"), "map[a:1 b:2]");
  EXPECT_EQ(RenderHelm("{{ define \"x\" }}[{{ . }}]{{ end }}{{ include \"x\" 3 | quote }}"), "\"[3]\"");
}

TEST(HelmFuncs, ToYamlAsHelm) {
  EXPECT_EQ(RenderHelm("{{ dict \"b\" 1 \"a\" (list 1 \"two\" \"yes\") | toYaml }}"),
            "a:\n- 1\n- two\n- \"yes\"\nb: 1");
  EXPECT_EQ(RenderHelm("{{ toYaml \"line1\\nline2\\n\" }}"), "|\n  line1\n  line2");
}

// Expected texts are what Go 1.19 + Sprig 3.2.3 + sigs.k8s.io/yaml printed
// (shared/tools/gotmpl-ref): yaml.v2 quotes strings it would read back as
// timestamps, and Go values are marshalled through their JSON form.
TEST(HelmFuncs, ToYamlTimestampsAndGoValues) {
  EXPECT_EQ(RenderHelm("{{ dict \"d\" \"2019-01-01\" \"t\" \"2019-01-01T00:00:00Z\" \"x\" \"2019-1-1\" | toYaml }}"),
            "d: \"2019-01-01\"\nt: \"2019-01-01T00:00:00Z\"\nx: \"2019-1-1\"");
  EXPECT_EQ(RenderHelm("{{ dict \"a\" \"2019-13-01\" \"b\" \"2019-02-29\" \"c\" \"219-01-01\" | toYaml }}"),
            "a: 2019-13-01\nb: 2019-02-29\nc: 219-01-01");
  EXPECT_EQ(RenderHelm("{{ toDate \"2006-01-02\" \"2019-01-01\" | toYaml }}"), "\"2019-01-01T00:00:00Z\"");
  EXPECT_EQ(RenderHelm("{{ list (toDate \"2006-01-02\" \"2019-01-01\") (semver \"1.2.3\") | toYaml }}"),
            "- \"2019-01-01T00:00:00Z\"\n- 1.2.3");
}

// Found by fuzz_template: a float constant beyond int64 must not be
// converted to an integer (undefined in C++; Go just keeps the float).
TEST(HelmFuncs, HugeFloatConstants) {
  EXPECT_EQ(RenderHelm("{{ print 8888888888888888888888888888888881.0 }}"), "8.888888888888889e+33");
  EXPECT_EQ(RenderHelm("{{ print -9223372036854775808.0 }}"), "-9.223372036854776e+18");
}

// Found by fuzz_template: a NUL verb with a complex operand reached C's
// snprintf with a cut format. Go reports a bad verb.
TEST(HelmFuncs, BadVerbsOnComplexNumbers) {
  using namespace std::string_literals;
  EXPECT_EQ(RenderHelm("{{ printf \"%\0\" 1+7i }}"s), "%!\0(complex128=(1+7i))"s);
  EXPECT_EQ(RenderHelm("{{ printf \"%d\" 1+7i }}"), "%!d(complex128=(1+7i))");
  EXPECT_EQ(RenderHelm("{{ printf \"%.1f\" 1+7i }}"), "(1.0+7.0i)");
}

TEST(HelmFuncs, B64decAsGo) {
  EXPECT_EQ(RenderHelm("{{ b64dec \"aGVs\\nbG8=\" }}|{{ b64dec \"aGVsbG8\" }}"),
            "hello|illegal base64 data at input byte 4");
}

TEST(HelmFuncs, RegexWithGoSemantics) {
  EXPECT_EQ(RenderHelm("{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }}"), "-W-xxW-");
  EXPECT_EQ(RenderHelm("{{ regexSplit \"a*\" \"baaac\" -1 }}"), "[b c]");
  EXPECT_EQ(RenderHelm("{{ regexMatch \"[\" \"x\" }}"), "false");
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

// Helm stops include recursion of one name at 1000 levels.
TEST(HelmFuncs, IncludeRecursionIsBounded) {
  TemplateSet set(HelmFuncs());
  ASSERT_TRUE(set.Parse("main", "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" . }}").ok());
  auto r = set.Execute("main", Value());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rendering template has a nested reference name: r"), std::string::npos);
}

}  // namespace
}  // namespace eco::helm

namespace eco::helm {
namespace {

// Deep nesting must end in an error, never a stack overflow.
TEST(Template, DeepNestingIsAnError) {
  std::string parens(50000, '(');
  EXPECT_NE(Render("{{" + parens + "1" + std::string(50000, ')') + "}}").find("nesting too deep"),
            std::string::npos);
  std::string ifs;
  for (int i = 0; i < 20000; ++i) ifs += "{{if 1}}";
  EXPECT_NE(Render(ifs).find("nesting too deep"), std::string::npos);
}

}  // namespace
}  // namespace eco::helm
