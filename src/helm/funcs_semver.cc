// Sprig's semver and semverCompare over Masterminds/semver v3.2 semantics.
// The regular expressions are the library's own (RE2 accepts Go's syntax).
#include "helm/semver.h"

#include <re2/re2.h>

#include <memory>
#include <vector>

#include "helm/funcs.h"
#include "helm/funcs_internal.h"
#include "helm/text_util.h"

namespace eco::helm {
namespace {

constexpr const char* kVersion =
    R"(v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)";
constexpr const char* kCv =
    R"(v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)";
constexpr const char* kOps = R"(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)";

struct Regexes {
  RE2 version{std::string("^") + kVersion + "$"};
  RE2 constraint{std::string(R"(^\s*()") + kOps + R"()\s*()" + kCv + R"()\s*$)"};
  RE2 range{std::string(R"(\s*()") + kCv + R"()\s+-\s+()" + kCv + R"()\s*)"};
  RE2 find{std::string("((") + kOps + R"()\s*()" + kCv + "))"};
  RE2 valid{std::string(R"(^(\s*()") + kOps + R"()\s*()" + kCv + R"()\s*)((?:\s+|,\s*)()" + kOps + R"()\s*()" + kCv +
            R"()\s*)*$)"};
};
const Regexes& Re() {
  static const Regexes* r = new Regexes();  // never destroyed: used from static initialisers' callers
  return *r;
}

// Every match of `re` in `text`, each as its groups (0 = whole match).
std::vector<std::vector<std::string>> FindAllSubmatch(const RE2& re, std::string_view text) {
  std::vector<std::vector<std::string>> out;
  int n = re.NumberOfCapturingGroups() + 1;
  std::vector<re2::StringPiece> m(n);
  size_t pos = 0;
  while (pos <= text.size() &&
         re.Match(re2::StringPiece(text.data(), text.size()), pos, text.size(), RE2::UNANCHORED, m.data(), n)) {
    std::vector<std::string> groups;
    for (auto& g : m) groups.emplace_back(g.data() ? std::string(g.data(), g.size()) : std::string());
    size_t end = static_cast<size_t>(m[0].data() - text.data()) + m[0].size();
    pos = m[0].empty() ? end + 1 : end;
    out.push_back(std::move(groups));
  }
  return out;
}

bool ContainsOnly(const std::string& s, std::string_view set) {
  for (char c : s)
    if (set.find(c) == std::string_view::npos) return false;
  return true;
}

Result<uint64_t> ParseSegment(std::string s) {
  if (!s.empty() && s[0] == '.') s.erase(0, 1);
  uint64_t v = 0;
  for (char c : s) {
    if (v > (UINT64_MAX - 9) / 10)
      return Invalid("Error parsing version segment: strconv.ParseUint: parsing " + std::string("\"") + s +
                     "\": value out of range");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

int ComparePart(const std::string& s, const std::string& o) {
  if (s == o) return 0;
  if (s.empty()) return -1;
  if (o.empty()) return 1;
  auto num = [](const std::string& x, uint64_t* v) {
    if (x.empty() || !ContainsOnly(x, "0123456789") || x.size() > 19) return false;
    *v = std::stoull(x);
    return true;
  };
  uint64_t si = 0, oi = 0;
  bool sn = num(s, &si), on = num(o, &oi);
  if (!sn && !on) return s > o ? 1 : -1;
  if (!on) return -1;
  if (!sn) return 1;
  return si > oi ? 1 : -1;
}

int ComparePrerelease(const std::string& a, const std::string& b) {
  auto sp = SplitDots(a), op = SplitDots(b);
  size_t l = std::max(sp.size(), op.size());
  for (size_t i = 0; i < l; ++i) {
    int d = ComparePart(i < sp.size() ? sp[i] : "", i < op.size() ? op[i] : "");
    if (d != 0) return d;
  }
  return 0;
}

struct Constraint {
  std::string op, orig;
  SemVersion con;
  bool minor_dirty = false, patch_dirty = false, dirty = false;
};

bool IsX(const std::string& s) { return s == "x" || s == "X" || s == "*"; }

Result<Constraint> ParseConstraint(const std::string& c) {
  Constraint cs;
  if (c.empty()) {
    cs.dirty = true;
    return cs;
  }
  auto all = FindAllSubmatch(Re().constraint, c);
  if (all.empty()) return Invalid("improper constraint: " + c);
  const auto& m = all[0];  // m[1] op, m[2] version, m[3..] its groups
  cs.op = m[1];
  cs.orig = m[2];
  std::string ver = m[2];
  auto trim_dot = [](const std::string& s) { return s.empty() ? s : s.substr(1); };
  if (IsX(m[3]) || m[3].empty()) {
    ver = "0.0.0" + m[6];
    cs.dirty = true;
  } else if (IsX(trim_dot(m[4])) || m[4].empty()) {
    cs.minor_dirty = cs.dirty = true;
    ver = m[3] + ".0.0" + m[6];
  } else if (IsX(trim_dot(m[5])) || m[5].empty()) {
    cs.patch_dirty = cs.dirty = true;
    ver = m[3] + m[4] + ".0" + m[6];
  }
  auto v = ParseSemver(ver);
  if (!v.ok()) return Invalid("constraint Parser Error");
  cs.con = *v;
  return cs;
}

bool CheckTilde(const SemVersion& v, const Constraint& c) {
  if (CompareSemver(v, c.con) < 0) return false;
  if (c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty) return true;
  if (v.major != c.con.major) return false;
  if (v.minor != c.con.minor && !c.minor_dirty) return false;
  return true;
}

bool Check(const SemVersion& v, const Constraint& c) {
  const std::string& op = c.op;
  bool pre_blocked = !v.pre.empty() && c.con.pre.empty();
  if (op == "!=") {
    if (c.dirty) {
      if (pre_blocked) return false;
      if (c.con.major != v.major) return true;
      if (c.con.minor != v.minor && !c.minor_dirty) return true;
      if (c.minor_dirty) return false;
      if (c.con.patch != v.patch && !c.patch_dirty) return true;
      if (c.patch_dirty) {
        if (!v.pre.empty() || !c.con.pre.empty()) return ComparePrerelease(v.pre, c.con.pre) != 0;
        return false;
      }
    }
    return CompareSemver(v, c.con) != 0;
  }
  if (pre_blocked) return false;
  if (op == ">") {
    if (!c.dirty) return CompareSemver(v, c.con) == 1;
    if (v.major > c.con.major) return true;
    if (v.major < c.con.major) return false;
    if (c.minor_dirty) return false;
    if (c.patch_dirty) return v.minor > c.con.minor;
    return CompareSemver(v, c.con) == 1;
  }
  if (op == "<") return CompareSemver(v, c.con) < 0;
  if (op == ">=" || op == "=>") return CompareSemver(v, c.con) >= 0;
  if (op == "<=" || op == "=<") {
    if (!c.dirty) return CompareSemver(v, c.con) <= 0;
    if (v.major > c.con.major) return false;
    if (v.major == c.con.major && v.minor > c.con.minor && !c.minor_dirty) return false;
    return true;
  }
  if (op == "~" || op == "~>") return CheckTilde(v, c);
  if (op == "^") {
    if (CompareSemver(v, c.con) < 0) return false;
    if (c.con.major > 0 || c.minor_dirty) return v.major == c.con.major;
    if (v.major > 0) return false;
    if (c.con.minor > 0 || c.patch_dirty) return v.minor == c.con.minor;
    if (v.minor > 0) return false;
    return c.con.patch == v.patch;
  }
  // "" and "=": tilde when a part is a wildcard, else equality.
  if (c.dirty) return CheckTilde(v, c);
  return CompareSemver(v, c.con) == 0;
}

Result<std::vector<std::vector<Constraint>>> ParseConstraints(std::string c) {
  for (const auto& m : FindAllSubmatch(Re().range, c)) {
    std::string t = ">= " + m[1] + ", <= " + m[11];
    size_t at = c.find(m[0]);
    if (at != std::string::npos) c.replace(at, m[0].size(), t);
  }
  std::vector<std::vector<Constraint>> ors;
  size_t p = 0;
  for (;;) {
    size_t q = c.find("||", p);
    std::string part = c.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (!RE2::FullMatch(part, Re().valid)) return Invalid("improper constraint: " + part);
    std::vector<std::string> cs;
    for (const auto& m : FindAllSubmatch(Re().find, part)) cs.push_back(m[0]);
    if (cs.empty()) cs.push_back(part);
    std::vector<Constraint> group;
    for (const auto& s : cs) {
      ECO_ASSIGN_OR_RETURN(auto pc, ParseConstraint(s));
      group.push_back(pc);
    }
    ors.push_back(std::move(group));
    if (q == std::string::npos) break;
    p = q + 2;
  }
  return ors;
}

// *semver.Version as templates see it.
class VersionObject : public Object {
 public:
  // The Inc* methods return a semver.Version value, not a pointer.
  explicit VersionObject(SemVersion v, bool pointer = true) : v_(std::move(v)), pointer_(pointer) {}
  std::string TypeName() const override { return pointer_ ? "*semver.Version" : "semver.Version"; }
  std::string GoKind() const override { return pointer_ ? "ptr" : "struct"; }
  std::string Format() const override { return v_.String(); }
  bool MarshalJson(std::string* out) const override {
    *out += "\"" + v_.String() + "\"";
    return true;
  }
  bool HasMember(std::string_view name) const override {
    for (const char* m : {"Major", "Minor", "Patch", "Prerelease", "Metadata", "Original", "String", "Compare",
                          "LessThan", "GreaterThan", "Equal", "IncMajor", "IncMinor", "IncPatch"})
      if (name == m) return true;
    return false;
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    auto nargs = [&](size_t want) -> Status {
      if (args.size() != want)
        return Invalid("wrong number of args for " + std::string(name) + ": want " + std::to_string(want) + " got " +
                       std::to_string(args.size()));
      return {};
    };
    if (name == "Major" || name == "Minor" || name == "Patch") {
      ECO_RETURN_IF_ERROR(nargs(0));
      uint64_t x = name == "Major" ? v_.major : name == "Minor" ? v_.minor : v_.patch;
      return Value::Int64(static_cast<int64_t>(x));
    }
    if (name == "Prerelease" || name == "Metadata" || name == "Original" || name == "String") {
      ECO_RETURN_IF_ERROR(nargs(0));
      return Value::String(name == "Prerelease" ? v_.pre : name == "Metadata" ? v_.metadata
                                                       : name == "Original" ? v_.original : v_.String());
    }
    if (name == "Compare" || name == "LessThan" || name == "GreaterThan" || name == "Equal") {
      ECO_RETURN_IF_ERROR(nargs(1));
      const auto* o = args[0].kind() == Kind::kObject ? dynamic_cast<const VersionObject*>(args[0].as_object()) : nullptr;
      if (!o) return Invalid("wrong type for value; expected *semver.Version; got " + args[0].TypeName());
      int d = CompareSemver(v_, o->v_);
      if (name == "Compare") return Value::Int(d);
      return Value::Bool(name == "LessThan" ? d < 0 : name == "GreaterThan" ? d > 0 : d == 0);
    }
    if (name == "IncMajor" || name == "IncMinor" || name == "IncPatch") {
      ECO_RETURN_IF_ERROR(nargs(0));
      SemVersion n = v_;
      n.metadata.clear();
      if (name == "IncMajor") {
        n.pre.clear();
        ++n.major;
        n.minor = n.patch = 0;
      } else if (name == "IncMinor") {
        n.pre.clear();
        ++n.minor;
        n.patch = 0;
      } else if (n.pre.empty()) {
        ++n.patch;
      } else {
        n.pre.clear();  // a prerelease's patch increment drops the prerelease
      }
      n.original = (!v_.original.empty() && v_.original[0] == 'v' ? "v" : "") + n.String();
      return Value::Obj(std::make_shared<VersionObject>(std::move(n), /*pointer=*/false));
    }
    return Object::Call(name, args);
  }

 private:
  SemVersion v_;
  bool pointer_;
};

}  // namespace

std::string SemVersion::String() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (!pre.empty()) s += "-" + pre;
  if (!metadata.empty()) s += "+" + metadata;
  return s;
}

Result<SemVersion> ParseSemver(std::string_view v) {
  auto all = FindAllSubmatch(Re().version, v);
  if (all.empty()) return Invalid("Invalid Semantic Version");
  const auto& m = all[0];
  SemVersion sv;
  sv.original = std::string(v);
  sv.pre = m[5];
  sv.metadata = m[8];
  ECO_ASSIGN_OR_RETURN(auto major, ParseSegment(m[1]));
  sv.major = major;
  if (!m[2].empty()) {
    ECO_ASSIGN_OR_RETURN(auto r, ParseSegment(m[2]));
    sv.minor = r;
  }
  if (!m[3].empty()) {
    ECO_ASSIGN_OR_RETURN(auto r, ParseSegment(m[3]));
    sv.patch = r;
  }
  static constexpr std::string_view kAllowed = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-";
  if (!sv.pre.empty()) {
    for (const auto& p : SplitDots(sv.pre)) {
      if (ContainsOnly(p, "0123456789")) {
        if (p.size() > 1 && p[0] == '0') return Invalid("Version segment starts with 0");
      } else if (!ContainsOnly(p, kAllowed)) {
        return Invalid("Invalid Prerelease string");
      }
    }
  }
  if (!sv.metadata.empty()) {
    for (const auto& p : SplitDots(sv.metadata))
      if (!ContainsOnly(p, kAllowed)) return Invalid("Invalid Metadata string");
  }
  return sv;
}

int CompareSemver(const SemVersion& a, const SemVersion& b) {
  auto cmp = [](uint64_t x, uint64_t y) { return x < y ? -1 : x > y ? 1 : 0; };
  if (int d = cmp(a.major, b.major)) return d;
  if (int d = cmp(a.minor, b.minor)) return d;
  if (int d = cmp(a.patch, b.patch)) return d;
  if (a.pre.empty() && b.pre.empty()) return 0;
  if (a.pre.empty()) return 1;
  if (b.pre.empty()) return -1;
  return ComparePrerelease(a.pre, b.pre);
}

Result<bool> SemverSatisfies(std::string_view version, std::string_view constraint) {
  ECO_ASSIGN_OR_RETURN(auto cs, ParseConstraints(std::string(constraint)));
  ECO_ASSIGN_OR_RETURN(auto v, ParseSemver(version));
  for (const auto& group : cs) {
    bool all = true;
    for (const auto& c : group) {
      if (!Check(v, c)) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

void AddSemverFuncs(FuncMap* f) {
  using A = ArgType;
  funcs_internal::Add(f, "semver", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto v, ParseSemver(a[0].as_string()));
    return Value::Obj(std::make_shared<VersionObject>(std::move(v)));
  });
  funcs_internal::Add(f, "semverCompare", {A::kString, A::kString}, false,
                      [](CallContext&, const ValueList& a) -> Result<Value> {
                        ECO_ASSIGN_OR_RETURN(auto r,
                                             SemverSatisfies(a[1].as_string(), a[0].as_string()));
                        return Value::Bool(r);
                      });
}

}  // namespace eco::helm
