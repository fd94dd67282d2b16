// Fuzzes the template engine: the input is a template (optionally preceded
// by a define file and a separator line) parsed and executed in Helm mode
// against fixed values. Any outcome is fine except a crash, a sanitizer
// report, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "helm/funcs.h"
#include "helm/template.h"
#include "helm/value.h"

namespace {

using eco::helm::Value;

Value FixedData() {
  eco::helm::ValueMap values{
      {"name", Value::String("web")},
      {"replicas", Value::Float(3)},
      {"enabled", Value::Bool(true)},
      {"tags", Value::Slice({Value::String("a"), Value::String("b")})},
      {"nested", Value::Map({{"k", Value::String("v")}, {"n", Value::NilInterface()}})},
  };
  eco::helm::ValueMap top{{"Values", Value::Map(std::move(values))},
                          {"Release", Value::Map({{"Name", Value::String("rel")}})}};
  return Value::Map(std::move(top));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto funcs = eco::helm::HelmFuncs();
  static const Value dot = FixedData();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view defines;
  // "\n---8<---\n" splits a helpers file from the main template.
  constexpr std::string_view kSplit = "\n---8<---\n";
  if (auto pos = input.find(kSplit); pos != std::string_view::npos) {
    defines = input.substr(0, pos);
    input.remove_prefix(pos + kSplit.size());
  }
  eco::helm::TemplateSet set(funcs);
  if (!defines.empty() && !set.Parse("_helpers.tpl", defines).ok()) return 0;
  if (!set.Parse("main", input).ok()) return 0;
  eco::helm::ExecOptions opts;
  opts.missing_key = eco::helm::MissingKey::kZero;
  opts.max_output = 1u << 20;
  opts.max_depth = 200;
  (void)set.Execute("main", dot, opts);
  return 0;
}
