#ifndef BERTH_PKG_CLIENT_TRANSPORT_H_
#define BERTH_PKG_CLIENT_TRANSPORT_H_

// HTTP/1.1 over TLS (OpenSSL) or plain TCP: the wire under pkg/client's Client. Blocking I/O on
// the caller's thread with a deadline per call, keep-alive connections, chunked and
// length-delimited bodies. Internal to pkg/client and its unit tests.

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/client/client.h"

namespace berth::client::internal {

using Deadline = std::chrono::steady_clock::time_point;

// Where the apiserver listens, parsed from Config::server.
struct Endpoint {
  bool tls = true;
  std::string host;  // Without IPv6 brackets.
  std::string port;
  std::string host_header;  // "host:port" as the URL spells it.
  // The name checked against the server certificate and sent as SNI (tls-server-name or host).
  std::string verify_name;
  std::string url;  // Config::server, for messages.
};

// Throws ConfigError unless `server` is an http(s)://host[:port] URL without a path.
Endpoint ParseEndpoint(const Config& config);

// A failure below HTTP: connect, handshake, write or read. `request_not_sent` is true when the
// server provably never received a complete request (connect and handshake failures, a write or
// an immediate EOF on a pooled connection the server had already closed).
class TransportError : public std::runtime_error {
 public:
  TransportError(ErrorReason reason, std::string message, bool request_not_sent)
      : std::runtime_error(std::move(message)),
        reason_(reason),
        request_not_sent_(request_not_sent) {}
  ErrorReason reason() const { return reason_; }  // kTransport, kTimeout or kTLS.
  bool request_not_sent() const { return request_not_sent_; }

 private:
  ErrorReason reason_;
  bool request_not_sent_;
};

// The shared OpenSSL context: trusted roots, client certificate, verification mode. Immutable
// after construction and safe to use from every thread.
class TlsContext {
 public:
  // Throws ConfigError when the CA bundle or the client certificate/key cannot be used.
  explicit TlsContext(const Config& config);
  SSL_CTX* get() const { return ctx_.get(); }
  bool verify() const { return verify_; }

 private:
  struct Free {
    void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
  };
  std::unique_ptr<SSL_CTX, Free> ctx_;
  bool verify_;
};

struct ResponseHead {
  int status = 0;
  std::string retry_after;   // Empty when absent.
  std::string content_type;  // Empty when absent.
};

// One keep-alive connection. Used by one thread at a time, except Shutdown().
class Connection {
 public:
  // Connects (and handshakes when `tls` is non-null) before `deadline`; throws TransportError.
  static std::unique_ptr<Connection> Open(const Endpoint& endpoint, const TlsContext* tls,
                                          Deadline deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends a whole request; a failure here means the server did not get all of it.
  void Send(std::string_view request, Deadline deadline);
  // Reads the status line and headers of the next response, skipping 1xx interim responses.
  ResponseHead ReadHead(Deadline deadline);
  // Appends the next decoded bytes of the body to `out`, blocking until at least one arrives;
  // false once the body has ended.
  bool ReadBodySome(std::string* out, Deadline deadline);
  // The rest of the body.
  void ReadBody(std::string* out, Deadline deadline);

  // Whether the connection may carry another request: the last body was read to its end and
  // neither side asked to close.
  bool Reusable() const;
  // Cheap check before reuse: false when the server closed the idle connection (or sent
  // something unsolicited).
  bool IdleAndOpen();
  // Wakes a thread blocked in this connection's I/O, which then fails. Thread-safe.
  void Shutdown();
  // Marks a connection taken from the pool: if it then ends before the first response byte, the
  // server had closed it while idle and never saw the request.
  void set_reused(bool reused) { reused_ = reused; }

  // Lets only Open() construct, through std::make_unique.
  class Key {
    friend class Connection;
    Key() = default;
  };
  Connection(Key, int fd);

 private:
  enum class BodyMode { kNone, kLength, kChunked, kUntilClose };
  enum class ChunkState { kSize, kData, kDataEnd, kTrailers, kDone };

  // Reads more bytes into in_; false on a clean EOF.
  bool Fill(Deadline deadline);
  // Waits until the socket is readable (or writable) or the deadline passes.
  void Wait(bool for_write, Deadline deadline, const char* doing);
  [[noreturn]] void FailIo(const char* doing, int ssl_error, int saved_errno);
  // A complete CRLF-terminated line from in_, without the CRLF; false when none is buffered.
  bool TakeLine(std::string* line);
  size_t Buffered() const { return in_.size() - in_pos_; }

  int fd_;
  SSL* ssl_ = nullptr;  // Null for plain HTTP.
  std::string peer_;
  std::atomic<bool> shut_down_{false};
  bool reused_ = false;
  bool got_response_bytes_ = false;
  bool close_after_ = false;
  bool broken_ = false;
  std::string in_;
  size_t in_pos_ = 0;  // Invariant: in_[0, in_pos_) is consumed.
  BodyMode body_mode_ = BodyMode::kNone;
  ChunkState chunk_state_ = ChunkState::kDone;
  uint64_t remaining_ = 0;  // Bytes left of the content (kLength) or of the chunk (kData).
};

// Idle keep-alive connections to one endpoint. Thread-safe.
class ConnectionPool {
 public:
  ConnectionPool(Endpoint endpoint, std::shared_ptr<const TlsContext> tls, size_t max_idle)
      : endpoint_(std::move(endpoint)), tls_(std::move(tls)), max_idle_(max_idle) {}

  // A pooled connection that still looks open (marked reused), else a new one.
  std::unique_ptr<Connection> Acquire(Deadline deadline);
  // A new connection, never pooled one (watches hold theirs for minutes).
  std::unique_ptr<Connection> Dial(Deadline deadline);
  // Returns a connection whose last response was read completely; others are closed.
  void Release(std::unique_ptr<Connection> connection);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  const Endpoint endpoint_;
  const std::shared_ptr<const TlsContext> tls_;
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // Guarded by mu_; most recent last.
};

// Ignores SIGPIPE unless the program installed its own handler: a write to a connection the
// server reset must fail with EPIPE, not kill the process.
void IgnoreSigpipeOnce();

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_TRANSPORT_H_
