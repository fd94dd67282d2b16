// Function libraries for the template engine: a first part of Sprig and of
// Helm's own functions. Add more by registering them in funcs.cc; the engine
// does not change.
#pragma once

#include <memory>

#include "helm/template.h"

namespace eco::helm {

// Marks an error raised by `required`/`fail`, which Helm reports as
// "execution error at (LOCATION): MESSAGE".
inline constexpr std::string_view kHelmUserErrorStart = "\x1e[helm-user-error]";
inline constexpr std::string_view kHelmUserErrorEnd = "\x1e[/helm-user-error]";

// Sprig (text functions, without env/expandenv) plus Helm's functions, as far
// as implemented.
std::shared_ptr<const FuncMap> HelmFuncs();

// Helm's toYaml (sigs.k8s.io/yaml over yaml.v2), without the final newline.
std::string ToYaml(const Value& v);

// Sprig's regex functions (RE2), part of HelmFuncs().
void AddRegexFuncs(FuncMap* funcs);

// Sprig's hashes, base32, crypto, certificates, random and uuid functions
// (OpenSSL, libxcrypt), part of HelmFuncs().
void AddCryptoFuncs(FuncMap* funcs);

// Helm's fromYaml/fromYamlArray (yaml_in.cc), part of HelmFuncs().
void AddYamlInFuncs(FuncMap* funcs);

// The rest of Sprig: strings, decimal float math, merges, slices, URLs,
// toToml (funcs_more.cc); dates and durations (funcs_time.cc); semver
// (funcs_semver.cc). Part of HelmFuncs().
void AddMoreFuncs(FuncMap* funcs);
void AddTimeFuncs(FuncMap* funcs);
void AddSemverFuncs(FuncMap* funcs);

}  // namespace eco::helm
