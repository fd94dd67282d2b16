// rsync's pure decisions, kept apart from I/O so they can be tested alone:
// EMCO's event/state table, the update diff and the retry backoff.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "appcontext/appcontext.h"

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
// `stop_flag`: the context's stop key is "true". `terminate_queued`: a
// terminate is pending later in the queue (it refuses every other event).
// An event whose running state is the current status was cut short by a
// restart and is resumed.
Decision Decide(std::string_view event, std::string_view current, bool stop_flag,
                bool terminate_queued);

// Apply-type events wait for app dependencies and are cancelled by a queued terminate.
bool IsApplyEvent(std::string_view event);

// The update diff, by name and JSON equality, in `now`'s order: what is new
// in `now` or differs from `before` (nullptr: nothing before). With
// `on_cluster`, an identical resource is kept only when it names it (known
// Applied there); one the earlier revision never got onto the cluster is
// applied too.
std::vector<appcontext::Resource> Changed(const std::vector<appcontext::Resource>& now,
                                          const std::vector<appcontext::Resource>* before,
                                          const std::set<std::string>* on_cluster = nullptr);
// What `before` has and `now` (nullptr: nothing) lacks, in `before`'s order.
std::vector<appcontext::Resource> Removed(const std::vector<appcontext::Resource>& before,
                                          const std::vector<appcontext::Resource>* now);

// Delay before retry number `attempt` (1-based): base * 2^(attempt-1), at
// most `cap`, scaled into [d/2, d] by `jitter` in [0, 1).
std::chrono::milliseconds Backoff(int attempt, std::chrono::milliseconds base,
                                  std::chrono::milliseconds cap, double jitter);

}  // namespace eco::rsync
