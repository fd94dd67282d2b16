// GET /v2/openapi.json describes every route the API serves, and the route
// reference in docs/api-routes.md is the one it describes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "api/api.h"
#include "api_test_fixture.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::api {
namespace {

using nlohmann::json;

// Reuses ApiTest's API over a fresh store (api_test.cc, same binary).
class OpenApiTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    Response out = Get("/v2/openapi.json");
    ASSERT_EQ(out.status, 200) << out.body;
    doc_ = json::parse(out.body, nullptr, false);
    ASSERT_TRUE(doc_.is_object()) << out.body.substr(0, 300);
  }

  static std::string Lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  const json& Op(const std::string& method, const std::string& path) {
    static const json none;
    const json& paths = doc_["paths"];
    if (!paths.contains(path) || !paths[path].contains(Lower(method))) return none;
    return paths[path][Lower(method)];
  }

  json doc_;
};

TEST_F(OpenApiTest, DescribesEveryRouteWithItsPathParameters) {
  EXPECT_EQ(doc_.value("openapi", ""), "3.0.3");
  const auto routes = api_->Routes();
  ASSERT_GT(routes.size(), 100u);
  std::set<std::string> ids;
  for (const std::string& r : routes) {
    const std::string method = r.substr(0, r.find(' ')), path = r.substr(r.find(' ') + 1);
    const json& op = Op(method, path);
    ASSERT_TRUE(op.is_object()) << r << " is not described";
    EXPECT_TRUE(ids.insert(op.value("operationId", "")).second) << r << ": operationId not unique";
    EXPECT_FALSE(op.value("summary", "").empty()) << r;
    EXPECT_TRUE(op.contains("responses")) << r;
    std::set<std::string> declared;
    for (const auto& p : op.value("parameters", json::array())) {
      if (p.value("in", "") == "path") declared.insert(p.value("name", ""));
    }
    std::set<std::string> in_path;
    const std::regex var(R"(\{([^}]+)\})");
    for (std::sregex_iterator it(path.begin(), path.end(), var), end; it != end; ++it) in_path.insert((*it)[1]);
    EXPECT_EQ(declared, in_path) << r;
  }
  // Nothing described that is not served (beyond the HTTP server's own three).
  size_t described = 0;
  for (const auto& [path, ops] : doc_["paths"].items()) described += ops.size();
  EXPECT_EQ(described, routes.size() + 4);
  EXPECT_TRUE(Op("GET", "/v2/openapi.json").is_object());
}

TEST_F(OpenApiTest, BodiesAndAnswersFollowTheResource) {
  const json& cluster = Op("POST", "/v2/cluster-providers/{clusterProvider}/clusters");
  ASSERT_TRUE(cluster.is_object());
  const json& mp = cluster["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"];
  EXPECT_EQ(mp["file"].value("format", ""), "binary");
  EXPECT_TRUE(cluster["responses"].contains("201"));
  const json& project = Op("POST", "/v2/projects");
  EXPECT_EQ(project["requestBody"]["content"]["application/json"]["schema"].value("$ref", ""),
            "#/components/schemas/Resource");
  const json& label = Op("POST", "/v2/cluster-providers/{clusterProvider}/clusters/{cluster}/labels");
  EXPECT_EQ(label["requestBody"]["content"]["application/json"]["schema"].value("$ref", ""),
            "#/components/schemas/Label");
  const std::string dig =
      "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/"
      "{deploymentIntentGroup}";
  EXPECT_TRUE(Op("POST", dig + "/instantiate")["responses"].contains("202"));
  EXPECT_TRUE(Op("DELETE", dig)["responses"].contains("204"));
  bool has_status_query = false;
  for (const auto& p : Op("GET", dig + "/status")["parameters"]) has_status_query |= p.value("name", "") == "status";
  EXPECT_TRUE(has_status_query);
}

TEST_F(OpenApiTest, DescribesAgentClusterRoutes) {
  const std::string cl = "/v2/cluster-providers/{clusterProvider}/clusters";
  // An agent cluster registers with a plain JSON body.
  EXPECT_EQ(Op("POST", cl)["requestBody"]["content"]["application/json"]["schema"].value("$ref", ""),
            "#/components/schemas/Resource");
  const json& boot = Op("POST", cl + "/{cluster}/agent-bootstrap");
  ASSERT_TRUE(boot.is_object());
  EXPECT_EQ(boot["responses"]["201"]["content"]["application/json"]["schema"].value("$ref", ""),
            "#/components/schemas/AgentBootstrap");
  EXPECT_EQ(doc_["components"]["schemas"]["AgentBootstrap"]["required"], json({"token", "hub", "expires"}));
  EXPECT_TRUE(Op("POST", cl + "/{cluster}/agent-revoke")["responses"].contains("204"));
}

// The route reference in the docs: one line per operation, from this document.
std::string RouteTable(const json& doc) {
  std::ostringstream out;
  out << "# API routes\n\n"
      << "Every route eco serves, as `GET /v2/openapi.json` describes it (generated;\n"
      << "[api.md](api.md) explains bodies, errors and EMCO differences). Regenerate\n"
      << "with `ECO_UPDATE_DOCS=1 build/bin/api_tests --gtest_filter='OpenApi*'`.\n\n"
      << "| method | path | what |\n|---|---|---|\n";
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const char* m : {"get", "post", "put", "delete"}) {
      if (!ops.contains(m)) continue;
      std::string method = m;
      for (auto& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out << "| " << method << " | `" << path << "` | " << ops[m].value("summary", "") << " |\n";
    }
  }
  return out.str();
}

TEST_F(OpenApiTest, DocsRouteReferenceIsGeneratedFromIt) {
  const std::string file = std::string(ECO_SOURCE_DIR) + "/docs/api-routes.md";
  const std::string want = RouteTable(doc_);
  if (const char* u = std::getenv("ECO_UPDATE_DOCS"); u && std::string(u) == "1") {
    std::ofstream(file, std::ios::binary) << want;
  }
  EXPECT_EQ(eco::testing::ReadFile(file), want)
      << "docs/api-routes.md is out of date; regenerate it with ECO_UPDATE_DOCS=1";
}

}  // namespace
}  // namespace eco::api
