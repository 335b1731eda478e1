#ifndef BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_
#define BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_

// Helpers for the pkg/client unit tests: temporary directories, environment overrides, a raw TCP
// server, a scriptable HTTP(S) server on Boost.Beast (FakeServer, in test/testing's library) and a
// test PKI.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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
  std::string path;                            // Without the query.
  std::string query;                           // Still percent-encoded.
  std::map<std::string, std::string> headers;  // Names as the client spelled them.
  std::string body;

  // The value of header `name`, whatever its case; empty when absent.
  std::string Header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
      if (key.size() == name.size() &&
          std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          })) {
        return value;
      }
    }
    return "";
  }
};

// One request to a FakeServer, read whole and recorded before its handler sees it, and the means
// to answer it: Reply, or StartStream, then Send any number of times, then EndStream. A handler
// that does neither, or leaves a stream open, has the connection closed when it returns. Used by
// the handler's thread only.
class FakeRequest {
 public:
  virtual ~FakeRequest() = default;
  FakeRequest(const FakeRequest&) = delete;
  FakeRequest& operator=(const FakeRequest&) = delete;

  const RecordedRequest& recorded() const { return recorded_; }
  std::string Header(const std::string& name) const { return recorded_.Header(name); }

  // The whole response, with Content-Length: `status`, `body` as `content_type`, and `headers`.
  virtual void Reply(int status, const std::string& body,
                     const std::map<std::string, std::string>& headers = {},
                     const std::string& content_type = "application/json") = 0;
  // The head of a chunked response, sent at once; each Send is flushed as one chunk, so the client
  // receives it in a read of its own when the handler pauses between them.
  virtual void StartStream(int status, const std::string& content_type = "application/json") = 0;
  // False when no stream is open or the client is gone.
  virtual bool Send(std::string_view piece) = 0;
  // The last chunk: the body ends.
  virtual void EndStream() = 0;
  // Blocks until the client closes the connection or the server is destroyed: a stream that stays
  // silent for as long as the client keeps it.
  virtual void WaitForClose() = 0;

 protected:
  explicit FakeRequest(RecordedRequest recorded) : recorded_(std::move(recorded)) {}

 private:
  RecordedRequest recorded_;
};

// A scriptable server on 127.0.0.1 (plain HTTP/1.1, or HTTPS when given an SSL setup) on
// Boost.Beast, the secure port's HTTP library. Each connection is served on a thread of its own,
// its requests one after another (kept alive as the client asks); the handler runs on that thread
// with the request already recorded, and must answer it. Destruction shuts every connection down
// and joins their threads, so a handler blocked in WaitForClose returns; one blocked elsewhere
// must be released first.
class FakeServer {
 public:
  using Handler = std::function<void(int request_index, FakeRequest& request)>;
  using SslSetup = std::function<void(boost::asio::ssl::context&)>;

  explicit FakeServer(Handler handler, const SslSetup& ssl = nullptr);
  ~FakeServer();
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
  void Serve(int fd);
  // Appends to requests_; returns the request's index.
  int Record(const RecordedRequest& request);

  const Handler handler_;
  const std::unique_ptr<boost::asio::ssl::context> ssl_;  // Null: plain HTTP.
  mutable std::mutex mu_;
  std::vector<RecordedRequest> requests_;  // Guarded by mu_.
  // Last but the URL: its connection threads use everything above, and stop when it goes.
  LoopbackTcpServer listener_;
  const std::string url_;
};

// Replies with `status`, a JSON body and optional extra headers.
inline void Reply(FakeRequest& request, int status, const std::string& body,
                  const std::map<std::string, std::string>& headers = {}) {
  request.Reply(status, body, headers);
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
