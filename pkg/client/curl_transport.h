#ifndef BERTH_PKG_CLIENT_CURL_TRANSPORT_H_
#define BERTH_PKG_CLIENT_CURL_TRANSPORT_H_

// The wire under pkg/client's Client: HTTP/2 or HTTP/1.1 over libcurl. One I/O thread per
// Transport drives a curl multi handle carrying every request and busy watch of its client, so
// that against an apiserver whose ALPN offers h2 they share one multiplexed TLS connection;
// quiet watches (Request::quiet) share a second, on a multi handle and I/O thread of their own,
// made by the first of them. Against HTTP/1.1 servers connections are kept alive and reused.
// Callers block on their own Transfer with a deadline. Internal to pkg/client and its unit tests,
// and the one other user, the explain CLI's client (cmd/berth-scheduler/debug_client.cc), which
// needs any response's status and body where Client decodes objects and throws on errors.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pkg/client/client.h"
#include "pkg/client/endpoint.h"

namespace berth::client::internal {

using Deadline = std::chrono::steady_clock::time_point;

// Bytes of response headers (all lines of one response) accepted: an apiserver writes a few
// hundred; more means something that is not one is talking. (libcurl's own limit is 300 KiB.)
inline constexpr size_t kMaxResponseHeaderBytes = size_t{256} << 10;
// Bytes of a response body collected whole (everything but streamed lists and watches): far
// above a page of any LIST, whose size the apiserver bounds by `limit`; a longer body is a broken
// or hostile server, not worth the memory.
inline constexpr size_t kMaxResponseBodyBytes = size_t{1} << 30;
// Bytes of a streamed body (list or watch) held for a reader that has not taken them yet; past
// this, libcurl pauses the transfer (and HTTP/2 flow control the stream) until it does.
inline constexpr size_t kStreamBufferBytes = size_t{8} << 20;

// A failure below HTTP: resolve, connect, handshake, send or receive, a malformed response, a
// deadline. `request_not_sent` is true when the server provably never received the complete
// request (no connection or TLS session was established, or the request's body was never handed
// to one).
class TransportError : public std::runtime_error {
 public:
  TransportError(ErrorReason reason, std::string message, bool request_not_sent)
      : std::runtime_error(std::move(message)),
        reason_(reason),
        request_not_sent_(request_not_sent) {}
  ErrorReason reason() const { return reason_; }  // kTransport, kTimeout, kTLS or kUnknown.
  bool request_not_sent() const { return request_not_sent_; }

 private:
  ErrorReason reason_;
  bool request_not_sent_;
};

// What one request authenticates with. Immutable; shared by every request that uses it.
struct Credentials {
  std::string token;     // Bearer token; empty: none.
  std::string cert_pem;  // Client certificate (chain); empty: none.
  std::string key_pem;
};

// One request. The body, when any, is sent with Content-Length.
struct Request {
  const char* method = "GET";
  std::string target;  // Path and query: "/api/v1/pods?limit=500".
  std::string accept;
  bool has_body = false;
  std::string body;
  std::string content_type;
  // Whether libcurl may send the request again by itself when a reused connection closes before
  // any response byte arrived. False for POST and PATCH: the server may have acted on them.
  bool replayable = true;
  std::shared_ptr<const Credentials> credentials;  // Null: none.
  std::chrono::milliseconds timeout{0};            // Whole exchange; 0: none.
  std::chrono::milliseconds connect_timeout{0};    // Connection and TLS handshake; 0: libcurl's.
  std::chrono::seconds inactivity{0};  // Abort after this long without a byte; 0: never.
  // The body is handed to the reader as it arrives (bounded by kStreamBufferBytes) instead of
  // being collected whole (bounded by kMaxResponseBodyBytes).
  bool stream = false;
  // A long-lived stream that carries little: it goes on the transport's second connection (a
  // multi handle and I/O thread of their own). libcurl 7.88 runs every transfer of a connection,
  // each with a poll() of its own, on every socket event of that connection; idle watches beside
  // the requests would be run on each answer.
  bool quiet = false;
};

// Settings shared by every request of one Transport.
struct TransportOptions {
  std::string ca_pem;  // Empty: the system store.
  bool verify = true;  // Peer and host name.
  // The proxy URL in libcurl's form, or empty for none (the environment is never consulted:
  // ProxyFor in proxy.h already did).
  std::string proxy;
  std::string user_agent;
};

struct ResponseHead {
  int status = 0;
  std::string retry_after;   // Empty when absent.
  std::string content_type;  // Empty when absent.
};

// One request in flight. Its reader is one thread at a time; Cancel() is thread-safe.
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Blocks until the status and headers of the final response arrived; throws TransportError.
  virtual ResponseHead WaitHead(Deadline deadline) = 0;
  // Appends the body bytes received so far to `out`, blocking until there is at least one; false
  // once the body has ended. Throws TransportError on a failure or when `deadline` passes (the
  // transfer is then cancelled). Deadline::max() waits without limit.
  virtual bool ReadSome(std::string* out, Deadline deadline) = 0;
  // Ends the transfer; a blocked or later WaitHead/ReadSome fails. Idempotent, and a no-op once
  // the transfer completed.
  virtual void Cancel() = 0;

  // The rest of the body; throws TransportError past kMaxResponseBodyBytes.
  void ReadRest(std::string* out, Deadline deadline);
};

// How a request started with Transport::StartAsync ended.
struct Outcome {
  bool has_head = false;  // The final response's status and headers arrived.
  ResponseHead head;
  std::string body;                     // Whole (bounded by kMaxResponseBodyBytes).
  std::optional<TransportError> error;  // The exchange failed below HTTP (maybe after the head).
};
using Completion = std::function<void(Outcome)>;

// Counters over the Transport's lifetime, for tests and diagnostics.
struct TransportStats {
  uint64_t connections = 0;      // Connections libcurl opened.
  uint64_t http2_responses = 0;  // Completed transfers by protocol.
  uint64_t http1_responses = 0;
};

// Requests to one endpoint through one libcurl multi handle and its I/O thread. Thread-safe.
// Whoever holds a Transfer must also hold the Transport that started it.
class Transport {
 public:
  // Throws ConfigError when libcurl cannot be initialised.
  static std::shared_ptr<Transport> Create(Endpoint endpoint, TransportOptions options);
  virtual ~Transport() = default;
  // Queues the request; throws TransportError when libcurl rejects one of its settings.
  virtual std::shared_ptr<Transfer> Start(Request request) = 0;
  // Queues a request whose whole answer goes to `done` instead of to a reader: no thread waits
  // for it. `done` runs exactly once, on the I/O thread (on the calling thread when the transport
  // is shutting down), and must not block, for it holds up every request and watch of the
  // transport. The request must carry a timeout, the only thing that ends an unanswered one.
  // Throws TransportError as Start does, without running `done`.
  virtual void StartAsync(Request request, Completion done) = 0;
  virtual TransportStats Stats() const = 0;
  virtual const Endpoint& endpoint() const = 0;
};

// Ignores SIGPIPE unless the program installed its own handler: a write to a connection the
// server reset must fail with EPIPE, not kill the process.
void IgnoreSigpipeOnce();

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_CURL_TRANSPORT_H_
