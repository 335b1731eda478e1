#ifndef BERTH_PKG_SERVER_SERVER_H_
#define BERTH_PKG_SERVER_SERVER_H_

// The one HTTP(S) endpoint an operator points probes and Prometheus at: /metrics, /healthz,
// /livez, /readyz and /configz, and, when enabled, the /debug/ endpoints (explain, simulate).
// Health endpoints follow the apiserver's convention: 200 "ok" when every check passes, else 500
// listing each check as "[+]name ok" / "[-]name failed: reason" (the list is also returned with
// ?verbose).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace berth::server {

// An address that cannot be served: bad syntax, unreadable certificate, port in use.
class ServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string bind_address = "0.0.0.0:10251";  // host:port; [v6]:port for IPv6.
  // Both set: HTTPS with this certificate chain and key (PEM files). Neither: plain HTTP.
  std::string tls_cert_file;
  std::string tls_private_key_file;
};

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
// Parses "host:port" / "[v6]:port". Throws ServerError naming the flag and the expected form.
BindAddress ParseBindAddress(const std::string& address);

// Sizes the one thread pool every server in the process answers on (cpprestsdk's shared pool,
// 40 threads unless told otherwise). Call at most once, before the first server starts; throws
// ServerError otherwise.
void SetServerThreads(size_t threads);

// Serves Handlers on Options' address until Stop() or destruction. Thread-safe.
class HttpServer {
 public:
  HttpServer(Options options, Handlers handlers);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. Throws ServerError (bad address, TLS files, port in use).
  void Start();
  void Stop();
  // "http://127.0.0.1:10251" / "https://..." as bound.
  std::string url() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::server

#endif  // BERTH_PKG_SERVER_SERVER_H_
