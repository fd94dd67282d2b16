#include "ecoctl/http_client.h"

#include <httplib.h>

#include <cctype>
#include <exception>

namespace eco::ecoctl {
namespace {

class HttplibClient final : public HttpClient {
 public:
  explicit HttplibClient(ClientConfig config) : config_(std::move(config)) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    try {
      return SendOrThrow(request);
    } catch (const std::exception& e) {
      // cpp-httplib can throw (std::regex, allocation); keep it inside.
      return Internal("HTTP client: " + std::string(e.what()));
    }
  }

 private:
  std::unique_ptr<httplib::Client> MakeClient() const {
    auto c = std::make_unique<httplib::Client>(config_.endpoint.scheme + "://" +
                                               config_.endpoint.host_port);
    auto sec = static_cast<time_t>(config_.timeout_seconds);
    auto usec = static_cast<time_t>((config_.timeout_seconds - static_cast<double>(sec)) * 1e6);
    c->set_connection_timeout(sec, usec);
    c->set_read_timeout(sec, usec);
    c->set_write_timeout(sec, usec);
    if (!config_.token.empty()) c->set_bearer_token_auth(config_.token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (config_.endpoint.scheme == "https") {
      c->enable_server_certificate_verification(!config_.insecure);
      if (!config_.ca_file.empty()) c->set_ca_cert_path(config_.ca_file);
    }
#endif
    return c;
  }

  Status TransportError(httplib::Error err) const {
    const std::string ep = config_.endpoint.ToString();
    switch (err) {
      case httplib::Error::Connection:
        return Unavailable("cannot connect to " + ep +
                           " (connection refused or host unreachable; is eco serve running? "
                           "set --endpoint or ECO_ENDPOINT)");
      case httplib::Error::ConnectionTimeout:
        return Unavailable("timed out connecting to " + ep);
      case httplib::Error::Read:
        return Unavailable("no answer from " + ep + " (timed out or connection closed)");
      case httplib::Error::Write:
        return Unavailable("could not send the request to " + ep);
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLLoadingCerts:
      case httplib::Error::SSLServerVerification:
        return Unavailable("TLS error talking to " + ep + ": " + httplib::to_string(err));
      default:
        return Unavailable("request to " + ep + " failed: " + httplib::to_string(err));
    }
  }

  Result<HttpResponse> SendOrThrow(const HttpRequest& request) {
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
    if (config_.endpoint.scheme == "https") {
      return Invalid("https endpoints need a cpp-httplib built with OpenSSL");
    }
#endif
    auto client = MakeClient();
    if (!client->is_valid()) return Invalid("bad endpoint " + config_.endpoint.ToString());

    httplib::Headers headers;
    if (!request.accept.empty()) headers.emplace("Accept", request.accept);
    const std::string path = config_.endpoint.prefix + request.path;

    httplib::Result res{nullptr, httplib::Error::Unknown};
    if (request.multipart()) {
      httplib::MultipartFormDataItems items;
      for (const auto& p : request.parts) {
        items.push_back({p.name, p.content, p.filename, p.content_type});
      }
      if (request.method == "POST") {
        res = client->Post(path, headers, items);
      } else if (request.method == "PUT") {
        res = client->Put(path, headers, items);
      } else {
        return Invalid("multipart " + request.method + " is not supported");
      }
    } else if (request.method == "GET") {
      res = client->Get(path, headers);
    } else if (request.method == "DELETE") {
      res = client->Delete(path, headers);
    } else if (request.method == "POST") {
      res = request.body.empty() && request.content_type.empty()
                ? client->Post(path, headers)
                : client->Post(path, headers, request.body, request.content_type.c_str());
    } else if (request.method == "PUT") {
      res = client->Put(path, headers, request.body, request.content_type.c_str());
    } else {
      return Invalid("unsupported method " + request.method);
    }
    if (!res) return TransportError(res.error());

    HttpResponse out;
    out.status = res->status;
    out.body = res->body;
    out.content_type = res->get_header_value("Content-Type");
    return out;
  }

  ClientConfig config_;
};

}  // namespace

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint ep;
  std::string_view rest = url;
  if (size_t p = rest.find("://"); p != std::string_view::npos) {
    ep.scheme = std::string(rest.substr(0, p));
    rest.remove_prefix(p + 3);
  } else {
    ep.scheme = "http";
  }
  for (auto& ch : ep.scheme) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ep.scheme != "http" && ep.scheme != "https") {
    return Invalid("endpoint \"" + std::string(url) + "\": scheme must be http or https");
  }
  size_t slash = rest.find('/');
  ep.host_port = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) ep.prefix = std::string(rest.substr(slash));
  while (!ep.prefix.empty() && ep.prefix.back() == '/') ep.prefix.pop_back();
  // An endpoint copied from a URL may already end in /v2; requests add it.
  if (ep.prefix.ends_with("/v2")) ep.prefix.resize(ep.prefix.size() - 3);
  if (ep.host_port.empty() || ep.host_port.find_first_of(" ?#@") != std::string::npos) {
    return Invalid("endpoint \"" + std::string(url) + "\": missing or bad host");
  }
  return ep;
}

std::unique_ptr<HttpClient> NewHttplibClient(const ClientConfig& config) {
  return std::make_unique<HttplibClient>(config);
}

}  // namespace eco::ecoctl
