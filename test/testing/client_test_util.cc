#include "test/testing/client_test_util.h"

#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <utility>

namespace berth::client::testing {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Tcp = asio::ip::tcp;

// Far above what a test sends; past them the request is refused and the connection closed.
constexpr uint32_t kMaxRequestHeaderBytes = 1 << 20;
constexpr uint64_t kMaxRequestBodyBytes = uint64_t{64} << 20;

// A FakeRequest answered on `Stream`, a plain or TLS stream over the connection's socket.
template <typename Stream>
class StreamRequest final : public FakeRequest {
 public:
  StreamRequest(Stream& stream, RecordedRequest recorded, bool keep_alive)
      : FakeRequest(std::move(recorded)), stream_(stream), keep_alive_(keep_alive) {}

  void Reply(int status, const std::string& body, const std::map<std::string, std::string>& headers,
             const std::string& content_type) override {
    if (state_ != State::kUnanswered) return;
    http::response<http::string_body> response;
    response.version(11);
    response.result(static_cast<unsigned>(status));
    response.set(http::field::content_type, content_type);
    for (const auto& [name, value] : headers) response.set(name, value);
    response.keep_alive(keep_alive_);
    response.body() = body;
    response.prepare_payload();
    boost::system::error_code ec;
    http::write(stream_, response, ec);
    state_ = ec ? State::kBroken : State::kDone;
  }

  void StartStream(int status, const std::string& content_type) override {
    if (state_ != State::kUnanswered) return;
    http::response<http::empty_body> response;
    response.version(11);
    response.result(static_cast<unsigned>(status));
    response.set(http::field::content_type, content_type);
    response.keep_alive(keep_alive_);
    response.chunked(true);
    http::response_serializer<http::empty_body> serializer(response);
    boost::system::error_code ec;
    http::write_header(stream_, serializer, ec);
    state_ = ec ? State::kBroken : State::kStreaming;
  }

  bool Send(std::string_view piece) override {
    if (state_ != State::kStreaming) return false;
    if (piece.empty()) return true;  // An empty chunk would end the body.
    boost::system::error_code ec;
    asio::write(stream_, http::make_chunk(asio::buffer(piece.data(), piece.size())), ec);
    if (ec) state_ = State::kBroken;
    return !ec;
  }

  void EndStream() override {
    if (state_ != State::kStreaming) return;
    boost::system::error_code ec;
    asio::write(stream_, http::make_chunk_last(), ec);
    state_ = ec ? State::kBroken : State::kDone;
  }

  void WaitForClose() override {
    std::array<char, 4096> discarded{};
    boost::system::error_code ec;
    while (!ec) stream_.read_some(asio::buffer(discarded), ec);
    state_ = State::kBroken;
  }

  // Whether the connection may carry the client's next request.
  bool Reusable() const { return state_ == State::kDone && keep_alive_; }

 private:
  enum class State { kUnanswered, kStreaming, kDone, kBroken };

  Stream& stream_;
  const bool keep_alive_;
  State state_ = State::kUnanswered;
};

// Reads requests off `stream` one after another, each recorded through `record` and answered by
// `handler`, until the client closes, a request is malformed, or a response leaves the connection
// unusable.
template <typename Stream>
void ServeRequests(Stream& stream, const std::function<int(const RecordedRequest&)>& record,
                   const FakeServer::Handler& handler) {
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxRequestHeaderBytes);
    parser.body_limit(kMaxRequestBodyBytes);
    boost::system::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    const http::request<http::string_body>& request = parser.get();
    RecordedRequest recorded;
    const auto method = request.method_string();
    recorded.method.assign(method.data(), method.size());
    const std::string target(request.target().data(), request.target().size());
    const size_t question = target.find('?');
    recorded.path = target.substr(0, question);
    if (question != std::string::npos) recorded.query = target.substr(question + 1);
    for (const auto& field : request) {
      recorded.headers[std::string(field.name_string().data(), field.name_string().size())] =
          std::string(field.value().data(), field.value().size());
    }
    recorded.body = request.body();
    const int index = record(recorded);
    StreamRequest<Stream> exchange(stream, std::move(recorded), request.keep_alive());
    try {
      handler(index, exchange);
    } catch (...) {
      return;  // A handler's failure ends the connection, not the test process.
    }
    if (!exchange.Reusable()) return;
  }
}

std::unique_ptr<asio::ssl::context> MakeContext(const FakeServer::SslSetup& setup) {
  if (!setup) return nullptr;
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  setup(*context);
  return context;
}

}  // namespace

FakeServer::FakeServer(Handler handler, const SslSetup& ssl)
    : handler_(std::move(handler)),
      ssl_(MakeContext(ssl)),
      listener_([this](int fd, int) { Serve(fd); }),
      url_(std::string(ssl_ ? "https" : "http") +
           "://127.0.0.1:" + std::to_string(listener_.port())) {}

FakeServer::~FakeServer() = default;

int FakeServer::Record(const RecordedRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back(request);
  return static_cast<int>(requests_.size()) - 1;
}

void FakeServer::Serve(int fd) {
  // The listener owns `fd` and shuts it down at destruction; the socket gets a descriptor of its
  // own for the same connection, which it closes, so that shutdown still reaches it.
  const int own = dup(fd);
  if (own < 0) return;
  asio::io_context io;  // Bookkeeping only: every operation here is synchronous.
  Tcp::socket socket(io);
  boost::system::error_code ec;
  socket.assign(Tcp::v4(), own, ec);
  if (ec) {
    close(own);
    return;
  }
  const auto record = [this](const RecordedRequest& request) { return Record(request); };
  if (ssl_ == nullptr) return ServeRequests(socket, record, handler_);
  asio::ssl::stream<Tcp::socket&> tls(socket, *ssl_);
  tls.handshake(asio::ssl::stream_base::server, ec);
  if (!ec) ServeRequests(tls, record, handler_);
}

}  // namespace berth::client::testing
