// kube-sim's transport, the parts both protocols share: request targets,
// the /sim API kube-sim answers itself, and the call into the handler.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "kubesim/server_internal.h"

namespace eco::kubesim::internal {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// False on a malformed escape ("%4", "%zz").
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexDigit(in[i + 1]);
      int lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool DecodeQuery(std::string_view q, std::map<std::string, std::string>* out) {
  std::string key, value;
  while (!q.empty()) {
    std::size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    std::string_view k = pair.substr(0, eq);
    std::string_view v = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (!PercentDecode(k, true, &key) || !PercentDecode(v, true, &value)) return false;
    (*out)[key] = value;
  }
  return true;
}

std::string FaultsJson(const std::string& cluster, const Faults& f) {
  nlohmann::json j = {{"cluster", cluster},
                      {"down", f.down},
                      {"hang", f.hang},
                      {"latencyMs", f.latency_ms},
                      {"errorRate", f.error_rate}};
  // Names come from request paths: invalid UTF-8 must not throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

bool SplitTarget(std::string_view target, HttpRequest* req) {
  std::size_t q = target.find('?');
  if (!PercentDecode(target.substr(0, q), false, &req->path)) return false;
  return q == std::string_view::npos || DecodeQuery(target.substr(q + 1), &req->query);
}

// "/clusters/NAME/..." → NAME; "" for paths outside any cluster.
std::string_view ClusterOf(std::string_view path) {
  constexpr std::string_view kPrefix = "/clusters/";
  if (path.substr(0, kPrefix.size()) != kPrefix) return {};
  path.remove_prefix(kPrefix.size());
  return path.substr(0, path.find('/'));
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::optional<HttpResponse> Core::SimApi(const HttpRequest& req) {
  constexpr std::string_view kSim = "/sim/clusters/";
  if (std::string_view(req.path).substr(0, kSim.size()) != kSim) return std::nullopt;
  std::string_view rest = std::string_view(req.path).substr(kSim.size());
  std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string name(rest.substr(0, slash));
  std::string action(rest.substr(slash + 1));
  if (action == "connections") {
    if (!options.cluster_exists(name)) {
      return JsonResponse(404, StatusBody(404, "NotFound", "cluster \"" + name + "\" not found"));
    }
    if (req.method != "GET") {
      return JsonResponse(405, StatusBody(405, "MethodNotAllowed", "use GET for connections"));
    }
    ClusterLoad::Counts c = load.Get(name);
    nlohmann::json j = {
        {"cluster", name}, {"connections", c.connections}, {"h2", c.h2}, {"streams", c.streams}};
    return JsonResponse(200, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (action == "down" || action == "hang" || action == "up" || action == "latency" ||
      action == "errors" || action == "faults") {
    return HandleFaultApi(req.method, name, action, req);
  }
  return std::nullopt;
}

HttpReply Core::Call(const HttpRequest& req, bool inject_error, std::string_view cluster) {
  if (inject_error) {
    return HttpReply::Whole(JsonResponse(
        500, StatusBody(500, "InternalError",
                        "kube-sim: injected error for cluster " + std::string(cluster))));
  }
  try {
    return handler(req);
  } catch (const std::exception& e) {
    return HttpReply::Whole(
        JsonResponse(500, StatusBody(500, "InternalError", std::string("handler: ") + e.what())));
  }
}

HttpResponse Core::HandleFaultApi(const std::string& method, const std::string& cluster,
                                  const std::string& action, const HttpRequest& req) {
  if (!options.cluster_exists(cluster)) {
    return JsonResponse(404, StatusBody(404, "NotFound", "cluster \"" + cluster + "\" not found"));
  }
  if (action == "faults") {
    if (method != "GET") {
      return JsonResponse(405, StatusBody(405, "MethodNotAllowed", "use GET for faults"));
    }
    return JsonResponse(200, FaultsJson(cluster, faults.Get(cluster)));
  }
  if (method != "POST") {
    return JsonResponse(405, StatusBody(405, "MethodNotAllowed", "use POST for " + action));
  }
  Faults now;
  std::optional<FaultEvent> event;
  if (action == "down") {
    // Down and hung are two states of one link: the newer one wins.
    now = faults.Update(cluster, [](Faults& f) {
      f.down = true;
      f.hang = false;
    });
    event = FaultEvent::kDown;
  } else if (action == "hang") {
    now = faults.Update(cluster, [](Faults& f) {
      f.hang = true;
      f.down = false;
    });
  } else if (action == "up") {
    now = faults.Update(cluster, [](Faults& f) { f = Faults{}; });
    event = FaultEvent::kUp;
  } else if (action == "latency") {
    const std::string& ms = req.Query("ms");
    char* end = nullptr;
    long v = ms.empty() ? -1 : std::strtol(ms.c_str(), &end, 10);
    if (v < 0 || v > 3'600'000 || *end != '\0') {
      return JsonResponse(
          400, StatusBody(400, "BadRequest", "latency needs ms=M, an integer from 0 to 3600000"));
    }
    now = faults.Update(cluster, [v](Faults& f) { f.latency_ms = static_cast<int>(v); });
  } else if (action == "errors") {
    const std::string& rate = req.Query("rate");
    char* end = nullptr;
    double v = rate.empty() ? -1 : std::strtod(rate.c_str(), &end);
    if (!(v >= 0 && v <= 1) || *end != '\0') {
      return JsonResponse(
          400, StatusBody(400, "BadRequest", "errors needs rate=R, a number from 0 to 1"));
    }
    now = faults.Update(cluster, [v](Faults& f) { f.error_rate = v; });
  }
  if (event) {
    for (auto& s : registry.Snapshot()) s->PostFault(cluster, *event);
  }
  return JsonResponse(200, FaultsJson(cluster, now));
}

}  // namespace eco::kubesim::internal
