#include "store/store.h"

#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

#include "store/etcd_store.h"
#include "store/sqlite_store.h"
#include "store/txn_rules.h"

namespace eco::store {

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  // Drop trailing 0xff bytes (they cannot be incremented), then bump the last.
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

Status ValidateTxnBranch(const std::vector<Op>& ops) {
  std::set<std::string> puts;
  for (const Op& op : ops) {
    if (op.type != Op::Type::kDeletePrefix && op.key.empty()) {
      return Invalid("txn: key must not be empty");
    }
    if (op.type == Op::Type::kPut && !puts.insert(op.key).second) {
      return Invalid("txn: duplicate key given in txn request: put of '" + op.key + "' twice");
    }
  }
  for (const Op& op : ops) {
    if (op.type == Op::Type::kDelete && puts.count(op.key) != 0) {
      return Invalid("txn: duplicate key given in txn request: put and delete of '" + op.key + "'");
    }
    if (op.type == Op::Type::kDeletePrefix) {
      auto it = puts.lower_bound(op.key);
      if (it != puts.end() && it->starts_with(op.key)) {
        return Invalid("txn: duplicate key given in txn request: put of '" + *it +
                       "' under deleted prefix '" + op.key + "'");
      }
    }
  }
  return Status::Ok();
}

bool CompareHolds(Compare::Op op, int cmp) {
  switch (op) {
    case Compare::Op::kEqual:
      return cmp == 0;
    case Compare::Op::kNotEqual:
      return cmp != 0;
    case Compare::Op::kLess:
      return cmp < 0;
    case Compare::Op::kGreater:
      return cmp > 0;
  }
  return false;
}

namespace {

constexpr std::string_view kEtcdScheme = "etcd://";
constexpr std::string_view kSqliteScheme = "sqlite://";

Status BadUrl(const std::string& url, std::string_view why) {
  std::string m = "bad store URL '";
  m += url;
  m += "': ";
  m += why;
  return Invalid(std::move(m));
}

// "host:port" with a non-empty host and a port in 1..65535.
bool ValidEndpoint(std::string_view ep) {
  auto colon = ep.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == ep.size()) return false;
  std::string_view port = ep.substr(colon + 1);
  if (port.size() > 5) return false;
  int n = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  return n >= 1 && n <= 65535;
}

// A PEM file named in a store URL, read whole.
Result<std::string> ReadPem(const std::string& url, std::string_view option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return BadUrl(url, std::string(option) + ": cannot read " + path);
  if (text.find("-----BEGIN ") == std::string::npos) {
    return BadUrl(url, std::string(option) + ": " + path + " is missing, unreadable or not PEM");
  }
  return text;
}

// "?cacert=FILE&cert=FILE&key=FILE" (etcdctl's names): TLS to etcd.
Status ParseEtcdQuery(const std::string& url, std::string_view query, EtcdOptions* opts) {
  std::string cacert, cert, key;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = item.find('=');
    std::string_view name = item.substr(0, eq);
    std::string value = eq == std::string_view::npos ? "" : std::string(item.substr(eq + 1));
    std::string* slot = name == "cacert" ? &cacert : name == "cert" ? &cert : name == "key" ? &key : nullptr;
    if (!slot) return BadUrl(url, "unknown option '" + std::string(name) + "' (want cacert, cert, key)");
    if (value.empty()) return BadUrl(url, std::string(name) + " needs a file");
    *slot = std::move(value);
  }
  if (cert.empty() != key.empty()) return BadUrl(url, "cert and key go together");
  if (cacert.empty() && !cert.empty()) return BadUrl(url, "cert and key need cacert (the CA of etcd's certificate)");
  if (cacert.empty()) return Status::Ok();
  auto ca = ReadPem(url, "cacert", cacert);
  if (!ca.ok()) return ca.status();
  opts->ca_pem = std::move(*ca);
  if (cert.empty()) return Status::Ok();
  auto c = ReadPem(url, "cert", cert);
  if (!c.ok()) return c.status();
  auto k = ReadPem(url, "key", key);
  if (!k.ok()) return k.status();
  opts->cert_pem = std::move(*c);
  opts->key_pem = std::move(*k);
  return Status::Ok();
}

Result<std::unique_ptr<Store>> OpenEtcdUrl(const std::string& url, Clock& clock, Random& random) {
  std::string_view rest(url);
  rest.remove_prefix(kEtcdScheme.size());
  EtcdOptions opts;
  opts.clock = &clock;
  opts.random = &random;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    if (Status s = ParseEtcdQuery(url, rest.substr(q + 1), &opts); !s.ok()) return s;
    rest = rest.substr(0, q);
  }
  // An optional path names a key prefix, so several installations can share
  // one etcd: etcd://host:port/prod keeps everything under "prod/".
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    if (!path.empty()) opts.key_prefix = std::string(path) + "/";
  }
  if (rest.empty()) return BadUrl(url, "no etcd endpoint (want etcd://host:port[,host:port...][/prefix])");
  while (true) {
    auto comma = rest.find(',');
    std::string_view ep = rest.substr(0, comma);
    if (!ValidEndpoint(ep)) {
      return BadUrl(url, "endpoint '" + std::string(ep) + "' is not host:port");
    }
    opts.endpoints.emplace_back(ep);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return OpenEtcdStore(opts);
}

Result<SqliteOptions> ParseSqliteUrl(const std::string& url) {
  std::string_view rest(url);
  if (rest.starts_with(kSqliteScheme)) rest.remove_prefix(kSqliteScheme.size());
  SqliteOptions opts;
  // Optional "?sync=full|normal" on the sqlite URL; a plain path is taken as is.
  if (url.starts_with(kSqliteScheme)) {
    auto q = rest.find('?');
    if (q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      rest = rest.substr(0, q);
      if (query == "sync=full") {
        opts.sync_full = true;
      } else if (query != "sync=normal") {
        return BadUrl(url, "unknown option '" + std::string(query) + "' (want sync=full|normal)");
      }
    }
  }
  if (rest.empty()) return BadUrl(url, "no directory (want sqlite:///path/to/dir)");
  opts.dir = std::string(rest);
  return opts;
}

Result<std::unique_ptr<Store>> OpenSqliteUrl(const std::string& url, Clock& clock, Random& random) {
  auto opts = ParseSqliteUrl(url);
  if (!opts.ok()) return opts.status();
  opts->clock = &clock;
  opts->random = &random;
  return OpenSqliteStore(*opts);
}

}  // namespace

std::string EmbeddedDir(const std::string& url) {
  if (url.empty() || (!url.starts_with(kSqliteScheme) && url.find("://") != std::string::npos)) return "";
  auto opts = ParseSqliteUrl(url);
  return opts.ok() ? opts->dir : "";
}

Result<std::unique_ptr<Store>> Open(const std::string& url, Clock& clock, Random& random) {
  if (url.empty()) return BadUrl(url, "empty");
  if (url.starts_with(kEtcdScheme)) return OpenEtcdUrl(url, clock, random);
  if (url.starts_with(kSqliteScheme)) return OpenSqliteUrl(url, clock, random);
  if (url.find("://") != std::string::npos) {
    return BadUrl(url, "unknown scheme (want sqlite:// or etcd://)");
  }
  return OpenSqliteUrl(url, clock, random);
}

Result<std::unique_ptr<Store>> Open(const std::string& url) {
  return Open(url, RealClock(), ProcessRandom());
}

}  // namespace eco::store
