// The rest of Sprig's text functions: case conversions, wrapping and
// abbreviation, decimal float math, merges, slices, URLs, toToml, and the
// must* variants of JSON functions.
#include <gmp.h>

#include <algorithm>
#include <clocale>
#include <cstring>
#include <cmath>
#include <cwctype>
#include <locale.h>
#include <random>

#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
namespace {

using A = ArgType;

// --- Unicode: runes and classes (Go's unicode package via the C.UTF-8 locale)

std::u32string Runes(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    char32_t r = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80) ok = false;
      r = (r << 6) | (d & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(r);
    i += len;
  }
  return out;
}

std::string Utf8(const std::u32string& rs) {
  std::string out;
  for (char32_t r : rs) AppendUtf8(&out, r);
  return out;
}

locale_t Utf8Locale() {
  static locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}
bool IsUpper(char32_t r) { return r < 0x80 ? (r >= 'A' && r <= 'Z') : Utf8Locale() && iswupper_l(r, Utf8Locale()); }
bool IsLower(char32_t r) { return r < 0x80 ? (r >= 'a' && r <= 'z') : Utf8Locale() && iswlower_l(r, Utf8Locale()); }
bool IsLetter(char32_t r) { return r < 0x80 ? std::isalpha(static_cast<int>(r)) != 0 : Utf8Locale() && iswalpha_l(r, Utf8Locale()); }
bool IsDigit(char32_t r) { return r < 0x80 ? (r >= '0' && r <= '9') : Utf8Locale() && iswdigit_l(r, Utf8Locale()); }
bool IsUnicodeSpace(char32_t r) {
  switch (r) {
    case ' ': case '\t': case '\n': case '\v': case '\f': case '\r': case 0x85: case 0xA0: return true;
    default: return r > 0xFF && Utf8Locale() && iswspace_l(r, Utf8Locale());
  }
}
bool IsPunct(char32_t r) {
  // Go's unicode.IsPunct is category P only; ASCII symbols such as $+<=>^`|~ are not.
  if (r < 0x80) return std::ispunct(static_cast<int>(r)) && !std::strchr("$+<=>^`|~", static_cast<int>(r));
  return Utf8Locale() && iswpunct_l(r, Utf8Locale()) && !iswalnum_l(r, Utf8Locale());
}
char32_t ToUpper(char32_t r) { return r < 0x80 ? static_cast<char32_t>(std::toupper(static_cast<int>(r))) : Utf8Locale() ? towupper_l(r, Utf8Locale()) : r; }
char32_t ToLower(char32_t r) { return r < 0x80 ? static_cast<char32_t>(std::tolower(static_cast<int>(r))) : Utf8Locale() ? towlower_l(r, Utf8Locale()) : r; }

// --- xstrings (huandu/xstrings 1.3.3) case conversions

bool IsConnector(char32_t r) { return r == '-' || r == '_' || IsUnicodeSpace(r); }
bool IsAlphabet(char32_t r) {
  if (!IsLetter(r)) return false;
  return !(r >= 0x4E00 && r <= 0x9FCC) && !(r >= 0x3400 && r <= 0x4DB5) && !(r >= 0x20000 && r <= 0x2A6D6);
}

std::string CamelCase(std::string_view s) {
  std::u32string in = Runes(s), out;
  size_t i = 0;
  char32_t r0 = 0, r1;
  bool got = false;
  for (; i < in.size();) {
    r0 = in[i++];
    got = true;
    if (!IsConnector(r0)) {
      r0 = ToUpper(r0);
      break;
    }
    out.push_back(r0);
  }
  if (i >= in.size()) {
    // One rune, or only connectors: xstrings writes the last rune again.
    if (got) out.push_back(r0);
    return Utf8(out);
  }
  for (; i < in.size();) {
    r1 = r0;
    r0 = in[i++];
    if (IsConnector(r0) && IsConnector(r1)) {
      out.push_back(r1);
      continue;
    }
    if (IsConnector(r1)) {
      r0 = ToUpper(r0);
    } else {
      r0 = ToLower(r0);
      out.push_back(r1);
    }
  }
  out.push_back(r0);
  return Utf8(out);
}

enum class WordType { kInvalid, kNumber, kUpper, kAlphabet, kConnector, kPunct, kOther };

struct Word {
  WordType type = WordType::kInvalid;
  std::u32string text;
};

// xstrings' nextWord over runes.
Word NextWord(const std::u32string& s, size_t* pos) {
  Word w;
  size_t start = *pos, p = *pos;
  if (p >= s.size()) return w;
  char32_t r = s[p++];
  auto take_while = [&](auto pred) {
    while (p < s.size() && pred(s[p])) ++p;
  };
  if (IsConnector(r)) {
    w.type = WordType::kConnector;
    take_while(IsConnector);
  } else if (IsPunct(r)) {
    w.type = WordType::kPunct;
    take_while(IsPunct);
  } else if (IsUpper(r)) {
    w.type = WordType::kUpper;
    if (p < s.size()) {
      if (IsUpper(s[p])) {
        take_while(IsUpper);
        // "HTTPStatus": the last upper letter starts the next word.
        if (p < s.size() && IsAlphabet(s[p])) --p;
      } else if (IsAlphabet(s[p])) {
        take_while([](char32_t c) { return IsAlphabet(c) && !IsUpper(c); });
      }
    }
  } else if (IsAlphabet(r)) {
    w.type = WordType::kAlphabet;
    take_while([](char32_t c) { return IsAlphabet(c) && !IsUpper(c); });
  } else if (IsDigit(r)) {
    w.type = WordType::kNumber;
    take_while(IsDigit);
  } else {
    w.type = WordType::kOther;
    take_while([](char32_t c) { return !(IsConnector(c) || IsAlphabet(c) || IsDigit(c) || IsPunct(c)); });
  }
  w.text = s.substr(start, p - start);
  *pos = p;
  return w;
}

void LowerInto(std::u32string* out, const Word& w, char32_t connector) {
  if (w.type != WordType::kUpper && w.type != WordType::kConnector) {
    *out += w.text;
    return;
  }
  for (char32_t r : w.text) out->push_back(IsConnector(r) ? connector : IsUpper(r) ? ToLower(r) : r);
}

std::string CamelToLower(std::string_view str, char32_t connector) {
  if (str.empty()) return "";
  std::u32string s = Runes(str), out;
  size_t pos = 0;
  Word w = NextWord(s, &pos);
  using W = WordType;
  while (pos < s.size()) {
    if (w.type != W::kConnector) LowerInto(&out, w, connector);
    Word prev = w;
    w = NextWord(s, &pos);
    switch (prev.type) {
      case W::kNumber:
        while (w.type == W::kAlphabet || w.type == W::kNumber) {
          LowerInto(&out, w, connector);
          w = NextWord(s, &pos);
        }
        if (w.type != W::kInvalid && w.type != W::kPunct && w.type != W::kConnector) out.push_back(connector);
        break;
      case W::kConnector: LowerInto(&out, prev, connector); break;
      case W::kPunct: break;
      default: {
        if (w.type != W::kNumber) {
          if (w.type != W::kConnector && w.type != W::kPunct) out.push_back(connector);
          break;
        }
        if (pos >= s.size()) break;
        Word last = w;
        w = NextWord(s, &pos);
        if (w.type != W::kAlphabet) {
          last.type = W::kNumber;
          LowerInto(&out, last, connector);
          if (w.type != W::kConnector && w.type != W::kPunct) out.push_back(connector);
          break;
        }
        out.push_back(connector);
        last.type = W::kNumber;
        LowerInto(&out, last, connector);
        while (w.type == W::kAlphabet || w.type == W::kNumber) {
          LowerInto(&out, w, connector);
          w = NextWord(s, &pos);
        }
        if (w.type != W::kInvalid && w.type != W::kConnector && w.type != W::kPunct) out.push_back(connector);
      }
    }
  }
  LowerInto(&out, w, connector);
  return Utf8(out);
}

// --- goutils (Masterminds/goutils 1.1.1)

// AbbreviateFull; empty on its "illegal argument" errors, as Sprig ignores them.
std::string AbbreviateFull(const std::string& s, int64_t offset, int64_t width) {
  int64_t n = static_cast<int64_t>(s.size());
  if (s.empty() || width < 4) return "";
  if (n <= width) return s;
  if (offset > n) offset = n;
  if (n - offset < width - 3) offset = n - (width - 3);
  if (offset <= 4) return s.substr(0, width - 3) + "...";
  if (width < 7) return "";
  if (offset + width - 3 < n) return "..." + AbbreviateFull(s.substr(offset), 0, width - 3);
  return "..." + s.substr(n - (width - 3));
}

std::string WrapCustom(const std::string& s, int64_t width, std::string nl, bool wrap_long) {
  if (s.empty()) return "";
  if (nl.empty()) nl = "\n";
  if (width < 1) width = 1;
  size_t w = static_cast<size_t>(std::min<int64_t>(width, 1 << 30));
  size_t n = s.size(), off = 0;
  std::string out;
  while (n - off > w) {
    if (s[off] == ' ') {
      ++off;
      continue;
    }
    size_t sp = s.substr(off, w + 1).rfind(' ');
    if (sp != std::string::npos) {
      out += s.substr(off, sp) + nl;
      off += sp + 1;
    } else if (wrap_long) {
      out += s.substr(off, w) + nl;
      off += w;
    } else {
      size_t idx = s.find(' ', off + w);
      if (idx == std::string::npos) {
        out += s.substr(off);
        off = n;
      } else {
        out += s.substr(off, idx - off) + nl;
        off = idx + 1;
      }
    }
  }
  out += s.substr(off);
  return out;
}

// --- decimal arithmetic (shopspring/decimal, as Sprig's addf/subf/mulf/divf)

// A decimal coef * 10^exp; GMP holds the coefficient (no packaged decimal type).
struct Decimal {
  mpz_t coef;
  long exp = 0;
  Decimal() { mpz_init(coef); }
  ~Decimal() { mpz_clear(coef); }
  Decimal(const Decimal&) = delete;
  Decimal& operator=(const Decimal&) = delete;
};

// decimal.NewFromFloat: the shortest decimal that reads back as f.
void FromFloat(double f, Decimal* d) {
  std::string s = FormatFloat(f, 'e', -1);  // -d.ddde±XX
  size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  long exp = std::stol(s.substr(e + 1));
  size_t dot = mant.find('.');
  if (dot != std::string::npos) {
    exp -= static_cast<long>(mant.size() - dot - 1);
    mant.erase(dot, 1);
  }
  mpz_set_str(d->coef, mant.c_str(), 10);
  d->exp = exp;
}

void Pow10(mpz_t out, unsigned long n) { mpz_ui_pow_ui(out, 10, n); }

// Brings a and b to the smaller exponent.
void Align(Decimal* a, Decimal* b) {
  mpz_t p;
  mpz_init(p);
  if (a->exp > b->exp) {
    Pow10(p, a->exp - b->exp);
    mpz_mul(a->coef, a->coef, p);
    a->exp = b->exp;
  } else if (b->exp > a->exp) {
    Pow10(p, b->exp - a->exp);
    mpz_mul(b->coef, b->coef, p);
    b->exp = a->exp;
  }
  mpz_clear(p);
}

double ToDouble(const Decimal& d) {
  char* digits = mpz_get_str(nullptr, 10, d.coef);
  std::string s = std::string(digits) + "e" + std::to_string(d.exp);
  void (*freefunc)(void*, size_t);
  mp_get_memory_functions(nullptr, nullptr, &freefunc);
  freefunc(digits, std::strlen(digits) + 1);
  return std::strtod(s.c_str(), nullptr);
}

enum class DecOp { kAdd, kSub, kMul, kDiv };

Result<Value> DecimalOp(const Value& first, const ValueList& rest, DecOp op) {
  auto check = [](double f) -> Status {
    if (std::isnan(f)) return Invalid("Cannot create a Decimal from NaN");
    if (std::isinf(f)) return Invalid("Cannot create a Decimal from " + std::string(f > 0 ? "+Inf" : "-Inf"));
    return {};
  };
  Decimal acc;
  double f0 = funcs_internal::ToFloat64(first);
  ECO_RETURN_IF_ERROR(check(f0));
  FromFloat(f0, &acc);
  for (const Value& v : rest) {
    double f = funcs_internal::ToFloat64(v);
    ECO_RETURN_IF_ERROR(check(f));
    Decimal x;
    FromFloat(f, &x);
    switch (op) {
      case DecOp::kAdd: Align(&acc, &x); mpz_add(acc.coef, acc.coef, x.coef); break;
      case DecOp::kSub: Align(&acc, &x); mpz_sub(acc.coef, acc.coef, x.coef); break;
      case DecOp::kMul:
        mpz_mul(acc.coef, acc.coef, x.coef);
        acc.exp += x.exp;
        break;
      case DecOp::kDiv: {
        if (mpz_sgn(x.coef) == 0) return Invalid("decimal division by 0");
        // Quotient rounded half away from zero to 16 places (DivisionPrecision).
        long k = acc.exp - x.exp + 16;
        mpz_t num, den, q, r, p;
        mpz_inits(num, den, q, r, p, nullptr);
        mpz_set(num, acc.coef);
        mpz_set(den, x.coef);
        if (k >= 0) {
          Pow10(p, k);
          mpz_mul(num, num, p);
        } else {
          Pow10(p, -k);
          mpz_mul(den, den, p);
        }
        int sign = mpz_sgn(num) * mpz_sgn(den);
        mpz_abs(num, num);
        mpz_abs(den, den);
        mpz_tdiv_qr(q, r, num, den);
        mpz_mul_ui(r, r, 2);
        if (mpz_cmp(r, den) >= 0) mpz_add_ui(q, q, 1);
        if (sign < 0) mpz_neg(q, q);
        mpz_set(acc.coef, q);
        acc.exp = -16;
        mpz_clears(num, den, q, r, p, nullptr);
        break;
      }
    }
  }
  return Value::Float(ToDouble(acc));
}

// --- mergo (imdario/mergo 0.3.12) over map[string]interface{}

// mergo's isEmptyValue.
bool MergoEmpty(const Value& v) {
  switch (v.kind()) {
    case Kind::kNil: return true;
    case Kind::kBool: return !v.as_bool();
    case Kind::kInt:
    case Kind::kInt64: return v.as_int() == 0;
    case Kind::kFloat64: return v.as_float() == 0;
    case Kind::kString:
    case Kind::kBytes: return v.as_string().empty();
    case Kind::kSlice: return v.as_list().empty();
    case Kind::kMap: return v.as_map().empty();
    default: return false;
  }
}

// Merges src into the map dst in place (Go maps are shared references).
void MergeInto(ValueMap* dst, const ValueMap& src, bool overwrite, int depth) {
  if (depth > 10000) return;
  bool dst_was_empty = dst->empty();
  for (const auto& [key, se] : src) {
    auto it = dst->find(key);
    bool has = it != dst->end();
    if (se.is_nil()) {
      if (overwrite) dst->insert_or_assign(key, Value::NilInterface());
      continue;
    }
    if (se.kind() == Kind::kMap) {
      if (has && it->second.kind() == Kind::kMap) {
        if (ValueMap* inner = it->second.mutable_map()) MergeInto(inner, se.as_map(), overwrite, depth + 1);
      }
    } else if (se.kind() == Kind::kSlice) {
      // mergo replaces the slice only when overwriting or when the whole
      // destination map was empty; it never appends.
      if (overwrite || dst_was_empty) dst->insert_or_assign(key, se);
      it = dst->find(key);
    }
    if (has && !MergoEmpty(it->second) && (se.kind() == Kind::kMap || se.kind() == Kind::kSlice)) continue;
    if (overwrite || !has || MergoEmpty(it->second)) dst->insert_or_assign(key, se);
  }
}

// --- net/url

bool ShouldEscape(unsigned char c, char mode) {
  if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') return false;
  switch (mode) {
    case 'p':  // path
      return !std::strchr("$&+,/:;=@", c) || c == 0;
    case 'f':  // fragment
      return !std::strchr("$&+,/:;=?@!()*", c) || c == 0;
    case 'u':  // user info
      return !std::strchr("$&+,;=!'()*", c) || c == 0;
    case 'h':  // host
      return !std::strchr("!$&'()*+,;=:[]<>\"", c) || c == 0;
  }
  return true;
}

std::string Escape(std::string_view s, char mode) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (mode == 'h' && c >= 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (ShouldEscape(c, mode)) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

Result<std::string> Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      std::string_view bad = s.substr(i, 3);
      return Invalid("invalid URL escape " + Quote(bad));
    }
    out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

struct Url {
  std::string scheme, opaque, user, host, path, raw_query, fragment;
  bool has_user = false;
};

// url.Parse for the parts Sprig reads.
Result<Url> ParseUrl(std::string_view raw) {
  Url u;
  std::string_view rest = raw;
  size_t hash = rest.find('#');
  if (hash != std::string_view::npos) {
    auto f = Unescape(rest.substr(hash + 1));
    if (!f.ok()) return Invalid("parse " + Quote(raw) + ": " + f.status().message());
    u.fragment = *f;
    rest = rest.substr(0, hash);
  }
  // Scheme: a letter, then letters, digits, + - . up to ':'.
  for (size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    if (std::isalpha(static_cast<unsigned char>(c))) continue;
    if (i > 0 && (std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) continue;
    if (c == ':') {
      if (i == 0) return Invalid("parse " + Quote(raw) + ": missing protocol scheme");
      u.scheme = std::string(rest.substr(0, i));
      for (char& ch : u.scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      rest = rest.substr(i + 1);
    }
    break;
  }
  size_t q = rest.find('?');
  if (q != std::string_view::npos) {
    u.raw_query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  if (!rest.empty() && rest[0] != '/' && !u.scheme.empty()) {
    u.opaque = std::string(rest);
    return u;
  }
  if (rest.substr(0, 2) == "//" && (!u.scheme.empty() || true)) {
    rest = rest.substr(2);
    size_t slash = rest.find('/');
    std::string_view auth = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    size_t at = auth.rfind('@');
    if (at != std::string_view::npos) {
      u.has_user = true;
      u.user = std::string(auth.substr(0, at));
      for (unsigned char ch : u.user) {
        if (!(std::isalnum(ch) || std::strchr("-._~!$&'()*+,;=:%@", ch)) || ch == 0)
          return Invalid("parse " + Quote(raw) + ": net/url: invalid userinfo");
      }
      auth = auth.substr(at + 1);
    }
    auto h = Unescape(auth);
    if (!h.ok()) return Invalid("parse " + Quote(raw) + ": " + h.status().message());
    u.host = *h;
  }
  auto p = Unescape(rest);
  if (!p.ok()) return Invalid("parse " + Quote(raw) + ": " + p.status().message());
  u.path = *p;
  return u;
}

// url.URL.String.
std::string UrlString(const Url& u) {
  std::string out;
  if (!u.scheme.empty()) out += u.scheme + ":";
  if (!u.opaque.empty()) {
    out += u.opaque;
  } else {
    if (!u.scheme.empty() || !u.host.empty() || u.has_user) {
      if (!u.host.empty() || !u.path.empty() || u.has_user) out += "//";
      if (u.has_user) out += u.user + "@";
      if (!u.host.empty()) out += Escape(u.host, 'h');
    }
    std::string path = Escape(u.path, 'p');
    if (!path.empty() && path[0] != '/' && !u.host.empty()) out += '/';
    if (out.empty()) {
      size_t colon = path.find(':'), slash = path.find('/');
      if (colon != std::string::npos && (slash == std::string::npos || colon < slash)) out += "./";
    }
    out += path;
  }
  if (!u.raw_query.empty()) out += "?" + u.raw_query;
  if (!u.fragment.empty()) out += "#" + Escape(u.fragment, 'f');
  return out;
}

// Userinfo.String: the user name (and password) escaped.
std::string UserString(const std::string& raw_user) {
  size_t colon = raw_user.find(':');
  auto un = Unescape(raw_user.substr(0, colon));
  std::string user = un.ok() ? *un : raw_user.substr(0, colon);
  std::string out = Escape(user, 'u');
  if (colon != std::string::npos) {
    auto pw = Unescape(raw_user.substr(colon + 1));
    out += ":" + Escape(pw.ok() ? *pw : raw_user.substr(colon + 1), 'u');
  }
  return out;
}

// --- toToml (BurntSushi/toml 1.2.0 encoder, as Helm's toToml)

std::string TomlQuote(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

std::string TomlKey(const std::string& k) {
  if (k.empty()) return "\"\"";
  for (char c : k)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return TomlQuote(k);
  return k;
}

struct TomlEncoder {
  std::string out;
  bool written = false;
  std::string error;

  void W(const std::string& s) {
    out += s;
    written = true;
  }
  void Newline() {
    if (written) W("\n");
  }
  static bool IsTable(const Value& v) {
    if (v.kind() == Kind::kMap) return true;
    return IsTableArray(v);
  }
  static bool IsTableArray(const Value& v) {
    if (v.kind() != Kind::kSlice || v.as_list().empty()) return false;
    for (const Value& e : v.as_list())
      if (e.kind() != Kind::kMap) return false;
    return true;
  }
  std::string KeyString(const std::vector<std::string>& key) {
    std::string s;
    for (size_t i = 0; i < key.size(); ++i) s += (i ? "." : "") + TomlKey(key[i]);
    return s;
  }
  std::string IndentStr(const std::vector<std::string>& key) {
    std::string s;
    for (size_t i = 1; i < key.size(); ++i) s += "  ";
    return s;
  }
  bool Element(const Value& v) {
    switch (v.kind()) {
      case Kind::kString: W(TomlQuote(v.as_string())); return true;
      case Kind::kBool: W(v.as_bool() ? "true" : "false"); return true;
      case Kind::kInt:
      case Kind::kInt64: W(std::to_string(v.as_int())); return true;
      case Kind::kFloat64: {
        double f = v.as_float();
        if (std::isnan(f)) {
          W("nan");
        } else if (std::isinf(f)) {
          W(f < 0 ? "-inf" : "+inf");
        } else {
          std::string s = FormatFloat(f, 'f', -1);
          if (s.find('.') == std::string::npos) s += ".0";
          W(s);
        }
        return true;
      }
      case Kind::kBytes: {
        W("[");
        const std::string& b = v.as_string();
        for (size_t i = 0; i < b.size(); ++i) W((i ? ", " : "") + std::to_string(static_cast<unsigned char>(b[i])));
        W("]");
        return true;
      }
      case Kind::kSlice: {
        W("[");
        const ValueList& l = v.as_list();
        for (size_t i = 0; i < l.size(); ++i) {
          if (!Element(l[i])) return false;
          if (i + 1 != l.size()) W(", ");
        }
        W("]");
        return true;
      }
      case Kind::kMap: return Map({}, v, true);
      case Kind::kObject: W(TomlQuote(v.as_object()->Format())); return true;
      default:
        error = "unexpected type: " + v.TypeName();
        return false;
    }
  }
  bool KeyValue(const std::vector<std::string>& key, const Value& v, bool inline_) {
    if (key.empty()) {
      error = "toml: top-level values must be Go maps or structs";
      return false;
    }
    W(IndentStr(key) + TomlKey(key.back()) + " = ");
    if (!Element(v)) return false;
    if (!inline_) Newline();
    return true;
  }
  bool Encode(const std::vector<std::string>& key, const Value& v) {
    if (key.size() > 1000) {
      error = "toml: nesting too deep";
      return false;
    }
    switch (v.kind()) {
      case Kind::kNil: return true;
      case Kind::kMap:
        if (key.size() == 1) Newline();
        if (!key.empty()) {
          W(IndentStr(key) + "[" + KeyString(key) + "]");
          Newline();
        }
        return Map(key, v, false);
      case Kind::kSlice:
        if (IsTableArray(v)) {
          if (key.empty()) {
            error = "toml: top-level values must be Go maps or structs";
            return false;
          }
          for (const Value& e : v.as_list()) {
            Newline();
            W(IndentStr(key) + "[[" + KeyString(key) + "]]");
            Newline();
            if (!Map(key, e, false)) return false;
          }
          return true;
        }
        for (const Value& e : v.as_list()) {
          if (e.is_nil()) {
            error = "toml: cannot encode array with nil element";
            return false;
          }
        }
        return KeyValue(key, v, false);
      case Kind::kFunc:
        error = "unsupported type for key '" + KeyString(key) + "': func";
        return false;
      default: return KeyValue(key, v, false);
    }
  }
  bool Map(const std::vector<std::string>& key, const Value& v, bool inline_) {
    std::vector<std::string> direct, sub;
    for (const auto& [k, e] : v.as_map()) (IsTable(e) ? sub : direct).push_back(k);
    if (inline_) W("{");
    auto write = [&](const std::vector<std::string>& keys, bool trail) {
      for (size_t i = 0; i < keys.size(); ++i) {
        const Value& e = v.as_map().find(keys[i])->second;
        if (e.is_nil()) continue;
        if (inline_) {
          if (!KeyValue({keys[i]}, e, true)) return false;
          if (trail || i + 1 != keys.size()) W(", ");
        } else {
          std::vector<std::string> k2 = key;
          k2.push_back(keys[i]);
          if (!Encode(k2, e)) return false;
        }
      }
      return true;
    };
    if (!write(direct, !sub.empty()) || !write(sub, false)) return false;
    if (inline_) W("}");
    return true;
  }
};

// --- Go encoding/json syntax errors, for fromJson's error text

struct JsonChecker {
  std::string_view s;
  size_t i = 0;
  std::string err;

  static std::string Quoted(char c) {
    if (c == '\'') return "'\\''";
    if (c == '"') return "'\"'";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "'\\x%02x'", static_cast<unsigned char>(c));
      return buf;
    }
    return std::string("'") + c + "'";
  }
  // At the end of input Go's scanner steps once more with a space, so an
  // unfinished literal or number reports ' ' rather than the end.
  bool FailAtEofAsSpace(const std::string& context) {
    if (i >= s.size()) {
      err = "invalid character ' ' " + context;
      return false;
    }
    return Fail(context);
  }
  bool Fail(const std::string& context) {
    if (i >= s.size()) {
      err = "unexpected end of JSON input";
    } else {
      err = "invalid character " + Quoted(s[i]) + " " + context;
    }
    return false;
  }
  void Ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool Literal(std::string_view word) {
    for (size_t k = 0; k < word.size(); ++k, ++i) {
      if (i >= s.size() || s[i] != word[k])
        return FailAtEofAsSpace("in literal " + std::string(word) + " (expecting " + Quoted(word[k]) + ")");
    }
    return true;
  }
  bool String() {
    ++i;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        ++i;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return Fail("in string literal");
      if (c == '\\') {
        ++i;
        if (i >= s.size()) return Fail("");
        if (s[i] == 'u') {
          for (int k = 0; k < 4; ++k) {
            ++i;
            if (i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return Fail("in \\u hexadecimal character escape");
          }
        } else if (!std::strchr("\"\\/bfnrt", s[i]) || s[i] == 0) {
          return Fail("in string escape code");
        }
      }
      ++i;
    }
    return Fail("");
  }
  bool Number() {
    if (s[i] == '-') {
      ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return FailAtEofAsSpace("in numeric literal");
    }
    if (s[i] == '0') {
      ++i;
    } else {
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return FailAtEofAsSpace("after decimal point in numeric literal");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return FailAtEofAsSpace("in exponent of numeric literal");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    return true;
  }
  bool Value(int depth) {
    if (depth > 10000) return Fail("exceeded max depth");
    Ws();
    if (i >= s.size()) return Fail("");
    char c = s[i];
    if (c == '{') {
      ++i;
      Ws();
      if (i < s.size() && s[i] == '}') {
        ++i;
        return true;
      }
      for (;;) {
        Ws();
        if (i >= s.size() || s[i] != '"') return Fail("looking for beginning of object key string");
        if (!String()) return false;
        Ws();
        if (i >= s.size() || s[i] != ':') return Fail("after object key");
        ++i;
        if (!Value(depth + 1)) return false;
        Ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == '}') {
          ++i;
          return true;
        }
        return Fail("after object key:value pair");
      }
    }
    if (c == '[') {
      ++i;
      Ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
        return true;
      }
      for (;;) {
        if (!Value(depth + 1)) return false;
        Ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') {
          ++i;
          return true;
        }
        return Fail("after array element");
      }
    }
    if (c == '"') return String();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return Number();
    if (c == 't') return Literal("true");
    if (c == 'f') return Literal("false");
    if (c == 'n') return Literal("null");
    return Fail("looking for beginning of value");
  }
  bool Check() {
    if (!Value(0)) return false;
    Ws();
    if (i < s.size()) return Fail("after top-level value");
    return true;
  }
};

}  // namespace

namespace funcs_internal {

std::string GoJsonSyntaxError(std::string_view text) {
  JsonChecker c;
  c.s = text;
  if (c.Check()) return "";
  return c.err;
}

Result<std::string> ToToml(const Value& v) {
  TomlEncoder enc;
  bool ok;
  if (v.kind() == Kind::kMap) {
    ok = enc.Encode({}, v);
  } else if (v.is_nil()) {
    return Invalid("reflect: call of reflect.Value.Type on zero Value");  // the encoder panics on nil
  } else {
    enc.error = "toml: top-level values must be Go maps or structs";
    ok = false;
  }
  if (!ok) return Invalid(enc.error);
  return enc.out;
}

}  // namespace funcs_internal

void AddMoreFuncs(FuncMap* f) {
  // Here rather than at file scope, where a unity build would carry them into
  // the sources compiled after this one.
  using funcs_internal::Add;
  using funcs_internal::DeepEqual;
  using funcs_internal::GoJsonSyntaxError;
  using funcs_internal::ToFloat64;
  using funcs_internal::ToInt64;
  using funcs_internal::ToJson;
  using funcs_internal::ToToml;
  Add(f, "hello", {}, false, [](CallContext&, const ValueList&) -> Result<Value> { return Value::String("Hello!"); });
  // --- strings
  Add(f, "abbrev", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    if (a[0].as_int() < 4) return a[1];
    return Value::String(AbbreviateFull(a[1].as_string(), 0, a[0].as_int()));
  });
  Add(f, "abbrevboth", {A::kInt, A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    int64_t left = a[0].as_int(), right = a[1].as_int();
    if (right < 4 || (left > 0 && right < 7)) return a[2];
    return Value::String(AbbreviateFull(a[2].as_string(), left, right));
  });
  Add(f, "title", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    // strings.Title: upper-case the first letter of each word.
    std::u32string rs = Runes(a[0].as_string());
    char32_t prev = ' ';
    for (char32_t& r : rs) {
      bool sep;
      if (prev < 0x80) {
        sep = !(std::isalnum(static_cast<int>(prev)) || prev == '_');
      } else {
        sep = IsUnicodeSpace(prev);
      }
      char32_t cur = r;
      if (sep) r = ToUpper(r);
      prev = cur;
    }
    return Value::String(Utf8(rs));
  });
  Add(f, "untitle", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    std::u32string rs = Runes(a[0].as_string());
    bool next = true;
    for (char32_t& r : rs) {
      if (IsUnicodeSpace(r)) {
        next = true;
      } else if (next) {
        r = ToLower(r);
        next = false;
      }
    }
    return Value::String(Utf8(rs));
  });
  Add(f, "initials", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    // goutils reads bytes as runes: multi-byte letters come out as Latin-1.
    std::string out;
    bool gap = true;
    for (unsigned char c : a[0].as_string()) {
      if (IsUnicodeSpace(c)) {
        gap = true;
      } else if (gap) {
        AppendUtf8(&out, c);
        gap = false;
      }
    }
    return Value::String(out);
  });
  Add(f, "swapcase", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    std::u32string rs = Runes(a[0].as_string());
    bool ws = true;
    for (char32_t& r : rs) {
      if (IsUpper(r)) {
        r = ToLower(r);
        ws = false;
      } else if (IsLower(r)) {
        r = ToUpper(r);  // title case equals upper case outside a few digraphs
        ws = false;
      } else {
        ws = IsUnicodeSpace(r);
      }
    }
    (void)ws;
    return Value::String(Utf8(rs));
  });
  Add(f, "shuffle", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    std::u32string rs = Runes(a[0].as_string());
    for (size_t i = rs.size(); i-- > 1;) {
      size_t j = std::uniform_int_distribution<size_t>(0, i)(rng);
      std::swap(rs[i], rs[j]);
    }
    return Value::String(Utf8(rs));
  });
  Add(f, "snakecase", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(CamelToLower(a[0].as_string(), '_'));
  });
  Add(f, "kebabcase", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(CamelToLower(a[0].as_string(), '-'));
  });
  Add(f, "camelcase", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(CamelCase(a[0].as_string()));
  });
  Add(f, "wrap", {A::kInt, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(WrapCustom(a[1].as_string(), a[0].as_int(), "", false));
  });
  Add(f, "wrapWith", {A::kInt, A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(WrapCustom(a[2].as_string(), a[0].as_int(), a[1].as_string(), true));
  });
  f->insert_or_assign("trimall", f->at("trimAll"));
  // --- math
  Add(f, "add1f", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return DecimalOp(a[0], {Value::Int(1)}, DecOp::kAdd);
  });
  Add(f, "addf", {A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
    return DecimalOp(Value::Float(0), a, DecOp::kAdd);
  });
  Add(f, "subf", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
    return DecimalOp(a[0], ValueList(a.begin() + 1, a.end()), DecOp::kSub);
  });
  Add(f, "mulf", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
    return DecimalOp(a[0], ValueList(a.begin() + 1, a.end()), DecOp::kMul);
  });
  Add(f, "divf", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
    return DecimalOp(a[0], ValueList(a.begin() + 1, a.end()), DecOp::kDiv);
  });
  Add(f, "ceil", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::Float(std::ceil(ToFloat64(a[0])));
  });
  Add(f, "floor", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::Float(std::floor(ToFloat64(a[0])));
  });
  Add(f, "round", {A::kAny, A::kInt, A::kFloat64}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
    double round_on = a.size() > 2 ? a[2].as_float() : .5;
    double val = ToFloat64(a[0]);
    double pow = std::pow(10.0, static_cast<double>(a[1].as_int()));
    double digit = pow * val;
    double ip;
    double frac = std::modf(digit, &ip);
    return Value::Float((frac >= round_on ? std::ceil(digit) : std::floor(digit)) / pow);
  });
  Add(f, "toDecimal", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    // strconv.ParseInt(fmt.Sprint(v), 8, 64); errors give 0.
    std::string s = Sprint({a[0]});
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i >= s.size()) return Value::Int64(0);
    uint64_t n = 0;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '7') return Value::Int64(0);
      if (n > (uint64_t{1} << 60)) return Value::Int64(0);
      n = n * 8 + static_cast<uint64_t>(s[i] - '0');
    }
    if (n > (neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1)) return Value::Int64(0);
    return Value::Int64(neg ? static_cast<int64_t>(0 - n) : static_cast<int64_t>(n));
  });
  // --- reflection
  Add(f, "deepEqual", {A::kAny, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::Bool(DeepEqual(a[0], a[1]));
  });
  // --- dicts
  for (bool overwrite : {false, true}) {
    for (bool must : {false, true}) {
      std::string name = overwrite ? (must ? "mustMergeOverwrite" : "mergeOverwrite") : (must ? "mustMerge" : "merge");
      Add(f, name, {A::kMap, A::kMap}, true, [overwrite](CallContext&, const ValueList& a) -> Result<Value> {
        Value dst = a[0];
        if (dst.is_nil()) dst = Value::Map({});
        ValueMap* m = dst.mutable_map();
        for (size_t i = 1; i < a.size() && m; ++i)
          if (a[i].kind() == Kind::kMap) MergeInto(m, a[i].as_map(), overwrite, 0);
        return dst;
      });
    }
  }
  // --- lists
  for (bool must : {false, true}) {
    Add(f, must ? "mustSlice" : "slice", {A::kAny, A::kAny}, true, [](CallContext&, const ValueList& a) -> Result<Value> {
      const Value& l = a[0];
      if (l.is_nil()) return Invalid("runtime error: invalid memory address or nil pointer dereference");
      if (l.kind() != Kind::kSlice && l.kind() != Kind::kBytes)
        return Invalid("list should be type of slice or array but " + l.KindName());
      int64_t n = l.kind() == Kind::kBytes ? static_cast<int64_t>(l.as_string().size())
                                           : static_cast<int64_t>(l.as_list().size());
      if (n == 0) return Value();
      int64_t start = a.size() > 1 ? ToInt64(a[1]) : 0;
      int64_t end = a.size() > 2 ? ToInt64(a[2]) : n;
      // reflect.Value.Slice checks against the capacity, which equals the length here.
      if (start < 0 || end < start || end > n) return Invalid("reflect.Value.Slice: slice index out of bounds");
      if (l.kind() == Kind::kBytes) return Value::Bytes(l.as_string().substr(start, end - start));
      return Value::Slice(ValueList(l.as_list().begin() + start, l.as_list().begin() + end), l.TypeName());
    });
  }
  // --- JSON, must forms
  auto must_json = [f](const char* name, bool html, const char* indent) {
    std::string ind = indent;
    Add(f, name, {A::kAny}, false, [html, ind](CallContext&, const ValueList& a) -> Result<Value> {
      std::string out;
      if (!ToJson(&out, a[0], html, ind, 0)) {
        if (a[0].kind() == Kind::kFloat64 || a[0].is_number())
          return Invalid("json: unsupported value: " + FormatFloat(a[0].as_float(), 'g', -1));
        return Invalid("json: unsupported type: " + a[0].TypeName());
      }
      return Value::String(out);
    });
  };
  must_json("mustToJson", true, "");
  must_json("mustToRawJson", false, "");
  must_json("mustToPrettyJson", true, "  ");
  {
    // fromJson with Go's syntax error text in .Error; mustFromJson fails instead.
    Function plain = f->at("fromJson");
    Add(f, "fromJson", {A::kString}, false, [plain](CallContext& ctx, const ValueList& a) -> Result<Value> {
      std::string err = GoJsonSyntaxError(a[0].as_string());
      if (!err.empty()) {
        ValueMap m;
        m.emplace("Error", Value::String(err));
        return Value::Map(std::move(m));
      }
      return plain.fn(ctx, a);
    });
    Add(f, "mustFromJson", {A::kString}, false, [plain](CallContext& ctx, const ValueList& a) -> Result<Value> {
      std::string err = GoJsonSyntaxError(a[0].as_string());
      if (!err.empty()) return Invalid(err);
      auto r = plain.fn(ctx, a);
      if (!r.ok()) return r;
      if (r->kind() == Kind::kMap && r->as_map().size() == 1 && r->as_map().count("Error") &&
          a[0].as_string().find("\"Error\"") == std::string::npos)
        return Invalid(r->as_map().at("Error").as_string());
      return r;
    });
  }
  // --- URLs
  Add(f, "urlParse", {A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    auto u = ParseUrl(a[0].as_string());
    if (!u.ok()) return Invalid("unable to parse url: " + u.status().message());
    ValueMap m;
    m.emplace("scheme", Value::String(u->scheme));
    m.emplace("host", Value::String(u->host));
    std::string hostname = u->host;
    if (!hostname.empty() && hostname[0] == '[') {
      size_t e = hostname.find(']');
      hostname = hostname.substr(1, e == std::string::npos ? std::string::npos : e - 1);
    } else {
      size_t colon = hostname.rfind(':');
      if (colon != std::string::npos) hostname.resize(colon);
    }
    m.emplace("hostname", Value::String(hostname));
    m.emplace("path", Value::String(u->path));
    m.emplace("query", Value::String(u->raw_query));
    m.emplace("opaque", Value::String(u->opaque));
    m.emplace("fragment", Value::String(u->fragment));
    m.emplace("userinfo", Value::String(u->has_user ? UserString(u->user) : ""));
    return Value::Map(std::move(m));
  });
  Add(f, "urlJoin", {A::kMap}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    Url u;
    const ValueMap empty;
    const ValueMap& d = a[0].is_nil() ? empty : a[0].as_map();
    auto get = [&d](const char* key, std::string* out) -> Status {
      auto it = d.find(key);
      if (it == d.end()) return {};
      if (it->second.kind() != Kind::kString)
        return Invalid(std::string("unable to parse ") + key + " key, must be of type string, but " +
                       it->second.KindName() + " found");
      *out = it->second.as_string();
      return {};
    };
    std::string userinfo;
    ECO_RETURN_IF_ERROR(get("scheme", &u.scheme));
    ECO_RETURN_IF_ERROR(get("host", &u.host));
    ECO_RETURN_IF_ERROR(get("path", &u.path));
    ECO_RETURN_IF_ERROR(get("query", &u.raw_query));
    ECO_RETURN_IF_ERROR(get("opaque", &u.opaque));
    ECO_RETURN_IF_ERROR(get("fragment", &u.fragment));
    ECO_RETURN_IF_ERROR(get("userinfo", &userinfo));
    if (!userinfo.empty()) {
      auto t = ParseUrl("proto://" + userinfo + "@host");
      if (!t.ok()) return Invalid("unable to parse userinfo in dict: " + t.status().message());
      u.has_user = t->has_user;
      u.user = UserString(t->user);
    }
    return Value::String(UrlString(u));
  });
  // --- Helm's toToml: the error text is the output on failure.
  Add(f, "toToml", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    if (a[0].is_nil()) return Invalid("reflect: call of reflect.Value.Type on zero Value");
    auto r = ToToml(a[0]);
    return Value::String(r.ok() ? *r : r.status().message());
  });
}

}  // namespace eco::helm
