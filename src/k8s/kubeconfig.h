// Reading kubeconfig files: which cluster to reach and how to authenticate.
// Library eco_k8s_config: parsing and checks only (no HTTP), so that the API
// can check uploads without the Kubernetes client.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::k8s {

// Looks up an environment variable; nullptr when unset. (A parameter where
// the environment matters, so tests pass their own.)
using EnvLookup = std::function<const char*(const char*)>;

// Everything needed to reach one cluster's API server. Certificates and keys
// are held in memory as PEM text; eco never writes them to disk.
struct RestConfig {
  // scheme://host:port with an optional path prefix, no trailing slash, e.g.
  // "http://127.0.0.1:7000/clusters/edge-1". API paths are appended to it.
  std::string server;
  // The context's namespace, "default" when the context names none.
  std::string default_namespace = "default";

  std::string ca_pem;           // trust these roots; empty: the system's roots
  std::string client_cert_pem;  // mTLS client certificate (chain), PEM
  std::string client_key_pem;   // its private key, PEM
  std::string token;            // bearer token
  // A file holding the bearer token, re-read when it changes (tokens rotate);
  // when set it takes precedence over `token`, as in client-go.
  std::string token_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI / verification name; empty: the URL's host

  // Names from the kubeconfig, for messages only.
  std::string context_name;
  std::string cluster_name;
  std::string user_name;
};

// Parses kubeconfig YAML and resolves one context (empty: current-context).
// Relative file paths (certificate-authority, client-certificate, client-key,
// tokenFile) are resolved against `base_dir` (the kubeconfig's directory;
// empty: the working directory). Certificates and keys are checked with
// OpenSSL here, so a broken PEM fails now and not at the first request.
// Errors are kInvalid and name the offending field; secrets never appear in
// messages. exec / auth-provider plugins and basic auth are not supported
// and are reported as kInvalid.
Result<RestConfig> ParseKubeconfig(std::string_view yaml_text, std::string_view context = "",
                                   std::string_view base_dir = "");

// A kubeconfig uploaded to eco (the API's clusters): as ParseKubeconfig,
// but every credential must be inline (`*-data`, `token`): a file path is
// kInvalid, so that an uploader cannot make eco read files of its host
// (and send them to a server of the uploader's choosing).
Result<RestConfig> ParseStoredKubeconfig(std::string_view yaml_text);
// What an upload can be refused for at once: a cluster or user whose
// credentials name a file, or whose inline certificate or key data is not
// base64 of PEM that OpenSSL reads. Other problems (a kubeconfig that is
// not YAML, a missing context) surface when it is used, as EMCO accepts any
// upload.
Status CheckUploadedKubeconfig(std::string_view yaml_text);

// Reads and parses a kubeconfig file (relative paths resolve against its
// directory). A missing or unreadable file is kNotFound.
Result<RestConfig> LoadKubeconfigFile(const std::string& path, std::string_view context = "");

// Base64 of kubeconfig *-data fields: standard alphabet, padding required,
// unused bits zero, ASCII whitespace skipped; errors start "bad base64".
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace eco::k8s
