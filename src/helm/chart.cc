#include "helm/chart.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <iconv.h>
#include <langinfo.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "helm/fmt.h"
#include "helm/helmignore.h"
#include "helm/yaml_in.h"

namespace eco::helm {
namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// ---------------------------------------------------------------------------
// Budget shared by every chart of one load.

struct LoadContext {
  explicit LoadContext(const LoadLimits& l) : limits(l) {}
  const LoadLimits& limits;
  size_t total_bytes = 0;
  size_t entries = 0;
  std::set<std::pair<dev_t, ino_t>> open_dirs;  // directories being walked (loop guard)
};

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

Status CountEntry(LoadContext& ctx, std::string_view where, std::string_view path) {
  if (++ctx.entries > ctx.limits.max_entries) {
    return Invalid(std::string(where) + ": too many files (limit " +
                   std::to_string(ctx.limits.max_entries) + ") at " + Quoted(path));
  }
  return Status::Ok();
}

Status FileTooLarge(const LoadContext& ctx, std::string_view where, std::string_view path) {
  return Invalid(std::string(where) + ": file " + Quoted(path) +
                 " is larger than the maximum file size " +
                 std::to_string(ctx.limits.max_file_bytes));
}

Status ChartTooLarge(const LoadContext& ctx, std::string_view where, std::string_view path) {
  return Invalid(std::string(where) + ": decompressed chart is larger than the maximum size " +
                 std::to_string(ctx.limits.max_total_bytes) + " (at " + Quoted(path) + ")");
}

// Charges `n` more bytes of file `path` to the budget.
Status Charge(LoadContext& ctx, size_t file_so_far, size_t n, std::string_view where,
              std::string_view path) {
  if (file_so_far + n > ctx.limits.max_file_bytes) return FileTooLarge(ctx, where, path);
  if (ctx.total_bytes + n > ctx.limits.max_total_bytes) return ChartTooLarge(ctx, where, path);
  ctx.total_bytes += n;
  return Status::Ok();
}

void StripBom(std::string& data) {
  if (std::string_view(data).substr(0, kUtf8Bom.size()) == kUtf8Bom) data.erase(0, kUtf8Bom.size());
}

// ---------------------------------------------------------------------------
// Go/YAML scalar semantics. Helm decodes Chart.yaml with sigs.k8s.io/yaml
// (YAML 1.1 via go-yaml v2, then JSON into Go structs): a number or bool
// landing in a string field is spelled the Go way; keys match
// case-insensitively.

bool IsPlain(const YAML::Node& n) { return n.Tag() == "?"; }

// What the scalar is once Go has decoded it.
GoYamlScalar Resolve(const YAML::Node& n) {
  if (n.IsNull()) return GoYamlScalar{GoYamlScalar::kNull};
  if (!IsPlain(n)) {
    const std::string& tag = n.Tag();
    if (tag == "tag:yaml.org,2002:null") return GoYamlScalar{GoYamlScalar::kNull};
    if (tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:int" ||
        tag == "tag:yaml.org,2002:float") {
      return ResolveGoYamlPlain(n.Scalar());
    }
    return GoYamlScalar{GoYamlScalar::kString};
  }
  return ResolveGoYamlPlain(n.Scalar());
}

const char* JsonKindName(const YAML::Node& n) {
  if (n.IsMap()) return "object";
  if (n.IsSequence()) return "array";
  switch (Resolve(n).kind) {
    case GoYamlScalar::kNull:
      return "null";
    case GoYamlScalar::kBool:
      return "bool";
    case GoYamlScalar::kString:
      return "string";
    default:
      return "number";
  }
}

// Decodes Chart.yaml/requirements.yaml the way Go's json decoder fills a
// struct: unknown keys ignored, null leaves a scalar field alone.
class MetadataDecoder {
 public:
  explicit MetadataDecoder(std::string file) : file_(std::move(file)) {}

  bool null_maintainer = false;
  bool null_dependency = false;

  Status Decode(const YAML::Node& root, ChartMetadata* md) {
    if (!root || root.IsNull()) return Status::Ok();
    if (!root.IsMap()) return TypeError(root, "", "chart.Metadata");
    for (const auto& kv : root) {
      std::string key = KeyOf(kv.first);
      const YAML::Node& v = kv.second;
      if (Is(key, "apiVersion"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.apiVersion", &md->api_version));
      else if (Is(key, "name"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.name", &md->name));
      else if (Is(key, "home"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.home", &md->home));
      else if (Is(key, "sources"))
        ECO_RETURN_IF_ERROR(StrList(v, "Metadata.sources", &md->sources));
      else if (Is(key, "version"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.version", &md->version));
      else if (Is(key, "description"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.description", &md->description));
      else if (Is(key, "keywords"))
        ECO_RETURN_IF_ERROR(StrList(v, "Metadata.keywords", &md->keywords));
      else if (Is(key, "maintainers"))
        ECO_RETURN_IF_ERROR(Maintainers(v, &md->maintainers));
      else if (Is(key, "icon"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.icon", &md->icon));
      else if (Is(key, "appVersion"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.appVersion", &md->app_version));
      else if (Is(key, "deprecated"))
        ECO_RETURN_IF_ERROR(Bool(v, "Metadata.deprecated", &md->deprecated));
      else if (Is(key, "annotations"))
        ECO_RETURN_IF_ERROR(StrMap(v, "Metadata.annotations", &md->annotations));
      else if (Is(key, "kubeVersion"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.kubeVersion", &md->kube_version));
      else if (Is(key, "dependencies"))
        ECO_RETURN_IF_ERROR(Dependencies(v, &md->dependencies));
      else if (Is(key, "type"))
        ECO_RETURN_IF_ERROR(Str(v, "Metadata.type", &md->type));
    }
    return Status::Ok();
  }

 private:
  static bool Is(std::string_view key, std::string_view field) {
    return key.size() == field.size() &&
           std::equal(key.begin(), key.end(), field.begin(), [](char a, char b) {
             auto lower = [](char c) {
               return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
             };
             return lower(a) == lower(b);
           });
  }

  static std::string GoString(const YAML::Node& n) {
    GoYamlScalar s = Resolve(n);
    switch (s.kind) {
      case GoYamlScalar::kNull:
        return "";
      case GoYamlScalar::kBool:
        return s.b ? "true" : "false";
      case GoYamlScalar::kInt:
        return std::to_string(s.i);
      case GoYamlScalar::kUint:
        return std::to_string(s.u);
      case GoYamlScalar::kFloat:
        return FormatFloat32G(s.f);
      case GoYamlScalar::kString:
        break;
    }
    return n.Scalar();
  }

  static std::string KeyOf(const YAML::Node& k) { return k.IsScalar() ? GoString(k) : ""; }

  Status TypeError(const YAML::Node& v, std::string_view field, std::string_view type) const {
    std::string msg = "cannot load " + file_ +
                      ": error unmarshaling JSON: json: cannot unmarshal " + JsonKindName(v) +
                      " into Go ";
    msg += field.empty() ? "value" : "struct field " + std::string(field);
    return Invalid(msg + " of type " + std::string(type));
  }

  Status Str(const YAML::Node& v, std::string_view field, std::string* out) const {
    if (v.IsNull()) return Status::Ok();
    if (!v.IsScalar()) return TypeError(v, field, "string");
    *out = GoString(v);
    return Status::Ok();
  }

  Status Bool(const YAML::Node& v, std::string_view field, bool* out) const {
    if (v.IsNull()) return Status::Ok();
    GoYamlScalar s = v.IsScalar() ? Resolve(v) : GoYamlScalar{};
    if (!v.IsScalar() || s.kind != GoYamlScalar::kBool) return TypeError(v, field, "bool");
    *out = s.b;
    return Status::Ok();
  }

  Status StrList(const YAML::Node& v, std::string_view field, std::vector<std::string>* out) const {
    out->clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) return TypeError(v, field, "[]string");
    for (const auto& item : v) {
      std::string s;
      ECO_RETURN_IF_ERROR(Str(item, field, &s));
      out->push_back(std::move(s));
    }
    return Status::Ok();
  }

  Status StrMap(const YAML::Node& v, std::string_view field,
                std::map<std::string, std::string>* out) const {
    if (v.IsNull()) {
      out->clear();
      return Status::Ok();
    }
    if (!v.IsMap()) return TypeError(v, field, "map[string]string");
    for (const auto& kv : v) {
      std::string s;
      ECO_RETURN_IF_ERROR(Str(kv.second, field, &s));
      (*out)[KeyOf(kv.first)] = std::move(s);
    }
    return Status::Ok();
  }

  Status Maintainers(const YAML::Node& v, std::vector<Maintainer>* out) {
    out->clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) return TypeError(v, "Metadata.maintainers", "[]*chart.Maintainer");
    for (const auto& item : v) {
      if (item.IsNull()) {
        null_maintainer = true;
        continue;
      }
      if (!item.IsMap()) return TypeError(item, "Metadata.maintainers", "chart.Maintainer");
      Maintainer m;
      for (const auto& kv : item) {
        std::string key = KeyOf(kv.first);
        if (Is(key, "name"))
          ECO_RETURN_IF_ERROR(Str(kv.second, "Maintainer.name", &m.name));
        else if (Is(key, "email"))
          ECO_RETURN_IF_ERROR(Str(kv.second, "Maintainer.email", &m.email));
        else if (Is(key, "url"))
          ECO_RETURN_IF_ERROR(Str(kv.second, "Maintainer.url", &m.url));
      }
      out->push_back(std::move(m));
    }
    return Status::Ok();
  }

  Status ImportValues(const YAML::Node& v, std::vector<ImportValue>* out) const {
    out->clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) return TypeError(v, "Dependency.import-values", "[]interface {}");
    for (const auto& item : v) {
      ImportValue iv;
      if (item.IsMap()) {
        for (const auto& kv : item) {
          std::string key = KeyOf(kv.first);
          // A map[string]interface{}: keys are exact, values printed with %v.
          if (key == "child" && kv.second.IsScalar()) iv.child = GoString(kv.second);
          if (key == "parent" && kv.second.IsScalar()) iv.parent = GoString(kv.second);
        }
      } else if (item.IsScalar()) {
        iv.is_string = true;
        iv.value = GoString(item);
      } else {
        continue;  // null or a list: Helm skips what is neither form
      }
      out->push_back(std::move(iv));
    }
    return Status::Ok();
  }

  Status Dependencies(const YAML::Node& v, std::vector<Dependency>* out) {
    out->clear();
    if (v.IsNull()) return Status::Ok();
    if (!v.IsSequence()) return TypeError(v, "Metadata.dependencies", "[]*chart.Dependency");
    for (const auto& item : v) {
      if (item.IsNull()) {
        null_dependency = true;
        continue;
      }
      if (!item.IsMap()) return TypeError(item, "Metadata.dependencies", "chart.Dependency");
      Dependency d;
      for (const auto& kv : item) {
        std::string key = KeyOf(kv.first);
        const YAML::Node& x = kv.second;
        if (Is(key, "name"))
          ECO_RETURN_IF_ERROR(Str(x, "Dependency.name", &d.name));
        else if (Is(key, "version"))
          ECO_RETURN_IF_ERROR(Str(x, "Dependency.version", &d.version));
        else if (Is(key, "repository"))
          ECO_RETURN_IF_ERROR(Str(x, "Dependency.repository", &d.repository));
        else if (Is(key, "condition"))
          ECO_RETURN_IF_ERROR(Str(x, "Dependency.condition", &d.condition));
        else if (Is(key, "tags"))
          ECO_RETURN_IF_ERROR(StrList(x, "Dependency.tags", &d.tags));
        else if (Is(key, "enabled"))
          ECO_RETURN_IF_ERROR(Bool(x, "Dependency.enabled", &d.enabled));
        else if (Is(key, "import-values"))
          ECO_RETURN_IF_ERROR(ImportValues(x, &d.import_values));
        else if (Is(key, "alias"))
          ECO_RETURN_IF_ERROR(Str(x, "Dependency.alias", &d.alias));
      }
      out->push_back(std::move(d));
    }
    return Status::Ok();
  }

  std::string file_;
};

// Parses YAML text, turning yaml-cpp's exceptions into a Status.
Result<YAML::Node> ParseYaml(const std::string& text, std::string_view file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Invalid("cannot load " + std::string(file) + ": yaml: line " +
                   std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Invalid("cannot load " + std::string(file) + ": " + e.what());
  }
}

Status DecodeMetadataFile(const std::string& text, std::string_view file, ChartMetadata* md,
                          MetadataDecoder* dec) {
  ECO_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(text, file));
  try {
    return dec->Decode(root, md);
  } catch (const std::exception& e) {
    return Invalid("cannot load " + std::string(file) + ": " + e.what());
  }
}

// ---------------------------------------------------------------------------
// Validation (Helm's Metadata.Validate), messages as Helm prints them.

Status ValidationError(std::string msg) { return Invalid("validation: " + std::move(msg)); }

// Helm's sanitizeString: whitespace becomes ' ', other control characters go.
std::string Sanitize(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u == '\t' || u == '\n' || u == '\v' || u == '\f' || u == '\r')
      out += ' ';
    else if (u >= 0x20 && u != 0x7f)
      out += c;
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Dot-separated identifiers of [0-9A-Za-z-], none empty.
bool IdentList(std::string_view s, bool numeric_no_leading_zero) {
  if (s.empty()) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view id =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (id.empty()) return false;
    for (char c : id) {
      bool ok =
          (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
      if (!ok) return false;
    }
    if (numeric_no_leading_zero && AllDigits(id) && id.size() > 1 && id[0] == '0') return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// Masterminds semver v3 NewVersion (the lenient form Helm uses): optional
// `v`, 1-3 numeric parts, optional -prerelease and +metadata.
bool IsValidSemver(std::string_view v) {
  if (!v.empty() && v[0] == 'v') v.remove_prefix(1);
  size_t plus = v.find('+');
  if (plus != std::string_view::npos) {
    if (!IdentList(v.substr(plus + 1), false)) return false;
    v = v.substr(0, plus);
  }
  size_t dash = v.find('-');
  if (dash != std::string_view::npos) {
    if (!IdentList(v.substr(dash + 1), true)) return false;
    v = v.substr(0, dash);
  }
  int parts = 0;
  size_t start = 0;
  while (true) {
    size_t dot = v.find('.', start);
    std::string_view part =
        v.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!AllDigits(part) || part.size() > 19) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts >= 1 && parts <= 3;
}

bool IsValidAlias(std::string_view a) {
  return std::all_of(a.begin(), a.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '-';
  });
}

Status Validate(ChartMetadata& md, const MetadataDecoder& dec) {
  md.name = Sanitize(md.name);
  md.description = Sanitize(md.description);
  md.home = Sanitize(md.home);
  md.icon = Sanitize(md.icon);
  md.app_version = Sanitize(md.app_version);
  md.kube_version = Sanitize(md.kube_version);
  for (auto& s : md.sources) s = Sanitize(s);
  for (auto& s : md.keywords) s = Sanitize(s);

  if (md.api_version.empty()) return ValidationError("chart.metadata.apiVersion is required");
  if (md.api_version != "v1" && md.api_version != "v2") {
    return ValidationError("chart.metadata.apiVersion " + Quoted(md.api_version) +
                           " is not supported (must be \"v1\" or \"v2\")");
  }
  if (md.name.empty()) return ValidationError("chart.metadata.name is required");
  if (md.name.find('/') != std::string::npos && md.name != "/") {
    return ValidationError("chart.metadata.name " + Quoted(md.name) + " is invalid");
  }
  if (md.version.empty()) return ValidationError("chart.metadata.version is required");
  if (!IsValidSemver(md.version)) {
    return ValidationError("chart.metadata.version " + Quoted(md.version) + " is invalid");
  }
  if (md.type != "" && md.type != "application" && md.type != "library") {
    return ValidationError("chart.metadata.type must be application or library");
  }
  if (dec.null_maintainer)
    return ValidationError("maintainers must not contain empty or null nodes");
  for (auto& m : md.maintainers) {
    m.name = Sanitize(m.name);
    m.email = Sanitize(m.email);
    m.url = Sanitize(m.url);
  }
  if (dec.null_dependency)
    return ValidationError("dependencies must not contain empty or null nodes");
  std::set<std::string> seen;
  for (auto& d : md.dependencies) {
    d.name = Sanitize(d.name);
    d.version = Sanitize(d.version);
    d.repository = Sanitize(d.repository);
    d.condition = Sanitize(d.condition);
    for (auto& t : d.tags) t = Sanitize(t);
    if (!d.alias.empty() && !IsValidAlias(d.alias)) {
      return ValidationError("dependency " + Quoted(d.name) +
                             " has disallowed characters in the alias");
    }
    const std::string& key = d.alias.empty() ? d.name : d.alias;
    if (!seen.insert(key).second) {
      return ValidationError("more than one dependency with name or alias " + Quoted(key));
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Reading a .tgz: zlib feeds libarchive's tar reader chunk by chunk, so a
// bomb is stopped as soon as it crosses a limit and a cut gzip stream is an
// error (libarchive alone takes a cut at a tar block boundary for a clean end).

class Gunzip {
 public:
  Gunzip(std::string_view in, size_t max_out) : in_(in), max_out_(max_out), buf_(64 * 1024) {}
  ~Gunzip() {
    if (init_) inflateEnd(&zs_);
  }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  const std::string& error() const { return error_; }

  // Reads what the tar reader left (end blocks, padding, the gzip trailer),
  // so that a stream cut after the last entry is still an error.
  bool Drain() {
    const void* ignored = nullptr;
    for (;;) {
      la_ssize_t n = Next(&ignored);
      if (n == 0) return true;
      if (n < 0) return false;
    }
  }

  static la_ssize_t Read(archive* a, void* self, const void** out) {
    auto* g = static_cast<Gunzip*>(self);
    la_ssize_t n = g->Next(out);
    if (n < 0) archive_set_error(a, EIO, "%s", g->error_.c_str());
    return n;
  }

 private:
  la_ssize_t Fail(std::string msg) {
    error_ = std::move(msg);
    return ARCHIVE_FATAL;
  }

  la_ssize_t Next(const void** out) {
    if (!init_) {
      if (in_.size() > UINT_MAX) return Fail("archive too large for zlib");
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data()));
      zs_.avail_in = static_cast<uInt>(in_.size());
      if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) return Fail("zlib initialisation failed");
      init_ = true;
    }
    while (!done_) {
      zs_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      zs_.avail_out = static_cast<uInt>(buf_.size());
      int r = inflate(&zs_, Z_NO_FLUSH);
      size_t produced = buf_.size() - zs_.avail_out;
      if (r == Z_STREAM_END) {
        // Go's gzip reader reads concatenated members; bytes after the last
        // member that are not gzip are ignored.
        if (zs_.avail_in >= 2 && zs_.next_in[0] == 0x1f && zs_.next_in[1] == 0x8b) {
          if (inflateReset(&zs_) != Z_OK) return Fail("zlib reset failed");
        } else {
          done_ = true;
        }
      } else if (r == Z_BUF_ERROR || (r == Z_OK && produced == 0 && zs_.avail_in == 0)) {
        if (zs_.avail_in == 0) return Fail("unexpected EOF: the gzip stream is truncated");
      } else if (r != Z_OK) {
        return Fail(std::string("gzip: invalid data") +
                    (zs_.msg ? std::string(": ") + zs_.msg : ""));
      }
      out_total_ += produced;
      if (out_total_ > max_out_) {
        return Fail("decompressed chart is larger than the maximum size " +
                    std::to_string(max_out_));
      }
      if (produced > 0) {
        *out = buf_.data();
        return static_cast<la_ssize_t>(produced);
      }
    }
    return 0;
  }

  std::string_view in_;
  size_t max_out_;
  std::vector<char> buf_;
  z_stream zs_{};
  bool init_ = false;
  bool done_ = false;
  size_t out_total_ = 0;
  std::string error_;
};

struct ArchiveReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

// strings.Split(p, "/"): "" gives {""}.
std::vector<std::string> SplitSlashes(std::string_view p) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string_view::npos) slash = p.size();
    parts.emplace_back(p.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::string JoinPath(const std::vector<std::string>& parts, size_t from) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) {
    if (!out.empty()) out += '/';
    out += parts[i];
  }
  return out;
}

// Reads every regular file of the archive, paths relative to its top
// directory. `where` names the archive in messages.
Result<std::vector<ChartFile>> ReadArchive(std::string_view bytes, LoadContext& ctx,
                                           const std::string& where, bool strip_top = true) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return Invalid(where + ": does not appear to be a gzipped archive");
  }
  const LoadLimits& lim = ctx.limits;
  // The tar stream may exceed the file contents by its headers and padding.
  size_t remaining = lim.max_total_bytes - std::min(ctx.total_bytes, lim.max_total_bytes);
  size_t overhead = lim.max_entries < (SIZE_MAX >> 14) ? 4096 * (lim.max_entries + 1) + (1u << 20)
                                                       : SIZE_MAX >> 2;
  size_t stream_cap = std::min(remaining, SIZE_MAX >> 2) + overhead;
  Gunzip gz(bytes, stream_cap);
  std::unique_ptr<archive, ArchiveReadFree> a(archive_read_new());
  if (!a) return Internal("archive_read_new failed");
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open(a.get(), &gz, nullptr, &Gunzip::Read, nullptr) != ARCHIVE_OK) {
    return Invalid(where + ": " +
                   (gz.error().empty() ? archive_error_string(a.get()) : gz.error()));
  }

  std::vector<ChartFile> files;
  std::set<std::string> seen;
  std::string top;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      const char* why = archive_error_string(a.get());
      return Invalid(where + ": " +
                     (gz.error().empty() ? (why ? why : "unreadable tar archive") : gz.error()));
    }
    // pax archives store UTF-8 names; prefer them over the C locale's view.
    const char* cpath = archive_entry_pathname_utf8(e);
    if (cpath == nullptr) cpath = archive_entry_pathname(e);
    if (cpath == nullptr) return Invalid(where + ": an entry has no readable path");
    std::string raw = cpath;
    ECO_RETURN_IF_ERROR(CountEntry(ctx, where, raw));
    if (!raw.empty() && raw[0] == '/') {
      return Invalid(where + ": chart illegally contains absolute paths: " + Quoted(raw));
    }
    // Archives made on Windows may use '\' (Helm accepts them).
    std::string norm = raw;
    if (norm.find('\\') != std::string::npos) std::replace(norm.begin(), norm.end(), '\\', '/');
    std::vector<std::string> parts;
    for (auto& p : SplitSlashes(norm)) {
      if (p == "..") {
        return Invalid(where + ": chart illegally references parent directory: " + Quoted(raw));
      }
      if (!p.empty() && p != ".") parts.push_back(std::move(p));
    }
    bool is_dir = archive_entry_filetype(e) == AE_IFDIR && archive_entry_hardlink(e) == nullptr;
    if (parts.empty()) {
      if (is_dir) continue;  // "./"
      return Invalid(
          where + ": chart illegally contains content outside the base directory: " + Quoted(raw));
    }
    if (top.empty()) top = parts[0];
    if (strip_top && parts[0] != top) {
      return Invalid(where + ": entry " + Quoted(raw) + " is outside the chart directory " +
                     Quoted(top));
    }
    if (is_dir) continue;
    if (archive_entry_hardlink(e) != nullptr) {
      return Invalid(where + ": entry " + Quoted(raw) +
                     " is a hard link; charts may hold only regular files");
    }
    auto type = archive_entry_filetype(e);
    if (type == AE_IFLNK) {
      return Invalid(where + ": entry " + Quoted(raw) +
                     " is a symbolic link; charts may hold only regular files");
    }
    if (type != AE_IFREG) {
      return Invalid(where + ": entry " + Quoted(raw) +
                     " is a special file (device, fifo or socket); "
                     "charts may hold only regular files");
    }
    if (strip_top && parts.size() == 1) {
      return Invalid(
          where + ": chart illegally contains content outside the base directory: " + Quoted(raw));
    }
    std::string name = JoinPath(parts, strip_top ? 1 : 0);
    if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0]))) {
      return Invalid(where + ": chart contains illegally named files: " + Quoted(raw));
    }
    if (!seen.insert(name).second) {
      return Invalid(where + ": entry " + Quoted(raw) + " appears twice");
    }
    // Fail on the declared size before decompressing anything.
    if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
      auto declared = static_cast<uint64_t>(archive_entry_size(e));
      if (declared > lim.max_file_bytes) return FileTooLarge(ctx, where, raw);
      if (ctx.total_bytes + declared > lim.max_total_bytes) return ChartTooLarge(ctx, where, raw);
    }
    ChartFile f{std::move(name), {}};
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) {
        const char* why = archive_error_string(a.get());
        return Invalid(where + ": reading " + Quoted(raw) + ": " +
                       (gz.error().empty() ? (why ? why : "truncated archive") : gz.error()));
      }
      ECO_RETURN_IF_ERROR(Charge(ctx, f.data.size(), static_cast<size_t>(n), where, raw));
      f.data.append(buf.data(), static_cast<size_t>(n));
    }
    StripBom(f.data);
    files.push_back(std::move(f));
  }
  if (!gz.Drain()) return Invalid(where + ": " + gz.error());
  if (files.empty()) return Invalid(where + ": no files in chart archive");
  return files;
}

// ---------------------------------------------------------------------------
// Files → Chart, with Helm's classification (LoadFiles).

bool HasPrefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string Ext(std::string_view name) {
  size_t slash = name.rfind('/');
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return "";
  return std::string(name.substr(dot));
}

Result<Chart> BuildChart(std::vector<ChartFile> files, LoadContext& ctx, int depth,
                         const std::string& label);

Result<Chart> LoadSubchart(const std::string& entry, std::vector<ChartFile> files, LoadContext& ctx,
                           int depth, const Chart& parent, const std::string& parent_label) {
  const std::string label = parent_label + "/charts/" + entry;
  if (depth > ctx.limits.max_depth) {
    return Invalid("chart " + Quoted(parent_label) + ": subchart " + Quoted("charts/" + entry) +
                   " is nested deeper than the limit of " + std::to_string(ctx.limits.max_depth) +
                   " levels");
  }
  if (Ext(entry) == ".tgz") {
    if (files.size() != 1 || files[0].name != entry) {
      return Invalid("error unpacking subchart tar in " + parent.name() + ": expected " + entry +
                     ", got " + files[0].name);
    }
    std::string bytes = std::move(files[0].data);
    files.clear();
    ECO_ASSIGN_OR_RETURN(std::vector<ChartFile> inner,
                         ReadArchive(bytes, ctx, "chart archive " + Quoted(label)));
    return BuildChart(std::move(inner), ctx, depth, label);
  }
  std::vector<ChartFile> inside;
  for (auto& f : files) {
    size_t slash = f.name.find('/');
    if (slash == std::string::npos) continue;  // a plain file named like the entry
    f.name.erase(0, slash + 1);
    inside.push_back(std::move(f));
  }
  return BuildChart(std::move(inside), ctx, depth, label);
}

Result<Chart> BuildChart(std::vector<ChartFile> files, LoadContext& ctx, int depth,
                         const std::string& label) {
  Chart c;
  bool have_metadata = false;
  MetadataDecoder chart_dec("Chart.yaml");
  // Chart.yaml first, wherever it is in the list, since other files depend on it.
  for (const auto& f : files) {
    if (f.name != "Chart.yaml") continue;
    ECO_RETURN_IF_ERROR(DecodeMetadataFile(f.data, "Chart.yaml", &c.metadata, &chart_dec));
    if (c.metadata.api_version.empty()) c.metadata.api_version = "v1";
    c.chart_yaml = f.data;
    have_metadata = true;
  }
  std::map<std::string, std::vector<ChartFile>> subcharts;  // sorted by entry name
  for (auto& f : files) {
    const std::string& n = f.name;
    if (n == "Chart.yaml" || n == "Chart.lock") continue;
    if (n == "values.yaml") {
      ECO_ASSIGN_OR_RETURN(YAML::Node v, ParseYaml(f.data, "values.yaml"));
      if (!v.IsNull() && !v.IsMap()) {
        return Invalid("cannot load values.yaml: error unmarshaling JSON: json: cannot unmarshal " +
                       std::string(JsonKindName(v)) +
                       " into Go value of type map[string]interface {}");
      }
      c.values_yaml = std::move(f.data);
    } else if (n == "values.schema.json") {
      c.values_schema_json = std::move(f.data);
    } else if (n == "requirements.yaml") {
      // Deprecated home of v1 dependencies; Helm merges it into the metadata.
      have_metadata = true;
      ECO_RETURN_IF_ERROR(DecodeMetadataFile(f.data, "requirements.yaml", &c.metadata, &chart_dec));
      if (c.metadata.api_version == "v1") c.files.push_back(std::move(f));
    } else if (n == "requirements.lock") {
      have_metadata = true;
      if (c.metadata.api_version == "v1") c.files.push_back(std::move(f));
    } else if (HasPrefix(n, "templates/")) {
      c.templates.push_back(std::move(f));
    } else if (HasPrefix(n, "charts/")) {
      if (Ext(n) == ".prov") {
        c.files.push_back(std::move(f));
        continue;
      }
      std::string rest = n.substr(7);
      std::string entry = rest.substr(0, rest.find('/'));
      f.name = rest;
      subcharts[entry].push_back(std::move(f));
    } else {
      c.files.push_back(std::move(f));
    }
  }
  if (!have_metadata) {
    return Invalid("Chart.yaml file is missing");
  }
  ECO_RETURN_IF_ERROR(Validate(c.metadata, chart_dec));
  const std::string& name = c.metadata.name;
  const std::string my_label = depth == 0 ? name : label;
  for (auto& [entry, sub_files] : subcharts) {
    if (entry.empty() || entry[0] == '_' || entry[0] == '.') continue;
    Result<Chart> sc = LoadSubchart(entry, std::move(sub_files), ctx, depth + 1, c, my_label);
    if (!sc.ok()) {
      return Status(sc.status().code(), "error unpacking subchart " + entry + " in " + name + ": " +
                                            sc.status().message());
    }
    sc->origin = "charts/" + entry;
    c.subcharts.push_back(std::move(sc).value());
  }
  return c;
}

// ---------------------------------------------------------------------------
// Directories, walked like Go's filepath.Walk (names sorted per directory).

struct DirClose {
  void operator()(DIR* d) const { closedir(d); }
};
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};

std::string ErrnoText(int err) { return std::strerror(err); }

Status ReadRegularFile(const std::string& path, const std::string& rel, size_t size_hint,
                       LoadContext& ctx, const std::string& where, std::string* out) {
  if (size_hint > ctx.limits.max_file_bytes) return FileTooLarge(ctx, where, rel);
  std::unique_ptr<FILE, FileClose> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Invalid(where + ": cannot read " + Quoted(rel) + ": " + ErrnoText(errno));
  char buf[64 * 1024];
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (n > 0) {
      ECO_RETURN_IF_ERROR(Charge(ctx, out->size(), n, where, rel));
      out->append(buf, n);
    }
    if (n < sizeof buf) {
      if (std::ferror(f.get())) return Invalid(where + ": cannot read " + Quoted(rel));
      break;
    }
  }
  StripBom(*out);
  return Status::Ok();
}

Status WalkDir(const std::string& abs, const std::string& rel, const IgnoreRules& rules,
               LoadContext& ctx, const std::string& where, std::vector<ChartFile>* out) {
  std::vector<std::string> names;
  {
    std::unique_ptr<DIR, DirClose> d(opendir(abs.c_str()));
    if (!d)
      return Invalid(where + ": cannot open directory " + Quoted(rel.empty() ? "." : rel) + ": " +
                     ErrnoText(errno));
    while (dirent* de = readdir(d.get())) {
      std::string n = de->d_name;
      if (n == "." || n == "..") continue;
      names.push_back(std::move(n));
    }
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    const std::string child_abs = abs + "/" + n;
    const std::string child_rel = rel.empty() ? n : rel + "/" + n;
    ECO_RETURN_IF_ERROR(CountEntry(ctx, where, child_rel));
    struct stat st {};
    // Symbolic links are followed, as Helm does.
    if (stat(child_abs.c_str(), &st) != 0) {
      return Invalid(where + ": cannot load " + Quoted(child_rel) + ": " + ErrnoText(errno));
    }
    if (S_ISDIR(st.st_mode)) {
      if (rules.Ignore(child_rel, true)) continue;
      auto id = std::make_pair(st.st_dev, st.st_ino);
      if (!ctx.open_dirs.insert(id).second) {
        return Invalid(where + ": symbolic link loop at " + Quoted(child_rel));
      }
      Status s = WalkDir(child_abs, child_rel, rules, ctx, where, out);
      ctx.open_dirs.erase(id);
      ECO_RETURN_IF_ERROR(s);
      continue;
    }
    if (rules.Ignore(child_rel, false)) continue;
    if (!S_ISREG(st.st_mode)) {
      return Invalid(where + ": cannot load irregular file " + Quoted(child_rel) +
                     " as it has file mode type bits set");
    }
    ChartFile f{child_rel, {}};
    ECO_RETURN_IF_ERROR(ReadRegularFile(child_abs, child_rel, static_cast<size_t>(st.st_size), ctx,
                                        where, &f.data));
    out->push_back(std::move(f));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ChartFile>> ReadTgzFiles(const std::string& tgz_bytes, const LoadLimits& limits) {
  LoadContext ctx(limits);
  return ReadArchive(tgz_bytes, ctx, "archive", false);
}

std::vector<const ChartFile*> Chart::CrdFiles() const {
  std::vector<const ChartFile*> out;
  for (const auto& f : files) {
    if (!HasPrefix(f.name, "crds/")) continue;
    std::string ext = Ext(f.name);
    for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (ext == ".yaml" || ext == ".yml" || ext == ".json") out.push_back(&f);
  }
  return out;
}

void PreloadArchiveCharsets() {
  // The conversions libarchive sets up for tar names (the locale's charset
  // to and from UTF-8); kept open so that any module they need stays loaded.
  static const std::pair<iconv_t, iconv_t> kept = [] {
    const char* local = nl_langinfo(CODESET);
    return std::pair(iconv_open("UTF-8", local), iconv_open(local, "UTF-8"));
  }();
  (void)kept;
}

Result<Chart> LoadChartArchive(const std::string& tgz_bytes, const LoadLimits& limits) {
  if (tgz_bytes.size() > limits.max_archive_bytes) {
    return Invalid("chart archive is " + std::to_string(tgz_bytes.size()) +
                   " bytes, more than the maximum " + std::to_string(limits.max_archive_bytes));
  }
  LoadContext ctx(limits);
  ECO_ASSIGN_OR_RETURN(std::vector<ChartFile> files, ReadArchive(tgz_bytes, ctx, "chart archive"));
  return BuildChart(std::move(files), ctx, 0, "");
}

Result<Chart> LoadChartDirectory(const std::string& path, const LoadLimits& limits) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("chart directory " + Quoted(path) + ": " + ErrnoText(errno));
  }
  if (!S_ISDIR(st.st_mode)) return Invalid(Quoted(path) + " is not a chart directory");
  std::string root = path;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const std::string where = "chart directory " + Quoted(root);

  IgnoreRules rules;
  std::string ignore_text;
  const std::string ignore_path = root + "/.helmignore";
  struct stat ist {};
  LoadContext ctx(limits);
  if (stat(ignore_path.c_str(), &ist) == 0 && S_ISREG(ist.st_mode)) {
    LoadContext scratch(limits);  // the real read below charges the budget
    ECO_RETURN_IF_ERROR(ReadRegularFile(ignore_path, ".helmignore",
                                        static_cast<size_t>(ist.st_size), scratch, where,
                                        &ignore_text));
    Result<IgnoreRules> parsed = IgnoreRules::Parse(ignore_text);
    if (!parsed.ok())
      return Status(parsed.status().code(), where + ": " + parsed.status().message());
    rules = std::move(parsed).value();
  }
  rules.AddDefaults();

  std::vector<ChartFile> files;
  ctx.open_dirs.insert({st.st_dev, st.st_ino});
  ECO_RETURN_IF_ERROR(WalkDir(root, "", rules, ctx, where, &files));
  return BuildChart(std::move(files), ctx, 0, "");
}

}  // namespace eco::helm
