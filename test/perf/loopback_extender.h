#ifndef BERTH_TEST_PERF_LOOPBACK_EXTENDER_H_
#define BERTH_TEST_PERF_LOOPBACK_EXTENDER_H_

// The extender of scheduler_bench's --extender loopback: kube-scheduler's extender/v1 protocol
// over plain HTTP/1.1 on 127.0.0.1, answering nodeCacheCapable filter and prioritize requests as
// cheaply as it can, so that what the benchmark measures is the scheduler's side of a call. The
// filter keeps every node it is sent (it echoes the NodeNames array as written) and the
// prioritize gives each node the same score; neither decodes the pod. Requests in any other form
// get HTTP 400. test/testing/test_extender.h is the full-featured one the e2e tests use; it reads
// every request with nlohmann/json and looks nodes up by name, which would dominate here.
//
// One thread serves every connection (the scheduling thread has at most one call in flight).
// Thread-safe; stopped when the object goes away.

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace berth::perf {

class LoopbackExtender {
 public:
  // The score every node gets from prioritize.
  static constexpr int kScore = 5;

  LoopbackExtender() : acceptor_(ioc_) {
    const tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~LoopbackExtender() {
    ioc_.stop();
    thread_.join();
  }
  LoopbackExtender(const LoopbackExtender&) = delete;
  LoopbackExtender& operator=(const LoopbackExtender&) = delete;

  // "http://127.0.0.1:<port>".
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Requests answered, and the time spent computing their answers (not reading or writing them).
  uint64_t requests() const { return requests_.load(); }
  std::chrono::nanoseconds busy() const { return std::chrono::nanoseconds(busy_ns_.load()); }

  // The answer to a request for `target` with `body`: the status and the response body.
  static std::pair<int, std::string> Answer(std::string_view target, std::string_view body) {
    const bool filter = target.ends_with("/filter");
    if (!filter && !target.ends_with("/prioritize")) return {404, "no such verb\n"};
    // NodeNames is the last field of the ExtenderArgs Berth writes, and a pod's own fields cannot
    // follow it.
    constexpr std::string_view kKey = "\"NodeNames\":[";
    const size_t at = body.rfind(kKey);
    if (at == std::string_view::npos) return {400, "nodeCacheCapable requests only\n"};
    const size_t open = at + kKey.size() - 1;
    std::string out;
    if (filter) {
      const std::optional<size_t> close = ArrayEnd(body, open, [](std::string_view) {});
      if (!close) return {400, "malformed NodeNames\n"};
      out = "{\"NodeNames\":";
      out.append(body.substr(open, *close + 1 - open));
      out += ",\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}";
      return {200, std::move(out)};
    }
    out.reserve(body.size() - open + 64);
    out += '[';
    const std::string score = ",\"Score\":" + std::to_string(kScore) + "}";
    bool first = true;
    const auto host = [&](std::string_view quoted) {
      if (!first) out += ',';
      first = false;
      out += "{\"Host\":";
      out.append(quoted);
      out += score;
    };
    if (!ArrayEnd(body, open, host)) return {400, "malformed NodeNames\n"};
    out += ']';
    return {200, std::move(out)};
  }

 private:
  using tcp = boost::asio::ip::tcp;
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  // The index of the ']' closing the array of strings whose '[' is at `open`, each string handed
  // to `each` as written (quotes and escapes included); nullopt if it is not such an array.
  template <typename Each>
  static std::optional<size_t> ArrayEnd(std::string_view text, size_t open, const Each& each) {
    size_t i = open + 1;
    auto space = [&] {
      while (i < text.size() &&
             (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) {
        i++;
      }
    };
    space();
    if (i < text.size() && text[i] == ']') return i;
    for (;;) {
      if (i >= text.size() || text[i] != '"') return std::nullopt;
      const size_t start = i++;
      while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      if (i >= text.size()) return std::nullopt;
      each(text.substr(start, ++i - start));
      space();
      if (i >= text.size()) return std::nullopt;
      if (text[i] == ']') return i;
      if (text[i++] != ',') return std::nullopt;
      space();
    }
  }

  // One connection: requests answered in turn while the client keeps it open.
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(LoopbackExtender& owner, tcp::socket socket)
        : owner_(owner), stream_(std::move(socket)) {}

    void Read() {
      parser_.emplace();
      // 5,000 nodes' names are well within Beast's default 1 MiB; a large cluster's are not.
      parser_->body_limit(64 * 1024 * 1024);
      boost::beast::http::async_read(
          stream_, buffer_, *parser_,
          [self = shared_from_this()](boost::beast::error_code ec, size_t) {
            if (!ec) self->Write();
          });
    }

   private:
    void Write() {
      request_ = parser_->release();
      const auto start = std::chrono::steady_clock::now();
      const auto target = request_.target();
      auto [status, body] = Answer(std::string_view(target.data(), target.size()), request_.body());
      response_ = {};
      response_.version(request_.version());
      response_.keep_alive(request_.keep_alive());
      response_.result(static_cast<boost::beast::http::status>(status));
      response_.set(boost::beast::http::field::content_type,
                    status == 200 ? "application/json" : "text/plain");
      response_.body() = std::move(body);
      response_.prepare_payload();
      owner_.busy_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      owner_.requests_++;
      boost::beast::http::async_write(
          stream_, response_, [self = shared_from_this()](boost::beast::error_code ec, size_t) {
            if (ec || !self->response_.keep_alive()) {
              boost::beast::error_code ignored;
              self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
              return;
            }
            self->Read();
          });
    }

    LoopbackExtender& owner_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    Request request_;
    Response response_;
  };

  void Accept() {
    acceptor_.async_accept([this](boost::beast::error_code ec, tcp::socket socket) {
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        std::make_shared<Session>(*this, std::move(socket))->Read();
      }
      Accept();
    });
  }

  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> requests_{0};
  std::atomic<int64_t> busy_ns_{0};
  // Started last, joined first (the destructor), so nothing it runs outlives the members above.
  std::thread thread_;
};

}  // namespace berth::perf

#endif  // BERTH_TEST_PERF_LOOPBACK_EXTENDER_H_
