#include "appcontext/event_record.h"

#include <gtest/gtest.h>

namespace eco::appcontext {
namespace {

using nlohmann::json;

TEST(EventRecord, RoundTripsEveryField) {
  EventRecord e;
  e.type = "resync";
  e.status = "done";
  e.other = "ctx-2";
  e.clusters = {"p+c1", "p+c2"};
  e.time = "2026-01-01T00:00:00.000Z";
  e.finished = "2026-01-01T00:00:05.000Z";
  e.message = "why";
  e.trace = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  auto back = EventFromJson(ToJson(e));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(e));
  EXPECT_EQ(back->clusters, e.clusters);
  EXPECT_EQ(back->trace, e.trace);
  EXPECT_FALSE(back->pending());
}

TEST(EventRecord, WhatTheQueueWroteBeforeParsesAndKeepsItsShape) {
  // As EnqueueOps writes a pending instantiate: no optional field.
  const json stored = {{"event", "instantiate"}, {"status", "pending"}, {"time", "2026-01-01T00:00:00.000Z"}};
  auto e = EventFromJson(stored);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->pending());
  EXPECT_EQ(ToJson(*e), stored);
}

TEST(EventRecord, AMalformedRecordIsAnErrorSayingWhat) {
  const std::vector<std::pair<json, std::string>> bad = {
      {json::array(), "JSON object"},
      {json{{"status", "pending"}}, "\"event\""},
      {json{{"event", "instantiate"}}, "\"status\""},
      {json{{"event", 3}, {"status", "pending"}}, "\"event\" is not a string"},
      {json{{"event", "resync"}, {"status", "pending"}, {"clusters", "p+c"}}, "\"clusters\""},
      {json{{"event", "resync"}, {"status", "pending"}, {"clusters", {1}}}, "\"clusters\""},
      {json{{"event", "update"}, {"status", "pending"}, {"trace", "x"}}, "\"trace\""},
  };
  for (const auto& [j, words] : bad) {
    auto e = EventFromJson(j);
    ASSERT_FALSE(e.ok()) << j.dump();
    EXPECT_NE(e.status().message().find(words), std::string::npos) << e.status().message();
  }
}

TEST(EventRecord, ParseEventNamesTheKey) {
  store::KeyValue kv;
  kv.key = "/eco/ac/x/events/0001";
  kv.value = "{not json";
  kv.mod_revision = 7;
  auto e = ParseEvent(kv);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find(kv.key), std::string::npos);
  EXPECT_FALSE(ParseEvent(kv).ok());  // the same answer again (logged once)
}

}  // namespace
}  // namespace eco::appcontext
