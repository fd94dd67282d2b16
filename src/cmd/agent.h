// `eco agent` (docs/agent.md): the agent role, its fleet mode for scale
// rehearsals, and `eco agent manifest`; and the hub's agent server that
// `eco serve`, `eco api` and `eco rsync` start.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "agenthub/server.h"
#include "store/store.h"

namespace eco::cmd {

struct AgentCommand {
  CLI::App* cmd = nullptr;
  CLI::App* manifest = nullptr;
  std::string hub, token, token_file, kubeconfig, hub_ca_file;
  std::string ns;  // "": the pod's namespace in a cluster, else eco-system
  std::string name = "eco-agent";
  std::string fleet_dir;
  size_t workers = 8;
  int drift_seconds = 10;
  int drift_sweep_seconds = 600;
  int reconnect_max_seconds = 60;
  int fleet_start_threads = 16;
  // manifest
  std::string image = "eco:latest";
  std::string pull_policy = "IfNotPresent";
};

void AddAgentCommand(CLI::App& app, AgentCommand* cmd);
int RunAgent(const AgentCommand& cmd);

// Starts the hub's agent server (TLS from the API's --tls-cert/--tls-key
// files when both are given); null after logging why when it cannot.
// `required`: the port was asked for; else (the default port) a port in
// use only warns, and the process serves no agents.
std::unique_ptr<agenthub::Server> StartAgentServer(store::Store& st, const std::string& bind, int port,
                                                   const std::string& tls_cert_file, const std::string& tls_key_file,
                                                   bool required, bool* failed);

}  // namespace eco::cmd
