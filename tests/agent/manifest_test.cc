// The install manifest: parsed back with yaml-cpp and checked object by
// object, then applied to kube-sim (in process) by eco's client, which
// must accept every document as written (no field dropped).
#include "agent/manifest.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <functional>

#include "common/base64.h"
#include "embedded_kubesim.h"
#include "status_matchers.h"

namespace eco::agent {
namespace {

using nlohmann::json;

ManifestOptions Options() {
  ManifestOptions o;
  o.hub = "https://hub.example.com:9443";
  o.token = "boot.Zk3qT9-xY_1a/b+c=";
  return o;
}

// A plain scalar becomes what the API server's YAML decoder makes of it
// (bool, integer, null or string); a quoted one stays a string.
json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& v : n) a.push_back(ToJson(v));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      char* end = nullptr;
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end && *end == '\0') return v;
      return s;
    }
    default:
      return nullptr;
  }
}

std::vector<json> Documents(const std::string& yaml) {
  std::vector<json> out;
  for (const YAML::Node& doc : YAML::LoadAll(yaml)) {
    if (!doc.IsNull()) out.push_back(ToJson(doc));
  }
  return out;
}

// Every leaf of `want` is in `got` with the same value (lists element-wise).
void ExpectContained(const json& want, const json& got, const std::string& where) {
  if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << where;
    for (auto it = want.begin(); it != want.end(); ++it) {
      ASSERT_TRUE(got.contains(it.key())) << where << "." << it.key() << " dropped";
      ExpectContained(it.value(), got[it.key()], where + "." + it.key());
    }
  } else if (want.is_array()) {
    ASSERT_TRUE(got.is_array()) << where;
    ASSERT_EQ(want.size(), got.size()) << where;
    for (size_t i = 0; i < want.size(); ++i)
      ExpectContained(want[i], got[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(want, got) << where;
  }
}

const json& Find(const std::vector<json>& docs, const std::string& kind) {
  static const json kNone;
  for (const json& d : docs) {
    if (d.value("kind", "") == kind) return d;
  }
  ADD_FAILURE() << "no " << kind;
  return kNone;
}

TEST(AgentManifest, HoldsTheObjectsInApplyOrder) {
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(Options()));
  std::vector<json> docs = Documents(yaml);
  std::vector<std::string> kinds;
  for (const json& d : docs) kinds.push_back(d.value("kind", ""));
  EXPECT_EQ(kinds, (std::vector<std::string>{"Namespace", "ServiceAccount", "ClusterRole",
                                             "ClusterRoleBinding", "Role", "RoleBinding", "Secret",
                                             "Deployment"}));
  for (const json& d : docs) {
    EXPECT_EQ(d["metadata"]["labels"]["app.kubernetes.io/name"], "eco-agent") << d["kind"];
    const bool cluster_scoped =
        d["kind"] == "Namespace" || d["kind"] == "ClusterRole" || d["kind"] == "ClusterRoleBinding";
    if (!cluster_scoped) {
      EXPECT_EQ(d["metadata"]["namespace"], "eco-system") << d["kind"];
    }
  }
  EXPECT_EQ(Find(docs, "Namespace")["metadata"]["name"], "eco-system");
  EXPECT_EQ(Find(docs, "ServiceAccount")["metadata"]["name"], "eco-agent");
}

TEST(AgentManifest, GrantsEverythingClusterWideAndItsSecretsLocally) {
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(Options()));
  std::vector<json> docs = Documents(yaml);
  const json& role = Find(docs, "ClusterRole");
  EXPECT_EQ(role["metadata"]["name"], "eco-agent.eco-system");
  ASSERT_EQ(role["rules"].size(), 3u);
  EXPECT_EQ(role["rules"][0], json({{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}}));
  EXPECT_EQ(role["rules"][1]["verbs"], json({"get", "list", "watch"}));
  EXPECT_EQ(role["rules"][2]["verbs"], json({"get"}));
  EXPECT_NE(role["rules"][2]["nonResourceURLs"].dump().find("/apis/*"), std::string::npos);

  const json subject = {
      {"kind", "ServiceAccount"}, {"name", "eco-agent"}, {"namespace", "eco-system"}};
  const json& crb = Find(docs, "ClusterRoleBinding");
  EXPECT_EQ(crb["roleRef"]["kind"], "ClusterRole");
  EXPECT_EQ(crb["roleRef"]["name"], "eco-agent.eco-system");
  EXPECT_EQ(crb["subjects"], json::array({subject}));

  const json& local = Find(docs, "Role");
  ASSERT_EQ(local["rules"].size(), 1u);
  EXPECT_EQ(local["rules"][0]["resources"], json({"secrets"}));
  for (const char* verb : {"get", "list", "create", "patch", "delete"}) {
    EXPECT_NE(local["rules"][0]["verbs"].dump().find(verb), std::string::npos) << verb;
  }
  const json& rb = Find(docs, "RoleBinding");
  EXPECT_EQ(rb["roleRef"]["kind"], "Role");
  EXPECT_EQ(rb["roleRef"]["name"], local["metadata"]["name"]);
  EXPECT_EQ(rb["subjects"], json::array({subject}));

  // Each rule says why it is there.
  size_t rules = yaml.find("rules:");
  ASSERT_NE(rules, std::string::npos);
  for (const char* why : {"# Apply whatever the apps contain", "# Read what it applied",
                          "# Discovery", "# Read the bootstrap token"}) {
    EXPECT_NE(yaml.find(why), std::string::npos) << why;
  }
}

TEST(AgentManifest, TheSecretHoldsTheTokenAndTheDeploymentMountsIt) {
  const ManifestOptions o = Options();
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(o));
  EXPECT_EQ(yaml.find(o.token), std::string::npos) << "the token appears in clear";
  std::vector<json> docs = Documents(yaml);
  const json& secret = Find(docs, "Secret");
  EXPECT_EQ(secret["type"], "Opaque");
  ASSERT_OK_AND_ASSIGN(std::string token, Base64Decode(secret["data"]["token"].get<std::string>()));
  EXPECT_EQ(token, o.token);

  const json& dep = Find(docs, "Deployment");
  EXPECT_EQ(dep["spec"]["replicas"], 1);
  EXPECT_EQ(dep["spec"]["strategy"], json({{"type", "Recreate"}}));
  const json& pod = dep["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "eco-agent");
  EXPECT_EQ(pod["automountServiceAccountToken"], true);
  EXPECT_EQ(dep["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
            dep["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/instance"]);
  ASSERT_EQ(pod["containers"].size(), 1u);
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["image"], "eco:latest");
  EXPECT_EQ(c["command"], json({"eco", "agent", "--hub", o.hub, "--token-file", kTokenFilePath}));
  EXPECT_TRUE(c["resources"]["requests"].contains("cpu"));
  EXPECT_TRUE(c["resources"]["requests"].contains("memory"));
  EXPECT_TRUE(c["resources"]["limits"].contains("memory"));
  EXPECT_FALSE(c.contains("livenessProbe"));
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  ASSERT_EQ(c["volumeMounts"].size(), 1u);
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"].get<std::string>() + "/token", kTokenFilePath);
  ASSERT_EQ(pod["volumes"].size(), 1u);
  EXPECT_EQ(pod["volumes"][0]["name"], c["volumeMounts"][0]["name"]);
  EXPECT_EQ(pod["volumes"][0]["secret"]["secretName"], secret["metadata"]["name"]);
  EXPECT_EQ(pod["volumes"][0]["secret"]["defaultMode"], 0440);
}

TEST(AgentManifest, OptionsReachEveryObjectAndOddValuesStayStrings) {
  ManifestOptions o = Options();
  o.ns = "1234";  // a valid label that plain YAML would read as a number
  o.name = "edge-agent";
  o.image = "registry.example.com/eco/eco@sha256:0123";
  o.image_pull_policy = "Always";
  o.hub = "[fd00::1]:9443";
  o.token = "quote\"and\\backslash";
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(o));
  std::vector<json> docs = Documents(yaml);
  ASSERT_EQ(docs.size(), 8u);
  EXPECT_EQ(Find(docs, "Namespace")["metadata"]["name"], "1234");
  EXPECT_EQ(Find(docs, "ClusterRole")["metadata"]["name"], "edge-agent.1234");
  const json& c = Find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["image"], o.image);
  EXPECT_EQ(c["imagePullPolicy"], "Always");
  EXPECT_EQ(c["command"][3], o.hub);
  ASSERT_OK_AND_ASSIGN(std::string token,
                       Base64Decode(Find(docs, "Secret")["data"]["token"].get<std::string>()));
  EXPECT_EQ(token, o.token);
}

TEST(AgentManifest, RefusesBadInputWithAMessage) {
  struct Case {
    std::function<void(ManifestOptions&)> edit;
    std::string says;
  };
  const std::vector<Case> bad = {
      {[](ManifestOptions& o) { o.hub = ""; }, "hub is required"},
      {[](ManifestOptions& o) { o.hub = "ftp://hub:21"; }, "scheme"},
      {[](ManifestOptions& o) { o.hub = "hub.example.com"; }, "host:port"},
      {[](ManifestOptions& o) { o.hub = "hub:0"; }, "host:port"},
      {[](ManifestOptions& o) { o.hub = "hub:99999"; }, "host:port"},
      {[](ManifestOptions& o) { o.hub = "https://"; }, "no host"},
      {[](ManifestOptions& o) { o.hub = "fd00::1:9443"; }, "brackets"},
      {[](ManifestOptions& o) { o.hub = "https://hub\n:9443"; }, "control"},
      {[](ManifestOptions& o) { o.token = ""; }, "token is required"},
      {[](ManifestOptions& o) { o.token = "abc\ndef"; }, "line break"},
      {[](ManifestOptions& o) { o.ns = "Eco-System"; }, "DNS-1123"},
      {[](ManifestOptions& o) { o.ns = "-eco"; }, "DNS-1123"},
      {[](ManifestOptions& o) { o.ns = std::string(64, 'a'); }, "DNS-1123"},
      {[](ManifestOptions& o) { o.name = "eco_agent"; }, "DNS-1123"},
      {[](ManifestOptions& o) { o.image = ""; }, "image"},
      {[](ManifestOptions& o) { o.image = "eco latest"; }, "image"},
      {[](ManifestOptions& o) { o.image_pull_policy = "Sometimes"; }, "pull policy"},
  };
  for (const Case& c : bad) {
    ManifestOptions o = Options();
    c.edit(o);
    Result<std::string> got = AgentManifest(o);
    ASSERT_FALSE(got.ok()) << c.says;
    EXPECT_EQ(got.status().code(), Code::kInvalid) << c.says;
    EXPECT_NE(got.status().message().find(c.says), std::string::npos) << got.status().ToString();
    EXPECT_EQ(got.status().message().find(o.token.empty() ? "\x01" : o.token), std::string::npos)
        << "the message shows the token";
  }
  for (const char* hub : {"http://10.0.0.1:8080", "https://hub.example.com",
                          "https://hub:9443/agents", "hub:9443", "10.0.0.1:9443", "[::1]:9443"}) {
    ManifestOptions o = Options();
    o.hub = hub;
    EXPECT_OK(ValidateManifestOptions(o));
  }
}

TEST(AgentManifest, KubeSimAcceptsEveryDocumentAsWritten) {
  ASSERT_OK_AND_ASSIGN(auto sim, testing::EmbeddedKubeSim::Start());
  ASSERT_OK_AND_ASSIGN(auto client, sim->Client());
  const ManifestOptions o = Options();
  ASSERT_OK_AND_ASSIGN(std::string yaml, AgentManifest(o));
  for (const json& doc : Documents(yaml)) {
    const std::string what =
        doc["kind"].get<std::string>() + " " + doc["metadata"]["name"].get<std::string>();
    ASSERT_OK_AND_ASSIGN(json live, client->Apply(doc));
    ExpectContained(doc, live, what);
    const std::string ns = doc["metadata"].value("namespace", "");
    ASSERT_OK_AND_ASSIGN(
        json got, client->Get(doc["apiVersion"].get<std::string>(), doc["kind"].get<std::string>(),
                              ns, doc["metadata"]["name"].get<std::string>()));
    ExpectContained(doc, got, what + " (read back)");
  }
  ASSERT_OK_AND_ASSIGN(json secret,
                       client->Get("v1", "Secret", "eco-system", "eco-agent-bootstrap"));
  ASSERT_OK_AND_ASSIGN(std::string token, Base64Decode(secret["data"]["token"].get<std::string>()));
  EXPECT_EQ(token, o.token);
  // Applying again changes nothing (what `kubectl apply` of the same output does).
  for (const json& doc : Documents(yaml)) ASSERT_OK(client->Apply(doc).status());
}

}  // namespace
}  // namespace eco::agent
