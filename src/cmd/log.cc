#include "cmd/log.h"

#include <csignal>
#include <cstdio>

namespace eco::cmd {

namespace {

std::function<void()>* g_stop = nullptr;

void OnSignal(int) {
  if (g_stop && *g_stop) (*g_stop)();
}

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

void Log(const char* level, const std::string& msg) {
  std::printf("{\"level\":\"%s\",\"component\":\"eco\",\"message\":\"%s\"}\n", level, JsonEscape(msg).c_str());
  std::fflush(stdout);
}

void StopOnSignal(std::function<void()> stop) {
  static std::function<void()> holder;
  holder = std::move(stop);
  g_stop = &holder;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
}

}  // namespace eco::cmd
