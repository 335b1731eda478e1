#ifndef BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_
#define BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_

// Helpers for the pkg/client unit tests: temporary directories, environment overrides and a
// scriptable HTTP(S) server built on cpprestsdk's http_listener.

#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <unistd.h>

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
#include <vector>

#include "test/testing/temp_dir.h"

namespace berth::client::testing {

using ::berth::testing::ReadAll;
using ::berth::testing::TempDir;

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

}  // namespace berth::client::testing

#endif  // BERTH_TEST_TESTING_CLIENT_TEST_UTIL_H_
