// The agent's own keys in its own store (runner.h), beside the AppContext
// layout it copies from the hub (appcontext/). Spelled here only.
#pragma once

#include <cstdint>
#include <string>

namespace eco::agent::local {

// The newest publication revision taken in.
inline std::string HaveKey() { return "/eco/agent-local/have"; }
// How app `app` of event `ev` of context `ctx` ended here (an Outcome).
inline std::string OutcomePrefix() { return "/eco/agent-local/out/"; }
inline std::string OutcomeKey(const std::string& ctx, int64_t ev, const std::string& app) {
  return OutcomePrefix() + ctx + "/" + std::to_string(ev) + "/" + app;
}
// What the hub said of an event beyond its record: {"otherComplete"}.
inline std::string EventInfoPrefix() { return "/eco/agent-local/event/"; }
inline std::string EventInfoKey(const std::string& ctx, int64_t ev) {
  return EventInfoPrefix() + ctx + "/" + std::to_string(ev);
}
// The status contexts records are kept under (value empty).
inline std::string StatusContextPrefix() { return "/eco/agent-local/sc/"; }

}  // namespace eco::agent::local
