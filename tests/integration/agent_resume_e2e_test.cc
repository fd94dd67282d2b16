// What an agent cluster lives through: its stream cut for a while (a TCP
// relay between agent and hub drops every connection) while revisions
// pile up, after which only the newer ones are sent; and the hub killed
// with -9 during an update while an object is deleted on the cluster by
// hand: the agent puts it back before the hub returns, and everything ends
// as desired with a true status.
#include <gtest/gtest.h>

#include <csignal>
#include <regex>

#include "context_builders.h"
#include "eco_fixture.h"
#include "k8s/client.h"
#include "k8s/kubeconfig.h"
#include "kubesim_fixture.h"
#include "live_objects.h"
#include "tcp_proxy.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;

const std::string kCA = "/v2/projects/p/composite-apps/ca/v1";
const std::string kLC = "/v2/projects/p/logical-clouds/admin";
std::string Dig(const std::string& d) { return kCA + "/deployment-intent-groups/" + d; }

// A chart whose ConfigMap carries `marker`: an update changes an object.
std::string Chart(const std::string& marker) {
  return ChartTgzWithTemplates(
      "web", "replicaCount: 1\nmarker: " + marker + "\n",
      {{"deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n"
        "  replicas: {{ .Values.replicaCount }}\n  selector:\n    matchLabels:\n      app: web\n  template:\n"
        "    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n        - name: web\n"
        "          image: nginx:stable\n"},
       {"configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n"
        "  marker: {{ .Values.marker | quote }}\n"}});
}

class AgentResumeE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    KubeSimOptions ko;
    ko.clusters = 2;
    sim_ = std::make_unique<KubeSim>(ko);
    ASSERT_TRUE(sim_->ok()) << sim_->error();
    agent_port_ = FreePort();
    EcoOptions eo;
    eo.extra_args = {"--agent-port", std::to_string(agent_port_)};
    eco_ = std::make_unique<EcoServer>(eo);
    ASSERT_TRUE(eco_->ready()) << eco_->error();
    proxy_ = std::make_unique<TcpProxy>(agent_port_);
    ASSERT_GT(proxy_->port(), 0);
  }

  static void Ok(const HttpResponse& r, int code = 201) { ASSERT_EQ(r.status, code) << r.Describe(); }

  std::shared_ptr<k8s::ClusterClient> Client(const std::string& cluster) {
    return ClientOfKubeconfig(sim_->kubeconfig(cluster));
  }

  // cluster-1 by its agent (through the relay), cluster-2 pushed; a
  // composite app with one DIG per name in `digs`, not yet instantiated.
  void Onboard(const std::vector<std::string>& digs) {
    EcoClient c = eco_->client();
    Ok(c.PostJson("/v2/cluster-providers", Named("prov")));
    Ok(c.PostJson("/v2/cluster-providers/prov/clusters",
                  json{{"metadata", {{"name", "cluster-1"}}}, {"spec", {{"delivery", "agent"}}}}));
    Ok(c.PostMultipart("/v2/cluster-providers/prov/clusters", Named("cluster-2").dump(),
                       ReadFile(sim_->kubeconfig("cluster-2")), "kubeconfig"));
    for (const char* n : {"cluster-1", "cluster-2"}) {
      Ok(c.PostJson(std::string("/v2/cluster-providers/prov/clusters/") + n + "/labels", json{{"clusterLabel", "edge"}}));
    }
    auto boot = c.PostJson("/v2/cluster-providers/prov/clusters/cluster-1/agent-bootstrap", json::object());
    ASSERT_EQ(boot.status, 201) << boot.Describe();
    token_ = boot.json()["token"];
    StartAgent();
    Ok(c.PostJson("/v2/projects", Named("p")));
    Ok(c.PostJson("/v2/projects/p/logical-clouds", Doc("admin", {{"level", "0"}})));
    for (const char* n : {"cluster-1", "cluster-2"}) {
      Ok(c.PostJson(kLC + "/cluster-references", Doc(std::string("r-") + n, {{"clusterProvider", "prov"}, {"cluster", n}})));
    }
    Ok(c.PostJson(kLC + "/instantiate", json::object()), 202);
    ASSERT_TRUE(WaitFor(kLC, "Instantiated")) << last_.dump() << agent_->ReadLog();
    Ok(c.PostJson("/v2/projects/p/composite-apps", Doc("ca", {{"compositeAppVersion", "v1"}})));
    Ok(c.PostMultipart(kCA + "/apps", Named("web").dump(), Chart("m0")));
    Ok(c.PostJson(kCA + "/composite-profiles", Named("cp")));
    Ok(c.PostMultipart(kCA + "/composite-profiles/cp/profiles", Doc("web-profile", {{"app", "web"}}).dump(), ProfileTgz()));
    for (const auto& d : digs) {
      // enforce: the agent repairs drift on its own while the hub is away.
      Ok(c.PostJson(kCA + "/deployment-intent-groups",
                    Doc(d, {{"compositeProfile", "cp"}, {"version", d}, {"logicalCloud", "admin"},
                            {"driftPolicy", "enforce"}})));
      Ok(c.PostJson(Dig(d) + "/generic-placement-intents", Named("gpi")));
      Ok(c.PostJson(Dig(d) + "/generic-placement-intents/gpi/app-intents",
                    Doc("web", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}}}})));
      Ok(c.PostJson(Dig(d) + "/intents", Doc("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})));
      Ok(c.PostJson(Dig(d) + "/approve", json::object()), 202);
    }
  }

  void StartAgent() {
    agent_.reset();
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinaryPath("eco"), "agent", "--hub", "127.0.0.1:" + std::to_string(proxy_->port()),
                                 "--token", token_, "--kubeconfig", sim_->kubeconfig("cluster-1"), "--drift-seconds",
                                 "1", "--reconnect-max-seconds", "2"},
        dir_.path() + "/agent.log");
  }

  bool WaitFor(const std::string& base, const std::string& want, const std::string& query = "status=deployed",
               const char* field = "deployedStatus") {
    EcoClient c = eco_->client();
    return WaitUntil(
        [&] {
          last_ = c.Get(base + "/status?" + query).json();
          return last_.is_object() && last_.value(field, "") == want;
        },
        std::chrono::seconds(90));
  }

  // Every resource of `dig` Applied on both clusters, and the same objects there.
  void ExpectSameOnBoth(const std::string& release, const std::string& marker) {
    auto k1 = Client("cluster-1"), k2 = Client("cluster-2");
    for (auto [av, kind, name] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"apps/v1", "Deployment", release + "-web"}, {"v1", "ConfigMap", release + "-cfg"}}) {
      auto a = k1->Get(av, kind, "default", name);
      auto b = k2->Get(av, kind, "default", name);
      ASSERT_TRUE(a.ok()) << kind << " " << name << ": " << a.status().ToString() << "\n" << agent_->ReadLog();
      ASSERT_TRUE(b.ok()) << kind << " " << name << ": " << b.status().ToString();
      EXPECT_EQ(Comparable(*a), Comparable(*b)) << kind << " " << name;
      if (kind == "ConfigMap") {
        EXPECT_EQ((*a)["data"]["marker"], marker);
      }
    }
  }

  size_t Connects() {
    const std::string log = agent_->ReadLog();
    size_t n = 0;
    for (size_t at = log.find("connected to the hub as"); at != std::string::npos;
         at = log.find("connected to the hub as", at + 1)) {
      ++n;
    }
    return n;
  }

  // The numbers of the agent's last "connected" line: published, held.
  std::pair<uint64_t, uint64_t> LastConnect() {
    static const std::regex re("it has published ([0-9]+), we have ([0-9]+)");
    const std::string log = agent_->ReadLog();
    std::pair<uint64_t, uint64_t> out{0, 0};
    for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) {
      out = {std::stoull((*it)[1]), std::stoull((*it)[2])};
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<KubeSim> sim_;
  std::unique_ptr<EcoServer> eco_;
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<Process> agent_;
  std::string token_;
  int agent_port_ = 0;
  json last_;
};

TEST_F(AgentResumeE2E, APartitionPilesUpRevisionsAndOnlyTheNewerAreSent) {
  ASSERT_NO_FATAL_FAILURE(Onboard({"a", "b"}));
  EcoClient c = eco_->client();
  Ok(c.PostJson(Dig("a") + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(Dig("a"), "Instantiated")) << last_.dump() << agent_->ReadLog();

  // The partition: the stream and every new attempt die at the relay.
  proxy_->Cut();
  ASSERT_TRUE(WaitUntil([&] { return agent_->ReadLog().find("stream to the hub ended") != std::string::npos; },
                        std::chrono::seconds(60)))
      << agent_->ReadLog();
  // Meanwhile: an update of one DIG and a second DIG; the pushed cluster
  // takes both, the agent cluster waits.
  auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), Chart("m1"));
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
  Ok(c.PostJson(Dig("a") + "/update", json::object()), 202);
  Ok(c.PostJson(Dig("b") + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto k2 = Client("cluster-2");
        auto a = k2->Get("v1", "ConfigMap", "default", "a-cfg");
        auto b = k2->Get("v1", "ConfigMap", "default", "b-cfg");
        return a.ok() && (*a)["data"]["marker"] == "m1" && b.ok();
      },
      std::chrono::seconds(60)));
  auto k1 = Client("cluster-1");
  EXPECT_EQ((*k1->Get("v1", "ConfigMap", "default", "a-cfg"))["data"]["marker"], "m0");
  EXPECT_EQ(k1->Get("v1", "ConfigMap", "default", "b-cfg").status().code(), Code::kNotFound);

  // Healed: the agent says what it has, and gets only what is newer.
  const size_t connects = Connects();
  proxy_->ResetCounts();
  proxy_->Heal();
  ASSERT_TRUE(WaitUntil([&] { return Connects() > connects; }, std::chrono::seconds(60))) << agent_->ReadLog();
  ASSERT_TRUE(WaitFor(Dig("a"), "Instantiated")) << last_.dump() << agent_->ReadLog();
  ASSERT_TRUE(WaitFor(Dig("b"), "Instantiated")) << last_.dump() << agent_->ReadLog();
  ExpectSameOnBoth("a", "m1");
  ExpectSameOnBoth("b", "m1");
  const auto [published, held] = LastConnect();
  EXPECT_GT(held, 0u) << agent_->ReadLog();
  EXPECT_GE(published, held + 2) << "the update and the second DIG piled up";
  agent_->Kill(SIGTERM);
  const std::string log = agent_->ReadLog();
  static const std::regex last("the last stream brought ([0-9]+) publications \\(([0-9]+) bytes\\); ([0-9]+) publications were sent again");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, last)) << log;
  const uint64_t got = std::stoull(m[1]);
  EXPECT_EQ(std::stoull(m[3]), 0u) << "a publication the agent held was sent again";
  // Started again, it says what it holds: exactly what it held at the heal
  // plus what that stream brought, which was what it lacked then (and what
  // was published after), never everything again.
  EXPECT_GE(got, published - held);
  const size_t before_restart = Connects();
  StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return Connects() > before_restart; }, std::chrono::seconds(30))) << agent_->ReadLog();
  const auto [total, holds] = LastConnect();
  EXPECT_EQ(holds, held + got) << agent_->ReadLog();
  EXPECT_LT(got, total) << "a full resync after the partition";
}

TEST_F(AgentResumeE2E, HubKilledDuringAnUpdateWhileTheAgentRepairsTheCluster) {
  ASSERT_NO_FATAL_FAILURE(Onboard({"a"}));
  EcoClient c = eco_->client();
  Ok(c.PostJson(Dig("a") + "/instantiate", json::object()), 202);
  ASSERT_TRUE(WaitFor(Dig("a"), "Instantiated")) << last_.dump() << agent_->ReadLog();
  ExpectSameOnBoth("a", "m0");

  auto put = c.PutMultipart(kCA + "/apps/web", Named("web").dump(), Chart("m1"));
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.Describe();
  Ok(c.PostJson(Dig("a") + "/update", json::object()), 202);
  eco_->Kill9();
  // With the hub down, someone deletes an object on the agent cluster: the
  // agent puts it back on its own.
  auto k1 = Client("cluster-1");
  ASSERT_TRUE(WaitUntil([&] { return k1->Get("apps/v1", "Deployment", "default", "a-web").ok(); },
                        std::chrono::seconds(30)));
  ASSERT_TRUE(k1->Delete("apps/v1", "Deployment", "default", "a-web", k8s::Propagation::kBackground).ok());
  ASSERT_TRUE(WaitUntil([&] { return k1->Get("apps/v1", "Deployment", "default", "a-web").ok(); },
                        std::chrono::seconds(30)))
      << "not restored while the hub was down\n" << agent_->ReadLog();

  ASSERT_TRUE(eco_->Restart()) << eco_->error();
  ASSERT_TRUE(WaitFor(Dig("a"), "Instantiated")) << last_.dump() << agent_->ReadLog();
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto cm = k1->Get("v1", "ConfigMap", "default", "a-cfg");
        return cm.ok() && (*cm)["data"]["marker"] == "m1";
      },
      std::chrono::seconds(60)))
      << agent_->ReadLog();
  ExpectSameOnBoth("a", "m1");
  // The status is true: every resource of the agent cluster Applied, Ready.
  ASSERT_TRUE(WaitFor(Dig("a"), "Ready", "status=ready", "readyStatus")) << last_.dump() << agent_->ReadLog();
  auto st = c.Get(Dig("a") + "/status?status=deployed").json();
  EXPECT_EQ(st.value("deployedStatus", ""), "Instantiated") << st.dump();
  EXPECT_FALSE(st["deployedCounts"].contains("Failed")) << st.dump();
  EXPECT_FALSE(st["deployedCounts"].contains("Pending")) << st.dump();
}

}  // namespace
}  // namespace eco::testing
