// rsync's pure decisions, kept apart from I/O so they can be tested alone:
// EMCO's event/state table, the update diff and the retry backoff.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "appcontext/appcontext.h"
#include "appcontext/records.h"
#include "store/store.h"

namespace eco::rsync {

// One row of EMCO's table (reference 4.2): the AppContext states an event
// is accepted in, and the status written while it runs, after it succeeds
// and after it fails.
struct EventStates {
  std::vector<std::string> accepted;
  std::string running;
  std::string success;
  std::string failure;
};
// nullptr for an unknown event type.
const EventStates* StatesFor(std::string_view event);

// What to do with the first pending event of a context.
struct Decision {
  bool run = false;            // run it, with status := `status` (running state)
  bool change_status = false;  // when skipped: status := `status` (failure state)
  std::string status;
  std::string message;  // why it is skipped
};
// The context's `superseded` key (appcontext::SupersededKey): an update
// replacing it was queued.
struct Supersession {
  std::string by;             // the context that update is queued on; "" = none
  bool event_before = false;  // the event at hand was queued before that update
};
// `stop_flag`: the context's stop key is "true". `terminate_queued`: a
// terminate is pending later in the queue (it refuses every other event).
// An event whose running state is the current status was cut short by a
// restart and is resumed. An instantiate or update queued before the
// update that supersedes the context is refused; a superseded context
// accepts update-delete (and, as a rollback target, update) also when its
// deployment ended InstantiateFailed.
Decision Decide(std::string_view event, std::string_view current, bool stop_flag,
                bool terminate_queued, const Supersession& superseded = {});

// Apply-type events wait for app dependencies and are cancelled by a queued
// terminate or by an update that supersedes their context.
bool IsApplyEvent(std::string_view event);

// One entry of a context's event queue.
struct QueuedEvent {
  std::string type;
  std::string status;  // "pending", "done", "error", "skip"
  std::string other;
  store::Revision created = 0;  // when it was queued (create revision of its key)
};
// The last instantiate or update (not resync) of `queue` queued before
// revision `before`; nullptr when there is none.
const QueuedEvent* LastApplyBefore(const std::vector<QueuedEvent>& queue, store::Revision before);
// `queue` still has an instantiate or update pending that was queued before `before`.
bool ApplyPendingBefore(const std::vector<QueuedEvent>& queue, store::Revision before);
// The contexts whose objects an update of `self` from `from` (queued at
// revision `at`) replaces on the clusters: `from`, and, for as long as the
// last instantiate or update of one (queued before `at`) is an update that
// did not succeed, the context that update came from, since nothing has
// removed its objects yet. Each context once, never `self`. `queue_of`
// gives a context's queue.
std::vector<std::string> ReplacedChain(
    const std::string& self, const std::string& from, store::Revision at,
    const std::function<const std::vector<QueuedEvent>&(const std::string&)>& queue_of);

// The resources an update from `other` may leave alone on a cluster whose
// record is `rec`: those Applied there, by `other` itself unless `other`
// finished deploying everywhere (then whatever applied them had `other`'s
// content). After a revision cut short, an object Applied by an older one
// may differ from `other`'s.
std::set<std::string> KnownOnCluster(const appcontext::DeployedRecord& rec,
                                     const std::string& other, bool other_complete);

// The update diff, by name and JSON equality, in `now`'s order: what is new
// in `now` or differs from `before` (nullptr: nothing before). With
// `on_cluster`, an identical resource is kept only when it names it (known
// Applied there); one the earlier revision never got onto the cluster is
// applied too.
// The pointers are into `now` (Changed) and `before` (Removed).
std::vector<const appcontext::Resource*> Changed(const std::vector<appcontext::Resource>& now,
                                                 const std::vector<appcontext::Resource>* before,
                                                 const std::set<std::string>* on_cluster = nullptr);
// What `before` has and `now` (nullptr: nothing) lacks, in `before`'s order.
std::vector<const appcontext::Resource*> Removed(const std::vector<appcontext::Resource>& before,
                                                 const std::vector<appcontext::Resource>* now);

// Delay before retry number `attempt` (1-based): base * 2^(attempt-1), at
// most `cap`, scaled into [d/2, d] by `jitter` in [0, 1).
std::chrono::milliseconds Backoff(int attempt, std::chrono::milliseconds base,
                                  std::chrono::milliseconds cap, double jitter);

// Service discovery (appcontext::kDiscoverAnnotation). Where clients on
// other clusters reach `service` (as read from its cluster) on its port
// `port`: its LoadBalancer ingress IPs on that port, or else the addresses
// of `nodes` (ExternalIP before InternalIP, Ready nodes only) on the port's
// nodePort. Waiting while the cluster has not assigned them yet; Invalid
// when the Service cannot be reached from outside its cluster.
struct ServiceAddress {
  std::vector<std::string> ips;
  int port = 0;
};
Result<ServiceAddress> ReachableAddress(const nlohmann::json& service, const std::vector<nlohmann::json>& nodes,
                                        int port);
// Whether ReachableAddress needs the nodes of the Service's cluster.
bool NeedsNodes(const nlohmann::json& service);
// `endpoints` with each address added to the subset of its port (a new
// subset for a new port), named and typed as `port_name`/`protocol`.
nlohmann::json WithAddresses(nlohmann::json endpoints, const ServiceAddress& a, const std::string& port_name,
                             const std::string& protocol);

}  // namespace eco::rsync
