#include "ecoctl/yaml_json.h"

#include <gtest/gtest.h>

namespace eco::ecoctl {
namespace {

using nlohmann::json;

TEST(JsonToYaml, RoundTripsTypes) {
  json j = json::parse(R"({"metadata":{"name":"p1","description":""},
    "spec":{"port":9031,"level":"0","on":true,"flag":"true","nil":null,"ratio":1.5,
            "list":["a","123"],"empty":{}}})");
  std::string y = JsonToYaml(j);
  auto back = ParseYamlDocuments(y);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << y;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0], j) << y;
}

TEST(JsonToYaml, EmptyContainersStayOnTheirKeyLine) {
  EXPECT_EQ(JsonToYaml(json::parse(R"({"spec":{},"list":[]})")), "list: []\nspec: {}\n");
}

TEST(ParseYamlValues, MustBeAMapping) {
  EXPECT_TRUE(ParseYamlValues("").ok());
  EXPECT_FALSE(ParseYamlValues("- a\n").ok());
  auto v = ParseYamlValues("a: {b: 1}\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["a"]["b"], 1);
}

TEST(MergeValues, DeepMergeLaterWins) {
  json base = json::parse(R"({"a":{"x":1,"y":2},"b":1})");
  MergeValues(base, json::parse(R"({"a":{"y":3},"b":{"z":1}})"));
  EXPECT_EQ(base, json::parse(R"({"a":{"x":1,"y":3},"b":{"z":1}})"));
}

}  // namespace
}  // namespace eco::ecoctl
