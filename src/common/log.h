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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
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
void Write(Level level, std::string_view component, std::string_view message,
           const nlohmann::json& fields = nullptr);

// The line as Write would print it (for tests and for Write itself).
std::string Format(Level level, std::string_view component, std::string_view message,
                   const nlohmann::json& fields);

// Tests: lines go to `sink` instead of stdout (null: stdout again).
void SetSinkForTest(std::function<void(const std::string& line)> sink);

}  // namespace eco::log
