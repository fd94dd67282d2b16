// Go text/template in C++: a set of named templates parsed with Go's grammar
// and executed with Go's semantics over helm::Value.
//
// Functions (Sprig, Helm) are added through FuncMap without touching the
// engine: each declares its Go parameter types so that arity and type errors
// read as Go's do, and gets a CallContext to re-enter the engine (include, tpl).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "helm/value.h"

namespace eco::helm {

enum class MissingKey { kDefault, kZero, kError };

// Go parameter types a function may declare.
enum class ArgType {
  kAny,      // interface{}: anything, untyped constants become int/float64
  kString,
  kInt,      // int; also accepts any Go integer value
  kInt64,
  kFloat64,
  kBool,
  kList,     // []interface{}
  kMap,      // map[string]interface{}
};

class TemplateSet;
struct ExecOptions;
struct CallContext {
  const TemplateSet* set = nullptr;
  // Runs a named template of the current set with `dot` (for include).
  std::function<Result<std::string>(std::string_view name, const Value& dot)> execute;
  int depth = 0;
  // Per-render nesting count of each included name (Helm stops at 1000).
  std::map<std::string, int, std::less<>>* include_counts = nullptr;
  // The running execution's limits, for functions that execute anew (tpl).
  const ExecOptions* opts = nullptr;

  // For a function whose one call can outlast the render's time limit
  // (regexReplaceAll over a long string, uniq over a long list): the
  // executor checks the limit only between steps. True once it has passed.
  // `work` is what the caller did since its last call, in comparisons or
  // matches; the clock is read every 256 units.
  bool OverTime(size_t work = 1);
  // The render's output limit in bytes; lists hold at most a sixteenth of
  // that many elements.
  size_t max_output() const;
  size_t max_elements() const { return max_output() / 16; }

 private:
  size_t work_since_check_ = 0;
};

// What a function returns when OverTime() said so; the executor names the
// function and the place.
Status TimeLimitExceeded();

struct Function {
  std::vector<ArgType> params;  // with variadic, the last is the element type
  bool variadic = false;
  std::function<Result<Value>(CallContext& ctx, const ValueList& args)> fn;
};

using FuncMap = std::map<std::string, Function, std::less<>>;

struct ExecOptions {
  MissingKey missing_key = MissingKey::kDefault;
  size_t max_output = 64u << 20;  // bytes of rendered text
  int max_depth = 100000;         // nested {{template}} calls, as Go
  // Past this instant execution stops with an error: a template that loops
  // without printing (nested ranges) is bounded by nothing else. Go has no
  // such limit; the default is none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct Tree;

class TemplateSet {
 public:
  explicit TemplateSet(std::shared_ptr<const FuncMap> funcs = nullptr);

  // Go's template.New(name).Parse(text) into this set: the text becomes
  // template `name` and its {{define}}s join the set. Errors read as Go's
  // ("template: NAME:LINE: message").
  Status Parse(std::string_view name, std::string_view text);
  bool Has(std::string_view name) const;
  // Executes template `name` with `data` as dot.
  Result<std::string> Execute(std::string_view name, const Value& data,
                              const ExecOptions& opts = {}) const;
  const FuncMap& funcs() const { return *funcs_; }

 private:
  friend class Executor;
  std::shared_ptr<const FuncMap> funcs_;
  std::map<std::string, std::shared_ptr<const Tree>, std::less<>> trees_;
};

}  // namespace eco::helm
