// The AppContext on a real embedded store: building, controller edits with
// per-cluster copies shared between identical edits, anyOf resolution,
// sealing, the rsync queue and the janitor.
#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "appcontext/rollout.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "process.h"
#include "store/sqlite_store.h"

namespace eco::appcontext {
namespace {

json Deployment(const std::string& name, int replicas) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}}},
          {"spec", {{"replicas", replicas}}}};
}

ResourceSet WebSet() {
  ResourceSet rs;
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cfg"}}}};
  rs.resources.push_back({ResourceName(cm), cm});
  json d = Deployment("web", 1);
  rs.resources.push_back({ResourceName(d), d});
  return rs;
}

std::vector<ClusterRef> Clusters(int n, int first_group = 1, bool mandatory = true) {
  std::vector<ClusterRef> cs;
  for (int i = 0; i < n; ++i) {
    cs.push_back({"p", "c" + std::to_string(i), mandatory ? first_group + i : first_group, mandatory, 0});
  }
  return cs;
}

class AppContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ctx_ = std::make_unique<Contexts>(*st_);
    auto lease = st_->GrantLease(std::chrono::seconds(30));
    ASSERT_TRUE(lease.ok());
    lease_ = *lease;
  }

  std::string NewContext(const std::vector<std::string>& apps = {"web"}) {
    Meta m;
    m.kind = "dig";
    m.project = "p1";
    m.app_order = apps;
    m.dependencies["web"] = {{"db", "Ready", 5}};
    auto id = ctx_->Create(m, lease_);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  Status Seal(const std::string& id) {
    store::Txn txn;
    txn.compares.push_back(ctx_->NotSealed(id));
    txn.success = ctx_->SealOps(id, "Created", {"instantiate", ""});
    auto r = st_->Commit(txn);
    if (!r.ok()) return r.status();
    return r->succeeded ? Status::Ok() : Conflict("already sealed");
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<Contexts> ctx_;
  store::LeaseId lease_ = 0;
};

TEST_F(AppContextTest, MetaRoundTrips) {
  std::string id = NewContext({"db", "web"});
  auto m = ctx_->GetMeta(id);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->id, id);
  EXPECT_EQ(m->project, "p1");
  EXPECT_EQ(m->app_order, (std::vector<std::string>{"db", "web"}));
  ASSERT_EQ(m->dependencies["web"].size(), 1u);
  EXPECT_EQ(m->dependencies["web"][0].app, "db");
  EXPECT_EQ(m->dependencies["web"][0].wait_seconds, 5);
  EXPECT_FALSE(m->created.empty());
  EXPECT_EQ(ctx_->GetMeta("12345").status().code(), Code::kNotFound);
}

TEST_F(AppContextTest, ClustersShareTheAppsResourcesUntilEdited) {
  std::string id = NewContext();
  ASSERT_TRUE(ctx_->PutApp(id, "web", WebSet(), Clusters(3)).ok());
  auto shared = ctx_->Resources(id, "web", "");
  ASSERT_TRUE(shared.ok());
  ASSERT_EQ(shared->resources.size(), 2u);
  EXPECT_EQ(shared->resources[0].name, "cfg+ConfigMap");
  EXPECT_EQ(shared->resources[1].name, "web+Deployment");
  for (const char* c : {"p+c0", "p+c1", "p+c2"}) {
    auto rs = ctx_->Resources(id, "web", c);
    ASSERT_TRUE(rs.ok()) << c;
    EXPECT_EQ(ToJson(*rs), ToJson(*shared));
  }
  EXPECT_EQ(ctx_->Resources(id, "web", "p+nope").status().code(), Code::kNotFound);
}

TEST_F(AppContextTest, AnEditForOneClusterGivesThatClusterACopy) {
  std::string id = NewContext();
  ASSERT_TRUE(ctx_->PutApp(id, "web", WebSet(), Clusters(3)).ok());
  ResourceSet edited = WebSet();
  edited.Find("web+Deployment")->object["spec"]["replicas"] = 5;
  ASSERT_TRUE(ctx_->SetResources(id, "web", {"p+c1"}, edited).ok());
  EXPECT_EQ(ctx_->Resources(id, "web", "p+c1")->Find("web+Deployment")->object["spec"]["replicas"], 5);
  EXPECT_EQ(ctx_->Resources(id, "web", "p+c0")->Find("web+Deployment")->object["spec"]["replicas"], 1);
  EXPECT_EQ(ctx_->Resources(id, "web", "")->Find("web+Deployment")->object["spec"]["replicas"], 1);
  // The same edit for another cluster reuses the stored copy.
  ASSERT_TRUE(ctx_->SetResources(id, "web", {"p+c2"}, edited).ok());
  auto cs = ctx_->Clusters(id, "web");
  ASSERT_TRUE(cs.ok());
  EXPECT_EQ((*cs)[0].variant, 0);
  EXPECT_EQ((*cs)[1].variant, (*cs)[2].variant);
  EXPECT_NE((*cs)[1].variant, 0);
  auto variants = st_->Range(ContextPrefix(id) + "app/web/variant/");
  ASSERT_TRUE(variants.ok());
  EXPECT_EQ(variants->kvs.size(), 1u);
  // Editing every cluster alike makes it the shared set and drops copies.
  ASSERT_TRUE(ctx_->SetResources(id, "web", {}, edited).ok());
  variants = st_->Range(ContextPrefix(id) + "app/web/variant/");
  EXPECT_TRUE(variants->kvs.empty());
  EXPECT_EQ(ctx_->Resources(id, "web", "")->Find("web+Deployment")->object["spec"]["replicas"], 5);
  EXPECT_EQ(ctx_->SetResources(id, "web", {"p+zz"}, edited).code(), Code::kNotFound);
}

TEST_F(AppContextTest, BatchEditsStoreSmallDeltasAndReadBackWhole) {
  std::string id = NewContext();
  ResourceSet base = WebSet();
  // A large shared object that no edit touches.
  json big = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "big"}}},
              {"data", {{"blob", std::string(20000, 'x')}}}};
  base.resources.push_back({ResourceName(big), big});
  ASSERT_TRUE(ctx_->PutApp(id, "web", base, Clusters(500)).ok());
  // Every cluster gets its own extra object, plus one unchanged cluster.
  std::vector<ClusterEdit> edits;
  for (int i = 1; i < 500; ++i) {
    ResourceSet rs = base;
    json gw = {{"apiVersion", "networking.istio.io/v1"}, {"kind", "Gateway"},
               {"metadata", {{"name", "gw"}}}, {"spec", {{"host", "web.p.c" + std::to_string(i)}}}};
    rs.resources.push_back({ResourceName(gw), gw});
    edits.push_back({{"p+c" + std::to_string(i)}, std::move(rs)});
  }
  ASSERT_TRUE(ctx_->SetResourcesBatch(id, "web", edits).ok());
  auto plan = ctx_->ReadApp(id, "web");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->clusters.size(), 500u);
  EXPECT_EQ(plan->clusters[0].variant, 0);
  for (int i : {1, 250, 499}) {
    auto rs = plan->For(plan->clusters[static_cast<size_t>(i)]);
    ASSERT_TRUE(rs.ok()) << rs.status().ToString();
    ASSERT_EQ(rs->resources.size(), 4u);
    EXPECT_EQ(rs->resources[3].object["spec"]["host"], "web.p.c" + std::to_string(i));
    EXPECT_EQ(rs->Find("big+ConfigMap")->object["data"]["blob"].get<std::string>().size(), 20000u);
    // The same through the single-cluster read.
    auto one = ctx_->Resources(id, "web", "p+c" + std::to_string(i));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(ToJson(*one), ToJson(*rs));
  }
  EXPECT_EQ(plan->For(plan->clusters[0])->resources.size(), 3u);
  // 499 variants, each far smaller than the shared set it refers to.
  auto size = ctx_->SizeBytes(id);
  ASSERT_TRUE(size.ok());
  EXPECT_LT(*size, 499 * 2000 + 100000);
  // An edit identical to an existing variant reuses it.
  ResourceSet again = edits[0].resources;
  ASSERT_TRUE(ctx_->SetResources(id, "web", {"p+c0"}, again).ok());
  auto cs = ctx_->Clusters(id, "web");
  EXPECT_EQ((*cs)[0].variant, (*cs)[1].variant);
  // Overlapping edits and unknown clusters are refused, changing nothing.
  EXPECT_EQ(ctx_->SetResourcesBatch(id, "web", {{{"p+c1"}, base}, {{"p+c1"}, base}}).code(), Code::kInvalid);
  EXPECT_EQ(ctx_->SetResourcesBatch(id, "web", {{{"p+nope"}, base}}).code(), Code::kNotFound);
  EXPECT_EQ(ctx_->Resources(id, "web", "p+c1")->resources.size(), 4u);
}

TEST_F(AppContextTest, SizeGrowsByReferencesNotCopies) {
  std::string small = NewContext();
  ASSERT_TRUE(ctx_->PutApp(small, "web", WebSet(), Clusters(10)).ok());
  std::string big = NewContext();
  ASSERT_TRUE(ctx_->PutApp(big, "web", WebSet(), Clusters(1000)).ok());
  auto s = ctx_->SizeBytes(small);
  auto b = ctx_->SizeBytes(big);
  ASSERT_TRUE(s.ok() && b.ok());
  int64_t manifests = static_cast<int64_t>(ToJson(WebSet()).dump().size());
  // 990 more clusters cost far less than 990 copies of the manifests.
  EXPECT_LT(*b - *s, 990 * manifests / 2);
  EXPECT_LT((*b - *s) / 990, 40);  // bytes per cluster reference
}

TEST_F(AppContextTest, RemoveClustersAndResolveAnyOfGroups) {
  std::string id = NewContext();
  std::vector<ClusterRef> cs = Clusters(2);                // groups 1, 2 mandatory
  for (auto& c : Clusters(3, 3, false)) cs.push_back(c);  // group 3 optional: c0..c2
  cs[2].name = "z";                                       // p+z, p+c1, p+c2 in group 3
  ASSERT_TRUE(ctx_->PutApp(id, "web", WebSet(), cs).ok());
  ASSERT_TRUE(ctx_->RemoveClusters(id, "web", {"p+c1"}).ok());  // drops mandatory c1 and optional c1
  ASSERT_TRUE(ctx_->ResolveGroups(id).ok());
  auto left = ctx_->Clusters(id, "web");
  ASSERT_TRUE(left.ok());
  std::vector<std::string> keys;
  for (auto& c : *left) keys.push_back(c.key() + "/" + std::to_string(c.group));
  // The first survivor by key of the optional group stays: p+c2 < p+z.
  EXPECT_EQ(keys, (std::vector<std::string>{"p+c0/1", "p+c2/3"}));
}

TEST_F(AppContextTest, SealedContextsRefuseEditsAndQueueEvents) {
  std::string id = NewContext();
  ASSERT_TRUE(ctx_->PutApp(id, "web", WebSet(), Clusters(2)).ok());
  ASSERT_TRUE(Seal(id).ok());
  EXPECT_EQ(Seal(id).code(), Code::kConflict);
  EXPECT_TRUE(*ctx_->Sealed(id));
  EXPECT_EQ(*ctx_->GetStatus(id), "Created");
  EXPECT_EQ(ctx_->RemoveClusters(id, "web", {"p+c0"}).code(), Code::kConflict);
  EXPECT_EQ(ctx_->SetResources(id, "web", {"p+c0"}, WebSet()).code(), Code::kConflict);
  EXPECT_EQ(ctx_->PutApp(id, "web", WebSet(), Clusters(1)).code(), Code::kConflict);
  auto active = st_->Get(ActiveKey(id));
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(active->has_value());
  auto seq = ctx_->NextEventSeq(id);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 2);
  store::Txn txn;
  txn.success = ctx_->EnqueueOps(id, *seq, {"terminate", ""});
  ASSERT_TRUE(st_->Commit(txn).ok());
  auto events = st_->Range(EventPrefix(id));
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->kvs.size(), 2u);
  EXPECT_EQ(json::parse(events->kvs[0].value)["event"], "instantiate");
  EXPECT_EQ(json::parse(events->kvs[1].value)["event"], "terminate");
  EXPECT_EQ(json::parse(events->kvs[1].value)["status"], "pending");
}

TEST_F(AppContextTest, JanitorRemovesContextsWhoseBuilderDied) {
  auto other = st_->GrantLease(std::chrono::seconds(30));
  ASSERT_TRUE(other.ok());
  Meta m;
  m.app_order = {"web"};
  auto dying = ctx_->Create(m, *other);
  ASSERT_TRUE(dying.ok());
  ASSERT_TRUE(ctx_->PutApp(*dying, "web", WebSet(), Clusters(2)).ok());
  std::string alive = NewContext();
  std::string sealed = NewContext();
  ASSERT_TRUE(Seal(sealed).ok());
  ASSERT_TRUE(st_->RevokeLease(*other).ok());
  auto n = ctx_->CollectAbandoned();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_FALSE(*ctx_->Exists(*dying));
  auto rest = st_->Range(ContextPrefix(*dying));
  EXPECT_TRUE(rest->kvs.empty());
  EXPECT_TRUE(*ctx_->Exists(alive));
  EXPECT_TRUE(*ctx_->Exists(sealed));
}

TEST_F(AppContextTest, ResourceSetJsonRoundTrip) {
  ResourceSet rs = WebSet();
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "foos.example.com"}}}};
  rs.crds.push_back({ResourceName(crd), crd});
  json job = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", {{"name", "migrate"}}}};
  rs.hooks.push_back({ResourceName(job), job});
  rs.hook_events["pre-install"] = {"migrate+Job"};
  auto back = ResourceSetFromJson(ToJson(rs));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(rs));
  EXPECT_EQ(back->size(), 4u);
  EXPECT_NE(back->Find("foos.example.com+CustomResourceDefinition"), nullptr);
  EXPECT_FALSE(ResourceSetFromJson(json::array()).ok());
}

// ---- spec.rollout (appcontext/rollout.h) ----

json Spec(const std::string& rollout_json) { return {{"rollout", json::parse(rollout_json)}}; }

std::string RolloutError(const std::string& rollout_json) {
  auto r = ParseRollout(Spec(rollout_json));
  return r.ok() ? "accepted" : r.status().message();
}

TEST(RolloutTest, AbsentOrNullIsAllAtOnce) {
  auto none = ParseRollout(json{{"version", "r1"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto null = ParseRollout(Spec("null"));
  ASSERT_TRUE(null.ok());
  EXPECT_FALSE(null->has_value());
}

TEST(RolloutTest, AWholeStrategyParsesAndRoundTrips) {
  const std::string text = R"({"waves": [{"name": "canary", "clusterLabel": "wave-canary"},
                                         {"name": "pilots", "clusters": ["edges+e1", "edges+e2"]},
                                         {"name": "tenth", "percent": 10}],
                               "maxConcurrency": "25%", "maxFailures": 2, "soakSeconds": 60,
                               "readyTimeoutSeconds": 300, "offline": "skip", "onFailure": "rollback",
                               "approval": "between-waves"})";
  auto r = ParseRollout(Spec(text));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  const RolloutStrategy& s = **r;
  ASSERT_EQ(s.waves.size(), 3u);
  EXPECT_EQ(s.waves[0].cluster_label, "wave-canary");
  EXPECT_EQ(s.waves[1].clusters, (std::vector<std::string>{"edges+e1", "edges+e2"}));
  EXPECT_EQ(s.waves[2].percent, 10);
  ASSERT_TRUE(s.max_concurrency.has_value());
  EXPECT_EQ(s.max_concurrency->Of(10), 3);  // 25% of 10, rounded up
  EXPECT_EQ(s.max_failures.Of(1000), 2);
  EXPECT_EQ(s.offline, "skip");
  EXPECT_EQ(s.on_failure, "rollback");
  EXPECT_EQ(s.approval, "between-waves");
  // What it stores reads back the same.
  auto again = ParseRollout(json{{"rollout", ToJson(s)}});
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ(ToJson(**again), ToJson(s));
  // Defaults: the first failure stops, waits for offline clusters, pauses.
  auto d = ParseRollout(Spec(R"({"waves": [{"name": "all", "percent": 100}]})"));
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_FALSE((*d)->max_concurrency.has_value());
  EXPECT_EQ((*d)->max_failures.Of(50), 0);
  EXPECT_EQ((*d)->offline, "wait");
  EXPECT_EQ((*d)->on_failure, "pause");
  EXPECT_EQ((*d)->approval, "none");
}

TEST(RolloutTest, BadInputNamesTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("fast")", "spec.rollout must be an object"},
      {R"({})", "spec.rollout.waves: is required"},
      {R"({"waves": []})", "spec.rollout.waves: must be a non-empty list"},
      {R"({"waves": [{"name": "a"}]})", "spec.rollout.waves[0]: a wave needs exactly one of"},
      {R"({"waves": [{"name": "a", "percent": 5, "clusterLabel": "x"}]})", "spec.rollout.waves[0]: a wave needs exactly one of"},
      {R"({"waves": [{"percent": 5}]})", "spec.rollout.waves[0].name: is required"},
      {R"({"waves": [{"name": "a", "percent": 0}]})", "spec.rollout.waves[0].percent: must be a whole number from 1 to 100"},
      {R"({"waves": [{"name": "a", "percent": 101}]})", "waves[0].percent"},
      {R"({"waves": [{"name": "a", "percent": 5}, {"name": "a", "percent": 5}]})", "waves[1].name: wave a is named twice"},
      {R"({"waves": [{"name": "a", "clusters": ["p+c"]}, {"name": "b", "clusters": ["p+c"]}]})",
       "waves[1].clusters: cluster p+c is named twice"},
      {R"({"waves": [{"name": "a", "clusters": ["c"]}]})", "each entry is \"provider+cluster\""},
      {R"({"waves": [{"name": "a", "percent": 5, "colour": 1}]})", "spec.rollout.waves[0].colour: unknown field"},
      {R"({"waves": [{"name": "a", "percent": 5}], "maxConcurrency": -1})", "spec.rollout.maxConcurrency: must be at least 1"},
      {R"({"waves": [{"name": "a", "percent": 5}], "maxConcurrency": 0})", "maxConcurrency: must be at least 1"},
      {R"({"waves": [{"name": "a", "percent": 5}], "maxFailures": "many"})", "spec.rollout.maxFailures: must be a whole number or a percentage"},
      {R"({"waves": [{"name": "a", "percent": 5}], "maxFailures": "150%"})", "maxFailures: a percentage is at most 100%"},
      {R"({"waves": [{"name": "a", "percent": 5}], "soakSeconds": -5})", "spec.rollout.soakSeconds: must be a whole number of seconds"},
      {R"({"waves": [{"name": "a", "percent": 5}], "readyTimeoutSeconds": 0})", "readyTimeoutSeconds: must be a whole number of seconds, at least 1"},
      {R"({"waves": [{"name": "a", "percent": 5}], "offline": "ignore"})", R"(spec.rollout.offline: must be one of "wait", "skip", "fail", got "ignore")"},
      {R"({"waves": [{"name": "a", "percent": 5}], "onFailure": "retry"})", "spec.rollout.onFailure: must be one of"},
      {R"({"waves": [{"name": "a", "percent": 5}], "approval": true})", "spec.rollout.approval: must be one of"},
      {R"({"waves": [{"name": "a", "percent": 5}], "wave": 1})", "spec.rollout.wave: unknown field"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = RolloutError(text);
    EXPECT_NE(got.find(want), std::string::npos) << text << "\n  got: " << got;
    EXPECT_EQ(got.rfind("Invalid Input: ", 0), 0u) << got;
  }
}

TEST(RolloutTest, LimitsRoundUpAndAPositivePercentageIsAtLeastOne) {
  EXPECT_EQ((RolloutLimit{10, true}).Of(5), 1);
  EXPECT_EQ((RolloutLimit{10, true}).Of(30), 3);
  EXPECT_EQ((RolloutLimit{10, true}).Of(31), 4);
  EXPECT_EQ((RolloutLimit{0, true}).Of(31), 0);
  EXPECT_EQ((RolloutLimit{100, true}).Of(7), 7);
  EXPECT_EQ((RolloutLimit{3, false}).Of(1), 3);
}

TEST(RolloutTest, NaturalOrder) {
  std::vector<std::string> v = {"p+e-10", "p+e-2", "p+e-1", "q+a", "p+e-02", "p+e", "p+e-100"};
  std::sort(v.begin(), v.end(), NaturalLess);
  EXPECT_EQ(v, (std::vector<std::string>{"p+e", "p+e-1", "p+e-2", "p+e-02", "p+e-10", "p+e-100", "q+a"}));
  EXPECT_FALSE(NaturalLess("a", "a"));
}

TEST(RolloutTest, SplitFollowsTheWavesInOrderAndTheRestGoLast) {
  std::vector<RolloutCluster> fleet;
  for (int i = 1; i <= 12; ++i) {
    RolloutCluster c{"edges+e-" + std::to_string(i), {}};
    if (i == 7 || i == 11) c.labels.push_back("wave-canary");
    fleet.push_back(c);
  }
  auto s = ParseRollout(Spec(R"({"waves": [{"name": "canary", "clusterLabel": "wave-canary"},
                                          {"name": "pilots", "clusters": ["edges+e-11", "edges+e-3", "edges+e-99"]},
                                          {"name": "quarter", "percent": 25},
                                          {"name": "nobody", "clusterLabel": "no-such-label"}]})"));
  ASSERT_TRUE(s.ok() && s->has_value()) << s.status().ToString();
  auto waves = SplitIntoWaves(**s, fleet);
  ASSERT_EQ(waves.size(), 5u);
  EXPECT_EQ(waves[0].name, "canary");
  EXPECT_EQ(waves[0].clusters, (std::vector<std::string>{"edges+e-7", "edges+e-11"}));
  // e-11 went with the canaries; e-99 is not in the fleet.
  EXPECT_EQ(waves[1].clusters, (std::vector<std::string>{"edges+e-3"}));
  // 25% of the 12, in natural order, from what is left.
  EXPECT_EQ(waves[2].clusters, (std::vector<std::string>{"edges+e-1", "edges+e-2", "edges+e-4"}));
  EXPECT_EQ(waves[3].name, "nobody");
  EXPECT_TRUE(waves[3].clusters.empty());
  EXPECT_EQ(waves[4].name, "rest");
  EXPECT_EQ(waves[4].clusters,
            (std::vector<std::string>{"edges+e-5", "edges+e-6", "edges+e-8", "edges+e-9", "edges+e-10", "edges+e-12"}));
  // Every cluster once.
  size_t n = 0;
  for (const auto& w : waves) n += w.clusters.size();
  EXPECT_EQ(n, fleet.size());
}

// What rsync records of a rollout reads back as written; what is not a
// record is an error, never a default that would restart the rollout.
TEST(RolloutTest, ProgressControlAndClusterEndsRoundTrip) {
  RolloutProgress p;
  p.event = 3;
  p.revision = 2;
  p.state = "RollingBack";
  p.wave = 1;
  p.waves = {{"a", {"e+1", "e+2"}, "2026-12-07T10:00:00Z", "2026-12-07T10:01:00Z"}, {"b", {"e+3"}, "2026-12-07T10:01:00Z", ""}};
  p.reason = "1 cluster(s) failed";
  p.acknowledged = 1;
  p.resumes_seen = 2;
  p.started_at = "2026-12-07T10:00:00Z";
  p.rollback_context = "42";
  p.rollback_event = 4;
  p.rollback_revision = 1;
  auto back = RolloutProgressFromJson(nlohmann::json::parse(ToJson(p).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(p));
  EXPECT_EQ(back->waves[1].clusters, (std::vector<std::string>{"e+3"}));
  EXPECT_EQ(back->rollback_context, "42");
  EXPECT_FALSE(RolloutProgressFromJson(nlohmann::json::parse(R"({"state": "Complete"})")).ok());
  EXPECT_FALSE(RolloutProgressFromJson(nlohmann::json::parse("[]")).ok());

  RolloutControl c{3, true, 2, 1, false};
  auto cb = RolloutControlFromJson(ToJson(c));
  EXPECT_EQ(ToJson(cb), ToJson(c));
  EXPECT_EQ(RolloutControlFromJson(nlohmann::json("junk")).event, 0);

  RolloutClusterEnd e{"failed", "2026-12-07T10:00:00Z", "not done within readyTimeoutSeconds (10 s)"};
  auto eb = RolloutClusterEndFromJson(ToJson(e));
  EXPECT_EQ(eb.state, "failed");
  EXPECT_EQ(eb.reason, e.reason);
  EXPECT_EQ(RolloutClusterKey("7", "p+c"), "/eco/ac/7/rollout-clusters/p+c");
}

// The records' fast readers (simdjson) read what the JSON-tree readers
// read, on well-formed records and on odd ones alike.
TEST(RecordReaders, FastReadersAgreeWithTheTreeReaders) {
  for (const char* text : {
           R"({"connectivity":"Retrying","message":"refused","resources":{"a+ConfigMap":{"status":"Applied","ref":"1",)"
           R"("time":"t","generation":3,"shared":true,"warnings":["w1",2,"w\u00e9"]},"b\"q+Deployment":{"status":"Failed",)"
           R"("error":"e"},"c":5,"d+X":{"status":7,"generation":"9","shared":"yes"}}})",
           R"({"resources":{"a+X":{"status":"Pending"},"a+X":{"status":"Applied"}}})",
           R"({"connectivity":3,"resources":[]})", R"({})", R"([1,2])", R"(not json)", R"({"resources":{}} x)",
           ""}) {
    auto tree = DeployedFromJson(nlohmann::json::parse(text, nullptr, false));
    auto fast = ParseDeployed(text);
    ASSERT_EQ(tree.ok(), fast.ok()) << text;
    if (tree.ok()) {
      EXPECT_EQ(ToJson(*fast), ToJson(*tree)) << text;
    }
  }
  for (const char* text : {
           R"({"resources":{"a+Deployment":"Ready","b+Service":"NotReady","c":1},"clusterOnly":{"p+Pod":"Ready"},)"
           R"("generations":{"a+Deployment":4,"b":"x"},"ready":false,"time":"2026-01-01T00:00:00Z"})",
           R"({"resources":{"a":"Ready"},"ready":true,"time":5})", R"({"ready":"yes"})", R"("text")", R"({)"}) {
    auto tree = ReadyFromJson(nlohmann::json::parse(text, nullptr, false));
    auto fast = ParseReady(text);
    ASSERT_EQ(tree.ok(), fast.ok()) << text;
    if (tree.ok()) {
      EXPECT_EQ(ToJson(*fast), ToJson(*tree)) << text;
    }
  }
}

}  // namespace
}  // namespace eco::appcontext
