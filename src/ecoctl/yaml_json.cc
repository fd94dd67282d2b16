#include "ecoctl/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <exception>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

bool AllDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                         : (c >= '0' && c < static_cast<char>('0' + base));
    if (!ok) return false;
  }
  return true;
}

// YAML 1.2 float syntax: [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )?
bool LooksLikeFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// Types an untagged ("plain") scalar by the YAML 1.2 core schema.
json ResolvePlain(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;

  std::string_view v = s;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
    int base = v[1] == 'x' ? 16 : 8;
    std::string_view digits = v.substr(2);
    uint64_t u = 0;
    if (AllDigits(digits, base)) {
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
      if (ec == std::errc() && p == digits.data() + digits.size()) {
        if (u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
        return u;
      }
    }
    return s;
  }
  std::string_view unsigned_part = (v[0] == '+' || v[0] == '-') ? v.substr(1) : v;
  if (AllDigits(unsigned_part, 10)) {
    // from_chars rejects a leading '+'.
    std::string_view parse = v[0] == '+' ? unsigned_part : v;
    int64_t i = 0;
    auto [p, ec] = std::from_chars(parse.data(), parse.data() + parse.size(), i);
    if (ec == std::errc() && p == parse.data() + parse.size()) return i;
    uint64_t u = 0;
    auto [p2, ec2] = std::from_chars(parse.data(), parse.data() + parse.size(), u);
    if (ec2 == std::errc() && p2 == parse.data() + parse.size()) return u;
    // Too large for any integer: fall through to float.
  }
  if (LooksLikeFloat(v)) {
    std::string_view parse = v[0] == '+' ? v.substr(1) : v;
    double d = 0;
    auto [p, ec] = std::from_chars(parse.data(), parse.data() + parse.size(), d);
    if (ec == std::errc() && p == parse.data() + parse.size()) return d;
  }
  // .inf / .nan have no JSON form; they stay strings.
  return s;
}

Result<json> NodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return json(node.Scalar());
      if (tag == "?" || tag.rfind("tag:yaml.org,2002:", 0) == 0) return ResolvePlain(node.Scalar());
      return json(node.Scalar());  // application tags: keep the text
    }
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) {
        ECO_ASSIGN_OR_RETURN(auto v, NodeToJson(item));
        arr.push_back(std::move(v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return Invalid("line " + std::to_string(kv.first.Mark().line + 1) +
                         ": only scalar mapping keys are supported");
        }
        ECO_ASSIGN_OR_RETURN(auto v, NodeToJson(kv.second));
        obj[kv.first.Scalar()] = std::move(v);
      }
      return obj;
    }
  }
  return json(nullptr);
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  return !ResolvePlain(s).is_string();
}

void Emit(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      // Block style would put an empty map on a line of its own.
      if (v.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [k, item] : v.items()) {
        out << YAML::Key;
        if (NeedsQuotes(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      if (v.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case json::value_t::boolean:
      out << (v.get<bool>() ? "true" : "false");
      break;
    case json::value_t::null:
    case json::value_t::discarded:
      out << YAML::Null;
      break;
    default:  // numbers: JSON's shortest round-trip text is valid YAML
      out << v.dump();
      break;
  }
}

}  // namespace

Result<std::vector<json>> ParseYamlDocuments(std::string_view text) {
  try {
    std::vector<YAML::Node> nodes = YAML::LoadAll(std::string(text));
    std::vector<json> docs;
    docs.reserve(nodes.size());
    for (const auto& n : nodes) {
      ECO_ASSIGN_OR_RETURN(auto v, NodeToJson(n));
      docs.push_back(std::move(v));
    }
    return docs;
  } catch (const YAML::Exception& e) {
    return Invalid("YAML line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Invalid(std::string("YAML: ") + e.what());
  }
}

Result<json> ParseYamlValues(std::string_view text) {
  ECO_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(text));
  json merged = json::object();
  for (const auto& d : docs) {
    if (d.is_null()) continue;
    if (!d.is_object()) return Invalid("values must be a YAML mapping");
    MergeValues(merged, d);
  }
  return merged;
}

std::string JsonToYaml(const json& value) {
  try {
    YAML::Emitter out;
    Emit(out, value);
    std::string s = out.c_str();
    if (s.empty() || s.back() != '\n') s += '\n';
    return s;
  } catch (const std::exception& e) {
    // Emission of plain data cannot fail in practice; keep the data visible.
    return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
}

void MergeValues(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (const auto& [k, v] : overlay.items()) {
    auto it = base.find(k);
    if (it != base.end() && it->is_object() && v.is_object()) {
      MergeValues(*it, v);
    } else {
      base[k] = v;
    }
  }
}

}  // namespace eco::ecoctl
