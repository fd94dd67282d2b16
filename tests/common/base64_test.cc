#include "common/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace eco {
namespace {

TEST(Base64, EncodesRfc4648Vectors) {
  const std::pair<const char*, const char*> kCases[] = {{"", ""},
                                                        {"f", "Zg=="},
                                                        {"fo", "Zm8="},
                                                        {"foo", "Zm9v"},
                                                        {"foob", "Zm9vYg=="},
                                                        {"fooba", "Zm9vYmE="},
                                                        {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : kCases) {
    EXPECT_EQ(Base64Encode(in), out) << in;
    Result<std::string> back = Base64Decode(out);
    ASSERT_TRUE(back.ok()) << out;
    EXPECT_EQ(*back, in);
  }
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Base64, EncodesLongInputWithoutLineBreaks) {
  std::string in(10000, 'x');
  std::string out = Base64Encode(in);
  EXPECT_EQ(out.size(), 4 * ((in.size() + 2) / 3));
  EXPECT_EQ(out.find('\n'), std::string::npos);
  Result<std::string> back = Base64Decode(out);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, in);
}

TEST(Base64, DecodeErrorsGiveGoOffsets) {
  // Go's encoding/base64 TestDecodeCorrupt (StdEncoding).
  const std::pair<const char*, int> kCases[] = {
      {"!!!!", 0},  {"====", 0},     {"x===", 1},        {"=AAA", 0},   {"A=AA", 1}, {"AA=A", 2},
      {"AA==A", 4}, {"AAA=AAAA", 4}, {"AAAAA", 4},       {"AAAAAA", 4}, {"A=", 1},   {"A==", 1},
      {"AA=", 3},   {"AAAAAA=", 7},  {"YWJjZA=====", 8}, {"A!\n", 1},   {"A=\n", 1}, {"AA\n=", 4}};
  for (const auto& [in, offset] : kCases) {
    Result<std::string> r = Base64Decode(in);
    ASSERT_FALSE(r.ok()) << in;
    EXPECT_EQ(r.status().code(), Code::kInvalid);
    EXPECT_EQ(r.status().message(), "illegal base64 data at input byte " + std::to_string(offset))
        << in;
  }
}

TEST(Base64, DecodeSkipsOnlyNewlinesByDefault) {
  for (const char* in :
       {"", "\n", "AAA=\n", "AAAA\n", "AA==", "AAA=", "AAAA", "AA\r\n==", "A\nA=\n="}) {
    EXPECT_TRUE(Base64Decode(in).ok()) << in;
  }
  EXPECT_FALSE(Base64Decode("Zm9v Zm9v").ok());
  EXPECT_FALSE(Base64Decode("Zm9v\tZm9v").ok());
  // Go's StdEncoding is not Strict: unused bits of the last symbol pass.
  Result<std::string> r = Base64Decode("Zh==");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "f");
}

TEST(Base64, StrictWhitespaceSkippingVariant) {
  const Base64Decoding how{.strict = true, .skip = Base64Decoding::Skip::kWhitespace};
  Result<std::string> r = Base64Decode("Zm9v Ym\tFy\n", how);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "foobar");
  EXPECT_FALSE(Base64Decode("Zh==", how).ok());
  EXPECT_FALSE(Base64Decode("Zm9=", how).ok());
  EXPECT_TRUE(Base64Decode("Zm8=", how).ok());
}

TEST(Base64, RawUrlVariant) {
  const Base64Decoding how{
      .url_alphabet = true, .padded = false, .strict = true, .skip = Base64Decoding::Skip::kNone};
  Result<std::string> r = Base64Decode("_-8", how);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "\xff\xef");
  r = Base64Decode("Zm9vYg", how);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "foob");
  EXPECT_FALSE(Base64Decode("Zm9vYg==", how).ok());  // padding refused
  EXPECT_FALSE(Base64Decode("/+8", how).ok());       // standard alphabet refused
  EXPECT_FALSE(Base64Decode("Zm9v\nYg", how).ok());  // no skipping
  EXPECT_FALSE(Base64Decode("Zm9vY", how).ok());     // one symbol is no byte
}

}  // namespace
}  // namespace eco
