#ifndef BERTH_PKG_CLIENT_WEBHOOK_H_
#define BERTH_PKG_CLIENT_WEBHOOK_H_

// A service outside the apiserver that the scheduler POSTs JSON to and waits on: kube-scheduler's
// extenders (pkg/extender) and out-of-process plugins (pkg/plugins/outofprocess). Each Webhook
// owns one libcurl transport (pkg/client's, so HTTP/2 where the server offers it over TLS, kept-
// alive connections otherwise), its TLS settings and its timeout; calls are started without
// blocking and waited on separately, so several services (or one service for several verbs) are
// asked at once. Thread-safe.

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace berth::client {

namespace internal {
class Transport;
class Transfer;
class TransportError;
struct Credentials;
}  // namespace internal

struct WebhookTls {
  // Skips verification of the server's certificate: only when the user says so.
  bool insecure = false;
  // The name checked against the certificate and sent as SNI; empty: the URL's host.
  std::string server_name;
  std::string ca_pem;  // Trusted roots; empty: the system store.
  // Client certificate and key for services that authenticate the scheduler; both or neither.
  std::string cert_pem;
  std::string key_pem;
};

struct WebhookConfig {
  // http(s)://host[:port][/path]; a call to verb V goes to <url_prefix without trailing '/'>/V.
  std::string url_prefix;
  WebhookTls tls;
  // The whole exchange, connection included.
  std::chrono::milliseconds timeout{5000};
  // A larger response is an error, not memory spent.
  size_t max_response_bytes = size_t{64} << 20;
};

// A call that did not produce a response: no connection, TLS failure, timeout, a response over
// max_response_bytes. The message names the URL as Go's HTTP client does ("Post \"<url>\": EOF",
// "Post \"<url>\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
// "Post \"<url>\": dial tcp <host:port>: connect: connection refused"), so that extender errors
// read as kube-scheduler's.
class WebhookError : public std::runtime_error {
 public:
  WebhookError(std::string message, bool timeout)
      : std::runtime_error(std::move(message)), timeout_(timeout) {}
  bool timeout() const { return timeout_; }

 private:
  bool timeout_;
};

struct WebhookResponse {
  int status = 0;
  std::string body;
};

class Webhook {
 public:
  // One POST in flight. Wait() is called at most once, by one thread.
  class Call {
   public:
    Call(Call&&) noexcept;
    Call& operator=(Call&&) noexcept;
    ~Call();  // Cancels a call not waited on.
    // Blocks until the response arrived (any status) or the timeout passed; throws WebhookError.
    WebhookResponse Wait();

   private:
    friend class Webhook;
    Call(std::shared_ptr<internal::Transport> transport, std::shared_ptr<internal::Transfer> call,
         std::string url, std::chrono::steady_clock::time_point deadline, size_t max_bytes);
    std::shared_ptr<internal::Transport> transport_;
    std::shared_ptr<internal::Transfer> transfer_;
    std::string Describe(const internal::TransportError& e, bool head_arrived) const;

    std::string url_;
    std::string authority_;  // host:port, for Go's "dial tcp" message.
    std::chrono::steady_clock::time_point deadline_;
    size_t max_bytes_ = 0;
  };

  // Throws ConfigError (pkg/client/client.h) for a URL that is not http(s)://host[:port][/path]
  // or TLS material libcurl refuses.
  explicit Webhook(const WebhookConfig& config);
  ~Webhook();
  Webhook(const Webhook&) = delete;
  Webhook& operator=(const Webhook&) = delete;

  // Starts POST <prefix>/<verb> with `body` as application/json. A POST is never sent twice: the
  // service may have acted on it. Throws WebhookError when the request cannot be started.
  Call Start(std::string_view verb, std::string body) const;
  // Start(verb, body).Wait().
  WebhookResponse Post(std::string_view verb, std::string body) const;

  // "<prefix>/<verb>", for messages.
  std::string UrlFor(std::string_view verb) const;
  const std::string& url_prefix() const { return url_prefix_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string url_prefix_;
  std::string path_prefix_;  // The URL's path without its trailing '/'; empty for none.
  std::shared_ptr<const internal::Credentials> credentials_;  // Null: no client certificate.
  std::chrono::milliseconds timeout_;
  size_t max_response_bytes_;
  std::shared_ptr<internal::Transport> transport_;
};

}  // namespace berth::client

#endif  // BERTH_PKG_CLIENT_WEBHOOK_H_
