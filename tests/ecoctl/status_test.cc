// `ecoctl status`: the clusters × apps table, and --wait polling until the
// DIG is Instantiated and Ready, against a scripted server.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ecoctl/cli.h"
#include "ecoctl/document.h"
#include "ecoctl/fleet_plan.h"
#include "ecoctl/status.h"
#include "process.h"

namespace eco::ecoctl {
namespace {

using nlohmann::json;

// One app on two edges and another on a central cluster; `ready_edge2`
// decides whether edge2's two resources are Ready.
json Status(const std::string& deployed, bool ready_edge2) {
  auto res = [](const std::string& st) { return json{{"name", "r"}, {"readyStatus", st}}; };
  json web_e1 = {{"clusterProvider", "edges"}, {"cluster", "edge1"}, {"connectivity", "Available"},
                 {"resources", {res("Ready"), res("Ready")}}};
  json web_e2 = {{"clusterProvider", "edges"},
                 {"cluster", "edge2"},
                 {"connectivity", ready_edge2 ? "Available" : "Retrying"},
                 {"resources", {res(ready_edge2 ? "Ready" : "NotPresent"), res(ready_edge2 ? "Ready" : "NotReady")}}};
  json db = {{"clusterProvider", "central"}, {"cluster", "core1"}, {"connectivity", "Available"},
             {"resources", {res("Ready"), res("Ready"), res("Ready")}}};
  return {{"project", "demo"},
          {"compositeApp", "twotier"},
          {"compositeAppVersion", "v1"},
          {"name", "dig"},
          {"deployedStatus", deployed},
          {"readyStatus", ready_edge2 ? "Ready" : "NotReady"},
          {"apps", {{{"name", "web"}, {"clusters", {web_e1, web_e2}}}, {{"name", "db"}, {"clusters", {db}}}}}};
}

TEST(StatusTable, ClustersByAppsWithReadyCounts) {
  const std::string t = FormatStatusTable(Status("Instantiated", false), false);
  EXPECT_NE(t.find("demo/twotier/v1/dig: Instantiated, 5 of 7 resources ready on 2 of 3 clusters"), std::string::npos) << t;
  EXPECT_NE(t.find("CLUSTER        CONNECTIVITY  web    db"), std::string::npos) << t;
  EXPECT_NE(t.find("central+core1  Available     -      3/3"), std::string::npos) << t;
  EXPECT_NE(t.find("edges+edge1    Available     2/2    -"), std::string::npos) << t;
  EXPECT_NE(t.find("edges+edge2    Retrying      0/2    -"), std::string::npos) << t;
  // Colour: green where all is Ready, red where a resource is missing or the cluster is retried.
  const std::string c = FormatStatusTable(Status("Instantiated", false), true);
  EXPECT_NE(c.find("\033[32m2/2"), std::string::npos) << c;
  EXPECT_NE(c.find("\033[31m0/2"), std::string::npos) << c;
  EXPECT_NE(c.find("\033[31mRetrying"), std::string::npos) << c;
  EXPECT_TRUE(Summarize(Status("Instantiated", true)).done());
  EXPECT_FALSE(Summarize(Status("Instantiating", true)).done());
}

// Many apps on few clusters: a row per app, a column per cluster.
TEST(StatusTable, MoreAppsThanClustersIsTransposed) {
  auto res = [](const std::string& st) { return json{{"name", "r"}, {"readyStatus", st}}; };
  json apps = json::array();
  for (const char* a : {"adservice", "cart", "frontend"}) {
    apps.push_back({{"name", a},
                    {"clusters", {{{"clusterProvider", "central"}, {"cluster", "core2"}, {"connectivity", "Available"},
                                   {"resources", {res("Ready"), res(std::string(a) == "cart" ? "NotReady" : "Ready")}}}}}});
  }
  json st = {{"project", "demo"}, {"compositeApp", "gms"}, {"compositeAppVersion", "v1"}, {"name", "dig"},
             {"deployedStatus", "Instantiated"}, {"readyStatus", "NotReady"}, {"apps", apps}};
  const std::string t = FormatStatusTable(st, false);
  EXPECT_NE(t.find("\nCLUSTER       central+core2\n"
                   "CONNECTIVITY  Available\n"
                   "adservice     2/2\n"
                   "cart          1/2\n"
                   "frontend      2/2\n"),
            std::string::npos)
      << t;
  EXPECT_NE(FormatStatusTable(st, true).find("\033[33m1/2"), std::string::npos);
}

// Fields an apply left out (Warn field validation) are listed under the table.
TEST(StatusTable, WarningsAreListed) {
  json st = Status("Instantiated", true);
  EXPECT_EQ(FormatStatusTable(st, false).find("WARNINGS"), std::string::npos);
  json& r = st["apps"][1]["clusters"][0]["resources"][0];
  r["GVK"] = {{"Group", "apps"}, {"Version", "v1"}, {"Kind", "DaemonSet"}};
  r["name"] = "collectd";
  r["warnings"] = {"spec.replicas: field not declared in schema, not applied"};
  const std::string t = FormatStatusTable(st, false);
  EXPECT_NE(t.find("\nWARNINGS\ncentral+core1  db  DaemonSet collectd: spec.replicas: field not declared in schema, "
                   "not applied\n"),
            std::string::npos)
      << t;
}

TEST(StatusTable, UnreachableClustersSaySo) {
  json st = Status("Instantiated", true);
  st["apps"][0]["clusters"][0]["unreachable"] = {{"since", "2026-11-30T10:00:00Z"}, {"error", "reset"}};
  const std::string t = FormatStatusTable(st, false);
  EXPECT_NE(t.find("edges+edge1    Unreachable   2/2    -"), std::string::npos) << t;
  EXPECT_NE(FormatStatusTable(st, true).find("\033[31mUnreachable"), std::string::npos);
}

// An agent cluster silent past the grace: Stale, none of it ready; every
// cluster's last contact in a column of its own once any has one.
TEST(StatusTable, StaleClustersAndLastSeen) {
  json st = Status("Instantiated", true);
  json& e1 = st["apps"][0]["clusters"][0];
  e1["lastSeen"] = "2026-11-30T10:00:00.000Z";
  e1["unreachable"] = {{"since", "2026-11-30T10:00:00.000Z"},
                       {"error", "agent silent for more than 5m0s"}};
  e1["stale"] = true;
  for (auto& r : e1["resources"]) {
    r["readyStatus"] = "Stale";
    r["lastReported"] = "Ready";
  }
  st["apps"][0]["clusters"][1]["lastSeen"] = "2026-11-30T10:09:00.000Z";
  st["readyStatus"] = "NotReady";
  const std::string t = FormatStatusTable(st, false);
  EXPECT_NE(t.find("Instantiated, 5 of 7 resources ready on 2 of 3 clusters"), std::string::npos)
      << t;
  EXPECT_NE(t.find("CLUSTER        CONNECTIVITY  LAST SEEN                 web    db"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("central+core1  Available     -                         -      3/3"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("edges+edge1    Stale         2026-11-30T10:00:00.000Z  0/2    -"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("edges+edge2    Available     2026-11-30T10:09:00.000Z  2/2    -"),
            std::string::npos)
      << t;
  const std::string c = FormatStatusTable(st, true);
  EXPECT_NE(c.find("\033[31mStale"), std::string::npos) << c;
  EXPECT_NE(c.find("\033[31m0/2"), std::string::npos) << c;
  EXPECT_FALSE(Summarize(st).done());
}

TEST(StatusTable, DigPath) {
  EXPECT_EQ(*DigStatusPath("p/ca/v1/d"), "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/d/status");
  EXPECT_FALSE(DigStatusPath("p/ca/d").ok());
  EXPECT_FALSE(DigStatusPath("p//v1/d").ok());
}

// Answers each GET with the next scripted status (the last one repeats).
struct Scripted : HttpClient {
  explicit Scripted(std::deque<json>* s, std::vector<std::string>* paths) : script(s), seen(paths) {}
  Result<HttpResponse> Send(const HttpRequest& r) override {
    seen->push_back(r.method + " " + r.path);
    HttpResponse out;
    out.status = 200;
    out.body = script->front().dump();
    if (script->size() > 1) script->pop_front();
    return out;
  }
  std::deque<json>* script;
  std::vector<std::string>* seen;
};

class StatusCli : public ::testing::Test {
 protected:
  int Cli(std::vector<std::string> args) {
    args.insert(args.begin(), "ecoctl");
    CliIo io;
    io.out = &out_;
    io.err = &err_;
    io.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
    io.make_client = [this](const ClientConfig&) -> std::unique_ptr<HttpClient> {
      return std::make_unique<Scripted>(&script_, &paths_);
    };
    io.sleep_seconds = [this](int s) { slept_ += s; };
    return RunCli(args, io);
  }
  std::deque<json> script_;
  std::vector<std::string> paths_;
  int slept_ = 0;
  std::ostringstream out_, err_;
};

TEST_F(StatusCli, WaitPollsUntilReadyThenPrintsTheTable) {
  script_ = {Status("Instantiating", false), Status("Instantiated", false), Status("Instantiated", true)};
  EXPECT_EQ(Cli({"status", "demo/twotier/v1/dig", "--wait", "30"}), 0) << err_.str();
  // Three polls, then the deployed view for what drifted.
  ASSERT_EQ(paths_.size(), 4u);
  EXPECT_EQ(paths_[0], "GET /v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/dig/status?status=ready");
  EXPECT_EQ(paths_[3], "GET /v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/dig/status?status=deployed");
  EXPECT_EQ(slept_, 2);
  // One progress line per change, then the table.
  EXPECT_NE(err_.str().find("Instantiating, 5 of 7 resources ready on 2 of 3 clusters\n"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("Instantiated, 7 of 7 resources ready on 3 of 3 clusters\n"), std::string::npos) << err_.str();
  EXPECT_NE(out_.str().find("edges+edge2    Available     2/2"), std::string::npos) << out_.str();
}

TEST_F(StatusCli, WaitGivesUpWithTheTableAndExitOne) {
  script_ = {Status("Instantiated", false)};
  EXPECT_EQ(Cli({"status", "demo/twotier/v1/dig", "-w", "3"}), 1);
  EXPECT_EQ(slept_, 3);
  EXPECT_NE(err_.str().find("is not Ready after 3 s"), std::string::npos) << err_.str();
  EXPECT_NE(out_.str().find("edges+edge2    Retrying"), std::string::npos) << out_.str();
}

TEST_F(StatusCli, JsonAndBadSpec) {
  script_ = {Status("Instantiated", true)};
  EXPECT_EQ(Cli({"status", "demo/twotier/v1/dig", "-o", "json"}), 0);
  EXPECT_EQ(json::parse(out_.str()).value("readyStatus", ""), "Ready");
  out_.str("");
  EXPECT_EQ(Cli({"status", "demo/twotier/v1/dig", "-o", "yaml"}), 0);
  EXPECT_NE(out_.str().find("readyStatus: Ready\n"), std::string::npos) << out_.str();
  EXPECT_EQ(Cli({"status", "demo/dig"}), 2);
  EXPECT_NE(err_.str().find("PROJECT/COMPOSITEAPP/VERSION/DIG"), std::string::npos) << err_.str();
}

// A staged rollout: its state, the wave in progress, why it stopped, a row
// per wave; a rollback's own waves under it.
TEST(StatusTable, RolloutIsShownWithItsWaves) {
  json st = Status("Instantiated", true);
  EXPECT_EQ(FormatStatusTable(st, false).find("ROLLOUT"), std::string::npos);
  st["rollout"] = {{"state", "Paused"},
                   {"revision", 3},
                   {"wave", {{"index", 1}, {"name", "b"}}},
                   {"reason", "1 cluster(s) failed, more than maxFailures (0)"},
                   {"waves",
                    {{{"name", "a"}, {"clusters", 2}, {"done", 2}, {"failed", 0}, {"pending", 0}, {"skipped", 0},
                      {"startedAt", "2026-12-07T10:00:00Z"}, {"completedAt", "2026-12-07T10:01:00Z"}},
                     {{"name", "b"}, {"clusters", 3}, {"done", 1}, {"failed", 1}, {"pending", 1}, {"skipped", 0},
                      {"startedAt", "2026-12-07T10:01:00Z"}}}}};
  const std::string t = FormatStatusTable(st, false);
  EXPECT_NE(t.find("\nROLLOUT  revision 3  Paused  wave b (2 of 2)\n"
                   "  1 cluster(s) failed, more than maxFailures (0)\n"
                   "WAVE  CLUSTERS  DONE  FAILED  PENDING  SKIPPED  STARTED               COMPLETED\n"
                   "a     2         2     0       0        0        2026-12-07T10:00:00Z  2026-12-07T10:01:00Z\n"
                   "b     3         1     1       1        0        2026-12-07T10:01:00Z  -\n"),
            std::string::npos)
      << t;
  EXPECT_NE(FormatStatusTable(st, true).find("\033[33mPaused"), std::string::npos);
  st["rollout"]["state"] = "RolledBack";
  st["rollout"]["rollback"] = {{"revision", 2},
                               {"state", "Complete"},
                               {"waves", {{{"name", "undo-b"}, {"clusters", 2}, {"done", 2}}}}};
  const std::string rb = FormatRollout(st, false);
  EXPECT_NE(rb.find("ROLLBACK to revision 2  Complete\n"), std::string::npos) << rb;
  EXPECT_NE(rb.find("undo-b  2         2     0"), std::string::npos) << rb;
}

// What someone changed by hand, from the deployed view.
TEST(StatusTable, DriftIsListed) {
  json st = Status("Instantiated", true);
  EXPECT_EQ(FormatDrift(st, false), "");
  json& r = st["apps"][0]["clusters"][0]["resources"][0];
  r["deployedStatus"] = "Drifted";
  r["drift"] = {{"deleted", false},
                {"fields", {{{"path", "spec.replicas"}, {"desired", 2}, {"live", 5}, {"manager", "kubectl-patch"}}}}};
  json& gone = st["apps"][1]["clusters"][0]["resources"][0];
  gone["deployedStatus"] = "Drifted";
  gone["drift"] = {{"deleted", true}, {"fields", json::array()}};
  const std::string t = FormatDrift(st, false);
  EXPECT_NE(t.find("\nDRIFTED\n"), std::string::npos) << t;
  EXPECT_NE(t.find(": spec.replicas 2 -> 5 (kubectl-patch)\n"), std::string::npos) << t;
  EXPECT_NE(t.find(": deleted\n"), std::string::npos) << t;
  EXPECT_NE(FormatDrift(st, true).find("\033[31mDRIFTED"), std::string::npos);
}

TEST_F(StatusCli, RolloutActionsPostToTheDig) {
  script_ = {json::object()};
  EXPECT_EQ(Cli({"rollout", "approve", "demo/twotier/v1/dig"}), 0) << err_.str();
  ASSERT_EQ(paths_.size(), 1u);
  EXPECT_EQ(paths_[0], "POST /v2/projects/demo/composite-apps/twotier/v1/deployment-intent-groups/dig/rollout/approve");
  EXPECT_NE(out_.str().find("rollout approve requested for demo/twotier/v1/dig"), std::string::npos) << out_.str();
  EXPECT_EQ(Cli({"rollout", "fly", "demo/twotier/v1/dig"}), 2);
  EXPECT_EQ(paths_.size(), 1u);
}

// The completion script is valid bash and completes subcommands, flags and
// the choices of -o.
TEST_F(StatusCli, CompletionScriptCompletes) {
  ASSERT_EQ(Cli({"completion", "bash"}), 0);
  const std::string script = out_.str();
  EXPECT_NE(script.find("complete -o default -F _ecoctl ecoctl"), std::string::npos);
  eco::testing::TempDir dir;
  const std::string file = dir.path() + "/ecoctl.bash";
  std::ofstream(file) << script;
  auto complete = [&](const std::string& words, int cword) {
    const std::string cmd = "bash -c 'source " + file + "; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                            std::to_string(cword) + "; _ecoctl; echo \"${COMPREPLY[*]}\"' 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[512];
      while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
      ::pclose(p);
    }
    return out;
  };
  EXPECT_EQ(complete("ecoctl st", 1), "status\n");
  EXPECT_EQ(complete("ecoctl status x --w", 3), "--wait\n");
  EXPECT_EQ(complete("ecoctl get -o y", 3), "yaml\n");
  EXPECT_EQ(Cli({"completion", "fish"}), 2);
}

// `ecoctl plan`: a small plan answer as a diff, grouped by wave.
TEST(FleetPlanPrinter, ObjectsPerClusterByWave) {
  const json plan = json::parse(R"P({
    "operation": "update", "revision": 3, "currentRevision": 2, "planId": "ab12",
    "waves": [{"name": "canary", "clusters": ["p+e1"]}, {"name": "rest", "clusters": ["p+e2", "p+e3", "p+e4"]}],
    "apps": [{"name": "web", "clusters": [{"cluster": "p+e1", "reason": "allOf: label east", "customizedBy": ["gac (intent g)"]},
                                          {"cluster": "p+e3", "reason": "allOf: label east"}],
              "added": ["p+e3"], "removed": ["p+e2"],
              "notPlaced": [{"cluster": "p+e9", "reason": "filtered out by placement controller hpa-placement"}]}],
    "clusters": [
      {"cluster": "p+e1", "wave": "canary", "create": [], "delete": [],
       "change": [{"kind": "Deployment", "name": "r1-web", "app": "web",
                   "diff": [{"path": "spec.replicas", "from": 2, "to": 4}, {"path": "metadata.labels.tier", "to": "front"}]}]},
      {"cluster": "p+e2", "wave": "rest", "create": [], "change": [],
       "delete": [{"kind": "Deployment", "name": "r1-web", "app": "web"}]},
      {"cluster": "p+e3", "wave": "rest", "change": [], "delete": [],
       "create": [{"kind": "Deployment", "name": "r1-web", "namespace": "shop", "app": "web"}]}],
    "summary": {"create": 1, "change": 1, "delete": 1, "bytes": 900, "clusters": 4, "clustersChanging": 3}})P");
  const std::string t = FormatFleetPlan(plan, "p/ca/v1/dig", false);
  EXPECT_EQ(t,
            "p/ca/v1/dig: update from revision 2 to revision 3\n"
            "plan ab12\n"
            "\n"
            "apps:\n"
            "  web: 2 clusters, +1 added, -1 removed\n"
            "    p+e1  allOf: label east; customized by gac (intent g)\n"
            "    p+e3  allOf: label east\n"
            "    - p+e2  no longer placed\n"
            "    (not placed p+e9: filtered out by placement controller hpa-placement)\n"
            "\n"
            "wave canary (1 cluster)\n"
            "  p+e1\n"
            "    ~ Deployment r1-web  (app web)\n"
            "        spec.replicas: 2 -> 4\n"
            "        metadata.labels.tier: (none) -> \"front\"\n"
            "\n"
            "wave rest (3 clusters)\n"
            "  p+e2\n"
            "    - Deployment r1-web  (app web)\n"
            "  p+e3\n"
            "    + Deployment r1-web -n shop  (app web)\n"
            "  (1 cluster unchanged)\n"
            "\n"
            "summary: 1 to create, 1 to change, 1 to delete on 3 of 4 clusters (900 bytes to send)\n");
  const std::string c = FormatFleetPlan(plan, "p/ca/v1/dig", true);
  EXPECT_NE(c.find("\033[32m+ Deployment r1-web"), std::string::npos) << c;
  EXPECT_NE(c.find("\033[33m~ Deployment r1-web"), std::string::npos) << c;
  EXPECT_NE(c.find("\033[31m- Deployment r1-web"), std::string::npos) << c;
}

TEST(FleetPlanPrinter, DigsOfTheDocuments) {
  ParseOptions po;
  po.require_files = false;
  auto docs = ParseDocuments(R"(version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups
metadata:
  name: dig
spec: {version: r1}
---
version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/instantiate
---
version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/other/approve
---
version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/generic-placement-intents
metadata:
  name: gpi
)", po);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ(FleetPlanDigs(*docs), (std::vector<std::string>{"/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig",
                                                             "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/other"}));
}

}  // namespace
}  // namespace eco::ecoctl
