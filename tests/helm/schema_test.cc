// values.schema.json validation (schema.cc). Messages follow
// santhosh-tekuri/jsonschema v6's error kinds as Helm prints them; the
// corpus cases check them against real Helm output, and every chart of the
// corpus must accept the values its golden cases were rendered with.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "helm/values.h"

namespace eco::helm {
namespace {

#ifdef ECO_CONFORMANCE_DIR
const std::string kHelmDir = std::string(ECO_CONFORMANCE_DIR) + "/helm/";
#else
const std::string kHelmDir;
#endif

Chart SchemaChart(const std::string& name, const std::string& schema) {
  Chart c;
  c.metadata.name = name;
  c.metadata.version = "0.1.0";
  c.values_schema_json = schema;
  return c;
}

// The error text for `values_yaml` as the chart's values, "" when valid.
std::string Check(const std::string& schema, const std::string& values_yaml) {
  Chart c = SchemaChart("c", schema);
  auto v = ParseYamlValues(values_yaml, "values.yaml");
  EXPECT_TRUE(v.ok()) << v.status().message();
  Status s = ValidateValuesSchema(c, *v);
  return s.ok() ? "" : s.message();
}

constexpr std::string_view kHeader = "values don't meet the specifications of the schema(s) in the following chart(s):\nc:\n";

std::string Errors(const std::string& schema, const std::string& values_yaml) {
  std::string m = Check(schema, values_yaml);
  if (m.rfind(kHeader, 0) == 0) return m.substr(kHeader.size());
  return m;
}

TEST(Schema, TypesAndIntegers) {
  const std::string s = R"({"properties": {"i": {"type": "integer"}, "nv": {"type": ["string", "null"]}}})";
  EXPECT_EQ(Errors(s, "i: 3\nnv: x\n"), "");
  EXPECT_EQ(Errors(s, "i: 3.0\nnv: null\n"), "");  // a float64 without fraction is an integer
  EXPECT_EQ(Errors(s, "i: 3.5\n"), "- at '/i': got number, want integer\n");
  EXPECT_EQ(Errors(s, "nv: 1\n"), "- at '/nv': got number, want null or string\n");
}

TEST(Schema, ObjectKeywords) {
  const std::string s = R"({
    "required": ["a", "b"],
    "properties": {"a": {"type": "string"}},
    "patternProperties": {"^x-": {"type": "boolean"}},
    "additionalProperties": false,
    "dependentRequired": {"a": ["b"]}
  })";
  EXPECT_EQ(Errors(s, "a: s\nb: 1\n"), "- at '': additional properties 'b' not allowed\n");
  EXPECT_EQ(Errors(s, "{}"), "- at '': missing properties 'a', 'b'\n");
  EXPECT_EQ(Errors(s, "a: s\nx-y: 1\n"),
            "- at '': missing property 'b'\n- at '/x-y': got number, want boolean\n"
            "- at '': properties 'b' required, if 'a' exists\n");
}

TEST(Schema, ArraysStringsNumbers) {
  const std::string s = R"({"properties": {
    "l": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": true},
    "t": {"prefixItems": [{"type": "integer"}], "items": false},
    "s": {"minLength": 2, "maxLength": 3, "pattern": "^a"},
    "num": {"minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5}
  }})";
  EXPECT_EQ(Errors(s, "l: [a, b]\nt: [1]\ns: ab\nnum: 9.5\n"), "");
  EXPECT_EQ(Errors(s, "l: [a]\n"), "- at '/l': minItems: got 1, want 2\n");
  EXPECT_EQ(Errors(s, "l: [a, a]\n"), "- at '/l': items at 0 and 1 are equal\n");
  EXPECT_EQ(Errors(s, "l: [a, 1]\n"), "- at '/l/1': got number, want string\n");
  EXPECT_EQ(Errors(s, "t: [1, 2]\n"), "- at '/t/1': false schema\n");
  // A lone failing value's group is flattened into the top list, as v6 does.
  EXPECT_EQ(Errors(s, "s: \xc3\xa9\n"),
            "- at '/s': minLength: got 1, want 2\n- at '/s': '\xc3\xa9' does not match pattern '^a'\n");
  EXPECT_EQ(Errors(s, "num: 10\n"), "- at '/num': exclusiveMaximum: got 10, want 10\n");
  EXPECT_EQ(Errors(s, "num: -0.25\ns: a\n"),
            "- at '/num': validation failed\n  - at '/num': minimum: got -0.25, want 0\n"
            "  - at '/num': multipleOf: got -0.25, want 0.5\n"
            "- at '/s': minLength: got 1, want 2\n");
}

TEST(Schema, EnumConstAndCombinators) {
  const std::string s = R"({"properties": {
    "e": {"enum": ["a", "b", 1]},
    "c": {"const": "x"},
    "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "one": {"oneOf": [{"type": "number"}, {"type": "integer"}]},
    "not": {"not": {"type": "string"}},
    "cond": {"if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["v"]}, "else": {"required": ["w"]}}
  }})";
  EXPECT_EQ(Errors(s, "e: b\nc: x\nany: 1\none: 1.5\nnot: 1\ncond: {k: a, v: 1}\n"), "");
  EXPECT_EQ(Errors(s, "e: c\n"), "- at '/e': value must be one of 'a', 'b', 1\n");
  EXPECT_EQ(Errors(s, "c: y\n"), "- at '/c': value must be 'x'\n");
  EXPECT_EQ(Errors(s, "any: true\n"),
            "- at '/any': 'anyOf' failed\n  - at '/any': got boolean, want string\n"
            "  - at '/any': got boolean, want integer\n");
  EXPECT_EQ(Errors(s, "one: 2\n"), "- at '/one': 'oneOf' failed, subschemas 0, 1 matched\n");
  EXPECT_EQ(Errors(s, "not: s\n"), "- at '/not': 'not' failed\n");
  EXPECT_EQ(Errors(s, "cond: {k: b}\n"), "- at '/cond': missing property 'w'\n");
}

TEST(Schema, LocalRefs) {
  const std::string s = R"({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "definitions": {"port": {"type": "integer", "maximum": 65535}},
    "$defs": {"name": {"type": "string"}},
    "properties": {"p": {"$ref": "#/definitions/port"}, "nm": {"$ref": "#/$defs/name"}, "a~b": {"type": "string"}}
  })";
  EXPECT_EQ(Errors(s, "p: 80\nnm: x\n"), "");
  EXPECT_EQ(Errors(s, "p: 70000\n"), "- at '/p': maximum: got 70000, want 65535\n");
  EXPECT_EQ(Errors(s, "nm: 1\n"), "- at '/nm': got number, want string\n");
  EXPECT_EQ(Errors(s, "a~b: 1\n"), "- at '/a~0b': got number, want string\n");
  EXPECT_NE(Check(R"({"properties": {"p": {"$ref": "#/definitions/missing"}}})", "p: 1\n"), "");
}

TEST(Schema, SubchartsValidateTheirOwnValues) {
  Chart top = SchemaChart("top", R"({"required": ["name"]})");
  Chart sub = SchemaChart("sub", R"({"properties": {"age": {"minimum": 0}}})");
  top.subcharts.push_back(sub);
  auto v = ParseYamlValues("sub:\n  age: -1\n", "v");
  Status s = ValidateValuesSchema(top, *v);
  EXPECT_EQ(s.message(),
            "values don't meet the specifications of the schema(s) in the following chart(s):\n"
            "top:\n- at '': missing property 'name'\n"
            "sub:\n- at '/age': minimum: got -1, want 0\n");
}

// --- the conformance corpus --------------------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Values as `helm template/install` computes them for a corpus case, then the schema check.
Status RunCase(const nlohmann::json& c) {
  auto chart = LoadChartDirectory(kHelmDir + c["chart"].get<std::string>());
  if (!chart.ok()) return chart.status();
  ValueOptions opts;
  for (const auto& f : c["values_files"]) opts.value_files.emplace_back(f.get<std::string>(), ReadFile(kHelmDir + f.get<std::string>()));
  for (const auto& s : c["set"]) opts.set.push_back(s.get<std::string>());
  for (const auto& s : c["set_string"]) opts.set_string.push_back(s.get<std::string>());
  auto user = MergeValues(opts);
  if (!user.ok()) return user.status();
  Chart ch = *chart;
  Value uv = *user;
  ECO_RETURN_IF_ERROR(ProcessDependencies(&ch, &uv));
  auto values = CoalesceValues(ch, uv);
  if (!values.ok()) return values.status();
  return ValidateValuesSchema(ch, *values);
}

nlohmann::json LoadCases() {
  if (kHelmDir.empty() || !std::filesystem::exists(kHelmDir + "cases.json")) return nullptr;
  return nlohmann::json::parse(ReadFile(kHelmDir + "cases.json"))["cases"];
}

TEST(SchemaCorpus, ErrorCasesPrintHelmsMessage) {
  auto cases = LoadCases();
  if (cases.is_null()) GTEST_SKIP() << "conformance corpus absent";
  int checked = 0;
  for (const auto& c : cases) {
    const auto& features = c["features"];
    if (std::find(features.begin(), features.end(), "schema-validation-error") == features.end()) continue;
    Status s = RunCase(c);
    ASSERT_FALSE(s.ok()) << c["id"];
    std::string golden = ReadFile(kHelmDir + c["expected_output_file"].get<std::string>());
    const std::string prefix = "Error: INSTALLATION FAILED: ";
    ASSERT_EQ(golden.rfind(prefix, 0), 0u);
    EXPECT_EQ(s.message() + "\n", golden.substr(prefix.size())) << c["id"];
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(SchemaCorpus, ValuesOfSuccessfulCasesConform) {
  auto cases = LoadCases();
  if (cases.is_null()) GTEST_SKIP() << "conformance corpus absent";
  int checked = 0;
  for (const auto& c : cases) {
    if (c.value("expect_error", false)) continue;
    if (c.contains("chart_file_overrides") && !c["chart_file_overrides"].is_null() && !c["chart_file_overrides"].empty()) continue;
    Status s = RunCase(c);
    EXPECT_TRUE(s.ok()) << c["id"] << ": " << s.message();
    ++checked;
  }
  EXPECT_GT(checked, 150);
}

}  // namespace
}  // namespace eco::helm
