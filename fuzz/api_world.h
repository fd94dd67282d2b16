// The north API in-process for the API fuzz targets: an embedded store in a
// temp dir, parents of every resource type created once (so bodies reach the
// validation of deep children), and a reset of the store to that state after
// each input, so that every input meets the same world and replays alike.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/api.h"
#include "store/sqlite_store.h"
#include "test_archives.h"

namespace eco::fuzz {

class ApiWorld {
 public:
  ApiWorld() {
    // tmpfs when there is one: the store commits on every request.
    char tmpl[] = "/dev/shm/eco-fuzz-XXXXXX";
    char tmpl2[] = "/tmp/eco-fuzz-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    if (!dir) dir = mkdtemp(tmpl2);
    if (!dir) Die("no temp dir");
    dir_ = dir;
    auto s = store::OpenSqliteStore({.dir = dir_ + "/db"});
    if (!s.ok()) Die(s.status().ToString());
    store_ = std::move(*s);
    api_ = std::make_unique<api::Api>(*store_, api::Options{});
    Build();
    baseline_ = Dump();
  }
  ~ApiWorld() {
    api_.reset();
    store_.reset();
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }

  api::Api& api() { return *api_; }

  // The name every parent of that key variable was created with.
  static std::string NameOf(const std::string& var) {
    static const std::map<std::string, std::string> kNames = {
        {"project", "p"},         {"compositeApp", "ca"},   {"compositeAppVersion", "v1"},
        {"app", "app"},           {"compositeProfile", "cp"}, {"appProfile", "prof"},
        {"deploymentIntentGroup", "dig"}, {"genericPlacementIntent", "gpi"},
        {"clusterProvider", "prov"}, {"cluster", "c1"},     {"logicalCloud", "lc"},
        {"hpaIntent", "hpa"},     {"hpaConsumer", "cons"},  {"trafficGroupIntent", "tg"},
        {"inboundServerIntent", "srv"}, {"inboundClientsIntent", "cli"}, {"controller", "ctl"},
        {"genericK8sIntent", "gi"}, {"genericResource", "gr"},
    };
    auto it = kNames.find(var);
    return it == kNames.end() ? "fz" : it->second;
  }

  // Fills a route template's variables: parents by NameOf, the last one
  // (the item itself) with `leaf` when given.
  static std::string Expand(const std::string& tmpl, const std::string& leaf) {
    std::string out;
    size_t last_var = tmpl.rfind('{');
    for (size_t i = 0; i < tmpl.size();) {
      if (tmpl[i] != '{') {
        out += tmpl[i++];
        continue;
      }
      size_t end = tmpl.find('}', i);
      std::string var = tmpl.substr(i + 1, end - i - 1);
      out += (i == last_var && !leaf.empty()) ? leaf : NameOf(var);
      i = end + 1;
    }
    return out;
  }

  // Puts the store back as it was after Build (keys added by the last input
  // deleted, changed ones restored).
  void Reset() {
    auto now = Dump();
    for (const auto& [k, v] : now) {
      auto it = baseline_.find(k);
      if (it == baseline_.end()) {
        (void)store_->Delete(k);
      } else if (it->second != v) {
        (void)store_->Put(k, it->second);
      }
    }
    for (const auto& [k, v] : baseline_) {
      if (!now.count(k)) (void)store_->Put(k, v);
    }
  }

  api::Response Call(const std::string& method, const std::string& path, const std::string& body) {
    api::Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.content_type = "application/json";
    return api_->Handle(r);
  }
  api::Response Upload(const std::string& method, const std::string& path, const std::string& meta,
                       const std::string& file) {
    api::Request r;
    r.method = method;
    r.path = path;
    r.multipart = true;
    r.content_type = "multipart/form-data; boundary=x";
    r.parts.emplace("metadata", api::FormPart{meta, "", "application/json"});
    r.parts.emplace("file", api::FormPart{file, "upload", "application/octet-stream"});
    return api_->Handle(r);
  }

  [[noreturn]] static void Die(const std::string& why) {
    std::fprintf(stderr, "api fuzz set-up: %s\n", why.c_str());
    std::abort();
  }

 private:
  void Want(const api::Response& r, const std::string& what) {
    if (r.status >= 300) std::fprintf(stderr, "api fuzz set-up: %s: %d %s\n", what.c_str(), r.status, r.body.c_str());
  }
  void Post(const std::string& path, const std::string& body) { Want(Call("POST", path, body), path); }

  void Build() {
    const std::string kube =
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
        "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
        "    user: u\ncurrent-context: x\n";
    Post("/v2/controllers", R"({"metadata":{"name":"ctl"},"spec":{"host":"127.0.0.1","port":9000,"type":"action","priority":1}})");
    Post("/v2/cluster-providers", R"({"metadata":{"name":"prov"}})");
    Want(Upload("POST", "/v2/cluster-providers/prov/clusters", R"({"metadata":{"name":"c1"}})", kube), "cluster");
    Post("/v2/cluster-providers/prov/clusters/c1/labels", R"({"clusterLabel":"l1"})");
    Post("/v2/projects", R"({"metadata":{"name":"p"}})");
    Post("/v2/projects/p/logical-clouds", R"({"metadata":{"name":"lc"},"spec":{"level":"0"}})");
    Post("/v2/projects/p/logical-clouds/lc/cluster-references",
         R"({"metadata":{"name":"r1"},"spec":{"clusterProvider":"prov","cluster":"c1"}})");
    Post("/v2/projects/p/composite-apps", R"({"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}})");
    const std::string ca = "/v2/projects/p/composite-apps/ca/v1";
    Want(Upload("POST", ca + "/apps", R"({"metadata":{"name":"app"}})", testing::ChartTgz("app")), "app");
    Post(ca + "/composite-profiles", R"({"metadata":{"name":"cp"}})");
    Want(Upload("POST", ca + "/composite-profiles/cp/profiles", R"({"metadata":{"name":"prof"},"spec":{"app":"app"}})",
                testing::ProfileTgz()),
         "profile");
    Post(ca + "/deployment-intent-groups",
         R"({"metadata":{"name":"dig"},"spec":{"compositeProfile":"cp","version":"r1","logicalCloud":"lc"}})");
    const std::string dig = ca + "/deployment-intent-groups/dig";
    Post(dig + "/generic-placement-intents", R"({"metadata":{"name":"gpi"}})");
    Post(dig + "/hpa-intents", R"({"metadata":{"name":"hpa"},"spec":{"app":"app"}})");
    Post(dig + "/hpa-intents/hpa/hpa-resource-consumers", R"({"metadata":{"name":"cons"},"spec":{"apiVersion":"apps/v1","kind":"Deployment","name":"web","containerName":"c"}})");
    Post(dig + "/generic-k8s-intents", R"({"metadata":{"name":"gi"}})");
    Post(dig + "/generic-k8s-intents/gi/resources",
         R"({"metadata":{"name":"gr"},"spec":{"app":"app","newObject":"false","resourceGVK":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}}})");
    Post(dig + "/traffic-group-intents", R"({"metadata":{"name":"tg"}})");
    Post(dig + "/traffic-group-intents/tg/inbound-intents",
         R"({"metadata":{"name":"srv"},"spec":{"app":"app","appLabel":"app=web","serviceName":"web","port":80,"protocol":"TCP"}})");
    Post(dig + "/traffic-group-intents/tg/inbound-intents/srv/clients",
         R"({"metadata":{"name":"cli"},"spec":{"app":"app","appLabel":"app=db","serviceName":"db","namespaces":[],"cidrs":[]}})");
  }

  std::map<std::string, std::string> Dump() {
    std::map<std::string, std::string> out;
    store::RangeOptions ro;
    ro.limit = 1000;
    while (true) {
      auto r = store_->Range("/", ro);
      if (!r.ok()) Die("store range: " + r.status().ToString());
      for (const auto& kv : r->kvs) out[kv.key] = kv.value;
      if (!r->more || r->kvs.empty()) return out;
      ro.after = r->kvs.back().key;
    }
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<api::Api> api_;
  std::map<std::string, std::string> baseline_;
};

}  // namespace eco::fuzz
