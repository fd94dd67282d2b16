#include "agent/link.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "agent/agent.grpc.pb.h"
#include "appcontext/agent_log.h"
#include "rsync/executor.h"
#include "rsync/logic.h"

namespace eco::agent {

namespace pb = eco::agent::v1;
using nlohmann::json;

namespace {

struct Target {
  std::string address;
  bool tls = false;
};

Result<Target> ParseHub(const std::string& hub) {
  Target t;
  std::string rest = hub;
  if (rest.rfind("https://", 0) == 0) {
    t.tls = true;
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos)
    return Invalid("--hub: expected http(s)://host[:port] or host:port, got '" + hub + "'");
  // A port is given unless the text ends in a host (IPv6 in brackets).
  const size_t colon = rest.rfind(':');
  const size_t bracket = rest.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) rest += ":9070";
  t.address = rest;
  return t;
}

std::shared_ptr<grpc::Channel> Dial(const LinkOptions& opt, const Target& t) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (t.tls) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = opt.ca_pem;
    creds = grpc::SslCredentials(o);
  }
  grpc::ChannelArguments args;
  // A dead path (NAT timeout, a cut cellular link) is noticed in ~40 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Our own backoff decides when to dial again.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  args.SetMaxReceiveMessageSize(8 << 20);
  // A connection of its own: gRPC would otherwise share one between the
  // channels of a process (fleet mode's agents), unlike real agents.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(t.address, creds, args);
}

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  const std::string m = what + ": " + s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::OK: return Status::Ok();
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED: return PermissionDenied(m);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION: return Invalid(m);
    default: return Unavailable(m);
  }
}

Result<Identity> ParseIdentity(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.value("credential", json()).is_string() || !j.value("provider", json()).is_string() ||
      !j.value("cluster", json()).is_string())
    return Internal("the kept agent identity is malformed");
  return Identity{j["provider"].get<std::string>(), j["cluster"].get<std::string>(),
                  j["credential"].get<std::string>()};
}

}  // namespace

Result<Identity> ObtainIdentity(const LinkOptions& opt, const StateStorage& storage) {
  // The kept identity wins over the token: a restarted agent keeps its
  // original command line, whose token is used up.
  ECO_ASSIGN_OR_RETURN(auto kept, storage.load_identity());
  if (kept) return ParseIdentity(*kept);
  if (opt.token.empty()) return Invalid("no identity is kept in the cluster and no bootstrap token was given");
  ECO_ASSIGN_OR_RETURN(Target t, ParseHub(opt.hub));
  auto stub = pb::AgentHub::NewStub(Dial(opt, t));
  grpc::ClientContext ctx;
  Clock& clock = opt.clock != nullptr ? *opt.clock : RealClock();
  ctx.set_deadline(ToSystem(clock.WallNow() + std::chrono::seconds(30)));
  pb::EnrollRequest req;
  req.set_token(opt.token);
  pb::EnrollReply rep;
  ECO_RETURN_IF_ERROR(FromGrpc(stub->Enroll(&ctx, req, &rep), "enrolling at " + t.address));
  Identity id{rep.provider(), rep.cluster(), rep.credential()};
  ECO_RETURN_IF_ERROR(storage.save_identity(
      json{{"provider", id.provider}, {"cluster", id.cluster}, {"credential", id.credential}}.dump()));
  return id;
}

struct Link::Hub {
  std::unique_ptr<pb::AgentHub::Stub> stub;
};

Link::Link(LinkOptions opt, Identity id, Runner& runner, StateStorage storage)
    : opt_(std::move(opt)),
      id_(std::move(id)),
      runner_(runner),
      storage_(std::move(storage)),
      clock_(opt_.clock != nullptr ? *opt_.clock : RealClock()),
      random_(opt_.random != nullptr ? *opt_.random : ProcessRandom()) {
  if (opt_.executor != nullptr) {
    exec_ = opt_.executor;
  } else {
    own_exec_ = std::make_unique<rsync::Executor>(1, clock_);
    exec_ = own_exec_.get();
  }
}

Link::~Link() {
  Stop();
  {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [this] { return !started_ || ended_; });
  }
  life_.Close();
  if (own_exec_) own_exec_->Shutdown();
}

void Link::Log(const std::string& s) const {
  if (opt_.log) opt_.log(s);
}

namespace {
// A save of the state or a report that failed is tried again this often.
constexpr auto kRetryPause = std::chrono::seconds(1);
// While revisions keep moving, the state is saved at most this often
// (a publication to acknowledge is saved at once).
constexpr auto kSaveEvery = std::chrono::seconds(5);
}  // namespace

// One stream. Its reads and writes complete on gRPC's threads; what they
// bring, and what the agent has to say, is handled on the link's executor,
// one message and one tick at a time. It owns itself from Begin to OnDone;
// work in flight for it holds a reference too.
class Link::Session final : public grpc::ClientBidiReactor<pb::AgentMessage, pb::HubMessage>,
                            public std::enable_shared_from_this<Session> {
 public:
  Session(Link& l, uint64_t report_after) : l_(l), report_after_(report_after), last_ping_(l.clock_.Now()) {}

  // Opens the stream and says Hello. Called once, under the link's lock.
  void Begin(pb::AgentHub::Stub& stub) {
    self_ = shared_from_this();
    ctx_.AddMetadata("authorization", "Bearer " + l_.id_.credential);
    stub.async()->Connect(&ctx_, this);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_have_revision(l_.runner_.HaveRevision());
    hello.mutable_hello()->set_version(l_.opt_.version);
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      Send(std::move(hello));
      // Held until reads end: writes are started from the executor too,
      // which a finished call must not see.
      AddHold();
      StartRead(&in_);
    }
    StartCall();
  }

  // Ends the stream (once); OnDone follows.
  void End(const std::string& what) {
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (end_what_.empty()) end_what_ = what;
    }
    ctx_.TryCancel();
    ReadsOver();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return ReadsOver();
    auto m = std::make_shared<pb::HubMessage>();
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      m->Swap(&in_);
    }
    l_.exec_->Post(l_.life_.Wrap([self = shared_from_this(), m] { self->Handle(*m); }));
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> g(mu_);
    writing_ = false;
    if (!ok) {
      out_.clear();  // the stream is broken: its reads end too
      return;
    }
    WriteNext();
  }

  void OnDone(const grpc::Status& s) override {
    l_.runner_.OnChange(nullptr);
    std::string what;
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      what = end_what_.empty() ? "the hub closed the stream" : end_what_;
    }
    Status why = s.ok() ? Unavailable(what) : FromGrpc(s, what);
    std::shared_ptr<Session> self = std::move(self_);
    l_.exec_->Post(l_.life_.Wrap([self, why] { self->l_.Ended(*self, why); }));
  }

  // Something changed: a tick comes after the coalescing pause.
  void Poke() { Schedule(l_.opt_.report_every); }

  bool greeted() {
    std::lock_guard<std::recursive_mutex> g(mu_);
    return greeted_;
  }
  uint64_t received() const { return received_; }
  uint64_t received_bytes() const { return received_bytes_; }
  // The hub stored a report of this process: its report seq is in this
  // process's numbering from now on.
  bool report_acked() {
    std::lock_guard<std::recursive_mutex> g(mu_);
    return report_acked_;
  }

 private:
  // mu_ held. Queues a message; one write is in flight at a time.
  void Send(pb::AgentMessage m) {
    if (reads_over_) return;
    out_.push_back(std::move(m));
    WriteNext();
  }

  // mu_ held.
  void WriteNext() {
    if (writing_ || out_.empty() || reads_over_) return;
    cur_ = std::move(out_.front());
    out_.pop_front();
    writing_ = true;
    StartWrite(&cur_);
  }

  // The hold goes (once): after it, nothing new is started on the call.
  void ReadsOver() {
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (reads_over_) return;
      reads_over_ = true;
    }
    RemoveHold();
  }

  // On the executor.
  void Handle(const pb::HubMessage& m) {
    std::string bad = Take(m);
    if (!bad.empty()) return End(bad);
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (!reads_over_) StartRead(&in_);
  }

  // What ends the stream, or "" to read on.
  std::string Take(const pb::HubMessage& m) {
    if (!greeted()) {
      if (m.body_case() != pb::HubMessage::kWelcome) return "the hub did not answer Hello with Welcome";
      // Reports the hub already stored are not sent again; after a
      // restart from an older snapshot, local revisions were reused: send
      // them all.
      uint64_t acked_sent = 0;
      {
        std::lock_guard<std::recursive_mutex> g(mu_);
        acked_report_ = std::min<uint64_t>(m.welcome().report_seq(), report_after_);
        if (l_.runner_.Revision() < acked_report_) acked_report_ = 0;
        acked_sent_ = acked_sent = l_.runner_.HaveRevision();
        greeted_ = true;
      }
      l_.Log("connected to the hub as " + l_.id_.key() + " (it has published " +
             std::to_string(m.welcome().last_revision()) + ", we have " + std::to_string(acked_sent) + ")");
      l_.runner_.OnChange([w = weak_from_this()] {
        if (auto s = w.lock()) s->Poke();
      });
      Schedule(Clock::Duration::zero());
      return "";
    }
    switch (m.body_case()) {
      case pb::HubMessage::kPublication: {
        const auto& p = m.publication();
        if (p.part() == 0) {
          assembling_.clear();
          assembling_rev_ = p.revision();
        }
        if (p.revision() != assembling_rev_ || p.parts() == 0 || p.part() >= p.parts())
          return "a publication arrived out of order";
        assembling_ += p.data();
        if (p.part() + 1 < p.parts()) return "";
        l_.publication_bytes_ += assembling_.size();
        ++received_;
        received_bytes_ += assembling_.size();
        auto pub = appcontext::DecodePublication(assembling_);
        assembling_.clear();
        if (!pub.ok() || pub->revision != assembling_rev_)
          return "publication " + std::to_string(assembling_rev_) +
                 " is malformed: " + (pub.ok() ? "revision differs" : pub.status().message());
        Status s = l_.runner_.Accept(*pub);
        if (!s.ok()) return "publication " + std::to_string(assembling_rev_) + " refused: " + s.message();
        ++l_.publications_;
        Poke();
        return "";
      }
      case pb::HubMessage::kReportAck: {
        std::lock_guard<std::recursive_mutex> g(mu_);
        acked_report_ = std::max<uint64_t>(acked_report_, m.report_ack().seq());
        report_acked_ = true;
        return "";
      }
      default:
        return "";
    }
  }

  // A tick `after` from now, unless one is posted already.
  void Schedule(Clock::Duration after) {
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (tick_posted_ || reads_over_) return;
      tick_posted_ = true;
    }
    l_.exec_->PostAfter(after, l_.life_.Wrap([w = weak_from_this()] {
      if (auto s = w.lock()) s->Tick();
    }));
  }

  // A wake at `when` (one timer at a time: the earliest wanted).
  void WakeAt(Clock::Time when) {
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      if (reads_over_ || (timer_set_ && timer_at_ <= when)) return;
      timer_set_ = true;
      timer_at_ = when;
    }
    l_.exec_->PostAt(when, l_.life_.Wrap([w = weak_from_this(), when] {
      auto s = w.lock();
      if (!s) return;
      {
        std::lock_guard<std::recursive_mutex> g(s->mu_);
        if (s->timer_at_ == when) s->timer_set_ = false;
      }
      s->Schedule(Clock::Duration::zero());
    }));
  }

  // Persists, acknowledges, reports and pings; one tick at a time.
  void Tick() {
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      tick_posted_ = false;
      if (reads_over_) return;
      if (ticking_) {
        tick_again_ = true;
        return;
      }
      ticking_ = true;
    }
    const Clock::Time next = TickOnce();
    WakeAt(next);
    bool again = false;
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      ticking_ = false;
      std::swap(again, tick_again_);
    }
    if (again) Schedule(Clock::Duration::zero());
  }

  // When the next tick is due at the latest.
  Clock::Time TickOnce() {
    const Clock::Time now = l_.clock_.Now();
    Clock::Time next = last_ping_ + l_.opt_.ping_every;
    // What the hub sent is acknowledged only once it is in the cluster.
    const uint64_t have = l_.runner_.HaveRevision();
    const uint64_t rev = l_.runner_.Revision();
    uint64_t acked_sent = 0, acked_report = 0;
    {
      std::lock_guard<std::recursive_mutex> g(mu_);
      acked_sent = acked_sent_;
      acked_report = acked_report_;
    }
    const bool must = have > acked_sent;
    if (rev != saved_rev_) {
      if (must || now - last_save_ >= kSaveEvery) {
        Status s = l_.storage_.save_state(l_.runner_.Snapshot());
        if (s.ok()) {
          saved_rev_ = rev;
          last_save_ = now;
          if (must) {
            pb::AgentMessage ack;
            ack.mutable_ack()->set_revision(have);
            std::lock_guard<std::recursive_mutex> g(mu_);
            Send(std::move(ack));
            acked_sent_ = have;
          }
        } else {
          l_.Log("saving the agent's state in the cluster failed (acknowledgement withheld): " + s.ToString());
          next = std::min(next, now + kRetryPause);
        }
      } else {
        next = std::min(next, last_save_ + kSaveEvery);
      }
    }
    if (rev > reported_) {
      auto rep = l_.runner_.ReportSince(acked_report);
      if (rep.ok() && !rep->items.empty()) {
        pb::AgentMessage out;
        auto* r = out.mutable_report();
        r->set_seq(rep->seq);
        r->set_drift_repaired(l_.runner_.DriftRepaired());
        for (const auto& it : rep->items) {
          if (it.kind == ReportItem::Kind::kOutcome) {
            auto o = appcontext::ParseOutcome(it.json);
            if (!o.ok()) continue;
            auto* po = r->add_outcomes();
            po->set_context(it.context);
            po->set_event(std::to_string(it.event));
            po->set_app(it.app);
            po->set_ok(o->ok);
            po->set_message(o->message);
            po->set_own_failure(o->own_failure);
          } else {
            auto* pr = r->add_records();
            pr->set_kind(it.kind == ReportItem::Kind::kDeployed ? pb::Record::DEPLOYED
                         : it.kind == ReportItem::Kind::kDrift  ? pb::Record::DRIFT
                                                                : pb::Record::READY);
            pr->set_status_context(it.status_context);
            pr->set_app(it.app);
            pr->set_json(it.json);
          }
        }
        std::lock_guard<std::recursive_mutex> g(mu_);
        Send(std::move(out));
      }
      if (rep.ok()) {
        reported_ = rep->seq;
      } else {
        next = std::min(next, now + kRetryPause);
      }
    }
    if (now - last_ping_ >= l_.opt_.ping_every) {
      pb::AgentMessage ping;
      ping.mutable_ping()->set_sent_unix_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(l_.clock_.WallNow().time_since_epoch()).count());
      {
        std::lock_guard<std::recursive_mutex> g(mu_);
        Send(std::move(ping));
      }
      last_ping_ = now;
      next = std::min(next, now + l_.opt_.ping_every);
    }
    return next;
  }

  Link& l_;
  const uint64_t report_after_;
  grpc::ClientContext ctx_;
  std::shared_ptr<Session> self_;  // from Begin to OnDone
  std::recursive_mutex mu_;
  pb::HubMessage in_;                  // guarded by mu_: the read in flight
  pb::AgentMessage cur_;               // guarded by mu_: the write in flight
  std::deque<pb::AgentMessage> out_;   // guarded by mu_
  bool writing_ = false;               // guarded by mu_
  bool reads_over_ = false;            // guarded by mu_
  std::string end_what_;               // guarded by mu_
  bool greeted_ = false;               // guarded by mu_
  uint64_t acked_report_ = 0;          // guarded by mu_
  bool report_acked_ = false;          // guarded by mu_
  uint64_t acked_sent_ = 0;            // guarded by mu_
  bool tick_posted_ = false, ticking_ = false, tick_again_ = false;  // guarded by mu_
  bool timer_set_ = false;             // guarded by mu_
  Clock::Time timer_at_{};             // guarded by mu_
  // The reads' (one message at a time, on the executor).
  std::string assembling_;
  uint64_t assembling_rev_ = 0;
  std::atomic<uint64_t> received_{0}, received_bytes_{0};
  // The ticks' (one at a time).
  Clock::Time last_ping_, last_save_{};
  uint64_t saved_rev_ = 0, reported_ = 0;
};

void Link::Start(std::function<void(Status)> done) {
  auto t = ParseHub(opt_.hub);
  {
    std::lock_guard<std::mutex> g(mu_);
    if (started_) return;
    started_ = true;
    done_ = std::move(done);
    report_after_ = runner_.RestoredRevision();
    if (t.ok()) {
      hub_ = std::make_unique<Hub>();
      hub_->stub = pb::AgentHub::NewStub(Dial(opt_, *t));
    }
  }
  if (!t.ok()) return Finish(t.status());
  Connect();
}

void Link::Connect() {
  std::lock_guard<std::mutex> g(mu_);
  if (stopping_ || ended_) return;
  ++connects_;
  session_ = std::make_shared<Session>(*this, report_after_);
  session_->Begin(*hub_->stub);
}

void Link::Ended(Session& s, Status why) {
  Clock::Duration pause{};
  {
    std::lock_guard<std::mutex> g(mu_);
    if (session_.get() == &s) session_.reset();
    if (s.greeted()) attempt_ = 0;
    // Until the hub has stored a report of this process, its report seq
    // may be the killed process's, numbered past the restored snapshot.
    if (s.report_acked()) report_after_ = UINT64_MAX;
    if (!stopping_ && why.code() != Code::kPermissionDenied)
      pause = rsync::Backoff(++attempt_, opt_.retry_base, opt_.retry_cap, random_.Uniform());
  }
  if (stopping()) {
    Log("stopping: the last stream brought " + std::to_string(s.received()) + " publications (" +
        std::to_string(s.received_bytes()) + " bytes); " + std::to_string(runner_.AlreadyHeld()) +
        " publications were sent again that were already held");
    return Finish(Status::Ok());
  }
  if (why.code() == Code::kPermissionDenied) {
    Log("the hub refused this cluster: " + why.message());
    return Finish(why);
  }
  Log("stream to the hub ended (" + why.message() + ") after " + std::to_string(s.received()) + " publications (" +
      std::to_string(s.received_bytes()) + " bytes); again in " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()) + " ms");
  exec_->PostAfter(pause, life_.Wrap([this] { Connect(); }));
}

bool Link::stopping() {
  std::lock_guard<std::mutex> g(mu_);
  return stopping_;
}

void Link::Finish(Status why) {
  std::function<void(Status)> done;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (ended_) return;
    ended_ = true;
    done = std::move(done_);
  }
  cv_.notify_all();
  if (done) done(why);
}

void Link::Stop() {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
    s = session_;
  }
  if (s) return s->End("stopping");
  // Between streams: a reconnect posted finds the link stopping.
  Log("stopping between connections");
  Finish(Status::Ok());
}

}  // namespace eco::agent
