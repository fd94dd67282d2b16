// Runs every `template` case of shared/conformance/helm/cases.json through
// the renderer (as a library) and compares with real Helm's output the way
// the corpus README says: exact text where meaningful, else documents as a
// multiset keyed by Source; error cases by their error_contains; the EMCO
// render-only cases must succeed with their expected documents present.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "helm/chart.h"
#include "helm/render.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Regression guard: golden `template` cases passing today.
constexpr int kGoldenFloor = 136;

const std::string kDir = std::string(ECO_CONFORMANCE_DIR) + "/helm";

std::string ReadAll(const std::string& path, bool* ok = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (ok) *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  // CRLF → LF, as Helm's own test harness does.
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')) o += s[i];
  return o;
}

// Canonical JSON of a value (map keys sorted, numbers as %.17g).
void Canonical(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Kind::kNil: *out += "null"; break;
    case Kind::kBool: *out += v.as_bool() ? "true" : "false"; break;
    case Kind::kInt:
    case Kind::kInt64: *out += std::to_string(v.as_int()); break;
    case Kind::kFloat64: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v.as_float());
      *out += buf;
      break;
    }
    case Kind::kString:
    case Kind::kBytes: *out += json(v.as_string()).dump(-1, ' ', false, json::error_handler_t::replace); break;
    case Kind::kSlice:
      *out += '[';
      for (size_t i = 0; i < v.as_list().size(); ++i) {
        if (i) *out += ',';
        Canonical(v.as_list()[i], out);
      }
      *out += ']';
      break;
    case Kind::kMap: {
      *out += '{';
      bool first = true;
      for (const auto& [k, e] : v.as_map()) {
        if (!first) *out += ',';
        first = false;
        *out += json(k).dump() + ":";
        Canonical(e, out);
      }
      *out += '}';
      break;
    }
    default: *out += "?";
  }
}

struct Doc {
  std::string source;
  std::string canonical;  // or the raw text when it does not parse
  std::string kind;
  bool operator<(const Doc& o) const { return std::tie(source, canonical) < std::tie(o.source, o.canonical); }
  bool operator==(const Doc& o) const { return source == o.source && canonical == o.canonical; }
};

// Splits on every "---\n# Source: <path>\n"; text before the first header
// is not a document.
std::vector<Doc> Documents(const std::string& text, const std::vector<std::regex>& ignore) {
  std::string filtered;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    bool drop = false;
    for (const auto& re : ignore) drop = drop || std::regex_search(line, re);
    if (!drop) filtered += line + "\n";
  }
  std::vector<Doc> docs;
  std::vector<std::pair<size_t, size_t>> heads;  // (header start, body start)
  size_t p = 0;
  while ((p = filtered.find("---\n# Source: ", p)) != std::string::npos) {
    if (p == 0 || filtered[p - 1] == '\n') {
      size_t eol = filtered.find('\n', p + 14);
      if (eol == std::string::npos) break;
      heads.emplace_back(p, eol + 1);
      docs.push_back(Doc{filtered.substr(p + 14, eol - p - 14), "", ""});
      p = eol + 1;
    } else {
      p += 4;
    }
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    size_t end = i + 1 < heads.size() ? heads[i + 1].first : filtered.size();
    std::string body = filtered.substr(heads[i].second, end - heads[i].second);
    auto v = DecodeYaml(body);
    if (!v.ok()) {
      docs[i].canonical = "unparsable:" + body;
      continue;
    }
    Canonical(*v, &docs[i].canonical);
    if (v->kind() == Kind::kMap) {
      auto k = v->as_map().find("kind");
      if (k != v->as_map().end() && k->second.kind() == Kind::kString) docs[i].kind = k->second.as_string();
    }
  }
  return docs;
}

// c[key], or null when the case has no such field.
const json& F(const json& c, const char* key) {
  static const json kNull;
  auto it = c.find(key);
  return it == c.end() ? kNull : *it;
}

std::vector<std::string> Strings(const json& j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& e : j) out.push_back(e.get<std::string>());
  return out;
}

struct Outcome {
  bool pass = false;
  std::string why;
};

Outcome RunCase(const json& c) {
  Outcome o;
  auto chart = LoadChartDirectory(kDir + "/" + F(c, "chart").get<std::string>());
  if (!chart.ok()) {
    o.why = "load: " + chart.status().message();
    if (c.value("expect_error", false)) {
      o.pass = true;
      for (const auto& s : Strings(F(c, "error_contains")))
        o.pass = o.pass && chart.status().message().find(s) != std::string::npos;
    }
    return o;
  }
  std::vector<ChartFileOverride> overrides;
  for (const auto& ov : F(c, "chart_file_overrides"))
    overrides.push_back({ov["replaces_chart_path"].get<std::string>(), ReadAll(kDir + "/" + ov["file"].get<std::string>())});
  if (Status s = ApplyChartFileOverrides(&*chart, overrides); !s.ok()) {
    o.why = s.message();
    return o;
  }

  TemplateOptions opts;
  opts.release.name = c.value("release_name", "release-name");
  if (F(c, "name_template").is_string()) {
    auto n = RenderNameTemplate(F(c, "name_template").get<std::string>());
    if (n.ok()) opts.release.name = *n;
  }
  opts.release.namespace_ = c.value("namespace", "default");
  opts.release.is_upgrade = c.value("is_upgrade", false);
  for (const auto& f : Strings(F(c, "values_files"))) opts.release.values.value_files.emplace_back(f, ReadAll(kDir + "/" + f));
  opts.release.values.set = Strings(F(c, "set"));
  opts.release.values.set_string = Strings(F(c, "set_string"));
  opts.release.values.set_file = Strings(F(c, "set_file"));
  opts.release.values.read_file = [](const std::string& p) -> Result<std::string> {
    bool ok = false;
    std::string s = ReadAll(kDir + "/" + p, &ok);
    if (!ok) return NotFound("open " + p + ": no such file or directory");
    return s;
  };
  std::string kube;
  if (F(c, "effective_kube_version").is_string()) kube = F(c, "effective_kube_version").get<std::string>();
  else if (F(c, "kube_version").is_string()) kube = F(c, "kube_version").get<std::string>();
  auto caps = MakeCapabilities(kube, Strings(F(c, "api_versions")));
  if (!caps.ok()) {
    o.why = caps.status().message();
    return o;
  }
  opts.release.capabilities = *caps;
  opts.show_only = Strings(F(c, "show_only"));
  opts.include_crds = c.value("include_crds", false);
  opts.skip_tests = c.value("skip_tests", false);
  opts.debug = c.value("debug", false);
  std::string format = c.value("expected_format", "");
  if (format == "output-dir-postprocessed") opts.output_dir = "OUT";

  TemplateOutput out = HelmTemplateText(*chart, opts);
  std::string text = out.out;
  if (!out.error.ok()) text += "Error: " + out.error.message() + "\n";
  if (c.value("expect_error", false)) {
    if (out.error.ok()) {
      o.why = "expected an error";
      return o;
    }
    for (const auto& s : Strings(F(c, "error_contains"))) {
      if (out.error.message().find(s) == std::string::npos) {
        o.why = "error lacks \"" + s + "\": " + out.error.message();
        return o;
      }
    }
  } else if (!out.error.ok()) {
    o.why = "error: " + out.error.message();
    return o;
  }

  std::vector<std::regex> ignore;
  for (const auto& r : Strings(F(F(c, "compare"), "ignore_line_regex"))) ignore.emplace_back(r);
  if (format == "render-must-succeed") {
    std::vector<Doc> docs = Documents(text, {});
    if (F(c, "expected_min_documents").is_array()) {
      for (const auto& want : F(c, "expected_min_documents")) {
        std::string src = want["source"].get<std::string>(), kind = want.value("kind", "");
        bool found = std::any_of(docs.begin(), docs.end(), [&](const Doc& d) { return d.source == src && d.kind == kind; });
        if (!found) {
          o.why = "missing document " + src + " " + kind;
          return o;
        }
      }
    }
    o.pass = true;
    return o;
  }
  std::vector<Doc> got, want;
  if (format == "output-dir-postprocessed") {
    std::string all;
    for (const auto& [path, content] : out.written) all += content;
    got = Documents(all, ignore);
    for (const auto& e : fs::recursive_directory_iterator(kDir + "/" + F(c, "expected_output_dir").get<std::string>())) {
      if (e.is_regular_file()) {
        auto ds = Documents(ReadAll(e.path().string()), ignore);
        want.insert(want.end(), ds.begin(), ds.end());
      }
    }
  } else {
    std::string expected = ReadAll(kDir + "/" + F(c, "expected_output_file").get<std::string>());
    if (F(c, "compare").value("exact_text", false)) {
      if (text != expected) {
        size_t i = 0;
        while (i < text.size() && i < expected.size() && text[i] == expected[i]) ++i;
        size_t from = i > 200 ? i - 200 : 0;
        o.why = "text differs at byte " + std::to_string(i) + "\n--- got:\n" + text.substr(from, 400) +
                "\n--- want:\n" + expected.substr(from, 400);
        return o;
      }
    }
    got = Documents(text, ignore);
    want = Documents(expected, ignore);
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  if (got != want) {
    std::vector<Doc> extra, missing;
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    o.why = "documents differ: " + std::to_string(extra.size()) + " unexpected, " + std::to_string(missing.size()) +
            " missing";
    if (!extra.empty()) o.why += "\n  unexpected " + extra[0].source + ": " + extra[0].canonical.substr(0, 600);
    if (!missing.empty()) o.why += "\n  missing " + missing[0].source + ": " + missing[0].canonical.substr(0, 600);
    return o;
  }
  o.pass = true;
  return o;
}

struct Row {
  int cases = 0, pass = 0;
};

TEST(HelmGolden, TemplateCasesBySource) {
  std::ifstream in(kDir + "/cases.json");
  if (!in) GTEST_SKIP() << "conformance corpus not found at " << kDir;
  json doc = json::parse(in);
  std::map<std::string, Row> rows;
  Row golden, emco;
  const char* only = std::getenv("ECO_GOLDEN_CASE");
  bool verbose = std::getenv("ECO_HELM_VERBOSE") != nullptr;
  // The sanitizer tree runs every ECO_GOLDEN_STRIDE-th case (time); each
  // case it runs must pass.
  int index = 0;
  for (const auto& c : doc["cases"]) {
    if (c.value("command", "") != "template") continue;
    std::string id = c.value("id", "");
    if (only && id.find(only) == std::string::npos) continue;
    if (index++ % ECO_GOLDEN_STRIDE != 0) continue;
    Outcome o = RunCase(c);
    std::string source = c.value("source", "");
    Row& row = rows[source];
    ++row.cases;
    row.pass += o.pass;
    Row& total = source == "emco" ? emco : golden;
    ++total.cases;
    total.pass += o.pass;
    if (!o.pass && (verbose || only)) std::cerr << "FAIL " << id << ": " << o.why << "\n";
  }
  std::ostringstream table;
  table << "| source | cases | pass |\n|---|---|---|\n";
  for (const auto& [source, row] : rows) table << "| " << source << " | " << row.cases << " | " << row.pass << " |\n";
  table << "| golden `template` cases | " << golden.cases << " | " << golden.pass << " |\n";
  table << "| EMCO render-only | " << emco.cases << " | " << emco.pass << " |\n";
  std::cout << table.str();
  if (only) return;
  std::ofstream(ECO_HELM_GOLDEN_REPORT) << table.str();
  if (ECO_GOLDEN_STRIDE == 1) {
    EXPECT_GE(golden.pass, kGoldenFloor) << "golden template cases regressed";
  } else {
    EXPECT_EQ(golden.pass, golden.cases) << "a sampled golden case failed";
  }
  EXPECT_EQ(emco.pass, emco.cases) << "every EMCO chart must render";
}

}  // namespace
}  // namespace eco::helm
