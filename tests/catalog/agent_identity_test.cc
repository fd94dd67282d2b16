// Agent clusters' bootstrap tokens and credentials (catalog/agent_identity.h)
// over an embedded store: single use, expiry on the passed clock, races
// between enrollments, re-enrollment, revocation, and what the store holds.
#include "catalog/agent_identity.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "catalog/catalog.h"
#include "fake_clock.h"
#include "forwarding_store.h"
#include "process.h"
#include "status_matchers.h"
#include "store/sqlite_store.h"

namespace eco::catalog {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

class AgentIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    AddCluster("prov", "edge1", "agent");
    AddCluster("prov", "edge2", "agent");
    AddCluster("prov", "dc1", "");  // push: no spec.delivery at all
  }

  // A cluster object as the API stores it; `delivery` "" leaves it out.
  void AddCluster(const std::string& provider, const std::string& name,
                  const std::string& delivery) {
    json c = {{"metadata", {{"name", name}}}, {"spec", json::object()}};
    if (!delivery.empty()) c["spec"]["delivery"] = delivery;
    ASSERT_OK(store_->Put(ObjectKey("cluster", {provider, name}), c.dump()));
  }

  Bootstrap Issue(const std::string& cluster, Clock::Duration ttl = hours(24)) {
    auto b = IssueBootstrap(*store_, clock_, "prov", cluster, ttl);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : Bootstrap{};
  }

  // Every key and value under /eco/agent/.
  std::vector<store::KeyValue> AgentKeys() {
    auto r = store_->Range("/eco/agent/");
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->kvs : std::vector<store::KeyValue>{};
  }

  json Identity(const std::string& cluster_key) {
    auto kv = store_->Get(AgentIdentityKey(cluster_key));
    if (!kv.ok() || !kv->has_value()) return nullptr;
    return json::parse((*kv)->value);
  }

  eco::testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  eco::testing::FakeClock clock_;
};

TEST_F(AgentIdentityTest, DeliveryIsPushUnlessTheSpecSaysAgent) {
  EXPECT_EQ(*DeliveryOf(json{{"metadata", {{"name", "c"}}}}), Delivery::kPush);
  EXPECT_EQ(*DeliveryOf(json{{"spec", {{"delivery", nullptr}}}}), Delivery::kPush);
  EXPECT_EQ(*DeliveryOf(json{{"spec", {{"delivery", "push"}}}}), Delivery::kPush);
  EXPECT_EQ(*DeliveryOf(json{{"spec", {{"delivery", "agent"}}}}), Delivery::kAgent);
  for (const json& bad : {json("Agent"), json("pull"), json(""), json(1), json::object()}) {
    auto d = DeliveryOf(json{{"spec", {{"delivery", bad}}}});
    ASSERT_FALSE(d.ok()) << bad.dump();
    EXPECT_EQ(d.status().code(), Code::kInvalid);
    EXPECT_NE(d.status().message().find("spec.delivery must be \"push\""), std::string::npos)
        << d.status().message();
  }
  EXPECT_EQ(DeliveryName(Delivery::kPush), "push");
  EXPECT_EQ(DeliveryName(Delivery::kAgent), "agent");
  EXPECT_EQ(*ClusterDelivery(*store_, "prov", "edge1"), Delivery::kAgent);
  EXPECT_EQ(*ClusterDelivery(*store_, "prov", "dc1"), Delivery::kPush);
  EXPECT_EQ(ClusterDelivery(*store_, "prov", "nope").status().code(), Code::kNotFound);
}

TEST_F(AgentIdentityTest, IssueEnrollAuthenticate) {
  Bootstrap b = Issue("edge1");
  EXPECT_EQ(b.token.size(), 64u);
  EXPECT_EQ(b.token.find_first_not_of("0123456789abcdef"), std::string::npos) << b.token;
  // The fake clock's wall time is 2026-01-01T00:00:00Z.
  EXPECT_EQ(b.expires, "2026-01-02T00:00:00.000Z");

  ASSERT_OK_AND_ASSIGN(AgentIdentity id, Enroll(*store_, clock_, b.token));
  EXPECT_EQ(id.provider, "prov");
  EXPECT_EQ(id.cluster, "edge1");
  EXPECT_EQ(id.key(), "prov+edge1");
  EXPECT_EQ(id.credential.rfind("prov/edge1/", 0), 0u) << id.credential;
  EXPECT_EQ(id.credential.size(), std::string("prov/edge1/").size() + 64);

  ASSERT_OK_AND_ASSIGN(AgentIdentity who, Authenticate(*store_, id.credential));
  EXPECT_EQ(who.provider, "prov");
  EXPECT_EQ(who.cluster, "edge1");
  EXPECT_TRUE(who.credential.empty());

  json rec = Identity("prov+edge1");
  ASSERT_TRUE(rec.is_object());
  EXPECT_EQ(rec["generation"], 1);
  EXPECT_EQ(rec["issued"], "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(rec["hash"].get<std::string>().size(), 64u);
}

TEST_F(AgentIdentityTest, TheStoreHoldsHashesOnly) {
  Bootstrap used = Issue("edge1");
  Bootstrap unused = Issue("edge2");
  ASSERT_OK_AND_ASSIGN(AgentIdentity id, Enroll(*store_, clock_, used.token));
  const std::string secret = id.credential.substr(id.credential.rfind('/') + 1);
  auto keys = AgentKeys();
  ASSERT_FALSE(keys.empty());
  for (const auto& kv : keys) {
    for (const std::string& s : {used.token, unused.token, id.credential, secret}) {
      EXPECT_EQ(kv.key.find(s), std::string::npos) << kv.key;
      EXPECT_EQ(kv.value.find(s), std::string::npos) << kv.key << " = " << kv.value;
    }
  }
}

TEST_F(AgentIdentityTest, ATokenWorksOnce) {
  Bootstrap b = Issue("edge1");
  ASSERT_OK(Enroll(*store_, clock_, b.token));
  auto again = Enroll(*store_, clock_, b.token);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kPermissionDenied);
  EXPECT_NE(again.status().message().find("used already"), std::string::npos)
      << again.status().message();
  // A token eco never issued reads the same.
  EXPECT_EQ(Enroll(*store_, clock_, std::string(64, 'a')).status().code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Enroll(*store_, clock_, "").status().code(), Code::kPermissionDenied);
}

TEST_F(AgentIdentityTest, AnExpiredTokenIsRefusedAndRemoved) {
  Bootstrap b = Issue("edge1", minutes(10));
  EXPECT_EQ(b.expires, "2026-01-01T00:10:00.000Z");
  clock_.Advance(minutes(10));  // exactly at expiry: no longer valid
  auto e = Enroll(*store_, clock_, b.token);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kPermissionDenied);
  EXPECT_NE(e.status().message().find("expired at 2026-01-01T00:10:00.000Z"), std::string::npos)
      << e.status().message();
  EXPECT_TRUE(AgentKeys().empty()) << AgentKeys().front().key;
  EXPECT_TRUE(Identity("prov+edge1").is_null());
}

TEST_F(AgentIdentityTest, ATokenJustBeforeExpiryStillWorks) {
  Bootstrap b = Issue("edge1", minutes(10));
  clock_.Advance(minutes(10) - std::chrono::milliseconds(1));
  EXPECT_OK(Enroll(*store_, clock_, b.token));
}

TEST_F(AgentIdentityTest, ExpiredTokensGoWhenTheClusterGetsANewOne) {
  Bootstrap old = Issue("edge1", minutes(5));
  Bootstrap live = Issue("edge1", hours(2));
  clock_.Advance(hours(1));
  Bootstrap fresh = Issue("edge1", hours(1));
  // Two tokens left, two keys each (the token, the cluster's index entry).
  EXPECT_EQ(AgentKeys().size(), 4u);
  EXPECT_EQ(Enroll(*store_, clock_, old.token).status().code(), Code::kPermissionDenied);
  // Earlier unused tokens stay valid until they expire.
  EXPECT_OK(Enroll(*store_, clock_, live.token));
  EXPECT_OK(Enroll(*store_, clock_, fresh.token));
}

TEST_F(AgentIdentityTest, AClusterHasABoundedNumberOfUnusedTokens) {
  for (int i = 0; i < kMaxBootstrapTokens; ++i) Issue("edge1", minutes(30));
  auto over = IssueBootstrap(*store_, clock_, "prov", "edge1", minutes(30));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kConflict);
  EXPECT_NE(over.status().message().find("unused bootstrap tokens"), std::string::npos)
      << over.status().message();
  // Once they expire there is room again.
  clock_.Advance(minutes(30));
  EXPECT_OK(IssueBootstrap(*store_, clock_, "prov", "edge1", minutes(30)));
  EXPECT_EQ(AgentKeys().size(), 2u);
}

TEST_F(AgentIdentityTest, OnlyAgentClustersGetTokens) {
  auto push = IssueBootstrap(*store_, clock_, "prov", "dc1", hours(1));
  ASSERT_FALSE(push.ok());
  EXPECT_EQ(push.status().code(), Code::kConflict);
  EXPECT_NE(push.status().message().find("delivers by push"), std::string::npos)
      << push.status().message();
  EXPECT_EQ(IssueBootstrap(*store_, clock_, "prov", "nope", hours(1)).status().code(),
            Code::kNotFound);
  EXPECT_EQ(IssueBootstrap(*store_, clock_, "other", "edge1", hours(1)).status().code(),
            Code::kNotFound);
  EXPECT_EQ(
      IssueBootstrap(*store_, clock_, "prov", "edge1", Clock::Duration(0)).status().code(),
      Code::kInvalid);
  EXPECT_TRUE(AgentKeys().empty());
}

TEST_F(AgentIdentityTest, ReEnrollIncrementsTheGenerationAndRetiresTheOldCredential) {
  ASSERT_OK_AND_ASSIGN(AgentIdentity first, Enroll(*store_, clock_, Issue("edge1").token));
  clock_.Advance(hours(3));
  ASSERT_OK_AND_ASSIGN(AgentIdentity second,
                       Enroll(*store_, clock_, Issue("edge1").token));
  EXPECT_NE(first.credential, second.credential);
  json rec = Identity("prov+edge1");
  EXPECT_EQ(rec["generation"], 2);
  EXPECT_EQ(rec["issued"], "2026-01-01T03:00:00.000Z");
  auto old = Authenticate(*store_, first.credential);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), Code::kPermissionDenied);
  EXPECT_NE(old.status().message().find("current credential"), std::string::npos)
      << old.status().message();
  EXPECT_OK(Authenticate(*store_, second.credential));
  ASSERT_OK(Enroll(*store_, clock_, Issue("edge1").token));
  EXPECT_EQ(Identity("prov+edge1")["generation"], 3);
}

TEST_F(AgentIdentityTest, OneClustersCredentialIsNotAnothers) {
  ASSERT_OK_AND_ASSIGN(AgentIdentity a, Enroll(*store_, clock_, Issue("edge1").token));
  ASSERT_OK_AND_ASSIGN(AgentIdentity b, Enroll(*store_, clock_, Issue("edge2").token));
  const std::string secret_a = a.credential.substr(a.credential.rfind('/') + 1);
  // A's secret under B's name: refused, B's own still works.
  auto tampered = Authenticate(*store_, "prov/edge2/" + secret_a);
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.status().code(), Code::kPermissionDenied);
  ASSERT_OK_AND_ASSIGN(AgentIdentity who, Authenticate(*store_, b.credential));
  EXPECT_EQ(who.cluster, "edge2");
  // Malformed credentials never reach the store's records.
  for (const std::string& bad :
       {std::string(), std::string("prov/edge1"), "prov//" + secret_a, "/edge1/" + secret_a,
        std::string("prov/edge1/x"), "prov/edge1/" + secret_a + "0", "prov/a/edge1/" + secret_a,
        "prov+edge1/x/" + secret_a, "prov/edge1/" + std::string(64, 'A')}) {
    auto r = Authenticate(*store_, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << bad;
  }
}

TEST_F(AgentIdentityTest, RevokeRemovesTheCredentialAndUnusedTokens) {
  ASSERT_OK_AND_ASSIGN(AgentIdentity id, Enroll(*store_, clock_, Issue("edge1").token));
  Bootstrap unused = Issue("edge1");
  ASSERT_OK_AND_ASSIGN(AgentIdentity other, Enroll(*store_, clock_, Issue("edge2").token));
  ASSERT_OK(RevokeAgent(*store_, "prov", "edge1"));
  auto r = Authenticate(*store_, id.credential);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
  EXPECT_NE(r.status().message().find("not enrolled"), std::string::npos) << r.status().message();
  EXPECT_EQ(Enroll(*store_, clock_, unused.token).status().code(),
            Code::kPermissionDenied);
  // Another cluster's identity is untouched; revoking again is fine.
  EXPECT_OK(Authenticate(*store_, other.credential));
  EXPECT_OK(RevokeAgent(*store_, "prov", "edge1"));
  EXPECT_OK(RevokeAgent(*store_, "prov", "never-enrolled"));
  // Only edge2's identity is left.
  auto keys = AgentKeys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].key, AgentIdentityKey("prov+edge2"));
}

TEST_F(AgentIdentityTest, ATokenOfAGoneOrChangedClusterIsRefused) {
  Bootstrap gone = Issue("edge1");
  Bootstrap changed = Issue("edge2");
  ASSERT_OK(store_->Delete(ObjectKey("cluster", {"prov", "edge1"})));
  AddCluster("prov", "edge2", "push");
  auto g = Enroll(*store_, clock_, gone.token);
  EXPECT_EQ(g.status().code(), Code::kPermissionDenied);
  EXPECT_NE(g.status().message().find("no longer exists"), std::string::npos)
      << g.status().message();
  auto c = Enroll(*store_, clock_, changed.token);
  EXPECT_EQ(c.status().code(), Code::kPermissionDenied);
  EXPECT_NE(c.status().message().find("no longer an agent cluster"), std::string::npos)
      << c.status().message();
  EXPECT_TRUE(Identity("prov+edge1").is_null());
  EXPECT_TRUE(Identity("prov+edge2").is_null());
}

TEST_F(AgentIdentityTest, RevokeOpsNameEveryKeyOfTheCluster) {
  ASSERT_OK(Enroll(*store_, clock_, Issue("edge1").token));
  Issue("edge1");
  Issue("edge2");
  ASSERT_OK_AND_ASSIGN(auto ops, AgentRevokeOps(*store_, "prov", "edge1"));
  store::Txn txn;
  txn.success = ops;
  ASSERT_OK_AND_ASSIGN(auto res, store_->Commit(txn));
  EXPECT_EQ(res.deleted, 3);          // the identity, the unused token and its index entry
  EXPECT_EQ(AgentKeys().size(), 2u);  // edge2's token
  EXPECT_TRUE(AgentIdentityPrefix().starts_with("/eco/agent/"));
  EXPECT_EQ(AgentIdentityKey("prov+edge1"), AgentIdentityPrefix() + "prov+edge1");
}

// Holds the first two commits that consume a bootstrap token until both
// have arrived: both enrollments have read the token before either writes.
class BothReadFirst : public eco::testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<store::TxnResult> Commit(const store::Txn& txn) override {
    bool consumes = false;
    for (const auto& op : txn.success) {
      consumes = consumes ||
                 (op.type == store::Op::Type::kDelete && op.key.starts_with("/eco/agent/boot/"));
    }
    if (consumes && !txn.compares.empty()) {
      std::unique_lock<std::mutex> lk(mu_);
      if (arrived_ < 2) {
        ++arrived_;
        cv_.notify_all();
        cv_.wait(lk, [&] { return arrived_ >= 2; });
      }
    }
    return ForwardingStore::Commit(txn);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
};

TEST_F(AgentIdentityTest, OfTwoConcurrentEnrollmentsWithOneTokenExactlyOneWins) {
  Bootstrap b = Issue("edge1");
  BothReadFirst racing(*store_);
  Result<AgentIdentity> r1 = PermissionDenied("not run"), r2 = PermissionDenied("not run");
  std::thread t1([&] { r1 = Enroll(racing, clock_, b.token); });
  std::thread t2([&] { r2 = Enroll(racing, clock_, b.token); });
  t1.join();
  t2.join();
  ASSERT_NE(r1.ok(), r2.ok()) << r1.status().ToString() << " / " << r2.status().ToString();
  const Result<AgentIdentity>& won = r1.ok() ? r1 : r2;
  const Result<AgentIdentity>& lost = r1.ok() ? r2 : r1;
  EXPECT_EQ(lost.status().code(), Code::kPermissionDenied);
  EXPECT_NE(lost.status().message().find("used already"), std::string::npos)
      << lost.status().message();
  EXPECT_OK(Authenticate(*store_, won->credential));
  EXPECT_EQ(Identity("prov+edge1")["generation"], 1);
}

}  // namespace
}  // namespace eco::catalog
