#include "ecoctl/values_template.h"

#include "helm/funcs.h"
#include "helm/template.h"
#include "helm/value.h"

namespace eco::ecoctl {

namespace {

// The values as Go's yaml.v3 hands them to emcoctl's template: integers stay
// integers (so printf "%d" works), unlike Helm's values, which become float64.
helm::Value ToValue(const nlohmann::json& j) {
  using helm::Value;
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      helm::ValueMap m;
      for (const auto& [k, v] : j.items()) m.emplace(k, ToValue(v));
      return Value::Map(std::move(m));
    }
    case nlohmann::json::value_t::array: {
      helm::ValueList l;
      for (const auto& v : j) l.push_back(ToValue(v));
      return Value::Slice(std::move(l));
    }
    case nlohmann::json::value_t::string: return Value::String(j.get<std::string>());
    case nlohmann::json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return Value::Int64(j.get<int64_t>());
    case nlohmann::json::value_t::number_float: return Value::Float(j.get<double>());
    default: return Value::NilInterface();
  }
}

}  // namespace

Result<std::string> RenderValuesTemplate(std::string_view text, const nlohmann::json& values) {
  // Plain YAML needs no engine (and keeps a file without actions byte for byte).
  if (text.find("{{") == std::string_view::npos) return std::string(text);
  helm::TemplateSet set(helm::HelmFuncs());
  if (Status s = set.Parse("values", text); !s.ok()) return s;
  helm::ExecOptions opts;
  opts.missing_key = helm::MissingKey::kError;
  return set.Execute("values", ToValue(values.is_null() ? nlohmann::json::object() : values), opts);
}

}  // namespace eco::ecoctl
