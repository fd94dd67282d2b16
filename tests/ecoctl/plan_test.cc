#include "ecoctl/plan.h"

#include <gtest/gtest.h>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

Document Doc(int index, std::string anchor, json body, std::string file = "") {
  Document d;
  d.source = "r.yaml";
  d.index = index;
  d.anchor = std::move(anchor);
  d.action = ActionVerb(d.anchor);
  d.body = std::move(body);
  d.file = std::move(file);
  return d;
}

TEST(ResourcePath, NameLabelAndCompositeAppVersion) {
  EXPECT_EQ(*ResourcePath(Doc(1, "projects", {{"metadata", {{"name", "p1"}}}})), "/v2/projects/p1");
  EXPECT_EQ(
      *ResourcePath(Doc(1, "cluster-providers/cp/clusters/c1/labels", {{"clusterLabel", "edge"}})),
      "/v2/cluster-providers/cp/clusters/c1/labels/edge");
  EXPECT_EQ(*ResourcePath(
                Doc(1, "projects/p1/composite-apps",
                    {{"metadata", {{"name", "ca"}}}, {"spec", {{"compositeAppVersion", "v1"}}}})),
            "/v2/projects/p1/composite-apps/ca/v1");
  // Names are escaped as path segments.
  EXPECT_EQ(*ResourcePath(Doc(1, "projects", {{"metadata", {{"name", "a b/c"}}}})),
            "/v2/projects/a%20b%2Fc");
}

TEST(ResourcePath, Unaddressable) {
  EXPECT_FALSE(ResourcePath(Doc(1, "projects", json::object())).ok());
  auto no_version =
      ResourcePath(Doc(1, "projects/p1/composite-apps", {{"metadata", {{"name", "ca"}}}}));
  ASSERT_FALSE(no_version.ok());
  EXPECT_NE(no_version.status().message().find("compositeAppVersion"), std::string::npos);
  EXPECT_FALSE(
      ResourcePath(Doc(1, "projects/p/composite-apps/ca/v1/deployment-intent-groups/d/approve",
                       json::object()))
          .ok());
}

TEST(Plan, ApplyPostsJsonAndPreparesPut) {
  json body = {{"metadata", {{"name", "p1"}}}};
  auto steps = Plan({Doc(1, "projects", body)}, Verb::kApply);
  ASSERT_TRUE(steps.ok());
  const PlanStep& s = (*steps)[0];
  EXPECT_EQ(s.label, "#1");
  EXPECT_EQ(s.request.method, "POST");
  EXPECT_EQ(s.request.path, "/v2/projects");
  EXPECT_EQ(s.request.content_type, "application/json");
  EXPECT_EQ(json::parse(s.request.body), body);
  ASSERT_TRUE(s.replace.has_value());
  EXPECT_EQ(s.replace->method, "PUT");
  EXPECT_EQ(s.replace->path, "/v2/projects/p1");
  EXPECT_EQ(json::parse(s.replace->body), body);
  EXPECT_EQ(s.resource_path, "/v2/projects/p1");
}

TEST(Plan, CompositeAppPutUrlHasVersion) {
  auto steps =
      Plan({Doc(1, "projects/p1/composite-apps",
                {{"metadata", {{"name", "ca"}}}, {"spec", {{"compositeAppVersion", "v2"}}}})},
           Verb::kApply);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].replace->path, "/v2/projects/p1/composite-apps/ca/v2");
}

TEST(Plan, LabelPutUrlUsesClusterLabel) {
  auto steps = Plan({Doc(1, "cluster-providers/cp/clusters/c1/labels", {{"clusterLabel", "edge"}})},
                    Verb::kApply);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].request.path, "/v2/cluster-providers/cp/clusters/c1/labels");
  EXPECT_EQ((*steps)[0].replace->path, "/v2/cluster-providers/cp/clusters/c1/labels/edge");
}

TEST(Plan, FileMakesMultipart) {
  auto steps = Plan({Doc(1, "cluster-providers/cp/clusters", {{"metadata", {{"name", "c1"}}}},
                         "/tmp/x/kubeconfig")},
                    Verb::kApply);
  ASSERT_TRUE(steps.ok());
  const HttpRequest& r = (*steps)[0].request;
  ASSERT_TRUE(r.multipart());
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(r.parts[0].name, "metadata");
  EXPECT_EQ(json::parse(r.parts[0].content), json({{"metadata", {{"name", "c1"}}}}));
  EXPECT_TRUE(r.parts[0].filename.empty());  // a plain form value, as EMCO requires
  EXPECT_EQ(r.parts[1].name, "file");
  EXPECT_EQ(r.parts[1].file_path, "/tmp/x/kubeconfig");
  EXPECT_EQ(r.parts[1].filename, "kubeconfig");
  EXPECT_TRUE(r.body.empty());
  EXPECT_TRUE((*steps)[0].replace->multipart());
  EXPECT_EQ((*steps)[0].file, "/tmp/x/kubeconfig");
}

TEST(Plan, FilesListMakesFilesParts) {
  Document d = Doc(1, "projects/p/x/customizations", {{"metadata", {{"name", "c"}}}});
  d.files = {"/a/one.json", "/a/two.json"};
  auto steps = Plan({d}, Verb::kApply);
  ASSERT_TRUE(steps.ok());
  const auto& parts = (*steps)[0].request.parts;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].name, "files");
  EXPECT_EQ(parts[2].filename, "two.json");
  EXPECT_TRUE((*steps)[0].has_files);
}

TEST(Plan, ActionDocuments) {
  const std::string dig = "projects/p/composite-apps/ca/v1/deployment-intent-groups/d/";
  std::vector<Document> docs = {
      Doc(1, dig + "approve", json::object()),
      Doc(2, dig + "rollback", {{"spec", {{"revision", "1"}}}}),
      Doc(3, dig + "status?output=summary", json::object()),
  };
  auto apply = Plan(docs, Verb::kApply);
  ASSERT_TRUE(apply.ok());
  EXPECT_EQ((*apply)[0].request.method, "POST");
  EXPECT_EQ((*apply)[0].request.path, "/v2/" + dig + "approve");
  EXPECT_TRUE((*apply)[0].request.body.empty());
  EXPECT_TRUE((*apply)[0].request.content_type.empty());
  EXPECT_FALSE((*apply)[0].replace.has_value());
  EXPECT_EQ(json::parse((*apply)[1].request.body), docs[1].body);
  EXPECT_EQ((*apply)[2].request.method, "GET");
  EXPECT_TRUE((*apply)[2].query);

  auto get = Plan(docs, Verb::kGet);
  ASSERT_TRUE(get.ok());
  EXPECT_TRUE((*get)[0].skip);
  EXPECT_TRUE((*get)[1].skip);
  EXPECT_FALSE((*get)[2].skip);  // status is a read
  EXPECT_EQ((*get)[2].request.path, "/v2/" + dig + "status?output=summary");

  auto del = Plan(docs, Verb::kDelete);
  ASSERT_TRUE(del.ok());
  for (const auto& s : *del) EXPECT_TRUE(s.skip) << s.label;
}

TEST(Plan, GetAndDeleteAddressTheResource) {
  std::vector<Document> docs = {
      Doc(1, "projects", {{"metadata", {{"name", "p1"}}}}),
      Doc(2, "projects/p1/composite-apps",
          {{"metadata", {{"name", "ca"}}}, {"spec", {{"compositeAppVersion", "v1"}}}}),
      Doc(3, "projects/p1/composite-apps/ca/v1/apps", {{"metadata", {{"name", "web"}}}}, "/x.tgz"),
  };
  auto get = Plan(docs, Verb::kGet);
  ASSERT_TRUE(get.ok());
  EXPECT_EQ((*get)[2].request.method, "GET");
  EXPECT_EQ((*get)[2].request.path, "/v2/projects/p1/composite-apps/ca/v1/apps/web");
  EXPECT_EQ((*get)[2].request.accept, "application/json");  // EMCO answers 406 without it

  auto del = Plan(docs, Verb::kDelete);
  ASSERT_TRUE(del.ok());
  ASSERT_EQ(del->size(), 3u);
  EXPECT_EQ((*del)[0].label, "#3");
  EXPECT_EQ((*del)[0].request.method, "DELETE");
  EXPECT_EQ((*del)[0].request.path, "/v2/projects/p1/composite-apps/ca/v1/apps/web");
  EXPECT_EQ((*del)[1].request.path, "/v2/projects/p1/composite-apps/ca/v1");
  EXPECT_EQ((*del)[2].request.path, "/v2/projects/p1");
}

TEST(Plan, UnaddressableDocumentsFailGetButNotApply) {
  std::vector<Document> docs = {Doc(4, "projects", {{"spec", json::object()}})};
  auto apply = Plan(docs, Verb::kApply);
  ASSERT_TRUE(apply.ok());
  EXPECT_FALSE((*apply)[0].replace.has_value());
  auto get = Plan(docs, Verb::kGet);
  ASSERT_FALSE(get.ok());
  EXPECT_NE(get.status().message().find("document 4 of r.yaml: no metadata.name"),
            std::string::npos)
      << get.status().message();
}

TEST(Plan, RawAnchors) {
  auto d = CommandLineDocument(
      "projects/p1/composite-apps/ca/v1/deployment-intent-groups/d/instantiate");
  ASSERT_TRUE(d.ok());
  auto apply = Plan({*d}, Verb::kApply);
  ASSERT_TRUE(apply.ok());
  EXPECT_EQ((*apply)[0].request.method, "POST");
  EXPECT_TRUE((*apply)[0].request.body.empty());

  auto p = CommandLineDocument("projects/p1");
  auto get = Plan({*p}, Verb::kGet);
  EXPECT_EQ((*get)[0].request.method, "GET");
  EXPECT_EQ((*get)[0].request.path, "/v2/projects/p1");
  auto del = Plan({*p}, Verb::kDelete);
  EXPECT_EQ((*del)[0].request.method, "DELETE");
  EXPECT_EQ((*del)[0].request.path, "/v2/projects/p1");
}

TEST(Plan, LabelsCarrySourceWhenAsked) {
  auto steps = Plan({Doc(2, "projects", {{"metadata", {{"name", "p"}}}})}, Verb::kApply, true);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ((*steps)[0].label, "r.yaml#2");
}

}  // namespace
}  // namespace eco::ecoctl
