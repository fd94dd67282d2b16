// Fuzzes what eco does with an uploaded kubeconfig: the upload check and
// the parser used when a stored one is used (YAML, base64, PEM through
// OpenSSL). Any input must end in a config or an error: no crash, no hang,
// and never a read of a file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k8s/kubeconfig.h"

namespace {

// The stored parser's refusals of a file field end with these fixed words
// (names from the input come earlier in the message, so an input echoing
// them cannot fake one).
bool RefusesAFile(const std::string& m) {
  for (std::string_view tail : {"must carry the token inline", "must carry it inline (certificate-authority-data)",
                                "must carry it inline (client-certificate-data)",
                                "must carry it inline (client-key-data)"}) {
    if (m.size() >= tail.size() && m.compare(m.size() - tail.size(), tail.size(), tail) == 0) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const eco::Status upload = eco::k8s::CheckUploadedKubeconfig(text);
  auto stored = eco::k8s::ParseStoredKubeconfig(text);
  // What the upload lets through names no file, so the stored parser never
  // refuses it for a file reference.
  if (upload.ok() && !stored.ok() && RefusesAFile(stored.status().message())) __builtin_trap();
  return 0;
}
