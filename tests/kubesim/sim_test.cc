// kube-sim's API semantics and controllers, driven through Simulator::Handle
// in process (the transport has its own tests; kubectl judges the whole).
#include "kubesim/sim.h"
#include "process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

namespace eco::kubesim {
namespace {

using Json = nlohmann::json;
using nlohmann::literals::operator""_json_pointer;

// Collects what a watch writes.
class CaptureStream : public Stream {
 public:
  bool Write(std::string chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    data_ += chunk;
    return true;
  }
  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  bool Closed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  std::vector<Json> Events() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Json> out;
    size_t i = 0;
    while (i < data_.size()) {
      size_t nl = data_.find('\n', i);
      if (nl == std::string::npos) break;
      out.push_back(Json::parse(data_.substr(i, nl - i)));
      i = nl + 1;
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::string data_;
  bool closed_ = false;
};

bool WaitFor(const std::function<bool()>& cond, std::chrono::seconds limit = std::chrono::seconds(20)) {
  return eco::testing::WaitUntil(cond, limit);
}

class SimTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(DefaultFleet(2, "c"), SimOptions{}); }
  void TearDown() override {
    if (sim_) sim_->Shutdown();
  }

  void Start(std::vector<ClusterSpec> fleet, SimOptions opts) {
    if (sim_) sim_->Shutdown();
    sim_ = Simulator::Create(std::move(fleet), opts);
  }

  HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                    std::map<std::string, std::string> query = {}, std::string content_type = "application/json",
                    const std::string& cluster = "c1") {
    HttpRequest req;
    req.method = method;
    req.path = "/clusters/" + cluster + path;
    req.query = std::move(query);
    req.headers["authorization"] = "Bearer " + sim_->Token(cluster);
    req.headers["content-type"] = content_type;
    req.headers["user-agent"] = "sim-test/1.0";
    req.body = body;
    HttpReply r = sim_->Handle(req);
    EXPECT_FALSE(r.on_stream) << path;
    return r.response;
  }

  Json CallJson(const std::string& method, const std::string& path, const Json& body = nullptr,
                std::map<std::string, std::string> query = {}, int* code = nullptr,
                std::string content_type = "application/json") {
    HttpResponse r = Call(method, path, body.is_null() ? "" : body.dump(), std::move(query), content_type);
    if (code) *code = r.status;
    return Json::parse(r.body, nullptr, false);
  }

  std::shared_ptr<CaptureStream> StartWatch(const std::string& path, std::map<std::string, std::string> query) {
    HttpRequest req;
    req.method = "GET";
    req.path = "/clusters/c1" + path;
    query["watch"] = "true";
    req.query = std::move(query);
    req.headers["authorization"] = "Bearer " + sim_->Token("c1");
    HttpReply r = sim_->Handle(req);
    EXPECT_TRUE(r.on_stream) << r.response.body;
    auto s = std::make_shared<CaptureStream>();
    if (r.on_stream) r.on_stream(s);
    return s;
  }

  static Json ConfigMap(const std::string& name, const std::string& ns = "default", Json labels = Json::object()) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
            {"data", {{"k", "v"}}}};
  }

  static Json Deployment(const std::string& name, int replicas, const std::string& cpu = "100m",
                         Json node_selector = nullptr) {
    Json pod_spec = {{"containers", Json::array({{{"name", "web"},
                                                   {"image", "nginx:1.25"},
                                                   {"resources", {{"requests", {{"cpu", cpu}, {"memory", "64Mi"}}}}}}})}};
    if (!node_selector.is_null()) pod_spec["nodeSelector"] = node_selector;
    return {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec",
             {{"replicas", replicas},
              {"selector", {{"matchLabels", {{"app", name}}}}},
              {"template", {{"metadata", {{"labels", {{"app", name}}}}}, {"spec", pod_spec}}}}}};
  }

  std::unique_ptr<Simulator> sim_;
};

TEST_F(SimTest, DiscoveryListsBuiltinGroupsAndResources) {
  Json api = CallJson("GET", "/api");
  EXPECT_EQ(api["versions"], Json::array({"v1"}));
  Json core = CallJson("GET", "/api/v1");
  bool pods = false, ns_cluster_scoped = false;
  for (const auto& r : core["resources"]) {
    if (r["name"] == "pods") pods = r["namespaced"] == true && r["kind"] == "Pod";
    if (r["name"] == "namespaces") ns_cluster_scoped = r["namespaced"] == false;
  }
  EXPECT_TRUE(pods);
  EXPECT_TRUE(ns_cluster_scoped);
  Json groups = CallJson("GET", "/apis");
  std::set<std::string> names;
  for (const auto& g : groups["groups"]) names.insert(g["name"].get<std::string>());
  for (const char* g : {"apps", "batch", "networking.k8s.io", "rbac.authorization.k8s.io", "policy", "autoscaling",
                        "apiextensions.k8s.io"}) {
    EXPECT_TRUE(names.count(g)) << g;
  }
  Json apps = CallJson("GET", "/apis/apps/v1");
  EXPECT_EQ(apps["groupVersion"], "apps/v1");
  int code = 0;
  CallJson("GET", "/apis/nope.example.com/v1", nullptr, {}, &code);
  EXPECT_EQ(code, 404);
}

TEST_F(SimTest, WrongTokenIsUnauthorizedAndUnknownClusterNotFound) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/clusters/c1/api/v1/namespaces";
  req.headers["authorization"] = "Bearer " + sim_->Token("c2");
  HttpReply r = sim_->Handle(req);
  EXPECT_EQ(r.response.status, 401);
  Json s = Json::parse(r.response.body);
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["reason"], "Unauthorized");
  req.path = "/clusters/zzz/api";
  EXPECT_EQ(sim_->Handle(req).response.status, 404);
}

TEST_F(SimTest, StartsWithNamespacesAndDefaultNodes) {
  Json ns = CallJson("GET", "/api/v1/namespaces");
  std::set<std::string> names;
  for (const auto& n : ns["items"]) names.insert(n["metadata"]["name"].get<std::string>());
  EXPECT_TRUE(names.count("default") && names.count("kube-system") && names.count("kube-public"));
  Json nodes = CallJson("GET", "/api/v1/nodes");
  ASSERT_EQ(nodes["items"].size(), 3u);
  EXPECT_EQ(nodes["items"][0]["status"]["allocatable"]["cpu"], "4");
  EXPECT_EQ(nodes["items"][0]["status"]["allocatable"]["memory"], "16Gi");
  EXPECT_EQ(nodes["items"][0]["metadata"]["labels"]["kubernetes.io/os"], "linux");
}

TEST_F(SimTest, CreateGetDuplicateAndErrors) {
  int code = 0;
  Json created = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("a"), {}, &code);
  ASSERT_EQ(code, 201) << created.dump();
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(created["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_TRUE(created["metadata"]["creationTimestamp"].is_string());
  ASSERT_TRUE(created["metadata"]["managedFields"].is_array());
  EXPECT_EQ(created["metadata"]["managedFields"][0]["manager"], "sim-test");

  Json dup = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("a"), {}, &code);
  EXPECT_EQ(code, 409);
  EXPECT_EQ(dup["reason"], "AlreadyExists");
  EXPECT_EQ(dup["message"], "configmaps \"a\" already exists");

  Json got = CallJson("GET", "/api/v1/namespaces/default/configmaps/a", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(got["data"]["k"], "v");

  Json missing = CallJson("GET", "/api/v1/namespaces/default/configmaps/zz", nullptr, {}, &code);
  EXPECT_EQ(code, 404);
  EXPECT_EQ(missing["reason"], "NotFound");

  Json no_ns = CallJson("POST", "/api/v1/namespaces/nope/configmaps", ConfigMap("a", "nope"), {}, &code);
  EXPECT_EQ(code, 404);
  EXPECT_EQ(no_ns["message"], "namespaces \"nope\" not found");

  Json bad = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("Bad_Name"), {}, &code);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(bad["reason"], "Invalid");

  HttpResponse garbage = Call("POST", "/api/v1/namespaces/default/configmaps", "{not json: [");
  EXPECT_EQ(garbage.status, 400);
}

TEST_F(SimTest, ListsWithSelectorsAndPages) {
  for (int i = 0; i < 5; ++i) {
    Json labels = {{"tier", i % 2 ? "odd" : "even"}};
    ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("cm" + std::to_string(i), "default", labels).dump()).status, 201);
  }
  Json even = CallJson("GET", "/api/v1/namespaces/default/configmaps", nullptr, {{"labelSelector", "tier=even"}});
  EXPECT_EQ(even["items"].size(), 3u);
  Json odd = CallJson("GET", "/api/v1/configmaps", nullptr, {{"labelSelector", "tier in (odd)"}});
  EXPECT_EQ(odd["items"].size(), 2u);
  Json one = CallJson("GET", "/api/v1/namespaces/default/configmaps", nullptr, {{"fieldSelector", "metadata.name=cm3"}});
  ASSERT_EQ(one["items"].size(), 1u);
  EXPECT_EQ(one["items"][0]["metadata"]["name"], "cm3");
  int code = 0;
  CallJson("GET", "/api/v1/configmaps", nullptr, {{"labelSelector", "a in (b"}}, &code);
  EXPECT_EQ(code, 400);
  // Paging: 2 per page, every item exactly once.
  std::set<std::string> seen;
  std::string cont;
  for (int page = 0; page < 10; ++page) {
    std::map<std::string, std::string> q = {{"limit", "2"}};
    if (!cont.empty()) q["continue"] = cont;
    Json l = CallJson("GET", "/api/v1/namespaces/default/configmaps", nullptr, q);
    for (const auto& it : l["items"]) EXPECT_TRUE(seen.insert(it["metadata"]["name"]).second);
    cont = l["metadata"].value("continue", "");
    if (cont.empty()) break;
  }
  EXPECT_EQ(seen.size(), 5u);
}

TEST_F(SimTest, UpdateWithStaleResourceVersionConflicts) {
  Json created = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("u"));
  Json v1 = created;
  v1["data"]["k"] = "v2";
  int code = 0;
  Json updated = CallJson("PUT", "/api/v1/namespaces/default/configmaps/u", v1, {}, &code);
  ASSERT_EQ(code, 200) << updated.dump();
  EXPECT_NE(updated["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  Json stale = created;
  stale["data"]["k"] = "v3";
  Json conflict = CallJson("PUT", "/api/v1/namespaces/default/configmaps/u", stale, {}, &code);
  EXPECT_EQ(code, 409);
  EXPECT_EQ(conflict["reason"], "Conflict");
}

TEST_F(SimTest, ServerSideApplyCreatesConflictsAndForces) {
  Json cm = ConfigMap("ssa");
  int code = 0;
  CallJson("PATCH", "/api/v1/namespaces/default/configmaps/ssa", cm, {{"fieldManager", "eco"}}, &code,
           "application/apply-patch+yaml");
  EXPECT_EQ(code, 201);
  // Re-applying the same intent changes nothing.
  Json again = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/ssa", cm, {{"fieldManager", "eco"}}, &code,
                        "application/apply-patch+yaml");
  EXPECT_EQ(code, 200);
  Json other = cm;
  other["data"]["k"] = "theirs";
  Json conflict = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/ssa", other, {{"fieldManager", "other"}},
                           &code, "application/apply-patch+yaml");
  EXPECT_EQ(code, 409);
  EXPECT_EQ(conflict["reason"], "Conflict");
  Json forced = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/ssa", other,
                         {{"fieldManager", "other"}, {"force", "true"}}, &code, "application/apply-patch+yaml");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(forced["data"]["k"], "theirs");
  // YAML bodies are accepted, and apply without a field manager is refused.
  std::string yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  n: \"1\"\n";
  EXPECT_EQ(Call("PATCH", "/api/v1/namespaces/default/configmaps/y", yaml, {{"fieldManager", "eco"}},
                 "application/apply-patch+yaml").status,
            201);
  EXPECT_EQ(Call("PATCH", "/api/v1/namespaces/default/configmaps/z", yaml, {}, "application/apply-patch+yaml").status,
            422);
}

TEST_F(SimTest, MergeJsonAndStrategicPatches) {
  CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("p"));
  int code = 0;
  Json m = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/p", Json{{"data", {{"x", "1"}}}}, {}, &code,
                    "application/merge-patch+json");
  EXPECT_EQ(code, 200);
  EXPECT_EQ(m["data"]["x"], "1");
  EXPECT_EQ(m["data"]["k"], "v");
  Json j = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/p",
                    Json::array({{{"op", "remove"}, {"path", "/data/k"}}}), {}, &code, "application/json-patch+json");
  EXPECT_EQ(code, 200);
  EXPECT_FALSE(j["data"].contains("k"));
  CallJson("PATCH", "/api/v1/namespaces/default/configmaps/p", Json::array({{{"op", "test"}, {"path", "/data/x"}, {"value", "2"}}}),
           {}, &code, "application/json-patch+json");
  EXPECT_EQ(code, 422);
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("smp", 1));
  Json patch = {{"spec", {{"template", {{"spec", {{"containers", Json::array({{{"name", "web"}, {"image", "nginx:2"}}})}}}}}}}};
  Json d = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/smp", patch, {}, &code,
                    "application/strategic-merge-patch+json");
  ASSERT_EQ(code, 200) << d.dump();
  const Json& c0 = d["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c0["image"], "nginx:2");
  EXPECT_TRUE(c0.contains("resources")) << "strategic merge keeps the container's other fields";
  EXPECT_EQ(d["metadata"]["generation"], 2);
}

TEST_F(SimTest, DeploymentRollsOutToReadyPods) {
  int code = 0;
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("web", 3), {}, &code);
  ASSERT_EQ(code, 201);
  ASSERT_TRUE(WaitFor([&] {
    Json d = CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/web");
    return d.value("/status/readyReplicas"_json_pointer, 0) == 3 && d.value("/status/observedGeneration"_json_pointer, 0) == 1;
  }));
  Json d = CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/web");
  bool available = false;
  for (const auto& c : d["status"]["conditions"]) {
    if (c["type"] == "Available") available = c["status"] == "True";
  }
  EXPECT_TRUE(available);
  Json pods = CallJson("GET", "/api/v1/namespaces/default/pods", nullptr, {{"labelSelector", "app=web"}});
  ASSERT_EQ(pods["items"].size(), 3u);
  for (const auto& p : pods["items"]) {
    EXPECT_EQ(p["status"]["phase"], "Running");
    EXPECT_FALSE(p["spec"]["nodeName"].get<std::string>().empty());
  }
  // Scale down: pods go away.
  Json scaled = d;
  scaled["spec"]["replicas"] = 1;
  CallJson("PUT", "/apis/apps/v1/namespaces/default/deployments/web", scaled, {}, &code);
  ASSERT_EQ(code, 200);
  EXPECT_TRUE(WaitFor([&] {
    return CallJson("GET", "/api/v1/namespaces/default/pods", nullptr, {{"labelSelector", "app=web"}})["items"].size() == 1;
  }));
}

TEST_F(SimTest, PodsThatFitNowhereStayPending) {
  // 3 nodes × 4 CPU; 4 pods of 3 CPU: one cannot be placed.
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("big", 4, "3"));
  ASSERT_TRUE(WaitFor([&] {
    Json d = CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/big");
    return d.value("/status/readyReplicas"_json_pointer, 0) == 3 && d.value("/status/replicas"_json_pointer, 0) == 4;
  }));
  Json pods = CallJson("GET", "/api/v1/namespaces/default/pods", nullptr, {{"labelSelector", "app=big"}});
  int pending = 0;
  for (const auto& p : pods["items"]) {
    if (p["status"]["phase"] == "Pending") {
      ++pending;
      bool unschedulable = false;
      for (const auto& c : p["status"]["conditions"]) {
        if (c["type"] == "PodScheduled") unschedulable = c["reason"] == "Unschedulable";
      }
      EXPECT_TRUE(unschedulable) << p["status"].dump();
    }
  }
  EXPECT_EQ(pending, 1);
  Json d = CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/big");
  for (const auto& c : d["status"]["conditions"]) {
    if (c["type"] == "Available") {
      EXPECT_EQ(c["status"], "False");
    }
  }
}

TEST_F(SimTest, FleetNodesLabelsAndExtendedResourcesDrivePlacement) {
  Result<std::vector<ClusterSpec>> fleet = ParseFleet(R"(
clusters:
  - name: edge-1
    nodes:
      - name: n1
        labels: {feature.node.kubernetes.io/cpu-cpuid.AVX512F: "true"}
        allocatable: {cpu: "8", memory: 32Gi, intel.com/qat: "2"}
      - name: n2
        allocatable: {cpu: "8", memory: 32Gi}
)");
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  Start(std::move(fleet.value()), SimOptions{});
  Json d = Deployment("qat", 3, "1", Json{{"feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true"}});
  d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["intel.com/qat"] = "1";
  HttpRequest req;
  req.method = "POST";
  req.path = "/clusters/edge-1/apis/apps/v1/namespaces/default/deployments";
  req.headers["authorization"] = "Bearer " + sim_->Token("edge-1");
  req.body = d.dump();
  ASSERT_EQ(sim_->Handle(req).response.status, 201);
  auto pods = [&] {
    HttpRequest g;
    g.method = "GET";
    g.path = "/clusters/edge-1/api/v1/namespaces/default/pods";
    g.headers["authorization"] = req.headers["authorization"];
    return Json::parse(sim_->Handle(g).response.body)["items"];
  };
  ASSERT_TRUE(WaitFor([&] {
    int running = 0, pending = 0;
    for (const auto& p : pods()) {
      if (p["status"]["phase"] == "Running") ++running;
      if (p["status"]["phase"] == "Pending" && p["status"].contains("conditions")) ++pending;
    }
    return running == 2 && pending == 1;
  }));
  for (const auto& p : pods()) {
    if (p["status"]["phase"] == "Running") {
      EXPECT_EQ(p["spec"]["nodeName"], "n1");
    }
  }
  EXPECT_FALSE(ParseFleet("clusters: [{nodes: []}]").ok());
  EXPECT_FALSE(ParseFleet("clusters: [{name: a}, {name: a}]").ok());
}

TEST_F(SimTest, WorkloadsJobsServicesAndClaimsBecomeReady) {
  Start(DefaultFleet(1, "c"), SimOptions{std::chrono::milliseconds(30)});
  Json sts = Deployment("db", 2);
  sts["kind"] = "StatefulSet";
  sts["spec"]["serviceName"] = "db";
  CallJson("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts);
  Json ds = Deployment("agent", 0);
  ds["kind"] = "DaemonSet";
  ds["spec"].erase("replicas");
  CallJson("POST", "/apis/apps/v1/namespaces/default/daemonsets", ds);
  Json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "once"}}},
              {"spec", {{"template", {{"spec", {{"restartPolicy", "Never"}, {"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}}};
  CallJson("POST", "/apis/batch/v1/namespaces/default/jobs", job);
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "lb"}}},
              {"spec", {{"type", "LoadBalancer"}, {"ports", Json::array({{{"port", 80}}})}}}};
  CallJson("POST", "/api/v1/namespaces/default/services", svc);
  Json pvc = {{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", {{"name", "data"}}},
              {"spec", {{"accessModes", Json::array({"ReadWriteOnce"})}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  CallJson("POST", "/api/v1/namespaces/default/persistentvolumeclaims", pvc);
  EXPECT_TRUE(WaitFor([&] {
    Json s = CallJson("GET", "/apis/apps/v1/namespaces/default/statefulsets/db");
    return s.value("/status/readyReplicas"_json_pointer, 0) == 2 && s["status"]["currentRevision"] == s["status"]["updateRevision"];
  }));
  EXPECT_TRUE(WaitFor([&] {
    Json s = CallJson("GET", "/apis/apps/v1/namespaces/default/daemonsets/agent");
    return s.value("/status/numberReady"_json_pointer, 0) == 3 && s.value("/status/desiredNumberScheduled"_json_pointer, 0) == 3;
  }));
  EXPECT_TRUE(WaitFor([&] {
    Json j = CallJson("GET", "/apis/batch/v1/namespaces/default/jobs/once");
    for (const auto& c : j.value("/status/conditions"_json_pointer, Json::array())) {
      if (c["type"] == "Complete" && c["status"] == "True") return true;
    }
    return false;
  }));
  EXPECT_TRUE(WaitFor([&] {
    Json s = CallJson("GET", "/api/v1/namespaces/default/services/lb");
    return s["status"]["loadBalancer"].contains("ingress");
  }));
  EXPECT_TRUE(WaitFor([&] {
    return CallJson("GET", "/api/v1/namespaces/default/persistentvolumeclaims/data").value("/status/phase"_json_pointer, "") == "Bound";
  }));
  EXPECT_FALSE(CallJson("GET", "/api/v1/namespaces/default/services/lb")["spec"]["clusterIP"].get<std::string>().empty());
}

TEST_F(SimTest, FinalizersHoldDeletionUntilRemoved) {
  Json cm = ConfigMap("held");
  cm["metadata"]["finalizers"] = Json::array({"example.com/keep"});
  CallJson("POST", "/api/v1/namespaces/default/configmaps", cm);
  int code = 0;
  Json deleted = CallJson("DELETE", "/api/v1/namespaces/default/configmaps/held", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(deleted["metadata"]["deletionTimestamp"].is_string());
  CallJson("GET", "/api/v1/namespaces/default/configmaps/held", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  CallJson("PATCH", "/api/v1/namespaces/default/configmaps/held", Json{{"metadata", {{"finalizers", nullptr}}}}, {},
           &code, "application/merge-patch+json");
  EXPECT_EQ(code, 200);
  CallJson("GET", "/api/v1/namespaces/default/configmaps/held", nullptr, {}, &code);
  EXPECT_EQ(code, 404);
}

TEST_F(SimTest, NamespaceDeletionRemovesItsObjects) {
  int code = 0;
  CallJson("POST", "/api/v1/namespaces", Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "tmp"}}}},
           {}, &code);
  ASSERT_EQ(code, 201);
  CallJson("POST", "/api/v1/namespaces/tmp/configmaps", ConfigMap("x", "tmp"), {}, &code);
  ASSERT_EQ(code, 201);
  Json d = CallJson("DELETE", "/api/v1/namespaces/tmp", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(d["status"]["phase"], "Terminating");
  EXPECT_TRUE(WaitFor([&] {
    int c = 0;
    CallJson("GET", "/api/v1/namespaces/tmp", nullptr, {}, &c);
    return c == 404;
  }));
  CallJson("GET", "/api/v1/namespaces/tmp/configmaps/x", nullptr, {}, &code);
  EXPECT_EQ(code, 404);
  CallJson("DELETE", "/api/v1/namespaces/default", nullptr, {}, &code);
  EXPECT_EQ(code, 403);
}

TEST_F(SimTest, CrdKindsAreServedAtOnceAndBecomeEstablished) {
  Json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "widgets.example.com"}}},
              {"spec",
               {{"group", "example.com"},
                {"scope", "Namespaced"},
                {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}, {"shortNames", {"wd"}}}},
                {"versions", Json::array({{{"name", "v1"}, {"served", true}, {"storage", true},
                                           {"schema", {{"openAPIV3Schema", {{"type", "object"}}}}}}})}}}};
  int code = 0;
  CallJson("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, {}, &code);
  ASSERT_EQ(code, 201);
  Json rl = CallJson("GET", "/apis/example.com/v1", nullptr, {}, &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(rl["resources"][0]["kind"], "Widget");
  Json w = {{"apiVersion", "example.com/v1"}, {"kind", "Widget"}, {"metadata", {{"name", "w1"}}}, {"spec", {{"size", 3}}}};
  CallJson("POST", "/apis/example.com/v1/namespaces/default/widgets", w, {}, &code);
  EXPECT_EQ(code, 201);
  EXPECT_TRUE(WaitFor([&] {
    Json c = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com");
    for (const auto& cond : c.value("/status/conditions"_json_pointer, Json::array())) {
      if (cond["type"] == "Established" && cond["status"] == "True") return true;
    }
    return false;
  }));
  // Deleting the CRD removes its kind and objects.
  CallJson("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  CallJson("GET", "/apis/example.com/v1/namespaces/default/widgets/w1", nullptr, {}, &code);
  EXPECT_EQ(code, 404);
}

TEST_F(SimTest, WatchSendsInitialEventsChangesAndExpires) {
  CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("w0", "default", {{"app", "x"}}));
  auto all = StartWatch("/api/v1/namespaces/default/configmaps", {{"allowWatchBookmarks", "true"}});
  auto filtered = StartWatch("/api/v1/configmaps", {{"labelSelector", "app=y"}});
  Json created = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("w1", "default", {{"app", "y"}}));
  CallJson("DELETE", "/api/v1/namespaces/default/configmaps/w0");
  auto ev = all->Events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "w0");
  EXPECT_EQ(ev[1]["type"], "ADDED");
  EXPECT_EQ(ev[2]["type"], "DELETED");
  auto fev = filtered->Events();
  ASSERT_EQ(fev.size(), 1u);
  EXPECT_EQ(fev[0]["object"]["metadata"]["name"], "w1");

  // Resuming from a resourceVersion replays only what came after it.
  auto resumed = StartWatch("/api/v1/namespaces/default/configmaps",
                            {{"resourceVersion", created["metadata"]["resourceVersion"].get<std::string>()}});
  auto rev = resumed->Events();
  ASSERT_EQ(rev.size(), 1u);
  EXPECT_EQ(rev[0]["type"], "DELETED");

  // Past the history window: 410 Expired as an ERROR event.
  for (int i = 0; i < 300; ++i) {
    CallJson("PATCH", "/api/v1/namespaces/default/configmaps/w1", Json{{"data", {{"i", std::to_string(i)}}}}, {}, nullptr,
             "application/merge-patch+json");
  }
  auto old = StartWatch("/api/v1/namespaces/default/configmaps", {{"resourceVersion", "2"}});
  auto oev = old->Events();
  ASSERT_EQ(oev.size(), 1u);
  EXPECT_EQ(oev[0]["type"], "ERROR");
  EXPECT_EQ(oev[0]["object"]["code"], 410);
  EXPECT_TRUE(old->Closed());
}

TEST_F(SimTest, ForegroundDeletionTakesDependentsFirst) {
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("fg", 2));
  ASSERT_TRUE(WaitFor([&] {
    return CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/fg").value("/status/readyReplicas"_json_pointer, 0) == 2;
  }));
  int code = 0;
  CallJson("DELETE", "/apis/apps/v1/namespaces/default/deployments/fg", Json{{"propagationPolicy", "Foreground"}}, {},
           &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(WaitFor([&] {
    int c = 0;
    CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/fg", nullptr, {}, &c);
    return c == 404;
  }));
  EXPECT_EQ(CallJson("GET", "/apis/apps/v1/namespaces/default/replicasets")["items"].size(), 0u);
  EXPECT_TRUE(WaitFor([&] {
    return CallJson("GET", "/api/v1/namespaces/default/pods", nullptr, {{"labelSelector", "app=fg"}})["items"].empty();
  }));
}

TEST_F(SimTest, TableOutputForKubectlGet) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/clusters/c1/api/v1/namespaces";
  req.headers["authorization"] = "Bearer " + sim_->Token("c1");
  req.headers["accept"] = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  Json t = Json::parse(sim_->Handle(req).response.body);
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["columnDefinitions"][0]["name"], "Name");
  EXPECT_GE(t["rows"].size(), 3u);
  EXPECT_EQ(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

TEST_F(SimTest, ObjectsEndpointListsAClustersObjects) {
  CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("seen"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/sim/clusters/c1/objects";
  Json all = Json::parse(sim_->Handle(req).response.body);
  bool found = false;
  for (const auto& o : all["objects"]) found = found || (o["kind"] == "ConfigMap" && o["metadata"]["name"] == "seen");
  EXPECT_TRUE(found);
  req.path = "/sim/clusters/c2/objects";
  Json other = Json::parse(sim_->Handle(req).response.body);
  for (const auto& o : other["objects"]) EXPECT_NE(o["metadata"]["name"], "seen");
}

}  // namespace
}  // namespace eco::kubesim
