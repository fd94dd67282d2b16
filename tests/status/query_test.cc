// EMCO's DIG and logical cloud status queries over an embedded store, with
// the AppContext and the deployed/ready records written directly: every
// parameter, both naming schemes, filters, list forms and invalid input.
#include "status/query.h"

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "appcontext/agent_log.h"
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "fake_clock.h"
#include "process.h"
#include "status/liveness.h"

namespace eco::status {
namespace {

using appcontext::ClusterRef;
using appcontext::ResourceSet;
using Params = std::multimap<std::string, std::string>;

json Obj(const std::string& av, const std::string& kind, const std::string& name) {
  return {{"apiVersion", av}, {"kind", kind}, {"metadata", {{"name", name}}}};
}

ResourceSet WebSet() {
  ResourceSet rs;
  for (json o : {Obj("v1", "ConfigMap", "cfg"), Obj("apps/v1", "Deployment", "web")}) {
    rs.resources.push_back({appcontext::ResourceName(o), o});
  }
  json hook = Obj("batch/v1", "Job", "init");
  rs.hooks.push_back({appcontext::ResourceName(hook), hook});
  rs.hook_events["pre-install"] = {"init+Job"};
  return rs;
}

ResourceSet DbSet() {
  ResourceSet rs;
  json o = Obj("apps/v1", "StatefulSet", "db");
  rs.resources.push_back({appcontext::ResourceName(o), o});
  return rs;
}

class StatusQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::Open("sqlite://" + dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    Put(catalog::ObjectKey("deploymentIntentGroup", Keys()),
        json{{"metadata", {{"name", "dig"}}},
             {"spec", {{"compositeProfile", "prof"}, {"version", "r1"}}}});
    SetState({{"Created", ""}, {"Approved", ""}});
  }

  static catalog::Keys Keys() { return {"proj", "ca", "v1", "dig"}; }
  void Put(const std::string& k, const json& v) { ASSERT_TRUE(st_->Put(k, v.dump()).ok()); }

  void SetState(const std::vector<std::pair<std::string, std::string>>& actions,
                const std::string& sctx = "", const std::string& type = "deploymentIntentGroup",
                const catalog::Keys& keys = Keys()) {
    json a = json::array();
    int64_t rev = 0;
    for (const auto& [state, inst] : actions) {
      if (state == "Instantiated") ++rev;
      a.push_back({{"state", state}, {"instance", inst}, {"time", "t"}, {"revision", rev}});
    }
    Put(catalog::StateKey(type, keys), json{{"statusctxid", sctx}, {"actions", a}});
  }

  // An AppContext: web on p+c1, p+c2 (c2 with a changed set), db on p+c1.
  std::string MakeContext(const std::string& status_ctx = "", const std::string& kind = "dig",
                          std::vector<std::string> apps = {"web", "db"}) {
    appcontext::Contexts c(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(600));
    EXPECT_TRUE(lease.ok());
    appcontext::Meta m;
    m.kind = kind;
    m.project = "proj";
    m.status_context = status_ctx;
    m.app_order = apps;
    auto id = c.Create(m, *lease);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    for (const auto& app : apps) {
      if (app == "db") {
        EXPECT_TRUE(c.PutApp(*id, app, DbSet(), {{"p", "c1", 1, true, 0}}).ok());
      } else {
        EXPECT_TRUE(
            c.PutApp(*id, app, WebSet(), {{"p", "c1", 1, true, 0}, {"p", "c2", 2, true, 0}}).ok());
      }
    }
    if (std::find(apps.begin(), apps.end(), "web") != apps.end()) {
      ResourceSet v = WebSet();
      json extra = Obj("v1", "Service", "web-svc");
      v.resources.push_back({appcontext::ResourceName(extra), extra});
      EXPECT_TRUE(c.SetResources(*id, "web", {"p+c2"}, v).ok());
    }
    Put(appcontext::StatusKey(*id), json{{"status", "Instantiated"}, {"time", "t"}});
    return *id;
  }

  void Deployed(const std::string& sctx, const std::string& app, const std::string& cluster,
                const std::string& conn, std::map<std::string, std::string> states,
                const std::string& ref = "") {
    appcontext::DeployedRecord r;
    r.connectivity = conn;
    if (conn == "Retrying") r.message = "connect to c2: connection refused";
    for (const auto& [n, s] : states) r.resources[n] = {s, ref, "", "t"};
    Put(appcontext::DeployedKey(sctx, app, cluster), appcontext::ToJson(r));
  }
  void Ready(const std::string& sctx, const std::string& app, const std::string& cluster,
             std::map<std::string, std::string> states) {
    appcontext::ReadyRecord r;
    r.resources = std::move(states);
    Put(appcontext::ReadyKey(sctx, app, cluster), appcontext::ToJson(r));
  }

  Result<json> Dig(const Params& p) {
    auto q = ParseQuery(p);
    if (!q.ok()) return q.status();
    return DigStatus(*st_, {"proj", "ca", "v1", "dig"}, *q);
  }

  // Instantiated context with records for web on c1 and c2 and db on c1.
  std::string Instantiated() {
    std::string id = MakeContext();
    SetState({{"Created", ""}, {"Approved", ""}, {"Instantiated", id}}, id);
    Deployed(
        id, "web", "p+c1", "Available",
        {{"cfg+ConfigMap", "Applied"}, {"web+Deployment", "Applied"}, {"init+Job", "Applied"}});
    Deployed(id, "web", "p+c2", "Retrying", {{"cfg+ConfigMap", "Failed"}});
    Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "NotReady"}});
    Ready(id, "web", "p+c2",
          {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}, {"web-svc+Service", "Ready"}});
    Ready(id, "db", "p+c1", {{"db+StatefulSet", "Ready"}});
    return id;
  }

  static const json& App(const json& out, const std::string& name) {
    for (const auto& a : out["apps"]) {
      if (a["name"] == name) return a;
    }
    static const json kNone;
    ADD_FAILURE() << "no app " << name << " in " << out.dump();
    return kNone;
  }
  static const json& ClusterOf(const json& app, const std::string& c) {
    for (const auto& x : app["clusters"]) {
      if (x["cluster"] == c) return x;
    }
    static const json kNone;
    ADD_FAILURE() << "no cluster " << c << " in " << app.dump();
    return kNone;
  }
  static json ResourceOf(const json& cluster, const std::string& name, const std::string& kind) {
    for (const auto& r : cluster["resources"]) {
      if (r["name"] == name && r["GVK"]["Kind"] == kind) return r;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
};

TEST_F(StatusQueryTest, InvalidParametersCarryEmcosMessages) {
  struct Case {
    Params p;
    std::string msg;
  } cases[] = {
      {{{"type", "bogus"}}, "Invalid query type"},
      {{{"type", "rsync"}, {"type", "cluster"}}, "Invalid query type"},
      {{{"status", "applied"}}, "Invalid query status"},
      {{{"output", "everything"}}, "Invalid query output"},
      {{{"instance", ""}}, "Invalid query instance"},
      {{{"instance", "1"}, {"instance", "2"}}, "Invalid query instance"},
      {{{"app", "-bad"}}, "Invalid app query"},
      {{{"cluster", "nocluster"}}, "Invalid cluster query"},
      {{{"cluster", "a+b+c"}}, "Invalid cluster query"},
      {{{"cluster", "a+"}}, "Invalid cluster query"},
      {{{"resource", "bad name"}}, "Invalid resources query"},
  };
  for (const auto& c : cases) {
    auto q = ParseQuery(c.p);
    ASSERT_FALSE(q.ok()) << c.msg;
    EXPECT_EQ(q.status().code(), Code::kInvalid);
    EXPECT_EQ(q.status().message(), c.msg);
  }
}

TEST_F(StatusQueryTest, ParseSelectsNamesAndPrecedence) {
  auto q = ParseQuery({});
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->deprecated_names);
  EXPECT_FALSE(q->ready);
  EXPECT_EQ(q->output, "all");
  q = ParseQuery({{"type", "cluster"}, {"status", "deployed"}});  // status wins
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->deprecated_names);
  EXPECT_FALSE(q->ready);
  q = ParseQuery({{"type", "cluster"}});
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->deprecated_names);
  EXPECT_TRUE(q->ready);
  q = ParseQuery({{"resources", ""}, {"clusters", ""}, {"apps", ""}});
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->list_apps);
  EXPECT_FALSE(q->list_clusters);
  EXPECT_FALSE(q->list_resources);
  q = ParseQuery({{"resources", ""}, {"clusters", ""}});
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->list_clusters);
  EXPECT_FALSE(q->list_resources);
  q = ParseQuery({{"apps", ""}, {"app", "x"}}, /*for_lc=*/true);  // no app filter or list for LCs
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->list_apps);
  EXPECT_TRUE(q->apps.empty());
}

// dcm's statusHandler: no parameter is status=ready with the new names, and
// `type` is not read at all (a bad one is no 400); a DIG's keeps EMCO's
// orchestrator default (type=rsync, deprecated names).
TEST_F(StatusQueryTest, LogicalCloudParametersAreDcms) {
  for (const Params& p : {Params{}, Params{{"type", "rsync"}}, Params{{"type", "bogus"}},
                          Params{{"type", "rsync"}, {"type", "cluster"}}, Params{{"app", "-bad"}}}) {
    auto q = ParseQuery(p, /*for_lc=*/true);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_TRUE(q->ready);
    EXPECT_FALSE(q->deprecated_names);
  }
  auto q = ParseQuery({{"type", "cluster"}, {"status", "deployed"}}, true);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->ready);
  EXPECT_FALSE(q->deprecated_names);
  for (const auto& [p, msg] : std::vector<std::pair<Params, std::string>>{
           {{{"status", "rsync"}}, "Invalid query status"},
           {{{"output", "x"}}, "Invalid query output"},
           {{{"instance", ""}}, "Invalid query instance"},
           {{{"cluster", "c1"}}, "Invalid cluster query"},
           {{{"resource", "bad name"}}, "Invalid resources query"}}) {
    auto bad = ParseQuery(p, true);
    ASSERT_FALSE(bad.ok()) << msg;
    EXPECT_EQ(bad.status().message(), msg);
  }
  q = ParseQuery({{"type", "bogus"}});  // a DIG's still checks it
  EXPECT_FALSE(q.ok());
}

TEST_F(StatusQueryTest, MissingDigIsNotFound) {
  auto q = ParseQuery({});
  ASSERT_TRUE(q.ok());
  auto r = DigStatus(*st_, {"proj", "ca", "v1", "nope"}, *q);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_F(StatusQueryTest, BeforeInstantiateOnlyIdentityAndStates) {
  auto r = Dig({});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["project"], "proj");
  EXPECT_EQ((*r)["compositeApp"], "ca");
  EXPECT_EQ((*r)["compositeAppVersion"], "v1");
  EXPECT_EQ((*r)["compositeProfile"], "prof");
  EXPECT_EQ((*r)["name"], "dig");
  EXPECT_EQ((*r)["states"]["actions"].size(), 2u);
  EXPECT_FALSE(r->contains("status"));
  EXPECT_FALSE(r->contains("apps"));
  EXPECT_FALSE(r->contains("rsyncStatus"));
}

TEST_F(StatusQueryTest, DefaultIsDeployedViewWithDeprecatedNames) {
  std::string id = Instantiated();
  auto r = Dig({});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& o = *r;
  EXPECT_EQ(o["status"], "Instantiated");
  EXPECT_FALSE(o.contains("deployedStatus"));
  EXPECT_FALSE(o.contains("deployedCounts"));
  EXPECT_FALSE(o.contains("readyStatus"));
  EXPECT_EQ(o["states"]["statusctxid"], id);
  // web c1: 3 Applied (hook included); web c2: cfg Failed, web + svc + hook Pending; db c1:
  // Pending.
  EXPECT_EQ(o["rsyncStatus"], (json{{"Applied", 3}, {"Failed", 1}, {"Pending", 4}}));
  const json& c1 = ClusterOf(App(o, "web"), "c1");
  EXPECT_EQ(c1["clusterProvider"], "p");
  EXPECT_EQ(c1["readyStatus"], "Available");  // connectivity, deprecated name
  EXPECT_FALSE(c1.contains("connectivity"));
  json dep = ResourceOf(c1, "web", "Deployment");
  ASSERT_FALSE(dep.is_null());
  EXPECT_EQ(dep["rsyncStatus"], "Applied");
  EXPECT_EQ(dep["GVK"], (json{{"Group", "apps"}, {"Version", "v1"}, {"Kind", "Deployment"}}));
  EXPECT_FALSE(dep.contains("detail"));
  EXPECT_FALSE(ResourceOf(c1, "init", "Job").is_null());  // hooks are deployed too
  const json& c2 = ClusterOf(App(o, "web"), "c2");
  EXPECT_EQ(c2["readyStatus"], "Retrying");
  EXPECT_EQ(c2["connectivityError"], "connect to c2: connection refused");  // why
  EXPECT_FALSE(c1.contains("connectivityError"));
  EXPECT_EQ(ResourceOf(c2, "web-svc", "Service")["rsyncStatus"], "Pending");  // no record entry
  EXPECT_EQ(ResourceOf(c2, "cfg", "ConfigMap")["rsyncStatus"], "Failed");
  const json& db = ClusterOf(App(o, "db"), "c1");
  EXPECT_EQ(db["readyStatus"], "Unknown");  // no record at all
  EXPECT_EQ(ResourceOf(db, "db", "StatefulSet")["rsyncStatus"], "Pending");
}

TEST_F(StatusQueryTest, StatusDeployedUsesNewNames) {
  Instantiated();
  auto r = Dig({{"status", "deployed"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& o = *r;
  EXPECT_EQ(o["deployedStatus"], "Instantiated");
  EXPECT_FALSE(o.contains("status"));
  EXPECT_FALSE(o.contains("rsyncStatus"));
  EXPECT_EQ(o["deployedCounts"], (json{{"Applied", 3}, {"Failed", 1}, {"Pending", 4}}));
  const json& c1 = ClusterOf(App(o, "web"), "c1");
  EXPECT_EQ(c1["connectivity"], "Available");
  EXPECT_FALSE(c1.contains("readyStatus"));
  EXPECT_EQ(ResourceOf(c1, "web", "Deployment")["deployedStatus"], "Applied");
  EXPECT_FALSE(ResourceOf(c1, "web", "Deployment").contains("rsyncStatus"));
}

TEST_F(StatusQueryTest, StatusReadyCountsAndNotPresent) {
  Instantiated();
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& o = *r;
  // c1: cfg Ready, web NotReady; c2: 3 Ready; db: Ready. Hooks are not counted.
  EXPECT_EQ(o["readyCounts"], (json{{"Ready", 5}, {"NotReady", 1}, {"NotPresent", 0}}));
  EXPECT_EQ(o["readyStatus"], "NotReady");
  EXPECT_FALSE(o.contains("deployedCounts"));
  const json& c1 = ClusterOf(App(o, "web"), "c1");
  EXPECT_EQ(ResourceOf(c1, "web", "Deployment")["readyStatus"], "NotReady");
  EXPECT_TRUE(ResourceOf(c1, "init", "Job").is_null());
  EXPECT_EQ(c1["connectivity"], "Available");

  // A record that lacks a resource: NotPresent.
  std::string id = (*r)["states"]["statusctxid"];
  Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}});
  r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyCounts"], (json{{"Ready", 5}, {"NotReady", 0}, {"NotPresent", 1}}));
  EXPECT_EQ(ResourceOf(ClusterOf(App(*r, "web"), "c1"), "web", "Deployment")["readyStatus"],
            "NotPresent");

  // All ready.
  Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}});
  r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "Ready");
}

TEST_F(StatusQueryTest, TypeClusterUsesDeprecatedReadyNames) {
  Instantiated();
  auto r = Dig({{"type", "cluster"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& o = *r;
  EXPECT_EQ(o["clusterStatus"], (json{{"Ready", 5}, {"NotReady", 1}, {"NotPresent", 0}}));
  EXPECT_FALSE(o.contains("readyCounts"));
  EXPECT_EQ(o["readyStatus"], "NotReady");
  EXPECT_EQ(o["status"], "Instantiated");
  const json& c1 = ClusterOf(App(o, "web"), "c1");
  EXPECT_EQ(c1["readyStatus"], "Available");
  EXPECT_EQ(ResourceOf(c1, "web", "Deployment")["clusterStatus"], "NotReady");
}

TEST_F(StatusQueryTest, OutputSummaryAndDetail) {
  Instantiated();
  auto r = Dig({{"output", "summary"}, {"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->contains("apps"));
  EXPECT_EQ((*r)["deployedCounts"]["Applied"], 3);
  r = Dig({{"output", "detail"}});
  ASSERT_TRUE(r.ok());
  json svc = ResourceOf(ClusterOf(App(*r, "web"), "c2"), "web-svc", "Service");
  EXPECT_EQ(svc["detail"], Obj("v1", "Service", "web-svc"));
}

TEST_F(StatusQueryTest, Filters) {
  Instantiated();
  auto r = Dig({{"app", "db"}, {"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)["apps"].size(), 1u);
  EXPECT_EQ((*r)["deployedCounts"], (json{{"Pending", 1}}));

  r = Dig({{"cluster", "p+c2"}, {"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  // db has no resource on c2: omitted.
  ASSERT_EQ((*r)["apps"].size(), 1u);
  EXPECT_EQ((*r)["apps"][0]["name"], "web");
  EXPECT_EQ((*r)["apps"][0]["clusters"].size(), 1u);

  r = Dig({{"resource", "cfg"}, {"resource", "db"}, {"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["deployedCounts"], (json{{"Applied", 1}, {"Failed", 1}, {"Pending", 1}}));

  r = Dig({{"resource", "nothing"}, {"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->contains("apps"));

  r = Dig({{"app", "missing"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
  EXPECT_NE(r.status().message().find("Filter app missing not in list of apps"), std::string::npos);
}

TEST_F(StatusQueryTest, ListForms) {
  Instantiated();
  auto r = Dig({{"apps", ""}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["apps"], (json{"web", "db"}));
  EXPECT_EQ((*r)["compositeProfile"], "prof");
  EXPECT_FALSE(r->contains("states"));

  r = Dig({{"clusters", ""}, {"app", "web"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["clustersByApp"],
            (json::parse(R"([{"app":"web","clusters":[{"clusterProvider":"p","cluster":"c1"},
                                                      {"clusterProvider":"p","cluster":"c2"}]}])")));

  r = Dig({{"resources", ""}, {"cluster", "p+c2"}});
  ASSERT_TRUE(r.ok());
  const json& l = (*r)["resourcesByApp"];
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["app"], "web");
  EXPECT_EQ(l[0]["clusterProvider"], "p");
  EXPECT_EQ(l[0]["cluster"], "c2");
  EXPECT_EQ(l[0]["resources"].size(), 4u);  // cfg, web, web-svc, the hook
  EXPECT_EQ(l[0]["resources"][2],
            (json{{"name", "web-svc"},
                  {"GVK", {{"Group", ""}, {"Version", "v1"}, {"Kind", "Service"}}}}));
  r = Dig({{"resources", ""}, {"cluster", "p+c2"}, {"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["resourcesByApp"][0]["resources"].size(), 3u);  // no hooks in the ready view
}

TEST_F(StatusQueryTest, InstanceAfterUpdateReadsTheStatusContext) {
  std::string first = Instantiated();
  std::string second = MakeContext(first, "dig", {"web"});
  SetState({{"Created", ""},
            {"Approved", ""},
            {"Instantiated", first},
            {"Updated", first},
            {"Instantiated", second}},
           first);
  // rsync acted on web's resources on c1 from the new context.
  Deployed(first, "web", "p+c1", "Available",
           {{"cfg+ConfigMap", "Applied"}, {"web+Deployment", "Applied"}}, second);

  auto r = Dig({{"status", "deployed"}});  // latest: the update's context
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["apps"].size(), 1u);  // the new plan has web only
  EXPECT_EQ(ResourceOf(ClusterOf(App(*r, "web"), "c1"), "web", "Deployment")["deployedStatus"],
            "Applied");

  // The first instance: resources acted on by the newer revision are skipped.
  r = Dig({{"status", "deployed"}, {"instance", first}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ResourceOf(ClusterOf(App(*r, "web"), "c2"), "cfg", "ConfigMap").is_object());
  const json& c1 = ClusterOf(App(*r, "web"), "c1");
  EXPECT_TRUE(ResourceOf(c1, "web", "Deployment").is_null());
  EXPECT_TRUE(ResourceOf(c1, "cfg", "ConfigMap").is_null());

  r = Dig({{"instance", "12345"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
}

// An update that failed left objects only the revision it replaced has on
// the cluster: they are shown (and counted) until rsync records them
// Deleted; a Failed resource carries the cluster's answer.
TEST_F(StatusQueryTest, ObjectsOfAReplacedRevisionShowUntilRemoved) {
  std::string id = Instantiated();
  appcontext::DeployedRecord r;
  r.connectivity = "Available";
  r.resources["cfg+ConfigMap"] = {"Applied", id, "", "t"};
  r.resources["web+Deployment"] = {"Failed", id, "HTTP 422 Invalid: spec.selector: field is immutable", "t"};
  r.resources["old+Secret"] = {"Applied", id, "", "t"};
  r.resources["gone+Secret"] = {"Deleted", id, "", "t"};
  Put(appcontext::DeployedKey(id, "web", "p+c1"), appcontext::ToJson(r));
  auto out = Dig({{"status", "deployed"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const json& c1 = ClusterOf(App(*out, "web"), "c1");
  json old = ResourceOf(c1, "old", "Secret");
  ASSERT_TRUE(old.is_object()) << c1.dump();
  EXPECT_EQ(old["deployedStatus"], "Applied");
  EXPECT_EQ(old["replaced"], true);
  EXPECT_TRUE(ResourceOf(c1, "gone", "Secret").is_null());
  EXPECT_EQ(ResourceOf(c1, "web", "Deployment")["error"], "HTTP 422 Invalid: spec.selector: field is immutable");
  EXPECT_FALSE(ResourceOf(c1, "cfg", "ConfigMap").contains("error"));
  // web c1: cfg + old Applied, web Failed, init hook Pending; web c2 and db as before.
  EXPECT_EQ((*out)["deployedCounts"], (json{{"Applied", 2}, {"Failed", 2}, {"Pending", 5}}));
}

// A state record that is not one used to read as an empty history
// ({"actions": []}): the answer looked like a DIG never instantiated. Now
// the query fails with the key and the fault, and the log says it once
// however often the status is polled.
TEST_F(StatusQueryTest, MalformedStateRecordIsAnErrorLoggedOnce) {
  std::mutex mu;
  std::vector<json> lines;
  log::SetSinkForTest([&](const std::string& line) {
    std::lock_guard<std::mutex> l(mu);
    lines.push_back(json::parse(line));
  });
  std::string id = Instantiated();
  const std::string key = catalog::StateKey("deploymentIntentGroup", Keys());
  ASSERT_TRUE(st_->Put(key, R"({"statusctxid":")" + id + R"(","actions":{"state":"Instantiated"}})").ok());
  const std::string want = "lifecycle state record " + key + " is malformed: actions is not an array";
  for (Params p : {Params{}, Params{{"status", "ready"}}, Params{{"apps", ""}}, Params{{"instance", id}}}) {
    auto r = Dig(p);
    ASSERT_FALSE(r.ok()) << r->dump();
    EXPECT_EQ(r.status().code(), Code::kInternal);
    EXPECT_EQ(r.status().message(), want);
  }
  // A cluster's status reads every record: it fails rather than leave the DIG out.
  Put(catalog::ObjectKey("cluster", {"p", "c1"}), json{{"metadata", {{"name", "c1"}}}});
  auto q = ParseQuery({});
  ASSERT_TRUE(q.ok());
  auto c = ClusterStatus(*st_, "p", "c1", *q);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), want);
  log::SetSinkForTest(nullptr);
  std::lock_guard<std::mutex> l(mu);
  size_t reported = 0;
  for (const auto& line : lines) reported += line.value("key", "") == key;
  EXPECT_EQ(reported, 1u);
}

TEST_F(StatusQueryTest, LogicalCloudStatus) {
  Put(catalog::ObjectKey("logicalCloud", {"proj", "lc"}), json{{"metadata", {{"name", "lc"}}}});
  auto q = ParseQuery({}, true);
  ASSERT_TRUE(q.ok());
  auto r = status::LogicalCloudStatus(*st_, "proj", "lc", *q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["states"]["actions"][0]["state"], "Created");
  EXPECT_EQ((*r)["name"], "lc");
  EXPECT_FALSE(r->contains("compositeApp"));

  std::string id = MakeContext("", "logicalCloud", {"logical-cloud"});
  SetState({{"Instantiated", id}}, id, "logicalCloud", {"proj", "lc"});
  Deployed(id, "logical-cloud", "p+c1", "Available", {{"cfg+ConfigMap", "Applied"}});
  q = ParseQuery({{"status", "deployed"}, {"cluster", "p+c1"}}, true);
  ASSERT_TRUE(q.ok());
  r = status::LogicalCloudStatus(*st_, "proj", "lc", *q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["deployedCounts"], (json{{"Applied", 1}, {"Pending", 2}}));  // web, the hook
  // dcm's shape: the one app's clusters at the top, no apps.
  EXPECT_FALSE(r->contains("apps")) << r->dump();
  ASSERT_EQ((*r)["clusters"].size(), 1u) << r->dump();
  EXPECT_EQ((*r)["clusters"][0]["connectivity"], "Available");
  EXPECT_EQ(ResourceOf((*r)["clusters"][0], "cfg", "ConfigMap")["deployedStatus"], "Applied");

  // No parameter: the ready view with the new names (dcm's default), eco's
  // liveness fields kept on the cluster entries.
  Put(appcontext::SeenKey("p+c1"), json{{"time", "2026-01-01T00:00:00.000Z"}, {"replica", "h"}});
  Ready(id, "logical-cloud", "p+c1", {{"cfg+ConfigMap", "Ready"}});
  q = ParseQuery({{"type", "rsync"}, {"cluster", "p+c1"}}, true);
  ASSERT_TRUE(q.ok());
  r = status::LogicalCloudStatus(*st_, "proj", "lc", *q);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["deployedStatus"], "Instantiated");
  EXPECT_EQ((*r)["readyCounts"], (json{{"NotPresent", 1}, {"NotReady", 0}, {"Ready", 1}}));
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  for (const char* gone : {"apps", "status", "rsyncStatus", "clusterStatus"}) EXPECT_FALSE(r->contains(gone)) << gone;
  ASSERT_EQ((*r)["clusters"].size(), 1u) << r->dump();
  const json& c1 = (*r)["clusters"][0];
  EXPECT_EQ(c1["cluster"], "c1");
  EXPECT_EQ(c1["connectivity"], "Available");
  EXPECT_EQ(c1["lastSeen"], "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(ResourceOf(c1, "cfg", "ConfigMap")["readyStatus"], "Ready");

  q = ParseQuery({{"clusters", ""}}, true);
  ASSERT_TRUE(q.ok());
  r = status::LogicalCloudStatus(*st_, "proj", "lc", *q);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["clustersByApp"][0]["clusters"].size(), 2u);

  r = status::LogicalCloudStatus(*st_, "proj", "other", *q);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_F(StatusQueryTest, ClusterOnlyPodsAreAppendedAndCounted) {
  std::string id = Instantiated();
  appcontext::ReadyRecord r;
  r.resources = {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}};
  r.cluster_only = {{"web-5d9f-abcde+Pod", "Ready"}, {"web-5d9f-fghij+Pod", "NotReady"}};
  Put(appcontext::ReadyKey(id, "web", "p+c1"), appcontext::ToJson(r));
  auto out = Dig({{"status", "ready"}, {"cluster", "p+c1"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // web: cfg, web, 2 Pods; db: its StatefulSet.
  EXPECT_EQ((*out)["readyCounts"], (json{{"Ready", 4}, {"NotReady", 1}, {"NotPresent", 0}}));
  const json& c1 = ClusterOf(App(*out, "web"), "c1");
  json pod = ResourceOf(c1, "web-5d9f-fghij", "Pod");
  ASSERT_FALSE(pod.is_null()) << c1.dump();
  EXPECT_EQ(pod["readyStatus"], "NotReady");
  EXPECT_EQ(pod["GVK"], (json{{"Group", ""}, {"Version", "v1"}, {"Kind", "Pod"}}));
  // The resource filter applies to them as well; the deployed view has none.
  out = Dig({{"status", "ready"}, {"resource", "web-5d9f-abcde"}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)["readyCounts"], (json{{"Ready", 1}, {"NotReady", 0}, {"NotPresent", 0}}));
  out = Dig({{"status", "deployed"}, {"cluster", "p+c1"}});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(ResourceOf(ClusterOf(App(*out, "web"), "c1"), "web-5d9f-abcde", "Pod").is_null());
}

// Whether Ready is about the revision eco applied: the generation rsync
// recorded at apply against the one judged and the one observed.
TEST_F(StatusQueryTest, ReadyTellsWhetherItIsAboutTheAppliedGeneration) {
  std::string id = Instantiated();
  appcontext::DeployedRecord d;
  d.connectivity = "Available";
  d.resources["web+Deployment"] = {"Applied", id, "", "t", false, {}, 2};
  d.resources["cfg+ConfigMap"] = {"Applied", id, "", "t"};  // no generation recorded
  Put(appcontext::DeployedKey(id, "web", "p+c1"), appcontext::ToJson(d));
  auto web = [&](int64_t judged, int64_t observed) {
    appcontext::ReadyRecord r;
    r.resources = {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}};
    r.generations = {{"web+Deployment", judged}};
    r.observed_generations = {{"web+Deployment", observed}};
    Put(appcontext::ReadyKey(id, "web", "p+c1"), appcontext::ToJson(r));
    auto out = Dig({{"status", "ready"}, {"cluster", "p+c1"}, {"app", "web"}});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? ResourceOf(ClusterOf(App(*out, "web"), "c1"), "web", "Deployment") : json();
  };
  // The cluster's last word is still about generation 1: Ready, not for this revision.
  json e = web(1, 1);
  EXPECT_EQ(e["readyStatus"], "Ready");
  EXPECT_EQ(e["appliedGeneration"], 2);
  EXPECT_EQ(e["generation"], 1);
  EXPECT_EQ(e["observedGeneration"], 1);
  EXPECT_EQ(e["revisionReady"], false);
  // Seen at 2, its controller not yet acting on it.
  EXPECT_EQ(web(2, 1)["revisionReady"], false);
  e = web(2, 2);
  EXPECT_EQ(e["revisionReady"], true);
  EXPECT_EQ(e["generation"], 2);
  // Nothing to compare with: no revision fields.
  auto out = Dig({{"status", "ready"}, {"cluster", "p+c1"}, {"app", "web"}});
  ASSERT_TRUE(out.ok());
  json cfg = ResourceOf(ClusterOf(App(*out, "web"), "c1"), "cfg", "ConfigMap");
  EXPECT_FALSE(cfg.contains("revisionReady")) << cfg.dump();
  EXPECT_FALSE(cfg.contains("appliedGeneration")) << cfg.dump();
}

TEST_F(StatusQueryTest, ClusterStatusGathersEveryInstantiationOnTheCluster) {
  Put(catalog::ObjectKey("cluster", {"p", "c1"}), json{{"metadata", {{"name", "c1"}}}});
  Put(catalog::ObjectKey("cluster", {"p", "c2"}), json{{"metadata", {{"name", "c2"}}}});
  Put(catalog::ObjectKey("cluster", {"p", "c3"}), json{{"metadata", {{"name", "c3"}}}});
  std::string dig = Instantiated();
  Put(catalog::ObjectKey("logicalCloud", {"proj", "lc"}), json{{"metadata", {{"name", "lc"}}}});
  std::string lc = MakeContext("", "logicalCloud", {"logical-cloud"});
  SetState({{"Instantiated", lc}}, lc, "logicalCloud", {"proj", "lc"});
  Deployed(lc, "logical-cloud", "p+c1", "Available", {{"cfg+ConfigMap", "Applied"}});
  auto cluster = [&](const std::string& c, const Params& p) {
    auto q = ParseQuery(p);
    EXPECT_TRUE(q.ok());
    return ClusterStatus(*st_, "p", c, *q);
  };

  auto out = cluster("c1", {{"status", "deployed"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // DIG on c1: web 3 Applied, db 1 Pending; the logical cloud: cfg Applied, web + hook Pending.
  EXPECT_EQ((*out)["deployedCounts"], (json{{"Applied", 4}, {"Pending", 3}}));
  EXPECT_EQ((*out)["clusterProvider"], "p");
  EXPECT_EQ((*out)["name"], "c1");
  ASSERT_EQ((*out)["deployments"].size(), 2u) << out->dump();
  const json& d0 = (*out)["deployments"][0];
  EXPECT_EQ(d0["deploymentIntentGroup"], "dig");
  EXPECT_EQ(d0["deployedStatus"], "Instantiated");
  EXPECT_EQ(d0["deployedCounts"], (json{{"Applied", 3}, {"Pending", 1}}));
  EXPECT_EQ((*out)["deployments"][1]["logicalCloud"], "lc");
  const json& cl = (*out)["cluster"];
  EXPECT_EQ(cl["connectivity"], "Available");
  ASSERT_EQ(cl["resources"].size(), 7u);
  json db = ResourceOf(cl, "db", "StatefulSet");
  EXPECT_EQ(db["app"], "db");
  EXPECT_EQ(db["compositeApp"], "ca");
  EXPECT_EQ(db["deployedStatus"], "Pending");

  out = cluster("c2", {{"status", "ready"}, {"app", "web"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)["readyCounts"], (json{{"Ready", 3}, {"NotReady", 0}, {"NotPresent", 0}}));
  EXPECT_EQ((*out)["readyStatus"], "Ready");
  EXPECT_EQ((*out)["cluster"]["connectivity"], "Retrying");
  EXPECT_EQ((*out)["deployments"].size(), 1u);  // the logical cloud's app is filtered out

  out = cluster("c1", {{"output", "summary"}});  // deprecated names, no resources
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->contains("cluster"));
  EXPECT_EQ((*out)["rsyncStatus"], (json{{"Applied", 4}, {"Pending", 3}}));
  EXPECT_EQ((*out)["deployments"][0]["status"], "Instantiated");

  out = cluster("c3", {});  // nothing there
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*out)["deployments"].empty());
  EXPECT_TRUE((*out)["cluster"]["resources"].empty());

  // Terminated instantiations have left the cluster.
  Put(appcontext::StatusKey(dig), json{{"status", "Terminated"}, {"time", "t"}});
  out = cluster("c1", {{"status", "deployed"}});
  ASSERT_TRUE(out.ok());
  ASSERT_EQ((*out)["deployments"].size(), 1u);
  EXPECT_EQ((*out)["deployments"][0]["logicalCloud"], "lc");

  EXPECT_EQ(cluster("nope", {}).status().code(), Code::kNotFound);
  EXPECT_EQ(cluster("c1", {{"instance", dig}}).status().code(), Code::kInvalid);
}

TEST_F(StatusQueryTest, WatchEmitsOnEveryChange) {
  std::string id = Instantiated();
  auto q = ParseQuery({{"status", "ready"}, {"output", "summary"}});
  ASSERT_TRUE(q.ok());
  std::mutex mu;
  std::vector<json> lines;
  std::atomic<bool> open{true};
  Status result;
  std::thread t([&] {
    result = WatchDigStatus(
        *st_, {"proj", "ca", "v1", "dig"}, *q,
        [&](const json& j) {
          std::lock_guard<std::mutex> l(mu);
          lines.push_back(j);
          return true;
        },
        [&] { return open.load(); }, std::chrono::milliseconds(10));
  });
  auto count = [&] {
    std::lock_guard<std::mutex> l(mu);
    return lines.size();
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return count() == 1; }, std::chrono::seconds(10)));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(lines[0]["readyStatus"], "NotReady");
  }
  // A write that changes nothing in the answer sends nothing; one that does, a line.
  Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "NotReady"}});
  Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}});
  ASSERT_TRUE(testing::WaitUntil([&] { return count() >= 2; }, std::chrono::seconds(10)));
  {
    std::lock_guard<std::mutex> l(mu);
    EXPECT_EQ(lines.back()["readyStatus"], "Ready");
    EXPECT_EQ(lines.back()["readyCounts"]["Ready"], 6);
  }
  // A new lifecycle action shows too.
  SetState({{"Created", ""}, {"Approved", ""}, {"Instantiated", id}, {"Terminated", id}}, id);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return lines.back()["states"]["actions"].size() == 4;
      },
      std::chrono::seconds(10)));
  open = false;
  t.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
  std::lock_guard<std::mutex> l(mu);
  for (size_t i = 1; i < lines.size(); ++i)
    EXPECT_NE(lines[i], lines[i - 1]);  // never the same twice
}

TEST_F(StatusQueryTest, ALogicalCloudNeverActedOnIsCreatedAtTheClocksTime) {
  Put(catalog::ObjectKey("logicalCloud", {"proj", "lc"}), json{{"metadata", {{"name", "lc"}}}});
  auto q = ParseQuery({}, true);
  ASSERT_TRUE(q.ok());
  eco::testing::FakeClock clock;
  clock.Advance(std::chrono::hours(24 * 31) + std::chrono::milliseconds(1500));
  auto r = status::LogicalCloudStatus(*st_, "proj", "lc", *q, QueryOptions{.clock = &clock});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["states"]["actions"][0]["time"], "2026-02-01T00:00:01.500Z");
}

TEST_F(StatusQueryTest, WatchCoalescesAndPollsOnItsClock) {
  std::string id = Instantiated();
  auto q = ParseQuery({{"status", "ready"}, {"output", "summary"}});
  ASSERT_TRUE(q.ok());
  eco::testing::FakeClock clock;
  std::mutex mu;
  std::vector<json> lines;
  std::atomic<bool> open{true}, done{false};
  Status result;
  std::thread t([&] {
    result = WatchDigStatus(
        *st_, {"proj", "ca", "v1", "dig"}, *q,
        [&](const json& j) {
          std::lock_guard<std::mutex> l(mu);
          lines.push_back(j);
          return true;
        },
        [&] { return open.load(); }, std::chrono::hours(1), clock);
    done = true;
  });
  auto count = [&] {
    std::lock_guard<std::mutex> l(mu);
    return lines.size();
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return count() == 1; }, std::chrono::seconds(10)));
  Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}});
  // The change wakes the watch, which then lets writes land for an hour of
  // the clock's time: its only timer is an hour ahead.
  auto coalescing = [&] {
    Clock::Time when;
    return clock.PendingTimers() == 1 && clock.NextTimer(&when) &&
           when - clock.Now() > std::chrono::minutes(59);
  };
  ASSERT_TRUE(testing::WaitUntil(coalescing, std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(count(), 1u);
  clock.Advance(std::chrono::hours(1));
  ASSERT_TRUE(testing::WaitUntil([&] { return count() == 2; }, std::chrono::seconds(10)));
  // Closing is noticed at the next poll (every second of the clock's time).
  open = false;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        if (!done) clock.Advance(std::chrono::minutes(1));
        return done.load();
      },
      std::chrono::seconds(10)));
  t.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// ---- how current each cluster's report is (lastSeen, stale) ----

TEST(StatusLiveness, ParsesRfc3339AndPrintsDurationsAsGo) {
  const Clock::WallTime new_year = eco::testing::FakeClock().WallNow();  // 2026-01-01T00:00:00Z
  EXPECT_EQ(ParseRfc3339("2026-01-01T00:00:00.000Z"), new_year);
  EXPECT_EQ(ParseRfc3339("2026-01-01T00:00:00Z"), new_year);
  EXPECT_EQ(ParseRfc3339("2026-01-01T01:30:00+01:30"), new_year);
  EXPECT_EQ(ParseRfc3339("2025-12-31T23:00:00-01:00"), new_year);
  EXPECT_EQ(ParseRfc3339("2026-01-01T00:00:01.5Z"), new_year + std::chrono::milliseconds(1500));
  const Clock::WallTime t = new_year + std::chrono::hours(24 * 59) + std::chrono::milliseconds(7);
  EXPECT_EQ(ParseRfc3339(catalog::Rfc3339(t)), t);  // what the writers write
  for (const char* bad :
       {"", "t", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00",
        "2026-01-01T00:00:00.Z", "2026-01-01T24:00:00Z", "2026-01-01T00:00:00Zx"}) {
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  }
  EXPECT_EQ(FormatDuration(std::chrono::minutes(5)), "5m0s");
  EXPECT_EQ(FormatDuration(std::chrono::hours(1)), "1h0m0s");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(30)), "30s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(250)), "250ms");
}

// c2 is an agent cluster, c1 a push cluster; every resource's record says Ready.
class StatusLivenessTest : public StatusQueryTest {
 protected:
  void SetUp() override {
    StatusQueryTest::SetUp();
    clock_.Advance(std::chrono::hours(24 * 40));
    Cluster("c1", false);
    Cluster("c2", true);
  }

  void Cluster(const std::string& name, bool agent) {
    Put(catalog::ObjectKey("cluster", {"p", name}),
        json{{"metadata", {{"name", name}}},
             {"spec", agent ? json{{"delivery", "agent"}} : json::object()}});
  }
  std::string Ago(Clock::Duration d) { return catalog::Rfc3339(clock_.WallNow() - d); }
  void Seen(const std::string& cluster, const std::string& time) {
    Put(appcontext::SeenKey(cluster), appcontext::ToJson(appcontext::Seen{time, "replica-1"}));
  }
  std::string AllReady() {
    std::string id = Instantiated();
    Ready(id, "web", "p+c1", {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}});
    return id;
  }
  QueryOptions Opts(std::chrono::milliseconds grace = std::chrono::minutes(5)) {
    return QueryOptions{.agent_grace = grace, .clock = &clock_};
  }
  Result<json> Dig(const Params& p, std::chrono::milliseconds grace = std::chrono::minutes(5)) {
    auto q = ParseQuery(p);
    if (!q.ok()) return q.status();
    return DigStatus(*st_, {"proj", "ca", "v1", "dig"}, *q, Opts(grace));
  }
  static void ExpectAllStale(const json& cluster, const char* field = "readyStatus") {
    ASSERT_FALSE(cluster["resources"].empty());
    for (const auto& r : cluster["resources"]) {
      EXPECT_EQ(r[field], "Stale") << r.dump();
      EXPECT_EQ(r["lastReported"], "Ready") << r.dump();
    }
  }

  eco::testing::FakeClock clock_;
};

TEST_F(StatusLivenessTest, AnAgentHeardFromWithinTheGraceStaysReadyWithLastSeen) {
  AllReady();
  const std::string agent_seen = Ago(std::chrono::seconds(30)),
                    push_seen = Ago(std::chrono::seconds(50));
  Seen("p+c2", agent_seen);
  Seen("p+c1", push_seen);
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["readyStatus"], "Ready");
  EXPECT_EQ((*r)["readyCounts"], (json{{"Ready", 6}, {"NotReady", 0}, {"NotPresent", 0}}));
  const json& c2 = ClusterOf(App(*r, "web"), "c2");
  EXPECT_EQ(c2["lastSeen"], agent_seen);
  EXPECT_FALSE(c2.contains("unreachable"));
  EXPECT_FALSE(c2.contains("stale"));
  EXPECT_EQ(ResourceOf(c2, "web", "Deployment")["readyStatus"], "Ready");
  EXPECT_FALSE(ResourceOf(c2, "web", "Deployment").contains("lastReported"));
  // Push clusters carry theirs (the ready monitor's) in every app.
  EXPECT_EQ(ClusterOf(App(*r, "web"), "c1")["lastSeen"], push_seen);
  EXPECT_EQ(ClusterOf(App(*r, "db"), "c1")["lastSeen"], push_seen);
  // And in the deployed view.
  r = Dig({{"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ClusterOf(App(*r, "web"), "c2")["lastSeen"], agent_seen);
}

TEST_F(StatusLivenessTest, AnAgentSilentPastTheGraceIsUnreachableSinceAndNeverReady) {
  AllReady();
  const std::string seen = Ago(std::chrono::minutes(6));
  Seen("p+c2", seen);
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  // c2's three resources are not counted Ready.
  EXPECT_EQ((*r)["readyCounts"],
            (json{{"Ready", 3}, {"NotReady", 0}, {"NotPresent", 0}, {"Stale", 3}}));
  const json& c2 = ClusterOf(App(*r, "web"), "c2");
  EXPECT_EQ(c2["lastSeen"], seen);
  EXPECT_EQ(c2["unreachable"],
            (json{{"since", seen}, {"error", "agent silent for more than 5m0s"}}));
  EXPECT_EQ(c2["stale"], true);
  ExpectAllStale(c2);
  const json& c1 = ClusterOf(App(*r, "web"), "c1");
  EXPECT_FALSE(c1.contains("stale"));
  EXPECT_FALSE(c1.contains("unreachable"));
  EXPECT_EQ(ResourceOf(c1, "web", "Deployment")["readyStatus"], "Ready");

  // EMCO's deprecated names: the same values.
  r = Dig({{"type", "cluster"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  EXPECT_EQ((*r)["clusterStatus"]["Stale"], 3);
  EXPECT_EQ((*r)["clusterStatus"]["Ready"], 3);
  ExpectAllStale(ClusterOf(App(*r, "web"), "c2"), "clusterStatus");

  // Summary: counts only, still not Ready.
  r = Dig({{"status", "ready"}, {"output", "summary"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  EXPECT_EQ((*r)["readyCounts"]["Ready"], 3);

  // The deployed view marks the cluster and keeps rsync's values.
  r = Dig({{"status", "deployed"}});
  ASSERT_TRUE(r.ok());
  const json& d2 = ClusterOf(App(*r, "web"), "c2");
  EXPECT_EQ(d2["stale"], true);
  EXPECT_EQ(d2["unreachable"]["since"], seen);
  EXPECT_EQ(ResourceOf(d2, "cfg", "ConfigMap")["deployedStatus"], "Failed");
}

TEST_F(StatusLivenessTest, AnAgentNeverHeardFromIsStaleOnceItHasRecords) {
  std::string id = AllReady();
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  const json& c2 = ClusterOf(App(*r, "web"), "c2");
  EXPECT_FALSE(c2.contains("lastSeen"));
  EXPECT_EQ(c2["unreachable"], (json{{"error", "no contact from its agent is recorded"}}));
  EXPECT_EQ(c2["stale"], true);
  ExpectAllStale(c2);

  // No records either (its agent never connected): unreachable, but
  // nothing it reported can be stale.
  ASSERT_TRUE(st_->Delete(appcontext::ReadyKey(id, "web", "p+c2")).ok());
  ASSERT_TRUE(st_->Delete(appcontext::DeployedKey(id, "web", "p+c2")).ok());
  r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  const json& fresh = ClusterOf(App(*r, "web"), "c2");
  EXPECT_TRUE(fresh.contains("unreachable"));
  EXPECT_FALSE(fresh.contains("stale"));
  EXPECT_EQ(ResourceOf(fresh, "web", "Deployment")["readyStatus"], "NotPresent");
  EXPECT_EQ((*r)["readyCounts"], (json{{"Ready", 3}, {"NotReady", 0}, {"NotPresent", 3}}));
}

TEST_F(StatusLivenessTest, TheGraceIsTheCallersAndItsClockToo) {
  AllReady();
  Seen("p+c2", Ago(std::chrono::minutes(2)));
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "Ready");
  r = Dig({{"status", "ready"}}, std::chrono::minutes(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  EXPECT_EQ(ClusterOf(App(*r, "web"), "c2")["unreachable"]["error"],
            "agent silent for more than 1m0s");
  // Four more minutes of the clock: past the default grace too.
  clock_.Advance(std::chrono::minutes(4));
  r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  EXPECT_EQ(ClusterOf(App(*r, "web"), "c2")["stale"], true);
}

TEST_F(StatusLivenessTest, APushClusterUnreachablePastTheGraceIsStale) {
  AllReady();
  const std::string since = Ago(std::chrono::minutes(1));
  Put(appcontext::UnreachableKey("p+c1"),
      appcontext::ToJson(appcontext::UnreachableRecord{since, "refused"}));
  Seen("p+c2", Ago(std::chrono::seconds(5)));
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Within the grace: marked, what it last reported still counts.
  const json& c1 = ClusterOf(App(*r, "web"), "c1");
  EXPECT_EQ(c1["unreachable"], (json{{"since", since}, {"error", "refused"}}));
  EXPECT_FALSE(c1.contains("stale"));
  EXPECT_EQ((*r)["readyStatus"], "Ready");

  const std::string long_ago = Ago(std::chrono::minutes(6));
  Put(appcontext::UnreachableKey("p+c1"),
      appcontext::ToJson(appcontext::UnreachableRecord{long_ago, "refused"}));
  r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["readyStatus"], "NotReady");
  EXPECT_EQ((*r)["readyCounts"],
            (json{{"Ready", 3}, {"NotReady", 0}, {"NotPresent", 0}, {"Stale", 3}}));
  EXPECT_EQ(ClusterOf(App(*r, "web"), "c1")["stale"], true);
  ExpectAllStale(ClusterOf(App(*r, "web"), "c1"));
  ExpectAllStale(ClusterOf(App(*r, "db"), "c1"));
  EXPECT_FALSE(ClusterOf(App(*r, "web"), "c2").contains("stale"));
}

TEST_F(StatusLivenessTest, TheClusterStatusCarriesItAtTheTop) {
  AllReady();
  const std::string seen = Ago(std::chrono::minutes(6));
  Seen("p+c2", seen);
  auto q = ParseQuery({{"status", "ready"}});
  ASSERT_TRUE(q.ok());
  auto cs = ClusterStatus(*st_, "p", "c2", *q, Opts());
  ASSERT_TRUE(cs.ok()) << cs.status().ToString();
  EXPECT_EQ((*cs)["lastSeen"], seen);
  EXPECT_EQ((*cs)["unreachable"]["since"], seen);
  EXPECT_EQ((*cs)["stale"], true);
  EXPECT_EQ((*cs)["readyStatus"], "NotReady");
  EXPECT_EQ((*cs)["readyCounts"],
            (json{{"Ready", 0}, {"NotReady", 0}, {"NotPresent", 0}, {"Stale", 3}}));
  ASSERT_EQ((*cs)["deployments"].size(), 1u);
  EXPECT_EQ((*cs)["deployments"][0]["readyStatus"], "NotReady");

  const std::string now = Ago(std::chrono::seconds(1));
  Seen("p+c2", now);
  cs = ClusterStatus(*st_, "p", "c2", *q, Opts());
  ASSERT_TRUE(cs.ok());
  EXPECT_EQ((*cs)["lastSeen"], now);
  EXPECT_FALSE(cs->contains("unreachable"));
  EXPECT_FALSE(cs->contains("stale"));
  EXPECT_EQ((*cs)["readyStatus"], "Ready");
}

// Past a few clusters of a provider, their delivery modes come from one
// read of all the provider's clusters: the verdicts are the same.
TEST_F(StatusLivenessTest, ManyClustersOfAProvider) {
  appcontext::Contexts c(*st_);
  auto lease = st_->GrantLease(std::chrono::seconds(600));
  ASSERT_TRUE(lease.ok());
  appcontext::Meta m;
  m.kind = "dig";
  m.app_order = {"db"};
  auto id = c.Create(m, *lease);
  ASSERT_TRUE(id.ok());
  std::vector<ClusterRef> cs;
  for (int i = 0; i < 20; ++i) cs.push_back({"p", "k" + std::to_string(i), i + 1, true, 0});
  ASSERT_TRUE(c.PutApp(*id, "db", DbSet(), cs).ok());
  Put(appcontext::StatusKey(*id), json{{"status", "Instantiated"}, {"time", "t"}});
  SetState({{"Instantiated", *id}}, *id);
  for (int i = 0; i < 20; ++i) {
    const std::string name = "k" + std::to_string(i);
    Cluster(name, i % 2 == 0);
    Ready(*id, "db", "p+" + name, {{"db+StatefulSet", "Ready"}});
    Seen("p+" + name, Ago(i < 10 ? std::chrono::minutes(1) : std::chrono::minutes(10)));
  }
  auto r = Dig({{"status", "ready"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i = 0; i < 20; ++i) {
    const json& k = ClusterOf(App(*r, "db"), "k" + std::to_string(i));
    EXPECT_EQ(k.value("stale", false), i % 2 == 0 && i >= 10) << i;
  }
  EXPECT_EQ((*r)["readyCounts"]["Ready"], 15);
  EXPECT_EQ((*r)["readyCounts"]["Stale"], 5);
}

TEST_F(StatusLivenessTest, TheStreamSendsTheTurnToStaleAndBackOnItsClock) {
  AllReady();
  Seen("p+c2", Ago(std::chrono::minutes(4)));
  auto q = ParseQuery({{"status", "ready"}, {"output", "summary"}});
  ASSERT_TRUE(q.ok());
  std::mutex mu;
  std::vector<json> lines;
  std::atomic<bool> open{true}, done{false};
  Status result;
  std::thread t([&] {
    result = WatchDigStatus(
        *st_, {"proj", "ca", "v1", "dig"}, *q,
        [&](const json& j) {
          std::lock_guard<std::mutex> l(mu);
          lines.push_back(j);
          return true;
        },
        [&] { return open.load(); }, std::chrono::milliseconds(10), clock_,
        QueryOptions{.agent_grace = std::chrono::minutes(5)});
    done = true;
  });
  auto last = [&] {
    std::lock_guard<std::mutex> l(mu);
    return lines.empty() ? json() : lines.back();
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return !last().is_null(); }, std::chrono::seconds(10)));
  EXPECT_EQ(last()["readyStatus"], "Ready");
  // No record changes; the grace running out does.
  const Clock::WallTime boundary = clock_.WallNow() + std::chrono::minutes(1);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        if (last()["readyStatus"] == "NotReady") return true;
        clock_.Advance(std::chrono::seconds(1));
        return false;
      },
      std::chrono::seconds(20)))
      << last().dump();
  EXPECT_GE(clock_.WallNow(), boundary);
  EXPECT_EQ(last()["readyCounts"]["Stale"], 3);
  // Let the stream settle (it computes once more, now watching contacts);
  // the clock moving on changes nothing.
  for (int i = 0; i < 50; ++i) {
    clock_.Advance(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(last()["readyStatus"], "NotReady");
  // The agent is heard from again: its contact alone sends the answer.
  Seen("p+c2", Ago(std::chrono::seconds(0)));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        if (last()["readyStatus"] == "Ready") return true;
        clock_.Advance(std::chrono::milliseconds(10));
        return false;
      },
      std::chrono::seconds(20)))
      << last().dump();
  EXPECT_FALSE(last()["readyCounts"].contains("Stale"));
  open = false;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        if (!done) clock_.Advance(std::chrono::seconds(1));
        return done.load();
      },
      std::chrono::seconds(10)));
  t.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
  std::lock_guard<std::mutex> l(mu);
  for (const auto& line : lines) EXPECT_FALSE(line.contains("apps"));  // summary
}

// Not run by default (no timing assertions in tests): the cost of a full
// query at 10,000 clusters, for docs/status.md. Run with
// --gtest_also_run_disabled_tests --gtest_filter=*TenThousand*.
TEST_F(StatusQueryTest, DISABLED_TenThousandClusters) {
  appcontext::Contexts c(*st_);
  auto lease = st_->GrantLease(std::chrono::seconds(600));
  ASSERT_TRUE(lease.ok());
  appcontext::Meta m;
  m.kind = "dig";
  m.app_order = {"web"};
  auto id = c.Create(m, *lease);
  ASSERT_TRUE(id.ok());
  std::vector<ClusterRef> cs;
  for (int i = 0; i < 10000; ++i) cs.push_back({"p", "c" + std::to_string(i), i + 1, true, 0});
  ASSERT_TRUE(c.PutApp(*id, "web", WebSet(), cs).ok());
  SetState({{"Instantiated", *id}}, *id);
  for (size_t i = 0; i < cs.size(); i += 100) {  // 100 clusters per transaction
    store::Txn txn;
    for (size_t j = i; j < i + 100 && j < cs.size(); ++j) {
      appcontext::DeployedRecord d;
      d.connectivity = "Available";
      d.resources = {{"cfg+ConfigMap", {"Applied", *id, "", "t"}},
                     {"web+Deployment", {"Applied", *id, "", "t"}}};
      txn.success.push_back(store::Op::Put(appcontext::DeployedKey(*id, "web", cs[j].key()),
                                           appcontext::ToJson(d).dump()));
      appcontext::ReadyRecord r;
      r.resources = {{"cfg+ConfigMap", "Ready"}, {"web+Deployment", "Ready"}};
      txn.success.push_back(store::Op::Put(appcontext::ReadyKey(*id, "web", cs[j].key()),
                                           appcontext::ToJson(r).dump()));
      // Half of them agent clusters, every one heard from (lastSeen).
      json spec = j % 2 ? json{{"delivery", "agent"}} : json::object();
      txn.success.push_back(store::Op::Put(catalog::ObjectKey("cluster", {"p", cs[j].name}),
                                           json{{"metadata", {{"name", cs[j].name}}}, {"spec", spec}}.dump()));
      txn.success.push_back(store::Op::Put(
          appcontext::SeenKey(cs[j].key()),
          appcontext::ToJson(appcontext::Seen{catalog::NowRfc3339(RealClock()), "r"}).dump()));
    }
    ASSERT_TRUE(st_->Commit(txn).ok());
  }
  for (Params p : {Params{{"status", "ready"}, {"output", "summary"}},
                   Params{{"status", "deployed"}}, Params{{"status", "ready"}}}) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = Dig(p);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::cout << p.begin()->second << (p.size() > 1 ? " summary" : " all") << ": " << ms << " ms, "
              << r->dump().size() << " bytes\n";
  }
}

}  // namespace
}  // namespace eco::status
