// The cpprestsdk-backed Client. Every blocking wait (.get()) happens on the caller's thread; no
// user code runs inside a pplx continuation.

#include "pkg/client/http_client.h"

#include <cpprest/http_client.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ssl.hpp>
#include <cctype>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "pkg/client/client.h"
#include "pkg/client/rate_limiter.h"

namespace berth::client {
namespace {

using web::http::http_request;
using web::http::http_response;
using web::http::method;
using web::http::methods;
using web::http::client::http_client;
using web::http::client::http_client_config;

// Small enough that a watch event is handed over promptly, large enough for LIST pages.
constexpr size_t kChunkSize = 16 * 1024;
// A watch is cut by cpprest only after this much silence beyond the server-side timeout, so a
// quiet watch (bookmarks only) is ended by the apiserver, not by us.
constexpr std::chrono::seconds kWatchTimeoutSlack{30};
constexpr std::chrono::seconds kUnboundedWatchInactivity{600};

std::atomic<int64_t> g_token_refresh_interval_ns{
    std::chrono::duration_cast<std::chrono::nanoseconds>(internal::kTokenRefreshInterval).count()};

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

void AppendParam(std::string* query, std::string_view key, std::string_view value) {
  if (!query->empty()) query->push_back('&');
  query->append(key);
  query->push_back('=');
  query->append(internal::UrlEncode(value));
}

std::string JoinQuery(const std::string& path, const std::string& query) {
  if (query.empty()) return path;
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

double Jitter() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// The bearer token, re-read from the token file at most once per refresh interval so that
// rotated projected service-account tokens are picked up. Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string token, std::string file)
      : static_token_(std::move(token)), file_(std::move(file)) {}

  std::string Token() {
    if (file_.empty()) return static_token_;
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    const std::chrono::nanoseconds interval(g_token_refresh_interval_ns.load());
    if (!read_once_ || now - read_at_ >= interval) {
      read_once_ = true;
      read_at_ = now;
      std::ifstream in(file_, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      const std::string raw = text.str();
      const std::string token(TrimView(raw));
      if (in && !token.empty()) {
        file_token_ = token;
      } else {
        spdlog::debug("client: cannot read token file {}; keeping the previous token", file_);
      }
    }
    return file_token_.empty() ? static_token_ : file_token_;
  }

 private:
  const std::string static_token_;
  const std::string file_;
  std::mutex mu_;
  std::string file_token_;
  bool read_once_ = false;
  std::chrono::steady_clock::time_point read_at_;
};

// Configures the per-connection OpenSSL context cpprestsdk creates for every new connection.
std::function<void(boost::asio::ssl::context&)> SslContextSetup(const Config& config) {
  return [ca = config.ca_pem, cert = config.client_cert_pem,
          key = config.client_key_pem](boost::asio::ssl::context& ctx) {
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    if (!ca.empty()) {
      // Like client-go, a configured CA replaces the system roots cpprestsdk loaded: the
      // apiserver must chain to this CA and nothing else. SSL_CTX takes ownership of the store.
      SSL_CTX_set_cert_store(ctx.native_handle(), X509_STORE_new());
      ctx.add_certificate_authority(boost::asio::buffer(ca));
    }
    if (!cert.empty()) {
      ctx.use_certificate_chain(boost::asio::buffer(cert));
      ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
    }
  };
}

std::optional<std::chrono::seconds> RetryAfterOf(const http_response& response) {
  const auto& headers = response.headers();
  const auto it = headers.find("Retry-After");
  if (it == headers.end()) return std::nullopt;
  return internal::ParseRetryAfter(it->second, std::chrono::system_clock::now());
}

// A successful response.
struct Reply {
  int status;
  std::string body;
};

nlohmann::json ParseJsonBody(const Reply& reply, const std::string& what) {
  nlohmann::json parsed = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    throw ApiError(ErrorReason::kUnknown, reply.status,
                   "cannot decode the JSON response of " + what);
  }
  return parsed;
}

class CpprestWatchStream final : public WatchStream {
 public:
  CpprestWatchStream(std::unique_ptr<http_client> http, pplx::cancellation_token_source cancel,
                     http_response response, std::string server)
      : http_(std::move(http)),
        cancel_(std::move(cancel)),
        response_(std::move(response)),
        body_(response_.body().streambuf()),
        server_(std::move(server)),
        chunk_(kChunkSize) {}

  ~CpprestWatchStream() override { Stop(); }

  bool Next(WatchEvent* event) override {
    std::string line;
    while (!stopped_.load()) {
      while (lines_.NextLine(&line)) {
        if (TrimView(line).empty()) continue;
        *event = internal::DecodeWatchEvent(line);
        return true;
      }
      if (eof_) {
        // A last record the server did not terminate with a newline still counts.
        line = std::string(TrimView(lines_.Pending()));
        lines_ = internal::LineSplitter();
        if (line.empty()) return false;
        *event = internal::DecodeWatchEvent(line);
        return true;
      }
      if (!Fill()) return false;
    }
    return false;
  }

  // Cancelling the request closes the socket; cpprestsdk then completes the body stream with an
  // error, which wakes a Next() blocked in Fill().
  void Stop() override {
    stopped_.store(true);
    cancel_.cancel();
  }

 private:
  // Appends the next bytes of the body to lines_, blocking until at least one arrives. Sets eof_
  // at the end of the stream; false when the stream was stopped meanwhile.
  bool Fill() {
    size_t got = 0;
    try {
      // producer_consumer_buffer::getn waits until all requested bytes are there, so ask for
      // what is already buffered, or for one byte when nothing is.
      const size_t want = std::clamp<size_t>(body_.in_avail(), 1, chunk_.size());
      got = body_.getn(chunk_.data(), want).get();
    } catch (const web::http::http_exception& e) {
      if (stopped_.load()) return false;
      bool unused = false;
      throw internal::TransportFailure(server_, std::string("watch stream: ") + e.what(),
                                       e.error_code(), &unused);
    } catch (const std::exception& e) {
      if (stopped_.load()) return false;
      throw ApiError(ErrorReason::kTransport, 0,
                     "watch stream from " + server_ + " failed: " + e.what());
    }
    if (stopped_.load()) return false;
    if (got == 0) {
      eof_ = true;
    } else {
      lines_.Append(std::string_view(reinterpret_cast<const char*>(chunk_.data()), got));
    }
    return true;
  }

  // Keeps the connection's client alive for as long as the stream reads from it.
  std::unique_ptr<http_client> http_;
  pplx::cancellation_token_source cancel_;
  http_response response_;
  concurrency::streams::streambuf<uint8_t> body_;
  const std::string server_;
  std::atomic<bool> stopped_{false};
  // Touched only by the thread calling Next().
  std::vector<uint8_t> chunk_;
  internal::LineSplitter lines_;
  bool eof_ = false;
};

class CpprestClient final : public Client {
 public:
  explicit CpprestClient(Config config)
      : config_(std::move(config)),
        https_(config_.server.rfind("https://", 0) == 0),
        limiter_(config_.qps, config_.burst),
        tokens_(config_.bearer_token, config_.bearer_token_file) {
    if (config_.user_agent.empty()) {
      config_.user_agent = std::string("berth-scheduler/") + BerthVersion();
    }
    http_config_.set_timeout(config_.timeout);
    http_config_.set_chunksize(kChunkSize);
    http_config_.set_max_redirects(0);
    http_config_.set_validate_certificates(!config_.insecure_skip_tls_verify);
    if (https_) http_config_.set_ssl_context_callback(SslContextSetup(config_));
    http_ = std::make_unique<http_client>(web::uri(config_.server), http_config_);
  }

  nlohmann::json Get(const std::string& path) override {
    return ParseJsonBody(Execute("GET", methods::GET, path, nullptr, "", true), "GET " + path);
  }

  ListPage ListPageRaw(const std::string& path, const ListOptions& options,
                       const std::string& continue_token) override {
    const std::string uri = JoinQuery(path, internal::ListQuery(options, continue_token));
    return ListPage{Execute("LIST", methods::GET, uri, nullptr, "", true).body};
  }

  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("POST", methods::POST, path, &encoded, "application/json", false),
                         "POST " + path);
  }

  std::string PostRaw(const std::string& path, const std::string& body) override {
    return Execute("POST", methods::POST, path, &body, "application/json", false).body;
  }

  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       PatchType type) override {
    const char* content_type = "application/merge-patch+json";
    if (type == PatchType::kStrategicMerge) content_type = "application/strategic-merge-patch+json";
    if (type == PatchType::kJson) content_type = "application/json-patch+json";
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("PATCH", methods::PATCH, path, &encoded, content_type, true),
                         "PATCH " + path);
  }

  nlohmann::json Put(const std::string& path, const nlohmann::json& body) override {
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("PUT", methods::PUT, path, &encoded, "application/json", true),
                         "PUT " + path);
  }

  void Delete(const std::string& path) override {
    Execute("DELETE", methods::DEL, path, nullptr, "", true);
  }

  std::unique_ptr<WatchStream> Watch(const std::string& path,
                                     const WatchOptions& options) override {
    const std::string uri = JoinQuery(path, internal::WatchQuery(options));
    // cpprestsdk's timeout is an inactivity timer fixed per http_client, so each watch gets its
    // own client (and connection) with a timeout past the server-side one.
    http_client_config watch_config = http_config_;
    watch_config.set_timeout(options.timeout_seconds > 0
                                 ? std::chrono::seconds(options.timeout_seconds) +
                                       kWatchTimeoutSlack
                                 : kUnboundedWatchInactivity);
    auto http = std::make_unique<http_client>(web::uri(config_.server), watch_config);
    for (int attempt = 1;; ++attempt) {
      limiter_.Accept();
      const auto start = std::chrono::steady_clock::now();
      int status = 0;
      bool not_sent = false;
      std::optional<ApiError> error;
      pplx::cancellation_token_source cancel;
      try {
        http_response response =
            http->request(NewRequest(methods::GET, uri), cancel.get_token()).get();
        status = response.status_code();
        if (status == 200) {
          Observe("WATCH", status, start);
          return std::make_unique<CpprestWatchStream>(std::move(http), std::move(cancel),
                                                      std::move(response), config_.server);
        }
        const std::string body = response.extract_utf8string(true).get();
        Observe("WATCH", status, start);
        error = ErrorFromResponse(status, body, RetryAfterOf(response));
      } catch (const web::http::http_exception& e) {
        Observe("WATCH", status, start);
        error = internal::TransportFailure(config_.server, e.what(), e.error_code(), &not_sent);
      } catch (const web::uri_exception& e) {
        throw ApiError(ErrorReason::kBadRequest, 0, "invalid request URI " + uri + ": " + e.what());
      } catch (const std::exception& e) {
        Observe("WATCH", status, start);
        throw ApiError(ErrorReason::kUnknown, status, "WATCH " + uri + " failed: " + e.what());
      }
      MaybeBackoff("WATCH", path, attempt, *error, true, not_sent);
    }
  }

  const Config& config() const override { return config_; }

  void SetRequestObserver(RequestObserver observer) override {
    auto shared = observer ? std::make_shared<const RequestObserver>(std::move(observer)) : nullptr;
    std::lock_guard<std::mutex> lock(observer_mu_);
    observer_ = std::move(shared);
  }

 private:
  http_request NewRequest(const method& verb, const std::string& uri) {
    http_request request(verb);
    request.set_request_uri(uri);
    auto& headers = request.headers();
    headers.add("User-Agent", config_.user_agent);
    headers.add("Accept", "application/json");
    if (const std::string token = tokens_.Token(); !token.empty()) {
      headers.add("Authorization", "Bearer " + token);
    }
    // cpprestsdk takes the TLS peer name (SNI and the certificate host check) from the Host
    // header when one is set; the apiserver does not route on Host, so this is how
    // tls-server-name is honoured.
    if (https_ && !config_.tls_server_name.empty()) headers.add("Host", config_.tls_server_name);
    return request;
  }

  // Runs one request with retries; returns the 2xx response or throws ApiError.
  Reply Execute(const char* verb, const method& http_method, const std::string& uri,
                const std::string* body, const std::string& content_type, bool idempotent) {
    for (int attempt = 1;; ++attempt) {
      limiter_.Accept();
      const auto start = std::chrono::steady_clock::now();
      int status = 0;
      bool not_sent = false;
      std::optional<ApiError> error;
      try {
        http_request request = NewRequest(http_method, uri);
        if (body != nullptr) request.set_body(*body, content_type);
        http_response response = http_->request(request).get();
        status = response.status_code();
        std::string text = response.extract_utf8string(true).get();
        Observe(verb, status, start);
        if (status >= 200 && status < 300) return Reply{status, std::move(text)};
        error = ErrorFromResponse(status, text, RetryAfterOf(response));
      } catch (const web::http::http_exception& e) {
        Observe(verb, status, start);
        error = internal::TransportFailure(config_.server, e.what(), e.error_code(), &not_sent);
      } catch (const web::uri_exception& e) {
        throw ApiError(ErrorReason::kBadRequest, 0, "invalid request URI " + uri + ": " + e.what());
      } catch (const std::exception& e) {
        Observe(verb, status, start);
        throw ApiError(ErrorReason::kUnknown, status,
                       std::string(verb) + " " + uri + " failed: " + e.what());
      }
      MaybeBackoff(verb, uri, attempt, *error, idempotent, not_sent);
    }
  }

  // Throws `error` unless it deserves another attempt, in which case it sleeps the backoff.
  void MaybeBackoff(const char* verb, const std::string& uri, int attempt, const ApiError& error,
                    bool idempotent, bool not_sent) {
    if (attempt >= internal::kMaxAttempts || !internal::ShouldRetry(error, idempotent, not_sent)) {
      throw error;
    }
    const auto delay = internal::BackoffDelay(attempt, error, Jitter());
    spdlog::debug("client: {} {} attempt {}/{} failed ({}); retrying in {}ms", verb, uri, attempt,
                  internal::kMaxAttempts, error.what(), delay.count());
    std::this_thread::sleep_for(delay);
  }

  void Observe(const char* verb, int status, std::chrono::steady_clock::time_point start) {
    std::shared_ptr<const RequestObserver> observer;
    {
      std::lock_guard<std::mutex> lock(observer_mu_);
      observer = observer_;
    }
    if (observer) (*observer)(verb, status, std::chrono::steady_clock::now() - start);
  }

  Config config_;
  const bool https_;
  RateLimiter limiter_;
  TokenSource tokens_;
  http_client_config http_config_;
  // Shared by every non-watch request: cpprestsdk pools its connections per client.
  std::unique_ptr<http_client> http_;
  std::mutex observer_mu_;
  std::shared_ptr<const RequestObserver> observer_;  // Guarded by observer_mu_.
};

}  // namespace

namespace internal {

void LineSplitter::Append(std::string_view data) {
  // Compact once the consumed prefix dominates, keeping Append amortised O(size of data).
  if (start_ > 0 && start_ * 2 >= buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(data);
}

bool LineSplitter::NextLine(std::string* line) {
  const size_t newline = buffer_.find('\n', start_);
  if (newline == std::string::npos) return false;
  size_t end = newline;
  if (end > start_ && buffer_[end - 1] == '\r') --end;
  line->assign(buffer_, start_, end - start_);
  start_ = newline + 1;
  return true;
}

std::string_view LineSplitter::Pending() const { return std::string_view(buffer_).substr(start_); }

std::string UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::string ListQuery(const ListOptions& options, const std::string& continue_token) {
  std::string query;
  if (options.limit > 0) AppendParam(&query, "limit", std::to_string(options.limit));
  if (!continue_token.empty()) AppendParam(&query, "continue", continue_token);
  if (!options.label_selector.empty()) AppendParam(&query, "labelSelector", options.label_selector);
  if (!options.field_selector.empty()) AppendParam(&query, "fieldSelector", options.field_selector);
  // The continue token pins the snapshot; the apiserver rejects a resourceVersion beside it.
  if (continue_token.empty() && !options.resource_version.empty()) {
    AppendParam(&query, "resourceVersion", options.resource_version);
  }
  return query;
}

std::string WatchQuery(const WatchOptions& options) {
  std::string query = "watch=1";
  if (options.allow_bookmarks) AppendParam(&query, "allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) {
    AppendParam(&query, "timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  if (!options.resource_version.empty()) {
    AppendParam(&query, "resourceVersion", options.resource_version);
  }
  if (!options.label_selector.empty()) AppendParam(&query, "labelSelector", options.label_selector);
  if (!options.field_selector.empty()) AppendParam(&query, "fieldSelector", options.field_selector);
  return query;
}

WatchEvent DecodeWatchEvent(std::string_view line) {
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    throw ApiError(ErrorReason::kUnknown, 0, "watch: event is not a JSON object");
  }
  const auto type = parsed.find("type");
  const auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string() || object == parsed.end() ||
      !object->is_object()) {
    throw ApiError(ErrorReason::kUnknown, 0, "watch: event lacks a string type or an object");
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    throw ApiError(ErrorReason::kUnknown, 0, "watch: unknown event type \"" + name + "\"");
  }
  event.object = std::move(*object);
  return event;
}

void SetTokenRefreshIntervalForTesting(std::chrono::nanoseconds interval) {
  g_token_refresh_interval_ns.store(interval.count());
}

}  // namespace internal

std::shared_ptr<Client> NewClient(Config config) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    throw ConfigError("client: server \"" + config.server + "\" is not an https:// URL");
  }
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    throw ConfigError("client: a client certificate needs its key and vice versa");
  }
  if (config.server.rfind("https://", 0) == 0) {
    // Fail now, with a clear message, rather than on every connection attempt.
    try {
      boost::asio::ssl::context probe(boost::asio::ssl::context::sslv23);
      SslContextSetup(config)(probe);
    } catch (const std::exception& e) {
      throw ConfigError(std::string("client: unusable CA bundle or client certificate/key: ") +
                        e.what());
    }
  }
  try {
    auto client = std::make_shared<CpprestClient>(std::move(config));
    spdlog::debug("client: {}", client->config().Describe());
    return client;
  } catch (const web::uri_exception& e) {
    throw ConfigError(std::string("client: invalid server URL: ") + e.what());
  }
}

}  // namespace berth::client
