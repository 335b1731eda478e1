#include "test/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/testing/loopback.h"
#include "test/testing/process.h"

namespace berth::testing {
namespace {

// Blocking reads give up after this, so a broken proxy fails the test instead of hanging it.
void SetReceiveTimeout(int fd) {
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
}

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    throw std::runtime_error("connect failed");
  }
  SetReceiveTimeout(fd);
  return fd;
}

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    sent += static_cast<size_t>(n);
  }
}

// Reads exactly `size` bytes, or fewer when the stream ends first.
std::string ReceiveExactly(int fd, size_t size) {
  std::string out;
  char buffer[16 * 1024];
  while (out.size() < size) {
    const ssize_t n = recv(fd, buffer, std::min(sizeof(buffer), size - out.size()), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// What one recv() says after the peer went away: 0 for an orderly end of stream, else -errno.
int ReceiveEnd(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, 0);
  return n < 0 ? -errno : static_cast<int>(n);
}

// Echoes every byte back on every connection until the client ends its stream, then closes.
class EchoServer {
 public:
  EchoServer() {
    const LoopbackListener listener = ListenOnLoopback("EchoServer");
    listen_fd_ = listener.fd;
    port_ = listener.port;
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, fd] { Echo(fd); });
      }
    });
  }

  ~EchoServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    close(listen_fd_);
    std::lock_guard lock(mu_);
    for (auto& worker : workers_) worker.join();
  }

  uint16_t port() const { return port_; }
  // Connections whose stream ended (orderly or not) on the server's side.
  int ended() const { return ended_.load(); }

 private:
  void Echo(int fd) {
    SetReceiveTimeout(fd);
    char buffer[16 * 1024];
    for (;;) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      if (send(fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    ended_++;
    close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> ended_{0};
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

TEST(TcpProxyTest, ForwardsBothWays) {
  EchoServer server;
  TcpProxy proxy(server.port());
  const int fd = Connect(proxy.port());
  // More than the proxy buffers per direction, so reading and writing must interleave.
  std::string payload(1 << 20, 'x');
  for (size_t i = 0; i < payload.size(); i++) payload[i] = static_cast<char>('a' + i % 26);
  std::thread writer([&] { SendAll(fd, payload); });
  const std::string echoed = ReceiveExactly(fd, payload.size());
  writer.join();
  EXPECT_EQ(echoed, payload);
  EXPECT_EQ(proxy.forwarded(), 1u);
  close(fd);
}

TEST(TcpProxyTest, PassesAnEndOfStreamOnAfterTheData) {
  EchoServer server;
  TcpProxy proxy(server.port());
  const int fd = Connect(proxy.port());
  SendAll(fd, "last words");
  shutdown(fd, SHUT_WR);
  EXPECT_EQ(ReceiveExactly(fd, 10), "last words");
  // The server saw the end of stream, closed, and that close came back through the proxy.
  EXPECT_EQ(ReceiveEnd(fd), 0);
  close(fd);
}

TEST(TcpProxyTest, CutsAlternateBetweenResetAndOrderlyClose) {
  EchoServer server;
  TcpProxy proxy(server.port());

  const int first = Connect(proxy.port());
  SendAll(first, "ping");
  ASSERT_EQ(ReceiveExactly(first, 4), "ping");
  EXPECT_EQ(proxy.CutAll(), 1u);
  EXPECT_EQ(ReceiveEnd(first), -ECONNRESET);
  close(first);

  const int second = Connect(proxy.port());
  SendAll(second, "pong");
  ASSERT_EQ(ReceiveExactly(second, 4), "pong");
  EXPECT_EQ(proxy.CutAll(), 1u);
  EXPECT_EQ(ReceiveEnd(second), 0);
  close(second);

  EXPECT_EQ(proxy.cuts(), 2u);
  EXPECT_EQ(proxy.connections_cut(), 2u);
  // Both sides were closed: the server's connections ended too.
  for (int i = 0; i < 200 && server.ended() < 2; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(server.ended(), 2);
}

TEST(TcpProxyTest, ACutLeavesTheListenerServing) {
  EchoServer server;
  TcpProxy proxy(server.port());
  std::vector<int> fds;
  for (int i = 0; i < 3; i++) {
    fds.push_back(Connect(proxy.port()));
    SendAll(fds.back(), "x");
    ASSERT_EQ(ReceiveExactly(fds.back(), 1), "x");
  }
  EXPECT_EQ(proxy.CutAll(), 3u);
  EXPECT_EQ(proxy.CutAll(), 0u);
  for (int fd : fds) close(fd);

  const int fresh = Connect(proxy.port());
  SendAll(fresh, "again");
  EXPECT_EQ(ReceiveExactly(fresh, 5), "again");
  close(fresh);
  EXPECT_EQ(proxy.forwarded(), 4u);
}

TEST(TcpProxyTest, ClosesAtOnceWhileTheTargetRefuses) {
  // Nothing listens there: the port was free a moment ago and this test never binds it.
  TcpProxy proxy(FreePort());
  const int fd = Connect(proxy.port());
  EXPECT_EQ(ReceiveEnd(fd), 0);
  close(fd);
  EXPECT_EQ(proxy.refused(), 1u);
  EXPECT_EQ(proxy.forwarded(), 0u);
}

TEST(TcpProxyTest, CutsPeriodicallyUntilStopped) {
  EchoServer server;
  TcpProxy proxy(server.port());
  proxy.CutEvery(std::chrono::milliseconds(10));
  const int fd = Connect(proxy.port());
  // Whatever the timing, the connection ends without this side closing it.
  const int end = ReceiveEnd(fd);
  EXPECT_TRUE(end == 0 || end == -ECONNRESET) << end;
  close(fd);
  proxy.StopCutting();
  const uint64_t cut = proxy.connections_cut();
  EXPECT_GE(cut, 1u);

  const int kept = Connect(proxy.port());
  SendAll(kept, "stays");
  EXPECT_EQ(ReceiveExactly(kept, 5), "stays");
  close(kept);
  EXPECT_EQ(proxy.connections_cut(), cut);
}

}  // namespace
}  // namespace berth::testing
