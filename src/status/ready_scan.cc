#include "status/ready_scan.h"

#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"

namespace eco::status {

Result<WatchedContexts> ReadWatchedContexts(store::Store& st) {
  WatchedContexts want;
  appcontext::Contexts contexts(st);
  for (const char* type : {"deploymentIntentGroup", "logicalCloud"}) {
    auto r = st.Range(catalog::StatePrefix(type));
    if (!r.ok()) return r.status();
    for (const auto& kv : r->kvs) {
      // A malformed record is logged (once) by the catalog; the others
      // are still watched.
      auto rec = catalog::LifecycleStateOf(kv);
      if (!rec.ok() || rec->actions.empty()) continue;
      const catalog::LifecycleAction& last = rec->actions.back();
      const std::string& state = last.state;
      const std::string& instance = last.instance;
      if (instance.empty()) continue;
      bool watch = state == "Instantiated" || state == "InstantiateStopped";
      if (state == "Terminated" || state == "TerminateStopped") {
        auto s = contexts.GetStatus(instance);
        watch = s.ok() && !s->empty() && *s != "Terminated" && *s != "TerminateFailed";
      }
      if (!watch) continue;
      std::string sctx = rec->status_context;
      if (sctx.empty()) sctx = instance;
      want[sctx] = instance;
    }
  }
  return want;
}

std::optional<WatchedContexts> ContextScan::Scan() {
  // Read before the records: a write during this scan makes the next one full.
  rev_.reset();
  if (skip_unchanged_) {
    auto r = st_.CurrentRevision();
    if (r.ok()) rev_ = *r;
    if (rev_ && rev_ == scanned_rev_) {
      ++skipped_;
      return std::nullopt;
    }
  }
  ++full_;
  auto want = ReadWatchedContexts(st_);
  if (!want.ok()) return std::nullopt;  // the store is down: try again at the next scan
  return std::move(*want);
}

}  // namespace eco::status
