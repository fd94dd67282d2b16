// Fuzzes the parsers of user values: values YAML as Helm reads it
// (helm/values.h, helm/yaml_in.h), --set style lines (helm/strvals.cc, as
// DIG overrideValues reach charts), Helm's MergeValues of both, and the YAML
// decoders the scheduler reads profiles' manifest.yaml and rendered objects
// with (DecodeYaml, DecodeYamlTopKeys; its JSON conversion after them is a
// plain walk of the result). Byte 0 picks the
// parser; for MergeValues a "\n---8<---\n" line splits a values file from
// the --set lines. Any result is fine except a crash, a sanitizer report,
// a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "helm/value.h"
#include "helm/values.h"
#include "helm/yaml_in.h"

namespace {

using eco::helm::SetKind;

std::vector<std::string> Lines(std::string_view s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size() && out.size() < 64) {
    size_t q = s.find('\n', p);
    if (q == std::string_view::npos) q = s.size();
    out.emplace_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  // --set-file reads nothing from disk here: the path itself is the content.
  auto read_file = [](const std::string& path) -> eco::Result<std::string> { return path; };
  switch (mode % 8) {
    case 0: (void)eco::helm::ParseYamlValues(in, "values.yaml"); break;
    case 1: (void)eco::helm::DecodeYaml(in, eco::helm::YamlTarget::kAny); break;
    case 2: (void)eco::helm::DecodeYaml(in, eco::helm::YamlTarget::kList, "[]interface {}"); break;
    case 3: (void)eco::helm::DecodeYamlTopKeys(in, {"apiVersion", "kind", "metadata"}); break;
    case 4: {
      static constexpr SetKind kKinds[] = {SetKind::kSet, SetKind::kSetString, SetKind::kSetJson,
                                           SetKind::kSetFile, SetKind::kSetLiteral};
      eco::helm::Value dest = eco::helm::Value::Map(eco::helm::ValueMap{});
      for (const std::string& line : Lines(in)) {
        (void)eco::helm::ParseSetInto(line, kKinds[(mode >> 3) % 5], &dest, read_file);
      }
      break;
    }
    case 5: {
      eco::helm::ValueOptions vo;
      std::string_view set_part = in;
      constexpr std::string_view kSplit = "\n---8<---\n";
      if (auto pos = in.find(kSplit); pos != std::string_view::npos) {
        vo.value_files.emplace_back("values.yaml", std::string(in.substr(0, pos)));
        set_part = in.substr(pos + kSplit.size());
      }
      for (std::string& line : Lines(set_part)) {
        switch ((mode >> 3) % 4) {
          case 0: vo.set.push_back(std::move(line)); break;
          case 1: vo.set_string.push_back(std::move(line)); break;
          case 2: vo.set_json.push_back(std::move(line)); break;
          default: vo.set_literal.push_back(std::move(line)); break;
        }
      }
      vo.read_file = read_file;
      (void)eco::helm::MergeValues(vo);
      break;
    }
    case 6: (void)eco::helm::DecodeYaml(in, eco::helm::YamlTarget::kMap, "map[string]interface {}"); break;
    default: (void)eco::helm::ResolveYamlScalar(in); break;
  }
  return 0;
}
