// Generic placement: allOf/anyOf by name and label, EMCO's group numbers,
// the logical cloud's fence.
#include "scheduler/placement.h"

#include <gtest/gtest.h>

namespace eco::scheduler {
namespace {

using nlohmann::json;

ClustersOf Fleet() {
  return [](const std::string& provider) -> Result<std::vector<catalog::ClusterInfo>> {
    if (provider == "prov") {
      return std::vector<catalog::ClusterInfo>{{"prov", "a", {"east"}, {}},
                                               {"prov", "b", {"east", "gpu"}, {}},
                                               {"prov", "c", {"west"}, {}},
                                               {"prov", "d", {"west"}, {}}};
    }
    if (provider == "prov2") return std::vector<catalog::ClusterInfo>{{"prov2", "x", {"east"}, {}}};
    return std::vector<catalog::ClusterInfo>{};
  };
}

const std::set<std::string> kAll = {"prov+a", "prov+b", "prov+c", "prov+d", "prov2+x"};

std::vector<std::string> Summary(const std::vector<appcontext::ClusterRef>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(c.key() + "/" + std::to_string(c.group) + (c.mandatory ? "m" : "o"));
  return out;
}

json Name(const std::string& p, const std::string& c) { return {{"clusterProvider", p}, {"cluster", c}}; }
json Label(const std::string& p, const std::string& l) { return {{"clusterProvider", p}, {"clusterLabel", l}}; }

TEST(PlacementTest, AllOfNamesAndLabelsAreMandatoryGroupsOfOne) {
  json intent = {{"allOf", {Name("prov", "c"), Label("prov", "east")}}};
  auto r = ResolvePlacement("web", intent, kAll, Fleet());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Summary(*r), (std::vector<std::string>{"prov+c/1m", "prov+a/2m", "prov+b/3m"}));
}

TEST(PlacementTest, NestedAndTopLevelAnyOfAreOneOptionalGroupEach) {
  json intent = {{"allOf", {Name("prov", "a"), {{"anyOf", {Label("prov", "west"), Name("prov2", "x")}}}}},
                 {"anyOf", {Label("prov", "gpu")}}};
  auto r = ResolvePlacement("web", intent, kAll, Fleet());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Summary(*r),
            (std::vector<std::string>{"prov+a/1m", "prov+c/2o", "prov+d/2o", "prov2+x/2o", "prov+b/3o"}));
}

TEST(PlacementTest, AMandatoryPlaceWinsOverAnOptionalOne) {
  json intent = {{"anyOf", {Label("prov", "east")}}, {"allOf", {Name("prov", "a")}}};
  auto r = ResolvePlacement("web", intent, kAll, Fleet());
  ASSERT_TRUE(r.ok());
  // allOf is resolved first (group 1); the anyOf group keeps only b.
  EXPECT_EQ(Summary(*r), (std::vector<std::string>{"prov+a/1m", "prov+b/2o"}));
}

TEST(PlacementTest, LabelsOnlyPickClustersOfTheLogicalCloud) {
  json intent = {{"allOf", {Label("prov", "west")}}};
  auto r = ResolvePlacement("web", intent, {"prov+d"}, Fleet());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Summary(*r), (std::vector<std::string>{"prov+d/1m"}));
}

TEST(PlacementTest, ANamedClusterOutsideTheLogicalCloudIsRefused) {
  json intent = {{"anyOf", {Name("prov", "a")}}};
  auto r = ResolvePlacement("web", intent, {"prov+b"}, Fleet());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
  EXPECT_NE(r.status().message().find("not in the logical cloud"), std::string::npos) << r.status().message();
}

TEST(PlacementTest, AnUnknownClusterIsRefused) {
  json intent = {{"allOf", {Name("prov", "nope")}}};
  auto r = ResolvePlacement("web", intent, kAll, Fleet());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not registered"), std::string::npos);
}

TEST(PlacementTest, NothingPlacedIsAnError) {
  json intent = {{"allOf", {Label("prov", "nolabel")}}};
  auto r = ResolvePlacement("web", intent, kAll, Fleet());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalid);
  EXPECT_NE(r.status().message().find("web"), std::string::npos);
}

TEST(PlacementTest, MalformedTermsAreRefused) {
  for (const json& t : {json{{"cluster", "a"}}, json{{"clusterProvider", "prov"}},
                        json{{"clusterProvider", "prov"}, {"cluster", "a"}, {"clusterLabel", "east"}}}) {
    auto r = ResolvePlacement("web", json{{"allOf", {t}}}, kAll, Fleet());
    EXPECT_FALSE(r.ok()) << t.dump();
  }
}

}  // namespace
}  // namespace eco::scheduler
