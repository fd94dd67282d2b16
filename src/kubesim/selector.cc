// Label and field selector parsing and matching with the API server's grammar.
#include "kubesim/selector.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

namespace eco::kubesim {

namespace {

// ---------------------------------------------------------------------------
// Label selector lexer

enum class Tok {
  kIdent,
  kEq,
  kDoubleEq,
  kNotEq,
  kBang,
  kIn,
  kNotIn,
  kOpen,
  kClose,
  kComma,
  kEnd,
  kError
};

struct Token {
  Tok type;
  std::string text;
};

bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (true) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i == s.size()) {
      out.push_back({Tok::kEnd, ""});
      return out;
    }
    char c = s[i];
    if (IsSpecial(c)) {
      if (c == '=' && i + 1 < s.size() && s[i + 1] == '=') {
        out.push_back({Tok::kDoubleEq, "=="});
        i += 2;
      } else if (c == '!' && i + 1 < s.size() && s[i + 1] == '=') {
        out.push_back({Tok::kNotEq, "!="});
        i += 2;
      } else if (c == '=') {
        out.push_back({Tok::kEq, "="});
        ++i;
      } else if (c == '!') {
        out.push_back({Tok::kBang, "!"});
        ++i;
      } else if (c == '(') {
        out.push_back({Tok::kOpen, "("});
        ++i;
      } else if (c == ')') {
        out.push_back({Tok::kClose, ")"});
        ++i;
      } else if (c == ',') {
        out.push_back({Tok::kComma, ","});
        ++i;
      } else {
        // '<' and '>' (gt/lt) are not supported by kube-sim.
        out.push_back({Tok::kError, std::string(1, c)});
        ++i;
      }
      continue;
    }
    size_t start = i;
    while (i < s.size() && !IsSpace(s[i]) && !IsSpecial(s[i])) ++i;
    std::string word(s.substr(start, i - start));
    if (word == "in") {
      out.push_back({Tok::kIn, word});
    } else if (word == "notin") {
      out.push_back({Tok::kNotIn, word});
    } else {
      out.push_back({Tok::kIdent, std::move(word)});
    }
  }
}

std::string TokText(const Token& t) { return t.type == Tok::kEnd ? "" : t.text; }

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters.
bool ValidLabelPart(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', at most 253.
bool ValidDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return lower_alnum(c) || c == '-' || c == '.'; });
}

Status ValidateKey(const std::string& key) {
  std::string_view name = key;
  auto slash = key.find('/');
  if (slash != std::string::npos) {
    std::string_view prefix = std::string_view(key).substr(0, slash);
    name = std::string_view(key).substr(slash + 1);
    if (!ValidDnsSubdomain(prefix)) {
      return Invalid("unable to parse requirement: key: Invalid value: \"" + key +
                     "\": prefix part must be a lowercase RFC 1123 subdomain");
    }
  }
  if (!ValidLabelPart(name)) {
    return Invalid("unable to parse requirement: key: Invalid value: \"" + key +
                   "\": name part must consist of alphanumeric characters, '-', '_' or '.', and "
                   "must start and end "
                   "with an alphanumeric character, at most 63 characters");
  }
  return Status::Ok();
}

Status ValidateValue(const std::string& value) {
  if (value.empty() || ValidLabelPart(value)) return Status::Ok();
  return Invalid(
      "unable to parse requirement: values[0]: Invalid value: \"" + value +
      "\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
      "or "
      "'.', and must start and end with an alphanumeric character, at most 63 characters");
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(const std::string& text) {
  // Errors follow the API server's parser: syntax errors between requirements
  // are bare, errors inside one are "unable to parse requirement: ...".
  LabelSelector sel;
  std::vector<Token> toks = Lex(text);
  size_t i = 0;
  auto in_req = [](Status s) { return Invalid("unable to parse requirement: " + s.message()); };
  auto found = [&](const Token& t, std::string_view expected) {
    return Invalid("found '" + TokText(t) + "', expected: " + std::string(expected));
  };
  while (true) {
    if (toks[i].type == Tok::kEnd) return sel;
    if (toks[i].type != Tok::kIdent && toks[i].type != Tok::kBang) {
      return found(toks[i], "!, identifier, or 'end of string'");
    }
    Requirement req;
    bool negated = false;
    if (toks[i].type == Tok::kBang) {
      negated = true;
      ++i;
    }
    if (toks[i].type != Tok::kIdent) return in_req(found(toks[i], "identifier"));
    req.key = toks[i].text;
    Status key_ok = ValidateKey(req.key);
    if (!key_ok.ok()) return key_ok;
    ++i;
    const Token& op = toks[i];
    if (negated || op.type == Tok::kComma || op.type == Tok::kEnd) {
      req.op = negated ? Requirement::kNotExists : Requirement::kExists;
    } else if (op.type == Tok::kEq || op.type == Tok::kDoubleEq || op.type == Tok::kNotEq) {
      req.op = op.type == Tok::kNotEq ? Requirement::kNotEq : Requirement::kEq;
      ++i;
      // The value may be empty ("a=" selects a == "").
      if (toks[i].type == Tok::kIdent) {
        req.values.push_back(toks[i].text);
        ++i;
      } else if (toks[i].type == Tok::kComma || toks[i].type == Tok::kEnd) {
        req.values.emplace_back();
      } else {
        return in_req(found(toks[i], "identifier"));
      }
      ECO_RETURN_IF_ERROR(ValidateValue(req.values[0]));
    } else if (op.type == Tok::kIn || op.type == Tok::kNotIn) {
      req.op = op.type == Tok::kIn ? Requirement::kIn : Requirement::kNotIn;
      ++i;
      if (toks[i].type != Tok::kOpen) {
        return Invalid("unable to parse requirement: found '" + TokText(toks[i]) +
                       "' expected: '('");
      }
      ++i;
      while (true) {
        // Inside the parentheses "in" and "notin" are plain values.
        Tok t = toks[i].type;
        if (t == Tok::kIdent || t == Tok::kIn || t == Tok::kNotIn) {
          req.values.push_back(toks[i].text);
          ++i;
        } else if (t == Tok::kComma || t == Tok::kClose) {
          req.values.emplace_back();  // an empty value between separators
        } else {
          return in_req(found(toks[i], "',', or identifier"));
        }
        if (toks[i].type == Tok::kComma) {
          ++i;
          continue;
        }
        if (toks[i].type == Tok::kClose) {
          ++i;
          break;
        }
        return in_req(found(toks[i], "',' or ')'"));
      }
      for (const std::string& v : req.values) ECO_RETURN_IF_ERROR(ValidateValue(v));
      std::sort(req.values.begin(), req.values.end());
      req.values.erase(std::unique(req.values.begin(), req.values.end()), req.values.end());
    } else {
      return in_req(found(op, "in, notin, =, ==, !=, gt, lt"));
    }
    sel.reqs_.push_back(std::move(req));
    if (toks[i].type == Tok::kEnd) return sel;
    if (toks[i].type != Tok::kComma) return found(toks[i], "',' or 'end of string'");
    ++i;
    if (toks[i].type != Tok::kIdent && toks[i].type != Tok::kBang) {
      return found(toks[i], "identifier after ','");
    }
  }
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const Requirement& r : reqs_) {
    const std::string* value = nullptr;
    if (labels.is_object()) {
      auto it = labels.find(r.key);
      if (it != labels.end() && it->is_string()) value = &it->get_ref<const std::string&>();
    }
    bool in_values =
        value != nullptr && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    switch (r.op) {
      case Requirement::kEq:
      case Requirement::kIn:
        if (!in_values) return false;
        break;
      case Requirement::kNotEq:
      case Requirement::kNotIn:
        if (in_values) return false;
        break;
      case Requirement::kExists:
        if (value == nullptr) return false;
        break;
      case Requirement::kNotExists:
        if (value != nullptr) return false;
        break;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Field selectors

namespace {

// Splits on separators not escaped by a backslash; escapes stay in the parts.
std::vector<std::string> SplitUnescaped(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur += s[i];
      cur += s[i + 1];
      ++i;
    } else if (s[i] == sep) {
      parts.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  parts.push_back(std::move(cur));
  return parts;
}

Result<std::string> Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      if (s[i] == '=' || s[i] == ',')
        return Invalid("invalid field selector: unescaped " + std::string(1, s[i]));
      out += s[i];
      continue;
    }
    if (i + 1 == s.size() || (s[i + 1] != '\\' && s[i + 1] != ',' && s[i + 1] != '=')) {
      return Invalid("invalid field selector: invalid escape sequence in \"" + s + "\"");
    }
    out += s[++i];
  }
  return out;
}

// The first unescaped occurrence of op in term, or npos.
size_t FindOp(const std::string& term, std::string_view op) {
  for (size_t i = 0; i + op.size() <= term.size(); ++i) {
    if (term[i] == '\\') {
      ++i;
      continue;
    }
    if (term.compare(i, op.size(), op) == 0) return i;
  }
  return std::string::npos;
}

std::string FieldText(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object()) return "";
    auto it = cur->find(part);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}

}  // namespace

Result<FieldSelector> FieldSelector::Parse(const std::string& text) {
  FieldSelector sel;
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  if (trimmed.empty()) return sel;
  for (const std::string& term : SplitUnescaped(trimmed, ',')) {
    Req req;
    size_t pos = std::string::npos;
    size_t op_len = 0;
    // "!=" and "==" before "=", as the API server tries them.
    for (std::string_view op :
         {std::string_view("!="), std::string_view("=="), std::string_view("=")}) {
      pos = FindOp(term, op);
      if (pos != std::string::npos) {
        op_len = op.size();
        req.equal = op != "!=";
        break;
      }
    }
    if (pos == std::string::npos || pos == 0) {
      return Invalid("invalid selector: '" + text + "'; can't understand '" + term + "'");
    }
    req.field = term.substr(0, pos);
    ECO_ASSIGN_OR_RETURN(auto value, Unescape(term.substr(pos + op_len)));
    req.value = std::move(value);
    sel.reqs_.push_back(std::move(req));
  }
  return sel;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  for (const Req& r : reqs_) {
    bool eq = FieldText(object, r.field) == r.value;
    if (eq != r.equal) return false;
  }
  return true;
}

std::string FieldSelector::EqualityValue(const std::string& field) const {
  for (const Req& r : reqs_) {
    if (r.equal && r.field == field) return r.value;
  }
  return "";
}

}  // namespace eco::kubesim
