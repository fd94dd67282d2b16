// The hub's agent server in-process on loopback with the embedded store,
// driven by a raw gRPC client: enrolment once per token, who may connect,
// that a cluster sees only its own log (old and new publications, in
// order), acknowledgement, that reports land under the authenticated
// cluster only, malformed reports and revocation end the stream.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "agent/agent.grpc.pb.h"
#include "agenthub/server.h"
#include "appcontext/agent_log.h"
#include "appcontext/records.h"
#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "common/metrics.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco {
namespace {

namespace pb = eco::agent::v1;
using nlohmann::json;
using std::chrono::milliseconds;

class HubServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore({.dir = dir_.path()});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    st_ = std::move(*s);
    for (const char* c : {"a", "b"}) {
      ASSERT_TRUE(st_->Put(catalog::ObjectKey("cluster", {"prov", c}),
                           json{{"metadata", {{"name", c}}}, {"spec", {{"delivery", "agent"}}}}.dump())
                      .ok());
    }
    ASSERT_TRUE(st_->Put("/fence", "held").ok());
    agenthub::ServerOptions o;
    o.bind = "127.0.0.1";
    o.port = 0;
    o.replica = "test";
    server_ = std::make_unique<agenthub::Server>(*st_, o);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials());
    stub_ = pb::AgentHub::NewStub(channel_);
  }
  void TearDown() override { server_->Stop(); }

  grpc::Status Enroll(const std::string& token, pb::EnrollReply* rep) {
    grpc::ClientContext ctx;
    pb::EnrollRequest req;
    req.set_token(token);
    return stub_->Enroll(&ctx, req, rep);
  }

  std::string Credential(const std::string& cluster) {
    auto b = catalog::IssueBootstrap(*st_, RealClock(), "prov", cluster, std::chrono::hours(1));
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    pb::EnrollReply rep;
    EXPECT_TRUE(Enroll(b->token, &rep).ok());
    EXPECT_EQ(rep.cluster(), cluster);
    return rep.credential();
  }

  void PublishTo(const std::string& cluster, int64_t event) {
    appcontext::Publication p;
    p.context = "ctx-" + cluster;
    p.event = event;
    p.record.type = "instantiate";
    p.record.status = "pending";
    appcontext::ProjectedContext pc;
    pc.meta.id = p.context;
    p.contexts.push_back(pc);
    ASSERT_TRUE(appcontext::Publish(*st_, "prov+" + cluster, p, "/fence").ok());
  }

  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::HubMessage>> rw;
  };
  std::unique_ptr<Stream> Open(const std::string& credential) {
    auto s = std::make_unique<Stream>();
    if (!credential.empty()) s->ctx.AddMetadata("authorization", "Bearer " + credential);
    s->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    s->rw = stub_->Connect(&s->ctx);
    return s;
  }
  static bool Hello(Stream& s, uint64_t have) {
    pb::AgentMessage m;
    m.mutable_hello()->set_have_revision(have);
    m.mutable_hello()->set_version("0.9.1-test");
    return s.rw->Write(m);
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> st_;
  std::unique_ptr<agenthub::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::AgentHub::Stub> stub_;
};

TEST_F(HubServerTest, ATokenEnrolsOnceAndOnlyCredentialsConnect) {
  auto b = catalog::IssueBootstrap(*st_, RealClock(), "prov", "a", std::chrono::hours(1));
  ASSERT_TRUE(b.ok());
  pb::EnrollReply rep;
  ASSERT_TRUE(Enroll(b->token, &rep).ok());
  EXPECT_EQ(rep.provider(), "prov");
  EXPECT_FALSE(rep.credential().empty());
  EXPECT_EQ(Enroll(b->token, &rep).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  auto none = Open("");
  pb::HubMessage m;
  EXPECT_FALSE(none->rw->Read(&m));
  EXPECT_EQ(none->rw->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto forged = Open("prov/a/" + std::string(64, '0'));
  EXPECT_FALSE(forged->rw->Read(&m));
  EXPECT_EQ(forged->rw->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(HubServerTest, AClusterGetsItsOwnLogOnlyOldAndNewInOrder) {
  const std::string cred = Credential("a");
  PublishTo("a", 1);
  PublishTo("b", 1);
  PublishTo("a", 2);
  auto s = Open(cred);
  ASSERT_TRUE(Hello(*s, 0));
  pb::HubMessage m;
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(m.has_welcome());
  EXPECT_EQ(m.welcome().cluster(), "a");
  EXPECT_EQ(m.welcome().last_revision(), 2u);
  for (uint64_t want : {1u, 2u}) {
    ASSERT_TRUE(s->rw->Read(&m));
    ASSERT_TRUE(m.has_publication());
    EXPECT_EQ(m.publication().revision(), want);
    auto p = appcontext::DecodePublication(m.publication().data());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->context, "ctx-a");  // never b's
  }
  // Published while connected: the log's watch wakes the stream.
  PublishTo("a", 3);
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(m.has_publication());
  EXPECT_EQ(m.publication().revision(), 3u);
  // Acknowledged revisions leave the log.
  pb::AgentMessage ack;
  ack.mutable_ack()->set_revision(3);
  ASSERT_TRUE(s->rw->Write(ack));
  ASSERT_TRUE(testing::WaitUntil([&] { return *appcontext::Acknowledged(*st_, "prov+a") == 3u; }, milliseconds(10000)));
  EXPECT_TRUE(appcontext::ReadLog(*st_, "prov+a", 0, 1 << 20)->empty());
  EXPECT_EQ(appcontext::ReadLog(*st_, "prov+b", 0, 1 << 20)->size(), 1u);
  s->ctx.TryCancel();
}

// One sample of the process's metrics, 0 when absent.
double Sample(const std::string& series) {
  const std::string text = metrics::Render();
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + series.size() + 2);
}

TEST_F(HubServerTest, ProtocolBytesAndStreamsAreCounted) {
  const std::string cred = Credential("a");
  PublishTo("a", 1);
  const std::string pub_bytes = R"(eco_agent_sent_bytes_total{kind="publication"})";
  const double sent0 = Sample(pub_bytes), pubs0 = Sample("eco_agent_publications_sent_total");
  const double in0 = Sample(R"(eco_agent_received_bytes_total{kind="other"})");
  const double streams0 = Sample("eco_agent_streams");
  auto s = Open(cred);
  ASSERT_TRUE(Hello(*s, 0));
  pb::HubMessage m;
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(m.has_welcome());
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(m.has_publication());
  EXPECT_EQ(Sample("eco_agent_streams"), streams0 + 1);
  EXPECT_GE(Sample(pub_bytes) - sent0, static_cast<double>(m.publication().data().size()));
  EXPECT_EQ(Sample("eco_agent_publications_sent_total"), pubs0 + 1);
  EXPECT_GT(Sample(R"(eco_agent_received_bytes_total{kind="other"})"), in0);  // the hello
  s->ctx.TryCancel();
  EXPECT_TRUE(testing::WaitUntil([&] { return Sample("eco_agent_streams") == streams0; }, milliseconds(10000)));
}

TEST_F(HubServerTest, ReportsLandUnderTheAuthenticatedClusterOnly) {
  const std::string cred = Credential("a");
  auto s = Open(cred);
  ASSERT_TRUE(Hello(*s, 0));
  pb::HubMessage m;
  ASSERT_TRUE(s->rw->Read(&m));
  appcontext::DeployedRecord rec;
  rec.connectivity = "Available";
  rec.resources["cm+ConfigMap"] = {"Applied", "ctx", "", "2026-12-02T00:00:00.000Z", false};
  pb::AgentMessage rep;
  auto* r = rep.mutable_report();
  r->set_seq(17);
  auto* pr = r->add_records();
  pr->set_kind(pb::Record::DEPLOYED);
  pr->set_status_context("sc1");
  pr->set_app("app1");
  pr->set_json(appcontext::ToJson(rec).dump());
  auto* po = r->add_outcomes();
  po->set_context("ctx");
  po->set_event("4");
  po->set_app("app1");
  po->set_ok(true);
  ASSERT_TRUE(s->rw->Write(rep));
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(m.has_report_ack());
  EXPECT_EQ(m.report_ack().seq(), 17u);
  auto stored = appcontext::ReadDeployed(*st_, "sc1", "app1", "prov+a");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((**stored).resources.at("cm+ConfigMap").status, "Applied");
  EXPECT_FALSE(appcontext::ReadDeployed(*st_, "sc1", "app1", "prov+b")->has_value());
  auto out = st_->Get(appcontext::OutcomeKey("ctx", 4, "prov+a", "app1"));
  ASSERT_TRUE(out.ok() && out->has_value());
  EXPECT_TRUE(appcontext::ParseOutcome((*out)->value)->ok);
  // lastSeen records are written in batches, within half a second.
  Result<std::optional<store::KeyValue>> seen = std::optional<store::KeyValue>();
  ASSERT_TRUE(eco::testing::WaitUntil(
      [&] {
        seen = st_->Get(appcontext::SeenKey("prov+a"));
        // With the version its Hello gave (the console lists it).
        return seen.ok() && seen->has_value() && appcontext::ParseSeen((*seen)->value)->agent_version == "0.9.1-test";
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(appcontext::ParseSeen((*seen)->value)->replica, "test");

  // A name that would reach another key: the stream ends, nothing stored.
  pb::AgentMessage bad;
  auto* br = bad.mutable_report();
  br->set_seq(18);
  auto* bpr = br->add_records();
  bpr->set_kind(pb::Record::DEPLOYED);
  bpr->set_status_context("sc1");
  bpr->set_app("app1/prov+b");
  bpr->set_json(appcontext::ToJson(rec).dump());
  ASSERT_TRUE(s->rw->Write(bad));
  EXPECT_FALSE(s->rw->Read(&m));
  EXPECT_EQ(s->rw->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto r2 = st_->Range(appcontext::DeployedPrefix("sc1"));
  EXPECT_EQ(r2->kvs.size(), 1u);

  // The hub remembers the last report it stored.
  auto again = Open(cred);
  ASSERT_TRUE(Hello(*again, 0));
  ASSERT_TRUE(again->rw->Read(&m));
  EXPECT_EQ(m.welcome().report_seq(), 17u);
  again->ctx.TryCancel();
}

TEST_F(HubServerTest, RevocationEndsTheStreamAtOnce) {
  const std::string cred = Credential("a");
  auto s = Open(cred);
  ASSERT_TRUE(Hello(*s, 0));
  pb::HubMessage m;
  ASSERT_TRUE(s->rw->Read(&m));
  ASSERT_TRUE(catalog::RevokeAgent(*st_, "prov", "a").ok());
  EXPECT_FALSE(s->rw->Read(&m));
  EXPECT_EQ(s->rw->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  auto later = Open(cred);
  EXPECT_FALSE(later->rw->Read(&m));
  EXPECT_EQ(later->rw->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(HubServerTest, AnAgentAheadOfTheHubIsToldSo) {
  const std::string cred = Credential("a");
  auto s = Open(cred);
  ASSERT_TRUE(Hello(*s, 5));  // the hub never published 5
  pb::HubMessage m;
  EXPECT_FALSE(s->rw->Read(&m));
  EXPECT_EQ(s->rw->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace eco
