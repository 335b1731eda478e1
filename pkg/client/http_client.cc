// The Client: REST verbs and watches over pkg/client/curl_transport.h. Each call blocks its
// caller's thread on its own transfer while the transport's I/O thread moves the bytes.

#include "pkg/client/http_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "pkg/api/errors.h"
#include "pkg/api/list_parser.h"
#include "pkg/api/protobuf.h"
#include "pkg/client/client.h"
#include "pkg/client/credentials.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/proxy.h"
#include "pkg/client/rate_limiter.h"

namespace berth::client {
namespace {

using internal::Deadline;

constexpr std::chrono::seconds kWatchTimeoutSlack{30};
constexpr std::chrono::seconds kUnboundedWatchInactivity{600};
// libcurl enforces a request's timeout itself; a caller waits this much longer before giving up
// on a transfer libcurl has not ended.
constexpr std::chrono::seconds kWaitSlack{2};
constexpr std::string_view kAcceptJson = "application/json";

std::string_view AcceptFor(bool prefer_protobuf) {
  return prefer_protobuf ? api::kAcceptProtobufOrJson : kAcceptJson;
}

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

std::optional<std::chrono::seconds> RetryAfterOf(const internal::ResponseHead& head) {
  if (head.retry_after.empty()) return std::nullopt;
  return internal::ParseRetryAfter(head.retry_after, std::chrono::system_clock::now());
}

// The ApiError of a non-2xx response. The apiserver writes its Status in the encoding the request
// accepted, so a list or watch that prefers protobuf gets a protobuf Status back.
ApiError ErrorFromReply(int status, const internal::ResponseHead& head, const std::string& body) {
  const auto retry_after = RetryAfterOf(head);
  if (!api::IsProtobufMediaType(head.content_type)) {
    return ErrorFromResponse(status, body, retry_after);
  }
  std::string as_json;
  try {
    as_json = api::DecodeProtobufObject(body).dump();
  } catch (const api::DecodeError&) {
    // Not a Status Berth can read: the HTTP status alone says what happened.
  }
  return ErrorFromResponse(status, as_json, retry_after);
}

// A successful response.
struct Reply {
  int status;
  std::string body;
  std::string content_type;
};

nlohmann::json ParseJsonBody(const Reply& reply, const std::string& what) {
  nlohmann::json parsed = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    throw ApiError(ErrorReason::kUnknown, reply.status,
                   "cannot decode the JSON response of " + what);
  }
  return parsed;
}

// Request targets come from Resource::Path and the query builders; a byte that would break the
// request line is a caller bug, reported instead of sent.
void CheckTarget(const std::string& target) {
  const bool bad = target.empty() || target.front() != '/' ||
                   std::any_of(target.begin(), target.end(), [](char c) {
                     return static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
                   });
  if (bad) throw ApiError(ErrorReason::kBadRequest, 0, "invalid request URI " + target);
}

bool IsSuccess(int status) { return status >= 200 && status < 300; }

// Cancels a transfer when the scope that waits for it is left early (an exception, a consumer
// that gave up); a no-op once the transfer completed. A transfer nobody reads would otherwise
// stay paused in the I/O thread.
class CancelOnExit {
 public:
  explicit CancelOnExit(std::shared_ptr<internal::Transfer> transfer)
      : transfer_(std::move(transfer)) {}
  ~CancelOnExit() {
    if (transfer_) transfer_->Cancel();
  }
  CancelOnExit(const CancelOnExit&) = delete;
  CancelOnExit& operator=(const CancelOnExit&) = delete;
  internal::Transfer& operator*() const { return *transfer_; }
  internal::Transfer* operator->() const { return transfer_.get(); }
  std::shared_ptr<internal::Transfer> Release() { return std::move(transfer_); }

 private:
  std::shared_ptr<internal::Transfer> transfer_;
};

class HttpWatchStream final : public WatchStream {
 public:
  HttpWatchStream(std::shared_ptr<internal::Transport> transport,
                  std::shared_ptr<internal::Transfer> transfer, bool protobuf, bool undecoded_pods)
      : transport_(std::move(transport)),
        transfer_(std::move(transfer)),
        decoder_(protobuf, undecoded_pods) {}

  ~HttpWatchStream() override { Stop(); }

  bool Next(WatchEvent* event) override {
    while (!stopped_.load()) {
      if (decoder_.Next(event)) return true;
      if (eof_) return decoder_.Finish(event);
      if (!Fill()) return false;
    }
    return false;
  }

  // Cancelling the transfer wakes a Next() blocked on it at once.
  void Stop() override {
    stopped_.store(true);
    transfer_->Cancel();
  }

 private:
  // Appends the next bytes of the body to decoder_, blocking until at least one arrives.
  // Sets eof_ at the end of the stream; false when the stream was stopped meanwhile.
  bool Fill() {
    chunk_.clear();
    bool more = false;
    try {
      // No deadline: libcurl ends a stream silent for longer than its inactivity limit.
      more = transfer_->ReadSome(&chunk_, Deadline::max());
    } catch (const internal::TransportError& e) {
      if (stopped_.load()) return false;
      throw ApiError(e.reason(), 0, std::string("watch stream: ") + e.what());
    }
    if (stopped_.load()) return false;
    if (more) {
      decoder_.Append(chunk_);
    } else {
      eof_ = true;
    }
    return true;
  }

  // Declared before transfer_: a Transfer's holder must hold its Transport, so it goes last.
  const std::shared_ptr<internal::Transport> transport_;
  const std::shared_ptr<internal::Transfer> transfer_;
  std::atomic<bool> stopped_{false};
  // Touched only by the thread calling Next().
  std::string chunk_;
  internal::WatchEventDecoder decoder_;
  bool eof_ = false;
};

// The Client over the libcurl transport: one multiplexed connection (HTTP/2) or a keep-alive
// pool (HTTP/1.1) for every request and watch.
// What a PostRawAsync try ended with, judged as WithRetries judges a try of PostRaw.
AsyncReply ToAsyncReply(internal::Outcome outcome) {
  AsyncReply reply;
  const int status = outcome.head.status;
  // As in Execute: once the head arrived, a non-2xx status is the answer even if its body was
  // cut short.
  if (outcome.has_head && (!outcome.error || !IsSuccess(status))) {
    if (IsSuccess(status)) {
      reply.body = std::move(outcome.body);
      return reply;
    }
    reply.error = ErrorFromReply(status, outcome.head, outcome.body);
    // A 401 may be answered with fresh credentials, which PostRaw fetches.
    reply.retry_may_help = status == 401 || internal::ShouldRetry(*reply.error, false, false);
    return reply;
  }
  if (!outcome.error) {
    // libcurl reported success without a final response head; nothing says the POST applied.
    reply.error = ApiError(ErrorReason::kTransport, 0, "the request ended without a response");
    return reply;
  }
  const internal::TransportError& e = *outcome.error;
  reply.error = ApiError(e.reason(), 0, e.what());
  reply.retry_may_help = internal::ShouldRetry(*reply.error, false, e.request_not_sent());
  return reply;
}

class HttpClient final : public Client {
 public:
  HttpClient(Config config, std::shared_ptr<internal::Transport> transport)
      : config_(std::move(config)),
        limiter_(config_.qps, config_.burst),
        credentials_(config_),
        transport_(std::move(transport)) {}

  nlohmann::json Get(const std::string& path) override {
    return ParseJsonBody(Execute("GET", "GET", path, nullptr, nullptr, true), "GET " + path);
  }

  ListPage ListPageRaw(const std::string& path, const ListOptions& options,
                       const std::string& continue_token) override {
    const std::string uri = JoinQuery(path, internal::ListQuery(options, continue_token));
    Reply reply = Execute("LIST", "GET", uri, nullptr, nullptr, true, nullptr,
                          AcceptFor(options.prefer_protobuf));
    return ListPage{std::move(reply.body), std::move(reply.content_type)};
  }

  void ListPageStream(const std::string& path, const ListOptions& options,
                      const std::string& continue_token,
                      const std::function<void(std::string_view)>& on_bytes,
                      std::string* content_type) override {
    const std::string uri = JoinQuery(path, internal::ListQuery(options, continue_token));
    Execute("LIST", "GET", uri, nullptr, nullptr, true, &on_bytes,
            AcceptFor(options.prefer_protobuf), content_type);
  }

  nlohmann::json Post(const std::string& path, const nlohmann::json& body) override {
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("POST", "POST", path, &encoded, "application/json", false),
                         "POST " + path);
  }

  std::string PostRaw(const std::string& path, const std::string& body) override {
    return Execute("POST", "POST", path, &body, "application/json", false).body;
  }

  bool PostRawAsync(const std::string& path, std::string body, AsyncReplyHandler done) override {
    CheckTarget(path);
    // Whatever would make PostRaw wait (a token, an exec plugin) is left to PostRaw.
    if (config_.timeout.count() <= 0) return false;
    std::shared_ptr<const internal::Credentials> credentials;
    try {
      credentials = credentials_.TryGet();
    } catch (const ApiError&) {
      return false;  // PostRaw reports it.
    }
    if (credentials == nullptr || !limiter_.TryAccept()) return false;
    internal::Request request =
        NewRequest("POST", path, nullptr, nullptr, false, kAcceptJson, std::move(credentials));
    request.has_body = true;
    request.body = std::move(body);
    request.content_type = "application/json";
    std::shared_ptr<const RequestObserver> observer;
    {
      std::lock_guard<std::mutex> lock(observer_mu_);
      observer = observer_;
    }
    // The completion may outlive this client (the transport ends in-flight requests when the
    // last of its holders goes), so it captures what it needs, never `this`.
    transport_->StartAsync(std::move(request), [start = std::chrono::steady_clock::now(),
                                                observer = std::move(observer),
                                                done = std::move(done)](internal::Outcome outcome) {
      const int status = outcome.has_head ? outcome.head.status : 0;
      if (observer) (*observer)("POST", status, std::chrono::steady_clock::now() - start);
      done(ToAsyncReply(std::move(outcome)));
    });
    return true;
  }

  nlohmann::json Patch(const std::string& path, const nlohmann::json& body,
                       PatchType type) override {
    const char* content_type = "application/merge-patch+json";
    if (type == PatchType::kStrategicMerge) content_type = "application/strategic-merge-patch+json";
    if (type == PatchType::kJson) content_type = "application/json-patch+json";
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("PATCH", "PATCH", path, &encoded, content_type, false),
                         "PATCH " + path);
  }

  nlohmann::json Put(const std::string& path, const nlohmann::json& body) override {
    const std::string encoded = body.dump();
    return ParseJsonBody(Execute("PUT", "PUT", path, &encoded, "application/json", true),
                         "PUT " + path);
  }

  void Delete(const std::string& path, const DeleteOptions& options) override {
    if (options.precondition_uid.empty()) {
      Execute("DELETE", "DELETE", path, nullptr, nullptr, true);
      return;
    }
    const std::string body = nlohmann::json{{"kind", "DeleteOptions"},
                                            {"apiVersion", "v1"},
                                            {"preconditions", {{"uid", options.precondition_uid}}}}
                                 .dump();
    Execute("DELETE", "DELETE", path, &body, "application/json", true);
  }

  std::unique_ptr<WatchStream> Watch(const std::string& path,
                                     const WatchOptions& options) override {
    const std::string uri = JoinQuery(path, internal::WatchQuery(options));
    CheckTarget(uri);
    // Silence longer than the server-side timeout plus slack means the stream is dead; a quiet
    // watch (bookmarks only) is ended by the apiserver, not by us.
    const std::chrono::seconds inactivity =
        options.timeout_seconds > 0
            ? std::chrono::seconds(options.timeout_seconds) + kWatchTimeoutSlack
            : kUnboundedWatchInactivity;
    return WithRetries<std::unique_ptr<WatchStream>>(
        "WATCH", path, true,
        [&](AttemptContext& attempt,
            std::optional<ApiError>* error) -> std::optional<std::unique_ptr<WatchStream>> {
          internal::Request request =
              NewRequest("GET", uri, nullptr, nullptr, true, AcceptFor(options.prefer_protobuf),
                         attempt.credentials);
          request.stream = true;
          request.quiet = !options.busy;
          // The stream lasts as long as the server keeps it open; only silence ends it early.
          request.timeout = std::chrono::milliseconds(0);
          request.inactivity = inactivity;
          CancelOnExit transfer(transport_->Start(std::move(request)));
          const internal::ResponseHead head = transfer->WaitHead(attempt.deadline);
          attempt.status = head.status;
          if (head.status == 200) {
            return std::make_unique<HttpWatchStream>(transport_, transfer.Release(),
                                                     api::IsProtobufMediaType(head.content_type),
                                                     options.undecoded_protobuf_pods);
          }
          std::string body;
          transfer->ReadRest(&body, attempt.deadline);
          *error = ErrorFromReply(head.status, head, body);
          return std::nullopt;
        });
  }

  const Config& config() const override { return config_; }

  void SetRequestObserver(RequestObserver observer) override {
    auto shared = observer ? std::make_shared<const RequestObserver>(std::move(observer)) : nullptr;
    std::lock_guard<std::mutex> lock(observer_mu_);
    observer_ = std::move(shared);
  }

  internal::TransportStats Stats() const { return transport_->Stats(); }

 private:
  internal::Request NewRequest(const char* method, const std::string& uri, const std::string* body,
                               const char* content_type, bool idempotent, std::string_view accept,
                               std::shared_ptr<const internal::Credentials> credentials) const {
    internal::Request request;
    request.method = method;
    request.target = uri;
    request.accept = std::string(accept);
    if (body != nullptr) {
      request.has_body = true;
      request.body = *body;
      request.content_type = content_type;
    }
    request.replayable = idempotent;
    request.credentials = std::move(credentials);
    request.timeout = config_.timeout;
    request.connect_timeout = config_.timeout;
    return request;
  }

  // Runs one request with retries; returns the 2xx response or throws ApiError. With `on_body`,
  // a 2xx body is handed to it as it arrives instead of returned, after its Content-Type was
  // stored in `response_type` (when given); once any of it was, a failure is not retried. A 401
  // answered to an exec plugin's credential runs the plugin again and repeats the request once.
  Reply Execute(const char* verb, const char* method, const std::string& uri,
                const std::string* body, const char* content_type, bool idempotent,
                const std::function<void(std::string_view)>* on_body = nullptr,
                std::string_view accept = kAcceptJson, std::string* response_type = nullptr) {
    CheckTarget(uri);
    // Once any of a body was handed on, a failure is not retried.
    bool delivered = false;
    return WithRetries<Reply>(
        verb, uri, idempotent,
        [&](AttemptContext& attempt, std::optional<ApiError>* error) -> std::optional<Reply> {
          internal::Request request =
              NewRequest(method, uri, body, content_type, idempotent, accept, attempt.credentials);
          request.stream = on_body != nullptr;
          CancelOnExit transfer(transport_->Start(std::move(request)));
          const internal::ResponseHead head = transfer->WaitHead(attempt.deadline);
          attempt.status = head.status;
          std::string text;
          if (on_body != nullptr && IsSuccess(head.status)) {
            if (response_type != nullptr) *response_type = head.content_type;
            while (transfer->ReadSome(&text, attempt.deadline)) {
              delivered = true;
              (*on_body)(text);
              text.clear();
            }
          } else if (IsSuccess(head.status)) {
            transfer->ReadRest(&text, attempt.deadline);
          } else {
            // The status is the server's answer and the body only details it. Go's HTTP/2 server
            // resets the stream of a request whose body it never read (one authentication turned
            // away, say), and libcurl may report that as a body cut short: the answer stands.
            try {
              transfer->ReadRest(&text, attempt.deadline);
            } catch (const internal::TransportError& e) {
              spdlog::debug("client: {} {}: the body of the {} answer was cut short ({})", verb,
                            uri, head.status, e.what());
            }
          }
          if (IsSuccess(head.status)) return Reply{head.status, std::move(text), head.content_type};
          *error = ErrorFromReply(head.status, head, text);
          return std::nullopt;
        },
        &delivered);
  }

  // One try of a request: when it started, its deadline, the credentials it carries, and the
  // status of the answer once its head arrived (0 until then).
  struct AttemptContext {
    std::chrono::steady_clock::time_point start;
    Deadline deadline;
    std::shared_ptr<const internal::Credentials> credentials;
    int status = 0;
  };

  // The retry loop of every request and watch: the rate limiter before each try; a 401 answered
  // to an exec plugin's credential runs the plugin again and repeats the request once (the server
  // rejected the credential before acting, so that is safe); other failures are retried as
  // MaybeBackoff allows. `attempt(context, &error)` returns the result, or nullopt with `error`
  // set to the server's answer; a TransportError it throws fails the try, and ends the loop when
  // `*no_retry` has become true. Credentials are fetched per try: a token file may have rotated,
  // or an exec credential expired.
  template <typename Result, typename Attempt>
  Result WithRetries(const char* verb, const std::string& uri, bool idempotent, Attempt&& attempt,
                     const bool* no_retry = nullptr) {
    bool reauthenticated = false;
    for (int n = 1;; ++n) {
      limiter_.Accept();
      AttemptContext context;
      context.start = std::chrono::steady_clock::now();
      context.deadline = context.start + config_.timeout + kWaitSlack;
      context.credentials = credentials_.Get();
      bool not_sent = false;
      std::optional<ApiError> error;
      try {
        std::optional<Result> result = attempt(context, &error);
        Observe(verb, context.status, context.start);
        if (result) return std::move(*result);
        if (context.status == 401 && !reauthenticated &&
            credentials_.RefreshAfterUnauthorized(context.credentials)) {
          reauthenticated = true;
          continue;
        }
      } catch (const internal::TransportError& e) {
        Observe(verb, context.status, context.start);
        not_sent = e.request_not_sent();
        error = ApiError(e.reason(), 0, e.what());
        if (no_retry != nullptr && *no_retry) throw *error;
      }
      MaybeBackoff(verb, uri, n, *error, idempotent, not_sent);
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
  RateLimiter limiter_;
  internal::CredentialSource credentials_;
  const std::shared_ptr<internal::Transport> transport_;
  std::mutex observer_mu_;
  std::shared_ptr<const RequestObserver> observer_;  // Guarded by observer_mu_.
};

}  // namespace

namespace internal {

void StreamBuffer::Append(std::string_view data) {
  // Compact once the consumed prefix dominates, keeping Append amortised O(size of data).
  if (start_ > 0 && start_ * 2 >= buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(data);
}

bool LineSplitter::NextLine(std::string* line) {
  const size_t newline = buffer_.find('\n', start_);
  if (newline == std::string::npos) {
    if (buffer_.size() - start_ > kMaxWatchLineBytes) {
      throw ApiError(ErrorReason::kUnknown, 0,
                     "watch: a line of more than " + std::to_string(kMaxWatchLineBytes >> 20) +
                         " MiB; the stream is corrupt");
    }
    return false;
  }
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

bool FrameSplitter::NextFrame(std::string* frame) {
  constexpr size_t kLengthBytes = 4;
  if (buffer_.size() - start_ < kLengthBytes) return false;
  size_t length = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) {
    length = (length << 8) | static_cast<unsigned char>(buffer_[start_ + i]);
  }
  if (length > kMaxWatchFrameBytes) {
    throw ApiError(ErrorReason::kUnknown, 0,
                   "watch: a frame of " + std::to_string(length) + " bytes; the stream is corrupt");
  }
  if (buffer_.size() - start_ - kLengthBytes < length) return false;
  frame->assign(buffer_, start_ + kLengthBytes, length);
  start_ += kLengthBytes + length;
  return true;
}

namespace {

// The event a parsed watch record describes; throws ApiError when it is not one.
WatchEvent ToWatchEvent(api::ParsedWatchEvent parsed) {
  if (parsed.type.empty() || !parsed.has_object) {
    throw ApiError(ErrorReason::kUnknown, 0, "watch: event lacks a string type or an object");
  }
  WatchEvent event;
  const std::string& name = parsed.type;
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
  event.object = std::move(parsed.object);
  event.protobuf_pod = std::move(parsed.protobuf_pod);
  return event;
}

}  // namespace

WatchEvent DecodeWatchEvent(std::string_view line) {
  try {
    return ToWatchEvent(api::ParseWatchEvent(line));
  } catch (const api::DecodeError& e) {
    throw ApiError(ErrorReason::kUnknown, 0, std::string("watch: ") + e.what());
  }
}

WatchEvent DecodeProtobufWatchEvent(std::string_view frame, bool undecoded_pods) {
  try {
    return ToWatchEvent(api::ParseProtobufWatchEvent(frame, undecoded_pods));
  } catch (const api::DecodeError& e) {
    throw ApiError(ErrorReason::kUnknown, 0, std::string("watch: ") + e.what());
  }
}

void WatchEventDecoder::Append(std::string_view bytes) {
  if (protobuf_) {
    frames_.Append(bytes);
  } else {
    lines_.Append(bytes);
  }
}

bool WatchEventDecoder::Next(WatchEvent* event) {
  if (protobuf_) {
    if (!frames_.NextFrame(&record_)) return false;
    *event = DecodeProtobufWatchEvent(record_, undecoded_pods_);
    return true;
  }
  while (lines_.NextLine(&record_)) {
    if (TrimView(record_).empty()) continue;
    *event = DecodeWatchEvent(record_);
    return true;
  }
  return false;
}

bool WatchEventDecoder::Finish(WatchEvent* event) {
  if (protobuf_) {
    if (frames_.HasPending()) {
      throw ApiError(ErrorReason::kUnknown, 0, "watch: the stream ends inside a frame");
    }
    return false;
  }
  // A last record the server did not terminate with a newline still counts.
  record_ = std::string(TrimView(lines_.Pending()));
  lines_ = LineSplitter();
  if (record_.empty()) return false;
  *event = DecodeWatchEvent(record_);
  return true;
}

TransportStats StatsOf(const Client& client) {
  const auto* http = dynamic_cast<const HttpClient*>(&client);
  return http != nullptr ? http->Stats() : TransportStats{};
}

}  // namespace internal

std::shared_ptr<Client> NewClient(Config config) {
  // Each of these throws ConfigError now, with a clear message, rather than on every request.
  internal::Endpoint endpoint = internal::ParseEndpoint(config);
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    throw ConfigError("client: a client certificate needs its key and vice versa");
  }
  if (config.client_cert_file.empty() != config.client_key_file.empty()) {
    throw ConfigError("client: a client certificate file needs its key file and vice versa");
  }
  if (config.exec && (!config.bearer_token.empty() || !config.bearer_token_file.empty() ||
                      !config.client_cert_pem.empty())) {
    throw ConfigError("client: " + config.exec->origin +
                      ": an exec credential plugin cannot be combined with a token, a token "
                      "file or a client certificate");
  }
  if (!config.ca_pem.empty()) {
    if (const std::string problem = internal::CertificatesProblem(config.ca_pem);
        !problem.empty()) {
      throw ConfigError("client: unusable CA bundle: " + problem);
    }
  }
  if (!config.client_cert_pem.empty()) {
    if (const std::string problem =
            internal::KeyPairProblem(config.client_cert_pem, config.client_key_pem);
        !problem.empty()) {
      throw ConfigError("client: unusable client certificate or key: " + problem);
    }
  }
  if (config.user_agent.empty()) {
    config.user_agent = std::string("berth-scheduler/") + BerthVersion();
  }
  internal::TransportOptions options;
  options.ca_pem = config.ca_pem;
  options.verify = !config.insecure_skip_tls_verify;
  options.proxy = internal::ProxyFor(endpoint, config.proxy_url, [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  });
  options.user_agent = config.user_agent;
  internal::IgnoreSigpipeOnce();
  if (!options.proxy.empty()) {
    spdlog::info("client: reaching {} through the proxy {}", endpoint.url,
                 internal::RedactProxyUrl(options.proxy));
  }
  auto transport = internal::Transport::Create(std::move(endpoint), std::move(options));
  auto client = std::make_shared<HttpClient>(std::move(config), std::move(transport));
  spdlog::debug("client: {}", client->config().Describe());
  return client;
}

}  // namespace berth::client
