// The controllers as separate processes on loopback: etcd, `eco serve`,
// `eco controller hpa` and `eco controller traffic`, registered at
// /v2/controllers under EMCO's names (replacing the built-ins), against a
// kube-sim fleet whose clusters differ in node labels and capacity.
#include <gtest/gtest.h>

#include <httplib.h>

#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <map>
#include <thread>
#include <sstream>

#include "appcontext/appcontext.h"
#include "context_builders.h"
#include "eco_fixture.h"
#include "etcd_fixture.h"
#include "kubesim_fixture.h"
#include "otlp_receiver.h"
#include "store/etcd_store.h"
#include "test_archives.h"
#include "test_certs.h"

namespace eco::testing {
namespace {

using nlohmann::json;


// A controller process: `eco controller NAME` on the shared etcd.
class ControllerProcess {
 public:
  ControllerProcess(const std::string& which, const std::string& etcd, const std::string& otlp,
                    const std::vector<std::string>& extra) {
    http_ = FreePort();
    grpc_ = FreePort();
    std::vector<std::string> argv{BinaryPath("eco"), "controller", which, "--store", "etcd://" + etcd, "--port",
                                  std::to_string(http_), "--bind", "127.0.0.1", "--grpc-port", std::to_string(grpc_),
                                  "--grpc-bind", "127.0.0.1", "--otlp-endpoint", otlp,
                                  "--allow-plaintext-kubeconfigs"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Process>(argv, dir_.path() + "/log");
    ready_ = WaitUntil(
        [&] {
          httplib::Client c("127.0.0.1", http_);
          auto r = c.Get("/healthz");
          return r && r->status == 200;
        },
        std::chrono::seconds(20));
  }
  bool ready() const { return ready_; }
  int http() const { return http_; }
  int grpc() const { return grpc_; }
  std::string Log() const { return ReadFile(dir_.path() + "/log"); }
  void Kill() { proc_.reset(); }

 private:
  TempDir dir_;
  int http_ = 0, grpc_ = 0;
  std::unique_ptr<Process> proc_;
  bool ready_ = false;
};

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kDIG = kCA + "/deployment-intent-groups/dig";

class ControllersE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err = etcd_.Start();
    ASSERT_TRUE(err.empty()) << err;
    KubeSimOptions ko;
    ko.fleet_file = ECO_TEST_SOURCE_DIR "/controllers/hpa_fleet.yaml";
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    // The gRPC between eco and the controllers runs over mutual TLS: each
    // side presents a certificate of the test's CA (named 127.0.0.1, where
    // the controllers are registered) and checks the other's.
    auto ca = k8s::testing::MakeCa("eco-grpc-ca");
    auto leaf = k8s::testing::MakeLeaf(ca, "eco-grpc", {"localhost"}, {"127.0.0.1"});
    std::ofstream(certs_.path() + "/ca.pem") << ca.cert_pem;
    std::ofstream(certs_.path() + "/cert.pem") << leaf.cert_pem;
    std::ofstream(certs_.path() + "/key.pem") << leaf.key_pem;
    const std::vector<std::string> tls = {"--grpc-tls-cert", certs_.path() + "/cert.pem", "--grpc-tls-key",
                                          certs_.path() + "/key.pem", "--grpc-tls-ca", certs_.path() + "/ca.pem"};
    EcoOptions o;
    o.store = EcoOptions::Store::kEtcd;
    o.etcd_endpoint = etcd_.endpoint();
    // eco sends JSON, the controllers protobuf (the default): one trace, both encodings.
    o.extra_args = {"--otlp-endpoint", otlp_.url(), "--otlp-protocol", "http/json"};
    o.extra_args.insert(o.extra_args.end(), tls.begin(), tls.end());
    eco_ = std::make_unique<EcoServer>(o);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    hpa_ = std::make_unique<ControllerProcess>("hpa", etcd_.endpoint(), otlp_.url(), tls);
    ASSERT_TRUE(hpa_->ready()) << hpa_->Log();
    traffic_ = std::make_unique<ControllerProcess>("traffic", etcd_.endpoint(), otlp_.url(), tls);
    ASSERT_TRUE(traffic_->ready()) << traffic_->Log();
    gac_ = std::make_unique<ControllerProcess>("gac", etcd_.endpoint(), otlp_.url(), tls);
    ASSERT_TRUE(gac_->ready()) << gac_->Log();
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  // Three clusters of the fleet: hpa-fit (AVX nodes, room), hpa-nolabel (no
  // AVX), hpa-small (AVX, one CPU). srv goes to all three by label, the HPA
  // intent keeps hpa-fit; cli goes to hpa-nolabel and reaches srv through
  // the traffic intent.
  void World() {
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    for (const char* n : {"hpa-fit", "hpa-nolabel", "hpa-small"}) {
      Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named(n).dump(), ReadFile(sim_->kubeconfig(n)),
                         "kubeconfig"));
      Ok(c.PostJson(std::string("/v2/cluster-providers/prov/clusters/") + n + "/labels", json{{"clusterLabel", "edge"}}));
    }
    Ok(c.PostJson("/v2/cluster-providers/prov/clusters/hpa-fit/labels", json{{"clusterLabel", "networkpolicy-supported"}}));
    Ok(c.PostJson("/v2/cluster-providers/prov/clusters/hpa-fit/kv-pairs",
                  Doc("sd", {{"kv", {{{"serviceDiscoveryAddress", "10.0.0.5"}}}}})));
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("lc", {{"level", "0"}})));
    for (const char* n : {"hpa-fit", "hpa-nolabel", "hpa-small"}) {
      Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/cluster-references",
                    Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c.PostJson("/v2/projects/p/logical-clouds/lc/instantiate", json::object()), 202);
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kCA + "/apps", Named("srv").dump(), ChartTgz("srv")));
    Ok(c.PostMultipart(kCA + "/apps", Named("cli").dump(), ChartTgz("cli")));
    Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
    Ok(c.PostJson(kCA + "/deployment-intent-groups",
                  Doc("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})));
    Ok(c.PostJson(kDIG + "/generic-placement-intents", Named("gpi")));
    Ok(c.PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                  Doc("srv", {{"app", "srv"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
    Ok(c.PostJson(kDIG + "/generic-placement-intents/gpi/app-intents",
                  Doc("cli", {{"app", "cli"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "hpa-nolabel"}}}}}}})));
    Ok(c.PostJson(kDIG + "/intents",
                  Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}, {"hpa-placement", "hpa1"},
                                             {"hpa-action", "hpa1"}, {"dtc", "tg1"}, {"gac", "gi"}}}})));
    // The controllers' own processes, under EMCO's names.
    Ok(c.PostJson("/v2/controllers", Doc("hpa-placement", {{"host", "127.0.0.1"}, {"port", hpa_->grpc()}, {"type", "placement"}, {"priority", 1}})));
    Ok(c.PostJson("/v2/controllers", Doc("hpa-action", {{"host", "127.0.0.1"}, {"port", hpa_->grpc()}, {"type", "action"}, {"priority", 1}})));
    Ok(c.PostJson("/v2/controllers", Doc("dtc", {{"host", "127.0.0.1"}, {"port", traffic_->grpc()}, {"type", "action"}, {"priority", 2}})));
    Ok(c.PostJson("/v2/controllers", Doc("gac", {{"host", "127.0.0.1"}, {"port", gac_->grpc()}, {"type", "action"}, {"priority", 1}})));

    // HPA intents go to the HPA controller's REST API, as with EMCO's hpa-plc.
    EcoClient h(hpa_->http());
    const std::string H = kDIG + "/hpa-intents";
    Ok(h.PostJson(H, Doc("hpa1", {{"app", "srv"}})));
    Ok(h.PostJson(H + "/hpa1/hpa-resource-consumers",
                  Doc("c1", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "r1-srv"}, {"container", "srv"}, {"replicas", 2}})));
    Ok(h.PostJson(H + "/hpa1/hpa-resource-consumers/c1/resource-requirements",
                  Doc("cpu", {{"allocatable", true}, {"mandatory", true}, {"weight", 1},
                                   {"resource", {{"name", "cpu"}, {"requests", 1500}, {"limits", 1500}, {"units", "m"}}}})));
    Ok(h.PostJson(H + "/hpa1/hpa-resource-consumers/c1/resource-requirements",
                  Doc("avx", {{"allocatable", false}, {"mandatory", true}, {"weight", 1},
                                   {"resource", {{"key", "feature.node.kubernetes.io/cpu-cpuid.AVX512F"}, {"value", "true"}}}})));
    // Traffic intents go to the traffic controller's REST API.
    EcoClient t(traffic_->http());
    const std::string T = kDIG + "/traffic-group-intents";
    Ok(t.PostJson(T, Named("tg1")));
    Ok(t.PostJson(T + "/tg1/inbound-intents",
                  Doc("srv", {{"app", "srv"}, {"appLabel", "app=srv"}, {"serviceName", "srv"}, {"port", 80}, {"protocol", "TCP"}})));
    Ok(t.PostJson(T + "/tg1/inbound-intents/srv/clients",
                  Doc("cli", {{"app", "cli"}, {"appLabel", "app=cli"}, {"serviceName", "cli"},
                                   {"namespaces", json::array()}, {"cidrs", json::array()}})));
    // Generic K8s intents go to the gac controller's REST API: a ConfigMap
    // filled by a JSON patch on every cluster of srv.
    EcoClient g(gac_->http());
    const std::string G = kDIG + "/generic-k8s-intents";
    Ok(g.PostJson(G, Named("gi")));
    Ok(g.PostJson(G + "/gi/resources", Doc("cm", {{"app", "srv"}, {"newObject", "true"},
                                                  {"resourceGVK", {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "srv-extra"}}}})));
    Ok(g.PostJson(G + "/gi/resources/cm/customizations",
                  Doc("data", {{"clusterSpecific", "false"},
                               {"clusterInfo", {{"scope", "label"}, {"clusterProvider", ""}, {"mode", "allow"}}},
                               {"patchType", "json"},
                               {"patchJson", json::array({{{"op", "add"}, {"path", "/data"}, {"value", {{"mode", "remote"}}}}})}})));
    Ok(c.PostJson(kDIG + "/approve", json::object()), 202);
  }

  appcontext::ResourceSet Resources(store::Store& st, const std::string& id, const std::string& app,
                                    const std::string& cluster) {
    appcontext::Contexts ctx(st);
    auto rs = ctx.Resources(id, app, cluster);
    EXPECT_TRUE(rs.ok()) << rs.status().ToString();
    return rs.ok() ? *rs : appcontext::ResourceSet{};
  }

  OtlpReceiver otlp_;
  TempDir certs_;
  EtcdProcess etcd_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::unique_ptr<ControllerProcess> hpa_, traffic_, gac_;
};

// One instantiation is one trace: the caller's traceparent, eco's server
// span, the instantiate stages, the gRPC call to the out-of-process HPA
// controller and that controller's own span, each the child of the one
// before, exported by both processes to the OTLP endpoint.
TEST_F(ControllersE2E, InstantiateIsOneTraceAcrossEcoAndAController) {
  World();
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string caller_span = "00f067aa0ba902b7";
  httplib::Client c("127.0.0.1", eco_->port());
  auto r = c.Post(kDIG + "/instantiate", httplib::Headers{{"traceparent", "00-" + trace_id + "-" + caller_span + "-01"}},
                  "{}", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;

  // Spans arrive within the exporters' flush interval (1 s).
  auto find = [&](const std::string& service, const std::string& name) -> std::optional<json> {
    for (const auto& s : otlp_.spans()) {
      if (s["service"] == service && s["name"] == name && s["traceId"] == trace_id) return s;
    }
    return std::nullopt;
  };
  const std::string route =
      "POST /v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/"
      "{deploymentIntentGroup}/instantiate";
  ASSERT_TRUE(WaitUntil([&] { return find("eco-controller-hpa", "FilterClusters").has_value(); },
                        std::chrono::seconds(20)))
      << otlp_.spans().size() << " spans; hpa log:\n" << hpa_->Log();
  if (!WaitUntil([&] { return find("eco-serve", route).has_value(); }, std::chrono::seconds(20))) {
    std::string names;
    for (const auto& s : otlp_.spans()) {
      if (s["traceId"] == trace_id) names += s["service"].get<std::string>() + ": " + s.value("name", "") + "\n";
    }
    FAIL() << "no server span named " << route << "; the trace holds:\n" << names;
  }
  json server = *find("eco-serve", route);
  EXPECT_EQ(server["parentSpanId"], caller_span);
  EXPECT_EQ(server["kind"], 2);
  auto instantiate = find("eco-serve", "instantiate");
  ASSERT_TRUE(instantiate);
  EXPECT_EQ((*instantiate)["parentSpanId"], server["spanId"]);
  auto controllers = find("eco-serve", "controllers");
  ASSERT_TRUE(controllers);
  EXPECT_EQ((*controllers)["parentSpanId"], (*instantiate)["spanId"]);
  auto call = find("eco-serve", "controller FilterClusters");
  ASSERT_TRUE(call);
  EXPECT_EQ((*call)["parentSpanId"], (*controllers)["spanId"]);
  EXPECT_EQ((*call)["kind"], 3);
  json served = *find("eco-controller-hpa", "FilterClusters");
  EXPECT_EQ(served["parentSpanId"], (*call)["spanId"]);
  EXPECT_EQ(served["kind"], 2);
  // Store calls made for the request are its children too.
  auto placement = find("eco-serve", "placement and rendering");
  ASSERT_TRUE(placement);
  EXPECT_EQ((*placement)["parentSpanId"], (*instantiate)["spanId"]);
  bool store_child = false;
  for (const auto& s : otlp_.spans()) {
    if (s["traceId"] == trace_id && s.value("name", "").rfind("store ", 0) == 0) store_child = true;
  }
  EXPECT_TRUE(store_child);
  // rsync's work on the clusters joins the trace: the event's span is the
  // child of a span of the request, each cluster's span the event's child,
  // and the Kubernetes calls children of a cluster's span.
  ASSERT_TRUE(WaitUntil([&] { return find("eco-serve", "rsync instantiate").has_value(); },
                        std::chrono::seconds(30)));
  json event = *find("eco-serve", "rsync instantiate");
  bool parent_in_request = false;
  std::map<std::string, json> clusters;  // span id -> "rsync cluster" span
  for (const auto& s : otlp_.spans()) {
    if (s["traceId"] != trace_id) continue;
    if (s["spanId"] == event["parentSpanId"]) parent_in_request = true;
    if (s["name"] == "rsync cluster" && s["parentSpanId"] == event["spanId"]) clusters[s["spanId"]] = s;
  }
  EXPECT_TRUE(parent_in_request);
  ASSERT_FALSE(clusters.empty());
  std::set<std::string> attributes;
  for (const auto& a : clusters.begin()->second["attributes"]) attributes.insert(a["key"]);
  EXPECT_TRUE(attributes.count("eco.cluster") && attributes.count("eco.app"));
  int k8s_calls = 0;
  for (const auto& s : otlp_.spans()) {
    if (s["traceId"] == trace_id && s.value("name", "").rfind("k8s ", 0) == 0 &&
        clusters.count(s.value("parentSpanId", ""))) {
      ++k8s_calls;
    }
  }
  EXPECT_GT(k8s_calls, 0);
  // Both encodings arrived (eco JSON, the controller protobuf), all decoded.
  const auto types = otlp_.content_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "application/json"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "application/x-protobuf"), types.end());
  EXPECT_EQ(otlp_.bad_requests(), 0);
  // The request made no trace of its own: its server span is in the caller's.
  for (const auto& s : otlp_.spans()) {
    if (s["service"] == "eco-serve" && s["name"] == route) {
      EXPECT_EQ(s["traceId"], trace_id);
    }
  }
}

TEST_F(ControllersE2E, RemoteHpaTrafficAndGacControllersShapeThePlan) {
  World();
  EcoClient c = eco_->client();
  auto r = c.PostJson(kDIG + "/instantiate", json::object());
  ASSERT_EQ(r.status, 202) << r.Describe() << "\nhpa:\n" << hpa_->Log() << "\ntraffic:\n" << traffic_->Log();
  std::string id = c.Get(kDIG + "/status").json()["states"]["statusctxid"];

  auto st = store::OpenEtcdStore(etcd_.StoreOptions());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  appcontext::Contexts ctx(**st);
  // HPA placement kept the one cluster with AVX nodes and room for 2 x 1500m.
  auto srv = ctx.Clusters(id, "srv");
  ASSERT_TRUE(srv.ok());
  ASSERT_EQ(srv->size(), 1u);
  EXPECT_EQ((*srv)[0].key(), "prov+hpa-fit");
  // HPA action edited the workload; traffic added the NetworkPolicy.
  auto rs = Resources(**st, id, "srv", "prov+hpa-fit");
  const appcontext::Resource* d = rs.Find("r1-srv+Deployment");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->object["spec"]["replicas"], 2);
  EXPECT_EQ(d->object["spec"]["template"]["spec"]["nodeSelector"]["feature.node.kubernetes.io/cpu-cpuid.AVX512F"], "true");
  EXPECT_EQ(d->object["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1500m");
  EXPECT_NE(rs.Find("tg1-srv+NetworkPolicy"), nullptr);
  // The gac process added its ConfigMap.
  const appcontext::Resource* cm = rs.Find("srv-extra+ConfigMap");
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ(cm->object["data"]["mode"], "remote");
  // The client's cluster can find the server: headless Service + Endpoints.
  auto cli = Resources(**st, id, "cli", "prov+hpa-nolabel");
  ASSERT_NE(cli.Find("srv+Endpoints"), nullptr);
  EXPECT_EQ(cli.Find("srv+Service")->object["spec"]["clusterIP"], "None");

  // A consumer no cluster can host fails an update with the controller's
  // message, and leaves the deployed plan alone.
  EcoClient h(hpa_->http());
  Ok(h.PutJson(kDIG + "/hpa-intents/hpa1/hpa-resource-consumers/c1/resource-requirements/cpu",
               Doc("cpu", {{"allocatable", true}, {"mandatory", true}, {"weight", 1},
                                {"resource", {{"name", "cpu"}, {"requests", 64}}}})),
     200);
  r = c.PostJson(kDIG + "/update", json::object());
  EXPECT_EQ(r.status, 400) << r.Describe();
  EXPECT_NE(r.body.find("hpa-placement"), std::string::npos) << r.body;
  json states = c.Get(kDIG + "/status").json()["states"];
  EXPECT_EQ(states["actions"].back()["instance"], id);

  // With the traffic controller gone, terminate cannot run its hook: 503,
  // and the DIG stays instantiated.
  traffic_->Kill();
  r = c.PostJson(kDIG + "/terminate", json::object());
  EXPECT_EQ(r.status, 503) << r.Describe();
  EXPECT_NE(r.body.find("dtc"), std::string::npos) << r.body;
  EXPECT_EQ(c.Get(kDIG + "/status").json()["states"]["actions"].back()["state"], "Instantiated");
}

}  // namespace
}  // namespace eco::testing
