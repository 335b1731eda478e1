#include "pkg/server/server.h"

#include <cpprest/http_listener.h>
#include <openssl/ssl.h>
#include <pplx/threadpool.h>

#include <boost/asio/ssl.hpp>
#include <fstream>
#include <mutex>

#include "pkg/util/task_queue.h"

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
    throw ServerError("address: expected host:port (e.g. 0.0.0.0:10259 or [::1]:10259), got \"" +
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
    if (address_.host.front() == '[') {
      throw ServerError(
          options_.flag + " " + options_.bind_address +
          ": IPv6 addresses cannot be served (cpprestsdk's listener binds IPv4 only)");
    }
    if (options_.tls) {
      const Certificate& c = *options_.tls;
      const bool files = !c.cert_file.empty() || !c.key_file.empty();
      if (files && (c.cert_file.empty() || c.key_file.empty())) {
        throw ServerError("--tls-cert-file and --tls-private-key-file must be given together");
      }
      if (!files && (c.cert_pem.empty() || c.key_pem.empty())) {
        throw ServerError(options_.flag + ": HTTPS without a certificate and key");
      }
    }
    url_ = std::string(options_.tls ? "https" : "http") + "://" + address_.host + ":" +
           std::to_string(address_.port);
    if (options_.filter) {
      auth_queue_ =
          std::make_unique<util::TaskQueue>(HttpServer::kAuthWorkers, HttpServer::kAuthQueue);
    }
  }

  void Start() {
    std::lock_guard lock(mu_);
    if (listener_) return;
    web::http::experimental::listener::http_listener_config config;
    if (options_.tls) config.set_ssl_context_callback(TlsSetup(*options_.tls));
    auto listener =
        std::make_unique<web::http::experimental::listener::http_listener>(web::uri(url_), config);
    // Every method, so whatever a future endpoint accepts passes the same filter. OPTIONS and
    // TRACE too: cpprestsdk would otherwise answer them itself, TRACE echoing the request's
    // headers, Authorization included.
    auto handle = [this](const http_request& request) { Handle(request); };
    listener->support(handle);
    listener->support(methods::OPTIONS, handle);
    listener->support(methods::TRCE, handle);
    try {
      listener->open().wait();
    } catch (const std::exception& e) {
      throw ServerError(options_.flag + " " + options_.bind_address +
                        ": cannot listen: " + e.what());
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
  // cpprestsdk calls this for every connection with a fresh context. Verifies the pair now, so a
  // bad file or PEM fails start-up rather than the first scrape.
  std::function<void(boost::asio::ssl::context&)> TlsSetup(const Certificate& c) const {
    const bool files = !c.cert_file.empty();
    if (files) {
      RequireReadable("--tls-cert-file", c.cert_file);
      RequireReadable("--tls-private-key-file", c.key_file);
    }
    auto load = [c, files](boost::asio::ssl::context& ctx) {
      ctx.set_options(boost::asio::ssl::context::default_workarounds |
                      boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                      boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
      if (files) {
        ctx.use_certificate_chain_file(c.cert_file);
        ctx.use_private_key_file(c.key_file, boost::asio::ssl::context::pem);
      } else {
        ctx.use_certificate_chain(boost::asio::buffer(c.cert_pem));
        ctx.use_private_key(boost::asio::buffer(c.key_pem), boost::asio::ssl::context::pem);
      }
    };
    try {
      boost::asio::ssl::context probe(boost::asio::ssl::context::tls_server);
      load(probe);
      if (SSL_CTX_check_private_key(probe.native_handle()) != 1) {
        throw std::runtime_error("the key does not match the certificate");
      }
    } catch (const std::exception& e) {
      if (files) {
        throw ServerError("--tls-cert-file/--tls-private-key-file: cannot load \"" + c.cert_file +
                          "\" / \"" + c.key_file + "\": " + e.what());
      }
      throw ServerError(options_.flag + ": cannot load the certificate: " + e.what());
    }
    return load;
  }

  void Handle(const http_request& request) {
    std::string path;
    try {
      path = web::uri::decode(request.relative_uri().path());
    } catch (const std::exception&) {
      Reply(request, status_codes::BadRequest, "malformed path\n", "text/plain");
      return;
    }
    if (!options_.filter || options_.filter->AlwaysAllowed(path)) {
      Serve(request, path);
      return;
    }
    const bool queued = auth_queue_->Post([this, request, path] {
      std::string authorization;
      if (auto it = request.headers().find(web::http::header_names::authorization);
          it != request.headers().end()) {
        authorization = it->second;
      }
      if (auto rejection = options_.filter->Check(request.method(), path, authorization)) {
        Reply(request, rejection->status, rejection->body, rejection->content_type);
      } else {
        Serve(request, path);
      }
    });
    if (!queued) {
      web::http::http_response response(status_codes::TooManyRequests);
      response.headers().add(web::http::header_names::retry_after, "1");
      response.set_body("Too many requests, please try again later.\n", "text/plain");
      try {
        request.reply(response);
      } catch (const std::exception&) {
        // The connection is gone; nobody is waiting for the answer.
      }
    }
  }

  static void Reply(const http_request& request, web::http::status_code status,
                    const std::string& body, const std::string& content_type) {
    try {
      request.reply(status, body, content_type);
    } catch (const std::exception&) {
      // The connection is gone (or closed by Stop()); nobody is waiting for the answer.
    }
  }

  void Serve(const http_request& request, const std::string& path) {
    const bool read = request.method() == methods::GET || request.method() == methods::HEAD;
    // "?verbose" has no "=", which split_query drops; look for the key itself.
    const std::string query = "&" + request.relative_uri().query() + "&";
    const bool verbose = query.find("&verbose&") != std::string::npos ||
                         query.find("&verbose=") != std::string::npos;
    try {
      if (path.rfind("/debug/", 0) == 0 && handlers_.debug) {
        Debug(request, path);
        return;
      }
      const bool known = (path == "/metrics" && handlers_.metrics) || path == "/healthz" ||
                         path == "/livez" || path == "/readyz" ||
                         (path == "/configz" && handlers_.configz);
      if (!known) {
        Reply(request, status_codes::NotFound, "404 page not found\n", "text/plain");
      } else if (!read) {
        Reply(request, status_codes::MethodNotAllowed, "method not allowed\n", "text/plain");
      } else if (path == "/metrics") {
        Reply(request, status_codes::OK, handlers_.metrics(),
              "text/plain; version=0.0.4; charset=utf-8");
      } else if (path == "/healthz" || path == "/livez") {
        Health(request, handlers_.livez, path.substr(1), verbose);
      } else if (path == "/readyz") {
        Health(request, handlers_.readyz, "readyz", verbose);
      } else {
        Reply(request, status_codes::OK, handlers_.configz(), "application/json");
      }
    } catch (const std::exception& e) {
      Reply(request, status_codes::InternalError, std::string(e.what()) + "\n", "text/plain");
    }
  }

  void Debug(const http_request& request, const std::string& path) {
    std::unique_lock busy(debug_mu_, std::try_to_lock);
    if (!busy.owns_lock()) {
      Reply(request, status_codes::TooManyRequests,
            "another debug request is running; retry in a moment\n", "text/plain");
      return;
    }
    DebugRequest req;
    req.method = request.method();
    req.path = path;
    for (const auto& [key, value] : web::uri::split_query(request.relative_uri().query())) {
      req.query[web::uri::decode(key)] = web::uri::decode(value);
    }
    if (req.method == methods::POST) {
      const auto& headers = request.headers();
      req.content_type = headers.content_type();
      if (!headers.has(web::http::header_names::content_length)) {
        Reply(request, status_codes::LengthRequired, "a Content-Length header is required\n",
              "text/plain");
        return;
      }
      if (headers.content_length() > kMaxDebugBodyBytes) {
        Reply(request, status_codes::RequestEntityTooLarge,
              "request body over " + std::to_string(kMaxDebugBodyBytes) + " bytes\n", "text/plain");
        return;
      }
      // http_request is a handle to shared state: a copy reads the same body.
      http_request readable = request;
      req.body = readable.extract_utf8string(true).get();
    }
    DebugResponse response = handlers_.debug(req);
    Reply(request, static_cast<web::http::status_code>(response.status), response.body,
          response.content_type);
  }

  static void Health(const http_request& request, const std::vector<HealthCheck>& checks,
                     const std::string& name, bool verbose) {
    auto [ok, report] = RunChecks(checks);
    if (ok) {
      Reply(request, status_codes::OK, verbose ? report + name + " check passed\n" : "ok",
            "text/plain; charset=utf-8");
    } else {
      Reply(request, status_codes::InternalError, report + name + " check failed\n",
            "text/plain; charset=utf-8");
    }
  }

  const Options options_;
  const Handlers handlers_;
  BindAddress address_;
  std::string url_;
  std::mutex mu_;  // Guards listener_.
  // Held for the length of a debug request.
  std::mutex debug_mu_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  // Last: destroyed first, finishing the checks in flight while everything they use still exists.
  std::unique_ptr<util::TaskQueue> auth_queue_;
};

HttpServer::HttpServer(Options options, Handlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
void HttpServer::Start() { impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
std::string HttpServer::url() const { return impl_->url(); }

}  // namespace berth::server
