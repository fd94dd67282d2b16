#include "embedded_kubesim.h"

#include <utility>

namespace eco::testing {

Result<std::unique_ptr<EmbeddedKubeSim>> EmbeddedKubeSim::Start() {
  auto s = std::make_unique<EmbeddedKubeSim>();
  kubesim::SimOptions so;
  so.crd_establish_delay = std::chrono::milliseconds(0);
  so.namespace_terminate = std::chrono::milliseconds(0);
  s->sim_ = kubesim::Simulator::Create(kubesim::DefaultFleet(1, "c"), so);
  if (!s->sim_) return Internal("kube-sim: could not create the simulated cluster");
  kubesim::ServerOptions o;
  kubesim::Simulator* sim = s->sim_.get();
  o.cluster_exists = [sim](const std::string& name) { return sim->HasCluster(name); };
  ECO_ASSIGN_OR_RETURN(s->server_,
                       kubesim::Server::Start(std::move(o), [sim](const kubesim::HttpRequest& r) {
                         return sim->Handle(r);
                       }));
  return s;
}

EmbeddedKubeSim::~EmbeddedKubeSim() {
  if (server_) server_->Stop();
  if (sim_) sim_->Shutdown();
}

k8s::RestConfig EmbeddedKubeSim::Config() const {
  k8s::RestConfig rc;
  rc.server = "http://127.0.0.1:" + std::to_string(server_->port()) + "/clusters/c1";
  rc.token = sim_->Token("c1");
  rc.cluster_name = "c1";
  return rc;
}

Result<std::shared_ptr<k8s::ClusterClient>> EmbeddedKubeSim::Client() const {
  ECO_ASSIGN_OR_RETURN(std::unique_ptr<k8s::ClusterClient> c, k8s::NewClusterClient(Config()));
  return std::shared_ptr<k8s::ClusterClient>(std::move(c));
}

}  // namespace eco::testing
