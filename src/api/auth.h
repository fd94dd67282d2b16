// Who may call the north API: bearer tokens and per-project authorisation.
//
// Static tokens come from a file (`--auth-tokens FILE`), one per line:
//   TOKEN USER PROJECT[,PROJECT...]     or     TOKEN USER *
// `*` makes USER an administrator. Blank lines and lines starting with `#`
// are ignored. Only SHA-256 digests of the tokens are kept in memory.
//
// JWTs (`--auth-jwks FILE`, `--auth-jwt-issuer`, `--auth-jwt-audience`) are
// verified against the keys of a JWKS file (RS256 and ES256): signature,
// issuer, audience, expiry (and not-before), with a minute of clock skew.
// The user is the `sub` claim; the `projects` claim (an array of names)
// gives the projects, `"*"` among them an administrator.
//
// Rules (docs/security.md):
// - /healthz and /metrics need no token; everything else does (401).
// - Administrators may do everything.
// - Others may use their projects and everything under them, except
//   writing the project itself or its logical clouds; list the projects
//   (they see theirs only); and read cluster providers, clusters and their
//   labels, but not kubeconfigs or a cluster's status (which shows every
//   project's deployments); ask who they are (/v2/whoami) and read the
//   fleet (/v2/fleet, which the API limits to their projects), but not the
//   fleet's clusters (/v2/fleet/clusters). Anything else is 403.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::api {

struct Principal {
  std::string user;
  bool admin = false;
  std::set<std::string> projects;  // empty for an administrator

  bool CanUseProject(std::string_view project) const {
    return admin || projects.count(std::string(project)) > 0;
  }
};

class Authenticator {
 public:
  // Parses a token file's text; kInvalid names the line at fault.
  static Result<std::shared_ptr<const Authenticator>> FromTokens(std::string_view text);
  static Result<std::shared_ptr<const Authenticator>> FromTokenFile(const std::string& path);

  struct Config {
    std::string tokens_file;  // static tokens; empty: none
    std::string jwks_file;    // JWT keys; empty: no JWTs
    std::string jwks_text;    // or the JWKS itself (tests)
    std::string issuer, audience;  // required with JWTs
  };
  // Static tokens, JWTs, or both; kInvalid says what is wrong with which file.
  static Result<std::shared_ptr<const Authenticator>> Create(const Config& config);

  // The principal of an `Authorization: Bearer TOKEN` header value;
  // kPermissionDenied (answered 401) when absent, malformed or unknown.
  Result<Principal> Authenticate(std::string_view authorization) const;

  size_t size() const;       // static tokens
  size_t jwt_keys() const;   // keys JWTs are verified with

  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

 private:
  Authenticator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The authenticator of a running server, replaced while it serves: SIGHUP
// makes eco re-read its token and JWKS files (Reload), so tokens and keys
// rotate without a restart. A request uses the one current when it came.
class AuthSource {
 public:
  // `current` was made from `config` (Authenticator::Create).
  AuthSource(Authenticator::Config config, std::shared_ptr<const Authenticator> current);
  // Fixed: Reload keeps it (no files to read).
  explicit AuthSource(std::shared_ptr<const Authenticator> fixed);

  std::shared_ptr<const Authenticator> Get() const;
  // Reads the files again; on an error keeps the current authenticator and
  // says what is wrong with which file.
  Result<std::shared_ptr<const Authenticator>> Reload();

 private:
  std::optional<Authenticator::Config> config_;
  mutable std::mutex mu_;
  std::shared_ptr<const Authenticator> current_;  // guarded by mu_
};

// Whether `who` may make this request (paths without the query);
// kPermissionDenied with the reason when not. `accept` is the Accept
// header: kubeconfigs are downloaded through it.
Status Authorize(const Principal& who, std::string_view method, std::string_view path,
                 std::string_view accept);

}  // namespace eco::api
