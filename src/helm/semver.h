// Semantic versions and constraints with the semantics of Masterminds/semver
// v3.2 (what Helm uses for semverCompare and Chart.yaml's kubeVersion).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::helm {

struct SemVersion {
  uint64_t major = 0, minor = 0, patch = 0;
  std::string pre, metadata, original;
  std::string String() const;  // "1.2.3-pre+meta", without a leading v
};

// semver.NewVersion: "v" prefix and missing minor/patch allowed. Errors
// carry the library's messages ("Invalid Semantic Version", ...).
Result<SemVersion> ParseSemver(std::string_view v);
// Version.Compare: -1, 0 or 1; prereleases sort before their release.
int CompareSemver(const SemVersion& a, const SemVersion& b);
// Whether `version` satisfies `constraint` ("^1.2", ">= 1.19-0 < 2", "1.2 - 1.4",
// "~1.x || >=3"). Errors: an improper constraint or an invalid version.
Result<bool> SemverSatisfies(std::string_view version, std::string_view constraint);

}  // namespace eco::helm
