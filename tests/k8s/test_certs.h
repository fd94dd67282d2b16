// Certificates generated in memory for TLS tests (EC P-256, valid one day).
#pragma once

#include <string>
#include <vector>

namespace eco::k8s::testing {

struct CertKey {
  std::string cert_pem;
  std::string key_pem;
};

CertKey MakeCa(const std::string& common_name);
// A leaf signed by `ca`; `dns_names`/`ips` go into subjectAltName.
CertKey MakeLeaf(const CertKey& ca, const std::string& common_name,
                 const std::vector<std::string>& dns_names, const std::vector<std::string>& ips);

std::string Base64(const std::string& bytes);

}  // namespace eco::k8s::testing
