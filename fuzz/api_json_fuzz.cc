// Fuzzes the north API's JSON request bodies, route by route, in-process
// (Api::Handle over an embedded store; no HTTP). The first byte picks one of
// the POST/PUT routes the API serves (lifecycle operations aside: they need
// a scheduler and take no body worth the name); for a PUT, its low bit picks
// whether the item is an existing parent or a new one. The rest is the body.
// Parents exist, so bodies reach the validation of deep children; the store
// is put back after each input. Any answer is fine except a crash, a
// sanitizer report, a hang, or a 5xx: the store is local and healthy, so a
// 5xx can only mean a body the API failed to reject cleanly.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "api_world.h"

namespace {

struct Route {
  std::string method;
  std::string path;  // template, "{var}" segments
};

// Operations that are POSTed but carry no resource body.
bool IsLifecycle(const std::string& path) {
  for (const char* op : {"/approve", "/instantiate", "/terminate", "/stop", "/update", "/rollback",
                         "/migrate", "/status", "/resync", "/plan", "/rollout/pause", "/rollout/resume",
                         "/rollout/abort"}) {
    std::string o(op);
    if (path.size() >= o.size() && path.compare(path.size() - o.size(), o.size(), o) == 0) return true;
  }
  return false;
}

std::vector<Route> BodyRoutes(eco::api::Api& api) {
  std::vector<Route> out;
  for (const std::string& r : api.Routes()) {
    auto sp = r.find(' ');
    std::string method = r.substr(0, sp), path = r.substr(sp + 1);
    if ((method == "POST" || method == "PUT") && !IsLifecycle(path)) out.push_back({method, path});
  }
  return out;
}

// Built on first use, destroyed at exit (which removes its temp dir).
eco::fuzz::ApiWorld& TheWorld() {
  static eco::fuzz::ApiWorld world;
  return world;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  eco::fuzz::ApiWorld* world = &TheWorld();
  static const std::vector<Route> routes = BodyRoutes(world->api());
  if (size < 1 || routes.empty()) return 0;
  const Route& route = routes[data[0] % routes.size()];
  std::string leaf = (route.method == "PUT" && (data[0] & 0x80)) ? "" : "fz";
  if (route.method == "POST") leaf.clear();  // a collection: no item variable to fill
  std::string path = eco::fuzz::ApiWorld::Expand(route.path, route.method == "PUT" ? leaf : "");
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  eco::api::Response r = world->Call(route.method, path, body);
  if (r.status >= 500) {
    std::fprintf(stderr, "%s %s answered %d: %s\n", route.method.c_str(), path.c_str(), r.status,
                 r.body.substr(0, 500).c_str());
    __builtin_trap();
  }
  if (r.status < 300) world->Reset();
  return 0;
}
