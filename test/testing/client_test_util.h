#ifndef BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_
#define BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_

// Helpers for the pkg/client unit tests: temporary directories, environment overrides and a
// scriptable HTTP(S) server built on cpprestsdk's http_listener, and a test PKI.

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/loopback.h"
#include "test/testing/pki.h"
#include "test/testing/temp_dir.h"

namespace berth::client::testing {

using ::berth::testing::ReadAll;
using ::berth::testing::TempDir;

// Writes a /bin/sh script named `name` in `dir`, executable, and returns its path.
inline std::string WriteShellScript(const TempDir& dir, const std::string& name,
                                    const std::string& body) {
  std::string path = dir.Write(name, "#!/bin/sh\n" + body);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  return path;
}

// Sets (or, with nullopt, unsets) an environment variable for the lifetime of the object.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str()); old != nullptr) old_ = old;
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A TCP listener on 127.0.0.1 that runs `serve(fd, index)` on a thread of its own for each
// connection it accepts (`index` counts them from 0) and closes the connection once that returns.
// Destruction shuts every connection (and every socket handed to Track) down and joins the
// threads, so a handler blocked in recv returns.
class LoopbackTcpServer {
 public:
  using Serve = std::function<void(int fd, int index)>;

  explicit LoopbackTcpServer(Serve serve) : serve_(std::move(serve)) {
    const berth::testing::LoopbackListener listener =
        berth::testing::ListenOnLoopback("LoopbackTcpServer");
    listen_fd_ = listener.fd;
    port_ = listener.port;
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~LoopbackTcpServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    acceptor_.join();
    std::vector<std::thread> handlers;
    {
      // Handlers take mu_ to close their sockets, so they are joined without it.
      std::lock_guard<std::mutex> lock(mu_);
      for (const int fd : open_) shutdown(fd, SHUT_RDWR);
      handlers.swap(handlers_);
    }
    for (std::thread& t : handlers) t.join();
  }

  LoopbackTcpServer(const LoopbackTcpServer&) = delete;
  LoopbackTcpServer& operator=(const LoopbackTcpServer&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_.load(); }

  // Another socket of a handler's (an upstream connection), shut down at destruction too.
  void Track(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.push_back(fd);
  }
  // Closes a socket accepted here or given to Track.
  void Close(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(open_, fd);
    close(fd);
  }

  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  static bool SendAll(int fd, const std::string& data) {
    for (size_t sent = 0; sent < data.size();) {
      const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

 private:
  void AcceptLoop() {
    for (int index = 0;; ++index) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      connections_.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu_);
      open_.push_back(fd);
      handlers_.emplace_back([this, fd, index] {
        serve_(fd, index);
        Close(fd);
      });
    }
  }

  Serve serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> open_;              // Guarded by mu_.
  std::vector<std::thread> handlers_;  // Guarded by mu_.
};

// What the fake server saw of one request.
struct RecordedRequest {
  std::string method;
  std::string path;   // Without the query.
  std::string query;  // Still percent-encoded.
  std::map<std::string, std::string> headers;
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A scriptable server on 127.0.0.1 (plain HTTP, or HTTPS when given an SSL setup). The handler
// runs on cpprestsdk's listener threads with the request already recorded, and must reply.
class FakeServer {
 public:
  using Handler = std::function<void(int request_index, web::http::http_request request)>;
  using SslSetup = std::function<void(boost::asio::ssl::context&)>;

  explicit FakeServer(Handler handler, SslSetup ssl = nullptr) : handler_(std::move(handler)) {
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> ports(20000, 60000);
    for (int attempt = 0; attempt < 50; ++attempt) {
      const int port = ports(rng);
      const std::string url =
          std::string(ssl ? "https" : "http") + "://127.0.0.1:" + std::to_string(port);
      web::http::experimental::listener::http_listener_config config;
      if (ssl) config.set_ssl_context_callback(ssl);
      auto listener =
          std::make_unique<web::http::experimental::listener::http_listener>(url, config);
      listener->support([this](web::http::http_request request) { Handle(std::move(request)); });
      try {
        listener->open().wait();
      } catch (const std::exception&) {
        continue;  // Port in use.
      }
      listener_ = std::move(listener);
      url_ = url;
      return;
    }
    throw std::runtime_error("FakeServer: no free port");
  }

  ~FakeServer() {
    try {
      listener_->close().wait();
    } catch (const std::exception&) {
    }
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  const std::string& url() const { return url_; }

  int request_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(requests_.size());
  }

  std::vector<RecordedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Handle(web::http::http_request request) {
    RecordedRequest recorded;
    recorded.method = request.method();
    recorded.path = request.relative_uri().path();
    recorded.query = request.relative_uri().query();
    for (const auto& [name, value] : request.headers()) recorded.headers[name] = value;
    try {
      recorded.body = request.extract_utf8string(true).get();
    } catch (const std::exception&) {
    }
    int index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = static_cast<int>(requests_.size());
      requests_.push_back(std::move(recorded));
    }
    handler_(index, std::move(request));
  }

  Handler handler_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
  std::string url_;
  mutable std::mutex mu_;
  std::vector<RecordedRequest> requests_;  // Guarded by mu_.
};

// Replies with `status`, a JSON body and optional extra headers.
inline void Reply(web::http::http_request& request, int status, const std::string& body,
                  const std::map<std::string, std::string>& headers = {}) {
  web::http::http_response response(static_cast<web::http::status_code>(status));
  for (const auto& [name, value] : headers) response.headers().add(name, value);
  response.set_body(body, "application/json");
  request.reply(response).wait();
}

// The certificates every TLS test of the client shares, as PEM text: a CA, server and client
// certificates it signs, and an unrelated CA.
struct Pki {
  berth::testing::Pki files;  // Holds the directory they were minted in.
  std::string ca;             // Signs server, name-only and client.
  std::string other_ca;       // Unrelated self-signed CA.
  std::string other_ca_key;
  std::string server_cert;  // SANs 127.0.0.1 and localhost.
  std::string server_key;
  std::string name_only_cert;  // SAN DNS:berth.test only.
  std::string name_only_key;
  std::string client_cert;
  std::string client_key;
};

// Null when the openssl CLI cannot generate them.
inline std::unique_ptr<Pki> MakePki() {
  auto pki = std::make_unique<Pki>();
  try {
    const berth::testing::CertificateFiles ca = pki->files.Ca("berth-test-ca");
    const berth::testing::CertificateFiles other = pki->files.Ca("berth-other-ca");
    const berth::testing::CertificateFiles server = pki->files.Server(ca, "server");
    const berth::testing::CertificateFiles name_only =
        pki->files.Issue(ca, "name", "/CN=berth.test",
                         "subjectAltName=DNS:berth.test\nextendedKeyUsage=serverAuth\n");
    const berth::testing::CertificateFiles client =
        pki->files.Client(ca, "client", "/CN=berth-client");
    pki->ca = ca.cert_pem;
    pki->other_ca = other.cert_pem;
    pki->other_ca_key = other.key_pem;
    pki->server_cert = server.cert_pem;
    pki->server_key = server.key_pem;
    pki->name_only_cert = name_only.cert_pem;
    pki->name_only_key = name_only.key_pem;
    pki->client_cert = client.cert_pem;
    pki->client_key = client.key_pem;
  } catch (const std::runtime_error&) {
    return nullptr;
  }
  return pki;
}

// An HTTPS FakeServer's TLS setup: `cert` and `key`, and client certificates signed by
// `client_ca` required when it is given.
inline FakeServer::SslSetup ServeWith(const std::string& cert, const std::string& key,
                                      const std::string& client_ca = "") {
  return [cert, key, client_ca](boost::asio::ssl::context& ctx) {
    ctx.set_options(boost::asio::ssl::context::default_workarounds);
    ctx.use_certificate_chain(boost::asio::buffer(cert));
    ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
    if (!client_ca.empty()) {
      ctx.add_certificate_authority(boost::asio::buffer(client_ca));
      ctx.set_verify_mode(boost::asio::ssl::verify_peer |
                          boost::asio::ssl::verify_fail_if_no_peer_cert);
    }
  };
}

}  // namespace berth::client::testing

#endif  // BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_
