// kube-sim's API semantics and controllers, driven through Simulator::Handle
// in process (the transport has its own tests; kubectl judges the whole).
#include "crds.h"
#include "kubesim/schema.h"
#include "kubesim/sim.h"
#include "kubesim/sim_internal.h"
#include "kubesim/types.h"
#include "process.h"

#include <gtest/gtest.h>

#include <algorithm>
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

  // One cluster that establishes CRDs at once, holding `crd`.
  void StartWithCrd(const Json& crd) {
    SimOptions at_once;
    at_once.crd_establish_delay = std::chrono::milliseconds(0);
    Start(DefaultFleet(1, "c"), at_once);
    int code = 0;
    Json r = CallJson("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, {}, &code);
    ASSERT_EQ(code, 201) << r.dump();
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
  // The name is quoted: a plain `y` is YAML 1.1's true, as on a real server.
  std::string yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"y\"\ndata:\n  n: \"1\"\n";
  EXPECT_EQ(Call("PATCH", "/api/v1/namespaces/default/configmaps/y", yaml, {{"fieldManager", "eco"}},
                 "application/apply-patch+yaml").status,
            201);
  EXPECT_EQ(Call("PATCH", "/api/v1/namespaces/default/configmaps/z", yaml, {}, "application/apply-patch+yaml").status,
            422);
}

// A resourceVersion in an apply configuration is a precondition (the agent's
// state index relies on it to notice a second writer).
TEST_F(SimTest, ServerSideApplyWithAResourceVersionIsConditional) {
  Json cm = ConfigMap("locked");
  int code = 0;
  Json created = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/locked", cm, {{"fieldManager", "eco"}},
                          &code, "application/apply-patch+yaml");
  ASSERT_EQ(code, 201);
  const std::string rv = created["metadata"]["resourceVersion"].get<std::string>();
  Json next = cm;
  next["data"]["k"] = "v2";
  next["metadata"]["resourceVersion"] = rv;
  Json updated = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/locked", next, {{"fieldManager", "eco"}},
                          &code, "application/apply-patch+yaml");
  ASSERT_EQ(code, 200);
  EXPECT_NE(updated["metadata"]["resourceVersion"], rv);
  next["data"]["k"] = "v3";  // still on the old resourceVersion
  Json stale = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/locked", next, {{"fieldManager", "eco"}},
                        &code, "application/apply-patch+yaml");
  EXPECT_EQ(code, 409);
  EXPECT_EQ(stale["reason"], "Conflict");
  EXPECT_NE(stale["message"].get<std::string>().find("the object has been modified"), std::string::npos);
  Json live = CallJson("GET", "/api/v1/namespaces/default/configmaps/locked");
  EXPECT_EQ(live["data"]["k"], "v2");
}

// Regression: kube-sim typed YAML scalars as YAML 1.2 / C did (`yes` stayed
// a string, `0x1F` became the float 31.0, `1_0` a string); the API server
// reads YAML bodies through sigs.k8s.io/yaml, i.e. go-yaml v2.
TEST_F(SimTest, YamlBodyScalarsAreTypedAsGoYamlV2Does) {
  const std::string yaml =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: typed\n"
      "  labels:\n    quoted: \"yes\"\n"
      "spec:\n  replicas: 0x1F\n  paused: yes\n  minReadySeconds: 0o17\n  revisionHistoryLimit: 1_0\n"
      "  selector:\n    matchLabels:\n      app: typed\n"
      "  template:\n    metadata:\n      labels:\n        app: typed\n"
      "    spec:\n      containers:\n      - name: c\n        image: nginx:1.27\n";
  HttpResponse r = Call("PATCH", "/apis/apps/v1/namespaces/default/deployments/typed", yaml,
                        {{"fieldManager", "eco"}}, "application/apply-patch+yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  Json d = Json::parse(r.body);
  EXPECT_TRUE(d["spec"]["replicas"].is_number_integer()) << d["spec"]["replicas"];
  EXPECT_EQ(d["spec"]["replicas"], 31);
  EXPECT_EQ(d["spec"]["paused"], true);
  EXPECT_EQ(d["spec"]["minReadySeconds"], 15);
  EXPECT_EQ(d["spec"]["revisionHistoryLimit"], 10);
  EXPECT_EQ(d["metadata"]["labels"]["quoted"], "yes");
  // encoding/json cannot write NaN: the server answers 400.
  HttpResponse nan = Call("PATCH", "/api/v1/namespaces/default/configmaps/nan",
                          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nan\n  labels:\n    x: .nan\n",
                          {{"fieldManager", "eco"}}, "application/apply-patch+yaml");
  EXPECT_EQ(nan.status, 400) << nan.body;
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

// As the API server's NodePort allocator: NodePort and LoadBalancer ports
// get a nodePort in 30000-32767 at create, an update keeps it, ClusterIP
// ports get none, allocateLoadBalancerNodePorts: false turns it off.
TEST_F(SimTest, NodePortAndLoadBalancerServicesGetNodePorts) {
  auto svc = [](const std::string& name, const std::string& type, Json ports) {
    return Json{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", name}}},
                {"spec", {{"type", type}, {"ports", std::move(ports)}}}};
  };
  Json np = CallJson("POST", "/api/v1/namespaces/default/services",
                     svc("np", "NodePort", Json::array({{{"port", 80}}, {{"port", 443}, {"nodePort", 30000}}})));
  ASSERT_TRUE(np["spec"]["ports"][0].contains("nodePort")) << np.dump();
  const int first = np["spec"]["ports"][0]["nodePort"];
  EXPECT_GE(first, 30000);
  EXPECT_LE(first, 32767);
  EXPECT_NE(first, 30000);  // taken by the second port
  EXPECT_EQ(np["spec"]["ports"][1]["nodePort"], 30000);
  Json lb = CallJson("POST", "/api/v1/namespaces/default/services", svc("lb", "LoadBalancer", Json::array({{{"port", 80}}})));
  ASSERT_TRUE(lb["spec"]["ports"][0].contains("nodePort")) << lb.dump();
  EXPECT_NE(lb["spec"]["ports"][0]["nodePort"], first);
  Json zero = CallJson("POST", "/api/v1/namespaces/default/services",
                       svc("zero", "NodePort", Json::array({{{"port", 80}, {"nodePort", 0}}})));
  EXPECT_GE(zero["spec"]["ports"][0].value("nodePort", 0), 30000) << zero.dump();
  Json cip = CallJson("POST", "/api/v1/namespaces/default/services", svc("cip", "ClusterIP", Json::array({{{"port", 80}}})));
  EXPECT_FALSE(cip["spec"]["ports"][0].contains("nodePort")) << cip.dump();
  Json off = svc("off", "LoadBalancer", Json::array({{{"port", 80}}}));
  off["spec"]["allocateLoadBalancerNodePorts"] = false;
  off = CallJson("POST", "/api/v1/namespaces/default/services", off);
  EXPECT_FALSE(off["spec"]["ports"][0].contains("nodePort")) << off.dump();
  // A replace that leaves nodePort out keeps the allocated one.
  Json put = CallJson("GET", "/api/v1/namespaces/default/services/np");
  put["spec"]["ports"][0].erase("nodePort");
  put = CallJson("PUT", "/api/v1/namespaces/default/services/np", put);
  EXPECT_EQ(put["spec"]["ports"][0]["nodePort"], first) << put.dump();

  // The API server's checks, with its words.
  int code = 0;
  Json bad = CallJson("POST", "/api/v1/namespaces/default/services",
                      svc("far", "NodePort", Json::array({{{"port", 80}, {"nodePort", 40000}}})), {}, &code);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(bad["message"],
            "Service \"far\" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the "
            "valid range. The range of valid ports is 30000-32767") << bad.dump();
  bad = CallJson("POST", "/api/v1/namespaces/default/services",
                 svc("dup", "NodePort", Json::array({{{"port", 80}, {"nodePort", 30000}}})), {}, &code);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(bad["message"], "Service \"dup\" is invalid: spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated");
  EXPECT_EQ(bad["details"]["causes"][0]["reason"], "FieldValueInvalid");
  bad = CallJson("POST", "/api/v1/namespaces/default/services",
                 svc("cip2", "ClusterIP", Json::array({{{"port", 80}, {"nodePort", 31000}}})), {}, &code);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(bad["details"]["causes"][0]["message"], "Forbidden: may not be used when `type` is 'ClusterIP'") << bad.dump();
  // Back to ClusterIP: the allocated nodePorts go, and are free again.
  Json back = CallJson("GET", "/api/v1/namespaces/default/services/np");
  back["spec"]["type"] = "ClusterIP";
  back = CallJson("PUT", "/api/v1/namespaces/default/services/np", back, {}, &code);
  EXPECT_EQ(code, 200) << back.dump();
  EXPECT_FALSE(back["spec"]["ports"][0].contains("nodePort")) << back.dump();
  CallJson("POST", "/api/v1/namespaces/default/services",
           svc("reuse", "NodePort", Json::array({{{"port", 80}, {"nodePort", 30000}}})), {}, &code);
  EXPECT_EQ(code, 201);
}

// The fleet file's node addresses (the kubelet's status.addresses) and a
// cluster's load balancer pool (the cloud controller's ingress addresses).
TEST_F(SimTest, FleetNodeAddressesAndLoadBalancerPool) {
  Result<std::vector<ClusterSpec>> fleet = ParseFleet(R"(
clusters:
  - name: c1
    loadBalancerPool: ["203.0.113.10", "lb-2.example.net"]
    nodes:
      - name: n1
        addresses: [{type: InternalIP, address: 10.1.0.5}, {type: ExternalIP, address: 198.51.100.5}]
)");
  ASSERT_TRUE(fleet.ok()) << fleet.status().ToString();
  Start(std::move(fleet.value()), SimOptions{});
  Json n1 = CallJson("GET", "/api/v1/nodes/n1");
  EXPECT_EQ(n1["status"]["addresses"], Json::parse(R"([{"type":"InternalIP","address":"10.1.0.5"},
      {"type":"ExternalIP","address":"198.51.100.5"},{"type":"Hostname","address":"n1"}])"));
  for (const char* n : {"a", "b", "c"}) {
    CallJson("POST", "/api/v1/namespaces/default/services",
             Json{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", n}}},
                  {"spec", {{"type", "LoadBalancer"}, {"ports", Json::array({{{"port", 80}}})}}}});
  }
  auto ingress = [&](const char* n) { return CallJson("GET", std::string("/api/v1/namespaces/default/services/") + n)["status"]["loadBalancer"]; };
  ASSERT_TRUE(WaitFor([&] { return ingress("a").contains("ingress") && ingress("b").contains("ingress"); }));
  EXPECT_EQ(ingress("a")["ingress"], Json::parse(R"([{"ip":"203.0.113.10"}])"));
  EXPECT_EQ(ingress("b")["ingress"], Json::parse(R"([{"hostname":"lb-2.example.net"}])"));
  // The pool is used up: pending, until a Service holding an address goes.
  EXPECT_FALSE(ingress("c").contains("ingress"));
  CallJson("DELETE", "/api/v1/namespaces/default/services/a");
  ASSERT_TRUE(WaitFor([&] { return ingress("c").contains("ingress"); }));
  EXPECT_EQ(ingress("c")["ingress"], Json::parse(R"([{"ip":"203.0.113.10"}])"));
  EXPECT_FALSE(ParseFleet("clusters: [{name: a, nodes: [{name: n, addresses: [{type: Bogus, address: x}]}]}]").ok());
  EXPECT_FALSE(ParseFleet("clusters: [{name: a, loadBalancerPool: 3}]").ok());
}

// What kube-sim draws comes from SimOptions::seed, a sequence per cluster:
// the same seed and requests give the same tokens, uids and pod names.
TEST_F(SimTest, ASeedReplaysTokensUidsAndNames) {
  auto run = [&](uint64_t seed) {
    SimOptions o;
    o.seed = seed;
    Start(DefaultFleet(2, "c"), o);
    Json gen = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"generateName", "cfg-"}}}};
    Json cm = CallJson("POST", "/api/v1/namespaces/default/configmaps", gen);
    CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("web", 3));
    Json pods;
    EXPECT_TRUE(WaitFor([&] {
      pods = CallJson("GET", "/api/v1/namespaces/default/pods");
      return pods.value("items", Json::array()).size() == 3;
    }));
    std::vector<std::string> out = {sim_->Token("c1"), sim_->Token("c2"), cm["metadata"].value("name", ""),
                                    cm["metadata"].value("uid", "")};
    for (const auto& p : pods.value("items", Json::array())) {
      out.push_back(p["metadata"].value("name", ""));
      out.push_back(p["metadata"].value("uid", ""));
    }
    std::sort(out.begin() + 4, out.end());
    return out;
  };
  const auto a = run(7), b = run(7), c = run(8);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);  // each cluster its own sequence
  EXPECT_NE(a[0], c[0]);
  EXPECT_NE(a[2], c[2]);
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

TEST_F(SimTest, WithoutEstablishDelayCrdKindsAreServedAtOnce) {
  SimOptions at_once;
  at_once.crd_establish_delay = std::chrono::milliseconds(0);
  Start(DefaultFleet(2, "c"), at_once);
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
  // Deleting the CRD holds it with its cleanup finalizer, then removes its
  // objects, then it and its kind.
  Json deleted = CallJson("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
                          nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(deleted["metadata"]["finalizers"], Json::array({"customresourcecleanup.apiextensions.k8s.io"}));
  EXPECT_TRUE(deleted["metadata"]["deletionTimestamp"].is_string());
  EXPECT_TRUE(WaitFor([&] {
    return Call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").status == 404;
  }));
  HttpResponse gone = Call("GET", "/apis/example.com/v1/namespaces/default/widgets/w1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.body, "404 page not found\n");
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

TEST_F(SimTest, RequestsEndpointCountsEachClustersRequestsByUserAgent) {
  auto requests = [&](const std::string& cluster) {
    HttpRequest req;
    req.method = "GET";
    req.path = "/sim/clusters/" + cluster + "/requests";
    HttpResponse r = sim_->Handle(req).response;
    EXPECT_EQ(r.status, 200) << r.body;
    return Json::parse(r.body, nullptr, false);
  };
  EXPECT_EQ(requests("c1")["byUserAgent"], Json::object());
  CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("counted"));
  CallJson("GET", "/api/v1/namespaces/default/configmaps/counted");
  // Another client, and one without a token (refused, but it reached the cluster).
  HttpRequest other;
  other.method = "GET";
  other.path = "/clusters/c1/api/v1/namespaces";
  other.headers["user-agent"] = "kubectl/v1.29.0 (linux/amd64)";
  other.headers["authorization"] = "Bearer wrong";
  EXPECT_EQ(sim_->Handle(other).response.status, 401);
  other.headers.erase("user-agent");
  sim_->Handle(other);
  // Watches count as requests; /sim requests do not.
  StartWatch("/api/v1/namespaces/default/configmaps", {});
  requests("c1");
  Json c1 = requests("c1");
  EXPECT_EQ(c1["cluster"], "c1");
  EXPECT_EQ(c1["byUserAgent"],
            Json({{"sim-test/1.0", 2}, {"kubectl/v1.29.0 (linux/amd64)", 1}, {"", 2}}))
      << c1.dump();
  EXPECT_EQ(c1["total"], 5);
  // Per cluster: c2 saw none of it.
  EXPECT_EQ(requests("c2")["byUserAgent"], Json::object());
  EXPECT_EQ(requests("c2")["total"], 0);
  HttpRequest nobody;
  nobody.method = "GET";
  nobody.path = "/sim/clusters/nope/requests";
  EXPECT_EQ(sim_->Handle(nobody).response.status, 404);
}

TEST_F(SimTest, RequestsEndpointKeepsAFewUserAgentsAndLumpsTheRest) {
  for (int i = 0; i < 100; ++i) {
    HttpRequest req;
    req.method = "GET";
    req.path = "/clusters/c2/version";
    req.headers["user-agent"] = "client-" + std::to_string(i);
    sim_->Handle(req);
  }
  HttpRequest req;
  req.method = "GET";
  req.path = "/sim/clusters/c2/requests";
  Json r = Json::parse(sim_->Handle(req).response.body);
  EXPECT_EQ(r["total"], 100);
  EXPECT_LE(r["byUserAgent"].size(), 65u);
  EXPECT_EQ(r["byUserAgent"]["client-0"], 1);
  EXPECT_GT(r["byUserAgent"].value("(other)", 0), 0);
}

// ---------------------------------------------------------------------------
// Strictness: each expectation below is what a real kube-apiserver v1.26.0
// answered (recorded in ../shared/reference/kubernetes/answers.json; the
// cases are named).

const char* kApply = "application/apply-patch+yaml";

Json Condition(const Json& obj, const std::string& type) {
  for (const auto& c : obj.value("/status/conditions"_json_pointer, Json::array())) {
    if (c.is_object() && c.value("type", "") == type) return c;
  }
  return nullptr;
}

Json GadgetCrd() {
  return eco::testing::GadgetCrd({{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}});
}

Json Gadget() {
  return {{"apiVersion", "example.eco.io/v1"}, {"kind", "Gadget"}, {"metadata", {{"name", "g1"}, {"namespace", "default"}}}};
}

// Server-side apply's answer to a configuration that cannot be typed: 500, no reason.
Json TypedPatchFailure(const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()},
          {"status", "Failure"}, {"message", message}, {"code", 500}};
}

void ExpectPageNotFound(const HttpResponse& r, const std::string& what) {
  EXPECT_EQ(r.status, 404) << what << ": " << r.body;
  EXPECT_EQ(r.body, "404 page not found\n") << what;
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8") << what;
}

// cases unknown-kind, unknown-kind-ssa
TEST_F(SimTest, UnservedKindsAnswerPlainPageNotFound) {
  ExpectPageNotFound(Call("GET", "/apis/example.eco.io/v1/namespaces/default/gadgets/g1"), "GET");
  ExpectPageNotFound(Call("PATCH", "/apis/example.eco.io/v1/namespaces/default/gadgets/g1", Gadget().dump(),
                          {{"fieldManager", "eco"}, {"force", "true"}}, kApply),
                     "apply");
  ExpectPageNotFound(Call("GET", "/apis/example.eco.io/v1"), "discovery");
  ExpectPageNotFound(Call("GET", "/api/v1/namespaces/default/nonsense"), "core");
}

// case cr-right-after-crd, crd-create; the establishing controller's conditions
TEST_F(SimTest, CrdIsNamesAcceptedButNotServedUntilEstablished) {
  SimOptions slow;
  slow.crd_establish_delay = std::chrono::hours(1);
  Start(DefaultFleet(1, "c"), slow);
  auto crds = StartWatch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {});
  int code = 0;
  Json created = CallJson("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io",
                          GadgetCrd(), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  ASSERT_EQ(code, 201) << created.dump();
  // As stored at creation: no conditions yet, names not yet accepted.
  EXPECT_TRUE(created["status"]["conditions"].is_null()) << created["status"].dump();
  EXPECT_EQ(created["status"]["acceptedNames"], (Json{{"plural", ""}, {"kind", ""}}));
  EXPECT_EQ(created["status"]["storedVersions"], Json::array({"v1"}));
  EXPECT_EQ(created["spec"]["names"]["listKind"], "GadgetList");
  ASSERT_TRUE(WaitFor([&] {
    return !Condition(CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io"),
                      "NamesAccepted").is_null();
  }));
  Json crd = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io");
  EXPECT_EQ(Condition(crd, "NamesAccepted")["status"], "True");
  EXPECT_EQ(Condition(crd, "NamesAccepted")["reason"], "NoConflicts");
  EXPECT_EQ(Condition(crd, "Established")["status"], "False");
  EXPECT_EQ(Condition(crd, "Established")["reason"], "Installing");
  EXPECT_EQ(crd["status"]["acceptedNames"]["kind"], "Gadget");

  // Its kind is not served: every verb, and discovery, say 404 page not found.
  const std::string cr = "/apis/example.eco.io/v1/namespaces/default/gadgets";
  ExpectPageNotFound(Call("PATCH", cr + "/g1", Gadget().dump(), {{"fieldManager", "eco"}, {"force", "true"}}, kApply),
                     "apply");
  ExpectPageNotFound(Call("POST", cr, Gadget().dump()), "create");
  ExpectPageNotFound(Call("GET", cr + "/g1"), "get");
  ExpectPageNotFound(Call("GET", cr), "list");
  ExpectPageNotFound(Call("PATCH", cr + "/g1", "{}", {}, "application/merge-patch+json"), "merge patch");
  ExpectPageNotFound(Call("GET", "/apis/example.eco.io/v1"), "resource list");
  ExpectPageNotFound(Call("GET", "/apis/example.eco.io"), "group");
  Json groups = CallJson("GET", "/apis");
  for (const auto& g : groups["groups"]) EXPECT_NE(g["name"], "example.eco.io");
  // The watch saw the CRD added, then its names accepted.
  auto ev = crds->Events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[1]["type"], "MODIFIED");
  EXPECT_EQ(Condition(ev[1]["object"], "NamesAccepted")["status"], "True");
}

TEST_F(SimTest, CrdKindIsServedOnceEstablished) {
  SimOptions quick;
  quick.crd_establish_delay = std::chrono::milliseconds(200);
  Start(DefaultFleet(1, "c"), quick);
  auto crds = StartWatch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {});
  int code = 0;
  CallJson("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GadgetCrd(), {}, &code);
  ASSERT_EQ(code, 201);
  ASSERT_TRUE(WaitFor([&] {
    Json c = Condition(CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io"),
                       "Established");
    return c.is_object() && c["status"] == "True";
  }));
  Json crd = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io");
  EXPECT_EQ(Condition(crd, "Established")["reason"], "InitialNamesAccepted");
  EXPECT_EQ(Condition(crd, "Established")["message"], "the initial names have been accepted");
  Json rl = CallJson("GET", "/apis/example.eco.io/v1", nullptr, {}, &code);
  ASSERT_EQ(code, 200);
  EXPECT_EQ(rl["resources"][0]["kind"], "Gadget");
  CallJson("PATCH", "/apis/example.eco.io/v1/namespaces/default/gadgets/g1", Gadget(),
           {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 201);
  // Watchers saw Established turn True.
  bool established = false;
  for (const auto& e : crds->Events()) {
    Json c = Condition(e["object"], "Established");
    established = established || (e["type"] == "MODIFIED" && c.is_object() && c["status"] == "True");
  }
  EXPECT_TRUE(established);
}

Json TypoDeployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "typo"}, {"namespace", "default"}}},
          {"spec",
           {{"replica", 3},
            {"selector", {{"matchLabels", {{"app", "t"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "t"}}}}},
              {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "nginx:1.27"}}})}}}}}}}};
}

// case ssa-unknown-field
TEST_F(SimTest, ServerSideApplyRefusesUndeclaredFields) {
  int code = 0;
  Json s = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/typo", TypoDeployment(),
                    {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 500);
  EXPECT_EQ(s, TypedPatchFailure("failed to create typed patch object (default/typo; apps/v1, Kind=Deployment): "
                                  ".spec.replica: field not declared in schema"));
  // Nothing was created.
  CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/typo", nullptr, {}, &code);
  EXPECT_EQ(code, 404);

  // Deeper: in a keyed list element, and in metadata; several at once.
  Json d = TypoDeployment();
  d["spec"].erase("replica");
  d["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x";
  d["metadata"]["labelz"] = {{"a", "b"}};
  s = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/typo", d, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 500);
  EXPECT_EQ(s["message"],
            "failed to create typed patch object (default/typo; apps/v1, Kind=Deployment): errors:\n"
            "  .metadata.labelz: field not declared in schema\n"
            "  .spec.template.spec.containers[name=\"c\"].imagee: field not declared in schema");
  // A cluster-scoped kind names no namespace; core kinds have an empty group.
  Json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "n1"}}}, {"spek", Json::object()}};
  s = CallJson("PATCH", "/api/v1/namespaces/n1", ns, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 500);
  EXPECT_EQ(s["message"], "failed to create typed patch object (/n1; /v1, Kind=Namespace): .spek: field not declared in schema");
}

TEST_F(SimTest, ServerSideApplyAcceptsMapsOpaqueAndAnyScalarFields) {
  int code = 0;
  Json d = TypoDeployment();
  d["spec"].erase("replica");
  d["metadata"]["labels"] = {{"any.label/x", "1"}};
  d["metadata"]["annotations"] = {{"anything", "goes"}};
  Json& c = d["spec"]["template"]["spec"]["containers"][0];
  c["resources"] = {{"limits", {{"cpu", 1}, {"memory", "64Mi"}, {"example.com/gpu", "1"}}}};
  c["ports"] = Json::array({{{"containerPort", 80}, {"name", "http"}}});
  c["livenessProbe"] = {{"httpGet", {{"port", "http"}, {"path", "/"}}}};
  d["spec"]["strategy"] = {{"rollingUpdate", {{"maxSurge", "25%"}, {"maxUnavailable", 0}}}};
  Json r = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/ok", [&] {
    Json x = d;
    x["metadata"]["name"] = "ok";
    return x;
  }(), {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 201) << r.dump();
  // ControllerRevision.data is a RawExtension: opaque.
  Json rev = {{"apiVersion", "apps/v1"}, {"kind", "ControllerRevision"}, {"metadata", {{"name", "r1"}}},
              {"revision", 1}, {"data", {{"whatever", {{"nested", true}}}}}};
  r = CallJson("PATCH", "/apis/apps/v1/namespaces/default/controllerrevisions/r1", rev, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 201) << r.dump();
  // A CRD's schema (JSONSchemaProps) declares its extensions; its default is JSON.
  Json crd = GadgetCrd();
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
      {"type", "object"},
      {"properties", {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true},
                                {"default", {{"size", 1}}}}}}}};
  r = CallJson("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io", crd,
               {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 201) << r.dump();
}

TEST_F(SimTest, CustomResourcesUnderPreserveUnknownFieldsKeepAnything) {
  ASSERT_NO_FATAL_FAILURE(StartWithCrd(GadgetCrd()));
  int code = 0;
  Json g = Gadget();
  g["spec"] = {{"anything", {{"at", "all"}}}};
  g["toplevel"] = 1;
  Json r = CallJson("PATCH", "/apis/example.eco.io/v1/namespaces/default/gadgets/g1", g, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 201) << r.dump();
  EXPECT_EQ(r["toplevel"], 1);
}

// The CRD of the recordings (example-crd.json): spec.size, nothing else.
Json SizedGadgetCrd() { return eco::testing::GadgetCrd(testing::SizedGadgetSchema()); }

bool Warned(const HttpResponse& r, const std::string& field) {
  for (const auto& [k, v] : r.headers) {
    if (k == "Warning" && v == "299 - \"unknown field \\\"" + field + "\\\"\"") return true;
  }
  return false;
}

// The reference's table of undeclared fields, for a custom resource (spec.colour).
TEST_F(SimTest, CustomResourcesAreCheckedAgainstTheirCrdSchema) {
  ASSERT_NO_FATAL_FAILURE(StartWithCrd(SizedGadgetCrd()));
  int code = 0;
  const std::string gadgets = "/apis/example.eco.io/v1/namespaces/default/gadgets";
  Json g = Gadget();
  g["spec"] = {{"size", 3}, {"colour", "red"}};

  // Server-side apply refuses it, with or without a fieldValidation.
  for (const char* fv : {"", "Ignore", "Warn", "Strict"}) {
    std::map<std::string, std::string> query = {{"fieldManager", "eco"}};
    if (*fv) query["fieldValidation"] = fv;
    Json s = CallJson("PATCH", gadgets + "/g1", g, query, &code, kApply);
    EXPECT_EQ(code, 500) << fv;
    EXPECT_EQ(s, TypedPatchFailure("failed to create typed patch object (default/g1; example.eco.io/v1, "
                                   "Kind=Gadget): .spec.colour: field not declared in schema"))
        << fv;
  }
  CallJson("GET", gadgets + "/g1", nullptr, {}, &code);
  EXPECT_EQ(code, 404);

  // Strict create: 400, as for a built-in kind.
  Json s = CallJson("POST", gadgets, g, {{"fieldValidation", "Strict"}}, &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(s["reason"], "BadRequest");
  EXPECT_EQ(s["message"],
            "Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: unknown field \"spec.colour\"");

  // Create prunes it and warns; so does a merge patch; status is undeclared here.
  g["status"] = {{"ready", true}};
  HttpResponse r = Call("POST", gadgets, g.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_TRUE(Warned(r, "spec.colour"));
  EXPECT_TRUE(Warned(r, "status"));
  Json created = Json::parse(r.body);
  EXPECT_EQ(created["spec"], (Json{{"size", 3}}));
  EXPECT_FALSE(created.contains("status"));
  EXPECT_EQ(Json::parse(Call("GET", gadgets + "/g1").body)["spec"], (Json{{"size", 3}}));
  r = Call("PATCH", gadgets + "/g1", R"({"spec": {"colour": "blue", "size": 4}})", {}, "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Warned(r, "spec.colour"));
  EXPECT_EQ(Json::parse(r.body)["spec"], (Json{{"size", 4}}));
  r = Call("PATCH", gadgets + "/g1", R"({"spec": {"colour": "blue"}})", {{"fieldValidation", "Strict"}},
           "application/merge-patch+json");
  EXPECT_EQ(r.status, 422) << r.body;

  // A declared field applies; a changed schema takes effect.
  g["spec"].erase("colour");
  g.erase("status");
  CallJson("PATCH", gadgets + "/g1", g, {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 200);
  Json crd = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io");
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["colour"] = {{"type", "string"}};
  CallJson("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io", crd, {}, &code);
  ASSERT_EQ(code, 200);
  g["spec"]["colour"] = "red";
  Json applied = CallJson("PATCH", gadgets + "/g1", g, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 200) << applied.dump();
  EXPECT_EQ(applied["spec"]["colour"], "red");
}

Json OpenApiIndex(const Json& index, const std::string& path) { return index["paths"].value(path, Json()); }

TEST_F(SimTest, OpenApiV3IndexListsServedGroupVersionsAndEstablishedCrds) {
  SimOptions slow;
  slow.crd_establish_delay = std::chrono::hours(1);
  Start(DefaultFleet(1, "c"), slow);
  EXPECT_NE(Call("GET", "/").body.find("\"/openapi/v3\""), std::string::npos);
  HttpResponse r = Call("GET", "/openapi/v3");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  Json index = Json::parse(r.body);
  for (const char* path : {"api", "api/v1", "apis", "apis/apps", "apis/apps/v1", "apis/batch/v1",
                           "apis/apiextensions.k8s.io/v1", "apis/autoscaling/v2", "version"}) {
    const Json entry = OpenApiIndex(index, path);
    ASSERT_TRUE(entry.is_object()) << path;
    const std::string url = entry.value("serverRelativeURL", "");
    const std::string prefix = std::string("/openapi/v3/") + path + "?hash=";
    ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
    const std::string hash = url.substr(prefix.size());
    EXPECT_EQ(hash.size(), 128u) << url;
    EXPECT_EQ(hash.find_first_not_of("0123456789ABCDEF"), std::string::npos) << url;
    HttpResponse doc = Call("GET", "/openapi/v3/" + std::string(path), "", {{"hash", hash}});
    EXPECT_EQ(doc.status, 200) << path;
    EXPECT_EQ(doc.content_type, "application/json");
    EXPECT_EQ(Json::parse(doc.body).value("openapi", ""), "3.0.0") << path;
  }
  EXPECT_TRUE(OpenApiIndex(index, "apis/extensions/v1beta1").is_null());
  Json core = CallJson("GET", "/openapi/v3/api/v1");
  EXPECT_EQ(core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
            Json::parse(R"([{"group": "", "kind": "ConfigMap", "version": "v1"}])"));
  ExpectPageNotFound(Call("GET", "/openapi/v3/apis/nothing.example/v1"), "an unserved group-version");

  // A CRD not yet Established has no document.
  int code = 0;
  CallJson("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", SizedGadgetCrd(), {}, &code);
  ASSERT_EQ(code, 201);
  EXPECT_TRUE(OpenApiIndex(CallJson("GET", "/openapi/v3"), "apis/example.eco.io/v1").is_null());
  ExpectPageNotFound(Call("GET", "/openapi/v3/apis/example.eco.io/v1"), "a CRD not yet Established");

  // Established: listed; its hash follows the CRD, the built-ins' do not.
  ASSERT_NO_FATAL_FAILURE(StartWithCrd(SizedGadgetCrd()));
  Json before = CallJson("GET", "/openapi/v3");
  const Json gadget_entry = OpenApiIndex(before, "apis/example.eco.io/v1");
  ASSERT_TRUE(gadget_entry.is_object()) << before.dump();
  EXPECT_EQ(OpenApiIndex(before, "api/v1"), OpenApiIndex(index, "api/v1"));
  Json doc = CallJson("GET", "/openapi/v3/apis/example.eco.io/v1");
  const Json& gadget = doc["components"]["schemas"]["io.eco.example.v1.Gadget"];
  EXPECT_EQ(gadget["x-kubernetes-group-version-kind"],
            Json::parse(R"([{"group": "example.eco.io", "kind": "Gadget", "version": "v1"}])"));
  EXPECT_EQ(gadget["properties"]["spec"]["properties"]["size"]["type"], "integer");
  EXPECT_FALSE(gadget["properties"]["spec"]["properties"].contains("colour"));

  Json crd = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io");
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["colour"] = {{"type", "string"}};
  CallJson("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io", crd, {}, &code);
  ASSERT_EQ(code, 200);
  Json after = CallJson("GET", "/openapi/v3");
  EXPECT_NE(OpenApiIndex(after, "apis/example.eco.io/v1"), gadget_entry);
  EXPECT_EQ(OpenApiIndex(after, "api/v1"), OpenApiIndex(before, "api/v1"));
  doc = CallJson("GET", "/openapi/v3/apis/example.eco.io/v1");
  EXPECT_EQ(doc["components"]["schemas"]["io.eco.example.v1.Gadget"]["properties"]["spec"]["properties"]["colour"]["type"],
            "string");

  // Deleted: gone from the index once the CRD is.
  CallJson("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(WaitFor([&] { return OpenApiIndex(CallJson("GET", "/openapi/v3"), "apis/example.eco.io/v1").is_null(); }));
}

// cases post-unknown-field, post-unknown-field-strict
TEST_F(SimTest, CreateAndUpdateDropUndeclaredFieldsUnlessStrict) {
  HttpResponse r = Call("POST", "/apis/apps/v1/namespaces/default/deployments", TypoDeployment().dump());
  ASSERT_EQ(r.status, 201) << r.body;
  Json created = Json::parse(r.body);
  EXPECT_FALSE(created["spec"].contains("replica")) << created["spec"].dump();
  EXPECT_EQ(created["spec"]["replicas"], 1);
  bool warned = false;
  for (const auto& [k, v] : r.headers) warned = warned || (k == "Warning" && v == "299 - \"unknown field \\\"spec.replica\\\"\"");
  EXPECT_TRUE(warned) << "a Warning header for the dropped field";
  EXPECT_FALSE(Json::parse(Call("GET", "/apis/apps/v1/namespaces/default/deployments/typo").body)["spec"].contains("replica"));

  Json typo2 = TypoDeployment();
  typo2["metadata"]["name"] = "typo2";
  int code = 0;
  Json s = CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", typo2, {{"fieldValidation", "Strict"}}, &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(s, (Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"metadata", Json::object()},
                     {"status", "Failure"},
                     {"message",
                      "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown "
                      "field \"spec.replica\""},
                     {"reason", "BadRequest"},
                     {"code", 400}}));
  // Paths in lists count elements; Ignore drops silently.
  typo2["spec"].erase("replica");
  typo2["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x";
  typo2["spec"]["replicass"] = 2;
  s = CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", typo2, {{"fieldValidation", "Strict"}}, &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(s["message"],
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field "
            "\"spec.replicass\", unknown field \"spec.template.spec.containers[0].imagee\"");
  r = Call("POST", "/apis/apps/v1/namespaces/default/deployments", typo2.dump(), {{"fieldValidation", "Ignore"}});
  EXPECT_EQ(r.status, 201);
  for (const auto& h : r.headers) EXPECT_NE(h.first, "Warning");
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", typo2, {{"fieldValidation", "Loose"}}, &code);
  EXPECT_EQ(code, 422);

  // An update (PUT) decodes the same way.
  Json update = created;
  update["metadata"].erase("resourceVersion");  // the controller writes status meanwhile
  update["spec"]["replica"] = 5;
  s = CallJson("PUT", "/apis/apps/v1/namespaces/default/deployments/typo", update, {{"fieldValidation", "Strict"}}, &code);
  EXPECT_EQ(code, 400);
  EXPECT_EQ(s["reason"], "BadRequest");
  Json put = CallJson("PUT", "/apis/apps/v1/namespaces/default/deployments/typo", update, {}, &code);
  EXPECT_EQ(code, 200) << put.dump();
  EXPECT_FALSE(put["spec"].contains("replica"));
}

TEST_F(SimTest, PatchesDropUndeclaredFieldsUnlessStrict) {
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("p").dump()).status, 201);
  int code = 0;
  Json m = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/p", Json{{"dataa", {{"x", "1"}}}}, {}, &code,
                    "application/merge-patch+json");
  EXPECT_EQ(code, 200) << m.dump();
  EXPECT_FALSE(m.contains("dataa"));
  Json strict = CallJson("PATCH", "/api/v1/namespaces/default/configmaps/p", Json{{"dataa", {{"x", "1"}}}},
                         {{"fieldValidation", "Strict"}}, &code, "application/merge-patch+json");
  EXPECT_EQ(code, 422);
  EXPECT_EQ(strict["reason"], "Invalid");
  std::string msg = strict.value("message", "");
  EXPECT_EQ(msg.rfind(" \"\" is invalid: patch: Invalid value: \"{", 0), 0u) << msg;
  EXPECT_NE(msg.find("\": strict decoding error: unknown field \"dataa\""), std::string::npos) << msg;
  EXPECT_EQ(strict["details"]["causes"][0]["field"], "patch");
  // A strategic merge patch names the patch itself, as Go prints a map.
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("smp", 1));
  strict = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/smp", Json{{"spec", {{"replica", 3}}}},
                    {{"fieldValidation", "Strict"}}, &code, "application/strategic-merge-patch+json");
  EXPECT_EQ(code, 422);
  EXPECT_EQ(strict["message"],
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[replica:3]]\": strict decoding error: unknown "
            "field \"spec.replica\"");
  Json smp = CallJson("PATCH", "/apis/apps/v1/namespaces/default/deployments/smp", Json{{"spec", {{"replica", 3}}}}, {},
                      &code, "application/strategic-merge-patch+json");
  EXPECT_EQ(code, 200);
  EXPECT_FALSE(smp["spec"].contains("replica"));
}

Json WebDeployment(const std::string& app) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "web"}, {"namespace", "default"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", app}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", app}}}}},
              {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "nginx:1.27"}}})}}}}},
            {"replicas", 1}}}};
}

// cases ssa-create, ssa-immutable-selector, ssa-conflict
TEST_F(SimTest, DeploymentSelectorIsImmutable) {
  int code = 0;
  const std::string path = "/apis/apps/v1/namespaces/default/deployments/web";
  CallJson("PATCH", path, WebDeployment("t"), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  ASSERT_EQ(code, 201);
  Json s = CallJson("PATCH", path, WebDeployment("other"), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 422);
  const std::string value =
      "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"other\"}, "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
  EXPECT_EQ(s, (Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"metadata", Json::object()},
                     {"status", "Failure"},
                     {"message", "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: " + value +
                                     ": field is immutable"},
                     {"reason", "Invalid"},
                     {"details",
                      {{"name", "web"},
                       {"group", "apps"},
                       {"kind", "Deployment"},
                       {"causes", Json::array({{{"reason", "FieldValueInvalid"},
                                                {"message", "Invalid value: " + value + ": field is immutable"},
                                                {"field", "spec.selector"}}})}}},
                     {"code", 422}}));
  // The same through a PUT and a merge patch; the template may change.
  Json live = CallJson("GET", path);
  Json put = live;
  put["metadata"].erase("resourceVersion");  // the controller writes status meanwhile
  put["spec"]["selector"]["matchLabels"]["app"] = "other";
  CallJson("PUT", path, put, {}, &code);
  EXPECT_EQ(code, 422);
  CallJson("PATCH", path, Json{{"spec", {{"selector", {{"matchLabels", {{"x", "y"}}}}}}}}, {}, &code,
           "application/merge-patch+json");
  EXPECT_EQ(code, 422);
  Json image = WebDeployment("t");
  image["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28";
  CallJson("PATCH", path, image, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 200);

  // Another manager without force: the recorded conflict, causes and all.
  Json other = image;
  other["spec"]["replicas"] = 5;
  s = CallJson("PATCH", path, other, {{"fieldManager", "someone"}}, &code, kApply);
  EXPECT_EQ(code, 409);
  EXPECT_EQ(s, (Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"metadata", Json::object()},
                     {"status", "Failure"},
                     {"message", "Apply failed with 1 conflict: conflict with \"eco\": .spec.replicas"},
                     {"reason", "Conflict"},
                     {"details",
                      {{"causes", Json::array({{{"reason", "FieldManagerConflict"},
                                                {"message", "conflict with \"eco\""},
                                                {"field", ".spec.replicas"}}})}}},
                     {"code", 409}}));
}

// cases ssa-service, ssa-immutable-clusterip
TEST_F(SimTest, ServiceClusterIPMayNotChangeOnceSet) {
  const std::string path = "/api/v1/namespaces/default/services/s";
  Json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "s"}, {"namespace", "default"}}},
              {"spec", {{"ports", Json::array({{{"port", 80}}})}, {"selector", {{"app", "t"}}}}}};
  int code = 0;
  Json created = CallJson("PATCH", path, svc, {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  ASSERT_EQ(code, 201);
  EXPECT_EQ(created["spec"]["clusterIPs"], Json::array({created["spec"]["clusterIP"]}));
  // Re-applying without clusterIP keeps it.
  CallJson("PATCH", path, svc, {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 200);
  svc["spec"]["clusterIP"] = "10.0.0.201";
  Json s = CallJson("PATCH", path, svc, {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(s, (Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"metadata", Json::object()},
                     {"status", "Failure"},
                     {"message",
                      "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.201\"}: may not "
                      "change once set"},
                     {"reason", "Invalid"},
                     {"details",
                      {{"name", "s"},
                       {"kind", "Service"},
                       {"causes", Json::array({{{"reason", "FieldValueInvalid"},
                                                {"message", "Invalid value: []string{\"10.0.0.201\"}: may not change once set"},
                                                {"field", "spec.clusterIPs[0]"}}})}}},
                     {"code", 422}}));
  // A PUT that leaves clusterIP out keeps the allocated one.
  Json live = CallJson("GET", path);
  Json put = live;
  put["spec"].erase("clusterIP");
  put["spec"].erase("clusterIPs");
  Json kept = CallJson("PUT", path, put, {}, &code);
  EXPECT_EQ(code, 200) << kept.dump();
  EXPECT_EQ(kept["spec"]["clusterIP"], live["spec"]["clusterIP"]);
}

Json Job(const std::string& image) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "j"}, {"namespace", "default"}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"restartPolicy", "Never"}, {"containers", Json::array({{{"name", "c"}, {"image", image}}})}}}}}}}};
}

// cases ssa-job, ssa-immutable-job-template
TEST_F(SimTest, JobTemplateIsImmutable) {
  const std::string path = "/apis/batch/v1/namespaces/default/jobs/j";
  int code = 0;
  CallJson("PATCH", path, Job("busybox:1.36"), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  ASSERT_EQ(code, 201);
  CallJson("PATCH", path, Job("busybox:1.36"), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 200) << "the same template again is no change";
  Json s = CallJson("PATCH", path, Job("busybox:1.37"), {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 422);
  EXPECT_EQ(s["reason"], "Invalid");
  std::string msg = s.value("message", "");
  const std::string prefix = "Job.batch \"j\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:\"\", ";
  EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
  EXPECT_NE(msg.find("Containers:[]core.Container{core.Container{Name:\"c\", Image:\"busybox:1.37\", Command:[]string(nil)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("TerminationMessagePath:\"/dev/termination-log\", TerminationMessagePolicy:\"File\", "
                     "ImagePullPolicy:\"IfNotPresent\""),
            std::string::npos)
      << msg;
  const std::string suffix = "}}: field is immutable";
  EXPECT_EQ(msg.compare(msg.size() - suffix.size(), suffix.size(), suffix), 0) << msg;
  EXPECT_EQ(s["details"], (Json{{"name", "j"},
                                {"group", "batch"},
                                {"kind", "Job"},
                                {"causes", Json::array({{{"reason", "FieldValueInvalid"},
                                                         {"message", msg.substr(msg.find("Invalid value: "))},
                                                         {"field", "spec.template"}}})}}));
}

TEST_F(SimTest, StatefulSetSpecBeyondTheUpdatableFieldsIsForbidden) {
  Json sts = Deployment("db", 1);
  sts["kind"] = "StatefulSet";
  sts["spec"]["serviceName"] = "db";
  sts["spec"]["volumeClaimTemplates"] =
      Json::array({{{"metadata", {{"name", "data"}}},
                    {"spec", {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}});
  const std::string path = "/apis/apps/v1/namespaces/default/statefulsets/db";
  int code = 0;
  CallJson("PATCH", path, sts, {{"fieldManager", "eco"}}, &code, kApply);
  ASSERT_EQ(code, 201);
  Json scaled = sts;
  scaled["spec"]["replicas"] = 3;
  scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2";
  CallJson("PATCH", path, scaled, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 200) << "replicas and template may change";
  Json bigger = scaled;
  bigger["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "2Gi";
  Json s = CallJson("PATCH", path, bigger, {{"fieldManager", "eco"}}, &code, kApply);
  EXPECT_EQ(code, 422);
  const std::string forbidden =
      "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
      "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
  EXPECT_EQ(s["message"], "StatefulSet.apps \"db\" is invalid: spec: " + forbidden);
  EXPECT_EQ(s["details"]["causes"][0], (Json{{"reason", "FieldValueForbidden"}, {"message", forbidden}, {"field", "spec"}}));
}

TEST_F(SimTest, ReplicaSetAndDaemonSetSelectorsAreImmutable) {
  for (const char* kind : {"ReplicaSet", "DaemonSet"}) {
    Json o = Deployment("x", 1);
    o["kind"] = kind;
    if (std::string(kind) == "DaemonSet") o["spec"].erase("replicas");
    std::string path = std::string("/apis/apps/v1/namespaces/default/") + (std::string(kind) == "DaemonSet" ? "daemonsets" : "replicasets") + "/x";
    int code = 0;
    CallJson("PATCH", path, o, {{"fieldManager", "eco"}}, &code, kApply);
    ASSERT_EQ(code, 201) << kind;
    o["spec"]["selector"]["matchLabels"]["tier"] = "web";
    o["spec"]["template"]["metadata"]["labels"]["tier"] = "web";
    Json s = CallJson("PATCH", path, o, {{"fieldManager", "eco"}}, &code, kApply);
    EXPECT_EQ(code, 422) << kind;
    EXPECT_EQ(s["message"], std::string(kind) + ".apps \"x\" is invalid: spec.selector: Invalid value: "
                                "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\", \"tier\":\"web\"}, "
                                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable");
  }
}

Json NamespaceObject(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

// cases delete-namespace, create-in-terminating-ns, ssa-in-terminating-ns, get-terminating-ns
TEST_F(SimTest, DeletedNamespaceTerminatesForAWhile) {
  SimOptions slow;
  slow.namespace_terminate = std::chrono::hours(1);
  Start(DefaultFleet(1, "c"), slow);
  int code = 0;
  CallJson("POST", "/api/v1/namespaces", NamespaceObject("capture"), {}, &code);
  ASSERT_EQ(code, 201);
  CallJson("POST", "/api/v1/namespaces/capture/configmaps", ConfigMap("c1", "capture"), {}, &code);
  ASSERT_EQ(code, 201);
  auto watch = StartWatch("/api/v1/namespaces", {{"fieldSelector", "metadata.name=capture"}});
  Json deleted = CallJson("DELETE", "/api/v1/namespaces/capture", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(deleted["status"]["phase"], "Terminating");
  EXPECT_TRUE(deleted["metadata"]["deletionTimestamp"].is_string());
  EXPECT_EQ(deleted["spec"]["finalizers"], Json::array({"kubernetes"}));

  Json cm = ConfigMap("c2", "capture");
  Json s = CallJson("POST", "/api/v1/namespaces/capture/configmaps", cm, {}, &code);
  EXPECT_EQ(code, 403);
  auto forbidden = [](const std::string& name) {
    return Json{{"kind", "Status"},
                {"apiVersion", "v1"},
                {"metadata", Json::object()},
                {"status", "Failure"},
                {"message", "configmaps \"" + name +
                                "\" is forbidden: unable to create new content in namespace capture because it is being terminated"},
                {"reason", "Forbidden"},
                {"details",
                 {{"name", name},
                  {"kind", "configmaps"},
                  {"causes", Json::array({{{"reason", "NamespaceTerminating"},
                                           {"message", "namespace capture is being terminated"},
                                           {"field", "metadata.namespace"}}})}}},
                {"code", 403}};
  };
  EXPECT_EQ(s, forbidden("c2"));
  s = CallJson("PATCH", "/api/v1/namespaces/capture/configmaps/c3", ConfigMap("c3", "capture"),
               {{"fieldManager", "eco"}, {"force", "true"}}, &code, kApply);
  EXPECT_EQ(code, 403);
  EXPECT_EQ(s, forbidden("c3"));
  // Other groups are named with theirs.
  Json d = WebDeployment("t");
  d["metadata"]["namespace"] = "capture";
  s = CallJson("POST", "/apis/apps/v1/namespaces/capture/deployments", d, {}, &code);
  EXPECT_EQ(code, 403);
  EXPECT_EQ(s["details"]["group"], "apps");
  EXPECT_EQ(s["message"].get<std::string>().rfind("deployments.apps \"web\" is forbidden: ", 0), 0u);

  Json got = CallJson("GET", "/api/v1/namespaces/capture", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(got["status"]["phase"], "Terminating");
  // Its objects go at once; the namespace stays.
  EXPECT_TRUE(WaitFor([&] {
    int c = 0;
    CallJson("GET", "/api/v1/namespaces/capture/configmaps/c1", nullptr, {}, &c);
    return c == 404;
  }));
  CallJson("GET", "/api/v1/namespaces/capture", nullptr, {}, &code);
  EXPECT_EQ(code, 200);
  // Creating it again: it still exists, being deleted.
  s = CallJson("POST", "/api/v1/namespaces", NamespaceObject("capture"), {}, &code);
  EXPECT_EQ(code, 409);
  EXPECT_EQ(s["message"], "object is being deleted: namespaces \"capture\" already exists");
  auto ev = watch->Events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[1]["type"], "MODIFIED");
  EXPECT_EQ(ev[1]["object"]["status"]["phase"], "Terminating");
}

// case create-in-missing-ns
TEST_F(SimTest, TerminatedNamespaceIsGoneAfterTheDelay) {
  SimOptions quick;
  quick.namespace_terminate = std::chrono::milliseconds(200);
  Start(DefaultFleet(1, "c"), quick);
  int code = 0;
  CallJson("POST", "/api/v1/namespaces", NamespaceObject("capture"), {}, &code);
  ASSERT_EQ(code, 201);
  auto watch = StartWatch("/api/v1/namespaces", {{"fieldSelector", "metadata.name=capture"}});
  CallJson("DELETE", "/api/v1/namespaces/capture", nullptr, {}, &code);
  ASSERT_TRUE(WaitFor([&] {
    int c = 0;
    CallJson("GET", "/api/v1/namespaces/capture", nullptr, {}, &c);
    return c == 404;
  }));
  Json s = CallJson("POST", "/api/v1/namespaces/capture/configmaps", ConfigMap("c4", "capture"), {}, &code);
  EXPECT_EQ(code, 404);
  EXPECT_EQ(s, (Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"metadata", Json::object()},
                     {"status", "Failure"},
                     {"message", "namespaces \"capture\" not found"},
                     {"reason", "NotFound"},
                     {"details", {{"name", "capture"}, {"kind", "namespaces"}}},
                     {"code", 404}}));
  auto ev = watch->Events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[1]["type"], "MODIFIED");
  EXPECT_EQ(ev[1]["object"]["status"]["phase"], "Terminating");
  EXPECT_EQ(ev[2]["type"], "DELETED");
  // Without the delay, a namespace goes as soon as its objects are gone.
  SimOptions at_once;
  at_once.namespace_terminate = std::chrono::milliseconds(0);
  Start(DefaultFleet(1, "c"), at_once);
  CallJson("POST", "/api/v1/namespaces", NamespaceObject("fast"), {}, &code);
  ASSERT_EQ(code, 201);
  CallJson("DELETE", "/api/v1/namespaces/fast", nullptr, {}, &code);
  EXPECT_TRUE(WaitFor([&] {
    int c = 0;
    CallJson("GET", "/api/v1/namespaces/fast", nullptr, {}, &c);
    return c == 404;
  }));
}

// What kube-sim itself writes (defaults, controllers' status) must be what
// the kinds declare: a client reading an object and writing it back would
// otherwise lose fields, or be refused with fieldValidation=Strict.
TEST_F(SimTest, ObjectsKubeSimWritesDeclareOnlySchemaFields) {
  SimOptions quick;
  quick.ready_delay = std::chrono::milliseconds(10);
  quick.crd_establish_delay = std::chrono::milliseconds(10);
  Start(DefaultFleet(1, "c"), quick);
  CallJson("POST", "/apis/apps/v1/namespaces/default/deployments", Deployment("web", 2));
  Json sts = Deployment("db", 1);
  sts["kind"] = "StatefulSet";
  sts["spec"]["serviceName"] = "db";
  CallJson("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts);
  Json ds = Deployment("agent", 0);
  ds["kind"] = "DaemonSet";
  ds["spec"].erase("replicas");
  CallJson("POST", "/apis/apps/v1/namespaces/default/daemonsets", ds);
  CallJson("POST", "/apis/batch/v1/namespaces/default/jobs", Job("busybox"));
  CallJson("POST", "/api/v1/namespaces/default/services",
           Json{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "lb"}}},
                {"spec", {{"type", "LoadBalancer"}, {"ports", Json::array({{{"port", 80}}})}}}});
  CallJson("POST", "/api/v1/namespaces/default/persistentvolumeclaims",
           Json{{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", {{"name", "data"}}},
                {"spec", {{"accessModes", Json::array({"ReadWriteOnce"})}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
  CallJson("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GadgetCrd());
  ASSERT_TRUE(WaitFor([&] {
    Json d = CallJson("GET", "/apis/apps/v1/namespaces/default/deployments/web");
    Json j = CallJson("GET", "/apis/batch/v1/namespaces/default/jobs/j");
    Json c = CallJson("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.eco.io");
    // Not yet Established: no condition at all (null), not an error.
    const Json est = Condition(c, "Established");
    return d.is_object() && d.value("/status/readyReplicas"_json_pointer, 0) == 2 &&
           !Condition(j, "Complete").is_null() && est.is_object() && est.value("status", "") == "True";
  }));
  CallJson("DELETE", "/api/v1/namespaces/kube-public");  // refused, but exercises the path
  HttpRequest req;
  req.method = "GET";
  req.path = "/sim/clusters/c1/objects";
  Json all = Json::parse(sim_->Handle(req).response.body);
  std::set<std::string> kinds;
  for (const auto& o : all["objects"]) {
    const KindSchema* schema = FindKindSchema(o["apiVersion"].get<std::string>(), o["kind"].get<std::string>());
    ASSERT_NE(schema, nullptr) << o["apiVersion"] << " " << o["kind"];
    kinds.insert(o["kind"].get<std::string>());
    for (const auto& u : UnknownFields(*schema, o)) {
      ADD_FAILURE() << o["kind"] << " " << o["metadata"]["name"] << ": " << u.decode_path;
    }
  }
  for (const char* k : {"Namespace", "Node", "Deployment", "ReplicaSet", "Pod", "StatefulSet", "DaemonSet", "Job",
                        "Service", "PersistentVolumeClaim", "CustomResourceDefinition"}) {
    EXPECT_TRUE(kinds.count(k)) << k;
  }
}

// What kube-sim keeps parsed of a live object: the lookups' fields, not
// the bulk; the whole object stays in the entry's text.
TEST(Entries, ViewLeavesOutTheBulkAndTextKeepsEverything) {
  const Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "p"},
        {"namespace", "default"},
        {"labels", {{"app", "web"}}},
        {"annotations", {{"note", "long"}}},
        {"ownerReferences", Json::array({{{"uid", "u1"}, {"controller", true}}})},
        {"managedFields", Json::array({{{"manager", "m"}}})}}},
      {"spec",
       {{"nodeName", "node-1"},
        {"volumes", Json::array({{{"name", "v"}}})},
        {"containers",
         Json::array({{{"name", "c"}, {"image", "nginx"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
      {"status", {{"phase", "Running"}, {"containerStatuses", Json::array({{{"name", "c"}}})}}}};
  EntryPtr e = MakeEntry(pod, 7);
  EXPECT_EQ(e->rv, 7u);
  EXPECT_EQ(e->Object(), pod);
  const Json& v = e->view;
  EXPECT_EQ(v["metadata"]["labels"], pod["metadata"]["labels"]);
  EXPECT_EQ(v["metadata"]["ownerReferences"], pod["metadata"]["ownerReferences"]);
  EXPECT_FALSE(v["metadata"].contains("managedFields"));
  EXPECT_FALSE(v["metadata"].contains("annotations"));
  EXPECT_EQ(v["spec"]["nodeName"], "node-1");
  EXPECT_FALSE(v["spec"].contains("volumes"));
  EXPECT_EQ(v["spec"]["containers"], Json::parse(R"([{"name":"c","resources":{"requests":{"cpu":"1"}}}])"));
  EXPECT_EQ(v["status"], Json({{"phase", "Running"}}));
  const Json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}, {"data", {{"k", "v"}}}};
  EXPECT_FALSE(TrimmedView(cm).contains("data"));
  EXPECT_EQ(TrimmedView(cm)["metadata"], cm["metadata"]);
}

// Every built-in kind kube-sim serves is in the schema table: none escapes
// the undeclared-field checks for want of a schema.
TEST(BuiltinSchemas, EveryServedBuiltinKindHasASchema) {
  for (const ResourceType& t : BuiltinTypes()) {
    EXPECT_NE(FindKindSchema(t.GroupVersion(), t.kind), nullptr) << t.GroupVersion() << " " << t.kind;
  }
}

// As the API server's watch cache: an object whose labels take it out of a
// watch's selector is DELETED there (as it was, at the change's version),
// and one they take in is ADDED, live and when replayed from a version.
TEST_F(SimTest, LeavingOrEnteringASelectorIsDeletedOrAdded) {
  int code = 0;
  Json created = CallJson("POST", "/api/v1/namespaces/default/configmaps", ConfigMap("sel", "default", {{"tier", "a"}}),
                          {}, &code);
  ASSERT_EQ(code, 201);
  const std::string from = created["metadata"]["resourceVersion"];
  auto live = StartWatch("/api/v1/namespaces/default/configmaps", {{"labelSelector", "tier=a"}, {"resourceVersion", from}});
  Json out = ConfigMap("sel", "default", {{"tier", "b"}});
  Json left = CallJson("PUT", "/api/v1/namespaces/default/configmaps/sel", out, {}, &code);
  ASSERT_EQ(code, 200) << left.dump();
  Json back = CallJson("PUT", "/api/v1/namespaces/default/configmaps/sel", ConfigMap("sel", "default", {{"tier", "a"}}),
                       {}, &code);
  ASSERT_EQ(code, 200) << back.dump();
  auto check = [&](const std::vector<Json>& ev) {
    ASSERT_EQ(ev.size(), 2u) << Json(ev).dump();
    EXPECT_EQ(ev[0]["type"], "DELETED");
    EXPECT_EQ(ev[0]["object"]["metadata"]["labels"]["tier"], "a");  // as it was
    EXPECT_EQ(ev[0]["object"]["metadata"]["resourceVersion"], left["metadata"]["resourceVersion"]);
    EXPECT_EQ(ev[1]["type"], "ADDED");
    EXPECT_EQ(ev[1]["object"]["metadata"]["resourceVersion"], back["metadata"]["resourceVersion"]);
  };
  check(live->Events());
  auto replayed = StartWatch("/api/v1/namespaces/default/configmaps",
                             {{"labelSelector", "tier=a"}, {"resourceVersion", from}});
  check(replayed->Events());
  // A watch whose selector it never left sees two modifications.
  auto all = StartWatch("/api/v1/namespaces/default/configmaps", {{"resourceVersion", from}});
  auto ev = all->Events();
  ASSERT_EQ(ev.size(), 2u) << Json(ev).dump();
  EXPECT_EQ(ev[0]["type"], "MODIFIED");
  EXPECT_EQ(ev[1]["type"], "MODIFIED");
}

}  // namespace
}  // namespace eco::kubesim
