#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace eco::log {

namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::mutex g_mu;
std::function<void(const std::string&)>* g_sink = nullptr;  // guarded by g_mu

// RFC 3339 in UTC with microseconds. gmtime_r needs no time zone file.
std::string Now() {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // room for any int the compiler can imagine
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

}  // namespace

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
  nlohmann::json line = {{"time", Now()},
                         {"level", LevelName(level)},
                         {"component", std::string(component)},
                         {"message", std::string(message)}};
  if (fields.is_object()) {
    for (const auto& [k, v] : fields.items()) line.emplace(k, v);  // never over the standard keys
  }
  // Invalid UTF-8 (a name echoed from a request) is replaced, not thrown.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Write(Level level, std::string_view component, std::string_view message, const nlohmann::json& fields) {
  if (!Enabled(level)) return;
  std::string line = Format(level, component, message, fields);
  std::lock_guard<std::mutex> g(g_mu);
  if (g_sink != nullptr) {
    (*g_sink)(line);
    return;
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void SetSinkForTest(std::function<void(const std::string& line)> sink) {
  static std::function<void(const std::string&)> holder;
  std::lock_guard<std::mutex> g(g_mu);
  holder = std::move(sink);
  g_sink = holder ? &holder : nullptr;
}

}  // namespace eco::log
