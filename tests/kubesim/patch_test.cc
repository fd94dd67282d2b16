// Merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.
#include "kubesim/patch.h"

#include <gtest/gtest.h>

namespace eco::kubesim {
namespace {

Json J(const char* text) { return Json::parse(text); }

struct MergeCase {
  const char* target;
  const char* patch;
  const char* want;
};

// RFC 7386 appendix A, every row.
TEST(MergePatch, Rfc7386AppendixA) {
  const MergeCase cases[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", R"(null)", R"(null)"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(MergePatch(J(c.target), J(c.patch)), J(c.want)) << c.target << " + " << c.patch;
  }
}

struct JsonPatchCase {
  const char* name;
  const char* target;
  const char* ops;
  const char* want;  // nullptr: the patch must fail with kInvalid
};

// RFC 6902 appendix A (A.13, a duplicate key in the patch document, is a
// JSON parser matter) plus pointer and index edge cases.
TEST(JsonPatch, Rfc6902AppendixAAndEdges) {
  const JsonPatchCase cases[] = {
      {"A.1 add member", R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux"}])",
       R"({"baz":"qux","foo":"bar"})"},
      {"A.2 add element", R"({"foo":["bar","baz"]})",
       R"([{"op":"add","path":"/foo/1","value":"qux"}])", R"({"foo":["bar","qux","baz"]})"},
      {"A.3 remove member", R"({"baz":"qux","foo":"bar"})", R"([{"op":"remove","path":"/baz"}])",
       R"({"foo":"bar"})"},
      {"A.4 remove element", R"({"foo":["bar","qux","baz"]})",
       R"([{"op":"remove","path":"/foo/1"}])", R"({"foo":["bar","baz"]})"},
      {"A.5 replace", R"({"baz":"qux","foo":"bar"})",
       R"([{"op":"replace","path":"/baz","value":"boo"}])", R"({"baz":"boo","foo":"bar"})"},
      {"A.6 move value", R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
       R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
       R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"},
      {"A.7 move element", R"({"foo":["all","grass","cows","eat"]})",
       R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])",
       R"({"foo":["all","cows","eat","grass"]})"},
      {"A.8 test success", R"({"baz":"qux","foo":["a",2,"c"]})",
       R"([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])",
       R"({"baz":"qux","foo":["a",2,"c"]})"},
      {"A.9 test failure", R"({"baz":"qux"})", R"([{"op":"test","path":"/baz","value":"bar"}])",
       nullptr},
      {"A.10 add nested", R"({"foo":"bar"})",
       R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])",
       R"({"foo":"bar","child":{"grandchild":{}}})"},
      {"A.11 unknown members ignored", R"({"foo":"bar"})",
       R"([{"op":"add","path":"/baz","value":"qux","xyz":123}])", R"({"foo":"bar","baz":"qux"})"},
      {"A.12 add to missing parent", R"({"foo":"bar"})",
       R"([{"op":"add","path":"/baz/bat","value":"qux"}])", nullptr},
      {"A.14 escape order", R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":10}])",
       R"({"/":9,"~1":10})"},
      {"A.15 string is not number", R"({"/":9,"~1":10})",
       R"([{"op":"test","path":"/~01","value":"10"}])", nullptr},
      {"A.16 append array", R"({"foo":["bar"]})",
       R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])",
       R"({"foo":["bar",["abc","def"]]})"},
      {"~1 names a slash", R"({"a/b":1})", R"([{"op":"replace","path":"/a~1b","value":2}])",
       R"({"a/b":2})"},
      {"bad escape", R"({"a":1})", R"([{"op":"remove","path":"/~2"}])", nullptr},
      {"copy", R"({"a":{"b":1}})", R"([{"op":"copy","from":"/a","path":"/c"}])",
       R"({"a":{"b":1},"c":{"b":1}})"},
      {"copy missing from", R"({"a":1})", R"([{"op":"copy","from":"/x","path":"/c"}])", nullptr},
      {"move into own child", R"({"a":{"b":1}})", R"([{"op":"move","from":"/a","path":"/a/b/c"}])",
       nullptr},
      {"replace root", R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])", R"([1])"},
      {"replace missing", R"({"a":1})", R"([{"op":"replace","path":"/b","value":1}])", nullptr},
      {"remove missing", R"({"a":1})", R"([{"op":"remove","path":"/b"}])", nullptr},
      {"index past end", R"({"a":[1]})", R"([{"op":"add","path":"/a/2","value":1}])", nullptr},
      {"index at end", R"({"a":[1]})", R"([{"op":"add","path":"/a/1","value":2}])",
       R"({"a":[1,2]})"},
      {"leading zero index", R"({"a":[1,2]})", R"([{"op":"remove","path":"/a/01"}])", nullptr},
      {"- is not an index to remove", R"({"a":[1]})", R"([{"op":"remove","path":"/a/-"}])",
       nullptr},
      {"unknown op", R"({})", R"([{"op":"frob","path":"/a"}])", nullptr},
      {"missing value", R"({})", R"([{"op":"add","path":"/a"}])", nullptr},
      {"null value is a value", R"({})", R"([{"op":"add","path":"/a","value":null}])",
       R"({"a":null})"},
      {"not a list", R"({})", R"({"op":"add"})", nullptr},
      {"failure leaves all ops undone", R"({"a":1})",
       R"([{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":5}])", nullptr},
  };
  for (const auto& c : cases) {
    Json target = J(c.target);
    Json before = target;
    auto got = JsonPatch(target, J(c.ops));
    EXPECT_EQ(target, before) << c.name;
    if (c.want == nullptr) {
      ASSERT_FALSE(got.ok()) << c.name << " gave " << got->dump();
      EXPECT_EQ(got.status().code(), Code::kInvalid) << c.name;
    } else {
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
      EXPECT_EQ(*got, J(c.want)) << c.name;
    }
  }
}

TEST(JsonPatch, ErrorNamesOpAndPath) {
  auto got = JsonPatch(J(R"({"a":1})"), J(R"([{"op":"test","path":"/a","value":2}])"));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("test /a"), std::string::npos) << got.status().message();
}

struct SmpCase {
  const char* name;
  const char* target;
  const char* patch;
  const char* want;  // nullptr: kInvalid
};

constexpr const char* kDeployment = R"({
  "apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{"name":"web","namespace":"default","finalizers":["a","b"]},
  "spec":{"replicas":1,"template":{"spec":{
    "containers":[
      {"name":"web","image":"nginx:1.24","ports":[{"containerPort":80},{"containerPort":443}],
       "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"args":["x","y"]},
      {"name":"side","image":"busybox"}],
    "tolerations":[{"key":"k","operator":"Exists"}]}}}})";

TEST(StrategicMergePatch, Table) {
  const SmpCase cases[] = {
      {"kubectl apply image change",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.24"},{"name":"side","image":"b"}]}}}})",
       R"({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"},{"name":"side"}],
           "containers":[{"image":"nginx:1.25","name":"web"}]}}}})",
       R"({"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.25"},{"name":"side","image":"b"}]}}}})"},
      {"new container appended", R"({"containers":[{"name":"a","image":"1"}]})",
       R"({"containers":[{"name":"b","image":"2"}]})",
       R"({"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]})"},
      {"setElementOrder reorders", R"({"containers":[{"name":"a"},{"name":"b"},{"name":"c"}]})",
       R"({"$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}]})",
       R"({"containers":[{"name":"c"},{"name":"a"},{"name":"b"}]})"},
      {"setElementOrder with a new element", R"({"containers":[{"name":"a"},{"name":"b"}]})",
       R"({"$setElementOrder/containers":[{"name":"n"},{"name":"a"},{"name":"b"}],"containers":[{"name":"n"}]})",
       R"({"containers":[{"name":"n"},{"name":"a"},{"name":"b"}]})"},
      {"delete a container", R"({"containers":[{"name":"a"},{"name":"b"}]})",
       R"({"containers":[{"$patch":"delete","name":"a"}]})", R"({"containers":[{"name":"b"}]})"},
      {"replace a whole list", R"({"containers":[{"name":"a"},{"name":"b"}]})",
       R"({"containers":[{"name":"z"},{"$patch":"replace"}]})", R"({"containers":[{"name":"z"}]})"},
      {"env by name", R"({"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]})",
       R"({"env":[{"name":"B","value":"3"},{"name":"C","value":"4"}]})",
       R"({"env":[{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}]})"},
      {"null deletes inside an element", R"({"env":[{"name":"A","value":"1"}]})",
       R"({"env":[{"name":"A","value":null,"valueFrom":{"fieldRef":{"fieldPath":"x"}}}]})",
       R"({"env":[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"x"}}}]})"},
      {"container ports by containerPort",
       R"({"ports":[{"containerPort":80,"name":"http"},{"containerPort":443}]})",
       R"({"ports":[{"containerPort":80,"name":"web"}]})",
       R"({"ports":[{"containerPort":80,"name":"web"},{"containerPort":443}]})"},
      {"service ports by port", R"({"ports":[{"port":80,"targetPort":8080},{"port":443}]})",
       R"({"ports":[{"port":80,"targetPort":9090}]})",
       R"({"ports":[{"port":80,"targetPort":9090},{"port":443}]})"},
      {"volumeMounts by mountPath", R"({"volumeMounts":[{"mountPath":"/a","name":"x"}]})",
       R"({"volumeMounts":[{"mountPath":"/a","name":"y"},{"mountPath":"/b","name":"z"}]})",
       R"({"volumeMounts":[{"mountPath":"/a","name":"y"},{"mountPath":"/b","name":"z"}]})"},
      {"tolerations are atomic", R"({"tolerations":[{"key":"a"},{"key":"b"}]})",
       R"({"tolerations":[{"key":"c"}]})", R"({"tolerations":[{"key":"c"}]})"},
      {"args are atomic", R"({"args":["a","b"]})", R"({"args":["c"]})", R"({"args":["c"]})"},
      {"finalizers merge as a set", R"({"finalizers":["a","b"]})", R"({"finalizers":["b","c"]})",
       R"({"finalizers":["a","b","c"]})"},
      {"deleteFromPrimitiveList", R"({"finalizers":["a","b","c"]})",
       R"({"$deleteFromPrimitiveList/finalizers":["b"]})", R"({"finalizers":["a","c"]})"},
      {"map $patch replace",
       R"({"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}})",
       R"({"spec":{"strategy":{"$patch":"replace","type":"Recreate"}}})",
       R"({"spec":{"strategy":{"type":"Recreate"}}})"},
      {"map $patch delete", R"({"spec":{"strategy":{"type":"Recreate"},"replicas":1}})",
       R"({"spec":{"strategy":{"$patch":"delete"}}})", R"({"spec":{"replicas":1}})"},
      {"retainKeys", R"({"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}})",
       R"({"strategy":{"$retainKeys":["type"],"type":"Recreate"}})",
       R"({"strategy":{"type":"Recreate"}})"},
      {"null deletes a key", R"({"metadata":{"labels":{"a":"1","b":"2"}}})",
       R"({"metadata":{"labels":{"a":null}}})", R"({"metadata":{"labels":{"b":"2"}}})"},
      {"last-applied annotation", R"({"metadata":{"annotations":{"x":"1"}}})",
       R"({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}\n"}}})",
       R"({"metadata":{"annotations":{"x":"1","kubectl.kubernetes.io/last-applied-configuration":"{}\n"}}})"},
      {"conditions by type", R"({"conditions":[{"type":"Ready","status":"False"}]})",
       R"({"conditions":[{"type":"Ready","status":"True"}]})",
       R"({"conditions":[{"type":"Ready","status":"True"}]})"},
      {"element without merge key", R"({"containers":[{"name":"a"}]})",
       R"({"containers":[{"image":"x"}]})", nullptr},
      {"unknown $patch", R"({"a":{}})", R"({"a":{"$patch":"frob"}})", nullptr},
  };
  for (const auto& c : cases) {
    auto got = StrategicMergePatch(J(c.target), J(c.patch));
    if (c.want == nullptr) {
      ASSERT_FALSE(got.ok()) << c.name;
      EXPECT_EQ(got.status().code(), Code::kInvalid) << c.name;
      continue;
    }
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(*got, J(c.want)) << c.name << "\n got " << got->dump();
  }
}

TEST(StrategicMergePatch, DeploymentContainersEnvPortsTogether) {
  Json patch = J(R"({"metadata":{"finalizers":["c"]},"spec":{"template":{"spec":{
      "$setElementOrder/containers":[{"name":"side"},{"name":"web"}],
      "containers":[{"name":"web","image":"nginx:1.25",
         "$setElementOrder/env":[{"name":"B"},{"name":"A"}],"env":[{"name":"B","value":"9"}],
         "ports":[{"containerPort":8080}],"args":["z"]}],
      "tolerations":[]}}}})");
  auto got = StrategicMergePatch(J(kDeployment), patch);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  Json want = J(kDeployment);
  want["metadata"]["finalizers"] = J(R"(["a","b","c"])");
  Json& spec = want["spec"]["template"]["spec"];
  spec["containers"] = J(R"([{"name":"side","image":"busybox"},
      {"name":"web","image":"nginx:1.25","ports":[{"containerPort":80},{"containerPort":443},{"containerPort":8080}],
       "env":[{"name":"B","value":"9"},{"name":"A","value":"1"}],"args":["z"]}])");
  spec["tolerations"] = Json::array();
  EXPECT_EQ(*got, want) << got->dump();
}

TEST(ListTypeOf, PortsKeyFollowsElements) {
  EXPECT_STREQ(ListTypeOf("ports", J(R"([{"containerPort":1}])"), Json()).key, "containerPort");
  EXPECT_STREQ(ListTypeOf("ports", J(R"([{"port":1}])"), Json()).key, "port");
  EXPECT_EQ(ListTypeOf("finalizers", Json(), Json()).kind, ListType::kSet);
  EXPECT_EQ(ListTypeOf("command", Json(), Json()).kind, ListType::kAtomic);
}

}  // namespace
}  // namespace eco::kubesim
