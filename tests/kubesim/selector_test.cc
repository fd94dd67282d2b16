// Label and field selectors.
#include "kubesim/selector.h"

#include <gtest/gtest.h>

namespace eco::kubesim {
namespace {

using Json = nlohmann::json;

struct LabelCase {
  const char* selector;
  const char* labels;
  bool want;
};

TEST(LabelSelector, Matches) {
  const LabelCase cases[] = {
      {"", R"({})", true},
      {"", R"(null)", true},
      {"app=web", R"({"app":"web"})", true},
      {"app==web", R"({"app":"web"})", true},
      {"app=web", R"({"app":"db"})", false},
      {"app=web", R"(null)", false},
      {"app!=web", R"({"app":"db"})", true},
      {"app!=web", R"({})", true},  // a missing label is "not equal"
      {"app!=web", R"({"app":"web"})", false},
      {"app in (web,db)", R"({"app":"db"})", true},
      {"app in (web, db)", R"({"app":"api"})", false},
      {"app in (web)", R"({})", false},
      {"app notin (web,db)", R"({"app":"api"})", true},
      {"app notin (web,db)", R"({})", true},
      {"app notin (web,db)", R"({"app":"web"})", false},
      {"app", R"({"app":""})", true},
      {"app", R"({"tier":"x"})", false},
      {"!app", R"({"tier":"x"})", true},
      {"!app", R"({"app":"x"})", false},
      {"app=web,tier=fe", R"({"app":"web","tier":"fe"})", true},
      {"app=web,tier=fe", R"({"app":"web","tier":"be"})", false},
      {" app = web , !gone ", R"({"app":"web"})", true},
      {"example.com/team=a", R"({"example.com/team":"a"})", true},
      {"app=", R"({"app":""})", true},
      {"app=", R"({"app":"x"})", false},
      {"app in (a,b),env notin (prod),!canary,tier", R"({"app":"b","env":"dev","tier":"x"})", true},
  };
  for (const auto& c : cases) {
    auto sel = LabelSelector::Parse(c.selector);
    ASSERT_TRUE(sel.ok()) << c.selector << ": " << sel.status().ToString();
    EXPECT_EQ(sel->Matches(Json::parse(c.labels)), c.want) << c.selector << " on " << c.labels;
  }
  EXPECT_TRUE(LabelSelector::Parse("")->Empty());
  EXPECT_FALSE(LabelSelector::Parse("a")->Empty());
}

TEST(LabelSelector, ParseErrors) {
  const char* bad[] = {
      "app=web,",         // trailing comma
      ",app",             // leading comma
      "app in web",       // missing parenthesis
      "app in (web",      // unclosed
      "app=(web)",        // value must be an identifier
      "!app=web",         // ! takes no operator
      "app=a b",          // two values
      "app>1",            // gt/lt are not supported
      "-app=x",           // key must start alphanumeric
      "app=-x",           // value must start alphanumeric
      "Example.com/a=b",  // prefix must be lowercase
      "a/b/c=d",          // one slash at most
      "app=web)",         // stray parenthesis
  };
  for (const char* text : bad) {
    auto sel = LabelSelector::Parse(text);
    ASSERT_FALSE(sel.ok()) << text;
    EXPECT_EQ(sel.status().code(), Code::kInvalid) << text;
  }
}

// The API server's wording: bare between requirements, prefixed inside one.
TEST(LabelSelector, ErrorMessages) {
  struct Case {
    const char* selector;
    const char* message;
  } cases[] = {
      {"app in web", "unable to parse requirement: found 'web' expected: '('"},
      {"app=web,", "found '', expected: identifier after ','"},
      {",app", "found ',', expected: !, identifier, or 'end of string'"},
      {"!app=web", "found '=', expected: ',' or 'end of string'"},
      {"app=(web)", "unable to parse requirement: found '(', expected: identifier"},
      {"app>1", "unable to parse requirement: found '>', expected: in, notin, =, ==, !=, gt, lt"},
  };
  for (const auto& c : cases) {
    auto sel = LabelSelector::Parse(c.selector);
    ASSERT_FALSE(sel.ok()) << c.selector;
    EXPECT_EQ(sel.status().message(), c.message) << c.selector;
  }
  auto key = LabelSelector::Parse("-app=x");
  EXPECT_EQ(
      key.status().message().rfind("unable to parse requirement: key: Invalid value: \"-app\"", 0),
      0u)
      << key.status().message();
}

TEST(FieldSelector, Matches) {
  Json pod = Json::parse(R"({"metadata":{"name":"p1","namespace":"ns"},
      "spec":{"nodeName":"n1","hostNetwork":true,"priority":3},"status":{"phase":"Running"}})");
  struct Case {
    const char* selector;
    bool want;
  } cases[] = {
      {"", true},
      {"metadata.name=p1", true},
      {"metadata.name==p1", true},
      {"metadata.name=p2", false},
      {"metadata.name!=p2", true},
      {"metadata.namespace=ns,status.phase=Running", true},
      {"metadata.namespace=ns,status.phase!=Running", false},
      {"spec.nodeName=", false},
      {"spec.schedulerName=", true},  // missing field reads as ""
      {"spec.hostNetwork=true", true},
      {"spec.priority=3", true},
      {"spec.priority!=4", true},
  };
  for (const auto& c : cases) {
    auto sel = FieldSelector::Parse(c.selector);
    ASSERT_TRUE(sel.ok()) << c.selector << ": " << sel.status().ToString();
    EXPECT_EQ(sel->Matches(pod), c.want) << c.selector;
  }
}

TEST(FieldSelector, EscapesAndErrors) {
  Json obj = Json::parse(R"({"metadata":{"name":"a,b=c"}})");
  auto sel = FieldSelector::Parse(R"(metadata.name=a\,b\=c)");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_TRUE(sel->Matches(obj));
  EXPECT_EQ(sel->EqualityValue("metadata.name"), "a,b=c");

  for (const char* text : {"metadata.name", "=x", "a=b,c", R"(a=b\x)"}) {
    auto bad = FieldSelector::Parse(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().code(), Code::kInvalid) << text;
  }
  auto bad = FieldSelector::Parse("a=b,c");
  EXPECT_EQ(bad.status().message(), "invalid selector: 'a=b,c'; can't understand 'c'");
}

TEST(FieldSelector, EqualityValue) {
  auto sel = FieldSelector::Parse("metadata.namespace!=x,metadata.name=web");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->EqualityValue("metadata.name"), "web");
  EXPECT_EQ(sel->EqualityValue("metadata.namespace"), "");
  EXPECT_EQ(sel->EqualityValue("spec.nodeName"), "");
}

}  // namespace
}  // namespace eco::kubesim
