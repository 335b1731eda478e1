#ifndef BERTH_PKG_SERVER_SERVER_H_
#define BERTH_PKG_SERVER_SERVER_H_

// The one HTTP(S) endpoint an operator points probes and Prometheus at: /metrics, /healthz,
// /livez, /readyz and /configz. Health endpoints follow the apiserver's convention: 200 "ok" when
// every check passes, else 500 listing each check as "[+]name ok" / "[-]name failed: reason"
// (the list is also returned with ?verbose).

#include <cstdint>
#include <functional>
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

struct Handlers {
  std::function<std::string()> metrics;  // Prometheus text exposition.
  std::function<std::string()> configz;  // The effective configuration as JSON.
  std::vector<HealthCheck> livez;        // /livez and /healthz.
  std::vector<HealthCheck> readyz;       // /readyz.
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
