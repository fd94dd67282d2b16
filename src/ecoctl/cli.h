// ecoctl's command line: flags → load → plan → run → print → exit code.
// Every outside dependency (streams, environment, HTTP, sleeping) comes in
// through CliIo so the whole CLI runs in tests without a server.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ecoctl/http_client.h"

namespace eco::ecoctl {

// Exit codes.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // at least one document failed
inline constexpr int kExitUsage = 2;   // bad flags, unreadable or invalid input

inline constexpr const char* kDefaultEndpoint = "http://127.0.0.1:9015";

struct CliIo {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool out_is_tty = false;
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::function<std::string()> read_stdin;  // called only for "-f -"
  std::function<std::unique_ptr<HttpClient>(const ClientConfig&)> make_client;
  std::function<void(int)> sleep_seconds;
  std::string cwd;  // empty: the process's
};

// `args` includes the program name, like argv.
int RunCli(const std::vector<std::string>& args, const CliIo& io);

// RunCli wired to the real process: std streams, getenv, cpp-httplib.
int Main(int argc, char** argv);

}  // namespace eco::ecoctl
