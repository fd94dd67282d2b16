#include "helm/value.h"

#include <variant>

#include "helm/fmt.h"

namespace eco::helm {

struct Value::Payload {
  std::string str;
  ValueList list;
  ValueMap map;
  std::string type_name;
  std::shared_ptr<const Object> obj;
  std::shared_ptr<const Callable> fn;
};

Result<Value> Object::Call(std::string_view name, const ValueList&) const {
  return NotFound("can't evaluate field " + std::string(name) + " in type " + TypeName());
}

Value Value::NilInterface() {
  Value v;
  v.i_ = 1;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.i_ = b ? 1 : 0;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Int64(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt64;
  v.i_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat64;
  v.f_ = f;
  return v;
}
Value Value::WithPayload(Kind kind, std::shared_ptr<const Payload> p) {
  Value v;
  v.kind_ = kind;
  v.p_ = std::move(p);
  return v;
}
Value Value::String(std::string s) {
  auto p = std::make_shared<Payload>();
  p->str = std::move(s);
  return WithPayload(Kind::kString, std::move(p));
}
Value Value::Bytes(std::string b) {
  Value v = String(std::move(b));
  v.kind_ = Kind::kBytes;
  return v;
}
Value Value::Slice(ValueList items, std::string type_name) {
  auto p = std::make_shared<Payload>();
  p->list = std::move(items);
  p->type_name = std::move(type_name);
  return WithPayload(Kind::kSlice, std::move(p));
}
Value Value::Map(ValueMap items, std::string type_name) {
  auto p = std::make_shared<Payload>();
  p->map = std::move(items);
  p->type_name = std::move(type_name);
  return WithPayload(Kind::kMap, std::move(p));
}
Value Value::Obj(std::shared_ptr<const Object> obj) {
  auto p = std::make_shared<Payload>();
  p->obj = std::move(obj);
  return WithPayload(Kind::kObject, std::move(p));
}
Value Value::Func(std::shared_ptr<const Callable> fn) {
  auto p = std::make_shared<Payload>();
  p->fn = std::move(fn);
  return WithPayload(Kind::kFunc, std::move(p));
}

const Value::Payload& Value::EmptyPayload() {
  static const Payload kEmpty;  // trivially shared by all scalar values
  return kEmpty;
}

const std::string& Value::as_string() const { return p_ ? p_->str : EmptyPayload().str; }
const ValueList& Value::as_list() const { return p_ ? p_->list : EmptyPayload().list; }
const ValueMap& Value::as_map() const { return p_ ? p_->map : EmptyPayload().map; }
ValueMap* Value::mutable_map() const {
  return kind_ == Kind::kMap ? &const_cast<Payload*>(p_.get())->map : nullptr;
}
const Object* Value::as_object() const { return p_ ? p_->obj.get() : nullptr; }
const Callable* Value::as_func() const { return p_ ? p_->fn.get() : nullptr; }

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kNil: return "<nil>";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kInt64: return "int64";
    case Kind::kFloat64: return "float64";
    case Kind::kString: return "string";
    case Kind::kBytes: return "[]uint8";
    case Kind::kSlice:
    case Kind::kMap: return p_->type_name;
    case Kind::kObject: return p_->obj->TypeName();
    case Kind::kFunc: return "func";
  }
  return "?";
}

std::string Value::KindName() const {
  switch (kind_) {
    case Kind::kNil: return "invalid";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kInt64: return "int64";
    case Kind::kFloat64: return "float64";
    case Kind::kString: return "string";
    case Kind::kBytes:
    case Kind::kSlice: return "slice";
    case Kind::kMap: return "map";
    case Kind::kObject: return p_->obj->GoKind();
    case Kind::kFunc: return "func";
  }
  return "?";
}

bool Value::Truth() const {
  switch (kind_) {
    case Kind::kNil: return false;
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kInt64: return i_ != 0;
    case Kind::kFloat64: return f_ != 0;
    case Kind::kString:
    case Kind::kBytes: return !p_->str.empty();
    case Kind::kSlice: return !p_->list.empty();
    case Kind::kMap: return !p_->map.empty();
    case Kind::kObject:
    case Kind::kFunc: return true;  // structs are always true in Go
  }
  return false;
}

int64_t Value::Len() const {
  switch (kind_) {
    case Kind::kString:
    case Kind::kBytes: return static_cast<int64_t>(p_->str.size());
    case Kind::kSlice: return static_cast<int64_t>(p_->list.size());
    case Kind::kMap: return static_cast<int64_t>(p_->map.size());
    default: return -1;
  }
}

}  // namespace eco::helm

namespace eco::helm {
namespace {

class ComplexObject : public Object {
 public:
  ComplexObject(double re, double im) : re_(re), im_(im) {}
  std::string TypeName() const override { return "complex128"; }
  std::string GoKind() const override { return "complex128"; }
  std::string Format() const override {
    std::string im = FormatFloat(im_, 'g', -1);
    if (im[0] != '-' && im[0] != '+') im = "+" + im;
    return "(" + FormatFloat(re_, 'g', -1) + im + "i)";
  }
  double re_, im_;
};

}  // namespace

Value MakeComplex(double re, double im) { return Value::Obj(std::make_shared<ComplexObject>(re, im)); }

bool AsComplex(const Value& v, double* re, double* im) {
  if (v.kind() != Kind::kObject) return false;
  const auto* c = dynamic_cast<const ComplexObject*>(v.as_object());
  if (!c) return false;
  *re = c->re_;
  *im = c->im_;
  return true;
}

}  // namespace eco::helm
