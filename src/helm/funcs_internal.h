// Helpers shared by the function files (funcs*.cc, regex_funcs.cc) and
// render.cc; not a public interface.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "helm/template.h"

namespace eco::helm::funcs_internal {

// Go integer arithmetic wraps around; so does ours (no UB on overflow).
// Here, inline, for funcs.cc and funcs_time.cc alike.
inline int64_t WrapAdd(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t WrapSub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t WrapMul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

std::string StrVal(const Value& v);              // Sprig's strval
bool Empty(const Value& v);                      // Sprig's empty
int64_t ToInt64(const Value& v);                 // cast.ToInt64 (errors give 0)
double ToFloat64(const Value& v);                // cast.ToFloat64 (errors give 0)
bool DeepEqual(const Value& a, const Value& b);  // reflect.DeepEqual
Value DeepCopy(const Value& v);                  // shares no map or list with v
Value StringList(std::vector<std::string> parts);  // a []string
std::vector<std::string> StrSlice(const Value& v);  // Sprig's strslice
bool ToJson(std::string* out, const Value& v, bool html, const std::string& indent, int depth);

void Add(FuncMap* m, const std::string& name, std::vector<ArgType> params, bool variadic,
         std::function<Result<Value>(CallContext&, const ValueList&)> fn);

// encoding/json's syntax error for `text`, or "" when it is valid JSON.
std::string GoJsonSyntaxError(std::string_view text);
// Helm's toToml (BurntSushi/toml): the TOML text, or the encoder's error.
Result<std::string> ToToml(const Value& v);

}  // namespace eco::helm::funcs_internal
