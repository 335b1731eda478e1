#include "pkg/client/webhook.h"

#include <cstdlib>
#include <utility>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/proxy.h"
#include "pkg/util/url.h"

namespace berth::client {
namespace {

using Clock = std::chrono::steady_clock;

// The connection and TLS handshake get at most this much of a call's timeout, as the apiserver
// client's do: a service that does not even accept the connection is down, and the scheduling
// cycle waiting on it learns so sooner.
constexpr std::chrono::milliseconds kConnectTimeout{3000};

}  // namespace

Webhook::Call::Call(std::shared_ptr<internal::Transport> transport,
                    std::shared_ptr<internal::Transfer> call, std::string url,
                    Clock::time_point deadline, size_t max_bytes)
    : transport_(std::move(transport)),
      transfer_(std::move(call)),
      url_(std::move(url)),
      authority_(transport_->endpoint().authority),
      deadline_(deadline),
      max_bytes_(max_bytes) {}

Webhook::Call::Call(Call&&) noexcept = default;
Webhook::Call& Webhook::Call::operator=(Call&&) noexcept = default;

Webhook::Call::~Call() {
  if (transfer_) transfer_->Cancel();
}

// The failure in the words Go's HTTP client uses for the common cases (kube-scheduler's
// extender errors read so, and operators match on them), else pkg/client's own.
std::string Webhook::Call::Describe(const internal::TransportError& e, bool head_arrived) const {
  const std::string post = "Post \"" + url_ + "\": ";
  const std::string_view message = e.what();
  if (e.reason() == ErrorReason::kTimeout) {
    return post + (head_arrived ? "context deadline exceeded (Client.Timeout or context "
                                  "cancellation while reading body)"
                                : "context deadline exceeded (Client.Timeout exceeded while "
                                  "awaiting headers)");
  }
  if (message.find("closed the connection before responding") != std::string_view::npos) {
    return post + "EOF";
  }
  if (message.starts_with("cannot connect to") &&
      (message.find("Connection refused") != std::string_view::npos ||
       message.find("Couldn't connect to server") != std::string_view::npos)) {
    return post + "dial tcp " + authority_ + ": connect: connection refused";
  }
  return post + std::string(message);
}

WebhookResponse Webhook::Call::Wait() {
  if (!transfer_) throw WebhookError("Post \"" + url_ + "\": already waited on", false);
  const std::shared_ptr<internal::Transfer> transfer = std::move(transfer_);
  WebhookResponse response;
  bool head_arrived = false;
  auto too_long = [&] {
    return WebhookError("Post \"" + url_ + "\": the response is longer than " +
                            std::to_string(max_bytes_) + " bytes",
                        false);
  };
  try {
    response.status = transfer->WaitHead(deadline_).status;
    head_arrived = true;
    while (transfer->ReadSome(&response.body, deadline_)) {
      if (response.body.size() > max_bytes_) {
        transfer->Cancel();
        throw too_long();
      }
    }
  } catch (const internal::TransportError& e) {
    transfer->Cancel();
    throw WebhookError(Describe(e, head_arrived), e.reason() == ErrorReason::kTimeout);
  }
  if (response.body.size() > max_bytes_) throw too_long();
  return response;
}

Webhook::Webhook(const WebhookConfig& config)
    : url_prefix_(config.url_prefix),
      timeout_(config.timeout),
      max_response_bytes_(config.max_response_bytes) {
  const util::UrlResult parsed = util::ParseUrl(config.url_prefix);
  if (!parsed) {
    throw ConfigError("\"" + util::RedactUrl(config.url_prefix) +
                      "\" is not a URL: " + parsed.error);
  }
  const util::Url& url = *parsed.url;
  if (url.scheme != "http" && url.scheme != "https") {
    throw ConfigError("\"" + util::RedactUrl(config.url_prefix) +
                      "\" is not an http:// or https:// URL");
  }
  if (url.has_user || url.has_query || url.has_fragment) {
    throw ConfigError("\"" + util::RedactUrl(config.url_prefix) +
                      "\" must be scheme://host[:port][/path] without user info, query or "
                      "fragment");
  }
  if (timeout_.count() <= 0) throw ConfigError("the timeout must be positive");
  path_prefix_ = url.path;
  while (!path_prefix_.empty() && path_prefix_.back() == '/') path_prefix_.pop_back();

  Config origin;
  origin.server = url.Origin();
  origin.tls_server_name = config.tls.server_name;
  internal::Endpoint endpoint = internal::ParseEndpoint(origin);
  internal::TransportOptions options;
  options.ca_pem = config.tls.ca_pem;
  options.verify = !config.tls.insecure;
  options.user_agent = std::string("berth-scheduler/") + BerthVersion();
  options.proxy = internal::ProxyFor(endpoint, "", [](const char* name) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read at start.
    return std::string(value ? value : "");
  });
  if (config.tls.cert_pem.empty() != config.tls.key_pem.empty()) {
    throw ConfigError("a client certificate needs its key, and a key its certificate");
  }
  if (!config.tls.cert_pem.empty()) {
    auto credentials = std::make_shared<internal::Credentials>();
    credentials->cert_pem = config.tls.cert_pem;
    credentials->key_pem = config.tls.key_pem;
    credentials_ = std::move(credentials);
  }
  internal::IgnoreSigpipeOnce();
  transport_ = internal::Transport::Create(std::move(endpoint), std::move(options));
}

Webhook::~Webhook() = default;

std::string Webhook::UrlFor(std::string_view verb) const {
  std::string prefix = url_prefix_;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix + "/" + std::string(verb);
}

Webhook::Call Webhook::Start(std::string_view verb, std::string body) const {
  internal::Request request;
  request.method = "POST";
  request.target = path_prefix_ + "/" + std::string(verb);
  request.accept = "application/json";
  request.has_body = true;
  request.body = std::move(body);
  request.content_type = "application/json";
  request.replayable = false;
  request.credentials = credentials_;
  request.timeout = timeout_;
  request.connect_timeout = std::min(timeout_, kConnectTimeout);
  // Streamed, so that the body is capped at max_response_bytes_ as it arrives rather than
  // collected whole up to the apiserver client's far larger bound.
  request.stream = true;
  const Clock::time_point deadline = Clock::now() + timeout_;
  try {
    return Call(transport_, transport_->Start(std::move(request)), UrlFor(verb), deadline,
                max_response_bytes_);
  } catch (const internal::TransportError& e) {
    throw WebhookError("Post \"" + UrlFor(verb) + "\": " + e.what(), false);
  }
}

WebhookResponse Webhook::Post(std::string_view verb, std::string body) const {
  return Start(verb, std::move(body)).Wait();
}

}  // namespace berth::client
