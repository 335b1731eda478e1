#include "pkg/server/server.h"

#include <cpprest/http_listener.h>
#include <pplx/threadpool.h>

#include <boost/asio/ssl.hpp>
#include <fstream>
#include <mutex>

namespace berth::server {
namespace {

using web::http::http_request;
using web::http::methods;
using web::http::status_codes;

// "[+]ping ok\n[-]informer-sync failed: reason\n" and whether all passed.
std::pair<bool, std::string> RunChecks(const std::vector<HealthCheck>& checks) {
  bool ok = true;
  std::string report;
  for (const auto& c : checks) {
    std::optional<std::string> error;
    try {
      error = c.check();
    } catch (const std::exception& e) {
      error = std::string("check threw: ") + e.what();
    }
    if (error) {
      ok = false;
      report += "[-]" + c.name + " failed: " + *error + "\n";
    } else {
      report += "[+]" + c.name + " ok\n";
    }
  }
  return {ok, report};
}

void RequireReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ServerError(flag + ": cannot read \"" + path + "\"");
}

}  // namespace

void SetServerThreads(size_t threads) {
  try {
    crossplat::threadpool::initialize_with_threads(threads);
  } catch (const std::exception& e) {
    throw ServerError(std::string("server threads: ") + e.what());
  }
}

BindAddress ParseBindAddress(const std::string& address) {
  auto fail = [&]() -> BindAddress {
    throw ServerError(
        "--bind-address: expected host:port (e.g. 0.0.0.0:10251 or [::1]:10251), "
        "got \"" +
        address + "\"");
  };
  BindAddress out;
  std::string port;
  if (!address.empty() && address.front() == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return fail();
    }
    out.host = address.substr(0, close + 1);
    port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0) return fail();
    out.host = address.substr(0, colon);
    if (out.host.find(':') != std::string::npos) return fail();
    port = address.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return fail();
  }
  long value = std::stol(port);
  if (value < 1 || value > 65535) return fail();
  out.port = static_cast<uint16_t>(value);
  return out;
}

class HttpServer::Impl {
 public:
  Impl(Options options, Handlers handlers)
      : options_(std::move(options)), handlers_(std::move(handlers)) {
    address_ = ParseBindAddress(options_.bind_address);
    tls_ = !options_.tls_cert_file.empty() || !options_.tls_private_key_file.empty();
    if (tls_ && (options_.tls_cert_file.empty() || options_.tls_private_key_file.empty())) {
      throw ServerError("--tls-cert-file and --tls-private-key-file must be given together");
    }
    url_ = std::string(tls_ ? "https" : "http") + "://" + address_.host + ":" +
           std::to_string(address_.port);
  }

  void Start() {
    std::lock_guard lock(mu_);
    if (listener_) return;
    web::http::experimental::listener::http_listener_config config;
    if (tls_) {
      RequireReadable("--tls-cert-file", options_.tls_cert_file);
      RequireReadable("--tls-private-key-file", options_.tls_private_key_file);
      std::string cert = options_.tls_cert_file;
      std::string key = options_.tls_private_key_file;
      // Verify the pair now so a bad file fails start-up, not the first scrape.
      try {
        boost::asio::ssl::context probe(boost::asio::ssl::context::tls_server);
        probe.use_certificate_chain_file(cert);
        probe.use_private_key_file(key, boost::asio::ssl::context::pem);
      } catch (const std::exception& e) {
        throw ServerError("--tls-cert-file/--tls-private-key-file: cannot load \"" + cert +
                          "\" / \"" + key + "\": " + e.what());
      }
      config.set_ssl_context_callback([cert, key](boost::asio::ssl::context& ctx) {
        ctx.set_options(boost::asio::ssl::context::default_workarounds |
                        boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                        boost::asio::ssl::context::no_tlsv1 |
                        boost::asio::ssl::context::no_tlsv1_1);
        ctx.use_certificate_chain_file(cert);
        ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
      });
    }
    auto listener =
        std::make_unique<web::http::experimental::listener::http_listener>(web::uri(url_), config);
    listener->support(methods::GET, [this](const http_request& request) { Handle(request); });
    listener->support(methods::HEAD, [this](const http_request& request) { Handle(request); });
    listener->support(methods::POST, [this](const http_request& request) { Handle(request); });
    try {
      listener->open().wait();
    } catch (const std::exception& e) {
      throw ServerError("--bind-address " + options_.bind_address + ": cannot listen: " + e.what());
    }
    listener_ = std::move(listener);
  }

  void Stop() {
    std::lock_guard lock(mu_);
    if (!listener_) return;
    try {
      listener_->close().wait();
    } catch (const std::exception&) {
      // Already closed by a failed accept loop; nothing left to release.
    }
    listener_.reset();
  }

  const std::string& url() const { return url_; }

 private:
  void Handle(const http_request& request) {
    const std::string path = request.relative_uri().path();
    // "?verbose" has no "=", which split_query drops; look for the key itself.
    const std::string query = "&" + request.relative_uri().query() + "&";
    const bool verbose = query.find("&verbose&") != std::string::npos ||
                         query.find("&verbose=") != std::string::npos;
    try {
      if (path.rfind("/debug/", 0) == 0 && handlers_.debug) {
        Debug(request);
      } else if (request.method() == methods::POST) {
        request.reply(status_codes::MethodNotAllowed, "405 method not allowed\n", "text/plain");
      } else if (path == "/metrics" && handlers_.metrics) {
        request.reply(status_codes::OK, handlers_.metrics(),
                      "text/plain; version=0.0.4; charset=utf-8");
      } else if (path == "/healthz" || path == "/livez") {
        Health(request, handlers_.livez, path.substr(1), verbose);
      } else if (path == "/readyz") {
        Health(request, handlers_.readyz, "readyz", verbose);
      } else if (path == "/configz" && handlers_.configz) {
        request.reply(status_codes::OK, handlers_.configz(), "application/json");
      } else {
        request.reply(status_codes::NotFound, "404 page not found\n", "text/plain");
      }
    } catch (const std::exception& e) {
      request.reply(status_codes::InternalError, std::string(e.what()) + "\n", "text/plain");
    }
  }

  void Debug(const http_request& request) {
    std::unique_lock busy(debug_mu_, std::try_to_lock);
    if (!busy.owns_lock()) {
      request.reply(status_codes::TooManyRequests,
                    "another debug request is running; retry in a moment\n", "text/plain");
      return;
    }
    DebugRequest req;
    req.method = request.method();
    req.path = web::uri::decode(request.relative_uri().path());
    for (const auto& [key, value] : web::uri::split_query(request.relative_uri().query())) {
      req.query[web::uri::decode(key)] = web::uri::decode(value);
    }
    if (req.method == methods::POST) {
      const auto& headers = request.headers();
      req.content_type = headers.content_type();
      if (!headers.has(web::http::header_names::content_length)) {
        request.reply(status_codes::LengthRequired, "a Content-Length header is required\n",
                      "text/plain");
        return;
      }
      if (headers.content_length() > kMaxDebugBodyBytes) {
        request.reply(status_codes::RequestEntityTooLarge,
                      "request body over " + std::to_string(kMaxDebugBodyBytes) + " bytes\n",
                      "text/plain");
        return;
      }
      // http_request is a handle to shared state: a copy reads the same body.
      http_request readable = request;
      req.body = readable.extract_utf8string(true).get();
    }
    DebugResponse response = handlers_.debug(req);
    request.reply(static_cast<web::http::status_code>(response.status), response.body,
                  response.content_type);
  }

  static void Health(const http_request& request, const std::vector<HealthCheck>& checks,
                     const std::string& name, bool verbose) {
    auto [ok, report] = RunChecks(checks);
    if (ok) {
      request.reply(status_codes::OK, verbose ? report + name + " check passed\n" : "ok",
                    "text/plain; charset=utf-8");
    } else {
      request.reply(status_codes::InternalError, report + name + " check failed\n",
                    "text/plain; charset=utf-8");
    }
  }

  const Options options_;
  const Handlers handlers_;
  BindAddress address_;
  bool tls_ = false;
  std::string url_;
  std::mutex mu_;  // Guards listener_.
  // Held for the length of a debug request.
  std::mutex debug_mu_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

HttpServer::HttpServer(Options options, Handlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
void HttpServer::Start() { impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
std::string HttpServer::url() const { return impl_->url(); }

}  // namespace berth::server
