#include "helm/eval_cases.h"

#include <nlohmann/json.hpp>

#include "helm/funcs.h"
#include "helm/render.h"
#include "helm/template.h"
#include "helm/text_util.h"

namespace eco::helm {
namespace {

using nlohmann::json;

// A case's data: null is Value(); integers are int64 or float64 as the case says.
Value CaseDataFromJson(const json& j, bool int64_numbers) {
  switch (j.type()) {
    case json::value_t::null: return Value();
    case json::value_t::boolean: return Value::Bool(j.get<bool>());
    case json::value_t::number_integer:
      if (int64_numbers) return Value::Int64(j.get<int64_t>());
      return Value::Float(j.get<double>());
    case json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (int64_numbers && u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int64(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case json::value_t::number_float: return Value::Float(j.get<double>());
    case json::value_t::string: return Value::String(j.get<std::string>());
    case json::value_t::array: {
      ValueList l;
      for (const auto& e : j) l.push_back(CaseDataFromJson(e, int64_numbers));
      return Value::Slice(std::move(l));
    }
    case json::value_t::object: {
      ValueMap m;
      for (auto it = j.begin(); it != j.end(); ++it)
        m.emplace(it.key(), CaseDataFromJson(it.value(), int64_numbers));
      return Value::Map(std::move(m));
    }
    default: return Value();
  }
}

PreparedCase PrepareCase(const json& c) {
  PreparedCase p;
  p.id = c.value("id", "");
  p.category = c.value("category", "");
  p.helm = c.value("mode", "gotemplate") == "helm";
  bool int64_numbers = c.value("numbers", "float64") == "int64";
  p.name = c.value("template_name", "main");
  p.opts.missing_key = p.helm ? MissingKey::kZero : MissingKey::kDefault;
  std::string mk = c.value("missingkey", "");
  if (mk == "default") p.opts.missing_key = MissingKey::kDefault;
  if (mk == "zero") p.opts.missing_key = MissingKey::kZero;
  if (mk == "error") p.opts.missing_key = MissingKey::kError;
  if (c.contains("defines")) {
    const json& d = c["defines"];
    if (d.is_string()) p.defines.push_back(d.get<std::string>());
    if (d.is_array())
      for (const auto& e : d)
        if (e.is_string()) p.defines.push_back(e.get<std::string>());
  }
  p.text = c.value("template", "");
  p.data = c.contains("data") ? CaseDataFromJson(c["data"], int64_numbers) : Value();
  return p;
}

}  // namespace

CaseOutcome RenderCase(const PreparedCase& p) {
  CaseOutcome o;
  o.id = p.id;
  o.category = p.category;
  auto fail = [&](const std::string& phase, std::string msg) {
    o.is_error = true;
    o.phase = phase;
    o.text = phase == "parse" && p.helm ? CleanupParseError("", msg) : std::move(msg);
    return o;
  };
  static const std::shared_ptr<const FuncMap> helm_funcs = HelmFuncs();
  TemplateSet set(p.helm ? helm_funcs : nullptr);
  for (size_t i = 0; i < p.defines.size(); ++i) {
    std::string dname = i == 0 ? "_helpers.tpl" : "_helpers" + std::to_string(i) + ".tpl";
    Status s = set.Parse(dname, p.defines[i]);
    if (!s.ok()) return fail("parse", s.message());
  }
  Status s = set.Parse(p.name, p.text);
  if (!s.ok()) return fail("parse", s.message());
  auto out = set.Execute(p.name, p.data, p.opts);
  if (!out.ok()) {
    std::string msg = out.status().message();
    size_t a = msg.find(kHelmUserErrorStart);
    size_t b = msg.find(kHelmUserErrorEnd);
    if (p.helm && a != std::string::npos && b != std::string::npos && b > a) {
      // Helm shortens required/fail errors to their location and message.
      std::string user = msg.substr(a + kHelmUserErrorStart.size(), b - a - kHelmUserErrorStart.size());
      size_t p1 = msg.find(": ");
      size_t p2 = p1 == std::string::npos ? p1 : msg.find(": ", p1 + 2);
      std::string loc = p2 == std::string::npos ? "" : msg.substr(p1 + 2, p2 - p1 - 2);
      msg = "execution error at (" + loc + "): " + user;
    }
    return fail("exec", std::move(msg));
  }
  o.text = std::move(out).value();
  if (p.helm) EraseAll(&o.text, "<no value>");
  return o;
}

Result<std::vector<PreparedCase>> PrepareCases(std::string_view cases_json) {
  json doc = json::parse(cases_json.begin(), cases_json.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Invalid("cases: not valid JSON");
  if (!doc.is_array()) return Invalid("cases: expected a JSON array of cases");
  std::vector<PreparedCase> out;
  for (const auto& c : doc) {
    if (!c.is_object()) return Invalid("cases: every case must be a JSON object");
    out.push_back(PrepareCase(c));
  }
  return out;
}

Result<std::vector<CaseOutcome>> RunCases(std::string_view cases_json) {
  ECO_ASSIGN_OR_RETURN(auto prepared, PrepareCases(cases_json));
  std::vector<CaseOutcome> out;
  out.reserve(prepared.size());
  for (const auto& p : prepared) out.push_back(RenderCase(p));
  return out;
}

Result<std::string> EvalCases(std::string_view cases_json) {
  ECO_ASSIGN_OR_RETURN(auto r, RunCases(cases_json));
  json arr = json::array();
  for (const auto& o : r) {
    json e;
    e["id"] = o.id;
    if (o.is_error) e["error"] = o.text;
    else e["output"] = o.text;
    arr.push_back(std::move(e));
  }
  return arr.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace eco::helm
