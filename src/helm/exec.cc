// Executor for parsed templates, following Go 1.19's text/template/exec.go:
// the same evaluation order, truthiness, comparison rules and messages.
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "helm/ast.h"
#include "helm/fmt.h"
#include "helm/template.h"

namespace eco::helm {

constexpr const char* kTimeLimitMessage = "execution exceeded its time limit";

using Opt = std::optional<Value>;

namespace {

const char* ArgTypeName(ArgType t) {
  switch (t) {
    case ArgType::kAny: return "interface {}";
    case ArgType::kString: return "string";
    case ArgType::kInt: return "int";
    case ArgType::kInt64: return "int64";
    case ArgType::kFloat64: return "float64";
    case ArgType::kBool: return "bool";
    case ArgType::kList: return "[]interface {}";
    case ArgType::kMap: return "map[string]interface {}";
  }
  return "?";
}

bool Assignable(const Value& v, ArgType t) {
  switch (t) {
    case ArgType::kAny: return true;
    case ArgType::kString: return v.kind() == Kind::kString;
    case ArgType::kInt: return v.kind() == Kind::kInt;
    case ArgType::kInt64: return v.kind() == Kind::kInt64;
    case ArgType::kFloat64: return v.kind() == Kind::kFloat64;
    case ArgType::kBool: return v.kind() == Kind::kBool;
    case ArgType::kList: return v.kind() == Kind::kSlice && v.TypeName() == "[]interface {}";
    // Helm's chartutil.Values has that underlying type, so Go assigns it too.
    case ArgType::kMap:
      return v.kind() == Kind::kMap && (v.TypeName() == "map[string]interface {}" || v.TypeName() == "chartutil.Values");
  }
  return false;
}

// Go's basicKind classes for comparisons.
enum class BK { kInvalid, kBool, kInt, kFloat, kComplex, kString };
// An integer's value, including named integer Objects (time.Month).
int64_t IntOf(const Value& v) {
  int64_t i = v.as_int();
  if (v.kind() == Kind::kObject) v.as_object()->IntValue(&i);
  return i;
}

BK BasicKind(const Value& v) {
  double re, im;
  if (AsComplex(v, &re, &im)) return BK::kComplex;
  int64_t i;
  if (v.kind() == Kind::kObject && v.as_object()->IntValue(&i)) return BK::kInt;
  switch (v.kind()) {
    case Kind::kBool: return BK::kBool;
    case Kind::kInt:
    case Kind::kInt64: return BK::kInt;
    case Kind::kFloat64: return BK::kFloat;
    case Kind::kString: return BK::kString;
    default: return BK::kInvalid;
  }
}

bool Comparable(const Value& v) {
  return !(v.kind() == Kind::kSlice || v.kind() == Kind::kMap || v.kind() == Kind::kBytes ||
           v.kind() == Kind::kFunc);
}

std::string FmtS(const Value& v) { return Sprintf("%s", {v}); }

Result<bool> Eq(const Value& a1, const ValueList& rest) {
  if (rest.empty()) return Invalid("missing argument for comparison");
  BK k1 = BasicKind(a1);
  for (const Value& a : rest) {
    BK k2 = BasicKind(a);
    bool truth = false;
    if (k1 != k2) {
      if (!a1.is_nil() && !a.is_nil()) return Invalid("incompatible types for comparison");
    } else {
      switch (k1) {
        case BK::kBool:
        case BK::kInt: truth = IntOf(a1) == IntOf(a); break;
        case BK::kFloat: truth = a1.as_float() == a.as_float(); break;
        case BK::kComplex: {
          // kComplex means AsComplex succeeds; GCC cannot tell once it inlines it (unity build).
          double r1 = 0, i1 = 0, r2 = 0, i2 = 0;
          AsComplex(a1, &r1, &i1);
          AsComplex(a, &r2, &i2);
          truth = r1 == r2 && i1 == i2;
          break;
        }
        case BK::kString: truth = a1.as_string() == a.as_string(); break;
        case BK::kInvalid:
          if (a1.is_nil() || a.is_nil()) {
            truth = a1.is_nil() && a.is_nil();
          } else if (a1.TypeName() != a.TypeName()) {
            return Invalid("non-comparable types " + FmtS(a1) + ": " + a1.TypeName() + ", " +
                           a.TypeName() + ": " + FmtS(a));
          } else if (!Comparable(a)) {
            return Invalid("non-comparable type " + FmtS(a) + ": " + a.TypeName());
          } else {
            truth = a1.kind() == Kind::kObject && a1.as_object() == a.as_object();
          }
          break;
      }
    }
    if (truth) return true;
  }
  return false;
}

Result<bool> Lt(const Value& a1, const Value& a2) {
  BK k1 = BasicKind(a1);
  if (k1 == BK::kInvalid) return Invalid("invalid type for comparison");
  BK k2 = BasicKind(a2);
  if (k2 == BK::kInvalid) return Invalid("invalid type for comparison");
  if (k1 != k2) return Invalid("incompatible types for comparison");
  switch (k1) {
    case BK::kBool: return Invalid("invalid type for comparison");
    case BK::kFloat: return a1.as_float() < a2.as_float();
    case BK::kInt: return IntOf(a1) < IntOf(a2);
    case BK::kString: return a1.as_string() < a2.as_string();
    default: return Invalid("invalid type for comparison");
  }
}

Result<bool> Le(const Value& a1, const Value& a2) {
  auto lt = Lt(a1, a2);
  if (!lt.ok() || *lt) return lt;
  return Eq(a1, {a2});
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\0': out += "\xEF\xBF\xBD"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string JsEscape(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    switch (c) {
      case '\\': out += "\\\\"; continue;
      case '\'': out += "\\'"; continue;
      case '"': out += "\\\""; continue;
      case '<': out += "\\u003C"; continue;
      case '>': out += "\\u003E"; continue;
      case '&': out += "\\u0026"; continue;
      case '=': out += "\\u003D"; continue;
      default: break;
    }
    if (c < ' ') {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string UrlQueryEscape(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

// text/template's evalArgs for html/js/urlquery.
std::string EscaperArg(const ValueList& args) {
  if (args.size() == 1 && args[0].kind() == Kind::kString) return args[0].as_string();
  ValueList printable;
  for (const Value& a : args) printable.push_back(a.is_nil() ? Value::String("<no value>") : a);
  return Sprint(printable);
}

Result<int64_t> IndexArg(const Value& index, int64_t cap) {
  if (!index.is_int()) {
    if (index.is_nil()) return Invalid("cannot index slice/array with nil");
    return Invalid("cannot index slice/array with type " + index.TypeName());
  }
  int64_t x = index.as_int();
  if (x < 0 || x > cap) return Invalid("index out of range: " + std::to_string(x));
  return x;
}

Result<Value> Index(const Value& item_in, const ValueList& indexes) {
  Value item = item_in;
  if (item.is_nil()) return Invalid("index of untyped nil");
  for (const Value& index : indexes) {
    if (item.is_nil()) return Invalid("index of nil pointer");
    switch (item.kind()) {
      case Kind::kSlice:
      case Kind::kString:
      case Kind::kBytes: {
        ECO_ASSIGN_OR_RETURN(auto x, IndexArg(index, item.Len()));
        if (x == item.Len()) return Invalid("index out of range: " + std::to_string(x));
        if (item.kind() == Kind::kSlice) {
          Value e = item.as_list()[x];
          item = e.is_nil() ? Value::NilInterface() : e;
        } else {
          item = Value::Int64(static_cast<unsigned char>(item.as_string()[x]));
          // Go: indexing a string yields a uint8.
        }
        break;
      }
      case Kind::kMap: {
        if (index.is_nil()) return Invalid("value is nil; should be of type string");
        if (index.kind() != Kind::kString)
          return Invalid("value has type " + index.TypeName() + "; should be string");
        auto it = item.as_map().find(index.as_string());
        if (it == item.as_map().end() || it->second.is_nil()) {
          item = Value::NilInterface();
        } else {
          item = it->second;
        }
        break;
      }
      default:
        return Invalid("can't index item of type " + item.TypeName());
    }
  }
  return item;
}

Result<Value> SliceFn(const Value& item, const ValueList& indexes) {
  if (item.is_nil()) return Invalid("slice of untyped nil");
  if (indexes.size() > 3) return Invalid("too many slice indexes: " + std::to_string(indexes.size()));
  int64_t cap;
  switch (item.kind()) {
    case Kind::kString:
      if (indexes.size() == 3) return Invalid("cannot 3-index slice a string");
      cap = item.Len();
      break;
    case Kind::kSlice: {
      // Slices decoded from JSON/YAML grow by appending, so Go sees a
      // capacity above the length (the next power of two for small slices)
      // and allows slicing up to it; emulate that.
      cap = item.Len();
      if (cap > 0 && cap <= 256) {
        int64_t c = 1;
        while (c < cap) c *= 2;
        cap = c;
      }
      break;
    }
    case Kind::kBytes: cap = item.Len(); break;
    default: return Invalid("can't slice item of type " + item.TypeName());
  }
  int64_t idx[3] = {0, item.Len(), 0};
  for (size_t i = 0; i < indexes.size(); ++i) {
    ECO_ASSIGN_OR_RETURN(auto x, IndexArg(indexes[i], cap));
    idx[i] = x;
  }
  if (idx[0] > idx[1]) return Invalid("invalid slice index: " + std::to_string(idx[0]) + " > " + std::to_string(idx[1]));
  if (indexes.size() == 3 && idx[1] > idx[2])
    return Invalid("invalid slice index: " + std::to_string(idx[1]) + " > " + std::to_string(idx[2]));
  if (item.kind() == Kind::kString) return Value::String(item.as_string().substr(idx[0], idx[1] - idx[0]));
  if (item.kind() == Kind::kBytes) return Value::Bytes(item.as_string().substr(idx[0], idx[1] - idx[0]));
  const auto& l = item.as_list();
  ValueList part;
  for (int64_t i = idx[0]; i < idx[1]; ++i)
    part.push_back(i < static_cast<int64_t>(l.size()) ? l[i] : Value());  // zero beyond len
  return Value::Slice(std::move(part), item.TypeName());
}

// Nested executions on this thread and whether this thread is the one with
// the large stack.
thread_local int t_nesting = 0;
thread_local bool t_big_stack = false;
// Steps taken on this thread, to read the clock only now and then.
thread_local uint32_t t_steps = 0;
// Nesting that fits a caller's stack even in sanitizer builds (~16 KiB a level).
constexpr int kInlineNesting = 64;
// A hard stop for nesting Go bounds only by its stack (tpl inside tpl).
constexpr int kMaxNesting = 110000;

struct ThreadJob {
  std::function<void()> fn;
};

void* RunJob(void* p) {
  static_cast<ThreadJob*>(p)->fn();
  return nullptr;
}

// Runs fn on a thread with a large (lazily committed) stack, so that deep
// {{template}} recursion reaches Go's depth limit instead of overflowing.
bool RunWithBigStack(std::function<void()> fn) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  pthread_attr_setstacksize(&attr, size_t{1} << 30);
  ThreadJob job{std::move(fn)};
  pthread_t th;
  int rc = pthread_create(&th, &attr, RunJob, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) return false;
  pthread_join(th, nullptr);
  return true;
}

}  // namespace

class Executor {
 public:
  using Counts = std::map<std::string, int, std::less<>>;
  Executor(const TemplateSet& set, const ExecOptions& opts, std::string* out,
           std::shared_ptr<Counts> counts = nullptr)
      : set_(set), opts_(opts), out_(out),
        include_counts_(counts ? std::move(counts) : std::make_shared<Counts>()) {}

  // Every nested execution (template, include, tpl) comes through here.
  // Shallow nesting runs on the caller's stack; deeper nesting continues on
  // one thread with a large stack, so Go's depth limit is reached instead of
  // overflowing any caller's stack, and ordinary renders spawn no thread.
  Status Run(const Tree& tree, const Value& dot, int depth) {
    if (t_nesting >= kMaxNesting) {
      return Invalid("template: " + tree.name + ": exceeded maximum template depth (" +
                     std::to_string(kMaxNesting) + ")");
    }
    if (!t_big_stack && t_nesting >= kInlineNesting) {
      int nesting = t_nesting;
      bool ran = RunWithBigStack([&] {
        t_big_stack = true;
        t_nesting = nesting;
        RunHere(tree, dot, depth);
      });
      if (!ran) return Invalid("template: " + tree.name + ": nesting too deep (no thread for a larger stack)");
      return err_;
    }
    RunHere(tree, dot, depth);
    return err_;
  }

 private:
  void RunHere(const Tree& tree, const Value& dot, int depth) {
    ++t_nesting;
    tree_ = &tree;
    depth_ = depth;
    vars_.push_back({"$", dot});
    Walk(dot, tree.root.get());
    --t_nesting;
  }

  enum class Flow { kNormal, kBreak, kContinue, kError };
  struct Var {
    std::string name;
    Value value;
  };

  std::nullopt_t Error(const std::string& msg) {
    if (err_.ok()) {
      std::string loc = tree_->parse_name;
      std::string ctx;
      if (cur_) {
        loc += ":" + std::to_string(cur_->line) + ":" + std::to_string(cur_->col);
        ctx = cur_->String();
        if (ctx.size() > 20) ctx = ctx.substr(0, 20) + "...";  // ErrorContext's %.20s
        err_ = Invalid("template: " + loc + ": executing " + Quote(tree_->name) + " at <" + ctx + ">: " + msg);
      } else {
        err_ = Invalid("template: " + tree_->name + ": " + msg);
      }
    }
    return std::nullopt;
  }

  // True (with the error set) once the deadline has passed. The clock is
  // read every 1024 steps only: a step is cheaper than reading it.
  bool OverTime() {
    if (opts_.deadline == std::chrono::steady_clock::time_point::max()) return false;
    if ((++t_steps & 1023) != 0) return false;
    if (std::chrono::steady_clock::now() < opts_.deadline) return false;
    Error(kTimeLimitMessage);
    return true;
  }

  // A function result larger than the output limit: without this bound a
  // loop doubling a variable ($s = print $s $s) exhausts memory without
  // printing anything.
  Opt CheckSize(const Node* at, const std::string& name, Value v) {
    if ((v.kind() == Kind::kString || v.kind() == Kind::kBytes) && v.as_string().size() > opts_.max_output) {
      cur_ = at;
      return Error("error calling " + name + ": result of " + std::to_string(v.as_string().size()) +
                   " bytes exceeds the output limit of " + std::to_string(opts_.max_output) + " bytes");
    }
    // Lists too ($l = concat $l $l): at most one element per 16 bytes of the limit.
    if (v.kind() == Kind::kSlice && v.as_list().size() > opts_.max_output / 16) {
      cur_ = at;
      return Error("error calling " + name + ": result of " + std::to_string(v.as_list().size()) +
                   " elements exceeds the limit of " + std::to_string(opts_.max_output / 16));
    }
    return v;
  }

  Flow Walk(const Value& dot, const Node* n) {
    if (!err_.ok()) return Flow::kError;
    if (OverTime()) return Flow::kError;
    switch (n->type) {
      case NodeType::kAction: {
        cur_ = n;
        Opt v = EvalPipeline(dot, n->pipe.get());
        if (!v) return Flow::kError;
        if (n->pipe->decls.empty()) {
          if (v->kind() == Kind::kFunc) {
            Error("can't print " + n->String() + " of type " + v->TypeName());
            return Flow::kError;
          }
          if (!Write(v->is_nil() ? std::string("<no value>") : FormatValue(*v))) return Flow::kError;
        }
        return Flow::kNormal;
      }
      case NodeType::kBreak: return Flow::kBreak;
      case NodeType::kContinue: return Flow::kContinue;
      case NodeType::kIf:
      case NodeType::kWith: {
        size_t mark = vars_.size();
        Opt v = EvalPipeline(dot, n->pipe.get());
        if (!v) return Flow::kError;
        Flow f = Flow::kNormal;
        if (v->Truth()) {
          f = Walk(n->type == NodeType::kWith ? *v : dot, n->list.get());
        } else if (n->else_list) {
          f = Walk(dot, n->else_list.get());
        }
        vars_.resize(mark);
        return f;
      }
      case NodeType::kList:
        for (const auto& c : n->items) {
          Flow f = Walk(dot, c.get());
          if (f != Flow::kNormal) return f;
        }
        return Flow::kNormal;
      case NodeType::kRange: return WalkRange(dot, n);
      case NodeType::kTemplate: return WalkTemplate(dot, n);
      case NodeType::kText: return Write(n->text) ? Flow::kNormal : Flow::kError;
      default:
        cur_ = n;
        Error("unknown node: " + n->String());
        return Flow::kError;
    }
  }

  bool Write(const std::string& s) {
    if (out_->size() + s.size() > opts_.max_output) {
      Error("output exceeds the limit of " + std::to_string(opts_.max_output) + " bytes");
      return false;
    }
    *out_ += s;
    return true;
  }

  Flow WalkRange(const Value& dot, const Node* r) {
    cur_ = r;
    size_t outer = vars_.size();
    Opt val = EvalPipeline(dot, r->pipe.get());
    if (!val) return Flow::kError;
    size_t mark = vars_.size();
    auto one = [&](const Value& index, const Value& elem) -> Flow {
      if (OverTime()) return Flow::kError;
      if (!r->pipe->decls.empty()) vars_[mark - 1].value = elem;
      if (r->pipe->decls.size() > 1) vars_[mark - 2].value = index;
      Flow f = Walk(elem, r->list.get());
      vars_.resize(mark);
      return f;
    };
    bool ran = false;
    switch (val->kind()) {
      case Kind::kSlice: {
        const auto& l = val->as_list();
        for (size_t i = 0; i < l.size(); ++i) {
          ran = true;
          Flow f = one(Value::Int(static_cast<int64_t>(i)), l[i]);
          if (f == Flow::kError) return f;
          if (f == Flow::kBreak) break;
        }
        break;
      }
      case Kind::kBytes: {
        const auto& b = val->as_string();
        for (size_t i = 0; i < b.size(); ++i) {
          ran = true;
          Flow f = one(Value::Int(static_cast<int64_t>(i)), Value::Int64(static_cast<unsigned char>(b[i])));
          if (f == Flow::kError) return f;
          if (f == Flow::kBreak) break;
        }
        break;
      }
      case Kind::kMap: {
        // Snapshot first, as Go does: the body may change the map (set).
        std::vector<std::pair<std::string, Value>> items(val->as_map().begin(), val->as_map().end());
        for (const auto& [k, v] : items) {
          ran = true;
          Flow f = one(Value::String(k), v);
          if (f == Flow::kError) return f;
          if (f == Flow::kBreak) break;
        }
        break;
      }
      case Kind::kNil: break;
      default:
        Error("range can't iterate over " + FormatValue(*val));
        return Flow::kError;
    }
    if (!ran && r->else_list) {
      Flow f = Walk(dot, r->else_list.get());
      if (f == Flow::kError) return f;
    }
    vars_.resize(outer);
    return Flow::kNormal;
  }

  Flow WalkTemplate(const Value& dot, const Node* t) {
    cur_ = t;
    auto it = set_.trees_.find(t->text);
    if (it == set_.trees_.end()) {
      Error("template " + Quote(t->text) + " not defined");
      return Flow::kError;
    }
    if (depth_ >= opts_.max_depth) {
      Error("exceeded maximum template depth (" + std::to_string(opts_.max_depth) + ")");
      return Flow::kError;
    }
    Value new_dot;
    if (t->pipe) {
      Opt v = EvalPipeline(dot, t->pipe.get());
      if (!v) return Flow::kError;
      new_dot = *v;
    }
    Executor sub(set_, opts_, out_, include_counts_);
    Status s = sub.Run(*it->second, new_dot, depth_ + 1);
    if (!s.ok()) {
      err_ = s;
      return Flow::kError;
    }
    return Flow::kNormal;
  }

  Opt EvalPipeline(const Value& dot, const Node* pipe) {
    cur_ = pipe;
    Opt value;
    bool have = false;
    for (const auto& cmd : pipe->items) {
      value = EvalCommand(dot, cmd.get(), have ? &*value : nullptr);
      if (!value) return std::nullopt;
      have = true;
      // Dig the thing out of an interface{}: a nil interface becomes invalid.
      if (value->is_nil_interface()) value = Value();
    }
    for (const auto& var : pipe->decls) {
      if (pipe->is_assign) {
        if (!SetVar(var->idents[0], *value)) return std::nullopt;
      } else {
        vars_.push_back({var->idents[0], *value});
      }
    }
    return value;
  }

  bool SetVar(const std::string& name, const Value& v) {
    for (size_t i = vars_.size(); i-- > 0;) {
      if (vars_[i].name == name) {
        vars_[i].value = v;
        return true;
      }
    }
    Error("undefined variable: " + name);
    return false;
  }

  Opt VarValue(const std::string& name) {
    for (size_t i = vars_.size(); i-- > 0;)
      if (vars_[i].name == name) return vars_[i].value;
    return Error("undefined variable: " + name);
  }

  bool NotAFunction(const Node* cmd, const Value* final) {
    if (cmd->items.size() > 1 || final) {
      Error("can't give argument to non-function " + cmd->items[0]->String());
      return false;
    }
    return true;
  }

  Opt IdealConstant(const Node* n) {
    cur_ = n;
    if (n->is_complex) return MakeComplex(n->real_val, n->imag_val);
    const std::string& t = n->text;
    bool hex_int = t.size() > 2 && t[0] == '0' && (t[1] | 0x20) == 'x' &&
                   t.find_first_of("pP") == std::string::npos;
    bool rune = !t.empty() && t[0] == '\'';
    if (n->is_float && !hex_int && !rune && t.find_first_of(".eEpP") != std::string::npos)
      return Value::Float(n->float_val);
    if (n->is_int) return Value::Int(n->int_val);
    if (n->is_uint) return Error(t + " overflows int");
    return Value();
  }

  Opt EvalCommand(const Value& dot, const Node* cmd, const Value* final) {
    const Node* first = cmd->items[0].get();
    switch (first->type) {
      case NodeType::kField:
        cur_ = first;
        return EvalFieldChain(dot, dot, first, first->idents, 0, cmd, final);
      case NodeType::kChain: return EvalChain(dot, first, cmd, final);
      case NodeType::kIdentifier: return EvalFunction(dot, first, cmd, final);
      case NodeType::kPipe:
        if (!NotAFunction(cmd, final)) return std::nullopt;
        return EvalPipeline(dot, first);
      case NodeType::kVariable: return EvalVariable(dot, first, cmd, final);
      default: break;
    }
    cur_ = first;
    if (!NotAFunction(cmd, final)) return std::nullopt;
    switch (first->type) {
      case NodeType::kBool: return Value::Bool(first->bool_val);
      case NodeType::kDot: return dot;
      case NodeType::kNil: return Error("nil is not a command");
      case NodeType::kNumber: return IdealConstant(first);
      case NodeType::kString: return Value::String(first->text);
      default: return Error("can't evaluate command " + Quote(first->String()));
    }
  }

  Opt EvalChain(const Value& dot, const Node* chain, const Node* cmd, const Value* final) {
    cur_ = chain;
    if (chain->base->type == NodeType::kNil) return Error("indirection through explicit nil in " + chain->String());
    Opt base = EvalArgAny(dot, chain->base.get());
    if (!base) return std::nullopt;
    cur_ = chain;
    return EvalFieldChain(dot, *base, chain, chain->idents, 0, cmd, final);
  }

  Opt EvalVariable(const Value& dot, const Node* var, const Node* cmd, const Value* final) {
    cur_ = var;
    Opt v = VarValue(var->idents[0]);
    if (!v) return std::nullopt;
    if (var->idents.size() == 1) {
      if (cmd && !NotAFunction(cmd, final)) return std::nullopt;
      return v;
    }
    return EvalFieldChain(dot, *v, var, var->idents, 1, cmd, final);
  }

  Opt EvalFieldChain(const Value& dot, Value receiver, const Node* node,
                     const std::vector<std::string>& idents, size_t from, const Node* cmd,
                     const Value* final) {
    for (size_t i = from; i + 1 < idents.size(); ++i) {
      Opt r = EvalField(dot, idents[i], node, nullptr, nullptr, receiver);
      if (!r) return std::nullopt;
      receiver = *r;
    }
    return EvalField(dot, idents.back(), node, cmd, final, receiver);
  }

  Opt EvalField(const Value& dot, const std::string& name, const Node* node, const Node* cmd,
                const Value* final, const Value& receiver) {
    (void)dot;
    (void)node;
    if (receiver.is_nil()) {
      if (receiver.is_nil_interface()) return Error("nil pointer evaluating interface {}." + name);
      if (opts_.missing_key == MissingKey::kError) return Error("nil data; no entry for key " + Quote(name));
      return Value();
    }
    bool has_args = (cmd && cmd->items.size() > 1) || final;
    // A method call's arguments, appended after any receiver; false after an error.
    auto append_args = [&](ValueList* args) {
      if (cmd) {
        for (size_t i = 1; i < cmd->items.size(); ++i) {
          Opt a = EvalArgAny(dot, cmd->items[i].get());
          if (!a) return false;
          args->push_back(*a);
        }
      }
      if (final) args->push_back(*final);
      return true;
    };
    if (receiver.kind() == Kind::kObject) {
      ValueList args;
      if (!append_args(&args)) return std::nullopt;
      auto r = receiver.as_object()->Call(name, args);
      if (!r.ok()) {
        if (r.status().code() == Code::kNotFound) return Error(r.status().message());
        return Error("error calling " + name + ": " + r.status().message());
      }
      return *r;
    }
    // Methods of a named Go map type (Helm's engine.files): the FuncMap
    // entry "<type name>.<method>" receives the map as its first argument.
    if (receiver.kind() == Kind::kMap && receiver.TypeName() != "map[string]interface {}") {
      auto mit = set_.funcs().find(receiver.TypeName() + "." + name);
      if (mit != set_.funcs().end()) {
        ValueList args{receiver};
        if (!append_args(&args)) return std::nullopt;
        CallContext ctx;
        ctx.set = &set_;
        auto r = mit->second.fn(ctx, args);
        if (!r.ok()) return Error("error calling " + name + ": " + r.status().message());
        return *r;
      }
    }
    if (receiver.kind() == Kind::kMap) {
      if (has_args) return Error(name + " is not a method but has arguments");
      auto it = receiver.as_map().find(name);
      if (it == receiver.as_map().end()) {
        switch (opts_.missing_key) {
          case MissingKey::kDefault: return Value();
          case MissingKey::kZero: return Value::NilInterface();
          case MissingKey::kError: return Error("map has no entry for key " + Quote(name));
        }
      }
      if (it->second.is_nil()) return Value::NilInterface();
      return it->second;
    }
    return Error("can't evaluate field " + name + " in type " + receiver.TypeName());
  }

  // Argument for an interface{} (or reflect.Value) parameter.
  Opt EvalArgAny(const Value& dot, const Node* n) {
    cur_ = n;
    switch (n->type) {
      case NodeType::kDot: return dot;
      case NodeType::kNil: return Value();
      case NodeType::kField: return EvalFieldChain(dot, dot, n, n->idents, 0, nullptr, nullptr);
      case NodeType::kVariable: return EvalVariable(dot, n, nullptr, nullptr);
      case NodeType::kPipe: return EvalPipeline(dot, n);
      case NodeType::kIdentifier: return EvalFunction(dot, n, nullptr, nullptr);
      case NodeType::kChain: return EvalChain(dot, n, nullptr, nullptr);
      case NodeType::kBool: return Value::Bool(n->bool_val);
      case NodeType::kNumber: return IdealConstant(n);
      case NodeType::kString: return Value::String(n->text);
      default: return Error("can't handle " + n->String() + " for arg of type interface {}");
    }
  }

  Opt ValidateType(const Value& v, ArgType t) {
    if (Assignable(v, t)) return v.is_nil_interface() ? Value() : v;
    if (v.is_nil()) {
      if (t == ArgType::kList || t == ArgType::kMap) return Value();
      if (!v.is_nil_interface()) return Error(std::string("invalid value; expected ") + ArgTypeName(t));
      return Error(std::string("wrong type for value; expected ") + ArgTypeName(t) + "; got interface {}");
    }
    return Error(std::string("wrong type for value; expected ") + ArgTypeName(t) + "; got " + v.TypeName());
  }

  Opt EvalArg(const Value& dot, ArgType t, const Node* n) {
    if (t == ArgType::kAny) {
      Opt v = EvalArgAny(dot, n);
      if (v && v->is_nil_interface()) return Value();
      return v;
    }
    cur_ = n;
    switch (n->type) {
      case NodeType::kDot: case NodeType::kField: case NodeType::kVariable: case NodeType::kPipe:
      case NodeType::kIdentifier: case NodeType::kChain: {
        Opt v = EvalArgAny(dot, n);
        if (!v) return std::nullopt;
        return ValidateType(*v, t);
      }
      case NodeType::kNil:
        if (t == ArgType::kList || t == ArgType::kMap) return Value();
        return Error(std::string("cannot assign nil to ") + ArgTypeName(t));
      default: break;
    }
    switch (t) {
      case ArgType::kString:
        if (n->type == NodeType::kString) return Value::String(n->text);
        return Error("expected string; found " + n->String());
      case ArgType::kBool:
        if (n->type == NodeType::kBool) return Value::Bool(n->bool_val);
        return Error("expected bool; found " + n->String());
      case ArgType::kInt:
      case ArgType::kInt64:
        if (n->type == NodeType::kNumber && n->is_int)
          return t == ArgType::kInt ? Value::Int(n->int_val) : Value::Int64(n->int_val);
        return Error("expected integer; found " + n->String());
      case ArgType::kFloat64:
        if (n->type == NodeType::kNumber && n->is_float) return Value::Float(n->float_val);
        return Error("expected float; found " + n->String());
      default:
        return Error("can't handle " + n->String() + " for arg of type " + ArgTypeName(t));
    }
  }

  Opt CallError(const Node* at, const std::string& name, const Status& s) {
    cur_ = at;
    // Each level of tpl or include recursion wraps the error of the level
    // below; kept whole, 100,000 levels cost minutes of copying (quadratic).
    // The head and the tail (the cause) are what a reader needs.
    constexpr size_t kKeep = 2048;
    const std::string& m = s.message();
    if (m.size() > 2 * kKeep) {
      return Error("error calling " + name + ": " + m.substr(0, kKeep) + " ... " + m.substr(m.size() - kKeep));
    }
    return Error("error calling " + name + ": " + m);
  }

  static int BuiltinArity(std::string_view name, bool* variadic) {
    struct B { const char* n; int fixed; bool var; };
    static const B kB[] = {{"and", 1, true}, {"or", 1, true}, {"not", 1, false}, {"len", 1, false},
                           {"index", 1, true}, {"slice", 1, true}, {"print", 0, true},
                           {"printf", 1, true}, {"println", 0, true}, {"eq", 1, true},
                           {"ne", 2, false}, {"lt", 2, false}, {"le", 2, false}, {"gt", 2, false},
                           {"ge", 2, false}, {"html", 0, true}, {"js", 0, true},
                           {"urlquery", 0, true}, {"call", 1, true}};
    for (const B& b : kB) {
      if (name == b.n) {
        *variadic = b.var;
        return b.fixed;
      }
    }
    return -1;
  }

  Opt EvalFunction(const Value& dot, const Node* ident, const Node* cmd, const Value* final) {
    cur_ = ident;
    const std::string& name = ident->text;
    const Node* at = cmd ? cmd : ident;
    size_t nargs = cmd ? cmd->items.size() - 1 : 0;
    size_t num_in = nargs + (final ? 1 : 0);
    auto arg_node = [&](size_t i) { return cmd->items[i + 1].get(); };

    auto fit = set_.funcs_->find(name);
    if (fit != set_.funcs_->end()) {
      const Function& f = fit->second;
      size_t fixed = f.variadic ? f.params.size() - 1 : f.params.size();
      if (f.variadic ? num_in < fixed : num_in != fixed) {
        return Error("wrong number of args for " + name + ": want " + (f.variadic ? "at least " : "") +
                     std::to_string(fixed) + " got " + std::to_string(f.variadic ? nargs : num_in));
      }
      ValueList argv;
      for (size_t i = 0; i < nargs; ++i) {
        ArgType t = i < fixed ? f.params[i] : f.params.back();
        Opt a = EvalArg(dot, t, arg_node(i));
        if (!a) return std::nullopt;
        argv.push_back(*a);
      }
      if (final) {
        ArgType t = (f.variadic && argv.size() >= fixed) ? f.params.back() : f.params[argv.size()];
        cur_ = ident;
        Opt a = ValidateType(*final, t);
        if (!a) return std::nullopt;
        argv.push_back(*a);
      }
      CallContext ctx;
      ctx.set = &set_;
      ctx.depth = depth_;
      ctx.include_counts = include_counts_.get();
      ctx.opts = &opts_;
      ctx.execute = [this](std::string_view tname, const Value& d) -> Result<std::string> {
        auto it = set_.trees_.find(tname);
        if (it == set_.trees_.end()) return NotFound("template: no template " + Quote(tname) + " associated with template \"gotpl\"");
        std::string out;
        Executor sub(set_, opts_, &out, include_counts_);
        Status s = sub.Run(*it->second, d, depth_ + 1);
        if (!s.ok()) return s;
        return out;
      };
      auto r = f.fn(ctx, argv);
      if (!r.ok()) return CallError(at, name, r.status());
      return CheckSize(at, name, std::move(r).value());
    }

    bool variadic = false;
    int fixed = BuiltinArity(name, &variadic);
    if (fixed < 0) return Error(Quote(name) + " is not a defined function");
    if (variadic ? num_in < static_cast<size_t>(fixed) : num_in != static_cast<size_t>(fixed)) {
      return Error("wrong number of args for " + name + ": want " + (variadic ? "at least " : "") +
                   std::to_string(fixed) + " got " + std::to_string(variadic ? nargs : num_in));
    }
    if (name == "and" || name == "or") {
      Value v;
      for (size_t i = 0; i < nargs; ++i) {
        Opt a = EvalArgAny(dot, arg_node(i));
        if (!a) return std::nullopt;
        v = a->is_nil_interface() ? Value() : *a;
        if (v.Truth() == (name == "or")) return v;
      }
      if (final) v = *final;
      return v;
    }
    ValueList argv;
    if (name == "printf" && nargs > 0) {
      Opt a = EvalArg(dot, ArgType::kString, arg_node(0));
      if (!a) return std::nullopt;
      argv.push_back(*a);
    }
    for (size_t i = argv.size(); i < nargs; ++i) {
      Opt a = EvalArgAny(dot, arg_node(i));
      if (!a) return std::nullopt;
      argv.push_back(*a);
    }
    if (final) {
      if (name == "printf" && argv.empty()) {
        cur_ = ident;
        Opt a = ValidateType(*final, ArgType::kString);
        if (!a) return std::nullopt;
      }
      argv.push_back(*final);
    }
    // Builtins see through nil interfaces, as Go's indirectInterface does,
    // except len and index which report nil pointers.
    if (name != "len" && name != "index") {
      for (Value& a : argv)
        if (a.is_nil_interface()) a = Value();
    }
    Result<Value> r = CallBuiltin(name, argv);
    if (!r.ok()) return CallError(at, name, r.status());
    return CheckSize(at, name, std::move(r).value());
  }

  Result<Value> CallBuiltin(const std::string& name, const ValueList& a) {
    ValueList rest(a.empty() ? a.end() : a.begin() + 1, a.end());
    if (name == "not") return Value::Bool(!a[0].Truth());
    if (name == "len") {
      if (a[0].is_nil()) return Invalid("len of nil pointer");
      int64_t n = a[0].Len();
      if (n < 0) return Invalid("len of type " + a[0].TypeName());
      return Value::Int(n);
    }
    if (name == "index") return Index(a[0], rest);
    if (name == "slice") return SliceFn(a[0], rest);
    if (name == "print") return Value::String(Sprint(a));
    if (name == "println") return Value::String(Sprintln(a));
    if (name == "printf") return Value::String(Sprintf(a[0].as_string(), rest));
    if (name == "html") return Value::String(HtmlEscape(EscaperArg(a)));
    if (name == "js") return Value::String(JsEscape(EscaperArg(a)));
    if (name == "urlquery") return Value::String(UrlQueryEscape(EscaperArg(a)));
    if (name == "eq") {
      ECO_ASSIGN_OR_RETURN(auto r, Eq(a[0], rest));
      return Value::Bool(r);
    }
    if (name == "ne") {
      ECO_ASSIGN_OR_RETURN(auto r, Eq(a[0], rest));
      return Value::Bool(!r);
    }
    if (name == "lt" || name == "ge") {
      ECO_ASSIGN_OR_RETURN(auto r, Lt(a[0], a[1]));
      return Value::Bool(name == "lt" ? r : !r);
    }
    if (name == "le" || name == "gt") {
      ECO_ASSIGN_OR_RETURN(auto r, Le(a[0], a[1]));
      return Value::Bool(name == "le" ? r : !r);
    }
    if (name == "call") {
      if (a[0].is_nil()) return Invalid("call of nil");
      if (a[0].kind() != Kind::kFunc) return Invalid("non-function of type " + a[0].TypeName());
      return a[0].as_func()->fn(rest);
    }
    return Internal("unknown builtin " + name);
  }

  const TemplateSet& set_;
  ExecOptions opts_;
  std::string* out_;
  const Tree* tree_ = nullptr;
  int depth_ = 0;
  const Node* cur_ = nullptr;
  std::vector<Var> vars_;
  Status err_;
  std::shared_ptr<Counts> include_counts_;
};

Status TimeLimitExceeded() { return Invalid(kTimeLimitMessage); }

bool CallContext::OverTime(size_t work) {
  if (opts == nullptr || opts->deadline == std::chrono::steady_clock::time_point::max()) return false;
  work_since_check_ += work;
  if (work_since_check_ < 256) return false;
  work_since_check_ = 0;
  return std::chrono::steady_clock::now() >= opts->deadline;
}

size_t CallContext::max_output() const { return opts ? opts->max_output : ExecOptions{}.max_output; }

Result<std::string> TemplateSet::Execute(std::string_view name, const Value& data,
                                         const ExecOptions& opts) const {
  auto it = trees_.find(name);
  if (it == trees_.end()) {
    return NotFound("template: no template " + Quote(name) + " associated with template " + Quote(name));
  }
  std::string out;
  Executor ex(*this, opts, &out);
  Status status = ex.Run(*it->second, data, 0);
  if (!status.ok()) return status;
  return out;
}

}  // namespace eco::helm
