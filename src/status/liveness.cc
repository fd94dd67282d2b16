#include "status/liveness.h"

#include <cstdio>

#include "catalog/agent_identity.h"
#include "catalog/catalog.h"

namespace eco::status {

namespace {

// A query limited to this many clusters reads each one's keys; more read
// the whole prefix once.
constexpr size_t kPointReads = 8;

bool Digits(std::string_view s, size_t at, size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::optional<Clock::WallTime> ParseRfc3339(std::string_view s) {
  using namespace std::chrono;
  int y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec))
    return std::nullopt;
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  nanoseconds frac{0};
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    int64_t scale = 100000000;
    size_t digits = 0;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      frac += nanoseconds((s[i] - '0') * scale);
      scale /= 10;
    }
    if (digits == 0) return std::nullopt;
  }
  minutes offset{0};
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!Digits(s, i + 1, 2, &oh) || i + 3 >= s.size() || s[i + 3] != ':' ||
        !Digits(s, i + 4, 2, &om))
      return std::nullopt;
    offset = minutes(oh * 60 + om) * (s[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  const auto t = sys_days(ymd) + hours(h) + minutes(mi) + seconds(sec) + frac - offset;
  return Clock::WallTime(duration_cast<Clock::Duration>(t.time_since_epoch()));
}

std::string FormatDuration(Clock::Duration d) {
  using namespace std::chrono;
  std::string sign = d < Clock::Duration::zero() ? "-" : "";
  if (d < Clock::Duration::zero()) d = -d;
  if (d < seconds(1)) return sign + std::to_string(duration_cast<milliseconds>(d).count()) + "ms";
  const auto ms = duration_cast<milliseconds>(d).count();
  const int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
  std::string out = sign;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  out += std::to_string(s);
  if (frac > 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "s";
}

Liveness::Liveness(store::Store& st, const QueryOptions& opts, std::vector<std::string> only)
    : st_(st),
      grace_(opts.agent_grace),
      now_((opts.clock ? *opts.clock : RealClock()).WallNow()),
      only_(std::move(only)) {}

Status Liveness::Load() {
  if (loaded_) return Status::Ok();
  auto keep = [this](const std::string& key, std::string_view value) {
    auto s = appcontext::ParseSeen(value);
    if (s.ok() && ParseRfc3339(s->time)) seen_.emplace(key, std::move(*s));
  };
  const std::string prefix = appcontext::SeenPrefix();
  if (!only_.empty() && only_.size() <= kPointReads) {
    for (const auto& key : only_) {
      ECO_ASSIGN_OR_RETURN(auto kv, st_.Get(appcontext::SeenKey(key)));
      if (kv) keep(key, kv->value);
    }
  } else {
    store::RangeOptions o;
    o.limit = 5000;  // bounded pages: one contact per cluster, 10,000 clusters
    for (;;) {
      ECO_ASSIGN_OR_RETURN(auto r, st_.Range(prefix, o));
      for (const auto& kv : r.kvs) keep(kv.key.substr(prefix.size()), kv.value);
      if (!r.more || r.kvs.empty()) break;
      o.after = r.kvs.back().key;
    }
  }
  ECO_ASSIGN_OR_RETURN(unreachable_, appcontext::ReadUnreachable(st_));  // usually empty
  loaded_ = true;
  return Status::Ok();
}

Result<bool> Liveness::IsAgent(const std::string& provider, const std::string& name,
                               const std::string& key) {
  if (auto it = agent_.find(key); it != agent_.end()) return it->second;
  if (listed_.count(provider))
    return false;  // not in the catalog (any more): nothing delivers to it
  // A few clusters of a provider are read one by one; past that, the
  // provider's cluster objects at once (10,000 clusters: one range read).
  if (++point_reads_[provider] <= kPointReads) {
    auto d = catalog::ClusterDelivery(st_, provider, name);
    if (!d.ok() && d.status().code() == Code::kUnavailable) return d.status();
    // A malformed spec.delivery is the catalog's to report; it counts as push.
    const bool agent = d.ok() && *d == catalog::Delivery::kAgent;
    agent_[key] = agent;
    return agent;
  }
  ECO_ASSIGN_OR_RETURN(auto items, catalog::List(st_, "cluster", {provider}));
  for (const auto& it : items) {
    if (it.keys.size() != 2) continue;
    auto d = catalog::DeliveryOf(it.object);
    agent_[provider + "+" + it.keys[1]] = d.ok() && *d == catalog::Delivery::kAgent;
  }
  listed_.insert(provider);
  auto it = agent_.find(key);
  return it != agent_.end() && it->second;
}

void Liveness::KnowDelivery(const std::string& provider, const std::map<std::string, bool>& agent_by_name) {
  for (const auto& [name, agent] : agent_by_name) agent_[provider + "+" + name] = agent;
  listed_.insert(provider);
}

void Liveness::Boundary(Clock::Duration left) {
  if (!next_stale_ || left < *next_stale_) next_stale_ = left;
}

Result<Liveness::Verdict> Liveness::Judge(const std::string& provider, const std::string& name,
                                          bool has_records) {
  ECO_RETURN_IF_ERROR(Load());
  const std::string key = provider + "+" + name;
  Verdict v;
  const appcontext::Seen* seen = nullptr;
  if (auto it = seen_.find(key); it != seen_.end()) {
    seen = &it->second;
    v.seen = seen;
    v.last_seen = &it->second.time;
  }
  // The record's precision is a millisecond: the boundary waits one more,
  // so that the answer computed there is past it.
  auto past_grace = [&](const std::string& since) -> std::optional<bool> {
    auto t = ParseRfc3339(since);
    if (!t) return std::nullopt;
    const Clock::Duration age = now_ - *t;
    if (age > grace_) return true;
    Boundary(grace_ - age + std::chrono::milliseconds(1));
    return false;
  };
  ECO_ASSIGN_OR_RETURN(bool agent, IsAgent(provider, name, key));
  if (!agent) {
    // A push cluster: what the ready monitor says.
    if (auto u = unreachable_.find(key); u != unreachable_.end()) {
      v.unreachable = &u->second;
      v.stale = past_grace(u->second.since).value_or(false);
    }
    return v;
  }
  if (seen && !past_grace(seen->time).value_or(true)) return v;
  silent_.insert(key);
  auto [it, fresh] = silent_agents_.try_emplace(key);
  if (fresh) {
    if (seen) {
      it->second = {seen->time, "agent silent for more than " + FormatDuration(grace_)};
    } else {
      it->second = {"", "no contact from its agent is recorded"};
    }
  }
  v.unreachable = &it->second;
  // An agent never heard from has nothing to be stale about until it reported.
  v.stale = seen != nullptr || has_records;
  return v;
}

}  // namespace eco::status
