#include "kubesim/kubeconfig_out.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/base64.h"

namespace eco::kubesim {
namespace {

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unavailable("writing " + path + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string KubeconfigYaml(const KubeconfigSpec& spec) {
  // Written by hand (10,000 of these at start; yaml-cpp's emitter dominated
  // the time). Every value is a double-quoted scalar with JSON escapes, which
  // YAML reads unchanged, so no name can break the document.
  const std::string name = Quote(spec.cluster);
  std::string out;
  out.reserve(512 + spec.ca_pem.size() * 4 / 3);
  out += "apiVersion: v1\nkind: Config\nclusters:\n- name: " + name + "\n  cluster:\n";
  out += "    server: " + Quote(spec.server_base + "/clusters/" + spec.cluster) + "\n";
  if (!spec.ca_pem.empty()) {
    out += "    certificate-authority-data: " + Quote(Base64Encode(spec.ca_pem)) + "\n";
  }
  out += "users:\n- name: " + name + "\n  user:\n    token: " + Quote(spec.token) + "\n";
  out += "contexts:\n- name: " + name + "\n  context:\n    cluster: " + name +
         "\n    user: " + name + "\n";
  out += "current-context: " + name + "\n";
  return out;
}

Status WriteKubeconfig(const std::string& dir, const KubeconfigSpec& spec) {
  if (spec.cluster.empty() || spec.cluster.find('/') != std::string::npos || spec.cluster == "." ||
      spec.cluster == "..") {
    return Invalid("kubeconfig: bad cluster name \"" + spec.cluster + "\"");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("creating " + dir + ": " + ec.message());

  const std::string path = dir + "/" + spec.cluster + ".yaml";
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("creating " + tmp + ": " + std::strerror(errno));
  Status st = WriteAll(fd, KubeconfigYaml(spec), tmp);
  // An older temporary left by a crashed run may carry other bits.
  if (st.ok() && ::fchmod(fd, 0600) != 0) {
    st = Unavailable("chmod " + tmp + ": " + std::strerror(errno));
  }
  if (::close(fd) != 0 && st.ok()) st = Unavailable("closing " + tmp + ": " + std::strerror(errno));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Unavailable("renaming " + tmp + ": " + std::strerror(errno));
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

}  // namespace eco::kubesim
