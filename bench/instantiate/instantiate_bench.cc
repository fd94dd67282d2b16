// Time from the instantiate call to the AppContext handed to rsync, and the
// AppContext's size, for a composite app of --apps apps x --resources
// resources placed by label on --clusters clusters. Runs the API and the
// scheduler in-process on a store (embedded by default), as `eco serve` does,
// so the number is the scheduler's, not HTTP's. The fleet is written straight
// into the store (bulk transactions) to keep set-up short at 10,000 clusters.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include <archive.h>
#include <archive_entry.h>

#include "api/api.h"
#include "appcontext/appcontext.h"
#include "catalog/catalog.h"
#include "scheduler/scheduler.h"
#include "store/store.h"

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// A chart with `n` templates of three kinds, ~1 KiB each once rendered.
std::string ChartTgz(const std::string& app, int n) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_open(
      a, &out, nullptr,
      [](archive*, void* d, const void* buf, size_t len) -> la_ssize_t {
        static_cast<std::string*>(d)->append(static_cast<const char*>(buf), len);
        return static_cast<la_ssize_t>(len);
      },
      nullptr);
  auto add = [&](const std::string& path, const std::string& data) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, path.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, data.data(), data.size());
    archive_entry_free(e);
  };
  add(app + "/Chart.yaml", "apiVersion: v2\nname: " + app + "\nversion: 0.1.0\n");
  add(app + "/values.yaml", "replicas: 2\nimage: nginx:1.25\nport: 8080\n");
  for (int i = 0; i < n; ++i) {
    std::string name = app + "-" + std::to_string(i);
    std::string t;
    if (i % 4 == 0) {
      t = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name +
          "\n  labels:\n    app: " + name + "\nspec:\n  replicas: {{ .Values.replicas }}\n  selector:\n"
          "    matchLabels:\n      app: " + name + "\n  template:\n    metadata:\n      labels:\n        app: " +
          name + "\n    spec:\n      containers:\n        - name: main\n          image: {{ .Values.image }}\n"
          "          ports:\n            - containerPort: {{ .Values.port }}\n          resources:\n"
          "            requests:\n              cpu: 100m\n              memory: 64Mi\n";
    } else if (i % 4 == 1) {
      t = "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\nspec:\n  selector:\n    app: " + name +
          "\n  ports:\n    - port: 80\n      targetPort: {{ .Values.port }}\n";
    } else {
      t = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n";
      for (int k = 0; k < 12; ++k) t += "  key" + std::to_string(k) + ": \"value-{{ .Release.Name }}-" + std::to_string(k) + "\"\n";
    }
    add(app + "/templates/t" + std::to_string(i) + ".yaml", t);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

bool Check(const eco::api::Response& r, int code, const std::string& what) {
  if (r.status == code) return true;
  std::cerr << what << ": " << r.status << " " << r.body << "\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eco instantiate benchmark"};
  int clusters = 100, apps = 10, resources = 20, runs = 3;
  std::string store_url, dir = "/tmp/eco-instantiate-bench";
  app.add_option("--clusters", clusters, "Clusters in the fleet (all placed)");
  app.add_option("--apps", apps, "Apps in the composite app");
  app.add_option("--resources", resources, "Resources per app");
  app.add_option("--runs", runs, "Instantiate/terminate rounds (the best and median are printed)");
  app.add_option("--store", store_url, "Store URL (default: embedded store in --dir)");
  app.add_option("--dir", dir, "Directory of the embedded store (wiped first)");
  CLI11_PARSE(app, argc, argv);

  if (store_url.empty()) {
    std::filesystem::remove_all(dir);
    store_url = dir;
  }
  auto st = eco::store::Open(store_url);
  if (!st.ok()) {
    std::cerr << st.status().ToString() << "\n";
    return 1;
  }
  eco::store::Store& s = **st;
  eco::scheduler::Scheduler sched(s, {});
  eco::api::Options ao;
  ao.scheduler = &sched;
  eco::api::Api api(s, ao);
  auto call = [&](const std::string& method, const std::string& path, const json& body = json::object()) {
    eco::api::Request r;
    r.method = method;
    r.path = path;
    r.body = body.dump();
    return api.Handle(r);
  };
  auto meta = [](const std::string& n, json spec = nullptr) {
    json j = {{"metadata", {{"name", n}, {"description", ""}, {"userData1", ""}, {"userData2", ""}}}};
    if (!spec.is_null()) j["spec"] = std::move(spec);
    return j;
  };

  auto t0 = Clock::now();
  if (!Check(call("POST", "/v2/cluster-providers", meta("prov")), 201, "provider")) return 1;
  if (!Check(call("POST", "/v2/projects", meta("p")), 201, "project")) return 1;
  if (!Check(call("POST", "/v2/projects/p/logical-clouds", meta("lc", {{"level", "0"}})), 201, "lc")) return 1;
  // Clusters, labels and cluster references in bulk.
  for (int i = 0; i < clusters;) {
    eco::store::Txn txn;
    for (int k = 0; k < 30 && i < clusters; ++k, ++i) {
      std::string c = "edge-" + std::to_string(i);
      txn.success.push_back(eco::store::Op::Put(eco::catalog::ObjectKey("cluster", {"prov", c}), meta(c, json::object()).dump()));
      txn.success.push_back(eco::store::Op::Put(eco::catalog::FileKey("cluster", {"prov", c}), "kubeconfig"));
      txn.success.push_back(eco::store::Op::Put(eco::catalog::ObjectKey("clusterLabel", {"prov", c, "edge"}),
                                                json{{"clusterLabel", "edge"}}.dump()));
      txn.success.push_back(eco::store::Op::Put(
          eco::catalog::ObjectKey("clusterReference", {"p", "lc", "r-" + c}),
          meta("r-" + c, {{"clusterProvider", "prov"}, {"cluster", c}}).dump()));
    }
    auto r = s.Commit(txn);
    if (!r.ok()) {
      std::cerr << r.status().ToString() << "\n";
      return 1;
    }
  }
  if (!Check(call("POST", "/v2/projects/p/logical-clouds/lc/instantiate"), 202, "lc instantiate")) return 1;
  const std::string CA = "/v2/projects/p/composite-apps/ca/v1";
  const std::string DIG = CA + "/deployment-intent-groups/dig";
  if (!Check(call("POST", "/v2/projects/p/composite-apps", meta("ca", {{"compositeAppVersion", "v1"}})), 201, "ca")) return 1;
  for (int a = 0; a < apps; ++a) {
    std::string name = "app" + std::to_string(a);
    eco::api::Request r;
    r.method = "POST";
    r.path = CA + "/apps";
    r.multipart = true;
    r.parts.emplace("metadata", eco::api::FormPart{meta(name).dump(), "", "application/json"});
    r.parts.emplace("file", eco::api::FormPart{ChartTgz(name, resources), "c.tgz", "application/octet-stream"});
    if (!Check(api.Handle(r), 201, "app")) return 1;
  }
  if (!Check(call("POST", CA + "/composite-profiles", meta("cp")), 201, "cp")) return 1;
  if (!Check(call("POST", CA + "/deployment-intent-groups",
                  meta("dig", {{"compositeProfile", "cp"}, {"version", "r1"}, {"logicalCloud", "lc"}})),
             201, "dig"))
    return 1;
  if (!Check(call("POST", DIG + "/generic-placement-intents", meta("gpi")), 201, "gpi")) return 1;
  for (int a = 0; a < apps; ++a) {
    std::string name = "app" + std::to_string(a);
    json intent = {{"allOf", {{{"clusterProvider", "prov"}, {"clusterLabel", "edge"}}}}};
    if (!Check(call("POST", DIG + "/generic-placement-intents/gpi/app-intents", meta(name, {{"app", name}, {"intent", intent}})),
               201, "app intent"))
      return 1;
  }
  if (!Check(call("POST", DIG + "/intents", meta("i", {{"intent", {{"genericPlacementIntent", "gpi"}}}})), 201, "intents"))
    return 1;
  if (!Check(call("POST", DIG + "/approve"), 202, "approve")) return 1;
  double setup = std::chrono::duration<double>(Clock::now() - t0).count();

  std::vector<double> times;
  int64_t size = 0;
  for (int run = 0; run < runs; ++run) {
    auto t = Clock::now();
    auto id = sched.Instantiate({"p", "ca", "v1", "dig"});
    double secs = std::chrono::duration<double>(Clock::now() - t).count();
    if (!id.ok()) {
      std::cerr << "instantiate: " << id.status().ToString() << "\n";
      return 1;
    }
    times.push_back(secs);
    eco::appcontext::Contexts ctx(s);
    auto sz = ctx.SizeBytes(*id);
    if (sz.ok()) size = *sz;
    // Terminate, mark it done as rsync would, and go again.
    if (!sched.Terminate({"p", "ca", "v1", "dig"}).ok()) return 1;
    (void)s.Put(eco::appcontext::StatusKey(*id), R"({"status":"Terminated"})");
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "{\"store\":\"%s\",\"clusters\":%d,\"apps\":%d,\"resources_per_app\":%d,\"runs\":%d,"
      "\"instantiate_best_s\":%.3f,\"instantiate_median_s\":%.3f,\"appcontext_bytes\":%lld,"
      "\"bytes_per_cluster\":%.1f,\"setup_s\":%.1f}\n",
      s.Backend().c_str(), clusters, apps, resources, runs, times.front(), times[times.size() / 2],
      static_cast<long long>(size), clusters ? static_cast<double>(size) / clusters : 0.0, setup);
  return 0;
}
