// RemoteController against ControllerServer over real gRPC on 127.0.0.1, and
// ControllerServer against the plain generated stubs (as EMCO's Go code calls).
#include "controllers/grpc.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "contextupdate/contextupdate.grpc.pb.h"
#include "placementcontroller/placementcontroller.grpc.pb.h"
#include "test_certs.h"

namespace eco::controllers {
namespace {

struct Call {
  std::string rpc, context, intent, update_from;
  int event = -1;
  bool operator==(const Call&) const = default;
};

// Records every call; answers with `fail` (Ok by default). With `block` set,
// calls wait until Release() (bounded, so a broken test cannot hang).
class FakeController : public Controller {
 public:
  Status FilterClusters(const std::string& id) override {
    return Record({"FilterClusters", id, "", "", -1});
  }
  Status UpdateAppContext(const std::string& id, const std::string& intent,
                          const std::string& from) override {
    return Record({"UpdateAppContext", id, intent, from, -1});
  }
  Status TerminateAppContext(const std::string& id) override {
    return Record({"TerminateAppContext", id, "", "", -1});
  }
  Status PostEvent(const std::string& id, Event e) override {
    return Record({"PostEvent", id, "", "", static_cast<int>(e)});
  }

  std::vector<Call> calls() {
    std::lock_guard l(mu_);
    return calls_;
  }
  void Fail(Status s) {
    std::lock_guard l(mu_);
    fail_ = std::move(s);
  }
  void Block() {
    std::lock_guard l(mu_);
    block_ = true;
  }
  void Release() {
    std::lock_guard l(mu_);
    block_ = false;
    cv_.notify_all();
  }
  void Throw() {
    std::lock_guard l(mu_);
    throw_ = true;
  }

 private:
  Status Record(Call c) {
    std::unique_lock l(mu_);
    calls_.push_back(std::move(c));
    cv_.wait_for(l, std::chrono::seconds(10), [&] { return !block_; });
    if (throw_) throw std::runtime_error("boom");
    return fail_;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Call> calls_;
  Status fail_;
  bool block_ = false;
  bool throw_ = false;
};

class GrpcControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.SetPlacement(placement_);
    server_.SetAction(action_);
    ASSERT_TRUE(server_.Start().ok());
    ASSERT_GT(server_.port(), 0);
  }

  RemoteController Remote(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return RemoteController({"fake", "127.0.0.1", server_.port(), timeout});
  }

  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(server_.port()),
                               grpc::InsecureChannelCredentials());
  }

  std::shared_ptr<FakeController> placement_ = std::make_shared<FakeController>();
  std::shared_ptr<FakeController> action_ = std::make_shared<FakeController>();
  ControllerServer server_;
};

TEST_F(GrpcControllerTest, EachRpcCarriesItsArguments) {
  RemoteController r = Remote();
  ASSERT_TRUE(r.FilterClusters("ctx-1").ok());
  ASSERT_TRUE(r.UpdateAppContext("ctx-2", "hpa-intent", "ctx-old").ok());
  ASSERT_TRUE(r.UpdateAppContext("ctx-3", "i", "").ok());
  ASSERT_TRUE(r.TerminateAppContext("ctx-4").ok());
  ASSERT_TRUE(r.PostEvent("ctx-5", Event::kInstantiate).ok());
  ASSERT_TRUE(r.PostEvent("ctx-6", Event::kTerminate).ok());
  ASSERT_TRUE(r.PostEvent("ctx-7", Event::kUpdate).ok());

  EXPECT_EQ(placement_->calls(), (std::vector<Call>{{"FilterClusters", "ctx-1", "", "", -1}}));
  EXPECT_EQ(action_->calls(), (std::vector<Call>{
                                  {"UpdateAppContext", "ctx-2", "hpa-intent", "ctx-old", -1},
                                  {"UpdateAppContext", "ctx-3", "i", "", -1},
                                  {"TerminateAppContext", "ctx-4", "", "", -1},
                                  {"PostEvent", "ctx-5", "", "", 0},
                                  {"PostEvent", "ctx-6", "", "", 1},
                                  {"PostEvent", "ctx-7", "", "", 2},
                              }));
}

TEST_F(GrpcControllerTest, ControllerErrorsComeBackAsInvalidWithTheMessage) {
  placement_->Fail(Unavailable("no cluster has a GPU"));
  action_->Fail(NotFound("intent hpa-intent not found"));
  RemoteController r = Remote();

  Status s = r.FilterClusters("c");
  EXPECT_EQ(s.code(), Code::kInvalid);
  EXPECT_NE(s.message().find("controller fake"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no cluster has a GPU"), std::string::npos) << s.message();

  for (Status t : {r.UpdateAppContext("c", "hpa-intent", ""), r.TerminateAppContext("c"),
                   r.PostEvent("c", Event::kInstantiate)}) {
    EXPECT_EQ(t.code(), Code::kInvalid) << t.ToString();
    EXPECT_NE(t.message().find("intent hpa-intent not found"), std::string::npos) << t.message();
  }
}

TEST_F(GrpcControllerTest, ControllerThatThrowsAnswersWithAnError) {
  action_->Throw();
  Status s = Remote().UpdateAppContext("c", "i", "");
  EXPECT_EQ(s.code(), Code::kInvalid) << s.ToString();
  EXPECT_NE(s.message().find("boom"), std::string::npos) << s.message();
}

TEST(GrpcControllerServer, PlacementOnlyServerToleratesTerminateAndPostEvent) {
  auto placement = std::make_shared<FakeController>();
  ControllerServer server;
  server.SetPlacement(placement);
  ASSERT_TRUE(server.Start().ok());
  RemoteController r({"plc", "127.0.0.1", server.port(), std::chrono::seconds(10)});

  EXPECT_TRUE(r.FilterClusters("c").ok());
  EXPECT_TRUE(r.TerminateAppContext("c").ok());
  EXPECT_TRUE(r.PostEvent("c", Event::kTerminate).ok());
  Status s = r.UpdateAppContext("c", "i", "");
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("UNIMPLEMENTED"), std::string::npos) << s.message();
  EXPECT_EQ(placement->calls().size(), 1u);
}

TEST(GrpcControllerServer, ActionOnlyServerRefusesFilterClusters) {
  ControllerServer server;
  server.SetAction(std::make_shared<FakeController>());
  ASSERT_TRUE(server.Start().ok());
  RemoteController r({"ac", "127.0.0.1", server.port(), std::chrono::seconds(10)});
  EXPECT_EQ(r.FilterClusters("c").code(), Code::kInternal);
  EXPECT_TRUE(r.UpdateAppContext("c", "i", "").ok());
}

TEST(GrpcControllerServer, StartNeedsAControllerAndAFreePort) {
  ControllerServer empty;
  EXPECT_EQ(empty.Start().code(), Code::kInvalid);

  ControllerServer first;
  first.SetAction(std::make_shared<FakeController>());
  ASSERT_TRUE(first.Start().ok());
  EXPECT_EQ(first.Start().code(), Code::kInvalid);  // already started

  ControllerServer second({"127.0.0.1", first.port()});
  second.SetAction(std::make_shared<FakeController>());
  Status s = second.Start();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_EQ(second.port(), 0);
}

// TLS between eco and a controller, with certificates made for the test
// (the server's names 127.0.0.1).
class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = k8s::testing::MakeCa("eco-grpc-ca");
    auto server = k8s::testing::MakeLeaf(ca, "controller", {"localhost"}, {"127.0.0.1"});
    auto client = k8s::testing::MakeLeaf(ca, "eco", {}, {});
    auto other_ca = k8s::testing::MakeCa("someone-else");
    server_tls_ = {server.cert_pem, server.key_pem, ""};
    client_tls_ = {client.cert_pem, client.key_pem, ca.cert_pem};
    stranger_tls_ = {"", "", other_ca.cert_pem};
  }
  // A controller server with `tls`; returns its port.
  int Serve(const GrpcTls& tls) {
    ControllerServerOptions o;
    o.tls = std::make_shared<GrpcTls>(tls);
    server_ = std::make_unique<ControllerServer>(o);
    server_->SetPlacement(std::make_shared<FakeController>());
    EXPECT_TRUE(server_->Start().ok());
    return server_->port();
  }
  Status Call(int port, std::shared_ptr<const GrpcTls> tls) {
    RemoteOptions o{"tls", "127.0.0.1", port, std::chrono::seconds(5)};
    o.tls = std::move(tls);
    return RemoteController(o).FilterClusters("ctx");
  }
  GrpcTls server_tls_, client_tls_, stranger_tls_;
  std::unique_ptr<ControllerServer> server_;
};

TEST_F(GrpcTlsTest, TlsServerAnswersTrustingClientsOnly) {
  const int port = Serve(server_tls_);
  EXPECT_TRUE(Call(port, std::make_shared<GrpcTls>(GrpcTls{"", "", client_tls_.ca_pem})).ok());
  Status plain = Call(port, nullptr);
  EXPECT_EQ(plain.code(), Code::kUnavailable) << plain.ToString();
  Status stranger = Call(port, std::make_shared<GrpcTls>(stranger_tls_));  // does not trust the server
  EXPECT_EQ(stranger.code(), Code::kUnavailable) << stranger.ToString();
}

TEST_F(GrpcTlsTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  GrpcTls mutual = server_tls_;
  mutual.ca_pem = client_tls_.ca_pem;
  const int port = Serve(mutual);
  EXPECT_TRUE(Call(port, std::make_shared<GrpcTls>(client_tls_)).ok());
  Status anonymous = Call(port, std::make_shared<GrpcTls>(GrpcTls{"", "", client_tls_.ca_pem}));
  EXPECT_FALSE(anonymous.ok());
  // The process-wide client TLS serves controllers that have none of their own.
  SetClientTls(std::make_shared<GrpcTls>(client_tls_));
  EXPECT_TRUE(Call(port, nullptr).ok());
  SetClientTls(nullptr);
}

TEST(GrpcRemoteController, UnreachablePortIsUnavailable) {
  int port = 0;
  {
    ControllerServer gone;
    gone.SetAction(std::make_shared<FakeController>());
    ASSERT_TRUE(gone.Start().ok());
    port = gone.port();
  }  // shut down: nothing listens on `port` any more
  RemoteController r({"gone", "127.0.0.1", port, std::chrono::seconds(10)});
  for (Status s : {r.FilterClusters("c"), r.UpdateAppContext("c", "i", ""),
                   r.TerminateAppContext("c"), r.PostEvent("c", Event::kInstantiate)}) {
    EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("controller gone at 127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << s.message();
  }
}

TEST_F(GrpcControllerTest, SlowControllerIsUnavailableWithDeadline) {
  action_->Block();
  Status s = Remote(std::chrono::milliseconds(200)).UpdateAppContext("c", "i", "");
  action_->Release();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("deadline"), std::string::npos) << s.message();
  // A deadline is not "not implemented": Terminate does not swallow it.
  action_->Block();
  Status t = Remote(std::chrono::milliseconds(200)).TerminateAppContext("c");
  action_->Release();
  EXPECT_EQ(t.code(), Code::kUnavailable) << t.ToString();
}

TEST_F(GrpcControllerTest, ConcurrentCallsAllArrive) {
  RemoteController r = Remote();
  constexpr int kThreads = 8, kCalls = 25;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        std::string id = std::to_string(t) + "-" + std::to_string(i);
        if (!r.UpdateAppContext(id, "intent", "").ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::set<std::string> ids;
  for (const Call& c : action_->calls()) ids.insert(c.context);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads * kCalls));
}

// What EMCO's Go orchestrator sends: plain generated stubs.
TEST_F(GrpcControllerTest, GeneratedStubsTalkToControllerServer) {
  auto channel = Channel();
  {
    auto stub = ::contextupdate::NewStub(channel);
    grpc::ClientContext ctx;
    ::ContextUpdateRequest req;
    req.set_app_context("ctx-9");
    req.set_intent_name("intent-9");
    req.set_update_from_appcontext("ctx-8");
    ::ContextUpdateResponse resp;
    ASSERT_TRUE(stub->UpdateAppContext(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.app_context_updated());
  }
  {
    auto stub = ::PlacementController::NewStub(channel);
    grpc::ClientContext ctx;
    ::ResourceRequest req;
    req.set_appcontext("ctx-10");
    ::ResourceResponse resp;
    ASSERT_TRUE(stub->FilterClusters(&ctx, req, &resp).ok());
    EXPECT_TRUE(resp.status());
    EXPECT_EQ(resp.appcontext(), "ctx-10");
  }
  EXPECT_EQ(action_->calls(),
            (std::vector<Call>{{"UpdateAppContext", "ctx-9", "intent-9", "ctx-8", -1}}));
  EXPECT_EQ(placement_->calls(), (std::vector<Call>{{"FilterClusters", "ctx-10", "", "", -1}}));

  // A controller error is an answer, not a gRPC error, as EMCO's controllers do.
  action_->Fail(Invalid("bad intent"));
  auto stub = ::contextupdate::NewStub(channel);
  grpc::ClientContext ctx;
  ::TerminateRequest req;
  req.set_app_context("ctx-11");
  ::TerminateResponse resp;
  ASSERT_TRUE(stub->TerminateAppContext(&ctx, req, &resp).ok());
  EXPECT_FALSE(resp.app_context_terminated());
  EXPECT_EQ(resp.app_context_terminated_message(), "bad intent");
}

TEST_F(GrpcControllerTest, UnknownEventTypeIsRefused) {
  auto stub = ::contextupdate::NewStub(Channel());
  grpc::ClientContext ctx;
  ::PostEventRequest req;
  req.set_app_context("c");
  req.set_event_type(static_cast<::EventType>(7));
  ::PostEventResponse resp;
  ASSERT_TRUE(stub->PostEvent(&ctx, req, &resp).ok());
  EXPECT_FALSE(resp.success());
  EXPECT_NE(resp.post_event_message().find("7"), std::string::npos);
  EXPECT_TRUE(action_->calls().empty());
}

// The wire names must be EMCO's: no proto package, so /contextupdate/<Rpc>
// and /PlacementController/FilterClusters.
TEST(GrpcWire, ServiceAndMethodNamesAreEmcos) {
  const auto* cu = ::ContextUpdateRequest::descriptor()->file()->FindServiceByName("contextupdate");
  ASSERT_NE(cu, nullptr);
  EXPECT_EQ(cu->full_name(), "contextupdate");
  EXPECT_EQ(cu->file()->package(), "");
  std::vector<std::string> methods;
  for (int i = 0; i < cu->method_count(); ++i) methods.push_back(cu->method(i)->name());
  EXPECT_EQ(methods,
            (std::vector<std::string>{"UpdateAppContext", "TerminateAppContext", "PostEvent"}));
  const auto* plc =
      ::ResourceRequest::descriptor()->file()->FindServiceByName("PlacementController");
  ASSERT_NE(plc, nullptr);
  EXPECT_EQ(plc->full_name(), "PlacementController");
  EXPECT_EQ(plc->method(0)->name(), "FilterClusters");

  // Field numbers EMCO's Go code relies on.
  const auto* upd = ::ContextUpdateRequest::descriptor();
  EXPECT_EQ(upd->FindFieldByNumber(3)->name(), "update_from_appContext");
  EXPECT_EQ(::ResourceResponse::descriptor()->FindFieldByNumber(2)->name(), "status");
  EXPECT_EQ(::PostEventRequest::descriptor()->FindFieldByNumber(2)->name(), "event_type");
  EXPECT_EQ(::EventType_Name(::UPDATE), "UPDATE");
  EXPECT_EQ(static_cast<int>(::UPDATE), 2);
}

grpc::ByteBuffer ToBuffer(const google::protobuf::Message& m) {
  std::string bytes = m.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

template <typename M>
bool FromBuffer(const grpc::ByteBuffer& b, M* m) {
  std::vector<grpc::Slice> slices;
  if (!b.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return m->ParseFromString(bytes);
}

grpc::Status RawCall(grpc::GenericStub& stub, const std::string& method,
                     const grpc::ByteBuffer& req, grpc::ByteBuffer* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &req, resp,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// Calls by literal method path, as any gRPC implementation would send them.
TEST_F(GrpcControllerTest, LiteralMethodPathsReachTheControllers) {
  grpc::GenericStub stub(Channel());

  ::ContextUpdateRequest req;
  req.set_app_context("ctx-raw");
  req.set_intent_name("in");
  grpc::ByteBuffer out;
  grpc::Status s = RawCall(stub, "/contextupdate/UpdateAppContext", ToBuffer(req), &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ::ContextUpdateResponse resp;
  ASSERT_TRUE(FromBuffer(out, &resp));
  EXPECT_TRUE(resp.app_context_updated());

  ::ResourceRequest preq;
  preq.set_appcontext("ctx-raw-2");
  grpc::ByteBuffer pout;
  s = RawCall(stub, "/PlacementController/FilterClusters", ToBuffer(preq), &pout);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ::ResourceResponse presp;
  ASSERT_TRUE(FromBuffer(pout, &presp));
  EXPECT_TRUE(presp.status());

  // A packaged name would be a different method.
  grpc::ByteBuffer none;
  s = RawCall(stub, "/eco.contextupdate/UpdateAppContext", ToBuffer(req), &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);

  EXPECT_EQ(action_->calls(), (std::vector<Call>{{"UpdateAppContext", "ctx-raw", "in", "", -1}}));
  EXPECT_EQ(placement_->calls(), (std::vector<Call>{{"FilterClusters", "ctx-raw-2", "", "", -1}}));
}

}  // namespace
}  // namespace eco::controllers
