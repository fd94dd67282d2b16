// Fuzzes the opening of stored secrets (common/secrets.h): any stored value
// opens, or fails cleanly; what is sealed opens to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/secrets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool configured =
      eco::secrets::ConfigureFromText(std::string(64, '5'), "fuzz").ok();
  if (!configured) __builtin_trap();
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)eco::secrets::Open(input);
  auto sealed = eco::secrets::Seal(input);
  if (!sealed.ok()) __builtin_trap();
  auto opened = eco::secrets::Open(*sealed);
  if (!opened.ok() || *opened != input) __builtin_trap();
  return 0;
}
