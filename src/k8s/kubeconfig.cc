#include "k8s/kubeconfig.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "common/base64.h"

namespace eco::k8s {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemBio(const std::string& s) {
  return BioPtr(BIO_new_mem_buf(s.data(), static_cast<int>(s.size())));
}

// Reads every certificate in a PEM bundle; the first one is returned.
Result<X509Ptr> ParseCertificates(const std::string& pem, const std::string& what) {
  BioPtr bio = MemBio(pem);
  if (!bio) return Internal("out of memory reading " + what);
  X509Ptr first;
  int count = 0;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    if (!first) first = std::move(cert);
    ++count;
  }
  ERR_clear_error();  // the loop ends on "no start line"; nothing to report
  if (count == 0) return Invalid(what + " holds no PEM certificate OpenSSL can parse");
  return first;
}

Result<PkeyPtr> ParseKey(const std::string& pem, const std::string& what) {
  BioPtr bio = MemBio(pem);
  if (!bio) return Internal("out of memory reading " + what);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) return Invalid(what + " holds no PEM private key OpenSSL can parse");
  return key;
}

Result<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + what + " file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Resolve(std::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  std::string out(base_dir);
  if (out.back() != '/') out += '/';
  return out + path;
}

// Finds `name` in a list of {name: ..., KEY: {...}} entries.
Result<YAML::Node> FindNamed(const YAML::Node& root, const char* list, const char* key,
                             const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& e : entries) {
      if (e.IsMap() && e["name"] && e["name"].as<std::string>() == name) {
        YAML::Node body = e[key];
        if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!body.IsMap()) return Invalid(std::string(list) + " entry " + name + " is not a map");
        return body;
      }
    }
  }
  return Invalid("kubeconfig has no " + std::string(key) + " named \"" + name + "\"");
}

std::string Str(const YAML::Node& m, const char* key) {
  YAML::Node n = m[key];
  if (!n || n.IsNull()) return "";
  return n.as<std::string>();
}

// The decoded value of an inline -data field ("" when absent).
Result<std::string> InlineData(const YAML::Node& m, const char* data_key) {
  std::string data = Str(m, data_key);
  if (data.empty()) return std::string();
  Result<std::string> decoded = DecodeBase64(data);
  if (!decoded.ok()) return Invalid(std::string(data_key) + ": " + decoded.status().message());
  return decoded;
}

// Inline -data (base64) wins over a file path, as in client-go.
Result<std::string> DataOrFile(const YAML::Node& m, const char* data_key, const char* file_key,
                               std::string_view base_dir, bool files_allowed) {
  if (!Str(m, data_key).empty()) return InlineData(m, data_key);
  std::string file = Str(m, file_key);
  if (file.empty()) return std::string();
  if (!files_allowed) {
    return Invalid(std::string(file_key) + " names a file; a kubeconfig given to eco must carry it inline (" +
                   data_key + ")");
  }
  Result<std::string> content = ReadFile(Resolve(base_dir, file), file_key);
  if (!content.ok()) return Invalid(content.status().message());
  return content;
}

Result<RestConfig> ParseImpl(std::string_view yaml_text, std::string_view context_arg,
                             std::string_view base_dir, bool files_allowed) {
  YAML::Node root = YAML::Load(std::string(yaml_text));
  if (!root.IsMap()) return Invalid("kubeconfig is not a YAML map");

  RestConfig cfg;
  std::string context(context_arg);
  if (context.empty()) context = Str(root, "current-context");
  if (context.empty()) return Invalid("kubeconfig has no current-context and none was given");
  cfg.context_name = context;

  ECO_ASSIGN_OR_RETURN(YAML::Node ctx, FindNamed(root, "contexts", "context", context));
  cfg.cluster_name = Str(ctx, "cluster");
  cfg.user_name = Str(ctx, "user");
  std::string ns = Str(ctx, "namespace");
  if (!ns.empty()) cfg.default_namespace = ns;
  if (cfg.cluster_name.empty()) return Invalid("context \"" + context + "\" names no cluster");

  ECO_ASSIGN_OR_RETURN(YAML::Node cluster,
                       FindNamed(root, "clusters", "cluster", cfg.cluster_name));
  cfg.server = Str(cluster, "server");
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0) {
    return Invalid("cluster \"" + cfg.cluster_name + "\": server must be an http(s) URL, got \"" +
                   cfg.server + "\"");
  }
  while (cfg.server.size() > 8 && cfg.server.back() == '/') cfg.server.pop_back();
  cfg.tls_server_name = Str(cluster, "tls-server-name");
  if (cluster["insecure-skip-tls-verify"]) {
    cfg.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].as<bool>();
  }
  Result<std::string> ca =
      DataOrFile(cluster, "certificate-authority-data", "certificate-authority", base_dir, files_allowed);
  if (!ca.ok()) return ca.status().Annotate("cluster \"" + cfg.cluster_name + "\"");
  cfg.ca_pem = std::move(*ca);
  if (!cfg.ca_pem.empty()) {
    if (cfg.insecure_skip_tls_verify) {
      return Invalid("cluster \"" + cfg.cluster_name +
                     "\": a certificate authority together with insecure-skip-tls-verify");
    }
    Result<X509Ptr> roots = ParseCertificates(cfg.ca_pem, "certificate-authority");
    if (!roots.ok()) return roots.status().Annotate("cluster \"" + cfg.cluster_name + "\"");
  }

  if (!cfg.user_name.empty()) {
    ECO_ASSIGN_OR_RETURN(YAML::Node user, FindNamed(root, "users", "user", cfg.user_name));
    const std::string where = "user \"" + cfg.user_name + "\"";
    if (user["exec"] || user["auth-provider"]) {
      return Invalid(where + ": exec and auth-provider credential plugins are not supported");
    }
    if (!Str(user, "username").empty() || !Str(user, "password").empty()) {
      return Invalid(where + ": basic authentication is not supported");
    }
    cfg.token = Str(user, "token");
    std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty()) {
      if (!files_allowed) {
        return Invalid(where + ": tokenFile names a file; a kubeconfig given to eco must carry the token inline");
      }
      cfg.token_file = Resolve(base_dir, token_file);
      Result<std::string> probe = ReadFile(cfg.token_file, "tokenFile");
      if (!probe.ok()) return Invalid(where + ": " + probe.status().message());
    }
    Result<std::string> cert =
        DataOrFile(user, "client-certificate-data", "client-certificate", base_dir, files_allowed);
    if (!cert.ok()) return cert.status().Annotate(where);
    Result<std::string> key = DataOrFile(user, "client-key-data", "client-key", base_dir, files_allowed);
    if (!key.ok()) return key.status().Annotate(where);
    cfg.client_cert_pem = std::move(*cert);
    cfg.client_key_pem = std::move(*key);
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
      return Invalid(where + ": a client certificate needs a client key and vice versa");
    }
    if (!cfg.client_cert_pem.empty()) {
      Result<X509Ptr> c = ParseCertificates(cfg.client_cert_pem, "client-certificate");
      if (!c.ok()) return c.status().Annotate(where);
      Result<PkeyPtr> k = ParseKey(cfg.client_key_pem, "client-key");
      if (!k.ok()) return k.status().Annotate(where);
      int match = X509_check_private_key(c->get(), k->get());
      ERR_clear_error();
      if (match != 1) return Invalid(where + ": client-key does not match client-certificate");
    }
  }
  return cfg;
}

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  // Stricter than client-go in the last symbol's unused bits, laxer in
  // spaces (a plain YAML scalar folded over lines has them).
  Result<std::string> r =
      Base64Decode(text, {.strict = true, .skip = Base64Decoding::Skip::kWhitespace});
  if (!r.ok()) return Invalid("bad base64: " + r.status().message());
  return r;
}

Result<RestConfig> ParseKubeconfig(std::string_view yaml_text, std::string_view context,
                                   std::string_view base_dir) {
  try {
    return ParseImpl(yaml_text, context, base_dir, true);
  } catch (const YAML::Exception& e) {
    return Invalid(std::string("kubeconfig: ") + e.what());
  }
}

Status CheckUploadedKubeconfig(std::string_view yaml_text) {
  struct Part {
    const char* list;
    const char* item;
    std::vector<const char*> file_keys;
  };
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (!root.IsMap()) return Status::Ok();
    for (const Part& p : {Part{"clusters", "cluster", {"certificate-authority"}},
                          Part{"users", "user", {"client-certificate", "client-key", "tokenFile"}}}) {
      const YAML::Node list = root[p.list];
      if (!list || !list.IsSequence()) continue;
      for (const auto& entry : list) {
        const YAML::Node m = entry.IsMap() ? entry[p.item] : YAML::Node();
        if (!m || !m.IsMap()) continue;
        const std::string where = std::string(p.item) + " \"" + Str(entry, "name") + "\"";
        for (const char* k : p.file_keys) {
          if (m[k]) {
            return Invalid(where + ": " + k + " names a file; a kubeconfig given to eco must carry its credentials inline");
          }
        }
        // Inline certificates and keys must be what they say: a broken one
        // would only show as a failing cluster much later.
        Result<std::string> ca = InlineData(m, "certificate-authority-data");
        if (!ca.ok()) return ca.status().Annotate(where);
        if (!ca->empty()) {
          if (auto c = ParseCertificates(*ca, "certificate-authority-data"); !c.ok()) return c.status().Annotate(where);
        }
        Result<std::string> cert = InlineData(m, "client-certificate-data");
        if (!cert.ok()) return cert.status().Annotate(where);
        Result<std::string> key = InlineData(m, "client-key-data");
        if (!key.ok()) return key.status().Annotate(where);
        if (!cert->empty()) {
          if (auto c = ParseCertificates(*cert, "client-certificate-data"); !c.ok()) return c.status().Annotate(where);
        }
        if (!key->empty()) {
          if (auto k = ParseKey(*key, "client-key-data"); !k.ok()) return k.status().Annotate(where);
        }
      }
    }
  } catch (const YAML::Exception&) {
    return Status::Ok();  // not a kubeconfig eco can read at all: reported when it is used
  }
  return Status::Ok();
}

Result<RestConfig> ParseStoredKubeconfig(std::string_view yaml_text) {
  try {
    return ParseImpl(yaml_text, "", "", false);
  } catch (const YAML::Exception& e) {
    return Invalid(std::string("kubeconfig: ") + e.what());
  }
}

Result<RestConfig> LoadKubeconfigFile(const std::string& path, std::string_view context) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read kubeconfig " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string dir;
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) dir = path.substr(0, slash == 0 ? 1 : slash);
  Result<RestConfig> cfg = ParseKubeconfig(ss.str(), context, dir);
  if (!cfg.ok()) return cfg.status().Annotate(path);
  return cfg;
}

}  // namespace eco::k8s
