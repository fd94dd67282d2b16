// Sprig's regex functions over RE2, with Go's regexp iteration rules
// (empty matches, Split, $-expansion in replacements).
#include <re2/re2.h>

#include <optional>

#include "helm/funcs.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
namespace {

using A = ArgType;

constexpr std::string_view kBadPattern = "error parsing regexp: ";

Result<std::unique_ptr<RE2>> Compile(const std::string& pattern) {
  RE2::Options opts;
  opts.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, opts);
  if (!re->ok()) return Invalid(std::string(kBadPattern) + re->error() + ": `" + pattern + "`");
  return re;
}

size_t RuneWidth(const std::string& s, size_t pos) {
  if (pos >= s.size()) return 1;
  unsigned char c = s[pos];
  size_t w = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return std::min(w, s.size() - pos);
}

// Submatch offsets of the first match at or after pos; empty if none.
std::vector<std::pair<int, int>> MatchAt(const RE2& re, const std::string& s, size_t pos) {
  int n = re.NumberOfCapturingGroups() + 1;
  std::vector<re2::StringPiece> groups(n);
  if (!re.Match(s, pos, s.size(), RE2::UNANCHORED, groups.data(), n)) return {};
  std::vector<std::pair<int, int>> out;
  for (const auto& g : groups) {
    if (g.data() == nullptr) out.push_back({-1, -1});
    else out.push_back({static_cast<int>(g.data() - s.data()), static_cast<int>(g.data() - s.data() + g.size())});
  }
  return out;
}

// Go's allMatches: up to n (n < 0: all) matches, skipping an empty match
// right after the previous one. Bounded by the render's limits: an empty
// pattern matches at every byte of a string of up to 64 MiB.
Result<std::vector<std::vector<std::pair<int, int>>>> FindAll(CallContext& ctx, const RE2& re, const std::string& s,
                                                               int n) {
  std::vector<std::vector<std::pair<int, int>>> out;
  int prev_end = -1;
  for (size_t pos = 0; (n < 0 || static_cast<int>(out.size()) < n) && pos <= s.size();) {
    if (ctx.OverTime()) return TimeLimitExceeded();
    if (out.size() > ctx.max_elements()) {
      return TooLarge("more than " + std::to_string(ctx.max_elements()) + " matches exceed the limit");
    }
    auto m = MatchAt(re, s, pos);
    if (m.empty()) break;
    bool accept = true;
    if (m[0].second == static_cast<int>(pos)) {
      if (m[0].first == prev_end) accept = false;
      pos += RuneWidth(s, pos);
    } else {
      pos = m[0].second;
    }
    prev_end = m[0].second;
    if (accept) out.push_back(std::move(m));
  }
  return out;
}

// Go's Regexp.Expand of a $-template.
void Expand(const RE2& re, const std::string& tmpl, const std::string& s,
            const std::vector<std::pair<int, int>>& m, std::string* into) {
  std::string& out = *into;
  auto group = [&](int i) {
    if (i >= 0 && i < static_cast<int>(m.size()) && m[i].first >= 0) out.append(s, m[i].first, m[i].second - m[i].first);
  };
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$') {
      size_t next = std::min(tmpl.find('$', i), tmpl.size());
      out.append(tmpl, i, next - i);
      i = next - 1;
      continue;
    }
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    std::string name;
    size_t j = i + 1;
    bool brace = j < tmpl.size() && tmpl[j] == '{';
    if (brace) ++j;
    while (j < tmpl.size() && (std::isalnum(static_cast<unsigned char>(tmpl[j])) || tmpl[j] == '_')) name += tmpl[j++];
    if (name.empty() || (brace && (j >= tmpl.size() || tmpl[j] != '}'))) {
      out.push_back('$');  // malformed: the $ is literal text
      continue;
    }
    if (brace) ++j;
    i = j - 1;
    bool digits = name.find_first_not_of("0123456789") == std::string::npos;
    if (digits) {
      if (name.size() < 9) group(std::stoi(name));
    } else {
      auto it = re.NamedCapturingGroups().find(name);
      if (it != re.NamedCapturingGroups().end()) group(it->second);
    }
  }
}

// Go's ReplaceAll. Stops a little past the render's output limit (the
// executor then refuses the oversized result) and at its time limit: one
// call can otherwise build 64 MiB a few bytes at a time.
Result<std::string> ReplaceAll(CallContext& ctx, const RE2& re, const std::string& s,
                               const std::function<void(const std::vector<std::pair<int, int>>&, std::string*)>& repl) {
  std::string out;
  size_t last_end = 0, pos = 0;
  while (pos <= s.size()) {
    if (ctx.OverTime()) return TimeLimitExceeded();
    auto m = MatchAt(re, s, pos);
    if (m.empty()) break;
    out.append(s, last_end, m[0].first - last_end);
    if (m[0].second > static_cast<int>(last_end) || m[0].first == 0) repl(m, &out);
    last_end = m[0].second;
    if (out.size() > ctx.max_output()) return out;
    size_t w = RuneWidth(s, pos);
    if (pos + w > static_cast<size_t>(m[0].second)) pos += w;
    else if (pos + 1 > static_cast<size_t>(m[0].second)) pos++;
    else pos = m[0].second;
  }
  out.append(s, std::min(last_end, s.size()));
  return out;
}

using Fn = std::function<Result<Value>(CallContext&, const ValueList&)>;

// funcs_internal::Add for a function that is not variadic.
void AddFixedArity(FuncMap* f, const std::string& name, std::vector<ArgType> params, Fn fn) {
  (*f)[name] = Function{std::move(params), false, std::move(fn)};
}

// Registers NAME and mustNAME. Sprig's plain regexMatch/regexFind/
// regexFindAll ignore a bad pattern and give `fallback`; the other plain
// forms panic, which a template reports as an error, like the must forms.
void AddBoth(FuncMap* f, const std::string& name, std::vector<ArgType> params, Fn fn,
             std::optional<Value> fallback = {}) {
  if (fallback) {
    AddFixedArity(f, name, params, [fn, fallback](CallContext& ctx, const ValueList& a) -> Result<Value> {
      auto r = fn(ctx, a);
      // Only the pattern's error: a render limit reached inside still stops the render.
      if (!r.ok() && r.status().message().rfind(kBadPattern, 0) == 0) return *fallback;
      return r;
    });
  } else {
    AddFixedArity(f, name, params, fn);
  }
  AddFixedArity(f, "must" + std::string(1, static_cast<char>(std::toupper(name[0]))) + name.substr(1),
                params, fn);
}

}  // namespace

void AddRegexFuncs(FuncMap* f) {
  AddBoth(f, "regexMatch", {A::kString, A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    return Value::Bool(RE2::PartialMatch(a[1].as_string(), *re));
  }, Value::Bool(false));
  AddBoth(f, "regexFind", {A::kString, A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    const std::string& s = a[1].as_string();
    auto m = MatchAt(*re, s, 0);
    return Value::String(m.empty() ? "" : s.substr(m[0].first, m[0].second - m[0].first));
  }, Value::String(""));
  AddBoth(f, "regexFindAll", {A::kString, A::kString, A::kInt}, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    const std::string& s = a[1].as_string();
    std::vector<std::string> out;
    int n = static_cast<int>(a[2].as_int());
    if (n == 0) return funcs_internal::StringList({});
    ECO_ASSIGN_OR_RETURN(auto all, FindAll(ctx, *re, s, n));
    for (const auto& m : all) out.push_back(s.substr(m[0].first, m[0].second - m[0].first));
    return funcs_internal::StringList(std::move(out));
  }, Value::Slice({}, "[]string"));
  AddBoth(f, "regexReplaceAll", {A::kString, A::kString, A::kString}, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    const std::string& s = a[1].as_string();
    const std::string& tmpl = a[2].as_string();
    const RE2& r = *re;
    ECO_ASSIGN_OR_RETURN(auto out,
        ReplaceAll(ctx, r, s, [&](const auto& m, std::string* o) { Expand(r, tmpl, s, m, o); }));
    return Value::String(std::move(out));
  });
  AddBoth(f, "regexReplaceAllLiteral", {A::kString, A::kString, A::kString}, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    const std::string& lit = a[2].as_string();
    ECO_ASSIGN_OR_RETURN(auto out,
        ReplaceAll(ctx, *re, a[1].as_string(), [&](const auto&, std::string* o) { o->append(lit); }));
    return Value::String(std::move(out));
  });
  AddBoth(f, "regexSplit", {A::kString, A::kString, A::kInt}, [](CallContext& ctx, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto re, Compile(a[0].as_string()));
    const std::string& s = a[1].as_string();
    int n = static_cast<int>(a[2].as_int());
    if (n == 0) return Value::Slice({}, "[]string");
    if (!a[0].as_string().empty() && s.empty()) return funcs_internal::StringList({""});
    std::vector<std::string> out;
    size_t beg = 0, end = 0;
    ECO_ASSIGN_OR_RETURN(auto all, FindAll(ctx, *re, s, n));
    for (const auto& m : all) {
      if (n > 0 && static_cast<int>(out.size()) == n - 1) break;
      end = m[0].first;
      if (m[0].second != 0) out.push_back(s.substr(beg, end - beg));
      beg = m[0].second;
    }
    if (end != s.size()) out.push_back(s.substr(beg));
    return funcs_internal::StringList(std::move(out));
  });
  AddFixedArity(f, "regexQuoteMeta", {A::kString}, [](CallContext&, const ValueList& a) -> Result<Value> {
    // Go's QuoteMeta escapes exactly \.+*?()|[]{}^$
    std::string out;
    for (char c : a[0].as_string()) {
      if (std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos) out.push_back('\\');
      out.push_back(c);
    }
    return Value::String(out);
  });
}

}  // namespace eco::helm
