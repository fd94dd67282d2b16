// ecoctl end to end: the real `ecoctl` binary against a real `eco serve` on
// loopback, with an EMCO-style YAML file that uploads a kubeconfig and a
// chart made by tar(1).
#include <gtest/gtest.h>

#include <regex>
#include <httplib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "kubesim_fixture.h"
#include "process.h"

namespace eco::ecoctl {
namespace {

using eco::testing::BinaryPath;
using eco::testing::FreePort;
using eco::testing::Process;
using eco::testing::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

struct CtlRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

class EcoctlIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    if (!fs::exists(BinaryPath("eco"))) GTEST_SKIP() << "eco is not built: " << BinaryPath("eco");
    ASSERT_TRUE(fs::exists(BinaryPath("ecoctl"))) << BinaryPath("ecoctl");
    port_ = FreePort();
    ASSERT_GT(port_, 0);
    server_ = std::make_unique<Process>(
        std::vector<std::string>{BinaryPath("eco"), "serve", "--port", std::to_string(port_),
                                 "--bind", "127.0.0.1", "--data-dir", dir_.path() + "/data"},
        dir_.path() + "/eco.log");
    ASSERT_TRUE(server_->started());
    ASSERT_TRUE(eco::testing::WaitForPort(port_, std::chrono::seconds(20))) << server_->ReadLog();
    httplib::Client c("127.0.0.1", port_);
    bool healthy = false;
    for (int i = 0; i < 100 && !healthy; ++i) {
      auto r = c.Get("/healthz");
      healthy = r && r->status == 200;
      if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(healthy) << server_->ReadLog();
    MakeInputs();
  }

  std::string Endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Runs the real binary from `cwd`; ECO_ENDPOINT points at the test server.
  CtlRun Ctl(const std::vector<std::string>& args, const std::string& cwd = "") {
    static int n = 0;
    const std::string log = dir_.path() + "/ecoctl-" + std::to_string(++n) + ".log";
    // sh: cd to `cwd`, export ECO_ENDPOINT, exec ecoctl with `args`.
    std::vector<std::string> argv = {
        "/bin/sh",
        "-c",
        "cd \"$1\" && shift && export ECO_ENDPOINT=\"$1\" && shift && exec \"$@\"",
        "sh",
        cwd.empty() ? dir_.path() : cwd,
        Endpoint(),
        BinaryPath("ecoctl")};
    for (const auto& a : args) argv.push_back(a);
    Process p(argv, log);
    int status = 0;
    CtlRun r;
    if (p.Wait(std::chrono::seconds(60), &status) && WIFEXITED(status))
      r.exit_code = WEXITSTATUS(status);
    r.output = Read(log);
    return r;
  }

  void MakeInputs() {
    const fs::path d = dir_.path();
    Write(d / "inputs/kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: edge1
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: abc}
contexts:
- name: edge1
  context: {cluster: edge1, user: admin}
current-context: edge1
)");
    Write(d / "chart/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n");
    Write(d / "chart/web/values.yaml", "greeting: hello\n");
    Write(d / "chart/web/templates/configmap.yaml",
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n"
          "  greeting: {{ .Values.greeting }}\n");
    const std::string tar =
        "tar czf '" + (d / "inputs/web.tgz").string() + "' -C '" + (d / "chart").string() + "' web";
    ASSERT_EQ(std::system(tar.c_str()), 0) << tar;

    // Paths in `file:` are relative to the YAML file's directory here; the
    // runs below start elsewhere to exercise that fallback.
    Write(d / "inputs/resources.yaml", R"(# Everything ecoctl needs for one app on one cluster.
version: emco/v2
resourceContext:
  anchor: projects
metadata:
  name: proj1
  description: ecoctl integration
---
version: emco/v2
resourceContext:
  anchor: cluster-providers
metadata:
  name: prov1
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/prov1/clusters
metadata:
  name: edge1
file: kubeconfig
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/prov1/clusters/edge1/labels
clusterLabel: edge
---
version: emco/v2
resourceContext:
  anchor: projects/proj1/composite-apps
metadata:
  name: shop
spec:
  compositeAppVersion: v1
---
version: emco/v2
resourceContext:
  anchor: projects/proj1/composite-apps/shop/v1/apps
metadata:
  name: web
  description: the web front end
file: web.tgz
)");
  }

  TempDir dir_;
  int port_ = -1;
  std::unique_ptr<Process> server_;
};

TEST_F(EcoctlIntegration, ApplyReapplyGetDelete) {
  const std::string yaml = dir_.path() + "/inputs/resources.yaml";
  const std::string elsewhere = dir_.path() + "/chart";

  CtlRun apply = Ctl({"apply", "-f", yaml}, elsewhere);
  ASSERT_EQ(apply.exit_code, 0) << apply.output << "\n--- eco log:\n" << server_->ReadLog();
  EXPECT_EQ(Count(apply.output, "201 created"), 6) << apply.output;
  EXPECT_NE(apply.output.find("apply: 6 ok, 0 failed"), std::string::npos) << apply.output;

  // What the server stored is what the YAML said, uploads included.
  httplib::Client c("127.0.0.1", port_);
  auto app = c.Get("/v2/projects/proj1/composite-apps/shop/v1/apps/web",
                   {{"Accept", "application/octet-stream"}});
  ASSERT_TRUE(app);
  EXPECT_EQ(app->status, 200);
  EXPECT_EQ(app->body, Read(dir_.path() + "/inputs/web.tgz"));
  auto label = c.Get("/v2/cluster-providers/prov1/clusters/edge1/labels/edge",
                     {{"Accept", "application/json"}});
  ASSERT_TRUE(label);
  EXPECT_EQ(label->status, 200) << label->body;

  // Idempotent: the same file again changes nothing and succeeds.
  CtlRun again = Ctl({"apply", "-f", yaml}, elsewhere);
  EXPECT_EQ(again.exit_code, 0) << again.output << "\n--- eco log:\n" << server_->ReadLog();
  EXPECT_EQ(Count(again.output, "created"), 0) << again.output;
  EXPECT_EQ(Count(again.output, "unchanged") + Count(again.output, "updated"), 6) << again.output;

  // A changed description is PUT.
  std::string changed = Read(yaml);
  changed.replace(changed.find("ecoctl integration"), 18, "changed description");
  Write(dir_.path() + "/inputs/changed.yaml", changed);
  CtlRun update = Ctl({"apply", "-f", dir_.path() + "/inputs/changed.yaml"}, elsewhere);
  EXPECT_EQ(update.exit_code, 0) << update.output;
  EXPECT_NE(update.output.find("PUT     /v2/projects/proj1"), std::string::npos) << update.output;
  auto proj = c.Get("/v2/projects/proj1");
  ASSERT_TRUE(proj);
  EXPECT_EQ(json::parse(proj->body)["metadata"]["description"], "changed description");

  CtlRun get = Ctl({"get", "-f", yaml, "-o", "json"});
  ASSERT_EQ(get.exit_code, 0) << get.output;
  EXPECT_NE(get.output.find("\"name\": \"proj1\""), std::string::npos) << get.output;
  EXPECT_NE(get.output.find("\"clusterLabel\": \"edge\""), std::string::npos) << get.output;
  EXPECT_NE(get.output.find("\"compositeAppVersion\": \"v1\""), std::string::npos) << get.output;
  EXPECT_NE(get.output.find("\"description\": \"the web front end\""), std::string::npos)
      << get.output;

  CtlRun get_yaml = Ctl({"get", "-f", yaml, "-o", "yaml"});
  ASSERT_EQ(get_yaml.exit_code, 0) << get_yaml.output;
  EXPECT_NE(get_yaml.output.find("name: edge1"), std::string::npos) << get_yaml.output;

  CtlRun del = Ctl({"delete", "-f", yaml});
  ASSERT_EQ(del.exit_code, 0) << del.output << "\n--- eco log:\n" << server_->ReadLog();
  // Children first: the app line comes before the project line.
  EXPECT_LT(del.output.find("/v2/projects/proj1/composite-apps/shop/v1/apps/web"),
            del.output.find("/v2/projects/proj1 "))
      << del.output;
  EXPECT_EQ(Count(del.output, "deleted"), 6) << del.output;
  auto gone = c.Get("/v2/projects/proj1");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);

  // Deleting again: "not found" is fine, unless --strict.
  CtlRun del2 = Ctl({"delete", "-f", yaml});
  EXPECT_EQ(del2.exit_code, 0) << del2.output;
  EXPECT_EQ(Count(del2.output, "404 not found"), 6) << del2.output;
  EXPECT_EQ(Ctl({"delete", "--strict", "-f", yaml}).exit_code, 1);
}

TEST_F(EcoctlIntegration, FailureReportsTheServerMessage) {
  // A composite app under a project that does not exist.
  Write(dir_.path() + "/orphan.yaml", R"(version: emco/v2
resourceContext:
  anchor: projects/nope/composite-apps
metadata:
  name: ca
spec:
  compositeAppVersion: v1
)");
  // Ask the server directly what it says, then expect ecoctl to print it.
  httplib::Client c("127.0.0.1", port_);
  auto direct = c.Post("/v2/projects/nope/composite-apps",
                       R"({"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}})",
                       "application/json");
  ASSERT_TRUE(direct);
  ASSERT_GE(direct->status, 400);
  const std::string message = json::parse(direct->body).value("message", "");
  ASSERT_FALSE(message.empty()) << direct->body;

  CtlRun r = Ctl({"apply", "-f", dir_.path() + "/orphan.yaml"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(std::to_string(direct->status) + " "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("apply: 0 ok, 1 failed"), std::string::npos) << r.output;
}

TEST_F(EcoctlIntegration, BadInputExitsTwoAndRefusedConnectionOne) {
  Write(dir_.path() + "/old.yaml", "version: emco/v1\nresourceContext: {anchor: projects}\n");
  CtlRun bad = Ctl({"apply", "-f", dir_.path() + "/old.yaml"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("document 1"), std::string::npos) << bad.output;

  const int dead = FreePort();
  CtlRun refused =
      Ctl({"--endpoint", "http://127.0.0.1:" + std::to_string(dead), "get", "projects/proj1"});
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("cannot connect to http://127.0.0.1:" + std::to_string(dead)),
            std::string::npos)
      << refused.output;
}

TEST_F(EcoctlIntegration, TemplatedFileWithValues) {
  // Go template actions over the values: one project per list item, with a
  // pipeline and a string literal, as emcoctl renders them.
  Write(dir_.path() + "/t.yaml", R"({{- range .Projects }}
---
version: emco/v2
resourceContext:
  anchor: projects
metadata:
  name: {{ .Name }}
  description: {{- " " -}}{{ get . "Description" | default "none" | quote }}
{{- end }}
)");
  Write(dir_.path() + "/values.yaml",
        "Projects:\n- {Name: tproj, Description: from values}\n- {Name: tproj2}\n");
  CtlRun r = Ctl({"apply", "-f", dir_.path() + "/t.yaml", "-v", dir_.path() + "/values.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  httplib::Client c("127.0.0.1", port_);
  auto p = c.Get("/v2/projects/tproj");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->status, 200);
  EXPECT_EQ(json::parse(p->body)["metadata"]["description"], "from values");
  auto p2 = c.Get("/v2/projects/tproj2");
  ASSERT_TRUE(p2);
  ASSERT_EQ(p2->status, 200) << p2->body;
  EXPECT_EQ(json::parse(p2->body)["metadata"]["description"], "none");

  // A key the values lack is bad input (exit 2), named; nothing is sent.
  Write(dir_.path() + "/t.yaml", "version: emco/v2\nresourceContext: {anchor: projects}\n"
                                 "metadata: {name: {{ .Missing }}}\n");
  CtlRun bad = Ctl({"apply", "-f", dir_.path() + "/t.yaml", "-v", dir_.path() + "/values.yaml"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("Missing"), std::string::npos) << bad.output;
}

// The quickstart's example, as a user runs it: six simulated clusters, the
// templated files applied with values, then `ecoctl status --wait` until
// every cluster reports its part Ready; placement by label and by name.
TEST_F(EcoctlIntegration, TwoTierExampleReachesReadyOnTheFleet) {
  const fs::path src = fs::path(ECO_SOURCE_DIR) / "examples/two-tier";
  eco::testing::KubeSimOptions ko;
  ko.fleet_file = (src / "fleet.yaml").string();
  eco::testing::KubeSim sim(ko);
  ASSERT_TRUE(sim.ok()) << sim.error();
  const fs::path ex = fs::path(dir_.path()) / "two-tier";
  fs::copy(src, ex, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  ASSERT_EQ(std::system(("cd '" + ex.string() + "' && ./make-archives.sh >/dev/null").c_str()), 0);
  fs::remove_all(ex / "kubeconfigs");
  fs::copy(sim.kubeconfig_dir(), ex / "kubeconfigs", fs::copy_options::recursive);

  for (const char* f : {"prerequisites.yaml", "app.yaml", "instantiate.yaml"}) {
    CtlRun r = Ctl({"apply", "-f", f, "-v", "values.yaml"}, ex.string());
    ASSERT_EQ(r.exit_code, 0) << f << ":\n" << r.output;
  }
  CtlRun st = Ctl({"status", "demo/twotier/v1/twotier-dig", "--wait", "50"}, ex.string());
  ASSERT_EQ(st.exit_code, 0) << st.output << "\n" << server_->ReadLog().substr(0, 3000);
  EXPECT_NE(st.output.find("twotier-dig: Instantiated"), std::string::npos) << st.output;
  // Each row: cluster, connectivity, when it was last seen, then per app.
  const std::regex seen("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z  ");
  const std::string rows = std::regex_replace(st.output, seen, "<seen>  ");
  EXPECT_NE(rows.find("central+core1  Available     <seen>  4/4    -"), std::string::npos) << st.output;
  for (const char* edge : {"edge1", "edge2", "edge3", "edge4"}) {
    EXPECT_NE(rows.find(std::string("edges+") + edge + "    Available     <seen>  -      5/5"), std::string::npos)
        << edge << "\n" << st.output;
  }
  // Nothing of the app on core2; the database only on core1, the frontend only on the edges.
  auto has = [&](const std::string& cluster, const std::string& name) {
    return sim.Objects(cluster).find("\"name\":\"" + name + "\"") != std::string::npos;
  };
  EXPECT_TRUE(has("core1", "r1-db"));
  EXPECT_FALSE(has("core1", "r1-web"));
  EXPECT_TRUE(has("edge3", "r1-web"));
  EXPECT_FALSE(has("edge3", "r1-db"));
  EXPECT_EQ(sim.Objects("core2").find("app.eco.io/context"), std::string::npos);

  // The HPA example: offered every edge, placed only where a node has
  // AVX-512 (edge3, edge4), its Deployment given replicas, node selector and
  // CPU requests.
  const fs::path hpa = fs::path(dir_.path()) / "hpa";
  fs::copy(fs::path(ECO_SOURCE_DIR) / "examples/hpa", hpa,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  ASSERT_EQ(std::system(("cd '" + hpa.string() + "' && ./make-archives.sh >/dev/null").c_str()), 0);
  for (const char* f : {"app.yaml", "instantiate.yaml"}) {
    CtlRun r = Ctl({"apply", "-f", f, "-v", "values.yaml"}, hpa.string());
    ASSERT_EQ(r.exit_code, 0) << f << ":\n" << r.output;
  }
  CtlRun h = Ctl({"status", "demo/inference/v1/inference-dig", "--wait", "50"}, hpa.string());
  ASSERT_EQ(h.exit_code, 0) << h.output;
  EXPECT_NE(h.output.find("edges+edge3"), std::string::npos) << h.output;
  EXPECT_NE(h.output.find("edges+edge4"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("edges+edge1"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("edges+edge2"), std::string::npos) << h.output;
  const std::string edge3 = sim.Objects("edge3");
  EXPECT_NE(edge3.find("\"nodeSelector\":{\"feature.node.kubernetes.io/cpu-cpuid.AVX512F\":\"true\"}"),
            std::string::npos);
  EXPECT_NE(edge3.find("\"requests\":{\"cpu\":\"2\"}"), std::string::npos);
  EXPECT_FALSE(has("edge1", "infer"));

  // The traffic example: the two-tier charts again (archives made above),
  // the database on core2 admitting only the frontend, every edge finding
  // "db" at core2's address.
  const fs::path traffic = fs::path(dir_.path()) / "traffic";
  fs::copy(fs::path(ECO_SOURCE_DIR) / "examples/traffic", traffic,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const char* f : {"prerequisites.yaml", "app.yaml", "instantiate.yaml"}) {
    CtlRun r = Ctl({"apply", "-f", f, "-v", "values.yaml"}, traffic.string());
    ASSERT_EQ(r.exit_code, 0) << f << ":\n" << r.output;
  }
  CtlRun t = Ctl({"status", "demo/shop/v1/shop-dig", "--wait", "50"}, traffic.string());
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const std::string core2 = sim.Objects("core2");
  EXPECT_NE(core2.find("\"kind\":\"NetworkPolicy\""), std::string::npos) << core2.substr(0, 2000);
  const std::string edge1 = sim.Objects("edge1");
  EXPECT_NE(edge1.find("\"kind\":\"Endpoints\""), std::string::npos);
  EXPECT_NE(edge1.find("10.20.0.2"), std::string::npos);

  // The customize example: the frontend on every edge, scaled on the edges
  // labelled "big", a ConfigMap from a file everywhere, a Secret on edge4.
  const fs::path custom = fs::path(dir_.path()) / "customize";
  fs::copy(fs::path(ECO_SOURCE_DIR) / "examples/customize", custom,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const char* f : {"prerequisites.yaml", "app.yaml", "instantiate.yaml"}) {
    CtlRun r = Ctl({"apply", "-f", f, "-v", "values.yaml"}, custom.string());
    ASSERT_EQ(r.exit_code, 0) << f << ":\n" << r.output;
  }
  CtlRun cu = Ctl({"status", "demo/custom/v1/custom-dig", "--wait", "50"}, custom.string());
  ASSERT_EQ(cu.exit_code, 0) << cu.output;
  // The object of that kind and name on a cluster (null when absent).
  auto object = [&](const std::string& cluster, const std::string& kind, const std::string& name) {
    json all = json::parse(sim.Objects(cluster), nullptr, false);
    const json& items = all.is_object() && all.contains("objects") ? all["objects"] : all;
    if (items.is_array()) {
      for (const auto& o : items) {
        if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name) return o;
      }
    }
    return json();
  };
  for (std::string e : {"edge1", "edge2", "edge3", "edge4"}) {
    json d = object(e, "Deployment", "custom-web");
    ASSERT_TRUE(d.is_object()) << e << ": " << sim.Objects(e).substr(0, 1000);
    EXPECT_EQ(d["spec"]["replicas"], e == "edge1" || e == "edge2" ? 4 : 1) << e;  // the chart's 1 elsewhere
    json cm = object(e, "ConfigMap", "custom-web-settings");
    ASSERT_TRUE(cm.is_object()) << e;
    EXPECT_NE(cm["data"].value("web.conf", "").find("listen 8080"), std::string::npos) << e;
    EXPECT_EQ(object(e, "Secret", "custom-web-token").is_object(), e == "edge4") << e;
  }

  // EMCO's own twelve-chart example joins the fleet on core2 (charts from
  // the conformance corpus; skipped without it).
  const fs::path shared = fs::path(ECO_SOURCE_DIR).parent_path() / "shared";
  if (!fs::exists(shared / "conformance/helm/charts/emco/gms")) GTEST_SKIP() << "no " << shared;
  const fs::path gms = fs::path(dir_.path()) / "emco-gms";
  fs::copy(fs::path(ECO_SOURCE_DIR) / "examples/emco-gms", gms,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  const std::string pack = "cd '" + gms.string() + "' && ECO_SHARED_DIR='" + shared.string() + "' ./make-archives.sh >/dev/null";
  ASSERT_EQ(std::system(pack.c_str()), 0);
  for (const char* f : {"app.yaml", "instantiate.yaml"}) {
    CtlRun r = Ctl({"apply", "-f", f, "-v", "values.yaml"}, gms.string());
    ASSERT_EQ(r.exit_code, 0) << f << ":\n" << r.output;
  }
  CtlRun g = Ctl({"status", "demo/gms/v1/gms-dig", "--wait", "50"}, gms.string());
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("central+core2"), std::string::npos) << g.output;
  EXPECT_TRUE(has("core2", "r1-frontend") || sim.Objects("core2").find("frontend") != std::string::npos);
}

}  // namespace
}  // namespace eco::ecoctl
