#include "test_certs.h"
#include "api_env.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <mutex>

#include "etcd_fixture.h"

namespace eco::testing {

std::string StoreName(StoreKind kind) { return kind == StoreKind::kEtcd ? "etcd" : "sqlite"; }

struct Deployment::Store {
  std::unique_ptr<EtcdProcess> etcd;
};

Deployment::Deployment(StoreKind kind, const std::function<void(EcoOptions&)>& tweak)
    : store_(std::make_unique<Store>()) {
  EcoOptions opts;
  if (kind == StoreKind::kEtcd) {
    store_->etcd = std::make_unique<EtcdProcess>();
    if (std::string err = store_->etcd->Start(); !err.empty()) {
      error_ = "etcd did not start: " + err;
      return;
    }
    opts.store = EcoOptions::Store::kEtcd;
    opts.etcd_endpoint = store_->etcd->endpoint();
  }
  if (tweak) tweak(opts);
  server_ = std::make_unique<EcoServer>(opts);
}

Deployment::~Deployment() {
  // eco first: it must not see its store vanish while still serving.
  server_.reset();
  store_.reset();
}

std::string Deployment::error() const {
  if (!error_.empty()) return error_;
  if (!server_) return "no server";
  return server_->error();
}

Deployment& SharedDeployment(StoreKind kind) {
  static std::mutex mu;
  static std::map<StoreKind, std::unique_ptr<Deployment>> shared;
  std::lock_guard<std::mutex> lock(mu);
  auto& d = shared[kind];
  if (!d) d = std::make_unique<Deployment>(kind);
  return *d;
}

void ApiTest::SetUp() {
  deployment_ = &SharedDeployment(GetParam());
  // A server that died under an earlier case is a finding of that case;
  // restart it so that the remaining cases still run.
  if (deployment_->ready() && !server().running()) {
    ADD_FAILURE() << "shared eco server (" << StoreName(GetParam())
                  << ") had exited before this test; log tail:\n"
                  << server().LogTail();
    server().Restart();
  }
  ASSERT_TRUE(deployment_->ready()) << deployment_->error();
  client_ = std::make_unique<EcoClient>(server().port());
}

std::string ApiTest::Name(const std::string& base) {
  static std::atomic<int> counter{0};
  return base + "-" + std::to_string(++counter);
}

json ApiTest::MustCreate(const std::string& path, const json& body) {
  HttpResponse r = c().PostJson(path, body);
  EXPECT_TRUE(HasStatus(r, 201)) << "POST " << path << " " << body.dump();
  return r.status == 201 ? r.json() : json::object();
}

json ApiTest::MustUpload(const std::string& path, const json& metadata, const std::string& file) {
  HttpResponse r = c().PostMultipart(path, metadata.dump(), file);
  EXPECT_TRUE(HasStatus(r, 201)) << "POST multipart " << path << " " << metadata.dump();
  return r.status == 201 ? r.json() : json::object();
}

json ApiTest::MustGet(const std::string& path) {
  HttpResponse r = c().Get(path, kAcceptJson);
  EXPECT_TRUE(HasStatus(r, 200)) << "GET " << path;
  return r.status == 200 ? r.json() : json::object();
}

void ApiTest::MustDelete(const std::string& path) {
  HttpResponse r = c().Delete(path);
  EXPECT_TRUE(HasStatus(r, 204)) << "DELETE " << path;
}

std::string ApiTest::MakeProject() {
  std::string name = Name("proj");
  MustCreate("/v2/projects", Meta(name));
  return "/v2/projects/" + name;
}

std::string ApiTest::MakeCompositeApp(const std::string& project_path, const std::string& version) {
  std::string name = Name("ca");
  MustCreate(project_path + "/composite-apps", Meta(name, {{"compositeAppVersion", version}}));
  return project_path + "/composite-apps/" + name + "/" + version;
}

std::string ApiTest::MakeApp(const std::string& ca_path, const std::string& app) {
  MustUpload(ca_path + "/apps", Meta(app), ChartTgz(app));
  return ca_path + "/apps/" + app;
}

std::string ApiTest::MakeCompositeProfile(const std::string& ca_path) {
  std::string name = Name("cprof");
  MustCreate(ca_path + "/composite-profiles", Meta(name));
  return ca_path + "/composite-profiles/" + name;
}

std::string ApiTest::MakeDig(const std::string& ca_path, const std::string& composite_profile,
                             const std::string& logical_cloud) {
  std::string name = Name("dig");
  MustCreate(ca_path + "/deployment-intent-groups",
             Meta(name, {{"compositeProfile", composite_profile},
                         {"version", "r1"},
                         {"logicalCloud", logical_cloud},
                         {"overrideValues", json::array()}}));
  return ca_path + "/deployment-intent-groups/" + name;
}

std::string ApiTest::MakeProvider() {
  std::string name = Name("prov");
  MustCreate("/v2/cluster-providers", Meta(name));
  return "/v2/cluster-providers/" + name;
}

std::string ApiTest::MakeCluster(const std::string& provider_path, const std::string& cluster) {
  MustUpload(provider_path + "/clusters", Meta(cluster), Kubeconfig(cluster));
  return provider_path + "/clusters/" + cluster;
}

json Meta(const std::string& name, const json& spec) {
  json j = {{"metadata", {{"name", name}}}};
  if (!spec.is_null()) j["spec"] = spec;
  return j;
}

std::string Kubeconfig(const std::string& name) {
  // A real certificate: uploads with certificate data OpenSSL cannot read are refused.
  static const std::string ca = k8s::testing::Base64(k8s::testing::MakeCa("api-test-ca").cert_pem);
  return "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
         "    certificate-authority-data: " + ca + "\n"
         "    server: https://" +
         name + ".example.test:6443\n  name: " + name +
         "\ncontexts:\n- context:\n    cluster: " + name + "\n    user: admin\n  name: " + name +
         "\ncurrent-context: " + name + "\nusers:\n- name: admin\n  user:\n    token: t0k3n-" +
         name + "\n";
}

std::string LastSegment(const std::string& path) { return path.substr(path.rfind('/') + 1); }

namespace {
std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}
}  // namespace

::testing::AssertionResult HasStatus(const HttpResponse& r, int status) {
  if (r.status == status) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << status << ", got " << r.Describe();
}

::testing::AssertionResult IsError(const HttpResponse& r, int status, std::string_view substr) {
  if (r.status != status) {
    return ::testing::AssertionFailure() << "expected error " << status << ", got " << r.Describe();
  }
  if (Lower(r.content_type()).rfind("application/json", 0) != 0) {
    return ::testing::AssertionFailure()
           << "error " << status << " without Content-Type application/json: " << r.Describe();
  }
  json j = r.json();
  if (!j.is_object() || !j.contains("code") || !j["code"].is_number_integer() ||
      j["code"].get<int>() != status) {
    return ::testing::AssertionFailure()
           << "error body lacks \"code\":" << status << ": " << r.Describe();
  }
  if (!j.contains("message") || !j["message"].is_string() ||
      j["message"].get<std::string>().empty()) {
    return ::testing::AssertionFailure() << "error body lacks a message: " << r.Describe();
  }
  if (!substr.empty() && Lower(j["message"].get<std::string>()).find(Lower(std::string(substr))) ==
                             std::string::npos) {
    return ::testing::AssertionFailure()
           << "error message does not mention \"" << substr << "\": " << r.Describe();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsJsonArray(const HttpResponse& r, size_t expected_size) {
  if (r.status != 200) return ::testing::AssertionFailure() << "expected 200, got " << r.Describe();
  json j = r.json();
  if (!j.is_array()) return ::testing::AssertionFailure() << "not a JSON array: " << r.Describe();
  if (j.size() != expected_size) {
    return ::testing::AssertionFailure() << "array of " << j.size() << " items, expected "
                                         << expected_size << ": " << r.Describe();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult HasFullMetadata(const json& obj, const std::string& name) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) {
    return ::testing::AssertionFailure() << "no metadata object in " << obj.dump();
  }
  const json& m = obj["metadata"];
  for (const char* k : {"name", "description", "userData1", "userData2"}) {
    if (!m.contains(k) || !m[k].is_string()) {
      return ::testing::AssertionFailure() << "metadata." << k << " missing in " << obj.dump();
    }
  }
  if (m["name"] != name) {
    return ::testing::AssertionFailure() << "metadata.name is not " << name << ": " << obj.dump();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace eco::testing
