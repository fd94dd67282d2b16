#include "ecoctl/cli.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "ecoctl/completion.h"
#include "ecoctl/document.h"
#include "ecoctl/fleet_plan.h"
#include "ecoctl/output.h"
#include "ecoctl/plan.h"
#include "ecoctl/runner.h"
#include "ecoctl/status.h"

namespace eco::ecoctl {
namespace {

struct Flags {
  std::string endpoint;
  double timeout = 30;
  std::string token;
  bool insecure = false;
  std::string ca_file;
  bool dry_run = false;
  bool no_color = false;

  std::vector<std::string> files;
  std::vector<std::string> values;
  std::string anchor;
  bool stop = false;
  int wait = 0;
  std::string output;
  bool strict = false;
};

// The endpoint: --endpoint, else $ECO_ENDPOINT, else the default.
Result<Endpoint> EndpointFor(const Flags& f, const CliIo& io) {
  std::string text = f.endpoint;
  if (text.empty() && io.getenv) text = io.getenv("ECO_ENDPOINT").value_or("");
  if (text.empty()) text = kDefaultEndpoint;
  if (!(f.timeout > 0)) return Invalid("--timeout must be positive");
  return ParseEndpoint(text);
}

// Colour on a terminal unless --no-color or $NO_COLOR says otherwise.
bool UseColour(const Flags& f, const CliIo& io) {
  if (!io.out_is_tty || f.no_color) return false;
  return !(io.getenv && io.getenv("NO_COLOR").has_value());
}

ClientConfig ConfigFor(const Flags& f, const Endpoint& e) {
  ClientConfig cc;
  cc.endpoint = e;
  cc.timeout_seconds = f.timeout;
  cc.token = f.token;
  cc.insecure = f.insecure;
  cc.ca_file = f.ca_file;
  return cc;
}

// Options every subcommand takes.
void AddDocumentOptions(CLI::App* sub, Flags& f) {
  // One argument per flag, so a trailing anchor is not swallowed as a file.
  sub->add_option("-f,--filename", f.files, "EMCO-style YAML file (repeatable; - = stdin)")
      ->allow_extra_args(false);
  sub->add_option("-v,--values", f.values,
                  "values file for {{ .Key }} substitution in the YAML (repeatable, later wins)")
      ->allow_extra_args(false);
  sub->add_option("anchor", f.anchor,
                  "instead of -f: an anchor such as projects/p1 (apply POSTs it without a body)");
  sub->add_flag("-s,--stop", f.stop, "stop at the first failed document");
}

int Usage(const CliIo& io, const std::string& message) {
  *io.err << "ecoctl: " << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

int Execute(Verb verb, const Flags& f, const CliIo& io) {
  if (f.files.empty() == f.anchor.empty()) {
    return Usage(io, "give either -f FILE or an anchor");
  }
  if (!f.values.empty() && f.files.empty()) return Usage(io, "-v needs -f");

  auto endpoint = EndpointFor(f, io);
  if (!endpoint.ok()) return Usage(io, endpoint.status().message());

  std::vector<Document> docs;
  if (!f.anchor.empty()) {
    auto d = CommandLineDocument(f.anchor);
    if (!d.ok()) return Usage(io, d.status().message());
    docs.push_back(std::move(d).value());
  } else {
    LoadOptions lo;
    lo.files = f.files;
    lo.values_files = f.values;
    lo.cwd = io.cwd;
    // get/delete address resources by name; the uploads are not needed.
    lo.require_files = verb == Verb::kApply;
    if (std::find(f.files.begin(), f.files.end(), "-") != f.files.end() && io.read_stdin) {
      lo.stdin_text = io.read_stdin();
    }
    auto loaded = LoadDocuments(lo);
    if (!loaded.ok()) {
      *io.err << "ecoctl: " << loaded.status().message() << "\n";
      return kExitUsage;
    }
    docs = std::move(loaded).value();
  }
  if (docs.empty()) {
    *io.err << "ecoctl: no documents to " << VerbName(verb) << "\n";
    return kExitOk;
  }

  auto steps = Plan(docs, verb, /*label_with_source=*/f.files.size() > 1);
  if (!steps.ok()) {
    *io.err << "ecoctl: " << steps.status().message() << "\n";
    return kExitUsage;
  }

  const bool color = UseColour(f, io);
  const LineStyle style = StyleFor(*steps, color);

  if (f.dry_run) {
    *io.out << "dry run: nothing is sent to " << endpoint->ToString() << "\n";
    for (const auto& s : *steps) *io.out << FormatPlanStep(s, style) << "\n";
    return kExitOk;
  }

  std::unique_ptr<HttpClient> client = io.make_client ? io.make_client(ConfigFor(f, *endpoint)) : nullptr;
  if (!client) return Usage(io, "no HTTP client available");

  // With -o the bodies own stdout (so they can be piped); lines go to stderr.
  const bool bodies_only = verb == Verb::kGet && !f.output.empty();
  const BodyFormat format = f.output == "yaml" ? BodyFormat::kYaml : BodyFormat::kJson;
  int bodies_printed = 0;

  RunOptions ro;
  ro.verb = verb;
  ro.strict = f.strict;
  ro.stop_on_failure = f.stop;
  ro.wait_after_accepted = f.wait;
  ro.sleep_seconds = io.sleep_seconds;
  ro.on_result = [&](const DocResult& r) {
    const bool has_body = r.outcome == Outcome::kOk && !r.body.empty();
    if (bodies_only) {
      if (r.outcome == Outcome::kFailed) {
        *io.err << FormatResult(r, LineStyle{false, style.label_width, style.path_width}) << "\n";
      } else if (has_body) {
        if (format == BodyFormat::kYaml && bodies_printed > 0) *io.out << "---\n";
        *io.out << FormatBody(r.body, format);
        ++bodies_printed;
      }
      return;
    }
    *io.out << FormatResult(r, style) << "\n";
    if (has_body) *io.out << FormatBody(r.body, BodyFormat::kJson);
    io.out->flush();
  };
  RunSummary sum = RunPlan(*steps, *client, ro);

  if (!bodies_only) {
    *io.out << FormatSummary(sum, verb) << "\n";
  } else if (!sum.success()) {
    *io.err << FormatSummary(sum, verb) << "\n";
  }
  return sum.success() ? kExitOk : kExitFailed;
}

// `ecoctl status DIG`: the table, or with --wait a progress line per poll
// until the DIG is Instantiated and Ready (exit 1 when time runs out).
int ExecuteStatus(const Flags& f, const std::string& dig, const CliIo& io) {
  auto endpoint = EndpointFor(f, io);
  if (!endpoint.ok()) return Usage(io, endpoint.status().message());
  auto path = DigStatusPath(dig);
  if (!path.ok()) return Usage(io, path.status().message());
  std::unique_ptr<HttpClient> client = io.make_client ? io.make_client(ConfigFor(f, *endpoint)) : nullptr;
  if (!client) return Usage(io, "no HTTP client available");
  const bool color = UseColour(f, io);

  HttpRequest req;
  req.method = "GET";
  req.path = *path + "?status=ready";
  req.accept = "application/json";
  nlohmann::json last;
  std::string shown;
  for (int waited = 0;; ++waited) {
    auto r = client->Send(req);
    if (!r.ok()) {
      *io.err << "ecoctl: " << r.status().message() << "\n";
      return kExitFailed;
    }
    last = nlohmann::json::parse(r->body, nullptr, false);
    if (r->status != 200 || !last.is_object()) {
      const std::string why = last.is_object() ? last.value("message", r->body) : r->body;
      *io.err << "ecoctl: GET " << req.path << ": " << r->status << " " << why << "\n";
      return kExitFailed;
    }
    if (f.wait <= 0) break;
    const ReadySummary sum = Summarize(last);
    const std::string line = FormatProgress(sum);
    if (io.out_is_tty) {
      // One line redrawn in place: a bar of the resources ready.
      const int width = 30;
      const int filled = sum.resources > 0 ? width * sum.ready_resources / sum.resources : 0;
      *io.err << "\r[" << std::string(static_cast<size_t>(filled), '#')
              << std::string(static_cast<size_t>(width - filled), '.') << "] " << line << "\033[K";
      io.err->flush();
    } else if (line != shown) {
      *io.err << line << "\n";
    }
    shown = line;
    if (sum.done()) break;
    if (waited >= f.wait) {
      if (io.out_is_tty) *io.err << "\n";
      *io.out << FormatStatusTable(last, color);
      *io.err << "ecoctl: " << dig << " is not Ready after " << f.wait << " s\n";
      return kExitFailed;
    }
    if (io.sleep_seconds) io.sleep_seconds(1);
  }
  if (f.wait > 0 && io.out_is_tty) *io.err << "\n";
  if (!f.output.empty()) {
    *io.out << FormatBody(last.dump(), f.output == "yaml" ? BodyFormat::kYaml : BodyFormat::kJson);
    return kExitOk;
  }
  *io.out << FormatStatusTable(last, color);
  // Drift is in the deployed view: one more read, for the table only.
  HttpRequest dep = req;
  dep.path = *path + "?status=deployed";
  if (auto r = client->Send(dep); r.ok() && r->status == 200) {
    nlohmann::json d = nlohmann::json::parse(r->body, nullptr, false);
    if (d.is_object()) *io.out << FormatDrift(d, color);
  }
  return kExitOk;
}

// `ecoctl rollout ACTION DIG`: steers the DIG's staged rollout.
int ExecuteRollout(const Flags& f, const std::string& action, const std::string& dig, const CliIo& io) {
  auto endpoint = EndpointFor(f, io);
  if (!endpoint.ok()) return Usage(io, endpoint.status().message());
  auto path = DigStatusPath(dig);
  if (!path.ok()) return Usage(io, path.status().message());
  HttpRequest req;
  req.method = "POST";
  req.path = path->substr(0, path->size() - std::string("/status").size()) + "/rollout/" + action;
  req.accept = "application/json";
  req.content_type = "application/json";
  req.body = "{}";
  if (f.dry_run) {
    *io.out << req.method << " " << req.path << "\n";
    return kExitOk;
  }
  std::unique_ptr<HttpClient> client = io.make_client ? io.make_client(ConfigFor(f, *endpoint)) : nullptr;
  if (!client) return Usage(io, "no HTTP client available");
  auto r = client->Send(req);
  if (!r.ok()) {
    *io.err << "ecoctl: " << r.status().message() << "\n";
    return kExitFailed;
  }
  if (r->status / 100 != 2) {
    nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
    const std::string why = body.is_object() ? body.value("message", r->body) : r->body;
    *io.err << "ecoctl: rollout " << action << " " << dig << ": " << r->status << " " << why << "\n";
    return kExitFailed;
  }
  *io.out << "rollout " << action << " requested for " << dig << "\n";
  return kExitOk;
}

// `ecoctl plan -f FILE`: the fleet plan of every DIG the file describes.
int ExecuteFleetPlan(const Flags& f, const CliIo& io) {
  if (f.files.empty()) return Usage(io, "give -f FILE with the deployment intent group's documents");
  auto endpoint = EndpointFor(f, io);
  if (!endpoint.ok()) return Usage(io, endpoint.status().message());
  LoadOptions lo;
  lo.files = f.files;
  lo.values_files = f.values;
  lo.cwd = io.cwd;
  lo.require_files = false;
  if (std::find(f.files.begin(), f.files.end(), "-") != f.files.end() && io.read_stdin) lo.stdin_text = io.read_stdin();
  auto docs = LoadDocuments(lo);
  if (!docs.ok()) {
    *io.err << "ecoctl: " << docs.status().message() << "\n";
    return kExitUsage;
  }
  const std::vector<std::string> digs = FleetPlanDigs(*docs);
  if (digs.empty()) return Usage(io, "the file names no deployment intent group (a DIG document or its lifecycle documents)");
  std::unique_ptr<HttpClient> client = io.make_client ? io.make_client(ConfigFor(f, *endpoint)) : nullptr;
  if (!client) return Usage(io, "no HTTP client available");
  const bool color = UseColour(f, io);
  int failed = 0;
  for (const auto& dig : digs) {
    HttpRequest req;
    req.method = "POST";
    req.path = dig + "/plan";
    req.accept = "application/json";
    auto r = client->Send(req);
    if (!r.ok()) {
      *io.err << "ecoctl: POST " << req.path << ": " << r.status().message() << "\n";
      return kExitFailed;
    }
    if (r->status != 200) {
      *io.err << "ecoctl: POST " << req.path << ": " << r->status << " " << ErrorMessage(r->body) << "\n";
      ++failed;
      continue;
    }
    if (!f.output.empty()) {
      *io.out << FormatBody(r->body, f.output == "yaml" ? BodyFormat::kYaml : BodyFormat::kJson);
      continue;
    }
    nlohmann::json plan = nlohmann::json::parse(r->body, nullptr, false);
    if (!plan.is_object()) {
      *io.err << "ecoctl: POST " << req.path << ": the answer is not a JSON object\n";
      ++failed;
      continue;
    }
    *io.out << FormatFleetPlan(plan, dig.substr(std::string("/v2/").size()), color);
  }
  return failed == 0 ? kExitOk : kExitFailed;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliIo& io) {
  CLI::App app{"ecoctl: apply, get and delete EMCO-style YAML resources on eco's /v2 API",
               "ecoctl"};
  app.fallthrough();  // global flags may also follow the subcommand
  app.require_subcommand(1);
  Flags f;
  app.add_option("--endpoint", f.endpoint,
                 std::string("eco API URL (env ECO_ENDPOINT; default ") + kDefaultEndpoint + ")");
  app.add_option("--timeout", f.timeout, "seconds to wait for connect and for each answer")
      ->default_val(30);
  app.add_option("--token", f.token, "bearer token sent with every request");
  app.add_flag("--insecure", f.insecure, "https: do not verify the server's certificate");
  app.add_option("--cacert", f.ca_file, "https: CA bundle to verify the server with");
  app.add_flag("--dry-run", f.dry_run, "print the requests without sending them");
  app.add_flag("--no-color", f.no_color, "never colour the output");

  CLI::App* apply = app.add_subcommand(
      "apply", "create each document's resource (POST; PUT if it exists), in file order");
  AddDocumentOptions(apply, f);
  apply->add_option("-w,--wait", f.wait, "seconds to wait after a 202 Accepted (emcoctl -w)")
      ->check(CLI::NonNegativeNumber);

  CLI::App* get = app.add_subcommand("get", "show each document's resource (GET)");
  AddDocumentOptions(get, f);
  get->add_option("-o,--output", f.output, "print only the resources, as json or yaml")
      ->check(CLI::IsMember({"json", "yaml"}));

  CLI::App* del =
      app.add_subcommand("delete", "delete each document's resource (DELETE), in reverse order");
  AddDocumentOptions(del, f);
  del->add_flag("--strict", f.strict, "treat 404 Not Found as a failure");

  std::string dig;
  CLI::App* status = app.add_subcommand(
      "status", "a deployment intent group's ready status: clusters x apps (--wait: until Ready)");
  status->add_option("dig", dig, "PROJECT/COMPOSITEAPP/VERSION/DIG")->required();
  status->add_option("-w,--wait", f.wait, "seconds to wait for Instantiated and Ready, with progress")
      ->check(CLI::NonNegativeNumber);
  status->add_option("-o,--output", f.output, "print the status answer as json or yaml instead of the table")
      ->check(CLI::IsMember({"json", "yaml"}));

  CLI::App* fleet = app.add_subcommand(
      "plan", "what instantiate or update of each deployment intent group in the file would do, by wave and cluster");
  fleet->add_option("-f,--filename", f.files, "EMCO-style YAML file naming the DIG (repeatable; - = stdin)")
      ->allow_extra_args(false)
      ->required();
  fleet->add_option("-v,--values", f.values, "values file for {{ .Key }} substitution in the YAML (repeatable)")
      ->allow_extra_args(false);
  fleet->add_option("-o,--output", f.output, "print the plan answer as json or yaml instead of the diff")
      ->check(CLI::IsMember({"json", "yaml"}));

  std::string action;
  CLI::App* rollout = app.add_subcommand(
      "rollout", "steer a deployment intent group's staged rollout: pause, resume, approve (the next wave) or abort");
  rollout->add_option("action", action, "pause, resume, approve or abort")
      ->required()
      ->check(CLI::IsMember({"pause", "resume", "approve", "abort"}));
  rollout->add_option("dig", dig, "PROJECT/COMPOSITEAPP/VERSION/DIG")->required();

  std::string shell;
  CLI::App* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(ecoctl completion bash)");
  completion->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, *io.out, *io.err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (apply->parsed()) return Execute(Verb::kApply, f, io);
  if (get->parsed()) return Execute(Verb::kGet, f, io);
  if (status->parsed()) return ExecuteStatus(f, dig, io);
  if (fleet->parsed()) return ExecuteFleetPlan(f, io);
  if (rollout->parsed()) return ExecuteRollout(f, action, dig, io);
  if (completion->parsed()) {
    *io.out << CompletionScript(shell);
    return kExitOk;
  }
  return Execute(Verb::kDelete, f, io);
}

int Main(int argc, char** argv) {
  // A server closing the socket mid-request must not kill us with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  CliIo io;
  io.out = &std::cout;
  io.err = &std::cerr;
  io.out_is_tty = ::isatty(STDOUT_FILENO) == 1;
  io.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  io.read_stdin = [] {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  };
  io.make_client = [](const ClientConfig& c) { return NewHttplibClient(c); };
  io.sleep_seconds = [](int s) { std::this_thread::sleep_for(std::chrono::seconds(s)); };
  std::vector<std::string> args(argv, argv + argc);
  try {
    return RunCli(args, io);
  } catch (const std::exception& e) {
    // Last line of defence: an unexpected exception is a bug, not a crash.
    std::cerr << "ecoctl: internal error: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace eco::ecoctl
