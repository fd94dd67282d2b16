// Amounts of allocatable resources, as HPA resource requirements state them
// and as the placement and action controllers compare and write them.
//
// Header-only so the API can validate `units` with the same table the
// controllers use, without linking the controller library.
//
// Every amount is an integer in the resource's base unit: millicores for
// `cpu`, plain units for everything else (bytes for memory, hugepages-* and
// ephemeral-storage; a count for extended resources like nvidia.com/gpu).
//
// A requirement's number is read with its `units`, a Kubernetes quantity
// suffix ("m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti") or an alias
// ("millicores", "cores", "KB", "MB", "GB", "TB", "B", "bytes"). Without
// units: cpu counts whole CPUs, memory counts MB (10^6 bytes, as EMCO),
// anything else counts base units.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::hpa {

// Base-unit scale of a units suffix, in thousandths (so "m" is 1 and "" is 1000).
inline bool UnitsMilliFactor(std::string_view units, int64_t* out) {
  struct Entry {
    std::string_view name;
    int64_t milli;
  };
  static constexpr Entry kTable[] = {
      {"m", 1},
      {"millicores", 1},
      {"", 1000},
      {"cores", 1000},
      {"B", 1000},
      {"bytes", 1000},
      {"k", 1000LL * 1000},
      {"KB", 1000LL * 1000},
      {"kB", 1000LL * 1000},
      {"M", 1000LL * 1000 * 1000},
      {"MB", 1000LL * 1000 * 1000},
      {"G", 1000LL * 1000 * 1000 * 1000},
      {"GB", 1000LL * 1000 * 1000 * 1000},
      {"T", 1000LL * 1000 * 1000 * 1000 * 1000},
      {"TB", 1000LL * 1000 * 1000 * 1000 * 1000},
      {"Ki", 1024LL * 1000},
      {"Mi", 1024LL * 1024 * 1000},
      {"Gi", 1024LL * 1024 * 1024 * 1000},
      {"Ti", 1024LL * 1024 * 1024 * 1024 * 1000},
  };
  for (const auto& e : kTable) {
    if (e.name == units) {
      *out = e.milli;
      return true;
    }
  }
  return false;
}

inline bool IsCpu(std::string_view resource) { return resource == "cpu"; }

// `number` of `resource` in `units` ("" = the resource's default), in the
// resource's base unit (rounded up). Invalid for unknown units, amounts below
// one base unit or beyond int64.
inline Result<int64_t> RequirementAmount(std::string_view resource, int64_t number,
                                         std::string_view units) {
  if (units.empty() && resource == "memory") units = "M";
  int64_t milli = 0;
  if (!UnitsMilliFactor(units, &milli)) {
    return Invalid("unknown units '" + std::string(units) + "' for " + std::string(resource) +
                   " (use m, k, M, G, T, Ki, Mi, Gi, Ti, MB, GB or none)");
  }
  int64_t scaled = 0;
  if (number < 0 || __builtin_mul_overflow(number, milli, &scaled)) {
    return Invalid(std::to_string(number) + std::string(units) + " of " + std::string(resource) +
                   " is out of range");
  }
  if (IsCpu(resource)) return scaled;
  if (scaled % 1000 != 0) {
    return Invalid(std::to_string(number) + std::string(units) + " of " + std::string(resource) +
                   " is not a whole number of units");
  }
  return scaled / 1000;
}

// A base-unit amount as a Kubernetes quantity: cpu as cores or "NNNm",
// everything else as a plain integer.
inline std::string AmountQuantity(std::string_view resource, int64_t amount) {
  if (IsCpu(resource)) {
    if (amount % 1000 == 0) return std::to_string(amount / 1000);
    return std::to_string(amount) + "m";
  }
  return std::to_string(amount);
}

// For messages: "1500m cpu", "2000000000 bytes memory", "2 nvidia.com/gpu".
inline std::string DescribeAmount(std::string_view resource, int64_t amount) {
  if (IsCpu(resource)) return std::to_string(amount) + "m cpu";
  if (resource == "memory" || resource == "ephemeral-storage" ||
      resource.substr(0, 10) == "hugepages-") {
    return std::to_string(amount) + " bytes " + std::string(resource);
  }
  return std::to_string(amount) + " " + std::string(resource);
}

}  // namespace eco::hpa
