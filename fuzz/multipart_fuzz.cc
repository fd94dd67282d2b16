// Fuzzes what eco does with the parts of a multipart/form-data upload. The
// body itself is split into parts by cpp-httplib's parser, a shared library
// of the distribution that eco does not build; this target starts where
// eco's code starts: Api::Handle with the parts of an upload (the metadata
// JSON, the file part, their presence and field names) on every upload
// route: apps (.tgz chart, archive check of src/api/archive_check.cc),
// app profiles (.tgz) and clusters (kubeconfig), POST and PUT. Inputs whose
// first byte has its high bit set go to CheckTgz alone, with small limits.
//
// Layout: byte 0 picks the route (and the archive-only mode); byte 1 says
// which parts are present and under which names; the rest is the metadata
// part and the file part separated by "\n--8<--\n" (no separator: all
// file). The store is put back after each input; a 5xx is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/archive_check.h"
#include "api_world.h"

namespace {

// Built on first use, destroyed at exit (which removes its temp dir).
eco::fuzz::ApiWorld& TheWorld() {
  static eco::fuzz::ApiWorld world;
  return world;
}

struct Upload {
  const char* method;
  const char* path;
};

constexpr Upload kUploads[] = {
    {"POST", "/v2/projects/p/composite-apps/ca/v1/apps"},
    {"PUT", "/v2/projects/p/composite-apps/ca/v1/apps/app"},
    {"PUT", "/v2/projects/p/composite-apps/ca/v1/apps/fz"},
    {"POST", "/v2/projects/p/composite-apps/ca/v1/composite-profiles/cp/profiles"},
    {"PUT", "/v2/projects/p/composite-apps/ca/v1/composite-profiles/cp/profiles/prof"},
    {"POST", "/v2/cluster-providers/prov/clusters"},
    {"PUT", "/v2/cluster-providers/prov/clusters/c1"},
    {"PUT", "/v2/cluster-providers/prov/clusters/fz"},
    {"POST", "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/generic-k8s-intents/gi/resources"},
    {"PUT", "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/generic-k8s-intents/gi/resources/gr"},
    {"POST",
     "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/generic-k8s-intents/gi/resources/gr/"
     "customizations"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  eco::fuzz::ApiWorld* world = &TheWorld();
  if (size < 2) return 0;
  const uint8_t route = data[0], flags = data[1];
  std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);

  if (route & 0x80) {
    eco::api::ArchiveLimits limits;
    limits.max_expanded_bytes = 1u << 20;
    limits.max_entries = 1000;
    (void)eco::api::CheckTgz(std::string(rest), limits);
    return 0;
  }

  std::string_view meta, file = rest;
  constexpr std::string_view kSplit = "\n--8<--\n";
  if (auto pos = rest.find(kSplit); pos != std::string_view::npos) {
    meta = rest.substr(0, pos);
    file = rest.substr(pos + kSplit.size());
  }
  const Upload& u = kUploads[route % (sizeof kUploads / sizeof kUploads[0])];
  eco::api::Request r;
  r.method = u.method;
  r.path = u.path;
  r.multipart = !(flags & 0x40);  // else: the parts arrive as a plain body
  r.content_type = r.multipart ? "multipart/form-data; boundary=b" : "application/json";
  if (!(flags & 1)) {
    r.parts.emplace((flags & 2) ? "meta" : "metadata", eco::api::FormPart{std::string(meta), "", "application/json"});
  }
  if (!(flags & 4)) {
    r.parts.emplace((flags & 8) ? "files" : "file",
                    eco::api::FormPart{std::string(file), (flags & 16) ? "" : "upload.tgz",
                                       (flags & 32) ? "text/plain" : "application/octet-stream"});
  }
  if (!r.multipart) r.body = std::string(meta);
  eco::api::Response resp = world->api().Handle(r);
  if (resp.status >= 500) {
    std::fprintf(stderr, "%s %s answered %d: %s\n", u.method, u.path, resp.status, resp.body.substr(0, 500).c_str());
    __builtin_trap();
  }
  if (resp.status < 300) world->Reset();
  return 0;
}
