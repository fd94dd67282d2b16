#include "api/archive_check.h"

#include <archive.h>
#include <archive_entry.h>
#include <zlib.h>

#include <memory>
#include <string_view>

namespace eco::api {
namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

bool UnsafePath(std::string_view p) {
  if (!p.empty() && p.front() == '/') return true;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    if (p.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

// libarchive reports a gzip stream cut at a tar block boundary as a clean
// end, so the gzip layer is checked on its own: it must reach its trailer.
Status CheckGzipComplete(const std::string& data, size_t max_expanded) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Internal("zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  unsigned char out[64 * 1024];
  size_t total = 0;
  int r = Z_OK;
  while (r == Z_OK) {
    zs.next_out = out;
    zs.avail_out = sizeof out;
    r = inflate(&zs, Z_NO_FLUSH);
    total += sizeof out - zs.avail_out;
    if (total > max_expanded) {
      inflateEnd(&zs);
      return Invalid("Error in file format: archive expands to more than " +
                     std::to_string(max_expanded) + " bytes");
    }
    if (r == Z_BUF_ERROR && zs.avail_in == 0) break;
    if (r == Z_BUF_ERROR) r = Z_OK;
  }
  inflateEnd(&zs);
  if (r != Z_STREAM_END) {
    return Invalid(r == Z_BUF_ERROR || r == Z_OK
                       ? "Error in file format: the gzip stream is truncated"
                       : "Error in file format: corrupt gzip data");
  }
  return Status::Ok();
}

}  // namespace

Status CheckTgz(const std::string& data, const ArchiveLimits& limits) {
  if (data.empty()) return Invalid("Error in file format: the file is empty");
  if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x1f ||
      static_cast<unsigned char>(data[1]) != 0x8b) {
    return Invalid("Error in file format: not a gzip-compressed file (expected a .tgz)");
  }
  ECO_RETURN_IF_ERROR(CheckGzipComplete(data, limits.max_expanded_bytes));
  std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_memory(a.get(), data.data(), data.size()) != ARCHIVE_OK) {
    return Invalid(std::string("Error in file format: ") + archive_error_string(a.get()));
  }
  size_t entries = 0;
  size_t expanded = 0;
  char buf[64 * 1024];
  for (;;) {
    archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      const char* why = archive_error_string(a.get());
      return Invalid(std::string("Error in file format: ") + (why ? why : "unreadable tar archive"));
    }
    const char* path = archive_entry_pathname(e);
    std::string_view p = path ? path : "";
    auto type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR) {
      return Invalid("Error in file format: entry '" + std::string(p) +
                     "' is not a regular file or directory");
    }
    if (UnsafePath(p)) {
      return Invalid("Error in file format: entry '" + std::string(p) +
                     "' has an absolute path or a '..' component");
    }
    if (++entries > limits.max_entries) {
      return Invalid("Error in file format: more than " + std::to_string(limits.max_entries) +
                     " entries");
    }
    // Read the data (not just the header) so truncation and bombs are caught.
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        const char* why = archive_error_string(a.get());
        return Invalid(std::string("Error in file format: ") + (why ? why : "truncated archive"));
      }
      expanded += static_cast<size_t>(n);
      if (expanded > limits.max_expanded_bytes) {
        return Invalid("Error in file format: archive expands to more than " +
                       std::to_string(limits.max_expanded_bytes) + " bytes");
      }
    }
  }
  if (entries == 0) return Invalid("Error in file format: the archive has no entries");
  return Status::Ok();
}

}  // namespace eco::api
