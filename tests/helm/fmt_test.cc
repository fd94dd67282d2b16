#include <gtest/gtest.h>

#include "helm/fmt.h"

namespace eco::helm {
namespace {

TEST(Fmt, FloatsAsGo) {
  EXPECT_EQ(FormatValue(Value::Float(3)), "3");
  EXPECT_EQ(FormatValue(Value::Float(1e6)), "1e+06");
  EXPECT_EQ(FormatValue(Value::Float(123456)), "123456");
  EXPECT_EQ(FormatValue(Value::Float(0.1)), "0.1");
  EXPECT_EQ(FormatValue(Value::Float(1.5e-7)), "1.5e-07");
  EXPECT_EQ(FormatValue(Value::Float(0.0001)), "0.0001");
}

TEST(Fmt, Containers) {
  ValueMap m;
  m.emplace("b", Value::Int(2));
  m.emplace("a", Value::String("x"));
  EXPECT_EQ(FormatValue(Value::Map(m)), "map[a:x b:2]");
  EXPECT_EQ(FormatValue(Value::Slice({Value::String("a"), Value()})), "[a <nil>]");
}

TEST(Fmt, Verbs) {
  EXPECT_EQ(Sprintf("%d", {Value::String("x")}), "%!d(string=x)");
  EXPECT_EQ(Sprintf("%d %d", {Value::Int(1)}), "1 %!d(MISSING)");
  EXPECT_EQ(Sprintf("%d", {Value::Int(1), Value::String("a")}), "1%!(EXTRA string=a)");
  EXPECT_EQ(Sprintf("%5.2f|%-4d|%04d|%x|%q|%T", {Value::Float(3.14159), Value::Int(7), Value::Int(-7),
                                                  Value::Int(255), Value::String("a\"b"), Value::Int64(1)}),
            " 3.14|7   |-007|ff|\"a\\\"b\"|int64");
  EXPECT_EQ(Sprintf("%v %t %%", {Value(), Value::Bool(true)}), "<nil> true %");
}

// Go's fmt refuses widths and precisions beyond 1e6 (parsenum/intFromArg);
// an overlong literal width consumes the rest of the format.
TEST(Fmt, HugeWidthsAsGo) {
  EXPECT_EQ(Sprintf("%100000000d tail", {Value::Int(1)}), "%!(NOVERB)%!(EXTRA int=1)");
  EXPECT_EQ(Sprintf("%*d", {Value::Int(2000000), Value::Int(1)}), "%!(BADWIDTH)1");
  EXPECT_EQ(Sprintf("%.*d", {Value::Int(-2000000), Value::Int(1)}), "%!(BADPREC)1");
  EXPECT_EQ(Sprintf("%3d", {Value::Int(1)}), "  1");
}

TEST(Fmt, SprintSpacing) {
  EXPECT_EQ(Sprint({Value::Int(1), Value::Int(2), Value::String("a"), Value::Int(3)}), "1 2a3");
  EXPECT_EQ(Sprintln({Value::String("a"), Value::Int(1)}), "a 1\n");
}

}  // namespace
}  // namespace eco::helm
