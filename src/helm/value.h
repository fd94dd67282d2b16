// The values Go templates see. A Value is a small handle (kind + scalar or a
// shared immutable payload), so copies are cheap and templates never mutate
// data in place. New Go types (time, semver, ...) plug in as Objects.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace eco::helm {

class Value;

enum class Kind {
  kNil,      // untyped nil / missing value
  kBool,
  kInt,      // Go int: template constants, len, rune constants
  kInt64,    // Go int64: JSON integers (numbers=int64), Sprig arithmetic
  kFloat64,
  kString,
  kBytes,    // []byte
  kSlice,    // []interface{} or a typed slice; the Go type name is kept
  kMap,      // map[string]interface{} (or typed map); ranged in key order
  kObject,   // anything else: time.Time, *semver.Version, ... (see Object)
  kFunc,     // a callable value (for `call`)
};

using ValueList = std::vector<Value>;
using ValueMap = std::map<std::string, Value, std::less<>>;

// Extension point for Go values that are neither basic nor containers.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string TypeName() const = 0;   // %T, e.g. "*semver.Version"
  virtual std::string GoKind() const { return "struct"; }  // kindOf
  virtual std::string Format() const = 0;     // %v / print
  // A method or field `name` called with `args`; NotFound if absent.
  virtual Result<Value> Call(std::string_view name, const ValueList& args) const;
  virtual bool HasMember(std::string_view) const { return false; }
  // Go integer types with methods (time.Month, time.Weekday): the number
  // that comparisons and %d see.
  virtual bool IntValue(int64_t*) const { return false; }
  // encoding/json's text for the value (its MarshalJSON, or a named
  // integer's number); false when Go's encoder rejects it.
  virtual bool MarshalJson(std::string*) const { return false; }
};

struct Callable;  // defined below

class Value {
 public:
  Value() = default;  // nil: Go's invalid reflect.Value (a missing value)
  // A nil interface{} stored in a map (JSON null, or missingkey=zero):
  // prints and compares as nil, but field access on it is an error in Go.
  static Value NilInterface();
  static Value Bool(bool b);
  static Value Int(int64_t i);    // Go int
  static Value Int64(int64_t i);  // Go int64
  static Value Float(double f);
  static Value String(std::string s);
  static Value Bytes(std::string b);
  static Value Slice(ValueList items, std::string type_name = "[]interface {}");
  static Value Map(ValueMap items, std::string type_name = "map[string]interface {}");
  static Value Obj(std::shared_ptr<const Object> obj);
  static Value Func(std::shared_ptr<const Callable> fn);

  Kind kind() const { return kind_; }
  bool is_nil() const { return kind_ == Kind::kNil; }
  bool is_nil_interface() const { return kind_ == Kind::kNil && i_ == 1; }
  bool is_int() const { return kind_ == Kind::kInt || kind_ == Kind::kInt64; }
  bool is_number() const { return is_int() || kind_ == Kind::kFloat64; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_float() const { return f_; }
  const std::string& as_string() const;  // kString and kBytes
  const ValueList& as_list() const;
  const ValueMap& as_map() const;
  // Go maps are references: Sprig's set/unset change the map every holder
  // sees. Only those functions should write through this.
  ValueMap* mutable_map() const;
  const Object* as_object() const;
  const Callable* as_func() const;

  // The Go type name as %T prints it ("int", "[]interface {}", "<nil>").
  std::string TypeName() const;
  // reflect.Kind name as Sprig's kindOf prints it ("int64", "slice", "map").
  std::string KindName() const;
  // Go template truthiness (text/template's isTrue).
  bool Truth() const;
  // Length for len (strings, slices, maps, bytes); -1 when len is undefined.
  int64_t Len() const;

 private:
  struct Payload;
  static const Payload& EmptyPayload();
  // A value of `kind` whose payload `p` holds.
  static Value WithPayload(Kind kind, std::shared_ptr<const Payload> p);
  Kind kind_ = Kind::kNil;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const Payload> p_;
};

// A function value; args already evaluated. Errors are plain messages;
// the executor adds the "error calling NAME:" context.
struct Callable {
  std::string name;
  std::function<Result<Value>(const ValueList& args)> fn;
};

// Go complex128, which only template constants produce (an Object).
Value MakeComplex(double re, double im);
bool AsComplex(const Value& v, double* re, double* im);

}  // namespace eco::helm
