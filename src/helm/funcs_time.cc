// Sprig's date functions over a Go time.Time value: Go's layout formatting
// and parsing, durations, and time zones from the system tz database.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "helm/fmt.h"
#include "helm/funcs.h"
#include "helm/funcs_internal.h"

namespace eco::helm {
namespace {

using A = ArgType;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kZeroUnix = -62135596800;  // 0001-01-01T00:00:00Z, Go's zero Time

// --- civil dates (proleptic Gregorian), days relative to 1970-01-01

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = FloorDiv(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int* m, int* d) {
  z += 719468;
  int64_t era = FloorDiv(z, 146097);
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

bool IsLeap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }
int DaysIn(int m, int64_t y) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                         "July",    "August",   "September", "October", "November", "December"};
const char* kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

// --- zones

struct ZoneInfo {
  int offset = 0;  // seconds east of UTC
  std::string abbr;
  bool dst = false;
};

// A POSIX TZ rule ("EST5EDT,M3.2.0,M11.1.0"), as TZif footers carry.
struct PosixRule {
  ZoneInfo std, dst;
  bool has_dst = false;
  struct When {
    char kind = 'M';  // 'M' month.week.day, 'J' julian 1..365 no leap day, 'D' zero-based day
    int m = 0, w = 0, d = 0, n = 0;
    int secs = 7200;
  } start, end;

  static bool Name(std::string_view* s, std::string* out) {
    if (!s->empty() && (*s)[0] == '<') {
      size_t e = s->find('>');
      if (e == std::string_view::npos) return false;
      *out = std::string(s->substr(1, e - 1));
      s->remove_prefix(e + 1);
      return true;
    }
    size_t i = 0;
    while (i < s->size() && std::isalpha(static_cast<unsigned char>((*s)[i]))) ++i;
    if (i < 3) return false;
    *out = std::string(s->substr(0, i));
    s->remove_prefix(i);
    return true;
  }
  static bool Num(std::string_view* s, int* out) {
    size_t i = 0;
    int v = 0;
    while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) v = v * 10 + ((*s)[i++] - '0');
    if (i == 0) return false;
    *out = v;
    s->remove_prefix(i);
    return true;
  }
  // [+-]hh[:mm[:ss]] in seconds.
  static bool Offset(std::string_view* s, int* out) {
    int sign = 1;
    if (!s->empty() && ((*s)[0] == '+' || (*s)[0] == '-')) {
      sign = (*s)[0] == '-' ? -1 : 1;
      s->remove_prefix(1);
    }
    int h = 0, m = 0, sec = 0;
    if (!Num(s, &h)) return false;
    if (!s->empty() && (*s)[0] == ':') {
      s->remove_prefix(1);
      if (!Num(s, &m)) return false;
      if (!s->empty() && (*s)[0] == ':') {
        s->remove_prefix(1);
        if (!Num(s, &sec)) return false;
      }
    }
    *out = sign * (h * 3600 + m * 60 + sec);
    return true;
  }
  static bool Rule(std::string_view* s, When* w) {
    if (s->empty()) return false;
    if ((*s)[0] == 'M') {
      s->remove_prefix(1);
      w->kind = 'M';
      if (!Num(s, &w->m) || s->empty() || (*s)[0] != '.') return false;
      s->remove_prefix(1);
      if (!Num(s, &w->w) || s->empty() || (*s)[0] != '.') return false;
      s->remove_prefix(1);
      if (!Num(s, &w->d)) return false;
    } else if ((*s)[0] == 'J') {
      s->remove_prefix(1);
      w->kind = 'J';
      if (!Num(s, &w->n)) return false;
    } else {
      w->kind = 'D';
      if (!Num(s, &w->n)) return false;
    }
    if (!s->empty() && (*s)[0] == '/') {
      s->remove_prefix(1);
      if (!Offset(s, &w->secs)) return false;
    }
    return true;
  }
  bool Parse(std::string_view s) {
    int off;
    if (!Name(&s, &std.abbr) || !Offset(&s, &off)) return false;
    std.offset = -off;
    if (s.empty()) return true;
    has_dst = true;
    dst.dst = true;
    if (!Name(&s, &dst.abbr)) return false;
    dst.offset = std.offset + 3600;
    if (!s.empty() && s[0] != ',') {
      if (!Offset(&s, &off)) return false;
      dst.offset = -off;
    }
    if (s.empty()) {
      // No rule: the US rules are the POSIX default.
      start.m = 3, start.w = 2, start.d = 0;
      end.m = 11, end.w = 1, end.d = 0;
      return true;
    }
    if (s[0] != ',') return false;
    s.remove_prefix(1);
    if (!Rule(&s, &start) || s.empty() || s[0] != ',') return false;
    s.remove_prefix(1);
    return Rule(&s, &end) && s.empty();
  }
  // Seconds from the start of `year` (local) to the rule's moment.
  static int64_t At(const When& w, int64_t year) {
    int64_t day;
    if (w.kind == 'J') {
      day = w.n - 1;
      if (IsLeap(year) && w.n >= 60) ++day;
    } else if (w.kind == 'D') {
      day = w.n;
    } else {
      int64_t first = DaysFromCivil(year, w.m, 1);
      int wd = static_cast<int>(FloorMod(first + 4, 7));
      int64_t d = first + FloorMod(w.d - wd, 7) + (w.w - 1) * 7;
      while (d >= first + DaysIn(w.m, year)) d -= 7;
      day = d - DaysFromCivil(year, 1, 1);
    }
    return day * 86400 + w.secs;
  }
  ZoneInfo Lookup(int64_t unix) const {
    if (!has_dst) return std;
    int64_t y;
    int m, d;
    CivilFromDays(FloorDiv(unix + std.offset, 86400), &y, &m, &d);
    int64_t year_start = DaysFromCivil(y, 1, 1) * 86400;
    int64_t s = year_start + At(start, y) - std.offset;
    int64_t e = year_start + At(end, y) - dst.offset;
    bool in_dst = s < e ? (unix >= s && unix < e) : !(unix >= e && unix < s);
    return in_dst ? dst : std;
  }
};

class Zone {
 public:
  std::string name;  // Go's Location name ("UTC", "Local", "America/New_York")
  std::vector<int64_t> trans;
  std::vector<uint8_t> trans_type;
  std::vector<ZoneInfo> types;
  bool has_rule = false;
  PosixRule rule;

  ZoneInfo Lookup(int64_t unix) const {
    if (types.empty()) return has_rule ? rule.Lookup(unix) : ZoneInfo{0, "UTC", false};
    if (trans.empty() || unix < trans.front()) {
      // Go uses the first standard-time type before the first transition.
      for (const auto& t : types)
        if (!t.dst) return t;
      return types.front();
    }
    if (unix >= trans.back() && has_rule) return rule.Lookup(unix);
    size_t i = std::upper_bound(trans.begin(), trans.end(), unix) - trans.begin() - 1;
    return types[trans_type[i]];
  }
};

std::shared_ptr<const Zone> Utc() {
  static const auto z = [] {
    auto z = std::make_shared<Zone>();
    z->name = "UTC";
    z->types.push_back(ZoneInfo{0, "UTC", false});
    return std::shared_ptr<const Zone>(z);
  }();
  return z;
}

std::shared_ptr<const Zone> FixedZone(const std::string& abbr, int offset) {
  auto z = std::make_shared<Zone>();
  z->name = abbr;
  z->types.push_back(ZoneInfo{offset, abbr, false});
  return z;
}

// TZif (RFC 8536) reader: no packaged C++ API exposes tz rules per zone
// without touching the process-wide TZ setting.
std::shared_ptr<Zone> ParseTzif(const std::string& data, const std::string& name) {
  auto be = [&](size_t at, int bytes) -> int64_t {
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) v = (v << 8) | static_cast<unsigned char>(data[at + k]);
    if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
    return static_cast<int64_t>(v);
  };
  if (data.size() < 44 || data.compare(0, 4, "TZif") != 0) return nullptr;
  auto counts = [&](size_t at, int64_t c[6]) {
    for (int k = 0; k < 6; ++k) c[k] = be(at + 20 + 4 * k, 4);
  };
  int64_t c[6];  // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
  counts(0, c);
  size_t at = 44;
  int tbytes = 4;
  if (data[4] >= '2') {
    at += c[3] * 4 + c[3] + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
    if (data.size() < at + 44 || data.compare(at, 4, "TZif") != 0) return nullptr;
    counts(at, c);
    at += 44;
    tbytes = 8;
  }
  size_t need = at + c[3] * tbytes + c[3] + c[4] * 6 + c[5] + c[2] * (tbytes + 4) + c[1] + c[0];
  if (c[4] <= 0 || data.size() < need) return nullptr;
  auto z = std::make_shared<Zone>();
  z->name = name;
  for (int64_t i = 0; i < c[3]; ++i) z->trans.push_back(be(at + i * tbytes, tbytes));
  at += c[3] * tbytes;
  for (int64_t i = 0; i < c[3]; ++i) {
    uint8_t t = static_cast<uint8_t>(data[at + i]);
    if (t >= c[4]) return nullptr;
    z->trans_type.push_back(t);
  }
  at += c[3];
  size_t abbr_at = at + c[4] * 6;
  for (int64_t i = 0; i < c[4]; ++i) {
    ZoneInfo zi;
    zi.offset = static_cast<int>(be(at + i * 6, 4));
    zi.dst = data[at + i * 6 + 4] != 0;
    size_t idx = static_cast<unsigned char>(data[at + i * 6 + 5]);
    if (idx < static_cast<size_t>(c[5])) zi.abbr = std::string(data.c_str() + abbr_at + idx);
    z->types.push_back(zi);
  }
  if (tbytes == 8 && need < data.size() && data[need] == '\n') {
    size_t e = data.find('\n', need + 1);
    if (e != std::string::npos && e > need + 1) z->has_rule = z->rule.Parse(std::string_view(data).substr(need + 1, e - need - 1));
  }
  return z;
}

std::shared_ptr<const Zone> LoadTzif(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTzif(ss.str(), name);
}

// time.LoadLocation: "", "UTC", "Local", or a name in the tz database.
std::shared_ptr<const Zone> LocalZone();
Result<std::shared_ptr<const Zone>> LoadLocation(const std::string& name) {
  if (name.empty() || name == "UTC") return Utc();
  if (name == "Local") return LocalZone();
  if (name[0] == '/' || name.find("..") != std::string::npos || name.find('\\') != std::string::npos)
    return Invalid("time: invalid location name");
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Zone>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const char* dir = std::getenv("ZONEINFO");
  auto z = LoadTzif((dir ? std::string(dir) : std::string("/usr/share/zoneinfo")) + "/" + name, name);
  if (!z) return Invalid("unknown time zone " + name);
  cache.emplace(name, z);
  return z;
}

// time.Local. Rendering is deterministic across machines: Local is UTC, as
// in the reference renderer the conformance corpus was produced with.
std::shared_ptr<const Zone> LocalZone() { return Utc(); }

// --- durations

// fmtFrac/fmtInt of Go's Duration.String.
std::string DurationString(int64_t d) {
  uint64_t u = static_cast<uint64_t>(d);
  bool neg = d < 0;
  if (neg) u = 0 - u;
  auto frac = [](std::string* out, uint64_t* v, int prec) {
    std::string digits;
    bool print = false;
    for (int i = 0; i < prec; ++i) {
      int digit = static_cast<int>(*v % 10);
      print = print || digit != 0;
      if (print) digits.insert(digits.begin(), static_cast<char>('0' + digit));
      *v /= 10;
    }
    if (print) *out = "." + digits + *out;
  };
  std::string out;
  if (u < static_cast<uint64_t>(kSecond)) {
    int prec;
    if (u == 0) return "0s";
    if (u < 1000) {
      prec = 0;
      out = "ns";
    } else if (u < 1000000) {
      prec = 3;
      out = "\xC2\xB5s";
    } else {
      prec = 6;
      out = "ms";
    }
    frac(&out, &u, prec);
    out = std::to_string(u) + out;
  } else {
    out = "s";
    frac(&out, &u, 9);
    out = std::to_string(u % 60) + out;
    u /= 60;
    if (u > 0) {
      out = std::to_string(u % 60) + "m" + out;
      u /= 60;
      if (u > 0) out = std::to_string(u) + "h" + out;
    }
  }
  return neg ? "-" + out : out;
}

// time.ParseDuration.
Result<int64_t> ParseDuration(std::string_view s0) {
  std::string orig(s0);
  auto bad = [&] { return Invalid("time: invalid duration " + Quote(orig)); };
  std::string_view s = s0;
  uint64_t d = 0;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return int64_t{0};
  if (s.empty()) return bad();
  while (!s.empty()) {
    uint64_t v = 0, f = 0;
    double scale = 1;
    if (!(s[0] == '.' || std::isdigit(static_cast<unsigned char>(s[0])))) return bad();
    size_t i = 0;
    bool overflow = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (v > (uint64_t{1} << 63) / 10) overflow = true;
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      if (v > (uint64_t{1} << 63)) overflow = true;
      ++i;
    }
    if (overflow) return bad();
    bool pre = i != 0;
    s.remove_prefix(i);
    bool post = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      i = 0;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        if (!overflow && f <= (uint64_t{1} << 63) / 10) {
          f = f * 10 + static_cast<uint64_t>(s[i] - '0');
          scale *= 10;
          if (f > (uint64_t{1} << 63)) overflow = true;
        }
        ++i;
      }
      post = i != 0;
      s.remove_prefix(i);
    }
    if (!pre && !post) return bad();
    i = 0;
    while (i < s.size() && s[i] != '.' && !std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == 0) return Invalid("time: missing unit in duration " + Quote(orig));
    std::string_view u = s.substr(0, i);
    s.remove_prefix(i);
    uint64_t unit;
    if (u == "ns") unit = 1;
    else if (u == "us" || u == "\xC2\xB5s" || u == "\xCE\xBCs") unit = 1000;
    else if (u == "ms") unit = 1000000;
    else if (u == "s") unit = kSecond;
    else if (u == "m") unit = 60 * kSecond;
    else if (u == "h") unit = 3600 * kSecond;
    else return Invalid("time: unknown unit " + Quote(u) + " in duration " + Quote(orig));
    if (v > (uint64_t{1} << 63) / unit) return bad();
    v *= unit;
    if (f > 0) {
      v += static_cast<uint64_t>(static_cast<double>(f) * (static_cast<double>(unit) / scale));
      if (v > (uint64_t{1} << 63)) return bad();
    }
    d += v;
    if (d > (uint64_t{1} << 63)) return bad();
  }
  if (neg) return static_cast<int64_t>(0 - d);
  if (d > static_cast<uint64_t>(INT64_MAX)) return bad();
  return static_cast<int64_t>(d);
}

// Duration.Round.
int64_t RoundDuration(int64_t d, int64_t m) {
  if (m <= 0) return d;
  int64_t r = d % m;
  auto less_than_half = [](int64_t x, int64_t y) {
    return static_cast<uint64_t>(x) + static_cast<uint64_t>(x) < static_cast<uint64_t>(y);
  };
  if (d < 0) {
    r = -r;
    if (less_than_half(r, m)) return d + r;
    int64_t d1 = funcs_internal::WrapAdd(funcs_internal::WrapAdd(d, -m), r);
    return d1 < d ? d1 : INT64_MIN;
  }
  if (less_than_half(r, m)) return d - r;
  int64_t d1 = funcs_internal::WrapAdd(funcs_internal::WrapAdd(d, m), -r);
  return d1 > d ? d1 : INT64_MAX;
}

// --- Go time.Time

struct Civil {
  int64_t year;
  int month, day, hour, min, sec;
  int wday, yday;
  ZoneInfo zone;
};

struct GoTime {
  int64_t sec = kZeroUnix;  // Unix seconds
  int32_t nsec = 0;
  std::shared_ptr<const Zone> zone;
  bool has_mono = false;
  int64_t mono = 0;  // nanoseconds since process start (Go's m=+…)

  const Zone& z() const { return zone ? *zone : *Utc(); }
  Civil ToCivil() const {
    Civil c;
    c.zone = z().Lookup(sec);
    int64_t local = funcs_internal::WrapAdd(sec, c.zone.offset);
    int64_t days = FloorDiv(local, 86400);
    int64_t rem = FloorMod(local, 86400);
    CivilFromDays(days, &c.year, &c.month, &c.day);
    c.hour = static_cast<int>(rem / 3600);
    c.min = static_cast<int>(rem / 60 % 60);
    c.sec = static_cast<int>(rem % 60);
    c.wday = static_cast<int>(FloorMod(days + 4, 7));
    c.yday = static_cast<int>(days - DaysFromCivil(c.year, 1, 1) + 1);
    return c;
  }
};

// Time.Sub: a - b in nanoseconds, saturated as Go does.
int64_t SubNs(const GoTime& a, const GoTime& b) {
  __int128 d = (static_cast<__int128>(a.sec) - b.sec) * kSecond + (a.nsec - b.nsec);
  if (d > INT64_MAX) return INT64_MAX;
  if (d < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(d);
}

GoTime Now() {
  static const auto start = std::chrono::steady_clock::now();
  auto wall = std::chrono::system_clock::now().time_since_epoch();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count();
  GoTime t;
  t.sec = FloorDiv(ns, kSecond);
  t.nsec = static_cast<int32_t>(FloorMod(ns, kSecond));
  t.zone = LocalZone();
  t.has_mono = true;
  t.mono = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count() + 1;
  return t;
}

GoTime Unix(int64_t sec, int64_t nsec, std::shared_ptr<const Zone> zone) {
  GoTime t;
  t.sec = sec + FloorDiv(nsec, kSecond);
  t.nsec = static_cast<int32_t>(FloorMod(nsec, kSecond));
  t.zone = std::move(zone);
  return t;
}

// time.Date: local civil fields (normalised) in `zone`.
GoTime MakeDate(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t min, int64_t sec, int64_t nsec,
                std::shared_ptr<const Zone> zone) {
  int64_t m0 = month - 1;
  year += FloorDiv(m0, 12);
  m0 = FloorMod(m0, 12);
  int64_t days = DaysFromCivil(year, static_cast<int>(m0 + 1), 1) + day - 1;
  int64_t local = days * 86400 + hour * 3600 + min * 60 + sec + FloorDiv(nsec, kSecond);
  nsec = FloorMod(nsec, kSecond);
  const Zone& z = zone ? *zone : *Utc();
  int off = z.Lookup(local).offset;
  int64_t utc = local - off;
  int off2 = z.Lookup(utc).offset;
  if (off2 != off) utc = local - off2;
  GoTime t;
  t.sec = utc;
  t.nsec = static_cast<int32_t>(nsec);
  t.zone = std::move(zone);
  return t;
}

// --- layouts

enum Std {
  kNone, kLongMonth, kMonth, kNumMonth, kZeroMonth, kLongWeekDay, kWeekDay, kDay, kUnderDay, kZeroDay,
  kHour, kHour12, kZeroHour12, kMinute, kZeroMinute, kSecond_, kZeroSecond, kLongYear, kYear, kPM, kpm,
  kTZ, kISO8601TZ, kISO8601SecondsTZ, kISO8601ShortTZ, kISO8601ColonTZ, kISO8601ColonSecondsTZ,
  kNumTZ, kNumSecondsTz, kNumShortTZ, kNumColonTZ, kNumColonSecondsTZ, kFracSecond0, kFracSecond9,
  kZeroYearDay, kUnderYearDay,
};

struct LayoutChunk {
  std::string_view prefix;
  Std std = kNone;
  int digits = 0;   // fractional second digits
  char sep = '.';   // fractional second separator
  std::string_view suffix;
  std::string_view text;  // the layout element itself
};

bool LowerAt(std::string_view s, size_t i) { return i < s.size() && s[i] >= 'a' && s[i] <= 'z'; }

// Go's nextStdChunk.
LayoutChunk NextChunk(std::string_view l) {
  LayoutChunk c;
  auto hit = [&](size_t i, size_t len, Std std) {
    c.prefix = l.substr(0, i);
    c.std = std;
    c.text = l.substr(i, len);
    c.suffix = l.substr(i + len);
    return c;
  };
  auto at = [&](size_t i, std::string_view w) { return l.substr(i, w.size()) == w; };
  for (size_t i = 0; i < l.size(); ++i) {
    switch (l[i]) {
      case 'J':
        if (at(i, "Jan")) {
          if (at(i, "January")) return hit(i, 7, kLongMonth);
          if (!LowerAt(l, i + 3)) return hit(i, 3, kMonth);
        }
        break;
      case 'M':
        if (at(i, "Mon")) {
          if (at(i, "Monday")) return hit(i, 6, kLongWeekDay);
          if (!LowerAt(l, i + 3)) return hit(i, 3, kWeekDay);
        }
        if (at(i, "MST")) return hit(i, 3, kTZ);
        break;
      case '0':
        if (at(i, "002")) return hit(i, 3, kZeroYearDay);
        if (i + 1 < l.size() && l[i + 1] >= '1' && l[i + 1] <= '6') {
          static const Std k0x[] = {kZeroMonth, kZeroDay, kZeroHour12, kZeroMinute, kZeroSecond, kYear};
          return hit(i, 2, k0x[l[i + 1] - '1']);
        }
        break;
      case '1':
        if (at(i, "15")) return hit(i, 2, kHour);
        return hit(i, 1, kNumMonth);
      case '2':
        if (at(i, "2006")) return hit(i, 4, kLongYear);
        return hit(i, 1, kDay);
      case '_':
        if (i + 1 < l.size() && l[i + 1] == '2') {
          // "_2006" is a literal _ followed by the year.
          if (at(i + 1, "2006")) return hit(i + 1, 4, kLongYear);
          return hit(i, 2, kUnderDay);
        }
        if (at(i, "__2")) return hit(i, 3, kUnderYearDay);
        break;
      case '3': return hit(i, 1, kHour12);
      case '4': return hit(i, 1, kMinute);
      case '5': return hit(i, 1, kSecond_);
      case 'P':
        if (at(i, "PM")) return hit(i, 2, kPM);
        break;
      case 'p':
        if (at(i, "pm")) return hit(i, 2, kpm);
        break;
      case '-':
        if (at(i, "-070000")) return hit(i, 7, kNumSecondsTz);
        if (at(i, "-07:00:00")) return hit(i, 9, kNumColonSecondsTZ);
        if (at(i, "-0700")) return hit(i, 5, kNumTZ);
        if (at(i, "-07:00")) return hit(i, 6, kNumColonTZ);
        if (at(i, "-07")) return hit(i, 3, kNumShortTZ);
        break;
      case 'Z':
        if (at(i, "Z070000")) return hit(i, 7, kISO8601SecondsTZ);
        if (at(i, "Z07:00:00")) return hit(i, 9, kISO8601ColonSecondsTZ);
        if (at(i, "Z0700")) return hit(i, 5, kISO8601TZ);
        if (at(i, "Z07:00")) return hit(i, 6, kISO8601ColonTZ);
        if (at(i, "Z07")) return hit(i, 3, kISO8601ShortTZ);
        break;
      case '.':
      case ',':
        if (i + 1 < l.size() && (l[i + 1] == '0' || l[i + 1] == '9')) {
          char ch = l[i + 1];
          size_t j = i + 1;
          while (j < l.size() && l[j] == ch) ++j;
          if (!(j < l.size() && std::isdigit(static_cast<unsigned char>(l[j])))) {
            hit(i, j - i, ch == '0' ? kFracSecond0 : kFracSecond9);
            c.digits = static_cast<int>(j - i - 1);
            c.sep = l[i];
            return c;
          }
        }
        break;
      default: break;
    }
  }
  c.prefix = l;
  return c;
}

std::string ZeroPad(int64_t v, int width) {
  bool neg = v < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string s = std::to_string(u);
  while (static_cast<int>(s.size()) < width) s.insert(s.begin(), '0');
  return neg ? "-" + s : s;
}

std::string FormatTime(const GoTime& t, std::string_view layout) {
  Civil c = t.ToCivil();
  std::string out;
  while (!layout.empty()) {
    LayoutChunk ch = NextChunk(layout);
    out += ch.prefix;
    if (ch.std == kNone) break;
    layout = ch.suffix;
    switch (ch.std) {
      case kYear: out += ZeroPad(FloorMod(c.year, 100), 2); break;
      case kLongYear: out += ZeroPad(c.year, 4); break;
      case kMonth: out += std::string(kMonths[c.month - 1]).substr(0, 3); break;
      case kLongMonth: out += kMonths[c.month - 1]; break;
      case kNumMonth: out += std::to_string(c.month); break;
      case kZeroMonth: out += ZeroPad(c.month, 2); break;
      case kWeekDay: out += std::string(kDays[c.wday]).substr(0, 3); break;
      case kLongWeekDay: out += kDays[c.wday]; break;
      case kDay: out += std::to_string(c.day); break;
      case kUnderDay: out += (c.day < 10 ? " " : "") + std::to_string(c.day); break;
      case kZeroDay: out += ZeroPad(c.day, 2); break;
      case kZeroYearDay: out += ZeroPad(c.yday, 3); break;
      case kUnderYearDay: out += (c.yday < 100 ? (c.yday < 10 ? "  " : " ") : "") + std::to_string(c.yday); break;
      case kHour: out += ZeroPad(c.hour, 2); break;
      case kHour12: out += std::to_string(c.hour % 12 == 0 ? 12 : c.hour % 12); break;
      case kZeroHour12: out += ZeroPad(c.hour % 12 == 0 ? 12 : c.hour % 12, 2); break;
      case kMinute: out += std::to_string(c.min); break;
      case kZeroMinute: out += ZeroPad(c.min, 2); break;
      case kSecond_: out += std::to_string(c.sec); break;
      case kZeroSecond: out += ZeroPad(c.sec, 2); break;
      case kPM: out += c.hour >= 12 ? "PM" : "AM"; break;
      case kpm: out += c.hour >= 12 ? "pm" : "am"; break;
      case kISO8601TZ: case kISO8601ColonTZ: case kISO8601SecondsTZ: case kISO8601ShortTZ:
      case kISO8601ColonSecondsTZ: case kNumTZ: case kNumColonTZ: case kNumSecondsTz: case kNumShortTZ:
      case kNumColonSecondsTZ: {
        int off = c.zone.offset;
        bool iso = ch.std == kISO8601TZ || ch.std == kISO8601ColonTZ || ch.std == kISO8601SecondsTZ ||
                   ch.std == kISO8601ShortTZ || ch.std == kISO8601ColonSecondsTZ;
        if (iso && off == 0) {
          out += 'Z';
          break;
        }
        int zone = off / 60, abs = off;
        if (zone < 0) {
          out += '-';
          zone = -zone;
          abs = -abs;
        } else {
          out += '+';
        }
        out += ZeroPad(zone / 60, 2);
        bool colon = ch.std == kISO8601ColonTZ || ch.std == kNumColonTZ || ch.std == kISO8601ColonSecondsTZ ||
                     ch.std == kNumColonSecondsTZ;
        if (colon) out += ':';
        if (ch.std != kNumShortTZ && ch.std != kISO8601ShortTZ) out += ZeroPad(zone % 60, 2);
        if (ch.std == kNumSecondsTz || ch.std == kNumColonSecondsTZ || ch.std == kISO8601SecondsTZ ||
            ch.std == kISO8601ColonSecondsTZ) {
          if (colon) out += ':';
          out += ZeroPad(abs % 60, 2);
        }
        break;
      }
      case kTZ: {
        if (!c.zone.abbr.empty()) {
          out += c.zone.abbr;
          break;
        }
        int zone = c.zone.offset / 60;
        if (zone < 0) {
          out += '-';
          zone = -zone;
        } else {
          out += '+';
        }
        out += ZeroPad(zone / 60, 2) + ZeroPad(zone % 60, 2);
        break;
      }
      case kFracSecond0:
      case kFracSecond9: {
        std::string digits = ZeroPad(t.nsec, 9).substr(0, ch.digits);
        if (ch.std == kFracSecond9) {
          while (!digits.empty() && digits.back() == '0') digits.pop_back();
          if (digits.empty()) break;
        }
        out += ch.sep;
        out += digits;
        break;
      }
      default: break;
    }
  }
  return out;
}

bool LookupName(std::string_view* v, bool long_form, const char* const* names, int n, int* out) {
  for (int i = 0; i < n; ++i) {
    std::string name = long_form ? names[i] : std::string(names[i]).substr(0, 3);
    if (v->size() >= name.size()) {
      bool eq = true;
      for (size_t k = 0; k < name.size() && eq; ++k)
        eq = std::tolower(static_cast<unsigned char>((*v)[k])) == std::tolower(static_cast<unsigned char>(name[k]));
      if (eq) {
        *out = i;
        v->remove_prefix(name.size());
        return true;
      }
    }
  }
  return false;
}

// getnum: one or two digits (exactly two when fixed).
bool GetNum(std::string_view* v, bool fixed, int* out) {
  auto dig = [&](size_t i) { return i < v->size() && std::isdigit(static_cast<unsigned char>((*v)[i])); };
  if (!dig(0)) return false;
  if (!dig(1)) {
    if (fixed) return false;
    *out = (*v)[0] - '0';
    v->remove_prefix(1);
    return true;
  }
  *out = ((*v)[0] - '0') * 10 + ((*v)[1] - '0');
  v->remove_prefix(2);
  return true;
}

// Go's parseTimeZone: the length of a zone abbreviation at the start of v.
size_t TimeZoneLen(std::string_view v) {
  if (v.size() < 3) return 0;
  if (v.substr(0, 4) == "ChST" || v.substr(0, 4) == "MeST") return 4;
  if (v.substr(0, 3) == "GMT") {
    if (v.size() > 3 && (v[3] == '+' || v[3] == '-')) {
      size_t i = 4;
      while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
      return i > 4 ? i : 3;
    }
    return 3;
  }
  size_t n = 0;
  while (n < v.size() && n < 6 && v[n] >= 'A' && v[n] <= 'Z') ++n;
  switch (n) {
    case 0: case 1: case 2: case 6: return 0;
    case 5: return v[4] == 'T' ? 5 : 0;
    case 4: return (v[3] == 'T' || v.substr(0, 4) == "WITA") ? 4 : 0;
    default: return 3;
  }
}

Result<GoTime> ParseTime(std::string_view layout0, std::string_view value0, std::shared_ptr<const Zone> loc) {
  std::string_view layout = layout0, value = value0;
  auto perr = [&](std::string_view lelem, std::string_view velem) {
    return Invalid("parsing time " + Quote(value0) + " as " + Quote(layout0) + ": cannot parse " + Quote(velem) +
                   " as " + Quote(lelem));
  };
  auto range_err = [&](const char* what) {
    return Invalid("parsing time " + Quote(value0) + ": " + what + " out of range");
  };
  int64_t year = 0;
  int month = -1, day = -1, yday = -1, hour = 0, min = 0, sec = 0;
  int64_t nsec = 0;
  bool pm_set = false, am_set = false, zone_set = false, utc = false;
  int zone_offset = -1;
  bool has_offset = false;
  std::string zone_name;
  auto skip = [](std::string_view* v, std::string_view prefix) {
    while (!prefix.empty()) {
      if (prefix[0] == ' ') {
        if (!v->empty() && (*v)[0] != ' ') return false;
        while (!prefix.empty() && prefix[0] == ' ') prefix.remove_prefix(1);
        while (!v->empty() && (*v)[0] == ' ') v->remove_prefix(1);
        continue;
      }
      if (v->empty() || (*v)[0] != prefix[0]) return false;
      v->remove_prefix(1);
      prefix.remove_prefix(1);
    }
    return true;
  };
  auto parse_nanos = [](std::string_view v, size_t n, int64_t* out) {
    // v[0] is the separator; up to nine digits count.
    int64_t ns = 0;
    size_t digits = n - 1;
    for (size_t i = 1; i < n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
      if (i <= 9) ns = ns * 10 + (v[i] - '0');
    }
    for (size_t i = digits; i < 9; ++i) ns *= 10;
    *out = ns;
    return true;
  };
  for (;;) {
    LayoutChunk ch = NextChunk(layout);
    if (!skip(&value, ch.prefix)) return perr(ch.prefix, value);
    if (ch.std == kNone) {
      if (!value.empty()) return Invalid("parsing time " + Quote(value0) + ": extra text: " + Quote(value));
      break;
    }
    layout = ch.suffix;
    bool ok = true;
    const char* range = nullptr;
    switch (ch.std) {
      case kYear: {
        int v;
        if (value.size() < 2 || !GetNum(&value, true, &v)) {
          ok = false;
          break;
        }
        year = v >= 69 ? 1900 + v : 2000 + v;
        break;
      }
      case kLongYear: {
        if (value.size() < 4) {
          ok = false;
          break;
        }
        int64_t y = 0;
        if (!std::isdigit(static_cast<unsigned char>(value[0]))) {
          ok = false;
          break;
        }
        for (int k = 0; k < 4 && ok; ++k) {
          if (!std::isdigit(static_cast<unsigned char>(value[k]))) ok = false;
          else y = y * 10 + (value[k] - '0');
        }
        year = y;
        value.remove_prefix(4);  // consumed even when not a number, as Go does
        break;
      }
      case kMonth:
      case kLongMonth: {
        int m = 0;
        ok = LookupName(&value, ch.std == kLongMonth, kMonths, 12, &m);
        month = m + 1;
        break;
      }
      case kNumMonth:
      case kZeroMonth:
        ok = GetNum(&value, ch.std == kZeroMonth, &month);
        if (ok && (month <= 0 || month > 12)) range = "month";
        break;
      case kWeekDay:
      case kLongWeekDay: {
        int d;
        ok = LookupName(&value, ch.std == kLongWeekDay, kDays, 7, &d);
        break;
      }
      case kDay:
      case kUnderDay:
      case kZeroDay:
        if (ch.std == kUnderDay && !value.empty() && value[0] == ' ') value.remove_prefix(1);
        ok = GetNum(&value, ch.std == kZeroDay, &day);
        break;
      case kZeroYearDay:
      case kUnderYearDay: {
        for (int k = 0; k < 2; ++k)
          if (ch.std == kUnderYearDay && !value.empty() && value[0] == ' ') value.remove_prefix(1);
        // getnum3: one to three digits (exactly three when fixed).
        size_t n = 0;
        int v = 0;
        while (n < 3 && n < value.size() && std::isdigit(static_cast<unsigned char>(value[n]))) v = v * 10 + (value[n++] - '0');
        ok = n > 0 && (ch.std != kZeroYearDay || n == 3);
        if (ok) {
          yday = v;
          value.remove_prefix(n);
        }
        break;
      }
      case kHour:
        ok = GetNum(&value, false, &hour);
        if (ok && (hour < 0 || hour >= 24)) range = "hour";
        break;
      case kHour12:
      case kZeroHour12:
        ok = GetNum(&value, ch.std == kZeroHour12, &hour);
        if (ok && (hour < 0 || hour > 12)) range = "hour";
        break;
      case kMinute:
      case kZeroMinute:
        ok = GetNum(&value, ch.std == kZeroMinute, &min);
        if (ok && (min < 0 || min >= 60)) range = "minute";
        break;
      case kSecond_:
      case kZeroSecond: {
        ok = GetNum(&value, ch.std == kZeroSecond, &sec);
        if (ok && (sec < 0 || sec >= 60)) {
          range = "second";
          break;
        }
        // A fractional second in the value that the layout does not name.
        if (ok && value.size() >= 2 && (value[0] == '.' || value[0] == ',') &&
            std::isdigit(static_cast<unsigned char>(value[1]))) {
          LayoutChunk next = NextChunk(layout);
          if (next.std == kFracSecond0 || next.std == kFracSecond9) break;
          size_t n = 2;
          while (n < value.size() && std::isdigit(static_cast<unsigned char>(value[n]))) ++n;
          parse_nanos(value, n, &nsec);
          value.remove_prefix(n);
        }
        break;
      }
      case kPM:
      case kpm: {
        if (value.size() < 2) {
          ok = false;
          break;
        }
        std::string_view p = value.substr(0, 2);
        if (p == (ch.std == kPM ? "PM" : "pm")) pm_set = true;
        else if (p == (ch.std == kPM ? "AM" : "am")) am_set = true;
        else ok = false;
        value.remove_prefix(2);
        break;
      }
      case kISO8601TZ: case kISO8601ColonTZ: case kISO8601SecondsTZ: case kISO8601ShortTZ:
      case kISO8601ColonSecondsTZ:
        if (!value.empty() && value[0] == 'Z') {
          value.remove_prefix(1);
          utc = zone_set = true;
          break;
        }
        [[fallthrough]];
      case kNumTZ: case kNumColonTZ: case kNumSecondsTz: case kNumShortTZ: case kNumColonSecondsTZ: {
        bool colon = ch.std == kISO8601ColonTZ || ch.std == kNumColonTZ || ch.std == kISO8601ColonSecondsTZ ||
                     ch.std == kNumColonSecondsTZ;
        bool secs = ch.std == kNumSecondsTz || ch.std == kNumColonSecondsTZ || ch.std == kISO8601SecondsTZ ||
                    ch.std == kISO8601ColonSecondsTZ;
        bool short_ = ch.std == kNumShortTZ || ch.std == kISO8601ShortTZ;
        size_t need = 3 + (short_ ? 0 : (colon ? 3 : 2)) + (secs ? (colon ? 3 : 2) : 0);
        if (value.size() < need) {
          ok = false;
          break;
        }
        if (value[0] != '+' && value[0] != '-') {
          ok = false;
          value.remove_prefix(need);
          break;
        }
        auto two = [&](size_t at, int* out) {
          if (!std::isdigit(static_cast<unsigned char>(value[at])) || !std::isdigit(static_cast<unsigned char>(value[at + 1])))
            return false;
          *out = (value[at] - '0') * 10 + (value[at + 1] - '0');
          return true;
        };
        int hh = 0, mm = 0, ss = 0;
        size_t at = 1;
        ok = two(at, &hh);
        at += 2;
        if (ok && !short_) {
          if (colon) ok = value[at++] == ':';
          ok = ok && two(at, &mm);
          at += 2;
        }
        if (ok && secs) {
          if (colon) ok = value[at++] == ':';
          ok = ok && two(at, &ss);
          at += 2;
        }
        if (!ok) {
          value.remove_prefix(need);
          break;
        }
        zone_offset = (hh * 60 + mm) * 60 + ss;
        if (value[0] == '-') zone_offset = -zone_offset;
        has_offset = zone_set = true;
        value.remove_prefix(at);
        break;
      }
      case kTZ: {
        if (value.substr(0, 3) == "UTC") {
          utc = zone_set = true;
          value.remove_prefix(3);
          break;
        }
        size_t n = TimeZoneLen(value);
        if (n == 0) {
          ok = false;
          break;
        }
        zone_name = std::string(value.substr(0, n));
        value.remove_prefix(n);
        zone_set = true;
        break;
      }
      case kFracSecond0: {
        size_t n = 1 + ch.digits;
        if (value.size() < n || (value[0] != '.' && value[0] != ',')) {
          ok = false;
          break;
        }
        ok = parse_nanos(value, n, &nsec);
        value.remove_prefix(n);
        break;
      }
      case kFracSecond9: {
        if (value.size() < 2 || (value[0] != '.' && value[0] != ',') || !std::isdigit(static_cast<unsigned char>(value[1])))
          break;
        size_t i = 0;
        while (i + 1 < value.size() && i < 9 && std::isdigit(static_cast<unsigned char>(value[i + 1]))) ++i;
        ok = parse_nanos(value, 1 + i, &nsec);
        if (ok) value.remove_prefix(1 + i);
        break;
      }
      default: break;
    }
    if (range) return range_err(range);
    if (!ok) return perr(ch.text, value);
  }
  if (pm_set && hour < 12) hour += 12;
  else if (am_set && hour == 12) hour = 0;
  if (yday >= 0) {
    int m = 0, d = 0;
    if (IsLeap(year)) {
      if (yday == 31 + 29) {
        m = 2;
        d = 29;
      } else if (yday > 31 + 29) {
        --yday;
      }
    }
    if (yday < 1 || yday > 365) return Invalid("parsing time " + Quote(value0) + ": day-of-year out of range");
    if (m == 0) {
      static const int kBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
      m = (yday - 1) / 31 + 1;
      if (kBefore[m] < yday) ++m;
      d = yday - kBefore[m - 1];
    }
    if (month >= 0 && month != m) return Invalid("parsing time " + Quote(value0) + ": day-of-year does not match month");
    month = m;
    if (day >= 0 && day != d) return Invalid("parsing time " + Quote(value0) + ": day-of-year does not match day");
    day = d;
  }
  if (month < 0) month = 1;
  if (day < 0) day = 1;
  if (day < 1 || day > DaysIn(month, year)) return Invalid("parsing time " + Quote(value0) + ": day out of range");
  if (utc) return MakeDate(year, month, day, hour, min, sec, nsec, Utc());
  if (has_offset) {
    GoTime t = MakeDate(year, month, day, hour, min, sec, nsec, Utc());
    t.sec -= zone_offset;
    // The location's own offset when it matches, else a fixed zone.
    if (loc && loc->Lookup(t.sec).offset == zone_offset) {
      t.zone = loc;
    } else {
      t.zone = FixedZone("", zone_offset);
    }
    return t;
  }
  if (zone_set) {
    GoTime t = MakeDate(year, month, day, hour, min, sec, nsec, Utc());
    ZoneInfo li = loc ? loc->Lookup(t.sec) : ZoneInfo{};
    if (loc && li.abbr == zone_name) {
      t.sec -= li.offset;
      t.zone = loc;
      return t;
    }
    // An unknown abbreviation keeps the clock reading as UTC, as Go does.
    int off = 0;
    if (zone_name.size() > 3 && zone_name.compare(0, 3, "GMT") == 0) off = std::atoi(zone_name.c_str() + 3) * 3600;
    t.zone = FixedZone(zone_name, off);
    return t;
  }
  return MakeDate(year, month, day, hour, min, sec, nsec, loc ? loc : Utc());
}


class TimeObject;
class DurationObject;

Value TimeValue(GoTime t);
Value DurationValue(int64_t d);

// time.Month and time.Weekday: integers that print as names.
class NamedInt : public Object {
 public:
  NamedInt(std::string type, int64_t v, std::string name) : type_(std::move(type)), v_(v), name_(std::move(name)) {}
  std::string TypeName() const override { return type_; }
  std::string GoKind() const override { return "int"; }
  std::string Format() const override { return name_; }
  bool MarshalJson(std::string* out) const override {
    *out += std::to_string(v_);
    return true;
  }
  bool IntValue(int64_t* v) const override {
    *v = v_;
    return true;
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (name == "String" && args.empty()) return Value::String(name_);
    return Object::Call(name, args);
  }

 private:
  std::string type_;
  int64_t v_;
  std::string name_;
};

class DurationObject : public Object {
 public:
  explicit DurationObject(int64_t d) : d_(d) {}
  int64_t d() const { return d_; }
  std::string TypeName() const override { return "time.Duration"; }
  std::string GoKind() const override { return "int64"; }
  std::string Format() const override { return DurationString(d_); }
  bool MarshalJson(std::string* out) const override {
    *out += std::to_string(d_);
    return true;
  }
  bool IntValue(int64_t* v) const override {
    *v = d_;
    return true;
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    if (args.empty()) {
      if (name == "String") return Value::String(DurationString(d_));
      if (name == "Nanoseconds") return Value::Int64(d_);
      if (name == "Microseconds") return Value::Int64(d_ / 1000);
      if (name == "Milliseconds") return Value::Int64(d_ / 1000000);
      if (name == "Seconds") return Value::Float(static_cast<double>(d_ / kSecond) + static_cast<double>(d_ % kSecond) / 1e9);
      if (name == "Minutes") return Value::Float(static_cast<double>(d_ / (60 * kSecond)) + static_cast<double>(d_ % (60 * kSecond)) / (60e9));
      if (name == "Hours") return Value::Float(static_cast<double>(d_ / (3600 * kSecond)) + static_cast<double>(d_ % (3600 * kSecond)) / (3600e9));
    }
    if ((name == "Round" || name == "Truncate") && args.size() == 1) {
      int64_t m = DurationArg(args[0]);
      if (name == "Round") return DurationValue(RoundDuration(d_, m));
      return DurationValue(m <= 0 ? d_ : d_ - d_ % m);
    }
    return Object::Call(name, args);
  }
  static int64_t DurationArg(const Value& v) {
    if (v.kind() == Kind::kObject)
      if (auto* d = dynamic_cast<const DurationObject*>(v.as_object())) return d->d_;
    return v.is_int() ? v.as_int() : 0;
  }

 private:
  int64_t d_;
};

class TimeObject : public Object {
 public:
  explicit TimeObject(GoTime t) : t_(std::move(t)) {}
  const GoTime& t() const { return t_; }
  std::string TypeName() const override { return "time.Time"; }
  std::string Format() const override {
    std::string s = FormatTime(t_, "2006-01-02 15:04:05.999999999 -0700 MST");
    if (t_.has_mono) {
      // Go appends the monotonic clock reading as m=±seconds with nine decimals.
      int64_t m = t_.mono;
      std::string sign = m < 0 ? "-" : "+";
      uint64_t u = m < 0 ? 0 - static_cast<uint64_t>(m) : static_cast<uint64_t>(m);
      s += " m=" + sign + std::to_string(u / kSecond) + "." + ZeroPad(static_cast<int64_t>(u % kSecond), 9);
    }
    return s;
  }
  bool MarshalJson(std::string* out) const override {
    // Time.MarshalJSON: RFC 3339 with nanoseconds; years outside [0,9999] fail.
    Civil c = t_.ToCivil();
    if (c.year < 0 || c.year > 9999) return false;
    *out += "\"" + FormatTime(t_, "2006-01-02T15:04:05.999999999Z07:00") + "\"";
    return true;
  }
  Result<Value> Call(std::string_view name, const ValueList& args) const override {
    auto want = [&](size_t n) -> Status {
      if (args.size() != n)
        return Invalid("wrong number of args for " + std::string(name) + ": want " + std::to_string(n) + " got " +
                       std::to_string(args.size()));
      return {};
    };
    auto time_arg = [&](const Value& v) -> const GoTime* {
      if (v.kind() != Kind::kObject) return nullptr;
      auto* o = dynamic_cast<const TimeObject*>(v.as_object());
      return o ? &o->t_ : nullptr;
    };
    Civil c = t_.ToCivil();
    static const std::map<std::string, int, std::less<>> kInts = {
        {"Year", 0}, {"Day", 1}, {"Hour", 2}, {"Minute", 3}, {"Second", 4}, {"Nanosecond", 5}, {"YearDay", 6}};
    if (auto it = kInts.find(name); it != kInts.end()) {
      ECO_RETURN_IF_ERROR(want(0));
      int64_t vals[] = {c.year, c.day, c.hour, c.min, c.sec, t_.nsec, c.yday};
      return Value::Int(vals[it->second]);
    }
    if (name == "Month") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::Obj(std::make_shared<NamedInt>("time.Month", c.month, kMonths[c.month - 1]));
    }
    if (name == "Weekday") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::Obj(std::make_shared<NamedInt>("time.Weekday", c.wday, kDays[c.wday]));
    }
    if (name == "Unix" || name == "UnixMilli" || name == "UnixMicro" || name == "UnixNano") {
      ECO_RETURN_IF_ERROR(want(0));
      int64_t mult = name == "Unix" ? 1 : name == "UnixMilli" ? 1000 : name == "UnixMicro" ? 1000000 : kSecond;
      int64_t div = kSecond / mult;
      return Value::Int64(t_.sec * mult + t_.nsec / div);
    }
    if (name == "String") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::String(Format());
    }
    if (name == "IsZero") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::Bool(t_.sec == kZeroUnix && t_.nsec == 0);
    }
    if (name == "Format") {
      ECO_RETURN_IF_ERROR(want(1));
      if (args[0].kind() != Kind::kString) return Invalid("wrong type for value; expected string; got " + args[0].TypeName());
      return Value::String(FormatTime(t_, args[0].as_string()));
    }
    if (name == "UTC" || name == "Local") {
      ECO_RETURN_IF_ERROR(want(0));
      GoTime n = t_;
      n.zone = name == "UTC" ? Utc() : LocalZone();
      n.has_mono = false;  // setLoc strips the monotonic reading
      return TimeValue(n);
    }
    if (name == "Location") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::String(t_.z().name);
    }
    if (name == "Zone") {
      ECO_RETURN_IF_ERROR(want(0));
      return Value::String(c.zone.abbr);
    }
    if (name == "Add") {
      ECO_RETURN_IF_ERROR(want(1));
      GoTime n = t_;
      int64_t d = DurationObject::DurationArg(args[0]);
      int64_t ns = n.nsec + d % kSecond;
      n.sec = funcs_internal::WrapAdd(
          n.sec, funcs_internal::WrapAdd(d / kSecond, FloorDiv(ns, kSecond)));
      n.nsec = static_cast<int32_t>(FloorMod(ns, kSecond));
      n.mono = funcs_internal::WrapAdd(n.mono, d);
      return TimeValue(n);
    }
    if (name == "AddDate") {
      ECO_RETURN_IF_ERROR(want(3));
      for (const Value& a : args)
        if (a.kind() != Kind::kInt) return Invalid("wrong type for value; expected int; got " + a.TypeName());
      // Bounded so that the civil arithmetic cannot overflow.
      for (const Value& a : args)
        if (a.as_int() > (int64_t{1} << 30) || a.as_int() < -(int64_t{1} << 30)) return Invalid("AddDate: offset out of range");
      GoTime n = MakeDate(c.year + args[0].as_int(), c.month + args[1].as_int(), c.day + args[2].as_int(), c.hour,
                          c.min, c.sec, t_.nsec, t_.zone);
      return TimeValue(n);
    }
    if (name == "Sub" || name == "Before" || name == "After" || name == "Equal" || name == "Compare") {
      ECO_RETURN_IF_ERROR(want(1));
      const GoTime* o = time_arg(args[0]);
      if (!o) return Invalid("wrong type for value; expected time.Time; got " + args[0].TypeName());
      if (name == "Sub") return DurationValue(SubNs(t_, *o));
      int64_t ds = t_.sec < o->sec ? -1 : t_.sec > o->sec ? 1 : 0, dn = t_.nsec - o->nsec;
      int cmp = ds < 0 ? -1 : ds > 0 ? 1 : dn < 0 ? -1 : dn > 0 ? 1 : 0;
      if (name == "Before") return Value::Bool(cmp < 0);
      if (name == "After") return Value::Bool(cmp > 0);
      return Value::Bool(cmp == 0);
    }
    if (name == "Truncate" || name == "Round") {
      ECO_RETURN_IF_ERROR(want(1));
      int64_t d = DurationObject::DurationArg(args[0]);
      GoTime n = t_;
      n.has_mono = false;
      if (d <= 0) return TimeValue(n);
      // Relative to the zero time, as Go does; done in 128 bits to avoid overflow.
      __int128 total = static_cast<__int128>(t_.sec - kZeroUnix) * kSecond + t_.nsec;
      __int128 r = total % d;
      if (name == "Round" && r + r >= d) r -= d;
      total -= r;
      n.sec = static_cast<int64_t>(total / kSecond) + kZeroUnix;
      n.nsec = static_cast<int32_t>(total % kSecond);
      return TimeValue(n);
    }
    return Object::Call(name, args);
  }

 private:
  GoTime t_;
};

Value TimeValue(GoTime t) { return Value::Obj(std::make_shared<TimeObject>(std::move(t))); }
Value DurationValue(int64_t d) { return Value::Obj(std::make_shared<DurationObject>(d)); }

const GoTime* AsTime(const Value& v) {
  if (v.kind() != Kind::kObject) return nullptr;
  auto* o = dynamic_cast<const TimeObject*>(v.as_object());
  return o ? &o->t() : nullptr;
}

// Sprig's date argument: time.Time, or int/int64 seconds; anything else is now.
GoTime DateArg(const Value& v, bool accept_int32_like) {
  (void)accept_int32_like;
  if (const GoTime* t = AsTime(v)) return *t;
  if (v.is_int()) return Unix(v.as_int(), 0, LocalZone());
  return Now();
}

Status WantTime(const Value& v) {
  if (AsTime(v)) return {};
  return Invalid("wrong type for value; expected time.Time; got " + (v.is_nil() ? std::string("<nil>") : v.TypeName()));
}

std::string DateInZone(const std::string& layout, const Value& date, const std::string& zone) {
  GoTime t = DateArg(date, true);
  auto loc = LoadLocation(zone);
  t.zone = loc.ok() ? *loc : Utc();
  return FormatTime(t, layout);
}

}  // namespace

void AddTimeFuncs(FuncMap* f) {
  using funcs_internal::Add;  // block scope: a unity build would carry a file-scope one on
  Add(f, "now", {}, false, [](CallContext&, const ValueList&) -> Result<Value> { return TimeValue(Now()); });
  Add(f, "date", {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(DateInZone(a[0].as_string(), a[1], "Local"));
  });
  for (const char* name : {"dateInZone", "date_in_zone"}) {
    Add(f, name, {A::kString, A::kAny, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      return Value::String(DateInZone(a[0].as_string(), a[1], a[2].as_string()));
    });
  }
  Add(f, "htmlDate", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(DateInZone("2006-01-02", a[0], "Local"));
  });
  Add(f, "htmlDateInZone", {A::kAny, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    return Value::String(DateInZone("2006-01-02", a[0], a[1].as_string()));
  });
  for (const char* name : {"dateModify", "date_modify"}) {
    Add(f, name, {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      ECO_RETURN_IF_ERROR(WantTime(a[1]));
      auto d = ParseDuration(a[0].as_string());
      if (!d.ok()) return a[1];
      return a[1].as_object()->Call("Add", {DurationValue(*d)});
    });
  }
  for (const char* name : {"mustDateModify", "must_date_modify"}) {
    Add(f, name, {A::kString, A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
      ECO_RETURN_IF_ERROR(WantTime(a[1]));
      ECO_ASSIGN_OR_RETURN(auto d, ParseDuration(a[0].as_string()));
      return a[1].as_object()->Call("Add", {DurationValue(d)});
    });
  }
  Add(f, "ago", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    GoTime t = AsTime(a[0]) ? *AsTime(a[0]) : a[0].is_int() ? Unix(a[0].as_int(), 0, LocalZone()) : Now();
    GoTime now = Now();
    int64_t d = SubNs(now, t);
    return Value::String(DurationString(RoundDuration(d, kSecond)));
  });
  Add(f, "toDate", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    auto t = ParseTime(a[0].as_string(), a[1].as_string(), LocalZone());
    return TimeValue(t.ok() ? *t : GoTime{});
  });
  Add(f, "mustToDate", {A::kString, A::kString}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_ASSIGN_OR_RETURN(auto t, ParseTime(a[0].as_string(), a[1].as_string(), LocalZone()));
    return TimeValue(t);
  });
  Add(f, "unixEpoch", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    ECO_RETURN_IF_ERROR(WantTime(a[0]));
    return Value::String(std::to_string(AsTime(a[0])->sec));
  });
  Add(f, "duration", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    int64_t n = 0;
    if (a[0].kind() == Kind::kString) {
      // strconv.ParseInt(s, 10, 64); errors give 0.
      const std::string& s = a[0].as_string();
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      bool digits_only = !s.empty() && s.find_first_not_of("+-0123456789") == std::string::npos && !std::isspace(static_cast<unsigned char>(s[0]));
      if (digits_only && end && *end == '\0' && errno == 0) n = v;
    } else if (a[0].kind() == Kind::kInt64) {
      n = a[0].as_int();
    }
    return Value::String(DurationString(static_cast<int64_t>(static_cast<uint64_t>(n) * static_cast<uint64_t>(kSecond))));
  });
  Add(f, "durationRound", {A::kAny}, false, [](CallContext&, const ValueList& a) -> Result<Value> {
    int64_t d = 0;
    if (a[0].kind() == Kind::kString) {
      auto p = ParseDuration(a[0].as_string());
      d = p.ok() ? *p : 0;
    } else if (a[0].kind() == Kind::kInt64) {
      d = a[0].as_int();
    } else if (const GoTime* t = AsTime(a[0])) {
      GoTime now = Now();
      d = SubNs(now, *t);
    }
    uint64_t u = static_cast<uint64_t>(d);
    if (d < 0) u = 0 - u;
    constexpr uint64_t kHour = 3600ull * kSecond, kDay = 24 * kHour, kMonth = 30 * kDay, kYear = 365 * kDay;
    constexpr uint64_t kMinute = 60ull * kSecond;
    struct Unit {
      uint64_t size;
      const char* suffix;
    };
    for (Unit unit : {Unit{kYear, "y"}, Unit{kMonth, "mo"}, Unit{kDay, "d"}, Unit{kHour, "h"}, Unit{kMinute, "m"},
                      Unit{static_cast<uint64_t>(kSecond), "s"}}) {
      if (u > unit.size) return Value::String(std::to_string(u / unit.size) + unit.suffix);
    }
    return Value::String("0s");
  });
}

}  // namespace eco::helm
