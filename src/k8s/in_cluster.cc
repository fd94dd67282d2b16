#include "k8s/in_cluster.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

namespace eco::k8s {
namespace {

const char* Env(const InClusterOptions& o, const char* name) {
  const char* v = o.env ? o.env(name) : std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string Join(const std::string& dir, const char* file) {
  if (dir.empty() || dir.back() == '/') return dir + file;
  return dir + "/" + file;
}

// nullopt when the file cannot be opened.
std::optional<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string TrimRight(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  return s;
}

Status CheckCaBundle(const std::string& pem, const std::string& path) {
  struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
  };
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return Internal("out of memory reading " + path);
  X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  const bool ok = cert != nullptr;
  X509_free(cert);
  ERR_clear_error();
  if (!ok)
    return Invalid("in-cluster CA file " + path + " holds no PEM certificate OpenSSL can parse");
  return Status::Ok();
}

// host:port for a URL: an IPv6 address goes in brackets.
Result<std::string> Authority(std::string host, const std::string& port) {
  if (host.find_first_of(" \t\r\n/@?#") != std::string::npos) {
    return Invalid("KUBERNETES_SERVICE_HOST \"" + host + "\" is not a host name or address");
  }
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (!bracketed && host.find(':') != std::string::npos) host = "[" + host + "]";
  long n = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) {
    digits = digits && c >= '0' && c <= '9';
    if (digits) n = n * 10 + (c - '0');
  }
  if (!digits || n < 1 || n > 65535) {
    return Invalid("KUBERNETES_SERVICE_PORT \"" + port + "\" is not a port number (1..65535)");
  }
  return host + ":" + port;
}

}  // namespace

bool InCluster(const InClusterOptions& options) {
  return Env(options, "KUBERNETES_SERVICE_HOST") && Env(options, "KUBERNETES_SERVICE_PORT");
}

Result<std::string> ReadInClusterToken(const InClusterOptions& options) {
  const std::string path = Join(options.dir, "token");
  std::optional<std::string> token = ReadWhole(path);
  if (!token) return PermissionDenied("cannot read the service account token " + path);
  std::string t = TrimRight(std::move(*token));
  if (t.empty()) return PermissionDenied("the service account token " + path + " is empty");
  return t;
}

Result<RestConfig> InClusterConfig(const InClusterOptions& options) {
  const char* host = Env(options, "KUBERNETES_SERVICE_HOST");
  const char* port = Env(options, "KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    return NotFound(std::string("not running in a Kubernetes cluster: ") +
                    (host ? "KUBERNETES_SERVICE_PORT" : "KUBERNETES_SERVICE_HOST") +
                    " is not set (use a kubeconfig outside a pod)");
  }
  RestConfig cfg;
  ECO_ASSIGN_OR_RETURN(std::string authority, Authority(host, port));
  cfg.server = "https://" + authority;

  // Checked now; the client reads the file itself, again at every change.
  ECO_RETURN_IF_ERROR(ReadInClusterToken(options).status());
  cfg.token_file = Join(options.dir, "token");

  const std::string ca_path = Join(options.dir, "ca.crt");
  std::optional<std::string> ca = ReadWhole(ca_path);
  if (!ca) return Invalid("cannot read the in-cluster CA file " + ca_path);
  ECO_RETURN_IF_ERROR(CheckCaBundle(*ca, ca_path));
  cfg.ca_pem = std::move(*ca);

  // As client-go's in-cluster loader: $POD_NAMESPACE, then the mounted file.
  if (const char* ns = Env(options, "POD_NAMESPACE")) {
    cfg.default_namespace = ns;
  } else if (std::optional<std::string> ns_file = ReadWhole(Join(options.dir, "namespace"))) {
    std::string ns_text = TrimRight(std::move(*ns_file));
    if (!ns_text.empty()) cfg.default_namespace = std::move(ns_text);
  }
  cfg.context_name = "in-cluster";
  cfg.cluster_name = "in-cluster";
  cfg.user_name = "serviceaccount";
  return cfg;
}

}  // namespace eco::k8s
