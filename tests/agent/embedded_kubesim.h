// kube-sim in the test process: the simulated clusters behind its real HTTP
// transport on a loopback port, and eco's client for one of them. Starts
// in milliseconds, so tests using it are unit tests (sanitizer tree too).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim/server.h"
#include "kubesim/sim.h"

namespace eco::testing {

class EmbeddedKubeSim {
 public:
  // One cluster, "c1"; CRDs established and namespaces gone at once.
  static Result<std::unique_ptr<EmbeddedKubeSim>> Start();
  EmbeddedKubeSim() = default;  // use Start
  ~EmbeddedKubeSim();

  k8s::RestConfig Config() const;
  Result<std::shared_ptr<k8s::ClusterClient>> Client() const;

 private:
  std::unique_ptr<kubesim::Simulator> sim_;
  std::unique_ptr<kubesim::Server> server_;
};

}  // namespace eco::testing
