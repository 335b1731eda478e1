#ifndef BERTH_PKG_SERVER_SERVER_H_
#define BERTH_PKG_SERVER_SERVER_H_

// The endpoint an operator points probes and Prometheus at: /metrics, /healthz, /livez, /readyz
// and /configz, and the /debug/ endpoints (explain, simulate). Health endpoints follow the
// apiserver's convention: 200 "ok" when every check passes, else 500 listing each check as
// "[+]name ok" / "[-]name failed: reason" (the list is also returned with ?verbose).
//
// berth-scheduler runs one listener with TLS and an auth::Filter (the secure port), and, only when
// asked, one in plain HTTP without (the insecure port). Paths are matched exactly (those under
// /debug/ by prefix), and the same decoded path is what the filter authorizes, so no spelling of a
// path reaches a handler without passing the filter under that handler's name.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pkg/server/auth/filter.h"
#include "pkg/util/clock.h"

namespace berth::server {

// An address that cannot be served: bad syntax, unreadable certificate or CA, port in use.
class ServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TlsContextCache;  // tls_context.h: a listener's loaded TLS context.

// What one listener admits, so a flood of connections or requests cannot crowd out the probes
// and scrapes already being served. A source is a client's IP address.
struct Limits {
  // Open connections, in all and from one source; a connection over either is closed as soon as
  // it is accepted, unanswered. Those already open are served as before.
  size_t max_connections = 256;
  size_t max_connections_per_source = 64;
  // Each source's requests that cost a review, or are refused, spend a token from a bucket of
  // `request_burst` refilled at `requests_per_second`; an empty bucket answers 429 with
  // Retry-After. Probes on always-allowed paths, and requests whose user and decision are
  // remembered as allowed, spend none: a flood from a scraper's own address never turns its
  // scrapes away. Only a listener with a filter counts.
  double requests_per_second = 20;
  size_t request_burst = 50;
  // What the buckets refill by; null: the steady clock. When set, it must outlive the server.
  const util::Clock* clock = nullptr;
};

// The certificate chain and key an HTTPS listener presents: either files or PEM text.
struct Certificate {
  // PEM files, loaded again when they change (a renewed Secret), so the next connection is served
  // the rotated pair without a restart.
  std::string cert_file;
  std::string key_file;
  // PEM text held in memory (the self-signed pair of certificate.h).
  std::string cert_pem;
  std::string key_pem;
};

struct Options {
  // host:port; an IPv6 host in brackets ("[::]:10259").
  std::string bind_address = "0.0.0.0:10259";
  // Set: HTTPS (TLS 1.2 or later) with this certificate. Unset: plain HTTP.
  std::optional<Certificate> tls;
  // Needs tls. A PEM bundle of CA certificates (--client-ca-file), loaded again when it changes
  // like the certificate files. A client may present a certificate (it is asked for one, never
  // required to send it); one that chains to these CAs, is within its dates and allows client
  // authentication names the request's user for the filter. Any other is ignored, as if absent.
  std::string client_ca;
  // Set: every request passes it before a handler sees it. Unset: every request is served.
  std::shared_ptr<const auth::Filter> filter;
  // How errors name this listener: the flag that configured it.
  std::string flag = "--secure-port";
  Limits limits;
  // Set: LoadTls of these same options, done ahead of time; Start serves with it rather than
  // loading `tls` again.
  std::shared_ptr<TlsContextCache> loaded_tls;
};

// What Start would do first for a listener with TLS: reads the certificate and key files (or
// decodes the PEM text) and the client CA, and builds the context connections handshake with.
// Several milliseconds of OpenSSL work that needs nothing but the options, so start-up can do it
// on another thread while it prepares the rest. Throws ServerError as Start would; returns null
// for a listener without TLS.
std::shared_ptr<TlsContextCache> LoadTls(const Options& options);

// A named check; returns an error description, or nullopt when healthy. Called on the serving
// thread for every probe: must be cheap and thread-safe.
struct HealthCheck {
  std::string name;
  std::function<std::optional<std::string>()> check;
};

// A request under /debug/. The path is decoded; the body is at most kMaxDebugBodyBytes.
struct DebugRequest {
  std::string method;  // "GET" or "POST".
  std::string path;    // "/debug/pods/default/web-1".
  std::map<std::string, std::string> query;
  std::string content_type;
  std::string body;
};

struct DebugResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

// Larger request bodies get 413 before they are read.
inline constexpr size_t kMaxDebugBodyBytes = 1 << 20;

struct Handlers {
  std::function<std::string()> metrics;  // Prometheus text exposition.
  std::function<std::string()> configz;  // The effective configuration as JSON.
  std::vector<HealthCheck> livez;        // /livez and /healthz.
  std::vector<HealthCheck> readyz;       // /readyz.
  // Everything under /debug/; null: those paths are 404 like any unknown one. One debug request
  // runs at a time (a second gets 429), so slow ones never hold every serving thread and the
  // probes behind them.
  std::function<DebugResponse(const DebugRequest&)> debug;
};

struct BindAddress {
  std::string host;
  uint16_t port = 0;
};
// Parses "host:port" / "[v6]:port". Throws ServerError naming the expected form.
BindAddress ParseBindAddress(const std::string& address);

// Throws ServerError, naming --client-ca-file and the file, unless `path` is a readable PEM file
// holding at least one certificate.
void CheckClientCaFile(const std::string& path);

// Sizes each server's pool of threads that read, route and answer requests (4 unless told
// otherwise). Call at most once, before the first server starts; throws ServerError otherwise.
void SetServerThreads(size_t threads);

// Serves Handlers on Options' address until Stop() or destruction. Thread-safe.
//
// Limits: a request's header block is at most 64 KiB (431 beyond); a body over kMaxDebugBodyBytes
// gets 413 and the connection is closed. A connection must finish its TLS handshake within 10s
// and send each request within 32s; an idle kept-alive connection is closed after 90s. Options'
// Limits cap connections and each source's request rate.
//
// With a filter, a request is checked on its header block, before its body is read or a client
// that expects "100 Continue" is told to send it: a refused request's body is never read (what
// the client sends anyway is discarded, briefly, so it reads the answer). Requests the filter must
// ask the apiserver about are checked on threads of their own (kAuthWorkers, at most kAuthQueue
// waiting, 429 beyond), since a review may wait seconds: probes, on the always-allowed paths, and
// requests whose user and decision the filter remembers never queue behind them.
//
// Health endpoints tell why a check failed (and, with ?verbose, which passed) only to a caller
// the filter allows to get the path itself, as RBAC's system:public-info-viewer allows every
// authenticated user; anyone else, a kubelet probe included, gets the status code with "ok" or
// "<name> check failed". Without a filter every caller is told.
//
// TLS: 1.2 or later; for 1.2 only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305, OpenSSL's
// defaults for 1.3; no renegotiation.
class HttpServer {
 public:
  HttpServer(Options options, Handlers handlers);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  static constexpr int kAuthWorkers = 2;
  static constexpr size_t kAuthQueue = 64;

  // Binds and starts serving. Throws ServerError (bad address, TLS files, port in use).
  void Start();
  // Stops accepting and answering; a stopped server does not start again. Connections still open
  // are closed on destruction.
  void Stop();
  // "https://127.0.0.1:10259" / "http://..." as bound.
  std::string url() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::server

#endif  // BERTH_PKG_SERVER_SERVER_H_
