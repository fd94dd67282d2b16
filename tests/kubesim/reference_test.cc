// Replays the requests recorded from a real kube-apiserver v1.26.0
// (../shared/reference/kubernetes/answers.json) against kube-sim and compares
// the answers: status codes always; error bodies (Status objects, the plain
// "404 page not found") field by field and in the API server's field order.
// Skips when the recordings are not there (a clean clone in CI).
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kubesim/sim.h"

namespace eco::kubesim {
namespace {

using OJson = nlohmann::ordered_json;

#ifndef ECO_REFERENCE_DIR
#define ECO_REFERENCE_DIR ""
#endif

class ReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(ECO_REFERENCE_DIR) + "/answers.json";
    if (!std::filesystem::exists(path_)) GTEST_SKIP() << path_ << " is not on this machine";
    SimOptions o;
    // The recording needs a CRD not yet Established and a namespace still
    // Terminating while the cases run; neither changes here.
    o.crd_establish_delay = std::chrono::hours(1);
    o.namespace_terminate = std::chrono::hours(1);
    sim_ = Simulator::Create(DefaultFleet(2, "c"), o);
  }
  void TearDown() override {
    if (sim_) sim_->Shutdown();
  }

  HttpResponse Send(const std::string& cluster, const OJson& request) {
    HttpRequest req;
    req.method = request["method"];
    std::string path = request["path"];
    size_t q = path.find('?');
    if (q != std::string::npos) {
      std::stringstream query(path.substr(q + 1));
      std::string kv;
      while (std::getline(query, kv, '&')) {
        size_t eq = kv.find('=');
        req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      }
      path.resize(q);
    }
    req.path = "/clusters/" + cluster + path;
    req.headers["authorization"] = "Bearer " + sim_->Token(cluster);
    if (request["contentType"].is_string()) req.headers["content-type"] = request["contentType"];
    if (request["body"].is_string())
      req.body = request["body"];
    else if (!request["body"].is_null())
      req.body = request["body"].dump();
    return sim_->Handle(req).response;
  }

  std::string path_;
  std::unique_ptr<Simulator> sim_;
};

TEST_F(ReferenceTest, AnswersAsTheRecordedApiServer) {
  std::ifstream in(path_);
  OJson doc = OJson::parse(in);
  int compared = 0;
  for (const OJson& c : doc["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name + ": " + c["why"].get<std::string>());
    // The namespace is still terminating here (the delay is an hour): the
    // missing namespace is asked of the other cluster, which never had it.
    HttpResponse r = Send(name == "create-in-missing-ns" ? "c2" : "c1", c["request"]);
    EXPECT_EQ(r.status, c["status"].get<int>()) << r.body;
    const OJson& want = c["response"];
    if (want.is_string()) {
      EXPECT_EQ(r.body, want.get<std::string>());
      EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
      ++compared;
      continue;
    }
    OJson got = OJson::parse(r.body, nullptr, false);
    ASSERT_FALSE(got.is_discarded()) << r.body;
    if (want.value("kind", "") == "Status") {
      if (name == "ssa-immutable-job-template") {
        // The real message prints the Go value, pointer addresses and the
        // server-generated controller-uid included: compare its frame.
        const std::string msg = got.value("message", "");
        const std::string head =
            "Job.batch \"j\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{";
        EXPECT_EQ(msg.rfind(head, 0), 0u) << msg;
        EXPECT_NE(msg.find("Image:\"busybox:1.37\""), std::string::npos) << msg;
        EXPECT_EQ(msg.substr(msg.size() - 22), "}}: field is immutable") << msg;
        OJson w = want, g = got;
        w.erase("message");
        g.erase("message");
        w["details"]["causes"][0].erase("message");
        g["details"]["causes"][0].erase("message");
        EXPECT_EQ(g.dump(), w.dump());
      } else {
        EXPECT_EQ(got.dump(), want.dump());
      }
      ++compared;
      continue;
    }
    // Objects: uids, times and defaults differ; the identity and what the
    // case is about must not.
    const OJson want_status = want.value("status", OJson());
    EXPECT_EQ(got["kind"], want["kind"]);
    EXPECT_EQ(got["metadata"]["name"], want["metadata"]["name"]);
    if (want_status.is_object() && want_status.contains("phase")) {
      EXPECT_EQ(got["status"]["phase"], want_status["phase"]);
    }
    EXPECT_EQ(got["metadata"].contains("deletionTimestamp"),
              want["metadata"].contains("deletionTimestamp"));
    if (name == "post-unknown-field") {
      EXPECT_FALSE(got["spec"].contains("replica"));
    }
    if (name == "crd-delete") {
      EXPECT_EQ(got["metadata"]["finalizers"], want["metadata"]["finalizers"]);
      EXPECT_EQ(got["status"]["conditions"].back().value("type", ""), "Terminating");
      EXPECT_EQ(got["status"]["conditions"].back().value("reason", ""), "InstanceDeletionPending");
    }
    if (name == "crd-create") {
      EXPECT_EQ(nlohmann::json::parse(got["status"].dump()), nlohmann::json::parse(want_status.dump()));
      EXPECT_EQ(got["spec"]["names"]["listKind"], want["spec"]["names"]["listKind"]);
    }
  }
  EXPECT_GE(compared, 12);
}

// The same server's OpenAPI v3 documents (openapi-v3/): kube-sim's must name
// the same schemas with the same structure; descriptions, defaults and
// paths may differ.
class OpenApiV3Reference : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(ECO_REFERENCE_DIR) + "/openapi-v3";
    if (!std::filesystem::exists(dir_ + "/index.json")) GTEST_SKIP() << dir_ << " is not on this machine";
    SimOptions o;
    o.crd_establish_delay = std::chrono::milliseconds(0);
    sim_ = Simulator::Create(DefaultFleet(1, "c"), o);
  }
  void TearDown() override {
    if (sim_) sim_->Shutdown();
  }

  static nlohmann::json ReadGz(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) return nullptr;
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    gzclose(f);
    return nlohmann::json::parse(text, nullptr, false);
  }

  HttpResponse Get(const std::string& path, const std::string& method = "GET", const std::string& body = "") {
    HttpRequest req;
    req.method = method;
    req.path = "/clusters/c1" + path;
    req.headers["authorization"] = "Bearer " + sim_->Token("c1");
    req.headers["content-type"] = "application/json";
    req.body = body;
    return sim_->Handle(req).response;
  }

  // What must match of a schema: property names, references, list and map
  // element structure, kinds, types and the list/map extensions.
  static nlohmann::json Shape(const nlohmann::json& s) {
    if (!s.is_object()) return s;
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : s.items()) {
      if (k == "properties") {
        for (const auto& [name, sub] : v.items()) out[k][name] = Shape(sub);
      } else if (k == "items" || k == "additionalProperties") {
        out[k] = Shape(v);
      } else if (k == "allOf" || k == "oneOf" || k == "anyOf") {
        for (const auto& sub : v) out[k].push_back(Shape(sub));
      } else if (k == "$ref" || k == "type" || k == "format" || k == "required" ||
                 k == "x-kubernetes-group-version-kind" || k.rfind("x-kubernetes-list-", 0) == 0 ||
                 k == "x-kubernetes-map-type" || k == "x-kubernetes-preserve-unknown-fields") {
        out[k] = v;
      }
    }
    return out;
  }

  // Every recorded schema has its twin in kube-sim's document, and no other.
  void ExpectSameSchemas(const std::string& recording, const std::string& path) {
    SCOPED_TRACE(path);
    nlohmann::json want = ReadGz(dir_ + "/" + recording);
    ASSERT_TRUE(want.is_object()) << recording;
    HttpResponse r = Get("/openapi/v3/" + path);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    nlohmann::json got = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_TRUE(got.is_object());
    EXPECT_EQ(got["openapi"], want["openapi"]);
    EXPECT_EQ(got["info"]["title"], want["info"]["title"]);
    const nlohmann::json& ws = want["components"]["schemas"];
    const nlohmann::json& gs = got["components"]["schemas"];
    for (const auto& [name, schema] : ws.items()) {
      ASSERT_TRUE(gs.contains(name)) << name;
      EXPECT_EQ(Shape(gs[name]), Shape(schema)) << name;
    }
    for (const auto& [name, _] : gs.items()) EXPECT_TRUE(ws.contains(name)) << name << " is not in the recording";
    EXPECT_GT(ws.size(), 10u);
  }

  std::string dir_;
  std::unique_ptr<Simulator> sim_;
};

TEST_F(OpenApiV3Reference, BuiltinDocumentsHaveTheRecordedSchemas) {
  ExpectSameSchemas("api__v1.json.gz", "api/v1");
  ExpectSameSchemas("apis__apps__v1.json.gz", "apis/apps/v1");
  // The index lists what the real one lists, for what kube-sim serves.
  std::ifstream in(dir_ + "/index.json");
  nlohmann::json want = nlohmann::json::parse(in);
  nlohmann::json got = nlohmann::json::parse(Get("/openapi/v3").body);
  for (const auto& [path, _] : got["paths"].items()) EXPECT_TRUE(want["paths"].contains(path)) << path;
  for (const char* path : {"api", "api/v1", "apis", "apis/apps", "apis/apps/v1", "version"}) {
    EXPECT_TRUE(got["paths"].contains(path)) << path;
  }
}

TEST_F(OpenApiV3Reference, CrdDocumentHasTheRecordedSchemas) {
  std::ifstream in(dir_ + "/example-crd.json");
  std::stringstream crd;
  crd << in.rdbuf();
  HttpResponse r = Get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", crd.str());
  ASSERT_EQ(r.status, 201) << r.body;
  nlohmann::json index = nlohmann::json::parse(Get("/openapi/v3").body);
  ASSERT_TRUE(index["paths"].contains("apis/example.eco.io/v1")) << index.dump();
  ExpectSameSchemas("apis__example.eco.io__v1.json.gz", "apis/example.eco.io/v1");
}

}  // namespace
}  // namespace eco::kubesim
