#include "api/api.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string_view>

#include "api/archive_check.h"
#include "api/openapi.h"
#include "api/resources.h"
#include "api/validate.h"
#include "appcontext/agent_log.h"
#include "appcontext/records.h"
#include "catalog/agent_identity.h"
#include "catalog/catalog.h"
#include "catalog/lifecycle.h"
#include "common/secrets.h"
#include "common/version.h"
#include "k8s/kubeconfig.h"
#include "scheduler/scheduler.h"
#include "status/fleet_overview.h"
#include "status/fleet_view.h"
#include "status/query.h"

namespace eco::api {

using nlohmann::json;
using store::Compare;
using store::Op;

Response ErrorResponse(int status, const std::string& message) {
  Response r;
  r.status = status;
  // The message may quote a name from the URL, which need not be UTF-8.
  r.body = json{{"code", status}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

namespace {

// eco's staged-rollout strategy is read when an operation starts, so a
// DIG may change it at any state; EMCO's fields stay frozen once approved.
bool OnlyRolloutDiffers(const ResourceDef& d, json old, json now) {
  if (d.type != "deploymentIntentGroup" || !old.is_object() || !now.is_object()) return false;
  for (json* b : {&old, &now}) {
    if (auto sp = b->find("spec"); sp != b->end() && sp->is_object()) sp->erase("rollout");
  }
  return old == now;
}

// Store key layout: catalog/catalog.h (objects, files, state records,
// guards, the reference and uniqueness indexes).
std::string Join(const KeyValues& k) { return catalog::JoinKeys(k); }
std::string ObjKey(const ResourceDef& d, const KeyValues& k) { return catalog::ObjectKey(d.type, k); }
std::string FileKey(const ResourceDef& d, const KeyValues& k) { return catalog::FileKey(d.type, k); }
std::string StateKey(const ResourceDef& d, const KeyValues& k) { return catalog::StateKey(d.type, k); }
std::string GuardKey(const ResourceDef& d, const KeyValues& k) { return catalog::GuardKey(d.type, k); }
std::string RefPrefix(const ResourceDef& d, const KeyValues& k) { return catalog::RefPrefix(d.type, k); }
std::string RefKey(const Ref& r, const ResourceDef& src, const KeyValues& sk) {
  return catalog::RefKey(r.target->type, r.keys, src.type, sk);
}
std::string UniqueKey(const ResourceDef& d, const std::string& id) { return catalog::UniqueKey(d.type, id); }
std::string ListPrefix(const ResourceDef& d, const KeyValues& parent_keys) {
  return catalog::ListPrefix(d.type, parent_keys);
}

using catalog::NowRfc3339;

// Lifetimes of agent bootstrap tokens: long enough to install an agent,
// short enough that a forgotten one does not stay a way in.
constexpr Clock::Duration kDefaultBootstrapTtl = std::chrono::hours(24);
constexpr Clock::Duration kMinBootstrapTtl = std::chrono::minutes(1);
constexpr Clock::Duration kMaxBootstrapTtl = std::chrono::hours(24 * 30);

int HttpCode(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return 200;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists: return 409;
    case Code::kConflict: return 409;
    case Code::kInvalid: return 400;
    case Code::kTooLarge: return 413;
    case Code::kUnavailable: return 503;
    case Code::kInternal: return 500;
    case Code::kPermissionDenied: return 403;
    case Code::kWaiting: return 503;
  }
  return 500;
}

Response FromStatus(const Status& s) { return ErrorResponse(HttpCode(s), s.message()); }

// A revision as the API takes it: decimal digits, at most 18.
bool RevisionNumber(const std::string& s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
}

// A status change stream (?watch=true): one JSON document per line, as
// `watch` emits them until `open` turns false.
using Emit = std::function<bool(const json&)>;
Response NdjsonStream(std::function<void(const Emit& emit, const std::function<bool()>& open)> watch) {
  Response r;
  r.content_type = "application/x-ndjson";
  r.stream = [watch = std::move(watch)](const Response::Write& write, const std::function<bool()>& open) {
    watch([&](const json& j) { return write(j.dump() + "\n"); }, open);
  };
  return r;
}

Response Json(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response NoContent() {
  Response r;
  r.status = 204;
  r.content_type.clear();
  return r;
}

// Which representation of a resource with a file the client asked for.
enum class Repr { kJson, kFile, kMultipart, kNone };

Repr Negotiate(const std::string& accept) {
  if (accept.empty()) return Repr::kJson;
  size_t pos = 0;
  while (pos <= accept.size()) {
    size_t end = accept.find(',', pos);
    if (end == std::string::npos) end = accept.size();
    std::string_view item(accept.data() + pos, end - pos);
    if (auto semi = item.find(';'); semi != std::string_view::npos) item = item.substr(0, semi);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "application/json" || item == "*/*" || item == "application/*") return Repr::kJson;
    if (item == "application/octet-stream") return Repr::kFile;
    if (item == "multipart/form-data" || item == "multipart/*") return Repr::kMultipart;
    pos = end + 1;
  }
  return Repr::kNone;
}

std::string RandomBoundary() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string b = "eco-";
  for (int i = 0; i < 28; ++i) b += kChars[rng() % (sizeof kChars - 1)];
  return b;
}

// One file part of a multipart answer.
struct OutPart {
  std::string field;  // form field name ("file", "files")
  std::string filename;
  std::string content;
};

Response MultipartResponse(const std::string& metadata_json, const std::vector<OutPart>& files) {
  // The boundary must not occur in the payload; retry in the unlikely case it does.
  std::string boundary;
  auto collides = [&] {
    for (const auto& f : files) {
      if (f.content.find(boundary) != std::string::npos) return true;
    }
    return false;
  };
  do {
    boundary = RandomBoundary();
  } while (collides());
  std::string b;
  size_t n = metadata_json.size() + 512;
  for (const auto& f : files) n += f.content.size() + 256;
  b.reserve(n);
  b += "--" + boundary + "\r\n";
  b += "Content-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n";
  b += metadata_json + "\r\n";
  for (const auto& f : files) {
    b += "--" + boundary + "\r\n";
    b += "Content-Disposition: form-data; name=\"" + f.field + "\"; filename=\"" + f.filename +
         "\"\r\nContent-Type: application/octet-stream\r\n\r\n";
    b += f.content + "\r\n";
  }
  b += "--" + boundary + "--\r\n";
  Response r;
  r.status = 200;
  r.content_type = "multipart/form-data; boundary=" + boundary;
  r.body = std::move(b);
  return r;
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> segs;
  size_t pos = 0;
  if (!path.empty() && path.front() == '/') pos = 1;
  // A trailing slash is tolerated (EMCO registers a few routes with one).
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    segs.emplace_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  return segs;
}

std::string QueryValue(const Request& req, const std::string& k) {
  auto it = req.query.find(k);
  return it == req.query.end() ? std::string() : it->second;
}
bool HasQuery(const Request& req, const std::string& k) { return req.query.count(k) > 0; }

}  // namespace

struct Api::Impl {
  store::Store& st;
  Options opts;

  using Handler = std::function<Response(const Request&, const KeyValues&)>;
  struct Route {
    std::string method;
    std::vector<std::string> segs;  // "{x}" = variable
    Handler fn;
    std::string pattern;  // "/" + segs joined
  };
  std::vector<Route> routes;

  Impl(store::Store& s, Options o) : st(s), opts(o) { BuildRoutes(); }

  Clock& clock() const { return opts.clock ? *opts.clock : RealClock(); }
  // How status queries judge a cluster's report (on this API's clock).
  eco::status::QueryOptions status_options() const { return {opts.agent_grace, &clock()}; }
  Random& random() const { return opts.random ? *opts.random : ProcessRandom(); }

  // ---- helpers ----

  static KeyValues ParentKeys(const KeyValues& k, const ResourceDef& d) {
    return KeyValues(k.begin(), k.begin() + static_cast<long>(k.size() - d.own_keys.size()));
  }

  static KeyValues OwnKeysFromBody(const ResourceDef& d, const json& b) {
    if (d.label_body) return {b["clusterLabel"].get<std::string>()};
    KeyValues k{b["metadata"]["name"].get<std::string>()};
    if (d.own_keys.size() == 2) k.push_back(b["spec"]["compositeAppVersion"].get<std::string>());
    return k;
  }

  static std::string Describe(const ResourceDef& d, const KeyValues& k) {
    std::string s = d.display + " '";
    for (size_t i = d.depth() - d.own_keys.size(); i < k.size(); ++i) {
      if (i != d.depth() - d.own_keys.size()) s += "/";
      s += k[i];
    }
    return s + "'";
  }

  // Parses and validates the JSON body (or the multipart "metadata" part).
  Result<json> ParseBody(const ResourceDef& d, const Request& req) {
    const std::string* raw = &req.body;
    if (req.multipart) {
      auto it = req.parts.find("metadata");
      if (it == req.parts.end()) return Invalid("Missing 'metadata' part in multipart request");
      raw = &it->second.content;
    }
    if (raw->find_first_not_of(" \t\r\n") == std::string::npos) return Invalid("Empty body");
    json b = json::parse(*raw, nullptr, /*allow_exceptions=*/false);
    if (b.is_discarded()) {
      // Parse again with exceptions only to obtain the parser's explanation.
      std::string why = "malformed JSON";
      try {
        json ignored = json::parse(*raw);
      } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
        why = e.what();
      }
      return Status(Code::kInvalid, "422:" + why);
    }
    if (!b.is_object()) return Status(Code::kInvalid, "422:the body must be a JSON object");
    if (d.label_body) {
      auto it = b.find("clusterLabel");
      if (it == b.end() || (it->is_string() && it->get_ref<const std::string&>().empty())) {
        return Invalid("Missing label name in " + req.method + " request");
      }
      ECO_RETURN_IF_ERROR(CheckString(b, "clusterLabel", "clusterLabel", {true, 128, true}));
      return json{{"clusterLabel", b["clusterLabel"]}};
    }
    // EMCO's clm and dcm wording; its schemas would say "Invalid Input".
    if (auto md = b.find("metadata"); md == b.end() || md->is_null() ||
                                      (md->is_object() && (!md->contains("name") || (*md)["name"] == ""))) {
      return Invalid("Invalid Input: Missing name in " + req.method + " request");
    }
    ECO_RETURN_IF_ERROR(NormalizeMetadata(b));
    json out = {{"metadata", b["metadata"]}};
    if (b.contains("spec")) out["spec"] = b["spec"];
    ECO_RETURN_IF_ERROR(d.validate(out));
    return out;
  }

  static Response BadBody(const Status& s) {
    // Malformed JSON is 422 as in EMCO; schema violations are 400.
    if (s.message().rfind("422:", 0) == 0) return ErrorResponse(422, s.message().substr(4));
    return FromStatus(s);
  }

  Result<std::optional<store::KeyValue>> GetKey(const std::string& k) { return st.Get(k); }

  std::vector<Ref> RefsOf(const ResourceDef& d, const json& body, const KeyValues& k) {
    std::vector<Ref> out;
    if (d.refs) d.refs(body, k, out);
    return out;
  }

  // Every "files" part of a multipart request (none is fine), stored as one
  // JSON array of {name, content (base64)}.
  Result<std::optional<std::string>> FilesParts(const ResourceDef& d, const Request& req, const json& body) {
    std::vector<gac::File> files;
    if (req.multipart) {
      auto [b, e] = req.parts.equal_range("files");
      for (auto it = b; it != e; ++it) files.push_back({it->second.filename, it->second.content});
    }
    if (d.files_check) {
      Status s = d.files_check(body, files);
      if (!s.ok()) return s;
    }
    return std::optional<std::string>(gac::FilesToStored(files));
  }

  // Reads a file part, checks it.
  Result<std::optional<std::string>> FilePart(const ResourceDef& d, const Request& req,
                                              const json& body) {
    if (d.file == FileKind::kNone) return std::optional<std::string>();
    if (d.file == FileKind::kFiles) return FilesParts(d, req, body);
    bool optional = d.file_optional && d.file_optional(body);
    auto it = req.parts.find("file");
    if (!req.multipart || it == req.parts.end()) {
      if (optional) return std::optional<std::string>();
      return Status(Code::kInvalid, "422:Unable to process file: a multipart 'file' part is required");
    }
    if (d.file_refused) {
      if (std::string why = d.file_refused(body); !why.empty()) {
        return Invalid(why + "; remove the 'file' part, or register the cluster with spec.delivery \"push\"");
      }
    }
    const std::string& data = it->second.content;
    if (d.file == FileKind::kManifest) {
      if (d.file_check) {
        Status s = d.file_check(body, data);
        if (!s.ok()) return s;
      }
    } else if (d.file == FileKind::kArchive) {
      ArchiveLimits lim;
      lim.max_expanded_bytes = opts.max_archive_expanded_bytes;
      Status s = CheckTgz(data, lim);
      if (!s.ok()) return Status(Code::kInvalid, "422:" + s.message());
    } else if (data.find_first_not_of(" \t\r\n") == std::string::npos) {
      return Status(Code::kInvalid, "422:Unable to process file: the kubeconfig is empty");
    } else if (Status f = k8s::CheckUploadedKubeconfig(data); !f.ok()) {
      return Status(Code::kInvalid, "422:Unable to process file: " + f.message());
    }
    return std::optional<std::string>(data);
  }

  // ---- generic operations ----

  // Creates (create_only) or creates-or-replaces the resource at `k`.
  Response Write(const ResourceDef& d, const KeyValues& k, const json& body,
                 const std::optional<std::string>& file, bool create_only) {
    const std::string key = ObjKey(d, k);
    const std::string body_str = body.dump();
    std::vector<Ref> new_refs = RefsOf(d, body, k);
    std::string new_unique = d.unique ? d.unique(body, k) : std::string();
    KeyValues pk = ParentKeys(k, d);

    for (int attempt = 0; attempt < 16; ++attempt) {
      auto cur = GetKey(key);
      if (!cur.ok()) return FromStatus(cur.status());
      const bool exists = cur->has_value();
      if (exists && create_only) return ErrorResponse(409, d.AlreadyExists());

      store::Txn txn;
      std::optional<store::KeyValue> parent_kv;
      if (d.parent) {
        auto p = GetKey(ObjKey(*d.parent, pk));
        if (!p.ok()) return FromStatus(p.status());
        if (!p->has_value()) return ErrorResponse(404, d.parent->display + " not found");
        parent_kv = **p;
        if (d.parent_check) {
          json pb = json::parse((*p)->value, nullptr, false);
          Status s = d.parent_check(body, pb);
          if (!s.ok()) return FromStatus(s);
        }
        txn.compares.push_back(Compare::Exists(ObjKey(*d.parent, pk)));
        txn.success.push_back(Op::Put(GuardKey(*d.parent, pk), ""));
      }

      std::vector<Ref> old_refs;
      std::string old_unique;
      if (exists) {
        txn.compares.push_back(Compare::ModRevisionIs(key, (*cur)->mod_revision));
        json old = json::parse((*cur)->value, nullptr, false);
        if (!old.is_discarded()) {
          old_refs = RefsOf(d, old, k);
          if (d.unique) old_unique = d.unique(old, k);
          if (d.replace_check) {
            if (Status s = d.replace_check(old, body); !s.ok()) return FromStatus(s);
          }
        }
        if (d.has_state) {
          // Only a DIG that has not been approved may be replaced.
          auto sk = catalog::ReadLifecycleState(st, d.type, k);
          if (!sk.ok()) return FromStatus(sk.status());
          if (sk->has_value()) {
            std::string cur_state = (*sk)->state.CurrentState();
            if (cur_state != "Created" && !OnlyRolloutDiffers(d, old, body)) {
              return ErrorResponse(409, "The " + d.display + " is not updated: it is in state " +
                                            cur_state + ", not Created");
            }
            txn.compares.push_back((*sk)->Unchanged());
          }
        }
      } else {
        txn.compares.push_back(Compare::Missing(key));
        if (d.has_state) {
          txn.success.push_back(
              Op::Put(StateKey(d, k), catalog::ToJson(catalog::CreatedLifecycleState(NowRfc3339())).dump()));
        }
      }
      txn.success.push_back(Op::Put(key, body_str));
      if (file) {
        // Credentials are sealed before they reach the store (common/secrets.h).
        std::string stored = *file;
        if (d.file == FileKind::kKubeconfig) {
          auto sealed = secrets::Seal(*file);
          if (!sealed.ok()) return FromStatus(sealed.status());
          stored = std::move(*sealed);
        }
        txn.success.push_back(Op::Put(FileKey(d, k), std::move(stored)));
      } else if (exists && d.file != FileKind::kNone) {
        // A replacement without its optional file drops the old one.
        txn.success.push_back(Op::Delete(FileKey(d, k)));
      }

      std::set<std::string> old_ref_keys, new_ref_keys;
      for (auto& r : old_refs) old_ref_keys.insert(RefKey(r, d, k));
      for (auto& r : new_refs) {
        std::string rk = RefKey(r, d, k);
        if (!new_ref_keys.insert(rk).second) continue;
        txn.success.push_back(Op::Put(GuardKey(*r.target, r.keys), ""));
        if (!old_ref_keys.count(rk)) txn.success.push_back(Op::Put(rk, ""));
      }
      for (auto& rk : old_ref_keys) {
        if (!new_ref_keys.count(rk)) txn.success.push_back(Op::Delete(rk));
      }
      if (new_unique != old_unique) {
        if (!old_unique.empty()) txn.success.push_back(Op::Delete(UniqueKey(d, old_unique)));
        if (!new_unique.empty()) {
          txn.compares.push_back(Compare::Missing(UniqueKey(d, new_unique)));
          txn.success.push_back(Op::Put(UniqueKey(d, new_unique), Join(k)));
        }
      }
      if (!new_unique.empty() && new_unique != old_unique) {
        txn.failure.push_back(Op::Get(UniqueKey(d, new_unique)));
      }

      auto res = st.Commit(txn);
      if (!res.ok()) return FromStatus(res.status());
      if (res->succeeded) return Json(exists ? 200 : 201, body_str);
      // Lost a race: a unique index taken by someone else is final; anything
      // else (concurrent create/replace/delete) is retried from a fresh read.
      if (!res->gets.empty() && res->gets.back().has_value()) {
        return ErrorResponse(409, d.unique_message);
      }
    }
    return ErrorResponse(409, "Too many concurrent changes to " + Describe(d, k) + "; retry");
  }

  Response Delete(const ResourceDef& d, const KeyValues& k) {
    const std::string key = ObjKey(d, k);
    // A DIG or logical cloud goes only once terminated; its AppContexts go with it.
    if (d.type == "deploymentIntentGroup" || d.type == "logicalCloud") {
      auto cur = GetKey(key);
      if (!cur.ok()) return FromStatus(cur.status());
      if (!cur->has_value()) return ErrorResponse(404, d.display + " not found");
      if (opts.scheduler) {
        Status s = d.type == "logicalCloud"
                       ? opts.scheduler->PrepareLogicalCloudDelete(k[0], k[1])
                       : opts.scheduler->PrepareDigDelete({k[0], k[1], k[2], k[3]});
        if (!s.ok()) return FromStatus(s);
      }
    }
    for (int attempt = 0; attempt < 16; ++attempt) {
      // The guard is read first: a child or reference created after this
      // read changes it, and the final compare-and-swap then fails.
      auto guard = GetKey(GuardKey(d, k));
      if (!guard.ok()) return FromStatus(guard.status());
      store::Revision guard_rev = guard->has_value() ? (*guard)->mod_revision : 0;
      auto cur = GetKey(key);
      if (!cur.ok()) return FromStatus(cur.status());
      if (!cur->has_value()) return ErrorResponse(404, d.display + " not found");

      store::RangeOptions one;
      one.limit = 1;
      one.keys_only = true;
      for (const ResourceDef* c : d.children) {
        auto r = st.Range(ListPrefix(*c, k), one);
        if (!r.ok()) return FromStatus(r.status());
        if (!r->kvs.empty()) {
          return ErrorResponse(409, "Cannot delete " + Describe(d, k) + ": it still has " +
                                        c->display + " resources; delete them first");
        }
      }
      auto refs = st.Range(RefPrefix(d, k), one);
      if (!refs.ok()) return FromStatus(refs.status());
      if (!refs->kvs.empty()) {
        std::string src = refs->kvs[0].key.substr(RefPrefix(d, k).size());
        return ErrorResponse(409, "Cannot delete " + Describe(d, k) +
                                      ": it is referenced by " + DescribeId(src) +
                                      "; delete or update that first");
      }

      store::Txn txn;
      txn.compares.push_back(Compare::ModRevisionIs(key, (*cur)->mod_revision));
      txn.compares.push_back(Compare::ModRevisionIs(GuardKey(d, k), guard_rev));
      txn.success.push_back(Op::Delete(key));
      txn.success.push_back(Op::Delete(GuardKey(d, k)));
      if (d.file != FileKind::kNone) txn.success.push_back(Op::Delete(FileKey(d, k)));
      if (d.has_state) txn.success.push_back(Op::Delete(StateKey(d, k)));
      if (d.type == "cluster") {
        // An agent cluster's credential and unused tokens go with it: its
        // agent is refused from this revision on.
        auto revoke = catalog::AgentRevokeOps(st, k[0], k[1]);
        if (!revoke.ok()) return FromStatus(revoke.status());
        for (auto& op : *revoke) txn.success.push_back(std::move(op));
        // Its log of publications and its last contact go too.
        for (auto& op : appcontext::ForgetClusterOps(k[0] + "+" + k[1])) txn.success.push_back(std::move(op));
      }
      json old = json::parse((*cur)->value, nullptr, false);
      if (!old.is_discarded()) {
        for (auto& r : RefsOf(d, old, k)) txn.success.push_back(Op::Delete(RefKey(r, d, k)));
        if (d.unique) {
          std::string u = d.unique(old, k);
          if (!u.empty()) txn.success.push_back(Op::Delete(UniqueKey(d, u)));
        }
      }
      auto res = st.Commit(txn);
      if (!res.ok()) return FromStatus(res.status());
      if (res->succeeded) return NoContent();
    }
    return ErrorResponse(409, "Too many concurrent changes to " + Describe(d, k) + "; retry");
  }

  // "type/k1/k2" -> "App 'web'" for messages.
  static std::string DescribeId(const std::string& id) {
    auto slash = id.find('/');
    const ResourceDef* d = FindResource(id.substr(0, slash));
    if (!d || slash == std::string::npos) return id;
    KeyValues k;
    size_t pos = slash + 1;
    while (pos <= id.size()) {
      size_t end = id.find('/', pos);
      if (end == std::string::npos) end = id.size();
      k.push_back(id.substr(pos, end - pos));
      pos = end + 1;
    }
    return Describe(*d, k);
  }

  Response GetOne(const ResourceDef& d, const KeyValues& k, const Request& req) {
    Repr repr = d.file == FileKind::kNone ? Repr::kJson : Negotiate(req.accept);
    if (repr == Repr::kNone) {
      return ErrorResponse(406, "Unsupported Accept header '" + req.accept +
                                    "': use application/json, application/octet-stream or "
                                    "multipart/form-data");
    }
    auto cur = GetKey(ObjKey(d, k));
    if (!cur.ok()) return FromStatus(cur.status());
    if (!cur->has_value()) return ErrorResponse(404, d.display + " not found");
    if (repr == Repr::kJson) return Json(200, (*cur)->value);
    if (d.file_refused) {
      json obj = json::parse((*cur)->value, nullptr, false);
      if (std::string why = obj.is_discarded() ? std::string() : d.file_refused(obj); !why.empty()) {
        if (repr == Repr::kFile) return ErrorResponse(404, Describe(d, k) + ": " + why);
        return MultipartResponse((*cur)->value, {});
      }
    }
    auto f = GetKey(FileKey(d, k));
    if (!f.ok()) return FromStatus(f.status());
    std::string file;
    if (f->has_value()) {
      auto plain = secrets::Open((*f)->value);
      if (!plain.ok()) return FromStatus(plain.status());
      file = std::move(*plain);
    }
    if (repr == Repr::kFile) {
      if (d.file == FileKind::kFiles) {
        return ErrorResponse(406, d.display + " holds a list of files: use Accept: multipart/form-data");
      }
      if (!f->has_value()) return ErrorResponse(404, d.display + " has no file");
      Response r;
      r.status = 200;
      r.content_type = "application/octet-stream";
      r.body = std::move(file);
      return r;
    }
    if (d.file == FileKind::kFiles) {
      auto files = gac::FilesFromStored(file);
      if (!files.ok()) return FromStatus(files.status());
      std::vector<OutPart> parts;
      for (auto& f : *files) parts.push_back({"files", f.name, std::move(f.content)});
      return MultipartResponse((*cur)->value, parts);
    }
    if (!f->has_value() && d.file == FileKind::kManifest) return MultipartResponse((*cur)->value, {});
    return MultipartResponse((*cur)->value, {{"file", d.file_download_name, std::move(file)}});
  }

  // The items of a collection in creation order, as EMCO's database lists
  // them (the store ranges in key order).
  Result<std::vector<store::KeyValue>> ListKvs(const ResourceDef& d, const KeyValues& pk) {
    auto r = st.Range(ListPrefix(d, pk));
    if (!r.ok()) return r.status();
    InCreationOrder(r->kvs);
    return std::move(r->kvs);
  }

  static void InCreationOrder(std::vector<store::KeyValue>& kvs) {
    // Stable: keys written by one transaction share a revision and keep key order.
    std::stable_sort(kvs.begin(), kvs.end(), [](const store::KeyValue& a, const store::KeyValue& b) {
      return a.create_revision < b.create_revision;
    });
  }

  static std::string JoinArray(const std::vector<store::KeyValue>& kvs) {
    size_t n = 2;
    for (auto& kv : kvs) n += kv.value.size() + 1;
    std::string out;
    out.reserve(n);
    out += '[';
    for (size_t i = 0; i < kvs.size(); ++i) {
      if (i) out += ',';
      out += kvs[i].value;
    }
    out += ']';
    return out;
  }

  // 404 when the parent of a collection is missing.
  std::optional<Response> CheckParent(const ResourceDef& d, const KeyValues& pk) {
    if (!d.parent) return std::nullopt;
    auto p = GetKey(ObjKey(*d.parent, pk));
    if (!p.ok()) return FromStatus(p.status());
    if (!p->has_value()) return ErrorResponse(404, d.parent->display + " not found");
    return std::nullopt;
  }

  Response List(const ResourceDef& d, const KeyValues& pk) {
    if (auto e = CheckParent(d, pk)) return *e;
    auto kvs = ListKvs(d, pk);
    if (!kvs.ok()) return FromStatus(kvs.status());
    return Json(200, JoinArray(*kvs));
  }

  // ---- routing ----

  void AddRoute(std::string method, std::vector<std::string> segs, Handler fn) {
    segs.insert(segs.begin(), "v2");
    std::string pattern;
    for (const auto& seg : segs) pattern.append("/").append(seg);
    routes.push_back({std::move(method), std::move(segs), std::move(fn), std::move(pattern)});
  }

  void BuildRoutes();
  void AddSpecialRoutes();
  void AddLifecycleRoutes();
  void AddAgentRoutes();
  void AddCollectionRoutes(const ResourceDef& d);

  // Deletes every item of a collection, children first.
  Response DeleteAll(const ResourceDef& d, const KeyValues& pk) {
    if (auto e = CheckParent(d, pk)) return *e;
    auto kvs = ListKvs(d, pk);
    if (!kvs.ok()) return FromStatus(kvs.status());
    const std::string prefix = ListPrefix(d, pk);
    for (auto& kv : *kvs) {
      KeyValues k = pk;
      std::string rest = kv.key.substr(prefix.size());
      size_t pos = 0;
      while (pos <= rest.size()) {
        size_t slash = rest.find('/', pos);
        if (slash == std::string::npos) slash = rest.size();
        k.push_back(rest.substr(pos, slash - pos));
        pos = slash + 1;
      }
      for (const ResourceDef* c : d.children) {
        Response r = DeleteAll(*c, k);
        if (r.status >= 300) return r;
      }
      Response r = Delete(d, k);
      if (r.status >= 300 && r.status != 404) return r;
    }
    return NoContent();
  }

  Response Dispatch(const Request& req) {
    std::vector<std::string> segs = SplitPath(req.path);
    bool path_matched = false;
    for (const Route& r : routes) {
      if (r.segs.size() != segs.size()) continue;
      KeyValues vars;
      bool ok = true;
      for (size_t i = 0; i < segs.size() && ok; ++i) {
        const std::string& p = r.segs[i];
        if (!p.empty() && p.front() == '{') {
          vars.push_back(segs[i]);
        } else {
          ok = p == segs[i];
        }
      }
      if (!ok) continue;
      path_matched = true;
      if (r.method != req.method) continue;
      for (const auto& v : vars) {
        if (!ValidName(v)) {
          return ErrorResponse(400, "Invalid name '" + v +
                                        "' in URL: names are at most 128 letters, digits, "
                                        "'-', '_' or '.', starting and ending with a letter or digit");
        }
      }
      Response resp = r.fn(req, vars);
      resp.route = r.pattern;
      return resp;
    }
    if (path_matched) return ErrorResponse(405, "Method " + req.method + " not allowed on " + req.path);
    // Go's NotFound text, which EMCO's router answers and scripts match.
    return ErrorResponse(404, "404 page not found: no route " + req.method + " " + req.path);
  }
};

void Api::Impl::BuildRoutes() {
  const std::set<std::string> only(opts.only_types.begin(), opts.only_types.end());
  if (only.empty()) {
    AddSpecialRoutes();
    AddLifecycleRoutes();
    AddAgentRoutes();
  }
  for (const ResourceDef* dp : AllResources()) {
    const ResourceDef& d = *dp;
    if (!only.empty() && !only.count(d.type)) continue;
    AddCollectionRoutes(d);
    std::vector<std::string> item = d.collection;
    for (auto& k : d.own_keys) item.push_back("{" + k + "}");

    AddRoute("POST", d.collection, [this, &d](const Request& req, const KeyValues& pk) {
      auto body = ParseBody(d, req);
      if (!body.ok()) return BadBody(body.status());
      auto file = FilePart(d, req, *body);
      if (!file.ok()) return BadBody(file.status());
      KeyValues k = pk;
      for (auto& v : OwnKeysFromBody(d, *body)) k.push_back(v);
      return Write(d, k, *body, *file, true);
    });
    AddRoute("GET", d.collection,
             [this, &d](const Request&, const KeyValues& pk) { return List(d, pk); });
    AddRoute("GET", item,
             [this, &d](const Request& req, const KeyValues& k) { return GetOne(d, k, req); });
    AddRoute("PUT", item, [this, &d](const Request& req, const KeyValues& k) {
      auto body = ParseBody(d, req);
      if (!body.ok()) return BadBody(body.status());
      KeyValues own = OwnKeysFromBody(d, *body);
      if (!std::equal(own.begin(), own.end(), k.end() - static_cast<long>(own.size()))) {
        // EMCO's words for labels and logical clouds differ from the rest.
        const char* what = d.label_body                ? "Mismatched label name in PUT request"
                           : d.type == "logicalCloud" ? "Logical Cloud name mismatch"
                                                      : "Mismatched name in PUT request";
        return ErrorResponse(400, std::string(what) + ": the body names " + Join(own) +
                                      ", the URL " +
                                      Join(KeyValues(k.end() - static_cast<long>(own.size()), k.end())));
      }
      // A replace is whole, file included (as in EMCO).
      auto file = FilePart(d, req, *body);
      if (!file.ok()) return BadBody(file.status());
      return Write(d, k, *body, *file, false);
    });
    AddRoute("DELETE", item,
             [this, &d](const Request&, const KeyValues& k) { return Delete(d, k); });
  }
}

// EMCO's "GET collection?<q>=NAME" (the item NAME) and "DELETE collection"
// (every item) for the definitions that ask for them.
void Api::Impl::AddCollectionRoutes(const ResourceDef& d) {
  if (!d.name_query.empty()) {
    AddRoute("GET", d.collection, [this, &d](const Request& req, const KeyValues& pk) {
      if (!HasQuery(req, d.name_query)) return List(d, pk);
      std::string name = QueryValue(req, d.name_query);
      if (!ValidName(name)) return ErrorResponse(400, "Invalid " + d.name_query + " name '" + name + "'");
      KeyValues k = pk;
      k.push_back(name);
      if (!d.name_query_list) return GetOne(d, k, req);
      auto cur = GetKey(ObjKey(d, k));
      if (!cur.ok()) return FromStatus(cur.status());
      if (!cur->has_value()) return ErrorResponse(404, d.display + " not found");
      return Json(200, "[" + (*cur)->value + "]");
    });
  }
  if (d.delete_all) {
    AddRoute("DELETE", d.collection,
             [this, &d](const Request&, const KeyValues& pk) { return DeleteAll(d, pk); });
  }
}

// DIG and logical cloud lifecycle operations, carried out by the scheduler.
void Api::Impl::AddLifecycleRoutes() {
  const ResourceDef& dig = *FindResource("deploymentIntentGroup");
  const ResourceDef& lc = *FindResource("logicalCloud");
  std::vector<std::string> dig_item = dig.collection;
  dig_item.push_back("{deploymentIntentGroup}");
  std::vector<std::string> lc_item = lc.collection;
  lc_item.push_back("{logicalCloud}");
  auto under = [](std::vector<std::string> base, const char* op) {
    base.push_back(op);
    return base;
  };
  auto accepted = [](const Status& s, int code = 202) {
    if (!s.ok()) return FromStatus(s);
    Response r;
    r.status = code;
    r.content_type.clear();
    return r;
  };
  auto need = [this]() -> std::optional<Response> {
    if (!opts.scheduler) return ErrorResponse(503, "this eco role does not run the scheduler");
    return std::nullopt;
  };
  auto key = [](const KeyValues& k) { return scheduler::DigKey{k[0], k[1], k[2], k[3]}; };

  for (const char* op : {"approve", "instantiate", "terminate", "stop"}) {
    std::string o = op;
    AddRoute("POST", under(dig_item, op), [this, o, accepted, need, key](const Request& req, const KeyValues& k) {
      if (auto e = need()) return *e;
      auto& s = *opts.scheduler;
      if (o == "approve") return accepted(s.Approve(key(k)));
      if (o == "instantiate") {
        auto id = s.Instantiate(key(k), QueryValue(req, "plan"));
        return accepted(id.ok() ? Status::Ok() : id.status());
      }
      if (o == "terminate") return accepted(s.Terminate(key(k)));
      return accepted(s.Stop(key(k)));
    });
  }
  // ?plan=ID: only if the update still does what that plan said (409 otherwise).
  AddRoute("POST", under(dig_item, "update"), [this, need, key](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    auto rev = opts.scheduler->Update(key(k), QueryValue(req, "plan"));
    if (!rev.ok()) return FromStatus(rev.status());
    return Json(202, std::to_string(*rev));
  });
  // The fleet plan: what instantiate or update would do; changes nothing.
  AddRoute("POST", under(dig_item, "plan"), [this, need, key](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    const std::string output = QueryValue(req, "output");
    if (!output.empty() && output != "summary" && output != "full") {
      return ErrorResponse(400, "Invalid Input: output must be summary or full, got " + output);
    }
    // ?rollback=N: the plan of a rollback to revision N.
    const std::string rb = QueryValue(req, "rollback");
    if (HasQuery(req, "rollback") && !RevisionNumber(rb)) {
      return ErrorResponse(400, "Invalid Input: rollback must be a revision number, e.g. rollback=1");
    }
    auto plan = HasQuery(req, "rollback") ? opts.scheduler->RollbackPlan(key(k), std::stoll(rb), output == "summary")
                                          : opts.scheduler->FleetPlan(key(k), output == "summary");
    if (!plan.ok()) return FromStatus(plan.status());
    return Json(200, plan->dump());
  });
  AddRoute("POST", under(dig_item, "rollback"), [this, accepted, need, key](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return ErrorResponse(422, "Rollback body must be a JSON object");
    json spec = body.value("spec", json::object());
    std::string rev = spec.is_object() ? spec.value("revision", "") : "";
    if (!RevisionNumber(rev)) {
      return ErrorResponse(400, "Invalid Input: spec.revision must be a revision number as a string, e.g. \"1\"");
    }
    // ?plan=ID: only if the rollback still does what that plan said (409 otherwise).
    return accepted(opts.scheduler->Rollback(key(k), std::stoll(rev), QueryValue(req, "plan")));
  });
  // eco's staged rollouts: steer the running one (docs/rollouts.md).
  for (const char* op : {"pause", "resume", "approve", "abort"}) {
    std::string o = op;
    std::vector<std::string> path = under(dig_item, "rollout");
    path.push_back(op);
    AddRoute("POST", path, [this, o, accepted, need, key](const Request&, const KeyValues& k) {
      if (auto e = need()) return *e;
      return accepted(opts.scheduler->RolloutAction(key(k), o));
    });
  }
  // eco's resync: {"clusters": [{"clusterProvider", "cluster"}]}, or no body
  // for every cluster.
  auto resync_clusters = [](const Request& req) -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    if (req.body.find_first_not_of(" \t\r\n") == std::string::npos) return out;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return Invalid("resync body must be a JSON object");
    auto cl = body.find("clusters");
    if (cl == body.end() || cl->is_null()) return out;
    if (!cl->is_array()) return Invalid("Invalid Input: clusters must be an array");
    for (const auto& c : *cl) {
      if (!c.is_object()) return Invalid("Invalid Input: clusters[] must be {clusterProvider, cluster} objects");
      for (const char* f : {"clusterProvider", "cluster"}) {
        auto it = c.find(f);
        if (it == c.end() || !it->is_string() || !ValidName(it->get<std::string>())) {
          return Invalid(std::string("Invalid Input: clusters[].") + f + " must be a valid name");
        }
      }
      out.push_back(c["clusterProvider"].get<std::string>() + "+" + c["cluster"].get<std::string>());
    }
    return out;
  };
  AddRoute("POST", under(dig_item, "resync"), [this, accepted, need, key, resync_clusters](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    auto clusters = resync_clusters(req);
    if (!clusters.ok()) return FromStatus(clusters.status());
    return accepted(opts.scheduler->Resync(key(k), *clusters));
  });
  AddRoute("POST", under(lc_item, "resync"), [this, accepted, need, resync_clusters](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    auto clusters = resync_clusters(req);
    if (!clusters.ok()) return FromStatus(clusters.status());
    return accepted(opts.scheduler->ResyncLogicalCloud(k[0], k[1], *clusters));
  });
  // EMCO's migrate: {metadata?, spec: {targetCompositeAppVersion, targetDeploymentIntentGroup}}.
  AddRoute("POST", under(dig_item, "migrate"), [this, accepted, need, key](const Request& req, const KeyValues& k) {
    if (auto e = need()) return *e;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return ErrorResponse(422, "Migrate body must be a JSON object");
    auto md = body.find("metadata");
    if (md != body.end() && !md->is_null()) {
      if (!md->is_object()) return ErrorResponse(400, "Invalid Input: metadata must be an object");
      auto d = md->find("description");
      if (d != md->end() && (!d->is_string() || d->get_ref<const std::string&>().size() > 1024)) {
        return ErrorResponse(400, "Invalid Input: metadata.description must be a string of at most 1024 characters");
      }
    }
    auto spec = body.find("spec");
    if (spec == body.end() || !spec->is_object()) return ErrorResponse(400, "Invalid Input: spec is required");
    std::string target[2];
    const char* fields[2] = {"targetCompositeAppVersion", "targetDeploymentIntentGroup"};
    for (int i = 0; i < 2; ++i) {
      auto f = spec->find(fields[i]);
      if (f == spec->end() || !f->is_string() || !ValidName(f->get<std::string>())) {
        return ErrorResponse(400, std::string("Invalid Input: spec.") + fields[i] + " must be a valid name");
      }
      target[i] = f->get<std::string>();
    }
    return accepted(opts.scheduler->Migrate(key(k), target[0], target[1]));
  });
  // Status queries read the store only (any eco role serves them). EMCO
  // answers 400 for every failure; eco keeps 404 and 503 where they apply,
  // and 500 for what is stored wrong (a malformed state record): not the
  // query's fault.
  auto status_error = [](const Status& s) {
    if (s.code() == Code::kNotFound || s.code() == Code::kUnavailable || s.code() == Code::kInternal) {
      return FromStatus(s);
    }
    return ErrorResponse(400, s.message());
  };
  AddRoute("GET", under(dig_item, "status"), [this, status_error](const Request& req, const KeyValues& k) {
    auto q = eco::status::ParseQuery(req.query);
    if (!q.ok()) return status_error(q.status());
    eco::status::DigRef dig{k[0], k[1], k[2], k[3]};
    if (q->output == "clusters") {
      // eco's compact view, one row per cluster (status/fleet_view.h).
      if (QueryValue(req, "watch") != "true") {
        auto out = eco::status::DigClusters(st, dig, *q, status_options());
        if (!out.ok()) return status_error(out.status());
        return Json(200, out->dump());
      }
      // Refusals are answered before the stream starts; the answer itself
      // (a second at 10,000 clusters) is computed once, by the stream.
      if (Status s = eco::status::CheckDigClusters(st, dig, *q); !s.ok()) return status_error(s);
      return NdjsonStream([this, dig, q = *q](const Emit& emit, const std::function<bool()>& open) {
        (void)eco::status::WatchDigClusters(st, dig, q, emit, open, std::chrono::milliseconds(200), clock(),
                                            status_options());
      });
    }
    auto out = eco::status::DigStatus(st, dig, *q, status_options());
    if (!out.ok()) return status_error(out.status());
    if (QueryValue(req, "watch") != "true") return Json(200, out->dump());
    // One JSON status per line, again at every change.
    return NdjsonStream([this, dig, q = *q](const Emit& emit, const std::function<bool()>& open) {
      (void)eco::status::WatchDigStatus(st, dig, q, emit, open, std::chrono::milliseconds(200), clock(),
                                        status_options());
    });
  });

  // What eco deployed on one cluster (EMCO serves its network intents here).
  std::vector<std::string> cluster_item = FindResource("cluster")->collection;
  cluster_item.push_back("{cluster}");
  AddRoute("GET", under(cluster_item, "status"), [this, status_error](const Request& req, const KeyValues& k) {
    if (QueryValue(req, "watch") == "true")
      return ErrorResponse(400, "watch=true is served for DIG and logical cloud status only");
    auto q = eco::status::ParseQuery(req.query);
    if (!q.ok()) return status_error(q.status());
    if (q->output == "clusters")
      return ErrorResponse(400, "Invalid Input: output=clusters is served for a DeploymentIntentGroup's status only");
    auto out = eco::status::ClusterStatus(st, k[0], k[1], *q, status_options());
    if (!out.ok()) return status_error(out.status());
    return Json(200, out->dump());
  });

  // eco's additions for the console (docs/api.md "Console"): who asks,
  // and the fleet as far as they may see it.
  AddRoute("GET", {"whoami"}, [](const Request& req, const KeyValues&) {
    if (!req.who) return Json(200, json{{"auth", false}, {"admin", true}}.dump());
    return Json(200, json{{"auth", true},
                          {"user", req.who->user},
                          {"admin", req.who->admin},
                          {"projects", req.who->projects}}
                         .dump());
  });
  AddRoute("GET", {"fleet"}, [this](const Request& req, const KeyValues&) {
    eco::status::FleetScope scope;
    if (req.who && !req.who->admin) {
      scope.admin = false;
      scope.projects = req.who->projects;
    }
    auto out = eco::status::FleetOverview(st, scope, status_options());
    if (!out.ok()) return FromStatus(out.status());
    return Json(200, out->dump());
  });
  AddRoute("GET", {"fleet", "clusters"}, [this](const Request& req, const KeyValues&) {
    // The server's Authorize refuses others first; this holds for any caller of Handle.
    if (req.who && !req.who->admin)
      return ErrorResponse(403, "user " + req.who->user + " is not an administrator: the fleet's clusters are for administrators");
    auto out = eco::status::FleetClusters(st, status_options());
    if (!out.ok()) return FromStatus(out.status());
    return Json(200, out->dump());
  });

  // eco's addition: the clusters the ready monitor cannot reach now.
  AddRoute("GET", {"unreachable-clusters"}, [this](const Request&, const KeyValues&) {
    auto u = appcontext::ReadUnreachable(st);
    if (!u.ok()) return FromStatus(u.status());
    json out = json::array();
    for (const auto& [key, rec] : *u) {
      const auto plus = key.find('+');
      json e = appcontext::ToJson(rec);
      e["clusterProvider"] = key.substr(0, plus);
      e["cluster"] = plus == std::string::npos ? std::string() : key.substr(plus + 1);
      out.push_back(std::move(e));
    }
    return Json(200, out.dump());
  });

  for (const char* op : {"instantiate", "terminate", "update", "stop"}) {
    std::string o = op;
    AddRoute("POST", under(lc_item, op), [this, o, accepted, need](const Request&, const KeyValues& k) {
      if (auto e = need()) return *e;
      auto& s = *opts.scheduler;
      if (o == "instantiate") return accepted(s.InstantiateLogicalCloud(k[0], k[1]));
      if (o == "terminate") return accepted(s.TerminateLogicalCloud(k[0], k[1]));
      if (o == "update") return accepted(s.UpdateLogicalCloud(k[0], k[1]));
      return accepted(s.StopLogicalCloud(k[0], k[1]), 200);
    });
  }
  AddRoute("GET", under(lc_item, "status"), [this, status_error](const Request& req, const KeyValues& k) {
    auto q = eco::status::ParseQuery(req.query, /*for_lc=*/true);
    if (!q.ok()) return status_error(q.status());
    auto out = eco::status::LogicalCloudStatus(st, k[0], k[1], *q, status_options());
    if (!out.ok()) return status_error(out.status());
    if (QueryValue(req, "watch") != "true") return Json(200, out->dump());
    return NdjsonStream([this, p = k[0], lc = k[1], q = *q](const Emit& emit, const std::function<bool()>& open) {
      (void)eco::status::WatchLogicalCloudStatus(st, p, lc, q, emit, open, std::chrono::milliseconds(200), clock(),
                                                 status_options());
    });
  });
}

// Agent clusters (catalog/agent_identity.h): a bootstrap token for an agent
// to enroll with, and revocation of what it holds.
void Api::Impl::AddAgentRoutes() {
  const ResourceDef& cluster = *FindResource("cluster");
  std::vector<std::string> cluster_item = cluster.collection;
  cluster_item.push_back("{cluster}");
  auto under = [](std::vector<std::string> base, const char* op) {
    base.push_back(op);
    return base;
  };
  // 404 for a missing provider or cluster, with EMCO's words.
  auto find = [this, &cluster](const KeyValues& k) -> std::optional<Response> {
    if (auto e = CheckParent(cluster, {k[0]})) return *e;
    auto cur = GetKey(ObjKey(cluster, k));
    if (!cur.ok()) return FromStatus(cur.status());
    if (!cur->has_value()) return ErrorResponse(404, cluster.display + " not found");
    return std::nullopt;
  };

  AddRoute("POST", under(cluster_item, "agent-bootstrap"), [this, find](const Request& req, const KeyValues& k) {
    if (auto e = find(k)) return *e;
    // The lifetime: {"ttl": "1h"} or ?ttl=1h, once.
    std::string ttl_text;
    bool given = false;
    if (req.body.find_first_not_of(" \t\r\n") != std::string::npos) {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        return ErrorResponse(422, "The agent-bootstrap body must be a JSON object such as {\"ttl\": \"24h\"}");
      }
      if (auto t = body.find("ttl"); t != body.end() && !t->is_null()) {
        if (!t->is_string()) return ErrorResponse(400, "Invalid Input: ttl must be a duration string such as \"24h\"");
        ttl_text = t->get<std::string>();
        given = true;
      }
    }
    if (HasQuery(req, "ttl")) {
      if (given) return ErrorResponse(400, "Invalid Input: give ttl in the body or in the query, not both");
      ttl_text = QueryValue(req, "ttl");
      given = true;
    }
    Clock::Duration ttl = kDefaultBootstrapTtl;
    if (given) {
      auto d = ParseGoDuration(ttl_text);
      if (!d.ok()) return ErrorResponse(400, "Invalid Input: ttl: " + d.status().message());
      ttl = *d;
    }
    if (ttl < kMinBootstrapTtl || ttl > kMaxBootstrapTtl) {
      return ErrorResponse(400, "Invalid Input: ttl must be between 1m and 720h (30 days), not \"" + ttl_text + "\"");
    }
    auto boot = catalog::IssueBootstrap(st, clock(), k[0], k[1], ttl);
    if (!boot.ok()) return FromStatus(boot.status());
    return Json(201, json{{"token", boot->token}, {"hub", req.agent_hub}, {"expires", boot->expires}}.dump());
  });

  AddRoute("POST", under(cluster_item, "agent-revoke"), [this, find](const Request&, const KeyValues& k) {
    if (auto e = find(k)) return *e;
    auto delivery = catalog::ClusterDelivery(st, k[0], k[1]);
    if (!delivery.ok()) return FromStatus(delivery.status());
    if (*delivery != catalog::Delivery::kAgent) {
      return ErrorResponse(409, "Cluster " + k[0] + "+" + k[1] +
                                    " delivers by push (spec.delivery \"push\"): it has no agent credential to revoke");
    }
    if (Status s = catalog::RevokeAgent(st, k[0], k[1]); !s.ok()) return FromStatus(s);
    return NoContent();
  });
}

// Query forms EMCO serves on some collections and items. Registered first so
// they take precedence; each falls through to the generic handler when its
// query parameter is absent.
void Api::Impl::AddSpecialRoutes() {
  // Built from the route table at request time, so it lists every route.
  AddRoute("GET", {"openapi.json"}, [this](const Request&, const KeyValues&) {
    std::vector<std::string> list;
    std::set<std::string> seen;
    for (const auto& r : routes) {
      std::string s = r.method + " " + r.pattern;
      if (seen.insert(s).second) list.push_back(std::move(s));
    }
    Response out;
    out.body = OpenApiDocument(list, kVersion).dump(2);
    return out;
  });
  const ResourceDef& cluster = *FindResource("cluster");
  const ResourceDef& label = *FindResource("clusterLabel");
  const ResourceDef& kvd = *FindResource("clusterKv");
  const ResourceDef& profile = *FindResource("appProfile");
  const ResourceDef& intents = *FindResource("groupIntent");
  const ResourceDef& appIntent = *FindResource("genericAppPlacementIntent");

  // GET clusters?label=L -> names; ?withLabels=true -> clusters with labels.
  AddRoute("GET", cluster.collection, [this, &cluster, &label](const Request& req, const KeyValues& pk) {
    if (auto e = CheckParent(cluster, pk)) return *e;
    bool by_label = HasQuery(req, "label");
    bool with_labels = QueryValue(req, "withLabels") == "true";
    if (!by_label && !with_labels) return List(cluster, pk);
    // Labels of all clusters of the provider, in one range.
    const std::string prefix = catalog::ListPrefix(label.type, {pk[0]});
    auto labels = st.Range(prefix);
    if (!labels.ok()) return FromStatus(labels.status());
    InCreationOrder(labels->kvs);
    std::map<std::string, json> by_cluster;  // cluster -> [{clusterLabel}]
    std::string want = QueryValue(req, "label");
    json names = json::array();
    for (auto& kv : labels->kvs) {
      std::string rest = kv.key.substr(prefix.size());
      auto slash = rest.find('/');
      std::string c = rest.substr(0, slash), l = rest.substr(slash + 1);
      if (by_label) {
        if (l == want) names.push_back(c);
      } else {
        by_cluster[c].push_back({{"clusterLabel", l}});
      }
    }
    if (by_label) return Json(200, names.dump());
    auto kvs = ListKvs(cluster, pk);
    if (!kvs.ok()) return FromStatus(kvs.status());
    json out = json::array();
    for (auto& kv : *kvs) {
      json c = json::parse(kv.value, nullptr, false);
      std::string name = c["metadata"].value("name", "");
      auto it = by_cluster.find(name);
      out.push_back({{"metadata", c["metadata"]},
                     {"labels", it == by_cluster.end() ? json::array() : it->second}});
    }
    return Json(200, out.dump());
  });

  // GET kv-pairs/{kv}?key=K -> {"value": ...}
  std::vector<std::string> kv_item = kvd.collection;
  kv_item.push_back("{clusterKv}");
  AddRoute("GET", kv_item, [this, &kvd](const Request& req, const KeyValues& k) {
    if (!HasQuery(req, "key")) return GetOne(kvd, k, req);
    auto cur = GetKey(ObjKey(kvd, k));
    if (!cur.ok()) return FromStatus(cur.status());
    if (!cur->has_value()) return ErrorResponse(404, "Cluster key value pair not found");
    json obj = json::parse((*cur)->value, nullptr, false);
    std::string key = QueryValue(req, "key");
    for (const auto& m : obj["spec"]["kv"]) {
      auto it = m.find(key);
      if (it != m.end()) return Json(200, json{{"value", *it}}.dump());
    }
    return ErrorResponse(404, "Cluster KV pair key value not found");
  });

  // GET profiles?app=A -> that app's profile.
  AddRoute("GET", profile.collection, [this, &profile](const Request& req, const KeyValues& pk) {
    if (!HasQuery(req, "app")) return List(profile, pk);
    if (auto e = CheckParent(profile, pk)) return *e;
    std::string app = QueryValue(req, "app");
    if (!ValidName(app)) return ErrorResponse(400, "Invalid app name '" + app + "'");
    auto u = GetKey(UniqueKey(profile, Join(pk) + "/" + app));
    if (!u.ok()) return FromStatus(u.status());
    if (!u->has_value()) return ErrorResponse(404, "AppProfile not found");
    KeyValues k = pk;
    k.push_back((*u)->value.substr((*u)->value.rfind('/') + 1));
    return GetOne(profile, k, req);
  });

  // GET intents -> {"intent": [maps]}; GET intents/?intent=N -> {"intent": [map]}.
  AddRoute("GET", intents.collection, [this, &intents](const Request& req, const KeyValues& pk) {
    if (auto e = CheckParent(intents, pk)) return *e;
    if (HasQuery(req, "intent")) {
      std::string name = QueryValue(req, "intent");
      if (name.empty()) return ErrorResponse(400, "Missing intent name");
      if (!ValidName(name)) return ErrorResponse(400, "Invalid intent name '" + name + "'");
      KeyValues k = pk;
      k.push_back(name);
      auto cur = GetKey(ObjKey(intents, k));
      if (!cur.ok()) return FromStatus(cur.status());
      if (!cur->has_value()) return ErrorResponse(404, "Intent not found");
      json obj = json::parse((*cur)->value, nullptr, false);
      return Json(200, json{{"intent", json::array({obj["spec"]["intent"]})}}.dump());
    }
    auto kvs = ListKvs(intents, pk);
    if (!kvs.ok()) return FromStatus(kvs.status());
    json maps = json::array();
    for (auto& kv : *kvs) maps.push_back(json::parse(kv.value, nullptr, false)["spec"]["intent"]);
    return Json(200, json{{"intent", maps}}.dump());
  });

  // GET app-intents/?app-name=A -> {app, intent} of that app's placement.
  // EMCO's handler reads only app-name: app= alone is its 400.
  AddRoute("GET", appIntent.collection, [this, &appIntent](const Request& req, const KeyValues& pk) {
    if (!HasQuery(req, "app") && !HasQuery(req, "app-name")) return List(appIntent, pk);
    if (auto e = CheckParent(appIntent, pk)) return *e;
    std::string app = QueryValue(req, "app-name");
    if (app.empty()) return ErrorResponse(400, "Missing appName in GET request: the parameter is app-name");
    auto kvs = ListKvs(appIntent, pk);
    if (!kvs.ok()) return FromStatus(kvs.status());
    for (auto& kv : *kvs) {
      json obj = json::parse(kv.value, nullptr, false);
      if (obj["spec"].value("app", "") == app) return Json(200, obj["spec"].dump());
    }
    return ErrorResponse(404, appIntent.display + " not found");
  });
}

Api::Api(store::Store& store, Options opts) : impl_(std::make_unique<Impl>(store, opts)) {}
Api::~Api() = default;

Response Api::Handle(const Request& req) {
  if (req.path == "/healthz") {
    auto rev = impl_->st.CurrentRevision();
    Response r = rev.ok() ? Json(200, json{{"status", "ok"}, {"store", impl_->st.Backend()}}.dump())
                          : ErrorResponse(503, "store unavailable: " + rev.status().message());
    r.route = "/healthz";
    return r;
  }
  return impl_->Dispatch(req);
}

std::vector<std::string> Api::Routes() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& r : impl_->routes) {
    std::string s = r.method + " " + r.pattern;
    if (seen.insert(s).second) out.push_back(s);
  }
  return out;
}

}  // namespace eco::api
