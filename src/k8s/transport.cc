#include "k8s/transport.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <strings.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/trace.h"
#include "k8s/direct_transport.h"
#include "k8s/h2_transport.h"
#include "k8s/errors.h"

namespace eco::k8s {

void EnsureCurlGlobalInit() {
  static const bool done = [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return true;
  }();
  (void)done;
}

const SystemRoots& LoadSystemRoots() {
  static const SystemRoots roots = [] {
    SystemRoots r;
    const char* env = std::getenv(X509_get_default_cert_file_env());
    std::ifstream in(env != nullptr && *env != '\0' ? env : X509_get_default_cert_file(),
                     std::ios::binary);
    if (!in) return r;
    std::ostringstream text;
    text << in.rdbuf();
    std::string pem = text.str();
    std::unique_ptr<X509_STORE, X509StoreFree> store(X509_STORE_new());
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    if (!store || !bio) return r;
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      if (X509_STORE_add_cert(store.get(), cert) == 1) ++added;  // takes its own reference
      X509_free(cert);
    }
    ERR_clear_error();  // the loop ends on "no start line"
    if (added == 0) return r;
    r.pem = std::move(pem);
    r.store = std::move(store);
    return r;
  }();
  return roots;
}

void PreloadTls() {
  OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, nullptr);
  EnsureCurlGlobalInit();
  LoadSystemRoots();
  // A throw-away context: OpenSSL fetches its algorithms at the first one.
  SSL_CTX_free(SSL_CTX_new(TLS_client_method()));
}

TokenSource::TokenSource(std::string token, std::string file)
    : static_token_(std::move(token)), file_(std::move(file)) {}

Result<std::string> TokenSource::Get() {
  if (file_.empty()) return static_token_;
  struct stat st {};
  std::lock_guard<std::mutex> lock(mu_);
  if (stat(file_.c_str(), &st) != 0) {
    // Mid-rotation the file may briefly vanish; keep the last good token.
    if (size_ >= 0) return cached_;
    return PermissionDenied("cannot read tokenFile " + file_);
  }
  if (st.st_ino == ino_ && st.st_size == size_ && st.st_mtim.tv_sec == mtime_.tv_sec &&
      st.st_mtim.tv_nsec == mtime_.tv_nsec) {
    return cached_;
  }
  std::ifstream in(file_, std::ios::binary);
  if (!in) {
    if (size_ >= 0) return cached_;
    return PermissionDenied("cannot read tokenFile " + file_);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  cached_ = std::move(token);
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  return cached_;
}

Status ConfigureHandle(CURL* h, const RestConfig& config, const ClientOptions& options) {
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  // Small buffers: a client per cluster, thousands of clusters.
  curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
  if (options.accept_gzip) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "gzip");

  if (config.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  // Trust comes from memory only: the kubeconfig's CA, else the system's
  // roots read at start. No CA directory either, which libcurl would search
  // file by file at each handshake (and which would add the system's roots
  // to a kubeconfig's own CA).
  // Plain http takes none: libcurl copies a CA blob into every connection
  // it opens, TLS or not (220 KB for the system's roots, per watch stream).
  const bool tls = strncasecmp(config.server.c_str(), "https://", 8) == 0;
  const SystemRoots& system = LoadSystemRoots();
  if (tls && (!config.ca_pem.empty() || !system.pem.empty())) {
    const bool own = !config.ca_pem.empty();
    const std::string& pem = own ? config.ca_pem : system.pem;
    // The system's roots live as long as the process, so the handle need
    // not copy them; libcurl still copies them into each connection.
    curl_blob blob{const_cast<char*>(pem.data()), pem.size(),
                   static_cast<unsigned int>(own ? CURL_BLOB_COPY : CURL_BLOB_NOCOPY)};
    if (curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK) {
      return Internal("libcurl cannot take a CA from memory (needs OpenSSL backend)");
    }
    curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
  }
  if (!config.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config.client_cert_pem.data()), config.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config.client_key_pem.data()), config.client_key_pem.size(),
                  CURL_BLOB_COPY};
    if (curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK) {
      return Internal("libcurl cannot take a client certificate from memory");
    }
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  // tls-server-name is honoured only through the URL's host for now: libcurl
  // has no option to verify a certificate against a different name.
  return Status::Ok();
}

Result<CurlSlist> RequestHeaders(TokenSource& tokens, std::string_view content_type,
                                 std::string_view accept) {
  curl_slist* list = nullptr;
  auto add = [&list](const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next != nullptr) list = next;
  };
  add("Accept: " + std::string(accept));
  add("Expect:");  // no 100-continue round trip for larger bodies
  if (!content_type.empty()) add("Content-Type: " + std::string(content_type));
  Result<std::string> token = tokens.Get();
  if (!token.ok()) {
    curl_slist_free_all(list);
    return token.status();
  }
  if (!token->empty()) add("Authorization: Bearer " + *token);
  return CurlSlist(list);
}

namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t CaptureRetryAfter(char* data, size_t size, size_t n, void* user) {
  constexpr std::string_view kName = "retry-after:";
  std::string_view line(data, size * n);
  if (line.size() > kName.size() && strncasecmp(line.data(), kName.data(), kName.size()) == 0) {
    std::string_view v = line.substr(kName.size());
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.remove_suffix(1);
    *static_cast<std::string*>(user) = std::string(v);
  }
  return size * n;
}

}  // namespace

Transport::Transport(RestConfig config, ClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      tokens_(config_.token, config_.token_file) {}

Transport::~Transport() = default;

CurlTransport::CurlTransport(RestConfig config, ClientOptions options)
    : Transport(std::move(config), std::move(options)) {
  EnsureCurlGlobalInit();
}

CurlTransport::~CurlTransport() = default;

Result<CurlEasy> CurlTransport::Acquire() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    size_t limit = options_.max_connections == 0 ? 1 : options_.max_connections;
    cv_.wait(lock, [&] { return in_use_ < limit; });
    ++in_use_;
    if (!idle_.empty()) {
      CurlEasy h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  CurlEasy h(curl_easy_init());
  Status s = h ? ConfigureHandle(h.get(), config_, options_) : Internal("curl_easy_init failed");
  if (!s.ok()) {
    Release(nullptr, false);
    return s;
  }
  return h;
}

void CurlTransport::Release(CurlEasy h, bool reusable) {
  std::lock_guard<std::mutex> lock(mu_);
  --in_use_;
  if (h && reusable) idle_.push_back(std::move(h));
  cv_.notify_one();
}

Result<HttpResult> CurlTransport::Do(std::string_view method, const std::string& path_and_query,
                                     std::string_view body, std::string_view content_type,
                                     std::string_view accept) {
  ECO_ASSIGN_OR_RETURN(CurlSlist headers,
                       RequestHeaders(tokens_, content_type, accept.empty() ? "application/json" : accept));
  ECO_ASSIGN_OR_RETURN(CurlEasy h, Acquire());
  CURL* c = h.get();

  HttpResult out;
  std::string url = config_.server + path_and_query;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, CaptureRetryAfter);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out.retry_after);
  if (method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
  } else if (method == "DELETE" && body.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
  } else {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    std::string m(method);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, m == "POST" ? nullptr : m.c_str());
    // CUSTOMREQUEST is copied by libcurl, so `m` may go now.
  }
  CURLcode rc = curl_easy_perform(c);
  // Nothing of this request may outlive it in the pooled handle.
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, nullptr);
  if (rc != CURLE_OK) {
    // A handle whose connection failed is dropped with it; the next request
    // starts from a fresh handle.
    Release(std::move(h), false);
    return StatusFromCurl(rc, std::string(method) + " " + path_and_query);
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.code);
  Release(std::move(h), true);
  return out;
}

Result<std::string> Transport::Call(std::string_view method, const std::string& path_and_query,
                                    std::string_view body, std::string_view content_type,
                                    std::string_view accept) {
  // A client span inside a traced request only (rsync's applies make none).
  trace::Span span = trace::Span::Child("k8s " + std::string(method), trace::Kind::kClient);
  if (span.recording()) {
    span.SetAttribute("server.address", config_.server);
    span.SetAttribute("url.path", path_and_query.substr(0, path_and_query.find('?')));
  }
  Result<HttpResult> r = Do(method, path_and_query, body, content_type, accept);
  if (span.recording()) {
    if (!r.ok()) span.SetError(r.status().ToString());
    if (r.ok()) span.SetAttribute("http.response.status_code", static_cast<int64_t>(r->code));
    if (r.ok() && r->code >= 400) span.SetError("HTTP " + std::to_string(r->code));
  }
  if (!r.ok()) return r.status();
  if (r->code >= 200 && r->code < 300) return std::move(r->body);
  return StatusFromHttp(r->code, r->body, r->retry_after)
      .Annotate(std::string(method) + " " + path_and_query);
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return out;
}

// The host of an http(s) URL, lower case, without brackets or port.
std::string UrlHost(std::string_view url) {
  size_t p = url.find("://");
  std::string_view rest = p == std::string_view::npos ? url : url.substr(p + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest.front() == '[') return Lower(rest.substr(1, rest.find(']') - 1));
  return Lower(rest.substr(0, rest.find(':')));
}

bool NoProxyExcludes(std::string_view host, std::string_view list) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t'))
      entry.remove_prefix(1);
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\t')) entry.remove_suffix(1);
    if (entry == "*") return true;
    if (!entry.empty() && entry.front() == '.') entry.remove_prefix(1);
    if (entry.empty()) continue;
    std::string e = Lower(entry);
    if (host == e) return true;
    if (host.size() > e.size() && host.substr(host.size() - e.size()) == e &&
        host[host.size() - e.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

}  // namespace

bool ProxyApplies(std::string_view server, const EnvLookup& env) {
  auto set = [&env](const char* name) {
    const char* v = env(name);
    return v != nullptr && *v != '\0';
  };
  const bool https = server.rfind("https://", 0) == 0;
  bool proxied =
      https ? set("https_proxy") || set("HTTPS_PROXY") : set("http_proxy") || set("HTTP_PROXY");
  proxied = proxied || set("all_proxy") || set("ALL_PROXY");
  if (!proxied) return false;
  const std::string host = UrlHost(server);
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    const char* v = env(name);
    if (v != nullptr && NoProxyExcludes(host, v)) return false;
  }
  return true;
}

Result<std::unique_ptr<Transport>> NewTransport(RestConfig config, ClientOptions options,
                                                const EnvLookup& env) {
  bool curl = options.transport == HttpTransport::kCurl ||
              (options.transport == HttpTransport::kAuto && ProxyApplies(config.server, env));
  if (curl) {
    return std::unique_ptr<Transport>(
        std::make_unique<CurlTransport>(std::move(config), std::move(options)));
  }
  // ECO_K8S_HTTP2=false: the operator's switch, for every client of the process.
  const char* off = env("ECO_K8S_HTTP2");
  const bool h2 = options.http2 && config.server.rfind("https://", 0) == 0 &&
                  !(off != nullptr && (std::string_view(off) == "false" || std::string_view(off) == "0"));
  ECO_ASSIGN_OR_RETURN(std::unique_ptr<Transport> direct, NewDirectTransport(config, options));
  if (!h2) return direct;
  return NewH2Transport(std::move(config), std::move(options), std::move(direct));
}

}  // namespace eco::k8s
