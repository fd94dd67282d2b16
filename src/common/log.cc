#include "common/log.h"

#include <charconv>
#include <cmath>
#include "common/trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

namespace eco::log {

namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};

// High-volume lines (the access log, debug) wait in memory for at most
// kFlushEvery (or until kFlushBytes have gathered) and go out in one write:
// a write per line, under a lock every HTTP thread takes for its access-log
// line, cost a quarter of the API's throughput. Other lines are written at
// once, with what waits before them; a process killed outright loses at
// most kFlushEvery of access and debug lines.
constexpr auto kFlushEvery = std::chrono::milliseconds(100);
constexpr size_t kFlushBytes = 64 * 1024;

class Writer {
 public:
  ~Writer() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (flusher_.joinable()) flusher_.join();
    std::lock_guard<std::mutex> g(mu_);
    FlushLocked();
  }

  void Line(std::string line, bool at_once) {
    std::lock_guard<std::mutex> g(mu_);
    if (sink_) {
      sink_(line);
      return;
    }
    buf_.append(line).push_back('\n');
    if (at_once || buf_.size() >= kFlushBytes) {
      FlushLocked();
    } else if (!flusher_.joinable() && !stop_) {
      flusher_ = std::thread([this] { Run(); });
    }
  }

  void Flush() {
    std::lock_guard<std::mutex> g(mu_);
    FlushLocked();
  }

  void SetSink(std::function<void(const std::string&)> sink) {
    std::lock_guard<std::mutex> g(mu_);
    FlushLocked();
    sink_ = std::move(sink);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, kFlushEvery, [this] { return stop_; });
      FlushLocked();
    }
  }

  void FlushLocked() {
    if (buf_.empty()) return;
    std::fwrite(buf_.data(), 1, buf_.size(), stdout);
    std::fflush(stdout);
    buf_.clear();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::string buf_;                                  // guarded by mu_
  std::function<void(const std::string&)> sink_;     // guarded by mu_
  bool stop_ = false;                                // guarded by mu_
  std::thread flusher_;
};

Writer& TheWriter() {
  static Writer w;  // flushed at exit
  return w;
}

// RFC 3339 in UTC with microseconds, appended to `out`. gmtime_r needs no
// time zone file; the date and time of day are formatted once per second
// per thread (a busy server writes thousands of lines a second).
void AppendNow(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  thread_local std::time_t cached_secs = -1;
  thread_local char cached[96];  // room for any int the compiler can imagine
  thread_local size_t cached_len = 0;
  if (secs != cached_secs) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    const int n = std::snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    cached_len = n > 0 ? std::min(static_cast<size_t>(n), sizeof cached - 1) : 0;
    cached_secs = secs;
  }
  out.append(cached, cached_len);
  char frac[8] = {'.'};
  long long f = us % 1000000;
  for (int i = 6; i >= 1; --i, f /= 10) frac[i] = static_cast<char>('0' + f % 10);
  frac[7] = 'Z';
  out.append(frac, 8);
}

std::string Head(Level level, std::string_view component, std::string_view message) {
  std::string out;
  out.reserve(200 + message.size());
  out.append("{\"time\":\"");
  AppendNow(out);
  out.append("\",\"level\":\"").append(LevelName(level));
  out.append("\",\"component\":");
  AppendJsonString(out, component);
  out.append(",\"message\":");
  AppendJsonString(out, message);
  // Inside a span: its ids, so logs and traces meet.
  if (const trace::SpanContext* span = trace::Current()) {
    out.append(",\"trace_id\":\"");
    span->AppendTraceIdHex(out);
    out.append("\",\"span_id\":\"");
    span->AppendSpanIdHex(out);
    out.push_back('"');
  }
  return out;
}

bool Standard(std::string_view k) {
  return k == "time" || k == "level" || k == "component" || k == "message" || k == "trace_id" || k == "span_id";
}

}  // namespace

// `s` as a JSON string: quoted, escaped, invalid UTF-8 replaced by U+FFFD
// (nlohmann's dump does the same, at the price of a JSON value per string).
void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    // Runs of printable ASCII (most of every line) are copied at once.
    size_t run = i;
    while (run < s.size()) {
      const auto r = static_cast<unsigned char>(s[run]);
      if (r < 0x20 || r >= 0x80 || r == '"' || r == '\\') break;
      ++run;
    }
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(static_cast<char>(c));
      } else if (c < 0x20) {
        out.append("\\u00").push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlongs, no surrogates) is
    // copied; anything else becomes U+FFFD, one byte at a time.
    size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && n == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  out.push_back('"');
}

std::optional<Level> ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "error") return Level::kError;
  return std::nullopt;
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

void SetLevel(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
Level GetLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

std::string Format(Level level, std::string_view component, std::string_view message,
                   const nlohmann::json& fields) {
  // The standard keys first, for people reading the lines too.
  std::string out = Head(level, component, message);
  if (fields.is_object()) {
    for (const auto& [k, v] : fields.items()) {
      if (Standard(k)) continue;
      out.push_back(',');
      AppendJsonString(out, k);
      out.push_back(':');
      out.append(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  out.push_back('}');
  return out;
}

void Write(Level level, std::string_view component, std::string_view message, const nlohmann::json& fields) {
  if (!Enabled(level)) return;
  TheWriter().Line(Format(level, component, message, fields), /*at_once=*/level != Level::kDebug);
}

void Write(Level level, std::string_view component, std::string_view message, std::initializer_list<Field> fields) {
  Write(level, component, message, std::span<const Field>(fields.begin(), fields.size()));
}

void Write(Level level, std::string_view component, std::string_view message, std::span<const Field> fields) {
  if (!Enabled(level)) return;
  std::string out = Head(level, component, message);
  char num[64];
  for (const Field& f : fields) {
    if (Standard(f.key)) continue;
    out.push_back(',');
    AppendJsonString(out, f.key);
    out.push_back(':');
    switch (f.kind) {
      case Field::Kind::kString:
        AppendJsonString(out, f.str);
        break;
      // to_chars: a tenth of snprintf's cost, on every access-log line.
      case Field::Kind::kInt:
        out.append(num, std::to_chars(num, num + sizeof num, f.i).ptr);
        break;
      case Field::Kind::kDouble:
        if (!std::isfinite(f.d)) {
          out.append("null");  // JSON has no NaN or infinity
        } else if (auto r = std::to_chars(num, num + sizeof num, f.d, std::chars_format::fixed, 3); r.ec == std::errc()) {
          out.append(num, r.ptr);
        } else {
          out.append("null");  // beyond 64 digits
        }
        break;
    }
  }
  out.push_back('}');
  TheWriter().Line(std::move(out), level >= Level::kWarn);
}

void Flush() { TheWriter().Flush(); }

void SetSinkForTest(std::function<void(const std::string& line)> sink) { TheWriter().SetSink(std::move(sink)); }

}  // namespace eco::log
