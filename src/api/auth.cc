#include "api/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace eco::api {
namespace {

using Digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

Digest Sha256(std::string_view s) {
  Digest d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return d;
}

struct DigestHash {
  size_t operator()(const Digest& d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof h);  // already uniformly distributed
    return h;
  }
};

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The path's segments after "/v2/".
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool IsRead(std::string_view method) { return method == "GET" || method == "HEAD"; }

}  // namespace

struct Authenticator::Impl {
  std::unordered_map<Digest, Principal, DigestHash> by_token;
};

Authenticator::Authenticator() : impl_(std::make_unique<Impl>()) {}
Authenticator::~Authenticator() = default;

size_t Authenticator::size() const { return impl_->by_token.size(); }

Result<std::shared_ptr<const Authenticator>> Authenticator::FromTokens(std::string_view text) {
  std::shared_ptr<Authenticator> a(new Authenticator());
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto f = Fields(line);
    if (f.empty() || f[0].front() == '#') {
      if (end == text.size()) break;
      continue;
    }
    const std::string where = "token file line " + std::to_string(line_no) + ": ";
    if (f.size() != 3) {
      return Invalid(where + "expected \"TOKEN USER PROJECT[,PROJECT...]\" or \"TOKEN USER *\", got " +
                     std::to_string(f.size()) + " fields");
    }
    if (f[0].size() < 16) return Invalid(where + "token shorter than 16 characters");
    Principal p;
    p.user = std::string(f[1]);
    if (f[2] == "*") {
      p.admin = true;
    } else {
      size_t i = 0;
      const std::string_view list = f[2];
      while (i <= list.size()) {
        size_t j = list.find(',', i);
        if (j == std::string_view::npos) j = list.size();
        std::string_view name = list.substr(i, j - i);
        if (name.empty() || name == "*") {
          return Invalid(where + "project list \"" + std::string(list) +
                         "\" has an empty name or a '*' among names");
        }
        p.projects.emplace(name);
        i = j + 1;
      }
    }
    if (!a->impl_->by_token.emplace(Sha256(f[0]), std::move(p)).second) {
      return Invalid(where + "the same token appears twice");
    }
    if (end == text.size()) break;
  }
  if (a->impl_->by_token.empty()) return Invalid("token file holds no token");
  return std::shared_ptr<const Authenticator>(std::move(a));
}

Result<std::shared_ptr<const Authenticator>> Authenticator::FromTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid("cannot read token file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  auto r = FromTokens(ss.str());
  if (!r.ok()) return Invalid(path + ": " + r.status().message());
  return r;
}

Result<Principal> Authenticator::Authenticate(std::string_view authorization) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) return PermissionDenied("this API needs a bearer token (Authorization: Bearer TOKEN)");
  if (authorization.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                  [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                              std::tolower(static_cast<unsigned char>(b)); })) {
    return PermissionDenied("the Authorization header must be \"Bearer TOKEN\"");
  }
  std::string_view token = authorization.substr(kBearer.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  // Looked up by digest: the time taken does not depend on how much of a
  // guessed token matches a real one.
  auto it = impl_->by_token.find(Sha256(token));
  if (it == impl_->by_token.end()) return PermissionDenied("unknown bearer token");
  return it->second;
}

Status Authorize(const Principal& who, std::string_view method, std::string_view path,
                 std::string_view accept) {
  if (who.admin) return Status::Ok();
  const auto seg = Segments(path);
  const std::string user = "user " + who.user;
  if (seg.size() < 2 || seg[0] != "v2") {
    return PermissionDenied(user + " is not an administrator: " + std::string(path) +
                            " is for administrators");
  }
  if (seg[1] == "projects") {
    if (seg.size() == 2) {
      if (IsRead(method)) return Status::Ok();  // the list shows their projects only
      return PermissionDenied(user + " is not an administrator: only administrators create projects");
    }
    if (!who.CanUseProject(seg[2])) {
      return PermissionDenied(user + " may not use project " + std::string(seg[2]));
    }
    if (seg.size() == 3 && !IsRead(method)) {
      return PermissionDenied(user + " is not an administrator: only administrators change or delete "
                              "project " + std::string(seg[2]) + " itself");
    }
    if (seg.size() >= 4 && seg[3] == "logical-clouds" && !IsRead(method)) {
      return PermissionDenied(user + " is not an administrator: only administrators change logical clouds");
    }
    return Status::Ok();
  }
  if (seg[1] == "cluster-providers" && IsRead(method)) {
    // Clusters' names and labels are needed to write placement intents;
    // their kubeconfigs and what every project deployed on them are not.
    if (seg.size() >= 6 && seg[3] == "clusters" && seg[5] == "status") {
      return PermissionDenied(user + " is not an administrator: a cluster's status shows every project");
    }
    if (seg.size() == 5 && seg[3] == "clusters" &&
        (accept.find("multipart") != std::string_view::npos ||
         accept.find("octet-stream") != std::string_view::npos)) {
      return PermissionDenied(user + " is not an administrator: kubeconfigs are for administrators");
    }
    return Status::Ok();
  }
  return PermissionDenied(user + " is not an administrator: " + std::string(method) + " " +
                          std::string(path) + " is for administrators");
}

}  // namespace eco::api
