#include "agent/link.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/agent.grpc.pb.h"
#include "appcontext/agent_log.h"
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

Link::Link(LinkOptions opt, Identity id, Runner& runner, StateStorage storage)
    : opt_(std::move(opt)),
      id_(std::move(id)),
      runner_(runner),
      storage_(std::move(storage)),
      clock_(opt_.clock != nullptr ? *opt_.clock : RealClock()),
      random_(opt_.random != nullptr ? *opt_.random : ProcessRandom()) {}

void Link::Log(const std::string& s) const {
  if (opt_.log) opt_.log(s);
}

// One stream: the caller's thread reads, a second thread writes.
class Link::Session {
 public:
  Session(Link& l, pb::AgentHub::Stub& stub, const std::atomic<bool>& stop, uint64_t report_after)
      : l_(l), stub_(stub), stop_(stop), report_after_(report_after) {}

  // Returns why the stream ended; *greeted when it got as far as Welcome.
  Status Serve(bool* greeted) {
    ctx_.AddMetadata("authorization", "Bearer " + l_.id_.credential);
    stream_ = stub_.Connect(&ctx_);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_have_revision(l_.runner_.HaveRevision());
    hello.mutable_hello()->set_version(l_.opt_.version);
    if (!stream_->Write(hello)) return End("the hub closed the stream");
    pb::HubMessage m;
    if (!stream_->Read(&m)) return End("the hub closed the stream");
    if (m.body_case() != pb::HubMessage::kWelcome) {
      ctx_.TryCancel();
      return End("the hub did not answer Hello with Welcome");
    }
    *greeted = true;
    // Reports the hub already stored are not sent again; after a restart
    // from an older snapshot, local revisions were reused: send them all.
    {
      std::lock_guard<std::mutex> g(mu_);
      acked_report_ = std::min<uint64_t>(m.welcome().report_seq(), report_after_);
      if (l_.runner_.Revision() < acked_report_) acked_report_ = 0;
      acked_sent_ = l_.runner_.HaveRevision();
    }
    l_.Log("connected to the hub as " + l_.id_.key() + " (it has published " +
           std::to_string(m.welcome().last_revision()) + ", we have " + std::to_string(acked_sent_) + ")");
    l_.runner_.OnChange([this] { Poke(); });
    std::thread writer([this] { Write(); });
    Status why = Read();
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    writer.join();
    l_.runner_.OnChange(nullptr);
    return why;
  }

  uint64_t received() const { return received_; }
  // The hub stored a report of this process: its report seq is in this
  // process's numbering from now on.
  bool report_acked() {
    std::lock_guard<std::mutex> g(mu_);
    return report_acked_;
  }
  uint64_t received_bytes() const { return received_bytes_; }

  uint64_t acked_report() {
    std::lock_guard<std::mutex> g(mu_);
    return acked_report_;
  }

 private:
  Status Read() {
    pb::HubMessage m;
    std::string assembling;
    uint64_t assembling_rev = 0;
    while (stream_->Read(&m)) {
      switch (m.body_case()) {
        case pb::HubMessage::kPublication: {
          const auto& p = m.publication();
          if (p.part() == 0) {
            assembling.clear();
            assembling_rev = p.revision();
          }
          if (p.revision() != assembling_rev || p.parts() == 0 || p.part() >= p.parts()) {
            ctx_.TryCancel();
            return End("a publication arrived out of order");
          }
          assembling += p.data();
          if (p.part() + 1 < p.parts()) break;
          l_.publication_bytes_ += assembling.size();
          ++received_;
          received_bytes_ += assembling.size();
          auto pub = appcontext::DecodePublication(assembling);
          assembling.clear();
          if (!pub.ok() || pub->revision != assembling_rev) {
            ctx_.TryCancel();
            return End("publication " + std::to_string(assembling_rev) + " is malformed: " +
                       (pub.ok() ? "revision differs" : pub.status().message()));
          }
          Status s = l_.runner_.Accept(*pub);
          if (!s.ok()) {
            ctx_.TryCancel();
            return End("publication " + std::to_string(assembling_rev) + " refused: " + s.message());
          }
          ++l_.publications_;
          Poke();
          break;
        }
        case pb::HubMessage::kReportAck: {
          std::lock_guard<std::mutex> g(mu_);
          acked_report_ = std::max<uint64_t>(acked_report_, m.report_ack().seq());
          report_acked_ = true;
          break;
        }
        default:
          break;
      }
    }
    return End("the hub closed the stream");
  }

  // Persists, acknowledges, reports and pings until the stream ends.
  void Write() {
    Clock::Time last_ping = l_.clock_.Now(), last_save = Clock::Time{};
    uint64_t saved_rev = 0, reported = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        l_.clock_.WaitFor(cv_, lk, l_.opt_.report_every, [&] { return done_ || poked_; });
        poked_ = false;
        if (done_) return;
      }
      if (stop_.load()) {
        ctx_.TryCancel();
        return;
      }
      const Clock::Time now = l_.clock_.Now();
      // What the hub sent is acknowledged only once it is in the cluster.
      const uint64_t have = l_.runner_.HaveRevision();
      const uint64_t rev = l_.runner_.Revision();
      const bool must = have > acked_sent_;
      if (rev != saved_rev && (must || now - last_save >= std::chrono::seconds(5))) {
        const std::string snap = l_.runner_.Snapshot();
        Status s = l_.storage_.save_state(snap);
        if (s.ok()) {
          saved_rev = rev;
          last_save = now;
          if (must) {
            pb::AgentMessage ack;
            ack.mutable_ack()->set_revision(have);
            if (!stream_->Write(ack)) return;
            acked_sent_ = have;
          }
        } else {
          l_.Log("saving the agent's state in the cluster failed (acknowledgement withheld): " + s.ToString());
        }
      }
      if (rev > reported) {
        auto rep = l_.runner_.ReportSince(acked_report());
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
              pr->set_kind(it.kind == ReportItem::Kind::kDeployed ? pb::Record::DEPLOYED : pb::Record::READY);
              pr->set_status_context(it.status_context);
              pr->set_app(it.app);
              pr->set_json(it.json);
            }
          }
          if (!stream_->Write(out)) return;
        }
        if (rep.ok()) reported = rep->seq;
      }
      if (now - last_ping >= l_.opt_.ping_every) {
        pb::AgentMessage ping;
        ping.mutable_ping()->set_sent_unix_ms(
            std::chrono::duration_cast<std::chrono::milliseconds>(l_.clock_.WallNow().time_since_epoch()).count());
        if (!stream_->Write(ping)) return;
        last_ping = now;
      }
    }
  }

  void Poke() {
    {
      std::lock_guard<std::mutex> g(mu_);
      poked_ = true;
    }
    cv_.notify_all();
  }

  Status End(const std::string& what) {
    grpc::Status s = stream_->Finish();
    if (s.ok()) return Unavailable(what);
    return FromGrpc(s, what);
  }

  Link& l_;
  pb::AgentHub::Stub& stub_;
  const std::atomic<bool>& stop_;
  const uint64_t report_after_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::HubMessage>> stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;           // guarded by mu_
  bool poked_ = false;          // guarded by mu_
  uint64_t acked_report_ = 0;   // guarded by mu_
  bool report_acked_ = false;   // guarded by mu_
  uint64_t acked_sent_ = 0;     // the writer's (set before it starts)
  uint64_t received_ = 0, received_bytes_ = 0;  // the reader's: publications on this stream
};

Status Link::Run(const std::atomic<bool>& stop) {
  ECO_ASSIGN_OR_RETURN(Target t, ParseHub(opt_.hub));
  auto stub = pb::AgentHub::NewStub(Dial(opt_, t));
  int attempt = 0;
  // The first stream after a start may have to resend what the restored
  // snapshot does not know was reported.
  uint64_t report_after = runner_.RestoredRevision();
  while (!stop.load()) {
    ++connects_;
    bool greeted = false;
    Session s(*this, *stub, stop, report_after);
    Status why = s.Serve(&greeted);
    if (greeted) attempt = 0;
    // Until the hub has stored a report of this process, its report seq
    // may be the killed process's, numbered past the restored snapshot.
    if (s.report_acked()) report_after = UINT64_MAX;
    if (stop.load()) {
      Log("stopping: the last stream brought " + std::to_string(s.received()) + " publications (" +
          std::to_string(s.received_bytes()) + " bytes); " + std::to_string(runner_.AlreadyHeld()) +
          " publications were sent again that were already held");
      break;
    }
    if (why.code() == Code::kPermissionDenied) {
      Log("the hub refused this cluster: " + why.message());
      return why;
    }
    const auto d = rsync::Backoff(++attempt, opt_.retry_base, opt_.retry_cap, random_.Uniform());
    Log("stream to the hub ended (" + why.message() + ") after " + std::to_string(s.received()) +
        " publications (" + std::to_string(s.received_bytes()) + " bytes); again in " + std::to_string(d.count()) +
        " ms");
    const Clock::Time until = clock_.Now() + d;
    while (!stop.load() && clock_.Now() < until) clock_.SleepFor(std::chrono::milliseconds(100));
  }
  return Status::Ok();
}

}  // namespace eco::agent
