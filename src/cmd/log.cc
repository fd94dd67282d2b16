#include "cmd/log.h"

#include "common/log.h"

#include <csignal>
#include <cstdio>

namespace eco::cmd {

namespace {

std::function<void()>* g_stop = nullptr;

void OnSignal(int) {
  if (g_stop && *g_stop) (*g_stop)();
}

}  // namespace

void Log(const char* level, const std::string& msg) {
  eco::log::Write(eco::log::ParseLevel(level).value_or(eco::log::Level::kInfo), "eco", msg);
}

void AddLogLevelFlag(CLI::App* cmd, std::string* level) {
  cmd->add_option("--log-level", *level, "debug, info, warn or error (PUT /log-level changes it while running)")
      ->default_val("info")
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error"}));
}

void ApplyLogLevel(const std::string& level) {
  if (auto l = eco::log::ParseLevel(level)) eco::log::SetLevel(*l);
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
