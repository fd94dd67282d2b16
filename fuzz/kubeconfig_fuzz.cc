// Fuzzes what eco does with an uploaded kubeconfig: the upload check and
// the parser used when a stored one is used (YAML, base64, PEM through
// OpenSSL). Any input must end in a config or an error: no crash, no hang,
// and never a read of a file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const eco::Status upload = eco::k8s::CheckUploadedKubeconfig(text);
  auto stored = eco::k8s::ParseStoredKubeconfig(text);
  // What the upload lets through names no file, so the stored parser never
  // fails for a file reference on it.
  if (upload.ok() && !stored.ok() && stored.status().message().find("names a file") != std::string::npos) {
    __builtin_trap();
  }
  return 0;
}
