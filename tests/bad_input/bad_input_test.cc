// The bad-input catalogue: requests built to break the north API. Each must
// get a clear 4xx with the API's error body, leave the server answering, and
// change nothing in the store (checked by comparing every key and value
// before and after). Served over real HTTP on loopback.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "test_certs.h"
#include "scheduler/scheduler.h"
#include "served_api.h"
#include "test_archives.h"

namespace eco::testing {
namespace {

using nlohmann::json;
using k8s::testing::Base64;

// Every key and value of the store.
std::map<std::string, std::string> StoreDump(store::Store& st) {
  std::map<std::string, std::string> out;
  store::RangeOptions ro;
  ro.limit = 500;
  while (true) {
    auto r = st.Range("/", ro);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    for (const auto& kv : r->kvs) out[kv.key] = kv.value;
    if (!r->more || r->kvs.empty()) return out;
    ro.after = r->kvs.back().key;
  }
}

struct Bad {
  std::string what;
  std::string method;
  std::string path;
  std::string content_type{};  // "multipart": `parts` instead of `body`
  std::string body{};
  httplib::MultipartFormDataItems parts{};
  int expect = 400;  // exact status; 0: any 4xx
};

class BadInput : public ServedApiTest {
 protected:
  void SetUp() override {
    max_body_bytes_ = 1 << 20;
    api_options_.max_archive_expanded_bytes = 8 << 20;
    ServedApiTest::SetUp();
    Ok("POST", "/v2/projects", R"({"metadata":{"name":"p"}})");
    Ok("POST", "/v2/cluster-providers", R"({"metadata":{"name":"prov"}})");
    Ok("POST", "/v2/projects/p/composite-apps",
       R"({"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}})");
    Ok("POST", "/v2/projects/p/composite-apps/ca/v1/composite-profiles", R"({"metadata":{"name":"cp"}})");
    Ok("POST", "/v2/projects/p/logical-clouds", R"({"metadata":{"name":"lc"},"spec":{"level":"0"}})");
    Ok("POST", "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups",
       R"({"metadata":{"name":"dig"},"spec":{"compositeProfile":"cp","version":"r1","logicalCloud":"lc"}})");
  }
  void Ok(const std::string& method, const std::string& path, const std::string& body) {
    auto r = Send({path, method, path, "application/json", body});
    ASSERT_TRUE(r) << path;
    ASSERT_EQ(r->status, 201) << path << ": " << r->body;
  }
  std::map<std::string, std::string> Dump() { return StoreDump(*store_); }
  httplib::Result Send(const Bad& b) {
    if (b.content_type == "multipart") {
      if (b.method == "PUT") return client_->Put(b.path, b.parts);
      return client_->Post(b.path, b.parts);
    }
    httplib::Request q;
    q.method = b.method;
    q.path = b.path;
    q.body = b.body;
    if (!b.content_type.empty()) q.set_header("Content-Type", b.content_type);
    return client_->send(q);
  }
  // Every input of `catalogue`, counted in tried_ (a failed ASSERT stops
  // the loop; the count then tells).
  void Check(const std::vector<Bad>& catalogue) {
    const int before = tried_;
    CheckEach(catalogue);
    EXPECT_EQ(tried_ - before, static_cast<int>(catalogue.size())) << "inputs tried";
  }
  void CheckEach(const std::vector<Bad>& catalogue) {
    for (const Bad& b : catalogue) {
      SCOPED_TRACE(b.what);
      const auto before = Dump();
      auto r = Send(b);
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      if (b.expect != 0) {
        EXPECT_EQ(r->status, b.expect) << r->body.substr(0, 300);
      } else {
        EXPECT_TRUE(r->status >= 400 && r->status < 500) << r->status << " " << r->body.substr(0, 300);
      }
      json body = json::parse(r->body, nullptr, false);
      EXPECT_TRUE(body.is_object() && body.contains("message") && body["message"].is_string() &&
                  !body["message"].get<std::string>().empty())
          << r->body.substr(0, 300);
      EXPECT_EQ(Dump(), before) << "the store changed";
      auto health = client_->Get("/healthz");
      ASSERT_TRUE(health && health->status == 200) << "the server stopped answering";
      ++tried_;
    }
  }
  int tried_ = 0;
};

#ifdef ECO_SANITIZED_BUILD
constexpr bool kSanitizedBuild = true;
#else
constexpr bool kSanitizedBuild = false;
#endif

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_F(BadInput, BodiesNamesAndJson) {
  std::vector<Bad> c = {
      {"body over the limit", "POST", "/v2/projects", "application/json",
       R"({"metadata":{"name":"big","description":")" + std::string(2 << 20, 'x') + "\"}}", {}, 413},
      // JSON that cannot be decoded is 422, as in EMCO.
      {"JSON nested 100,000 deep", "POST", "/v2/projects", "application/json", Nested(100000), {}, 422},
      // Found by fuzz_api_json: the parser's explanation was an uncaught exception.
      {"a number beyond double", "POST", "/v2/projects", "application/json",
       R"({"metadata":{"name":"n","userData1":6666666666e6666}})", {}, 422},
      {"metadata nested deep", "POST", "/v2/projects", "application/json",
       R"({"metadata":{"name":"n","description":)" + Nested(5000) + "}}"},
      {"not JSON", "POST", "/v2/projects", "application/json", "metadata: {name: yaml}", {}, 422},
      {"trailing garbage", "POST", "/v2/projects", "application/json", R"({"metadata":{"name":"t"}} x)", {},
       422},
      {"empty body", "POST", "/v2/projects", "application/json", ""},
      {"metadata not an object", "POST", "/v2/projects", "application/json", R"({"metadata":5})"},
      {"name not a string", "POST", "/v2/projects", "application/json", R"({"metadata":{"name":5}})"},
      {"invalid UTF-8 in a name", "POST", "/v2/projects", "application/json",
       "{\"metadata\":{\"name\":\"a\xff\xfe\"}}", {}, 422},
      {"invalid UTF-8 in a description", "POST", "/v2/projects", "application/json",
       "{\"metadata\":{\"name\":\"u\",\"description\":\"\xc3\x28\"}}", {}, 422},
      {"NUL in a name", "POST", "/v2/projects", "application/json", R"({"metadata":{"name":"a\u0000b"}})"},
  };
  for (const char* name : {"a/b", "..", ".", "a b", "", "-a", "a_b?", "A%2Fb", "a\\\\b", "con\\nsole"}) {
    c.push_back({std::string("name \"") + name + "\"", "POST", "/v2/projects", "application/json",
                 json{{"metadata", {{"name", name}}}}.dump()});
  }
  c.push_back({"name of 300 characters", "POST", "/v2/projects", "application/json",
               json{{"metadata", {{"name", std::string(300, 'a')}}}}.dump()});
  c.push_back({"name in the path differs from the body", "PUT", "/v2/projects/p", "application/json",
               R"({"metadata":{"name":"q"}})"});
  Check(c);
  // The counts are docs/reliability.md's: change both together.
  EXPECT_EQ(tried_, 24);
}

TEST_F(BadInput, PathsAndMethods) {
  Check({
      {"dot-dot in the path", "GET", "/v2/projects/../cluster-providers", "", "", {}, 0},
      {"encoded slash in a name", "GET", "/v2/projects/a%2Fb", "", "", {}, 0},
      {"encoded dot-dot", "DELETE", "/v2/projects/%2e%2e", "", "", {}, 0},
      {"unknown route", "GET", "/v2/nothing-here", "", "", {}, 404},
      {"method not allowed", "PATCH", "/v2/projects", "application/json", "{}", {}, 0},
      {"delete of what does not exist", "DELETE", "/v2/projects/none", "", "", {}, 404},
  });
  EXPECT_EQ(tried_, 6);
}

TEST_F(BadInput, ArchivesAndKubeconfigs) {
  const std::string apps = "/v2/projects/p/composite-apps/ca/v1/apps";
  // A multipart upload of `file` for the object `name` under `path`: 422 expected.
  auto upload = [](const std::string& what, const std::string& path, const std::string& name,
                   const std::string& file) {
    return Bad{what, "POST", path, "multipart", "",
               {{"metadata", json{{"metadata", {{"name", name}}}}.dump(), "", "application/json"},
                {"file", file, "upload", "application/octet-stream"}},
               422};
  };
  auto app = [&](const std::string& what, const std::string& tgz) { return upload(what, apps, "app", tgz); };
  // A decompression bomb: 64 MiB of zeros in a small .tgz (the test's limit is 8 MiB).
  const std::string bomb = TgzOf({{"app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n"},
                                  {"app/zeros", std::string(64u << 20, '\0')}});
  ASSERT_LT(bomb.size(), 1u << 20);
  std::vector<Bad> c = {
      app("a '..' path", TgzOf({{"app/Chart.yaml", "name: app\n"}, {"../evil.yaml", "x"}})),
      app("an absolute path", TgzOf({{"/etc/cron.d/evil", "x"}})),
      app("a symbolic link", TgzWithLink("app/templates/x.yaml", "/etc/passwd", false)),
      app("a hard link", TgzWithLink("app/templates/x.yaml", "/etc/passwd", true)),
      app("a decompression bomb", bomb),
      app("not an archive", RandomBytes(4096)),
      app("a truncated archive", TruncatedTgz()),
      app("gzip of plain text", GzipOfText("just text")),
      {"no file part", "POST", apps, "multipart", "",
       {{"metadata", R"({"metadata":{"name":"app"}})", "", "application/json"}}, 422},
      {"no metadata part", "POST", apps, "multipart", "",
       {{"file", ChartTgz("app"), "app.tgz", "application/octet-stream"}}, 0},
  };
  const std::string clusters = "/v2/cluster-providers/prov/clusters";
  auto cluster = [&](const std::string& what, const std::string& kubeconfig) {
    return upload(what, clusters, "c", kubeconfig);
  };
  c.push_back(cluster("an empty kubeconfig", " \n"));
  c.push_back(cluster("a kubeconfig reading a file of eco's host",
                      "apiVersion: v1\nusers:\n- name: u\n  user:\n    tokenFile: /etc/shadow\n"));
  c.push_back(cluster("a kubeconfig with a CA file",
                      "apiVersion: v1\nclusters:\n- name: x\n  cluster:\n    server: https://h\n"
                      "    certificate-authority: /root/.ssh/id_rsa\n"));
  // Broken certificates: not base64, base64 of no PEM, a PEM whose body is
  // damaged, a client key that is not a key.
  auto with_cluster = [](const std::string& field, const std::string& value) {
    return "apiVersion: v1\nclusters:\n- name: x\n  cluster:\n    server: https://h\n    " + field + ": " +
           value + "\n";
  };
  auto with_user = [](const std::string& field, const std::string& value) {
    return "apiVersion: v1\nusers:\n- name: u\n  user:\n    " + field + ": " + value + "\n";
  };
  const std::string damaged_pem = Base64("-----BEGIN CERTIFICATE-----\nMIIBdamaged!!\n-----END CERTIFICATE-----\n");
  c.push_back(cluster("a CA that is not base64", with_cluster("certificate-authority-data", "not*base64!")));
  c.push_back(cluster("a CA that is base64 of no PEM", with_cluster("certificate-authority-data", Base64("hello"))));
  c.push_back(cluster("a CA with a damaged PEM body", with_cluster("certificate-authority-data", damaged_pem)));
  c.push_back(cluster("a client certificate with a damaged PEM body",
                      with_user("client-certificate-data", damaged_pem)));
  c.push_back(cluster("a client key that is not a key", with_user("client-key-data", Base64("not a key"))));
  Check(c);
  EXPECT_EQ(tried_, 18);
}

TEST_F(BadInput, StatusQueries) {
  const std::string status = "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig/status";
  std::vector<Bad> c;
  // (apps, clusters and resources without a value are list requests, as in
  // EMCO; app, cluster and resource filter.)
  for (const std::string& q : std::vector<std::string>{
           "?status=bogus", "?type=cluster&type=rsync", "?output=everything", "?instance=",
           "?instance=not-a-context&instance=x", "?app=../x", "?app=" + std::string(5000, 'a'),
           "?cluster=no-provider", "?cluster=a+b+c", "?cluster=p+c/x", "?resource=a/b",
           "?status=ready&status=deployed"}) {
    c.push_back({"status query " + q.substr(0, 40), "GET", status + q, "", "", {}, 400});
  }
  Check(c);
  EXPECT_EQ(tried_, 12);
}


// Templates built to never end: recursion without a base case, loops that
// print nothing for ever, and output or strings growing past any bound. They
// reach eco as the chart of an app, and are rendered by the instantiate of a
// DIG (the only API that renders), on the HTTP server's worker thread as in
// `eco serve`. Each must fail that instantiate with a clear 4xx naming the
// render error, within a few seconds, and leave the server answering.
//
// What "the store does not change" means here: instantiate records nothing
// when rendering fails (the AppContext it had begun is deleted, the DIG stays
// "Approved"), so every key and value must be as before except the store's
// revision counter. No AppContext key means rsync has nothing to apply, so
// nothing reaches a cluster; the scheduler runs in-process without rsync,
// and the check on the store is what stands for "nothing on a cluster".
class BadTemplate : public ServedApiTest {
 protected:
  void SetUp() override {
    // eco's default render time limit (10 s), so that every other limit is
    // reached first even on a loaded machine; the sanitizer build, several
    // times slower, uses 2 s and accepts the time limit for any case.
    wrap_store_ = [this](std::unique_ptr<store::Store> s) {
      scheduler::Options o;
      o.render_time_limit = std::chrono::seconds(kSanitizedBuild ? 2 : 10);
      sched_ = std::make_unique<scheduler::Scheduler>(*s, std::move(o));
      api_options_.scheduler = sched_.get();
      return s;
    };
    ServedApiTest::SetUp();
    // httplib's default of 5 s is too close to the render limit on a slow
    // sanitizer build; a render that truly hangs still fails the bound below.
    client_->set_read_timeout(std::chrono::seconds(60));
    Ok("POST", "/v2/cluster-providers", R"({"metadata":{"name":"prov"}})");
    Upload("POST", "/v2/cluster-providers/prov/clusters", "c1", "apiVersion: v1\nkind: Config\n");
    Ok("POST", "/v2/projects", R"({"metadata":{"name":"p"}})");
    Ok("POST", "/v2/projects/p/logical-clouds", R"({"metadata":{"name":"lc"},"spec":{"level":"0"}})");
    Ok("POST", "/v2/projects/p/logical-clouds/lc/cluster-references",
       R"({"metadata":{"name":"r1"},"spec":{"clusterProvider":"prov","cluster":"c1"}})");
    Ok("POST", "/v2/projects/p/logical-clouds/lc/instantiate", "", 202);
    Ok("POST", "/v2/projects/p/composite-apps",
       R"({"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}})");
    Upload("POST", kCa + "/apps", "app", ChartTgz("app"));
    Ok("POST", kCa + "/composite-profiles", R"({"metadata":{"name":"cp"}})");
    Ok("POST", kCa + "/deployment-intent-groups",
       R"({"metadata":{"name":"dig"},"spec":{"compositeProfile":"cp","version":"r1","logicalCloud":"lc"}})");
    Ok("POST", kDig + "/generic-placement-intents", R"({"metadata":{"name":"gpi"}})");
    Ok("POST", kDig + "/generic-placement-intents/gpi/app-intents",
       R"({"metadata":{"name":"pl"},"spec":{"app":"app","intent":{"allOf":[{"clusterProvider":"prov","cluster":"c1"}]}}})");
    Ok("POST", kDig + "/intents",
       R"({"metadata":{"name":"all"},"spec":{"intent":{"genericPlacementIntent":"gpi"}}})");
    Ok("POST", kDig + "/approve", "", 202);
  }
  void TearDown() override {
    ServedApiTest::TearDown();  // no request may run while the scheduler goes
    sched_.reset();
  }
  void Ok(const std::string& method, const std::string& path, const std::string& body, int expect = 201) {
    httplib::Request q;
    q.method = method;
    q.path = path;
    q.body = body;
    q.set_header("Content-Type", "application/json");
    auto r = client_->send(q);
    ASSERT_TRUE(r) << path;
    ASSERT_EQ(r->status, expect) << path << ": " << r->body;
  }
  void Upload(const std::string& method, const std::string& path, const std::string& name,
              const std::string& file) {
    httplib::MultipartFormDataItems parts = {
        {"metadata", json{{"metadata", {{"name", name}}}}.dump(), "", "application/json"},
        {"file", file, "upload", "application/octet-stream"}};
    auto r = method == "PUT" ? client_->Put(path, parts) : client_->Post(path, parts);
    ASSERT_TRUE(r) << path;
    ASSERT_TRUE(r->status == 200 || r->status == 201) << path << ": " << r->body;
  }
  std::map<std::string, std::string> Dump() { return StoreDump(*store_); }

  struct Case {
    std::string what;
    std::string values_yaml;
    std::string helpers;   // templates/_helpers.tpl ("" = none)
    std::string manifest;  // templates/cm.yaml
    std::string expect;    // a piece of the error message
  };
  void Check(const std::vector<Case>& cases) {
    const int before = tried_;
    CheckEach(cases);
    EXPECT_EQ(tried_ - before, static_cast<int>(cases.size())) << "templates tried";
  }
  void CheckEach(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.what);
      std::vector<TarEntry> files = {{"cm.yaml", c.manifest}};
      if (!c.helpers.empty()) files.push_back({"_helpers.tpl", c.helpers});
      Upload("PUT", kCa + "/apps/app", "app", ChartTgzWithTemplates("app", c.values_yaml, files));
      const auto before = Dump();
      const auto start = std::chrono::steady_clock::now();
      auto r = client_->Post(kDig + "/instantiate", "", "application/json");
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ASSERT_TRUE(r) << "no answer: " << httplib::to_string(r.error());
      EXPECT_TRUE(r->status >= 400 && r->status < 500) << r->status << " " << r->body.substr(0, 400);
      json body = json::parse(r->body, nullptr, false);
      ASSERT_TRUE(body.is_object() && body.contains("message") && body["message"].is_string()) << r->body;
      const std::string msg = body["message"];
      EXPECT_NE(msg.find("rendering app app"), std::string::npos) << msg.substr(0, 400);
      // A sanitizer build is slow enough to reach the time limit before the
      // limit a case aims at; elsewhere each case must hit its own.
      const bool named = msg.find(c.expect) != std::string::npos ||
                         (kSanitizedBuild && msg.find("execution exceeded its time limit") != std::string::npos);
      EXPECT_TRUE(named) << "want \"" << c.expect << "\": " << msg.substr(0, 400);
      // The render time limit (10 s, 2 s under sanitizers), plus the slack
      // of a loaded machine. What this bound catches is a limit that does not hold
      // at all (each case runs minutes to hours unbounded); an overrun inside
      // one function call is checked machine-independently in
      // HelmFuncs.DeadlineHoldsInsideOneFunctionCall.
      EXPECT_LT(secs, 30.0) << "the render took too long";
      EXPECT_EQ(Dump(), before) << "the store changed";
      auto health = client_->Get("/healthz");
      ASSERT_TRUE(health && health->status == 200) << "the server stopped answering";
      std::printf("  %-44s %4d in %.2f s\n", c.what.c_str(), r->status, secs);
      ++tried_;
    }
  }
  int tried_ = 0;

  const std::string kCa = "/v2/projects/p/composite-apps/ca/v1";
  const std::string kDig = kCa + "/deployment-intent-groups/dig";
  std::unique_ptr<scheduler::Scheduler> sched_;
};

TEST_F(BadTemplate, RecursionLoopsAndHugeOutput) {
  Check({
      {"{{template}} calling itself", "", R"({{define "x"}}{{template "x" .}}{{end}})",
       R"({{template "x" .}})", "exceeded maximum template depth (100000)"},
      {"include calling itself", "", R"({{define "a"}}{{include "a" .}}{{end}})", R"({{include "a" .}})",
       "nested reference name: a"},
      {"two templates including each other", "",
       R"({{define "a"}}{{include "b" .}}{{end}}{{define "b"}}{{include "a" .}}{{end}})", R"({{include "a" .}})",
       "nested reference name"},
      {"tpl calling itself through values", "t: '{{ tpl .Values.t . }}'\n", "", "{{ tpl .Values.t . }}",
       "maximum template depth"},
      {"range over a huge until, printing", "", "", R"({{range until 1000000000}}{{printf "%0100d" .}}{{end}})",
       "until: 1000000000 elements exceed eco's limit"},
      {"range over a long until, printing", "", "", R"({{range until 1000000}}{{printf "%0100d" .}}{{end}})",
       "output exceeds the limit"},
      {"range over a huge untilStep, printing", "", "",
       R"({{range untilStep 0 1000000000 1}}{{printf "%0100d" .}}{{end}})", "untilStep: 1000000000 elements exceed"},
      {"nested ranges printing nothing", "", "",
       R"({{range until 1000000}}{{range until 1000000}}{{end}}{{end}})", "time limit"},
      {"nested ranges over untilStep printing nothing", "", "",
       R"({{range untilStep 0 1000000 1}}{{range untilStep 0 1000000 1}}{{end}}{{end}})", "time limit"},
      {"repeat of 1e9", "", "", R"({{repeat 1000000000 "x"}})", "too large"},
      {"nested ranges multiplying output", "", "",
       R"({{range until 100000}}{{range until 100000}}xxxxxxxxxxxxxxxx{{end}}{{end}})", "output exceeds the limit"},
      {"regexReplaceAll growing a string", "", "",
       R"({{regexReplaceAll "" (repeat 1000000 "a") (repeat 1000 "b")}})", "exceeds the output limit"},
      {"replace growing a string", "", "", R"({{replace "a" (repeat 1000 "b") (repeat 1000000 "a")}})",
       "exceeds the output limit"},
      // Go's fmt refuses widths over 10^6 (%!(BADWIDTH)) instead of padding
      // to a gigabyte; what is left starts with '%', a YAML directive.
      {"printf of a huge width", "", "", R"({{printf "%01000000000d" 1}})", "YAML parse error"},
      {"a variable doubled 40 times", "", "",
       R"({{$s := "ab"}}{{range until 40}}{{$s = print $s $s}}{{end}}{{len $s}})", "exceeds the output limit"},
      {"a list doubled 40 times", "", "",
       R"({{$l := list 1}}{{range until 40}}{{$l = concat $l $l}}{{end}}{{len $l}})", "exceeds the limit"},
      {"indent of a million lines by a million", "", "",
       R"({{indent 1000000 (repeat 1000000 "\n")}})", "exceeds the output limit"},
  });
  EXPECT_EQ(tried_, 17) << "docs/reliability.md counts them";
}

}  // namespace
}  // namespace eco::testing
