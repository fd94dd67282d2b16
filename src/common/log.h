// eco's log: one JSON object per line on stdout, which fluentd's `json`
// parser takes as it is:
//   {"time":"2026-11-30T11:30:18.123456Z","level":"info","component":"rsync",
//    "message":"...", <fields>}
// Lines below the current level are not written; the level can change at
// any time (flag at start, PUT /log-level while running). Callers never
// put secrets (kubeconfigs, tokens, keys, certificates, request bodies) in
// a message or a field.
#pragma once

#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <span>
#include <string_view>

namespace eco::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn" (or "warning"), "error"; nullopt otherwise.
std::optional<Level> ParseLevel(std::string_view name);
const char* LevelName(Level level);

void SetLevel(Level level);
Level GetLevel();
bool Enabled(Level level);

// Writes one line when `level` is enabled. `fields` (a JSON object, may be
// null) are added to the line; they cannot replace the standard keys.
// Appends `s` as a JSON string: quoted, escaped, invalid UTF-8 replaced by
// U+FFFD (as nlohmann's dump does, without a JSON value per string).
void AppendJsonString(std::string& out, std::string_view s);

void Write(Level level, std::string_view component, std::string_view message,
           const nlohmann::json& fields = nullptr);

// Lines are written at once, except debug lines and info lines written
// with Fields (the access log, one per request): those wait in memory for
// at most 0.1 s (one write for many) or until exit. Flush writes what
// waits now.
void Flush();

// A structured field without building a JSON value: for lines written on
// every request (the access log), where nlohmann::json objects cost.
struct Field {
  std::string_view key;
  enum class Kind { kString, kInt, kDouble } kind = Kind::kString;
  std::string_view str;
  long long i = 0;
  double d = 0;
  Field(std::string_view k, std::string_view v) : key(k), kind(Kind::kString), str(v) {}
  Field(std::string_view k, const char* v) : key(k), kind(Kind::kString), str(v) {}
  Field(std::string_view k, int v) : key(k), kind(Kind::kInt), i(v) {}
  Field(std::string_view k, long long v) : key(k), kind(Kind::kInt), i(v) {}
  Field(std::string_view k, double v) : key(k), kind(Kind::kDouble), d(v) {}
};
// Info and debug lines written this way are buffered (see Flush).
void Write(Level level, std::string_view component, std::string_view message, std::initializer_list<Field> fields);
// The same with fields chosen at run time.
void Write(Level level, std::string_view component, std::string_view message, std::span<const Field> fields);

// The line as Write would print it (for tests and for Write itself).
std::string Format(Level level, std::string_view component, std::string_view message,
                   const nlohmann::json& fields);

// Tests: lines go to `sink` instead of stdout (null: stdout again).
void SetSinkForTest(std::function<void(const std::string& line)> sink);

}  // namespace eco::log
