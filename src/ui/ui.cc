#include "ui/ui.h"

#include <cstdint>
#include <map>
#include <string>

namespace eco::ui {
namespace {

std::string_view ContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// FNV-1a: the files change only with the binary, any stable digest will do.
std::string Digest(std::string_view body) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (int i = 60; i >= 0; i -= 4) out += kHex[(h >> i) & 0xf];
  return out + "\"";
}

struct Table {
  std::map<std::string, std::string, std::less<>> etags;
  std::map<std::string, Asset, std::less<>> by_name;
  Table() {
    for (const auto& f : EmbeddedFiles()) etags[std::string(f.name)] = Digest(f.body);
    for (const auto& f : EmbeddedFiles()) {
      by_name[std::string(f.name)] = Asset{f.body, ContentType(f.name), etags[std::string(f.name)]};
    }
  }
};

}  // namespace

const Asset* Find(std::string_view path) {
  static const Table table;
  if (!path.starts_with("/ui/")) return nullptr;
  std::string_view name = path.substr(4);
  if (name.empty()) name = "index.html";
  auto it = table.by_name.find(name);
  return it == table.by_name.end() ? nullptr : &it->second;
}

}  // namespace eco::ui
