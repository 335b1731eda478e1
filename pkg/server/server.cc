#include "pkg/server/server.h"

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <mutex>
#include <thread>
#include <type_traits>

#include "pkg/log/log.h"
#include "pkg/server/limits.h"
#include "pkg/server/tls_context.h"
#include "pkg/util/task_queue.h"

namespace berth::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// kube-apiserver's serving limits, scaled to what these endpoints take: a header block carries at
// most a bearer token of a few KiB, a body only a /debug/simulate manifest.
constexpr size_t kMaxHeaderBytes = size_t{64} * 1024;
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kReadTimeout = std::chrono::seconds(32);   // ReadHeaderTimeout upstream.
constexpr auto kIdleTimeout = std::chrono::seconds(90);   // IdleTimeout upstream.
constexpr auto kWriteTimeout = std::chrono::seconds(60);  // A slow scraper, not a stuck one.
// After an early answer (413), how much of the unread body is discarded, and for how long, so the
// client finishes sending and reads the answer instead of a connection reset.
constexpr size_t kDrainBytes = 4 * kMaxDebugBodyBytes;
constexpr auto kDrainTimeout = std::chrono::seconds(2);
// A failed accept (out of descriptors) is retried after this, not in a busy loop.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

constexpr size_t kDefaultServerThreads = 4;
std::mutex threads_mu;
size_t server_threads = kDefaultServerThreads;
bool server_threads_fixed = false;  // Set, or read by a started server.

size_t FixServerThreads() {
  std::lock_guard lock(threads_mu);
  server_threads_fixed = true;
  return server_threads;
}

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

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded ("+" stays "+", as in a path); nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); i++) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = HexDigit(text[i + 1]);
    const int low = HexDigit(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// What a route answers.
struct Answer {
  unsigned status = 200;
  std::string body;
  std::string content_type = "text/plain";
  bool retry_after = false;
};

Answer Text(unsigned status, std::string body) { return {status, std::move(body), "text/plain"}; }

Answer TooLarge() {
  return Text(413, "request body over " + std::to_string(kMaxDebugBodyBytes) + " bytes\n");
}

Answer TooManyRequests() {
  return Answer{429, "Too many requests, please try again later.\n", "text/plain", true};
}

bool IsHealthPath(const std::string& path) {
  return path == "/healthz" || path == "/livez" || path == "/readyz";
}

// A request as the handlers and the filter see it.
struct Incoming {
  std::string method;  // As sent: "GET".
  std::string path;    // Decoded.
  std::string query;   // Raw, without the "?".
  std::string authorization;
  std::string content_type;
  bool has_content_length = false;
  std::string body;  // Empty until the request is admitted and its body read.
  std::optional<auth::ClientCertificate> certificate;
};

// What the filter made of a request's header block.
struct Admission {
  std::optional<Answer> refusal;  // Set: answered with it, the body unread.
  bool details = true;            // Health checks may say why they failed.
};

// What a connection hands its requests to.
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Checks a request on its header block (`request` has no body yet) from `source`. `done` gets
  // the verdict on any thread; it may be called before this returns.
  virtual void Admit(const Incoming& request, const std::string& source,
                     std::function<void(Admission)> done) = 0;
  // The answer to an admitted request. Runs the handlers on the calling thread.
  virtual Answer Serve(const Incoming& request, bool details) = 0;
};

}  // namespace

void SetServerThreads(size_t threads) {
  std::lock_guard lock(threads_mu);
  if (server_threads_fixed) {
    throw ServerError("server threads: already sized, or a server has started");
  }
  if (threads == 0) throw ServerError("server threads: at least one is needed");
  server_threads = threads;
  server_threads_fixed = true;
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

namespace {

// Throws ServerError for TLS options no listener can serve with.
void CheckTlsOptions(const Options& options) {
  if (options.tls) {
    const Certificate& c = *options.tls;
    const bool files = !c.cert_file.empty() || !c.key_file.empty();
    if (files && (c.cert_file.empty() || c.key_file.empty())) {
      throw ServerError("--tls-cert-file and --tls-private-key-file must be given together");
    }
    if (!files && (c.cert_pem.empty() || c.key_pem.empty())) {
      throw ServerError(options.flag + ": HTTPS without a certificate and key");
    }
  }
  if (!options.client_ca.empty() && !options.tls) {
    throw ServerError(options.flag + ": a client CA needs HTTPS");
  }
}

std::string ListenerUrl(const Options& options, const BindAddress& address) {
  return std::string(options.tls ? "https" : "http") + "://" + address.host + ":" +
         std::to_string(address.port);
}

}  // namespace

std::shared_ptr<TlsContextCache> LoadTls(const Options& options) {
  CheckTlsOptions(options);
  if (!options.tls) return nullptr;
  auto tls = std::make_shared<TlsContextCache>(
      *options.tls, options.client_ca, options.flag,
      ListenerUrl(options, ParseBindAddress(options.bind_address)));
  tls->Load();
  return tls;
}

class HttpServer::Impl : public Dispatcher {
 public:
  Impl(Options options, Handlers handlers)
      : options_(std::move(options)),
        handlers_(std::move(handlers)),
        limits_(options_.limits),
        address_(ParseBindAddress(options_.bind_address)),
        url_(ListenerUrl(options_, address_)) {
    CheckTlsOptions(options_);
    tls_ = options_.loaded_tls;
    if (options_.tls && !tls_) {
      tls_ =
          std::make_shared<TlsContextCache>(*options_.tls, options_.client_ca, options_.flag, url_);
    }
    if (options_.filter) {
      auth_queue_ =
          std::make_unique<util::TaskQueue>(HttpServer::kAuthWorkers, HttpServer::kAuthQueue);
    }
  }

  void Start() {
    std::lock_guard lock(mu_);
    if (acceptor_ || stopped_) return;
    // A context loaded ahead of time (LoadTls) is not loaded again.
    if (tls_ && !options_.loaded_tls) tls_->Load();
    boost::system::error_code ec;
    std::string host_text = address_.host;
    if (host_text.front() == '[') host_text = host_text.substr(1, host_text.size() - 2);
    const auto host = net::ip::make_address(host_text, ec);
    if (ec) {
      throw ServerError(options_.flag + " " + options_.bind_address +
                        ": cannot listen: " + ec.message());
    }
    const tcp::endpoint endpoint(host, address_.port);
    tcp::acceptor acceptor(net::make_strand(ioc_));
    const auto step = [&](const char* what, auto&& op) {
      op();
      if (ec) {
        throw ServerError(options_.flag + " " + options_.bind_address + ": cannot listen: " + what +
                          ": " + ec.message());
      }
    };
    step("open", [&] { acceptor.open(endpoint.protocol(), ec); });
    step("reuse address", [&] { acceptor.set_option(net::socket_base::reuse_address(true), ec); });
    step("bind", [&] { acceptor.bind(endpoint, ec); });
    step("listen", [&] { acceptor.listen(net::socket_base::max_listen_connections, ec); });
    acceptor_.emplace(std::move(acceptor));
    Accept();
    work_.emplace(ioc_.get_executor());
    const size_t threads = FixServerThreads();
    for (size_t i = 0; i < threads; i++) threads_.emplace_back([this] { ioc_.run(); });
  }

  // Stops accepting and answering. Connections still open are closed when the server is destroyed.
  void Stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    ioc_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    if (acceptor_) {
      boost::system::error_code ignored;
      acceptor_->close(ignored);
    }
  }

  const std::string& url() const { return url_; }

  void Admit(const Incoming& request, const std::string& source,
             std::function<void(Admission)> done) override {
    const auth::Filter* filter = options_.filter.get();
    if (!filter) return done({});
    const auth::ClientCertificate* cert = request.certificate ? &*request.certificate : nullptr;
    if (filter->AlwaysAllowed(request.path)) {
      // Served to anyone; whether the reasons behind a failed check are told is the question.
      if (!IsHealthPath(request.path)) return done({});
      if (!cert && request.authorization.empty()) return done({std::nullopt, false});
      const auth::Filter::Verdict verdict =
          filter->ReviewCached(request.method, request.path, request.authorization, cert);
      if (verdict.decided) return done({std::nullopt, !verdict.rejection});
      // A probe is never refused over its credentials: without a review it is told less.
      const bool queued = limits_.TakeRequest(source) &&
                          Review(request, [done](const std::optional<auth::Rejection>& rejection) {
                            done({std::nullopt, !rejection});
                          });
      if (!queued) done({std::nullopt, false});
      return;
    }
    const auth::Filter::Verdict verdict =
        filter->ReviewCached(request.method, request.path, request.authorization, cert);
    if (verdict.decided && !verdict.rejection) return done({});
    if (!limits_.TakeRequest(source)) return done({TooManyRequests()});
    if (verdict.decided) return done({Refusal(*verdict.rejection)});
    const bool queued = Review(request, [done](std::optional<auth::Rejection> rejection) {
      if (rejection) return done({Refusal(*rejection)});
      done({});
    });
    if (!queued) done({TooManyRequests()});
  }

  Answer Serve(const Incoming& request, bool details) override {
    const bool read = request.method == "GET" || request.method == "HEAD";
    // "?verbose" counts without a value.
    const std::string query = "&" + request.query + "&";
    const bool verbose = query.find("&verbose&") != std::string::npos ||
                         query.find("&verbose=") != std::string::npos;
    const std::string& path = request.path;
    try {
      if (path.rfind("/debug/", 0) == 0 && handlers_.debug) return Debug(request);
      const bool known = (path == "/metrics" && handlers_.metrics) || IsHealthPath(path) ||
                         (path == "/configz" && handlers_.configz);
      if (!known) return Text(404, "404 page not found\n");
      if (!read) return Text(405, "method not allowed\n");
      if (path == "/metrics") {
        return {200, handlers_.metrics(), "text/plain; version=0.0.4; charset=utf-8"};
      }
      if (path == "/healthz" || path == "/livez") {
        return Health(handlers_.livez, path.substr(1), verbose, details);
      }
      if (path == "/readyz") return Health(handlers_.readyz, "readyz", verbose, details);
      return {200, handlers_.configz(), "application/json"};
    } catch (const std::exception& e) {
      return Text(500, std::string(e.what()) + "\n");
    }
  }

 private:
  void Accept();
  void Retry();
  // The client's address: the source Options::limits counts per.
  static std::string Source(const tcp::socket& socket);

  Answer Debug(const Incoming& request) {
    std::unique_lock busy(debug_mu_, std::try_to_lock);
    if (!busy.owns_lock()) {
      return Text(429, "another debug request is running; retry in a moment\n");
    }
    DebugRequest req;
    req.method = request.method;
    req.path = request.path;
    // Pairs without "=" carry nothing a debug handler reads.
    std::string_view rest = request.query;
    while (!rest.empty()) {
      const std::string_view pair = rest.substr(0, rest.find('&'));
      rest.remove_prefix(std::min(rest.size(), pair.size() + 1));
      const size_t equals = pair.find('=');
      if (equals == std::string_view::npos) continue;
      auto key = PercentDecode(pair.substr(0, equals));
      auto value = PercentDecode(pair.substr(equals + 1));
      if (!key || !value) return Text(400, "malformed query\n");
      req.query[*key] = *value;
    }
    if (req.method == "POST") {
      if (!request.has_content_length) {
        return Text(411, "a Content-Length header is required\n");
      }
      req.content_type = request.content_type;
      req.body = request.body;
    }
    DebugResponse response = handlers_.debug(req);
    return {static_cast<unsigned>(response.status), response.body, response.content_type};
  }

  // `details`: the caller may read each check's name and why it failed.
  static Answer Health(const std::vector<HealthCheck>& checks, const std::string& name,
                       bool verbose, bool details) {
    auto [ok, report] = RunChecks(checks);
    if (!details) report.clear();
    if (ok) {
      return {200, verbose && details ? report + name + " check passed\n" : "ok",
              "text/plain; charset=utf-8"};
    }
    return {500, report + name + " check failed\n", "text/plain; charset=utf-8"};
  }

  static Answer Refusal(const auth::Rejection& rejection) {
    return {static_cast<unsigned>(rejection.status), rejection.body, rejection.content_type};
  }

  // Runs the filter's review of `request` on an auth worker and hands `then` its answer; false
  // when the queue is full.
  bool Review(const Incoming& request, std::function<void(std::optional<auth::Rejection>)> then) {
    auto shared = std::make_shared<Incoming>(request);
    return auth_queue_->Post([this, shared, then = std::move(then)] {
      const Incoming& r = *shared;
      then(options_.filter->Review(r.method, r.path, r.authorization,
                                   r.certificate ? &*r.certificate : nullptr));
    });
  }

  const Options options_;
  const Handlers handlers_;
  // Before ioc_: the connections it holds free their places here when they close.
  SourceLimits limits_;
  const BindAddress address_;
  const std::string url_;
  // Set exactly when options_.tls is.
  std::shared_ptr<TlsContextCache> tls_;
  std::mutex mu_;  // Guards acceptor_, threads_ and stopped_ against Start and Stop.
  bool stopped_ = false;
  // Held for the length of a debug request.
  std::mutex debug_mu_;
  // Before the sockets: they must be closed while it still exists.
  net::io_context ioc_;
  std::optional<tcp::acceptor> acceptor_;
  // Keeps the threads running between connections whatever the acceptor is doing.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::optional<net::steady_timer> retry_;
  std::vector<std::thread> threads_;
  // Last: destroyed first, finishing the checks in flight while everything they use still exists.
  std::unique_ptr<util::TaskQueue> auth_queue_;
};

namespace {

// One connection: reads a request, answers it, and reads the next while the client keeps the
// connection alive. Every step runs on the connection's strand; an answer computed elsewhere (by
// an auth worker) is posted back to it.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  Session(Dispatcher* server, tcp::socket socket, std::shared_ptr<net::ssl::context> tls,
          std::string source, std::unique_ptr<SourceLimits::Slot> slot)
      : server_(server),
        source_(std::move(source)),
        slot_(std::move(slot)),
        tls_(std::move(tls)),
        stream_(MakeStream(std::move(socket), tls_.get())) {}

  void Run() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(kHandshakeTimeout);
      stream_.async_handshake(
          net::ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) return;
            self->certificate_ = VerifiedClientCertificate(self->stream_.native_handle());
            self->ReadHeader(kReadTimeout);
          });
    } else {
      ReadHeader(kReadTimeout);
    }
  }

 private:
  static Stream MakeStream(tcp::socket socket, net::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  void ReadHeader(std::chrono::seconds timeout) {
    head_ = false;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(kMaxDebugBodyBytes);
    beast::get_lowest_layer(stream_).expires_after(timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return Write(Text(431, "request header fields too large\n"));
    }
    // The parser checks a Content-Length against the body limit as soon as the header is read.
    if (ec == http::error::body_limit) return Refuse(TooLarge());
    if (ec) return;
    const auto& header = parser_->get();
    keep_alive_ = header.keep_alive();
    head_ = header.method() == http::verb::head;
    body_follows_ = !parser_->is_done();
    request_ = Incoming{};
    request_.method = std::string(header.method_string());
    const std::string_view target(header.target().data(), header.target().size());
    const size_t question = target.find('?');
    std::optional<std::string> path = PercentDecode(target.substr(0, question));
    if (!path || path->empty() || path->front() != '/') {
      return Reply(Text(400, "malformed path\n"));
    }
    request_.path = std::move(*path);
    if (question != std::string_view::npos) {
      request_.query = std::string(target.substr(question + 1));
    }
    request_.authorization = std::string(header[http::field::authorization]);
    request_.content_type = std::string(header[http::field::content_type]);
    request_.has_content_length = header.find(http::field::content_length) != header.end();
    request_.certificate = certificate_;
    // Nothing more is read until the filter has spoken.
    server_->Admit(request_, source_, [self = this->shared_from_this()](Admission admission) {
      net::post(self->stream_.get_executor(), [self, admission = std::move(admission)]() mutable {
        self->OnAdmission(std::move(admission));
      });
    });
  }

  void OnAdmission(Admission admission) {
    if (admission.refusal) return Reply(std::move(*admission.refusal));
    details_ = admission.details;
    if (!body_follows_) return Write(server_->Serve(request_, details_));
    if (parser_->get()[http::field::expect] == "100-continue") {
      continue_ = std::make_unique<http::response<http::empty_body>>(http::status::continue_, 11);
      beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
      http::async_write(stream_, *continue_,
                        [self = this->shared_from_this()](beast::error_code ec, size_t) {
                          if (!ec) self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    beast::get_lowest_layer(stream_).expires_after(kReadTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec == http::error::body_limit) return self->Refuse(TooLarge());
                       if (ec) return;
                       self->request_.body = std::move(self->parser_->get().body());
                       self->Write(self->server_->Serve(self->request_, self->details_));
                     });
  }

  // An answer given before any body is read: when one follows, it is left unread.
  void Reply(Answer answer) {
    if (body_follows_) return Refuse(std::move(answer));
    Write(std::move(answer));
  }

  void Write(Answer answer) {
    response_.emplace(static_cast<http::status>(answer.status), 11);
    response_->set(http::field::content_type, answer.content_type);
    // Go's net/http sets it on every answer; a browser must not sniff a body as HTML.
    response_->set("X-Content-Type-Options", "nosniff");
    if (answer.retry_after) response_->set(http::field::retry_after, "1");
    response_->keep_alive(keep_alive_);
    if (head_) {
      response_->content_length(answer.body.size());
    } else {
      response_->body() = std::move(answer.body);
      response_->prepare_payload();
    }
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    http::async_write(stream_, *response_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        // end_of_stream: written, and the answer said the connection closes.
                        if (ec && ec != http::error::end_of_stream) return;
                        if (self->drain_) return self->Drain(0);
                        if (!self->keep_alive_) return self->Close();
                        self->ReadHeader(kIdleTimeout);
                      });
  }

  // Answers before the body is read, then discards what the client still sends so it reads the
  // answer rather than a reset connection.
  void Refuse(Answer answer) {
    keep_alive_ = false;
    drain_ = true;
    Write(std::move(answer));
  }

  void Drain(size_t drained) {
    if (drained == 0) beast::get_lowest_layer(stream_).expires_after(kDrainTimeout);
    if (drained >= kDrainBytes) return Close();
    // What the parser buffered is part of the discarded body too.
    buffer_.consume(buffer_.size());
    stream_.async_read_some(net::buffer(scratch_), [self = this->shared_from_this(), drained](
                                                       beast::error_code ec, size_t n) {
      if (ec) return self->Close();
      self->Drain(drained + n);
    });
  }

  void Close() {
    beast::error_code ignored;
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(kHandshakeTimeout);
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  Dispatcher* const server_;
  const std::string source_;  // The client's address.
  const std::unique_ptr<SourceLimits::Slot> slot_;
  std::shared_ptr<net::ssl::context> tls_;  // Outlives stream_, which uses it.
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<http::response<http::empty_body>> continue_;
  std::optional<http::response<http::string_body>> response_;
  std::optional<auth::ClientCertificate> certificate_;
  Incoming request_;  // The request being read or answered.
  std::array<char, 64 * 1024> scratch_{};
  bool keep_alive_ = false;
  bool head_ = false;
  bool drain_ = false;
  bool body_follows_ = false;  // The request announced a body not yet read.
  bool details_ = true;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor_->async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      log::Warn("accepting a connection failed", {{"address", url_}, {"error", ec.message()}});
      return Retry();
    }
    std::string source = Source(socket);
    std::unique_ptr<SourceLimits::Slot> slot = limits_.Open(source);
    if (!slot) {
      // Closed unanswered and unread: an answer would cost a handshake, which is what a flood of
      // connections is after.
      log::Verbose(4, "over the connection limit; connection closed",
                   {{"address", url_}, {"source", source}});
      beast::error_code ignored;
      socket.close(ignored);
    } else if (!options_.tls) {
      std::make_shared<Session<beast::tcp_stream>>(this, std::move(socket), nullptr,
                                                   std::move(source), std::move(slot))
          ->Run();
    } else {
      try {
        std::make_shared<Session<TlsStream>>(this, std::move(socket), tls_->Current(),
                                             std::move(source), std::move(slot))
            ->Run();
      } catch (const std::exception& e) {
        log::Warn("no serving certificate; connection closed",
                  {{"address", url_}, {"error", e.what()}});
      }
    }
    Accept();
  });
}

std::string HttpServer::Impl::Source(const tcp::socket& socket) {
  beast::error_code ec;
  net::ip::address address = socket.remote_endpoint(ec).address();
  if (ec) return "";
  // An IPv4 client of a dual-stack listener is the same source as over IPv4.
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6());
  }
  return address.to_string();
}

void HttpServer::Impl::Retry() {
  retry_.emplace(acceptor_->get_executor(), kAcceptRetry);
  retry_->async_wait([this](beast::error_code ec) {
    if (!ec) Accept();
  });
}

HttpServer::HttpServer(Options options, Handlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}
HttpServer::~HttpServer() { impl_->Stop(); }
void HttpServer::Start() { impl_->Start(); }
void HttpServer::Stop() { impl_->Stop(); }
std::string HttpServer::url() const { return impl_->url(); }

}  // namespace berth::server
