// DIG and logical cloud lifecycle through the north API (in-process, real
// embedded store): instantiation into a sealed AppContext, EMCO's state
// machine with 409 on invalid transitions, controllers in priority order,
// all-or-nothing on failure, one AppContext under concurrent instantiates.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/api.h"
#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "controllers/grpc.h"
#include "fake_clock.h"
#include "process.h"
#include "scheduler/scheduler.h"
#include "store/lock.h"
#include "store/sqlite_store.h"
#include "test_archives.h"

namespace eco::scheduler {
namespace {

using api::Request;
using api::Response;
using nlohmann::json;

// A controller whose behaviour the test sets and whose calls it records.
class FakeController : public controllers::Controller {
 public:
  using Fn = std::function<Status(const std::string& id)>;
  FakeController(std::string name, std::vector<std::string>* log, std::mutex* mu) : name_(std::move(name)), log_(log), mu_(mu) {}
  Fn on_filter, on_update, on_terminate;
  Status FilterClusters(const std::string& id) override {
    Record("filter:" + name_);
    return on_filter ? on_filter(id) : Status::Ok();
  }
  Status UpdateAppContext(const std::string& id, const std::string& intent, const std::string& from) override {
    Record("update:" + name_ + ":" + intent + ":" + from);
    return on_update ? on_update(id) : Status::Ok();
  }
  Status TerminateAppContext(const std::string& id) override {
    Record("terminate:" + name_);
    return on_terminate ? on_terminate(id) : Status::Ok();
  }
  Status PostEvent(const std::string&, controllers::Event e) override {
    Record("event:" + name_ + ":" + std::to_string(static_cast<int>(e)));
    return Status::Ok();
  }

 private:
  void Record(const std::string& s) {
    std::lock_guard<std::mutex> g(*mu_);
    log_->push_back(s);
  }
  std::string name_;
  std::vector<std::string>* log_;
  std::mutex* mu_;
};

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    plc_a_ = std::make_shared<FakeController>("plc-a", &log_, &mu_);
    plc_b_ = std::make_shared<FakeController>("plc-b", &log_, &mu_);
    act_ = std::make_shared<FakeController>("act", &log_, &mu_);
    Options o;
    o.builtins = {{"plc-b", "placement", 2, plc_b_}, {"plc-a", "placement", 1, plc_a_}, {"act", "action", 1, act_}};
    o.remote = [](const std::string& name, const std::string& host, int port) {
      return std::make_shared<controllers::RemoteController>(
          controllers::RemoteOptions{name, host, port, std::chrono::seconds(5)});
    };
    sched_ = std::make_unique<Scheduler>(*st_, std::move(o));
    api::Options ao;
    ao.scheduler = sched_.get();
    api_ = std::make_unique<api::Api>(*st_, ao);
    World();
  }

  Response Call(const std::string& method, const std::string& path, const std::string& body = "") {
    Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    return api_->Handle(r);
  }
  Response Post(const std::string& path, const json& body = json::object()) {
    return Call("POST", path, body.dump());
  }
  Response Get(const std::string& path) { return Call("GET", path); }
  // EMCO's status query with the current field names (deployedStatus).
  Response StatusOf(const std::string& path) {
    Request r;
    r.method = "GET";
    r.path = path + "/status";
    r.query = {{"status", "deployed"}};
    return api_->Handle(r);
  }
  // GET path/status with `query`, parsed (a 200 is asserted by the caller).
  json StatusQuery(const std::string& path, std::multimap<std::string, std::string> query, int* code = nullptr) {
    Request r;
    r.method = "GET";
    r.path = path + "/status";
    r.query = std::move(query);
    Response resp = api_->Handle(r);
    if (code) *code = resp.status;
    return json::parse(resp.body, nullptr, false);
  }
  void Upload(const std::string& path, const json& meta, const std::string& file) {
    Request r;
    r.method = "POST";
    r.path = path;
    r.multipart = true;
    r.parts.emplace("metadata", api::FormPart{meta.dump(), "", "application/json"});
    r.parts.emplace("file", api::FormPart{file, "f", "application/octet-stream"});
    Response resp = api_->Handle(r);
    ASSERT_EQ(resp.status, 201) << path << ": " << resp.body;
  }
  void Ok(const Response& r, int code = 201) { ASSERT_EQ(r.status, code) << r.body; }
  static json Meta(const std::string& n) { return {{"metadata", {{"name", n}}}}; }
  static json WithSpec(const std::string& n, json spec) {
    json j = Meta(n);
    j["spec"] = std::move(spec);
    return j;
  }

  const std::string CA = "/v2/projects/p/composite-apps/ca/v1";
  const std::string DIG = CA + "/deployment-intent-groups/dig";
  const std::string LC = "/v2/projects/p/logical-clouds/lc0";

  // Clusters edge1..edge4 (edge1, edge2 labelled east; edge3 west); a
  // level-0 logical cloud over edge1..edge3; apps web and db; a DIG placing
  // web on label east and db on anyOf(edge3, edge1).
  void World() {
    Ok(Post("/v2/cluster-providers", Meta("prov")));
    for (int i = 1; i <= 4; ++i) {
      Upload("/v2/cluster-providers/prov/clusters", Meta("edge" + std::to_string(i)), "kubeconfig");
    }
    for (auto [c, l] : std::vector<std::pair<std::string, std::string>>{{"edge1", "east"}, {"edge2", "east"}, {"edge3", "west"}}) {
      Ok(Post("/v2/cluster-providers/prov/clusters/" + c + "/labels", json{{"clusterLabel", l}}));
    }
    Ok(Post("/v2/projects", Meta("p")));
    Ok(Post("/v2/projects/p/logical-clouds", WithSpec("lc0", {{"level", "0"}})));
    for (int i = 1; i <= 3; ++i) {
      std::string c = "edge" + std::to_string(i);
      Ok(Post(LC + "/cluster-references", WithSpec("ref-" + c, {{"clusterProvider", "prov"}, {"cluster", c}})));
    }
    Ok(Post(LC + "/instantiate"), 202);
    Ok(Post("/v2/projects/p/composite-apps", WithSpec("ca", {{"compositeAppVersion", "v1"}})));
    Upload(CA + "/apps", Meta("web"), eco::testing::ChartTgz("web"));
    Upload(CA + "/apps", Meta("db"), eco::testing::ChartTgz("db"));
    Ok(Post(CA + "/composite-profiles", Meta("cp")));
    Upload(CA + "/composite-profiles/cp/profiles", WithSpec("web-profile", {{"app", "web"}}), eco::testing::ProfileTgz());
    Ok(Post(CA + "/deployment-intent-groups",
            WithSpec("dig", {{"compositeProfile", "cp"},
                             {"version", "r1"},
                             {"logicalCloud", "lc0"},
                             {"overrideValues", {{{"app", "db"}, {"values", {{"replicaCount", "3"}}}}}}})));
    Ok(Post(DIG + "/generic-placement-intents", Meta("gpi")));
    Ok(Post(DIG + "/generic-placement-intents/gpi/app-intents",
            WithSpec("web-pl", {{"app", "web"},
                                {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "east"}}}}}}})));
    Ok(Post(DIG + "/generic-placement-intents/gpi/app-intents",
            WithSpec("db-pl", {{"app", "db"},
                               {"intent",
                                {{"anyOf",
                                  {{{"clusterProvider", "prov"}, {"cluster", "edge3"}},
                                   {{"clusterProvider", "prov"}, {"cluster", "edge1"}}}}}}})));
    SetIntents({{"genericPlacementIntent", "gpi"}});
  }

  void SetIntents(const json& map) {
    Request r;
    r.method = "PUT";
    r.path = DIG + "/intents/all";
    r.body = WithSpec("all", {{"intent", map}}).dump();
    Response resp = api_->Handle(r);
    ASSERT_TRUE(resp.status == 200 || resp.status == 201) << resp.body;
  }

  json State() {
    Response r = StatusOf(DIG);
    json j = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(j.is_object() && j.contains("states")) << r.status << " " << r.body;
    return j.is_object() && j.contains("states") ? j["states"] : json{{"actions", json::array({json::object()})}};
  }
  std::string CurrentState() { return State()["actions"].back()["state"]; }
  std::string Instance() { return State()["actions"].back()["instance"]; }
  size_t ContextCount() {
    store::RangeOptions ro;
    ro.keys_only = true;
    auto r = st_->Range("/eco/ac/", ro);
    std::set<std::string> ids;
    for (auto& kv : r->kvs) ids.insert(kv.key.substr(8, kv.key.find('/', 8) - 8));
    return ids.size();
  }
  std::vector<std::string> ClusterKeys(const std::string& id, const std::string& app) {
    appcontext::Contexts c(*st_);
    auto cs = c.Clusters(id, app);
    std::vector<std::string> out;
    if (cs.ok()) {
      for (auto& x : *cs) out.push_back(x.key());
    }
    return out;
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> g(mu_);
    return log_;
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<api::Api> api_;
  std::mutex mu_;
  std::vector<std::string> log_;
  std::shared_ptr<FakeController> plc_a_, plc_b_, act_;
};

TEST_F(LifecycleTest, InstantiateBuildsASealedContextHandedToRsync) {
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  EXPECT_EQ(CurrentState(), "Instantiated");
  std::string id = Instance();
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(State()["statusctxid"], id);
  EXPECT_EQ(State()["actions"].back()["revision"], 1);
  EXPECT_EQ(ClusterKeys(id, "web"), (std::vector<std::string>{"prov+edge1", "prov+edge2"}));
  // anyOf keeps the first cluster by key.
  EXPECT_EQ(ClusterKeys(id, "db"), (std::vector<std::string>{"prov+edge1"}));
  appcontext::Contexts ctx(*st_);
  auto meta = ctx.GetMeta(id);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->release, "r1");
  EXPECT_EQ(meta->namespace_, "default");
  EXPECT_EQ(meta->field_validation, "Warn");  // the default when the spec does not say
  EXPECT_EQ(meta->app_order, (std::vector<std::string>{"db", "web"}));
  auto web = ctx.Resources(id, "web", "prov+edge2");
  ASSERT_TRUE(web.ok());
  const json& d = web->Find("r1-web+Deployment")->object;
  EXPECT_EQ(d["spec"]["replicas"], 2);  // the profile's value
  EXPECT_EQ(d["metadata"]["labels"]["app.eco.io/context"], id);
  auto db = ctx.Resources(id, "db", "");
  EXPECT_EQ(db->Find("r1-db+Deployment")->object["spec"]["replicas"], 3);  // the DIG's override
  EXPECT_TRUE(*ctx.Sealed(id));
  EXPECT_EQ(*ctx.GetStatus(id), "Created");
  auto events = st_->Range(appcontext::EventPrefix(id));
  ASSERT_EQ(events->kvs.size(), 1u);
  EXPECT_EQ(json::parse(events->kvs[0].value)["event"], "instantiate");
  EXPECT_TRUE(st_->Get(appcontext::ActiveKey(id))->has_value());
  EXPECT_EQ(json::parse(StatusOf(DIG).body)["deployedStatus"], "Created");
}

// eco's resync: queued on the deployed context once rsync is done with it,
// for clusters the DIG deploys to; bad bodies and states are refused and
// queue nothing. spec.adopt reaches the context's meta.
TEST_F(LifecycleTest, ResyncQueuesOnTheDeployedContextForItsClusters) {
  EXPECT_EQ(Post(DIG + "/resync").status, 409);  // not instantiated
  Request put;
  put.method = "PUT";
  put.path = DIG;
  put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"}, {"adopt", "yes"}}).dump();
  EXPECT_EQ(api_->Handle(put).status, 400);
  // spec.fieldValidation is Warn or Strict, nothing else; the 400 names both.
  for (json bad : {json("warn"), json(true), json("Ignore")}) {
    put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"},
                                {"fieldValidation", bad}}).dump();
    Response r = api_->Handle(put);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(json::parse(r.body).value("message", "").find("spec.fieldValidation must be \"Warn\" or \"Strict\""),
              std::string::npos)
        << r.body;
  }
  put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"}, {"adopt", true},
                              {"fieldValidation", "Strict"}}).dump();
  Ok(api_->Handle(put), 200);
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  const std::string id = Instance();
  appcontext::Contexts ctx(*st_);
  EXPECT_TRUE(ctx.GetMeta(id)->adopt);
  EXPECT_EQ(ctx.GetMeta(id)->field_validation, "Strict");
  auto events = [&] { return st_->Range(appcontext::EventPrefix(id))->kvs.size(); };
  Response r = Post(DIG + "/resync");
  EXPECT_EQ(r.status, 409);  // rsync has not deployed it yet
  EXPECT_NE(r.body.find("still being deployed"), std::string::npos) << r.body;
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(id), R"({"status":"Instantiated"})").ok());
  EXPECT_EQ(Call("POST", DIG + "/resync", "{{").status, 400);
  EXPECT_EQ(Post(DIG + "/resync", {{"clusters", "edge1"}}).status, 400);
  EXPECT_EQ(Post(DIG + "/resync", {{"clusters", {{{"clusterProvider", "prov"}}}}}).status, 400);
  r = Post(DIG + "/resync", {{"clusters", {{{"clusterProvider", "prov"}, {"cluster", "edge4"}}}}});
  EXPECT_EQ(r.status, 400);  // not one of the DIG's
  EXPECT_NE(r.body.find("prov+edge4"), std::string::npos) << r.body;
  EXPECT_EQ(events(), 1u);
  Ok(Post(DIG + "/resync", {{"clusters", {{{"clusterProvider", "prov"}, {"cluster", "edge2"}}}}}), 202);
  auto evs = st_->Range(appcontext::EventPrefix(id));
  ASSERT_EQ(evs->kvs.size(), 2u);
  json ev = json::parse(evs->kvs[1].value);
  EXPECT_EQ(ev["event"], "resync");
  EXPECT_EQ(ev["clusters"], json::array({"prov+edge2"}));
  EXPECT_TRUE(st_->Get(appcontext::ActiveKey(id))->has_value());
  Ok(Call("POST", DIG + "/resync", ""), 202);  // no body: every cluster
  EXPECT_FALSE(json::parse(st_->Range(appcontext::EventPrefix(id))->kvs[2].value).contains("clusters"));
  // A failed deployment is resynced whole: success on some clusters must
  // not make it read Instantiated.
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(id), R"({"status":"InstantiateFailed"})").ok());
  r = Post(DIG + "/resync", {{"clusters", {{{"clusterProvider", "prov"}, {"cluster", "edge1"}}}}});
  EXPECT_EQ(r.status, 409) << r.body;
  Ok(Post(DIG + "/resync"), 202);
}

TEST_F(LifecycleTest, InvalidTransitionsGet409WithTheReason) {
  Response r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("must be Approved"), std::string::npos) << r.body;
  EXPECT_EQ(Post(DIG + "/terminate").status, 409);
  EXPECT_EQ(Post(DIG + "/stop").status, 409);
  EXPECT_EQ(Post(DIG + "/update").status, 409);
  EXPECT_EQ(Post(DIG + "/rollback", json{{"spec", {{"revision", "1"}}}}).status, 409);
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/approve"), 202);  // approving an approved DIG is a no-op
  EXPECT_EQ(State()["actions"].size(), 2u);
  Ok(Post(DIG + "/instantiate"), 202);
  r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("already instantiated"), std::string::npos) << r.body;
  EXPECT_EQ(Post(DIG + "/approve").status, 409);
  Request put;
  put.method = "PUT";
  put.path = DIG;
  put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r2"}, {"logicalCloud", "lc0"}}).dump();
  EXPECT_EQ(api_->Handle(put).status, 409);
  r = Call("DELETE", DIG);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("terminated before"), std::string::npos) << r.body;
  Ok(Post(DIG + "/terminate"), 202);
  EXPECT_EQ(CurrentState(), "Terminated");
  EXPECT_EQ(Post(DIG + "/terminate").status, 409);
  // rsync has not finished terminating: neither delete nor a new instantiate yet.
  r = Call("DELETE", DIG);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("not completed terminating"), std::string::npos) << r.body;
  EXPECT_EQ(Post(DIG + "/instantiate").status, 409);
  // Once rsync reports Terminated, both are possible.
  std::string id = Instance();
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(id), R"({"status":"Terminated"})").ok());
  Ok(Post(DIG + "/instantiate"), 202);
  EXPECT_NE(Instance(), id);
  EXPECT_EQ(State()["actions"].back()["revision"], 2);
  Ok(Post(DIG + "/terminate"), 202);
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(Instance()), R"({"status":"Terminated"})").ok());
  Ok(Call("DELETE", DIG + "/intents/all"), 204);
  for (const char* ai : {"web-pl", "db-pl"}) {
    Ok(Call("DELETE", DIG + "/generic-placement-intents/gpi/app-intents/" + ai), 204);
  }
  Ok(Call("DELETE", DIG + "/generic-placement-intents/gpi"), 204);
  Ok(Call("DELETE", DIG), 204);
  EXPECT_EQ(ContextCount(), 1u);  // the DIG's AppContexts went with it; the logical cloud's stays
}

// A DIG whose state record cannot be read: every lifecycle call, the
// replace and the status answer 500 naming the record; nothing overwrites it.
TEST_F(LifecycleTest, MalformedStateRecordFailsEveryCallAndIsKept) {
  const std::string key = catalog::StateKey("deploymentIntentGroup", {"p", "ca", "v1", "dig"});
  const std::string bad = R"({"statusctxid":"","actions":[{"state":"Created","revision":"0"}]})";
  ASSERT_TRUE(st_->Put(key, bad).ok());
  const std::string want = "lifecycle state record " + key + " is malformed: actions[0].revision is not an integer";
  for (const char* op : {"/approve", "/instantiate", "/terminate", "/stop", "/update"}) {
    Response r = Post(DIG + op);
    EXPECT_EQ(r.status, 500) << op << " " << r.body;
    EXPECT_EQ(json::parse(r.body)["message"], want) << op;
  }
  Request put;
  put.method = "PUT";
  put.path = DIG;
  put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r2"}, {"logicalCloud", "lc0"}}).dump();
  Response r = api_->Handle(put);
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(json::parse(r.body)["message"], want);
  r = StatusOf(DIG);
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(json::parse(r.body)["message"], want);
  auto kv = st_->Get(key);
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, bad);
}

TEST_F(LifecycleTest, StopThenTerminateClearsTheStopFlag) {
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  std::string id = Instance();
  Ok(Post(DIG + "/stop"), 202);
  EXPECT_EQ(CurrentState(), "InstantiateStopped");
  EXPECT_EQ(st_->Get(appcontext::StopKey(id)).value()->value, "true");
  EXPECT_EQ(Post(DIG + "/stop").status, 409);
  Ok(Post(DIG + "/terminate"), 202);
  EXPECT_FALSE(st_->Get(appcontext::StopKey(id))->has_value());
  auto events = st_->Range(appcontext::EventPrefix(id));
  ASSERT_EQ(events->kvs.size(), 2u);
  EXPECT_EQ(json::parse(events->kvs[1].value)["event"], "terminate");
}

TEST_F(LifecycleTest, UpdateMakesANewContextAndRollbackRequeuesAnOldOne) {
  SetIntents({{"genericPlacementIntent", "gpi"}, {"act", "x"}});
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  std::string first = Instance();
  Response r = Post(DIG + "/update");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.body, "2");
  std::string second = Instance();
  EXPECT_NE(second, first);
  json actions = State()["actions"];
  EXPECT_EQ(actions[actions.size() - 2]["state"], "Updated");
  EXPECT_EQ(actions[actions.size() - 2]["instance"], first);
  EXPECT_EQ(State()["statusctxid"], first);
  appcontext::Contexts ctx(*st_);
  auto meta = ctx.GetMeta(second);
  EXPECT_EQ(meta->status_context, first);
  EXPECT_EQ(meta->update_from, first);
  // Labels keep the status context so an update changes nothing needlessly.
  EXPECT_EQ(ctx.Resources(second, "web", "")->Find("r1-web+Deployment")->object["metadata"]["labels"]["app.eco.io/context"], first);
  auto ev = st_->Range(appcontext::EventPrefix(second));
  ASSERT_EQ(ev->kvs.size(), 1u);
  EXPECT_EQ(json::parse(ev->kvs[0].value)["event"], "update");
  EXPECT_EQ(json::parse(ev->kvs[0].value)["other"], first);
  std::vector<std::string> log = Log();
  EXPECT_NE(std::find(log.begin(), log.end(), "update:act:x:" + first), log.end()) << ::testing::PrintToString(log);

  EXPECT_EQ(Post(DIG + "/rollback", json{{"spec", {{"revision", "9"}}}}).status, 400);
  EXPECT_EQ(Post(DIG + "/rollback", json{{"spec", {{"revision", "one"}}}}).status, 400);
  Ok(Post(DIG + "/rollback", json{{"spec", {{"revision", "1"}}}}), 202);
  EXPECT_EQ(Instance(), first);
  EXPECT_EQ(State()["actions"].back()["revision"], 3);
  auto fev = st_->Range(appcontext::EventPrefix(first));
  ASSERT_EQ(fev->kvs.size(), 2u);
  EXPECT_EQ(json::parse(fev->kvs[1].value)["other"], second);
}

// EMCO's migrate (reference 2.1.10, 4.1): the source Instantiated, the
// target (another version's DIG) Approved; the target's new context is an
// update from the source's; the source becomes Updated.
TEST_F(LifecycleTest, MigrateMovesADeployedDigToAnotherVersionsDig) {
  const std::string CA2 = "/v2/projects/p/composite-apps/ca/v2";
  const std::string DIG2 = CA2 + "/deployment-intent-groups/dig2";
  const std::string M = DIG + "/migrate";
  const json to_dig2 = {{"spec", {{"targetCompositeAppVersion", "v2"}, {"targetDeploymentIntentGroup", "dig2"}}}};
  Ok(Post("/v2/projects/p/composite-apps", WithSpec("ca", {{"compositeAppVersion", "v2"}})));
  Upload(CA2 + "/apps", Meta("web"), eco::testing::ChartTgz("web"));
  Ok(Post(CA2 + "/composite-profiles", Meta("cp")));
  Ok(Post(CA2 + "/deployment-intent-groups",
          WithSpec("dig2", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc0"}})));
  Ok(Post(DIG2 + "/generic-placement-intents", Meta("gpi")));
  Ok(Post(DIG2 + "/generic-placement-intents/gpi/app-intents",
          WithSpec("web-pl", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "edge1"}}}}}}})));
  Request put;
  put.method = "PUT";
  put.path = DIG2 + "/intents/all";
  put.body = WithSpec("all", {{"intent", {{"genericPlacementIntent", "gpi"}, {"act", "y"}}}}).dump();
  ASSERT_EQ(api_->Handle(put).status, 201);
  SetIntents({{"genericPlacementIntent", "gpi"}, {"act", "x"}});

  // The body.
  EXPECT_EQ(Call("POST", M, "not json").status, 422);
  EXPECT_EQ(Post(M, json::object()).status, 400);
  EXPECT_EQ(Post(M, json{{"spec", {{"targetCompositeAppVersion", "v2"}}}}).status, 400);
  EXPECT_EQ(Post(M, json{{"spec", {{"targetCompositeAppVersion", "v2"}, {"targetDeploymentIntentGroup", "-bad"}}}}).status, 400);
  EXPECT_EQ(Post(M, json{{"metadata", {{"description", 7}}}, {"spec", to_dig2["spec"]}}).status, 400);
  // The states, before anything is deployed.
  Response r = Post(M, to_dig2);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("not instantiated"), std::string::npos) << r.body;
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  const std::string source = Instance();
  r = Post(M, to_dig2);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("must be Approved"), std::string::npos) << r.body;
  r = Post(M, json{{"spec", {{"targetCompositeAppVersion", "v2"}, {"targetDeploymentIntentGroup", "nope"}}}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(Post(M, json{{"spec", {{"targetCompositeAppVersion", "v9"}, {"targetDeploymentIntentGroup", "dig2"}}}}).status, 404);
  EXPECT_EQ(Post(M, json{{"spec", {{"targetCompositeAppVersion", "v1"}, {"targetDeploymentIntentGroup", "dig"}}}}).status, 400);
  EXPECT_EQ(CurrentState(), "Instantiated");
  const size_t contexts = ContextCount();

  Ok(Post(DIG2 + "/approve"), 202);
  Ok(Post(M, json{{"metadata", {{"description", "to v2"}}}, {"spec", to_dig2["spec"]}}), 202);
  // Source: Updated, on its last context and revision.
  json actions = State()["actions"];
  EXPECT_EQ(actions.back()["state"], "Updated");
  EXPECT_EQ(actions.back()["instance"], source);
  EXPECT_EQ(actions.back()["revision"], 1);
  // Target: Instantiated on a new context of its own, revision 1.
  json ts = json::parse(StatusOf(DIG2).body)["states"];
  ASSERT_TRUE(ts.is_object());
  EXPECT_EQ(ts["actions"].back()["state"], "Instantiated");
  EXPECT_EQ(ts["actions"].back()["revision"], 1);
  const std::string target = ts["actions"].back()["instance"];
  EXPECT_NE(target, source);
  EXPECT_EQ(ts["statusctxid"], target);
  EXPECT_EQ(ContextCount(), contexts + 1);
  appcontext::Contexts ctx(*st_);
  auto meta = ctx.GetMeta(target);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->composite_app_version, "v2");
  EXPECT_EQ(meta->dig, "dig2");
  EXPECT_EQ(meta->update_from, source);
  EXPECT_EQ(ClusterKeys(target, "web"), std::vector<std::string>{"prov+edge1"});
  // rsync's work: an update from the source's context.
  auto ev = st_->Range(appcontext::EventPrefix(target));
  ASSERT_EQ(ev->kvs.size(), 1u);
  EXPECT_EQ(json::parse(ev->kvs[0].value)["event"], "update");
  EXPECT_EQ(json::parse(ev->kvs[0].value)["other"], source);
  std::vector<std::string> log = Log();
  EXPECT_NE(std::find(log.begin(), log.end(), "update:act:y:" + source), log.end()) << ::testing::PrintToString(log);

  // Neither can be migrated again; the source cannot be deleted while rsync
  // still moves it, and may be approved again (4.1).
  EXPECT_EQ(Post(M, to_dig2).status, 409);
  EXPECT_EQ(Post(DIG2 + "/migrate", json{{"spec", {{"targetCompositeAppVersion", "v1"}, {"targetDeploymentIntentGroup", "dig"}}}}).status, 409);
  EXPECT_EQ(Post(DIG + "/update").status, 409);
  r = Call("DELETE", DIG);
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("still being migrated"), std::string::npos) << r.body;
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(target), R"({"status":"Instantiated"})").ok());
  ASSERT_TRUE(st_->Put(appcontext::ActiveKey(source), "").ok());  // the update-delete queued, not done
  EXPECT_EQ(Call("DELETE", DIG).status, 409);
  ASSERT_TRUE(st_->Delete(appcontext::ActiveKey(source)).ok());
  Ok(Post(DIG + "/approve"), 202);
  EXPECT_EQ(CurrentState(), "Approved");
}

// The target deploys into the source's logical cloud: objects move in place.
TEST_F(LifecycleTest, MigrateToAnotherLogicalCloudIs400) {
  const std::string CA2 = "/v2/projects/p/composite-apps/ca/v2";
  Ok(Post("/v2/projects/p/logical-clouds", WithSpec("lc1", {{"level", "0"}})));
  Ok(Post("/v2/projects/p/composite-apps", WithSpec("ca", {{"compositeAppVersion", "v2"}})));
  Ok(Post(CA2 + "/composite-profiles", Meta("cp")));
  Ok(Post(CA2 + "/deployment-intent-groups",
          WithSpec("dig2", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc1"}})));
  Ok(Post(CA2 + "/deployment-intent-groups/dig2/approve"), 202);
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  const size_t contexts = ContextCount();
  Response r = Post(DIG + "/migrate", json{{"spec", {{"targetCompositeAppVersion", "v2"}, {"targetDeploymentIntentGroup", "dig2"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("logical cloud lc1"), std::string::npos) << r.body;
  EXPECT_EQ(CurrentState(), "Instantiated");
  EXPECT_EQ(ContextCount(), contexts);
}

TEST_F(LifecycleTest, PlacementOutsideTheLogicalCloudIs400AndLeavesNothing) {
  Ok(Post(DIG + "/approve"), 202);
  Request r;
  r.method = "PUT";
  r.path = DIG + "/generic-placement-intents/gpi/app-intents/web-pl";
  r.body = WithSpec("web-pl", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "edge4"}}}}}}}).dump();
  Ok(api_->Handle(r), 200);
  Response resp = Post(DIG + "/instantiate");
  EXPECT_EQ(resp.status, 400);
  EXPECT_NE(resp.body.find("not in the logical cloud"), std::string::npos) << resp.body;
  EXPECT_EQ(CurrentState(), "Approved");
  EXPECT_EQ(ContextCount(), 1u);  // only the logical cloud's
}

TEST_F(LifecycleTest, MissingPiecesAreClearErrors) {
  Ok(Post(DIG + "/approve"), 202);
  SetIntents({{"other", "x"}});
  Response r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("controller other"), std::string::npos) << r.body;
  SetIntents(json::object());
  r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("GenericPlacementIntent"), std::string::npos) << r.body;
  SetIntents({{"genericPlacementIntent", "gpi"}});
  Ok(Call("DELETE", DIG + "/generic-placement-intents/gpi/app-intents/db-pl"), 204);
  r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("No placement intent for app db"), std::string::npos) << r.body;
  EXPECT_EQ(ContextCount(), 1u);
}

// Scripts written against EMCO match these words (emco.md 2.0.1); eco's
// detail follows them.
TEST_F(LifecycleTest, InstantiateErrorsCarryEmcosWording) {
  auto says = [](const Response& r, int code, const std::string& text) {
    EXPECT_EQ(r.status, code) << r.body;
    EXPECT_NE(r.body.find(text), std::string::npos) << "want \"" << text << "\" in " << r.body;
  };
  Ok(Post(DIG + "/approve"), 202);
  Request put;
  put.method = "PUT";
  put.path = DIG + "/generic-placement-intents/gpi/app-intents/web-pl";
  put.body = WithSpec("web-pl", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "edge4"}}}}}}}).dump();
  Ok(api_->Handle(put), 200);
  says(Post(DIG + "/instantiate"), 400, "The specified Logical Cloud doesn't provide the mandatory clusters");
  put.body = WithSpec("web-pl", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "none"}}}}}}}).dump();
  Ok(api_->Handle(put), 200);
  says(Post(DIG + "/instantiate"), 400, "No Qualified Clusters to deploy App web");
  Ok(Call("DELETE", DIG + "/generic-placement-intents/gpi/app-intents/web-pl"), 204);
  says(Post(DIG + "/instantiate"), 400, "No compatible clusters have been provided to the Deployment Intent Group");

  // A DIG on a logical cloud that was never instantiated, or does not exist.
  Ok(Post("/v2/projects/p/logical-clouds", WithSpec("lc-new", {{"level", "0"}})));
  for (const char* lc : {"lc-new", "ghost"}) {
    const std::string d = CA + "/deployment-intent-groups/dig-" + lc;
    Ok(Post(CA + "/deployment-intent-groups",
            WithSpec(std::string("dig-") + lc, {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", lc}})));
    Ok(Post(d + "/approve"), 202);
  }
  says(Post(CA + "/deployment-intent-groups/dig-lc-new/instantiate"), 409, "Logical Cloud has never been applied");
  says(Post(CA + "/deployment-intent-groups/dig-ghost/instantiate"), 400, "Failed to obtain Logical Cloud specified");

  // Apps waiting for each other.
  Ok(Post(CA + "/apps/web/dependency", WithSpec("on-db", {{"app", "db"}, {"opStatus", "Ready"}})));
  Ok(Post(CA + "/apps/db/dependency", WithSpec("on-web", {{"app", "web"}, {"opStatus", "Ready"}})));
  says(Post(DIG + "/instantiate"), 400, "Cyclic Dependency between apps found");
  EXPECT_EQ(ContextCount(), 1u);  // only the logical cloud's
}

TEST_F(LifecycleTest, ControllersRunInPriorityOrderAndSeeTheContext) {
  plc_b_->on_filter = [this](const std::string& id) {
    appcontext::Contexts c(*st_);
    return c.RemoveClusters(id, "web", {"prov+edge2"});
  };
  act_->on_update = [this](const std::string& id) {
    appcontext::Contexts c(*st_);
    auto rs = c.Resources(id, "web", "prov+edge1");
    if (!rs.ok()) return rs.status();
    rs->Find("r1-web+Deployment")->object["spec"]["replicas"] = 7;
    return c.SetResources(id, "web", {"prov+edge1"}, *rs);
  };
  SetIntents({{"genericPlacementIntent", "gpi"}, {"plc-b", "b"}, {"act", "x"}, {"plc-a", "a"}});
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  std::string id = Instance();
  std::vector<std::string> log = Log();
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[0], "filter:plc-a");
  EXPECT_EQ(log[1], "filter:plc-b");
  EXPECT_EQ(log[2], "update:act:x:");
  EXPECT_NE(std::find(log.begin(), log.end(), "event:act:0"), log.end());
  EXPECT_EQ(ClusterKeys(id, "web"), (std::vector<std::string>{"prov+edge1"}));
  appcontext::Contexts c(*st_);
  EXPECT_EQ(c.Resources(id, "web", "prov+edge1")->Find("r1-web+Deployment")->object["spec"]["replicas"], 7);
  Ok(Post(DIG + "/terminate"), 202);
  log = Log();
  EXPECT_NE(std::find(log.begin(), log.end(), "terminate:act"), log.end());
}

TEST_F(LifecycleTest, AFailingControllerFailsTheInstantiationAndLeavesNothing) {
  act_->on_update = [](const std::string&) { return Invalid("no room for web anywhere"); };
  SetIntents({{"genericPlacementIntent", "gpi"}, {"act", "x"}});
  Ok(Post(DIG + "/approve"), 202);
  Response r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("no room for web anywhere"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("action controller act"), std::string::npos) << r.body;
  EXPECT_EQ(CurrentState(), "Approved");
  EXPECT_EQ(ContextCount(), 1u);
  auto building = st_->Range("/eco/acb/");
  EXPECT_TRUE(building->kvs.empty());
}

TEST_F(LifecycleTest, RegisteredControllersAreCalledOverGrpcAndReplaceBuiltins) {
  std::vector<std::string> remote_log;
  std::mutex remote_mu;
  auto remote = std::make_shared<FakeController>("remote", &remote_log, &remote_mu);
  remote->on_update = [](const std::string&) { return Invalid("remote says no"); };
  controllers::ControllerServer server;
  server.SetAction(remote);
  ASSERT_TRUE(server.Start().ok());
  // Same name as the built-in "act": the registration wins.
  Ok(Post("/v2/controllers", WithSpec("act", {{"host", "127.0.0.1"}, {"port", server.port()}, {"type", "action"}, {"priority", 1}})));
  SetIntents({{"genericPlacementIntent", "gpi"}, {"act", "x"}});
  Ok(Post(DIG + "/approve"), 202);
  Response r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("remote says no"), std::string::npos) << r.body;
  {
    std::lock_guard<std::mutex> g(remote_mu);
    ASSERT_EQ(remote_log.size(), 1u);
    EXPECT_EQ(remote_log[0].rfind("update:remote:x:", 0), 0u);
  }
  EXPECT_TRUE(Log().empty());  // the built-in was not called
  remote->on_update = nullptr;
  Ok(Post(DIG + "/instantiate"), 202);
  // An unreachable controller: 503, nothing left behind.
  server.Shutdown();
  Ok(Post(DIG + "/terminate"), 503);
}

TEST_F(LifecycleTest, ConcurrentInstantiatesMakeExactlyOneContext) {
  Ok(Post(DIG + "/approve"), 202);
  std::atomic<int> accepted{0}, conflicts{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      int code = Post(DIG + "/instantiate").status;
      if (code == 202) ++accepted;
      if (code == 409) ++conflicts;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(conflicts.load(), 5);
  EXPECT_EQ(ContextCount(), 2u);  // the DIG's and the logical cloud's
}

TEST_F(LifecycleTest, OnAFakeClockRecordsCarryItsTimeAndContextIdsReplayTheSeed) {
  eco::testing::FakeClock clock;  // starts at 2026-01-01T00:00:00Z
  Random random(42);
  Options o;
  o.builtins = {{"plc-b", "placement", 2, plc_b_},
                {"plc-a", "placement", 1, plc_a_},
                {"act", "action", 1, act_}};
  o.clock = &clock;
  o.random = &random;
  o.field_validation = "Strict";  // eco serve --field-validation Strict
  o.lock_wait = std::chrono::hours(1);
  Scheduler sched(*st_, std::move(o));
  const DigKey k{"p", "ca", "v1", "dig"};
  ASSERT_TRUE(sched.Approve(k).ok());
  clock.Advance(std::chrono::hours(36));
  auto id = sched.Instantiate(k);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Random replay(42);
  EXPECT_EQ(*id, std::to_string(replay.Next() >> 1));

  auto rec = st_->Get("/eco/s/deploymentIntentGroup/p/ca/v1/dig");
  ASSERT_TRUE(rec.ok() && rec->has_value());
  std::map<std::string, std::string> times;
  const json stored = json::parse((*rec)->value);
  for (const auto& a : stored["actions"]) {
    times[a["state"].get<std::string>()] = a["time"].get<std::string>();
  }
  EXPECT_EQ(times["Approved"], "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(times["Instantiated"], "2026-01-02T12:00:00.000Z");
  appcontext::Contexts ctx(*st_);
  auto meta = ctx.GetMeta(*id);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->created, "2026-01-02T12:00:00.000Z");
  EXPECT_EQ(meta->field_validation, "Strict");  // the server's default
  auto status = st_->Get(appcontext::StatusKey(*id));
  ASSERT_TRUE(status.ok() && status->has_value());
  EXPECT_EQ(json::parse((*status)->value)["time"], "2026-01-02T12:00:00.000Z");

  // With the DIG's lock held elsewhere, a lifecycle call waits lock_wait
  // (an hour) on the scheduler's clock, then gives up.
  auto lease = st_->GrantLease(std::chrono::hours(3));
  ASSERT_TRUE(lease.ok());
  auto held = store::TryLock(*st_, "/eco/lock/dig/p/ca/v1/dig", *lease);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const Clock::Time before = clock.Now();
  std::atomic<bool> done{false};
  auto stopped = std::async(std::launch::async, [&] {
    Status s = sched.Stop(k);
    done = true;
    return s;
  });
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        if (!done) clock.Advance(std::chrono::minutes(1));
        return done.load();
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(stopped.get().code(), Code::kConflict);
  EXPECT_GE(clock.Now() - before, Clock::Duration(std::chrono::hours(1)));
  EXPECT_EQ(CurrentState(), "Instantiated");
}

TEST_F(LifecycleTest, StandardLogicalCloudDeploysItsTenancy) {
  const std::string L1 = "/v2/projects/p/logical-clouds/lc1";
  Ok(Post("/v2/projects/p/logical-clouds",
          WithSpec("lc1", {{"level", "1"}, {"namespace", "ns1"}, {"labels", {{"geo", "eu"}}}, {"user", {{"userName", "alice"}, {"type", "certificate"}}}})));
  Response r = Post(L1 + "/instantiate");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("No Cluster References"), std::string::npos) << r.body;
  Ok(Post(L1 + "/cluster-references", WithSpec("r1", {{"clusterProvider", "prov"}, {"cluster", "edge1"}})));
  r = Post(L1 + "/instantiate");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("User Permission"), std::string::npos) << r.body;
  Ok(Post(L1 + "/user-permissions", WithSpec("perm", {{"namespace", "ns1"}, {"apiGroups", {"", "apps"}}, {"resources", {"pods", "deployments"}}, {"verbs", {"get", "list"}}})));
  Ok(Post(L1 + "/user-permissions", WithSpec("nodes", {{"namespace", ""}, {"apiGroups", {""}}, {"resources", {"nodes"}}, {"verbs", {"get"}}})));
  Ok(Post(L1 + "/cluster-quotas", WithSpec("q", {{"pods", "10"}, {"limits.cpu", "4"}})));
  Ok(Post(L1 + "/instantiate"), 202);
  EXPECT_EQ(Post(L1 + "/instantiate").status, 409);
  json st = json::parse(StatusOf(L1).body);
  std::string id = st["states"]["actions"].back()["instance"];
  EXPECT_EQ(st["deployedStatus"], "Created");  // rsync has work to do
  appcontext::Contexts ctx(*st_);
  auto rs = ctx.Resources(id, "logical-cloud", "prov+edge1");
  ASSERT_TRUE(rs.ok()) << rs.status().ToString();
  std::vector<std::string> names;
  for (auto& x : rs->resources) names.push_back(x.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ns1+Namespace", "alice+ServiceAccount", "alice-token+Secret",
                                             "q+ResourceQuota", "p:lc1:nodes+ClusterRole", "perm+Role",
                                             "p:lc1:nodes+ClusterRoleBinding", "perm+RoleBinding"}));
  EXPECT_EQ(rs->Find("ns1+Namespace")->object["metadata"]["labels"]["geo"], "eu");
  // Cluster-wide names are the cloud's own; the binding names its role.
  EXPECT_EQ(rs->Find("p:lc1:nodes+ClusterRoleBinding")->object["roleRef"]["name"], "p:lc1:nodes");
  // Every object carries eco's labels, as a DIG's do: the ready monitor finds them by these.
  for (const auto& x : rs->resources) {
    EXPECT_EQ(x.object["metadata"]["labels"][appcontext::kContextLabel], id) << x.name;
    EXPECT_EQ(x.object["metadata"]["labels"][appcontext::kAppLabel], "logical-cloud") << x.name;
  }
  EXPECT_EQ(rs->Find("q+ResourceQuota")->object["spec"]["hard"]["pods"], "10");
  EXPECT_EQ(rs->Find("perm+RoleBinding")->object["subjects"][0]["name"], "alice");
  // A DIG in a logical cloud rsync has not finished is refused.
  Request put;
  put.method = "PUT";
  put.path = DIG;
  put.body = WithSpec("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc1"}}).dump();
  Ok(api_->Handle(put), 200);
  Ok(Post(DIG + "/approve"), 202);
  r = Post(DIG + "/instantiate");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("still being instantiated"), std::string::npos) << r.body;
  // Once it is, the DIG deploys into the cloud's namespace.
  ASSERT_TRUE(st_->Put(appcontext::StatusKey(id), R"({"status":"Instantiated"})").ok());
  Ok(Call("DELETE", DIG + "/generic-placement-intents/gpi/app-intents/db-pl"), 204);
  Request pl;
  pl.method = "PUT";
  pl.path = DIG + "/generic-placement-intents/gpi/app-intents/web-pl";
  pl.body = WithSpec("web-pl", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "east"}}}}}}}).dump();
  Ok(api_->Handle(pl), 200);
  Ok(Post(DIG + "/generic-placement-intents/gpi/app-intents",
          WithSpec("db-pl", {{"app", "db"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "edge1"}}}}}}})));
  Ok(Post(DIG + "/instantiate"), 202);
  EXPECT_EQ(ClusterKeys(Instance(), "web"), (std::vector<std::string>{"prov+edge1"}));  // edge2 is not in lc1
  EXPECT_EQ(ctx.GetMeta(Instance())->namespace_, "ns1");
  // The logical cloud cannot be terminated under an instantiated DIG.
  r = Post(L1 + "/terminate");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("dig"), std::string::npos) << r.body;
  Ok(Post(DIG + "/terminate"), 202);
  Ok(Post(L1 + "/terminate"), 202);
  EXPECT_EQ(json::parse(StatusOf(L1).body)["states"]["actions"].back()["state"], "Terminated");
}

TEST_F(LifecycleTest, AdminLogicalCloudIsInstantiatedAtOnce) {
  json st = json::parse(StatusOf(LC).body);
  EXPECT_EQ(st["deployedStatus"], "Instantiated");
  EXPECT_EQ(st["states"]["actions"].back()["state"], "Instantiated");
  EXPECT_EQ(Post(LC + "/instantiate").status, 409);
  Response r = Post(LC + "/stop");  // nothing is in progress
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.find("nothing in progress"), std::string::npos) << r.body;
  Ok(Post(LC + "/terminate"), 202);
  st = json::parse(StatusOf(LC).body);
  EXPECT_EQ(st["deployedStatus"], "Terminated");
  Ok(Post(LC + "/instantiate"), 202);
  EXPECT_EQ(json::parse(StatusOf(LC).body)["deployedStatus"], "Instantiated");
}

// A level-0 cloud's namespace reads as given ("" when none) until
// instantiate stores its clusters' one, as dcm does; what the DIGs in it
// deploy into is that namespace (EMCO's API suite: test_postLogicalClouds,
// test_getLogicalClouds, test_getLogicalCloudsByName).
TEST_F(LifecycleTest, LevelZeroNamespaceIsStoredAtInstantiate) {
  // lc0 (World) was instantiated without one.
  EXPECT_EQ(json::parse(Get(LC).body)["spec"]["namespace"], "default");
  // The suite's body, compared whole as the suite does.
  const std::string Z = "/v2/projects/p/logical-clouds/default";
  json body = json::parse(R"({"metadata": {"name": "default", "description": "default description",
      "userData1": "data1", "userData2": "data2"},
    "spec": {"labels": null, "level": "0", "namespace": "", "user": {"userName": "", "type": ""}}})");
  Ok(Post("/v2/projects/p/logical-clouds", body));
  Ok(Post(Z + "/cluster-references", WithSpec("r1", {{"clusterProvider", "prov"}, {"cluster", "edge1"}})));
  EXPECT_EQ(json::parse(Get(Z).body), body);
  Ok(Post(Z + "/instantiate"), 202);
  body["spec"]["namespace"] = "default";
  EXPECT_EQ(json::parse(Get(Z).body), body);  // test_getLogicalCloudsByNameAfterInstantiate
  Ok(Post(Z + "/terminate"), 202);
  EXPECT_EQ(json::parse(Get(Z).body), body);  // ...AfterTerminate
  // One the user named is kept (eco deploys there; dcm would overwrite it).
  const std::string N = "/v2/projects/p/logical-clouds/n0";
  Ok(Post("/v2/projects/p/logical-clouds", WithSpec("n0", {{"level", "0"}, {"namespace", "ops"}})));
  Ok(Post(N + "/cluster-references", WithSpec("r1", {{"clusterProvider", "prov"}, {"cluster", "edge1"}})));
  Ok(Post(N + "/instantiate"), 202);
  EXPECT_EQ(json::parse(Get(N).body)["spec"]["namespace"], "ops");
  // The DIG in lc0 deploys into the namespace instantiate stored.
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  appcontext::Contexts ctx(*st_);
  EXPECT_EQ(ctx.GetMeta(Instance())->namespace_, "default");
}

// dcm's answer to a logical cloud's status: `status` defaults to ready, the
// new names always, the clusters at the top (no `apps`); `type`, `app` and
// `apps` are not read. Before instantiate, after it and after terminate, at
// level 0 (nothing deployed: no clusters) and level 1.
TEST_F(LifecycleTest, LogicalCloudStatusIsDcms) {
  using Q = std::multimap<std::string, std::string>;
  const std::string L1 = "/v2/projects/p/logical-clouds/lc1";
  Ok(Post("/v2/projects/p/logical-clouds", WithSpec("lc1", {{"level", "1"}, {"namespace", "ns1"}})));
  Ok(Post(L1 + "/cluster-references", WithSpec("r1", {{"clusterProvider", "prov"}, {"cluster", "edge1"}})));
  Ok(Post(L1 + "/user-permissions", WithSpec("perm", {{"namespace", "ns1"}, {"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get"}}})));

  // Before instantiate: who and the states only.
  int code = 0;
  json j = StatusQuery(L1, {}, &code);
  ASSERT_EQ(code, 200) << j;
  EXPECT_EQ(j["project"], "p");
  EXPECT_EQ(j["name"], "lc1");
  EXPECT_EQ(j["states"]["actions"][0]["state"], "Created");
  EXPECT_EQ(j.size(), 3u) << j;

  Ok(Post(L1 + "/instantiate"), 202);
  j = StatusQuery(L1, {}, &code);
  ASSERT_EQ(code, 200) << j;
  EXPECT_EQ(j["deployedStatus"], "Created");  // rsync has not started: nothing deployed, nothing ready
  EXPECT_EQ(j["readyStatus"], "NotReady");
  EXPECT_EQ(j["readyCounts"], (json{{"NotPresent", 5}, {"NotReady", 0}, {"Ready", 0}}));
  for (const char* gone : {"apps", "status", "rsyncStatus", "clusterStatus", "deployedCounts"})
    EXPECT_FALSE(j.contains(gone)) << gone << " in " << j;
  ASSERT_EQ(j["clusters"].size(), 1u) << j;
  const json& c = j["clusters"][0];
  EXPECT_EQ(c["clusterProvider"], "prov");
  EXPECT_EQ(c["cluster"], "edge1");
  EXPECT_EQ(c["connectivity"], "Unknown");
  EXPECT_FALSE(c.contains("readyStatus")) << c;
  ASSERT_EQ(c["resources"].size(), 5u) << c;  // Namespace, ServiceAccount, its token Secret, Role, RoleBinding
  EXPECT_EQ(c["resources"][0]["GVK"], (json{{"Group", ""}, {"Version", "v1"}, {"Kind", "Namespace"}}));
  EXPECT_EQ(c["resources"][0]["name"], "ns1");
  EXPECT_EQ(c["resources"][0]["readyStatus"], "NotPresent");
  EXPECT_FALSE(c["resources"][0].contains("clusterStatus"));

  // type= is not read (not even a bad one), nor app/apps: the same answer.
  for (const Q& q : {Q{{"type", "rsync"}}, Q{{"type", "bogus"}}, Q{{"app", "other"}}, Q{{"apps", ""}}, Q{{"status", "ready"}}}) {
    json same = StatusQuery(L1, q, &code);
    EXPECT_EQ(code, 200) << same;
    EXPECT_EQ(same, j) << q.begin()->first;
  }
  j = StatusQuery(L1, {{"status", "deployed"}}, &code);
  ASSERT_EQ(code, 200) << j;
  EXPECT_EQ(j["deployedCounts"], (json{{"Pending", 5}}));
  EXPECT_FALSE(j.contains("readyCounts"));
  EXPECT_FALSE(j.contains("readyStatus"));
  EXPECT_EQ(j["clusters"][0]["resources"][0]["deployedStatus"], "Pending");
  EXPECT_FALSE(j.contains("apps"));
  j = StatusQuery(L1, {{"output", "summary"}}, &code);
  EXPECT_FALSE(j.contains("clusters")) << j;
  EXPECT_EQ(j["readyCounts"]["NotPresent"], 5);
  j = StatusQuery(L1, {{"resource", "ns1"}, {"cluster", "prov+edge1"}}, &code);
  EXPECT_EQ(j["clusters"][0]["resources"].size(), 1u) << j;
  // The list forms keep the app level, as dcm's do; clusters wins over resources.
  j = StatusQuery(L1, {{"clusters", ""}, {"resources", ""}}, &code);
  ASSERT_EQ(code, 200) << j;
  EXPECT_EQ(j, (json{{"project", "p"}, {"name", "lc1"},
                     {"clustersByApp", {{{"app", "logical-cloud"}, {"clusters", {{{"clusterProvider", "prov"}, {"cluster", "edge1"}}}}}}}}));
  j = StatusQuery(L1, {{"resources", ""}}, &code);
  EXPECT_EQ(j["resourcesByApp"][0]["app"], "logical-cloud");
  EXPECT_EQ(j["resourcesByApp"][0]["resources"].size(), 5u) << j;
  // dcm's parameter errors.
  for (auto [q, msg] : std::vector<std::pair<Q, std::string>>{{{{"status", "rsync"}}, "Invalid query status"},
                                                              {{{"output", "all2"}}, "Invalid query output"},
                                                              {{{"instance", ""}}, "Invalid query instance"},
                                                              {{{"cluster", "edge1"}}, "Invalid cluster query"},
                                                              {{{"resource", "-x"}}, "Invalid resources query"}}) {
    json e = StatusQuery(L1, q, &code);
    EXPECT_EQ(code, 400) << e;
    EXPECT_NE(e.dump().find(msg), std::string::npos) << e;
  }

  // Level 0: nothing deployed, so no clusters, before and after terminate.
  j = StatusQuery(LC, {}, &code);
  ASSERT_EQ(code, 200) << j;
  EXPECT_EQ(j["deployedStatus"], "Instantiated");
  EXPECT_EQ(j["readyStatus"], "Ready");
  EXPECT_FALSE(j.contains("clusters")) << j;
  EXPECT_FALSE(j.contains("apps")) << j;
  Ok(Post(LC + "/terminate"), 202);
  j = StatusQuery(LC, {}, &code);
  EXPECT_EQ(j["deployedStatus"], "Terminated");
  EXPECT_EQ(j["states"]["actions"].back()["state"], "Terminated");
  EXPECT_FALSE(j.contains("clusters")) << j;

  // Level 1 terminated: rsync's terminate is pending, the clusters still listed.
  Ok(Post(L1 + "/terminate"), 202);
  j = StatusQuery(L1, {{"status", "deployed"}}, &code);
  EXPECT_EQ(j["states"]["actions"].back()["state"], "Terminated");
  EXPECT_EQ(j["clusters"].size(), 1u) << j;
  EXPECT_FALSE(j.contains("apps")) << j;
}

// ---- the fleet plan (issue 37) ----

class PlanTest : public LifecycleTest {
 protected:
  Response Plan(const std::string& output = "") {
    Request r;
    r.method = "POST";
    r.path = DIG + "/plan";
    if (!output.empty()) r.query = {{"output", output}};
    return api_->Handle(r);
  }
  json PlanOk(const std::string& output = "") {
    Response r = Plan(output);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }
  Response WithPlan(const std::string& op, const std::string& id) {
    Request r;
    r.method = "POST";
    r.path = DIG + "/" + op;
    r.query = {{"plan", id}};
    return api_->Handle(r);
  }
  int64_t StoreRevision() { return *st_->CurrentRevision(); }
  void ReplaceProfile(int replicas) {
    Request r;
    r.method = "PUT";
    r.path = CA + "/composite-profiles/cp/profiles/web-profile";
    r.multipart = true;
    r.parts.emplace("metadata", api::FormPart{WithSpec("web-profile", {{"app", "web"}}).dump(), "", "application/json"});
    r.parts.emplace("file", api::FormPart{eco::testing::TgzOf({{"manifest.yaml", "version: v1\ntype:\n  values: \"override_values.yaml\"\n"},
                                                               {"override_values.yaml", "replicaCount: " + std::to_string(replicas) + "\n"}}),
                                          "f", "application/octet-stream"});
    Response resp = api_->Handle(r);
    ASSERT_EQ(resp.status, 200) << resp.body;
  }
  // cluster -> sorted "app/Kind/name" of one list of the plan.
  static std::map<std::string, std::vector<std::string>> Objects(const json& plan, const std::string& list) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& c : plan["clusters"]) {
      for (const auto& o : c[list]) {
        out[c["cluster"]].push_back(o["app"].get<std::string>() + "/" + o["kind"].get<std::string>() + "/" +
                                    o["name"].get<std::string>());
      }
      std::sort(out[c["cluster"]].begin(), out[c["cluster"]].end());
      if (out[c["cluster"]].empty()) out.erase(c["cluster"].get<std::string>());
    }
    return out;
  }
  // The same from a context: every object each cluster gets.
  std::map<std::string, std::vector<std::string>> ContextObjects(const std::string& id) {
    appcontext::Contexts ctx(*st_);
    std::map<std::string, std::vector<std::string>> out;
    auto meta = ctx.GetMeta(id);
    EXPECT_TRUE(meta.ok());
    if (!meta.ok()) return out;
    for (const auto& app : meta->app_order) {
      auto clusters = ctx.Clusters(id, app);
      if (!clusters.ok()) continue;
      for (const auto& c : *clusters) {
        auto rs = ctx.Resources(id, app, c.key());
        for (const auto* list : {&rs->crds, &rs->resources}) {
          for (const auto& r : *list) {
            out[c.key()].push_back(app + "/" + r.object["kind"].get<std::string>() + "/" +
                                   r.object["metadata"]["name"].get<std::string>());
          }
        }
      }
    }
    for (auto& [k, v] : out) std::sort(v.begin(), v.end());
    return out;
  }
};

TEST_F(PlanTest, BeforeInstantiateEveryObjectIsCreatedAndNothingIsWritten) {
  const int64_t before = StoreRevision();
  const size_t contexts = ContextCount();  // the logical cloud's
  json plan = PlanOk();  // a Created DIG: what approve + instantiate would do
  EXPECT_EQ(StoreRevision(), before);
  EXPECT_EQ(ContextCount(), contexts);
  EXPECT_EQ(plan["operation"], "instantiate");
  EXPECT_EQ(plan["revision"], 1);
  EXPECT_FALSE(plan.contains("currentRevision"));
  EXPECT_EQ(plan["waves"], json::parse(R"([{"name":"all","clusters":["prov+edge1","prov+edge2"]}])"));
  ASSERT_EQ(plan["apps"].size(), 2u);
  const json& db = plan["apps"][0];
  EXPECT_EQ(db["name"], "db");
  EXPECT_EQ(db["clusters"], json::parse(R"([{"cluster":"prov+edge1","reason":"anyOf group 1: cluster prov+edge1"}])"));
  EXPECT_EQ(db["added"], json::parse(R"(["prov+edge1"])"));
  EXPECT_EQ(db["notPlaced"],
            json::parse(R"x([{"cluster":"prov+edge3","reason":"anyOf group 1: prov+edge1 was kept (the first of the group by name)"}])x"));
  const json& web = plan["apps"][1];
  EXPECT_EQ(web["clusters"][1], json::parse(R"({"cluster":"prov+edge2","reason":"allOf: label east"})"));
  EXPECT_EQ(Objects(plan, "change").size(), 0u);
  EXPECT_EQ(Objects(plan, "delete").size(), 0u);
  EXPECT_EQ(plan["summary"]["create"], 3);
  EXPECT_GT(plan["summary"]["bytes"].get<int64_t>(), 300);
  // The summary has the same id and counts, without the object lists.
  json summary = PlanOk("summary");
  EXPECT_EQ(summary["planId"], plan["planId"]);
  EXPECT_EQ(summary["summary"], plan["summary"]);
  EXPECT_FALSE(summary.contains("clusters"));
  EXPECT_EQ(Plan("everything").status, 400);
  EXPECT_EQ(StoreRevision(), before);

  // The instantiation does what the plan said, to the object.
  Ok(Post(DIG + "/approve"), 202);
  EXPECT_EQ(PlanOk()["planId"], plan["planId"]);
  Response r = WithPlan("instantiate", plan["planId"]);
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(ContextObjects(Instance()), Objects(plan, "create"));
}

TEST_F(PlanTest, AfterChangesItListsExactlyThemAndUpdateChecksTheId) {
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  const std::string first = Instance();
  json same = PlanOk();
  EXPECT_EQ(same["operation"], "update");
  EXPECT_EQ(same["revision"], 2);
  EXPECT_EQ(same["currentRevision"], 1);
  EXPECT_EQ(same["clusters"], json::array());  // nothing changed, nothing to do
  EXPECT_EQ(same["summary"]["clustersChanging"], 0);

  // edge3 joins label east, edge2 leaves it; the web profile now asks 4 replicas.
  Ok(Post("/v2/cluster-providers/prov/clusters/edge3/labels", json{{"clusterLabel", "east"}}));
  Ok(Call("DELETE", "/v2/cluster-providers/prov/clusters/edge2/labels/east"), 204);
  ReplaceProfile(4);
  const int64_t before = StoreRevision();
  json plan = PlanOk();
  EXPECT_EQ(StoreRevision(), before);
  EXPECT_EQ(ContextCount(), 2u);  // the logical cloud's and the DIG's first
  const json& web = plan["apps"][1];
  EXPECT_EQ(web["added"], json::parse(R"(["prov+edge3"])"));
  EXPECT_EQ(web["removed"], json::parse(R"(["prov+edge2"])"));
  using Objs = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(Objects(plan, "create"), (Objs{{"prov+edge3", {"web/Deployment/r1-web"}}}));
  EXPECT_EQ(Objects(plan, "delete"), (Objs{{"prov+edge2", {"web/Deployment/r1-web"}}}));
  EXPECT_EQ(Objects(plan, "change"), (Objs{{"prov+edge1", {"web/Deployment/r1-web"}}}));
  json change;
  for (const auto& c : plan["clusters"]) {
    if (c["cluster"] == "prov+edge1") change = c["change"][0];
  }
  EXPECT_EQ(change["diff"], json::parse(R"([{"path":"spec.replicas","from":2,"to":4}])"));
  EXPECT_EQ(plan["waves"][0]["clusters"], json::parse(R"(["prov+edge1","prov+edge2","prov+edge3"])"));

  // A change after the plan: update?plan= refuses and changes nothing.
  ReplaceProfile(5);
  const int64_t rev = StoreRevision();
  Response stale = WithPlan("update", plan["planId"]);
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_NE(json::parse(stale.body)["message"].get<std::string>().find("the plan changed"), std::string::npos) << stale.body;
  EXPECT_EQ(Instance(), first);
  EXPECT_EQ(ContextCount(), 2u);
  EXPECT_EQ(State()["actions"].back()["revision"], 1);
  EXPECT_GE(StoreRevision(), rev);
  // With the fresh plan's id it goes through, and deploys what it said.
  json fresh = PlanOk();
  EXPECT_NE(fresh["planId"], plan["planId"]);
  Response ok = WithPlan("update", fresh["planId"]);
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_EQ(ok.body, "2");
  const std::string second = Instance();
  Objs deployed = ContextObjects(second);
  EXPECT_EQ(deployed, (Objs{{"prov+edge1", {"db/Deployment/r1-db", "web/Deployment/r1-web"}},
                            {"prov+edge3", {"web/Deployment/r1-web"}}}));
  appcontext::Contexts ctx(*st_);
  EXPECT_EQ(ctx.Resources(second, "web", "")->Find("r1-web+Deployment")->object["spec"]["replicas"], 5);
}

// A rollback's plan: the chosen revision's own AppContext against the one
// deployed; rollback?plan= refuses when it no longer says the same.
TEST_F(PlanTest, RollbackIsPlannedAgainstTheRevisionItDeploysAgain) {
  Ok(Post(DIG + "/approve"), 202);
  Ok(Post(DIG + "/instantiate"), 202);
  const std::string first = Instance();
  ReplaceProfile(4);
  Ok(Post(DIG + "/update"), 202);
  auto plan_of = [&](const std::string& rev) {
    Request r;
    r.method = "POST";
    r.path = DIG + "/plan";
    r.query = {{"rollback", rev}};
    return api_->Handle(r);
  };
  const int64_t before = StoreRevision();
  Response r = plan_of("1");
  ASSERT_EQ(r.status, 200) << r.body;
  json plan = json::parse(r.body);
  EXPECT_EQ(StoreRevision(), before);  // nothing written
  EXPECT_EQ(plan["operation"], "rollback");
  EXPECT_EQ(plan["revision"], 3);
  EXPECT_EQ(plan["currentRevision"], 2);
  json change;
  for (const auto& c : plan["clusters"]) {
    if (c["cluster"] == "prov+edge1") change = c["change"][0];
  }
  EXPECT_EQ(change["diff"], json::parse(R"([{"path":"spec.replicas","from":4,"to":2}])"));
  EXPECT_EQ(plan_of("2").status, 400);  // the one deployed now
  EXPECT_EQ(plan_of("9").status, 400);  // no such revision
  EXPECT_EQ(plan_of("x").status, 400);

  Request rb;
  rb.method = "POST";
  rb.path = DIG + "/rollback";
  rb.body = json{{"spec", {{"revision", "1"}}}}.dump();
  rb.query = {{"plan", "not-the-plan"}};
  Response stale = api_->Handle(rb);
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_EQ(State()["actions"].back()["revision"], 2);
  rb.query = {{"plan", plan["planId"].get<std::string>()}};
  Response ok = api_->Handle(rb);
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_EQ(Instance(), first);
}

TEST_F(PlanTest, ErrorsAreTheOperationsOwn) {
  Request r;
  r.method = "POST";
  r.path = CA + "/deployment-intent-groups/nope/plan";
  EXPECT_EQ(api_->Handle(r).status, 404);
  // A placement naming a cluster outside the logical cloud: 400, as instantiate.
  Ok(Post(DIG + "/generic-placement-intents/gpi/app-intents",
          WithSpec("web-pl2", {{"app", "web"}, {"intent", {{"allOf", {{{"clusterProvider", "prov"}, {"cluster", "edge4"}}}}}}})));
  Request del;
  del.method = "DELETE";
  del.path = DIG + "/generic-placement-intents/gpi/app-intents/web-pl";
  ASSERT_EQ(api_->Handle(del).status, 204);
  const size_t contexts = ContextCount();
  Response bad = Plan();
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("not in the logical cloud"), std::string::npos) << bad.body;
  EXPECT_EQ(ContextCount(), contexts);
  // A logical cloud not instantiated any more: 409 with the reason, as instantiate.
  Ok(Post(LC + "/terminate"), 202);
  Response lc = Plan();
  EXPECT_EQ(lc.status, 409) << lc.body;
  EXPECT_NE(lc.body.find("not currently applied"), std::string::npos) << lc.body;
}

}  // namespace
}  // namespace eco::scheduler
