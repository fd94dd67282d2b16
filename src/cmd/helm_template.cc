#include "cmd/helm_template.h"

#include <sys/stat.h>

#include <functional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "helm/chart.h"
#include "helm/render.h"

namespace eco::cmd {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  if (path == "-") {  // Helm reads `-f -` from stdin
    std::stringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("open " + path + ": no such file or directory");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Flags {
  std::vector<std::string> positional;
  std::vector<std::string> values, set, set_string, set_json, set_file, set_literal, show_only, api_versions;
  std::string namespace_ = "default", kube_version, name_template, output_dir;
  bool include_crds = false, skip_tests = false, no_hooks = false, generate_name = false, debug = false,
       is_upgrade = false, skip_schema_validation = false;
};

// pflag's StringSlice: comma-separated values.
void AppendSlice(std::vector<std::string>* out, const std::string& v) {
  size_t start = 0;
  for (;;) {
    size_t c = v.find(',', start);
    out->push_back(v.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
}

Status ParseFlags(const std::vector<std::string>& args, Flags* f) {
  struct ValueFlag {
    char shorthand;
    std::function<void(const std::string&)> set;
  };
  std::map<std::string, ValueFlag> value_flags = {
      {"values", {'f', [f](const std::string& v) { AppendSlice(&f->values, v); }}},
      {"set", {0, [f](const std::string& v) { f->set.push_back(v); }}},
      {"set-string", {0, [f](const std::string& v) { f->set_string.push_back(v); }}},
      {"set-json", {0, [f](const std::string& v) { f->set_json.push_back(v); }}},
      {"set-file", {0, [f](const std::string& v) { f->set_file.push_back(v); }}},
      {"set-literal", {0, [f](const std::string& v) { f->set_literal.push_back(v); }}},
      {"namespace", {'n', [f](const std::string& v) { f->namespace_ = v; }}},
      {"show-only", {'s', [f](const std::string& v) { f->show_only.push_back(v); }}},
      {"api-versions", {'a', [f](const std::string& v) { AppendSlice(&f->api_versions, v); }}},
      {"kube-version", {0, [f](const std::string& v) { f->kube_version = v; }}},
      {"name-template", {0, [f](const std::string& v) { f->name_template = v; }}},
      {"output-dir", {0, [f](const std::string& v) { f->output_dir = v; }}},
  };
  std::map<std::string, std::pair<char, bool*>> bool_flags = {
      {"include-crds", {0, &f->include_crds}},   {"skip-tests", {0, &f->skip_tests}},
      {"no-hooks", {0, &f->no_hooks}},           {"generate-name", {'g', &f->generate_name}},
      {"debug", {0, &f->debug}},                 {"is-upgrade", {0, &f->is_upgrade}},
      {"skip-schema-validation", {0, &f->skip_schema_validation}},
  };
  auto parse_bool = [](const std::string& flag, const std::string& v, bool* out) -> Status {
    if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") *out = true;
    else if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") *out = false;
    else return Invalid("invalid argument \"" + v + "\" for \"" + flag + "\" flag: strconv.ParseBool: parsing \"" + v + "\": invalid syntax");
    return Status::Ok();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f->positional.insert(f->positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a.substr(2), value;
      size_t eq = name.find('=');
      bool has_value = eq != std::string::npos;
      if (has_value) {
        value = name.substr(eq + 1);
        name.resize(eq);
      }
      if (auto it = value_flags.find(name); it != value_flags.end()) {
        if (!has_value) {
          if (i + 1 >= args.size()) return Invalid("flag needs an argument: --" + name);
          value = args[++i];
        }
        it->second.set(value);
        continue;
      }
      if (auto it = bool_flags.find(name); it != bool_flags.end()) {
        if (has_value) ECO_RETURN_IF_ERROR(parse_bool("--" + name, value, it->second.second));
        else *it->second.second = true;
        continue;
      }
      return Invalid("unknown flag: --" + name);
    }
    if (a.size() > 1 && a[0] == '-') {
      // Shorthands, possibly combined (-gf x); a value flag takes the rest.
      for (size_t k = 1; k < a.size(); ++k) {
        char c = a[k];
        bool done = false;
        for (auto& [name, vf] : value_flags) {
          if (vf.shorthand != c) continue;
          std::string value = a.substr(k + 1);
          if (!value.empty() && value[0] == '=') value.erase(0, 1);
          else if (value.empty()) {
            if (i + 1 >= args.size()) return Invalid(std::string("flag needs an argument: '") + c + "' in -" + c);
            value = args[++i];
          }
          vf.set(value);
          done = true;
          break;
        }
        if (done) break;
        bool found = false;
        for (auto& [name, bf] : bool_flags) {
          if (bf.first == c) {
            *bf.second = true;
            found = true;
          }
        }
        if (!found) return Invalid(std::string("unknown shorthand flag: '") + c + "' in " + a);
      }
      continue;
    }
    f->positional.push_back(a);
  }
  return Status::Ok();
}

Result<helm::Chart> LoadChart(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFound("path \"" + path + "\" not found");
  if (S_ISDIR(st.st_mode)) return helm::LoadChartDirectory(path);
  ECO_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return helm::LoadChartArchive(bytes);
}

Status Run(const std::vector<std::string>& args, helm::TemplateOutput* out) {
  Flags f;
  ECO_RETURN_IF_ERROR(ParseFlags(args, &f));
  if (f.positional.empty()) return Invalid("\"helm template\" requires at least 1 argument");
  if (f.positional.size() > 2) {
    std::string extra;
    for (size_t i = 2; i < f.positional.size(); ++i) extra += (i > 2 ? ", " : "") + f.positional[i];
    return Invalid("expected at most two arguments, unexpected arguments: " + extra);
  }
  helm::TemplateOptions opts;
  std::string chart_path;
  if (f.positional.size() == 2) {
    if (f.generate_name) return Invalid("cannot set --generate-name and also specify a name");
    if (!f.name_template.empty()) return Invalid("cannot set --name-template and also specify a name");
    opts.release.name = f.positional[0];
    chart_path = f.positional[1];
  } else {
    chart_path = f.positional[0];
    if (!f.name_template.empty()) {
      ECO_ASSIGN_OR_RETURN(auto n, helm::RenderNameTemplate(f.name_template));
      opts.release.name = n;
    } else {
      opts.release.name = "release-name";  // helm template's default name
    }
  }
  opts.release.namespace_ = f.namespace_;
  opts.release.is_upgrade = f.is_upgrade;
  opts.release.skip_schema_validation = f.skip_schema_validation;
  ECO_ASSIGN_OR_RETURN(auto caps, helm::MakeCapabilities(f.kube_version, f.api_versions));
  opts.release.capabilities = std::move(caps);
  for (const std::string& v : f.values) {
    ECO_ASSIGN_OR_RETURN(auto data, ReadFile(v));
    opts.release.values.value_files.emplace_back(v, std::move(data));
  }
  opts.release.values.set = f.set;
  opts.release.values.set_string = f.set_string;
  opts.release.values.set_json = f.set_json;
  opts.release.values.set_file = f.set_file;
  opts.release.values.set_literal = f.set_literal;
  opts.release.values.read_file = [](const std::string& p) { return ReadFile(p); };
  opts.show_only = f.show_only;
  opts.include_crds = f.include_crds;
  opts.skip_tests = f.skip_tests;
  opts.no_hooks = f.no_hooks;
  opts.debug = f.debug;
  opts.output_dir = f.output_dir;

  ECO_ASSIGN_OR_RETURN(auto chart, LoadChart(chart_path));
  *out = helm::HelmTemplateText(chart, opts);
  // --output-dir: every document file is written before anything is printed.
  for (const auto& [path, content] : out->written) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << content;
    if (!file) return Internal("cannot write " + path);
  }
  return Status::Ok();
}

}  // namespace

constexpr const char* kUsage = R"(Render a chart's templates locally and print them, as `helm template` does.

Usage:
  eco helm template [NAME] CHART [flags]      (CHART: a chart directory or a .tgz file)

Flags:
  -f, --values FILE            values file (repeatable; "-" reads stdin)
      --set K=V                set values (Helm's --set syntax; repeatable)
      --set-string K=V         set string values
      --set-json K=JSON        set JSON values
      --set-file K=PATH        set a value from a file's contents
      --set-literal K=V        set a literal string value
  -n, --namespace NS           release namespace (default "default")
  -s, --show-only PATTERN      only output documents from matching templates (repeatable)
  -a, --api-versions G/V       extra Kubernetes API versions for Capabilities (repeatable)
      --kube-version V         Kubernetes version for Capabilities (default v1.36.0)
      --include-crds           include the chart's CRDs in the output
      --skip-tests             leave out test hooks
      --no-hooks               leave out all hooks
      --is-upgrade             set .Release.IsUpgrade instead of .Release.IsInstall
      --name-template TPL      release name from a template
  -g, --generate-name          generate the release name
      --output-dir DIR         write each template's documents to files under DIR
      --skip-schema-validation do not validate values against values.schema.json
      --debug                  on a YAML error, print the rendered templates first
  -h, --help                   this help
)";

int HelmTemplateMain(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    }
  }
  helm::TemplateOutput out;
  Status s = Run(args, &out);
  for (const std::string& w : out.warnings) std::cerr << w << "\n";
  std::cout << out.out;
  std::cout.flush();
  if (s.ok()) s = out.error;
  if (!s.ok()) {
    std::cerr << "Error: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace eco::cmd
