// The key layout of what the API stores. The strings are the stored format:
// a change here is a change of every existing store.
#include <gtest/gtest.h>

#include "catalog/catalog.h"

namespace eco::catalog {
namespace {

TEST(CatalogKeys, LayoutIsTheStoredOne) {
  EXPECT_EQ(ObjectKey("project", {"p"}), "/eco/r/project/p");
  EXPECT_EQ(ListPrefix("clusterLabel", {"prov"}), "/eco/r/clusterLabel/prov/");
  EXPECT_EQ(ListPrefix("project", {}), "/eco/r/project/");
  EXPECT_EQ(FileKey("cluster", {"prov", "c1"}), "/eco/f/cluster/prov/c1");
  EXPECT_EQ(FilePrefix("cluster"), "/eco/f/cluster/");
  EXPECT_EQ(StateKey("logicalCloud", {"p", "lc"}), "/eco/s/logicalCloud/p/lc");
  EXPECT_EQ(StatePrefix("logicalCloud"), "/eco/s/logicalCloud/");
  EXPECT_EQ(StatePrefix(), "/eco/s/");
  EXPECT_EQ(ResourceId("compositeApp", {"p", "ca", "v1"}), "compositeApp/p/ca/v1");
  EXPECT_EQ(GuardKey("project", {"p"}), "/eco/g/project/p");
  EXPECT_EQ(RefPrefix("cluster", {"prov", "c1"}), "/eco/ref/cluster/prov/c1|");
  EXPECT_EQ(RefKey("cluster", {"prov", "c1"}, "clusterReference", {"p", "lc", "r"}),
            "/eco/ref/cluster/prov/c1|clusterReference/p/lc/r");
  EXPECT_EQ(UniqueKey("appProfile", "p/ca/v1/prof/app"), "/eco/u/appProfile/p/ca/v1/prof/app");
  EXPECT_EQ(DigLockKey({"p", "ca", "v1", "dig"}), "/eco/lock/dig/p/ca/v1/dig");
  EXPECT_EQ(LcLockKey("p", "lc"), "/eco/lock/lc/p/lc");
}

TEST(CatalogKeys, KeyUnderAPrefix) {
  EXPECT_TRUE(IsStateKey(StateKey("deploymentIntentGroup", {"p", "ca", "v1", "d"})));
  EXPECT_FALSE(IsStateKey(ObjectKey("deploymentIntentGroup", {"p", "ca", "v1", "d"})));
  EXPECT_FALSE(IsStateKey("/eco/"));
  EXPECT_TRUE(KeyUnder(FileKey("cluster", {"prov", "c1"}), FilePrefix("cluster")));
  EXPECT_FALSE(KeyUnder(FileKey("clusterX", {"c1"}), FilePrefix("cluster")));
  EXPECT_TRUE(KeyUnder(RefKey("cluster", {"prov", "c1"}, "x", {"y"}), RefPrefix("cluster", {"prov", "c1"})));
  // c1 is not a prefix of c10's references.
  EXPECT_FALSE(KeyUnder(RefKey("cluster", {"prov", "c10"}, "x", {"y"}), RefPrefix("cluster", {"prov", "c1"})));
}

}  // namespace
}  // namespace eco::catalog
