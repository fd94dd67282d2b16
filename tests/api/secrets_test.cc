// Kubeconfigs at rest (common/secrets.h): AES-256-GCM sealing, key files,
// rotation, tampering; and the API storing sealed kubeconfigs.
#include "common/secrets.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "api/api.h"
#include "catalog/catalog.h"
#include "process.h"
#include "store/sqlite_store.h"

namespace eco::secrets {
namespace {

const std::string kKey1 = std::string(64, 'a');
const std::string kKey2 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

class SecretsTest : public ::testing::Test {
 protected:
  void TearDown() override { Reset(); }
  testing::TempDir dir_;
};

TEST_F(SecretsTest, SealsAndOpensAndLeavesPlainValuesAlone) {
  ASSERT_TRUE(Seal("x").ok());
  EXPECT_EQ(*Seal("plain"), "plain");  // no key: stored as given
  ASSERT_TRUE(ConfigureFromText(kKey1 + "\n", "test").ok());
  EXPECT_TRUE(Enabled());
  const std::string secret = "apiVersion: v1\nusers:\n- user: {token: s3cr3t-t0ken}\n";
  auto sealed = Seal(secret);
  ASSERT_TRUE(sealed.ok());
  EXPECT_TRUE(IsSealed(*sealed));
  EXPECT_EQ(sealed->find("s3cr3t"), std::string::npos);
  EXPECT_NE(*sealed, *Seal(secret));  // a fresh nonce every time
  EXPECT_EQ(*Open(*sealed), secret);
  EXPECT_EQ(*Open("stored before encryption"), "stored before encryption");
  EXPECT_EQ(*Open(*Seal("")), "");
}

TEST_F(SecretsTest, AlteredOrForeignValuesDoNotOpen) {
  ASSERT_TRUE(ConfigureFromText(kKey1, "test").ok());
  auto sealed = *Seal("kubeconfig");
  for (size_t i : {size_t{7}, size_t{16}, sealed.size() - 20, sealed.size() - 1}) {
    std::string bad = sealed;
    bad[i] ^= 0x01;
    EXPECT_EQ(Open(bad).status().code(), Code::kInvalid) << "byte " << i;
  }
  ASSERT_TRUE(ConfigureFromText(kKey2, "test").ok());
  auto other = Open(sealed);
  EXPECT_EQ(other.status().code(), Code::kInvalid);
  EXPECT_NE(other.status().message().find("not in the key file"), std::string::npos);
  Reset();
  EXPECT_NE(Open(sealed).status().message().find("no encryption key"), std::string::npos);
}

TEST_F(SecretsTest, RotationOpensWithOldKeysAndSealsWithTheFirst) {
  ASSERT_TRUE(ConfigureFromText(kKey1, "test").ok());
  auto old_value = *Seal("old");
  ASSERT_TRUE(ConfigureFromText("# new first\n" + kKey2 + "\n\n" + kKey1 + "\n", "test").ok());
  EXPECT_EQ(*Open(old_value), "old");
  EXPECT_FALSE(SealedWithCurrentKey(old_value));
  auto new_value = *Seal("new");
  EXPECT_TRUE(SealedWithCurrentKey(new_value));
  ASSERT_TRUE(ConfigureFromText(kKey2, "test").ok());  // old key retired
  EXPECT_EQ(*Open(new_value), "new");
  EXPECT_FALSE(Open(old_value).ok());
}

TEST_F(SecretsTest, KeyFilesAreCheckedAndGeneratedPrivate) {
  for (const std::string& bad : {std::string(""), std::string("# nothing\n"), std::string(63, 'a'),
                                 std::string(64, 'g'), kKey1 + " extra"}) {
    auto s = ConfigureFromText(bad, "keys");
    EXPECT_EQ(s.code(), Code::kInvalid) << bad;
  }
  EXPECT_NE(ConfigureFromText(kKey1 + "\nzz\n", "keys").message().find("keys line 2"), std::string::npos);

  const std::string path = dir_.path() + "/encryption.key";
  EXPECT_FALSE(Configure(path, false).ok());  // missing, not generated
  ASSERT_TRUE(Configure(path, true).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto sealed = *Seal("x");
  Reset();
  ASSERT_TRUE(Configure(path, true).ok());  // the same key again, not a new one
  EXPECT_EQ(*Open(sealed), "x");
  ::chmod(path.c_str(), 0644);
  auto loose = Configure(path, false);
  EXPECT_EQ(loose.code(), Code::kInvalid);
  EXPECT_NE(loose.message().find("chmod 600"), std::string::npos);
  EXPECT_EQ(NewKeyText().size(), 64u);
  EXPECT_NE(NewKeyText(), NewKeyText());
}

TEST_F(SecretsTest, TheApiStoresKubeconfigsSealedAndServesThemOpened) {
  ASSERT_TRUE(ConfigureFromText(kKey1, "test").ok());
  auto st = store::OpenSqliteStore({.dir = dir_.path() + "/db"});
  ASSERT_TRUE(st.ok());
  api::Api api(**st, api::Options{});
  auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    api::Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.content_type = "application/json";
    return api.Handle(r);
  };
  ASSERT_EQ(call("POST", "/v2/cluster-providers", R"({"metadata":{"name":"p"}})").status, 201);
  const std::string kubeconfig = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cr3t-t0ken}\n";
  api::Request up;
  up.method = "POST";
  up.path = "/v2/cluster-providers/p/clusters";
  up.multipart = true;
  up.parts.emplace("metadata", api::FormPart{R"({"metadata":{"name":"c"}})", "", "application/json"});
  up.parts.emplace("file", api::FormPart{kubeconfig, "kubeconfig", "application/octet-stream"});
  auto created = api.Handle(up);
  ASSERT_EQ(created.status, 201) << created.body;

  // A kubeconfig whose credentials name files on eco's host is refused at
  // once, and nothing is stored.
  api::Request bad = up;
  bad.parts.erase("metadata");
  bad.parts.erase("file");
  bad.parts.emplace("metadata", api::FormPart{R"({"metadata":{"name":"c2"}})", "", "application/json"});
  bad.parts.emplace("file", api::FormPart{"apiVersion: v1\nclusters:\n- name: x\n  cluster:\n    server: "
                                          "https://h\n    certificate-authority: /etc/shadow\n",
                                          "kubeconfig", "application/octet-stream"});
  auto refused = api.Handle(bad);
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("certificate-authority names a file"), std::string::npos) << refused.body;
  auto none = (*st)->Get(catalog::FileKey("cluster", {"p", "c2"}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto raw = (*st)->Get(catalog::FileKey("cluster", {"p", "c"}));
  ASSERT_TRUE(raw.ok() && raw->has_value());
  EXPECT_TRUE(IsSealed((*raw)->value));
  EXPECT_EQ((*raw)->value.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(*catalog::Kubeconfig(**st, "p", "c"), kubeconfig);
  api::Request down;
  down.method = "GET";
  down.path = "/v2/cluster-providers/p/clusters/c";
  down.accept = "application/octet-stream";
  auto got = api.Handle(down);
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.body, kubeconfig);
}

}  // namespace
}  // namespace eco::secrets
