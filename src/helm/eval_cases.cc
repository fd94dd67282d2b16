#include "helm/eval_cases.h"

#include <nlohmann/json.hpp>

#include "helm/funcs.h"
#include "helm/template.h"

namespace eco::helm {
namespace {

using nlohmann::json;

Value FromJson(const json& j, bool int64_numbers) {
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
      for (const auto& e : j) l.push_back(FromJson(e, int64_numbers));
      return Value::Slice(std::move(l));
    }
    case json::value_t::object: {
      ValueMap m;
      for (auto it = j.begin(); it != j.end(); ++it) m.emplace(it.key(), FromJson(it.value(), int64_numbers));
      return Value::Map(std::move(m));
    }
    default: return Value();
  }
}

// Helm's rewrite of a parse error: "parse error at (main:1): last clause".
std::string HelmParseError(const std::string& msg) {
  std::vector<std::string> tokens;
  size_t start = 0;
  for (;;) {
    size_t p = msg.find(": ", start);
    if (p == std::string::npos) {
      tokens.push_back(msg.substr(start));
      break;
    }
    tokens.push_back(msg.substr(start, p - start));
    start = p + 2;
  }
  if (tokens.size() == 1) return "parse error: " + msg;
  return "parse error at (" + tokens[1] + "): " + tokens.back();
}

void ReplaceAll(std::string* s, std::string_view from) {
  size_t p = 0;
  while ((p = s->find(from, p)) != std::string::npos) s->erase(p, from.size());
}

CaseOutcome RunCase(const json& c) {
  CaseOutcome o;
  o.id = c.value("id", "");
  o.category = c.value("category", "");
  bool helm = c.value("mode", "gotemplate") == "helm";
  bool int64_numbers = c.value("numbers", "float64") == "int64";
  std::string name = c.value("template_name", "main");
  ExecOptions opts;
  opts.missing_key = helm ? MissingKey::kZero : MissingKey::kDefault;
  std::string mk = c.value("missingkey", "");
  if (mk == "default") opts.missing_key = MissingKey::kDefault;
  if (mk == "zero") opts.missing_key = MissingKey::kZero;
  if (mk == "error") opts.missing_key = MissingKey::kError;

  std::vector<std::string> defines;
  if (c.contains("defines")) {
    const json& d = c["defines"];
    if (d.is_string()) defines.push_back(d.get<std::string>());
    if (d.is_array())
      for (const auto& e : d)
        if (e.is_string()) defines.push_back(e.get<std::string>());
  }
  auto fail = [&](const std::string& phase, std::string msg) {
    o.is_error = true;
    o.phase = phase;
    o.text = phase == "parse" && helm ? HelmParseError(msg) : std::move(msg);
    return o;
  };
  TemplateSet set(helm ? HelmFuncs() : nullptr);
  for (size_t i = 0; i < defines.size(); ++i) {
    std::string dname = i == 0 ? "_helpers.tpl" : "_helpers" + std::to_string(i) + ".tpl";
    Status s = set.Parse(dname, defines[i]);
    if (!s.ok()) return fail("parse", s.message());
  }
  Status s = set.Parse(name, c.value("template", ""));
  if (!s.ok()) return fail("parse", s.message());
  Value data = c.contains("data") ? FromJson(c["data"], int64_numbers) : Value();
  auto out = set.Execute(name, data, opts);
  if (!out.ok()) {
    std::string msg = out.status().message();
    size_t a = msg.find(kHelmUserErrorStart);
    size_t b = msg.find(kHelmUserErrorEnd);
    if (helm && a != std::string::npos && b != std::string::npos && b > a) {
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
  if (helm) ReplaceAll(&o.text, "<no value>");
  return o;
}

}  // namespace

Result<std::vector<CaseOutcome>> RunCases(std::string_view cases_json) {
  json doc = json::parse(cases_json.begin(), cases_json.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Invalid("cases: not valid JSON");
  if (!doc.is_array()) return Invalid("cases: expected a JSON array of cases");
  std::vector<CaseOutcome> out;
  for (const auto& c : doc) {
    if (!c.is_object()) return Invalid("cases: every case must be a JSON object");
    out.push_back(RunCase(c));
  }
  return out;
}

Result<std::string> EvalCases(std::string_view cases_json) {
  auto r = RunCases(cases_json);
  if (!r.ok()) return r.status();
  json arr = json::array();
  for (const auto& o : *r) {
    json e;
    e["id"] = o.id;
    if (o.is_error) e["error"] = o.text;
    else e["output"] = o.text;
    arr.push_back(std::move(e));
  }
  return arr.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace eco::helm
