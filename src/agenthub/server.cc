#include "agenthub/server.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "agent/agent.grpc.pb.h"
#include "appcontext/agent_log.h"
#include "appcontext/records.h"
#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "common/log.h"
#include "common/metrics.h"
#include "rsync/executor.h"

namespace eco::agenthub {

namespace pb = eco::agent::v1;

namespace {

// Each message stays far below gRPC's default 4 MiB limit.
constexpr size_t kPartBytes = 1u << 20;

grpc::Status ToGrpc(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return grpc::Status::OK;
    case Code::kPermissionDenied: return {grpc::StatusCode::PERMISSION_DENIED, s.message()};
    case Code::kInvalid: return {grpc::StatusCode::INVALID_ARGUMENT, s.message()};
    case Code::kNotFound: return {grpc::StatusCode::NOT_FOUND, s.message()};
    case Code::kUnavailable: return {grpc::StatusCode::UNAVAILABLE, s.message()};
    default: return {grpc::StatusCode::INTERNAL, s.message()};
  }
}

// What the agent protocol moves, in protobuf message bytes (gRPC's framing
// and TLS not counted): how much a resumption costs next to a full resync.
struct HubMetrics {
  prometheus::Gauge* streams;
  prometheus::Counter *sent_publication, *sent_other, *received_report, *received_other;
  prometheus::Counter *publications, *reports;
  static HubMetrics& Get() {
    static HubMetrics m = [] {
      auto& reg = metrics::Registry();
      auto& bytes_out = prometheus::BuildCounter()
                            .Name("eco_agent_sent_bytes_total")
                            .Help("Bytes of agent protocol messages the hub sent, by message kind.")
                            .Register(reg);
      auto& bytes_in = prometheus::BuildCounter()
                           .Name("eco_agent_received_bytes_total")
                           .Help("Bytes of agent protocol messages the hub received, by message kind.")
                           .Register(reg);
      HubMetrics made;
      made.streams = &prometheus::BuildGauge()
                          .Name("eco_agent_streams")
                          .Help("Agent streams open on this replica.")
                          .Register(reg)
                          .Add({});
      made.sent_publication = &bytes_out.Add({{"kind", "publication"}});
      made.sent_other = &bytes_out.Add({{"kind", "other"}});
      made.received_report = &bytes_in.Add({{"kind", "report"}});
      made.received_other = &bytes_in.Add({{"kind", "other"}});
      made.publications = &prometheus::BuildCounter()
                               .Name("eco_agent_publications_sent_total")
                               .Help("Publications (whole, not parts) the hub sent to agents.")
                               .Register(reg)
                               .Add({});
      made.reports = &prometheus::BuildCounter()
                          .Name("eco_agent_reports_total")
                          .Help("Reports of agents the hub stored.")
                          .Register(reg)
                          .Add({});
      return made;
    }();
    return m;
  }
};

// A name that goes into a store key as one segment.
bool Segment(const std::string& s) { return !s.empty() && s.find('/') == std::string::npos && s.size() <= 256; }

class Refuse final : public grpc::ServerBidiReactor<pb::AgentMessage, pb::HubMessage> {
 public:
  explicit Refuse(grpc::Status s) { Finish(std::move(s)); }
  void OnDone() override { delete this; }
};

}  // namespace

class Stream;

class Server::Impl final : public pb::AgentHub::CallbackService {
 public:
  Impl(store::Store& st, ServerOptions o)
      : st_(st),
        opt_(std::move(o)),
        clock_(opt_.clock != nullptr ? *opt_.clock : RealClock()),
        random_(opt_.random != nullptr ? *opt_.random : ProcessRandom()) {}

  Status Start();
  void Stop();
  int port() const { return port_; }
  size_t Streams();

  grpc::ServerUnaryReactor* Enroll(grpc::CallbackServerContext* ctx, const pb::EnrollRequest* req,
                                   pb::EnrollReply* rep) override;
  grpc::ServerBidiReactor<pb::AgentMessage, pb::HubMessage>* Connect(grpc::CallbackServerContext* ctx) override;

  // Queues a cluster's lastSeen record; the queue is written every
  // kSeenBatch, many records per transaction (4,000 agents each heard
  // every 10 s were 400 single writes a second).
  void Seen(const std::string& ck, std::string record);
  void FlushSeen();

  // The cluster's stream is `s` now (an earlier one is closed).
  void Register(const std::string& ck, const std::shared_ptr<Stream>& s);
  void Unregister(const std::string& ck, const Stream* s);

  store::Store& st_;
  const ServerOptions opt_;
  Clock& clock_;
  Random& random_;
  std::unique_ptr<rsync::Executor> pool_;

 private:
  Status Arm();
  void Rearm();
  void OnLog(const std::vector<store::WatchEvent>& evs);
  void OnIdentity(const std::vector<store::WatchEvent>& evs);
  std::shared_ptr<Stream> Find(const std::string& ck);

  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex mu_;
  std::unique_ptr<store::WatchHandle> log_watch_, id_watch_;        // guarded by mu_
  Clock::TimerId rearm_ = 0;                                        // guarded by mu_
  bool stopped_ = false;                                            // guarded by mu_
  std::unordered_map<std::string, std::weak_ptr<Stream>> streams_;  // guarded by mu_
  std::mutex seen_mu_;
  std::map<std::string, std::string> seen_;  // guarded by seen_mu_: cluster key -> record to write
  bool seen_posted_ = false;                 // guarded by seen_mu_: a flush is due
};

namespace {
constexpr auto kSeenBatch = std::chrono::milliseconds(500);
}  // namespace

void Server::Impl::Seen(const std::string& ck, std::string record) {
  std::lock_guard<std::mutex> g(seen_mu_);
  seen_[ck] = std::move(record);
  if (seen_posted_ || !pool_) return;
  seen_posted_ = true;
  pool_->PostAfter(kSeenBatch, [this] { FlushSeen(); });
}

void Server::Impl::FlushSeen() {
  std::map<std::string, std::string> batch;
  {
    std::lock_guard<std::mutex> g(seen_mu_);
    seen_posted_ = false;
    batch.swap(seen_);
  }
  appcontext::WriteSeen(st_, batch);
  // The store is down: what no newer record replaced meanwhile is written
  // with the next flush.
  std::lock_guard<std::mutex> g(seen_mu_);
  for (auto& [ck, rec] : batch) seen_.try_emplace(ck, std::move(rec));
}

// One agent's stream. Owned by itself (a shared reference dropped in
// OnDone) and by work in flight for it; store work runs on the pool, in
// order, one message at a time.
class Stream final : public grpc::ServerBidiReactor<pb::AgentMessage, pb::HubMessage>,
                     public std::enable_shared_from_this<Stream> {
 public:
  Stream(Server::Impl& hub, catalog::AgentIdentity who, std::string credential)
      : hub_(hub), who_(std::move(who)), ck_(who_.key()), credential_(std::move(credential)) {}

  void Begin(std::shared_ptr<Stream> self) {
    HubMetrics::Get().streams->Increment();
    std::lock_guard<std::recursive_mutex> g(mu_);
    self_ = std::move(self);
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Close(grpc::Status::OK);
    auto self = shared_from_this();
    pb::AgentMessage msg;
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      msg.Swap(&in_);
    }
    auto& m = HubMetrics::Get();
    (msg.has_report() ? m.received_report : m.received_other)->Increment(static_cast<double>(msg.ByteSizeLong()));
    hub_.pool_->Post([self, msg = std::move(msg)]() mutable {
      self->Handle(msg);
      std::lock_guard<std::recursive_mutex> g(self->mu_);
      if (!self->finished_) self->StartRead(&self->in_);
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> g(mu_);
    writing_ = false;
    if (!ok) return Close(grpc::Status::OK);
    WriteNext();
    if (!writing_ && pump_more_) {
      pump_more_ = false;
      auto self = shared_from_this();
      hub_.pool_->Post([self] { self->Pump(); });
    }
  }

  void OnCancel() override { Close(grpc::Status::CANCELLED); }

  void OnDone() override {
    HubMetrics::Get().streams->Decrement();
    hub_.Unregister(ck_, this);
    MarkSeen(true);
    std::shared_ptr<Stream> keep;
    std::lock_guard<std::recursive_mutex> g(mu_);
    keep = std::move(self_);  // the last reference may be ours: freed after unlock
    done_ = true;
  }

  // Ends the stream with `why` (once).
  void Close(grpc::Status why) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (finished_ || done_) return;
    finished_ = true;
    Finish(std::move(why));
  }

  // Sends what the log holds after what was sent. One pump at a time: two
  // reading the log from the same point would send its records twice.
  void Pump() {
    uint64_t from = 0;
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (finished_ || !greeted_) return;
      if (pumping_ || writing_ || !out_.empty()) {
        pump_more_ = true;
        return;
      }
      pumping_ = true;
      pump_more_ = false;
      from = sent_;
    }
    auto pubs = appcontext::ReadLog(hub_.st_, ck_, from, hub_.opt_.batch_bytes);
    if (!pubs.ok()) {
      {
        std::lock_guard<std::recursive_mutex> g(mu_);
        pumping_ = false;
      }
      Log("reading its log: " + pubs.status().ToString());
      return Close(ToGrpc(Unavailable(pubs.status().message())));
    }
    std::lock_guard<std::recursive_mutex> g(mu_);
    pumping_ = false;
    for (const auto& p : *pubs) {
      const uint32_t parts = static_cast<uint32_t>((p.bytes.size() + kPartBytes - 1) / kPartBytes);
      for (uint32_t i = 0; i < parts; ++i) {
        pb::HubMessage m;
        auto* pub = m.mutable_publication();
        pub->set_revision(p.revision);
        pub->set_part(i);
        pub->set_parts(parts);
        pub->set_data(p.bytes.substr(static_cast<size_t>(i) * kPartBytes, kPartBytes));
        out_.push_back(std::move(m));
      }
      sent_ = p.revision;
    }
    if (!pubs->empty()) pump_more_ = true;  // there may be more than one batch
    WriteNext();
    // A wake that came while the log was read and found nothing to write
    // has no write completion to carry it.
    if (!writing_ && pump_more_ && !finished_) {
      pump_more_ = false;
      auto self = shared_from_this();
      hub_.pool_->Post([self] { self->Pump(); });
    }
  }

  // Looks at the credential again (the cluster's identity changed).
  void Recheck() {
    auto who = catalog::Authenticate(hub_.st_, credential_);
    if (!who.ok()) Close({grpc::StatusCode::PERMISSION_DENIED, "cluster " + ck_ + ": " + who.status().message()});
  }

  const std::string& cluster_key() const { return ck_; }

 private:
  void Handle(const pb::AgentMessage& m) {
    MarkSeen(false);
    switch (m.body_case()) {
      case pb::AgentMessage::kHello: return Hello(m.hello());
      case pb::AgentMessage::kAck: {
        Status s = appcontext::Acknowledge(hub_.st_, ck_, m.ack().revision());
        if (!s.ok()) return Close(ToGrpc(s));
        return;
      }
      case pb::AgentMessage::kReport: return Report(m.report());
      case pb::AgentMessage::kPing: {
        pb::HubMessage out;
        out.mutable_pong()->set_sent_unix_ms(m.ping().sent_unix_ms());
        return Send(std::move(out));
      }
      case pb::AgentMessage::BODY_NOT_SET:
        return Close({grpc::StatusCode::INVALID_ARGUMENT, "a message without a body"});
    }
  }

  void Hello(const pb::Hello& h) {
    auto last = appcontext::LastRevision(hub_.st_, ck_);
    auto rseq = hub_.st_.Get(appcontext::ReportSeqKey(ck_));
    if (!last.ok() || !rseq.ok()) return Close(ToGrpc(Unavailable("store: " + last.status().message())));
    if (h.have_revision() > *last) {
      // The agent holds revisions the hub never published: another hub's
      // state, or the hub's store was replaced. It must start over.
      return Close({grpc::StatusCode::FAILED_PRECONDITION,
                    "agent has revision " + std::to_string(h.have_revision()) + " but the hub published only " +
                        std::to_string(*last) + " for cluster " + ck_});
    }
    hub_.Register(ck_, shared_from_this());
    pb::HubMessage w;
    auto* wel = w.mutable_welcome();
    wel->set_provider(who_.provider);
    wel->set_cluster(who_.cluster);
    wel->set_last_revision(*last);
    wel->set_report_seq(rseq->has_value() ? std::strtoull((*rseq)->value.c_str(), nullptr, 10) : 0);
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      sent_ = h.have_revision();
      greeted_ = true;
      // Kept in its Seen record (the console's cluster list shows it); bounded.
      version_ = h.version().substr(0, 64);
    }
    Log("agent connected (has revision " + std::to_string(h.have_revision()) + " of " + std::to_string(*last) +
        ", version " + h.version() + ")");
    MarkSeen(true);  // with its version
    Send(std::move(w));
    Pump();
  }

  void Report(const pb::Report& r) {
    if (r.drift_repaired() > drift_.load()) {
      drift_ = r.drift_repaired();
      Log("the agent has re-applied " + std::to_string(r.drift_repaired()) + " drifted objects since it started");
      MarkSeen(true);
    }
    std::vector<store::Op> ops;
    for (const auto& rec : r.records()) {
      if (!Segment(rec.status_context()) || !Segment(rec.app()))
        return Close({grpc::StatusCode::INVALID_ARGUMENT, "a record with a malformed context or app name"});
      if (rec.kind() == pb::Record::DEPLOYED) {
        if (!appcontext::ParseDeployed(rec.json()).ok())
          return Close({grpc::StatusCode::INVALID_ARGUMENT, "a deployed record that is not one"});
        ops.push_back(store::Op::Put(appcontext::DeployedKey(rec.status_context(), rec.app(), ck_), rec.json()));
      } else if (rec.kind() == pb::Record::DRIFT) {
        if (!appcontext::ParseDrift(rec.json()).ok())
          return Close({grpc::StatusCode::INVALID_ARGUMENT, "a drift record that is not one"});
        ops.push_back(store::Op::Put(appcontext::DriftKey(rec.status_context(), rec.app(), ck_), rec.json()));
      } else {
        if (!appcontext::ParseReady(rec.json()).ok())
          return Close({grpc::StatusCode::INVALID_ARGUMENT, "a ready record that is not one"});
        ops.push_back(store::Op::Put(appcontext::ReadyKey(rec.status_context(), rec.app(), ck_), rec.json()));
      }
    }
    for (const auto& o : r.outcomes()) {
      char* end = nullptr;
      const long long ev = std::strtoll(o.event().c_str(), &end, 10);
      if (!Segment(o.context()) || !Segment(o.app()) || o.event().empty() || *end != '\0')
        return Close({grpc::StatusCode::INVALID_ARGUMENT, "an outcome with a malformed context, event or app"});
      appcontext::Outcome out{o.ok(), o.message(), o.own_failure()};
      ops.push_back(store::Op::Put(appcontext::OutcomeKey(o.context(), ev, ck_, o.app()), appcontext::ToJson(out).dump()));
    }
    // Records first, then the seq: a crash in between only resends.
    for (size_t i = 0; i < ops.size(); i += 64) {
      store::Txn txn;
      for (size_t j = i; j < ops.size() && j < i + 64; ++j) txn.success.push_back(ops[j]);
      auto c = hub_.st_.Commit(txn);
      if (!c.ok()) return Close(ToGrpc(Unavailable("store: " + c.status().message())));
    }
    auto put = hub_.st_.Put(appcontext::ReportSeqKey(ck_), std::to_string(r.seq()));
    if (!put.ok()) return Close(ToGrpc(Unavailable("store: " + put.status().message())));
    HubMetrics::Get().reports->Increment();
    pb::HubMessage ack;
    ack.mutable_report_ack()->set_seq(r.seq());
    Send(std::move(ack));
  }

  void Send(pb::HubMessage m) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (finished_) return;
    out_.push_back(std::move(m));
    WriteNext();
  }

  // mu_ held.
  void WriteNext() {
    if (writing_ || finished_ || out_.empty()) return;
    cur_ = std::move(out_.front());
    out_.pop_front();
    writing_ = true;
    auto& m = HubMetrics::Get();
    if (cur_.has_publication()) {
      m.sent_publication->Increment(static_cast<double>(cur_.ByteSizeLong()));
      if (cur_.publication().part() + 1 == cur_.publication().parts()) m.publications->Increment();
    } else {
      m.sent_other->Increment(static_cast<double>(cur_.ByteSizeLong()));
    }
    StartWrite(&cur_);
  }

  void MarkSeen(bool force) {
    const Clock::Time now = hub_.clock_.Now();
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (!force && last_seen_write_ != Clock::Time{} && now - last_seen_write_ < hub_.opt_.seen_every) return;
      last_seen_write_ = now;
    }
    appcontext::Seen s{catalog::NowRfc3339(hub_.clock_), hub_.opt_.replica, drift_.load()};
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      s.agent_version = version_;
    }
    hub_.Seen(ck_, appcontext::ToJson(s).dump());
  }

  void Log(const std::string& what) {
    eco::log::Write(eco::log::Level::kInfo, "agenthub", what, {{"cluster", ck_}});
  }

  Server::Impl& hub_;
  const catalog::AgentIdentity who_;
  const std::string ck_;
  const std::string credential_;

  std::recursive_mutex mu_;
  std::shared_ptr<Stream> self_;  // guarded by mu_: gRPC's hold, until OnDone
  pb::AgentMessage in_;           // guarded by mu_
  pb::HubMessage cur_;            // guarded by mu_: the message being written
  std::deque<pb::HubMessage> out_;  // guarded by mu_
  bool writing_ = false;          // guarded by mu_
  bool finished_ = false;         // guarded by mu_: Finish called
  bool done_ = false;             // guarded by mu_
  bool greeted_ = false;          // guarded by mu_
  bool pump_more_ = false;        // guarded by mu_
  bool pumping_ = false;          // guarded by mu_: a Pump is reading the log
  uint64_t sent_ = 0;             // guarded by mu_ (written by Hello and Pump, on the pool)
  Clock::Time last_seen_write_{};  // guarded by mu_
  std::string version_;            // guarded by mu_: the agent's, from its Hello
  std::atomic<uint64_t> drift_{0};
};

Status Server::Impl::Start() {
  HubMetrics::Get();  // the series exist from the first scrape on
  pool_ = std::make_unique<rsync::Executor>(opt_.workers, clock_);
  ECO_RETURN_IF_ERROR(Arm());

  grpc::ServerBuilder b;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!opt_.cert_pem.empty() && !opt_.key_pem.empty()) {
    grpc::SslServerCredentialsOptions o(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    o.pem_key_cert_pairs.push_back({opt_.key_pem, opt_.cert_pem});
    creds = grpc::SslServerCredentials(o);
  }
  const std::string addr = (opt_.bind.find(':') != std::string::npos ? "[" + opt_.bind + "]" : opt_.bind) + ":" +
                           std::to_string(opt_.port);
  b.AddListeningPort(addr, creds, &port_);
  // Linux's SO_REUSEPORT (gRPC's default) would let a second eco bind the
  // same port and take half of the agents to another store.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.RegisterService(this);
  // Dead peers (a cut link, a NAT that forgot the flow) are found by
  // HTTP/2 pings, not left open for hours.
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  b.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  b.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  server_ = b.BuildAndStart();
  if (!server_ || port_ == 0) return Unavailable("agent server: cannot listen on " + addr);
  return Status::Ok();
}

Status Server::Impl::Arm() {
  auto lost = [this](const Status& s) {
    eco::log::Write(eco::log::Level::kWarn, "agenthub", "store watch ended, again in 1 s: " + s.ToString());
    std::lock_guard<std::mutex> g(mu_);
    if (stopped_ || rearm_ != 0) return;
    rearm_ = clock_.After(std::chrono::seconds(1), [this] { Rearm(); });
  };
  store::WatchCallbacks logs;
  logs.on_events = [this](const std::vector<store::WatchEvent>& evs) { OnLog(evs); };
  logs.on_error = lost;
  ECO_ASSIGN_OR_RETURN(auto lw, st_.Watch(appcontext::LogPrefix(), 0, std::move(logs)));
  store::WatchCallbacks ids;
  ids.on_events = [this](const std::vector<store::WatchEvent>& evs) { OnIdentity(evs); };
  ids.on_error = lost;
  ECO_ASSIGN_OR_RETURN(auto iw, st_.Watch(catalog::AgentIdentityPrefix(), 0, std::move(ids)));
  std::lock_guard<std::mutex> g(mu_);
  log_watch_ = std::move(lw);
  id_watch_ = std::move(iw);
  return Status::Ok();
}

// What happened while the watches were down is not known: every stream
// looks at its log and its credential again.
void Server::Impl::Rearm() {
  std::unique_ptr<store::WatchHandle> a, b;
  {
    std::lock_guard<std::mutex> g(mu_);
    rearm_ = 0;
    if (stopped_) return;
    a = std::move(log_watch_);
    b = std::move(id_watch_);
  }
  a.reset();
  b.reset();
  if (Status s = Arm(); !s.ok()) {
    std::lock_guard<std::mutex> g(mu_);
    if (!stopped_ && rearm_ == 0) rearm_ = clock_.After(std::chrono::seconds(1), [this] { Rearm(); });
    return;
  }
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [k, w] : streams_) {
      if (auto s = w.lock()) all.push_back(std::move(s));
    }
  }
  for (auto& s : all) {
    pool_->Post([s] {
      s->Recheck();
      s->Pump();
    });
  }
}

void Server::Impl::Stop() {
  std::unique_ptr<store::WatchHandle> a, b;
  Clock::TimerId t = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopped_ = true;
    t = rearm_;
    rearm_ = 0;
    a = std::move(log_watch_);
    b = std::move(id_watch_);
  }
  if (t != 0) clock_.Cancel(t);
  a.reset();
  b.reset();
  std::vector<std::shared_ptr<Stream>> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [k, w] : streams_) {
      if (auto s = w.lock()) all.push_back(std::move(s));
    }
  }
  for (auto& s : all) s->Close({grpc::StatusCode::UNAVAILABLE, "hub stopping"});
  all.clear();
  if (server_) server_->Shutdown(ToSystem(clock_.WallNow() + std::chrono::seconds(5)));
  server_.reset();
  if (pool_) pool_->Shutdown();
  FlushSeen();  // the streams' last contacts (closing marks each one)
}

size_t Server::Impl::Streams() {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (auto& [k, w] : streams_) n += w.expired() ? 0 : 1;
  return n;
}

grpc::ServerUnaryReactor* Server::Impl::Enroll(grpc::CallbackServerContext* ctx, const pb::EnrollRequest* req,
                                               pb::EnrollReply* rep) {
  auto* r = ctx->DefaultReactor();
  auto who = catalog::Enroll(st_, clock_, req->token());
  if (!who.ok()) {
    r->Finish(ToGrpc(who.status()));
    return r;
  }
  eco::log::Write(eco::log::Level::kInfo, "agenthub", "cluster enrolled", {{"cluster", who->key()}});
  rep->set_provider(who->provider);
  rep->set_cluster(who->cluster);
  rep->set_credential(who->credential);
  r->Finish(grpc::Status::OK);
  return r;
}

grpc::ServerBidiReactor<pb::AgentMessage, pb::HubMessage>* Server::Impl::Connect(grpc::CallbackServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  std::string cred;
  if (it != md.end()) {
    std::string v(it->second.data(), it->second.size());
    if (v.rfind("Bearer ", 0) == 0) cred = v.substr(7);
  }
  if (cred.empty()) return new Refuse({grpc::StatusCode::UNAUTHENTICATED, "no agent credential"});
  auto who = catalog::Authenticate(st_, cred);
  if (!who.ok()) return new Refuse(ToGrpc(who.status()));
  auto s = std::make_shared<Stream>(*this, std::move(*who), std::move(cred));
  s->Begin(s);
  return s.get();
}

void Server::Impl::Register(const std::string& ck, const std::shared_ptr<Stream>& s) {
  std::shared_ptr<Stream> old;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& slot = streams_[ck];
    old = slot.lock();
    slot = s;
  }
  if (old && old != s) old->Close({grpc::StatusCode::ABORTED, "replaced by a newer connection of the cluster"});
}

void Server::Impl::Unregister(const std::string& ck, const Stream* s) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = streams_.find(ck);
  if (it == streams_.end()) return;
  auto cur = it->second.lock();
  if (!cur || cur.get() == s) streams_.erase(it);
}

std::shared_ptr<Stream> Server::Impl::Find(const std::string& ck) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = streams_.find(ck);
  return it == streams_.end() ? nullptr : it->second.lock();
}

void Server::Impl::OnLog(const std::vector<store::WatchEvent>& evs) {
  const std::string prefix = appcontext::LogPrefix();
  std::set<std::string> woken;
  for (const auto& e : evs) {
    if (e.type != store::WatchEvent::Type::kPut) continue;
    const std::string rest = e.kv.key.substr(prefix.size());
    const std::string ck = rest.substr(0, rest.find('/'));
    if (!woken.insert(ck).second) continue;
    if (auto s = Find(ck)) pool_->Post([s] { s->Pump(); });
  }
}

void Server::Impl::OnIdentity(const std::vector<store::WatchEvent>& evs) {
  const std::string prefix = catalog::AgentIdentityPrefix();
  for (const auto& e : evs) {
    const std::string ck = e.kv.key.substr(prefix.size());
    if (auto s = Find(ck)) pool_->Post([s] { s->Recheck(); });
  }
}

Server::Server(store::Store& st, ServerOptions opt) : impl_(std::make_unique<Impl>(st, std::move(opt))) {}
Server::~Server() { Stop(); }
Status Server::Start() { return impl_->Start(); }
void Server::Stop() { impl_->Stop(); }
int Server::port() const { return impl_->port(); }
size_t Server::Streams() const { return impl_->Streams(); }

}  // namespace eco::agenthub
