#include "test_archives.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

namespace eco::testing {

namespace {

struct ArchiveFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;
using EntryPtr = std::unique_ptr<archive_entry, EntryFree>;

[[noreturn]] void Fail(archive* a, const char* what) {
  std::fprintf(stderr, "libarchive %s failed: %s\n", what, a ? archive_error_string(a) : "");
  std::abort();
}

la_ssize_t Append(archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

// A gzip writer into `out`, in the given format, without block padding
// (padding after the gzip stream would be trailing garbage).
ArchivePtr NewWriter(std::string* out, bool raw) {
  ArchivePtr a(archive_write_new());
  if (!a) Fail(nullptr, "archive_write_new");
  if (archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK) Fail(a.get(), "add_filter_gzip");
  int r = raw ? archive_write_set_format_raw(a.get())
              : archive_write_set_format_pax_restricted(a.get());
  if (r != ARCHIVE_OK) Fail(a.get(), "set_format");
  // No time in the gzip header: the same entries always give the same bytes.
  if (archive_write_set_options(a.get(), "gzip:!timestamp") != ARCHIVE_OK) Fail(a.get(), "options");
  archive_write_set_bytes_in_last_block(a.get(), 1);
  if (archive_write_open(a.get(), out, nullptr, Append, nullptr) != ARCHIVE_OK) {
    Fail(a.get(), "open");
  }
  return a;
}

void WriteEntry(archive* a, const std::string& path, const std::string& content, bool dir) {
  EntryPtr e(archive_entry_new());
  archive_entry_set_pathname(e.get(), path.c_str());
  archive_entry_set_filetype(e.get(), dir ? AE_IFDIR : AE_IFREG);
  archive_entry_set_perm(e.get(), dir ? 0755 : 0644);
  archive_entry_set_size(e.get(), dir ? 0 : static_cast<la_int64_t>(content.size()));
  archive_entry_set_mtime(e.get(), 1700000000, 0);  // fixed: same input, same bytes
  if (archive_write_header(a, e.get()) != ARCHIVE_OK) Fail(a, "write_header");
  if (!dir && !content.empty() && archive_write_data(a, content.data(), content.size()) < 0) {
    Fail(a, "write_data");
  }
}

void Finish(ArchivePtr& a) {
  if (archive_write_close(a.get()) != ARCHIVE_OK) Fail(a.get(), "close");
}

}  // namespace

std::string TgzOf(const std::vector<TarEntry>& entries) {
  std::string out;
  ArchivePtr a = NewWriter(&out, /*raw=*/false);
  for (const auto& en : entries) {
    bool dir = !en.path.empty() && en.path.back() == '/';
    WriteEntry(a.get(), en.path, en.content, dir);
  }
  Finish(a);
  return out;
}

std::string ChartTgz(const std::string& app, const std::string& marker) {
  const std::string d = app + "/";
  return TgzOf({
      {d, ""},
      {d + "Chart.yaml", "apiVersion: v2\nname: " + app +
                             "\ndescription: test chart\ntype: application\nversion: 0.1.0\n"
                             "appVersion: \"1.0\"\n"},
      {d + "values.yaml",
       "replicaCount: 1\nmarker: " + marker + "\nimage:\n  repository: nginx\n  tag: stable\n"},
      {d + "templates/", ""},
      {d + "templates/deployment.yaml",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-" + app +
           "\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector:\n    matchLabels:\n"
           "      app: " +
           app + "\n  template:\n    metadata:\n      labels:\n        app: " + app +
           "\n    spec:\n      containers:\n        - name: " + app +
           "\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n"},
      {d + "templates/_helpers.tpl", "{{- define \"" + app + ".name\" -}}" + app + "{{- end -}}\n"},
  });
}

std::string ChartTgzWithBlob(const std::string& app, size_t blob_bytes) {
  const std::string d = app + "/";
  return TgzOf({
      {d, ""},
      {d + "Chart.yaml", "apiVersion: v2\nname: " + app + "\ntype: application\nversion: 0.1.0\n"},
      {d + "values.yaml", "replicaCount: 1\n"},
      {d + "files/", ""},
      {d + "files/blob.bin", RandomBytes(blob_bytes, 11)},
  });
}

std::string ProfileTgz(const std::string& marker) {
  return TgzOf({
      {"manifest.yaml", "version: v1\ntype:\n  values: \"override_values.yaml\"\n"},
      {"override_values.yaml", "replicaCount: 2\nprofileMarker: " + marker + "\n"},
  });
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  // Never start like gzip (1f 8b) by accident.
  if (n > 0) s[0] = 'R';
  return s;
}

std::string TruncatedTgz() {
  std::string full = ChartTgz("trunc", std::string(4000, 'x'));
  return full.substr(0, full.size() / 2);
}

std::string GzipOfText(const std::string& text) {
  std::string out;
  ArchivePtr a = NewWriter(&out, /*raw=*/true);
  WriteEntry(a.get(), "data", text, /*dir=*/false);
  Finish(a);
  return out;
}

}  // namespace eco::testing
