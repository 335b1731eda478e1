#ifndef BERTH_TEST_TESTING_SERVER_TEST_UTIL_H_
#define BERTH_TEST_TESTING_SERVER_TEST_UTIL_H_

// Helpers for the pkg/server unit tests: free ports, requests over libcurl (test/testing's
// HttpCall) and over raw sockets from any loopback address, TLS handshakes with chosen suites, and
// a listener guarded like the secure port.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pkg/server/auth/filter.h"
#include "pkg/server/server.h"
#include "test/testing/http_call.h"
#include "test/testing/pki.h"

namespace berth::testing {

inline uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "no free port: " << std::strerror(errno);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

struct Reply {
  int status = 0;
  std::string body;
};

// `ca` is a file name, or PEM text when it starts with "-----"; empty: the system's roots. `cert`:
// the certificate the client presents, if any. Throws std::runtime_error when no response arrives.
inline Reply Request(const std::string& url, const std::string& method, const std::string& ca = "",
                     const std::string& token = "", const CertificateFiles* cert = nullptr) {
  HttpCallOptions options;
  options.method = method;
  options.ca = ca;
  options.token = token;
  if (cert != nullptr) {
    options.cert_file = cert->cert_file;
    options.key_file = cert->key_file;
  }
  const HttpResult result = HttpCall(url, options);
  return {result.status, result.body};
}

inline Reply Get(const std::string& url, const std::string& ca = "", const std::string& token = "",
                 const CertificateFiles* cert = nullptr) {
  return Request(url, "GET", ca, token, cert);
}

inline server::Options Plain(uint16_t port) {
  server::Options options;
  options.bind_address = "127.0.0.1:" + std::to_string(port);
  options.flag = "--port";
  return options;
}

// A TCP connection to 127.0.0.1:`port` from `source` (any 127/8 address: loopback answers them
// all), or -1 with errno set. A nonzero `timeout` bounds the connect and each later send and
// receive (SO_SNDTIMEO and SO_RCVTIMEO), for a caller that must not block past it.
inline int TryConnect(uint16_t port, const char* source = "127.0.0.1",
                      std::chrono::milliseconds timeout = {}) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (timeout.count() > 0) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const timeval tv{
        static_cast<time_t>(seconds.count()),
        static_cast<suseconds_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(timeout - seconds).count())};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// TryConnect, for a test that expects the connection: a refusal fails the test.
inline int Connect(uint16_t port, const char* source = "127.0.0.1",
                   std::chrono::milliseconds timeout = {}) {
  const int fd = TryConnect(port, source, timeout);
  if (fd < 0) ADD_FAILURE() << "connect from " << source << ": " << std::strerror(errno);
  return fd;
}

inline void Send(int fd, const std::string& data) {
  ASSERT_EQ(send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()))
      << std::strerror(errno);
}

// What arrives on `fd` until `until` has been read, the peer closes, or 10 s pass (a failure
// bound: a healthy server answers at once).
inline std::string ReadUntil(int fd, const std::string& until = "\r\n\r\n") {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.find(until) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    std::array<char, 4096> chunk{};
    const ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  return out;
}

// "reader" may get /metrics; "admin" may do anything; every other token is invalid.
class TokensAuthenticator : public server::auth::TokenAuthenticator {
 public:
  std::optional<server::auth::UserInfo> AuthenticateToken(const std::string& token) override {
    if (token == "reader" || token == "admin") return server::auth::UserInfo{token, "", {}, {}};
    return std::nullopt;
  }
};
class RulesAuthorizer : public server::auth::Authorizer {
 public:
  server::auth::Decision Authorize(const server::auth::Attributes& a) override {
    return {a.user.name == "admin" || (a.verb == "get" && a.path == "/metrics"), ""};
  }
};

// A plain listener guarded like the secure port: "reader" may get /metrics, "admin" anything.
// The debug handler echoes the body and counts its calls.
struct GuardedServer {
  explicit GuardedServer(std::function<void(server::Options&)> adjust = nullptr) {
    handlers.metrics = [] { return std::string("up 1\n"); };
    handlers.livez = {{"ping", [] { return std::optional<std::string>(); }}};
    handlers.readyz = {{"ping", [] { return std::optional<std::string>(); }},
                       {"leader-election", [] {
                          return std::optional<std::string>(
                              "lease kube-system/secret-lease neither held nor observed");
                        }}};
    handlers.debug = [this](const server::DebugRequest& r) {
      debug_calls++;
      return server::DebugResponse{200, r.body, "text/plain"};
    };
    options = Plain(FreePort());
    options.filter = std::make_shared<server::auth::Filter>(
        std::make_shared<TokensAuthenticator>(), std::make_shared<RulesAuthorizer>(),
        server::auth::PathMatcher(server::auth::DefaultAlwaysAllowPaths()));
    if (adjust) adjust(options);
    server = std::make_unique<server::HttpServer>(options, handlers);
    server->Start();
  }
  uint16_t port() const { return server::ParseBindAddress(options.bind_address).port; }

  server::Handlers handlers;
  server::Options options;
  std::atomic<int> debug_calls{0};
  std::unique_ptr<server::HttpServer> server;
};

// Connects, handshakes TLS 1.2 (or any version, with `tls12` false) offering only `ciphers`, and
// says whether the handshake succeeded.
inline bool Handshakes(uint16_t port, const char* ciphers, bool tls12 = true) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  if (tls12) {
    SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
    // Security level 0: the client offers what it is told, so the server alone decides.
    SSL_CTX_set_security_level(ctx.get(), 0);
    if (SSL_CTX_set_cipher_list(ctx.get(), ciphers) != 1) {
      ADD_FAILURE() << "this OpenSSL does not know " << ciphers;
      return false;
    }
  }
  const int fd = Connect(port);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  const bool ok = SSL_connect(ssl.get()) == 1;
  close(fd);
  return ok;
}

// A review that waits until released, for tokens starting "bogus"; "reader" is a user at once.
class SlowReviews : public server::auth::TokenAuthenticator {
 public:
  std::optional<server::auth::UserInfo> AuthenticateToken(const std::string& token) override {
    if (token == "reader") return server::auth::UserInfo{token, "", {}, {}};
    std::unique_lock lock(mu);
    waiting++;
    cv.wait(lock, [&] { return released; });
    return std::nullopt;
  }
  void Release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  bool released = false;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_SERVER_TEST_UTIL_H_
