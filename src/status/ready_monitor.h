// The ready status: what the clusters report about the objects eco deployed.
//
// Which instantiations are watched: every DIG and logical cloud whose state
// record says Instantiated or InstantiateStopped, and those Terminated (or
// TerminateStopped) whose AppContext has not finished terminating yet (so
// the deletions show as NotPresent). The plan watched is the record's
// latest AppContext; the records go under its status context. A context
// that leaves that set stops being watched at the next scan; its records
// stay as they were last written.
//
// Per cluster there is ONE watch per kind any watched context deploys there
// (SharedWatches over WatchHub, all namespaces, label selector
// app.eco.io/context), whatever the number of objects and deployments; each
// context subscribes to it and reads the objects labelled for it. Objects
// are matched to the plan by kind, metadata.name and the app.eco.io/app
// label; each expected object is Ready / NotReady (k8s::CheckReady) or
// NotPresent. A ReadyRecord per app x cluster is written when it differs
// from the stored one, and only once every watch it depends on has listed
// (a cluster never reached keeps no record: the query shows NotPresent).
//
// A facade over layers (docs/status.md, "How the ready monitor is built"):
// ready_scan, ready_plan, ready_starts over shared_watches, ready_judge,
// ready_writer and ready_drift. It holds no thread: every round is a task
// on the executor the options give (`post`), every pause a timer of `clock`.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "k8s/client.h"
#include "k8s/watch.h"
#include "status/ready_clients.h"  // ClientFactory, CatalogClients
#include "store/store.h"

namespace eco::status {

class WatchSource;  // status/shared_watches.h

struct ReadyMonitorOptions {
  ClientFactory clients;  // null: CatalogClients(store)
  // Whether a cluster is watched from here (null: every cluster but agent
  // clusters, whose agents watch and report their own readiness).
  std::function<bool(const std::string& provider, const std::string& cluster)> watched;
  // Scan for contexts to start/stop and retry watches that failed to start
  // this often (a change of a state record also triggers a scan at once).
  std::chrono::milliseconds scan_interval{5000};
  // Watch the state records to scan at once when they change (false: scan
  // every interval and on ScanSoon only; the agent's store has no watches).
  bool watch_states = true;
  // A scan that finds the store's revision where the last complete scan
  // found it only retries the watches that failed to start (nothing
  // lifecycle or plan could have changed). For a store only this process
  // writes (the agent's); etcd's revision moves with every write anywhere.
  bool skip_unchanged = false;
  // Clusters whose watches are being started at once, each a task on
  // `post` (a cluster that is down holds one for the client's connect
  // timeout): fewer than the executor's threads, so that the rounds go on.
  size_t start_threads = 8;
  k8s::WatchHubOptions hub;
  // Watch through this hub instead of one of its own (null): fleet mode's
  // simulated agents share one stream thread. It must outlive the monitor;
  // Stop cancels this monitor's watches only.
  k8s::WatchHub* shared_hub = nullptr;
  // Where the watches come from (null: a WatchHub, `shared_hub` or its own):
  // a simulation feeds them from its in-memory clusters. Must outlive the monitor.
  WatchSource* source = nullptr;
  // Record when each watched cluster was last heard from (any event of its
  // watches but an error: bookmarks and reconnects too) as
  // appcontext::Seen{time, replica} under appcontext::SeenKey, at most once
  // per `seen_every` per cluster (10,000 clusters: ~170 writes/s at 60 s),
  // many per transaction. Off by default: an agent's own monitor has nobody
  // to tell, and its store is saved into its cluster on every change.
  bool record_seen = false;
  std::string replica;  // this process's name in those records
  std::chrono::milliseconds seen_every{60000};
  // Told of each object a watch sees change (added or modified, or
  // `gone`), before readiness filters it, and of each relist with all the
  // kind's objects: the agent's drift repair looks at what these name only.
  // Called on the watch's thread under the monitor's lock: quick, and never
  // calling the monitor.
  std::function<void(const std::string& api_version, const std::string& kind,
                     const nlohmann::json& object, bool gone)>
      on_object;
  // `resource_version`: the list's version ("" when unknown).
  std::function<void(const std::string& api_version, const std::string& kind,
                     const std::vector<nlohmann::json>& items, const std::string& resource_version)>
      on_relist;
  // Drift of push clusters (docs/rollouts.md#drift): an applied object
  // deleted, or changed in a field its manifest sets, by someone else is
  // recorded under appcontext::DriftKey, from these same watches (a
  // change they report is compared with the manifest; only then is the
  // object read). Judged in rounds of their own on `post` (they read the
  // cluster), one at a time.
  bool drift = false;
  // Applies an object again as AppContext `ref` planned it for the
  // cluster (spec.driftPolicy "enforce"): rsync's ApplyAgain, wired in
  // src/cmd. null: drift is recorded, never repaired.
  std::function<Status(const std::string& ref, const std::string& app, const std::string& provider,
                       const std::string& cluster, const std::string& res_name, bool left_out)>
      repair;
  // How soon a change seen while its deployment was busy (an event
  // running) or the cluster did not answer is looked at again.
  std::chrono::milliseconds drift_retry{1000};
  // The executor every round runs on: the scans, the write rounds, the
  // drift rounds and the watch starts are each posted here to run `after`
  // from now; the monitor holds no thread. Required (Start fails without
  // it). Rounds posted after Stop do nothing. `after` zero: ready now,
  // whether or not the clock moves (a fake one may not).
  std::function<void(Clock::Duration after, std::function<void()> round)> post;
  // The scan interval, the writer's coalescing and retry pauses (through
  // `post`) are on this clock and records are stamped with its wall time. Must outlive the monitor.
  Clock* clock = &RealClock();
};

class ReadyMonitor {
 public:
  ReadyMonitor(store::Store& st, ReadyMonitorOptions opts = {});
  ~ReadyMonitor();  // Stop()
  ReadyMonitor(const ReadyMonitor&) = delete;
  ReadyMonitor& operator=(const ReadyMonitor&) = delete;

  // Starts scanning and writing (rounds on `post`). Start and Stop are called
  // from one owner thread.
  Status Start();
  // Stops every watch; waits for the round running, if any. Idempotent.
  void Stop();

  // For tests and metrics.
  size_t watched_contexts() const;
  // The cluster watches open: one per cluster x kind, shared by every context.
  size_t active_watches() const;
  // Scans that read the state records (not skipped by skip_unchanged).
  uint64_t full_scans() const;
  // Scans skip_unchanged skipped: the store's revision had not moved.
  uint64_t skipped_scans() const;
  // Asks for a scan now (does not wait for it).
  void ScanSoon();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eco::status
