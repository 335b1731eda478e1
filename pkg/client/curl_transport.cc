#include "pkg/client/curl_transport.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pkg/client/curl_easy.h"
#include "pkg/util/unique_fd.h"

namespace berth::client::internal {
namespace {

// How long the I/O thread sleeps at most when neither libcurl nor a caller has anything for it.
constexpr int kIdlePollMs = 1000;
// Idle connections kept for reuse: more than the binding and event workers hold at once over
// HTTP/1.1 (client-go keeps 25).
constexpr long kMaxIdleConnections = 32;
// libcurl's receive buffer for a streamed body (list or watch), instead of its 16 KiB. libcurl
// 7.88 copies an HTTP/2 DATA frame that arrives for a stream into that stream's buffer; when the
// frame does not fit, it pauses the whole connection's input on that stream, and that path can
// lose the stream's end: every byte of the body delivered, the transfer never completed, until
// its timeout (30 s for a list). Listing 1,000 nodes at start-up stalled 4 starts of 500 with
// 16 KiB, 1 of 500 with 64 KiB and none of 600 with 256 KiB. A larger buffer holds the frames
// of a stream that lags while libcurl serves the others; only the bytes it holds are touched.
constexpr long kStreamReceiveBufferBytes = 256L << 10;
// libcurl's smallest upload buffer (CURLOPT_UPLOAD_BUFFERSIZE), used for bodies that fit in it.
constexpr size_t kSmallUploadBufferBytes = size_t{16} << 10;

class Loop;

// One request: its easy handle, what it sent and what came back. The libcurl callbacks run on
// the I/O thread; the reader blocks in WaitHead/ReadSome. Fields under "I/O thread" are touched
// only there; those under mu_ by both.
class CurlTransfer final : public Transfer, public std::enable_shared_from_this<CurlTransfer> {
 public:
  CurlTransfer(Loop* loop, std::shared_ptr<const TransportOptions> options,
               const Endpoint& endpoint, curl_slist* connect_to, Request request);

  ResponseHead WaitHead(Deadline deadline) override;
  bool ReadSome(std::string* out, Deadline deadline) override;
  void Cancel() override;

  // Hands the whole answer to `done` instead of to a reader (Transport::StartAsync). Before the
  // transfer is added.
  void SetCompletion(Completion done) { on_done_ = std::move(done); }

  // I/O thread.
  CURL* easy() const { return easy_.get(); }
  // The transfer ended with `code` and was removed from the multi handle.
  void Finish(CURLcode code);
  // The transfer was removed (or never added) before libcurl finished it.
  void Abort(const std::string& why);
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  static size_t OnHeader(char* data, size_t size, size_t count, void* self);
  static size_t OnWrite(char* data, size_t size, size_t count, void* self);
  static size_t OnRead(char* buffer, size_t size, size_t count, void* self);
  static int OnSeek(void* self, curl_off_t offset, int origin);

  // Empty when the final response's framing headers are acceptable, else what is wrong.
  std::string FramingProblem() const;
  TransportError ErrorFor(CURLcode code) const;
  // Waits for `ready` until `deadline`; false on timeout.
  template <typename Predicate>
  bool WaitFor(std::unique_lock<std::mutex>& lock, Deadline deadline, Predicate ready);
  [[noreturn]] void TimedOut(const char* waiting_for);
  // Runs the completion, if any, with what the transfer ended with. After done_ was set.
  void Complete();

  Loop* const loop_;
  const std::shared_ptr<const TransportOptions> options_;  // Owns the CA the handle points at.
  const std::string url_;                                  // Endpoint URL, for messages.
  const std::string verify_name_;
  const Request request_;
  SlistPtr headers_;  // Declared before easy_, which points at it, so that it goes after.
  EasyPtr easy_;
  char error_text_[CURL_ERROR_SIZE] = {};

  // I/O thread.
  size_t body_offset_ = 0;
  bool body_read_ = false;  // libcurl asked for the body: it may have reached the server.
  size_t header_bytes_ = 0;
  std::string malformed_;  // Why a callback rejected the response.

  std::mutex mu_;
  std::condition_variable cv_;
  bool head_ready_ = false;  // Guarded by mu_, as is everything below.
  ResponseHead head_;
  std::string received_;  // Body bytes not yet taken by the reader.
  bool paused_ = false;   // The write callback paused the transfer for want of a reader.
  bool done_ = false;
  bool cancelled_ = false;
  std::optional<TransportError> error_;
  Completion on_done_;  // Guarded by mu_ once the transfer is added; taken (once) by Complete.
};

// The I/O thread and its multi handle, driven through libcurl's socket interface: epoll says
// which of its sockets are ready, so that libcurl neither polls every socket of every transfer
// each round nor checks each transfer's socket again before reading it. Commands from callers
// are queued under mu_ and applied by the thread between two rounds; an eventfd wakes it when it
// sleeps in epoll_wait.
class Loop {
 public:
  explicit Loop(const std::string& url)
      : url_(url),
        epoll_(epoll_create1(EPOLL_CLOEXEC)),
        wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!epoll_.valid() || !wake_.valid()) {
      throw ConfigError(std::string("client: cannot create the I/O thread's descriptors: ") +
                        std::strerror(errno));
    }
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wake_.get();
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &wake) != 0) {
      throw ConfigError(std::string("client: epoll_ctl: ") + std::strerror(errno));
    }
    multi_.reset(curl_multi_init());
    if (multi_ == nullptr) throw ConfigError("client: libcurl cannot create a multi handle");
    SetMultiOpt(multi_.get(), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    SetMultiOpt(multi_.get(), CURLMOPT_MAXCONNECTS, kMaxIdleConnections);
    SetMultiOpt(multi_.get(), CURLMOPT_SOCKETFUNCTION, &Loop::OnSocket);
    SetMultiOpt(multi_.get(), CURLMOPT_SOCKETDATA, this);
    SetMultiOpt(multi_.get(), CURLMOPT_TIMERFUNCTION, &Loop::OnTimer);
    SetMultiOpt(multi_.get(), CURLMOPT_TIMERDATA, this);
    thread_ = std::thread([this] { Run(); });
  }

  ~Loop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    Wake();
    thread_.join();
    // Now, while every member its callbacks touch is still alive.
    multi_.reset();
  }

  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void Add(std::shared_ptr<CurlTransfer> transfer) { Post(Op::kAdd, std::move(transfer)); }
  void Remove(std::shared_ptr<CurlTransfer> transfer) { Post(Op::kRemove, std::move(transfer)); }
  void Resume(std::shared_ptr<CurlTransfer> transfer) { Post(Op::kResume, std::move(transfer)); }

  TransportStats Stats() const {
    return TransportStats{connections_.load(), http2_.load(), http1_.load()};
  }

  // libcurl's socket option callback (CURLOPT_SOCKOPTDATA: the loop): tunes a new connection's
  // socket and counts it, when it is made rather than when a transfer on it ends.
  static int OnNewSocket(void* self, curl_socket_t fd, curlsocktype purpose) {
    if (purpose == CURLSOCKTYPE_IPCXN) static_cast<Loop*>(self)->connections_.fetch_add(1);
    return TuneSocket(nullptr, fd, purpose);
  }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Op { kAdd, kRemove, kResume };
  struct Command {
    Op op;
    std::shared_ptr<CurlTransfer> transfer;
  };

  void Post(Op op, std::shared_ptr<CurlTransfer> transfer) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        transfer->Abort("the client was shut down");
        return;
      }
      commands_.push_back(Command{op, std::move(transfer)});
    }
    // A thread that is not asleep sees the command before it next sleeps (see Run).
    if (sleeping_.exchange(false)) Wake();
  }

  void Wake() {
    const uint64_t one = 1;
    static_cast<void>(write(wake_.get(), &one, sizeof(one)));
  }

  // libcurl's socket callback: which events of socket `s` it waits for.
  static int OnSocket(CURL*, curl_socket_t s, int what, void* self, void*) {
    auto* loop = static_cast<Loop*>(self);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(loop->epoll_.get(), EPOLL_CTL_DEL, s, nullptr);
      return 0;
    }
    epoll_event event{};
    event.events =
        ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
    event.data.fd = s;
    if (epoll_ctl(loop->epoll_.get(), EPOLL_CTL_MOD, s, &event) != 0 && errno == ENOENT) {
      epoll_ctl(loop->epoll_.get(), EPOLL_CTL_ADD, s, &event);
    }
    return 0;
  }

  // libcurl's timer callback: when it next wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT).
  static int OnTimer(CURLM*, long timeout_ms, void* self) {
    auto* loop = static_cast<Loop*>(self);
    loop->timer_ = timeout_ms < 0 ? std::optional<Clock::time_point>()
                                  : Clock::now() + std::chrono::milliseconds(timeout_ms);
    return 0;
  }

  void Run() {
    std::vector<Command> commands;
    std::array<epoll_event, 64> events;
    int running = 0;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        commands.swap(commands_);
        if (stopping_) break;
      }
      for (Command& command : commands) Apply(command);
      commands.clear();
      if (timer_ && Clock::now() >= *timer_) {
        timer_.reset();
        curl_multi_socket_action(multi_.get(), CURL_SOCKET_TIMEOUT, 0, &running);
        Reap();
      }
      int wait_ms = kIdlePollMs;
      if (timer_) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*timer_ - Clock::now());
        wait_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, kIdlePollMs));
      }
      // Announce the sleep, then look for commands once more: a Post after this look sees
      // sleeping_ and writes the eventfd.
      sleeping_.store(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!commands_.empty() || stopping_) wait_ms = 0;
      }
      const int ready =
          epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), wait_ms);
      sleeping_.store(false);
      for (int i = 0; i < ready; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_.get()) {
          uint64_t count = 0;
          static_cast<void>(read(wake_.get(), &count, sizeof(count)));
          continue;
        }
        int flags = 0;
        if ((events[i].events & EPOLLIN) != 0) flags |= CURL_CSELECT_IN;
        if ((events[i].events & EPOLLOUT) != 0) flags |= CURL_CSELECT_OUT;
        if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0) flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi_.get(), fd, flags, &running);
      }
      Reap();
    }
    for (Command& command : commands) command.transfer->Abort("the client was shut down");
    for (auto& [easy, transfer] : active_) {
      curl_multi_remove_handle(multi_.get(), easy);
      transfer->Abort("the client was shut down");
    }
    active_.clear();
  }

  void Apply(Command& command) {
    CurlTransfer& transfer = *command.transfer;
    switch (command.op) {
      case Op::kAdd:
        if (transfer.cancelled()) {
          transfer.Abort("the request was cancelled");
        } else if (const CURLMcode rc = curl_multi_add_handle(multi_.get(), transfer.easy());
                   rc != CURLM_OK) {
          transfer.Abort(std::string("libcurl cannot start the request: ") +
                         curl_multi_strerror(rc));
        } else {
          active_.emplace(transfer.easy(), std::move(command.transfer));
        }
        return;
      case Op::kRemove:
        if (auto it = active_.find(transfer.easy()); it != active_.end()) {
          curl_multi_remove_handle(multi_.get(), it->first);
          std::shared_ptr<CurlTransfer> removed = std::move(it->second);
          active_.erase(it);
          removed->Abort("the request was cancelled");
        }
        return;
      case Op::kResume:
        // May run the write callback at once with the bytes held back while paused.
        if (active_.contains(transfer.easy())) curl_easy_pause(transfer.easy(), CURLPAUSE_CONT);
        return;
    }
  }

  void Reap() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi_.get(), &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      CURL* easy = message->easy_handle;
      const CURLcode code = message->data.result;
      auto it = active_.find(easy);
      if (it == active_.end()) continue;
      std::shared_ptr<CurlTransfer> transfer = std::move(it->second);
      active_.erase(it);
      long connects = 0;
      long version = 0;
      curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
      curl_easy_getinfo(easy, CURLINFO_HTTP_VERSION, &version);
      curl_multi_remove_handle(multi_.get(), easy);
      if (connects > 0) {
        spdlog::debug("client: new connection to {} ({})", url_,
                      version == CURL_HTTP_VERSION_2_0 ? "HTTP/2" : "HTTP/1.1");
      }
      if (version == CURL_HTTP_VERSION_2_0) {
        http2_.fetch_add(1);
      } else if (version != 0) {
        http1_.fetch_add(1);
      }
      transfer->Finish(code);
    }
  }

  const std::string url_;
  const util::UniqueFd epoll_;
  const util::UniqueFd wake_;
  MultiPtr multi_;
  std::mutex mu_;
  std::vector<Command> commands_;      // Guarded by mu_.
  bool stopping_ = false;              // Guarded by mu_.
  std::atomic<bool> sleeping_{false};  // The thread is in (or about to enter) epoll_wait.
  // I/O thread: when libcurl wants CURL_SOCKET_TIMEOUT; none: only on socket events.
  std::optional<Clock::time_point> timer_;
  // I/O thread: the transfers libcurl is working on, owned here until they end.
  std::unordered_map<CURL*, std::shared_ptr<CurlTransfer>> active_;
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> http2_{0};
  std::atomic<uint64_t> http1_{0};
  std::thread thread_;  // Last: starts once everything above is ready.
};

CurlTransfer::CurlTransfer(Loop* loop, std::shared_ptr<const TransportOptions> options,
                           const Endpoint& endpoint, curl_slist* connect_to, Request request)
    : loop_(loop),
      options_(std::move(options)),
      url_(endpoint.url),
      verify_name_(endpoint.verify_name),
      request_(std::move(request)),
      easy_(curl_easy_init()) {
  if (easy_ == nullptr) {
    throw TransportError(ErrorReason::kUnknown, "client: libcurl cannot create a request", true);
  }
  CURL* easy = easy_.get();
  const std::string url = endpoint.base_url + request_.target;
  SetOpt(easy, CURLOPT_URL, url.c_str());
  SetOpt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  SetOpt(easy, CURLOPT_PATH_AS_IS, 1L);
  SetOpt(easy, CURLOPT_NOSIGNAL, 1L);
  SetOpt(easy, CURLOPT_ERRORBUFFER, error_text_);
  SetOpt(easy, CURLOPT_HTTP_VERSION,
         Http2Available() ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
  // Wait for a connection being set up to tell whether it multiplexes rather than open another.
  SetOpt(easy, CURLOPT_PIPEWAIT, 1L);
  SetOpt(easy, CURLOPT_SOCKOPTFUNCTION, &Loop::OnNewSocket);
  SetOpt(easy, CURLOPT_SOCKOPTDATA, loop_);
  SetOpt(easy, CURLOPT_HEADERFUNCTION, &CurlTransfer::OnHeader);
  SetOpt(easy, CURLOPT_HEADERDATA, this);
  SetOpt(easy, CURLOPT_WRITEFUNCTION, &CurlTransfer::OnWrite);
  SetOpt(easy, CURLOPT_WRITEDATA, this);
  SetOpt(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  SetOpt(easy, CURLOPT_USERAGENT, options_->user_agent.c_str());
  // An empty string keeps libcurl from reading *_proxy variables itself.
  SetOpt(easy, CURLOPT_PROXY, options_->proxy.c_str());
  if (connect_to != nullptr) SetOpt(easy, CURLOPT_CONNECT_TO, connect_to);

  SetOpt(easy, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  SetOpt(easy, CURLOPT_SSL_VERIFYPEER, options_->verify ? 1L : 0L);
  SetOpt(easy, CURLOPT_SSL_VERIFYHOST, options_->verify ? 2L : 0L);
  if (!options_->ca_pem.empty()) {
    // Like client-go, a configured CA replaces the system roots: the apiserver must chain to it.
    curl_blob ca{const_cast<char*>(options_->ca_pem.data()), options_->ca_pem.size(),
                 CURL_BLOB_NOCOPY};
    SetOpt(easy, CURLOPT_CAINFO_BLOB, &ca);
    SetOpt(easy, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (request_.credentials != nullptr && !request_.credentials->cert_pem.empty()) {
    const Credentials& credentials = *request_.credentials;
    curl_blob cert{const_cast<char*>(credentials.cert_pem.data()), credentials.cert_pem.size(),
                   CURL_BLOB_NOCOPY};
    curl_blob key{const_cast<char*>(credentials.key_pem.data()), credentials.key_pem.size(),
                  CURL_BLOB_NOCOPY};
    SetOpt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    SetOpt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    SetOpt(easy, CURLOPT_SSLKEY_BLOB, &key);
    SetOpt(easy, CURLOPT_SSLKEYTYPE, "PEM");
  }

  if (request_.stream) SetOpt(easy, CURLOPT_BUFFERSIZE, kStreamReceiveBufferBytes);
  if (request_.timeout.count() > 0) SetOpt(easy, CURLOPT_TIMEOUT_MS, request_.timeout.count());
  if (request_.connect_timeout.count() > 0) {
    SetOpt(easy, CURLOPT_CONNECTTIMEOUT_MS, request_.connect_timeout.count());
  }
  if (request_.inactivity.count() > 0) {
    SetOpt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    SetOpt(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request_.inactivity.count()));
  }

  SlistPtr headers;
  headers = Append(std::move(headers), "Accept: " + request_.accept);
  if (request_.credentials != nullptr && !request_.credentials->token.empty()) {
    headers = Append(std::move(headers), "Authorization: Bearer " + request_.credentials->token);
  }
  if (connect_to != nullptr) {
    // The URL names tls-server-name so that libcurl checks it; the apiserver still gets the
    // server's own authority, as from client-go.
    headers = Append(std::move(headers), "Host: " + endpoint.authority);
  }
  if (request_.has_body) {
    headers = Append(std::move(headers), "Content-Type: " + request_.content_type);
    // Never wait for a 100 Continue: the apiserver does not send one for a small body.
    headers = Append(std::move(headers), "Expect:");
    SetOpt(easy, CURLOPT_POST, 1L);
    SetOpt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request_.body.size()));
    // libcurl gives every upload a buffer of its own, 64 KiB unless told; a binding or a patch is
    // a few hundred bytes, and with 32 bindings in flight the default held 2 MiB of buffers.
    if (request_.body.size() <= kSmallUploadBufferBytes) {
      SetOpt(easy, CURLOPT_UPLOAD_BUFFERSIZE, static_cast<long>(kSmallUploadBufferBytes));
    }
    // The body is read through a callback so that libcurl cannot send it again on its own after
    // a reused connection dropped: without a seek callback it cannot rewind it, and fails with
    // CURLE_SEND_FAIL_REWIND instead of replaying a POST the server may have processed.
    SetOpt(easy, CURLOPT_READFUNCTION, &CurlTransfer::OnRead);
    SetOpt(easy, CURLOPT_READDATA, this);
    if (request_.replayable) {
      SetOpt(easy, CURLOPT_SEEKFUNCTION, &CurlTransfer::OnSeek);
      SetOpt(easy, CURLOPT_SEEKDATA, this);
    }
  }
  if (std::strcmp(request_.method, request_.has_body ? "POST" : "GET") != 0) {
    SetOpt(easy, CURLOPT_CUSTOMREQUEST, request_.method);
  }
  SetOpt(easy, CURLOPT_HTTPHEADER, headers.get());
  headers_ = std::move(headers);
}

template <typename Predicate>
bool CurlTransfer::WaitFor(std::unique_lock<std::mutex>& lock, Deadline deadline, Predicate ready) {
  if (deadline == Deadline::max()) {
    cv_.wait(lock, ready);
    return true;
  }
  return cv_.wait_until(lock, deadline, ready);
}

void CurlTransfer::TimedOut(const char* waiting_for) {
  Cancel();
  // Whether the request reached the server is unknown here: report it as sent.
  throw TransportError(ErrorReason::kTimeout,
                       "request to " + url_ + " timed out waiting for " + waiting_for, false);
}

ResponseHead CurlTransfer::WaitHead(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!WaitFor(lock, deadline, [this] { return head_ready_ || done_ || cancelled_; })) {
    lock.unlock();
    TimedOut("the response");
  }
  if (head_ready_) return head_;
  if (error_) throw *error_;
  throw TransportError(ErrorReason::kTransport, "request to " + url_ + " was cancelled", false);
}

bool CurlTransfer::ReadSome(std::string* out, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!WaitFor(lock, deadline, [this] { return !received_.empty() || done_ || cancelled_; })) {
    lock.unlock();
    TimedOut("the response body");
  }
  if (!received_.empty()) {
    if (out->empty()) {
      out->swap(received_);
    } else {
      out->append(received_);
    }
    received_.clear();
    const bool resume = std::exchange(paused_, false);
    lock.unlock();
    if (resume) loop_->Resume(shared_from_this());
    return true;
  }
  if (error_) throw *error_;
  if (done_) return false;
  throw TransportError(ErrorReason::kTransport, "request to " + url_ + " was cancelled", false);
}

void CurlTransfer::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || cancelled_) return;
    cancelled_ = true;
  }
  cv_.notify_all();
  loop_->Remove(shared_from_this());
}

void CurlTransfer::Finish(CURLcode code) {
  std::optional<TransportError> error;
  if (code != CURLE_OK) error = ErrorFor(code);
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    if (error && cancelled_) {
      // The write callback refused the bytes of a transfer its reader had given up.
      error = TransportError(ErrorReason::kTransport, "request to " + url_ + " was cancelled",
                             error->request_not_sent());
    }
    if (error && !error_) error_ = std::move(error);
  }
  cv_.notify_all();
  Complete();
}

void CurlTransfer::Abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    if (!error_) {
      // Not sent unless libcurl had asked for the body; a cancelled GET needs no answer either.
      error_ = TransportError(ErrorReason::kTransport, "request to " + url_ + ": " + why,
                              request_.has_body && !body_read_);
    }
  }
  cv_.notify_all();
  Complete();
}

void CurlTransfer::Complete() {
  Completion done;
  Outcome outcome;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!on_done_) return;
    done = std::exchange(on_done_, nullptr);
    outcome.has_head = head_ready_;
    outcome.head = head_;
    outcome.body = std::move(received_);
    received_.clear();
    outcome.error = error_;
  }
  try {
    done(std::move(outcome));
  } catch (const std::exception& e) {
    // A completion that throws would unwind through libcurl's loop; it is a bug, not an answer.
    spdlog::error("client: a request's completion failed: {}", e.what());
  }
}

size_t CurlTransfer::OnHeader(char* data, size_t size, size_t count, void* self) {
  auto* transfer = static_cast<CurlTransfer*>(self);
  const size_t length = size * count;
  transfer->header_bytes_ += length;
  if (transfer->header_bytes_ > kMaxResponseHeaderBytes) {
    transfer->malformed_ =
        "response headers over " + std::to_string(kMaxResponseHeaderBytes >> 10) + " KiB";
    return 0;
  }
  const std::string_view line(data, length);
  if (line != "\r\n" && line != "\n") return length;
  // The blank line after one response's headers.
  long status = 0;
  curl_easy_getinfo(transfer->easy(), CURLINFO_RESPONSE_CODE, &status);
  transfer->header_bytes_ = 0;
  if (status < 200) return length;  // Interim (100 Continue): the final response follows.
  try {
    if (std::string problem = transfer->FramingProblem(); !problem.empty()) {
      transfer->malformed_ = std::move(problem);
      return 0;
    }
    ResponseHead head;
    head.status = static_cast<int>(status);
    head.content_type = HeaderValue(transfer->easy(), "Content-Type");
    head.retry_after = HeaderValue(transfer->easy(), "Retry-After");
    {
      std::lock_guard<std::mutex> lock(transfer->mu_);
      transfer->head_ = std::move(head);
      transfer->head_ready_ = true;
    }
  } catch (const std::bad_alloc&) {
    transfer->malformed_ = "out of memory";
    return 0;
  }
  // A unary reader waits for the whole response: waking it for the head alone would cost a
  // context switch per request.
  if (transfer->request_.stream) transfer->cv_.notify_all();
  return length;
}

std::string CurlTransfer::FramingProblem() const {
  CURL* easy = easy_.get();
  const size_t lengths = HeaderCount(easy, "Content-Length");
  if (lengths == 0) return "";
  if (HeaderCount(easy, "Transfer-Encoding") > 0) {
    // RFC 9112 section 6.3: a sign of request smuggling or response splitting.
    return "both Transfer-Encoding and Content-Length";
  }
  const std::string first = HeaderValue(easy, "Content-Length");
  if (!AllDigits(first)) return "Content-Length \"" + first.substr(0, 32) + "\"";
  for (size_t i = 1; i < lengths; ++i) {
    if (HeaderValue(easy, "Content-Length", i) != first) return "conflicting Content-Length values";
  }
  uint64_t announced = 0;
  const auto parsed = std::from_chars(first.data(), first.data() + first.size(), announced);
  if (!request_.stream &&
      (parsed.ec != std::errc() || announced > static_cast<uint64_t>(kMaxResponseBodyBytes))) {
    return "a body of " + first + " bytes is over the " +
           std::to_string(kMaxResponseBodyBytes >> 20) + " MiB cap";
  }
  return "";
}

size_t CurlTransfer::OnWrite(char* data, size_t size, size_t count, void* self) {
  auto* transfer = static_cast<CurlTransfer*>(self);
  const size_t length = size * count;
  {
    std::lock_guard<std::mutex> lock(transfer->mu_);
    if (transfer->cancelled_) return 0;
    if (transfer->request_.stream) {
      if (transfer->received_.size() >= kStreamBufferBytes) {
        transfer->paused_ = true;
        return CURL_WRITEFUNC_PAUSE;
      }
    } else if (transfer->received_.size() + length > kMaxResponseBodyBytes) {
      transfer->malformed_ =
          "response body over " + std::to_string(kMaxResponseBodyBytes >> 20) + " MiB";
      return 0;
    }
    try {
      transfer->received_.append(data, length);
    } catch (const std::bad_alloc&) {
      transfer->malformed_ = "out of memory for the response body";
      return 0;
    }
  }
  if (transfer->request_.stream) transfer->cv_.notify_all();
  return length;
}

size_t CurlTransfer::OnRead(char* buffer, size_t size, size_t count, void* self) {
  auto* transfer = static_cast<CurlTransfer*>(self);
  transfer->body_read_ = true;
  const std::string& body = transfer->request_.body;
  const size_t n = std::min(size * count, body.size() - transfer->body_offset_);
  std::copy_n(body.data() + transfer->body_offset_, n, buffer);
  transfer->body_offset_ += n;
  return n;
}

int CurlTransfer::OnSeek(void* self, curl_off_t offset, int origin) {
  auto* transfer = static_cast<CurlTransfer*>(self);
  if (origin != SEEK_SET || offset < 0 ||
      static_cast<size_t>(offset) > transfer->request_.body.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  transfer->body_offset_ = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

TransportError CurlTransfer::ErrorFor(CURLcode code) const {
  return TransferError(code, error_text_[0] != '\0' ? error_text_ : curl_easy_strerror(code),
                       {url_, verify_name_, malformed_, request_.has_body && !body_read_});
}

class CurlTransport final : public Transport {
 public:
  CurlTransport(Endpoint endpoint, TransportOptions options)
      : endpoint_(std::move(endpoint)),
        options_(std::make_shared<const TransportOptions>(std::move(options))) {
    if (endpoint_.tls && endpoint_.verify_name != endpoint_.host) {
      // Connect to the server's address while libcurl checks (and sends as SNI) tls-server-name.
      connect_to_ = Append(nullptr, Bracketed(endpoint_.verify_name) + ":" + endpoint_.port + ":" +
                                        Bracketed(endpoint_.host) + ":" + endpoint_.port);
    }
    loop_ = std::make_unique<Loop>(endpoint_.url);
  }

  std::shared_ptr<Transfer> Start(Request request) override {
    Loop* loop = LoopFor(request);
    auto transfer = std::make_shared<CurlTransfer>(loop, options_, endpoint_, connect_to_.get(),
                                                   std::move(request));
    loop->Add(transfer);
    return transfer;
  }

  void StartAsync(Request request, Completion done) override {
    Loop* loop = LoopFor(request);
    auto transfer = std::make_shared<CurlTransfer>(loop, options_, endpoint_, connect_to_.get(),
                                                   std::move(request));
    transfer->SetCompletion(std::move(done));
    loop->Add(std::move(transfer));
  }

  TransportStats Stats() const override {
    TransportStats stats = loop_->Stats();
    if (const Loop* quiet_loop = quiet_loop_.load(std::memory_order_acquire)) {
      const TransportStats quiet = quiet_loop->Stats();
      stats.connections += quiet.connections;
      stats.http2_responses += quiet.http2_responses;
      stats.http1_responses += quiet.http1_responses;
    }
    return stats;
  }
  const Endpoint& endpoint() const override { return endpoint_; }

 private:
  // The loop a request goes on: the quiet one, made on first use, for Request::quiet.
  Loop* LoopFor(const Request& request) {
    if (!request.quiet) return loop_.get();
    if (Loop* quiet_loop = quiet_loop_.load(std::memory_order_acquire)) return quiet_loop;
    std::lock_guard<std::mutex> lock(quiet_mu_);
    if (quiet_owner_ == nullptr) {
      quiet_owner_ = std::make_unique<Loop>(endpoint_.url);
      quiet_loop_.store(quiet_owner_.get(), std::memory_order_release);
    }
    return quiet_owner_.get();
  }

  const Endpoint endpoint_;
  const std::shared_ptr<const TransportOptions> options_;
  SlistPtr connect_to_;
  // Last: their threads stop before the rest goes. The quiet loop is created by the first quiet
  // request, under quiet_mu_, and published through quiet_loop_.
  std::unique_ptr<Loop> loop_;
  std::mutex quiet_mu_;
  std::unique_ptr<Loop> quiet_owner_;  // Guarded by quiet_mu_.
  std::atomic<Loop*> quiet_loop_{nullptr};
};

}  // namespace

void Transfer::ReadRest(std::string* out, Deadline deadline) {
  while (ReadSome(out, deadline)) {
    if (out->size() > kMaxResponseBodyBytes) {
      Cancel();
      throw TransportError(
          ErrorReason::kTransport,
          "response body over " + std::to_string(kMaxResponseBodyBytes >> 20) + " MiB", false);
    }
  }
}

std::shared_ptr<Transport> Transport::Create(Endpoint endpoint, TransportOptions options) {
  GlobalInitOnce();
  if (!Http2Available()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      spdlog::warn("client: this libcurl lacks HTTP/2; every watch needs its own connection");
    });
  }
  return std::make_shared<CurlTransport>(std::move(endpoint), std::move(options));
}

void IgnoreSigpipeOnce() {
  static const bool done = [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;
}

}  // namespace berth::client::internal
