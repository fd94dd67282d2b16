// Server-side apply and managedFields tracking.
#include <gtest/gtest.h>
#include <time.h>

#include <cstdio>

#include "kubesim/patch.h"

namespace eco::kubesim {
namespace {

Json JsonOf(const char* text) { return Json::parse(text); }

constexpr const char* kT1 = "2026-01-01T00:00:01Z";
constexpr const char* kT2 = "2026-01-01T00:00:02Z";
constexpr const char* kT3 = "2026-01-01T00:00:03Z";

Json Deployment(const char* image = "nginx:1.25", int replicas = 2) {
  Json d = JsonOf(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},
    "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},
        "spec":{"containers":[{"name":"web","image":"nginx:1.25","ports":[{"containerPort":80}],
                               "env":[{"name":"A","value":"1"}]}]}}}})");
  d["spec"]["replicas"] = replicas;
  d["spec"]["template"]["spec"]["containers"][0]["image"] = image;
  return d;
}

const Json& ManagedFields(const Json& object) { return object.at("metadata").at("managedFields"); }

// The entry of manager/operation, or null.
Json EntryOf(const Json& object, const std::string& manager, const std::string& operation) {
  for (const Json& e : ManagedFields(object)) {
    if (e.at("manager") == manager && e.at("operation") == operation) return e;
  }
  return Json();
}

Json MustApply(const Json& live, const Json& applied, const std::string& manager,
               bool force = false, const char* now = kT1, bool* changed = nullptr) {
  auto r = ServerSideApply(live, applied, manager, force, now);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return live;
  if (changed != nullptr) *changed = r->changed;
  return r->object;
}

TEST(ServerSideApply, CreateRecordsFieldsV1AsTheApiServerDoes) {
  auto r = ServerSideApply(Json(), Deployment(), "kubectl", false, kT1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->changed);
  Json want_fields = JsonOf(R"({"f:metadata":{"f:labels":{"f:app":{}}},
    "f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},
      "f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},
        "f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}},
        "f:image":{},"f:name":{},
        "f:ports":{"k:{\"containerPort\":80}":{".":{},"f:containerPort":{}}}}}}}}})");
  Json want_entry = {{"manager", "kubectl"}, {"operation", "Apply"},     {"apiVersion", "apps/v1"},
                     {"time", kT1},          {"fieldsType", "FieldsV1"}, {"fieldsV1", want_fields}};
  ASSERT_EQ(ManagedFields(r->object).size(), 1u);
  EXPECT_EQ(ManagedFields(r->object)[0], want_entry) << ManagedFields(r->object)[0].dump();
  Json without = r->object;
  without["metadata"].erase("managedFields");
  EXPECT_EQ(without, Deployment());
}

TEST(ServerSideApply, ReapplyUnchangedIsANoOp) {
  Json live = MustApply(Json(), Deployment(), "kubectl");
  auto r = ServerSideApply(live, Deployment(), "kubectl", false, kT2);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->object, live);  // time stays kT1
}

TEST(ServerSideApply, ChangedApplyUpdatesValueAndTime) {
  Json live = MustApply(Json(), Deployment(), "kubectl");
  bool changed = false;
  Json next = MustApply(live, Deployment("nginx:1.26"), "kubectl", false, kT2, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(next["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.26");
  EXPECT_EQ(EntryOf(next, "kubectl", "Apply")["time"], kT2);
}

TEST(ServerSideApply, ApplyWithoutAFieldItOwnedRemovesIt) {
  Json live = MustApply(Json(), Deployment(), "kubectl");
  Json applied = Deployment();
  applied["spec"].erase("replicas");
  applied["spec"]["template"]["spec"]["containers"][0].erase("env");
  Json next = MustApply(live, applied, "kubectl", false, kT2);
  EXPECT_FALSE(next["spec"].contains("replicas")) << next.dump();
  EXPECT_FALSE(next["spec"]["template"]["spec"]["containers"][0].contains("env")) << next.dump();
  Json fields = EntryOf(next, "kubectl", "Apply")["fieldsV1"];
  EXPECT_FALSE(fields["f:spec"].contains("f:replicas"));
}

TEST(ServerSideApply, RemovedFieldStaysWhileAnotherManagerOwnsIt) {
  Json live = MustApply(Json(), Deployment(), "a");
  live = MustApply(live, JsonOf(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
                                 "spec":{"replicas":2}})"),
                   "b");
  Json applied = Deployment();
  applied["spec"].erase("replicas");
  Json next = MustApply(live, applied, "a", false, kT2);
  EXPECT_EQ(next["spec"]["replicas"], 2);
  EXPECT_FALSE(EntryOf(next, "a", "Apply")["fieldsV1"]["f:spec"].contains("f:replicas"));
  EXPECT_TRUE(EntryOf(next, "b", "Apply")["fieldsV1"]["f:spec"].contains("f:replicas"));
}

TEST(ServerSideApply, RemovedContainerGoesButOthersStay) {
  Json two = Deployment();
  two["spec"]["template"]["spec"]["containers"].push_back(
      JsonOf(R"({"name":"side","image":"busybox"})"));
  Json live = MustApply(Json(), two, "kubectl");
  Json next = MustApply(live, Deployment(), "kubectl", false, kT2);
  ASSERT_EQ(next["spec"]["template"]["spec"]["containers"].size(), 1u) << next.dump();
  EXPECT_EQ(next["spec"]["template"]["spec"]["containers"][0]["name"], "web");
}

TEST(ServerSideApply, TwoManagersSameValueShareTheField) {
  Json live = MustApply(Json(), Deployment(), "a");
  bool changed = false;
  Json next = MustApply(live, Deployment(), "b", false, kT2, &changed);
  EXPECT_TRUE(changed);  // the object is the same but b now co-owns it
  EXPECT_EQ(ManagedFields(next).size(), 2u);
  EXPECT_EQ(EntryOf(next, "a", "Apply")["fieldsV1"], EntryOf(next, "b", "Apply")["fieldsV1"]);
}

TEST(ServerSideApply, ConflictMessageAsKubernetes) {
  Json live = MustApply(Json(), Deployment(), "a");
  auto r = ServerSideApply(live, Deployment("nginx:1.25", 3), "b", false, kT2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kConflict);
  EXPECT_EQ(r.status().message(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
}

TEST(ServerSideApply, ManyConflictsGroupedBySortedManager) {
  Json live = MustApply(Json(), Deployment(), "zeta");
  live = MustApply(live, JsonOf(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web",
                                 "labels":{"team":"x"}}})"),
                   "alpha");
  Json applied = Deployment("nginx:2", 5);
  applied["metadata"]["labels"]["team"] = "y";
  auto r = ServerSideApply(live, applied, "b", false, kT2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Apply failed with 3 conflicts: conflicts with \"alpha\":\n"
            "- .metadata.labels.team\n"
            "conflicts with \"zeta\":\n"
            "- .spec.replicas\n"
            "- .spec.template.spec.containers[name=\"web\"].image");
}

TEST(ServerSideApply, ForceTakesOwnership) {
  Json live = MustApply(Json(), Deployment(), "a");
  Json next =
      MustApply(live, JsonOf(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
                                   "spec":{"replicas":3}})"),
                "b", /*force=*/true, kT2);
  EXPECT_EQ(next["spec"]["replicas"], 3);
  EXPECT_FALSE(EntryOf(next, "a", "Apply")["fieldsV1"]["f:spec"].contains("f:replicas"));
  EXPECT_EQ(EntryOf(next, "b", "Apply")["fieldsV1"], JsonOf(R"({"f:spec":{"f:replicas":{}}})"));
  // a re-applying its old intent now conflicts with b.
  auto again = ServerSideApply(next, Deployment(), "a", false, kT3);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(),
            "Apply failed with 1 conflict: conflict with \"b\": .spec.replicas");
}

TEST(ServerSideApply, ForceDropsAnEntryLeftEmpty) {
  Json live = MustApply(Json(), JsonOf(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
                                     "data":{"k":"1"}})"),
                        "a");
  Json next = MustApply(live, JsonOf(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
                                   "data":{"k":"2"}})"),
                        "b", true, kT2);
  ASSERT_EQ(ManagedFields(next).size(), 1u);
  EXPECT_EQ(ManagedFields(next)[0]["manager"], "b");
}

TEST(ServerSideApply, UpdateThenApplyConflicts) {
  Json created = Deployment();
  TrackUpdate(Json(), created, "kubectl-client-side-apply", kT1);
  auto r = ServerSideApply(created, Deployment("nginx:1.25", 5), "kubectl", false, kT2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: "
      ".spec.replicas");
  // The same values are no conflict: the applier shares ownership.
  auto same = ServerSideApply(created, Deployment(), "kubectl", false, kT2);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  // Apply entries sort before Update entries.
  EXPECT_EQ(ManagedFields(same->object)[0]["operation"], "Apply");
  EXPECT_EQ(ManagedFields(same->object)[1]["operation"], "Update");
}

TEST(ServerSideApply, KeyedListMergesAndConflictsPerElement) {
  Json two = Deployment();
  two["spec"]["template"]["spec"]["containers"].push_back(
      JsonOf(R"({"name":"side","image":"busybox"})"));
  Json live = MustApply(Json(), two, "a");
  // b applies only the side container's image: web stays, side changes.
  Json b = JsonOf(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
      "spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox:2"}]}}}})");
  auto r = ServerSideApply(live, b, "b", false, kT2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Apply failed with 1 conflict: conflict with \"a\": "
            ".spec.template.spec.containers[name=\"side\"].image");
  Json next = MustApply(live, b, "b", true, kT2);
  const Json& containers = next["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "nginx:1.25");
  EXPECT_EQ(containers[1]["image"], "busybox:2");
}

TEST(ServerSideApply, ListOrderKeepsLiveOnlyItemsInPlace) {
  auto containers = [](const char* names) {
    Json list = Json::array();
    for (const char* p = names; *p != 0; ++p) list.push_back({{"name", std::string(1, *p)}});
    return Json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "p"}}},
                {"spec", {{"containers", list}}}};
  };
  Json live = MustApply(Json(), containers("abc"), "a");
  Json next = MustApply(live, containers("cd"), "b", false, kT2);
  EXPECT_EQ(next["spec"]["containers"], containers("abcd")["spec"]["containers"]);
  next = MustApply(live, containers("da"), "b", false, kT2);
  EXPECT_EQ(next["spec"]["containers"], containers("dabc")["spec"]["containers"]);
}

TEST(ServerSideApply, UnrelatedUpdateKeepsReapplyANoOp) {
  Json live = MustApply(Json(), Deployment(), "eco");
  Json scaled = live;
  scaled["status"] = JsonOf(R"({"replicas":2,"readyReplicas":2})");
  TrackUpdate(live, scaled, "kube-controller-manager", kT2);
  auto r = ServerSideApply(scaled, Deployment(), "eco", false, kT3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->object, scaled);
}

TEST(ServerSideApply, ClientSideApplyThenStrategicPatchThenForcedServerSideApply) {
  Json created = Deployment();
  TrackUpdate(Json(), created, "kubectl-client-side-apply", kT1);
  auto patched = StrategicMergePatch(created, JsonOf(R"({"spec":{"template":{"spec":{
      "$setElementOrder/containers":[{"name":"web"}],"containers":[{"image":"nginx:1.26","name":"web"}]}}}})"));
  ASSERT_TRUE(patched.ok());
  Json updated = *patched;
  TrackUpdate(created, updated, "kubectl-client-side-apply", kT2);
  EXPECT_EQ(ManagedFields(updated).size(), 1u);
  EXPECT_EQ(ManagedFields(updated)[0]["time"], kT2);
  auto r = ServerSideApply(updated, Deployment("nginx:1.27"), "kubectl", false, kT3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: "
      ".spec.template.spec.containers[name=\"web\"].image");
  Json forced = MustApply(updated, Deployment("nginx:1.27"), "kubectl", true, kT3);
  EXPECT_EQ(forced["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
  Json csa = EntryOf(forced, "kubectl-client-side-apply", "Update")["fieldsV1"];
  EXPECT_FALSE(
      csa["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"].contains(
          "f:image"))
      << csa.dump();
}

TEST(ServerSideApply, FinalizersAreASet) {
  Json live = MustApply(Json(), JsonOf(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c",
                                     "finalizers":["x/a"]}})"),
                        "a");
  Json next = MustApply(live, JsonOf(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c",
                                   "finalizers":["x/b"]}})"),
                        "b", false, kT2);
  EXPECT_EQ(next["metadata"]["finalizers"], JsonOf(R"(["x/a","x/b"])"));
  EXPECT_EQ(EntryOf(next, "b", "Apply")["fieldsV1"],
            JsonOf(R"({"f:metadata":{"f:finalizers":{"v:\"x/b\"":{}}}})"));
}

TEST(ServerSideApply, InvalidKeyedLists) {
  Json missing = Deployment();
  missing["spec"]["template"]["spec"]["containers"].push_back(JsonOf(R"({"image":"x"})"));
  auto r = ServerSideApply(Json(), missing, "a", false, kT1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
  Json dup = Deployment();
  dup["spec"]["template"]["spec"]["containers"].push_back(JsonOf(R"({"name":"web"})"));
  r = ServerSideApply(Json(), dup, "a", false, kT1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("duplicate entries"), std::string::npos)
      << r.status().message();
}

// Added maps and lists own their "." as well (the API server's own output
// lacks it only where Go's zero value of the kind already had the field).
TEST(TrackUpdate, CreateOwnsEverythingButIdentity) {
  Json created =
      JsonOf(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d","uid":"u",
     "labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}})");
  TrackUpdate(Json(), created, "kubectl-create", kT1);
  ASSERT_EQ(ManagedFields(created).size(), 1u);
  Json e = ManagedFields(created)[0];
  EXPECT_EQ(e["operation"], "Update");
  EXPECT_EQ(e["apiVersion"], "v1");
  EXPECT_EQ(e["time"], kT1);
  EXPECT_EQ(e["fieldsV1"], JsonOf(R"({"f:metadata":{"f:labels":{".":{},"f:a":{}}},
     "f:spec":{"f:containers":{".":{},"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}})"));
}

TEST(TrackUpdate, UpdateTakesChangedFieldsFromOthers) {
  Json live = MustApply(Json(), Deployment(), "kubectl");
  Json updated = live;
  updated["spec"]["replicas"] = 7;
  updated["metadata"]["annotations"] = JsonOf(R"({"note":"x"})");
  TrackUpdate(live, updated, "hpa", kT2);
  EXPECT_FALSE(EntryOf(updated, "kubectl", "Apply")["fieldsV1"]["f:spec"].contains("f:replicas"));
  EXPECT_EQ(
      EntryOf(updated, "hpa", "Update")["fieldsV1"],
      JsonOf(R"({"f:metadata":{"f:annotations":{".":{},"f:note":{}}},"f:spec":{"f:replicas":{}}})"));
  // kubectl re-applying replicas: 2 now conflicts with hpa.
  auto r = ServerSideApply(updated, Deployment(), "kubectl", false, kT3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas");
}

TEST(TrackUpdate, NoChangeLeavesManagedFieldsAlone) {
  Json live = MustApply(Json(), Deployment(), "kubectl");
  Json same = live;
  TrackUpdate(live, same, "other", kT2);
  EXPECT_EQ(same, live);
  // A client that omits managedFields keeps the stored ones.
  Json stripped = live;
  stripped["metadata"].erase("managedFields");
  TrackUpdate(live, stripped, "other", kT2);
  EXPECT_EQ(stripped, live);
}

TEST(TrackUpdate, RemovedFieldsLeaveTheUpdater) {
  Json live = Deployment();
  TrackUpdate(Json(), live, "editor", kT1);
  Json updated = live;
  updated["metadata"].erase("labels");
  TrackUpdate(live, updated, "editor", kT2);
  EXPECT_FALSE(EntryOf(updated, "editor", "Update")["fieldsV1"]["f:metadata"].contains("f:labels"))
      << updated.dump();
}

// CPU time of this thread in microseconds: wall time is meaningless on a shared machine.
double CpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Not a timing assertion: prints the cost of one apply for the performance report.
TEST(ServerSideApplyBench, PrintsMicrosecondsPerApply) {
  Json live = MustApply(Json(), Deployment(), "eco");
  constexpr int kRounds = 2000;
  Json same = Deployment();
  double t0 = CpuMicros();
  for (int i = 0; i < kRounds; ++i) {
    auto r = ServerSideApply(live, same, "eco", false, kT2);
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r->changed);
  }
  double t1 = CpuMicros();
  Json images[2] = {Deployment("nginx:a"), Deployment("nginx:b")};
  for (int i = 0; i < kRounds; ++i) {
    auto r = ServerSideApply(live, images[i % 2], "eco", false, kT2);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->changed);
  }
  double t2 = CpuMicros();
  Json status[2] = {JsonOf(R"({"replicas":2,"readyReplicas":1})"),
                    JsonOf(R"({"replicas":2,"readyReplicas":2})")};
  for (int i = 0; i < kRounds; ++i) {
    Json next = live;
    next["status"] = status[i % 2];
    TrackUpdate(live, next, "kube-controller-manager", kT3);
    ASSERT_EQ(ManagedFields(next).size(), 2u);
  }
  double t3 = CpuMicros();
  std::printf(
      "server-side apply of a Deployment (CPU time): unchanged %.2f us, changed %.2f us; "
      "status update with TrackUpdate (copy included) %.2f us\n",
      (t1 - t0) / kRounds, (t2 - t1) / kRounds, (t3 - t2) / kRounds);
}

}  // namespace
}  // namespace eco::kubesim
