#include <gtest/gtest.h>

#include "k8s/watch.h"

namespace eco::k8s {
namespace {

TEST(ParseWatchLine, Table) {
  struct Case {
    std::string line;
    bool ok;
    WatchEventType type;
    std::string rv;
  };
  std::vector<Case> cases = {
      {R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"11"}}})",
       true, WatchEventType::kAdded, "11"},
      {R"({"type":"MODIFIED","object":{"metadata":{"resourceVersion":"12"}}})", true,
       WatchEventType::kModified, "12"},
      {R"({"type":"DELETED","object":{"metadata":{"resourceVersion":"13"}}})", true,
       WatchEventType::kDeleted, "13"},
      {R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"20"}}})", true,
       WatchEventType::kBookmark, "20"},
      {R"({"type":"ERROR","object":{"kind":"Status","code":500,"message":"boom"}})", true,
       WatchEventType::kError, ""},
      {R"({"type":"SOMETHING","object":{}})", false, WatchEventType::kError, ""},
      {R"({"type":"ADDED"})", false, WatchEventType::kError, ""},
      {R"(not json)", false, WatchEventType::kError, ""},
  };
  for (bool slim : {false, true}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.line + (slim ? " (slim)" : ""));
      Result<WatchEvent> e = ParseWatchLine(c.line, slim);
      ASSERT_EQ(e.ok(), c.ok) << e.status().ToString();
      if (!c.ok) continue;
      EXPECT_EQ(e->type, c.type);
      EXPECT_EQ(e->resource_version, c.rv);
    }
  }
}

TEST(ParseWatchLine, SlimKeepsNamesLabelsAndStatus) {
  const std::string line =
      R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p","resourceVersion":"5",)"
      R"("labels":{"app.eco.io/app":"web"},"managedFields":[{"manager":"kubelet"}]},)"
      R"("status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}})";
  Result<WatchEvent> full = ParseWatchLine(line);
  Result<WatchEvent> slim = ParseWatchLine(line, true);
  ASSERT_TRUE(full.ok() && slim.ok());
  EXPECT_TRUE(full->object["metadata"].contains("managedFields"));
  EXPECT_FALSE(slim->object["metadata"].contains("managedFields"));
  EXPECT_EQ(slim->resource_version, "5");
  EXPECT_EQ(slim->object["metadata"]["labels"], full->object["metadata"]["labels"]);
  EXPECT_EQ(slim->object["status"], full->object["status"]);
}

TEST(ParseWatchLine, ErrorEventCarriesStatusAndExpiry) {
  Result<WatchEvent> gone = ParseWatchLine(
      R"J({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 5 (9)"}})J");
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->expired);
  EXPECT_NE(gone->error.message().find("too old resource version"), std::string::npos);

  Result<WatchEvent> other = ParseWatchLine(
      R"({"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError","message":"boom"}})");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->expired);
  EXPECT_EQ(other->error.code(), Code::kUnavailable);
}

TEST(LineSplitter, JoinsLinesAcrossChunks) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto collect = [&lines](std::string_view l) { lines.emplace_back(l); };
  s.Feed("{\"a\":1}\n{\"b\"", collect);
  EXPECT_EQ(s.buffered(), 4u);
  s.Feed(":2}", collect);
  s.Feed("\r\n\n{\"c\":3}\n{\"d\"", collect);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
  s.Feed(":4}\n", collect);
  EXPECT_EQ(lines.back(), "{\"d\":4}");
  EXPECT_EQ(s.buffered(), 0u);
}

TEST(ResourceVersionTracker, FollowsObjectsBookmarksAndListsNotErrors) {
  ResourceVersionTracker t("5");
  auto event = [](WatchEventType type, std::string rv) {
    WatchEvent e;
    e.type = type;
    e.resource_version = std::move(rv);
    return e;
  };
  t.Observe(event(WatchEventType::kAdded, "6"));
  EXPECT_EQ(t.resource_version(), "6");
  t.Observe(event(WatchEventType::kBookmark, "9"));
  EXPECT_EQ(t.resource_version(), "9");
  t.Observe(event(WatchEventType::kError, "1"));
  EXPECT_EQ(t.resource_version(), "9");
  t.Observe(event(WatchEventType::kModified, ""));  // no version: keep the last
  EXPECT_EQ(t.resource_version(), "9");
  t.Observe(event(WatchEventType::kResync, "30"));
  EXPECT_EQ(t.resource_version(), "30");
  t.Observe(event(WatchEventType::kDeleted, "31"));
  EXPECT_EQ(t.resource_version(), "31");
}

}  // namespace
}  // namespace eco::k8s
