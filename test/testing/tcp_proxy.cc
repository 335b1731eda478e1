#include "test/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <stdexcept>
#include <string>
#include <vector>

#include "test/testing/loopback.h"

namespace berth::testing {
namespace {

// Bytes buffered per direction before the proxy stops reading from the sender.
constexpr size_t kMaxBuffered = size_t{256} * 1024;
// A target that neither accepts nor refuses within this is treated as refusing.
constexpr int kConnectTimeoutMs = 2000;

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A non-blocking socket connected to 127.0.0.1:port, or -1 when the target refused or did not
// answer in time.
int ConnectTarget(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in addr = Loopback(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      close(fd);
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof(error);
    if (poll(&p, 1, kConnectTimeoutMs) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      close(fd);
      return -1;
    }
  }
  NoDelay(fd);
  return fd;
}

// Closes `fd` so that the peer gets a reset (`reset`) or an orderly end of stream.
void Cut(int fd, bool reset) {
  if (reset) {
    const linger abort{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  } else {
    shutdown(fd, SHUT_RDWR);
  }
  close(fd);
}

}  // namespace

// The forwarding thread. Every socket is created, used and closed on it; other threads only post
// requests (a cut, the stop) under mu_ and wake it through an eventfd.
class TcpProxy::Loop {
 public:
  Loop(TcpProxy* owner, int listen_fd, uint16_t target_port)
      : owner_(owner), listen_fd_(listen_fd), target_port_(target_port) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      close(listen_fd_);
      throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
    thread_ = std::thread([this] { Run(); });
  }

  ~Loop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    Wake();
    thread_.join();
    for (Pair& pair : pairs_) {
      close(pair.ends[0].fd);
      close(pair.ends[1].fd);
    }
    close(listen_fd_);
    close(wake_fd_);
  }

  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  size_t CutAll() {
    std::unique_lock lock(mu_);
    const uint64_t ticket = ++cuts_requested_;
    Wake();
    done_cv_.wait(lock, [&] { return cuts_done_ >= ticket || stop_; });
    return last_cut_;
  }

 private:
  // One side of a forwarded connection: its socket and the bytes read from the other side that
  // still have to be written to it.
  struct End {
    int fd = -1;
    std::string pending;
    bool read_closed = false;  // This side sent its end of stream.
    bool write_shut = false;   // The other side's end of stream was passed on to this side.
  };
  struct Pair {
    End ends[2];  // [0] the client, [1] the target.
    bool failed = false;
  };

  void Wake() {
    const uint64_t one = 1;
    // A full counter still wakes the loop; nothing to do on failure.
    [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof(one));
  }

  void Run() {
    std::vector<pollfd> fds;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stop_) break;
        if (cuts_requested_ > cuts_done_) {
          last_cut_ = CutPairs((cuts_done_ % 2) == 0);
          cuts_done_ = cuts_requested_;
          done_cv_.notify_all();
        }
      }
      fds.clear();
      fds.push_back({wake_fd_, POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const Pair& pair : pairs_) {
        for (int side = 0; side < 2; side++) {
          const End& end = pair.ends[side];
          const End& other = pair.ends[1 - side];
          short events = 0;
          if (!end.read_closed && other.pending.size() < kMaxBuffered) events |= POLLIN;
          if (!end.pending.empty()) events |= POLLOUT;
          // A side done in both directions would report POLLHUP on every poll: left out.
          const bool done = end.read_closed && end.write_shut;
          fds.push_back({done ? -1 : end.fd, events, 0});
        }
      }
      if (poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[0].revents != 0) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t n = read(wake_fd_, &count, sizeof(count));
      }
      size_t index = 2;
      for (Pair& pair : pairs_) {
        for (int side = 0; side < 2; side++) {
          Service(pair, side, fds[index++].revents);
        }
      }
      for (auto it = pairs_.begin(); it != pairs_.end();) {
        if (Finished(*it)) {
          close(it->ends[0].fd);
          close(it->ends[1].fd);
          it = pairs_.erase(it);
        } else {
          ++it;
        }
      }
      if (fds[1].revents != 0) Accept();
    }
  }

  // Reads what `side` sent into the other side's buffer and writes its own buffer to it, then
  // passes an end of stream on once everything before it was delivered.
  void Service(Pair& pair, int side, short revents) {
    if (pair.failed) return;
    End& end = pair.ends[side];
    End& other = pair.ends[1 - side];
    if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !end.read_closed) {
      char buffer[64 * 1024];
      const ssize_t n = recv(end.fd, buffer, sizeof(buffer), 0);
      if (n > 0) {
        other.pending.append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        end.read_closed = true;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        pair.failed = true;
        return;
      }
    }
    // A socket error, or hung up both ways before this side's end of stream was passed on: the
    // peer is gone, and what the other side still sends can never reach it.
    if ((revents & POLLERR) != 0 ||
        ((revents & POLLHUP) != 0 && end.read_closed && !end.write_shut)) {
      pair.failed = true;
      return;
    }
    if ((revents & POLLOUT) != 0 && !end.pending.empty()) {
      const ssize_t n = send(end.fd, end.pending.data(), end.pending.size(), MSG_NOSIGNAL);
      if (n > 0) {
        end.pending.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        pair.failed = true;
        return;
      }
    }
    for (End* e : {&end, &other}) {
      End& source = e == &end ? other : end;
      if (source.read_closed && e->pending.empty() && !e->write_shut) {
        shutdown(e->fd, SHUT_WR);
        e->write_shut = true;
      }
    }
  }

  static bool Finished(const Pair& pair) {
    return pair.failed || (pair.ends[0].write_shut && pair.ends[1].write_shut);
  }

  void Accept() {
    for (;;) {
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) return;
      NoDelay(client);
      const int target = ConnectTarget(target_port_);
      if (target < 0) {
        owner_->refused_++;
        close(client);
        continue;
      }
      owner_->forwarded_++;
      Pair& pair = pairs_.emplace_back();
      pair.ends[0].fd = client;
      pair.ends[1].fd = target;
    }
  }

  size_t CutPairs(bool reset) {
    const size_t count = pairs_.size();
    for (Pair& pair : pairs_) {
      Cut(pair.ends[0].fd, reset);
      Cut(pair.ends[1].fd, reset);
    }
    pairs_.clear();
    if (count > 0) {
      owner_->connections_cut_ += count;
      owner_->cuts_++;
    }
    return count;
  }

  TcpProxy* const owner_;
  const int listen_fd_;
  const uint16_t target_port_;
  int wake_fd_ = -1;
  // Owned by the loop thread.
  std::list<Pair> pairs_;

  std::mutex mu_;
  std::condition_variable done_cv_;
  // Guarded by mu_.
  bool stop_ = false;
  uint64_t cuts_requested_ = 0;
  uint64_t cuts_done_ = 0;
  size_t last_cut_ = 0;

  std::thread thread_;
};

TcpProxy::TcpProxy(uint16_t target_port) {
  const LoopbackListener listener = ListenOnLoopback("TcpProxy", SOCK_NONBLOCK, 512);
  port_ = listener.port;
  loop_ = std::make_unique<Loop>(this, listener.fd, target_port);
}

TcpProxy::~TcpProxy() { StopCutting(); }

size_t TcpProxy::CutAll() { return loop_->CutAll(); }

void TcpProxy::CutEvery(std::chrono::milliseconds period) {
  StopCutting();
  std::lock_guard lock(cutter_mu_);
  cutter_stop_ = false;
  cutter_ = std::thread([this, period] {
    std::unique_lock lock(cutter_mu_);
    while (!cutter_cv_.wait_for(lock, period, [this] { return cutter_stop_; })) {
      lock.unlock();
      CutAll();
      lock.lock();
    }
  });
}

void TcpProxy::StopCutting() {
  {
    std::lock_guard lock(cutter_mu_);
    cutter_stop_ = true;
  }
  cutter_cv_.notify_all();
  if (cutter_.joinable()) cutter_.join();
}

}  // namespace berth::testing
