#include "helm/fmt.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace eco::helm {
namespace {

// Decodes one UTF-8 code point at s[i]; returns -1 on an invalid byte
// (size 1), as Go's utf8.DecodeRuneInString reports RuneError.
int32_t DecodeRune(std::string_view s, size_t i, size_t* size) {
  unsigned char c = s[i];
  *size = 1;
  if (c < 0x80) return c;
  int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return -1;
  int32_t r = c & (0x3F >> (n - 1));
  for (int k = 1; k < n; ++k) {
    unsigned char cc = s[i + k];
    if ((cc & 0xC0) != 0x80) return -1;
    r = (r << 6) | (cc & 0x3F);
  }
  *size = n;
  return r;
}

// Go's utf8.AppendRune: invalid code points become U+FFFD.
void AppendRune(std::string* out, int32_t r) {
  if (r < 0 || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) r = 0xFFFD;
  AppendUtf8(out, static_cast<char32_t>(r));
}

size_t RuneCount(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    size_t sz;
    DecodeRune(s, i, &sz);
    i += sz;
    ++n;
  }
  return n;
}

// Rough strconv.IsPrint: control characters and a few separators are not.
bool IsPrint(int32_t r) {
  if (r < 0x20 || r == 0x7F) return false;
  if (r >= 0x80 && r < 0xA0) return false;
  if (r == 0xAD || r == 0xFFFD + 1 || r == 0x2028 || r == 0x2029) return false;
  if (r >= 0xD800 && r <= 0xDFFF) return false;
  if (r == 0xFEFF) return false;
  return true;
}

void QuoteRuneInto(std::string* out, int32_t r, char quote) {
  static const char* kHex = "0123456789abcdef";
  if (r == quote || r == '\\') {
    out->push_back('\\');
    out->push_back(static_cast<char>(r));
    return;
  }
  if (IsPrint(r)) {
    AppendRune(out, r);
    return;
  }
  switch (r) {
    case '\a': *out += "\\a"; return;
    case '\b': *out += "\\b"; return;
    case '\f': *out += "\\f"; return;
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\v': *out += "\\v"; return;
  }
  if (r < ' ' || r == 0x7F) {
    *out += "\\x";
    out->push_back(kHex[(r >> 4) & 0xF]);
    out->push_back(kHex[r & 0xF]);
  } else if (r < 0x10000) {
    *out += "\\u";
    for (int s = 12; s >= 0; s -= 4) out->push_back(kHex[(r >> s) & 0xF]);
  } else {
    *out += "\\U";
    for (int s = 28; s >= 0; s -= 4) out->push_back(kHex[(r >> s) & 0xF]);
  }
}

struct Spec {
  bool minus = false, plus = false, space = false, zero = false, sharp = false;
  bool has_width = false, has_prec = false;
  int width = 0, prec = 0;
};

void Pad(std::string* out, std::string_view s, const Spec& sp) {
  size_t n = RuneCount(s);
  if (!sp.has_width || static_cast<int>(n) >= sp.width) {
    *out += s;
    return;
  }
  std::string pad(sp.width - n, sp.zero && !sp.minus ? '0' : ' ');
  if (sp.minus) {
    *out += s;
    *out += std::string(sp.width - n, ' ');
  } else {
    *out += pad;
    *out += s;
  }
}

// Pads a number: zero padding goes after the sign.
void PadNumber(std::string* out, std::string s, const Spec& sp) {
  if (sp.has_width && sp.zero && !sp.minus && static_cast<int>(s.size()) < sp.width) {
    size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    s.insert(sign, std::string(sp.width - s.size(), '0'));
    *out += s;
    return;
  }
  Spec nz = sp;
  nz.zero = false;
  Pad(out, s, nz);
}

std::string IntDigits(uint64_t u, int base, bool upper) {
  if (u == 0) return "0";
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string s;
  while (u) {
    s.insert(s.begin(), digits[u % base]);
    u /= base;
  }
  return s;
}

void FmtInt(std::string* out, int64_t v, char verb, const Spec& sp) {
  bool neg = v < 0;
  uint64_t u = neg ? static_cast<uint64_t>(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int base = 10;
  bool upper = false;
  std::string prefix;
  switch (verb) {
    case 'x': base = 16; if (sp.sharp) prefix = "0x"; break;
    case 'X': base = 16; upper = true; if (sp.sharp) prefix = "0X"; break;
    case 'o': base = 8; if (sp.sharp) prefix = "0"; break;
    case 'O': base = 8; prefix = "0o"; break;
    case 'b': base = 2; break;
    default: break;
  }
  std::string digits = IntDigits(u, base, upper);
  if (sp.has_prec) {
    if (sp.prec == 0 && u == 0) digits.clear();
    while (static_cast<int>(digits.size()) < sp.prec) digits.insert(digits.begin(), '0');
  }
  if (prefix == "0" && !digits.empty() && digits[0] == '0') prefix.clear();
  std::string s = (neg ? "-" : sp.plus ? "+" : sp.space ? " " : "") + prefix + digits;
  if (sp.has_prec) {
    Spec nz = sp;
    nz.zero = false;
    Pad(out, s, nz);
  } else {
    PadNumber(out, std::move(s), sp);
  }
}

std::string GoExponent(std::string s) {
  // C prints e+06 like Go already; only normalise 3+ digit forms untouched.
  return s;
}

// Go's layout of shortest digits given as "[-]d.ddde±xx" for strconv format
// 'e', 'E', 'f', 'F', 'g' or 'G'.
std::string LayoutShortest(std::string_view sci, char fmt) {
  bool neg = sci[0] == '-';
  if (neg) sci.remove_prefix(1);
  size_t e = sci.find('e');
  int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  std::string digits;
  for (char c : sci.substr(0, e)) if (c != '.') digits.push_back(c);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  bool use_exp;
  if (fmt == 'e' || fmt == 'E') {
    use_exp = true;
  } else if (fmt == 'f' || fmt == 'F') {
    use_exp = false;
  } else {
    // strconv: shortest %g uses %e when exp < -4 || exp >= 6.
    int eprec = 6;
    use_exp = exp < -4 || exp >= eprec;
  }
  std::string out = neg ? "-" : "";
  if (use_exp) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += (fmt == 'E' || fmt == 'G') ? 'E' : 'e';
    out += exp < 0 ? '-' : '+';
    int ae = exp < 0 ? -exp : exp;
    if (ae < 10) out += '0';
    out += std::to_string(ae);
  } else if (exp < 0) {
    out += "0." + std::string(-exp - 1, '0') + digits;
  } else if (static_cast<int>(digits.size()) <= exp + 1) {
    out += digits + std::string(exp + 1 - digits.size(), '0');
  } else {
    out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
  }
  return out;
}

}  // namespace

std::string FormatFloat(double f, char fmt, int prec) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  char buf[512];
  if (prec < 0) {
    // Shortest round-trip digits, then Go's layout rules.
    auto r = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    return LayoutShortest(std::string_view(buf, static_cast<size_t>(r.ptr - buf)), fmt);
  }
  char cfmt[32];
  std::snprintf(cfmt, sizeof cfmt, "%%.%d%c", prec, fmt == 'F' ? 'f' : fmt);
  std::snprintf(buf, sizeof buf, cfmt, f);
  return GoExponent(buf);
}

// Shortest float32 digits; exponent form when the exponent is < -4 or >= 6.
std::string FormatFloat32G(double v) {
  if (std::isnan(v)) return "NaN";
  float f = static_cast<float>(v);
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  if (f == 0) return std::signbit(f) ? "-0" : "0";
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  return LayoutShortest(buf, 'g');
}

void AppendUtf8(std::string* out, char32_t r) {
  if (r < 0x80) {
    out->push_back(static_cast<char>(r));
  } else if (r < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (r >> 6)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else if (r < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (r >> 12)));
    out->push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (r >> 18)));
    out->push_back(static_cast<char>(0x80 | ((r >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  }
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t sz;
    int32_t r = DecodeRune(s, i, &sz);
    if (r < 0) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[(static_cast<unsigned char>(s[i]) >> 4) & 0xF]);
      out.push_back(kHex[static_cast<unsigned char>(s[i]) & 0xF]);
    } else {
      QuoteRuneInto(&out, r, '"');
    }
    i += sz;
  }
  out += "\"";
  return out;
}

namespace {

void FmtFloat(std::string* out, double f, char verb, const Spec& sp) {
  std::string s;
  char v = verb == 'v' ? 'g' : verb;
  if ((v == 'g' || v == 'G') && !sp.has_prec) {
    s = FormatFloat(f, v, -1);
  } else {
    int prec = sp.has_prec ? sp.prec : 6;
    if (std::isnan(f) || std::isinf(f)) {
      s = FormatFloat(f, 'g', -1);
    } else {
      char cfmt[32];
      std::snprintf(cfmt, sizeof cfmt, "%%%s.%d%c", sp.sharp ? "#" : "", prec, v == 'F' ? 'f' : v);
      char buf[512];
      std::snprintf(buf, sizeof buf, cfmt, f);
      s = buf;
    }
  }
  if (s[0] != '-' && s[0] != '+') {
    if (sp.plus) s = "+" + s;
    else if (sp.space) s = " " + s;
  } else if (s[0] == '+' && !sp.plus) {
    // +Inf keeps its sign only with the + flag... Go prints +Inf for %v.
    if (!(std::isinf(f))) s.erase(0, 1);
  }
  if (std::isinf(f) || std::isnan(f)) {
    Spec nz = sp;
    nz.zero = false;
    Pad(out, s, nz);
    return;
  }
  PadNumber(out, std::move(s), sp);
}

void PrintValue(std::string* out, const Value& v, char verb, const Spec& sp, int depth);

void BadVerb(std::string* out, const Value& v, char verb) {
  *out += "%!";
  AppendRune(out, static_cast<unsigned char>(verb));
  *out += "(";
  if (v.is_nil()) {
    *out += "<nil>";
  } else {
    *out += v.TypeName();
    *out += "=";
    PrintValue(out, v, 'v', Spec{}, 0);
  }
  *out += ")";
}

void FmtString(std::string* out, const std::string& str, char verb, const Spec& sp) {
  std::string_view s = str;
  switch (verb) {
    case 'v':
    case 's': {
      if (sp.has_prec) {
        size_t i = 0;
        int n = 0;
        while (i < s.size() && n < sp.prec) {
          size_t sz;
          DecodeRune(s, i, &sz);
          i += sz;
          ++n;
        }
        s = s.substr(0, i);
      }
      Pad(out, s, sp);
      return;
    }
    case 'q': {
      if (sp.sharp && s.find('`') == std::string_view::npos && s.find('\n') == std::string_view::npos) {
        Pad(out, "`" + std::string(s) + "`", sp);
        return;
      }
      Pad(out, Quote(s), sp);
      return;
    }
    case 'x':
    case 'X': {
      const char* digits = verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      std::string h;
      size_t n = sp.has_prec ? std::min<size_t>(sp.prec, s.size()) : s.size();
      for (size_t i = 0; i < n; ++i) {
        if (sp.space && i > 0) h += ' ';
        if (sp.sharp && (sp.space || i == 0)) h += verb == 'X' ? "0X" : "0x";
        unsigned char c = s[i];
        h += digits[c >> 4];
        h += digits[c & 0xF];
      }
      Pad(out, h, sp);
      return;
    }
  }
}

void PrintValue(std::string* out, const Value& v, char verb, const Spec& sp, int depth) {
  if (depth > 100) {
    *out += "...";
    return;
  }
  switch (v.kind()) {
    case Kind::kNil:
      if (verb == 'v') {
        Pad(out, "<nil>", sp);
      } else {
        BadVerb(out, v, verb);
      }
      return;
    case Kind::kBool:
      if (verb == 'v' || verb == 't') {
        Pad(out, v.as_bool() ? "true" : "false", sp);
      } else {
        BadVerb(out, v, verb);
      }
      return;
    case Kind::kInt:
    case Kind::kInt64:
      switch (verb) {
        case 'v': case 'd': case 'x': case 'X': case 'o': case 'O': case 'b':
          FmtInt(out, v.as_int(), verb == 'v' ? 'd' : verb, sp);
          return;
        case 'c': {
          std::string s;
          AppendRune(&s, static_cast<int32_t>(v.as_int()));
          Pad(out, s, sp);
          return;
        }
        case 'q': {
          std::string s = "'";
          QuoteRuneInto(&s, static_cast<int32_t>(v.as_int()), '\'');
          s += "'";
          Pad(out, s, sp);
          return;
        }
        case 'U': {
          std::string h = IntDigits(static_cast<uint64_t>(v.as_int()), 16, true);
          while (h.size() < 4) h.insert(h.begin(), '0');
          Pad(out, "U+" + h, sp);
          return;
        }
        default:
          BadVerb(out, v, verb);
          return;
      }
    case Kind::kFloat64:
      switch (verb) {
        case 'v': case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
          FmtFloat(out, v.as_float(), verb, sp);
          return;
        default:
          BadVerb(out, v, verb);
          return;
      }
    case Kind::kString:
      if (verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
        FmtString(out, v.as_string(), verb, sp);
      } else {
        BadVerb(out, v, verb);
      }
      return;
    case Kind::kBytes:
      if (verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
        FmtString(out, v.as_string(), verb, sp);
        return;
      }
      {
        std::string s = "[";
        const std::string& b = v.as_string();
        for (size_t i = 0; i < b.size(); ++i) {
          if (i) s += ' ';
          FmtInt(&s, static_cast<unsigned char>(b[i]), verb == 'v' ? 'd' : verb, Spec{});
        }
        s += "]";
        Pad(out, s, sp);
      }
      return;
    case Kind::kSlice: {
      *out += "[";
      bool first = true;
      for (const Value& e : v.as_list()) {
        if (!first) *out += ' ';
        first = false;
        PrintValue(out, e, verb, sp, depth + 1);
      }
      *out += "]";
      return;
    }
    case Kind::kMap: {
      *out += "map[";
      bool first = true;
      for (const auto& [k, e] : v.as_map()) {
        if (!first) *out += ' ';
        first = false;
        FmtString(out, k, verb == 'v' || verb == 's' ? verb : 'v', sp);
        *out += ':';
        PrintValue(out, e, verb, sp, depth + 1);
      }
      *out += "]";
      return;
    }
    case Kind::kObject: {
      double re, im;
      if (AsComplex(v, &re, &im)) {
        // fmtComplex: each part formatted as a float, the imaginary one signed.
        // The verbs the float path formats (strchr would also match '\0').
        if (verb == '\0' || !std::strchr("vgGfFeE", verb)) {
          BadVerb(out, v, verb);
          return;
        }
        char fv = verb == 'v' ? 'g' : verb;
        *out += '(';
        FmtFloat(out, re, fv, sp);
        Spec signed_sp = sp;
        signed_sp.plus = true;
        FmtFloat(out, im, fv, signed_sp);
        *out += "i)";
        return;
      }
      int64_t iv;
      if (v.as_object()->IntValue(&iv) && verb != '\0' && std::strchr("dxXobc", verb)) {
        PrintValue(out, Value::Int(iv), verb, sp, depth);
        return;
      }
      // Stringers (time.Time, *semver.Version) print their String() for
      // the string verbs.
      const std::string s = v.as_object()->Format();
      if (verb == 's' || verb == 'q' || verb == 'x' || verb == 'X') {
        FmtString(out, s, verb, sp);
      } else {
        Pad(out, s, sp);
      }
      return;
    }
    case Kind::kFunc:
      Pad(out, "0x1", sp);
      return;
  }
}

std::string TypeString(const Value& v) { return v.TypeName(); }

// %#v: Go-syntax representation.
void GoSyntax(std::string* out, const Value& v, bool in_iface, int depth) {
  if (depth > 100) {
    *out += "...";
    return;
  }
  switch (v.kind()) {
    case Kind::kNil: *out += in_iface ? "interface {}(nil)" : "<nil>"; return;
    case Kind::kBool: *out += v.as_bool() ? "true" : "false"; return;
    case Kind::kInt:
    case Kind::kInt64: *out += std::to_string(v.as_int()); return;
    case Kind::kFloat64: *out += FormatFloat(v.as_float(), 'g', -1); return;
    case Kind::kString: *out += Quote(v.as_string()); return;
    case Kind::kSlice: {
      *out += v.TypeName() + "{";
      bool first = true;
      for (const Value& e : v.as_list()) {
        if (!first) *out += ", ";
        first = false;
        GoSyntax(out, e, true, depth + 1);
      }
      *out += "}";
      return;
    }
    case Kind::kMap: {
      *out += v.TypeName() + "{";
      bool first = true;
      for (const auto& [k, e] : v.as_map()) {
        if (!first) *out += ", ";
        first = false;
        *out += Quote(k) + ":";
        GoSyntax(out, e, true, depth + 1);
      }
      *out += "}";
      return;
    }
    default: PrintValue(out, v, 'v', Spec{}, depth); return;
  }
}

}  // namespace

std::string FormatValue(const Value& v) {
  std::string out;
  PrintValue(&out, v, 'v', Spec{}, 0);
  return out;
}

std::string Sprint(const ValueList& args) {
  std::string out;
  bool prev_string = false;
  for (size_t i = 0; i < args.size(); ++i) {
    bool is_string = args[i].kind() == Kind::kString;
    if (i > 0 && !is_string && !prev_string) out += ' ';
    PrintValue(&out, args[i], 'v', Spec{}, 0);
    prev_string = is_string;
  }
  return out;
}

std::string Sprintln(const ValueList& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out += ' ';
    PrintValue(&out, args[i], 'v', Spec{}, 0);
  }
  out += '\n';
  return out;
}

std::string Sprintf(std::string_view format, const ValueList& args) {
  std::string out;
  size_t argi = 0;
  size_t i = 0;
  const size_t n = format.size();
  while (i < n) {
    size_t pct = format.find('%', i);
    if (pct == std::string_view::npos) {
      out += format.substr(i);
      break;
    }
    out += format.substr(i, pct - i);
    i = pct + 1;
    if (i >= n) {
      out += "%!(NOVERB)";
      break;
    }
    Spec sp;
    for (; i < n; ++i) {
      char c = format[i];
      if (c == '-') { sp.minus = true; sp.zero = false; }
      else if (c == '+') sp.plus = true;
      else if (c == ' ') sp.space = true;
      else if (c == '0') sp.zero = !sp.minus;
      else if (c == '#') sp.sharp = true;
      else break;
    }
    auto take_num = [&](int* dst) {
      bool any = false;
      int v = 0;
      while (i < n && format[i] >= '0' && format[i] <= '9') {
        if (v > 1000000) {  // Go's parsenum: an overlong number swallows the rest
          i = n;
          *dst = 0;
          return false;
        }
        v = v * 10 + (format[i] - '0');
        ++i;
        any = true;
      }
      *dst = v;
      return any;
    };
    if (i < n && format[i] == '*') {
      ++i;
      // Go's intFromArg: a width beyond 1e6 is not an int.
      if (argi < args.size() && args[argi].is_int() && std::abs(args[argi].as_int()) <= 1000000) {
        int64_t w = args[argi].as_int();
        sp.has_width = true;
        if (w < 0) { sp.minus = true; sp.zero = false; w = -w; }
        sp.width = static_cast<int>(std::min<int64_t>(w, 1000000));
      } else {
        out += "%!(BADWIDTH)";
      }
      ++argi;
    } else {
      sp.has_width = take_num(&sp.width);
    }
    if (i < n && format[i] == '.') {
      ++i;
      sp.has_prec = true;
      if (i < n && format[i] == '*') {
        ++i;
        if (argi < args.size() && args[argi].is_int() && std::abs(args[argi].as_int()) <= 1000000) {
          int64_t p = args[argi].as_int();
          if (p < 0) { sp.has_prec = false; p = 0; }
          sp.prec = static_cast<int>(std::min<int64_t>(p, 1000000));
        } else {
          out += "%!(BADPREC)";
        }
        ++argi;
      } else {
        take_num(&sp.prec);
      }
    }
    if (i >= n) {
      out += "%!(NOVERB)";
      break;
    }
    size_t vsz;
    int32_t verb_r = DecodeRune(format, i, &vsz);
    i += vsz;
    char verb = verb_r >= 0 && verb_r < 128 ? static_cast<char>(verb_r) : '?';
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (argi >= args.size()) {
      out += "%!";
      AppendRune(&out, verb_r);
      out += "(MISSING)";
      continue;
    }
    const Value& arg = args[argi++];
    if (verb == 'T') {
      Pad(&out, TypeString(arg), sp);
      continue;
    }
    if (verb == 'p') {
      BadVerb(&out, arg, verb);
      continue;
    }
    // %+v and %#v: no structs here, so + only matters for numbers' sign.
    if (verb == 'v' && (arg.kind() == Kind::kInt || arg.kind() == Kind::kInt64 ||
                        arg.kind() == Kind::kFloat64)) {
      PrintValue(&out, arg, 'v', sp, 0);
      continue;
    }
    if (verb == 'v' && sp.sharp) {
      std::string g;
      GoSyntax(&g, arg, false, 0);
      Pad(&out, g, Spec{});
      continue;
    }
    if (verb == 'v') {
      Spec s2 = sp;
      s2.plus = false;
      PrintValue(&out, arg, 'v', s2, 0);
      continue;
    }
    if (verb_r >= 128) {
      out += "%!";
      AppendRune(&out, verb_r);
      out += "(" + arg.TypeName() + "=" + FormatValue(arg) + ")";
      continue;
    }
    PrintValue(&out, arg, verb, sp, 0);
  }
  if (argi < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = argi; k < args.size(); ++k) {
      if (k > argi) out += ", ";
      out += args[k].is_nil() ? "<nil>" : args[k].TypeName() + "=" + FormatValue(args[k]);
    }
    out += ")";
  }
  return out;
}

}  // namespace eco::helm
