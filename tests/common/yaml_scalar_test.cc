#include "common/yaml_scalar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace eco {
namespace {

using K = GoYamlScalar::Kind;

TEST(GoYamlPlain, NullsAndYaml11Bools) {
  for (const char* s : {"", "~", "null", "Null", "NULL"})
    EXPECT_EQ(ResolveGoYamlPlain(s).kind, K::kNull) << s;
  for (const char* s : {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
    GoYamlScalar r = ResolveGoYamlPlain(s);
    EXPECT_EQ(r.kind, K::kBool) << s;
    EXPECT_TRUE(r.b) << s;
  }
  for (const char* s :
       {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
    GoYamlScalar r = ResolveGoYamlPlain(s);
    EXPECT_EQ(r.kind, K::kBool) << s;
    EXPECT_FALSE(r.b) << s;
  }
  for (const char* s : {"nULL", "yEs", "tRUE", "oN", "nil", "none", "YeS"})
    EXPECT_EQ(ResolveGoYamlPlain(s).kind, K::kString) << s;
}

TEST(GoYamlPlain, IntegersAsParseIntBaseZero) {
  const std::pair<const char*, int64_t> kCases[] = {{"0", 0},
                                                    {"31", 31},
                                                    {"0x1F", 31},
                                                    {"0X1f", 31},
                                                    {"0o17", 15},
                                                    {"017", 15},
                                                    {"0b101", 5},
                                                    {"-0b101", -5},
                                                    {"+12", 12},
                                                    {"-12", -12},
                                                    {"1_000", 1000},
                                                    {"0x_1F", 31},
                                                    {"-9223372036854775808", INT64_MIN}};
  for (const auto& [in, want] : kCases) {
    GoYamlScalar r = ResolveGoYamlPlain(in);
    EXPECT_EQ(r.kind, K::kInt) << in;
    EXPECT_EQ(r.i, want) << in;
  }
  GoYamlScalar big = ResolveGoYamlPlain("18446744073709551615");
  EXPECT_EQ(big.kind, K::kUint);
  EXPECT_EQ(big.u, UINT64_MAX);
  EXPECT_EQ(ResolveGoYamlPlain("18446744073709551616").kind, K::kFloat);  // too big even unsigned
  for (const char* s : {"0x", "0b2", "1:20", "0xG", "12abc", "-"})
    EXPECT_EQ(ResolveGoYamlPlain(s).kind, K::kString) << s;
}

TEST(GoYamlPlain, Floats) {
  const std::pair<const char*, double> kCases[] = {{"1.5", 1.5},  {"-1.5", -1.5}, {".5", 0.5},
                                                   {"1e3", 1000}, {"1.", 1},      {"1_0.5", 10.5},
                                                   {"+.5", 0.5},  {"08", 8}};
  for (const auto& [in, want] : kCases) {
    GoYamlScalar r = ResolveGoYamlPlain(in);
    EXPECT_EQ(r.kind, K::kFloat) << in;
    EXPECT_EQ(r.f, want) << in;
  }
  for (const char* s : {".inf", ".Inf", ".INF", "+.inf"}) {
    GoYamlScalar r = ResolveGoYamlPlain(s);
    EXPECT_EQ(r.kind, K::kFloat) << s;
    EXPECT_TRUE(std::isinf(r.f) && r.f > 0) << s;
  }
  EXPECT_TRUE(std::isinf(ResolveGoYamlPlain("-.Inf").f));
  EXPECT_TRUE(std::isnan(ResolveGoYamlPlain(".NaN").f));
  for (const char* s : {"1e400", ".", "1.2.3", "e3", ".inF", "0x1p3"})
    EXPECT_EQ(ResolveGoYamlPlain(s).kind, K::kString) << s;
}

TEST(GoYamlPlain, TimestampsAndTextStayStrings) {
  for (const char* s :
       {"2001-12-14", "2001-12-14t21:59:43.10-05:00", "hello", "1.2.3.4", "v1", "<<"}) {
    EXPECT_EQ(ResolveGoYamlPlain(s).kind, K::kString) << s;
  }
}

}  // namespace
}  // namespace eco
