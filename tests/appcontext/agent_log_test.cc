// The hub's per-cluster log of publications (appcontext/agent_log.h), on
// the real embedded store: revisions, idempotence per event, the fence,
// publications larger than one store write, batches, acknowledgement.
#include <gtest/gtest.h>

#include <thread>

#include "appcontext/agent_log.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::appcontext {
namespace {

class AgentLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    ASSERT_TRUE(st_->Put("/fence", "held").ok());
  }

  Publication Pub(const std::string& ctx, int64_t ev, size_t payload = 10) {
    Publication p;
    p.context = ctx;
    p.event = ev;
    p.record.type = "instantiate";
    p.record.status = "pending";
    ProjectedContext pc;
    pc.meta.id = ctx;
    pc.meta.app_order = {"a"};
    ProjectedApp a;
    a.name = "a";
    // Random-looking data does not compress: the parts are really needed.
    std::string data;
    uint64_t x = 88172645463325252ull;
    while (data.size() < payload) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      data += std::to_string(x);
    }
    a.resources.resources.push_back({"big+ConfigMap",
                                     {{"apiVersion", "v1"},
                                      {"kind", "ConfigMap"},
                                      {"metadata", {{"name", "big"}}},
                                      {"data", {{"d", data}}}}});
    pc.apps.push_back(std::move(a));
    p.contexts.push_back(std::move(pc));
    return p;
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
};

TEST_F(AgentLogTest, RevisionsCountUpOncePerEvent) {
  auto r1 = Publish(*st_, "p+c", Pub("ctx1", 1), "/fence");
  auto r2 = Publish(*st_, "p+c", Pub("ctx1", 2), "/fence");
  auto again = Publish(*st_, "p+c", Pub("ctx1", 1), "/fence");
  ASSERT_TRUE(r1.ok() && r2.ok() && again.ok()) << r1.status().ToString();
  EXPECT_EQ(*r1, 1u);
  EXPECT_EQ(*r2, 2u);
  EXPECT_EQ(*again, 1u);  // the same event is not published twice
  EXPECT_EQ(*LastRevision(*st_, "p+c"), 2u);
  // Another cluster has a log of its own.
  EXPECT_EQ(*Publish(*st_, "p+d", Pub("ctx1", 1), "/fence"), 1u);
}

// A cancel is an entry of its own after its event's, once per event and
// cluster, and comes back as it went.
TEST_F(AgentLogTest, ACancelIsPublishedOnceBesideItsEvent) {
  ASSERT_EQ(*Publish(*st_, "p+c", Pub("ctx1", 1), "/fence"), 1u);
  Publication c;
  c.context = "ctx1";
  c.event = 1;
  c.record.type = "instantiate";
  c.cancel = "failed";
  c.cancel_message = "cancelled: another cluster failed";
  EXPECT_EQ(*Publish(*st_, "p+c", c, "/fence"), 2u);
  EXPECT_EQ(*Publish(*st_, "p+c", c, "/fence"), 2u);
  EXPECT_EQ(*Publish(*st_, "p+c", Pub("ctx1", 1), "/fence"), 1u);
  auto log = ReadLog(*st_, "p+c", 1, 1 << 20);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 1u);
  auto back = DecodePublication((*log)[0].bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cancel, "failed");
  EXPECT_EQ(back->cancel_message, c.cancel_message);
  EXPECT_TRUE(back->contexts.empty());
  // Only the two reasons, and never with contexts.
  nlohmann::json j = ToJson(*back);
  j["cancel"]["why"] = "bored";
  EXPECT_FALSE(PublicationFromJson(j).ok());
  j = ToJson(*back);
  j["contexts"] = ToJson(Pub("ctx1", 1))["contexts"];
  EXPECT_FALSE(PublicationFromJson(j).ok());
}

TEST_F(AgentLogTest, ALostFenceWritesNothing) {
  ASSERT_TRUE(st_->Delete("/fence").ok());
  auto r = Publish(*st_, "p+c", Pub("ctx1", 1), "/fence");
  EXPECT_EQ(r.status().code(), Code::kConflict);
  EXPECT_EQ(*LastRevision(*st_, "p+c"), 0u);
  EXPECT_TRUE(ReadLog(*st_, "p+c", 0, 1 << 20)->empty());
}

TEST_F(AgentLogTest, LargePublicationsComeBackWholeInBatches) {
  ASSERT_TRUE(Publish(*st_, "p+c", Pub("ctx1", 1, 3 << 20), "/fence").ok());  // several parts
  ASSERT_TRUE(Publish(*st_, "p+c", Pub("ctx1", 2), "/fence").ok());
  auto first = ReadLog(*st_, "p+c", 0, 1);  // a tiny budget still yields one
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].revision, 1u);
  auto p = DecodePublication((*first)[0].bytes);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->revision, 1u);
  EXPECT_EQ(ToJson(*p)["contexts"][0]["apps"][0]["resources"], ToJson(Pub("ctx1", 1, 3 << 20).contexts[0].apps[0].resources));
  auto rest = ReadLog(*st_, "p+c", 1, 64 << 20);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].revision, 2u);
}

TEST_F(AgentLogTest, AcknowledgedRevisionsLeaveTheLog) {
  for (int e = 1; e <= 3; ++e) ASSERT_TRUE(Publish(*st_, "p+c", Pub("ctx1", e), "/fence").ok());
  ASSERT_TRUE(Acknowledge(*st_, "p+c", 2).ok());
  EXPECT_EQ(*Acknowledged(*st_, "p+c"), 2u);
  auto left = ReadLog(*st_, "p+c", 0, 64 << 20);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].revision, 3u);
  EXPECT_EQ(Acknowledge(*st_, "p+c", 9).code(), Code::kInvalid);  // never published
  EXPECT_TRUE(Acknowledge(*st_, "p+c", 1).ok());                  // older: nothing to do
  EXPECT_EQ(*Acknowledged(*st_, "p+c"), 2u);
}

TEST_F(AgentLogTest, ConcurrentPublishersGetDistinctRevisions) {
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([this, t] {
      for (int e = 1; e <= 10; ++e) EXPECT_TRUE(Publish(*st_, "p+c", Pub("ctx" + std::to_string(t), e), "/fence").ok());
    });
  }
  for (auto& t : ts) t.join();
  auto all = ReadLog(*st_, "p+c", 0, 64 << 20);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 40u);
  std::set<std::pair<std::string, int64_t>> events;
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].revision, i + 1);
    auto p = DecodePublication((*all)[i].bytes);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->revision, i + 1);
    events.insert({p->context, p->event});
  }
  EXPECT_EQ(events.size(), 40u);
}

TEST(AgentRecords, OutcomeAndSeenParseOrRefuse) {
  auto o = ParseOutcome(ToJson(Outcome{false, "boom", true}).dump());
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->ok);
  EXPECT_EQ(o->message, "boom");
  EXPECT_TRUE(o->own_failure);
  EXPECT_FALSE(ParseOutcome("{}").ok());
  EXPECT_FALSE(ParseOutcome("nope").ok());
  auto s = ParseSeen(ToJson(Seen{"2026-12-02T00:00:00.000Z", "r1"}).dump());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->replica, "r1");
  EXPECT_FALSE(ParseSeen("[]").ok());
}

}  // namespace
}  // namespace eco::appcontext
