// What eco's long-running commands share: one JSON object per log line on
// stdout, and a clean stop on SIGINT/SIGTERM.
#pragma once

#include <functional>
#include <string>

namespace eco::cmd {

void Log(const char* level, const std::string& msg);

// Runs `stop` (once) on SIGINT or SIGTERM; ignores SIGPIPE. `stop` must only
// flip flags or shut sockets down: it runs in a signal handler.
void StopOnSignal(std::function<void()> stop);

}  // namespace eco::cmd
