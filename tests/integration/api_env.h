// Shared set-up for the north-API integration tests: the store under test
// (SQLite or a real etcd), `eco serve` on top of it, and assertion helpers
// for EMCO-style responses.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

#include "eco_fixture.h"
#include "test_archives.h"

namespace eco::testing {

using nlohmann::json;

enum class StoreKind { kSqlite, kEtcd };
std::string StoreName(StoreKind kind);
// So that gtest prints "sqlite"/"etcd" rather than raw bytes.
inline void PrintTo(StoreKind kind, std::ostream* os) { *os << StoreName(kind); }

// A store plus an eco server on it. For etcd, the etcd process belongs to
// this object, so every Deployment starts from an empty keyspace.
class Deployment {
 public:
  Deployment(StoreKind kind, const std::function<void(EcoOptions&)>& tweak = nullptr);
  ~Deployment();
  Deployment(const Deployment&) = delete;
  Deployment& operator=(const Deployment&) = delete;

  bool ready() const { return server_ && server_->ready(); }
  // Why the store or the server did not come up.
  std::string error() const;
  EcoServer& server() { return *server_; }

 private:
  struct Store;  // hides the etcd fixture
  std::unique_ptr<Store> store_;
  std::unique_ptr<EcoServer> server_;
  std::string error_;
};

// One Deployment per store kind, started on first use and kept for the whole
// binary so that the many small cases do not each pay for a start-up. Tests
// on it use unique names (see ApiTest::Name).
Deployment& SharedDeployment(StoreKind kind);

// Test base: parameterised by store, talks to the shared deployment.
class ApiTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override;

  EcoServer& server() { return deployment_->server(); }
  EcoClient& c() { return *client_; }
  // `base` plus a counter, unique within this binary (names are kept short:
  // EMCO names are at most 128 characters).
  static std::string Name(const std::string& base);

  // POSTs and expects 201; returns the echo ({} on failure, after a failure
  // has been recorded).
  json MustCreate(const std::string& path, const json& body);
  json MustUpload(const std::string& path, const json& metadata, const std::string& file);
  // GET with Accept: application/json, expects 200.
  json MustGet(const std::string& path);
  void MustDelete(const std::string& path);

  // Builders for the common parents; each returns the item path.
  std::string MakeProject();
  std::string MakeCompositeApp(const std::string& project_path, const std::string& version = "v1");
  std::string MakeApp(const std::string& ca_path, const std::string& app);
  std::string MakeCompositeProfile(const std::string& ca_path);
  std::string MakeDig(const std::string& ca_path, const std::string& composite_profile,
                      const std::string& logical_cloud);
  std::string MakeProvider();
  std::string MakeCluster(const std::string& provider_path, const std::string& cluster);

  Deployment* deployment_ = nullptr;
  std::unique_ptr<EcoClient> client_;
};

// {"metadata":{"name":name}} plus `spec` when not null.
json Meta(const std::string& name, const json& spec = nullptr);
// A kubeconfig for cluster `name` (bytes are opaque to the API).
std::string Kubeconfig(const std::string& name);
// The last segment of an item path.
std::string LastSegment(const std::string& path);

// Status check that prints the response when it fails.
::testing::AssertionResult HasStatus(const HttpResponse& r, int status);
// An error answer per the contract: `status`, Content-Type application/json,
// body {"code":status,"message":"<non-empty>"}; when `substr` is set, the
// message contains it (case-insensitive).
::testing::AssertionResult IsError(const HttpResponse& r, int status, std::string_view substr = {});
// 200 and a JSON array body.
::testing::AssertionResult IsJsonArray(const HttpResponse& r, size_t expected_size);
// metadata has exactly the four standard keys, `name` equal to `name`.
::testing::AssertionResult HasFullMetadata(const json& obj, const std::string& name);

#define EXPECT_STATUS(resp, code) EXPECT_TRUE(::eco::testing::HasStatus((resp), (code)))
#define ASSERT_STATUS(resp, code) ASSERT_TRUE(::eco::testing::HasStatus((resp), (code)))
#define EXPECT_ERROR(resp, ...) EXPECT_TRUE(::eco::testing::IsError((resp), __VA_ARGS__))

const httplib::Headers kAcceptJson{{"Accept", "application/json"}};
const httplib::Headers kAcceptOctet{{"Accept", "application/octet-stream"}};
const httplib::Headers kAcceptMultipart{{"Accept", "multipart/form-data"}};
const httplib::Headers kAcceptAny{{"Accept", "*/*"}};
const httplib::Headers kAcceptHtml{{"Accept", "text/html"}};

// Instantiates `suite` over both stores with readable names.
#define ECO_INSTANTIATE_FOR_STORES(suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(                                                                    \
      Stores, suite,                                                                           \
      ::testing::Values(::eco::testing::StoreKind::kSqlite, ::eco::testing::StoreKind::kEtcd), \
      [](const ::testing::TestParamInfo<::eco::testing::StoreKind>& i) {                       \
        return ::eco::testing::StoreName(i.param);                                             \
      })

}  // namespace eco::testing
