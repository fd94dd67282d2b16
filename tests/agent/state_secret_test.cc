// The agent's state in Secrets against kube-sim (in process): round trips
// small and large, generations replacing each other, crashes at each step
// of a Save (simulated by failing the client call at that step), corruption
// found and named, and a namespace with nothing in it.
#include "agent/state_secret.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "common/base64.h"
#include "embedded_kubesim.h"
#include "status_matchers.h"

namespace eco::agent {
namespace {

using nlohmann::json;

// What an API server backed by etcd refuses: objects over ~1.5 MiB.
constexpr size_t kObjectLimit = 1536 * 1024;

// A client that fails the call a test names (a crash at that point of a
// Save, as far as the cluster can tell), and checks every applied object
// against the size limit kube-sim does not enforce.
class FaultyClient : public k8s::ForwardingClusterClient {
 public:
  using ForwardingClusterClient::Apply;
  using ForwardingClusterClient::ForwardingClusterClient;

  // Return non-ok to fail the call instead of forwarding it.
  std::function<Status(const json& obj)> on_apply;
  std::function<Status(std::string_view name)> on_delete;
  size_t largest_apply = 0;

  Result<json> Apply(const json& obj, const k8s::ApplyOptions& opts) override {
    const size_t size = obj.dump().size();
    largest_apply = std::max(largest_apply, size);
    if (size > kObjectLimit) return TooLarge("object of " + std::to_string(size) + " bytes");
    if (on_apply) {
      Status st = on_apply(obj);
      if (!st.ok()) return st;
    }
    return inner().Apply(obj, opts);
  }
  Status Delete(std::string_view api_version, std::string_view kind, std::string_view ns,
                std::string_view name, k8s::Propagation p) override {
    if (on_delete) ECO_RETURN_IF_ERROR(on_delete(name));
    return inner().Delete(api_version, kind, ns, name, p);
  }
};

std::string NameOf(const json& obj) { return obj["metadata"]["name"].get<std::string>(); }

// Someone else's edit: another field manager, so eco's fields (labels) stay.
k8s::ApplyOptions Tamper() {
  k8s::ApplyOptions o;
  o.field_manager = "kubectl-edit";
  return o;
}

class StateSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(sim_, testing::EmbeddedKubeSim::Start());
    ASSERT_OK_AND_ASSIGN(direct_, sim_->Client());
    ASSERT_OK(
        direct_->Apply({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}})
            .status());
    faulty_ = std::make_shared<FaultyClient>(direct_);
  }

  StateSecrets State(size_t chunk_bytes = 700 * 1024) {
    StateSecretsOptions o;
    o.chunk_bytes = chunk_bytes;
    return StateSecrets(faulty_, kNs, "state", o);
  }

  // Names of the Secrets labelled as this state's, sorted.
  std::vector<std::string> StoredNames() {
    k8s::ListOptions lo;
    lo.label_selector = std::string(kStateLabel) + "=state";
    Result<k8s::ObjectList> list = direct_->List("v1", "Secret", kNs, lo);
    EXPECT_OK(list);
    std::vector<std::string> names;
    if (list.ok()) {
      for (const json& item : list->items) names.push_back(NameOf(item));
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::vector<std::string> Expected(uint64_t gen, size_t chunks) {
    std::vector<std::string> names = {"state"};
    for (size_t i = 0; i < chunks; ++i)
      names.push_back("state-" + std::to_string(gen) + "-" + std::to_string(i));
    std::sort(names.begin(), names.end());
    return names;
  }

  // Deterministic bytes that do not compress.
  static std::string Noise(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xff);
    return s;
  }

  static constexpr char kNs[] = "eco-system";
  std::unique_ptr<testing::EmbeddedKubeSim> sim_;
  std::shared_ptr<k8s::ClusterClient> direct_;
  std::shared_ptr<FaultyClient> faulty_;
};

TEST_F(StateSecretsTest, LoadInAnEmptyNamespaceIsNullopt) {
  StateSecrets state = State();
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  EXPECT_FALSE(got.has_value());
  // A namespace that does not exist holds no state either.
  StateSecrets elsewhere(faulty_, "no-such-namespace", "state");
  ASSERT_OK_AND_ASSIGN(got, elsewhere.Load());
  EXPECT_FALSE(got.has_value());
}

TEST_F(StateSecretsTest, SmallBlobRoundTrips) {
  StateSecrets state = State();
  const std::string blob = std::string("{\"revision\":7,\"apps\":[]}\0binary\xff", 33);
  ASSERT_OK_AND_ASSIGN(SavedState saved, state.Save(blob));
  EXPECT_EQ(saved.generation, 1u);
  EXPECT_EQ(saved.chunks, 1u);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, blob);
  EXPECT_EQ(StoredNames(), Expected(1, 1));

  // A fresh object (a restarted agent) reads the same.
  StateSecrets again(direct_, kNs, "state");
  ASSERT_OK_AND_ASSIGN(got, again.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, blob);

  // The index is labelled as such and carries the sizes.
  ASSERT_OK_AND_ASSIGN(json index, direct_->Get("v1", "Secret", kNs, "state"));
  EXPECT_EQ(index["metadata"]["labels"][kStateRoleLabel], "index");
  ASSERT_OK_AND_ASSIGN(std::string text, Base64Decode(index["data"]["index"].get<std::string>()));
  json ix = json::parse(text);
  EXPECT_EQ(ix["generation"], 1);
  EXPECT_EQ(ix["rawBytes"], blob.size());
  EXPECT_EQ(ix["chunks"], 1);
}

TEST_F(StateSecretsTest, EmptyBlobRoundTrips) {
  StateSecrets state = State();
  ASSERT_OK(state.Save(""));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "");
}

// Charts of the conformance corpus, concatenated: text that compresses as
// real desired state does (about ten to one), over 4 MiB and big enough
// compressed for several chunks of the default size.
TEST_F(StateSecretsTest, LargeBlobRoundTripsOverSeveralChunks) {
  const std::filesystem::path charts =
      std::filesystem::path(ECO_CONFORMANCE_DIR) / "helm" / "charts";
  if (!std::filesystem::is_directory(charts)) GTEST_SKIP() << "no conformance corpus at " << charts;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(charts)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string blob;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    blob += ss.str();
  }
  ASSERT_GT(blob.size(), size_t{4} << 20) << "the corpus is smaller than expected";

  StateSecrets state = State();
  ASSERT_OK_AND_ASSIGN(SavedState saved, state.Save(blob));
  EXPECT_GE(saved.chunks, 2u) << blob.size() << " bytes compressed to " << saved.compressed_bytes;
  EXPECT_LE(faulty_->largest_apply, kObjectLimit);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == blob) << "loaded " << got->size() << " bytes, saved " << blob.size();
  EXPECT_EQ(StoredNames(), Expected(1, saved.chunks));
}

// Incompressible bytes: the compressed size is the raw size, the worst case
// for the chunk arithmetic (last chunk partial, every object near the limit).
TEST_F(StateSecretsTest, IncompressibleBlobStaysUnderTheObjectLimit) {
  StateSecrets state = State();
  const std::string blob = Noise((size_t{3} << 20) + 12345, 1);
  ASSERT_OK_AND_ASSIGN(SavedState saved, state.Save(blob));
  EXPECT_EQ(saved.chunks, 5u);
  EXPECT_LE(faulty_->largest_apply, kObjectLimit);
  EXPECT_GT(faulty_->largest_apply, size_t{900} * 1024);  // 700 KiB as base64, plus the object
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == blob);
}

TEST_F(StateSecretsTest, SecondSaveWinsAndTheFirstGenerationIsGone) {
  StateSecrets state = State(4096);
  const std::string first = Noise(3 * 4096 + 1, 1);  // 4 chunks
  const std::string second = Noise(2 * 4096, 2);     // 3 chunks (zlib adds a few bytes)
  ASSERT_OK_AND_ASSIGN(SavedState a, state.Save(first));
  ASSERT_EQ(a.chunks, 4u);
  ASSERT_OK_AND_ASSIGN(SavedState b, state.Save(second));
  EXPECT_EQ(b.generation, 2u);
  EXPECT_EQ(b.chunks, 3u);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == second);
  EXPECT_EQ(StoredNames(), Expected(2, 3));
}

// Crash after some of the new generation's chunks: the index still names
// the old generation, which Load returns whole. The next Save removes the
// partial generation and writes a complete one.
TEST_F(StateSecretsTest, SaveInterruptedAmongTheChunksLeavesTheOldState) {
  StateSecrets state = State(4096);
  const std::string old_state = Noise(2 * 4096, 1);
  ASSERT_OK(state.Save(old_state));
  int chunk_writes = 0;
  faulty_->on_apply = [&](const json& obj) {
    if (NameOf(obj) != "state" && ++chunk_writes == 3)
      return Unavailable("connection reset (simulated crash)");
    return Status::Ok();
  };
  Result<SavedState> interrupted = state.Save(Noise(5 * 4096, 2));
  ASSERT_FALSE(interrupted.ok());
  EXPECT_EQ(interrupted.status().code(), Code::kUnavailable);
  EXPECT_NE(interrupted.status().message().find("state-2-2"), std::string::npos)
      << interrupted.status().ToString();
  faulty_->on_apply = nullptr;

  std::vector<std::string> with_leftovers = Expected(1, 3);
  with_leftovers.insert(with_leftovers.end(), {"state-2-0", "state-2-1"});
  std::sort(with_leftovers.begin(), with_leftovers.end());
  EXPECT_EQ(StoredNames(), with_leftovers);
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == old_state);

  const std::string next = Noise(4096, 3);
  ASSERT_OK_AND_ASSIGN(SavedState saved, state.Save(next));
  EXPECT_EQ(saved.generation, 2u);
  EXPECT_EQ(StoredNames(), Expected(2, saved.chunks));
  ASSERT_OK_AND_ASSIGN(got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == next);
}

// Crash with every chunk written but not the index: the same.
TEST_F(StateSecretsTest, SaveInterruptedBeforeTheIndexLeavesTheOldState) {
  StateSecrets state = State(4096);
  ASSERT_OK(state.Save("old"));
  faulty_->on_apply = [](const json& obj) {
    return NameOf(obj) == "state" ? Unavailable("simulated crash") : Status::Ok();
  };
  ASSERT_FALSE(state.Save(Noise(3 * 4096, 2)).ok());
  faulty_->on_apply = nullptr;
  EXPECT_EQ(StoredNames().size(), 1u + 1u + 4u);  // index, old chunk, four new ones
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "old");
}

// Leftovers written straight to the cluster (a Save of another version, or
// a future generation's chunks): Load ignores them; the next Save deletes
// them.
TEST_F(StateSecretsTest, StrayChunksAreIgnoredThenCleanedByTheNextSave) {
  StateSecrets state = State();
  ASSERT_OK(state.Save("kept"));
  for (const char* name : {"state-7-0", "state-2-0"}) {
    const std::string gen = std::string(name).substr(6, 1);
    ASSERT_OK(direct_
                  ->Apply({{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata",
                            {{"name", name},
                             {"namespace", kNs},
                             {"labels",
                              {{kStateLabel, "state"},
                               {kStateRoleLabel, "chunk"},
                               {kStateGenerationLabel, gen}}}}},
                           {"data", {{"chunk", Base64Encode("garbage")}}}})
                  .status());
  }
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "kept");
  ASSERT_OK(state.Save("next"));
  EXPECT_EQ(StoredNames(), Expected(2, 1));
  ASSERT_OK_AND_ASSIGN(got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "next");
}

// Crash after the index switched, before the old chunks were deleted: the
// new state is the one loaded, and the next Save deletes the old chunks.
TEST_F(StateSecretsTest, SaveInterruptedAfterTheSwitchLeavesTheNewState) {
  StateSecrets state = State(4096);
  ASSERT_OK(state.Save(Noise(2 * 4096, 1)));  // 3 chunks
  faulty_->on_delete = [](std::string_view) { return Unavailable("simulated crash"); };
  const std::string second = Noise(100, 2);
  ASSERT_FALSE(state.Save(second).ok());
  faulty_->on_delete = nullptr;
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(*got == second);

  ASSERT_OK(state.Save("third"));
  EXPECT_EQ(StoredNames(), Expected(3, 1));
}

TEST_F(StateSecretsTest, ACorruptedChunkFailsLoadNamingIt) {
  StateSecrets state = State(4096);
  ASSERT_OK_AND_ASSIGN(SavedState saved, state.Save(Noise(2 * 4096, 1)));
  ASSERT_EQ(saved.chunks, 3u);
  ASSERT_OK_AND_ASSIGN(json chunk, direct_->Get("v1", "Secret", kNs, "state-1-1"));
  ASSERT_OK_AND_ASSIGN(std::string bytes, Base64Decode(chunk["data"]["chunk"].get<std::string>()));
  bytes[100] = static_cast<char>(bytes[100] ^ 1);
  ASSERT_OK(direct_
                ->Apply({{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata", {{"name", "state-1-1"}, {"namespace", kNs}}},
                         {"data", {{"chunk", Base64Encode(bytes)}}}},
                        Tamper())
                .status());
  Result<std::optional<std::string>> got = state.Load();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInternal);
  EXPECT_NE(got.status().message().find("Secret eco-system/state-1-1"), std::string::npos)
      << got.status().ToString();
  EXPECT_NE(got.status().message().find("corrupted"), std::string::npos) << got.status().ToString();

  // A Save replaces the broken state.
  ASSERT_OK(state.Save("repaired"));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> now, state.Load());
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(*now, "repaired");
}

TEST_F(StateSecretsTest, AMissingChunkFailsLoadNamingIt) {
  StateSecrets state = State(4096);
  ASSERT_OK(state.Save(Noise(2 * 4096, 1)));
  ASSERT_OK(direct_->Delete("v1", "Secret", kNs, "state-1-2", k8s::Propagation::kBackground));
  Result<std::optional<std::string>> got = state.Load();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInternal);
  EXPECT_NE(got.status().message().find("Secret eco-system/state-1-2"), std::string::npos)
      << got.status().ToString();
  EXPECT_NE(got.status().message().find("missing"), std::string::npos) << got.status().ToString();
}

TEST_F(StateSecretsTest, AnUnreadableIndexFailsLoadAndSaveRepairsIt) {
  StateSecrets state = State();
  ASSERT_OK(state.Save("before"));
  ASSERT_OK(direct_
                ->Apply({{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata", {{"name", "state"}, {"namespace", kNs}}},
                         {"data", {{"index", Base64Encode("{\"format\":1,")}}}},
                        Tamper())
                .status());
  Result<std::optional<std::string>> got = state.Load();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInternal);
  EXPECT_NE(got.status().message().find("Secret eco-system/state"), std::string::npos)
      << got.status().ToString();

  ASSERT_OK(state.Save("after"));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> now, state.Load());
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(*now, "after");
  EXPECT_EQ(StoredNames(), Expected(1, 1));  // the old chunks went with the broken index
}

// Another writer changes the index between this Save's read and its write:
// Conflict, and the other writer's state stands.
TEST_F(StateSecretsTest, AnIndexChangedDuringSaveIsAConflict) {
  StateSecrets state = State();
  ASSERT_OK(state.Save("mine"));
  StateSecrets other(direct_, kNs, "state");
  bool raced = false;
  faulty_->on_apply = [&](const json& obj) {
    if (NameOf(obj) == "state" && !raced) {
      raced = true;
      EXPECT_OK(other.Save("theirs"));
    }
    return Status::Ok();
  };
  Result<SavedState> saved = state.Save("mine again");
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), Code::kConflict) << saved.status().ToString();
  faulty_->on_apply = nullptr;
  // The other writer cleaned our chunks as leftovers and switched first.
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "theirs");
}

TEST_F(StateSecretsTest, ClearRemovesEveryStateSecret) {
  StateSecrets state = State(4096);
  ASSERT_OK(state.Save(Noise(3 * 4096, 1)));
  ASSERT_OK(direct_
                ->Apply({{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata", {{"name", "unrelated"}, {"namespace", kNs}}},
                         {"data", {{"k", Base64Encode("v")}}}})
                .status());
  ASSERT_OK(state.Clear());
  EXPECT_TRUE(StoredNames().empty());
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, state.Load());
  EXPECT_FALSE(got.has_value());
  EXPECT_OK(direct_->Get("v1", "Secret", kNs, "unrelated"));
  ASSERT_OK(state.Clear());  // nothing left: still Ok
}

TEST_F(StateSecretsTest, TwoBaseNamesInOneNamespaceKeepApart) {
  StateSecrets a(faulty_, kNs, "state");
  StateSecrets b(faulty_, kNs, "state-b");
  ASSERT_OK(a.Save("a1"));
  ASSERT_OK(b.Save("b1"));
  ASSERT_OK(a.Save("a2"));  // a's clean-up must not touch b's chunks
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> got, b.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "b1");
  ASSERT_OK(a.Clear());
  ASSERT_OK_AND_ASSIGN(got, b.Load());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "b1");
}

TEST_F(StateSecretsTest, BadNamesAndOversizedBlobsAreRefused) {
  for (auto [ns, base] :
       std::vector<std::pair<std::string, std::string>>{{"Eco", "state"},
                                                        {"eco", "State"},
                                                        {"eco", ""},
                                                        {"eco", std::string(41, 'a')},
                                                        {"", "state"}}) {
    StateSecrets bad(faulty_, ns, base);
    EXPECT_EQ(bad.Save("x").status().code(), Code::kInvalid) << ns << "/" << base;
    EXPECT_EQ(bad.Load().status().code(), Code::kInvalid) << ns << "/" << base;
    EXPECT_EQ(bad.Clear().code(), Code::kInvalid) << ns << "/" << base;
  }
  StateSecretsOptions small;
  small.max_blob_bytes = 10;
  StateSecrets limited(faulty_, kNs, "state", small);
  EXPECT_EQ(limited.Save("01234567890").status().code(), Code::kTooLarge);
}

}  // namespace
}  // namespace eco::agent
